/*
 * The cache's life and its reads: create and destroy, time and exptime,
 * find (and reap what it finds dead), touch, scan and stats. Writes are in
 * cache_store.c, memory and reclamation in cache_memory.c, eviction in
 * cache_evict.c, expiry and flush_all in cache_maint.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "cache_internal.h"
#include "common/clock.h"

struct siphash_key cache__hash_key;

static pthread_once_t hash_key_once = PTHREAD_ONCE_INIT;

static void hash_key_init(void)
{
	if (getrandom(&cache__hash_key, sizeof(cache__hash_key), 0) !=
	    sizeof(cache__hash_key))
		cache__hash_key.k0 = (uint64_t)cache__now_ns();
}

int64_t cache__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cache_now(void)
{
	return clock_now_s();
}

int64_t cache_abs_exptime(int64_t exptime)
{
	return cache_abs_exptime_at(exptime, cache_now());
}

int64_t cache_abs_exptime_at(int64_t exptime, int64_t now)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return -1;
	if (exptime <= REL_TIME_MAX)
		return now + exptime;
	return exptime;
}

uint32_t cache__exptime_u32(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;
	if (exptime > UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)exptime;
}

/* ---- life ---- */

int cache__table_init(struct cache *c, unsigned long items)
{
	struct rhashtable_params p = cache__params;

	/* Items to come at once (a restore): buckets for them from the start,
	 * so that inserting them does not wait for growth behind. */
	if (items > p.nelem_hint)
		p.nelem_hint = items < UINT32_MAX / 2 ? (unsigned int)items
						      : UINT32_MAX / 2;
	return rhashtable_init(&c->ht, &p);
}

/* A cache whose arena is anonymous memory (fc NULL) or fc's file. */
static struct cache *create(unsigned int threads, uint64_t limit,
			    const struct cache_file_config *fc, char *err,
			    size_t errlen, bool *refused)
{
	struct cache *c = calloc(1, sizeof(*c));
	bool restorable = false;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_once(&hash_key_once, hash_key_init);
	c->threads = threads;
	atomic_init(&c->limit, limit);
	c->cas_seq = aligned_alloc(64, sizeof(*c->cas_seq) * threads);
	c->flush_snap = calloc(threads, sizeof(*c->flush_snap));
	c->age_seq = calloc((size_t)AGE_MARKS * threads, sizeof(*c->age_seq));
	pthread_mutex_init(&c->age_lock, NULL);
	pthread_mutex_init(&c->flush_lock, NULL);
	pthread_mutex_init(&c->maint_lock, NULL);
	pthread_cond_init(&c->maint_cond, NULL);
	if (!c->cas_seq || !c->flush_snap || !c->age_seq ||
	    cache__prefix_init(c) ||
	    cache__memory_init(c, fc, err, errlen, refused, &restorable) ||
	    (restorable ? cache__file_restore(c) : cache__table_init(c, 0))) {
		if (!err[0])
			snprintf(err, errlen, "out of memory");
		cache__memory_destroy(c);
		cache__prefix_destroy(c);
		free(c->cas_seq);
		free(c->flush_snap);
		free(c->age_seq);
		free(c);
		return NULL;
	}
	if (!restorable)
		for (unsigned int t = 0; t < threads; t++)
			atomic_init(&c->cas_seq[t].v, 0);
	cache__age_mark(c, cache_now());
	if (cache__maint_start(c)) {
		snprintf(err, errlen, "cannot start the maintenance thread");
		cache_destroy(c);
		return NULL;
	}
	return c;
}

struct cache *cache_create(unsigned int threads, uint64_t limit)
{
	char err[200] = "";
	bool refused;

	return create(threads, limit, NULL, err, sizeof(err), &refused);
}

struct cache *cache_create_file(unsigned int threads, uint64_t limit,
				const struct cache_file_config *fc, char *err,
				size_t errlen, bool *refused)
{
	err[0] = '\0';
	*refused = false;
	return create(threads, limit, fc, err, errlen, refused);
}

