/*
 * The TLS transport: OpenSSL over a connected non-blocking socket on the
 * worker's event loop, the server side of the handshake first. Reads and
 * writes say what OpenSSL waits for: a read may need to write during a
 * handshake, and the batch loop waits for writability then. A write that
 * needs to read does not happen: replies exist only after the handshake,
 * and renegotiation is off.
 *
 * Handshake storms: until its handshake completes, a connection's events
 * run at the worker loop's lowest priority, and the loop runs at most a
 * bounded number of such callbacks before it looks again for events of
 * established connections (worker.c sets the priorities and the bound):
 * a flood of new TLS connections delays other handshakes, not requests.
 * libevent runs the lowest priority only in loop passes where nothing
 * else is active, so on a worker that is never idle a handshake would
 * wait for ever: after a second (or half of --tls-handshake-timeout, if
 * shorter) it joins the normal priority. A handshake that does not complete within the timeout
 * is closed (expired), whatever --idle-timeout says.
 */
#include "transport.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "conn.h"
#include "net.h"
#include "tls.h"

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A handshake waits at most this long (or half its timeout) behind
 * established connections before it joins their priority. */
#define PROMOTE_MS 1000
/* Bytes written per write before the loop serves other connections. */
#define TLS_WRITE_BUDGET (256 * 1024)

struct tls_conn {
	struct socket_events ev; /* first: socket_events_* take it */
	SSL *ssl;
	int64_t started_ms; /* monotonic: the handshake's deadline base */
	bool established;   /* the handshake completed */
	bool prioritized;   /* its events left the handshake priority */
};

static int tls_open(struct conn *c)
{
	struct tls_conn *s = calloc(1, sizeof(*s));
	struct net *net = c->w->net;
	SSL_CTX *ctx;

	if (!s)
		return -1;
	c->tstate = s;
	if (socket_events_init(c, &s->ev))
		return -1;
	event_priority_set(s->ev.rev, WORKER_PRIO_HANDSHAKE);
	event_priority_set(s->ev.wev, WORKER_PRIO_HANDSHAKE);
	ctx = tls_ctx_get(net->tls);
	s->ssl = SSL_new(ctx);
	SSL_CTX_free(ctx); /* the SSL object holds its own reference */
	if (!s->ssl) {
		ERR_clear_error();
		return -1;
	}
	atomic_fetch_add(&net->tls->connections, 1);
	if (!SSL_set_fd(s->ssl, c->fd)) {
		ERR_clear_error();
		return -1;
	}
	SSL_set_accept_state(s->ssl);
	s->started_ms = monotonic_ms();
	return 0;
}

/* What an OpenSSL call that returned r on s means for the batch loop. */
static ssize_t failure(struct conn *c, struct tls_conn *s, int r)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return TRANSPORT_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TRANSPORT_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return 0; /* the peer's close_notify: end of stream */
	default:
		break;
	}
	if (!s->established) {
		unsigned long e = ERR_peek_error();
		char reason[256] = "connection closed";

		if (e)
			ERR_error_string_n(e, reason, sizeof(reason));
		STAT_INC(&c->w->obs->stats, ssl_handshake_errors);
		log_debug("TLS handshake on connection %d failed: %s", c->fd,
			  reason);
	}
	ERR_clear_error();
	return TRANSPORT_ERROR;
}

/* Drives the handshake; 1 once it is done, else what failure() says. */
static ssize_t handshake(struct conn *c, struct tls_conn *s)
{
	ssize_t f;
	int r;

	if (s->established)
		return 1;
	ERR_clear_error();
	r = SSL_do_handshake(s->ssl);
	if (r != 1) {
		f = failure(c, s, r);
		/* The peer's end of stream mid-handshake is a failed
		 * handshake, unless it sent nothing at all (a port probe). */
		if (f == 0 && BIO_number_read(SSL_get_rbio(s->ssl)) > 0)
			STAT_INC(&c->w->obs->stats, ssl_handshake_errors);
		return f;
	}
	s->established = true;
	STAT_INC(&c->w->obs->stats, tls_handshakes);
	if (SSL_session_reused(s->ssl))
		STAT_INC(&c->w->obs->stats, tls_resumed);
	return 1;
}

static ssize_t tls_read(struct conn *c, void *buf, size_t n)
{
	struct tls_conn *s = c->tstate;
	ssize_t h = handshake(c, s);
	size_t got = 0;
	int r;

	if (h != 1)
		return h;
	/* SSL_get_error reads the thread's error queue: it must hold only
	 * this call's errors. */
	ERR_clear_error();
	r = SSL_read_ex(s->ssl, buf, n, &got);
	return r == 1 ? (ssize_t)got : failure(c, s, r);
}

/*
 * Writes from the front of out: up to a record's worth of plaintext per
 * call, pulled up from the buffer's chains, until it is empty, the socket
 * is full, or the budget is spent.
 */
