/*
 * The cache API called directly, no connection and no socket: every store
 * mode and its replies, delete, incr/decr, touch, exptime, flush_all, scan,
 * the memory limit, and two caches in one process (each keeps its own keys
 * and its own unlinked-item batches).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/rcu.h"
#include "server/store/cache.h"

#define MB (1u << 20)

static void setup(void)
{
	rhkv_rcu_register_thread();
}

static void teardown(void)
{
	rhkv_rcu_unregister_thread();
}

TestSuite(cache_api, .init = setup, .fini = teardown, .timeout = 60);

static struct cache_key key(const char *s)
{
	return (struct cache_key){ s, strlen(s) };
}

static enum cache_result put(struct cache *c, enum cache_store_mode mode,
			     const char *k, const char *v, uint32_t flags,
			     int64_t exptime, uint64_t cas_in,
			     uint64_t *cas_out)
{
	return cache_store(c, 0, mode, key(k), flags, exptime, v,
			   (uint32_t)strlen(v), cas_in, cas_out);
}

static enum cache_result set(struct cache *c, const char *k, const char *v)
{
	return put(c, CACHE_SET, k, v, 0, 0, 0, NULL);
}

/* What a get of k sees: whether it hit, and then the value (as a string,
 * cut at 255 bytes), its length, flags, cas and exptime. */
struct got {
	bool hit, expired;
	char value[256];
	uint32_t nbytes;
	uint32_t flags;
	uint64_t cas;
	uint32_t exptime;
};

static struct got get(struct cache *c, const char *k)
{
	struct got g = { 0 };
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(c, key(k), &g.expired);
	if (it) {
		size_t n = item_nbytes(it) < sizeof(g.value) - 1
				   ? item_nbytes(it)
				   : sizeof(g.value) - 1;

		g.hit = true;
		g.nbytes = item_nbytes(it);
		memcpy(g.value, item_value(it), n);
		g.value[n] = '\0';
		cr_assert_eq(memcmp(item_key(it), k, strlen(k)), 0);
		g.flags = item_flags(it);
		g.cas = item_cas(it);
		g.exptime = atomic_load(&it->exptime);
	}
	rhkv_rcu_read_unlock();
	return g;
}

static void assert_value(struct cache *c, const char *k, const char *v)
{
	struct got g = get(c, k);

	cr_assert(g.hit, "%s: miss, expected \"%s\"", k, v);
	cr_assert_eq(g.nbytes, strlen(v), "%s", k);
	cr_assert_str_eq(g.value, v, "%s", k);
}

static void assert_miss(struct cache *c, const char *k)
{
	cr_assert_not(get(c, k).hit, "%s: hit, expected a miss", k);
}

static struct cache *new_cache(uint64_t limit)
{
	struct cache *c = cache_create(1, limit);

	cr_assert_not_null(c);
	return c;
}

/* Frees what this thread left unlinked, then the cache. */
static void done(struct cache *c)
{
	cache_reclaim(c);
	cache_destroy(c);
}

static struct cache_stats stats(struct cache *c)
{
	struct cache_stats st;

	cache_get_stats(c, &st, false);
	return st;
}

/* ---- store modes ---- */

Test(cache_api, set_get_and_overwrite)
{
	struct cache *c = new_cache(16 * MB);
	uint64_t cas1 = 0, cas2 = 0;
	struct got g;

	assert_miss(c, "a");
	cr_assert_eq(put(c, CACHE_SET, "a", "hello", 42, 0, 0, &cas1),
		     CACHE_STORED);
	g = get(c, "a");
	cr_assert(g.hit);
	cr_assert_str_eq(g.value, "hello");
	cr_assert_eq(g.flags, 42);
	cr_assert_eq(g.cas, cas1);
	cr_assert_neq(cas1, 0);

	cr_assert_eq(put(c, CACHE_SET, "a", "", 7, 0, 0, &cas2), CACHE_STORED);
	g = get(c, "a");
	cr_assert_str_eq(g.value, "");
	cr_assert_eq(g.flags, 7);
	cr_assert_eq(g.cas, cas2);
	cr_assert_neq(cas2, cas1);
	cr_assert_eq(stats(c).curr_items, 1);
	done(c);
}

