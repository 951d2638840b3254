/*
 * rhashtable: the Linux kernel's resizable, RCU-protected hash table, in
 * userspace on liburcu (urcu-memb). The API and its semantics follow the
 * kernel's, as Neil Brown's LWN article "The rhashtable documentation I
 * wanted to read" (2018) describes them; differences are listed below.
 *
 * Objects embed a struct rhash_head (or struct rhlist_head for an rhltable).
 * Functions take the address of that linkage and return the address of the
 * object. Errors are negative errno values; functions that return an object
 * return ERR_PTR(-errno) on failure (see err.h).
 *
 * CONCURRENCY CONTRACT
 *
 * Threads. Every thread that calls a function of this header must be
 * registered with RCU (rhkv_rcu_register_thread() in rcu.h). All functions
 * except init and destroy may run concurrently with each other, on the same
 * or different keys, from any number of threads.
 *
 * Read lock. rhashtable_lookup() and rhltable_lookup() must be called inside
 * an RCU read-side section, and the object they return may only be used until
 * that section ends (unless the caller holds its own reference). Every other
 * function takes the read lock itself; it may also be called inside a
 * read-side section. Nothing here blocks for a grace period, so any function
 * but destroy may be called with the read lock held.
 *
 * Readers (lookups) take no lock, execute no atomic read-modify-write and
 * write no shared memory: they are a read-side section and plain (acquire)
 * loads. Writers (insert, remove, replace) lock one bucket at a time; writers
 * on different buckets never contend. A bucket lock spins briefly, then
 * sleeps on a futex, so a preempted holder does not burn the other CPUs.
 *
 * Publication and ordering. An insert publishes the object with a release
 * store, and lookups read chain pointers with acquire loads: whatever the
 * caller wrote to an object before inserting it is visible to every thread
 * that finds it. A successful insert, remove or replace implies a full
 * release of the caller's prior writes; a failed one implies nothing.
 *
 * Freeing. Removal unlinks an object but readers may still be looking at
 * it, or be about to follow its rhash_head.next: an unlinked object (and its
 * next pointer) must stay valid until a grace period has elapsed, so free it
 * with rhkv_rcu_call() or after rhkv_rcu_synchronize(), never directly. The
 * table never frees objects except through free_and_destroy's free_fn.
 *
 * Resizing. A worker thread per table grows it above 75% load (or
 * params.grow_above_pct, an extension) and, with
 * automatic_shrinking, shrinks it below 30% (at most 4x per step). Entries are
 * moved bucket by bucket into a future table while readers and writers go on;
 * a lookup never misses an object that is in the table during a resize. The
 * old table is freed after a grace period. Inserts never wait for a resize.
 *
 * Skipping moved buckets. While a resize runs, the worker publishes how
 * many buckets of the old table it has moved (bucket_table.moved, a release
 * store every RHT_MOVED_STRIDE buckets and at the end). A lookup, insert,
 * remove or replace whose old bucket lies below that count goes straight to
 * future_tbl without reading the old bucket; otherwise it searches the old
 * chain and, on a miss, re-reads future_tbl and goes on there. Why no entry
 * present throughout is missed:
 * - "moved" seen: the worker moved every entry of the bucket (linked it into
 *   the future table) before its release store of the count, and our acquire
 *   load read that store or a later one, so those links are visible. After
 *   the move the bucket stays empty for good: an insert locks the old bucket
 *   and reads future_tbl under that lock; the mover held the lock after
 *   future_tbl was set, so every later insert sees future_tbl and goes on.
 * - "moved" not seen (a stale count, or the bucket not reached yet): the
 *   old chain is searched as before. The mover links the chain's LAST entry
 *   into the future table before it unlinks it, so a reader standing on the
 *   entry follows its next pointer into the new chain and, nothing coming
 *   after it in the old chain, misses nothing; a reader that no longer finds
 *   the entry read the unlink (acquire), which the mover stored (release)
 *   after the link and after attaching future_tbl, so the future_tbl it reads
 *   next and the entry's place in it are both visible. Chains end in NULL:
 *   a reader carried into the new chain that way just searches it too, and
 *   then the future table's bucket for the key, which is harmless.
 * - The same holds one table further: the future table may be resizing in
 *   turn (a reader that started before the first resize ended), and the
 *   walk repeats the two cases there until a table has no future_tbl.
 * Grows and shrinks keep the secret, so one hash gives the bucket in every
 * table of the chain; only across a re-seed (a new generation) is the key
 * hashed again.
 *
 * Hashing. The default hash is SipHash-1-3 keyed with a random 128-bit
 * secret. The secret is kept for the table's whole life (the kernel picks a
 * new seed for every new bucket table; we do not, so that a bucket's position
 * stays meaningful across grows and shrinks, which the cursor scan relies
 * on). If an insert finds a chain longer than RHT_ELASTICITY at a sane load,
 * the worker rehashes at the same size with a new secret (hash flooding
 * defence, at most one such re-seed per second; one that cannot allocate
 * its table is tried again a second later) and the table's generation
 * number increases. A user hashfn receives a 32-bit seed derived from the
 * secret, as in the kernel.
 *
 * WALKING
 *
 * rhashtable_walk_enter/exit bracket a walk; walk_next is called between
 * walk_start (which takes the RCU read lock) and walk_stop (which drops it).
 * Walks are safe against concurrent inserts, removes and resizes:
 * - an object present for the whole of one start..stop section is returned
 *   (objects inserted or removed meanwhile may or may not be);
 * - after walk_stop and walk_start, the walk resumes right after the last
 *   object returned if that object is still in the same table; if it was
 *   removed meanwhile, the walk resumes at the same count of objects into the
 *   bucket, which may skip or repeat some of that bucket's objects;
 * - when a resize moves objects during a started walk, the walk finishes the
 *   old table, returns ERR_PTR(-EAGAIN) once, and walks the new table; when
 *   a resize completed while the walk was stopped, the next walk_next returns
 *   ERR_PTR(-EAGAIN) once and the walk restarts in the new table. Either way
 *   objects may be returned twice but none present throughout is missed.
 * The object returned may be used until walk_stop; to keep it longer, take
 * a reference (the table does not count references).
 *
 * CURSOR SCAN
 *
 * rhashtable_scan() needs no state between calls: the 64-bit cursor is the
 * state. It visits buckets in reverse-binary order (as Redis' dictScan): for
 * cursor position v, with m the mask of the smallest table of the resize
 * chain, it visits bucket v & m there and every bucket congruent to v modulo
 * m + 1 in each larger table, oldest table first, all in one RCU read-side
 * section, then advances v by a reverse-binary increment under m. Because a
 * grow or shrink keeps the hash secret, bucket v's entries always land in
 * buckets congruent to v, so:
 * - every object that stays in the table for a whole scan (from cursor 0
 *   until 0 is returned) is reported at least once, whatever grows and
 *   shrinks happen in between;
 * - no object that was never in the table is reported; duplicates are
 *   possible (more of them when the table shrinks during the scan);
 * - one call visits at most 10 * count buckets (a step visits at most 5,
 *   as the worker grows and shrinks at most 4x at a time), and reports
 *   every object of the steps it takes, so it may report more than count.
 * The cursor carries the table's generation. A re-seed (hash flooding
 * defence) moves every object to an unrelated bucket, so a cursor from an
 * older generation restarts the scan from position 0 (objects may then be
 * reported twice, none is missed from the restarted scan), and while the
 * re-seeding rehash is in flight a call reports nothing and returns the
 * same position (as a non-zero cursor even for position 0: only a finished
 * scan returns 0).
 *
 * Differences from the kernel: nelem_hint and min_size are unsigned int
 * (the kernel's u16 is too small for a cache); when key_len is 0 a hashfn for
 * keys is required; inserts never return -EBUSY (the kernel returns it only
 * when an insert needs a synchronous rehash while another is running, and
 * ours never need one: growth is always done by the worker), and a chain
 * may exceed 16 entries for the short time before the re-seed completes.
 * Inserting an object that is already in the table is a bug; debug builds
 * catch it with an assertion when the object is in the chain walked.
 */
