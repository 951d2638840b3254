/*
 * The engine under every call: frames queue in the handle's output
 * buffer, each with a pending record; flushes send what the socket takes;
 * reads decode every complete reply and hand it to its record's handler
 * (an internal function, or a public callback through async.c). The
 * blocking calls wait on this engine with poll(); event loops drive it
 * through rhkv_on_readable() and friends (async.c).
 *
 * The common blocking call still costs one send() and one recv(): over
 * TCP the socket is blocking with SO_RCVTIMEO set to the I/O timeout,
 * every send and every read that must not wait passes MSG_DONTWAIT, and a
 * blocking wait for a reply is recv() itself. Over TLS every wait is a
 * poll() for what OpenSSL asks (a read may need to write, and a write to
 * read).
 *
 * A dropped connection (rhkv__drop) only closes the socket and records
 * the error: its pending commands are failed at the next safe point
 * (rhkv__settle), outside the handler that found the failure, so that no
 * callback runs in the middle of a decode. For the same reason a handle
 * closed from a callback is freed only by the outermost call that runs
 * callbacks (rhkv__enter / rhkv__leave around each).
 *
 * While the server's item size limit is being asked without blocking,
 * new frames queue in the held buffer instead of the output (limit.c).
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

long long rhkv__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the pending FIFO ---- */

static struct rhkv__pending *pq_at(const rhkv *c, size_t i)
{
	return &c->pq[(c->pq_head + i) % c->pq_cap];
}

static int pq_push(rhkv *c, const struct rhkv__pending *p)
{
	if (c->pq_len == c->pq_cap) {
		size_t cap = c->pq_cap ? 2 * c->pq_cap : 64;
		struct rhkv__pending *q = malloc(cap * sizeof(*q));

		if (!q)
			return RHKV_ENOMEM;
		for (size_t i = 0; i < c->pq_len; i++)
			q[i] = *pq_at(c, i);
		free(c->pq);
		c->pq = q;
		c->pq_cap = cap;
		c->pq_head = 0;
	}
	if (c->pq_len == 0 && c->state == RHKV__READY)
		c->progress_ms = rhkv__now_ms(); /* the deadline starts now */
	*pq_at(c, c->pq_len++) = *p;
	c->seq = p->seq;
	return 0;
}

struct rhkv__pending *rhkv__pending_find(rhkv *c, uint64_t id)
{
	for (size_t i = 0; i < c->pq_len; i++)
		if (pq_at(c, i)->id == id)
			return pq_at(c, i);
	return NULL;
}

static struct rhkv__pending pq_pop(rhkv *c)
{
	struct rhkv__pending p = *pq_at(c, 0);

	c->pq_head = (c->pq_head + 1) % c->pq_cap;
	c->pq_len--;
	c->done_seq = p.seq;
	return p;
}

/* ---- queueing ---- */

/* Where new frames go: the output buffer, or while the item size limit
 * is asked for, the held one (limit.c). */
static msgpack_sbuffer *queue_buf(rhkv *c)
{
	return c->holding ? &c->held : &c->out;
}

int rhkv__submit(rhkv *c, const char *out, size_t len, uint64_t first_id,
		 size_t n, rhkv__reply_fn fn, void *ctx)
{
	msgpack_sbuffer *q = queue_buf(c);
	size_t was = q->size;

	if (msgpack_sbuffer_write(q, out, len))
		return RHKV_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct rhkv__pending p = { .id = first_id + i,
					   .seq = c->seq + 1,
					   .fn = fn,
					   .ctx = ctx,
					   .index = i };

		if (pq_push(c, &p)) {
			/* undo: the frames queued must match the records */
			q->size = was;
			while (i--) {
				c->pq_len--;
				c->seq--;
			}
			return RHKV_ENOMEM;
		}
	}
	return 0;
}

