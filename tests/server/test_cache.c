/*
 * The rhkvd cache under memory pressure, as its users see it: writing far
 * more than the memory limit keeps `bytes` and the process RSS within
 * bounds while SIEVE keeps the keys that are read and drops the ones that
 * are not; a scan of one-time keys does not push out a hot set; expired
 * items are swept without being read; flush_all (now and delayed);
 * cache_memlimit shrinks a full cache; an item larger than the limit and a
 * request larger than --conn-memory fail cleanly; `stats memory` adds up;
 * eviction under concurrent writers, readers and scans never hands out torn
 * or foreign values. The memory limit, `stats memory`, cache_memlimit's
 * shrinking, --conn-memory and scan are rhkvd's: the tests skip on
 * memcached.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "harness.h"

#define MIB (1024ull * 1024ull)
/* Requests pipelined before their replies are read: the server stops
 * reading a connection whose pending output passes 1 MiB. */
#define BATCH_REQS  1000
#define BATCH_BYTES (1024 * 1024)

/* What a test allocates lives here, freed by teardown even when an
 * assertion ends the test early. */
static struct srv srv;
static struct hconn *c, *c2;
static struct hbuf breq;
static char *vbuf;
static char *scratch; /* a value being built */
static size_t scratch_cap;
/* A --memory-file test's directory under /dev/shm and its file ("" when
 * none), removed once the server has stopped. */
static char mf_dir[64], mf_path[96];

static void memfile_remove(void)
{
	if (mf_path[0])
		unlink(mf_path);
	if (mf_dir[0])
		rmdir(mf_dir);
	mf_path[0] = mf_dir[0] = 0;
}