#ifndef RHKV_COMMON_RHASHTABLE_H
#define RHKV_COMMON_RHASHTABLE_H

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "rcu.h"
#include "rhashtable_types.h"
#include "siphash.h"

/* ---- internal helpers shared with rhashtable.c (rht__ tier) ---- */

void rht__bucket_lock_slow(_Atomic uintptr_t *bucket);
void rht__bucket_wake(_Atomic uintptr_t *bucket);
/* Counts an insert (+1) or remove (-1); may schedule a resize. */
void rht__count_add(struct rhashtable *ht, long delta);
/* Whether an insert must fail with -E2BIG. */
bool rht__too_many(struct rhashtable *ht);
/* Called by an insert that walked a chain longer than RHT_ELASTICITY. */
void rht__chain_too_long(struct rhashtable *ht, struct bucket_table *tbl);

static inline void rht__bucket_lock(_Atomic uintptr_t *bucket)
{
	uintptr_t v = atomic_load_explicit(bucket, memory_order_relaxed);

	v &= ~RHT_LOCK_BITS;
	/* acquire: pairs with the release in rht__bucket_unlock. */
	if (atomic_compare_exchange_weak_explicit(bucket, &v, v | RHT_LOCKED,
						  memory_order_acquire,
						  memory_order_relaxed))
		return;
	rht__bucket_lock_slow(bucket);
}

