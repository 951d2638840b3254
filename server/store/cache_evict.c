/*
 * Eviction by segment: the log of sealed units, the evictor that takes the
 * oldest one, carries its visited items forward into a segment of its own
 * and unlinks the rest, and the writers' and maintenance thread's "make
 * room" built on it. The policy and lock order are in cache.h (EVICTION).
 */
#include "cache_internal.h"

/* In a full cache at most 1/CARRY_MAX_DIV of an evicted segment is carried
 * forward, so that each eviction frees at least the rest, however hot the
 * segment was (while compacting, 7/8: see evict_segment). */
#define CARRY_MAX_DIV 2
/* The evictor leaves its read-side section this often (in items), so
 * that a grace period never waits for a whole segment. */
#define EVICT_READ_STEP 256

/* ---- the log (log_lock) ---- */

static int64_t unit_bytes(struct cache *c, const struct seg *u)
{
	return u->large ? (int64_t)((const struct large_item *)u)->footprint
			: (int64_t)c->seg_size;
}

static void log_push_locked(struct cache *c, struct seg *u, int which)
{
	struct seg_log *l = &c->logs[which];

	u->older = l->head;
	u->newer = NULL;
	if (l->head)
		l->head->newer = u;
	else
		l->tail = u;
	l->head = u;
	l->bytes += unit_bytes(c, u);
	u->log = (uint8_t)which;
	u->state = SEG_SEALED;
}

static void log_remove_locked(struct cache *c, struct seg *u)
{
	struct seg_log *l = &c->logs[u->log];

	if (u->newer)
		u->newer->older = u->older;
	else
		l->head = u->older;
	if (u->older)
		u->older->newer = u->newer;
	else
		l->tail = u->newer;
	u->newer = u->older = NULL;
	l->bytes -= unit_bytes(c, u);
}