int rhkv__queue(rhkv *c, const struct rhkv__req *r,
		const struct rhkv__pending *how)
{
	struct rhkv__pending p = *how;
	msgpack_sbuffer *q = queue_buf(c);
	size_t was = q->size;
	int rc = rhkv__encode(c, q, c->holding ? &c->hpk : &c->opk, c->next_id,
			      r);

	if (rc)
		return rc;
	p.id = c->next_id;
	p.seq = c->seq + 1;
	if (pq_push(c, &p)) {
		q->size = was;
		return RHKV_ENOMEM;
	}
	c->next_id++;
	return 0;
}

/* ---- reading and dispatching replies ---- */

/* Makes room for `need` unread bytes plus one read's worth. */
static int reserve(rhkv *c, size_t need)
{
	size_t unread = c->rlen - c->roff;
	size_t cap = c->rcap;
	char *p;

	if (c->roff > 0 && c->rcap - c->rlen < RHKV__RBUF_MIN) {
		memmove(c->rbuf, c->rbuf + c->roff, unread);
		c->roff = 0;
		c->rlen = unread;
	}
	if (need < unread + RHKV__RBUF_MIN)
		need = unread + RHKV__RBUF_MIN;
	if (c->roff + need <= c->rcap)
		return 0;
	if (c->roff > 0) {
		memmove(c->rbuf, c->rbuf + c->roff, unread);
		c->roff = 0;
		c->rlen = unread;
		if (need <= c->rcap)
			return 0;
	}
	while (cap < need)
		cap *= 2;
	p = realloc(c->rbuf, cap);
	if (!p)
		return rhkv__drop(c, RHKV_ENOMEM, "out of memory: %zu bytes",
				  cap);
	c->rbuf = p;
	c->rcap = cap;
	return 0;
}

/* Hands one decoded reply to its pending record. */
static int dispatch(rhkv *c, const struct proto_bin_reply *reply)
{
	struct rhkv__pending p = pq_pop(c);
	int rc = 0;

	if (reply->id != p.id)
		return rhkv__drop(c, RHKV_EPROTO,
				  "reply id %llu, expected %llu",
				  (unsigned long long)reply->id,
				  (unsigned long long)p.id);
	c->in_callback++;
	if (p.fail)
		rhkv__deliver_error(c, &p, p.fail);
	else if (p.fn)
		rc = p.fn(c, p.ctx, p.index, reply->status, &reply->payload);
	else
		rhkv__deliver(c, &p, reply->status, &reply->payload);
	c->in_callback--;
	if (rc)
		return rhkv__drop(c, rc, "malformed reply payload");
	return 0;
}

/* Dispatches every complete reply in the read buffer. */
static int consume(rhkv *c)
{
	while (c->fd >= 0) {
		size_t avail = c->rlen - c->roff;
		struct proto_bin_reply reply;
		uint32_t blen;
		int rc;

		switch (proto_bin_frame_len(c->rbuf + c->roff, avail,
					    RHKV__REPLY_MAX, &blen)) {
		case PROTO_BIN_FRAME_NEED_MORE:
			if (avail == 0)
				c->roff = c->rlen = 0;
			return 0;
		case PROTO_BIN_FRAME_TOO_LARGE:
			return rhkv__drop(c, RHKV_EPROTO,
					  "reply frame of %u bytes", blen);
		case PROTO_BIN_FRAME_OK:
			break;
		}
		if (avail - PROTO_BIN_HEADER < blen)
			return reserve(c, PROTO_BIN_HEADER + (size_t)blen);
		if (c->pq_len == 0)
			return rhkv__drop(c, RHKV_EPROTO,
					  "a reply nobody asked for");
		/* the payload lives until the next decode: the handler uses
		 * it before this loop decodes the next reply */
		if (proto_bin_decode_reply(&c->dec,
					   c->rbuf + c->roff + PROTO_BIN_HEADER,
					   blen, &reply) != PROTO_BIN_OK)
			return rhkv__drop(c, RHKV_EPROTO, "malformed reply");
		c->roff += PROTO_BIN_HEADER + blen;
		rc = dispatch(c, &reply);
		if (rc)
			return rc;
	}
	return c->drop_err;
}

