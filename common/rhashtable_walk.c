/*
 * Walking an rhashtable: the kernel-style walker (enter/start/next/stop/
 * exit) and the stateless cursor scan. Their guarantees are stated in the
 * top comment of rhashtable.h; why they hold is explained here.
 *
 * A stopped walker is parked on its table's walker list (under ctl->lock).
 * When a resize completes, the worker empties the old table's list, setting
 * each walker's tbl to NULL, before it waits for the grace period that frees
 * the table: a walker never dereferences a freed table, and walk_start sees
 * that it must restart. A started walker is on no list: it holds the RCU read
 * lock, which keeps its table alive.
 *
 * The cursor scan works because the table keeps one hash secret across grows
 * and shrinks: an entry of bucket b in a table of mask m lands, in a table of
 * mask M >= m, in a bucket congruent to b modulo m + 1, and in a table of
 * mask M < m, in bucket b & M. Reverse-binary cursor increments (Redis'
 * dictScan) make the set of positions already visited, seen from any table
 * size, a prefix of that table's own reverse-binary order, so a grow or
 * shrink between two calls neither skips nor re-opens what was covered
 * (shrinks may repeat some buckets). Within a call, tables are visited oldest
 * first: entries only ever move from an older table to a newer one, and the
 * mover links an entry into the new table before unlinking it from the old.
 */
#include "rhashtable.h"
#include "rhashtable_internal.h"

/* ---- walker list (ctl->lock held) ---- */

static void walker_park(struct rhashtable_walker *w, struct bucket_table *tbl)
{
	w->tbl = tbl;
	w->next = tbl->walkers;
	if (w->next)
		w->next->pprev = &w->next;
	w->pprev = &tbl->walkers;
	tbl->walkers = w;
}

static void walker_unpark(struct rhashtable_walker *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	w->next = NULL;
	w->pprev = NULL;
}

void rht__walkers_table_gone(struct bucket_table *old)
{
	struct rhashtable_walker *w, *next;

	for (w = old->walkers; w; w = next) {
		next = w->next;
		w->next = NULL;
		w->pprev = NULL;
		w->tbl = NULL;
	}
	old->walkers = NULL;
}

/* ---- the walker ---- */

void rhashtable_walk_enter(struct rhashtable *ht, struct rhashtable_iter *iter)
{
	struct rhashtable__ctl *ctl = ht->ctl;

	*iter = (struct rhashtable_iter){ .ht = ht };
	pthread_mutex_lock(&ctl->lock);
	/* Under ctl->lock ht->tbl cannot be switched and freed under us. */
	walker_park(&iter->walker,
		    atomic_load_explicit(&ht->tbl, memory_order_acquire));
	pthread_mutex_unlock(&ctl->lock);
}

void rhashtable_walk_exit(struct rhashtable_iter *iter)
{
	struct rhashtable__ctl *ctl = iter->ht->ctl;

	pthread_mutex_lock(&ctl->lock);
	if (iter->walker.tbl)
		walker_unpark(&iter->walker);
	pthread_mutex_unlock(&ctl->lock);
}

/* Finds iter->p (or iter->list) again in its bucket; sets skip after it. */
static void walk_relocate(struct rhashtable_iter *iter)
{
	struct bucket_table *tbl = iter->walker.tbl;
	unsigned int skip = 0;

	for (struct rhash_head *he =
		     rht__bucket_first(&tbl->buckets[iter->slot]);
	     he; he = rht__next(he)) {
		struct rhlist_head *list = (struct rhlist_head *)he;

		if (!iter->ht->rhlist) {
			skip++;
			if (he == iter->p) {
				iter->skip = skip;
				return;
			}
			continue;
		}
		for (; list; list = rhl__next(list)) {
			skip++;
			if (list == iter->list) {
				iter->p = he;
				iter->skip = skip;
				return;
			}
		}
	}
	iter->p = NULL; /* gone: resume by count, iter->skip unchanged */
}

