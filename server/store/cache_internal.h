/*
 * What the files of the cache module share with each other and with no one
 * else: struct cache, segments and the eviction log, the table parameters,
 * and the cache__ functions one file defines for another. The public API and its
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

#define AGE_MARKS 64 /* store-time marks (cache_oldest_age) */

/*
 * A unit of the eviction log: a segment of the arena (items packed one
 * after another from base, `used` bytes of them), or one large item's own
 * allocation (struct large_item). The log runs from the newest unit (head)
 * to the oldest (tail); sealed segments and large items are in it, open
 * ones (a writer still appends to them) are not.
 */
enum seg_state {
	SEG_FREE,     /* in the arena's pool or never used */
	SEG_OPEN,     /* a writer appends to it; not in the log */
	SEG_SEALED,   /* in the log */
	SEG_EVICTING, /* taken off the log by the evictor */
	SEG_RETIRING, /* unlinked, waiting for its grace period */
};

struct seg {
	struct seg *newer, *older; /* the log, under log_lock */
	struct seg *next_free;	   /* the pool, under pool_lock */
	char *base;
	struct cache *c;
	uint32_t used; /* bytes written; final once sealed */
	uint8_t state; /* enum seg_state; under log_lock once sealed */
	uint8_t log;   /* LOG_NEW or LOG_KEPT, while SEG_SEALED */
	bool large;
	bool unlinked;	      /* a large unit whose item is out of the table */
	_Atomic int64_t live; /* bytes of its items linked in the table */
	_Atomic uint32_t published; /* items below are built (age) */
};

/* Before a large item, in the same allocation. nbytes is its last field:
 * item_nbytes() reads the 4 bytes before the item. */
struct large_item {
	struct seg seg;
	size_t footprint;      /* as the allocator counts it */
	_Atomic uint32_t refs; /* 1 for the cache, +1 per zero-copy reply */
	uint32_t nbytes;
};

_Static_assert(sizeof(struct large_item) % 8 == 0 &&
		       offsetof(struct large_item, nbytes) ==
			       sizeof(struct large_item) - 4,
	       "large item header layout");

static inline struct large_item *cache__large_of(const struct item *it)
{
	return (struct large_item *)((char *)it - sizeof(struct large_item));
}

static inline bool cache__item_is_large(const struct item *it)
{
	return it->nbytes16 == ITEM_NBYTES_LARGE;
}

/* The item's bytes in its segment: its size rounded up to 8. */
static inline uint32_t cache__seg_bytes(const struct item *it)
{
	return (uint32_t)((item_size(it) + 7) & ~(size_t)7);
}

/*
 * The two logs (as S3-FIFO's queues, Yang et al., SOSP 2023): new units
 * (workers' segments, large items) enter LOG_NEW; what eviction keeps
 * (carry segments, units passed over) goes to LOG_KEPT. The evictor takes
 * from LOG_NEW while it holds more than a tenth of the logs' bytes, so an
 * item read once never (most of a workload's misses) leaves the cache
 * after a tenth of its turn, and kept items stay for the rest.
 */
enum { LOG_NEW, LOG_KEPT };

struct seg_log {
	struct seg *head, *tail; /* newest, oldest */
	int64_t bytes;
};

/* Which segment each writer appends to: one per worker thread and one
 * for the evictor's carried items (the last), each alone on its line. */
struct seg_writer {
	_Alignas(64) struct seg *_Atomic open; /* written by its owner */
};

/* ITEM_* bits that say how an item is laid out: set when it is built,
 * never changed, never carried to another item by a copy of the marks. */
#define ITEM_LAYOUT_BITS (ITEM_HAS_FLAGS | ITEM_CAS_CHOSEN)

/* The longest key an item holds (nkey), as memcached's. */
#define CACHE_KEY_MAX 250

/* The highest write sequence (it->cas) an item restored from a memory
 * file may carry: 2^62 writes, far beyond any server's life, and low
 * enough that the sequences seeded above it (cache__file_restore) and the
 * cas values made from them (sequence * threads + thread + 1) never wrap. */
#define CACHE_SEQ_MAX (UINT64_C(1) << 62)

/* A thread's cas sequence, alone on its cache line. */
struct cas_seq {
	_Alignas(64) _Atomic uint64_t v;
};

struct cache {
	struct rhashtable ht; /* its own secret: see cache__key_hash */
	unsigned int threads;
	struct cas_seq *cas_seq; /* [threads], each written by its thread */

