/*
 * The cache: items on the rhashtable, memory accounting, CLOCK eviction,
 * the maintenance thread (expiry sweep, background eviction, delayed
 * flush), and the read-modify-write commands built from lookup +
 * insert/replace with retries. See cache.h for the contracts.
 */
#include "cache.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"

/* memcached: an exptime up to 30 days is relative, above it absolute. */
#define REL_TIME_MAX (60 * 60 * 24 * 30)

/* glibc keeps each chunk's size in the 8 bytes before it; an allocator
 * without per-chunk headers (jemalloc, mimalloc) builds with 0. */
#ifndef RHKV_MALLOC_CHUNK_HEADER
#define RHKV_MALLOC_CHUNK_HEADER sizeof(size_t)
#endif

#define RETIRE_BATCH	64	  /* unlinked items per grace period */
#define QUEUE_SHARDS	16	  /* SIEVE queues, chosen by item address */
#define EVICT_BATCH	32	  /* victims per shard visit */
#define SWEEP_MAX	256	  /* dead items collected per sweep step */
#define TICK_NS		100000000 /* maintenance: every 100 ms, */
#define TICK_BUSY_NS	10000000  /* or 10 ms while the sweep reclaims */
#define SWEEP_BUDGET_NS 2000000	  /* at most 2 ms of sweeping a tick */
#define SWEEP_STEP	64

/*
 * One SIEVE queue: head = newest, tail = oldest, the hand walks from the
 * tail toward the head (NULL: start at the tail). An item's shard follows
 * from its address, so no field records it.
 */
struct queue {
	_Alignas(64) pthread_mutex_t lock;
	struct item *head, *tail, *hand;
	unsigned long items;
	_Atomic int64_t bytes; /* written under lock, read by choosers */
};

/* qold values of items that are not in a queue (never a real address). */
#define Q_UNQUEUED ((struct item *)1) /* linked in the table, not yet here */
#define Q_GONE	   ((struct item *)2) /* unlinked before it got here */

/* A thread's cas sequence, alone on its cache line. */
struct cas_seq {
	_Alignas(64) _Atomic uint64_t v;
};

struct cache {
	struct rhashtable ht;
	unsigned int threads;
	struct cas_seq *cas_seq; /* [threads], each written by its thread */

	/* Memory, bytes. mem = linked + unlinked-unfreed + reserved items:
	 * what admission compares (with the bucket arrays) to the limit. */
	_Atomic uint64_t limit;
	_Atomic int64_t mem;
	_Atomic int64_t live;	   /* linked items, as allocated */
	_Atomic int64_t item_data; /* linked items, header + key + value */
	_Atomic int64_t retired;   /* unlinked, not yet freed */

	/* Eviction: SIEVE queues; evicting writers take the fullest. */
	struct queue queues[QUEUE_SHARDS];

	/* flush_all: a snapshot of every thread's cas sequence; items at or
	 * below their thread's entry are dead. flush_due_ns: a delayed flush
	 * to apply once that time comes (0: none). */
	pthread_mutex_t flush_lock;
	_Atomic uint64_t *flush_snap; /* [threads] */
	_Atomic int64_t flush_due_ns;

	/* The maintenance thread. */
	pthread_t maint;
	pthread_mutex_t maint_lock;
	pthread_cond_t maint_cond;
	bool maint_stop;
	bool maint_started;
	uint64_t sweep_cursor;	   /* the maintenance thread's own */
	_Atomic bool sweep_wanted; /* some item may expire: sweep */

	_Atomic unsigned long evictions, evicted_unfetched, evicted_active;
	_Atomic unsigned long expired_unfetched, reclaimed, sweep_passes;
	_Atomic unsigned long reclaim_waits; /* grace periods waited for */
};

/* Unlinked items waiting for one grace period together: no rcu_head in
 * any item. Each thread fills its own and hands it to call_rcu. */
struct retire_batch {
	struct rcu_head rcu;
	struct cache *c;
	unsigned int n;
	int64_t bytes;
	struct item *items[RETIRE_BATCH];
};

static _Thread_local struct retire_batch *tls_batch;

/* The table hashes with its own 32-bit seed mixed into a 128-bit secret
 * of ours, so a re-seed moves keys and the secret stays long. */
