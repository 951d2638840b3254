/*
 * Eviction by segment: the log of sealed units, the evictor that takes the
 * oldest one, carries its visited items forward into a segment of its own
 * and unlinks the rest, and the writers' and maintenance thread's "make
 * room" built on it. The policy and lock order are in cache.h (EVICTION).
 */
#include "cache_internal.h"

/* At most this share of an evicted segment is carried forward, so that
 * each eviction frees at least the rest, however hot the segment was. */
#define CARRY_MAX_DIV 2
/* The evictor leaves its read-side section this often (in items), so
 * that a grace period never waits for a whole segment. */
#define EVICT_READ_STEP 256

/* ---- the log (log_lock) ---- */

static void log_push_locked(struct cache *c, struct seg *u)
{
	u->older = c->log_head;
	u->newer = NULL;
	if (c->log_head)
		c->log_head->newer = u;
	else
		c->log_tail = u;
	c->log_head = u;
	u->state = SEG_SEALED;
}

static void log_remove_locked(struct cache *c, struct seg *u)
{
	if (u->newer)
		u->newer->older = u->older;
	else
		c->log_head = u->older;
	if (u->older)
		u->older->newer = u->newer;
	else
		c->log_tail = u->newer;
	u->newer = u->older = NULL;
}

void cache__seal(struct cache *c, struct seg *s)
{
	pthread_mutex_lock(&c->log_lock);
	/* A large item unlinked before it got here is retiring already. */
	if (!(s->large && s->unlinked))
		log_push_locked(c, s);
	pthread_mutex_unlock(&c->log_lock);
	if (!s->large &&
	    atomic_load_explicit(&s->live, memory_order_relaxed) == 0)
		atomic_store_explicit(&c->dead_segs, true,
				      memory_order_relaxed);
}

void cache__large_unlinked(struct cache *c, struct seg *u)
{
	pthread_mutex_lock(&c->log_lock);
	u->unlinked = true;
	if (u->state == SEG_SEALED)
		log_remove_locked(c, u);
	pthread_mutex_unlock(&c->log_lock);
	/* Not yet sealed (its linker seals it, inside a read-side section
	 * this grace period waits for) or taken by the evictor: ours. */
	cache__seg_retire(c, u);
}

/* ---- evicting one unit ---- */

static void count_gone(struct cache *c, struct item *it, bool live,
		       uint8_t usage)
{
	if (!live) {
		cache__count(&c->reclaimed);
		if (!(usage & ITEM_FETCHED))
			cache__count(&c->expired_unfetched);
		return;
	}
	void (*hook)(void *, const struct item *) =
		atomic_load_explicit(&c->evict_hook, memory_order_acquire);

	if (hook)
		hook(atomic_load_explicit(&c->evict_arg, memory_order_relaxed),
		     it);
	cache__count(&c->evictions);
	if (atomic_load_explicit(&it->exptime, memory_order_relaxed))
		cache__count(&c->evicted_nonzero);
	cache__count((usage & ITEM_FETCHED) ? &c->evicted_active
					    : &c->evicted_unfetched);
}

/* A copy of it in the carry segment, its visit cleared; NULL: no room
 * (no segment free without evicting). Under evict_lock. */
static struct item *carry_copy(struct cache *c, const struct item *it)
{
	uint32_t n = cache__seg_bytes(it);
	int64_t need;
	struct item *copy =
		(struct item *)cache__seg_alloc(c, c->threads, n, &need);

	if (!copy)
		return NULL;
	copy->node.next = NULL;
	copy->cas = it->cas;
	atomic_init(&copy->exptime,
		    atomic_load_explicit(&it->exptime, memory_order_relaxed));
	atomic_init(&copy->atime,
		    atomic_load_explicit(&it->atime, memory_order_relaxed));
	atomic_init(&copy->usage, (uint8_t)(item__usage(it) & ~ITEM_VISITED));
	copy->nbytes16 = it->nbytes16;
	copy->nkey = it->nkey;
	/* The data never changes once linked: a plain copy. */
	memcpy(copy->data, it->data, item_size(it) - ITEM_HEADER_BYTES);
	return copy;
}

/* The carry segment gives back the last copy (its replace failed). */
static void carry_undo(struct cache *c, struct item *copy)
{
	c->writers[c->threads].open->used -= cache__seg_bytes(copy);
}

/* Visited live items forward (up to a share of the segment), every other
 * linked item out of the table. Under evict_lock. */