	/*
	 * Memory, bytes. mem: what admission compares (with the bucket
	 * arrays) to the limit: resident segments (open, sealed, evicting,
	 * retiring or pooled) and large items' allocations, linked or
	 * retiring.
	 */
	_Atomic uint64_t limit;
	uint64_t limit_max; /* the most the arena holds (cache_limit_max) */
	_Atomic int64_t mem;
	_Atomic int64_t live;	   /* linked items: segment bytes, or the
				      footprint of a large one */
	_Atomic int64_t item_data; /* linked items, item_size() */
	_Atomic int64_t retired;   /* units retiring (grace period) */
	_Atomic int64_t large;	   /* large items' allocations */
	/* The same, each rounded up to whole 4 KiB pages: what
	 * `stats slabs` shows, steady while items replace others of about
	 * their size, as memcached's slab pages are. */
	_Atomic int64_t large_pages;
	_Atomic int64_t large_live; /* of live: large items */

	/* The arena: one mapping of nsegs segments of seg_size bytes. */
	char *arena;
	size_t seg_size, nsegs, arena_bytes;
	struct seg *segs;	    /* [nsegs] */
	struct seg_writer *writers; /* [threads + 1] */
	struct cache_file *file;    /* the arena's file, or NULL */
	bool sealed;		    /* cache_seal done */
	pthread_mutex_t pool_lock;
	struct seg *pool;	 /* free, resident, counted in mem */
	struct seg *carry_spare; /* free, resident: the evictor's next */
	struct seg *retiring;	 /* unlinked units, awaiting a grace period */
	/* One reclaim at a time, held across its grace period: a writer
	 * short of room whose retired units another thread is reclaiming
	 * waits for that reclaim instead of finding the list empty and
	 * giving up. Taken outside read-side sections, before pool_lock. */
	pthread_mutex_t reclaim_lock;
	struct seg *released; /* free, handed back to the kernel */
	size_t fresh;	      /* segments [fresh, nsegs) never used */
	_Atomic unsigned long pooled, seg_resident;
	/* The fewest pooled since the maintenance thread last trimmed the
	 * pool (under pool_lock): that many were not needed meanwhile. */
	unsigned long pool_low;
	int64_t pool_trimmed_ns; /* maintenance thread's, monotonic */

	/* The eviction logs: new units, and kept ones; evict_lock makes one
	 * evictor at a time (it owns the carry writer); lock order:
	 * evict_lock, log_lock, a bucket; evict_lock, reclaim_lock,
	 * pool_lock (the evictor reclaims to find its carry a segment). */
	pthread_mutex_t evict_lock;
	pthread_mutex_t log_lock;
	struct seg_log logs[2];
	_Atomic bool dead_segs; /* a sealed segment may have no live item */

	/* flush_all: a snapshot of every thread's cas sequence, plus one;
	 * items below their thread's entry are dead. 0 flushes nothing, not
	 * even sequence 0, which items restored from a memory file written
	 * with fewer threads can decompose to. flush_due_ns: a delayed flush
	 * to apply once that time comes (0: none). Every liveness check reads
	 * flush_snap and tombs: they share a line nothing else writes. */
	_Alignas(64) _Atomic uint64_t *flush_snap; /* [threads] */
	/* The active prefix tombstones as readers see them (NULL: none);
	 * cache_prefix.c. */
	struct tomb_set *_Atomic tombs;
	_Alignas(64) pthread_mutex_t flush_lock;
	_Atomic int64_t flush_due_ns;

	/*
	 * Prefix tombstones (cache_prefix.c), under tomb_lock: the active
	 * ones sorted by prefix (at most tomb_max), and what waits for a
	 * grace period before it is freed. sweep_started counts the sweep
	 * passes begun (the maintenance thread's; read under tomb_lock).
	 */
	pthread_mutex_t tomb_lock;
	struct tomb **tomb_active;
	unsigned int tomb_n, tomb_max;
	struct tomb_set *sets_garbage;
	struct tomb *tombs_garbage;
	uint64_t sweep_started;
	bool sweep_in_pass; /* the maintenance thread's */
	_Atomic unsigned long prefix_flushes, prefix_refused, prefix_retired;
	_Atomic unsigned long prefix_reclaimed; /* items the sweep or a read
						   unlinked for a tombstone */

	/* The maintenance thread. */
	pthread_t maint;
	pthread_mutex_t maint_lock;
	pthread_cond_t maint_cond;
	bool maint_stop;
	bool maint_started;
	uint64_t sweep_cursor;	   /* the maintenance thread's own */
	_Atomic bool sweep_wanted; /* some item may expire: sweep */
	_Atomic bool sweep_paused; /* lru_crawler disable */
	_Atomic bool no_evict;	   /* cache_set_evictions(c, false): -M */

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
	/* cache_set_carry_hook: the same. */
	void (*_Atomic carry_hook)(void *arg, struct item *copy);
	void *_Atomic carry_arg;
	_Atomic unsigned long malloc_fails; /* items not allocated */
	_Atomic unsigned long carried;	    /* visited items kept by eviction */
	_Atomic unsigned long segs_freed_dead; /* emptied, freed early */
	_Atomic unsigned long segs_requeued;   /* mostly hot: passed over */
	/* The sweep's own: items it looked at, dead ones it took out. */
	_Atomic unsigned long sweep_checked, sweep_reclaimed;
};

