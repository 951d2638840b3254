/*
 * libFuzzer target: the memory file's restore (cache_create_file on a
 * file a graceful stop sealed, then changed). The cache sources are
 * compiled in, with coverage.
 *
 * Input: a sealed image, compact: byte 0 says which checksums to make good
 * again after the bytes are laid out (bit 0: segments', bit 1: large
 * items', bit 2: the header's; a crafted file passes them all), then the
 * header, then every segment record, then for each record saying "sealed"
 * its used bytes (at most a segment), then the large items' area. The
 * file built from it has the layout a 4 MiB cache with -t 2 has, so that
 * every field may be wrong but the file's size.
 *
 * After the restore every item in the table is walked and read whole:
 * each must lie within its segment's written bytes or its own allocation,
 * be what its kind may hold (a segment item's value at most
 * ITEM_SEG_VALUE_MAX, as serving it assumes), and a new write must get a
 * write sequence above every restored one. Then it is sealed again. No
 * crash, abort or sanitizer report.
 *
 * With RHKV_FUZZ_FILE_SEEDS=DIR set, the initialisation writes its seed
 * images (made by a real cache) into DIR and exits: tests/fuzz/corpus/file.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rcu.h"
#include "server/store/cache_file.h"

#define LIMIT	 (4u << 20)
#define THREADS	 2u
#define ITEM_MAX (1u << 20)
/* A unix time far ahead (2096), for TTLs and a delayed flush_all that the
 * committed seeds keep, whenever they are replayed. */
#define FAR 4000000000

static char path[64];
static struct cache_file_header base; /* a sealed image's header */
static size_t arena_end;	      /* where the large items' area starts */

static struct cache_key key(const char *s)
{
	return (struct cache_key){ s, strlen(s) };
}

static struct cache *open_cache(void)
{
	const struct cache_file_config fc = { .path = path,
					      .owner = (unsigned int)geteuid(),
					      .item_max = ITEM_MAX };
	char err[300];
	bool refused;

	return cache_create_file(THREADS, LIMIT, &fc, err, sizeof(err),
				 &refused);
}

static void put(struct cache *c, unsigned int t, const char *k, uint32_t flags,
		uint32_t n, uint64_t cas, int64_t exptime)
{
	static char v[40000];
	struct cache_write w = { .mode = CACHE_SET,
				 .key = key(k),
				 .flags = flags,
				 .exptime = exptime,
				 .value = v,
				 .nbytes = n,
				 .cas_new = cas };

	memset(v, 'a' + (int)(n % 26), n);
	if (cache_write(c, t, &w, NULL) != CACHE_STORED)
		abort();
}

/* A sealed file of a few kinds of items: small and large ones, with and
 * without flags, a chosen cas (up to 2^64 - 1), TTLs, overwritten and
 * deleted ones (dead in their segment), and in variant 2 a delayed
 * flush_all pending. */
static void make_image(int variant)
{
	int n = variant == 0 ? 90 : 24;
	struct cache *c;
	char k[32];

	unlink(path);
	c = open_cache();
	if (!c)
		abort();
	/* Most on writer 0: one segment holds more than ITEM_SEG_VALUE_MAX,
	 * so a segment item's length may be raised past it in place. */
	for (int i = 0; i < n; i++) {
		uint32_t len = i == 7	? 17000 /* large: its value */
			       : i == 9 ? 4500	/* large: above an eighth */
					: 20 + (uint32_t)(i * 37 % 400);

		if (variant == 1 && i % 3)
			continue;
		snprintf(k, sizeof(k), "f:%d", i);
		put(c, i % 5 == 4 ? 1u : 0u, k, i % 3 ? (uint32_t)i : 0, len,
		    i % 11 == 0	 ? UINT64_MAX - (uint64_t)i
		    : i % 5 == 0 ? 12345
				 : 0,
		    i % 7 == 0 ? FAR : 0);
	}
	put(c, 0, "f:10", 0, 100, 0, 0); /* overwritten: one dead */
	cache_delete(c, key("f:12"));
	if (variant == 2)
		cache_flush(c, FAR);
	cache_destroy(c);
}

