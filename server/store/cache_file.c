/*
 * Warm restart: the arena in a file (cache_create_file). A graceful stop
 * seals the file; the next start with the same layout adopts its segments
 * in place and links their live items into a new table
 * (cache_file_restore.c). The file's layout is in cache_file.h.
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

#include "cache_file.h"

uint64_t cache__file_checksum(const void *p, size_t n)
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

static uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

/* The header as this cache would write it, unsealed. */
static void header_fill(struct cache *c, struct cache_file_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, CACHE_FILE_MAGIC, sizeof(h->magic));
	h->version = CACHE_FILE_VERSION;
	h->limit = c->file->limit;
	h->seg_size = c->seg_size;
	h->nsegs = c->nsegs;
	h->item_max = c->file->item_max;
	h->threads = c->threads;
	h->records_off = c->file->records_off;
	h->arena_off = c->file->arena_off;
	h->large_off = c->file->arena_off + c->nsegs * c->seg_size;
	h->check = cache__file_header_check(h);
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
static const char *unusable(struct cache *c, const struct cache_file_header *h,
			    off_t size, char *buf, size_t cap)
{
	if (memcmp(h->magic, CACHE_FILE_MAGIC, 4) != 0)
		return "not an rhkvd memory file";
	if (memcmp(h->magic, CACHE_FILE_MAGIC, sizeof(h->magic)) != 0 ||
	    h->version != CACHE_FILE_VERSION) {
		snprintf(buf, cap,
			 "format %.8s version %u, this rhkvd writes "
			 "%s version %u",
			 h->magic, h->version, CACHE_FILE_MAGIC,
			 CACHE_FILE_VERSION);
		return buf;
	}
	if (h->check != cache__file_header_check(h))
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
	/* The large items' area: read whole into memory at the restore, and
	 * the file is cut at its start then (an offset inside the arena
	 * would cut the arena from under its mapping). Its items were in
	 * memory under the limit, each in more bytes than its record. */
	if (h->large_off != h->arena_off + h->nsegs * h->seg_size)
		return "its large items' offset is not the arena's end";
	if ((uint64_t)size < h->large_off ||
	    (uint64_t)size - h->large_off < h->large_bytes)
		return "it is truncated";
	if (h->large_bytes > h->limit ||
	    h->large_count > h->large_bytes / CACHE_LARGE_RECORD_MIN)
		return "its large items' area is out of bounds";
	if (h->flush_due_ns < 0)
		return "its pending flush_all's time is out of bounds";
	if (h->cas_high > CACHE_SEQ_MAX)
		return "its highest cas is out of bounds";
	return NULL;
}

/* ---- opening ---- */

static void layout(struct cache *c)
{
	c->file->records_off = CACHE_FILE_PAGE;
	c->file->arena_off = round_up(
		CACHE_FILE_PAGE + c->nsegs * sizeof(struct cache_seg_record),
		CACHE_FILE_PAGE);
}

int cache__file_open(struct cache *c, const struct cache_file_config *fc,
		     char *err, size_t cap, bool *refused, bool *restorable)
{
	struct cache_file *f = calloc(1, sizeof(*f));
	struct cache_file_header h;
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
		header_fill(c, cache__file_header(c));
		msync(f->map, CACHE_FILE_PAGE, MS_SYNC);
	}
	*refused = false;
	return 0;
}

/* ---- sealing ---- */

struct seal_ctx {
	uint32_t order[2];
	int64_t now;
	uint64_t large_bytes, large_count;
	FILE *large; /* the large items' area, written behind the arena */
	bool failed;
};

/* Marks what is not live in a segment and records it as sealed. */
static void seal_segment(struct cache *c, struct seg *s, int log,
			 struct seal_ctx *x)
{
	size_t i = (size_t)(s->base - c->arena) / c->seg_size;
	struct cache_seg_record *rec = &cache__file_records(c)[i];

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
	}
	rhkv_rcu_read_unlock();
	rec->state = CACHE_REC_SEALED;
	rec->used = s->used;
	rec->log = (uint8_t)log;
	rec->order = x->order[log]++;
	rec->check = cache__file_checksum(s->base, s->used);
}

static void seal_large(struct cache *c, struct item *it, struct seal_ctx *x)
{
	struct cache_large_record lr = { .size = (uint32_t)item_size(it),
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
	lr.check = cache__file_checksum(it, lr.size);
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
	struct cache_file_header *h = cache__file_header(c);
	int fd;

	memset(cache__file_records(c), 0,
	       c->nsegs * sizeof(struct cache_seg_record));
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
	/* A delayed flush_all still pending is kept to the nanosecond: the
	 * next start applies it when it is due, to what it restores and to
	 * what is stored before then. */
	h->flush_due_ns =
		atomic_load_explicit(&c->flush_due_ns, memory_order_acquire);
	/* Every cas given out, not only those of the items kept: items
	 * flushed, expired or deleted before the stop took theirs along, and
	 * a client may still hold one for a cas command after the start. */
	h->cas_high = 0;
	for (unsigned int t = 0; t < c->threads; t++) {
		uint64_t seq = atomic_load_explicit(&c->cas_seq[t].v,
						    memory_order_relaxed);

		if (seq && seq * c->threads + t + 1 > h->cas_high)
			h->cas_high = seq * c->threads + t + 1;
	}
	h->check = cache__file_header_check(h);
	if (msync(f->map, f->map_bytes, MS_SYNC) || fsync(f->fd))
		return -1;
	/* Last, alone: the seal says everything before it is written. */
	h->sealed = 1;
	h->check = cache__file_header_check(h);
	return msync(f->map, CACHE_FILE_PAGE, MS_SYNC);
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