static void teardown(void)
{
	int status;

	hbuf_free(&breq);
	free(vbuf);
	vbuf = NULL;
	free(scratch);
	scratch = NULL;
	scratch_cap = 0;
	if (!srv.pid) {
		memfile_remove();
		return;
	}
	hc_close(&c);
	hc_close(&c2);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
	memfile_remove();
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(cache, .fini = teardown, .timeout = 240);

static void start(const char *const *extra)
{
	START_RHKVD(&srv, extra, &c,
		    "the memory limit's behaviour, stats memory and scan");
}

static bool check_rss(void)
{
	return !H_SANITIZED_BUILD && h_sanitizer(srv.pid) == H_SAN_NONE;
}

/*
 * How long to wait for background work (the expiry sweep has 2 ms of every
 * 100 ms tick; eviction down to a new limit): MS in a normal build; under
 * ASan, which makes the sweep about three times slower per item, four
 * times that; under TSan (about fifteen times slower) ten times.
 */
static long long wait_ms(long long ms)
{
	enum h_san san = h_sanitizer(srv.pid);

	if (san == H_SAN_THREAD)
		return 10 * ms;
	return H_SANITIZED_BUILD || san == H_SAN_ADDRESS ? 4 * ms : ms;
}

/* ---- stats ---- */

static void read_stats(struct hconn *conn, const char *arg, struct hstats *s)
{
	cr_assert_eq(hc_stats(conn, arg, s, H_TIMEOUT_MS), 0,
		     "stats %s: no good reply", arg);
}

static unsigned long long stat_u64(const struct hstats *s, const char *name)
{
	unsigned long long v = 0;

	cr_assert_eq(hstats_u64(s, name, &v), 0,
		     "stat %s missing or not a number", name);
	return v;
}

/* ---- values ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* The value stored under KEY: the key's bytes repeated, N bytes. */
static void make_value(char *dst, const char *key, size_t n)
{
	size_t k = strlen(key);

	for (size_t i = 0; i < n; i++)
		dst[i] = key[i % k];
}

static bool value_ok(const char *v, size_t n, const char *key)
{
	size_t k = strlen(key);

	for (size_t i = 0; i < n; i++)
		if (v[i] != key[i % k])
			return false;
	return true;
}

/* Appends "set KEY 0 EXPTIME N[ noreply]\r\n<value>\r\n" to breq. */
static void add_set(const char *key, int exptime, size_t n, bool noreply)
{
	hbuf_printf(&breq, "set %s 0 %d %zu%s\r\n", key, exptime, n,
		    noreply ? " noreply" : "");
	if (scratch_cap < n) {
		free(scratch);
		scratch = malloc(n);
		cr_assert_not_null(scratch);
		scratch_cap = n;
	}
	make_value(scratch, key, n);
	hbuf_add(&breq, scratch, n);
	hbuf_add(&breq, "\r\n", 2);
}

/* Sends breq, then reads NSETS replies, each STORED; empties breq. */
static void flush_sets(struct hconn *conn, int *nsets, const char *what)
{
	char line[256];

	if (breq.len)
		SEND_N(conn, breq.p, breq.len);
	breq.len = 0;
	for (int i = 0; i < *nsets; i++) {
		long n = hc_line(conn, line, sizeof(line), 10000);

		cr_assert(n > 0 && !strcmp(line, "STORED\r\n"),
			  "%s: reply %d of %d to a batch of sets: %s", what,
			  i + 1, *nsets, n > 0 ? line : "(none)");
	}
	*nsets = 0;
}

/* Appends a set to the batch and sends the batch when it is full. */
static void batched_set(struct hconn *conn, const char *key, size_t n,
			int *nsets, const char *what)
{
	add_set(key, 0, n, false);
	if (++*nsets >= BATCH_REQS || breq.len >= BATCH_BYTES)
		flush_sets(conn, nsets, what);
}

/*
 * "get KEY": returns the value length (the value, checked against
 * make_value, in vbuf of CAP bytes), or -1 on a miss.
 */
static long get_one(struct hconn *conn, const char *key, size_t cap)
{
	char line[600], want[300], tail[8];
	size_t len;
	int used = 0;

	cr_assert_eq(hc_sendf(conn, "get %s\r\n", key), 0);
	cr_assert_gt(hc_line(conn, line, sizeof(line), 10000), 0,
		     "get %s: no reply", key);
	if (!strcmp(line, "END\r\n"))
		return -1;
	snprintf(want, sizeof(want), "VALUE %s 0 %%zu\r\n%%n", key);
	cr_assert(sscanf(line, want, &len, &used) == 1 && used && !line[used],
		  "get %s: reply line %s", key, line);
	cr_assert_leq(len, cap, "get %s: %zu bytes", key, len);
	cr_assert_eq(hc_read(conn, vbuf, len, 10000), len, "get %s: short",
		     key);
	cr_assert_eq(hc_read(conn, tail, 7, 10000), 7, "get %s: no END", key);
	cr_assert(!memcmp(tail, "\r\nEND\r\n", 7), "get %s: bad end", key);
	cr_assert(value_ok(vbuf, len, key), "get %s: wrong value", key);
	return (long)len;
}

/*
 * Multi-gets the N keys PREFIX<first + i> in lines of at most 100 keys,
 * pipelined; checks every value; returns how many were hits.
 */
static int multi_get(struct hconn *conn, const char *prefix, int first, int n,
		     size_t len)
{
	static struct hvalue v;
	int hits = 0, lines = 0;

	breq.len = 0;
	for (int i = 0; i < n; i += 100) {
		hbuf_printf(&breq, "get");
		for (int j = i; j < n && j < i + 100; j++)
			hbuf_printf(&breq, " %s%d", prefix, first + j);
		hbuf_printf(&breq, "\r\n");
		lines++;
	}
	SEND_N(conn, breq.p, breq.len);
	breq.len = 0;
	while (lines) {
		int r = hc_value(conn, &v, 10000);

		cr_assert_geq(r, 0, "multi-get %s: bad reply line %s", prefix,
			      v.line);
		if (r == 0) {
			lines--;
			continue;
		}
		cr_assert(!strncmp(v.key, prefix, strlen(prefix)),
			  "multi-get %s: foreign key %s", prefix, v.key);
		cr_assert(v.len == len && value_ok(v.val, v.len, v.key),
			  "multi-get: wrong value for %s (%zu bytes)", v.key,
			  v.len);
		hits++;
	}
	return hits;
}

/* ---- 1. four times the limit ---- */

#define FILL_TOTAL   (256 * MIB)
#define FILL_HOT     200
#define FILL_FIRST   500
#define FILL_LAST    50
#define FILL_MAX_LEN (256 * 1024)

Test(cache, fill_four_times_the_limit)
{
	static const char *const extra[] = { "-m", "64", NULL };
	const unsigned long long rss_cap = 64 * MIB * 115 / 100 + 32 * MIB;
	struct hstats s;
	char key[64];
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	unsigned long long written = 0, next_read = 8 * MIB,
			   next_stats = 16 * MIB, max_rss = 0;
	int nsets = 0, nfill = 0, hot_reads = 0, hot_misses = 0;

	start(extra);
	vbuf = malloc(FILL_MAX_LEN);
	cr_assert_not_null(vbuf);
	for (int i = 0; i < FILL_HOT; i++) {
		snprintf(key, sizeof(key), "hot:%d", i);
		batched_set(c, key, 1024, &nsets, "hot keys");
	}
	flush_sets(c, &nsets, "hot keys");

	while (written < FILL_TOTAL) {
		/* Log-uniform from 16 B to 256 KiB: a uniform power of two,
		 * then uniform within it. */
		unsigned int e = 4 + (unsigned int)(rng_next(&rng) % 14);
		size_t len = ((size_t)1 << e) +
			     (size_t)(rng_next(&rng) % ((uint64_t)1 << e));

		snprintf(key, sizeof(key), "fill:%d", nfill++);
		batched_set(c, key, len, &nsets, "fill");
		written += len;
		if (written >= next_read) {
			int hits;

			flush_sets(c, &nsets, "fill");
			hits = multi_get(c, "hot:", 0, FILL_HOT, 1024);
			hot_misses += FILL_HOT - hits;
			hot_reads++;
			next_read += 8 * MIB;
		}
		if (written >= next_stats) {
			flush_sets(c, &nsets, "fill");
			read_stats(c, "", &s);
			cr_assert_leq(stat_u64(&s, "bytes"),
				      stat_u64(&s, "limit_maxbytes"),
				      "after %llu MiB written", written / MIB);
			if (check_rss()) {
				unsigned long long rss = h_rss(srv.pid);

				cr_assert_gt(rss, 0, "no VmRSS for the server");
				if (rss > max_rss)
					max_rss = rss;
				cr_assert_leq(rss, rss_cap,
					      "server RSS %llu MiB after "
					      "%llu MiB written",
					      rss / MIB, written / MIB);
			}
			next_stats += 16 * MIB;
		}
	}
	flush_sets(c, &nsets, "fill");

	cr_assert_eq(multi_get(c, "hot:", 0, FILL_HOT, 1024), FILL_HOT,
		     "hot keys lost (%d misses over %d earlier reads)",
		     hot_misses, hot_reads);
	int first_left = 0, last_left = 0;

	for (int i = 0; i < FILL_FIRST; i++) {
		snprintf(key, sizeof(key), "fill:%d", i);
		first_left += get_one(c, key, FILL_MAX_LEN) >= 0;
	}
	cr_assert_leq(first_left, FILL_FIRST / 20,
		      "%d of the first %d fill keys (never read) are still "
		      "there after %llu MiB written",
		      first_left, FILL_FIRST, written / MIB);
	for (int i = nfill - FILL_LAST; i < nfill; i++) {
		snprintf(key, sizeof(key), "fill:%d", i);
		last_left += get_one(c, key, FILL_MAX_LEN) >= 0;
	}
	cr_assert_eq(last_left, FILL_LAST,
		     "only %d of the last %d fill keys are there", last_left,
		     FILL_LAST);
	read_stats(c, "", &s);
	cr_assert_gt(stat_u64(&s, "evictions"), 0);
	cr_assert_gt(stat_u64(&s, "evicted_unfetched"), 0);
	cr_assert_leq(stat_u64(&s, "bytes"), stat_u64(&s, "limit_maxbytes"));
	cr_log_info("fill: %d keys, %llu MiB, max RSS %llu MiB, %d hot "
		    "misses",
		    nfill, written / MIB, max_rss / MIB, hot_misses);
	SYNC(c, &srv);
}

/* ---- 2. a scan of one-time keys does not push out the hot set ---- */

#define SCAN_HOT   1000
#define SCAN_BATCH 1000

Test(cache, hot_set_survives_a_scan)
{
	static const char *const extra[] = { "-m", "16", NULL };
	const int rounds = (int)((10 * 16 * MIB) / (SCAN_BATCH * 1024)) + 1;
	const int warmup = rounds / 10;
	char key[64];
	int nsets = 0, once = 0;
	long lookups = 0, hits = 0;

	start(extra);
	for (int i = 0; i < SCAN_HOT; i++) {
		snprintf(key, sizeof(key), "hot:%d", i);
		batched_set(c, key, 100, &nsets, "hot keys");
	}
	flush_sets(c, &nsets, "hot keys");
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < SCAN_BATCH; i++) {
			snprintf(key, sizeof(key), "once:%d", once++);
			batched_set(c, key, 1024, &nsets, "one-time keys");
		}
		flush_sets(c, &nsets, "one-time keys");
		int h = multi_get(c, "hot:", 0, SCAN_HOT, 100);

		if (r >= warmup) {
			lookups += SCAN_HOT;
			hits += h;
		}
	}
	cr_assert_geq(hits * 100, lookups * 99,
		      "hot hit ratio %.3f%% (%ld of %ld) over %d rounds of "
		      "%d one-time keys",
		      100.0 * (double)hits / (double)lookups, hits, lookups,
		      rounds - warmup, SCAN_BATCH);
	cr_assert_eq(multi_get(c, "hot:", 0, SCAN_HOT, 100), SCAN_HOT,
		     "hot keys missing at the end");
	SYNC(c, &srv);
}