Test(cache_api, add)
{
	struct cache *c = new_cache(16 * MB);

	cr_assert_eq(put(c, CACHE_ADD, "k", "first", 0, 0, 0, NULL),
		     CACHE_STORED);
	cr_assert_eq(put(c, CACHE_ADD, "k", "second", 0, 0, 0, NULL),
		     CACHE_NOT_STORED);
	assert_value(c, "k", "first");
	/* An expired item does not block an add. */
	cr_assert_eq(put(c, CACHE_SET, "x", "old", 0, -1, 0, NULL),
		     CACHE_STORED);
	cr_assert_eq(put(c, CACHE_ADD, "x", "new", 0, 0, 0, NULL),
		     CACHE_STORED);
	assert_value(c, "x", "new");
	done(c);
}

Test(cache_api, replace)
{
	struct cache *c = new_cache(16 * MB);

	cr_assert_eq(put(c, CACHE_REPLACE, "k", "v", 0, 0, 0, NULL),
		     CACHE_NOT_STORED);
	assert_miss(c, "k");
	cr_assert_eq(set(c, "k", "v1"), CACHE_STORED);
	cr_assert_eq(put(c, CACHE_REPLACE, "k", "v2", 3, 0, 0, NULL),
		     CACHE_STORED);
	assert_value(c, "k", "v2");
	cr_assert_eq(get(c, "k").flags, 3);
	done(c);
}

Test(cache_api, append_prepend)
{
	struct cache *c = new_cache(16 * MB);
	int64_t exp = cache_abs_exptime(1000);
	struct got g;

	cr_assert_eq(put(c, CACHE_APPEND, "k", "x", 0, 0, 0, NULL),
		     CACHE_NOT_STORED);
	cr_assert_eq(put(c, CACHE_PREPEND, "k", "x", 0, 0, 0, NULL),
		     CACHE_NOT_STORED);
	assert_miss(c, "k");

	cr_assert_eq(put(c, CACHE_SET, "k", "mid", 9, exp, 0, NULL),
		     CACHE_STORED);
	/* Flags and exptime given to append/prepend are ignored. */
	cr_assert_eq(put(c, CACHE_APPEND, "k", "-end", 1, 0, 0, NULL),
		     CACHE_STORED);
	cr_assert_eq(put(c, CACHE_PREPEND, "k", "start-", 2, 0, 0, NULL),
		     CACHE_STORED);
	g = get(c, "k");
	cr_assert_str_eq(g.value, "start-mid-end");
	cr_assert_eq(g.flags, 9);
	cr_assert_eq(g.exptime, (uint32_t)exp);
	done(c);
}

Test(cache_api, cas)
{
	struct cache *c = new_cache(16 * MB);
	uint64_t cas = 0, cas2 = 0;

	cr_assert_eq(put(c, CACHE_CAS, "k", "v", 0, 0, 1, NULL),
		     CACHE_NOT_FOUND);
	assert_miss(c, "k");
	cr_assert_eq(put(c, CACHE_SET, "k", "v1", 0, 0, 0, &cas), CACHE_STORED);
	cr_assert_eq(put(c, CACHE_CAS, "k", "v2", 0, 0, cas + 1, NULL),
		     CACHE_EXISTS);
	assert_value(c, "k", "v1");
	cr_assert_eq(put(c, CACHE_CAS, "k", "v2", 0, 0, cas, &cas2),
		     CACHE_STORED);
	assert_value(c, "k", "v2");
	cr_assert_eq(get(c, "k").cas, cas2);
	/* The cas it matched is used up. */
	cr_assert_eq(put(c, CACHE_CAS, "k", "v3", 0, 0, cas, NULL),
		     CACHE_EXISTS);
	assert_value(c, "k", "v2");
	/* An expired item is not found by cas. */
	cr_assert_eq(put(c, CACHE_SET, "e", "v", 0, -1, 0, &cas), CACHE_STORED);
	cr_assert_eq(put(c, CACHE_CAS, "e", "v2", 0, 0, cas, NULL),
		     CACHE_NOT_FOUND);
	done(c);
}

Test(cache_api, delete)
{
	struct cache *c = new_cache(16 * MB);

	/* The sweep paused: dead items stay linked until the test meets
	 * them, however slowly it runs. */
	cache_sweep_enable(c, false);
	cr_assert_not(cache_delete(c, key("k")));
	cr_assert_eq(set(c, "k", "v"), CACHE_STORED);
	cr_assert(cache_delete(c, key("k")));
	assert_miss(c, "k");
	cr_assert_not(cache_delete(c, key("k")));
	/* A dead item is removed but was not a hit. */
	cr_assert_eq(put(c, CACHE_SET, "e", "v", 0, -1, 0, NULL), CACHE_STORED);
	cr_assert_eq(stats(c).curr_items, 1);
	cr_assert_not(cache_delete(c, key("e")));
	cr_assert_eq(stats(c).curr_items, 0);
	done(c);
}

