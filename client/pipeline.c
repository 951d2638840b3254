/*
 * Pipelines: commands queued on the handle's engine (io.c) as they are
 * given, sent once the queued frames pass the send budget (reading the
 * replies that have come meanwhile) and at exec, which waits for the last
 * reply. Results are kept per index, or, with a callback, handed over as
 * they arrive and not kept, so that a pipeline of any length holds about
 * a send budget of memory. rhkv_mset() is a pipeline; rhkv_mget() sends
 * the protocol's MGET.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Default bytes of queued frames before a pipeline sends them. */
#define SEND_BUDGET (1u << 20)

/* Result of a command not answered yet. */
#define PENDING 1

struct cmd {
	uint32_t op;
	int rc;		 /* 0, RHKV_E*, or PENDING */
	uint64_t number; /* cas of a store, value of an incr */
	struct rhkv_value val;
};

struct rhkv_pipeline {
	rhkv *c;
	struct cmd *cmds;  /* results, when no callback takes them */
	size_t n, cap;	   /* indexes given */
	size_t executed;   /* results readable: [0 .. executed) */
	uint64_t last_seq; /* the handle's seq of the last command queued */
	int err;	   /* the first connection error met */
	rhkv_callback cb;  /* streaming: results go here */
	void *arg;
};

rhkv_pipeline *rhkv_pipeline_new(rhkv *c)
{
	rhkv_pipeline *p;

	if (!c)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = c;
	/* c stays allocated while p uses it: closed meanwhile (from a
	 * callback), it is freed by rhkv_pipeline_free() */
	rhkv__enter(c);
	return p;
}

rhkv_pipeline *rhkv_pipeline_stream(rhkv *c, rhkv_callback cb, void *arg)
{
	rhkv_pipeline *p = cb ? rhkv_pipeline_new(c) : NULL;

	if (p) {
		p->cb = cb;
		p->arg = arg;
	}
	return p;
}

/* Waits for the replies of commands queued and not executed: their
 * records point at p. */
static void finish(rhkv_pipeline *p)
{
	if (p->c->done_seq < p->last_seq && !p->c->in_callback)
		rhkv__wait(p->c, p->last_seq);
}

void rhkv_pipeline_reset(rhkv_pipeline *p)
{
	if (!p)
		return;
	finish(p);
	for (size_t i = 0; i < p->n && p->cmds; i++)
		free(p->cmds[i].val.data);
	p->n = p->executed = 0;
	p->err = 0;
}

void rhkv_pipeline_free(rhkv_pipeline *p)
{
	rhkv *c;

	if (!p)
		return;
	c = p->c;
	rhkv_pipeline_reset(p);
	free(p->cmds);
	free(p);
	rhkv__leave(c, 0);
}

static int on_reply(rhkv *c, void *ctx, size_t i, uint32_t status,
		    const msgpack_object *payload)
{
	rhkv_pipeline *p = ctx;
	struct cmd *cmd = &p->cmds[i];
	struct rhkv_result r = { 0 };

	if (status != PROTO_ST_OK) {
		cmd->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__pl_result(cmd->op, payload, &r))
		return RHKV_EPROTO;
	cmd->number = r.number;
	if (r.data) {
		cmd->val.data = malloc(r.len + 1);
		if (!cmd->val.data) {
			cmd->rc = RHKV_ENOMEM;
			return 0;
		}
		memcpy(cmd->val.data, r.data, r.len);
		cmd->val.data[r.len] = '\0';
		cmd->val.len = r.len;
		cmd->val.flags = r.flags;
		cmd->val.cas = r.cas;
	}
	cmd->rc = 0;
	return 0;
}

/* A new index, its result record made (failed: the index is still
 * taken, its result the error). */