/* ---- 3. expired items are swept without reads ---- */

#define TTL_KEYS 100000

Test(cache, ttl_keys_are_swept_without_reads)
{
	static const char *const extra[] = { "-m", "256", NULL };
	struct hstats s;
	char key[64];
	bool swept = false;
	unsigned long long items = 0, bytes = 0;

	start(extra);
	breq.len = 0;
	for (int i = 0; i < TTL_KEYS; i++) {
		snprintf(key, sizeof(key), "ttl:%d", i);
		add_set(key, 1, 10, true);
		if (breq.len >= 65536 || i == TTL_KEYS - 1) {
			SEND_N(c, breq.p, breq.len);
			breq.len = 0;
		}
	}
	SYNC(c, &srv);
	read_stats(c, "", &s);
	/* All stored: still there, or already swept when loading took more
	 * than a second (a sanitizer build). */
	cr_assert_geq(stat_u64(&s, "curr_items") + stat_u64(&s, "reclaimed"),
		      TTL_KEYS * 99 / 100,
		      "right after loading: curr_items %llu, reclaimed %llu",
		      stat_u64(&s, "curr_items"), stat_u64(&s, "reclaimed"));

	long long t0 = h_now_ms(), deadline = t0 + wait_ms(30000);

	while (!swept) {
		read_stats(c, "", &s);
		items = stat_u64(&s, "curr_items");
		bytes = stat_u64(&s, "bytes");
		swept = items == 0 && bytes == 0;
		if (swept || h_now_ms() > deadline)
			break;
		h_sleep_ms(250);
	}
	cr_assert(swept,
		  "%lld ms after loading %d keys with exptime 1: curr_items "
		  "%llu, bytes %llu",
		  h_now_ms() - t0, TTL_KEYS, items, bytes);
	cr_log_info("ttl: swept %d keys %lld ms after loading", TTL_KEYS,
		    h_now_ms() - t0);
	cr_assert_geq(stat_u64(&s, "reclaimed"), TTL_KEYS);
	cr_assert_geq(stat_u64(&s, "expired_unfetched"), TTL_KEYS);
	SYNC(c, &srv);
}

/* ---- 4. flush_all ---- */

#define FLUSH_KEYS 10000

/*
 * A complete scan with count 1000; returns how many distinct keys came. A
 * scan returns every key present throughout at least once, and may return
 * one twice while the table resizes (as it may after a fill): duplicates
 * of "flush:N" are counted once; any other key counts each time.
 */
static int scan_all(struct hconn *conn)
{
	static bool seen[FLUSH_KEYS];
	char line[600];
	unsigned long long cursor = 0;
	int nkeys = 0;
	long long deadline = h_now_ms() + 60000;

	memset(seen, 0, sizeof(seen));

	do {
		cr_assert_eq(hc_sendf(conn, "scan %llu count 1000\r\n", cursor),
			     0);
		for (;;) {
			char *end;
			long n = hc_line(conn, line, sizeof(line), 10000);

			cr_assert_gt(n, 0, "scan %llu: no reply", cursor);
			if (!strncmp(line, "KEY ", 4)) {
				unsigned int i;
				char tail;

				if (sscanf(line, "KEY flush:%u%c", &i, &tail) ==
					    2 &&
				    tail == '\r' && i < FLUSH_KEYS) {
					nkeys += !seen[i];
					seen[i] = true;
				} else {
					nkeys++;
				}
				continue;
			}
			cr_assert(!strncmp(line, "CURSOR ", 7),
				  "scan %llu: unexpected line %s", cursor,
				  line);
			cursor = strtoull(line + 7, &end, 10);
			cr_assert_str_eq(end, "\r\n", "bad line %s", line);
			break;
		}
		cr_assert_lt(h_now_ms(), deadline, "a full scan took 60 s");
	} while (cursor);
	return nkeys;
}