/* ---- incr/decr ---- */

static enum cache_result incr(struct cache *c, const char *k, bool up,
			      uint64_t delta, uint64_t *v)
{
	return cache_incr(c, 0, key(k), up, delta, 0, v, NULL);
}

/* incr (up) or decr of "n" by delta gives want, stored as value (NULL:
 * not checked). */
static void step(struct cache *c, bool up, uint64_t delta, uint64_t want,
		 const char *value)
{
	uint64_t v = 12345;

	cr_assert_eq(incr(c, "n", up, delta, &v), CACHE_STORED);
	cr_assert_eq(v, want, "%s %" PRIu64, up ? "incr" : "decr", delta);
	if (value)
		assert_value(c, "n", value);
}

Test(cache_api, incr_decr)
{
	struct cache *c = new_cache(16 * MB);
	uint64_t v;

	cr_assert_eq(incr(c, "n", true, 1, &v), CACHE_NOT_FOUND);
	cr_assert_eq(incr(c, "n", false, 1, &v), CACHE_NOT_FOUND);
	assert_miss(c, "n");

	cr_assert_eq(put(c, CACHE_SET, "n", "10", 5, 0, 0, NULL), CACHE_STORED);
	step(c, true, 5, 15, "15");
	cr_assert_eq(get(c, "n").flags, 5);
	step(c, false, 3, 12, "12");
	/* decr clamps at 0 and, shrinking, keeps the length padded with
	 * spaces (as memcached's in-place update); incr reads that back. */
	step(c, false, 100, 0, "0 ");
	step(c, true, 7, 7, "7 ");
	step(c, true, 100, 107, "107");
	done(c);
}

Test(cache_api, incr_wraps_at_64_bits)
{
	struct cache *c = new_cache(16 * MB);

	cr_assert_eq(set(c, "n", "18446744073709551615"), CACHE_STORED);
	step(c, true, 1, 0, NULL);
	step(c, true, 2, 2, NULL);
	cr_assert_eq(set(c, "n", "18446744073709551610"), CACHE_STORED);
	step(c, true, UINT64_MAX, UINT64_C(18446744073709551609),
	     "18446744073709551609");
	step(c, false, UINT64_MAX, 0, "0                   ");
	done(c);
}

Test(cache_api, incr_non_numeric)
{
	static const char *const bad[] = {
		"abc",			/* letters */
		"",			/* empty */
		"-1",			/* a minus sign (but "-0" is 0) */
		"1a",			/* a trailing letter */
		"18446744073709551616", /* 2^64 */
	};
	struct cache *c = new_cache(16 * MB);
	uint64_t v = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(set(c, "n", bad[i]), CACHE_STORED);
		cr_assert_eq(incr(c, "n", true, 1, &v), CACHE_NON_NUMERIC,
			     "\"%s\"", bad[i]);
		cr_assert_eq(incr(c, "n", false, 1, &v), CACHE_NON_NUMERIC,
			     "\"%s\"", bad[i]);
		assert_value(c, "n", bad[i]);
	}
	/* memcached reads a value with strtoull: leading white space, a
	 * plus sign, any number of leading zeros, and anything after a space
	 * are numeric (each checked against memcached 1.6.18). */
	{
		static const char *const good[] = { " 1", "+1", "\t1 ", "1 a",
						    "000000000000000000001" };

		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			cr_assert_eq(set(c, "n", good[i]), CACHE_STORED);
			cr_assert_eq(incr(c, "n", true, 1, &v), CACHE_STORED,
				     "\"%s\"", good[i]);
			cr_assert_eq(v, 2, "\"%s\"", good[i]);
		}
	}
	/* Twenty digits that fit, and trailing spaces, are numeric. */
	cr_assert_eq(set(c, "n", "00000000000000000009"), CACHE_STORED);
	cr_assert_eq(incr(c, "n", true, 1, &v), CACHE_STORED);
	cr_assert_eq(v, 10);
	cr_assert_eq(set(c, "n", "4   "), CACHE_STORED);
	cr_assert_eq(incr(c, "n", false, 1, &v), CACHE_STORED);
	cr_assert_eq(v, 3);
	done(c);
}

/* ---- expiry, touch, flush_all ---- */