static inline void rht__bucket_unlock(_Atomic uintptr_t *bucket)
{
	/* release: publishes the critical section to the next holder. */
	uintptr_t old = atomic_fetch_and_explicit(bucket, ~RHT_LOCK_BITS,
						  memory_order_release);

	if (old & RHT_WAITERS)
		rht__bucket_wake(bucket);
}

/* First entry of a chain, for readers: pairs with rht__bucket_set_first. */
static inline struct rhash_head *
rht__bucket_first(const _Atomic uintptr_t *bucket)
{
	uintptr_t v = atomic_load_explicit(bucket, memory_order_acquire);

	return (struct rhash_head *)(v & ~RHT_LOCK_BITS);
}

/*
 * Replaces the first entry of a locked bucket. XOR keeps the lock bits,
 * which a waiter may change concurrently; release publishes the new entry.
 */
static inline void rht__bucket_set_first(_Atomic uintptr_t *bucket,
					 struct rhash_head *old,
					 struct rhash_head *new)
{
	atomic_fetch_xor_explicit(bucket, (uintptr_t)old ^ (uintptr_t) new,
				  memory_order_release);
}

static inline struct rhash_head *rht__next(const struct rhash_head *he)
{
	/* acquire: pairs with the release store that linked the successor. */
	return atomic_load_explicit(&he->next, memory_order_acquire);
}

/* Stores a chain pointer; release publishes the object it points to. */
static inline void rht__set_next(struct rhash_head *he, struct rhash_head *to)
{
	atomic_store_explicit(&he->next, to, memory_order_release);
}

/*
 * In the locked chain of bucket, makes `to` take the place of he: after
 * prev, or first when prev is NULL. The release store publishes `to`.
 */
static inline void rht__relink(_Atomic uintptr_t *bucket,
			       struct rhash_head *prev, struct rhash_head *he,
			       struct rhash_head *to)
{
	if (prev)
		rht__set_next(prev, to);
	else
		rht__bucket_set_first(bucket, he, to);
}

static inline void *rht_obj(const struct rhash_head *he,
			    const struct rhashtable_params params)
{
	return (char *)he - params.head_offset;
}

static inline struct bucket_table *rht__first_table(struct rhashtable *ht)
{
	/* acquire: pairs with the worker's release when a resize completes. */
	return atomic_load_explicit(&ht->tbl, memory_order_acquire);
}

static inline struct bucket_table *rht__future(struct bucket_table *tbl)
{
	/* acquire: pairs with the worker's release when it attaches a table. */
	return atomic_load_explicit(&tbl->future_tbl, memory_order_acquire);
}

static inline uint32_t rht__key_hash(const struct rhashtable *ht,
				     const struct bucket_table *tbl,
				     const void *key,
				     const struct rhashtable_params params)
{
	unsigned int len = params.key_len ? params.key_len : ht->key_len;

	if (params.hashfn)
		return params.hashfn(key, len, tbl->seed);
	return (uint32_t)siphash13(&tbl->secret, key, len);
}

static inline uint32_t rht__obj_hash(const struct rhashtable *ht,
				     const struct bucket_table *tbl,
				     const struct rhash_head *he,
				     const struct rhashtable_params params)
{
	const char *obj = rht_obj(he, params);

	if (params.obj_hashfn)
		return params.obj_hashfn(obj, ht->key_len, tbl->seed);
	return rht__key_hash(ht, tbl, obj + params.key_offset, params);
}

static inline _Atomic uintptr_t *rht__bucket(struct bucket_table *tbl,
					     uint32_t hash)
{
	return &tbl->buckets[hash & tbl->mask];
}

/*
 * Sets *next to the future table of tbl (NULL when no resize is in flight)
 * and tells whether the worker has published that bucket `idx` of tbl moved
 * there: the bucket is then empty for good and need not be read. See
 * "Skipping moved buckets" in the top comment.
 */
static inline bool rht__bucket_moved(struct bucket_table *tbl, uint32_t idx,
				     struct bucket_table **next)
{
	*next = rht__future(tbl);
	/* acquire: pairs with the worker's release after moving the buckets
	 * below the count, so that their entries' links in *next are seen. */
	return *next &&
	       idx < atomic_load_explicit(&tbl->moved, memory_order_acquire);
}

/*
 * Whether a hash computed for tbl serves for next too: the generation
 * changes exactly when the secret does (a re-seed), and a user hashfn's
 * seed is derived from the secret.
 */
static inline bool rht__same_secret(const struct bucket_table *tbl,
				    const struct bucket_table *next)
{
	return tbl->generation == next->generation;
}

