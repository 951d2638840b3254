/*
 * Warm restart: the arena in a file (cache_create_file). A graceful stop
 * seals the file; the next start with the same layout adopts its segments
 * in place and links their live items into a new table. The layout of the
 * file:
 *
 *   header        one page: magic, format, the layout (limit, segment
 *                 size, segments, item size limit), the stop time, the
 *                 large items' area, whether it is sealed, a checksum
 *   records       a record per segment: sealed or free, bytes used, its
 *                 eviction log and place in it, a checksum of its bytes
 *   arena         the segments, items as they are in memory
 *   large items   written at the stop (they live in allocations of their
 *                 own while the server runs), each with a checksum
 *
 * What is trusted: only a file sealed by a graceful stop, whose layout
 * matches the settings, and within it only segments (and large items)
 * whose checksum holds. A start marks the file unsealed before anything
 * changes in it, so a crash at any later moment (or during the next seal)
 * leaves a file the next start will not trust: it starts empty, and says
 * why. Items hold no pointer that a restart has to fix but their table
 * chain, which linking them again rewrites.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cache_internal.h"

#define FILE_MAGIC   "RHKVARN1"
#define FILE_VERSION 1u
#define PAGE	     4096u

/* An item that was not live when the file was sealed (a usage bit no
 * running cache sets). */
#define ITEM_SEALED_DEAD 128u

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t sealed; /* 1: a graceful stop wrote it, nothing since */
	uint64_t limit, seg_size, nsegs;
	uint32_t item_max, threads;
	uint64_t records_off, arena_off;
	uint64_t large_off, large_bytes, large_count;
	int64_t stopped; /* unix seconds */
	uint64_t check;	 /* of the bytes above */
};

enum { REC_FREE, REC_SEALED };

struct seg_record {
	uint32_t state;
	uint32_t used;
	uint32_t order; /* place in its log, oldest first */
	uint8_t log;
	uint8_t pad[3];
	uint64_t check;
};

/* A large item in the area after the arena: this, then its size bytes
 * (header and data, as in memory), padded to 8. */
struct large_record {
	uint32_t size;	 /* item_size() */
	uint32_t nbytes; /* its value's length */
	uint64_t check;	 /* of the item's bytes */
};

struct cache_file {
	int fd;
	char *map; /* header, records, arena */
	size_t map_bytes;
	uint64_t records_off, arena_off;
	/* The layout's: -m at the start (cache_memlimit may change the
	 * limit later, not the file's segments) and -I. */
	uint64_t limit;
	uint32_t item_max;
	struct cache_restore restore;
};

/* Four independent lanes of multiply and shift: a checksum against torn
 * and flipped bytes (not an adversary), at several bytes a cycle. */
static uint64_t checksum(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h[4] = { n, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
			  0x165667b19e3779f9ull };
	uint64_t w;

	for (; n >= 32; n -= 32, b += 32)
		for (int i = 0; i < 4; i++) {
			memcpy(&w, b + 8 * i, 8);
			h[i] = (h[i] ^ w) * 0xff51afd7ed558ccdull;
			h[i] ^= h[i] >> 29;
		}
	for (; n; n--, b++)
		h[0] = (h[0] ^ *b) * 0x100000001b3ull;
	w = h[0] ^ (h[1] * 31) ^ (h[2] * 961) ^ (h[3] * 29791);
	w ^= w >> 31;
	return w * 0x94d049bb133111ebull;
}

static uint64_t header_check(const struct file_header *h)
{
	return checksum(h, offsetof(struct file_header, check));
}

static uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

static struct file_header *header(struct cache *c)
{
	return (struct file_header *)c->file->map;
}

static struct seg_record *records(struct cache *c)
{
	return (struct seg_record *)(c->file->map + c->file->records_off);
}

/* The header as this cache would write it, unsealed. */
static void header_fill(struct cache *c, struct file_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, FILE_MAGIC, sizeof(h->magic));
	h->version = FILE_VERSION;
	h->limit = c->file->limit;
	h->seg_size = c->seg_size;
	h->nsegs = c->nsegs;
	h->item_max = c->file->item_max;
	h->threads = c->threads;
	h->records_off = c->file->records_off;
	h->arena_off = c->file->arena_off;
	h->large_off = c->file->arena_off + c->nsegs * c->seg_size;
	h->check = header_check(h);
}

