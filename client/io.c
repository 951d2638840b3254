/*
 * Moving frames: one exchange sends a batch of requests and reads their
 * replies in order, under one deadline. The common call costs one send()
 * and one recv(): the socket is blocking with SO_RCVTIMEO set to the I/O
 * timeout, sends use MSG_DONTWAIT, and poll() is only used once a call has
 * had to wait (a full socket, or a reply in several pieces). Over TLS the
 * socket is non-blocking and every wait is a poll() for the event that
 * OpenSSL asks for (a read may need to write, and a write to read).
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

struct xfer {
	rhkv *c;
	long long deadline; /* 0: none */
	uint64_t first_id;
	size_t n, done; /* replies expected, replies handled */
	short want;	/* TLS: the event the last read waits for */
	rhkv__reply_fn fn;
	void *ctx;
};

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

/* Hands every complete reply in the buffer to fn. */
static int consume(struct xfer *x)
{
	rhkv *c = x->c;

	while (x->done < x->n) {
		size_t avail = c->rlen - c->roff;
		struct proto_bin_reply reply;
		uint32_t blen;
		int rc;

		switch (proto_bin_frame_len(c->rbuf + c->roff, avail,
					    RHKV__REPLY_MAX, &blen)) {
		case PROTO_BIN_FRAME_NEED_MORE:
			return 0;
		case PROTO_BIN_FRAME_TOO_LARGE:
			return rhkv__drop(c, RHKV_EPROTO,
					  "reply frame of %u bytes", blen);
		case PROTO_BIN_FRAME_OK:
			break;
		}
		if (avail - PROTO_BIN_HEADER < blen)
			return reserve(c, PROTO_BIN_HEADER + (size_t)blen);
		/* the payload lives until the next decode: fn consumes it
		 * before this loop decodes the next reply */
		if (proto_bin_decode_reply(&c->dec,
					   c->rbuf + c->roff + PROTO_BIN_HEADER,
					   blen, &reply) != PROTO_BIN_OK)
			return rhkv__drop(c, RHKV_EPROTO, "malformed reply");
		if (reply.id != x->first_id + x->done)
			return rhkv__drop(
				c, RHKV_EPROTO, "reply id %llu, expected %llu",
				(unsigned long long)reply.id,
				(unsigned long long)(x->first_id + x->done));
		rc = x->fn(c, x->ctx, x->done, reply.status, &reply.payload);
		if (rc != 0)
			return rhkv__drop(c, rc, "malformed reply payload");
		c->roff += PROTO_BIN_HEADER + blen;
		x->done++;
	}
	return 0;
}

/* Waits for events on the socket until the deadline. */
static int wait_fd(struct xfer *x, short events, short *revents)
{
	rhkv *c = x->c;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = events };
		int ms = -1, r;

		if (x->deadline) {
			long long l = x->deadline - rhkv__now_ms();

			if (l <= 0)
				return rhkv__drop(c, RHKV_ETIMEDOUT,
						  "no reply within %d ms",
						  c->opt.io_timeout_ms);
			ms = l > INT32_MAX ? INT32_MAX : (int)l;
		}
		r = poll(&pfd, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rhkv__drop(c, RHKV_ECONN, "poll: %s",
					  strerror(errno));
		if (r == 0)
			continue; /* the deadline check above fires */
		*revents = pfd.revents;
		return 0;
	}
}

/*
 * One recv() into the buffer. blocking: wait in recv() itself (SO_RCVTIMEO
 * bounds it); else the socket was reported readable. 0, or the error.
 */