/* The hash of key for next, given its hash for tbl. */
static inline uint32_t rht__key_rehash(const struct rhashtable *ht,
				       const struct bucket_table *tbl,
				       const struct bucket_table *next,
				       uint32_t hash, const void *key,
				       const struct rhashtable_params params)
{
	return rht__same_secret(tbl, next)
		       ? hash
		       : rht__key_hash(ht, next, key, params);
}

/* The hash of he for next, given its hash for tbl. */
static inline uint32_t rht__obj_rehash(const struct rhashtable *ht,
				       const struct bucket_table *tbl,
				       const struct bucket_table *next,
				       uint32_t hash,
				       const struct rhash_head *he,
				       const struct rhashtable_params params)
{
	return rht__same_secret(tbl, next)
		       ? hash
		       : rht__obj_hash(ht, next, he, params);
}

/* 0 when the object's key equals arg->key. */
static inline int rht__key_cmp(struct rhashtable_compare_arg *arg,
			       const struct rhash_head *he,
			       const struct rhashtable_params params)
{
	const char *obj = rht_obj(he, params);

	if (params.obj_cmpfn)
		return params.obj_cmpfn(arg, obj);
	return memcmp(obj + params.key_offset, arg->key,
		      params.key_len ? params.key_len : arg->ht->key_len);
}

/* The chain entry with the key, or NULL; needs the RCU read lock. */
static inline struct rhash_head *
rht__lookup(struct rhashtable *ht, const void *key,
	    const struct rhashtable_params params)
{
	struct rhashtable_compare_arg arg = { .ht = ht, .key = key };
	struct bucket_table *tbl = rht__first_table(ht), *next;
	uint32_t hash = rht__key_hash(ht, tbl, key, params);

	for (;;) {
		uint32_t idx = hash & tbl->mask;

		if (!rht__bucket_moved(tbl, idx, &next)) {
			struct rhash_head *he;

			for (he = rht__bucket_first(&tbl->buckets[idx]); he;
			     he = rht__next(he))
				if (!rht__key_cmp(&arg, he, params))
					return he;
			/*
			 * Not in this table. Read future_tbl again, after the
			 * chain: a resize that started since the read above
			 * may have moved the entry, and having read its
			 * unlink (acquire) we see the future table and the
			 * entry in it.
			 */
			next = rht__future(tbl);
			if (!next)
				return NULL;
		}
		hash = rht__key_rehash(ht, tbl, next, hash, key, params);
		tbl = next;
	}
}

/*
 * Looks up key. The caller holds the RCU read lock, and may use the object
 * until it drops it. Returns the object or NULL.
 */
static inline void *rhashtable_lookup(struct rhashtable *ht, const void *key,
				      const struct rhashtable_params params)
{
	struct rhash_head *he = rht__lookup(ht, key, params);

	return he ? rht_obj(he, params) : NULL;
}

/*
 * A hint, not a lookup: starts loading the bucket key hashes to, so that a
 * lookup or insert of key shortly afterwards does not wait for it. Servers
 * call it for the next request of a pipelined batch while they execute the
 * current one. Needs the RCU read lock; reads only, never faults.
 */
static inline void rhashtable_prefetch(struct rhashtable *ht, const void *key,
				       const struct rhashtable_params params)
{
	struct bucket_table *tbl = rht__first_table(ht);

	__builtin_prefetch(
		rht__bucket(tbl, rht__key_hash(ht, tbl, key, params)));
}

/*
 * The second stage of rhashtable_prefetch(), for the same key once its
 * bucket has had time to arrive: starts loading the first two cache lines
 * of the bucket's first object, where a lookup's key compare reads (the
 * lookup's second dependent miss). Needs the RCU read lock; reads only,
 * never faults (a prefetch of an object being freed is harmless).
 */
static inline void
rhashtable_prefetch_entry(struct rhashtable *ht, const void *key,
			  const struct rhashtable_params params)
{
	struct bucket_table *tbl = rht__first_table(ht);
	struct rhash_head *he = rht__bucket_first(
		rht__bucket(tbl, rht__key_hash(ht, tbl, key, params)));

	if (he) {
		const char *obj = rht_obj(he, params);

		__builtin_prefetch(obj);
		__builtin_prefetch(obj + 64);
	}
}

/*
 * Looks up key, taking the RCU read lock itself. The object may be removed
 * and freed as soon as this returns: use it only if the caller knows it
 * cannot be freed (its own reference, or no concurrent remover).
 */
static inline void *
rhashtable_lookup_fast(struct rhashtable *ht, const void *key,
		       const struct rhashtable_params params)
{
	void *obj;

	rhkv_rcu_read_lock();
	obj = rhashtable_lookup(ht, key, params);
	rhkv_rcu_read_unlock();
	return obj;
}

