/*
 * Warm restart at the cache API (cache_create_file): a sealed file comes
 * back whole (values, flags, cas, exptimes, large items, cas continuing
 * above), and everything else starts empty or drops only what is damaged:
 * a file never sealed (a crash), other settings, another format, a
 * truncated file, a corrupted segment or large item, and a file whose
 * checksums hold but whose fields are out of bounds (a crafted one: a large
 * item's length beyond its allocation, the large items' offset inside the
 * arena, a segment item above the segment limit, a write sequence or key
 * length out of range); and the file's mode, owner and kind are checked.
 * The thread count may change.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rcu.h"
#include "harness.h" /* H_SANITIZED_BUILD */
#include "server/store/cache.h"
#include "server/store/cache_file.h" /* crafted files: the layout */

#define MB (1u << 20)

static char dir[64], path[96];

static void setup(void)
{
	rhkv_rcu_register_thread();
	snprintf(dir, sizeof(dir), "/dev/shm/rhkv-cache-file-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cache", dir);
}

static void teardown(void)
{
	char link[128];

	snprintf(link, sizeof(link), "%s/link", dir);
	unlink(link);
	unlink(path);
	rmdir(dir);
	rhkv_rcu_unregister_thread();
}

TestSuite(cache_file, .init = setup, .fini = teardown, .timeout = 120);

static struct cache *open_threads(unsigned int threads, uint64_t limit,
				  uint32_t item_max, struct cache_restore *r)
{
	const struct cache_file_config fc = { .path = path,
					      .owner = (unsigned int)geteuid(),
					      .item_max = item_max };
	char err[300];
	bool refused;
	struct cache *c = cache_create_file(threads, limit, &fc, err,
					    sizeof(err), &refused);

	cr_assert_not_null(c, "%s", err);
	cache_get_restore(c, r);
	return c;
}

static struct cache *open_cache(uint64_t limit, uint32_t item_max,
				struct cache_restore *r)
{
	return open_threads(2, limit, item_max, r);
}

static struct cache_key key(const char *s)
{
	return (struct cache_key){ s, strlen(s) };
}

/* A value that names its key and version, so a wrong one shows. */
static size_t value_of(char *v, size_t size, const char *k, unsigned int ver)
{
	int n = snprintf(v, size, "%s/%u/", k, ver);

	for (size_t i = (size_t)n; i < size; i++)
		v[i] = (char)('a' + (i * 7 + ver) % 26);
	return size;
}

struct got {
	bool hit;
	uint32_t flags, exptime;
	uint64_t cas;
	size_t n;
	char v[200000];
};

static void get(struct cache *c, const char *k, struct got *g)
{
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(c, key(k), NULL);
	g->hit = it != NULL;
	if (it) {
		g->n = item_nbytes(it);
		cr_assert_leq(g->n, sizeof(g->v));
		memcpy(g->v, item_value(it), g->n);
		g->flags = item_flags(it);
		g->cas = item_cas(it);
		g->exptime = atomic_load(&it->exptime);
	}
	rhkv_rcu_read_unlock();
}

/* Item i: its size (a few large ones). Every 10th gets a TTL that ends
 * while the cache is down, every 7th one long after, the others none. */
static size_t size_of(int i)
{
	return i % 997 == 0 ? 20000 + (size_t)(i % 5) * 30000
			    : 10 + (size_t)(i * 31 % 300);
}

static struct got g;

