/*
 * Warm restart: adopting a sealed memory file (cache__file_restore). The
 * checksums catch torn and flipped bytes; they do not make a field safe
 * to use. So every field read from the file is bounded first, and nothing
 * is linked until all of it has been: a segment or large item whose
 * checksum fails is dropped alone (counted as corrupt), while one whose
 * checksum holds but which no graceful stop could have written (an item
 * running past its segment, a length above what its kind of allocation
 * holds, a recorded length that is not its item's, a write sequence out of
 * range) makes the whole file untrusted: it starts empty and says why, as
 * an unsealed one does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cache_file.h"

struct restore_ctx {
	int64_t now;
	bool flushed; /* a delayed flush_all pending at the stop is due */
	uint64_t max_cas;
	unsigned long items, large_items, expired, duplicates;
};

/* Why a file is not restored: the first bound one of its fields fails. */
struct verdict {
	const char *why; /* NULL: every bound holds */
	char buf[160];
};

static void reject(struct verdict *v, const char *what, size_t where)
{
	if (v->why)
		return;
	snprintf(v->buf, sizeof(v->buf), "%s (at %zu)", what, where);
	v->why = v->buf;
}

static uint64_t round8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* The bytes an item with this header and value length holds. */
static uint64_t size_with(const struct item *it, uint32_t nbytes)
{
	uint8_t u = item__usage(it);

	return ITEM_HEADER_BYTES + ((u & ITEM_HAS_FLAGS) ? 4 : 0) + it->nkey +
	       (uint64_t)nbytes + ((u & ITEM_CAS_CHOSEN) ? 8 : 0);
}

/* Why an item's key and write sequence are not ones a cache makes. */
static const char *key_seq_bad(const struct item *it)
{
	if (it->nkey == 0 || it->nkey > CACHE_KEY_MAX)
		return "an item's key length is out of range";
	if (!(item__usage(it) & ITEM_SEALED_DEAD) &&
	    (it->cas == 0 || it->cas > CACHE_SEQ_MAX))
		return "an item's write sequence is out of range";
	return NULL;
}

/* Why the item at off of a segment holding used bytes cannot be there
 * (it must be one cache__item_alloc would have put in a segment, within
 * used), or NULL. */
static const char *seg_item_bad(struct cache *c, const char *base, uint32_t off,
				uint32_t used)
{
	const struct item *it = (const struct item *)(base + off);
	const char *why;

	if (off + ITEM_HEADER_BYTES > used)
		return "an item header runs past its segment's bytes";
	if ((why = key_seq_bad(it)))
		return why;
	if (it->nbytes16 > ITEM_SEG_VALUE_MAX)
		return "a segment item's length is above the segment limit";
	if (!cache__item_in_segment(c, it->nbytes16,
				    size_with(it, 0) + it->nbytes16))
		return "a segment item is larger than a segment item may be";
	if (off + round8(item_size(it)) > used)
		return "an item runs past its segment's bytes";
	return NULL;
}

/* ---- checking ---- */

/*
 * Checks the segments: a sealed one whose checksum fails is dropped
 * (marked free); in one whose checksum holds, the items must tile its
 * bytes. Indexes of the good ones into idx, their count into *n, the
 * items they hold (for the table's first size) into *items.
 */
static void check_segments(struct cache *c, uint32_t *idx, uint32_t *n,
			   unsigned long *items, struct verdict *v)
{
	struct cache_seg_record *rec = cache__file_records(c);

	*items = 0;
	*n = 0;
	for (size_t i = 0; i < c->nsegs && !v->why; i++) {
		char *base = c->arena + i * c->seg_size;
		uint32_t off = 0;

		if (rec[i].state == CACHE_REC_FREE)
			continue;
		if (rec[i].state != CACHE_REC_SEALED ||
		    rec[i].used > c->seg_size || rec[i].log > LOG_KEPT) {
			reject(v, "a segment record is out of bounds", i);
			break;
		}
		if (cache__file_checksum(base, rec[i].used) != rec[i].check) {
			c->file->restore.corrupt_segments++;
			rec[i].state = CACHE_REC_FREE;
			continue;
		}
		while (off < rec[i].used) {
			const char *why =
				seg_item_bad(c, base, off, rec[i].used);

			if (why) {
				reject(v, why, i);
				break;
			}
			off += cache__seg_bytes(
				(const struct item *)(base + off));
			(*items)++;
		}
		idx[(*n)++] = (uint32_t)i;
	}
}

/* Why the large record lr, whose item (checksum good) is at src, cannot
 * be one a stop wrote, or NULL. */
static const char *large_bad(struct cache *c,
			     const struct cache_large_record *lr,
			     const struct item *src)
{
	const char *why = key_seq_bad(src);

	if (why)
		return why;
	if (lr->nbytes > c->file->item_max)
		return "a large item's length is above -I";
	if (size_with(src, lr->nbytes) != lr->size)
		return "a large item's length is not its allocation's";
	return NULL;
}