/* ---- prefix tombstones (cache_prefix.c) ---- */

/* One active tombstone as the published set holds it: the first 8 bytes
 * of its prefix as a big-endian integer (most comparisons need no more),
 * and the index of the longest other entry that prefixes it (-1: none). */
struct tomb_entry {
	uint64_t head;
	const struct tomb *t;
	int parent;
};

/* Immutable once published: entries sorted by prefix, filters that let
 * most keys pass with no search (the shortest prefix, the first bytes,
 * every thread's highest snapshot), and the entries. */
struct tomb_set {
	struct tomb_set *next_free; /* garbage, awaiting a grace period */
	unsigned int n, min_len;
	uint64_t first[4]; /* bit b: some prefix starts with byte b */
	uint64_t *max_seq; /* [threads], after e[] */
	struct tomb_entry e[];
};

/* Whether a tombstone of s covers the item, whose write sequence seq
 * (at or below s->max_seq[thread]) came from thread. Inside the read-side
 * section s was loaded in. */
bool cache__tomb_covers(const struct tomb_set *s, const struct item *it,
			uint64_t seq, unsigned int thread);
int cache__prefix_init(struct cache *c);
void cache__prefix_destroy(struct cache *c);
/* flush_all has raised flush_snap: drops the tombstones it covers (not
 * one a prefix flush took after flush_all's snapshot); under flush_lock. */
void cache__prefix_drop_flushed(struct cache *c);
/* The maintenance thread, every tick: frees what a grace period has freed,
 * arms new tombstones for the next sweep pass and retires those whose pass
 * has ended (may wait for a grace period; outside read-side sections). */
void cache__prefix_tick(struct cache *c);
/* The maintenance thread: sweep pass number `pass` has ended; the
 * tombstones armed for it retire at the next tick. */
void cache__prefix_pass_done(struct cache *c, uint64_t pass);

/* Why an item is dead, if it is (cache__item_fate). */
enum item_fate {
	ITEM_ALIVE,
	ITEM_EXPIRED,
	ITEM_FLUSHED,	     /* flush_all */
	ITEM_PREFIX_FLUSHED, /* a prefix tombstone */
};
enum item_fate cache__item_fate(struct cache *c, const struct item *it,
				int64_t now);

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
	/* The bucket array costs 8 to 16 bytes an item at 100% load (the
	 * table doubles), 10.7 to 21.3 at 75%, against items of 50 to 150
	 * bytes: chains of 1 on average at most cost lookups less. */
	.grow_above_pct = 100,
};

/* ---- small helpers ---- */

/* Whether an item of size bytes with a value of nbytes lives in a segment
 * (else it takes an allocation of its own: a large item). */
static inline bool cache__item_in_segment(const struct cache *c,
					  uint32_t nbytes, size_t size)
{
	return nbytes <= ITEM_SEG_VALUE_MAX &&
	       ((size + 7) & ~(size_t)7) <= c->seg_size / 8;
}

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

/* Unix time in nanoseconds (flush_all's clock). */
int64_t cache__now_ns(void);

/* The item's 32-bit exptime: 0 never, 1 already expired, else unix
 * seconds (clamped at 2106). */
uint32_t cache__exptime_u32(int64_t exptime);

/* ---- memory (cache_memory.c) ---- */

/* Sets up the arena (anonymous, or fc's file: cache__file_open) and the
 * writers of a new cache; 0 or -1 (err says why when it is set). */
int cache__memory_init(struct cache *c, const struct cache_file_config *fc,
		       char *err, size_t cap, bool *refused, bool *restorable);
/* Frees every segment and large item (no reader may be left). */
void cache__memory_destroy(struct cache *c);

/* Room an allocation lacked: bytes, and whether they are for a segment
 * (then a free pooled segment is room enough) or a large item (for which
 * pooled segments must first go back to the kernel). */
struct cache_room {
	int64_t bytes;
	bool segment;
};

/*
 * A new item, not linked, with its layout bits set (flags when not 0, room
 * for a chosen cas): in writer `thread`'s open segment, or a large item of
 * its own. NULL when there is no room (then *need says what room it wants:
 * cache__make_room), or for a large item the allocator refused (need->bytes
 * 0).
 */
struct item *cache__item_alloc(struct cache *c, unsigned int thread,
			       struct cache_key key, uint32_t flags,
			       uint32_t exptime, uint32_t nbytes,
			       bool room_for_cas, struct cache_room *need);
