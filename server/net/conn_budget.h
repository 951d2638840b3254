/*
 * The memory every connection's buffers share (--conn-memory): one total
 * of their bytes, and a queue of connections waiting for room to grow an
 * input buffer. A request never fails because other connections hold the
 * memory: its connection stops reading, waits in the queue, and is woken
 * (its transport's wake, on its own thread) once the room is reserved for
 * it. Only a request whose input alone needs more than the whole budget
 * is refused (conn.c).
 *
 * Concurrency: conn_budget_account may run on any worker thread at once
 * (one atomic add, and the lock only while connections wait);
 * conn_budget_take (at each growth of an input buffer past its initial
 * size), _release and _cancel (only for a connection that waits or holds
 * the overdraft) run on the connection's own thread and take the lock.
 * The queue, each connection's budget_* fields and the overdraft are read
 * and written only under the lock (budget_wait and budget_over are also
 * read by their own thread without it: only that thread writes them);
 * the total is an atomic, so that `stats` may read it without. A wake
 * is asked under the lock, so a connection that has left the queue
 * (conn_budget_cancel, before its transport closes) gets none.
 */
#ifndef RHKV_SERVER_CONN_BUDGET_H
#define RHKV_SERVER_CONN_BUDGET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

struct conn_budget {
	int64_t limit; /* bytes: --conn-memory */
	/* Bytes of every connection's input and output buffers, and room
	 * reserved for a woken connection that has not used it yet. */
	_Atomic int64_t bytes;
	/* Connections in the queue: read without the lock by a connection
	 * that has just given bytes back, to know whether to wake any. */
	_Atomic unsigned int waiting;
	pthread_mutex_t lock;
	struct conn *head, *tail; /* waiting, oldest first */
	/* The one connection that may grow past the limit (NULL: none):
	 * the oldest waiter when nothing it waits for is sure to come back
	 * (buffers of other waiting connections, idle connections' initial
	 * buffers). It keeps the right until a request of its own has run,
	 * so that the queue always moves, one request at a time; or, while
	 * others wait, until it stops reading (its output must drain) or
	 * receives nothing for a while (conn.c): a client that stalls
	 * halfway through a large request does not stop the queue (past
	 * twice the limit such a request is refused instead). */
	struct conn *overdraft;
};

void conn_budget_init(struct conn_budget *b, uint64_t limit);
void conn_budget_destroy(struct conn_budget *b);

/* Whether the buffers, all together, are past the limit. */
bool conn_budget_full(struct conn_budget *b);

/*
 * Brings the total up to date with c's buffers, now `now` bytes (it
 * counted c->budget_accounted before); when that gives bytes back and
 * connections wait, wakes those whose room is now free. Any thread, for
 * its own connections.
 */
void conn_budget_account(struct conn_budget *b, struct conn *c, size_t now);

/*
 * c needs `need` more bytes of input buffer: true when it may take them
 * now (counted in the total and in c's accounted bytes: allocate, then
 * account as usual), false when c is queued and must not read until its
 * transport's wake. A woken connection calls it again for the same need
 * and gets the room reserved for it.
 */
bool conn_budget_take(struct conn_budget *b, struct conn *c, size_t need);

/* Whether the buffers, all together, are past twice the limit: what
 * connections that gave the overdraft up kept past it (conn.c) may not
 * grow further. */
bool conn_budget_far_over(struct conn_budget *b);

/* Whether connections wait in the queue (a hint: no lock). */
bool conn_budget_waiting(struct conn_budget *b);

/* c holds the overdraft (budget_over) and a request of its own has run,
 * or it has stopped reading or received nothing for a while: the
 * overdraft passes on (c keeps what it took, and queues again for
 * more). */
void conn_budget_release(struct conn_budget *b, struct conn *c);

/* c closes or stops reading while it waits or holds the overdraft
 * (budget_wait, budget_over): out of the queue, its reserved room and its
 * overdraft given back. */
void conn_budget_cancel(struct conn_budget *b, struct conn *c);

#endif
