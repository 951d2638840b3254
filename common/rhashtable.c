/*
 * rhashtable: set-up, bucket locks, element counting and resizing. The
 * lookup, insert and remove paths are static inline in rhashtable.h.
 *
 * HOW RESIZING WORKS
 *
 * A table is a chain of bucket tables: ht->tbl is the oldest, and while a
 * resize runs, its future_tbl is the table entries move to. Only the worker
 * thread attaches a future table and only when none is attached, so the
 * chain has at most two tables, except for a reader that started before a
 * resize finished: it may follow future_tbl pointers through a table that is
 * no longer ht->tbl (which stays allocated until that reader's read-side
 * section ends).
 *
 * The worker moves one bucket at a time. Holding the old bucket's lock, it
 * takes the LAST entry of the chain, links it at the head of its bucket in
 * the new table (taking that bucket's lock too), and only then unlinks it
 * from the old chain. So at every instant an entry is reachable from the old
 * bucket, from the new bucket, or from both:
 *
 * - A reader that is on the moved entry follows its next pointer into the
 *   new chain: it sees extra entries, never fewer, because nothing came after
 *   the entry in the old chain.
 * - A reader that misses the entry in the old chain read the unlink store
 *   (acquire), which comes after the link store in the new table (release),
 *   so when it goes on to future_tbl it finds the entry there.
 *
 * After every RHT_MOVED_STRIDE buckets (and the last one) it publishes how
 * many it has moved, so that lookups and writers skip the old bucket once
 * it is moved; "Skipping moved buckets" in rhashtable.h says why that is
 * safe.
 *
 * Writers take the bucket lock in the oldest table and read future_tbl
 * under it. If a future table is attached they go on to it (an insert checks
 * each table for an equal key on the way and inserts into the newest one);
 * if not, the worker has not reached this bucket and will take the lock after
 * them, so whatever they changed moves with the bucket. Removal and replace
 * look in each table in turn: the mover holds the old bucket's lock for the
 * whole bucket, so an entry absent from the old bucket after we locked it is
 * already in the new one.
 *
 * When every bucket has moved, the worker makes the new table ht->tbl (under
 * ctl->lock, where walkers are also told), waits for a grace period and frees
 * the old table. Because the hash secret is kept across grows and shrinks, an
 * entry of old bucket b lands in a new bucket congruent to b modulo the
 * smaller size: the cursor scan (rhashtable_walk.c) relies on it. Only a
 * re-seed (hash flooding defence) changes the secret; it bumps generation.
 *
 * BUCKET LOCKS
 *
 * The lock is the two low bits of the bucket word (entries are 8-byte
 * aligned): LOCKED, and WAITERS when a thread may be asleep. A locker spins a
 * bounded number of times, then sets WAITERS and sleeps on a futex on the low
 * 32 bits of the word; an unlocker that clears WAITERS wakes one sleeper,
 * which re-takes the lock with WAITERS set in case others still sleep. A
 * change of the first entry under the lock changes the futex word too, which
 * only costs a sleeper a spurious wake-up.
 */
#include "rhashtable.h"
#include "rhashtable_internal.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Spins before sleeping; a few microseconds on current CPUs. */
#define RHT_LOCK_SPINS 100
/* Shortest time between two flood-triggered re-seeds. */
#define RHT_RESEED_INTERVAL_NS 1000000000LL
/* Most buckets rht__max_chain() walks in one read-side section. */
#define RHT_CHAIN_SLICE 1024u
/* Tables this small check their load on every insert and remove. */
#define RHT_SMALL_TABLE 1024u

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The futex is the low-order 32 bits of the bucket word. */
static uint32_t *futex_word(_Atomic uintptr_t *bucket)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint32_t *)bucket;
#else
	return (uint32_t *)bucket + (sizeof(uintptr_t) / sizeof(uint32_t) - 1);
#endif
}