/*
 * rhltable lookup: the list of all objects with key, or NULL. The caller
 * holds the RCU read lock; walk the list with rhl_for_each_entry_rcu.
 */
static inline struct rhlist_head *
rhltable_lookup(struct rhltable *hlt, const void *key,
		const struct rhashtable_params params)
{
	struct rhash_head *he = rht__lookup(&hlt->ht, key, params);

	return he ? (struct rhlist_head *)he : NULL;
}

static inline struct rhlist_head *rhl__next(const struct rhlist_head *list)
{
	/* acquire: pairs with the release that linked the list entry. */
	return atomic_load_explicit(&list->next, memory_order_acquire);
}

/* Iterates `tpos` (an object pointer) over an rhltable_lookup() list. */
#define rhl_for_each_entry_rcu(tpos, pos, list, member)                    \
	for ((pos) = (list);                                               \
	     (pos) && ((tpos) = (__typeof__(tpos))((char *)(pos)-offsetof( \
			       __typeof__(*(tpos)), member)),              \
		      1);                                                  \
	     (pos) = rhl__next(pos))

/*
 * In an rhltable, links obj into the list of the chain entry `he` (same key)
 * by making obj the new chain entry; the bucket of `he` is locked and `pprev`
 * is the pointer to `he` (a bucket word when bucket_first is true).
 */
static inline void rht__list_push(_Atomic uintptr_t *bucket,
				  struct rhash_head *prev,
				  struct rhash_head *he, struct rhash_head *obj)
{
	struct rhlist_head *list = (struct rhlist_head *)obj;

	atomic_store_explicit(&list->next, (struct rhlist_head *)he,
			      memory_order_relaxed);
	atomic_store_explicit(&obj->next, rht__next(he), memory_order_relaxed);
	/* release publishes both stores above with obj. */
	rht__relink(bucket, prev, he, obj);
}

/*
 * The insert engine. With key == NULL, inserts without looking for an equal
 * key. Otherwise returns the object already holding key (not inserting),
 * except in an rhltable, where obj joins that object's list. Returns NULL
 * when obj was inserted, ERR_PTR(-E2BIG) at the element bound.
 */
static inline void *rht__insert(struct rhashtable *ht, const void *key,
				struct rhash_head *obj,
				const struct rhashtable_params params,
				bool rhlist)
{
	struct rhashtable_compare_arg arg = { .ht = ht, .key = key };
	struct bucket_table *tbl, *next;
	void *ret = NULL;

	uint32_t hash;

	rhkv_rcu_read_lock();
	tbl = rht__first_table(ht);
	hash = rht__obj_hash(ht, tbl, obj, params);
	for (;;) {
		uint32_t idx = hash & tbl->mask;
		_Atomic uintptr_t *bucket = &tbl->buckets[idx];
		struct rhash_head *first, *he, *prev = NULL;
		unsigned int chain = 0;

		/* Moved: empty for good, no equal key in it, go on. */
		if (rht__bucket_moved(tbl, idx, &next)) {
			hash = rht__obj_rehash(ht, tbl, next, hash, obj,
					       params);
			tbl = next;
			continue;
		}
		rht__bucket_lock(bucket);
		first = rht__bucket_first(bucket);
		for (he = first; he; prev = he, he = rht__next(he)) {
			assert(he != obj && "object already in the table");
			chain++;
			if (!key || rht__key_cmp(&arg, he, params))
				continue;
			if (!rhlist) {
				ret = rht_obj(he, params);
				rht__bucket_unlock(bucket);
				goto out;
			}
			rht__list_push(bucket, prev, he, obj);
			rht__bucket_unlock(bucket);
			rht__count_add(ht, 1);
			goto out;
		}
		/*
		 * Read under the bucket lock: if no resize had started when we
		 * took it, the mover will take it after us and move obj too.
		 */
		next = rht__future(tbl);
		if (next) {
			rht__bucket_unlock(bucket);
			hash = rht__obj_rehash(ht, tbl, next, hash, obj,
					       params);
			tbl = next;
			continue;
		}
		if (ht->max_elems && rht__too_many(ht)) {
			rht__bucket_unlock(bucket);
			ret = ERR_PTR(-E2BIG);
			goto out;
		}
		atomic_store_explicit(&obj->next, first, memory_order_relaxed);
		if (rhlist)
			atomic_store_explicit(
				&((struct rhlist_head *)obj)->next, NULL,
				memory_order_relaxed);
		rht__bucket_set_first(bucket, first, obj);
		rht__bucket_unlock(bucket);
		rht__count_add(ht, 1);
		if (chain >= RHT_ELASTICITY)
			rht__chain_too_long(ht, tbl);
		break;
	}
out:
	rhkv_rcu_read_unlock();
	return ret;
}