Test(cache_file, sealed_file_comes_back_whole)
{
	int n = H_SANITIZED_BUILD ? 50000 : 500000;
	int64_t now = cache_now();
	struct cache_restore r;
	struct cache *c = open_cache(256 * MB, 1 * MB, &r);
	uint64_t *cas = calloc((size_t)n, sizeof(*cas)), max_cas = 0, fresh;
	static char v[200000];
	char k[32];
	unsigned long expected = 0;

	cr_assert_eq(r.how, CACHE_RESTORE_NEW);
	for (int i = 0; i < n; i++) {
		int64_t exp = i % 10 == 0  ? now + 600
			      : i % 7 == 0 ? now + 3600
					   : 0;

		snprintf(k, sizeof(k), "key:%d", i);
		cr_assert_eq(
			cache_store(c, (unsigned int)i % 2, CACHE_SET, key(k),
				    (uint32_t)i, exp, v,
				    (uint32_t)value_of(v, size_of(i), k, 1), 0,
				    &cas[i]),
			CACHE_STORED, "%s", k);
		if (cas[i] > max_cas)
			max_cas = cas[i];
		expected += i % 10 != 0;
	}
	/* Overwritten and deleted items must not come back as they were. */
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("key:1"), 1, 0, v,
				 (uint32_t)value_of(v, 50, "key:1", 2), 0,
				 &cas[1]),
		     CACHE_STORED);
	cr_assert(cache_delete(c, key("key:3")));
	expected--;
	/* The short TTLs end while it is down, not before the seal: 3 s
	 * (2 at least, one-second clocks) leaves a slow seal time; then wait
	 * until the clock has passed them. */
	int64_t short_ttl = cache_now() + 3;

	for (int i = 0; i < n; i += 10) {
		snprintf(k, sizeof(k), "key:%d", i);
		cr_assert(cache_touch(c, key(k), short_ttl), "%s", k);
	}
	cache_destroy(c);
	while (cache_now() < short_ttl)
		usleep(50000);

	c = open_cache(256 * MB, 1 * MB, &r);
	cr_assert_eq(r.how, CACHE_RESTORE_RESTORED, "%s", r.why);
	cr_assert_eq(r.items, expected);
	cr_assert_eq(r.corrupt_segments, 0);
	cr_assert_eq(r.expired, (unsigned long)n / 10);
	cr_assert_gt(r.large_items, 0);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		get(c, k, &g);
		if (i % 10 == 0 || i == 3) {
			cr_assert_not(g.hit, "%s came back", k);
			continue;
		}
		cr_assert(g.hit, "%s lost", k);
		cr_assert_eq(g.n, i == 1 ? 50 : size_of(i), "%s", k);
		value_of(v, g.n, k, i == 1 ? 2 : 1);
		cr_assert_eq(memcmp(g.v, v, g.n), 0, "%s: wrong value", k);
		cr_assert_eq(g.flags, (uint32_t)i, "%s", k);
		cr_assert_eq(g.cas, cas[i], "%s", k);
		cr_assert_eq(g.exptime, i % 7 == 0 ? (uint32_t)(now + 3600) : 0,
			     "%s", k);
	}
	/* cas values continue above every restored one. */
	cr_assert_eq(cache_store(c, 1, CACHE_SET, key("new"), 0, 0, "x", 1, 0,
				 &fresh),
		     CACHE_STORED);
	cr_assert_gt(fresh, max_cas);
	free(cas);
	cache_destroy(c);
}

/*
 * -t may change across a restart: a cas value splits into a thread and a
 * sequence by the thread count, so the first items' (cas 1 to threads)
 * split into sequence 0 under more threads. They are alive, and a flush
 * after the restart covers every restored item.
 */
