/*
 * One client connection: its input buffer, output buffer, protocol and
 * transport, owned by one worker thread. The batch loop executes every
 * complete request in the input in one pass and writes all replies with
 * one write; a partial request waits for more bytes. A large value is
 * read from the socket straight into the item that will hold it.
 */
#ifndef RHKV_SERVER_CONN_H
#define RHKV_SERVER_CONN_H

#include <event2/buffer.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "session.h"

struct conn_watch;
struct landing;
struct protocol;
struct net;
struct transport;
struct worker;

struct conn {
	/* What the protocol and the executor see (session.h): its output,
	 * its authentication, its protocol's state. */
	struct session s;
	struct worker *w;
	int fd; /* for messages; -1 when the transport has none */
	const struct transport *transport;
	void *tstate; /* the transport's */
	char *rbuf;
	size_t rlen, rcap;
	const struct protocol *proto; /* NULL until the first byte */
	uint64_t swallow; /* bytes of a too-large value to discard */
	/* A large value being received straight into its item (conn.c),
	 * allocated on first use; land_next: the request at the start of
	 * the input is one (its decoder said DECODE_NEED_VALUE). */
	struct landing *land;
	bool land_next;
	bool read_wants_write; /* the transport's read waits to write */
	bool read_full;	       /* the last read filled the space it had */
	bool lingering;	       /* replies all sent, waiting for EOF */
	int64_t linger_since;  /* seconds */
	bool peer_eof;	       /* read 0: answer what is here, close */
	/* Seconds: last request or write. Written by the owning thread only
	 * (relaxed, see conn_touch), read by `stats conns` from any. */
	_Atomic int64_t last_active;
	/* What the connection waits for (enum conn_state), as of the end of
	 * its last event; written by the owning thread, read by `stats
	 * conns`. */
	_Atomic uint8_t state;
	int64_t stalled_since; /* seconds: output pending, none written */
	size_t accounted;      /* buffer bytes counted in --conn-memory's
				     total (conn_budget.c) */
	/* --conn-memory's queue (conn_budget.h), under the budget's lock:
	 * the next waiter, the bytes this one waits for, whether it is
	 * queued, and whether its room is reserved (woken, not yet used). */
	struct conn *budget_next;
	size_t budget_need;
	bool budget_queued, budget_granted;
	/* This thread's view, also written under the budget's lock: it
	 * waits for room (reads nothing until its wake), it holds the
	 * overdraft (gives it back once a request has run, or while others
	 * wait once it stops reading or receiving). */
	bool budget_wait, budget_over;
	/* Seconds: when the overdraft's holder last received a byte or took
	 * room (conn_tick passes the overdraft on when it stops). */
	int64_t over_since;
	struct conn_watch *watch; /* `watch`: a log stream now (conn_watch.h) */
	/* The worker's list: linked and unlinked under the worker's lock, so
	 * that `stats conns` on another thread may walk it under that lock
	 * (the owning thread walks it without). */
	struct conn *prev, *next;
};

/* The connection that holds session s. */
static inline struct conn *conn_of_session(struct session *s)
{
	return (struct conn *)((char *)s - offsetof(struct conn, s));
}

/* What `stats conns` shows as <fd>:state (memcached's names). */
enum conn_state {
	CONN_NEW_CMD, /* idle: waiting for a request */
	CONN_READ,    /* part of a request has arrived */
	CONN_NREAD,   /* a storage request's line has, its value is arriving */
	CONN_SWALLOW, /* discarding a too-large value */
	CONN_MWRITE,  /* replies wait for the socket to drain */
	CONN_CLOSING, /* closing once the output is written */
	CONN_WATCH,   /* a `watch` log stream */
};

extern const char *const conn_state_name[];

/*
 * Connection slots (-c): a slot is taken before a connection is made
 * (false, and counted as rejected, at the limit) and belongs to the
 * connection from conn_open on; conn_close gives it back. A slot taken for
 * a socket that never becomes a connection is given back by whoever
 * drops it.
 */
bool conn_slot_take(struct net *net);
void conn_slot_give(struct net *net);

/*
 * A socket just accepted (by the listener thread or, with --reuseport, by
 * a worker): true when it has a slot and may become a connection; false
 * when it was over the limit, told so and closed.
 */
bool conn_admit(struct net *net, int fd, const struct sockaddr *sa);

/*
 * Makes a connection on transport t over fd (-1: none), which it takes
 * over, and links it into the worker; t->open attaches the transport's
 * state. Owns the caller's connection slot from here: on failure (NULL)
 * the slot is given back and fd closed.
 */
struct conn *conn_open(struct worker *w, const struct transport *t, int fd);

/* Closes now, dropping pending output. */
void conn_close(struct conn *c);
/*
 * Makes c as a new connection would be, for a transport that reuses one
 * connection for independent exchanges (a UDP session, udp.h): the
 * protocol its first byte chose and its authentication are forgotten.
 * False, changing nothing, when it is not between requests (part of one
 * is in, a value is arriving or being discarded, output is pending, it is
 * closing, waiting for --conn-memory, or streaming): then close it.
 */
bool conn_restart(struct conn *c);
/* Stops reading; closes once the pending output is written. */
void conn_shutdown(struct conn *c);
/* Once a second: idle and stall timeouts. */
void conn_tick(struct conn *c, int64_t now);

/*
 * What the transport calls when the connection may progress: readable
 * (read, then run), writable (write, then run what backpressure held).
 * Returns false once the connection has closed (it is then freed).
 */
bool conn_ready(struct conn *c, bool readable, bool writable);

/* Runs a connection that --conn-memory's queue woke (its transport's
 * wake): as conn_ready when it still waits for room, nothing when it
 * left the queue after the wake was asked. Same return. */
bool conn_wake(struct conn *c);

#endif
