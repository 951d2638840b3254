/*
 * The cache's memory: the arena of segments items are packed into, large
 * items in allocations of their own, the accounting admission reads, and
 * the retiring of units after a grace period. The design and its
 * concurrency contract are in cache.h (MEMORY).
 */
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cache_internal.h"

/* glibc keeps each chunk's size in the 8 bytes before it; an allocator
 * without per-chunk headers (jemalloc, mimalloc) builds with 0. */
#ifndef RHKV_MALLOC_CHUNK_HEADER
#define RHKV_MALLOC_CHUNK_HEADER sizeof(size_t)
#endif

#define CACHE_PAGE     4096u	  /* large_pages' unit */
#define SEG_MAX	       (1u << 20) /* segment size for limits of 128 MiB up */
#define SEG_MIN	       (16u << 10)
#define SEGS_PER_LIMIT 128   /* smaller limits: smaller segments */
#define ARENA_SEGS_MIN 65536 /* room to raise the limit at run time */

static size_t seg_size_for(uint64_t limit)
{
	size_t s = SEG_MAX;

	while (s > SEG_MIN && (uint64_t)s * SEGS_PER_LIMIT > limit)
		s /= 2;
	return s;
}

int cache__memory_init(struct cache *c, const struct cache_file_config *fc,
		       char *err, size_t cap, bool *refused, bool *restorable)
{
	uint64_t limit = cache__limit(c);

	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_mutex_init(&c->reclaim_lock, NULL);
	pthread_mutex_init(&c->evict_lock, NULL);
	pthread_mutex_init(&c->log_lock, NULL);
	c->seg_size = seg_size_for(limit);
	c->nsegs = (size_t)(limit / c->seg_size) + 1;
	*restorable = false;
	if (fc) {
		/* A file holds the limit's segments and no more: raising
		 * the limit at run time finds no segment beyond them. */
		if (cache__file_open(c, fc, err, cap, refused, restorable))
			return -1;
		c->limit_max = limit;
	} else {
		if (c->nsegs < ARENA_SEGS_MIN)
			c->nsegs = ARENA_SEGS_MIN;
		c->arena_bytes = c->nsegs * c->seg_size;
		c->limit_max = c->arena_bytes & ~(uint64_t)((1u << 20) - 1);
		/* Address space only: a page costs memory once written. */
		c->arena = mmap(NULL, c->arena_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
				0);
		if (c->arena == MAP_FAILED) {
			c->arena = NULL;
			return -1;
		}
	}
	c->segs = calloc(c->nsegs, sizeof(*c->segs));
	c->writers = aligned_alloc(64, sizeof(*c->writers) * (c->threads + 1));
	if (!c->segs || !c->writers)
		return -1;
	for (unsigned int t = 0; t <= c->threads; t++)
		atomic_init(&c->writers[t].open, NULL);
	/* A record is filled when its segment is first used: the array's
	 * pages stay untouched (and cost nothing) until then. */
	return 0;
}

static void large_free(struct large_item *l)
{
	free(l);
}

void cache__memory_destroy(struct cache *c)
{
	/* Every large item still linked is a unit of a log (retired ones
	 * were freed by the last reclaim); segment items go with the
	 * arena. */
	for (int l = 0; l < 2; l++)
		for (struct seg *u = c->logs[l].head, *next; u; u = next) {
			next = u->older;
			if (u->large)
				large_free((struct large_item *)u);
		}
	if (c->file)
		cache__file_close(c);
	else if (c->arena)
		munmap(c->arena, c->arena_bytes);
	free(c->segs);
	free(c->writers);
	pthread_mutex_destroy(&c->pool_lock);
	pthread_mutex_destroy(&c->reclaim_lock);
	pthread_mutex_destroy(&c->evict_lock);
	pthread_mutex_destroy(&c->log_lock);
}

/* ---- references (large items only) ---- */

void item_get(struct item *it)
{
	if (!cache__item_is_large(it))
		abort(); /* segment items are copied, never referenced */
	atomic_fetch_add_explicit(&cache__large_of(it)->refs, 1,
				  memory_order_relaxed);
}

void item_put(struct item *it)
{
	struct large_item *l = cache__large_of(it);

	/* acq_rel: the last holder sees every other holder's reads done. */
	if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) == 1)
		large_free(l);
}

/* ---- admission ---- */

int64_t cache__item_budget(struct cache *c)
{
	int64_t limit = (int64_t)cache__limit(c);

	return limit - (int64_t)rhashtable_bucket_bytes(&c->ht);
}

bool cache__over_budget(struct cache *c)
{
	return cache__load64(&c->mem) > cache__item_budget(c);
}