static long take_index(rhkv_pipeline *p, uint32_t op, int rc)
{
	if (p->cb) {
		p->n++;
		return (long)p->n - 1;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct cmd *q = realloc(p->cmds, cap * sizeof(*q));

		if (!q)
			return RHKV_ENOMEM;
		p->cmds = q;
		p->cap = cap;
	}
	memset(&p->cmds[p->n], 0, sizeof(p->cmds[p->n]));
	p->cmds[p->n].op = op;
	p->cmds[p->n].rc = rc ? rc : PENDING;
	return (long)p->n++;
}

static size_t budget(const rhkv *c)
{
	return c->opt.send_budget ? c->opt.send_budget : SEND_BUDGET;
}

long rhkv_pipeline_cmd(rhkv_pipeline *p, const struct rhkv_cmd *cmd)
{
	struct proto_bin_meta meta;
	struct rhkv__req r;
	rhkv *c;
	long i;
	int rc;

	if (!p)
		return RHKV_EINVAL;
	c = p->c;
	if (c->in_callback)
		return rhkv__fail(c, RHKV_EINVAL,
				  "a blocking call from a callback");
	rc = rhkv__cmd_req(c, cmd, &r, &meta);
	if (rc == 0 && !p->cb && proto_bin_op_is_meta(r.op))
		rc = rhkv__fail(c, RHKV_EINVAL,
				"meta ops: in streaming pipelines only");
	if (rc == 0)
		rc = rhkv__check_size(c, r.vlen);
	if (rc == 0)
		rc = rhkv__ensure(c);
	i = take_index(p, r.op, rc);
	if (rc || i < 0)
		return rc ? rc : i;
	rc = rhkv__queue(c, &r,
			 &(struct rhkv__pending){ .fn = p->cb ? NULL : on_reply,
						  .ctx = p,
						  .index = (size_t)i,
						  .cb = p->cb,
						  .arg = p->arg,
						  .op = (uint32_t)cmd->op });
	if (rc) {
		if (!p->cb)
			p->cmds[i].rc = rc;
		return rhkv__fail(c, rc, "%s", rhkv_strerror(rc));
	}
	p->last_seq = c->seq;
	/* past the budget: send, taking the replies that have come; the
	 * replies awaited are bounded too (their records are memory) */
	rc = rhkv__drain(c, budget(c),
			 budget(c) / 32 < 1024 ? 1024 : budget(c) / 32);
	if (rc && !p->err)
		p->err = rc;
	return i;
}

long rhkv_pipeline_get(rhkv_pipeline *p, const void *key, size_t klen)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_GET, .key = key, .klen = klen };

	return rhkv_pipeline_cmd(p, &cmd);
}

long rhkv_pipeline_set(rhkv_pipeline *p, const void *key, size_t klen,
		       const void *val, size_t vlen, uint32_t flags,
		       int64_t exptime)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_SET,
				.key = key,
				.klen = klen,
				.val = val,
				.vlen = vlen,
				.flags = flags,
				.exptime = exptime };

	return rhkv_pipeline_cmd(p, &cmd);
}

long rhkv_pipeline_delete(rhkv_pipeline *p, const void *key, size_t klen)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_DELETE,
				.key = key,
				.klen = klen };

	return rhkv_pipeline_cmd(p, &cmd);
}

long rhkv_pipeline_incr(rhkv_pipeline *p, const void *key, size_t klen,
			uint64_t delta)
{
	struct rhkv_cmd cmd = {
		.op = RHKV_OP_INCR, .key = key, .klen = klen, .delta = delta
	};

	return rhkv_pipeline_cmd(p, &cmd);
}

long rhkv_pipeline_touch(rhkv_pipeline *p, const void *key, size_t klen,
			 int64_t exptime)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_TOUCH,
				.key = key,
				.klen = klen,
				.exptime = exptime };

	return rhkv_pipeline_cmd(p, &cmd);
}