void cache__seal(struct cache *c, struct seg *s, int log)
{
	pthread_mutex_lock(&c->log_lock);
	/* A large item unlinked before it got here is retiring already. */
	if (!(s->large && s->unlinked))
		log_push_locked(c, s, log);
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

/*
 * Carrying an item forward. The copy is built privately, then swapped into
 * the table in the original's place; from the swap on, readers find the
 * copy and write its atomic fields (a touch's or gat's exptime, a visit's
 * atime and bits, a recache win), so the evictor writes none of them after
 * the swap but for bits that only ever get set (carry_marks): whatever it
 * stored then could only undo a reader's newer write. The copy takes the
 * original's times and marks last, just before the swap. A reader that
 * found the original before the swap and writes to it after that snapshot
 * loses the write (its touch's TTL, a visit's time), as if it had come
 * just before the copy; closing that window of nanoseconds would cost
 * every touch a lock. A win is not lost: carry_marks takes it over.
 */

/* A copy of it in the carry segment, its visit cleared; NULL: no room
 * (no segment free without evicting). Under evict_lock. */
static struct item *carry_copy(struct cache *c, const struct item *it)
{
	uint32_t n = cache__seg_bytes(it);
	struct cache_room need;
	struct item *copy =
		(struct item *)cache__seg_alloc(c, c->threads, n, &need);

	if (!copy)
		return NULL;
	copy->node.next = NULL;
	copy->cas = it->cas;
	copy->nbytes16 = it->nbytes16;
	copy->nkey = it->nkey;
	/* The data never changes once linked: a plain copy. */
	memcpy(copy->data, it->data, item_size(it) - ITEM_HEADER_BYTES);
	/* What readers change in place, as late as it can be read. */
	atomic_init(&copy->exptime,
		    atomic_load_explicit(&it->exptime, memory_order_relaxed));
	atomic_init(&copy->atime,
		    atomic_load_explicit(&it->atime, memory_order_relaxed));
	atomic_init(&copy->usage, (uint8_t)(item__usage(it) & ~ITEM_VISITED));
	return copy;
}

/* After the swap: the original's bits that are only ever set (a recache
 * win, a fetch) and that a reader set on it since the snapshot, added to
 * the copy's; nothing a reader set on the copy is undone. */
static void carry_marks(struct item *copy, const struct item *old)
{
	uint8_t sticky =
		item__usage(old) & (ITEM_WON | ITEM_FETCHED | ITEM_STALE);

	if (sticky & ~item__usage(copy))
		atomic_fetch_or_explicit(&copy->usage, sticky,
					 memory_order_relaxed);
}

/* The carry hook (cache_set_carry_hook), if one is set. */
static void carry_hook(struct cache *c, struct item *copy)
{
	void (*hook)(void *, struct item *) =
		atomic_load_explicit(&c->carry_hook, memory_order_acquire);

	if (hook)
		hook(atomic_load_explicit(&c->carry_arg, memory_order_relaxed),
		     copy);
}

void cache_set_evictions(struct cache *c, bool on)
{
	atomic_store_explicit(&c->no_evict, !on, memory_order_relaxed);
}

bool cache_evictions(struct cache *c)
{
	return !atomic_load_explicit(&c->no_evict, memory_order_relaxed);
}

void cache_set_carry_hook(struct cache *c,
			  void (*fn)(void *arg, struct item *copy), void *arg)
{
	atomic_store_explicit(&c->carry_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&c->carry_hook, fn, memory_order_release);
}

/* The carry segment gives back the last copy (its replace failed). */
static void carry_undo(struct cache *c, struct item *copy)
{
	struct seg *s = atomic_load_explicit(&c->writers[c->threads].open,
					     memory_order_relaxed);

	s->used -= cache__seg_bytes(copy);
}

/*
 * What eviction keeps of a segment: its visited live items, and while the
 * cache is not full of live items (dead bytes fill the log: overwrites,
 * deletes) every live item, for evicting live data then would lose what
 * still fits. full: linked items hold 3/4 of the budget or more.
 */
static bool cache_full(struct cache *c)
{
	return cache__load64(&c->live) * 4 >= cache__item_budget(c) * 3;
}

static bool keep_item(const struct item *it, bool live, bool full)
{
	return live && (!full || (item__usage(it) & ITEM_VISITED));
}

/* Bytes of u's items that keep_item() keeps (when the cache is not full,
 * its linked items' count: expired ones are few). */
static uint32_t kept_bytes(struct cache *c, struct seg *u, int64_t now,
			   bool full)
{
	uint32_t kept = 0;

	if (!full)
		return (uint32_t)atomic_load_explicit(&u->live,
						      memory_order_relaxed);

	rhkv_rcu_read_lock();
	for (uint32_t off = 0; off < u->used;) {
		struct item *it = (struct item *)(u->base + off);

		off += cache__seg_bytes(it);
		if (keep_item(it, cache_item_live(c, it, now), full))
			kept += cache__seg_bytes(it);
	}
	rhkv_rcu_read_unlock();
	return kept;
}

/* Back to the head of the log, copied nowhere; in a full cache its visits
 * are cleared, as SIEVE's hand clears them passing over visited items. */
static void pass_over(struct cache *c, struct seg *u, bool full)
{
	if (full) {
		rhkv_rcu_read_lock();
		for (uint32_t off = 0; off < u->used;) {
			struct item *it = (struct item *)(u->base + off);

			off += cache__seg_bytes(it);
			if (item__usage(it) & ITEM_VISITED)
				atomic_fetch_and_explicit(
					&it->usage, (uint8_t)~ITEM_VISITED,
					memory_order_relaxed);
		}
		rhkv_rcu_read_unlock();
	}
	pthread_mutex_lock(&c->log_lock);
	log_push_locked(c, u, LOG_KEPT);
	pthread_mutex_unlock(&c->log_lock);
	cache__count(&c->segs_requeued);
}

/*
 * Carries u's kept items forward and unlinks the rest, then retires u.
 * When more than a share of u would be kept (a hot segment, often a carry
 * segment itself, or a live one in a cache of mostly dead bytes) copying
 * would free little: u is passed over instead, unless force (a lap passed
 * over everything): then at most that share is carried and the rest goes.
 * With evictions off nothing live goes, forced or not: u is passed over
 * as soon as a live item cannot be carried. Returns false when u was
 * passed over. Under evict_lock.
 */
static bool evict_segment(struct cache *c, struct seg *u, bool force)
{
	/* Evictions off: every live item is kept, forced or not. */
	bool keep_all = !cache_evictions(c);
	bool full = cache_full(c) && !keep_all;
	uint32_t share = (uint32_t)(full ? c->seg_size / CARRY_MAX_DIV
					 : c->seg_size / 8 * 7);
	uint32_t carry_left = share;
	int64_t now = cache_now();
	unsigned int step = 0;

	if ((!force || keep_all) && kept_bytes(c, u, now, full) > share) {
		pass_over(c, u, full);
		return false;
	}
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
		if (keep_item(it, live, full) && n <= carry_left) {
			copy = carry_copy(c, it);
			if (!copy && cache__load64(&c->retired) >=
					     (int64_t)c->seg_size) {
				/* Segments retiring: once they are free
				 * the carry segment takes one. */
				rhkv_rcu_read_unlock();
				cache__reclaim(c);
				rhkv_rcu_read_lock();
				copy = carry_copy(c, it);
			}
			if (!copy && !full && (!force || keep_all)) {
				/* No segment to carry to yet: what is left
				 * of u stays, rather than live items go
				 * from a cache that holds them. */
				rhkv_rcu_read_unlock();
				pass_over(c, u, false);
				return false;
			}
			if (copy && rhashtable_replace_fast(
					    &c->ht, &it->node, &copy->node,
					    cache__params) == 0) {
				carry_left -= n;
				carry_hook(c, copy);
				carry_marks(copy, it);
				cache__item_linked(c, copy);
				cache__item_unlinked(c, it);
				cache__count(&c->carried);
				continue;
			}
			if (copy) {
				carry_undo(c, copy); /* unlinked already */
				continue;
			}
		}
		if (keep_all && live) {
			/* No room left in the carry: the rest stays. */
			rhkv_rcu_read_unlock();
			pass_over(c, u, false);
			return false;
		}
		/* Fails when it is out of the table already. */
		if (rhashtable_remove_fast(&c->ht, &it->node, cache__params))
			continue;
		cache__item_unlinked(c, it);
		count_gone(c, it, live, usage);
	}
	rhkv_rcu_read_unlock();
	cache__seg_retire(c, u);
	return true;
}