static int read_some(struct xfer *x, bool blocking)
{
	rhkv *c = x->c;
	ssize_t got;
	int rc = reserve(c, 0);

	if (rc)
		return rc;
	if (c->ssl) {
		size_t n;

		x->want = POLLIN;
		rc = rhkv__tls_read(c, c->rbuf + c->rlen, c->rcap - c->rlen, &n,
				    &x->want);
		c->rlen += n;
		return rc == 0 && n > 0 ? consume(x) : rc;
	}
	got = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen,
		   blocking ? 0 : MSG_DONTWAIT);
	if (got > 0) {
		c->rlen += (size_t)got;
		return consume(x);
	}
	if (got == 0)
		return rhkv__drop(c, RHKV_ECONN,
				  "the server closed the connection");
	if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
		if (x->deadline && rhkv__now_ms() >= x->deadline)
			return rhkv__drop(c, RHKV_ETIMEDOUT,
					  "no reply within %d ms",
					  c->opt.io_timeout_ms);
		return 0;
	}
	return rhkv__drop(c, RHKV_ECONN, "recv: %s", strerror(errno));
}

static int send_all(struct xfer *x, const char *out, size_t len, bool *waited)
{
	rhkv *c = x->c;
	size_t sent = 0;
	short rev;
	int rc;

	while (sent < len) {
		short want = POLLOUT;
		ssize_t w;

		if (c->ssl) {
			size_t n;

			rc = rhkv__tls_write(c, out + sent, len - sent, &n,
					     &want);
			if (rc)
				return rc;
			w = (ssize_t)n;
			if (w == 0)
				errno = EAGAIN;
		} else {
			w = send(c->fd, out + sent, len - sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (w > 0) {
			sent += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return rhkv__drop(c, RHKV_ECONN, "send: %s",
					  strerror(errno));
		/* full: wait for room, reading replies meanwhile so that a
		 * server that stops reading until they drain goes on */
		*waited = true;
		rc = wait_fd(x, want | POLLIN, &rev);
		if (rc == 0 && (rev & POLLIN))
			rc = read_some(x, false);
		if (rc)
			return rc;
	}
	return 0;
}

int rhkv__exchange(rhkv *c, const char *out, size_t len, uint64_t first_id,
		   size_t n, rhkv__reply_fn fn, void *ctx)
{
	struct xfer x = { .c = c,
			  .first_id = first_id,
			  .n = n,
			  .want = POLLIN,
			  .fn = fn,
			  .ctx = ctx };
	/* over TLS the first read does not block: it polls like the rest */
	bool waited = c->ssl != NULL;
	short rev;
	int rc;

	if (c->opt.io_timeout_ms > 0)
		x.deadline = rhkv__now_ms() + c->opt.io_timeout_ms;
	rc = send_all(&x, out, len, &waited);
	while (rc == 0 && x.done < n) {
		if (!waited) {
			/* the common case: the first wait is recv()'s own */
			waited = true;
			rc = read_some(&x, true);
			continue;
		}
		/* bytes OpenSSL has already read would wait for poll() */
		rc = rhkv__tls_pending(c) ? 0 : wait_fd(&x, x.want, &rev);
		if (rc == 0)
			rc = read_some(&x, false);
	}
	if (rc)
		return rc;
	if (c->roff < c->rlen)
		/* bytes nobody asked for: start clean next time */
		rhkv__drop(c, RHKV_EPROTO, "unexpected bytes after a reply");
	c->roff = c->rlen = 0;
	return 0;
}

int rhkv__call(rhkv *c, const struct rhkv__req *r, rhkv__reply_fn fn, void *ctx)
{
	uint64_t id;
	int rc;

	if (r->key && r->op != PROTO_OP_STATS && r->op != PROTO_OP_AUTH &&
	    !proto_bin_key_ok(r->key, r->klen))
		return rhkv__fail(c, RHKV_EBADKEY, "bad key");
	rc = rhkv__ensure(c);
	if (rc)
		return rc;
	msgpack_sbuffer_clear(&c->sb);
	id = c->next_id++;
	if (rhkv__encode(&c->sb, &c->pk, id, r))
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	return rhkv__exchange(c, c->sb.data, c->sb.size, id, 1, fn, ctx);
}