void rht__bucket_lock_slow(_Atomic uintptr_t *bucket)
{
	uintptr_t v;

	for (int i = 0; i < RHT_LOCK_SPINS; i++) {
		v = atomic_load_explicit(bucket, memory_order_relaxed);
		/* acquire: pairs with the release in rht__bucket_unlock. */
		if (!(v & RHT_LOCK_BITS) &&
		    atomic_compare_exchange_weak_explicit(
			    bucket, &v, v | RHT_LOCKED, memory_order_acquire,
			    memory_order_relaxed))
			return;
		cpu_relax();
	}
	v = atomic_load_explicit(bucket, memory_order_relaxed);
	for (;;) {
		if (!(v & RHT_LOCK_BITS)) {
			/* Take it marked contended: others may be asleep. */
			if (atomic_compare_exchange_weak_explicit(
				    bucket, &v, v | RHT_LOCK_BITS,
				    memory_order_acquire, memory_order_relaxed))
				return;
			continue;
		}
		if (!(v & RHT_WAITERS)) {
			if (!atomic_compare_exchange_weak_explicit(
				    bucket, &v, v | RHT_WAITERS,
				    memory_order_relaxed, memory_order_relaxed))
				continue;
			v |= RHT_WAITERS;
		}
		/* Returns at once if the word no longer holds v. */
		syscall(SYS_futex, futex_word(bucket), FUTEX_WAIT_PRIVATE,
			(uint32_t)v, NULL, NULL, 0);
		v = atomic_load_explicit(bucket, memory_order_relaxed);
	}
}

void rht__bucket_wake(_Atomic uintptr_t *bucket)
{
	syscall(SYS_futex, futex_word(bucket), FUTEX_WAKE_PRIVATE, 1, NULL,
		NULL, 0);
}

/* ---- element count ---- */

static atomic_uint next_shard;
static _Thread_local unsigned int my_shard; /* index + 1; 0: unassigned */

static struct rht__shard *thread_shard(struct rhashtable__ctl *ctl)
{
	if (!my_shard)
		my_shard = 1 + atomic_fetch_add_explicit(&next_shard, 1,
							 memory_order_relaxed) %
				       RHT_COUNT_SHARDS;
	return &ctl->count[my_shard - 1];
}

unsigned long rhashtable_nelems(const struct rhashtable *ht)
{
	long sum = 0;

	for (int i = 0; i < RHT_COUNT_SHARDS; i++)
		sum += atomic_load_explicit(&ht->ctl->count[i].n,
					    memory_order_relaxed);
	return sum > 0 ? (unsigned long)sum : 0;
}

/* Elements a table of size buckets holds before it grows. */
static unsigned long grow_at(const struct rhashtable *ht, unsigned int size)
{
	return (unsigned long)size / 100 * ht->p.grow_above_pct +
	       (unsigned long)size % 100 * ht->p.grow_above_pct / 100;
}

static bool above_75(const struct rhashtable *ht, unsigned long n,
		     const struct bucket_table *tbl)
{
	return n > grow_at(ht, tbl->size) && tbl->size < ht->p.max_size;
}

static bool below_30(const struct rhashtable *ht, unsigned long n,
		     const struct bucket_table *tbl)
{
	return ht->p.automatic_shrinking && n < tbl->size * 3ul / 10 &&
	       tbl->size > ht->p.min_size;
}

/* Called inside the read-side section of an insert or a remove. */
void rht__count_add(struct rhashtable *ht, long delta)
{
	struct rhashtable__ctl *ctl = ht->ctl;
	long old = atomic_fetch_add_explicit(&thread_shard(ctl)->n, delta,
					     memory_order_relaxed);
	struct bucket_table *tbl = rht__first_table(ht);
	unsigned long n;

	/* Summing the shards costs 16 loads: do it 1 time in 16 when the
	 * table is large, where 16 entries are a small fraction of it. */
	if ((old & 15) && tbl->size > RHT_SMALL_TABLE)
		return;
	if (rht__future(tbl))
		return; /* the worker re-checks when the resize ends */
	n = rhashtable_nelems(ht);
	if (delta > 0 ? above_75(ht, n, tbl) : below_30(ht, n, tbl))
		rht__kick(ht);
}

bool rht__too_many(struct rhashtable *ht)
{
	return rhashtable_nelems(ht) >= ht->max_elems;
}

void rht__chain_too_long(struct rhashtable *ht, struct bucket_table *tbl)
{
	/* A long chain at high load only needs the grow already due. */
	if (rhashtable_nelems(ht) > tbl->size)
		return;
	atomic_store_explicit(&ht->ctl->reseed_requested, 1,
			      memory_order_relaxed);
	rht__kick(ht);
}

/* ---- bucket tables ---- */

static void random_secret(struct siphash_key *key)
{
	if (getrandom(key, sizeof(*key), 0) == (ssize_t)sizeof(*key))
		return;
	/* No entropy source: still differ per table and per process. */
	key->k0 = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	key->k1 = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ULL ^ key->k0;
}