Test(cache_file, other_thread_count_keeps_every_item)
{
	struct cache_restore r;
	struct cache *c = open_threads(2, 64 * MB, 1 * MB, &r);
	uint64_t cas[40], fresh;
	char k[32];

	for (int i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		cr_assert_eq(cache_store(c, (unsigned int)i % 2, CACHE_SET,
					 key(k), 0, 0, k, strlen(k), 0,
					 &cas[i]),
			     CACHE_STORED);
	}
	cache_destroy(c);
	for (unsigned int threads = 1; threads <= 16; threads *= 4) {
		c = open_threads(threads, 64 * MB, 1 * MB, &r);
		cr_assert_eq(r.how, CACHE_RESTORE_RESTORED, "%s", r.why);
		cr_assert_eq(r.items, 40);
		for (int i = 0; i < 40; i++) {
			snprintf(k, sizeof(k), "k%d", i);
			get(c, k, &g);
			cr_assert(g.hit, "-t %u: %s lost", threads, k);
			cr_assert_eq(g.cas, cas[i]);
		}
		cr_assert_eq(cache_store(c, threads - 1, CACHE_SET, key("new"),
					 0, 0, "x", 1, 0, &fresh),
			     CACHE_STORED);
		cr_assert_gt(fresh, cas[39]);
		cr_assert(cache_delete(c, key("new")));
		cache_destroy(c);
	}
	/* The last restart: a prefix flush, then flush_all, cover them. */
	c = open_threads(8, 64 * MB, 1 * MB, &r);
	cr_assert_eq(r.items, 40);
	cr_assert_eq(cache_flush_prefix(c, key("k1")), CACHE_STORED);
	for (int i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		get(c, k, &g);
		cr_assert_eq(g.hit, k[1] != '1', "%s", k);
	}
	cache_flush(c, 0);
	for (int i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		get(c, k, &g);
		cr_assert_not(g.hit, "%s survived flush_all", k);
	}
	cache_destroy(c);
}

/* Stores a few keys and seals the file. */
static void sealed_with_keys(int n, uint64_t limit, uint32_t item_max)
{
	struct cache_restore r;
	struct cache *c = open_cache(limit, item_max, &r);
	static char v[40000];
	char k[32];

	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, v,
					 (uint32_t)value_of(
						 v, i == 0 ? 30000 : 100, k, 1),
					 0, NULL),
			     CACHE_STORED);
	}
	cache_destroy(c);
}

static void assert_empty_because(uint64_t limit, uint32_t item_max,
				 const char *why)
{
	struct cache_restore r;
	struct cache *c = open_cache(limit, item_max, &r);

	cr_assert_eq(r.how, CACHE_RESTORE_EMPTY);
	cr_assert_not_null(strstr(r.why, why), "why: %s", r.why);
	get(c, "k1", &g);
	cr_assert_not(g.hit);
	cache_destroy(c);
}

Test(cache_file, unsealed_file_starts_empty)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* A crash: stores, then exits without the stop's seal. */
		struct cache_restore r;
		struct cache *c;

		/* This thread is registered with RCU already (the fork's
		 * copy of the test's registration). */
		c = open_cache(64 * MB, 1 * MB, &r);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key("k1"), 0, 0, "v",
					 1, 0, NULL),
			     CACHE_STORED);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0);
	assert_empty_because(64 * MB, 1 * MB, "not sealed");
	/* And once started, a file is not sealed until it stops again. */
	sealed_with_keys(10, 64 * MB, 1 * MB);
	pid = fork();
	if (pid == 0) {
		struct cache_restore r;

		open_cache(64 * MB, 1 * MB, &r);
		_exit(r.how == CACHE_RESTORE_RESTORED ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0, "the sealed file was restored");
	assert_empty_because(64 * MB, 1 * MB, "not sealed");
}

Test(cache_file, other_settings_start_empty)
{
	sealed_with_keys(10, 64 * MB, 1 * MB);
	assert_empty_because(128 * MB, 1 * MB, "-m was 64 MiB, now 128 MiB");
	sealed_with_keys(10, 64 * MB, 1 * MB);
	assert_empty_because(64 * MB, 2 * MB, "-I was");
}

/* The file holds the segments of the limit it was made for: a higher
 * limit is capped there, and a full cache keeps evicting to store (a
 * limit past the file's segments once left every write failing). */