Test(cache, flush_all_then_scan_finds_nothing)
{
	struct hstats s;
	char key[64], line[64];
	bool empty = false;
	unsigned long long items = 0, bytes = 0;

	start(NULL);
	breq.len = 0;
	for (int i = 0; i < FLUSH_KEYS; i++) {
		snprintf(key, sizeof(key), "flush:%d", i);
		add_set(key, 0, 20, true);
	}
	SEND_N(c, breq.p, breq.len);
	breq.len = 0;
	SYNC(c, &srv);
	read_stats(c, "", &s);
	cr_assert_eq(stat_u64(&s, "curr_items"), FLUSH_KEYS);
	cr_assert_eq(scan_all(c), FLUSH_KEYS, "scan before flush_all");

	RT(c, "flush_all\r\n", "OK\r\n");
	int left = scan_all(c);

	cr_assert_eq(left, 0, "a scan after flush_all returned %d keys", left);
	long long deadline = h_now_ms() + wait_ms(30000);

	while (!empty) {
		read_stats(c, "", &s);
		items = stat_u64(&s, "curr_items");
		bytes = stat_u64(&s, "bytes");
		empty = items == 0 && bytes == 0;
		if (empty || h_now_ms() > deadline)
			break;
		h_sleep_ms(100);
	}
	cr_assert(empty, "after flush_all: curr_items %llu, bytes %llu", items,
		  bytes);

	/* Delayed: items stored before the flush's time go, later ones
	 * stay. A delay of 3 acts 2 seconds from now at the earliest
	 * (one-second clocks): time enough for the get on a busy machine. */
	RT(c, "set a 0 0 1\r\nA\r\n", "STORED\r\n");
	RT(c, "flush_all 3\r\n", "OK\r\n");
	RT(c, "get a\r\n", "VALUE a 0 1\r\nA\r\nEND\r\n");
	deadline = h_now_ms() + 30000;
	for (bool there = true; there && h_now_ms() < deadline;) {
		h_sleep_ms(100);
		SEND(c, "get a\r\n");
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		there = strcmp(line, "END\r\n") != 0;
		if (there)
			EXPECT(c, "A\r\nEND\r\n");
	}
	RT(c, "set b 0 0 1\r\nB\r\n", "STORED\r\n");
	RT(c, "get a\r\n", "END\r\n");
	RT(c, "get b\r\n", "VALUE b 0 1\r\nB\r\nEND\r\n");
	SYNC(c, &srv);
}

/* ---- 5. cache_memlimit ---- */

Test(cache, cache_memlimit_shrinks_the_cache)
{
	static const char *const extra[] = { "-m", "64", NULL };
	struct hstats s;
	char key[64], line[256];
	int nsets = 0;
	bool shrunk = false;
	unsigned long long bytes = 0, limit = 0;

	start(extra);
	for (int i = 0; i < (int)(48 * MIB / 4096); i++) {
		snprintf(key, sizeof(key), "m:%d", i);
		batched_set(c, key, 4096, &nsets, "load");
	}
	flush_sets(c, &nsets, "load");
	read_stats(c, "", &s);
	cr_assert_gt(stat_u64(&s, "bytes"), 40 * MIB, "the load did not stay");

	RT(c, "cache_memlimit 16\r\n", "OK\r\n");
	long long deadline = h_now_ms() + wait_ms(30000);

	while (!shrunk) {
		read_stats(c, "", &s);
		bytes = stat_u64(&s, "bytes");
		limit = stat_u64(&s, "limit_maxbytes");
		shrunk = bytes <= 16 * MIB && limit == 16 * MIB;
		if (shrunk || h_now_ms() > deadline)
			break;
		h_sleep_ms(100);
	}
	cr_assert(shrunk,
		  "after cache_memlimit 16: bytes %llu, limit_maxbytes "
		  "%llu",
		  bytes, limit);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "after:%d", i);
		batched_set(c, key, 4096, &nsets, "after cache_memlimit");
	}
	flush_sets(c, &nsets, "after cache_memlimit");
	read_stats(c, "", &s);
	cr_assert_leq(stat_u64(&s, "bytes"), 16 * MIB);

	/* memcached's refusals leave the limit alone. */
	static const char *const bad[][2] = {
		{ "cache_memlimit 0\r\n", "MEMLIMIT_TOO_SMALL cannot set "
					  "maxbytes to less than 8m\r\n" },
		{ "cache_memlimit abc\r\n", "ERROR\r\n" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SEND_N(c, bad[i][0], strlen(bad[i][0]));
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0,
			     "no reply to %s", bad[i][0]);
		cr_assert_str_eq(line, bad[i][1], "reply to %s", bad[i][0]);
		SYNC(c, &srv);
	}
	read_stats(c, "", &s);
	cr_assert_eq(stat_u64(&s, "limit_maxbytes"), 16 * MIB);
	cr_assert_eq(hc_stats(c, "settings", &s, H_TIMEOUT_MS), 0);
	cr_assert_str_eq(hstats_get(&s, "maxbytes"), "16777216",
			 "stats settings does not follow cache_memlimit");
}

/* Sends N sets of 1000 bytes under keys PFX:i, each answered STORED. */
static void sets_all_stored(const char *pfx, int n)
{
	char key[64], what[96];
	int nsets = 0;

	snprintf(what, sizeof(what), "sets %s:0..%d", pfx, n - 1);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s:%d", pfx, i);
		batched_set(c, key, 1000, &nsets, what);
	}
	flush_sets(c, &nsets, what);
}

/* Sends cache_memlimit MIB, reads its reply into LINE. */
static void memlimit_send(unsigned mib, char *line, size_t cap)
{
	char req[64];

	snprintf(req, sizeof(req), "cache_memlimit %u\r\n", mib);
	SEND_N(c, req, strlen(req));
	cr_assert_gt(hc_line(c, line, cap, H_TIMEOUT_MS), 0, "no reply to %s",
		     req);
}