void cache_destroy(struct cache *c)
{
	cache_seal(c);
	/* Items die with their segments and large units (the log). */
	rhashtable_destroy(&c->ht);
	cache__memory_destroy(c);
	cache__prefix_destroy(c);
	pthread_mutex_destroy(&c->flush_lock);
	pthread_mutex_destroy(&c->maint_lock);
	pthread_cond_destroy(&c->maint_cond);
	pthread_mutex_destroy(&c->age_lock);
	free(c->age_seq);
	free(c->cas_seq);
	free(c->flush_snap);
	free(c);
}

int cache_seal(struct cache *c)
{
	cache__maint_stop(c);
	cache__reclaim(c); /* retired units pooled or freed */
	if (!c->file || c->sealed)
		return 0;
	/* A resize moving items between tables rewrites their chain
	 * pointers, which lie in the segments being checksummed: a segment
	 * changed after its checksum would be dropped at the next start. */
	rhashtable_stop_worker(&c->ht);
	if (cache__file_seal(c)) {
		cache__file_close(c); /* unsealed: the next start is empty */
		return -1;
	}
	c->sealed = true;
	return 0;
}

uint64_t cache_set_limit(struct cache *c, uint64_t limit)
{
	/* Room checks compare against the limit: one the arena cannot back
	 * would let segments run out with nothing evicted, and every write
	 * would fail from then on. */
	if (limit > c->limit_max)
		limit = c->limit_max;
	atomic_store_explicit(&c->limit, limit, memory_order_relaxed);
	cache__maint_wake(c);
	return limit;
}

uint64_t cache_limit_max(const struct cache *c)
{
	return c->limit_max;
}

/* ---- reads ---- */

void cache_prefetch(struct cache *c, struct cache_key key)
{
	rhkv_rcu_read_lock();
	rhashtable_prefetch(&c->ht, &key, cache__params);
	rhkv_rcu_read_unlock();
}

void cache_prefetch_item(struct cache *c, struct cache_key key)
{
	rhkv_rcu_read_lock();
	rhashtable_prefetch_entry(&c->ht, &key, cache__params);
	rhkv_rcu_read_unlock();
}

/* A visit at now (unix seconds): cache_find has read the clock already. */
static void visit_at(struct item *it, int64_t now)
{
	uint8_t usage = atomic_load_explicit(&it->usage, memory_order_relaxed);

	/* Each store only when it changes something: a hot item's line
	 * stays shared (the time moves once a second at most). */
	if (!(usage & ITEM_VISITED))
		atomic_fetch_or_explicit(&it->usage,
					 ITEM_VISITED | ITEM_FETCHED,
					 memory_order_relaxed);
	/* As in memcached, the first fetch only marks the item fetched: its
	 * last access stays at the store until a later fetch. */
	if ((usage & ITEM_FETCHED) &&
	    atomic_load_explicit(&it->atime, memory_order_relaxed) !=
		    (uint32_t)now)
		atomic_store_explicit(&it->atime, (uint32_t)now,
				      memory_order_relaxed);
}

void cache_item_visit(struct item *it)
{
	visit_at(it, cache_now());
}

bool cache_item_win(struct item *it)
{
	if (atomic_load_explicit(&it->usage, memory_order_relaxed) & ITEM_WON)
		return false;
	return !(atomic_fetch_or_explicit(&it->usage, ITEM_WON,
					  memory_order_relaxed) &
		 ITEM_WON);
}

/* key's live item at now, or NULL (*expired: a dead one was found). */
static struct item *lookup_at(struct cache *c, struct cache_key key,
			      bool *expired, int64_t now)
{
	struct item *it = rhashtable_lookup(&c->ht, &key, cache__params);

	if (expired)
		*expired = false;
	if (it && !cache_item_live(c, it, now)) {
		if (expired)
			*expired = true;
		return NULL;
	}
	return it;
}

struct item *cache_lookup(struct cache *c, struct cache_key key, bool *expired)
{
	return lookup_at(c, key, expired, cache_now());
}