/*
 * One read into the buffer. block: wait in recv() itself (plain TCP:
 * SO_RCVTIMEO bounds it). 0 (bytes or none), or the error.
 */
static int read_some(rhkv *c, bool block)
{
	ssize_t got;
	int rc = reserve(c, 0);

	if (rc)
		return rc;
	if (c->ssl) {
		size_t n;

		c->ssl_rwant = POLLIN;
		rc = rhkv__tls_read(c, c->rbuf + c->rlen, c->rcap - c->rlen, &n,
				    &c->ssl_rwant);
		if (rc || n == 0)
			return rc;
		got = (ssize_t)n;
	} else {
		got = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen,
			   block ? 0 : MSG_DONTWAIT);
		if (got == 0)
			return rhkv__drop(c, RHKV_ECONN,
					  "the server closed the connection");
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == EWOULDBLOCK)
				return 0;
			return rhkv__drop(c, RHKV_ECONN, "recv: %s",
					  strerror(errno));
		}
	}
	c->rlen += (size_t)got;
	c->progress_ms = rhkv__now_ms();
	return consume(c);
}

/* ---- sending ---- */

/* Sends queued frames until the socket is full or nothing is left. */
static int flush(rhkv *c)
{
	while (c->out_off < c->out.size) {
		const char *p = c->out.data + c->out_off;
		size_t len = c->out.size - c->out_off;
		ssize_t w;

		if (c->ssl) {
			size_t n;
			int rc;

			c->ssl_wwant = POLLOUT;
			rc = rhkv__tls_write(c, p, len, &n, &c->ssl_wwant);
			if (rc)
				return rc;
			if (n == 0)
				return 0;
			w = (ssize_t)n;
		} else {
			w = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (w < 0)
				return rhkv__drop(c, RHKV_ECONN, "send: %s",
						  strerror(errno));
		}
		c->out_off += (size_t)w;
		c->progress_ms = rhkv__now_ms();
		/* a stream that never empties the buffer must not grow it:
		 * the unsent tail moves to the front once it is the smaller
		 * part */
		if (c->out_off >= c->out.size - c->out_off &&
		    c->out_off < c->out.size) {
			memmove(c->out.data, c->out.data + c->out_off,
				c->out.size - c->out_off);
			c->out.size -= c->out_off;
			c->out_off = 0;
		}
	}
	c->out_off = 0;
	msgpack_sbuffer_clear(&c->out);
	return 0;
}

static size_t unsent(const rhkv *c)
{
	return c->out.size - c->out_off;
}

int rhkv__io(rhkv *c, bool can_read, bool can_write)
{
	int rc = 0;

	if (c->state != RHKV__READY) {
		if (c->state == RHKV__CLOSED)
			return c->drop_err;
		rc = rhkv__connect_step(c);
		if (rc || c->state != RHKV__READY)
			return rc;
		can_write = true; /* try at once: the socket is new */
	}
	if (can_write && unsent(c))
		rc = flush(c);
	if (rc == 0 && (can_read || rhkv__tls_pending(c)))
		rc = read_some(c, false);
	/* OpenSSL may hold decrypted bytes that poll() cannot see: an event
	 * loop would wait for them in vain, so they are taken now */
	while (rc == 0 && c->fd >= 0 && rhkv__tls_pending(c))
		rc = read_some(c, false);
	/* a TLS write that waited for a read may go on now */
	if (rc == 0 && c->ssl && can_read && unsent(c))
		rc = flush(c);
	return rc;
}

/* ---- failing, waiting, deadlines ---- */