/* The reply LINE to cache_memlimit MIB, and the limit then in force. */
static void memlimit_check(unsigned mib, const char *line, const char *reply,
			   unsigned long long want)
{
	struct hstats s;

	cr_assert_str_eq(line, reply, "reply to cache_memlimit %u", mib);
	read_stats(c, "", &s);
	cr_assert_eq(stat_u64(&s, "limit_maxbytes"), want,
		     "limit_maxbytes after cache_memlimit %u", mib);
	cr_assert_eq(hc_stats(c, "settings", &s, H_TIMEOUT_MS), 0);
	cr_assert_eq(strtoull(hstats_get(&s, "maxbytes"), NULL, 10), want,
		     "stats settings maxbytes after cache_memlimit %u", mib);
}

/* cache_memlimit MIB: the reply, and the limit then in force. */
static void memlimit(unsigned mib, const char *reply, unsigned long long want)
{
	char line[256];

	memlimit_send(mib, line, sizeof(line));
	memlimit_check(mib, line, reply, want);
}

/* stats settings maxbytes_cap: the highest limit cache_memlimit sets. */
static void expect_cap(unsigned long long cap)
{
	struct hstats s;
	const char *v;

	cr_assert_eq(hc_stats(c, "settings", &s, H_TIMEOUT_MS), 0);
	v = hstats_get(&s, "maxbytes_cap");
	cr_assert_not_null(v, "no stats settings maxbytes_cap");
	cr_assert_eq(strtoull(v, NULL, 10), cap, "maxbytes_cap %s", v);
}

/* Waits until the cache holds at most the limit again (eviction runs in
 * the background). */
static void wait_within(unsigned long long limit)
{
	long long deadline = h_now_ms() + wait_ms(3000);
	unsigned long long bytes;
	struct hstats s;

	for (;;) {
		read_stats(c, "", &s);
		bytes = stat_u64(&s, "bytes");
		if (bytes <= limit || h_now_ms() > deadline)
			break;
		h_sleep_ms(50);
	}
	cr_assert_leq(bytes, limit, "bytes %llu above the limit %llu", bytes,
		      limit);
}

/*
 * A memory file holds the segments of the limit it was started with and
 * cannot grow: a higher cache_memlimit is capped at that (the reply says
 * so, stats follow), and the cache keeps evicting and storing. Raised
 * past the file's segments, every write used to fail once they were all
 * in use (SERVER_ERROR out of memory, no eviction). Lowering and raising
 * again within the file's size works as without a file.
 */
Test(cache, cache_memlimit_capped_at_the_memory_file)
{
	static const char capped[] = "MEMLIMIT_ADJUST_FAILED maxbytes capped "
				     "at 16m: the memory file holds no more"
				     "\r\n";
	const char *extra[] = { "-m", "16", "--memory-file", mf_path, NULL };
	struct hstats s;
	char line[256];

	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("--memory-file is rhkvd's");
	if (access("/dev/shm", W_OK))
		cr_skip_test("no writable /dev/shm");
	snprintf(mf_dir, sizeof(mf_dir), "/dev/shm/rhkv-test-XXXXXX");
	cr_assert_not_null(mkdtemp(mf_dir), "mkdtemp: errno %d", errno);
	snprintf(mf_path, sizeof(mf_path), "%s/cache", mf_dir);
	start(extra);

	/* Every set stores, whatever the reply said; then the reply. */
	memlimit_send(64, line, sizeof(line));
	sets_all_stored("a", 24000); /* 24 MB through 16 MiB */
	memlimit_check(64, line, capped, 16 * MIB);
	read_stats(c, "", &s);
	cr_assert_gt(stat_u64(&s, "evictions"), 0, "nothing evicted");

	/* Down, then up again: to the file's size, then past it. */
	memlimit(8, "OK\r\n", 8 * MIB);
	wait_within(8 * MIB);
	sets_all_stored("b", 12000);
	memlimit(16, "OK\r\n", 16 * MIB);
	sets_all_stored("c", 20000);
	memlimit(1000000, capped, 16 * MIB);
	sets_all_stored("d", 20000);
	wait_within(16 * MIB);
	expect_cap(16 * MIB);
	SYNC(c, &srv);
}

/*
 * Without a file: raising the limit gives the cache room at once, lowering
 * it evicts down, raising it again gives the room back. The arena reserves
 * address space for 65536 segments at the start (4 GiB at -m 8): a limit
 * above that is capped as a memory file's is.
 */
Test(cache, cache_memlimit_down_and_up_again)
{
	static const char *const extra[] = { "-m", "8", NULL };
	struct hstats s;

	start(extra);
	memlimit(16, "OK\r\n", 16 * MIB);
	sets_all_stored("a", 12000); /* 12 MB: more than -m 8 holds */
	read_stats(c, "", &s);
	cr_assert_gt(stat_u64(&s, "bytes"), 9 * MIB,
		     "the raised limit did not give room");
	memlimit(8, "OK\r\n", 8 * MIB);
	wait_within(8 * MIB);
	sets_all_stored("b", 10000);
	memlimit(16, "OK\r\n", 16 * MIB);
	sets_all_stored("c", 12000);
	read_stats(c, "", &s);
	cr_assert_gt(stat_u64(&s, "bytes"), 9 * MIB,
		     "raised again, the limit did not give room");
	memlimit(1000000,
		 "MEMLIMIT_ADJUST_FAILED maxbytes capped at 4096m: the address "
		 "space reserved at start holds no more\r\n",
		 4096 * MIB);
	sets_all_stored("d", 2000);
	expect_cap(4096 * MIB);
	SYNC(c, &srv);
}

/* ---- 6. an item larger than the limit ---- */

Test(cache, item_larger_than_the_limit_fails_cleanly)
{
	/* --conn-memory: its default, 1/8 of -m, would refuse to read the
	 * request before the cache sees it (connection_memory_cap). -I may
	 * be at most half of -m at start; cache_memlimit then halves the
	 * limit, and an item of -I bytes no longer fits. */
	static const char *const extra[] = {
		"-m", "16", "-I", "8m", "--conn-memory", "32", NULL
	};
	const size_t big = 8 * MIB;

	start(extra);
	RT(c, "cache_memlimit 8\r\n", "OK\r\n");
	breq.len = 0;
	add_set("big", 0, big, false);
	SEND_N(c, breq.p, breq.len);
	breq.len = 0;
	EXPECT(c, "SERVER_ERROR out of memory storing object\r\n");
	RT(c, "set small 0 0 5\r\nsmall\r\n", "STORED\r\n");
	RT(c, "get small\r\n", "VALUE small 0 5\r\nsmall\r\nEND\r\n");
	RT(c, "get big\r\n", "END\r\n");
	SYNC(c, &srv);
}