Test(cache_api, abs_exptime)
{
	int64_t now = cache_now();

	cr_assert_eq(cache_abs_exptime(0), 0);
	cr_assert_eq(cache_abs_exptime(-1), -1);
	cr_assert_eq(cache_abs_exptime(INT64_MIN), -1);
	cr_assert_geq(cache_abs_exptime(100), now + 100);
	cr_assert_leq(cache_abs_exptime(100), cache_now() + 100);
	/* Past 30 days: a unix time, taken as it is. */
	cr_assert_eq(cache_abs_exptime(60 * 60 * 24 * 30 + 1),
		     60 * 60 * 24 * 30 + 1);
	cr_assert_eq(cache_abs_exptime(now + 5), now + 5);
}

Test(cache_api, exptime)
{
	struct cache *c = new_cache(16 * MB);
	int64_t now = cache_now();
	struct got g;

	/* The sweep paused: dead items stay linked until the test meets
	 * them, however slowly it runs. */
	cache_sweep_enable(c, false);
	/* Negative: stored already expired. */
	cr_assert_eq(put(c, CACHE_SET, "neg", "v", 0, cache_abs_exptime(-1), 0,
			 NULL),
		     CACHE_STORED);
	g = get(c, "neg");
	cr_assert_not(g.hit);
	cr_assert(g.expired);
	/* An absolute time in the past. */
	cr_assert_eq(put(c, CACHE_SET, "past", "v", 0,
			 cache_abs_exptime(now - 10), 0, NULL),
		     CACHE_STORED);
	g = get(c, "past");
	cr_assert_not(g.hit);
	cr_assert(g.expired);
	/* In the future, relative and absolute. */
	cr_assert_eq(put(c, CACHE_SET, "rel", "v", 0, cache_abs_exptime(1000),
			 0, NULL),
		     CACHE_STORED);
	g = get(c, "rel");
	cr_assert(g.hit);
	cr_assert_geq(g.exptime, (uint32_t)(now + 1000));
	cr_assert_eq(put(c, CACHE_SET, "abs", "v", 0,
			 cache_abs_exptime(now + 1000), 0, NULL),
		     CACHE_STORED);
	cr_assert(get(c, "abs").hit);
	g = get(c, "missing");
	cr_assert_not(g.hit);
	cr_assert_not(g.expired);

	/* cache_reap unlinks the dead ones a find reported. */
	cr_assert_eq(stats(c).curr_items, 4);
	cache_reap(c, key("neg"));
	cache_reap(c, key("past"));
	cache_reap(c, key("rel")); /* alive: stays */
	cr_assert_eq(stats(c).curr_items, 2);
	cr_assert_not(get(c, "neg").expired);
	cr_assert(get(c, "rel").hit);
	done(c);
}

Test(cache_api, touch)
{
	struct cache *c = new_cache(16 * MB);
	struct got g;

	/* The sweep paused: dead items stay linked until the test meets
	 * them, however slowly it runs. */
	cache_sweep_enable(c, false);
	cr_assert_not(cache_touch(c, key("k"), 0));
	cr_assert_eq(
		put(c, CACHE_SET, "k", "v", 0, cache_abs_exptime(100), 0, NULL),
		CACHE_STORED);
	cr_assert(cache_touch(c, key("k"), 0));
	g = get(c, "k");
	cr_assert(g.hit);
	cr_assert_eq(g.exptime, 0);
	cr_assert(cache_touch(c, key("k"), cache_abs_exptime(5000)));
	cr_assert_geq(get(c, "k").exptime, (uint32_t)(cache_now() + 4999));
	/* Touching into the past expires it; then it is not found. */
	cr_assert(cache_touch(c, key("k"), cache_abs_exptime(-1)));
	g = get(c, "k");
	cr_assert_not(g.hit);
	cr_assert(g.expired);
	cr_assert_not(cache_touch(c, key("k"), 0));
	done(c);
}

/* A cas the client chooses (meta E) is what readers see, but flush_all
 * still knows when the item was written: a small chosen cas after a flush
 * lives, a huge one before it does not. */
Test(cache_api, chosen_cas_and_flush)
{
	struct cache *c = new_cache(16 * MB);
	struct cache_write w = { .mode = CACHE_SET,
				 .key = key("huge"),
				 .value = "h",
				 .nbytes = 1,
				 .cas_new = UINT64_MAX };
	uint64_t cas = 0;

	for (int i = 0; i < 50; i++)
		cr_assert_eq(set(c, "filler", "v"), CACHE_STORED);
	cr_assert_eq(cache_write(c, 0, &w, &cas), CACHE_STORED);
	cr_assert_eq(cas, UINT64_MAX);
	cr_assert_eq(get(c, "huge").cas, UINT64_MAX);
	cache_flush(c, 0);
	assert_miss(c, "huge");
	w = (struct cache_write){ .mode = CACHE_SET,
				  .key = key("small"),
				  .value = "s",
				  .nbytes = 1,
				  .cas_new = 5 };
	cr_assert_eq(cache_write(c, 0, &w, &cas), CACHE_STORED);
	cr_assert_eq(cas, 5);
	assert_value(c, "small", "s");
	cr_assert_eq(get(c, "small").cas, 5);
	/* cas compares against the chosen value. */
	cr_assert_eq(put(c, CACHE_CAS, "small", "t", 0, 0, 6, NULL),
		     CACHE_EXISTS);
	cr_assert_eq(put(c, CACHE_CAS, "small", "t", 0, 0, 5, NULL),
		     CACHE_STORED);
	done(c);
}