static void set_secret(struct bucket_table *tbl, const struct siphash_key *key)
{
	tbl->secret = *key;
	tbl->seed = (uint32_t)(key->k0 ^ (key->k0 >> 32) ^ key->k1);
}

#define CACHE_LINE 64

static struct bucket_table *table_alloc(unsigned int size,
					const struct siphash_key *secret,
					uint32_t generation)
{
	struct bucket_table *tbl;
	void *raw;

	/* calloc: large arrays come from fresh, zeroed pages, touched only
	 * when a bucket is first used. NULL is an empty, unlocked bucket.
	 * Over-allocated by a line so the table starts on a cache line, as
	 * the layout of struct bucket_table assumes. */
	raw = calloc(1, sizeof(*tbl) + (size_t)size * sizeof(tbl->buckets[0]) +
				CACHE_LINE - 1);
	if (!raw)
		return NULL;
	tbl = (struct bucket_table *)(((uintptr_t)raw + CACHE_LINE - 1) &
				      ~(uintptr_t)(CACHE_LINE - 1));
	tbl->alloc = raw;
	tbl->size = size;
	tbl->mask = size - 1;
	tbl->generation = generation;
	set_secret(tbl, secret);
	return tbl;
}

/*
 * Writes a zero into every page of a new table's buckets while no other
 * thread can see it. A fresh page that is read before it is written
 * (locking a bucket reads it first) maps the shared zero page, and the
 * write that follows replaces that mapping, which flushes the TLB of every
 * other CPU running the process: an interrupt to each reader per page,
 * 4096 for a 16 MB table, in the middle of its lookups (perf showed them
 * in the worker's page faults). A page first written is mapped once, with
 * no flush. A resize fills every page of the new table anyway (a page
 * holds 512 buckets and resizes happen at 30% load and more), so this
 * commits no more memory, except for a re-seed of a nearly empty table.
 * 4096 is the smallest page size; larger pages are written more than
 * once, harmlessly.
 */
static void populate(struct bucket_table *tbl)
{
	size_t per_page = 4096 / sizeof(tbl->buckets[0]);

	for (size_t i = 0; i < tbl->size; i += per_page)
		atomic_store_explicit(&tbl->buckets[i], 0,
				      memory_order_relaxed);
}

static void table_free(struct bucket_table *tbl)
{
	free(tbl->alloc);
}

/* ---- the resize worker ---- */