/* ---- 7. stats memory ---- */

/* -M (memcached's): when -m is full of live items a set is refused with
 * memcached's words and counted, nothing is evicted and every item stored
 * before is still there. */
Test(cache, disable_evictions_refuses_when_full)
{
	static const char *const extra[] = { "-M", "-m", "8", NULL };
	char value[8192], line[128], key[32];
	struct hstats s;
	int stored = 0;

	memset(value, 'M', sizeof(value));
	start(extra);
	for (;;) {
		struct hbuf b = { 0 };

		cr_assert_lt(stored, 4096, "8 MiB took %d sets of 8 KiB",
			     stored);
		hbuf_printf(&b, "set m:%d 0 0 %zu\r\n", stored, sizeof(value));
		hbuf_add(&b, value, sizeof(value));
		hbuf_add(&b, "\r\n", 2);
		SEND_N(c, b.p, b.len);
		hbuf_free(&b);
		cr_assert_gt(hc_line(c, line, sizeof(line), 10000), 0);
		if (strcmp(line, "STORED\r\n"))
			break;
		stored++;
	}
	cr_assert_str_eq(line, "SERVER_ERROR out of memory storing object\r\n");
	cr_assert_gt(stored, 500, "only %d sets of 8 KiB in 8 MiB", stored);
	read_stats(c, "", &s);
	cr_assert_eq(stat_u64(&s, "evictions"), 0);
	cr_assert_eq(stat_u64(&s, "store_no_memory"), 1);
	cr_assert_eq(stat_u64(&s, "curr_items"), (unsigned long long)stored);
	read_stats(c, "settings", &s);
	cr_assert_str_eq(hstats_get(&s, "evictions"), "off");
	for (int i = 0; i < stored; i++) {
		struct hvalue v;

		snprintf(key, sizeof(key), "get m:%d\r\n", i);
		SEND_N(c, key, strlen(key));
		cr_assert_eq(hc_value(c, &v, 10000), 1, "m:%d lost", i);
		cr_assert_eq(v.len, sizeof(value), "m:%d", i);
		cr_assert_eq(hc_value(c, &v, 10000), 0);
	}
	SYNC(c, &srv);
}

Test(cache, stats_memory_adds_up)
{
	struct hstats s, m;
	char key[64];
	int nsets = 0;

	start(NULL);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "mem:%d", i);
		batched_set(c, key, 100, &nsets, "load");
	}
	flush_sets(c, &nsets, "load");
	read_stats(c, "", &s);
	read_stats(c, "memory", &m);

	unsigned long long items = stat_u64(&s, "curr_items");
	unsigned long long bytes = stat_u64(&m, "bytes");
	unsigned long long headers = stat_u64(&m, "item_headers");
	unsigned long long kv = stat_u64(&m, "item_keys_values");
	unsigned long long overhead = stat_u64(&m, "item_alloc_overhead");
	unsigned long long accounted = stat_u64(&m, "accounted_bytes");
	unsigned long long segments = stat_u64(&m, "segment_bytes");
	unsigned long long unused = stat_u64(&m, "segment_unused_bytes");
	unsigned long long large = stat_u64(&m, "large_bytes");
	unsigned long long hash = stat_u64(&m, "hash_bytes");
	unsigned long long limit = stat_u64(&m, "limit_maxbytes");

	cr_assert_eq(items, 20000);
	cr_assert_eq(bytes, headers + kv + overhead,
		     "bytes %llu != item_headers %llu + item_keys_values %llu "
		     "+ item_alloc_overhead %llu",
		     bytes, headers, kv, overhead);
	cr_assert_eq(accounted, segments + large + hash,
		     "accounted_bytes %llu != segment_bytes %llu + large_bytes "
		     "%llu + hash_bytes %llu",
		     accounted, segments, large, hash);
	/* Small items all live in segments: what they do not fill is
	 * unused (tail space, free segments). */
	cr_assert_eq(large, 0);
	cr_assert_eq(segments, bytes + unused,
		     "segment_bytes %llu != bytes "
		     "%llu + segment_unused_bytes %llu",
		     segments, bytes, unused);
	cr_assert_leq(accounted, limit);
	cr_assert_eq(headers, 28 * items, "item_headers %llu for %llu items",
		     headers, items);
	/* Keys "mem:N" and 100-byte values; no flags, no line end stored;
	 * each item rounded up to 8 bytes at most. */
	cr_assert_geq(kv, items * 105);
	cr_assert_lt(kv, items * 110);
	cr_assert_lt(overhead, items * 8);
	cr_assert_eq(stat_u64(&m, "bytes"), stat_u64(&s, "bytes"));
	/* Every other field is there and a number. */
	(void)stat_u64(&m, "conn_buffer_bytes");
	(void)stat_u64(&m, "conn_memory_limit");
	(void)stat_u64(&m, "malloc_held");
	(void)stat_u64(&m, "malloc_in_use");
	(void)stat_u64(&m, "segments_free");
	(void)stat_u64(&m, "items_carried");
	if (check_rss()) {
		unsigned long long rss = stat_u64(&m, "process_rss");

		cr_assert_geq(rss, bytes, "process_rss %llu, bytes %llu", rss,
			      bytes);
	}
	SYNC(c, &srv);
}

/* ---- 8. --conn-memory ---- */