Test(cache_api, flush_all_now)
{
	struct cache *c = new_cache(16 * MB);
	char k[16];

	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		cr_assert_eq(set(c, k, "v"), CACHE_STORED);
	}
	cache_flush(c, 0);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_miss(c, k);
	}
	cr_assert_eq(put(c, CACHE_REPLACE, "k1", "v", 0, 0, 0, NULL),
		     CACHE_NOT_STORED);
	/* Writes after the flush live. */
	cr_assert_eq(set(c, "k1", "after"), CACHE_STORED);
	assert_value(c, "k1", "after");
	/* A unix time already past flushes at once too. */
	cache_flush(c, cache_now() - 1);
	assert_miss(c, "k1");
	done(c);
}

Test(cache_api, flush_all_delayed)
{
	struct cache *c = new_cache(16 * MB);
	struct timespec pause = { 0, 50000000 };
	int64_t end = cache_now() + 30;

	cr_assert_eq(set(c, "a", "v"), CACHE_STORED);
	/* Far ahead, relative and absolute: nothing goes yet. */
	cache_flush(c, 1000);
	assert_value(c, "a", "v");
	cache_flush(c, cache_now() + 1000);
	assert_value(c, "a", "v");
	/* What was stored before it is due goes once it is. A delay of 3
	 * lasts 2 seconds at least (one-second clocks): time enough for the
	 * set and get on a busy machine. Polled until it is due. */
	cache_flush(c, 3);
	cr_assert_eq(set(c, "b", "v"), CACHE_STORED);
	assert_value(c, "a", "v");
	while (get(c, "a").hit && cache_now() < end)
		nanosleep(&pause, NULL);
	assert_miss(c, "a");
	assert_miss(c, "b");
	cr_assert_eq(set(c, "c", "v"), CACHE_STORED);
	assert_value(c, "c", "v");
	done(c);
}

/* ---- scan ---- */

#define SCAN_KEYS 3000

static void scan_mark(const struct item *it, void *arg)
{
	unsigned char *seen = arg;
	char k[16];
	int i;

	cr_assert_lt(it->nkey, sizeof(k));
	memcpy(k, item_key(it), it->nkey);
	k[it->nkey] = '\0';
	cr_assert_eq(sscanf(k, "s%d", &i), 1, "%s", k);
	cr_assert(i >= 0 && i < SCAN_KEYS + 1, "%s", k);
	seen[i] = 1;
}

Test(cache_api, scan_finds_every_key)
{
	struct cache *c = new_cache(64 * MB);
	unsigned char *seen = calloc(SCAN_KEYS + 1, 1);
	uint64_t cursor = 0;
	unsigned int calls = 0;
	char k[16];

	cr_assert_not_null(seen);
	for (int i = 0; i < SCAN_KEYS; i++) {
		snprintf(k, sizeof(k), "s%d", i);
		cr_assert_eq(set(c, k, "v"), CACHE_STORED);
	}
	/* A dead key is not reported. */
	snprintf(k, sizeof(k), "s%d", SCAN_KEYS);
	cr_assert_eq(put(c, CACHE_SET, k, "v", 0, -1, 0, NULL), CACHE_STORED);
	do {
		cursor = cache_scan(c, cursor, 100, scan_mark, seen);
		cr_assert_lt(++calls, 100000);
	} while (cursor != 0);
	for (int i = 0; i < SCAN_KEYS; i++)
		cr_assert(seen[i], "s%d not reported", i);
	cr_assert_not(seen[SCAN_KEYS], "the expired key was reported");
	free(seen);
	done(c);
}

/* ---- memory ---- */

