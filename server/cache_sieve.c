/*
 * SIEVE eviction: the sharded FIFO queues items join when linked, the hand
 * that clears visited bits and evicts unvisited items, and the writers'
 * and maintenance thread's "make room" built on it. Policy and lock order
 * are described in cache.h (EVICTION).
 */
#include "cache_internal.h"

#define EVICT_BATCH 32 /* victims per shard visit */

static struct queue *queue_of(struct cache *c, const struct item *it)
{
	uintptr_t a = (uintptr_t)it;

	/* Allocations are 16-byte aligned: mix in the higher bits. */
	return &c->queues[((a >> 4) ^ (a >> 12)) % QUEUE_SHARDS];
}

static void queue_unlink_locked(struct queue *q, struct item *it)
{
	if (q->hand == it)
		q->hand = it->qnew;
	if (it->qnew)
		it->qnew->qold = it->qold;
	else
		q->head = it->qold;
	if (it->qold)
		it->qold->qnew = it->qnew;
	else
		q->tail = it->qnew;
	q->items--;
	cache__add64(&q->bytes, -(int64_t)cache_item_footprint(it));
}

/* A newly linked item joins its queue at the head (inside the read-side
 * section that linked it, so it cannot have been freed). */
void cache__queue_push(struct cache *c, struct item *it)
{
	struct queue *q = queue_of(c, it);

	pthread_mutex_lock(&q->lock);
	if (it->qold == Q_UNQUEUED) { /* not unlinked meanwhile */
		it->qnew = NULL;
		it->qold = q->head;
		if (q->head)
			q->head->qnew = it;
		else
			q->tail = it;
		q->head = it;
		q->items++;
		cache__add64(&q->bytes, (int64_t)cache_item_footprint(it));
	}
	pthread_mutex_unlock(&q->lock);
}

/* An item someone unlinked from the table leaves its queue. */
static void queue_remove(struct cache *c, struct item *it)
{
	struct queue *q = queue_of(c, it);

	pthread_mutex_lock(&q->lock);
	if (it->qold == Q_UNQUEUED)
		it->qold = Q_GONE; /* its pusher will not queue it */
	else
		queue_unlink_locked(q, it);
	pthread_mutex_unlock(&q->lock);
}

void cache__item_unlinked(struct cache *c, struct item *it)
{
	queue_remove(c, it);
	cache__item_retire(c, it);
}

/*
 * The SIEVE hand of one queue: from the tail toward the head, clear
 * visited bits, evict unvisited (and dead) items, until `want` bytes are
 * unlinked or `max` victims taken. Victims are unlinked from the table and
 * the queue here (shard lock, then bucket lock) and returned for retiring.
 */
static unsigned int queue_evict(struct cache *c, struct queue *q, int64_t want,
				unsigned int max, struct item **victims)
{
	int64_t now = cache_now(), got = 0;
	unsigned int n = 0;
	unsigned long steps = 0;

	pthread_mutex_lock(&q->lock);
	/* Two laps at most: the first clears every bit it meets. */
	while (q->tail && n < max && got < want && steps++ <= 2 * q->items) {
		struct item *it = q->hand ? q->hand : q->tail;
		uint8_t usage =
			atomic_load_explicit(&it->usage, memory_order_relaxed);
		bool live = cache_item_live(c, it, now);

		q->hand = it->qnew;
		if (live && (usage & ITEM_VISITED)) {
			/* Clears only its bit: a win may land meanwhile. */
			atomic_fetch_and_explicit(&it->usage,
						  (uint8_t)~ITEM_VISITED,
						  memory_order_relaxed);
			continue;
		}
		/* A writer replacing or deleting it got there first: it will
		 * take it out of the queue once we let go. */
		if (rhashtable_remove_fast(&c->ht, &it->node, cache__params))
			continue;
		queue_unlink_locked(q, it);
		victims[n++] = it;
		got += (int64_t)cache_item_footprint(it);
		if (!live) {
			cache__count(&c->reclaimed);
			if (!(usage & ITEM_FETCHED))
				cache__count(&c->expired_unfetched);
		} else {
			void (*hook)(void *, const struct item *) =
				atomic_load_explicit(&c->evict_hook,
						     memory_order_acquire);

			if (hook)
				hook(atomic_load_explicit(&c->evict_arg,
							  memory_order_relaxed),
				     it);
			cache__count(&c->evictions);
			if (atomic_load_explicit(&it->exptime,
						 memory_order_relaxed))
				cache__count(&c->evicted_nonzero);
			cache__count((usage & ITEM_FETCHED)
					     ? &c->evicted_active
					     : &c->evicted_unfetched);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}

/*
 * The queue holding the most bytes: evicting there keeps the shards even
 * in bytes, so each hand laps its items as fast as the others do, whatever
 * sizes the allocator's placement (the shard key) groups together.
 */
static struct queue *fullest_queue(struct cache *c)
{
	struct queue *best = &c->queues[0];

	for (unsigned int i = 1; i < QUEUE_SHARDS; i++)
		if (cache__load64(&c->queues[i].bytes) >
		    cache__load64(&best->bytes))
			best = &c->queues[i];
	return best;
}

/*
 * Evicts until `want` more bytes fit, from the fullest queue each time.
 * Unlinked items keep counting until their grace period ends; past
 * limit/16 of them it waits for that instead of evicting more.
 */
bool cache__evict_until(struct cache *c, int64_t want)
{
	struct item *victims[EVICT_BATCH];
	unsigned int idle = 0;

	for (;;) {
		int64_t short_by =
			cache__load64(&c->mem) + want - cache__item_budget(c);
		struct queue *q;
		unsigned int n;

		if (short_by <= 0)
			return true;
		if (cache__load64(&c->retired) >
			    (int64_t)(cache__limit(c) / 16) ||
		    idle == QUEUE_SHARDS) {
			/* Nothing left to evict, or too much waiting for a
			 * grace period: wait for it. */
			cache__reclaim_wait(c);
			if (idle == QUEUE_SHARDS)
				return cache__load64(&c->mem) + want <=
				       cache__item_budget(c);
			continue;
		}
		q = fullest_queue(c);
		n = queue_evict(c, q, short_by, EVICT_BATCH, victims);
		idle = n ? 0 : idle + 1;
		for (unsigned int i = 0; i < n; i++)
			cache__item_retire(c, victims[i]);
	}
}

/* Room for fp bytes and a little more, so that the next writers find
 * room without evicting. */
bool cache__make_room(struct cache *c, int64_t fp)
{
	int64_t headroom = (int64_t)(cache__limit(c) / 128);

	if (fp > cache__item_budget(c))
		return false;
	return cache__evict_until(c, fp + headroom) ||
	       cache__evict_until(c, fp);
}
