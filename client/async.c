/*
 * The non-blocking API (rhkv.h): rhkv_send() turns a struct rhkv_cmd into
 * a request queued on the engine (io.c) with the caller's callback; the
 * event functions step the engine from an event loop; replies of public
 * commands are decoded here into a struct rhkv_result.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* The wire op of each public op, 0 for none. */
static uint32_t wire_op(int op)
{
	static const uint32_t ops[] = {
		[RHKV_OP_GET] = PROTO_OP_GET,
		[RHKV_OP_GAT] = PROTO_OP_GAT,
		[RHKV_OP_SET] = PROTO_OP_SET,
		[RHKV_OP_ADD] = PROTO_OP_ADD,
		[RHKV_OP_REPLACE] = PROTO_OP_REPLACE,
		[RHKV_OP_APPEND] = PROTO_OP_APPEND,
		[RHKV_OP_PREPEND] = PROTO_OP_PREPEND,
		[RHKV_OP_CAS] = PROTO_OP_CAS,
		[RHKV_OP_DELETE] = PROTO_OP_DELETE,
		[RHKV_OP_INCR] = PROTO_OP_INCR,
		[RHKV_OP_DECR] = PROTO_OP_DECR,
		[RHKV_OP_TOUCH] = PROTO_OP_TOUCH,
		[RHKV_OP_FLUSH_ALL] = PROTO_OP_FLUSH_ALL,
		[RHKV_OP_NOOP] = PROTO_OP_NOOP,
		[RHKV_OP_META_GET] = PROTO_OP_META_GET,
		[RHKV_OP_META_SET] = PROTO_OP_META_SET,
		[RHKV_OP_META_DELETE] = PROTO_OP_META_DELETE,
		[RHKV_OP_META_ARITH] = PROTO_OP_META_ARITH,
	};

	if (op <= 0 || (size_t)op >= sizeof(ops) / sizeof(ops[0]))
		return 0;
	return ops[op];
}

int rhkv__cmd_req(rhkv *c, const struct rhkv_cmd *cmd, struct rhkv__req *r,
		  struct proto_bin_meta *meta)
{
	uint32_t op = cmd ? wire_op(cmd->op) : 0;

	if (!op || (!cmd->val && cmd->vlen))
		return rhkv__fail(c, RHKV_EINVAL, "bad command");
	*r = (struct rhkv__req){ .op = op,
				 .key = cmd->key,
				 .klen = cmd->klen,
				 .val = cmd->val,
				 .vlen = cmd->vlen,
				 .flags = cmd->flags,
				 .exptime = cmd->exptime,
				 .cas = cmd->cas,
				 .delta = cmd->delta };
	if (!rhkv__req_key_ok(c, r))
		return rhkv__fail(c, RHKV_EBADKEY, "bad key");
	if (!proto_bin_op_is_meta(op))
		return 0;
	r->meta = meta;
	return rhkv__meta_opts(c, cmd, meta);
}

static int send_cmd(rhkv *c, const struct rhkv_cmd *cmd, rhkv_callback cb,
		    void *arg)
{
	struct proto_bin_meta meta;
	struct rhkv__req r;
	size_t off;
	int rc;

	rc = rhkv__cmd_req(c, cmd, &r, &meta);
	if (rc)
		return rc;
	rhkv__settle(c);
	rc = rhkv__connect_start(c);
	/* a value above the default limit waits (with every command after
	 * it) for the server's limit, asked without blocking */
	if (rc == 0)
		rc = rhkv__limit_prepare(c, r.vlen);
	if (rc)
		return rc;
	off = c->held.size;
	rc = rhkv__queue(c, &r,
			 &(struct rhkv__pending){ .cb = cb,
						  .arg = arg,
						  .op = (uint32_t)cmd->op });
	if (rc)
		return rhkv__fail(c, rc, "%s", rhkv_strerror(rc));
	if (c->holding)
		rhkv__limit_track(c, off, r.vlen);
	rhkv__notify(c);
	return 0;
}

int rhkv_send(rhkv *c, const struct rhkv_cmd *cmd, rhkv_callback cb, void *arg)
{
	if (!c)
		return RHKV_EINVAL;
	rhkv__enter(c);
	return rhkv__leave(c, send_cmd(c, cmd, cb, arg));
}

/* ---- replies of public commands ---- */

static void call(rhkv *c, const struct rhkv__pending *p,
		 const struct rhkv_result *res)
{
	if (p->cb)
		p->cb(c, res, p->arg);
}