/*
 * Walks the large items' area (read whole into area): records whose
 * checksum fails are counted and end the walk (the records after cannot
 * be found); records whose checksum holds must be within bounds. The
 * number of records to restore, at most the header's count.
 */
static uint64_t check_large(struct cache *c, const char *area, uint64_t bytes,
			    uint64_t count, struct verdict *v)
{
	uint64_t off = 0, i;

	for (i = 0; i < count && !v->why; i++) {
		struct cache_large_record lr;
		const char *why;

		if (bytes - off < sizeof(lr)) {
			reject(v, "the large items' area ends before its count",
			       (size_t)i);
			break;
		}
		memcpy(&lr, area + off, sizeof(lr));
		off += sizeof(lr);
		if (lr.size < ITEM_HEADER_BYTES || lr.size > bytes - off ||
		    cache__file_checksum(area + off, lr.size) != lr.check) {
			c->file->restore.corrupt_large++;
			return i;
		}
		if ((why = large_bad(c, &lr,
				     (const struct item *)(area + off))))
			reject(v, why, (size_t)i);
		off += round8(lr.size);
		if (off > bytes)
			reject(v, "a large item's padding runs past the area",
			       (size_t)i);
	}
	if (!v->why && off != bytes)
		reject(v, "the large items' area holds more than its count",
		       (size_t)count);
	return i;
}

/* ---- restoring ---- */

/* Links one item found in the file; false when it is not to be. */
static bool restore_item(struct cache *c, struct item *it,
			 struct restore_ctx *r)
{
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	struct cache_key k = { item_key(it), it->nkey };

	/* A delayed flush_all that came due while the server was down
	 * killed every item the file holds, as an expiry would have. */
	if ((exp && exp <= r->now) || r->flushed) {
		r->expired++;
		return false;
	}
	rhkv_rcu_read_lock();
	if (rhashtable_lookup_get_insert_key(&c->ht, &k, &it->node,
					     cache__params) != NULL) {
		rhkv_rcu_read_unlock();
		r->duplicates++;
		return false;
	}
	cache__item_linked(c, it);
	rhkv_rcu_read_unlock();
	r->items++;
	/* The write sequence only: a cas a client chose (item_cas) is no
	 * sequence and may be anything up to 2^64 - 1. */
	if (it->cas > r->max_cas)
		r->max_cas = it->cas;
	return true;
}

/* Segments sealed in the file whose checksum holds, by log and order. */
static int by_order(const void *a, const void *b, void *arg)
{
	const struct cache_seg_record *rec = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (rec[x].log != rec[y].log)
		return rec[x].log < rec[y].log ? -1 : 1;
	return rec[x].order < rec[y].order ? -1 : rec[x].order > rec[y].order;
}

static void restore_segments(struct cache *c, struct restore_ctx *r,
			     uint32_t *idx, uint32_t n)
{
	struct cache_seg_record *rec = cache__file_records(c);

	qsort_r(idx, n, sizeof(*idx), by_order, rec);
	for (uint32_t k = 0; k < n; k++) {
		struct seg *s = &c->segs[idx[k]];

		s->base = c->arena + (size_t)idx[k] * c->seg_size;
		s->c = c;
		s->used = rec[idx[k]].used;
		s->large = false;
		atomic_store_explicit(&s->live, 0, memory_order_relaxed);
		atomic_store_explicit(&s->published, s->used,
				      memory_order_relaxed);
		cache__add64(&c->mem, (int64_t)c->seg_size);
		atomic_fetch_add_explicit(&c->seg_resident, 1,
					  memory_order_relaxed);
		/* check_segments bounded every item below used. */
		for (uint32_t off = 0; off < s->used;) {
			struct item *it = (struct item *)(s->base + off);

			off += cache__seg_bytes(it);
			if (!(item__usage(it) & ITEM_SEALED_DEAD))
				restore_item(c, it, r);
		}
		cache__seal(c, s, rec[idx[k]].log);
	}
}

/* The first n records of the large items' area (check_large bounded
 * them). */
static void restore_large(struct cache *c, struct restore_ctx *r,
			  const char *area, uint64_t n)
{
	uint64_t off = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct cache_large_record lr;
		struct cache_room need;
		const struct item *src;
		struct item *it;

		memcpy(&lr, area + off, sizeof(lr));
		src = (const struct item *)(area + off + sizeof(lr));
		off += sizeof(lr) + round8(lr.size);
		if (item__usage(src) & ITEM_SEALED_DEAD)
			continue;
		it = cache__large_alloc(c, lr.size, lr.nbytes, &need);
		if (!it) {
			c->file->restore.corrupt_large++;
			continue;
		}
		memcpy(it, src, lr.size);
		it->nbytes16 = ITEM_NBYTES_LARGE;
		if (!restore_item(c, it, r))
			cache__item_discard(c, 0, it);
		else
			r->large_items++;
	}
}

