/*
 * --conn-memory: the shared total of connection buffers, and the queue of
 * connections waiting for room to grow an input buffer (conn_budget.h).
 *
 * How a waiting connection is woken without a lost wakeup: a taker puts
 * itself in the queue count (`waiting`) before it reads the total, both
 * sequentially consistent, under the lock; a connection giving bytes back
 * subtracts them from the total before it reads `waiting`, also
 * sequentially consistent. In the single order of those four operations
 * either the taker reads the smaller total (and takes the room itself) or
 * the giver reads a nonzero count and takes the lock, behind the taker,
 * so that it finds the taker queued and wakes it if the room is there.
 * The waker reserves the room (adds it to the total) before the wake, so
 * that two connections are never woken for the same bytes, and wakes in
 * queue order. Every other access is relaxed: made under the lock, which
 * orders it with the queue's other readers, or (conn_budget_full, the
 * growth of a connection's own buffers, conn_budget_waiting's hint) one
 * where a stale value only delays or hastens a decision made again at the
 * next event. Each access names its order.
 */
#include "conn_budget.h"

#include "conn.h"
#include "transport.h"

void conn_budget_init(struct conn_budget *b, uint64_t limit)
{
	b->limit = (int64_t)limit;
	atomic_init(&b->bytes, 0);
	atomic_init(&b->waiting, 0);
	pthread_mutex_init(&b->lock, NULL);
	b->head = b->tail = NULL;
	b->overdraft = NULL;
}

void conn_budget_destroy(struct conn_budget *b)
{
	pthread_mutex_destroy(&b->lock);
}

bool conn_budget_full(struct conn_budget *b)
{
	return atomic_load_explicit(&b->bytes, memory_order_relaxed) > b->limit;
}

bool conn_budget_far_over(struct conn_budget *b)
{
	return atomic_load_explicit(&b->bytes, memory_order_relaxed) >
	       2 * b->limit;
}

bool conn_budget_waiting(struct conn_budget *b)
{
	return atomic_load_explicit(&b->waiting, memory_order_relaxed) != 0;
}

/* Grants the queue's head the room it waits for: reserved in the total,
 * and its transport asked to run it. Under the lock. */
static void grant_head(struct conn_budget *b)
{
	struct conn *c = b->head;

	b->head = c->budget_next;
	if (!b->head)
		b->tail = NULL;
	c->budget_next = NULL;
	c->budget_queued = false;
	c->budget_granted = true;
	/* Under the lock: relaxed, as the queue's readers hold it too. */
	atomic_fetch_add_explicit(&b->bytes, (int64_t)c->budget_need,
				  memory_order_relaxed);
	atomic_fetch_sub_explicit(&b->waiting, 1, memory_order_relaxed);
	c->transport->wake(c);
}

/* Wakes waiting connections in order while their room is free; the head
 * takes a free overdraft when its room is not. Under the lock. */
static void wake_locked(struct conn_budget *b)
{
	while (b->head) {
		struct conn *c = b->head;

		/* Sequentially consistent: after a giver's subtraction
		 * (see the top), as the taker's read of the total. */
		if (atomic_load_explicit(&b->bytes, memory_order_seq_cst) +
			    (int64_t)c->budget_need <=
		    b->limit) {
			grant_head(b);
		} else if (!b->overdraft) {
			b->overdraft = c;
			grant_head(b);
		} else {
			break;
		}
	}
}

void conn_budget_account(struct conn_budget *b, struct conn *c, size_t now)
{
	int64_t delta = (int64_t)now - (int64_t)c->accounted;

	if (!delta)
		return;
	c->accounted = now;
	if (delta > 0) {
		atomic_fetch_add_explicit(&b->bytes, delta,
					  memory_order_relaxed);
		return;
	}
	/* Pairs with the taker's increment of waiting (see the top): both
	 * sequentially consistent, so that one of the two sees the other. */
	atomic_fetch_add_explicit(&b->bytes, delta, memory_order_seq_cst);
	if (!atomic_load_explicit(&b->waiting, memory_order_seq_cst))
		return;
	pthread_mutex_lock(&b->lock);
	wake_locked(b);
	pthread_mutex_unlock(&b->lock);
}

bool conn_budget_take(struct conn_budget *b, struct conn *c, size_t need)
{
	bool ok = true;

	pthread_mutex_lock(&b->lock);
	if (c->budget_granted) {
		/* Woken: its room is reserved (for the same need, as nothing
		 * it holds changed while it waited). */
		c->budget_granted = false;
		atomic_fetch_add_explicit(
			&b->bytes, (int64_t)need - (int64_t)c->budget_need,
			memory_order_relaxed);
	} else if (c->budget_queued) {
		ok = false; /* not woken yet: a wake will come */
	} else {
		/* Counted as waiting before the total is read (see the top);
		 * behind others already waiting, whatever the total says. */
		atomic_fetch_add_explicit(&b->waiting, 1, memory_order_seq_cst);
		if (b->overdraft == c ||
		    (!b->head &&
		     atomic_load_explicit(&b->bytes, memory_order_seq_cst) +
				     (int64_t)need <=
			     b->limit)) {
			/* Room taken: it only grows the total (relaxed). */
			atomic_fetch_add_explicit(&b->bytes, (int64_t)need,
						  memory_order_relaxed);
		} else if (!b->head && !b->overdraft) {
			b->overdraft = c;
			atomic_fetch_add_explicit(&b->bytes, (int64_t)need,
						  memory_order_relaxed);
		} else {
			c->budget_need = need;
			c->budget_queued = true;
			if (b->tail)
				b->tail->budget_next = c;
			else
				b->head = c;
			b->tail = c;
			ok = false;
		}
		if (ok)
			/* Not queued after all: under the lock, which a
			 * giver that saw the count takes before it looks at
			 * the queue (relaxed). */
			atomic_fetch_sub_explicit(&b->waiting, 1,
						  memory_order_relaxed);
	}
	if (ok) {
		c->accounted += need;
		c->budget_over = b->overdraft == c;
	}
	c->budget_wait = !ok;
	pthread_mutex_unlock(&b->lock);
	return ok;
}

void conn_budget_release(struct conn_budget *b, struct conn *c)
{
	pthread_mutex_lock(&b->lock);
	if (b->overdraft == c) {
		b->overdraft = NULL;
		wake_locked(b);
	}
	c->budget_over = false;
	pthread_mutex_unlock(&b->lock);
}

void conn_budget_cancel(struct conn_budget *b, struct conn *c)
{
	pthread_mutex_lock(&b->lock);
	if (c->budget_queued) {
		struct conn **p = &b->head, *prev = NULL;

		while (*p != c) {
			prev = *p;
			p = &(*p)->budget_next;
		}
		*p = c->budget_next;
		if (b->tail == c)
			b->tail = prev;
		c->budget_next = NULL;
		c->budget_queued = false;
		atomic_fetch_sub_explicit(&b->waiting, 1, memory_order_relaxed);
	}
	if (c->budget_granted) {
		/* Woken but gone before it used its room. */
		c->budget_granted = false;
		/* Its own waker is the wake_locked below, under this lock. */
		atomic_fetch_sub_explicit(&b->bytes, (int64_t)c->budget_need,
					  memory_order_relaxed);
	}
	if (b->overdraft == c)
		b->overdraft = NULL;
	c->budget_wait = false;
	c->budget_over = false;
	/* Its room, reserved or its own, may be what the next one waits
	 * for. */
	wake_locked(b);
	pthread_mutex_unlock(&b->lock);
}