/* A large unit that eviction keeps (keep_item) goes back to the head of
 * the log, nothing to copy, unless force; else it is unlinked and
 * retired. Returns false when it was passed over. Under evict_lock,
 * inside the read-side section it was taken off the log in. */
static bool evict_large(struct cache *c, struct seg *u, bool force)
{
	struct item *it = (struct item *)u->base;
	bool keep_all = !cache_evictions(c);
	bool full = cache_full(c) && !keep_all, live, requeued = false;
	uint8_t usage;

	usage = item__usage(it);
	live = cache_item_live(c, it, cache_now());
	if ((!force || keep_all) && keep_item(it, live, full)) {
		if (full)
			atomic_fetch_and_explicit(&it->usage,
						  (uint8_t)~ITEM_VISITED,
						  memory_order_relaxed);
		pthread_mutex_lock(&c->log_lock);
		if (!u->unlinked) {
			log_push_locked(c, u, LOG_KEPT);
			requeued = true;
		}
		pthread_mutex_unlock(&c->log_lock);
		if (requeued)
			cache__count(&c->segs_requeued);
	} else if (rhashtable_remove_fast(&c->ht, &it->node, cache__params) ==
		   0) {
		cache__item_unlinked(c, it); /* retires u */
		count_gone(c, it, live, usage);
	}
	/* Else its unlinker retires it. */
	return !requeued;
}

/* The oldest unit of LOG_NEW while that log holds more than a tenth of
 * both, else of LOG_KEPT; the other when the one chosen is empty. */