/*
 * Inserts obj without checking for an equal key: duplicates are possible.
 * Returns 0, or -E2BIG at the element bound (2 * max_size).
 */
static inline int rhashtable_insert_fast(struct rhashtable *ht,
					 struct rhash_head *obj,
					 const struct rhashtable_params params)
{
	return (int)PTR_ERR(rht__insert(ht, NULL, obj, params, false));
}

/*
 * Inserts obj (whose key is given separately) unless an object with an
 * equal key is present. Returns NULL when inserted, the present object, or
 * ERR_PTR(-E2BIG). For tables with obj_hashfn (key_len 0).
 */
static inline void *
rhashtable_lookup_get_insert_key(struct rhashtable *ht, const void *key,
				 struct rhash_head *obj,
				 const struct rhashtable_params params)
{
	return rht__insert(ht, key, obj, params, false);
}

/* As above; returns 0, -EEXIST, or -E2BIG. */
static inline int
rhashtable_lookup_insert_key(struct rhashtable *ht, const void *key,
			     struct rhash_head *obj,
			     const struct rhashtable_params params)
{
	void *ret = rht__insert(ht, key, obj, params, false);

	if (IS_ERR(ret))
		return (int)PTR_ERR(ret);
	return ret ? -EEXIST : 0;
}

/*
 * Inserts obj unless an object with the same key is present. Returns NULL
 * when inserted, the object already present, or ERR_PTR(-E2BIG).
 */
static inline void *
rhashtable_lookup_get_insert_fast(struct rhashtable *ht, struct rhash_head *obj,
				  const struct rhashtable_params params)
{
	const char *key =
		(const char *)rht_obj(obj, params) + params.key_offset;

	return rht__insert(ht, key, obj, params, false);
}

/* As above; returns 0, -EEXIST, or -E2BIG. */
static inline int
rhashtable_lookup_insert_fast(struct rhashtable *ht, struct rhash_head *obj,
			      const struct rhashtable_params params)
{
	const char *key =
		(const char *)rht_obj(obj, params) + params.key_offset;

	return rhashtable_lookup_insert_key(ht, key, obj, params);
}

/*
 * Unlinks obj from the locked chain of bucket. In an rhltable obj may be
 * any member of a list. Returns 0, or -ENOENT when obj is not in the chain.
 */
static inline int rht__unlink(_Atomic uintptr_t *bucket, struct rhash_head *obj,
			      bool rhlist)
{
	struct rhash_head *he, *prev = NULL;

	for (he = rht__bucket_first(bucket); he;
	     prev = he, he = rht__next(he)) {
		struct rhlist_head *list = (struct rhlist_head *)he;
		struct rhlist_head *lprev = NULL;
		struct rhash_head *repl;

		if (rhlist && he != obj) {
			/* obj may be further down this entry's list. */
			for (; list && &list->rhead != obj;
			     lprev = list, list = rhl__next(list))
				;
			if (!list)
				continue;
			atomic_store_explicit(&lprev->next, rhl__next(list),
					      memory_order_release);
			return 0;
		}
		if (he != obj)
			continue;
		repl = rht__next(he);
		if (rhlist && rhl__next(list)) {
			/* The next list member becomes the chain entry. */
			struct rhlist_head *heir = rhl__next(list);

			atomic_store_explicit(&heir->rhead.next, repl,
					      memory_order_relaxed);
			repl = &heir->rhead;
		}
		rht__relink(bucket, prev, he, repl);
		return 0;
	}
	return -ENOENT;
}

/* Puts obj_new in the place of obj_old in the locked chain of bucket.
 * Returns 0, or -ENOENT when obj_old is not in the chain. */
static inline int rht__swap(_Atomic uintptr_t *bucket,
			    struct rhash_head *obj_old,
			    struct rhash_head *obj_new)
{
	struct rhash_head *he, *prev = NULL;

	for (he = rht__bucket_first(bucket); he;
	     prev = he, he = rht__next(he)) {
		if (he != obj_old)
			continue;
		atomic_store_explicit(&obj_new->next, rht__next(he),
				      memory_order_relaxed);
		/* release publishes obj_new and its next pointer. */
		rht__relink(bucket, prev, he, obj_new);
		return 0;
	}
	return -ENOENT;
}

/*
 * Finds obj's bucket in each table of the chain in turn and, under its
 * lock, unlinks obj (obj_new NULL) or puts obj_new in its place. Returns 0,
 * -ENOENT when obj is in no table, or -EINVAL when obj_new does not hash
 * as obj. Needs the RCU read lock.
 */