static struct siphash_key cache_secret;

static uint32_t key_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct cache_key *k = data;
	struct siphash_key sk = { cache_secret.k0 ^ seed, cache_secret.k1 };

	(void)len;
	return (uint32_t)siphash13(&sk, k->p, k->n);
}

static uint32_t item_hash(const void *obj, uint32_t len, uint32_t seed)
{
	const struct item *it = obj;
	struct cache_key k = { item_key(it), it->nkey };

	return key_hash(&k, len, seed);
}

static int item_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct cache_key *k = arg->key;
	const struct item *it = obj;

	return k->n != it->nkey || memcmp(k->p, item_key(it), k->n);
}

/* Passed by value to the inline table functions, as in the kernel, so the
 * compiler folds what this table does not use. */
static const struct rhashtable_params cache_params = {
	.head_offset = offsetof(struct item, node),
	.hashfn = key_hash,
	.obj_hashfn = item_hash,
	.obj_cmpfn = item_cmp,
	.nelem_hint = 1024,
	.automatic_shrinking = true,
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cache_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec;
}

int64_t cache_abs_exptime(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return -1;
	if (exptime <= REL_TIME_MAX)
		return cache_now() + exptime;
	return exptime;
}

/* The item's 32-bit form: 0 never, 1 already expired, else unix seconds
 * (clamped at 2106). */
static uint32_t exptime_u32(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;
	if (exptime > UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)exptime;
}

size_t cache_item_footprint(const struct item *it)
{
	return malloc_usable_size((void *)it) + RHKV_MALLOC_CHUNK_HEADER;
}

static int64_t load64(_Atomic int64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static void add64(_Atomic int64_t *p, int64_t v)
{
	atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

static void count(_Atomic unsigned long *p)
{
	atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
}

static uint64_t cache_limit(struct cache *c)
{
	return atomic_load_explicit(&c->limit, memory_order_relaxed);
}

/* ---- flush_all ---- */

static void flush_apply(struct cache *c)
{
	for (unsigned int t = 0; t < c->threads; t++)
		atomic_store_explicit(
			&c->flush_snap[t],
			atomic_load_explicit(&c->cas_seq[t].v,
					     memory_order_relaxed),
			memory_order_release);
	atomic_store_explicit(&c->sweep_wanted, true, memory_order_relaxed);
}

/* Applies a delayed flush whose time has come (cheap when none is due). */
static void flush_if_due(struct cache *c)
{
	int64_t due =
		atomic_load_explicit(&c->flush_due_ns, memory_order_acquire);

	if (!due || now_ns() < due)
		return;
	pthread_mutex_lock(&c->flush_lock);
	if (atomic_load_explicit(&c->flush_due_ns, memory_order_relaxed) ==
	    due) {
		flush_apply(c);
		atomic_store_explicit(&c->flush_due_ns, 0,
				      memory_order_release);
	}
	pthread_mutex_unlock(&c->flush_lock);
}

void cache_flush(struct cache *c, int64_t delay)
{
	/* As memcached: a delay up to 30 days is relative, above it a unix
	 * time; relative delays count from now to the nanosecond. */
	int64_t due = 0;

	if (delay > REL_TIME_MAX)
		due = delay < INT64_MAX / 1000000000 ? delay * 1000000000
						     : INT64_MAX;
	else if (delay > 0)
		due = now_ns() + delay * 1000000000;
	pthread_mutex_lock(&c->flush_lock);
	if (due <= now_ns()) {
		flush_apply(c);
		atomic_store_explicit(&c->flush_due_ns, 0,
				      memory_order_release);
	} else {
		atomic_store_explicit(&c->flush_due_ns, due,
				      memory_order_release);
	}
	pthread_mutex_unlock(&c->flush_lock);
}

static bool flushed(struct cache *c, const struct item *it)
{
	uint64_t seq = (it->cas - 1) / c->threads;
	unsigned int t = (unsigned int)((it->cas - 1) % c->threads);

	return seq <=
	       atomic_load_explicit(&c->flush_snap[t], memory_order_acquire);
}

bool cache_item_live(struct cache *c, const struct item *it, int64_t now)
{
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);

	if (exp && exp <= now)
		return false;
	flush_if_due(c);
	return !flushed(c, it);
}

/* ---- items and their reclamation ---- */

void item_get(struct item *it)
{
	atomic_fetch_add_explicit(&it->refs, 1, memory_order_relaxed);
}

void item_put(struct item *it)
{
	/* acq_rel: the last holder sees every other holder's reads done. */
	if (atomic_fetch_sub_explicit(&it->refs, 1, memory_order_acq_rel) == 1)
		free(it);
}

static size_t item_data_size(const struct item *it)
{
	return ITEM_HEADER_BYTES + it->nkey + it->nbytes + 2;
}

static void batch_free(struct retire_batch *b)
{
	struct cache *c = b->c;

	for (unsigned int i = 0; i < b->n; i++)
		item_put(b->items[i]);
	add64(&c->retired, -b->bytes);
	add64(&c->mem, -b->bytes);
	free(b);
}

static void batch_free_rcu(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	batch_free((struct retire_batch *)((char *)head -
					   offsetof(struct retire_batch, rcu)));
	rhkv_rcu_callback_exit();
}

void cache_thread_flush(struct cache *c)
{
	struct retire_batch *b = tls_batch;

	(void)c;
	if (!b)
		return;
	tls_batch = NULL;
	rhkv_rcu_call(&b->rcu, batch_free_rcu);
}

/*
 * Hands an unlinked item to reclamation: freed (its table reference
 * dropped) after a grace period. Outside read-side sections: without
 * memory for a batch it waits for the grace period itself.
 */
static void item_retire(struct cache *c, struct item *it)
{
	int64_t fp = (int64_t)cache_item_footprint(it);
	struct retire_batch *b = tls_batch;

	add64(&c->live, -fp);
	add64(&c->item_data, -(int64_t)item_data_size(it));
	add64(&c->retired, fp);
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b) {
			rhkv_rcu_synchronize();
			item_put(it);
			add64(&c->retired, -fp);
			add64(&c->mem, -fp);
			return;
		}
		b->c = c;
		b->n = 0;
		b->bytes = 0;
		tls_batch = b;
	}
	b->items[b->n++] = it;
	b->bytes += fp;
	/* Big values should not wait in a batch for company. */
	if (b->n == RETIRE_BATCH || (uint64_t)b->bytes >= cache_limit(c) / 64)
		cache_thread_flush(c);
}