Test(cache_file, limit_is_capped_at_the_file)
{
	struct cache_restore r;
	struct cache *c = open_cache(8 * MB, 1 * MB, &r);
	struct cache_stats st;
	char k[32], v[1000];

	cr_assert_eq(cache_limit_max(c), 8 * MB);
	cr_assert_eq(cache_set_limit(c, 64 * MB), 8 * MB);
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < 20000; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, v,
					 sizeof(v), 0, NULL),
			     CACHE_STORED, "set %d of 20000", i);
	}
	cache_get_stats(c, &st, false);
	cr_assert_gt(st.evictions, 0);
	cr_assert_eq(cache_set_limit(c, 8 * MB), 8 * MB);
	cache_destroy(c);
}

Test(cache_file, truncated_or_foreign_files_start_empty)
{
	int fd;
	uint32_t version = 99;

	sealed_with_keys(10, 64 * MB, 1 * MB);
	cr_assert_eq(truncate(path, 10 * MB), 0);
	assert_empty_because(64 * MB, 1 * MB, "truncated");

	sealed_with_keys(10, 64 * MB, 1 * MB);
	fd = open(path, O_RDWR);
	cr_assert_eq(pwrite(fd, &version, sizeof(version), 8), 4);
	close(fd);
	assert_empty_because(64 * MB, 1 * MB, "version 99");

	sealed_with_keys(10, 64 * MB, 1 * MB);
	fd = open(path, O_RDWR);
	cr_assert_eq(pwrite(fd, "NOTRHKV!", 8, 0), 8);
	close(fd);
	assert_empty_because(64 * MB, 1 * MB, "not an rhkvd memory file");
}

/* The file offset of key k's value: searched for, as a reader of the
 * file would find it. */
static off_t find(const char *needle, size_t n)
{
	int fd = open(path, O_RDONLY);
	static char buf[1 << 20];
	off_t base = 0;
	ssize_t got;

	cr_assert_geq(fd, 0);
	while ((got = pread(fd, buf, sizeof(buf), base)) > 0) {
		char *p = memmem(buf, (size_t)got, needle, n);

		if (p) {
			close(fd);
			return base + (p - buf);
		}
		base += got - (ssize_t)n;
	}
	close(fd);
	cr_assert_fail("%s not in the file", needle);
	return -1;
}

static void flip(off_t at)
{
	int fd = open(path, O_RDWR);
	char b;

	cr_assert_eq(pread(fd, &b, 1, at), 1);
	b ^= 0x20;
	cr_assert_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

Test(cache_file, corrupt_segment_is_dropped_alone)
{
	struct cache_restore r;
	struct cache *c = open_cache(64 * MB, 1 * MB, &r);
	static char v[2000];
	char k[32];
	int n = 3000; /* 2 KB each over 512 KiB segments: a dozen of them */
	unsigned long hits = 0;

	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, v,
					 (uint32_t)value_of(v, sizeof(v), k, 1),
					 0, NULL),
			     CACHE_STORED);
	}
	cache_destroy(c);
	flip(find("c1500/1/", 8) + 20); /* one byte inside one value */

	c = open_cache(64 * MB, 1 * MB, &r);
	cr_assert_eq(r.how, CACHE_RESTORE_RESTORED, "%s", r.why);
	cr_assert_eq(r.corrupt_segments, 1);
	cr_assert_gt(r.segments, 5);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		get(c, k, &g);
		if (!g.hit)
			continue;
		hits++;
		value_of(v, sizeof(v), k, 1);
		cr_assert_eq(g.n, sizeof(v));
		cr_assert_eq(memcmp(g.v, v, g.n), 0, "%s: corrupt value", k);
	}
	get(c, "c1500", &g);
	cr_assert_not(g.hit, "the corrupted item was served");
	cr_assert_eq(hits, r.items);
	cr_assert_gt(hits, (unsigned long)n * 3 / 4);
	cr_assert_lt(hits, (unsigned long)n);
	cache_destroy(c);
}