static inline int rht__edit(struct rhashtable *ht, struct rhash_head *obj,
			    struct rhash_head *obj_new,
			    const struct rhashtable_params params, bool rhlist)
{
	struct bucket_table *tbl = rht__first_table(ht), *next;
	uint32_t hash = rht__obj_hash(ht, tbl, obj, params);
	int err = -ENOENT;

	for (;;) {
		uint32_t idx = hash & tbl->mask;

		/* Both must hash alike under each table's secret. */
		if (obj_new && hash != rht__obj_hash(ht, tbl, obj_new, params))
			return -EINVAL;
		if (!rht__bucket_moved(tbl, idx, &next)) {
			_Atomic uintptr_t *bucket = &tbl->buckets[idx];

			rht__bucket_lock(bucket);
			err = obj_new ? rht__swap(bucket, obj, obj_new)
				      : rht__unlink(bucket, obj, rhlist);
			rht__bucket_unlock(bucket);
			if (!err)
				return 0;
			/*
			 * Not here: a resize may have moved it on. The mover
			 * held this bucket's lock while moving, so after our
			 * lock it is there, and future_tbl is seen.
			 */
			next = rht__future(tbl);
		}
		if (!next)
			return err;
		hash = rht__obj_rehash(ht, tbl, next, hash, obj, params);
		tbl = next;
	}
}

static inline int rht__remove(struct rhashtable *ht, struct rhash_head *obj,
			      const struct rhashtable_params params,
			      bool rhlist)
{
	int err;

	rhkv_rcu_read_lock();
	err = rht__edit(ht, obj, NULL, params, rhlist);
	if (!err)
		rht__count_add(ht, -1);
	rhkv_rcu_read_unlock();
	return err;
}

/*
 * Unlinks obj. Returns 0, or -ENOENT if obj is not in the table. Free obj
 * only after a grace period (see the contract above).
 */
static inline int rhashtable_remove_fast(struct rhashtable *ht,
					 struct rhash_head *obj,
					 const struct rhashtable_params params)
{
	return rht__remove(ht, obj, params, false);
}

/*
 * Puts obj_new in the place of obj_old, atomically for readers: a lookup
 * finds one or the other, never neither. Both must hash the same (the same
 * key): -EINVAL otherwise. -ENOENT if obj_old is not in the table. obj_old
 * is freed by the caller after a grace period.
 */
static inline int rhashtable_replace_fast(struct rhashtable *ht,
					  struct rhash_head *obj_old,
					  struct rhash_head *obj_new,
					  const struct rhashtable_params params)
{
	int err;

	rhkv_rcu_read_lock();
	err = rht__edit(ht, obj_old, obj_new, params, false);
	rhkv_rcu_read_unlock();
	return err;
}

/*
 * Sets up ht. Returns 0, -EINVAL for inconsistent params (no key_len and no
 * obj_hashfn; obj_hashfn without obj_cmpfn; key_len 0 without hashfn;
 * a key or head that does not fit the offsets), or -ENOMEM.
 */
int rhashtable_init(struct rhashtable *ht,
		    const struct rhashtable_params *params);

/*
 * Stops the resize worker (a resize in flight stops between buckets),
 * calls free_fn(obj, arg) on every object if free_fn is not NULL, and
 * frees the table. No other call on ht may be running or follow; must not
 * be called inside an RCU read-side section.
 */
void rhashtable_free_and_destroy(struct rhashtable *ht,
				 void (*free_fn)(void *ptr, void *arg),
				 void *arg);
/*
 * Ends the resize worker: once this returns, no entry moves between tables
 * (a resize in progress stays half done; lookups and walks still find
 * everything) and nothing but the caller's own calls writes an entry's
 * rhash_head. For a caller that checksums the objects where they lie
 * (server/store/cache_file.c seals them in a file). Inserts and removes still
 * work; the table no longer grows or shrinks. Idempotent; destroy calls it.
 */
void rhashtable_stop_worker(struct rhashtable *ht);
void rhashtable_destroy(struct rhashtable *ht);

/* Number of objects in the table; exact when no writer is running. */
unsigned long rhashtable_nelems(const struct rhashtable *ht);

/* Buckets of the current table (the future one while resizing). */
unsigned int rhashtable_size(struct rhashtable *ht);

/* Number of flood-triggered re-seeds so far. */
uint32_t rhashtable_generation(struct rhashtable *ht);

struct rhashtable_stats {
	unsigned long nelems;
	unsigned int size; /* buckets, as rhashtable_size() */
	uint32_t generation;
	bool resizing;
	unsigned long grows, shrinks, reseeds;
	unsigned long alloc_failures; /* resizes skipped for lack of memory */
};