/* Waits until unlinked items are freed: this thread's batch and every
 * batch already queued (their grace periods end and callbacks run). */
static void reclaim_wait(struct cache *c)
{
	count(&c->reclaim_waits);
	cache_thread_flush(c);
	rhkv_rcu_barrier();
}

static struct item *item_alloc(struct cache_key key, uint32_t flags,
			       uint32_t exptime, uint32_t nbytes)
{
	struct item *it = malloc(ITEM_HEADER_BYTES + key.n + nbytes + 2);

	if (!it)
		return NULL;
	atomic_init(&it->exptime, exptime);
	atomic_init(&it->refs, 1);
	atomic_init(&it->clock, 0);
	it->qnew = NULL;
	it->qold = Q_UNQUEUED;
	it->flags = flags;
	it->nbytes = nbytes;
	it->nkey = (uint8_t)key.n;
	memcpy(it->data, key.p, key.n);
	memcpy(it->data + key.n + nbytes, "\r\n", 2);
	return it;
}

/* ---- admission ---- */

/* Bytes the limit leaves for items: the bucket arrays come first. */
static int64_t item_budget(struct cache *c)
{
	int64_t limit = (int64_t)cache_limit(c);

	return limit - (int64_t)rhashtable_bucket_bytes(&c->ht);
}