int rhkv_pipeline_exec(rhkv_pipeline *p)
{
	int rc;

	if (!p)
		return RHKV_EINVAL;
	if (p->c->in_callback)
		return rhkv__fail(p->c, RHKV_EINVAL,
				  "a blocking call from a callback");
	rc = p->c->done_seq < p->last_seq ? rhkv__wait(p->c, p->last_seq) : 0;
	if (!rc)
		rc = p->err;
	for (size_t i = p->executed; i < p->n && !p->cb; i++)
		if (p->cmds[i].rc == PENDING)
			p->cmds[i].rc = rc ? rc : RHKV_ECONN;
	p->executed = p->n;
	p->err = 0;
	return rc;
}

int rhkv_pipeline_result(rhkv_pipeline *p, size_t i, struct rhkv_value *out)
{
	struct cmd *cmd;

	if (out) {
		out->data = NULL;
		out->len = 0;
	}
	if (!p || i >= p->executed || p->cb)
		return RHKV_EINVAL;
	cmd = &p->cmds[i];
	if (out && cmd->rc == 0 &&
	    (cmd->op == PROTO_OP_GET || cmd->op == PROTO_OP_GAT)) {
		*out = cmd->val;
		cmd->val.data = NULL;
	}
	return cmd->rc;
}

uint64_t rhkv_pipeline_number(const rhkv_pipeline *p, size_t i)
{
	if (!p || i >= p->executed || p->cb || p->cmds[i].rc != 0)
		return 0;
	return p->cmds[i].number;
}

size_t rhkv_pipeline_buffered(const rhkv_pipeline *p)
{
	if (!p)
		return 0;
	return sizeof(*p) + p->cap * sizeof(struct cmd) + rhkv_buffered(p->c);
}

/* ---- mget, mset ---- */

/*
 * rhkv_mget is the protocol's MGET: one frame of keys per MGET_CHUNK keys,
 * one reply frame of values each (a frame per key costs the server and
 * the client a decode and a header per key). A chunk bounds the size of a
 * reply frame the server builds at once. Keys that are no keys are not
 * sent (their status is RHKV_EBADKEY).
 */
#define MGET_CHUNK 64

struct mget {
	const size_t *sent; /* the key index of each key sent, in order */
	size_t nsent;
	struct rhkv_value *out;
	int *status;
};

static int on_mget(rhkv *c, void *ctx, size_t chunk, uint32_t st,
		   const msgpack_object *payload)
{
	struct mget *m = ctx;
	size_t first = chunk * MGET_CHUNK;
	size_t n =
		m->nsent - first < MGET_CHUNK ? m->nsent - first : MGET_CHUNK;
	const msgpack_object *e;

	if (st != PROTO_ST_OK) {
		int rc = rhkv__status(c, st, payload);

		for (size_t k = 0; k < n; k++)
			m->status[m->sent[first + k]] = rc;
		return 0;
	}
	if (payload->type != MSGPACK_OBJECT_ARRAY ||
	    payload->via.array.size != n)
		return RHKV_EPROTO;
	e = payload->via.array.ptr;
	for (size_t k = 0; k < n; k++) {
		size_t i = m->sent[first + k];
		struct rhkv_result r = { 0 };

		if (e[k].type == MSGPACK_OBJECT_NIL) {
			m->status[i] = RHKV_ENOTFOUND;
			continue;
		}
		if (!rhkv__pl_result(PROTO_OP_GET, &e[k], &r))
			return RHKV_EPROTO;
		m->out[i].data = malloc(r.len + 1);
		if (!m->out[i].data) {
			m->status[i] = RHKV_ENOMEM;
			continue;
		}
		memcpy(m->out[i].data, r.data, r.len);
		m->out[i].data[r.len] = '\0';
		m->out[i].len = r.len;
		m->out[i].flags = r.flags;
		m->out[i].cas = r.cas;
		m->status[i] = 0;
	}
	return 0;
}

