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
 * queue order.
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
	atomic_fetch_add(&b->bytes, (int64_t)c->budget_need);
	atomic_fetch_sub(&b->waiting, 1);
	c->transport->wake(c);
}

/* Wakes waiting connections in order while their room is free; the head
 * takes a free overdraft when its room is not. Under the lock. */
static void wake_locked(struct conn_budget *b)
{
	while (b->head) {
		struct conn *c = b->head;

		if (atomic_load(&b->bytes) + (int64_t)c->budget_need <=
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
	/* Pairs with the taker's increment of waiting (see the top). */
	atomic_fetch_add(&b->bytes, delta);
	if (!atomic_load(&b->waiting))
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
		atomic_fetch_add(&b->bytes,
				 (int64_t)need - (int64_t)c->budget_need);
	} else if (c->budget_queued) {
		ok = false; /* not woken yet: a wake will come */
	} else {
		/* Counted as waiting before the total is read (see the top);
		 * behind others already waiting, whatever the total says. */
		atomic_fetch_add(&b->waiting, 1);
		if (b->overdraft == c ||
		    (!b->head &&
		     atomic_load(&b->bytes) + (int64_t)need <= b->limit)) {
			atomic_fetch_add(&b->bytes, (int64_t)need);
		} else if (!b->head && !b->overdraft) {
			b->overdraft = c;
			atomic_fetch_add(&b->bytes, (int64_t)need);
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
			atomic_fetch_sub(&b->waiting, 1);
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
		atomic_fetch_sub(&b->waiting, 1);
	}
	if (c->budget_granted) {
		/* Woken but gone before it used its room. */
		c->budget_granted = false;
		atomic_fetch_sub(&b->bytes, (int64_t)c->budget_need);
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