/* Segments not restored: free, their stale pages given back. */
static void release_unused(struct cache *c)
{
	struct cache_seg_record *rec = cache__file_records(c);

	for (size_t i = c->nsegs; i-- > 0;) {
		struct seg *s = &c->segs[i];

		if (rec[i].state == CACHE_REC_SEALED)
			continue;
		s->base = c->arena + i * c->seg_size;
		s->c = c;
		s->state = SEG_FREE;
		madvise(s->base, c->seg_size, MADV_REMOVE);
		s->next_free = c->released;
		c->released = s;
	}
	c->fresh = c->nsegs;
}

/* The large items' area, read whole (NULL: none, or it could not be:
 * every large item counts as corrupt). */
static char *read_large(struct cache *c, const struct cache_file_header *h)
{
	char *area;

	if (!h->large_bytes)
		return NULL;
	area = malloc(h->large_bytes);
	if (!area || pread(c->file->fd, area, h->large_bytes,
			   (off_t)h->large_off) != (ssize_t)h->large_bytes) {
		free(area);
		c->file->restore.corrupt_large += h->large_count;
		return NULL;
	}
	return area;
}

/* The file fails a bound: nothing of it is restored. */
static void untrusted(struct cache *c, const char *why)
{
	struct cache_restore *rs = &c->file->restore;
	bool slow_fs = rs->slow_fs;

	memset(rs, 0, sizeof(*rs));
	rs->how = CACHE_RESTORE_EMPTY;
	rs->slow_fs = slow_fs;
	snprintf(rs->why, sizeof(rs->why),
		 "it holds what no graceful stop writes: %s", why);
	memset(cache__file_records(c), 0,
	       c->nsegs * sizeof(struct cache_seg_record));
}

int cache__file_restore(struct cache *c)
{
	struct cache_file *f = c->file;
	struct cache_file_header h = *cache__file_header(c);
	struct restore_ctx r = { .now = cache_now() };
	struct verdict v = { .why = NULL };
	struct timespec t0, t1;
	uint32_t *idx, n;
	uint64_t nlarge = 0;
	unsigned long items;
	char *area;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* From here on a crash leaves a file nobody trusts. */
	cache__file_header(c)->sealed = 0;
	cache__file_header(c)->check =
		cache__file_header_check(cache__file_header(c));
	msync(f->map, CACHE_FILE_PAGE, MS_SYNC);
	idx = malloc(c->nsegs * sizeof(*idx));
	if (!idx)
		return -1;
	check_segments(c, idx, &n, &items, &v);
	area = read_large(c, &h);
	if (area && !v.why)
		nlarge = check_large(c, area, h.large_bytes, h.large_count, &v);
	if (v.why) {
		untrusted(c, v.why);
		n = 0;
		nlarge = 0;
		items = 0;
		h.flush_due_ns = 0;
	}
	if (h.flush_due_ns) {
		if (h.flush_due_ns <= cache__now_ns())
			r.flushed = true;
		else
			atomic_store_explicit(&c->flush_due_ns, h.flush_due_ns,
					      memory_order_release);
	}
	if (cache__table_init(c, items)) {
		free(idx);
		free(area);
		return -1;
	}
	restore_segments(c, &r, idx, n);
	free(idx);
	release_unused(c);
	restore_large(c, &r, area, nlarge);
	free(area);
	/* The large items are in memory now: the file ends with the arena. */
	if (ftruncate(f->fd, (off_t)h.large_off))
		f->restore.large_not_freed = true;
	/* Above every cas given out before the stop (at most CACHE_SEQ_MAX,
	 * so no sequence wraps), whatever the thread count was: a client
	 * may hold the cas of an item gone before the stop. */
	if (!v.why && h.cas_high > r.max_cas)
		r.max_cas = h.cas_high;
	for (unsigned int t = 0; t < c->threads; t++)
		atomic_store_explicit(&c->cas_seq[t].v,
				      r.max_cas / c->threads + 1,
				      memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (v.why)
		return 0;
	f->restore.items = r.items;
	f->restore.large_items = r.large_items;
	f->restore.expired = r.expired;
	f->restore.duplicates = r.duplicates;
	f->restore.segments = n;
	/* A clock that went back, or a stop time out of range: 0. */
	f->restore.down_seconds =
		h.stopped >= 0 && h.stopped <= r.now ? r.now - h.stopped : 0;
	f->restore.seconds = (double)(t1.tv_sec - t0.tv_sec) +
			     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return 0;
}