static void evict_segment(struct cache *c, struct seg *u)
{
	uint32_t carry_left = (uint32_t)(c->seg_size / CARRY_MAX_DIV);
	int64_t now = cache_now();
	unsigned int step = 0;

	rhkv_rcu_read_lock();
	for (uint32_t off = 0; off < u->used;) {
		struct item *it = (struct item *)(u->base + off);
		uint8_t usage = item__usage(it);
		bool live = cache_item_live(c, it, now);
		uint32_t n = cache__seg_bytes(it);
		struct item *copy;

		off += n;
		if (++step % EVICT_READ_STEP == 0) {
			rhkv_rcu_read_unlock();
			rhkv_rcu_read_lock();
		}
		if (live && (usage & ITEM_VISITED) && n <= carry_left &&
		    (copy = carry_copy(c, it))) {
			if (rhashtable_replace_fast(&c->ht, &it->node,
						    &copy->node,
						    cache__params) == 0) {
				carry_left -= n;
				cache__item_linked(c, copy);
				cache__item_unlinked(c, it);
				cache__count(&c->carried);
				continue;
			}
			carry_undo(c, copy); /* it was unlinked already */
			continue;
		}
		/* Fails when it is out of the table already. */
		if (rhashtable_remove_fast(&c->ht, &it->node, cache__params))
			continue;
		cache__item_unlinked(c, it);
		count_gone(c, it, live, usage);
	}
	rhkv_rcu_read_unlock();
	cache__seg_retire(c, u);
}

/* A large unit: visited and live, it goes back to the head of the log
 * (nothing to copy); else it is unlinked and retired. Under evict_lock. */
static void evict_large(struct cache *c, struct seg *u)
{
	struct item *it = (struct item *)u->base;
	bool live, requeued = false;
	uint8_t usage;

	rhkv_rcu_read_lock();
	usage = item__usage(it);
	live = cache_item_live(c, it, cache_now());
	if (live && (usage & ITEM_VISITED)) {
		atomic_fetch_and_explicit(&it->usage, (uint8_t)~ITEM_VISITED,
					  memory_order_relaxed);
		pthread_mutex_lock(&c->log_lock);
		if (!u->unlinked) {
			log_push_locked(c, u);
			requeued = true;
		}
		pthread_mutex_unlock(&c->log_lock);
		if (requeued)
			cache__count(&c->carried);
	} else if (rhashtable_remove_fast(&c->ht, &it->node, cache__params) ==
		   0) {
		cache__item_unlinked(c, it); /* retires u */
		count_gone(c, it, live, usage);
	}
	/* Else its unlinker retires it. */
	rhkv_rcu_read_unlock();
}

bool cache__evict_one(struct cache *c)
{
	struct seg *u;

	pthread_mutex_lock(&c->evict_lock);
	pthread_mutex_lock(&c->log_lock);
	u = c->log_tail;
	if (u) {
		log_remove_locked(c, u);
		u->state = SEG_EVICTING;
	}
	pthread_mutex_unlock(&c->log_lock);
	if (u && u->large)
		evict_large(c, u);
	else if (u)
		evict_segment(c, u);
	pthread_mutex_unlock(&c->evict_lock);
	return u != NULL;
}

void cache__free_dead_segments(struct cache *c)
{
	if (!atomic_exchange_explicit(&c->dead_segs, false,
				      memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->evict_lock);
	pthread_mutex_lock(&c->log_lock);
	for (struct seg *u = c->log_tail, *next; u; u = next) {
		next = u->newer;
		/* Sealed: nothing is linked into it any more, so no count
		 * rises from 0 again. */
		if (!u->large &&
		    atomic_load_explicit(&u->live, memory_order_relaxed) == 0) {
			log_remove_locked(c, u);
			cache__seg_retire(c, u);
			cache__count(&c->segs_freed_dead);
		}
	}
	pthread_mutex_unlock(&c->log_lock);
	pthread_mutex_unlock(&c->evict_lock);
}

/* ---- making room ---- */

static bool fits(struct cache *c, int64_t want, bool for_segment)
{
	if (for_segment &&
	    atomic_load_explicit(&c->pooled, memory_order_relaxed))
		return true;
	return cache__load64(&c->mem) + want <= cache__item_budget(c);
}

bool cache__make_room(struct cache *c, int64_t want, bool for_segment)
{
	if (want > cache__item_budget(c))
		return false;
	for (unsigned int idle = 0; idle < 3;) {
		if (fits(c, want, for_segment))
			return true;
		/* Pooled segments are room for a large item once given
		 * back to the kernel. */
		if (!for_segment && cache__pool_trim(c, 0))
			continue;
		/* Too much waiting for a grace period, or nothing left to
		 * evict: wait for it, which pools or frees those units. */
		if (cache__load64(&c->retired) >
			    (int64_t)(cache__limit(c) / 16) ||
		    !cache__evict_one(c)) {
			cache__free_dead_segments(c);
			cache__reclaim_wait(c);
			idle++;
		}
	}
	return fits(c, want, for_segment);
}