int rhashtable_walk_start_check(struct rhashtable_iter *iter)
{
	struct rhashtable *ht = iter->ht;
	struct rhashtable__ctl *ctl = ht->ctl;
	bool gone;

	rhkv_rcu_read_lock();
	pthread_mutex_lock(&ctl->lock);
	gone = !iter->walker.tbl;
	if (!gone)
		walker_unpark(&iter->walker);
	pthread_mutex_unlock(&ctl->lock);

	if (iter->end_of_table)
		return 0;
	if (gone) {
		iter->walker.tbl = rht__first_table(ht);
		iter->slot = 0;
		iter->skip = 0;
		iter->p = NULL;
		iter->list = NULL;
		return -EAGAIN;
	}
	if (iter->p)
		walk_relocate(iter);
	return 0;
}

void rhashtable_walk_start(struct rhashtable_iter *iter)
{
	if (rhashtable_walk_start_check(iter) == -EAGAIN)
		iter->restarted = true;
}

static void *walk_found(struct rhashtable_iter *iter, struct rhash_head *he,
			struct rhlist_head *list)
{
	iter->skip++;
	iter->p = he;
	iter->list = list;
	return rht_obj(iter->ht->rhlist ? &list->rhead : he, iter->ht->p);
}

/* The object `skip` positions into the walk's bucket, or the next bucket's. */
static void *walk_find_next(struct rhashtable_iter *iter)
{
	struct bucket_table *tbl;
	bool rhlist = iter->ht->rhlist;

	while ((tbl = iter->walker.tbl)) {
		for (; iter->slot < tbl->size; iter->slot++, iter->skip = 0) {
			unsigned int skip = iter->skip;
			struct rhash_head *he =
				rht__bucket_first(&tbl->buckets[iter->slot]);

			for (; he; he = rht__next(he)) {
				struct rhlist_head *list =
					(struct rhlist_head *)he;

				if (!rhlist) {
					if (!skip)
						return walk_found(iter, he,
								  NULL);
					skip--;
					continue;
				}
				for (; list; list = rhl__next(list)) {
					if (!skip)
						return walk_found(iter, he,
								  list);
					skip--;
				}
			}
		}
		/* End of this table: entries still moving are in the next. */
		iter->slot = 0;
		iter->skip = 0;
		iter->p = NULL;
		iter->walker.tbl = rht__future(tbl);
		if (iter->walker.tbl)
			return ERR_PTR(-EAGAIN);
	}
	iter->end_of_table = true;
	return NULL;
}

void *rhashtable_walk_next(struct rhashtable_iter *iter)
{
	struct rhash_head *he = iter->p;

	if (iter->restarted) {
		iter->restarted = false;
		return ERR_PTR(-EAGAIN);
	}
	if (iter->end_of_table)
		return NULL;
	if (he) {
		struct rhlist_head *list = iter->list;

		if (iter->ht->rhlist && (list = rhl__next(list)))
			return walk_found(iter, he, list);
		he = rht__next(he);
		if (he)
			return walk_found(iter, he, (struct rhlist_head *)he);
		iter->skip = 0;
		iter->slot++;
		iter->p = NULL;
	}
	return walk_find_next(iter);
}

void *rhashtable_walk_peek(struct rhashtable_iter *iter)
{
	if (iter->p)
		return rht_obj(iter->ht->rhlist ? &iter->list->rhead : iter->p,
			       iter->ht->p);
	if (iter->end_of_table)
		return NULL;
	/* skip points past the last object returned; find that one again,
	 * walk_find_next restores skip if the bucket has not changed. */
	if (iter->skip)
		iter->skip--;
	return walk_find_next(iter);
}

void rhashtable_walk_stop(struct rhashtable_iter *iter)
{
	struct rhashtable__ctl *ctl = iter->ht->ctl;
	struct bucket_table *tbl = iter->walker.tbl;

	pthread_mutex_lock(&ctl->lock);
	/*
	 * A table whose every bucket has moved is about to be freed; not
	 * parking on it makes the next walk_start restart in its successor.
	 */
	if (tbl &&
	    atomic_load_explicit(&tbl->moved, memory_order_acquire) < tbl->size)
		walker_park(&iter->walker, tbl);
	else
		iter->walker.tbl = NULL;
	pthread_mutex_unlock(&ctl->lock);
	rhkv_rcu_read_unlock();
}

/* ---- the cursor scan ---- */