/* ---- opening ---- */

static int refuse(char *err, size_t cap, const char *path, const char *why)
{
	snprintf(err, cap, "memory file %s: %s", path, why);
	return -1;
}

/*
 * Opens (or creates, mode 0600, owned by owner) the file and checks that
 * nobody else may read or write it: it holds every cached value. -1 with
 * err set; *refused when it is the file that is refused (its owner, its
 * mode, what it is), not the system.
 */
static int open_file(const struct cache_file_config *fc, char *err, size_t cap,
		     bool *refused, int *fd_out)
{
	struct stat st;
	bool created = true;
	int fd = open(fc->path,
		      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	/* Only a file this open created is given to owner: an empty one
	 * someone else made (in /dev/shm anyone may) could still be open
	 * in their process, and would show them every value stored. */
	if (fd < 0 && errno == EEXIST) {
		created = false;
		fd = open(fc->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	*refused = false;
	if (fd < 0) {
		*refused = errno == ELOOP;
		return refuse(err, cap, fc->path,
			      errno == ELOOP ? "is a symbolic link"
					     : strerror(errno));
	}
	*fd_out = fd;
	if (fstat(fd, &st)) {
		close(fd);
		return refuse(err, cap, fc->path, strerror(errno));
	}
	*refused = true;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(err, cap, fc->path, "is not a regular file");
	}
	if (created && st.st_uid != fc->owner &&
	    fchown(fd, fc->owner, (gid_t)-1) == 0)
		st.st_uid = fc->owner;
	if (st.st_uid != fc->owner) {
		char why[96];

		snprintf(why, sizeof(why),
			 "owned by uid %u, not by the server's user (uid %u)",
			 (unsigned int)st.st_uid, (unsigned int)fc->owner);
		close(fd);
		return refuse(err, cap, fc->path, why);
	}
	if (st.st_mode & 077) {
		close(fd);
		return refuse(err, cap, fc->path,
			      "other users may read or write it (it holds "
			      "every cached value): chmod 600 it");
	}
	*refused = false;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return refuse(err, cap, fc->path,
			      errno == EWOULDBLOCK ? "in use by another rhkvd"
						   : strerror(errno));
	}
	return 0;
}

/* Why the file's contents cannot be restored, or NULL when they can. */
static const char *unusable(struct cache *c, const struct file_header *h,
			    off_t size, char *buf, size_t cap)
{
	if (memcmp(h->magic, FILE_MAGIC, 4) != 0)
		return "not an rhkvd memory file";
	if (memcmp(h->magic, FILE_MAGIC, sizeof(h->magic)) != 0 ||
	    h->version != FILE_VERSION) {
		snprintf(buf, cap,
			 "format %.8s version %u, this rhkvd writes "
			 "%s version %u",
			 h->magic, h->version, FILE_MAGIC, FILE_VERSION);
		return buf;
	}
	if (h->check != header_check(h))
		return "its header is corrupt";
	if (!h->sealed)
		return "it was not sealed: the server did not stop cleanly "
		       "(a crash, SIGKILL, or a failed stop), so its "
		       "contents are not trusted";
	if (h->limit != cache__limit(c)) {
		snprintf(buf, cap, "-m was %llu MiB, now %llu MiB",
			 (unsigned long long)(h->limit >> 20),
			 (unsigned long long)(cache__limit(c) >> 20));
		return buf;
	}
	if (h->item_max != c->file->item_max) {
		snprintf(buf, cap, "-I was %u bytes, now %u", h->item_max,
			 c->file->item_max);
		return buf;
	}
	if (h->seg_size != c->seg_size || h->nsegs != c->nsegs ||
	    h->records_off != c->file->records_off ||
	    h->arena_off != c->file->arena_off)
		return "its segment layout differs from this build's";
	if ((uint64_t)size < h->large_off + h->large_bytes)
		return "it is truncated";
	return NULL;
}

/* ---- restoring ---- */

struct restore_ctx {
	int64_t now;
	uint64_t max_cas;
	unsigned long items, large_items, expired, duplicates;
};

/* Links one item found in the file; false when it is not to be. */
static bool restore_item(struct cache *c, struct item *it,
			 struct restore_ctx *r)
{
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	struct cache_key k = { item_key(it), it->nkey };

	if (exp && exp <= r->now) {
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

/* The item at off of a segment, if its header lies within used. */
static struct item *item_at(char *base, uint32_t off, uint32_t used)
{
	struct item *it = (struct item *)(base + off);

	if (off + ITEM_HEADER_BYTES > used || it->nkey == 0 ||
	    it->nbytes16 == ITEM_NBYTES_LARGE || off + item_size(it) > used)
		return NULL;
	return it;
}

/* Segments sealed in the file whose checksum holds, by log and order. */
static int by_order(const void *a, const void *b, void *arg)
{
	const struct seg_record *rec = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (rec[x].log != rec[y].log)
		return rec[x].log < rec[y].log ? -1 : 1;
	return rec[x].order < rec[y].order ? -1 : rec[x].order > rec[y].order;
}

static void restore_segments(struct cache *c, struct restore_ctx *r,
			     uint32_t *idx, uint32_t n)
{
	struct seg_record *rec = records(c);

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
		for (uint32_t off = 0; off < s->used;) {
			struct item *it = item_at(s->base, off, s->used);

			if (!it)
				break; /* the checksum held: cannot happen */
			off += cache__seg_bytes(it);
			if (!(item__usage(it) & ITEM_SEALED_DEAD))
				restore_item(c, it, r);
		}
		atomic_store_explicit(&s->published, s->used,
				      memory_order_relaxed);
		cache__seal(c, s, rec[idx[k]].log);
	}
}

static void restore_large(struct cache *c, struct restore_ctx *r,
			  const struct file_header *h)
{
	char *area;
	uint64_t off = 0;

	if (!h->large_bytes)
		return;
	area = malloc(h->large_bytes);
	if (!area || pread(c->file->fd, area, h->large_bytes,
			   (off_t)h->large_off) != (ssize_t)h->large_bytes) {
		free(area);
		c->file->restore.corrupt_large += h->large_count;
		return;
	}
	for (uint64_t i = 0; i < h->large_count; i++) {
		struct large_record lr;
		struct cache_room need;
		struct item *src, *it;

		if (off + sizeof(lr) > h->large_bytes)
			break;
		memcpy(&lr, area + off, sizeof(lr));
		off += sizeof(lr);
		if (lr.size < ITEM_HEADER_BYTES ||
		    off + lr.size > h->large_bytes ||
		    checksum(area + off, lr.size) != lr.check) {
			c->file->restore.corrupt_large++;
			break; /* the records after it cannot be found */
		}
		src = (struct item *)(area + off);
		off += round_up(lr.size, 8);
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
	free(area);
}

/* Checks the segments' checksums; indexes of the good ones into idx, the
 * count of items they hold (for the table's first size) into *items. */
static uint32_t check_segments(struct cache *c, uint32_t *idx,
			       unsigned long *items)
{
	struct seg_record *rec = records(c);
	uint32_t n = 0;

	*items = 0;
	for (size_t i = 0; i < c->nsegs; i++) {
		char *base = c->arena + i * c->seg_size;

		if (rec[i].state != REC_SEALED)
			continue;
		if (rec[i].used > c->seg_size || rec[i].log > LOG_KEPT ||
		    checksum(base, rec[i].used) != rec[i].check) {
			c->file->restore.corrupt_segments++;
			rec[i].state = REC_FREE;
			continue;
		}
		for (uint32_t off = 0; off < rec[i].used;) {
			struct item *it = item_at(base, off, rec[i].used);

			if (!it)
				break;
			off += cache__seg_bytes(it);
			(*items)++;
		}
		idx[n++] = (uint32_t)i;
	}
	return n;
}

/* Segments not restored: free, their stale pages given back. */
static void release_unused(struct cache *c)
{
	struct seg_record *rec = records(c);

	for (size_t i = c->nsegs; i-- > 0;) {
		struct seg *s = &c->segs[i];

		if (rec[i].state == REC_SEALED)
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

int cache__file_restore(struct cache *c)
{
	struct cache_file *f = c->file;
	struct restore_ctx r = { .now = cache_now() };
	struct file_header h = *header(c);
	struct timespec t0, t1;
	uint32_t *idx;
	uint32_t n;
	unsigned long items;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* From here on a crash leaves a file nobody trusts. */
	header(c)->sealed = 0;
	header(c)->check = header_check(header(c));
	msync(f->map, PAGE, MS_SYNC);
	idx = malloc(c->nsegs * sizeof(*idx));
	if (!idx)
		return -1;
	n = check_segments(c, idx, &items);
	if (cache__table_init(c, items)) {
		free(idx);
		return -1;
	}
	restore_segments(c, &r, idx, n);
	free(idx);
	release_unused(c);
	restore_large(c, &r, &h);
	/* The large items are in memory now: the file ends with the arena. */
	if (ftruncate(f->fd, (off_t)h.large_off))
		f->restore.large_not_freed = true;
	for (unsigned int t = 0; t < c->threads; t++)
		atomic_store_explicit(&c->cas_seq[t].v,
				      r.max_cas / c->threads + 1,
				      memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f->restore.items = r.items;
	f->restore.large_items = r.large_items;
	f->restore.expired = r.expired;
	f->restore.duplicates = r.duplicates;
	f->restore.segments = n;
	f->restore.down_seconds = r.now - h.stopped;
	f->restore.seconds = (double)(t1.tv_sec - t0.tv_sec) +
			     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return 0;
}

/* ---- opening ---- */

static void layout(struct cache *c)
{
	c->file->records_off = PAGE;
	c->file->arena_off =
		round_up(PAGE + c->nsegs * sizeof(struct seg_record), PAGE);
}

int cache__file_open(struct cache *c, const struct cache_file_config *fc,
		     char *err, size_t cap, bool *refused, bool *restorable)
{
	struct cache_file *f = calloc(1, sizeof(*f));
	struct file_header h;
	struct statfs sfs;
	struct stat st;
	char why[160];
	const char *bad = NULL;
	uint64_t end;

	*restorable = false;
	if (!f)
		return refuse(err, cap, fc->path, "out of memory");
	f->fd = -1;
	f->item_max = fc->item_max;
	f->limit = cache__limit(c);
	c->file = f;
	if (open_file(fc, err, cap, refused, &f->fd))
		return -1;
	layout(c);
	end = f->arena_off + c->nsegs * c->seg_size;
	if (fstat(f->fd, &st))
		return refuse(err, cap, fc->path, strerror(errno));
	if (fstatfs(f->fd, &sfs) == 0)
		f->restore.slow_fs =
			sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC;
	if (st.st_size == 0) {
		f->restore.how = CACHE_RESTORE_NEW;
	} else if (pread(f->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		bad = "it is truncated";
	} else {
		bad = unusable(c, &h, st.st_size, why, sizeof(why));
	}
	if (bad) {
		f->restore.how = CACHE_RESTORE_EMPTY;
		snprintf(f->restore.why, sizeof(f->restore.why), "%s", bad);
	}
	*restorable = !bad && f->restore.how != CACHE_RESTORE_NEW;
	if (*restorable)
		f->restore.how = CACHE_RESTORE_RESTORED;
	/* A file whose contents go is emptied first: its old pages are
	 * freed, and no stale byte can be mistaken for data. */
	if ((!*restorable && ftruncate(f->fd, 0)) ||
	    ftruncate(f->fd,
		      (off_t)(*restorable ? h.large_off + h.large_bytes : end)))
		return refuse(err, cap, fc->path, strerror(errno));
	f->map_bytes = end;
	f->map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		      f->fd, 0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		return refuse(err, cap, fc->path, strerror(errno));
	}
	c->arena = f->map + f->arena_off;
	c->arena_bytes = c->nsegs * c->seg_size;
	if (!*restorable) {
		header_fill(c, header(c));
		msync(f->map, PAGE, MS_SYNC);
	}
	*refused = false;
	return 0;
}

/* ---- sealing ---- */

struct seal_ctx {
	uint32_t order[2];
	int64_t now;
	uint32_t flush_at; /* a delayed flush_all's second, or 0 */
	uint64_t large_bytes, large_count;
	FILE *large; /* the large items' area, written behind the arena */
	bool failed;
};

/*
 * A delayed flush_all pending at the stop would be forgotten (it lives in
 * memory, not in the file) and every item it was to kill would come back
 * and outlive it: the item expires when the flush was due instead (to the
 * second, rounded up, as exptime has it).
 */
static void expire_at_flush(struct item *it, const struct seal_ctx *x)
{
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);

	if (x->flush_at && (!exp || exp > x->flush_at))
		atomic_store_explicit(&it->exptime, x->flush_at,
				      memory_order_relaxed);
}

/* Marks what is not live in a segment and records it as sealed. */
static void seal_segment(struct cache *c, struct seg *s, int log,
			 struct seal_ctx *x)
{
	size_t i = (size_t)(s->base - c->arena) / c->seg_size;
	struct seg_record *rec = &records(c)[i];

	rhkv_rcu_read_lock();
	for (uint32_t off = 0; off < s->used;) {
		struct item *it = (struct item *)(s->base + off);
		struct cache_key k = { item_key(it), it->nkey };
		bool live =
			rhashtable_lookup(&c->ht, &k, cache__params) == it &&
			cache_item_live(c, it, x->now);

		off += cache__seg_bytes(it);
		if (!live)
			atomic_fetch_or_explicit(&it->usage, ITEM_SEALED_DEAD,
						 memory_order_relaxed);
		else
			expire_at_flush(it, x);
	}
	rhkv_rcu_read_unlock();
	rec->state = REC_SEALED;
	rec->used = s->used;
	rec->log = (uint8_t)log;
	rec->order = x->order[log]++;
	rec->check = checksum(s->base, s->used);
}

static void seal_large(struct cache *c, struct item *it, struct seal_ctx *x)
{
	struct large_record lr = { .size = (uint32_t)item_size(it),
				   .nbytes = item_nbytes(it) };
	static const char zeros[8];
	struct cache_key k = { item_key(it), it->nkey };
	bool live;

	rhkv_rcu_read_lock();
	live = rhashtable_lookup(&c->ht, &k, cache__params) == it &&
	       cache_item_live(c, it, x->now);
	rhkv_rcu_read_unlock();
	if (!live || x->failed)
		return;
	expire_at_flush(it, x);
	lr.check = checksum(it, lr.size);
	if (fwrite(&lr, sizeof(lr), 1, x->large) != 1 ||
	    fwrite(it, lr.size, 1, x->large) != 1 ||
	    fwrite(zeros, round_up(lr.size, 8) - lr.size, 1, x->large) > 1) {
		x->failed = true;
		return;
	}
	x->large_bytes += sizeof(lr) + round_up(lr.size, 8);
	x->large_count++;
}

int cache__file_seal(struct cache *c)
{
	struct cache_file *f = c->file;
	struct seal_ctx x = { .now = cache_now() };
	struct file_header *h = header(c);
	int64_t due =
		atomic_load_explicit(&c->flush_due_ns, memory_order_acquire);
	int fd;

	if (due) {
		int64_t at = (due + 999999999) / 1000000000;

		x.flush_at = at > UINT32_MAX ? UINT32_MAX : (uint32_t)at;
	}

	memset(records(c), 0, c->nsegs * sizeof(struct seg_record));
	header_fill(c, h);
	fd = dup(f->fd);
	x.large = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!x.large || fseeko(x.large, (off_t)h->large_off, SEEK_SET)) {
		if (x.large)
			fclose(x.large);
		else if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Oldest first, so that each log comes back in its order. */
	for (int l = 0; l < 2; l++)
		for (struct seg *u = c->logs[l].tail; u; u = u->newer) {
			if (u->large)
				seal_large(c, (struct item *)u->base, &x);
			else
				seal_segment(c, u, l, &x);
		}
	/* Open segments: the newest of their logs. */
	for (unsigned int t = 0; t <= c->threads; t++) {
		struct seg *s = atomic_load_explicit(&c->writers[t].open,
						     memory_order_relaxed);

		if (s)
			seal_segment(c, s, t == c->threads ? LOG_KEPT : LOG_NEW,
				     &x);
	}
	if (fclose(x.large) || x.failed)
		return -1;
	h->large_bytes = x.large_bytes;
	h->large_count = x.large_count;
	h->stopped = x.now;
	h->check = header_check(h);
	if (msync(f->map, f->map_bytes, MS_SYNC) || fsync(f->fd))
		return -1;
	/* Last, alone: the seal says everything before it is written. */
	h->sealed = 1;
	h->check = header_check(h);
	return msync(f->map, PAGE, MS_SYNC);
}

void cache__file_close(struct cache *c)
{
	struct cache_file *f = c->file;

	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->map_bytes);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
	c->file = NULL;
	c->arena = NULL;
}

void cache_get_restore(struct cache *c, struct cache_restore *r)
{
	if (c->file)
		*r = c->file->restore;
	else
		memset(r, 0, sizeof(*r));
}