Test(cache, connection_memory_cap)
{
	static const char *const extra[] = { "-m", "64", "--conn-memory",
					     "1",  "-I", "4m",
					     NULL };
	const size_t big = 3 * MIB;
	char line[256];

	start(extra);
	c2 = hc_open(srv.port);
	cr_assert_not_null(c2, "connect: errno %d", errno);
	SYNC(c2, &srv);
	SYNC(c, &srv);

	/* A 3 MiB get line (-I 4m allows one that long) must be gathered in
	 * the input buffer: past --conn-memory 1 it is refused. */
	breq.len = 0;
	hbuf_add(&breq, "get", 3);
	while (breq.len < big)
		hbuf_add(&breq, " k", 2);
	hbuf_add(&breq, "\r\n", 2);
	/* The server closes the connection part way through: the send may
	 * fail. */
	(void)hc_send(c, breq.p, breq.len);
	breq.len = 0;
	cr_assert_gt(hc_line(c, line, sizeof(line), 10000), 0,
		     "no reply to a 3 MiB line past --conn-memory 1");
	cr_assert_str_eq(line,
			 "SERVER_ERROR out of memory reading request\r\n");
	cr_assert_eq(hc_closed(c, 5000), 1,
		     "the connection stayed open after the error");

	/* A 3 MiB value is received into its item, which -m bounds, not
	 * into a connection buffer: stored. */
	add_set("big", 0, big, false);
	cr_assert_eq(hc_send(c2, breq.p, breq.len), 0);
	breq.len = 0;
	cr_assert_gt(hc_line(c2, line, sizeof(line), 10000), 0);
	cr_assert_str_eq(line, "STORED\r\n");
	RT(c2, "set other 0 0 5\r\nhello\r\n", "STORED\r\n");
	RT(c2, "get other\r\n", "VALUE other 0 5\r\nhello\r\nEND\r\n");
	RT(c2, "delete big\r\n", "DELETED\r\n");
	SYNC(c2, &srv);
}

/* ---- 9. eviction under concurrency ---- */

#define CONC_WRITERS   4
#define CONC_READERS   4
#define CONC_KEYS      20000
#define CONC_RUN_MS    4000
#define CONC_MAX_SETS  400000
#define CONC_MAX_GETS  400000
#define CONC_SET_BATCH 100
#define CONC_GET_KEYS  50

struct conc {
	int port;
	atomic_bool stop;
	atomic_int failed;
	atomic_long sets, gets, hits, scans, scanned;
	pthread_mutex_t lock;
	char msg[1024]; /* the first failure */
};

static void conc_fail(struct conc *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void conc_fail(struct conc *k, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&k->lock);
	if (!atomic_load(&k->failed)) {
		va_start(ap, fmt);
		vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
		va_end(ap);
	}
	atomic_fetch_add(&k->failed, 1);
	atomic_store(&k->stop, true);
	pthread_mutex_unlock(&k->lock);
}

struct conc_arg {
	struct conc *k;
	int id;
};

static void conc_key(char *dst, size_t cap, int writer, int n)
{
	snprintf(dst, cap, "w%d:%d", writer, n);
}

/* "<key>|<version>|" then the key repeated, LEN bytes in all. */
static size_t conc_value(char *dst, const char *key, unsigned long version,
			 size_t len)
{
	int p = snprintf(dst, len, "%s|%lu|", key, version);
	size_t k = strlen(key);

	for (size_t i = (size_t)p; i < len; i++)
		dst[i] = key[(i - (size_t)p) % k];
	return len;
}

/* Whether V (N bytes) is a value conc_value made for KEY. */
static bool conc_value_ok(const char *v, size_t n, const char *key)
{
	size_t k = strlen(key), p;

	if (n < 200 || n > 2000 || memcmp(v, key, k) || v[k] != '|')
		return false;
	p = k + 1;
	if (p >= n || v[p] < '0' || v[p] > '9')
		return false;
	while (p < n && v[p] >= '0' && v[p] <= '9')
		p++;
	if (p >= n || v[p] != '|')
		return false;
	p++;
	for (size_t i = p; i < n; i++)
		if (v[i] != key[(i - p) % k])
			return false;
	return true;
}

static void *conc_writer(void *arg)
{
	struct conc_arg *a = arg;
	struct conc *k = a->k;
	struct hconn *conn = hc_open(k->port);
	struct hbuf b = { 0 };
	char key[64], val[2048], line[256];
	unsigned long version = 0;
	uint64_t rng = 0x1234567ull * (uint64_t)(a->id + 1);

	if (!conn) {
		conc_fail(k, "writer %d: connect: errno %d", a->id, errno);
		return NULL;
	}
	while (!atomic_load(&k->stop) &&
	       atomic_load(&k->sets) < CONC_MAX_SETS) {
		b.len = 0;
		for (int i = 0; i < CONC_SET_BATCH; i++) {
			size_t len = 200 + (size_t)(rng_next(&rng) % 1801);

			conc_key(key, sizeof(key), a->id,
				 (int)(rng_next(&rng) % CONC_KEYS));
			conc_value(val, key, ++version, len);
			hbuf_printf(&b, "set %s 0 0 %zu\r\n", key, len);
			hbuf_add(&b, val, len);
			hbuf_add(&b, "\r\n", 2);
		}
		if (hc_send(conn, b.p, b.len)) {
			conc_fail(k, "writer %d: send: errno %d", a->id, errno);
			break;
		}
		for (int i = 0; i < CONC_SET_BATCH; i++) {
			long n = hc_line(conn, line, sizeof(line), 10000);

			if (n <= 0 || strcmp(line, "STORED\r\n")) {
				conc_fail(k, "writer %d: set reply: %s", a->id,
					  n > 0 ? line : "(none)");
				goto out;
			}
		}
		atomic_fetch_add(&k->sets, CONC_SET_BATCH);
	}
out:
	hbuf_free(&b);
	hc_close(&conn);
	return NULL;
}