static ssize_t tls_write(struct conn *c, struct evbuffer *out)
{
	struct tls_conn *s = c->tstate;
	ssize_t h = handshake(c, s);
	size_t total = 0;

	if (h != 1)
		return h;
	while (total < TLS_WRITE_BUDGET) {
		size_t len = evbuffer_get_length(out), done = 0;
		unsigned char *p;
		int r;

		if (!len)
			break;
		if (len > TLS_WRITE_CHUNK)
			len = TLS_WRITE_CHUNK;
		p = evbuffer_pullup(out, (ssize_t)len);
		if (!p)
			return TRANSPORT_ERROR;
		ERR_clear_error();
		r = SSL_write_ex(s->ssl, p, len, &done);
		if (r != 1) {
			ssize_t f = failure(c, s, r);

			if (total)
				return (ssize_t)total;
			return f == 0 ? TRANSPORT_ERROR : f;
		}
		evbuffer_drain(out, done);
		total += done;
	}
	return (ssize_t)total;
}

/* Our close_notify, then the socket's end; only after a handshake. The
 * replies are all written by now: when the alert cannot go out at once
 * (a full socket), the connection just closes. */
static bool tls_shutdown(struct conn *c)
{
	struct tls_conn *s = c->tstate;
	int r;

	if (!s->established)
		return false;
	ERR_clear_error();
	r = SSL_shutdown(s->ssl);
	ERR_clear_error();
	return r >= 0 && shutdown(c->fd, SHUT_WR) == 0;
}

/*
 * Moves s's events to the normal priority. libevent refuses to change an
 * active event's priority, and an event activated at the lowest priority
 * may wait there for ever on a busy worker: so each is taken out (which
 * also takes it out of the active queue), changed, and added back if it
 * was (level-triggered: a readable socket fires again).
 */
static void prioritize(struct tls_conn *s)
{
	struct event *evs[2] = { s->ev.rev, s->ev.wev };
	bool added[2] = { s->ev.reading, s->ev.writing };

	for (int i = 0; i < 2; i++) {
		event_del(evs[i]);
		event_priority_set(evs[i], WORKER_PRIO_NORMAL);
		if (added[i] && event_add(evs[i], NULL)) {
			/* unchanged: the next wait adds it again */
			if (i == 0)
				s->ev.reading = false;
			else
				s->ev.writing = false;
		}
	}
	s->prioritized = true;
}

static void tls_wait(struct conn *c, bool readable, bool writable)
{
	struct tls_conn *s = c->tstate;

	/* Established: its events join the other connections' priority. */
	if (s->established && !s->prioritized)
		prioritize(s);
	socket_events_wait(&s->ev, readable, writable);
	/* Decrypted bytes already inside OpenSSL raise no socket event
	 * (the rest of a record stays in the socket: OpenSSL reads no
	 * further ahead, so that does). */
	if (readable && SSL_pending(s->ssl) > 0)
		event_active(s->ev.rev, EV_READ, 0);
}

static void tls_wake(struct conn *c)
{
	struct tls_conn *s = c->tstate;

	socket_events_wake(&s->ev);
}

static void tls_close(struct conn *c)
{
	struct tls_conn *s = c->tstate;

	if (s) {
		if (s->ssl) {
			/* A session stays resumable from the cache however the
			 * connection ended (OpenSSL drops it from the cache
			 * itself after a fatal error). */
			if (s->established)
				SSL_set_shutdown(s->ssl,
						 SSL_get_shutdown(s->ssl) |
							 SSL_SENT_SHUTDOWN);
			SSL_free(s->ssl);
			atomic_fetch_sub(&c->w->net->tls->connections, 1);
		}
		socket_events_free(&s->ev);
		free(s);
		c->tstate = NULL;
	}
	close(c->fd);
}

static bool tls_expired(struct conn *c, int64_t now)
{
	struct tls_conn *s = c->tstate;
	int64_t waited,
		limit = (int64_t)c->w->net->cfg->tls_handshake_timeout * 1000;

	(void)now; /* seconds: too coarse for a timeout of a second */
	if (s->established)
		return false;
	waited = monotonic_ms() - s->started_ms;
	/* A worker busy without a pause would never run the lowest
	 * priority: past PROMOTE_MS a handshake joins the others. */
	if (waited >= (limit / 2 < PROMOTE_MS ? limit / 2 : PROMOTE_MS) &&
	    !s->prioritized)
		prioritize(s);
	if (waited < limit)
		return false;
	STAT_INC(&c->w->obs->stats, ssl_handshake_errors);
	log_debug("TLS handshake on connection %d timed out", c->fd);
	return true;
}

const struct transport transport_tls = {
	.name = "tls",
	.open = tls_open,
	.read = tls_read,
	.write = tls_write,
	.shutdown = tls_shutdown,
	.wait = tls_wait,
	.wake = tls_wake,
	.close = tls_close,
	.expired = tls_expired,
};

struct conn *conn_new_tls(struct worker *w, int fd)
{
	return conn_open(w, &transport_tls, fd);
}