void rhkv__deliver_error(rhkv *c, const struct rhkv__pending *p, int err)
{
	struct rhkv_result res = { .op = (int)p->op,
				   .status = err,
				   .index = p->index };

	call(c, p, &res);
}

/* A meta reply into res (its meta, value and number). */
static int meta_result(uint32_t status, const msgpack_object *payload,
		       struct rhkv_result *res, struct rhkv_meta *m)
{
	struct proto_bin_meta_reply mr;

	if (!proto_bin_meta_reply_decode(payload, &mr))
		return RHKV_EPROTO;
	rhkv__meta_fill(&mr, m);
	res->flags = mr.flags;
	res->cas = mr.cas;
	res->number = res->op == RHKV_OP_META_ARITH ? mr.number : mr.cas;
	if (mr.fields & PROTO_MR_VALUE) {
		res->data = mr.value.p;
		res->len = mr.value.n;
	}
	if (res->op == RHKV_OP_META_GET)
		res->meta = m;
	(void)status;
	return 0;
}

void rhkv__deliver(rhkv *c, const struct rhkv__pending *p, uint32_t status,
		   const msgpack_object *payload)
{
	struct rhkv_result res = { .op = (int)p->op, .index = p->index };
	struct rhkv_meta m;

	if (proto_bin_op_is_meta(wire_op((int)p->op)) &&
	    rhkv__meta_has_result(status)) {
		if (meta_result(status, payload, &res, &m))
			res.status = RHKV_EPROTO;
		else if (status != PROTO_ST_OK)
			res.status = rhkv__status(c, status, payload);
		call(c, p, &res);
		return;
	}
	if (status != PROTO_ST_OK) {
		res.status = rhkv__status(c, status, payload);
		call(c, p, &res);
		return;
	}
	if (!rhkv__pl_result(wire_op((int)p->op), payload, &res))
		res.status = RHKV_EPROTO;
	call(c, p, &res);
}

/* ---- driving the handle from an event loop ---- */

int rhkv_fd(const rhkv *c)
{
	return c ? c->fd : -1;
}

int rhkv_wants(const rhkv *c)
{
	return c ? rhkv__wants(c) : 0;
}

/* One round of I/O, then the failed commands' callbacks and the hooks. */
static int step(rhkv *c, bool can_read, bool can_write)
{
	int rc;

	if (!c)
		return RHKV_EINVAL;
	if (c->in_callback)
		return 0; /* the loop will come back */
	rhkv__enter(c);
	rc = rhkv__io(c, can_read, can_write);
	rhkv__settle(c);
	rhkv__notify(c);
	return rhkv__leave(c, rc); /* closed from a callback: freed here */
}

int rhkv_on_readable(rhkv *c)
{
	return step(c, true, false);
}

int rhkv_on_writable(rhkv *c)
{
	return step(c, false, true);
}

int rhkv_timeout_ms(const rhkv *c)
{
	long long left = c ? rhkv__deadline_left(c, rhkv__now_ms()) : -1;

	return left > INT32_MAX ? INT32_MAX : (int)left;
}

int rhkv_on_timer(rhkv *c)
{
	bool freed;
	int ms;

	if (!c)
		return -1;
	if (!c->in_callback) {
		rhkv__enter(c);
		rhkv__expire(c, rhkv__now_ms());
		rhkv__settle(c);
		rhkv__notify(c);
		freed = c->closing && c->entered == 1;
		rhkv__leave(c, 0);
		if (freed)
			return -1; /* closed from a callback: no timer */
	}
	ms = rhkv_timeout_ms(c);
	/* the loop re-arms its timer with this: a deadline that later comes
	 * nearer must be told (rhkv__notify) */
	c->told_end = ms < 0 ? -1 : rhkv__now_ms() + ms;
	return ms;
}

size_t rhkv_pending(const rhkv *c)
{
	return c ? c->pq_len : 0;
}

size_t rhkv_buffered(const rhkv *c)
{
	if (!c)
		return 0;
	return c->out.alloc + c->held.alloc + c->sb.alloc + c->rcap +
	       c->pq_cap * sizeof(struct rhkv__pending) +
	       c->bigs_cap * sizeof(struct rhkv__big);
}

