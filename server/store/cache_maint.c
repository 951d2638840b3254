/*
 * Expiry and flush_all: whether an item is alive, the O(1) flush (a cas
 * snapshot, applied now or when its time comes), and the maintenance
 * thread that sweeps dead items (those prefix tombstones cover too) and
 * keeps a little room free.
 */
#include <time.h>

#include "cache_internal.h"

#define SWEEP_MAX	256	  /* dead items collected per sweep step */
#define TICK_NS		100000000 /* maintenance: every 100 ms, */
#define TICK_BUSY_NS	10000000  /* or 10 ms while the sweep reclaims */
#define SWEEP_BUDGET_NS 2000000	  /* at most 2 ms of sweeping a tick */
#define SWEEP_STEP	64
#define POOL_IDLE_NS	1000000000 /* pooled segments unused 1 s go back */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- flush_all ---- */

static void flush_apply(struct cache *c)
{
	for (unsigned int t = 0; t < c->threads; t++)
		atomic_store_explicit(
			&c->flush_snap[t],
			atomic_load_explicit(&c->cas_seq[t].v,
					     memory_order_relaxed) +
				1,
			memory_order_release);
	atomic_store_explicit(&c->sweep_wanted, true, memory_order_relaxed);
	cache__prefix_drop_flushed(c);
}

void cache__flush_if_due(struct cache *c)
{
	int64_t due =
		atomic_load_explicit(&c->flush_due_ns, memory_order_acquire);

	if (!due || cache__now_ns() < due)
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
		due = cache__now_ns() + delay * 1000000000;
	pthread_mutex_lock(&c->flush_lock);
	if (due <= cache__now_ns()) {
		flush_apply(c);
		atomic_store_explicit(&c->flush_due_ns, 0,
				      memory_order_release);
	} else {
		atomic_store_explicit(&c->flush_due_ns, due,
				      memory_order_release);
	}
	pthread_mutex_unlock(&c->flush_lock);
}

/*
 * Whether flush_all or a prefix flush invalidated the item. The
 * tombstones cost a load and a test when there are none, and one more
 * comparison for an item stored after all of them. They are read first:
 * flush_all drops the tombstones it covers after raising flush_snap, so a
 * reader that sees them gone (acquire) sees the new flush_snap too.
 */
static enum item_fate flush_fate(struct cache *c, const struct item *it)
{
	uint64_t seq = (it->cas - 1) / c->threads;
	unsigned int t = (unsigned int)((it->cas - 1) % c->threads);
	const struct tomb_set *s =
		atomic_load_explicit(&c->tombs, memory_order_acquire);

	if (seq < atomic_load_explicit(&c->flush_snap[t], memory_order_acquire))
		return ITEM_FLUSHED;
	if (s && seq <= s->max_seq[t] && cache__tomb_covers(s, it, seq, t))
		return ITEM_PREFIX_FLUSHED;
	return ITEM_ALIVE;
}

void cache_set_evict_hook(struct cache *c,
			  void (*fn)(void *arg, const struct item *it),
			  void *arg)
{
	atomic_store_explicit(&c->evict_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&c->evict_hook, fn, memory_order_release);
}

void cache__age_mark(struct cache *c, int64_t now)
{
	unsigned int n, drop = 1, th = c->threads;

	pthread_mutex_lock(&c->age_lock);
	n = c->age_n;
	if (n && now - c->age_t[n - 1] < 1) {
		pthread_mutex_unlock(&c->age_lock);
		return;
	}
	if (n == AGE_MARKS) {
		/* Drop the inner mark whose neighbours are closest: the marks
		 * thin out with age, the first and last stay. */
		for (unsigned int i = 2; i + 1 < n; i++)
			if (c->age_t[i + 1] - c->age_t[i - 1] <
			    c->age_t[drop + 1] - c->age_t[drop - 1])
				drop = i;
		memmove(&c->age_t[drop], &c->age_t[drop + 1],
			(n - drop - 1) * sizeof(c->age_t[0]));
		memmove(&c->age_seq[(size_t)drop * th],
			&c->age_seq[(size_t)(drop + 1) * th],
			(size_t)(n - drop - 1) * th * sizeof(c->age_seq[0]));
		n--;
	}
	c->age_t[n] = now;
	for (unsigned int t = 0; t < th; t++)
		c->age_seq[(size_t)n * th + t] = atomic_load_explicit(
			&c->cas_seq[t].v, memory_order_relaxed);
	c->age_n = n + 1;
	pthread_mutex_unlock(&c->age_lock);
}

/* When the item with this cas had been stored by, at the latest: the
 * first mark whose sequence for its thread had reached it (now if none
 * had yet). Under age_lock. */
static int64_t stored_by(struct cache *c, uint64_t cas, int64_t now)
{
	uint64_t seq = (cas - 1) / c->threads;
	unsigned int t = (unsigned int)((cas - 1) % c->threads);

	for (unsigned int k = 0; k < c->age_n; k++)
		if (c->age_seq[(size_t)k * c->threads + t] >= seq)
			return c->age_t[k];
	return now;
}