/* The MGET frames of the sent keys into c->sb, ids from first_id. */
static int encode_mget(rhkv *c, const char *const *keys, const size_t *klens,
		       const struct mget *m, uint64_t first_id)
{
	msgpack_packer *pk = &c->pk;
	const char *pre = c->opt.key_prefix;
	size_t pl = c->prefix_len;

	msgpack_sbuffer_clear(&c->sb);
	for (size_t first = 0; first < m->nsent; first += MGET_CHUNK) {
		size_t n = m->nsent - first < MGET_CHUNK ? m->nsent - first
							 : MGET_CHUNK;
		size_t frame = proto_bin_begin(&c->sb);
		int e = 0;

		if (frame == (size_t)-1)
			return RHKV_ENOMEM;
		proto_bin_pack_request_head(pk, PROTO_OP_MGET,
					    first_id + first / MGET_CHUNK, 1);
		e |= msgpack_pack_array(pk, (uint32_t)n);
		for (size_t k = 0; k < n; k++) {
			size_t i = m->sent[first + k];

			e |= msgpack_pack_str(pk, pl + klens[i]);
			if (pl)
				e |= msgpack_pack_str_body(pk, pre, pl);
			e |= msgpack_pack_str_body(pk, keys[i], klens[i]);
		}
		if (e)
			return RHKV_ENOMEM;
		proto_bin_end(&c->sb, frame);
	}
	return 0;
}

int rhkv_mget(rhkv *c, size_t n, const char *const *keys, const size_t *klens,
	      struct rhkv_value *out, int *status)
{
	struct mget m = { .out = out };
	size_t *sent;
	uint64_t id;
	int rc = 0;

	if (!c || (n && (!keys || !klens || !out)))
		return RHKV_EINVAL;
	sent = malloc((n ? n : 1) * sizeof(*sent));
	m.status = status ? status : malloc((n ? n : 1) * sizeof(int));
	if (!sent || !m.status) {
		free(sent);
		if (!status)
			free(m.status);
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	}
	m.sent = sent;
	for (size_t i = 0; i < n; i++) {
		out[i] = (struct rhkv_value){ 0 };
		m.status[i] = RHKV_EBADKEY;
		if (keys[i] && rhkv__key_ok(c, klens[i], keys[i]))
			sent[m.nsent++] = i;
	}
	if (m.nsent) {
		id = c->next_id;
		c->next_id += (m.nsent + MGET_CHUNK - 1) / MGET_CHUNK;
		rc = encode_mget(c, keys, klens, &m, id);
		if (rc)
			rc = rhkv__fail(c, rc, "out of memory");
		else
			rc = rhkv__exchange(c, c->sb.data, c->sb.size, id,
					    (m.nsent + MGET_CHUNK - 1) /
						    MGET_CHUNK,
					    on_mget, &m);
	}
	/* keys of chunks without a reply failed with the connection */
	for (size_t k = 0; rc && k < m.nsent; k++)
		if (m.status[sent[k]] == RHKV_EBADKEY) {
			m.status[sent[k]] = rc;
			rhkv_value_free(&out[sent[k]]);
		}
	free(sent);
	if (!status)
		free(m.status);
	return rc;
}

int rhkv_mset(rhkv *c, size_t n, const struct rhkv_item *items, int *status)
{
	rhkv_pipeline *p;
	long *idx;
	int rc;

	if (!c || (n && !items))
		return RHKV_EINVAL;
	p = rhkv_pipeline_new(c);
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!p || !idx) {
		rhkv_pipeline_free(p);
		free(idx);
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = rhkv_pipeline_set(p, items[i].key, items[i].klen,
					   items[i].val, items[i].vlen,
					   items[i].flags, items[i].exptime);
	rc = rhkv_pipeline_exec(p);
	if (status)
		for (size_t i = 0; i < n; i++)
			status[i] = idx[i] < 0
					    ? (int)idx[i]
					    : rhkv_pipeline_result(
						      p, (size_t)idx[i], NULL);
	rhkv_pipeline_free(p);
	free(idx);
	return rc;
}
