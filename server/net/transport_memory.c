/*
 * The in-memory transport, for tests and fuzzing: input is taken from a
 * buffer the feeder fills, output moved to the feeder's buffer, and the
 * connection is run by conn_memory_feed() instead of an event loop. The
 * rest of the connection (batch loop, protocols, limits, backpressure) is
 * the production code, unchanged.
 */
#include "transport.h"

#include <event2/buffer.h>
#include <stdlib.h>

#include "conn.h"
#include "net.h"

struct memory_state {
	struct evbuffer *in;
	struct evbuffer *out; /* the feeder's, set during a feed */
	bool eof;	      /* the peer closed its side */
	bool readable;	      /* what the connection waits for */
	bool woken;	      /* a wake: run it again */
};

static struct memory_state *state(const struct conn *c)
{
	return c->tstate;
}

static int mem_open(struct conn *c)
{
	struct memory_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	c->tstate = s;
	s->in = evbuffer_new();
	return s->in ? 0 : -1;
}

static ssize_t mem_read(struct conn *c, void *buf, size_t n)
{
	struct memory_state *s = state(c);
	int k = evbuffer_remove(s->in, buf, n);

	if (k < 0)
		return TRANSPORT_ERROR;
	if (k == 0 && !s->eof)
		return TRANSPORT_WANT_READ;
	return k;
}

/* The peer takes everything at once. */
static ssize_t mem_write(struct conn *c, struct evbuffer *out)
{
	size_t n = evbuffer_get_length(out);

	if (!state(c)->out || evbuffer_add_buffer(state(c)->out, out))
		return TRANSPORT_ERROR;
	return (ssize_t)n;
}

/* No stream to half-close: the connection closes at once. */
static bool mem_shutdown(struct conn *c)
{
	(void)c;
	return false;
}

static void mem_wait(struct conn *c, bool readable, bool writable)
{
	(void)writable; /* always writable */
	state(c)->readable = readable;
}

/* Only this thread runs memory connections: a flag the feed loop sees. */
static void mem_wake(struct conn *c)
{
	state(c)->woken = true;
}

static void mem_close(struct conn *c)
{
	struct memory_state *s = state(c);

	if (!s)
		return;
	if (s->in)
		evbuffer_free(s->in);
	free(s);
	c->tstate = NULL;
}

const struct transport transport_memory = {
	.name = "memory",
	.open = mem_open,
	.read = mem_read,
	.write = mem_write,
	.shutdown = mem_shutdown,
	.wait = mem_wait,
	.wake = mem_wake,
	.close = mem_close,
};

struct conn *conn_new_memory(struct worker *w)
{
	if (!conn_slot_take(w->net))
		return NULL;
	return conn_open(w, &transport_memory, -1);
}

bool conn_memory_feed(struct conn *c, const void *p, size_t n, bool eof,
		      struct evbuffer *replies)
{
	struct memory_state *s = state(c);
	bool open;

	if (n && evbuffer_add(s->in, p, n))
		return true;
	s->eof = eof;
	s->out = replies; /* written straight there, even as it closes */
	/* As the event loop would: read while there is input and the
	 * connection wants it, then once more for what backpressure held. */
	do {
		bool woken = s->woken;

		s->woken = false;
		open = conn_ready(c, s->readable || woken, !s->readable);
		/* A connection waiting for --conn-memory stays as it is until
		 * its wake (which another connection's feed gives). */
	} while (open &&
		 (s->woken || (!c->budget_wait && (evbuffer_get_length(s->in) ||
						   (eof && s->readable)))));
	if (open)
		s->out = NULL;
	return open;
}