/* The image at path, compact (as an input). */
static size_t compact(char *out, size_t cap)
{
	int fd = open(path, O_RDONLY);
	struct cache_seg_record *rec;
	size_t n = 0, rb = base.nsegs * sizeof(*rec);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || cap < 1 + sizeof(base) + rb)
		abort();
	out[n++] = 7;
	if (pread(fd, out + n, sizeof(base), 0) != (ssize_t)sizeof(base))
		abort();
	n += sizeof(base);
	rec = malloc(rb);
	if (!rec || pread(fd, rec, rb, (off_t)base.records_off) != (ssize_t)rb)
		abort();
	memcpy(out + n, rec, rb);
	n += rb;
	for (size_t i = 0; i < base.nsegs; i++) {
		if (rec[i].state != CACHE_REC_SEALED)
			continue;
		if (n + rec[i].used > cap ||
		    pread(fd, out + n, rec[i].used,
			  (off_t)(base.arena_off + i * base.seg_size)) !=
			    (ssize_t)rec[i].used)
			abort();
		n += rec[i].used;
	}
	if (st.st_size > (off_t)arena_end) {
		size_t lb = (size_t)st.st_size - arena_end;

		if (n + lb > cap ||
		    pread(fd, out + n, lb, (off_t)arena_end) != (ssize_t)lb)
			abort();
		n += lb;
	}
	close(fd);
	free(rec);
	return n;
}

static void write_seeds(const char *dir)
{
	static char buf[1 << 20];

	for (int v = 0; v < 3; v++) {
		char name[512];
		size_t n;
		FILE *f;

		make_image(v);
		n = compact(buf, sizeof(buf));
		snprintf(name, sizeof(name), "%s/sealed-%d", dir, v);
		f = fopen(name, "wb");
		if (!f || fwrite(buf, n, 1, f) != 1 || fclose(f))
			abort();
	}
	unlink(path);
	exit(0);
}

static void cleanup(void)
{
	unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("RHKV_FUZZ_FILE_SEEDS");
	int fd;

	(void)argc;
	(void)argv;
	log_init("fuzz_file", LOG_ERROR);
	rhkv_rcu_register_thread();
	snprintf(path, sizeof(path), "/dev/shm/rhkv-fuzz-file-%d",
		 (int)getpid());
	atexit(cleanup);
	make_image(0);
	fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, &base, sizeof(base), 0) != sizeof(base))
		abort();
	close(fd);
	arena_end = base.arena_off + base.nsegs * base.seg_size;
	if (seeds)
		write_seeds(seeds);
	return 0;
}

/* ---- building the file ---- */

static void reseal_large(char *area, size_t n)
{
	size_t off = 0;

	while (n - off >= sizeof(struct cache_large_record)) {
		struct cache_large_record lr;

		memcpy(&lr, area + off, sizeof(lr));
		off += sizeof(lr);
		if (lr.size > n - off)
			return;
		lr.check = cache__file_checksum(area + off, lr.size);
		memcpy(area + off - sizeof(lr), &lr, sizeof(lr));
		off += ((size_t)lr.size + 7) & ~(size_t)7;
		if (off > n)
			return;
	}
}

/* Lays the input out as a file at path; false when it is too short. */
static bool build_file(const uint8_t *data, size_t size)
{
	size_t rb = base.nsegs * sizeof(struct cache_seg_record);
	struct cache_file_header h;
	struct cache_seg_record *rec;
	static char *seg;
	size_t off = 1 + sizeof(h) + rb;
	char *large;
	int fd;
	bool ok = true;

	if (size < off)
		return false;
	if (!seg && !(seg = malloc(base.seg_size)))
		abort();
	rec = malloc(rb);
	memcpy(&h, data + 1, sizeof(h));
	memcpy(rec, data + 1 + sizeof(h), rb);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !rec)
		abort();
	for (size_t i = 0; i < base.nsegs; i++) {
		size_t n;

		if (rec[i].state != CACHE_REC_SEALED)
			continue;
		n = rec[i].used < base.seg_size ? rec[i].used : base.seg_size;
		n = n < size - off ? n : size - off;
		memset(seg, 0, base.seg_size);
		memcpy(seg, data + off, n);
		off += n;
		if (data[0] & 1)
			rec[i].check = cache__file_checksum(
				seg, rec[i].used < base.seg_size
					     ? rec[i].used
					     : base.seg_size);
		ok &= pwrite(fd, seg, n,
			     (off_t)(base.arena_off + i * base.seg_size)) ==
		      (ssize_t)n;
	}
	large = malloc(size - off + 1);
	memcpy(large, data + off, size - off);
	if (data[0] & 2)
		reseal_large(large, size - off);
	if (data[0] & 4)
		h.check = cache__file_header_check(&h);
	ok &= ftruncate(fd, (off_t)(arena_end + size - off)) == 0 &&
	      pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	      pwrite(fd, rec, rb, (off_t)base.records_off) == (ssize_t)rb &&
	      pwrite(fd, large, size - off, (off_t)arena_end) ==
		      (ssize_t)(size - off);
	free(large);
	free(rec);
	close(fd);
	if (!ok)
		abort();
	return true;
}