/* Positions are the low 32 bits; the high 32 hold generation + 1, so that a
 * scan in progress never has cursor 0. */
#define SCAN_POS_BITS 32
#define SCAN_POS_MASK 0xffffffffull
/* Most buckets one step visits: 1 + 4 with a 4x grow or shrink. */
#define SCAN_MAX_STEP 5u

static uint32_t reverse_bits(uint32_t v)
{
	v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
	v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
	v = ((v >> 4) & 0x0f0f0f0fu) | ((v & 0x0f0f0f0fu) << 4);
	v = ((v >> 8) & 0x00ff00ffu) | ((v & 0x00ff00ffu) << 8);
	return (v >> 16) | (v << 16);
}

/* The position after v when the smallest table has mask m. */
static uint32_t scan_advance(uint32_t v, uint32_t m)
{
	v |= ~m; /* set the bits above the mask, so the increment carries */
	v = reverse_bits(v);
	v++;
	return reverse_bits(v);
}

static unsigned int report_chain(struct rhashtable *ht, struct rhash_head *he,
				 rhashtable_scan_fn fn, void *arg)
{
	unsigned int n = 0;

	for (; he; he = rht__next(he)) {
		struct rhlist_head *list = (struct rhlist_head *)he;

		if (!ht->rhlist) {
			fn(rht_obj(he, ht->p), arg);
			n++;
			continue;
		}
		for (; list; list = rhl__next(list), n++)
			fn(rht_obj(&list->rhead, ht->p), arg);
	}
	return n;
}

/* One step at position v: every table, oldest first. */
static void scan_step(struct rhashtable *ht, struct bucket_table *first,
		      uint32_t v, uint32_t m, rhashtable_scan_fn fn, void *arg,
		      struct rhashtable_scan_stats *st)
{
	for (struct bucket_table *tbl = first; tbl; tbl = rht__future(tbl)) {
		/* A table smaller than m (attached during this call) holds
		 * all of v's entries in one bucket. */
		uint32_t stride = tbl->mask >= m ? m + 1 : tbl->size;

		for (uint32_t b = v & m & tbl->mask; b < tbl->size;
		     b += stride) {
			st->objects += report_chain(
				ht, rht__bucket_first(&tbl->buckets[b]), fn,
				arg);
			st->buckets++;
		}
	}
}

uint64_t rhashtable_scan(struct rhashtable *ht, uint64_t cursor,
			 unsigned int count, rhashtable_scan_fn fn, void *arg,
			 struct rhashtable_scan_stats *stats)
{
	struct rhashtable_scan_stats st = { 0 };
	struct bucket_table *first, *tbl;
	uint32_t v = (uint32_t)(cursor & SCAN_POS_MASK);
	uint64_t gen_tag;
	uint32_t m;

	if (!count)
		count = 1;
	rhkv_rcu_read_lock();
	first = rht__first_table(ht);
	gen_tag = (uint64_t)(first->generation + 1) << SCAN_POS_BITS;
	if ((cursor & ~SCAN_POS_MASK) != gen_tag)
		v = 0; /* a new scan, or one from before a re-seed */
	m = first->mask;
	for (tbl = rht__future(first); tbl; tbl = rht__future(tbl)) {
		if (tbl->generation != first->generation) {
			/* Re-seed in flight: positions mean nothing now. */
			cursor = gen_tag | v;
			goto out;
		}
		if (tbl->mask < m)
			m = tbl->mask;
	}
	do {
		scan_step(ht, first, v, m, fn, arg, &st);
		v = scan_advance(v, m);
	} while (v && st.objects < count &&
		 st.buckets + SCAN_MAX_STEP <= 10ull * count);
	cursor = v ? gen_tag | v : 0;
	/*
	 * A re-seed attached during the call moved entries of buckets not
	 * visited yet to unrelated buckets: never end the scan then; the
	 * next call waits for it or restarts. Any bucket read that saw the
	 * mover's work came after the attach, so this load sees the table.
	 */
	for (tbl = rht__future(first); tbl; tbl = rht__future(tbl))
		if (tbl->generation != first->generation)
			cursor = gen_tag | v;
out:
	rhkv_rcu_read_unlock();
	if (stats)
		*stats = st;
	return cursor;
}
