/*
 * How a connection's bytes come and go: a small table of operations, so
 * that the batch loop (conn.c) never asks what is underneath. Four
 * transports exist: a non-blocking socket on the worker's event loop
 * (transport_socket.c), TLS over such a socket (transport_tls.c), the
 * datagrams of memcached's UDP protocol (udp.c), and an in-memory pair of
 * buffers for tests and fuzzing (transport_memory.c). A transport keeps
 * its own state behind c->tstate and runs on the connection's worker
 * thread only.
 *
 * A read or write that cannot progress says what it waits for: a socket
 * waits for readability to read and writability to write, but a layer with
 * its own handshakes (TLS) may need to write before it can read; the
 * connection then waits for writability instead. (A write that needs to
 * read is not handled: no transport here has one.)
 */
#ifndef RHKV_SERVER_TRANSPORT_H
#define RHKV_SERVER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct conn;
struct evbuffer;
struct worker;

/* What read and write return when they cannot progress now. */
#define TRANSPORT_WANT_READ  (-1)
#define TRANSPORT_WANT_WRITE (-2)
#define TRANSPORT_ERROR	     (-3) /* broken: close the connection */

struct transport {
	const char *name;
	/* Attaches the transport's state to a new connection (c->fd set);
	 * 0, or -1 when out of memory. */
	int (*open)(struct conn *c);
	/* Reads at most n bytes into buf: the count, 0 at the peer's end of
	 * stream, or one of the TRANSPORT_ codes. */
	ssize_t (*read)(struct conn *c, void *buf, size_t n);
	/* Writes from the front of out, removing what went: the count (0
	 * only when out is empty), or one of the TRANSPORT_ codes. */
	ssize_t (*write)(struct conn *c, struct evbuffer *out);
	/* Ends our direction of the stream after what was written; false
	 * when the transport cannot, and the connection just closes. */
	bool (*shutdown)(struct conn *c);
	/* Which events the connection waits for now. */
	void (*wait)(struct conn *c, bool readable, bool writable);
	/* Releases the transport's state, also after a failed open, and
	 * closes the fd; the last call on c. */
	void (*close)(struct conn *c);
	/* Has the connection's thread call conn_ready(c, true, false) soon:
	 * its wait for --conn-memory is over (conn_budget.c). Any thread may
	 * call it, under the budget's lock, so it only asks: it runs
	 * nothing and takes no lock of the connection's. */
	void (*wake)(struct conn *c);
	/* Whether the transport gives up on the connection by now (a TLS
	 * handshake past its timeout); NULL: never. */
	bool (*expired)(struct conn *c, int64_t now);
	/* No client holds the connection open (a UDP session, udp.h): the
	 * idle timeout does not apply. */
	bool never_idle;
	/* Each request's replies are written as soon as it has run, in a
	 * write of their own, not with the rest of the batch's: memcached's
	 * UDP sends a message (its datagrams) per request. */
	bool write_per_request;
};

extern const struct transport transport_socket;
extern const struct transport transport_memory;
extern const struct transport transport_tls;

/*
 * A socket's events on the worker's loop, one persistent event per
 * direction, added exactly while wanted; the socket and TLS transports'
 * state starts with it. init makes the events (0, or -1 out of memory);
 * wait adds and removes them; free releases them (not the fd).
 */
struct event;
struct socket_events {
	struct event *rev, *wev;
	/* Activated by a wake: never added, and never deleted by wait, which
	 * would drop an activation that another thread has just made. */
	struct event *wake;
	bool reading, writing; /* the events are added */
};
int socket_events_init(struct conn *c, struct socket_events *s);
void socket_events_wait(struct socket_events *s, bool readable, bool writable);
/* A wake (struct transport): the wake event, activated from any thread
 * (libevent's locking is on: main.c); it runs as a read event. */
void socket_events_wake(struct socket_events *s);
void socket_events_free(struct socket_events *s);

/*
 * A connection over a connected non-blocking socket, which it takes over
 * (closed on failure); NULL when out of memory. The caller has taken a
 * connection slot (conn_slot_take), which the connection now owns.
 */
struct conn *conn_new_socket(struct worker *w, int fd);
/* The same over TLS (transport_tls.c): the server side of a handshake
 * first, with the context of the moment (tls.h). */
struct conn *conn_new_tls(struct worker *w, int fd);

/*
 * A connection over the in-memory transport: the whole state machine
 * (parsing, every protocol, auth, limits, backpressure) without a socket.
 * conn_memory_feed() gives it bytes as if they had been read, runs it,
 * and moves its replies to `replies`; it returns false once the
 * connection has closed (it is then freed). A NULL or empty feed with
 * eof set is the peer closing its side. NULL when out of memory or at
 * the connection limit.
 */
struct conn *conn_new_memory(struct worker *w);
bool conn_memory_feed(struct conn *c, const void *p, size_t n, bool eof,
		      struct evbuffer *replies);

#endif