Test(cache_api, item_larger_than_limit)
{
	struct cache *c = new_cache(MB);
	size_t n = 2 * MB;
	char *big = malloc(n);

	cr_assert_not_null(big);
	memset(big, 'x', n);
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("big"), 0, 0, big,
				 (uint32_t)n, 0, NULL),
		     CACHE_NO_MEMORY);
	assert_miss(c, "big");
	cr_assert_eq(stats(c).bytes, 0);
	/* Small ones still fit. */
	cr_assert_eq(set(c, "small", "v"), CACHE_STORED);
	free(big);
	done(c);
}

Test(cache_api, filling_past_the_limit_evicts)
{
	const uint64_t limit = MB;
	struct cache *c = new_cache(limit);
	char value[4000], k[16];
	struct cache_stats st;

	memset(value, 'v', sizeof(value));
	for (int i = 0; i < 2000; i++) { /* 8 MB */
		snprintf(k, sizeof(k), "f%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "%s", k);
		st = stats(c);
		cr_assert_leq(st.bytes, limit, "after %s", k);
		cr_assert_leq(st.bytes + st.retired_bytes + st.hash_bytes,
			      limit, "after %s", k);
	}
	st = stats(c);
	cr_assert_gt(st.evictions, 0);
	cr_assert_lt(st.curr_items, 2000);
	cr_assert_gt(st.curr_items, 0);
	snprintf(k, sizeof(k), "f%d", 1999);
	cr_assert_eq(get(c, k).nbytes, sizeof(value), "newest item evicted");
	done(c);
}

/*
 * Evictions off (memcached's -M): once live items fill the limit a write
 * fails with CACHE_NO_MEMORY and nothing stored is lost; overwrites,
 * deletes and expiry still give room back (the evictor compacts).
 */
Test(cache_api, evictions_off_refuses_rather_than_evicts)
{
	const uint64_t limit = 2 * MB;
	struct cache *c = new_cache(limit);
	char value[4000], k[16];
	int stored = 0;
	enum cache_result r = CACHE_STORED;

	cache_set_evictions(c, false);
	cr_assert(!cache_evictions(c));
	memset(value, 'v', sizeof(value));
	/* The same few keys overwritten: dead bytes fill the log and are
	 * compacted away, never a failure. */
	for (int i = 0; i < 4000; i++) { /* 16 MB of writes */
		snprintf(k, sizeof(k), "o%d", i % 16);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "overwrite %d", i);
	}
	for (int i = 0; i < 16; i++) {
		snprintf(k, sizeof(k), "o%d", i);
		cr_assert(cache_delete(c, key(k)));
	}
	/* New keys until the limit refuses one. */
	while (stored < 4000) {
		snprintf(k, sizeof(k), "f%d", stored);
		r = cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
				sizeof(value), 0, NULL);
		if (r != CACHE_STORED)
			break;
		stored++;
	}
	cr_assert_eq(r, CACHE_NO_MEMORY, "after %d sets", stored);
	cr_assert_gt(stored, 200, "only %d of 4 KB fit in 2 MB", stored);
	/* Refused again, and still nothing lost. */
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("one-more"), 0, 0, value,
				 sizeof(value), 0, NULL),
		     CACHE_NO_MEMORY);
	struct cache_stats st = stats(c);

	cr_assert_eq(st.evictions, 0);
	cr_assert_eq(st.curr_items, (unsigned long)stored);
	cr_assert_leq(st.bytes, limit);
	for (int i = 0; i < stored; i++) {
		snprintf(k, sizeof(k), "f%d", i);
		cr_assert_eq(get(c, k).nbytes, sizeof(value), "%s lost", k);
	}
	/* Deleting makes room again. */
	for (int i = 0; i < stored; i += 2) {
		snprintf(k, sizeof(k), "f%d", i);
		cr_assert(cache_delete(c, key(k)));
	}
	for (int i = 0; i < stored / 4; i++) {
		snprintf(k, sizeof(k), "g%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "%s after the deletes", k);
	}
	cr_assert_eq(stats(c).evictions, 0);
	/* Evictions on again: a write evicts instead of failing. */
	cache_set_evictions(c, true);
	for (int i = 0; i < stored; i++) {
		snprintf(k, sizeof(k), "h%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "%s with evictions on", k);
	}
	cr_assert_gt(stats(c).evictions, 0);
	done(c);
}

/*
 * Once the items are within a lowered limit they stay within it: segments
 * freed by the evictor and pooled (their memory still counted) are not
 * filled past the new limit while the pool waits to be trimmed. Before,
 * writers took the pooled segments and bytes rose above the limit again.
 */
Test(cache_api, lowered_limit_holds_for_writes)
{
	struct cache *c = new_cache(64 * MB);
	char value[4000], k[24];
	struct cache_stats st;

	memset(value, 'v', sizeof(value));
	for (int i = 0; i < 12000; i++) { /* 48 MB */
		snprintf(k, sizeof(k), "a%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "%s", k);
	}
	cr_assert_gt(stats(c).bytes, 40 * MB);
	cache_set_limit(c, 16 * MB);
	bool within = false;
	for (int i = 0; i < 24000; i++) { /* up to 96 MB more */
		snprintf(k, sizeof(k), "b%d", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0, value,
					 sizeof(value), 0, NULL),
			     CACHE_STORED, "%s", k);
		st = stats(c);
		if (within)
			cr_assert_leq(st.bytes, 16 * MB, "after %s", k);
		within = within || st.bytes <= 16 * MB;
	}
	cr_assert(within, "never within the lowered limit");
	done(c);
}

Test(cache_api, referenced_item_outlives_its_unlink)
{
	/* Only large items are referenced (a reply sends them from the
	 * item); shorter values are copied inside the read-side section. */
	enum { BIG = ITEM_SEG_VALUE_MAX + 1 };
	struct cache *c = new_cache(16 * MB);
	char *first = malloc(BIG), *second = malloc(BIG);
	struct item *it;

	cr_assert(first && second);
	memset(first, '1', BIG);
	memset(second, '2', BIG);
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("k"), 0, 0, first, BIG, 0,
				 NULL),
		     CACHE_STORED);
	rhkv_rcu_read_lock();
	it = cache_find(c, key("k"), NULL);
	cr_assert_not_null(it);
	item_get(it);
	rhkv_rcu_read_unlock();
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("k"), 0, 0, second, BIG,
				 0, NULL),
		     CACHE_STORED);
	cache_reclaim(c);
	cr_assert_eq(stats(c).retired_bytes, 0);
	/* Unlinked and past its grace period, but still referenced. */
	cr_assert_eq(item_nbytes(it), BIG);
	cr_assert_eq(memcmp(item_value(it), first, BIG), 0);
	item_put(it);
	cr_assert_eq(get(c, "k").nbytes, BIG);
	free(first);
	free(second);
	done(c);
}