Test(cache_file, corrupt_large_item_is_dropped)
{
	struct cache_restore r;
	struct cache *c;

	sealed_with_keys(10, 64 * MB, 1 * MB); /* k0 is large */
	flip(find("k0/1/", 5) + 100);
	c = open_cache(64 * MB, 1 * MB, &r);
	cr_assert_eq(r.how, CACHE_RESTORE_RESTORED, "%s", r.why);
	cr_assert_eq(r.corrupt_large, 1);
	get(c, "k0", &g);
	cr_assert_not(g.hit);
	get(c, "k9", &g);
	cr_assert(g.hit);
	cache_destroy(c);
}

static void assert_refused(const char *p, const char *why)
{
	const struct cache_file_config fc = { .path = p,
					      .owner = (unsigned int)geteuid(),
					      .item_max = 1 * MB };
	char err[300];
	bool refused = false;

	cr_assert_null(
		cache_create_file(2, 64 * MB, &fc, err, sizeof(err), &refused));
	cr_assert(refused, "%s", err);
	cr_assert_not_null(strstr(err, why), "err: %s", err);
	cr_assert_not_null(strstr(err, p), "err: %s", err);
}

Test(cache_file, mode_owner_and_links_are_checked)
{
	char link[128];
	struct stat st;

	sealed_with_keys(1, 64 * MB, 1 * MB);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "created mode 0600");
	cr_assert_eq(chmod(path, 0640), 0);
	assert_refused(path, "other users may read or write it");
	cr_assert_eq(chmod(path, 0606), 0);
	assert_refused(path, "other users may read or write it");
	cr_assert_eq(chmod(path, 0600), 0);
	if (geteuid() == 0) {
		cr_assert_eq(chown(path, 65534, (gid_t)-1), 0);
		assert_refused(path, "owned by uid 65534");
		cr_assert_eq(chown(path, 0, (gid_t)-1), 0);
	}
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(path, link), 0);
	assert_refused(link, "symbolic link");
}

/* ---- fields no checksum covers, or that a crafted file sets ---- */

static struct cache_file_header file_header(void)
{
	struct cache_file_header h;
	int fd = open(path, O_RDONLY);