void rhkv__settle(rhkv *c)
{
	struct rhkv__pending *q = c->pq;
	size_t head = c->pq_head, len = c->pq_len, cap = c->pq_cap;
	int err = c->drop_err;

	if (!err || c->in_callback)
		return;
	/* The failed records are taken out first: their callbacks may queue
	 * new commands (and start a new connection) on a clean queue. */
	c->pq = NULL;
	c->pq_head = c->pq_len = c->pq_cap = 0;
	c->drop_err = 0;
	c->in_callback++;
	for (size_t i = 0; i < len; i++) {
		const struct rhkv__pending *p = &q[(head + i) % cap];

		if (c->done_seq < p->seq)
			c->done_seq = p->seq;
		if (!p->fn)
			rhkv__deliver_error(c, p, err);
	}
	c->in_callback--;
	free(q);
}

int rhkv__wants(const rhkv *c)
{
	int w = 0;

	switch (c->state) {
	case RHKV__CONNECTING:
		return RHKV_WANT_WRITE;
	case RHKV__HANDSHAKE:
		return c->ssl_wwant == POLLIN ? RHKV_WANT_READ
					      : RHKV_WANT_WRITE;
	case RHKV__READY:
		break;
	default:
		return 0;
	}
	/* always read: a server that closes an idle connection is noticed */
	w |= c->ssl && c->ssl_rwant == POLLOUT ? RHKV_WANT_WRITE
					       : RHKV_WANT_READ;
	if (unsent(c))
		w |= c->ssl && c->ssl_wwant == POLLIN ? RHKV_WANT_READ
						      : RHKV_WANT_WRITE;
	return w;
}

long long rhkv__deadline_left(const rhkv *c, long long now)
{
	long long end;

	if (c->state == RHKV__CONNECTING || c->state == RHKV__HANDSHAKE) {
		if (!c->connect_deadline)
			return -1;
		end = c->connect_deadline;
	} else if (c->state == RHKV__READY && c->pq_len &&
		   c->opt.io_timeout_ms > 0) {
		end = c->progress_ms + c->opt.io_timeout_ms;
	} else {
		return -1;
	}
	return end > now ? end - now : 0;
}

int rhkv__expire(rhkv *c, long long now)
{
	if (rhkv__deadline_left(c, now) != 0)
		return 0;
	if (c->state == RHKV__READY)
		return rhkv__drop(c, RHKV_ETIMEDOUT,
				  "no reply within %d ms (%zu commands "
				  "waiting)",
				  c->opt.io_timeout_ms, c->pq_len);
	return rhkv__drop(c, RHKV_ETIMEDOUT, "no connection within %d ms",
			  c->opt.connect_timeout_ms);
}

/* Waits for c's socket, at most until its deadline; then one round of
 * I/O for what it reported. */
static int poll_once(rhkv *c)
{
	int wants = rhkv__wants(c);
	struct pollfd pfd = { .fd = c->fd };
	long long left = rhkv__deadline_left(c, rhkv__now_ms());
	int r;

	if (wants & RHKV_WANT_READ)
		pfd.events |= POLLIN;
	if (wants & RHKV_WANT_WRITE)
		pfd.events |= POLLOUT;
	if (left == 0)
		return rhkv__expire(c, rhkv__now_ms());
	r = poll(&pfd, 1, left < 0 ? -1 : left > INT32_MAX ? INT32_MAX : left);
	if (r < 0 && errno != EINTR)
		return rhkv__drop(c, RHKV_ECONN, "poll: %s", strerror(errno));
	if (r <= 0)
		return rhkv__expire(c, rhkv__now_ms());
	/* an error or hang-up is found by the read or write it wakes */
	if (pfd.revents & (POLLERR | POLLHUP))
		pfd.revents |= pfd.events;
	return rhkv__io(c, pfd.revents & POLLIN, pfd.revents & POLLOUT);
}