Test(cache_api, items_pack_into_segments)
{
	struct cache *c = new_cache(64 * MB);
	struct cache_stats st;
	char k[32], v[101];

	memset(v, 'v', 100);
	v[100] = '\0';
	for (int i = 0; i < 10000; i++) {
		snprintf(k, sizeof(k), "key:%012d", i); /* 16 bytes */
		cr_assert_eq(set(c, k, v), CACHE_STORED);
	}
	st = stats(c);
	/* 28 bytes of header + 16 + 100, rounded to 8: 144 a item, no
	 * allocator header and no line end. */
	cr_assert_eq(st.bytes, 10000u * 144, "%" PRIu64, st.bytes);
	cr_assert_eq(st.item_data, 10000u * 144, "%" PRIu64, st.item_data);
	cr_assert_eq(st.segment_size, 512u << 10); /* -m 64: 128 segments */
	/* Whole segments, and nothing else, are accounted. */
	cr_assert_eq(st.accounted, st.segments * st.segment_size);
	cr_assert_leq(st.segments, 3);
	/* Flags cost 4 bytes, and only where they are not 0. */
	cr_assert_eq(
		cache_store(c, 0, CACHE_SET, key("f"), 7, 0, "x", 1, 0, NULL),
		CACHE_STORED);
	cr_assert_eq(stats(c).item_data - st.item_data,
		     ITEM_HEADER_BYTES + 4 + 1 + 1);
	cr_assert_eq(get(c, "f").flags, 7);
	done(c);
}

Test(cache_api, overwritten_segments_come_back)
{
	struct cache *c = new_cache(64 * MB);
	char v[1000];

	memset(v, 'o', sizeof(v));
	for (int round = 0; round < 20; round++)
		for (int i = 0; i < 1000; i++) {
			char k[16];

			snprintf(k, sizeof(k), "o%d", i);
			cr_assert_eq(cache_store(c, 0, CACHE_SET, key(k), 0, 0,
						 v, sizeof(v), 0, NULL),
				     CACHE_STORED);
		}
	/* ~20 MB were written over 1 MB of keys: the segments holding only
	 * overwritten items go back to the pool at once, and to the kernel
	 * once the pool has not needed them for a second (two maintenance
	 * passes of the pool's low mark), without any eviction. */
	for (int i = 0; i < 1500 && stats(c).accounted >= 8 * MB; i++) {
		cache_crawl(c);
		cache_reclaim(c);
		usleep(20000);
	}
	cr_assert_lt(stats(c).accounted, 8 * MB, "%" PRIu64,
		     stats(c).accounted);
	cr_assert_eq(stats(c).evictions, 0);
	cr_assert_eq(stats(c).curr_items, 1000);
	done(c);
}