/*
 * The number of entries in the longest chain of the table (of the current
 * and the future table while a resize is in flight), for statistics. It
 * walks every bucket, so it costs time in proportion to the size of the
 * table, but in slices of at most 1024 buckets, each in its own RCU
 * read-side section (taken and dropped here), so that a large table never
 * delays a grace period by the whole walk.
 * What it returns: exact when the table does not change during the call.
 * With concurrent inserts and removes, each chain counts as it was when its
 * slice was walked. If a resize starts or ends during the call, it is an
 * approximation: the walk goes on at the same bucket position in the table
 * that is then current, so part of a table may be left out.
 */
unsigned int rhashtable_longest_chain(struct rhashtable *ht);

/* Bytes of every bucket array in use (two while a resize is in flight):
 * what the table itself costs, for memory accounting. */
size_t rhashtable_bucket_bytes(struct rhashtable *ht);

/* A snapshot of the table's figures, for statistics. */
void rhashtable_get_stats(struct rhashtable *ht, struct rhashtable_stats *st);

/* ---- walking every object (rhashtable_walk.c) ---- */

/* Sets up iter; may sleep briefly (takes a mutex), not under a bucket lock. */
void rhashtable_walk_enter(struct rhashtable *ht, struct rhashtable_iter *iter);
/* Ends the walk; after walk_stop (or before any walk_start). */
void rhashtable_walk_exit(struct rhashtable_iter *iter);
/*
 * Takes the RCU read lock and resumes the walk. Returns 0, or -EAGAIN when
 * the table was resized while the walk was stopped: it then restarts from
 * the beginning of the new table.
 */
int rhashtable_walk_start_check(struct rhashtable_iter *iter);
/* As walk_start_check; a restart is reported by the next walk_next. */
void rhashtable_walk_start(struct rhashtable_iter *iter);
/*
 * The next object, NULL at the end, or ERR_PTR(-EAGAIN) once after the
 * walk moved to another table (objects may then be seen twice).
 */
void *rhashtable_walk_next(struct rhashtable_iter *iter);
/*
 * The current object without advancing: the one walk_next returned last,
 * or, when there is none (at the start, or after it was removed while the
 * walk was stopped), the next one, which becomes current so that walk_next
 * continues after it (the kernel's behaviour).
 */
void *rhashtable_walk_peek(struct rhashtable_iter *iter);
/* Drops the RCU read lock; the walk can resume with walk_start. */
void rhashtable_walk_stop(struct rhashtable_iter *iter);

/* ---- stateless cursor scan (rhashtable_walk.c) ---- */

/* Called for each object found, inside the RCU read-side section. */
typedef void (*rhashtable_scan_fn)(void *obj, void *arg);

struct rhashtable_scan_stats {
	unsigned int objects; /* objects reported */
	unsigned int buckets; /* buckets visited */
};

/*
 * Reports objects from position `cursor` (0: start a scan) to fn, stopping
 * once it reported at least `count` objects (count 0 counts as 1) or before
 * it would visit more than 10 * count buckets, and returns the cursor to
 * continue from: 0 when the scan is complete. See CURSOR SCAN in the top
 * comment. stats may be NULL.
 */
uint64_t rhashtable_scan(struct rhashtable *ht, uint64_t cursor,
			 unsigned int count, rhashtable_scan_fn fn, void *arg,
			 struct rhashtable_scan_stats *stats);

/* ---- rhltable: several objects per key ---- */

int rhltable_init(struct rhltable *hlt, const struct rhashtable_params *params);

/* Adds obj to the list of its key (creating it). Returns 0 or -E2BIG. */
static inline int rhltable_insert_key(struct rhltable *hlt, const void *key,
				      struct rhlist_head *list,
				      const struct rhashtable_params params)
{
	return (int)PTR_ERR(
		rht__insert(&hlt->ht, key, &list->rhead, params, true));
}

static inline int rhltable_insert(struct rhltable *hlt,
				  struct rhlist_head *list,
				  const struct rhashtable_params params)
{
	const char *key =
		(const char *)rht_obj(&list->rhead, params) + params.key_offset;

	return rhltable_insert_key(hlt, key, list, params);
}

/* Removes one object. Returns 0 or -ENOENT. Free it after a grace period. */
static inline int rhltable_remove(struct rhltable *hlt,
				  struct rhlist_head *list,
				  const struct rhashtable_params params)
{
	return rht__remove(&hlt->ht, &list->rhead, params, true);
}

static inline void
rhltable_free_and_destroy(struct rhltable *hlt,
			  void (*free_fn)(void *ptr, void *arg), void *arg)
{
	rhashtable_free_and_destroy(&hlt->ht, free_fn, arg);
}

static inline void rhltable_walk_enter(struct rhltable *hlt,
				       struct rhashtable_iter *iter)
{
	rhashtable_walk_enter(&hlt->ht, iter);
}

static inline void rhltable_destroy(struct rhltable *hlt)
{
	rhltable_free_and_destroy(hlt, NULL, NULL);
}

#endif