/* Reserves fp bytes for an item about to be linked, if they fit. */
static bool mem_reserve(struct cache *c, int64_t fp)
{
	int64_t budget = item_budget(c);
	int64_t cur = load64(&c->mem);

	do {
		if (cur + fp > budget)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&c->mem, &cur, cur + fp,
							memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/* The reserved item is linked now. */
static void mem_linked(struct cache *c, const struct item *it, int64_t fp)
{
	add64(&c->live, fp);
	add64(&c->item_data, (int64_t)item_data_size(it));
}

/* ---- the SIEVE queues ---- */

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
	add64(&q->bytes, -(int64_t)cache_item_footprint(it));
}

/* A newly linked item joins its queue at the head (inside the read-side
 * section that linked it, so it cannot have been freed). */
static void queue_push(struct cache *c, struct item *it)
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
		add64(&q->bytes, (int64_t)cache_item_footprint(it));
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

/* Unlinked from the table by us: out of its queue, then to reclamation. */
static void item_unlinked(struct cache *c, struct item *it)
{
	queue_remove(c, it);
	item_retire(c, it);
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
		uint8_t clock =
			atomic_load_explicit(&it->clock, memory_order_relaxed);
		bool live = cache_item_live(c, it, now);

		q->hand = it->qnew;
		if (live && (clock & ITEM_VISITED)) {
			atomic_store_explicit(&it->clock, clock & ~ITEM_VISITED,
					      memory_order_relaxed);
			continue;
		}
		/* A writer replacing or deleting it got there first: it will
		 * take it out of the queue once we let go. */
		if (rhashtable_remove_fast(&c->ht, &it->node, cache_params))
			continue;
		queue_unlink_locked(q, it);
		victims[n++] = it;
		got += (int64_t)cache_item_footprint(it);
		if (!live) {
			count(&c->reclaimed);
			if (!(clock & ITEM_FETCHED))
				count(&c->expired_unfetched);
		} else {
			count(&c->evictions);
			count((clock & ITEM_FETCHED) ? &c->evicted_active
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
		if (load64(&c->queues[i].bytes) > load64(&best->bytes))
			best = &c->queues[i];
	return best;
}

/*
 * Evicts until `want` more bytes fit, from the fullest queue each time. Unlinked
 * items keep counting until their grace period ends; past limit/16 of them
 * it waits for that instead of evicting more. Returns whether want fits.
 */
static bool evict_until(struct cache *c, int64_t want)
{
	struct item *victims[EVICT_BATCH];
	unsigned int idle = 0;

	for (;;) {
		int64_t short_by = load64(&c->mem) + want - item_budget(c);
		struct queue *q;
		unsigned int n;

		if (short_by <= 0)
			return true;
		if (load64(&c->retired) > (int64_t)(cache_limit(c) / 16) ||
		    idle == QUEUE_SHARDS) {
			/* Nothing left to evict, or too much waiting for a
			 * grace period: wait for it. */
			reclaim_wait(c);
			if (idle == QUEUE_SHARDS)
				return load64(&c->mem) + want <= item_budget(c);
			continue;
		}
		q = fullest_queue(c);
		n = queue_evict(c, q, short_by, EVICT_BATCH, victims);
		idle = n ? 0 : idle + 1;
		for (unsigned int i = 0; i < n; i++)
			item_retire(c, victims[i]);
	}
}

/*
 * Makes room for an item of fp bytes and a little more (so that the next
 * writers find room without evicting). False when it cannot fit at all.
 */
static bool make_room(struct cache *c, int64_t fp)
{
	int64_t headroom = (int64_t)(cache_limit(c) / 128);

	if (fp > item_budget(c))
		return false;
	return evict_until(c, fp + headroom) || evict_until(c, fp);
}

/* ---- the expiry sweep: a table cursor, dead items only ---- */

struct sweep_ctx {
	struct cache *c;
	int64_t now;
	unsigned int n;
	struct item *dead[SWEEP_MAX];
};

static void sweep_visit(void *obj, void *arg)
{
	struct sweep_ctx *sw = arg;
	struct item *it = obj;

	if (sw->n == SWEEP_MAX || cache_item_live(sw->c, it, sw->now))
		return;
	/* Another writer may have unlinked it meanwhile: then it is theirs. */
	if (rhashtable_remove_fast(&sw->c->ht, &it->node, cache_params))
		return;
	sw->dead[sw->n++] = it;
	count(&sw->c->reclaimed);
	if (!(atomic_load_explicit(&it->clock, memory_order_relaxed) &
	      ITEM_FETCHED))
		count(&sw->c->expired_unfetched);
}

/* ---- the maintenance thread ---- */

/* Keeps a little room free so that writers rarely evict themselves. */
static void maint_evict(struct cache *c)
{
	int64_t headroom = (int64_t)(cache_limit(c) / 64);

	if (load64(&c->mem) + headroom > item_budget(c))
		evict_until(c, headroom);
}

/* Unlinks dead items for at most SWEEP_BUDGET_NS, resuming where the last
 * tick stopped. Returns whether it found any. */
static bool maint_sweep(struct cache *c)
{
	int64_t start = mono_ns();
	bool found = false;

	if (!atomic_load_explicit(&c->sweep_wanted, memory_order_relaxed))
		return false;
	do {
		struct sweep_ctx sw = { .c = c, .now = cache_now() };

		c->sweep_cursor =
			rhashtable_scan(&c->ht, c->sweep_cursor, SWEEP_STEP,
					sweep_visit, &sw, NULL);
		for (unsigned int i = 0; i < sw.n; i++)
			item_unlinked(c, sw.dead[i]);
		found |= sw.n > 0;
		if (c->sweep_cursor == 0) {
			count(&c->sweep_passes);
			break;
		}
	} while (mono_ns() - start < SWEEP_BUDGET_NS);
	return found;
}

static void *maint_main(void *arg)
{
	struct cache *c = arg;

	rhkv_rcu_register_thread();
	pthread_mutex_lock(&c->maint_lock);
	while (!c->maint_stop) {
		struct timespec until;
		bool busy;

		pthread_mutex_unlock(&c->maint_lock);
		flush_if_due(c);
		maint_evict(c);
		/* A mass expiry: sweep more often, never longer at a time. */
		busy = maint_sweep(c);
		cache_thread_flush(c);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += busy ? TICK_BUSY_NS : TICK_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&c->maint_lock);
		if (!c->maint_stop)
			pthread_cond_timedwait(&c->maint_cond, &c->maint_lock,
					       &until);
	}
	pthread_mutex_unlock(&c->maint_lock);
	rhkv_rcu_unregister_thread();
	return NULL;
}

struct cache *cache_create(unsigned int threads, uint64_t limit)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->threads = threads;
	atomic_init(&c->limit, limit);
	c->cas_seq = aligned_alloc(64, sizeof(*c->cas_seq) * threads);
	c->flush_snap = calloc(threads, sizeof(*c->flush_snap));
	if (getrandom(&cache_secret, sizeof(cache_secret), 0) !=
	    sizeof(cache_secret))
		cache_secret.k0 = (uint64_t)now_ns();
	for (unsigned int i = 0; i < QUEUE_SHARDS; i++)
		pthread_mutex_init(&c->queues[i].lock, NULL);
	pthread_mutex_init(&c->flush_lock, NULL);
	pthread_mutex_init(&c->maint_lock, NULL);
	pthread_cond_init(&c->maint_cond, NULL);
	if (!c->cas_seq || !c->flush_snap ||
	    rhashtable_init(&c->ht, &cache_params)) {
		free(c->cas_seq);
		free(c->flush_snap);
		free(c);
		return NULL;
	}
	for (unsigned int t = 0; t < threads; t++)
		atomic_init(&c->cas_seq[t].v, 0);
	if (pthread_create(&c->maint, NULL, maint_main, c)) {
		cache_destroy(c);
		return NULL;
	}
	c->maint_started = true;
	return c;
}

static void item_free_fn(void *ptr, void *arg)
{
	(void)arg;
	free(ptr);
}

void cache_destroy(struct cache *c)
{
	if (c->maint_started) {
		pthread_mutex_lock(&c->maint_lock);
		c->maint_stop = true;
		pthread_cond_signal(&c->maint_cond);
		pthread_mutex_unlock(&c->maint_lock);
		pthread_join(c->maint, NULL);
	}
	/* Batches of unlinked items are on the call_rcu queue. */
	reclaim_wait(c);
	rhashtable_free_and_destroy(&c->ht, item_free_fn, NULL);
	for (unsigned int i = 0; i < QUEUE_SHARDS; i++)
		pthread_mutex_destroy(&c->queues[i].lock);
	pthread_mutex_destroy(&c->flush_lock);
	pthread_mutex_destroy(&c->maint_lock);
	pthread_cond_destroy(&c->maint_cond);
	free(c->cas_seq);
	free(c->flush_snap);
	free(c);
}

void cache_set_limit(struct cache *c, uint64_t limit)
{
	atomic_store_explicit(&c->limit, limit, memory_order_relaxed);
	pthread_mutex_lock(&c->maint_lock);
	pthread_cond_signal(&c->maint_cond);
	pthread_mutex_unlock(&c->maint_lock);
}

/* ---- commands ---- */

static uint64_t next_cas(struct cache *c, unsigned int thread)
{
	/* Unique without a shared counter: sequence * threads + thread. */
	uint64_t seq = atomic_load_explicit(&c->cas_seq[thread].v,
					    memory_order_relaxed) +
		       1;

	/* A flush whose time has come applies before this write. */
	flush_if_due(c);
	atomic_store_explicit(&c->cas_seq[thread].v, seq, memory_order_relaxed);
	return seq * c->threads + thread + 1;
}

void cache_prefetch(struct cache *c, struct cache_key key)
{
	rhkv_rcu_read_lock();
	rhashtable_prefetch(&c->ht, &key, cache_params);
	rhkv_rcu_read_unlock();
}

static void visit(struct item *it)
{
	/* Only when not set yet: a hot item's line stays shared. */
	if (!(atomic_load_explicit(&it->clock, memory_order_relaxed) &
	      ITEM_VISITED))
		atomic_store_explicit(&it->clock, ITEM_VISITED | ITEM_FETCHED,
				      memory_order_relaxed);
}

struct item *cache_find(struct cache *c, struct cache_key key, bool *expired)
{
	struct item *it = rhashtable_lookup(&c->ht, &key, cache_params);

	if (expired)
		*expired = false;
	if (it && !cache_item_live(c, it, cache_now())) {
		if (expired)
			*expired = true;
		return NULL;
	}
	if (it)
		visit(it);
	return it;
}

void cache_reap(struct cache *c, struct cache_key key)
{
	struct item *dead = NULL;
	struct item *it;

	rhkv_rcu_read_lock();
	it = rhashtable_lookup(&c->ht, &key, cache_params);
	if (it && !cache_item_live(c, it, cache_now()) &&
	    !rhashtable_remove_fast(&c->ht, &it->node, cache_params))
		dead = it;
	rhkv_rcu_read_unlock();
	if (!dead)
		return;
	count(&c->reclaimed);
	if (!(atomic_load_explicit(&dead->clock, memory_order_relaxed) &
	      ITEM_FETCHED))
		count(&c->expired_unfetched);
	item_unlinked(c, dead);
}

void cache_item_set_exptime(struct cache *c, struct item *it, int64_t exptime)
{
	uint32_t e = exptime_u32(exptime);

	atomic_store_explicit(&it->exptime, e, memory_order_relaxed);
	if (e)
		atomic_store_explicit(&c->sweep_wanted, true,
				      memory_order_relaxed);
}

/* Builds the item a store of mode would put in place of old (or none). */
static struct item *build(struct cache *c, unsigned int thread,
			  enum cache_store_mode mode, struct cache_key key,
			  uint32_t flags, uint32_t exptime, const char *value,
			  uint32_t nbytes, const struct item *old)
{
	struct item *it;

	if (mode != CACHE_APPEND && mode != CACHE_PREPEND) {
		it = item_alloc(key, flags, exptime, nbytes);
		if (it)
			memcpy(it->data + key.n, value, nbytes);
	} else {
		/* Append and prepend keep the old flags and exptime. */
		uint64_t total = (uint64_t)old->nbytes + nbytes;

		if (total > UINT32_MAX)
			return NULL;
		it = item_alloc(key, old->flags,
				atomic_load_explicit(&old->exptime,
						     memory_order_relaxed),
				(uint32_t)total);
		if (!it)
			return NULL;
		char *dst = it->data + key.n;
		if (mode == CACHE_APPEND) {
			memcpy(dst, item_value(old), old->nbytes);
			memcpy(dst + old->nbytes, value, nbytes);
		} else {
			memcpy(dst, value, nbytes);
			memcpy(dst + nbytes, item_value(old), old->nbytes);
		}
	}
	if (it)
		it->cas = next_cas(c, thread);
	return it;
}

/*
 * Links fresh in place of old (NULL: a new key). Returns false when another
 * writer got in first (the caller decides again). fresh's bytes must be
 * reserved; on success old is returned through *dead for retiring.
 */
static bool link_item(struct cache *c, struct cache_key key, struct item *old,
		      struct item *fresh, int64_t fp, struct item **dead)
{
	if (!old) {
		if (rhashtable_lookup_get_insert_key(&c->ht, &key, &fresh->node,
						     cache_params))
			return false;
	} else if (rhashtable_replace_fast(&c->ht, &old->node, &fresh->node,
					   cache_params)) {
		return false;
	} else {
		*dead = old;
	}
	mem_linked(c, fresh, fp);
	queue_push(c, fresh);
	if (atomic_load_explicit(&fresh->exptime, memory_order_relaxed))
		atomic_store_explicit(&c->sweep_wanted, true,
				      memory_order_relaxed);
	return true;
}

/* What one attempt of a write asks of its caller, outside the read-side
 * section: retire an unlinked item, make room, or try again. */
struct attempt {
	struct item *dead;
	int64_t need; /* bytes to make room for */
	bool retry;
};

/* Reserves and links fresh; on failure frees it and says why in *a. */
static bool place(struct cache *c, struct cache_key key, struct item *old,
		  struct item *fresh, struct attempt *a)
{
	int64_t fp = (int64_t)cache_item_footprint(fresh);

	if (!mem_reserve(c, fp)) {
		free(fresh);
		a->need = fp;
		a->retry = true;
		return false;
	}
	if (!link_item(c, key, old, fresh, fp, &a->dead)) {
		add64(&c->mem, -fp);
		free(fresh);
		a->retry = true;
		return false;
	}
	return true;
}

static enum cache_result store_once(struct cache *c, unsigned int thread,
				    enum cache_store_mode mode,
				    struct cache_key key, uint32_t flags,
				    uint32_t exptime, const char *value,
				    uint32_t nbytes, uint64_t cas_in,
				    uint64_t *cas_out, struct attempt *a)
{
	struct item *old = rhashtable_lookup(&c->ht, &key, cache_params);
	bool live = old && cache_item_live(c, old, cache_now());
	struct item *fresh;

	if (!live && (mode == CACHE_REPLACE || mode == CACHE_APPEND ||
		      mode == CACHE_PREPEND))
		return CACHE_NOT_STORED;
	if (!live && mode == CACHE_CAS)
		return CACHE_NOT_FOUND;
	if (live && mode == CACHE_ADD)
		return CACHE_NOT_STORED;
	if (live && mode == CACHE_CAS && old->cas != cas_in)
		return CACHE_EXISTS;
	fresh = build(c, thread, mode, key, flags, exptime, value, nbytes, old);
	if (!fresh)
		return CACHE_NO_MEMORY;
	if (cas_out)
		*cas_out = fresh->cas; /* before linking: then it may go */
	return place(c, key, old, fresh, a) ? CACHE_STORED : CACHE_NOT_STORED;
}

/* After an attempt, outside the read-side section. False: give up with
 * CACHE_NO_MEMORY (the item cannot fit even in an empty cache). */
static bool settle(struct cache *c, struct attempt *a, unsigned int *tries)
{
	if (a->dead) {
		item_unlinked(c, a->dead);
		a->dead = NULL;
	}
	if (a->need) {
		int64_t need = a->need;

		a->need = 0;
		/* Writers racing for the same room: bounded retries. */
		if (!make_room(c, need) || ++*tries > 100)
			return false;
	}
	return true;
}

enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in, uint64_t *cas_out)
{
	struct attempt a = { 0 };
	unsigned int tries = 0;
	enum cache_result res;

	do {
		a.retry = false;
		rhkv_rcu_read_lock();
		res = store_once(c, thread, mode, key, flags,
				 exptime_u32(exptime), value, nbytes, cas_in,
				 cas_out, &a);
		rhkv_rcu_read_unlock();
		if (!settle(c, &a, &tries))
			return CACHE_NO_MEMORY;
	} while (a.retry);
	return res;
}