static void *conc_reader(void *arg)
{
	struct conc_arg *a = arg;
	struct conc *k = a->k;
	struct hconn *conn = hc_open(k->port);
	struct hvalue *v = malloc(sizeof(*v));
	struct hbuf b = { 0 };
	char keys[CONC_GET_KEYS][32];
	uint64_t rng = 0xABCDEFull * (uint64_t)(a->id + 1);

	if (!conn || !v) {
		conc_fail(k, "reader %d: connect: errno %d", a->id, errno);
		goto out;
	}
	while (!atomic_load(&k->stop) &&
	       atomic_load(&k->gets) < CONC_MAX_GETS) {
		int next = 0, r;

		b.len = 0;
		hbuf_printf(&b, "get");
		for (int i = 0; i < CONC_GET_KEYS; i++) {
			conc_key(keys[i], sizeof(keys[i]),
				 (int)(rng_next(&rng) % CONC_WRITERS),
				 (int)(rng_next(&rng) % CONC_KEYS));
			hbuf_printf(&b, " %s", keys[i]);
		}
		hbuf_printf(&b, "\r\n");
		if (hc_send(conn, b.p, b.len)) {
			conc_fail(k, "reader %d: send: errno %d", a->id, errno);
			break;
		}
		while ((r = hc_value(conn, v, 10000)) == 1) {
			/* Hits come in the order asked, misses left out. */
			while (next < CONC_GET_KEYS &&
			       strcmp(keys[next], v->key))
				next++;
			if (next == CONC_GET_KEYS) {
				conc_fail(k, "reader %d: key %s not asked for",
					  a->id, v->key);
				goto out;
			}
			if (v->flags ||
			    !conc_value_ok(v->val, v->len, keys[next])) {
				conc_fail(k,
					  "reader %d: malformed value for %s: "
					  "%s %.*s",
					  a->id, keys[next], v->line,
					  (int)(v->len < 100 ? v->len : 100),
					  v->val);
				goto out;
			}
			next++;
			atomic_fetch_add(&k->hits, 1);
		}
		if (r < 0) {
			conc_fail(k, "reader %d: bad reply line %s", a->id,
				  v->line);
			break;
		}
		atomic_fetch_add(&k->gets, CONC_GET_KEYS);
	}
out:
	free(v);
	hbuf_free(&b);
	hc_close(&conn);
	return NULL;
}

static void *conc_scanner(void *arg)
{
	struct conc_arg *a = arg;
	struct conc *k = a->k;
	struct hconn *conn = hc_open(k->port);
	char line[600];

	if (!conn) {
		conc_fail(k, "scanner: connect: errno %d", errno);
		return NULL;
	}
	while (!atomic_load(&k->stop)) {
		unsigned long long cursor = 0;

		do {
			if (hc_sendf(conn, "scan %llu count 100\r\n", cursor)) {
				conc_fail(k, "scanner: send: errno %d", errno);
				goto out;
			}
			for (;;) {
				char *end;
				int w, n, used = 0;

				if (hc_line(conn, line, sizeof(line), 10000) <=
				    0) {
					conc_fail(k,
						  "scanner: no reply to "
						  "scan %llu",
						  cursor);
					goto out;
				}
				if (!strncmp(line, "CURSOR ", 7)) {
					cursor = strtoull(line + 7, &end, 10);
					if (strcmp(end, "\r\n")) {
						conc_fail(k, "scanner: %s",
							  line);
						goto out;
					}
					break;
				}
				if (sscanf(line, "KEY w%d:%d\r\n%n", &w, &n,
					   &used) != 2 ||
				    !used || line[used] || w < 0 ||
				    w >= CONC_WRITERS || n < 0 ||
				    n >= CONC_KEYS) {
					conc_fail(k, "scanner: bad line %s",
						  line);
					goto out;
				}
				atomic_fetch_add(&k->scanned, 1);
			}
		} while (cursor && !atomic_load(&k->stop));
		if (!cursor)
			atomic_fetch_add(&k->scans, 1);
	}
out:
	hc_close(&conn);
	return NULL;
}

Test(cache, eviction_under_concurrency)
{
	static const char *const extra[] = { "-m", "8", NULL };
	static struct conc k;
	struct conc_arg args[CONC_WRITERS + CONC_READERS + 1];
	pthread_t th[CONC_WRITERS + CONC_READERS + 1];
	int nth = 0;
	struct hstats s;

	start(extra);
	memset(&k, 0, sizeof(k));
	k.port = srv.port;
	pthread_mutex_init(&k.lock, NULL);
	for (int i = 0; i < CONC_WRITERS + CONC_READERS + 1; i++) {
		void *(*fn)(void *) = i < CONC_WRITERS ? conc_writer
				      : i < CONC_WRITERS + CONC_READERS
					      ? conc_reader
					      : conc_scanner;

		args[i].k = &k;
		args[i].id = i < CONC_WRITERS ? i : i - CONC_WRITERS;
		if (pthread_create(&th[nth], NULL, fn, &args[i])) {
			atomic_store(&k.stop, true);
			conc_fail(&k, "pthread_create failed");
			break;
		}
		nth++;
	}
	long long end = h_now_ms() + CONC_RUN_MS;

	while (!atomic_load(&k.stop) && h_now_ms() < end &&
	       (atomic_load(&k.sets) < CONC_MAX_SETS ||
		atomic_load(&k.gets) < CONC_MAX_GETS))
		h_sleep_ms(20);
	atomic_store(&k.stop, true);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&k.lock);

	cr_assert_eq(atomic_load(&k.failed), 0, "%d failures; first: %s",
		     atomic_load(&k.failed), k.msg);
	cr_assert_gt(atomic_load(&k.sets), 0);
	cr_assert_gt(atomic_load(&k.gets), 0);
	cr_assert_gt(atomic_load(&k.scanned), 0);
	read_stats(c, "", &s);
	cr_assert_leq(stat_u64(&s, "bytes"), stat_u64(&s, "limit_maxbytes"));
	cr_assert_gt(stat_u64(&s, "evictions"), 0, "%ld sets, no eviction",
		     atomic_load(&k.sets));
	cr_log_info("concurrency: %ld sets, %ld gets (%ld hits), %ld full "
		    "scans",
		    atomic_load(&k.sets), atomic_load(&k.gets),
		    atomic_load(&k.hits), atomic_load(&k.scans));
	SYNC(c, &srv);
}