/* The write sequence of the first item below `end` in u that is still in
 * the table, or 0; *budget counts the items looked at down. A large unit
 * holds one item whatever its `used` says (a landed item's counts 8 bytes
 * for a cas it may not have chosen): walking on would read a header past
 * its allocation. Inside a read-side section. */
static uint64_t first_linked(struct cache *c, const struct seg *u, uint32_t end,
			     long *budget)
{
	if (u->large) {
		const struct item *it = (const struct item *)u->base;
		struct cache_key k = { item_key(it), it->nkey };

		(*budget)--;
		return rhashtable_lookup(&c->ht, &k, cache__params) == it
			       ? it->cas
			       : 0;
	}
	for (uint32_t off = 0; off < end && (*budget)-- > 0;) {
		const struct item *it = (const struct item *)(u->base + off);
		struct cache_key k = { item_key(it), it->nkey };

		off += cache__seg_bytes(it);
		if (rhashtable_lookup(&c->ht, &k, cache__params) == it)
			return it->cas;
	}
	return 0;
}

/*
 * Items keep no store time: the oldest item still in the cache is the
 * first one linked in the oldest unit of the log (or, with none sealed,
 * in an open segment), and its cas sequence is matched against the marks.
 * The log lock keeps the units walked in place (sealing takes it too).
 */
int64_t cache_oldest_age(struct cache *c)
{
	int64_t now = cache_now(), oldest = now;
	long budget = 1L << 20; /* items looked at, at most */
	uint64_t firsts[2] = { 0, 0 }, first = 0;

	pthread_mutex_lock(&c->log_lock);
	rhkv_rcu_read_lock();
	for (int l = 0; l < 2; l++)
		for (struct seg *u = c->logs[l].tail;
		     u && !firsts[l] && budget > 0; u = u->newer)
			firsts[l] = first_linked(c, u, u->used, &budget);
	first = firsts[0] ? firsts[0] : firsts[1];
	for (unsigned int t = 0; t <= c->threads && !first; t++) {
		struct seg *u = atomic_load_explicit(&c->writers[t].open,
						     memory_order_acquire);

		if (u)
			first = first_linked(
				c, u,
				atomic_load_explicit(&u->published,
						     memory_order_acquire),
				&budget);
	}
	rhkv_rcu_read_unlock();
	pthread_mutex_unlock(&c->log_lock);
	pthread_mutex_lock(&c->age_lock);
	/* Carried items keep their cas: either log's may be the oldest. */
	if (first)
		oldest = stored_by(c, first, now);
	if (firsts[1] && stored_by(c, firsts[1], now) < oldest)
		oldest = stored_by(c, firsts[1], now);
	pthread_mutex_unlock(&c->age_lock);
	return now - oldest;
}

void cache_sweep_enable(struct cache *c, bool on)
{
	atomic_store_explicit(&c->sweep_paused, !on, memory_order_relaxed);
	cache__maint_wake(c);
}

bool cache_sweep_enabled(struct cache *c)
{
	return !atomic_load_explicit(&c->sweep_paused, memory_order_relaxed);
}

void cache_crawl(struct cache *c)
{
	atomic_store_explicit(&c->sweep_wanted, true, memory_order_relaxed);
	cache__maint_wake(c);
}

bool cache_item_flushed(struct cache *c, const struct item *it)
{
	cache__flush_if_due(c);
	return flush_fate(c, it) != ITEM_ALIVE;
}

enum item_fate cache__item_fate(struct cache *c, const struct item *it,
				int64_t now)
{
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);

	if (exp && exp <= now)
		return ITEM_EXPIRED;
	cache__flush_if_due(c);
	return flush_fate(c, it);
}

bool cache_item_live(struct cache *c, const struct item *it, int64_t now)
{
	return cache__item_fate(c, it, now) == ITEM_ALIVE;
}

/* ---- the expiry sweep: a table cursor, dead items only ---- */

struct sweep_ctx {
	struct cache *c;
	int64_t now;
	unsigned int n;
	unsigned long checked;
	bool skipped; /* a dead item was left for lack of room: step again */
};

static void sweep_visit(void *obj, void *arg)
{
	struct sweep_ctx *sw = arg;
	struct item *it = obj;
	enum item_fate fate;

	if (sw->n == SWEEP_MAX) {
		sw->skipped = true;
		return;
	}
	sw->checked++;
	/* Until the key's item is out of the table or alive: another writer
	 * may have got in first. A remove means the item is theirs; a
	 * replace may have put a copy with the same sequence in its place
	 * (eviction's carry, meta's emptied value), which this pass has
	 * passed and a tombstone's retirement must not leave behind. */
	while ((fate = cache__item_fate(sw->c, it, sw->now)) != ITEM_ALIVE) {
		struct cache_key k = { item_key(it), it->nkey };

		if (!rhashtable_remove_fast(&sw->c->ht, &it->node,
					    cache__params)) {
			sw->n++;
			cache__item_unlinked(sw->c, it); /* in the section */
			cache__count(&sw->c->reclaimed);
			if (fate == ITEM_PREFIX_FLUSHED)
				cache__count(&sw->c->prefix_reclaimed);
			if (!(atomic_load_explicit(&it->usage,
						   memory_order_relaxed) &
			      ITEM_FETCHED))
				cache__count(&sw->c->expired_unfetched);
			return;
		}
		it = rhashtable_lookup(&sw->c->ht, &k, cache__params);
		if (!it)
			return;
	}
}