void rht__kick(struct rhashtable *ht)
{
	struct rhashtable__ctl *ctl = ht->ctl;

	/* Only the first kick since the worker last looked signals it. */
	if (atomic_exchange_explicit(&ctl->run_pending, 1,
				     memory_order_acq_rel))
		return;
	pthread_mutex_lock(&ctl->lock);
	pthread_cond_signal(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
}

void rht__force_reseed(struct rhashtable *ht)
{
	atomic_store_explicit(&ht->ctl->force_reseed, 1, memory_order_relaxed);
	atomic_store_explicit(&ht->ctl->run_pending, 0, memory_order_relaxed);
	rht__kick(ht);
}

/* Moves every entry of old bucket i into new_tbl. */
static void rehash_bucket(struct rhashtable *ht, struct bucket_table *old,
			  struct bucket_table *new_tbl, unsigned int i)
{
	_Atomic uintptr_t *bucket = &old->buckets[i];
	struct rhash_head *he;

	rht__bucket_lock(bucket);
	while ((he = rht__bucket_first(bucket))) {
		struct rhash_head *prev = NULL, *next, *first;
		_Atomic uintptr_t *dst;

		while ((next = rht__next(he))) {
			prev = he;
			he = next;
		}
		dst = rht__bucket(new_tbl,
				  rht__obj_hash(ht, new_tbl, he, ht->p));
		rht__bucket_lock(dst);
		first = rht__bucket_first(dst);
		/* Link into the new chain first (release publishes the next
		 * pointer to readers standing on he), then unlink. */
		rht__set_next(he, first);
		rht__bucket_set_first(dst, first, he);
		rht__bucket_unlock(dst);
		if (prev)
			rht__set_next(prev, NULL);
		else
			rht__bucket_set_first(bucket, he, NULL);
	}
	rht__bucket_unlock(bucket);
}

/*
 * Moves everything from ht->tbl into a new table of new_size buckets (with
 * a new secret when reseed). Returns 1 when done, -ENOMEM (a re-seed then
 * stays requested, for an interval later), or -EINTR when destroy stopped
 * it (the entries are then split between the two tables, each in exactly
 * one, which destroy handles).
 */
static int rehash_table(struct rhashtable *ht, unsigned int new_size,
			bool reseed)
{
	struct rhashtable__ctl *ctl = ht->ctl;
	struct bucket_table *old =
		atomic_load_explicit(&ht->tbl, memory_order_relaxed);
	struct bucket_table *new_tbl;
	struct siphash_key secret = old->secret;

	if (reseed)
		random_secret(&secret);
	new_tbl = table_alloc(new_size, &secret, old->generation + reseed);
	if (!new_tbl) {
		atomic_fetch_add_explicit(&ctl->alloc_failures, 1,
					  memory_order_relaxed);
		if (reseed) {
			/* Ask again: worker_wait comes back for it once the
			 * re-seed interval, counted from now, has passed. */
			ctl->last_reseed_ns = now_ns();
			atomic_store_explicit(&ctl->reseed_requested, 1,
					      memory_order_relaxed);
		}
		return -ENOMEM;
	}
	populate(new_tbl);
	pthread_mutex_lock(&ctl->lock);
	/* release: the new table's contents before its address. */
	atomic_store_explicit(&old->future_tbl, new_tbl, memory_order_release);
	pthread_mutex_unlock(&ctl->lock);

	for (unsigned int i = 0; i < old->size; i++) {
		if (atomic_load_explicit(&ctl->stop, memory_order_relaxed))
			return -EINTR;
		rehash_bucket(ht, old, new_tbl, i);
		/* release: pairs with the acquire in rht__bucket_moved() (and
		 * walk_stop's): the moves before the count that says so. Once
		 * a stride, so that readers' copies of the line stay valid. */
		if ((i + 1) % RHT_MOVED_STRIDE == 0 || i + 1 == old->size)
			atomic_store_explicit(&old->moved, i + 1,
					      memory_order_release);
	}

	pthread_mutex_lock(&ctl->lock);
	/* release: pairs with rht__first_table(). */
	atomic_store_explicit(&ht->tbl, new_tbl, memory_order_release);
	rht__walkers_table_gone(old);
	pthread_mutex_unlock(&ctl->lock);

	if (reseed) {
		ctl->last_reseed_ns = now_ns();
		atomic_fetch_add_explicit(&ctl->reseeds, 1,
					  memory_order_relaxed);
	}
	if (new_size != old->size)
		atomic_fetch_add_explicit(new_size > old->size ? &ctl->grows
							       : &ctl->shrinks,
					  1, memory_order_relaxed);
	/* Readers may still be in old (or about to follow its future_tbl). */
	rhkv_rcu_synchronize();
	table_free(old);
	return 1;
}

static unsigned int roundup_pow2(unsigned long n)
{
	unsigned int size = RHT_MIN_SIZE;

	while (size < n && size < RHT_MAX_SIZE)
		size <<= 1;
	return size;
}

/* Decides and runs one resize. Returns 1 if it did one, else 0 or < 0. */
static int resize_step(struct rhashtable *ht)
{
	struct rhashtable__ctl *ctl = ht->ctl;
	struct bucket_table *tbl =
		atomic_load_explicit(&ht->tbl, memory_order_relaxed);
	unsigned long n = rhashtable_nelems(ht);
	unsigned int size = tbl->size;
	bool reseed = false;
	int ret;

	if (above_75(ht, n, tbl)) {
		/* At most 4x per step, which bounds a cursor scan's step. */
		while (n > grow_at(ht, size) && size < ht->p.max_size &&
		       size < tbl->size * 4)
			size <<= 1;
	} else if (below_30(ht, n, tbl)) {
		size = roundup_pow2(n * 3 / 2);
		if (size < tbl->size / 4)
			size = tbl->size / 4;
		if (size < ht->p.min_size)
			size = ht->p.min_size;
	}
	/* A flood request within the interval stays pending: the worker
	 * comes back for it when the interval has passed. */
	if (atomic_load_explicit(&ctl->reseed_requested,
				 memory_order_relaxed) &&
	    now_ns() - ctl->last_reseed_ns >= RHT_RESEED_INTERVAL_NS)
		reseed = true;
	if (atomic_exchange_explicit(&ctl->force_reseed, 0,
				     memory_order_relaxed))
		reseed = true;
	/* Whatever asked for it, this re-seed answers a pending request;
	 * rehash_table() requests it again if it cannot allocate. */
	if (reseed)
		atomic_store_explicit(&ctl->reseed_requested, 0,
				      memory_order_relaxed);
	if (size == tbl->size && !reseed)
		return 0;
	atomic_store_explicit(&ctl->busy, true, memory_order_relaxed);
	ret = rehash_table(ht, size, reseed);
	/* release: pairs with rht__resize_busy(); the old table is gone. */
	atomic_store_explicit(&ctl->busy, false, memory_order_release);
	return ret;
}

/* Waits for a kick, or for a pending re-seed's interval to pass. */
static void worker_wait(struct rhashtable__ctl *ctl)
{
	struct timespec until;
	int64_t at;

	if (!atomic_load_explicit(&ctl->reseed_requested,
				  memory_order_relaxed)) {
		pthread_cond_wait(&ctl->cond, &ctl->lock);
		return;
	}
	at = ctl->last_reseed_ns + RHT_RESEED_INTERVAL_NS;
	if (at <= now_ns()) {
		atomic_store_explicit(&ctl->run_pending, 1,
				      memory_order_relaxed);
		return;
	}
	until.tv_sec = at / 1000000000LL;
	until.tv_nsec = at % 1000000000LL;
	if (pthread_cond_timedwait(&ctl->cond, &ctl->lock, &until))
		atomic_store_explicit(&ctl->run_pending, 1,
				      memory_order_relaxed);
}

static void *worker_main(void *arg)
{
	struct rhashtable *ht = arg;
	struct rhashtable__ctl *ctl = ht->ctl;

	pthread_mutex_lock(&ctl->lock);
	for (;;) {
		while (!atomic_load_explicit(&ctl->stop,
					     memory_order_relaxed) &&
		       !atomic_load_explicit(&ctl->run_pending,
					     memory_order_relaxed))
			worker_wait(ctl);
		if (atomic_load_explicit(&ctl->stop, memory_order_relaxed))
			break;
		atomic_store_explicit(&ctl->run_pending, 0,
				      memory_order_relaxed);
		pthread_mutex_unlock(&ctl->lock);
		while (resize_step(ht) > 0)
			;
		pthread_mutex_lock(&ctl->lock);
	}
	pthread_mutex_unlock(&ctl->lock);
	return NULL;
}

/* ---- set-up and tear-down ---- */

static bool overlaps(unsigned int a, unsigned int alen, unsigned int b,
		     unsigned int blen)
{
	return a < b + blen && b < a + alen;
}

static int check_params(const struct rhashtable_params *p, bool rhlist)
{
	size_t head_size =
		rhlist ? sizeof(struct rhlist_head) : sizeof(struct rhash_head);

	if (!p->key_len && !p->obj_hashfn)
		return -EINVAL; /* nothing to hash an object with */
	if (p->obj_hashfn && !p->obj_cmpfn)
		return -EINVAL; /* the default compare needs key_len */
	if (!p->key_len && !p->hashfn)
		return -EINVAL; /* no way to hash a lookup key */
	if (p->head_offset % _Alignof(struct rhash_head))
		return -EINVAL;
	if (p->head_offset > UINT16_MAX - head_size)
		return -EINVAL;
	if (p->key_len && !p->obj_hashfn &&
	    overlaps(p->key_offset, p->key_len, p->head_offset,
		     (unsigned int)head_size))
		return -EINVAL; /* linking would overwrite the key */
	if (p->max_size && p->min_size > p->max_size)
		return -EINVAL;
	if (p->grow_above_pct > 400)
		return -EINVAL; /* chains would be long before any growth */
	return 0;
}

static unsigned int rounddown_pow2(unsigned int n)
{
	unsigned int size = RHT_MAX_SIZE;

	while (size > n)
		size >>= 1;
	return size;
}

static int table_init(struct rhashtable *ht,
		      const struct rhashtable_params *params, bool rhlist)
{
	struct rhashtable__ctl *ctl;
	struct bucket_table *tbl;
	struct siphash_key secret;
	pthread_condattr_t attr;
	unsigned int size;
	int err = check_params(params, rhlist);

	if (err)
		return err;
	memset(ht, 0, sizeof(*ht));
	ht->p = *params;
	ht->rhlist = rhlist;
	ht->key_len = params->key_len;
	if (ht->p.min_size < RHT_MIN_SIZE)
		ht->p.min_size = RHT_MIN_SIZE;
	ht->p.min_size = roundup_pow2(ht->p.min_size);
	if (!ht->p.grow_above_pct)
		ht->p.grow_above_pct = 75;
	ht->p.max_size = params->max_size ? rounddown_pow2(params->max_size)
					  : RHT_MAX_SIZE;
	if (ht->p.max_size < ht->p.min_size)
		ht->p.max_size = ht->p.min_size;
	/* Cap entries at twice the largest table, as the kernel does, and
	 * at 2^31 so the count cannot overflow. */
	if (params->max_size)
		ht->max_elems = ht->p.max_size < (1u << 30) ? ht->p.max_size * 2
							    : 1u << 31;

	size = RHT_DEFAULT_SIZE;
	if (params->nelem_hint)
		size = roundup_pow2((unsigned long)params->nelem_hint * 4 / 3);
	if (size < ht->p.min_size)
		size = ht->p.min_size;
	if (size > ht->p.max_size)
		size = ht->p.max_size;

	ctl = aligned_alloc(_Alignof(struct rhashtable__ctl), sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	memset(ctl, 0, sizeof(*ctl));
	random_secret(&secret);
	tbl = table_alloc(size, &secret, 0);
	if (!tbl)
		goto no_table;
	atomic_init(&ht->tbl, tbl);
	ht->ctl = ctl;
	pthread_mutex_init(&ctl->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* as now_ns() */
	pthread_cond_init(&ctl->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&ctl->worker, NULL, worker_main, ht))
		goto no_thread;
	return 0;

no_thread:
	pthread_cond_destroy(&ctl->cond);
	pthread_mutex_destroy(&ctl->lock);
	table_free(tbl);
no_table:
	free(ctl);
	ht->ctl = NULL;
	return -ENOMEM;
}

int rhashtable_init(struct rhashtable *ht,
		    const struct rhashtable_params *params)
{
	return table_init(ht, params, false);
}

int rhltable_init(struct rhltable *hlt, const struct rhashtable_params *params)
{
	return table_init(&hlt->ht, params, true);
}

static void free_chain(struct rhashtable *ht, struct rhash_head *he,
		       void (*free_fn)(void *ptr, void *arg), void *arg)
{
	while (he) {
		struct rhash_head *next = rht__next(he);
		struct rhlist_head *list = (struct rhlist_head *)he;

		if (!ht->rhlist) {
			free_fn(rht_obj(he, ht->p), arg);
		} else {
			while (list) {
				struct rhlist_head *lnext = rhl__next(list);

				free_fn(rht_obj(&list->rhead, ht->p), arg);
				list = lnext;
			}
		}
		he = next;
	}
}

void rhashtable_stop_worker(struct rhashtable *ht)
{
	struct rhashtable__ctl *ctl = ht->ctl;

	if (ctl->joined)
		return;
	pthread_mutex_lock(&ctl->lock);
	atomic_store_explicit(&ctl->stop, true, memory_order_relaxed);
	pthread_cond_signal(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
	pthread_join(ctl->worker, NULL);
	ctl->joined = true;
}

void rhashtable_free_and_destroy(struct rhashtable *ht,
				 void (*free_fn)(void *ptr, void *arg),
				 void *arg)
{
	struct rhashtable__ctl *ctl = ht->ctl;
	struct bucket_table *tbl;

	rhashtable_stop_worker(ht);

	tbl = atomic_load_explicit(&ht->tbl, memory_order_relaxed);
	while (tbl) {
		struct bucket_table *next = rht__future(tbl);

		for (unsigned int i = 0; free_fn && i < tbl->size; i++)
			free_chain(ht, rht__bucket_first(&tbl->buckets[i]),
				   free_fn, arg);
		table_free(tbl);
		tbl = next;
	}
	pthread_cond_destroy(&ctl->cond);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl);
	ht->ctl = NULL;
}

void rhashtable_destroy(struct rhashtable *ht)
{
	rhashtable_free_and_destroy(ht, NULL, NULL);
}

/* ---- introspection ---- */

static struct bucket_table *newest_table(struct rhashtable *ht)
{
	struct bucket_table *tbl = rht__first_table(ht), *next;

	while ((next = rht__future(tbl)))
		tbl = next;
	return tbl;
}

unsigned int rhashtable_size(struct rhashtable *ht)
{
	unsigned int size;

	rhkv_rcu_read_lock();
	size = newest_table(ht)->size;
	rhkv_rcu_read_unlock();
	return size;
}

size_t rhashtable_bucket_bytes(struct rhashtable *ht)
{
	size_t bytes = 0;

	rhkv_rcu_read_lock();
	for (struct bucket_table *t = rht__first_table(ht); t;
	     t = rht__future(t))
		bytes += sizeof(*t) + (size_t)t->size * sizeof(t->buckets[0]);
	rhkv_rcu_read_unlock();
	return bytes;
}

uint32_t rhashtable_generation(struct rhashtable *ht)
{
	uint32_t gen;

	rhkv_rcu_read_lock();
	gen = rht__first_table(ht)->generation;
	rhkv_rcu_read_unlock();
	return gen;
}

void rhashtable_get_stats(struct rhashtable *ht, struct rhashtable_stats *st)
{
	struct rhashtable__ctl *ctl = ht->ctl;

	st->nelems = rhashtable_nelems(ht);
	st->size = rhashtable_size(ht);
	st->generation = rhashtable_generation(ht);
	st->resizing = rht__resizing(ht);
	st->grows = atomic_load_explicit(&ctl->grows, memory_order_relaxed);
	st->shrinks = atomic_load_explicit(&ctl->shrinks, memory_order_relaxed);
	st->reseeds = atomic_load_explicit(&ctl->reseeds, memory_order_relaxed);
	st->alloc_failures = atomic_load_explicit(&ctl->alloc_failures,
						  memory_order_relaxed);
}

bool rht__resizing(struct rhashtable *ht)
{
	bool resizing;

	rhkv_rcu_read_lock();
	resizing = rht__future(rht__first_table(ht)) != NULL;
	rhkv_rcu_read_unlock();
	return resizing;
}

bool rht__resize_busy(struct rhashtable *ht)
{
	return atomic_load_explicit(&ht->ctl->busy, memory_order_acquire) ||
	       rht__resizing(ht);
}

void rht__set_secret(struct rhashtable *ht, const struct siphash_key *key)
{
	set_secret(atomic_load_explicit(&ht->tbl, memory_order_relaxed), key);
}

unsigned int rhashtable_longest_chain(struct rhashtable *ht)
{
	return rht__max_chain(ht);
}

/*
 * Walks at most RHT_CHAIN_SLICE buckets of table number *k of the chain
 * (0: ht->tbl) from bucket *pos, raising *longest, and moves *k and *pos on
 * (to the next table at the end of this one). Returns false when there is
 * no table *k. Needs the RCU read lock.
 */
static bool chain_slice(struct rhashtable *ht, unsigned int *k,
			unsigned int *pos, unsigned int *longest)
{
	struct bucket_table *tbl = rht__first_table(ht);
	unsigned int end;

	for (unsigned int i = 0; tbl && i < *k; i++)
		tbl = rht__future(tbl);
	if (!tbl)
		return false;
	end = *pos < tbl->size && tbl->size - *pos > RHT_CHAIN_SLICE
		      ? *pos + RHT_CHAIN_SLICE
		      : tbl->size;
	for (; *pos < end; ++*pos) {
		unsigned int len = 0;

		for (struct rhash_head *he =
			     rht__bucket_first(&tbl->buckets[*pos]);
		     he; he = rht__next(he))
			len++;
		if (len > *longest)
			*longest = len;
	}
	if (*pos >= tbl->size) {
		++*k;
		*pos = 0;
	}
	return true;
}

/*
 * One read-side section per slice, so that a walk of a large table never
 * holds up a grace period for longer than one slice takes. Between slices
 * the chain of tables may change (a resize starts or ends): the walk then
 * goes on by position in whatever table is the k-th now, which is why the
 * result is exact only when no resize runs meanwhile.
 */
unsigned int rht__max_chain(struct rhashtable *ht)
{
	unsigned int longest = 0, k = 0, pos = 0;
	bool more;

	do {
		rhkv_rcu_read_lock();
		more = chain_slice(ht, &k, &pos, &longest);
		rhkv_rcu_read_unlock();
	} while (more);
	return longest;
}