/* n bytes (a multiple of 8) at the end of writer `thread`'s open segment,
 * sealing it and taking a free one when they do not fit; NULL when no
 * segment is free without evicting (*need: a segment). */
char *cache__seg_alloc(struct cache *c, unsigned int thread, size_t n,
		       struct cache_room *need);
/* The item's value, to fill before it is linked. */
static inline char *cache__item_value_w(struct item *it)
{
	return (char *)item_value(it);
}
/* Gives an unpublished item, allocated with room_for_cas, the cas a client
 * chose (item_cas), keeping its write sequence in it->cas. */
void cache__item_choose_cas(struct item *it, uint64_t cas);
/* Sets an unpublished item's marks (ITEM_* bits), keeping its layout. */
void cache__item_set_marks(struct item *it, uint8_t marks);
/* An item built by writer `thread` that was never linked: its bytes go
 * back (the end of its open segment) or its allocation is freed. */
void cache__item_discard(struct cache *c, unsigned int thread, struct item *it);
/* Bytes the limit leaves for items: the bucket arrays come first. */
int64_t cache__item_budget(struct cache *c);
/* Whether the memory counted for items is over that budget: only after
 * the limit was lowered (cache_memlimit) or the bucket arrays grew. Then
 * a pooled segment is not room: writers give it back to the kernel
 * instead of filling it past the limit. */
bool cache__over_budget(struct cache *c);
/* The item is linked now (inside the read-side section that linked it). */
void cache__item_linked(struct cache *c, struct item *it);
/*
 * The item is out of the table: whoever's remove or replace succeeded
 * calls this once, inside the read-side section it unlinked in (a segment's
 * count of live bytes must not change after its grace period). A large
 * item's allocation is retired here too.
 */
void cache__item_unlinked(struct cache *c, struct item *it);
/* A unit whose items are all out of the table: freed or pooled by the
 * next cache__reclaim. */
void cache__seg_retire(struct cache *c, struct seg *s);
/* Waits for a grace period and frees or pools every unit retired before
 * it; outside read-side sections. Whether there was any. */
bool cache__reclaim(struct cache *c);
/* Gives pooled segments back to the kernel until at most keep remain;
 * how many it gave back. */
unsigned long cache__pool_trim(struct cache *c, unsigned long keep);
/* The same for the pooled segments beyond keep that no writer needed
 * since the last call (the pool's low mark): segments freed and taken
 * again under churn stay resident. */
unsigned long cache__pool_trim_idle(struct cache *c, unsigned long keep);
/* A full open segment, or a newly linked large item, joins eviction log
 * `log` (LOG_NEW or LOG_KEPT) at its head (cache_evict.c). */
void cache__seal(struct cache *c, struct seg *s, int log);

/* ---- warm restart (cache_file.c) ---- */

/*
 * Opens the memory file (mode and owner checked, locked against another
 * rhkvd) and maps it as the arena: c->nsegs and c->seg_size are set, the
 * arena not yet used. *restorable: it holds a sealed cache of this layout
 * (cache__file_restore then adopts it); otherwise it was emptied. -1 with
 * err set (*refused: the file itself is refused, not the system).
 */
int cache__file_open(struct cache *c, const struct cache_file_config *fc,
		     char *err, size_t cap, bool *refused, bool *restorable);
/* Links the live items of the file's intact segments and large items
 * into a new table (cache__table_init); before any other thread runs. */
int cache__file_restore(struct cache *c);
/* A graceful stop: no other thread uses the cache. */
int cache__file_seal(struct cache *c);
void cache__file_close(struct cache *c);
/* The table, sized for items (0: the default). */
int cache__table_init(struct cache *c, unsigned long items);
/* A large item's allocation, counted against the limit (cache_memory.c). */
struct item *cache__large_alloc(struct cache *c, size_t size, uint32_t nbytes,
				struct cache_room *need);

/* ---- eviction (cache_evict.c) ---- */

/* Evicts until want fits; whether it does. */
bool cache__make_room(struct cache *c, struct cache_room want);
/* Evicts the oldest unit of the log, or passes over it (mostly kept:
 * back to the head) unless force. */
enum evict_result { EVICT_FREED, EVICT_PASSED, EVICT_EMPTY };
enum evict_result cache__evict_one(struct cache *c, bool force);
/* Evicts one unit, passing over at most a lap of them; false when nothing
 * was freed (the log is empty, or everything stayed hot). */
bool cache__evict_some(struct cache *c);
/* Takes sealed segments without a live item off the log and retires them. */
void cache__free_dead_segments(struct cache *c);
/* A large unit's item left the table: off the log if it is there. */
void cache__large_unlinked(struct cache *c, struct seg *u);

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