/* ---- the maintenance thread ---- */

/*
 * Keeps room for a few segments free (pooled, or within the limit) so that
 * writers rarely evict themselves, frees segments left without a live
 * item, and gives pooled segments beyond that room back to the kernel (the
 * limit went down, or items were deleted) once they have gone unused for
 * POOL_IDLE_NS: under overwrites, segments freed early are taken again at
 * once, and handing them back only to fault them in again cost 16 KiB
 * overwrites 40% of their CPU in clear_page.
 */
static void maint_evict(struct cache *c)
{
	int64_t seg = (int64_t)c->seg_size;
	int64_t headroom = (int64_t)(cache__limit(c) / 64);
	unsigned long keep;

	if (headroom < 2 * seg)
		headroom = 2 * seg;
	keep = (unsigned long)(headroom / seg);
	cache__free_dead_segments(c);
	while (cache__load64(&c->mem) + headroom -
		       (int64_t)atomic_load_explicit(&c->pooled,
						     memory_order_relaxed) *
			       seg >
	       cache__item_budget(c)) {
		if (cache__load64(&c->retired) >
			    (int64_t)(cache__limit(c) / 16) &&
		    cache__reclaim(c))
			continue;
		if (!cache__evict_some(c))
			break;
	}
	cache__reclaim(c);
	if (mono_ns() - c->pool_trimmed_ns >= POOL_IDLE_NS) {
		cache__pool_trim_idle(c, keep);
		c->pool_trimmed_ns = mono_ns();
	}
	if (cache__load64(&c->mem) > cache__item_budget(c))
		cache__pool_trim(c, 0);
}

/* Unlinks dead items for at most SWEEP_BUDGET_NS, resuming where the last
 * tick stopped. Returns whether it found any. */
static bool maint_sweep(struct cache *c)
{
	int64_t start = mono_ns();
	bool found = false;

	if (!atomic_load_explicit(&c->sweep_wanted, memory_order_relaxed) ||
	    atomic_load_explicit(&c->sweep_paused, memory_order_relaxed))
		return false;
	do {
		struct sweep_ctx sw = { .c = c, .now = cache_now() };
		uint64_t next;

		if (!c->sweep_in_pass) {
			pthread_mutex_lock(&c->tomb_lock);
			c->sweep_started++;
			pthread_mutex_unlock(&c->tomb_lock);
			c->sweep_in_pass = true;
		}
		next = rhashtable_scan(&c->ht, c->sweep_cursor, SWEEP_STEP,
				       sweep_visit, &sw, NULL);
		/* A step that left dead items is taken again, so that a
		 * pass unlinks every dead item it finds (prefix tombstones
		 * retire on it). */
		if (!sw.skipped)
			c->sweep_cursor = next;
		/* Only this thread writes them: no read-modify-write. */
		atomic_store_explicit(
			&c->sweep_checked,
			atomic_load_explicit(&c->sweep_checked,
					     memory_order_relaxed) +
				sw.checked,
			memory_order_relaxed);
		atomic_store_explicit(
			&c->sweep_reclaimed,
			atomic_load_explicit(&c->sweep_reclaimed,
					     memory_order_relaxed) +
				sw.n,
			memory_order_relaxed);
		found |= sw.n > 0;
		if (!sw.skipped && c->sweep_cursor == 0) {
			cache__count(&c->sweep_passes);
			c->sweep_in_pass = false;
			cache__prefix_pass_done(c, c->sweep_started);
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
		cache__age_mark(c, cache_now());
		cache__flush_if_due(c);
		cache__prefix_tick(c);
		maint_evict(c);
		/* A mass expiry: sweep more often, never longer at a time. */
		busy = maint_sweep(c);
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

int cache__maint_start(struct cache *c)
{
	int err = pthread_create(&c->maint, NULL, maint_main, c);

	c->maint_started = err == 0;
	return err;
}

void cache__maint_stop(struct cache *c)
{
	if (!c->maint_started)
		return;
	pthread_mutex_lock(&c->maint_lock);
	c->maint_stop = true;
	pthread_cond_signal(&c->maint_cond);
	pthread_mutex_unlock(&c->maint_lock);
	pthread_join(c->maint, NULL);
	c->maint_started = false;
}

void cache__maint_wake(struct cache *c)
{
	pthread_mutex_lock(&c->maint_lock);
	pthread_cond_signal(&c->maint_cond);
	pthread_mutex_unlock(&c->maint_lock);
}