/* One step of a blocking wait. */
static int wait_step(rhkv *c)
{
	long long left;
	int rc;

	if (c->state == RHKV__READY && unsent(c)) {
		rc = flush(c);
		if (rc || unsent(c))
			return rc ? rc : poll_once(c);
	}
	left = rhkv__deadline_left(c, rhkv__now_ms());
	if (c->state == RHKV__READY && !c->ssl &&
	    (left < 0 || left + 2 >= c->opt.io_timeout_ms)) {
		/* the common case: the wait is recv()'s own (its timeout is
		 * the whole I/O timeout: once part of it has passed, poll()
		 * waits for exactly the rest) */
		rc = read_some(c, true);
		if (rc == 0 && c->fd >= 0)
			rc = rhkv__expire(c, rhkv__now_ms());
		return rc;
	}
	if (c->state == RHKV__READY && rhkv__tls_pending(c))
		return read_some(c, false);
	return poll_once(c);
}

/* The error a wait ends with once the connection is gone. */
static int gone(rhkv *c)
{
	int err = c->drop_err ? c->drop_err : RHKV_ECONN;

	rhkv__settle(c);
	return err;
}

static int wait_for(rhkv *c, uint64_t seq)
{
	int rc = 0;

	while (c->done_seq < seq) {
		if (c->state == RHKV__CLOSED)
			return gone(c);
		rc = wait_step(c);
		if (rc)
			return gone(c);
	}
	rhkv__notify(c);
	return 0;
}

int rhkv__wait(rhkv *c, uint64_t seq)
{
	rhkv__enter(c);
	return rhkv__leave(c, wait_for(c, seq));
}

static int drain(rhkv *c, size_t budget, size_t max_pending)
{
	while (unsent(c) >= budget || c->pq_len > max_pending) {
		int rc;

		if (c->state == RHKV__CLOSED)
			return gone(c);
		rc = c->state == RHKV__READY && unsent(c) ? flush(c) : 0;
		if (rc == 0 && (unsent(c) >= budget || c->pq_len > max_pending))
			rc = poll_once(c);
		if (rc)
			return gone(c);
	}
	return 0;
}

int rhkv__drain(rhkv *c, size_t budget, size_t max_pending)
{
	rhkv__enter(c);
	return rhkv__leave(c, drain(c, budget, max_pending));
}

/* ---- blocking calls ---- */

static int exchange(rhkv *c, const char *out, size_t len, uint64_t first_id,
		    size_t n, rhkv__reply_fn fn, void *ctx)
{
	int rc;

	if (c->in_callback)
		return rhkv__fail(c, RHKV_EINVAL,
				  "a blocking call from a callback");
	c->err[0] = '\0';
	rc = rhkv__ensure(c);
	if (rc)
		return rc;
	if (rhkv__submit(c, out, len, first_id, n, fn, ctx))
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	return rhkv__wait(c, c->seq);
}

int rhkv__exchange(rhkv *c, const char *out, size_t len, uint64_t first_id,
		   size_t n, rhkv__reply_fn fn, void *ctx)
{
	rhkv__enter(c);
	return rhkv__leave(c, exchange(c, out, len, first_id, n, fn, ctx));
}

static int call(rhkv *c, const struct rhkv__req *r, rhkv__reply_fn fn,
		void *ctx)
{
	int rc;

	if (c->in_callback)
		return rhkv__fail(c, RHKV_EINVAL,
				  "a blocking call from a callback");
	c->err[0] = '\0';
	/* a bad key costs no connect */
	if (!rhkv__req_key_ok(c, r))
		return rhkv__fail(c, RHKV_EBADKEY, "bad key");
	rc = rhkv__ensure(c);
	if (rc)
		return rc;
	rc = rhkv__queue(c, r, &(struct rhkv__pending){ .fn = fn, .ctx = ctx });
	if (rc)
		return rhkv__fail(c, rc, "%s", rhkv_strerror(rc));
	return rhkv__wait(c, c->seq);
}

int rhkv__call(rhkv *c, const struct rhkv__req *r, rhkv__reply_fn fn, void *ctx)
{
	rhkv__enter(c);
	return rhkv__leave(c, call(c, r, fn, ctx));
}