	cr_assert_eq(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	return h;
}

static void patch(off_t at, const void *p, size_t n)
{
	int fd = open(path, O_RDWR);

	cr_assert_eq(pwrite(fd, p, n, at), (ssize_t)n);
	close(fd);
}

/* Writes h with its checksum made good again. */
static void put_header(struct cache_file_header *h)
{
	h->check = cache__file_header_check(h);
	patch(0, h, sizeof(*h));
}

/* Makes the checksum of the segment holding file offset at good again,
 * as a file crafted to pass it would have it. */
static void reseal_segment_of(off_t at)
{
	struct cache_file_header h = file_header();
	size_t i = (size_t)((uint64_t)at - h.arena_off) / h.seg_size;
	off_t ro = (off_t)(h.records_off + i * sizeof(struct cache_seg_record));
	struct cache_seg_record rec;
	char *buf = malloc(h.seg_size);
	int fd = open(path, O_RDWR);

	cr_assert_eq(pread(fd, &rec, sizeof(rec), ro), (ssize_t)sizeof(rec));
	cr_assert_eq(rec.state, CACHE_REC_SEALED);
	cr_assert_eq(
		pread(fd, buf, rec.used, (off_t)(h.arena_off + i * h.seg_size)),
		(ssize_t)rec.used);
	rec.check = cache__file_checksum(buf, rec.used);
	cr_assert_eq(pwrite(fd, &rec, sizeof(rec), ro), (ssize_t)sizeof(rec));
	close(fd);
	free(buf);
}

/* The file offset of the item whose key is k (flags 0) and value starts
 * with "k/1/". */
static off_t item_off(const char *k)
{
	char needle[32];

	snprintf(needle, sizeof(needle), "%s%s/1/", k, k);
	return find(needle, strlen(needle)) - (off_t)ITEM_HEADER_BYTES;
}

Test(cache_file, large_item_length_beyond_its_allocation_starts_empty)
{
	uint32_t nbytes = 30000 + 4000;

	sealed_with_keys(10, 64 * MB, 1 * MB); /* k0 is large: 30000 bytes */
	/* The record's value length, which no checksum covers. */
	patch(item_off("k0") - (off_t)sizeof(struct cache_large_record) + 4,
	      &nbytes, sizeof(nbytes));
	assert_empty_because(64 * MB, 1 * MB, "large item's length");
}

Test(cache_file, large_items_offset_inside_the_arena_starts_empty)
{
	struct cache_file_header h;

	sealed_with_keys(10, 64 * MB, 1 * MB);
	h = file_header();
	/* Cutting the file there would take the arena from its mapping. */
	h.large_off = h.arena_off;
	h.large_bytes = 0;
	h.large_count = 0;
	put_header(&h);
	assert_empty_because(64 * MB, 1 * MB, "large items' offset");

	sealed_with_keys(10, 64 * MB, 1 * MB);
	h = file_header();
	h.large_off = UINT64_MAX - 4095; /* + large_bytes wraps */
	h.large_bytes = 8192;
	put_header(&h);
	assert_empty_because(64 * MB, 1 * MB, "large items' offset");

	sealed_with_keys(10, 64 * MB, 1 * MB);
	h = file_header();
	h.large_count = UINT64_MAX;
	put_header(&h);
	assert_empty_because(64 * MB, 1 * MB, "out of bounds");
}

/* 200 items of 200 bytes in one segment of a 64 MiB cache. */
static void sealed_with_small(void)
{
	struct cache_restore r;
	struct cache *c = open_cache(64 * MB, 1 * MB, &r);
	char k[32], v[200];

	for (int i = 0; i < 200; i++) {
		snprintf(k, sizeof(k), "s%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, v,
					 (uint32_t)value_of(v, sizeof(v), k, 1),
					 0, NULL),
			     CACHE_STORED);
	}
	cache_destroy(c);
}

Test(cache_file, segment_item_above_the_segment_limit_starts_empty)
{
	uint16_t n16 = 20000; /* > ITEM_SEG_VALUE_MAX, within the segment */
	off_t at;

	sealed_with_small();
	at = item_off("s3");
	patch(at + 24, &n16, sizeof(n16));
	reseal_segment_of(at);
	assert_empty_because(64 * MB, 1 * MB, "above the segment limit");
}

Test(cache_file, item_fields_out_of_range_start_empty)
{
	uint64_t cas = CACHE_SEQ_MAX + 1, zero = 0;
	uint8_t nkey = 251;
	struct cache_file_header h;
	uint32_t used;
	off_t at;

	/* A write sequence the cas sequences would wrap above. */
	sealed_with_small();
	at = item_off("s3");
	patch(at + 8, &cas, sizeof(cas));
	reseal_segment_of(at);
	assert_empty_because(64 * MB, 1 * MB, "write sequence");
	sealed_with_small();
	at = item_off("s3");
	patch(at + 8, &zero, sizeof(zero));
	reseal_segment_of(at);
	assert_empty_because(64 * MB, 1 * MB, "write sequence");

	/* A key longer than any key. */
	sealed_with_small();
	at = item_off("s3");
	patch(at + 26, &nkey, sizeof(nkey));
	reseal_segment_of(at);
	assert_empty_because(64 * MB, 1 * MB, "key length");

	/* A record's used bytes beyond its segment. */
	sealed_with_small();
	h = file_header();
	at = item_off("s3");
	used = (uint32_t)h.seg_size + 8;
	patch((off_t)(h.records_off + (size_t)((uint64_t)at - h.arena_off) /
					      h.seg_size *
					      sizeof(struct cache_seg_record)) +
		      4,
	      &used, sizeof(used));
	assert_empty_because(64 * MB, 1 * MB, "segment record");
}
