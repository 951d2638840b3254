/*
 * What the files of the cache module share with each other and with no one
 * else: struct cache, the SIEVE queue, the table parameters, and the
 * cache__ functions one file defines for another. The public API and its
 * contracts are in cache.h.
 */
#ifndef RHKV_SERVER_CACHE_INTERNAL_H
#define RHKV_SERVER_CACHE_INTERNAL_H

#include <pthread.h>
#include <string.h>

#include "cache.h"

/* memcached: an exptime (or flush_all delay) up to 30 days is relative,
 * above it absolute. */
#define REL_TIME_MAX (60 * 60 * 24 * 30)

#define QUEUE_SHARDS 16 /* SIEVE queues, chosen by item address */
#define AGE_MARKS    64 /* store-time marks (cache_oldest_age) */

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
	struct rhashtable ht; /* its own secret: see cache__key_hash */
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
	_Atomic unsigned long reclaim_waits;   /* grace periods waited for */
	_Atomic unsigned long evicted_nonzero; /* evictions with an exptime */
	/*
	 * When items were stored, without a time in each item: marks of
	 * (unix seconds, every thread's cas sequence then), one a second at
	 * most, thinned when full so that they stay spread over the cache's
	 * whole life (cache_oldest_age). Written by the maintenance thread,
	 * under age_lock.
	 */
	pthread_mutex_t age_lock;
	unsigned int age_n;
	int64_t age_t[AGE_MARKS];
	uint64_t *age_seq; /* [AGE_MARKS][threads] */
	/* cache_set_evict_hook: arg is stored before fn (release). */
	void (*_Atomic evict_hook)(void *arg, const struct item *it);
	void *_Atomic evict_arg;
	_Atomic unsigned long malloc_fails; /* items not allocated */
	/* The sweep's own: items it looked at, dead ones it took out. */
	_Atomic unsigned long sweep_checked, sweep_reclaimed;
};

/* ---- the table: hashing and parameters ---- */

/*
 * Lengthens the table's seed into a SipHash key. Drawn once per process
 * (cache.c) and never changed, so no cache's hashing moves under it. What
 * differs per cache is the seed: each cache's table draws its own 128-bit
 * secret (and draws anew on a flood re-seed), folded into the 32 bits the
 * table hands a user hash function. A key kept in struct cache could not
 * reach the hash of an item (the table passes only the item and the seed),
 * and the seed alone is too short a key: a scan's order shows buckets.
 */
extern struct siphash_key cache__hash_key;

static inline uint32_t cache__key_hash(const void *data, uint32_t len,
				       uint32_t seed)
{
	const struct cache_key *k = data;
	struct siphash_key sk = { cache__hash_key.k0 ^ seed,
				  cache__hash_key.k1 };

	(void)len;
	return (uint32_t)siphash13(&sk, k->p, k->n);
}

static inline uint32_t cache__item_hash(const void *obj, uint32_t len,
					uint32_t seed)
{
	const struct item *it = obj;
	struct cache_key k = { item_key(it), it->nkey };

	return cache__key_hash(&k, len, seed);
}

static inline int cache__item_cmp(struct rhashtable_compare_arg *arg,
				  const void *obj)
{
	const struct cache_key *k = arg->key;
	const struct item *it = obj;

	return k->n != it->nkey || memcmp(k->p, item_key(it), k->n);
}

/* Passed by value to the inline table functions, as in the kernel, so the
 * compiler folds what this table does not use. */
static const struct rhashtable_params cache__params = {
	.head_offset = offsetof(struct item, node),
	.hashfn = cache__key_hash,
	.obj_hashfn = cache__item_hash,
	.obj_cmpfn = cache__item_cmp,
	.nelem_hint = 1024,
	.automatic_shrinking = true,
};

/* ---- small helpers ---- */

static inline int64_t cache__load64(_Atomic int64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static inline void cache__add64(_Atomic int64_t *p, int64_t v)
{
	atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

static inline void cache__count(_Atomic unsigned long *p)
{
	atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
}

static inline uint64_t cache__limit(struct cache *c)
{
	return atomic_load_explicit(&c->limit, memory_order_relaxed);
}

/* Header, key, value and line end: what the item holds, not its
 * allocation. */
static inline size_t cache__item_data_size(const struct item *it)
{
	return ITEM_HEADER_BYTES + it->nkey + it->nbytes + 2 +
	       ((atomic_load_explicit(&it->usage, memory_order_relaxed) &
		 ITEM_CAS_CHOSEN)
			? sizeof(uint64_t)
			: 0);
}

/* Unix time in nanoseconds (flush_all's clock). */
int64_t cache__now_ns(void);

/* The item's 32-bit exptime: 0 never, 1 already expired, else unix
 * seconds (clamped at 2106). */
uint32_t cache__exptime_u32(int64_t exptime);

/* ---- memory (cache_memory.c) ---- */

/* A new item, not linked, not reserved; its qold says "not queued". */
struct item *cache__item_alloc(struct cache *c, struct cache_key key,
			       uint32_t flags, uint32_t exptime,
			       uint32_t nbytes, bool room_for_cas);
/* Gives an unpublished item, allocated with room_for_cas, the cas a client
 * chose (item_cas), keeping its write sequence in it->cas. After the
 * item's usage bits are set. */
void cache__item_choose_cas(struct item *it, uint64_t cas);
/* Bytes the limit leaves for items: the bucket arrays come first. */
int64_t cache__item_budget(struct cache *c);
/* Reserves fp bytes for an item about to be linked, if they fit. */
bool cache__mem_reserve(struct cache *c, int64_t fp);
/* The reserved item is linked now. */
void cache__mem_linked(struct cache *c, const struct item *it, int64_t fp);
/* Hands an item unlinked from the table and its queue to reclamation, in
 * the calling thread's batch of c; outside read-side sections. */
void cache__item_retire(struct cache *c, struct item *it);
/* Waits until every unlinked item of c is freed: the calling thread's
 * batch and every batch already handed over. */
void cache__reclaim_wait(struct cache *c);

/* ---- SIEVE (cache_sieve.c) ---- */

/* A newly linked item joins its queue (inside the read-side section that
 * linked it). */
void cache__queue_push(struct cache *c, struct item *it);
/* An item we unlinked from the table: out of its queue, then retired. */
void cache__item_unlinked(struct cache *c, struct item *it);
/* Evicts until want more bytes fit; whether they do. */
bool cache__evict_until(struct cache *c, int64_t want);
/* Makes room for an item of fp bytes; false when it cannot fit at all. */
bool cache__make_room(struct cache *c, int64_t fp);

/* ---- the maintenance thread and flush_all (cache_maint.c) ---- */

/* Applies a delayed flush whose time has come (cheap when none is due). */
void cache__flush_if_due(struct cache *c);
/* Starts and stops the maintenance thread; 0 or an errno. */
int cache__maint_start(struct cache *c);
void cache__maint_stop(struct cache *c);
/* Wakes it (the limit changed). */
void cache__maint_wake(struct cache *c);
/* Records a store-time mark if the last is a second old or more (the
 * first, at creation, with every sequence at 0). */
void cache__age_mark(struct cache *c, int64_t now);

#endif