/*
 * Reserves n bytes if they fit within the budget less slack. Writers keep
 * a segment's worth of slack: the evictor's carry segment (slack 0) needs
 * room when nothing is free yet, else eviction from a full cache could
 * carry nothing forward.
 */
static bool mem_reserve(struct cache *c, int64_t n, int64_t slack)
{
	int64_t budget = cache__item_budget(c) - slack;
	int64_t cur = cache__load64(&c->mem);

	do {
		if (cur + n > budget)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&c->mem, &cur, cur + n,
							memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/* ---- segments ---- */

/* A free segment: from the pool (already counted), else a new one if
 * its bytes fit the limit. NULL: no room. Over the budget (a lowered
 * limit) a writer takes no pooled segment: the pool is trimmed instead
 * (cache__make_room); the evictor's carry still may, since carrying is
 * what frees the rest of a segment. */
static struct seg *seg_take(struct cache *c, bool carry)
{
	struct seg *s = NULL;
	bool pool_ok = carry || !cache__over_budget(c);

	pthread_mutex_lock(&c->pool_lock);
	if (carry && c->carry_spare) {
		s = c->carry_spare;
		c->carry_spare = NULL;
	} else if (c->pool && pool_ok) {
		s = c->pool;
		c->pool = s->next_free;
		if (atomic_fetch_sub_explicit(
			    &c->pooled, 1, memory_order_relaxed) <= c->pool_low)
			c->pool_low = atomic_load_explicit(
				&c->pooled, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (s)
		return s;
	if (!mem_reserve(c, (int64_t)c->seg_size,
			 carry ? 0 : (int64_t)c->seg_size))
		return NULL;
	pthread_mutex_lock(&c->pool_lock);
	if (c->released) {
		s = c->released;
		c->released = s->next_free;
	} else if (c->fresh < c->nsegs) {
		s = &c->segs[c->fresh];
		s->base = c->arena + c->fresh * c->seg_size;
		s->c = c;
		c->fresh++;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (!s) { /* the arena is used up: a limit raised past it */
		cache__add64(&c->mem, -(int64_t)c->seg_size);
		return NULL;
	}
	atomic_fetch_add_explicit(&c->seg_resident, 1, memory_order_relaxed);
	return s;
}

static void seg_open(struct seg *s)
{
	s->used = 0;
	s->state = SEG_OPEN;
	s->large = false;
	s->unlinked = false;
	atomic_store_explicit(&s->published, 0, memory_order_relaxed);
	s->newer = s->older = NULL;
	atomic_store_explicit(&s->live, 0, memory_order_relaxed);
}

/* A free segment refills the evictor's spare first, so that carrying
 * forward never waits behind writers for one; then the pool. */
static void pool_put(struct cache *c, struct seg *s)
{
	s->state = SEG_FREE;
	pthread_mutex_lock(&c->pool_lock);
	if (!c->carry_spare) {
		c->carry_spare = s;
	} else {
		s->next_free = c->pool;
		c->pool = s;
		atomic_fetch_add_explicit(&c->pooled, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->pool_lock);
}

unsigned long cache__pool_trim(struct cache *c, unsigned long keep)
{
	unsigned long n = 0;

	for (;;) {
		struct seg *s = NULL;

		pthread_mutex_lock(&c->pool_lock);
		if (atomic_load_explicit(&c->pooled, memory_order_relaxed) >
			    keep &&
		    c->pool) {
			s = c->pool;
			c->pool = s->next_free;
			atomic_fetch_sub_explicit(&c->pooled, 1,
						  memory_order_relaxed);
		}
		pthread_mutex_unlock(&c->pool_lock);
		if (!s)
			return n;
		/* Its pages go back; the next use faults in zeroes. A
		 * file's pages are the file's: only punching a hole frees
		 * them. */
		madvise(s->base, c->seg_size,
			c->file ? MADV_REMOVE : MADV_DONTNEED);
		pthread_mutex_lock(&c->pool_lock);
		s->next_free = c->released;
		c->released = s;
		pthread_mutex_unlock(&c->pool_lock);
		atomic_fetch_sub_explicit(&c->seg_resident, 1,
					  memory_order_relaxed);
		cache__add64(&c->mem, -(int64_t)c->seg_size);
		n++;
	}
}

unsigned long cache__pool_trim_idle(struct cache *c, unsigned long keep)
{
	unsigned long low, now, n;

	pthread_mutex_lock(&c->pool_lock);
	low = c->pool_low;
	now = atomic_load_explicit(&c->pooled, memory_order_relaxed);
	pthread_mutex_unlock(&c->pool_lock);
	if (low > now) /* others trimmed meanwhile */
		low = now;
	n = cache__pool_trim(c, low > keep ? now - (low - keep) : now);
	pthread_mutex_lock(&c->pool_lock);
	c->pool_low = atomic_load_explicit(&c->pooled, memory_order_relaxed);
	pthread_mutex_unlock(&c->pool_lock);
	return n;
}

/* A large item's allocation into (sign 1) or out of (-1) the totals. */
static void large_count(struct cache *c, const struct large_item *l, int sign)
{
	int64_t pages = (int64_t)((l->footprint + CACHE_PAGE - 1) / CACHE_PAGE *
				  CACHE_PAGE);

	cache__add64(&c->large, sign * (int64_t)l->footprint);
	cache__add64(&c->large_pages, sign * pages);
}

/* A unit past its grace period: a segment is free, a large item's
 * allocation goes once no reply holds it. */
static void unit_reclaimed(struct cache *c, struct seg *s)
{
	if (s->large) {
		struct large_item *l = (struct large_item *)s;

		cache__add64(&c->retired, -(int64_t)l->footprint);
		large_count(c, l, -1);
		cache__add64(&c->mem, -(int64_t)l->footprint);
		item_put((struct item *)(l + 1));
	} else {
		cache__add64(&c->retired, -(int64_t)c->seg_size);
		pool_put(c, s);
	}
}

void cache__seg_retire(struct cache *c, struct seg *s)
{
	s->state = SEG_RETIRING;
	cache__add64(&c->retired,
		     s->large ? (int64_t)((struct large_item *)s)->footprint
			      : (int64_t)c->seg_size);
	pthread_mutex_lock(&c->pool_lock);
	s->next_free = c->retiring;
	c->retiring = s;
	pthread_mutex_unlock(&c->pool_lock);
}

/*
 * Every unit retired so far was unlinked before it was retired, so one
 * grace period that starts now covers every reader that could still see
 * one of its items: wait for it, then free or pool them all. Outside
 * read-side sections. Whether there was anything to reclaim. A reclaim
 * running in another thread is waited for (reclaim_lock), so that on
 * return what was retired before the call is free or being freed by
 * this call.
 */
bool cache__reclaim(struct cache *c)
{
	struct seg *list;

	pthread_mutex_lock(&c->reclaim_lock);
	pthread_mutex_lock(&c->pool_lock);
	list = c->retiring;
	c->retiring = NULL;
	pthread_mutex_unlock(&c->pool_lock);
	if (!list) {
		pthread_mutex_unlock(&c->reclaim_lock);
		return false;
	}
	cache__count(&c->reclaim_waits);
	rhkv_rcu_synchronize();
	while (list) {
		struct seg *next = list->next_free;

		unit_reclaimed(c, list);
		list = next;
	}
	pthread_mutex_unlock(&c->reclaim_lock);
	return true;
}

/* ---- items ---- */

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

char *cache__seg_alloc(struct cache *c, unsigned int thread, size_t n,
		       struct cache_room *need)
{
	struct seg_writer *w = &c->writers[thread];
	struct seg *s = atomic_load_explicit(&w->open, memory_order_relaxed);

	if (s && s->used + n <= c->seg_size) {
		char *p = s->base + s->used;

		s->used += (uint32_t)n;
		return p;
	}
	if (s) {
		atomic_store_explicit(&w->open, NULL, memory_order_relaxed);
		cache__seal(c, s, thread == c->threads ? LOG_KEPT : LOG_NEW);
	}
	s = seg_take(c, thread == c->threads);
	if (!s) {
		*need = (struct cache_room){ (int64_t)c->seg_size, true };
		return NULL;
	}
	seg_open(s);
	atomic_store_explicit(&w->open, s, memory_order_release);
	s->used = (uint32_t)n;
	return s->base;
}

struct item *cache__large_alloc(struct cache *c, size_t size, uint32_t nbytes,
				struct cache_room *need)
{
	struct large_item *l;
	size_t fp;

	l = malloc(sizeof(*l) + size);
	if (!l) {
		cache__count(&c->malloc_fails);
		*need = (struct cache_room){ 0, false };
		return NULL;
	}
	fp = malloc_usable_size(l) + RHKV_MALLOC_CHUNK_HEADER;
	if (!mem_reserve(c, (int64_t)fp, (int64_t)c->seg_size)) {
		free(l);
		*need = (struct cache_room){ (int64_t)fp, false };
		return NULL;
	}
	l->footprint = fp;
	large_count(c, l, 1);
	atomic_init(&l->refs, 1);
	l->nbytes = nbytes;
	l->seg.base = (char *)(l + 1);
	l->seg.c = c;
	l->seg.used = (uint32_t)(size < UINT32_MAX ? size : UINT32_MAX);
	l->seg.state = SEG_OPEN;
	l->seg.large = true;
	l->seg.unlinked = false;
	l->seg.newer = l->seg.older = NULL;
	atomic_init(&l->seg.live, 0);
	return (struct item *)(l + 1);
}

struct item *cache__item_alloc(struct cache *c, unsigned int thread,
			       struct cache_key key, uint32_t flags,
			       uint32_t exptime, uint32_t nbytes,
			       bool room_for_cas, struct cache_room *need)
{
	size_t size = ITEM_HEADER_BYTES + (flags ? 4 : 0) + key.n + nbytes +
		      (room_for_cas ? sizeof(uint64_t) : 0);
	bool large = !cache__item_in_segment(c, nbytes, size);
	struct item *it;
	uint8_t layout = flags ? ITEM_HAS_FLAGS : 0;

	*need = (struct cache_room){ 0, false };
	it = large ? cache__large_alloc(c, size, nbytes, need)
		   : (struct item *)cache__seg_alloc(c, thread, round8(size),
						     need);
	if (!it)
		return NULL;
	it->node.next = NULL;
	it->cas = 0;
	atomic_init(&it->exptime, exptime);
	atomic_init(&it->atime, (uint32_t)cache_now());
	atomic_init(&it->usage, layout);
	it->nbytes16 = large ? ITEM_NBYTES_LARGE : (uint16_t)nbytes;
	it->nkey = (uint8_t)key.n;
	if (flags)
		memcpy(it->data, &flags, sizeof(flags));
	memcpy((char *)item_key(it), key.p, key.n);
	return it;
}

void cache__item_choose_cas(struct item *it, uint64_t cas)
{
	atomic_store_explicit(&it->usage, item__usage(it) | ITEM_CAS_CHOSEN,
			      memory_order_relaxed);
	memcpy(cache__item_value_w(it) + item_nbytes(it), &cas, sizeof(cas));
}

void cache__item_set_marks(struct item *it, uint8_t marks)
{
	uint8_t u = item__usage(it);

	atomic_store_explicit(
		&it->usage,
		(uint8_t)((u & ITEM_LAYOUT_BITS) | (marks & ~ITEM_LAYOUT_BITS)),
		memory_order_relaxed);
}

void cache__item_discard(struct cache *c, unsigned int thread, struct item *it)
{
	struct seg *s = atomic_load_explicit(&c->writers[thread].open,
					     memory_order_relaxed);

	if (cache__item_is_large(it)) {
		struct large_item *l = cache__large_of(it);

		large_count(c, l, -1);
		cache__add64(&c->mem, -(int64_t)l->footprint);
		large_free(l);
		return;
	}
	/* The last item of its open segment: give its bytes back. Else
	 * they stay dead until the segment is evicted. */
	if (s && (char *)it + cache__seg_bytes(it) == s->base + s->used)
		s->used -= cache__seg_bytes(it);
}

/* The unit an item lives in. */
static struct seg *unit_of(struct cache *c, const struct item *it)
{
	if (cache__item_is_large(it))
		return &cache__large_of(it)->seg;
	return &c->segs[(size_t)((const char *)it - c->arena) / c->seg_size];
}

void cache__item_linked(struct cache *c, struct item *it)
{
	struct seg *u = unit_of(c, it);

	if (!u->large) /* its writer's: items are linked in order */
		atomic_store_explicit(&u->published,
				      (uint32_t)((char *)it - u->base) +
					      cache__seg_bytes(it),
				      memory_order_release);
	cache__add64(&u->live, (int64_t)cache__seg_bytes(it));
	cache__add64(&c->live, (int64_t)cache_item_footprint(it));
	cache__add64(&c->item_data, (int64_t)item_size(it));
	if (u->large) {
		cache__add64(&c->large_live, (int64_t)cache_item_footprint(it));
		/* Sealed into the log at once: a unit of its own. */
		cache__seal(c, u, LOG_NEW);
	}
}

void cache__item_unlinked(struct cache *c, struct item *it)
{
	struct seg *u = unit_of(c, it);

	cache__add64(&c->live, -(int64_t)cache_item_footprint(it));
	cache__add64(&c->item_data, -(int64_t)item_size(it));
	if (u->large) {
		cache__add64(&c->large_live,
			     -(int64_t)cache_item_footprint(it));
		cache__large_unlinked(c, u);
		return;
	}
	if (atomic_fetch_sub_explicit(&u->live, (int64_t)cache__seg_bytes(it),
				      memory_order_relaxed) ==
	    (int64_t)cache__seg_bytes(it))
		atomic_store_explicit(&c->dead_segs, true,
				      memory_order_relaxed);
}

size_t cache_item_footprint(const struct item *it)
{
	if (cache__item_is_large(it))
		return cache__large_of(it)->footprint;
	return cache__seg_bytes(it);
}

void cache_reclaim(struct cache *c)
{
	cache__reclaim(c);
}
