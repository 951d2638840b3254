/*
 * Commands over a cluster in parallel: each command goes to its key's
 * server with rhkv_send(), then one poll() loop (rhkv_poll_wait) moves
 * every server's bytes at once, so a batch costs about the slowest
 * server's round trip rather than the sum of them. Built on the public
 * calls of the cluster and of the non-blocking core only.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* One command of a batch: where its result goes. */
struct slot {
	size_t index;
	rhkv_callback cb;
	void *arg;
	rhkv *c;
	int status;
	bool moved; /* c is the fallback of the key's dead server */
};

struct batch {
	struct slot *slots;
	rhkv **handles; /* the distinct servers used */
	size_t nhandles;
};

static void on_result(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct slot *s = arg;
	struct rhkv_result mine = *r;

	s->status = r->status;
	mine.index = s->index;
	mine.moved = s->moved;
	if (s->cb)
		s->cb(c, &mine, s->arg);
}

static void note_handle(struct batch *b, rhkv *c)
{
	for (size_t i = 0; i < b->nhandles; i++)
		if (b->handles[i] == c)
			return;
	b->handles[b->nhandles++] = c;
}

/* A command that never reached a server gets its result now. */
static void fail_slot(struct slot *s, const struct rhkv_cmd *cmd, int err)
{
	struct rhkv_result r = { .op = cmd->op,
				 .status = err,
				 .index = s->index };

	s->status = err;
	if (s->cb)
		s->cb(NULL, &r, s->arg);
}

int rhkv_cluster_exec(rhkv_cluster *cl, size_t n, const struct rhkv_cmd *cmds,
		      rhkv_callback cb, void *arg)
{
	struct batch b = { 0 };
	int rc = 0;

	if (!cl || (n && !cmds))
		return RHKV_EINVAL;
	b.slots = calloc(n ? n : 1, sizeof(*b.slots));
	b.handles = calloc(n ? n : 1, sizeof(*b.handles));
	if (!b.slots || !b.handles) {
		free(b.slots);
		free(b.handles);
		return RHKV_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct slot *s = &b.slots[i];
		bool moved = false;
		rhkv *c = rhkv__cluster_pick(cl, cmds[i].key, cmds[i].klen,
					     &moved);
		int err;

		*s = (struct slot){
			.index = i, .cb = cb, .arg = arg, .c = c, .moved = moved
		};
		if (!c) {
			fail_slot(s, &cmds[i], RHKV_ECONN);
			continue;
		}
		err = rhkv_send(c, &cmds[i], on_result, s);
		if (err) {
			rhkv_cluster_failed(cl, c, err);
			fail_slot(s, &cmds[i], err);
			continue;
		}
		note_handle(&b, c);
	}
	rc = rhkv_poll_wait(b.handles, b.nhandles);
	/* a server lost now is skipped by the next picks */
	for (size_t i = 0; i < n; i++)
		if (b.slots[i].c)
			rhkv_cluster_failed(cl, b.slots[i].c,
					    b.slots[i].status);
	free(b.slots);
	free(b.handles);
	return rc;
}

/* ---- mget, mset ---- */

struct mget {
	struct rhkv_value *out;
	int *status;
	int *moved;
	int rc;
};

static void on_mget(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct mget *m = arg;
	struct rhkv_value *v = &m->out[r->index];

	(void)c;
	if (m->status)
		m->status[r->index] = r->status;
	if (m->moved)
		m->moved[r->index] = r->moved;
	if (r->status)
		return;
	v->data = malloc(r->len + 1);
	if (!v->data) {
		if (m->status)
			m->status[r->index] = RHKV_ENOMEM;
		return;
	}
	memcpy(v->data, r->data, r->len);
	v->data[r->len] = '\0';
	v->len = r->len;
	v->flags = r->flags;
	v->cas = r->cas;
}

int rhkv_cluster_mget_moved(rhkv_cluster *cl, size_t n, const char *const *keys,
			    const size_t *klens, struct rhkv_value *out,
			    int *status, int *moved)
{
	struct mget m = { .out = out, .status = status, .moved = moved };
	struct rhkv_cmd *cmds;
	int rc;

	if (!cl || (n && (!keys || !klens || !out)))
		return RHKV_EINVAL;
	cmds = calloc(n ? n : 1, sizeof(*cmds));
	if (!cmds)
		return RHKV_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cmds[i] = (struct rhkv_cmd){ .op = RHKV_OP_GET,
					     .key = keys[i],
					     .klen = klens[i] };
		out[i] = (struct rhkv_value){ 0 };
		if (moved)
			moved[i] = 0;
	}
	rc = rhkv_cluster_exec(cl, n, cmds, on_mget, &m);
	free(cmds);
	return rc;
}

int rhkv_cluster_mget(rhkv_cluster *cl, size_t n, const char *const *keys,
		      const size_t *klens, struct rhkv_value *out, int *status)
{
	return rhkv_cluster_mget_moved(cl, n, keys, klens, out, status, NULL);
}

static void on_mset(rhkv *c, const struct rhkv_result *r, void *arg)
{
	int *status = arg;

	(void)c;
	if (status)
		status[r->index] = r->status;
}

int rhkv_cluster_mset(rhkv_cluster *cl, size_t n, const struct rhkv_item *items,
		      int *status)
{
	struct rhkv_cmd *cmds;
	int rc;

	if (!cl || (n && !items))
		return RHKV_EINVAL;
	cmds = calloc(n ? n : 1, sizeof(*cmds));
	if (!cmds)
		return RHKV_ENOMEM;
	for (size_t i = 0; i < n; i++)
		cmds[i] = (struct rhkv_cmd){ .op = RHKV_OP_SET,
					     .key = items[i].key,
					     .klen = items[i].klen,
					     .val = items[i].val,
					     .vlen = items[i].vlen,
					     .flags = items[i].flags,
					     .exptime = items[i].exptime };
	rc = rhkv_cluster_exec(cl, n, cmds, on_mset, status);
	free(cmds);
	return rc;
}