/* ---- two caches in one process ---- */

#define PAIR_KEYS 2000

static void fill(struct cache *c, const char *prefix)
{
	char k[32], v[32];

	for (int i = 0; i < PAIR_KEYS; i++) {
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		snprintf(v, sizeof(v), "%s-value-%d", prefix, i);
		cr_assert_eq(set(c, k, v), CACHE_STORED, "%s", k);
	}
}

/* Every key of prefix is in c with its value, and none is in other (when
 * not NULL). */
static void assert_holds(struct cache *c, struct cache *other,
			 const char *prefix)
{
	char k[32], v[32];
	int missing = 0, foreign = 0;

	for (int i = 0; i < PAIR_KEYS; i++) {
		struct got g;

		snprintf(k, sizeof(k), "%s%d", prefix, i);
		snprintf(v, sizeof(v), "%s-value-%d", prefix, i);
		g = get(c, k);
		if (!g.hit || strcmp(g.value, v))
			missing++;
		if (other && get(other, k).hit)
			foreign++;
	}
	cr_assert_eq(missing, 0,
		     "%d of %d \"%s\" keys not found in their cache", missing,
		     PAIR_KEYS, prefix);
	cr_assert_eq(foreign, 0, "%d \"%s\" keys found in the other cache",
		     foreign, prefix);
}

Test(cache_api, two_caches_keep_their_keys)
{
	struct cache *a = new_cache(64 * MB), *b;

	fill(a, "a:");
	b = new_cache(64 * MB);
	fill(b, "b:");
	assert_holds(a, b, "a:");
	assert_holds(b, a, "b:");
	cr_assert_eq(stats(a).curr_items, PAIR_KEYS);
	cr_assert_eq(stats(b).curr_items, PAIR_KEYS);
	/* Same keys in both, different values. */
	cr_assert_eq(set(a, "shared", "in a"), CACHE_STORED);
	cr_assert_eq(set(b, "shared", "in b"), CACHE_STORED);
	assert_value(a, "shared", "in a");
	assert_value(b, "shared", "in b");
	cr_assert(cache_delete(a, key("shared")));
	assert_miss(a, "shared");
	assert_value(b, "shared", "in b");
	done(a);
	assert_holds(b, NULL, "b:");
	done(b);
}

/* Overwrites k in c with a large value: its old item retires. */
static void retire_one(struct cache *c, const char *k)
{
	enum { BIG = ITEM_SEG_VALUE_MAX + 1 };
	static char v[BIG];

	cr_assert_eq(
		cache_store(c, 0, CACHE_SET, key(k), 0, 0, v, BIG, 0, NULL),
		CACHE_STORED);
	cr_assert_eq(
		cache_store(c, 0, CACHE_SET, key(k), 0, 0, v, BIG, 0, NULL),
		CACHE_STORED);
}

Test(cache_api, caches_retire_apart)
{
	enum { N = 12 };
	struct cache *c[N];

	for (int i = 0; i < N; i++)
		c[i] = new_cache(16 * MB);
	/* Each cache gets unlinked items from this thread, interleaved. */
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++)
			retire_one(c[i], round == 1 ? "x" : "y");
	/*
	 * Each retired against its own cache's accounting: its reclaim
	 * brings its own retired bytes to 0, and what it counts is its two
	 * large items. Each cache's maintenance thread may retire or reclaim
	 * meanwhile, so the reclaim is asked again until nothing is left
	 * (an item retired into another cache's count would never leave).
	 */
	for (int i = 0; i < N; i++) {
		struct cache_stats st;

		for (int tries = 0; tries < 3000; tries++) { /* 30 s */
			cache_reclaim(c[i]);
			st = stats(c[i]);
			if (st.retired_bytes == 0)
				break;
			usleep(10000);
		}
		cr_assert_eq(st.retired_bytes, 0, "cache %d", i);
		cr_assert_geq(st.bytes, 2 * (uint64_t)ITEM_SEG_VALUE_MAX,
			      "cache %d", i);
		cr_assert_eq(st.large_bytes, st.bytes, "cache %d", i);
		cr_assert_eq(st.curr_items, 2, "cache %d", i);
	}
	for (int i = 0; i < N; i++)
		cache_destroy(c[i]);
}