static struct seg *victim_locked(struct cache *c)
{
	struct seg_log *n = &c->logs[LOG_NEW], *k = &c->logs[LOG_KEPT];

	if (n->tail && (n->bytes * 10 > n->bytes + k->bytes || !k->tail))
		return n->tail;
	return k->tail;
}

enum evict_result cache__evict_one(struct cache *c, bool force)
{
	enum evict_result res = EVICT_EMPTY;
	struct seg *u;

	pthread_mutex_lock(&c->evict_lock);
	/*
	 * Inside a read-side section from before u leaves the log: a large
	 * item's unlinker retires it at once once it is off the log, and
	 * only this section keeps it from being freed under the evictor.
	 * (evict_lock is taken outside sections: its holder may wait for a
	 * grace period.)
	 */
	rhkv_rcu_read_lock();
	pthread_mutex_lock(&c->log_lock);
	u = victim_locked(c);
	if (u) {
		log_remove_locked(c, u);
		u->state = SEG_EVICTING;
	}
	pthread_mutex_unlock(&c->log_lock);
	if (u && u->large) {
		res = evict_large(c, u, force) ? EVICT_FREED : EVICT_PASSED;
		rhkv_rcu_read_unlock();
	} else {
		/* Nothing retires a segment but its evictor. */
		rhkv_rcu_read_unlock();
		if (u)
			res = evict_segment(c, u, force) ? EVICT_FREED
							 : EVICT_PASSED;
	}
	pthread_mutex_unlock(&c->evict_lock);
	return res;
}

bool cache__evict_some(struct cache *c)
{
	/* Each unit passed over lost its visits: a lap at most. */
	unsigned long laps =
		atomic_load_explicit(&c->seg_resident, memory_order_relaxed) +
		16;

	for (unsigned long i = 0; i <= laps; i++) {
		enum evict_result r = cache__evict_one(c, i == laps);

		if (r != EVICT_PASSED)
			return r == EVICT_FREED;
	}
	return false;
}

void cache__free_dead_segments(struct cache *c)
{
	if (!atomic_exchange_explicit(&c->dead_segs, false,
				      memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->evict_lock);
	pthread_mutex_lock(&c->log_lock);
	for (int l = 0; l < 2; l++)
		for (struct seg *u = c->logs[l].tail, *next; u; u = next) {
			next = u->newer;
			/* Sealed: nothing is linked into it any more, so no count
		 * rises from 0 again. */
			if (!u->large &&
			    atomic_load_explicit(&u->live,
						 memory_order_relaxed) == 0) {
				log_remove_locked(c, u);
				cache__seg_retire(c, u);
				cache__count(&c->segs_freed_dead);
			}
		}
	pthread_mutex_unlock(&c->log_lock);
	pthread_mutex_unlock(&c->evict_lock);
}

/* ---- making room ---- */

static bool fits(struct cache *c, struct cache_room want)
{
	if (want.segment &&
	    atomic_load_explicit(&c->pooled, memory_order_relaxed) &&
	    !cache__over_budget(c))
		return true;
	/* Writers leave a segment's room for the evictor's carry. */
	return cache__load64(&c->mem) + want.bytes + (int64_t)c->seg_size <=
	       cache__item_budget(c);
}

bool cache__make_room(struct cache *c, struct cache_room want)
{
	if (want.bytes + (int64_t)c->seg_size > cache__item_budget(c))
		return false;
	for (unsigned int idle = 0; idle < 3;) {
		if (fits(c, want))
			return true;
		/* Pooled segments are room for a large item once given
		 * back to the kernel, and for anything once the cache is
		 * within a lowered limit again. */
		if ((!want.segment || cache__over_budget(c)) &&
		    cache__pool_trim(c, 0))
			continue;
		/* Units evicted already are room after a grace period. */
		if (cache__load64(&c->retired) > 0 && cache__reclaim(c))
			continue;
		if (!cache__evict_some(c)) {
			cache__free_dead_segments(c);
			if (!cache__reclaim(c))
				idle++;
		}
	}
	return fits(c, want);
}