bool cache_delete(struct cache *c, struct cache_key key)
{
	struct item *dead = NULL;
	bool live = false;

	rhkv_rcu_read_lock();
	for (;;) {
		struct item *it = rhashtable_lookup(&c->ht, &key, cache_params);

		if (!it)
			break;
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache_params)) {
			live = cache_item_live(c, it, cache_now());
			dead = it;
			break;
		}
	}
	rhkv_rcu_read_unlock();
	if (dead)
		item_unlinked(c, dead);
	return live;
}

/* memcached's rule: a value is numeric when it is digits (at most 20)
 * that fit in 64 bits, optionally followed by the spaces a shrinking
 * incr/decr leaves. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	while (n > 0 && s[n - 1] == ' ')
		n--;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

static enum cache_result incr_once(struct cache *c, unsigned int thread,
				   struct cache_key key, bool incr,
				   uint64_t delta, uint64_t *result,
				   struct attempt *a)
{
	struct item *old = cache_find(c, key, NULL), *fresh;
	char num[24];
	uint64_t v;
	int len, width;

	if (!old)
		return CACHE_NOT_FOUND;
	if (!parse_u64(item_value(old), old->nbytes, &v))
		return CACHE_NON_NUMERIC;
	v = incr ? v + delta : (v < delta ? 0 : v - delta);
	len = snprintf(num, sizeof(num), "%" PRIu64, v);
	/* A shorter result keeps the old length, padded with spaces, as
	 * memcached's in-place update does. */
	width = len < (int)old->nbytes ? (int)old->nbytes : len;
	fresh = item_alloc(
		key, old->flags,
		atomic_load_explicit(&old->exptime, memory_order_relaxed),
		(uint32_t)width);
	if (!fresh)
		return CACHE_NO_MEMORY;
	memset(fresh->data + key.n, ' ', (size_t)width);
	memcpy(fresh->data + key.n, num, (size_t)len);
	fresh->cas = next_cas(c, thread);
	*result = v;
	return place(c, key, old, fresh, a) ? CACHE_STORED : CACHE_NOT_STORED;
}

enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t *result)
{
	struct attempt a = { 0 };
	unsigned int tries = 0;
	enum cache_result res;

	do {
		a.retry = false;
		rhkv_rcu_read_lock();
		res = incr_once(c, thread, key, incr, delta, result, &a);
		rhkv_rcu_read_unlock();
		if (!settle(c, &a, &tries))
			return CACHE_NO_MEMORY;
	} while (a.retry);
	return res;
}

bool cache_touch(struct cache *c, struct cache_key key, int64_t exptime)
{
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(c, key, NULL);
	if (it)
		cache_item_set_exptime(c, it, exptime);
	rhkv_rcu_read_unlock();
	return it != NULL;
}

struct scan_ctx {
	struct cache *c;
	int64_t now;
	void (*fn)(const struct item *it, void *arg);
	void *arg;
};

static void scan_one(void *obj, void *arg)
{
	struct scan_ctx *sc = arg;
	const struct item *it = obj;

	if (cache_item_live(sc->c, it, sc->now))
		sc->fn(it, sc->arg);
}

uint64_t cache_scan(struct cache *c, uint64_t cursor, unsigned int count,
		    void (*fn)(const struct item *it, void *arg), void *arg)
{
	struct scan_ctx sc = { c, cache_now(), fn, arg };

	return rhashtable_scan(&c->ht, cursor, count, scan_one, &sc, NULL);
}

static uint64_t nonneg(int64_t v)
{
	return v > 0 ? (uint64_t)v : 0;
}

static unsigned long load_ul(_Atomic unsigned long *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

void cache_get_stats(struct cache *c, struct cache_stats *st, bool chain)
{
	rhashtable_get_stats(&c->ht, &st->table);
	st->curr_items = st->table.nelems;
	st->limit = cache_limit(c);
	st->bytes = nonneg(load64(&c->live));
	st->item_data = nonneg(load64(&c->item_data));
	st->retired_bytes = nonneg(load64(&c->retired));
	st->hash_bytes = rhashtable_bucket_bytes(&c->ht);
	st->evictions = load_ul(&c->evictions);
	st->evicted_unfetched = load_ul(&c->evicted_unfetched);
	st->evicted_active = load_ul(&c->evicted_active);
	st->expired_unfetched = load_ul(&c->expired_unfetched);
	st->reclaimed = load_ul(&c->reclaimed);
	st->sweep_passes = load_ul(&c->sweep_passes);
	st->reclaim_waits = load_ul(&c->reclaim_waits);
	st->longest_chain = chain ? rhashtable_longest_chain(&c->ht) : 0;
}