struct item *cache_lookup_any(struct cache *c, struct cache_key key)
{
	return rhashtable_lookup(&c->ht, &key, cache__params);
}

bool cache_exists(struct cache *c, struct cache_key key)
{
	bool found;

	rhkv_rcu_read_lock();
	found = cache_lookup(c, key, NULL) != NULL;
	rhkv_rcu_read_unlock();
	return found;
}

struct item *cache_find(struct cache *c, struct cache_key key, bool *expired)
{
	int64_t now = cache_now(); /* one clock read for both */
	struct item *it = lookup_at(c, key, expired, now);

	if (it)
		visit_at(it, now);
	return it;
}

bool cache_reap(struct cache *c, struct cache_key key)
{
	bool flushed = false;
	enum item_fate fate;
	struct item *it;

	rhkv_rcu_read_lock();
	it = rhashtable_lookup(&c->ht, &key, cache__params);
	fate = it ? cache__item_fate(c, it, cache_now()) : ITEM_ALIVE;
	if (fate != ITEM_ALIVE) {
		flushed = cache_item_flushed(c, it);
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache__params)) {
			cache__count(&c->reclaimed);
			if (fate == ITEM_PREFIX_FLUSHED)
				cache__count(&c->prefix_reclaimed);
			if (!(item__usage(it) & ITEM_FETCHED))
				cache__count(&c->expired_unfetched);
			cache__item_unlinked(c, it);
		}
	}
	rhkv_rcu_read_unlock();
	return flushed;
}

void cache_item_set_exptime(struct cache *c, struct item *it, int64_t exptime)
{
	uint32_t e = cache__exptime_u32(exptime);

	atomic_store_explicit(&it->exptime, e, memory_order_relaxed);
	if (e)
		atomic_store_explicit(&c->sweep_wanted, true,
				      memory_order_relaxed);
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

/* ---- stats ---- */

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
	st->limit = cache__limit(c);
	st->bytes = nonneg(cache__load64(&c->live));
	st->item_data = nonneg(cache__load64(&c->item_data));
	st->accounted = nonneg(cache__load64(&c->mem));
	st->retired_bytes = nonneg(cache__load64(&c->retired));
	st->segment_size = c->seg_size;
	st->segment_live =
		nonneg(cache__load64(&c->live) - cache__load64(&c->large_live));
	st->segments = load_ul(&c->seg_resident);
	st->segments_free = load_ul(&c->pooled);
	st->large_bytes = nonneg(cache__load64(&c->large));
	st->large_pages = nonneg(cache__load64(&c->large_pages));
	st->carried = load_ul(&c->carried);
	st->passed_over = load_ul(&c->segs_requeued);
	st->segments_freed_empty = load_ul(&c->segs_freed_dead);
	st->hash_bytes = rhashtable_bucket_bytes(&c->ht);
	st->evictions = load_ul(&c->evictions);
	st->evicted_unfetched = load_ul(&c->evicted_unfetched);
	st->evicted_active = load_ul(&c->evicted_active);
	st->expired_unfetched = load_ul(&c->expired_unfetched);
	st->reclaimed = load_ul(&c->reclaimed);
	st->sweep_passes = load_ul(&c->sweep_passes);
	st->reclaim_waits = load_ul(&c->reclaim_waits);
	st->evicted_nonzero = load_ul(&c->evicted_nonzero);
	st->malloc_fails = load_ul(&c->malloc_fails);
	st->sweep_checked = load_ul(&c->sweep_checked);
	st->sweep_reclaimed = load_ul(&c->sweep_reclaimed);
	pthread_mutex_lock(&c->tomb_lock);
	st->prefix_tombstones = c->tomb_n;
	pthread_mutex_unlock(&c->tomb_lock);
	st->prefix_flushes = load_ul(&c->prefix_flushes);
	st->prefix_refused = load_ul(&c->prefix_refused);
	st->prefix_retired = load_ul(&c->prefix_retired);
	st->prefix_reclaimed = load_ul(&c->prefix_reclaimed);
	st->longest_chain = chain ? rhashtable_longest_chain(&c->ht) : 0;
}