/* ---- what a restored cache serves ---- */

struct walk {
	struct cache *c;
	uint64_t max_seq;
	uint64_t sum; /* of every byte read, so no read is left out */
	char keys[64][CACHE_KEY_MAX];
	size_t nkey[64];
	unsigned int nkeys;
};

static void fail(const char *why)
{
	fprintf(stderr, "fuzz_file: %s\n", why);
	abort();
}

/* The item lies within its segment's written bytes, or is a large one
 * (its own allocation: ASan checks the reads). */
static void check_item(struct walk *w, const struct item *it)
{
	struct cache *c = w->c;
	size_t size = item_size(it);
	const char *p = (const char *)it;

	if (it->nkey == 0 || it->nkey > CACHE_KEY_MAX)
		fail("a key length out of range");
	if (!cache__item_is_large(it)) {
		size_t i;
		const struct seg *s;

		if (p < c->arena || p >= c->arena + c->arena_bytes)
			fail("a segment item outside the arena");
		i = (size_t)(p - c->arena) / c->seg_size;
		s = &c->segs[i];
		if (p + size > s->base + s->used)
			fail("an item past its segment's written bytes");
		/* A reply references a value above this instead of
		 * copying it, which only a large item allows. */
		if (item_nbytes(it) > ITEM_SEG_VALUE_MAX)
			fail("a segment item above the segment limit");
	} else {
		item_get((struct item *)it);
		item_put((struct item *)it);
	}
	for (size_t k = 0; k < size; k++)
		w->sum += (unsigned char)p[k];
	w->sum += item_cas(it) + item_flags(it);
	if (it->cas > w->max_seq)
		w->max_seq = it->cas;
}