void rhkv__notify(rhkv *c)
{
	long long now, left, end;
	int wants;

	if (!c->hooks.update)
		return;
	wants = rhkv__wants(c);
	now = rhkv__now_ms();
	left = wants ? rhkv__deadline_left(c, now) : -1;
	end = left < 0 ? -1 : now + left;
	/* A deadline later than the loop's timer needs no word (the timer
	 * fires early and rhkv_on_timer re-arms it); one nearer (a timeout
	 * lowered on the live handle) must reach the loop even when the fd
	 * and the events stay the same. */
	if (c->fd == c->told_fd && wants == c->told_wants &&
	    (end < 0 || (c->told_end >= 0 && end >= c->told_end)))
		return;
	c->told_fd = c->fd;
	c->told_wants = wants;
	c->told_end = end;
	c->hooks.update(c->hooks.data, c->fd, wants);
}

void rhkv_set_event_hooks(rhkv *c, const struct rhkv_event_hooks *hooks)
{
	if (!c)
		return;
	if (c->hooks.cleanup)
		c->hooks.cleanup(c->hooks.data);
	memset(&c->hooks, 0, sizeof(c->hooks));
	if (hooks)
		c->hooks = *hooks;
	c->told_fd = -1;
	c->told_wants = 0;
	c->told_end = -1;
	rhkv__notify(c);
}

/* ---- a poll() loop over several handles ---- */

/* Brackets a call over several handles (rhkv__enter): a handle closed
 * from a callback meanwhile is freed at the end. */
static void enter_all(rhkv *const *cs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cs[i])
			rhkv__enter(cs[i]);
}

static void leave_all(rhkv *const *cs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cs[i])
			rhkv__leave(cs[i], 0);
}

static int poll_handles(rhkv *const *cs, size_t n, int max_ms)
{
	struct pollfd stack[16], *pfd = n <= 16 ? stack : NULL;
	long long now = rhkv__now_ms();
	int ms = max_ms, ready;

	if (!cs && n)
		return RHKV_EINVAL;
	if (!pfd && !(pfd = calloc(n, sizeof(*pfd))))
		return RHKV_ENOMEM;
	/* queued frames on a ready socket go at once: a socket almost
	 * always has room, and asking poll() first costs a system call */
	for (size_t i = 0; i < n; i++)
		if (cs[i] && cs[i]->state == RHKV__READY &&
		    cs[i]->out.size > cs[i]->out_off)
			step(cs[i], false, true);
	for (size_t i = 0; i < n; i++) {
		int w = cs[i] ? rhkv__wants(cs[i]) : 0;
		long long left = w ? rhkv__deadline_left(cs[i], now) : -1;

		pfd[i] = (struct pollfd){ .fd = w ? cs[i]->fd : -1 };
		if (w & RHKV_WANT_READ)
			pfd[i].events |= POLLIN;
		if (w & RHKV_WANT_WRITE)
			pfd[i].events |= POLLOUT;
		if (left >= 0 && (ms < 0 || left < ms))
			ms = (int)(left > INT32_MAX ? INT32_MAX : left);
	}
	ready = poll(pfd, n, ms);
	if (ready < 0)
		ready = errno == EINTR ? 0 : RHKV_ECONN;
	for (size_t i = 0; i < n && ready >= 0; i++) {
		short re = pfd[i].revents;

		if (!cs[i] || pfd[i].fd < 0)
			continue;
		if (re & (POLLERR | POLLHUP))
			re |= pfd[i].events;
		if (re & (POLLIN | POLLOUT))
			step(cs[i], re & POLLIN, re & POLLOUT);
		rhkv_on_timer(cs[i]);
	}
	if (pfd != stack)
		free(pfd);
	return ready;
}

int rhkv_poll(rhkv *const *cs, size_t n, int max_ms)
{
	int rc;

	if (!cs && n)
		return RHKV_EINVAL;
	enter_all(cs, n);
	rc = poll_handles(cs, n, max_ms);
	leave_all(cs, n);
	return rc;
}

static int poll_wait(rhkv *const *cs, size_t n)
{
	for (;;) {
		size_t busy = 0;
		int rc;

		for (size_t i = 0; i < n; i++) {
			if (cs[i])
				rhkv__settle(cs[i]);
			busy += cs[i] && cs[i]->pq_len;
		}
		if (!busy)
			return 0;
		rc = poll_handles(cs, n, -1);
		if (rc < 0)
			return rc;
	}
}

int rhkv_poll_wait(rhkv *const *cs, size_t n)
{
	int rc;

	if (!cs && n)
		return RHKV_EINVAL;
	enter_all(cs, n);
	rc = poll_wait(cs, n);
	leave_all(cs, n);
	return rc;
}
