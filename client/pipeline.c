/*
 * Pipelines: commands are encoded into the pipeline's own buffer as they
 * are queued, exec sends them in one write and reads every reply in order;
 * rhkv_mget() and rhkv_mset() are pipelines of gets and sets.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Result of a command not answered yet. */
#define PENDING 1

struct cmd {
	uint32_t op;
	int rc;		 /* 0, RHKV_E*, or PENDING */
	uint64_t number; /* cas of a set, value of an incr */
	struct rhkv_value val;
};

struct rhkv_pipeline {
	rhkv *c;
	msgpack_sbuffer sb; /* the frames not sent yet */
	msgpack_packer pk;
	struct cmd *cmds;
	size_t n, cap;
	size_t sent;   /* cmds[0 .. sent) were sent */
	uint64_t base; /* id of cmds[0]; cmds[i] has base + i */
};

/* A range of ids of its own for each pipeline (ids only check order). */
static void take_ids(rhkv_pipeline *p)
{
	p->base = p->c->next_id;
	p->c->next_id += 1ull << 32;
}

rhkv_pipeline *rhkv_pipeline_new(rhkv *c)
{
	rhkv_pipeline *p;

	if (!c)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = c;
	msgpack_sbuffer_init(&p->sb);
	msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
	take_ids(p);
	return p;
}

void rhkv_pipeline_reset(rhkv_pipeline *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->cmds[i].val.data);
	p->n = p->sent = 0;
	msgpack_sbuffer_clear(&p->sb);
	take_ids(p);
}

void rhkv_pipeline_free(rhkv_pipeline *p)
{
	if (!p)
		return;
	rhkv_pipeline_reset(p);
	msgpack_sbuffer_destroy(&p->sb);
	free(p->cmds);
	free(p);
}

static long queue(rhkv_pipeline *p, const struct rhkv__req *r)
{
	if (!p || !r->key || (!r->val && r->vlen))
		return RHKV_EINVAL;
	if (!proto_bin_key_ok(r->key, r->klen))
		return RHKV_EBADKEY;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct cmd *q = realloc(p->cmds, cap * sizeof(*q));

		if (!q)
			return RHKV_ENOMEM;
		p->cmds = q;
		p->cap = cap;
	}
	if (rhkv__encode(&p->sb, &p->pk, p->base + p->n, r))
		return RHKV_ENOMEM;
	memset(&p->cmds[p->n], 0, sizeof(p->cmds[p->n]));
	p->cmds[p->n].op = r->op;
	p->cmds[p->n].rc = PENDING;
	return (long)p->n++;
}

long rhkv_pipeline_get(rhkv_pipeline *p, const void *key, size_t klen)
{
	struct rhkv__req r = { .op = PROTO_OP_GET, .key = key, .klen = klen };

	return queue(p, &r);
}

long rhkv_pipeline_set(rhkv_pipeline *p, const void *key, size_t klen,
		       const void *val, size_t vlen, uint32_t flags,
		       int64_t exptime)
{
	struct rhkv__req r = { PROTO_OP_SET, key,     klen, val, vlen,
			       flags,	     exptime, 0,    0,	 NULL };

	return queue(p, &r);
}

long rhkv_pipeline_delete(rhkv_pipeline *p, const void *key, size_t klen)
{
	struct rhkv__req r = { .op = PROTO_OP_DELETE,
			       .key = key,
			       .klen = klen };

	return queue(p, &r);
}

long rhkv_pipeline_incr(rhkv_pipeline *p, const void *key, size_t klen,
			uint64_t delta)
{
	struct rhkv__req r = {
		.op = PROTO_OP_INCR, .key = key, .klen = klen, .delta = delta
	};

	return queue(p, &r);
}

long rhkv_pipeline_touch(rhkv_pipeline *p, const void *key, size_t klen,
			 int64_t exptime)
{
	struct rhkv__req r = { .op = PROTO_OP_TOUCH,
			       .key = key,
			       .klen = klen,
			       .exptime = exptime };

	return queue(p, &r);
}

static int on_reply(rhkv *c, void *ctx, size_t i, uint32_t status,
		    const msgpack_object *payload)
{
	rhkv_pipeline *p = ctx;
	struct cmd *cmd = &p->cmds[p->sent + i];
	const char *v;
	uint32_t flags, n;

	if (status != PROTO_ST_OK) {
		cmd->rc = rhkv__status(c, status, payload);
		return 0;
	}
	switch (cmd->op) {
	case PROTO_OP_GET:
		if (!rhkv__pl_value(payload, &flags, &v, &n, &cmd->val.cas))
			return RHKV_EPROTO;
		cmd->val.data = malloc((size_t)n + 1);
		if (!cmd->val.data) {
			cmd->rc = RHKV_ENOMEM;
			return 0;
		}
		memcpy(cmd->val.data, v, n);
		cmd->val.data[n] = '\0';
		cmd->val.len = n;
		cmd->val.flags = flags;
		break;
	case PROTO_OP_SET:
	case PROTO_OP_INCR:
		if (!rhkv__pl_uint(payload, &cmd->number))
			return RHKV_EPROTO;
		break;
	default: /* nil: anything is accepted */
		break;
	}
	cmd->rc = 0;
	return 0;
}

int rhkv_pipeline_exec(rhkv_pipeline *p)
{
	rhkv *c;
	int rc;

	if (!p)
		return RHKV_EINVAL;
	c = p->c;
	if (p->sent == p->n)
		return 0;
	rc = rhkv__ensure(c);
	if (rc == 0)
		rc = rhkv__exchange(c, p->sb.data, p->sb.size,
				    p->base + p->sent, p->n - p->sent, on_reply,
				    p);
	for (size_t i = p->sent; i < p->n; i++)
		if (p->cmds[i].rc == PENDING)
			p->cmds[i].rc = rc ? rc : RHKV_EPROTO;
	p->sent = p->n;
	msgpack_sbuffer_clear(&p->sb);
	return rc;
}

int rhkv_pipeline_result(rhkv_pipeline *p, size_t i, struct rhkv_value *out)
{
	struct cmd *cmd;

	if (out) {
		out->data = NULL;
		out->len = 0;
	}
	if (!p || i >= p->sent)
		return RHKV_EINVAL;
	cmd = &p->cmds[i];
	if (out && cmd->rc == 0 && cmd->op == PROTO_OP_GET) {
		*out = cmd->val;
		cmd->val.data = NULL;
	}
	return cmd->rc;
}

uint64_t rhkv_pipeline_number(const rhkv_pipeline *p, size_t i)
{
	if (!p || i >= p->sent || p->cmds[i].rc != 0)
		return 0;
	return p->cmds[i].number;
}

/* ---- mget, mset ---- */

int rhkv_mget(rhkv *c, size_t n, const void *const *keys, const size_t *klens,
	      struct rhkv_value *out, int *status)
{
	rhkv_pipeline *p;
	long *idx;
	int rc;

	if (!c || (n && (!keys || !klens || !out)))
		return RHKV_EINVAL;
	p = rhkv_pipeline_new(c);
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!p || !idx) {
		rhkv_pipeline_free(p);
		free(idx);
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = rhkv_pipeline_get(p, keys[i], klens[i]);
	rc = rhkv_pipeline_exec(p);
	for (size_t i = 0; i < n; i++) {
		int r = idx[i] < 0 ? (int)idx[i]
				   : rhkv_pipeline_result(p, (size_t)idx[i],
							  &out[i]);

		if (r) {
			out[i].data = NULL;
			out[i].len = 0;
		}
		if (status)
			status[i] = r;
	}
	rhkv_pipeline_free(p);
	free(idx);
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