static void visit(const struct item *it, void *arg)
{
	struct walk *w = arg;

	check_item(w, it);
	if (w->nkeys < 64) {
		memcpy(w->keys[w->nkeys], item_key(it), it->nkey);
		w->nkey[w->nkeys++] = it->nkey;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct walk w;
	struct cache *c;
	uint64_t cursor = 0, seq = 0;
	struct cache_write wr = { .mode = CACHE_SET,
				  .key = { "fuzz:new", 8 },
				  .value = "v",
				  .nbytes = 1,
				  .seq_out = &seq };
	int laps = 0;

	if (!build_file(data, size))
		return 0;
	c = open_cache();
	if (!c)
		return 0;
	memset(&w, 0, sizeof(w));
	w.c = c;
	rhkv_rcu_read_lock();
	do
		cursor = cache_scan(c, cursor, 64, visit, &w);
	while (cursor && ++laps < 100000);
	rhkv_rcu_read_unlock();
	/* Served as a get serves them. */
	for (unsigned int i = 0; i < w.nkeys; i++) {
		struct item *it;

		rhkv_rcu_read_lock();
		it = cache_find(c, (struct cache_key){ w.keys[i], w.nkey[i] },
				NULL);
		if (it)
			check_item(&w, it);
		rhkv_rcu_read_unlock();
	}
	if (cache_write(c, 0, &wr, NULL) == CACHE_STORED && seq <= w.max_seq)
		fail("a new write sequence not above a restored one");
	cache_destroy(c); /* sealed again: every segment walked */
	return 0;
}

/* ---- mutating fields ---- */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

/* A field of the compact image: where, and how wide (1, 2, 4 or 8). */
struct field {
	size_t at;
	unsigned int width;
	size_t room; /* a length field's: the bytes after it, or 0 */
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A value for a field that was old: the bounds a check may be off by one
 * at, the limits of the layout, small steps, or anything. */
static uint64_t pick_value(uint64_t *s, const struct field *f, uint64_t old)
{
	static const uint64_t marks[] = {
		0,
		1,
		ITEM_HEADER_BYTES,
		CACHE_KEY_MAX,
		CACHE_KEY_MAX + 1,
		ITEM_SEG_VALUE_MAX,
		ITEM_SEG_VALUE_MAX + 1,
		ITEM_NBYTES_LARGE,
		CACHE_SEQ_MAX,
		CACHE_SEQ_MAX + 1,
		ITEM_MAX,
		ITEM_MAX + 1,
		LIMIT,
		UINT32_MAX,
		UINT64_MAX,
		UINT64_MAX / 2,
	};
	uint64_t r = rng_next(s);
	unsigned int width = f->width;

	if (f->room && r % 3 == 0) /* up to the end of what holds it */
		return f->room - (r >> 8) % 16;
	switch (r % 6) {
	case 0:
		return marks[(r >> 8) % (sizeof(marks) / sizeof(marks[0]))];
	case 1:
		return old + 1 + (r >> 8) % 64;
	case 2:
		return old - 1 - (r >> 8) % 64;
	case 3:
		return old + (r >> 8) % (width >= 2 ? 20000 : 256);
	case 4:
		return old ^ (1ull << ((r >> 8) % (8 * width)));
	default:
		return r >> 3;
	}
}

/* The header's fields, the records', and the item headers found in the
 * sealed segments' bytes and the large items' area (as far as they can be
 * walked). */
static size_t fields_of(const uint8_t *d, size_t size, struct field *f,
			size_t cap)
{
	static const struct field item_fields[] = {
		{ 8, 8 }, { 16, 4 }, { 20, 4 }, { 24, 2 }, { 26, 1 }, { 27, 1 },
	};
	size_t rb = base.nsegs * sizeof(struct cache_seg_record);
	size_t n = 0, off = 1 + sizeof(base) + rb;

	for (size_t a = 0; a + 8 <= sizeof(base) && n < cap; a += 4)
		f[n++] = (struct field){ 1 + a, a % 8 ? 4 : 8 };
	for (size_t i = 0; i < base.nsegs && off <= size; i++) {
		struct cache_seg_record rec;
		size_t end, at;

		memcpy(&rec, d + 1 + sizeof(base) + i * sizeof(rec),
		       sizeof(rec));
		if (rec.state != CACHE_REC_SEALED)
			continue;
		at = 1 + sizeof(base) + i * sizeof(rec);
		for (size_t k = 0; k < 4 && n < cap; k++)
			f[n++] = (struct field){ at + 4 * k, k == 3 ? 1 : 4 };
		end = off +
		      (rec.used < base.seg_size ? rec.used : base.seg_size);
		end = end < size ? end : size;
		while (off + ITEM_HEADER_BYTES <= end && n + 6 <= cap) {
			struct item it;
			size_t len;

			memcpy(&it, d + off, sizeof(it));
			for (size_t k = 0; k < 6; k++)
				f[n++] = (struct field){
					off + item_fields[k].at,
					item_fields[k].width,
					k == 3 ? end - off - ITEM_HEADER_BYTES
					       : 0
				};
			if (it.nbytes16 == ITEM_NBYTES_LARGE || !it.nkey)
				break;
			len = ITEM_HEADER_BYTES + it.nkey + it.nbytes16 +
			      (it.usage & ITEM_HAS_FLAGS ? 4 : 0) +
			      (it.usage & ITEM_CAS_CHOSEN ? 8 : 0);
			off += (len + 7) & ~(size_t)7;
		}
		off = end;
	}
	while (off + sizeof(struct cache_large_record) + ITEM_HEADER_BYTES <=
		       size &&
	       n + 8 <= cap) {
		struct cache_large_record lr;

		memcpy(&lr, d + off, sizeof(lr));
		f[n++] = (struct field){ off, 4, size - off - sizeof(lr) };
		f[n++] = (struct field){ off + 4, 4, size - off - sizeof(lr) };
		off += sizeof(lr);
		for (size_t k = 0; k < 6; k++)
			f[n++] = (struct field){ off + item_fields[k].at,
						 item_fields[k].width };
		off += ((size_t)lr.size + 7) & ~(size_t)7;
	}
	return n;
}

/*
 * Half the time, sets one to three fields of the image (header, a segment
 * record, an item header, a large record) to values near the bounds its
 * checks draw, keeping the checksums good (byte 0: 7), so that a mutation
 * reaches what lies behind them; otherwise libFuzzer's own byte mutations.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	static struct field f[4096];
	uint64_t s = seed | 1ull << 40;
	size_t n;

	if (size < 1 + sizeof(base) || rng_next(&s) % 2)
		return LLVMFuzzerMutate(data, size, max);
	n = fields_of(data, size, f, sizeof(f) / sizeof(f[0]));
	if (!n)
		return LLVMFuzzerMutate(data, size, max);
	data[0] = 7;
	for (uint64_t k = rng_next(&s) % 3 + 1; k > 0; k--) {
		const struct field *p = &f[rng_next(&s) % n];
		uint64_t old = 0, v;

		if (p->at + p->width > size)
			continue;
		memcpy(&old, data + p->at, p->width);
		v = pick_value(&s, p, old);
		memcpy(data + p->at, &v, p->width); /* little-endian */
	}
	return size;
}
