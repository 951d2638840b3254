/*
 * Prefix flushes at the cache API (cache_flush_prefix): what every read
 * and write sees of a covered item, nested and binary prefixes, a random
 * model test, the bound on pending tombstones, flush_all taking them over,
 * memory coming back once the sweep has unlinked what they covered, and a
 * reader holding a covered item while its tombstone retires.
 */
#include <criterion/criterion.h>
#include <stdint.h>
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

TestSuite(cache_prefix, .init = setup, .fini = teardown, .timeout = 120);

static struct cache_key bytes(const char *p, size_t n)
{
	return (struct cache_key){ p, n };
}

static struct cache_key key(const char *s)
{
	return bytes(s, strlen(s));
}

static enum cache_result store(struct cache *c, enum cache_store_mode mode,
			       struct cache_key k, const char *v)
{
	return cache_store(c, 0, mode, k, 0, 0, v, (uint32_t)strlen(v), 0,
			   NULL);
}

static enum cache_result set(struct cache *c, const char *k, const char *v)
{
	return store(c, CACHE_SET, key(k), v);
}

static enum cache_result flush(struct cache *c, const char *prefix)
{
	return cache_flush_prefix(c, key(prefix));
}

/* The value of k into v[cap] (NUL-terminated), or false on a miss. */
static bool get_bytes(struct cache *c, struct cache_key k, char *v, size_t cap)
{
	struct item *it;
	bool hit;

	rhkv_rcu_read_lock();
	it = cache_find(c, k, NULL);
	hit = it != NULL;
	if (hit) {
		size_t n =
			item_nbytes(it) < cap - 1 ? item_nbytes(it) : cap - 1;

		memcpy(v, item_value(it), n);
		v[n] = '\0';
	}
	rhkv_rcu_read_unlock();
	return hit;
}

static bool hit(struct cache *c, const char *k)
{
	char v[64];

	return get_bytes(c, key(k), v, sizeof(v));
}

static struct cache_stats stats(struct cache *c)
{
	struct cache_stats st;

	cache_get_stats(c, &st, false);
	return st;
}

static struct cache *new_cache(uint64_t limit)
{
	struct cache *c = cache_create(1, limit);

	cr_assert_not_null(c);
	return c;
}

static void done(struct cache *c)
{
	cache_reclaim(c);
	cache_destroy(c);
}

/* Waits (at most 20 s) until no tombstone is pending: the sweep has
 * passed the whole table after each. */
static void wait_retired(struct cache *c)
{
	for (int i = 0; i < 2000 && stats(c).prefix_tombstones; i++) {
		cache_crawl(c);
		usleep(10000);
	}
	cr_assert_eq(stats(c).prefix_tombstones, 0,
		     "tombstones still pending after 20 s");
}

struct scan_arg {
	const char *prefix;
	unsigned long n;
};

static void count_prefixed(const struct item *it, void *arg)
{
	struct scan_arg *a = arg;
	size_t n = strlen(a->prefix);

	if (it->nkey >= n && !memcmp(item_key(it), a->prefix, n))
		a->n++;
}

/* Live keys starting with prefix, as a whole scan reports them. */
static unsigned long scan_count(struct cache *c, const char *prefix)
{
	struct scan_arg a = { prefix, 0 };
	uint64_t cur = 0;

	do
		cur = cache_scan(c, cur, 100, count_prefixed, &a);
	while (cur);
	return a.n;
}

/* ---- what a covered item is to every command ---- */

Test(cache_prefix, covered_items_are_gone_for_every_command)
{
	struct cache *c = new_cache(16 * MB);
	uint64_t v = 0, cas = 0;

	cr_assert_eq(set(c, "user:1", "a"), CACHE_STORED);
	cr_assert_eq(set(c, "user:2", "5"), CACHE_STORED);
	cr_assert_eq(set(c, "user:3", "x"), CACHE_STORED);
	cr_assert_eq(cache_store(c, 0, CACHE_SET, key("user:4"), 0, 0, "y", 1,
				 0, &cas),
		     CACHE_STORED);
	cr_assert_eq(set(c, "post:1", "b"), CACHE_STORED);
	cr_assert_eq(flush(c, "user:"), CACHE_STORED);

	cr_assert_not(hit(c, "user:1"));
	cr_assert_not(cache_exists(c, key("user:1")));
	cr_assert(hit(c, "post:1"), "a key outside the prefix is kept");
	cr_assert_eq(cache_incr(c, 0, key("user:2"), true, 1, 0, &v, NULL),
		     CACHE_NOT_FOUND);
	cr_assert_eq(store(c, CACHE_APPEND, key("user:3"), "z"),
		     CACHE_NOT_STORED);
	cr_assert_eq(store(c, CACHE_REPLACE, key("user:3"), "z"),
		     CACHE_NOT_STORED);
	cr_assert_eq(cache_store(c, 0, CACHE_CAS, key("user:4"), 0, 0, "z", 1,
				 cas, NULL),
		     CACHE_NOT_FOUND);
	cr_assert_not(cache_touch(c, key("user:3"), 100));
	cr_assert_eq(cache_delete_cas(c, key("user:3"), 0), CACHE_NOT_FOUND);
	/* add stores over it: the key is free. */
	cr_assert_eq(store(c, CACHE_ADD, key("user:1"), "new"), CACHE_STORED);
	cr_assert(hit(c, "user:1"), "stored after the flush: kept");
	rhkv_rcu_read_lock();
	cr_assert(cache_lookup_any(c, key("user:1")) != NULL);
	rhkv_rcu_read_unlock();
	cr_assert_eq(flush(c, "post:"), CACHE_STORED);
	cr_assert(hit(c, "user:1"));
	cr_assert_not(hit(c, "post:1"));
	cr_assert_eq(scan_count(c, "post:"), 0, "scan skips covered items");
	cr_assert_geq(scan_count(c, "user:"), 1); /* a resize may repeat */
	done(c);
}

/* ---- prefixes within prefixes, bytes of every value ---- */

Test(cache_prefix, nested_and_binary_prefixes)
{
	struct cache *c = new_cache(16 * MB);
	static const char bin_key[] = { 'k', 0, (char)0xff, 'x' };
	static const char bin_other[] = { 'k', 0, (char)0xfe, 'x' };
	static const char bin_prefix[] = { 'k', 0, (char)0xff };
	char v[8];

	cr_assert_eq(set(c, "abc", "1"), CACHE_STORED);
	cr_assert_eq(set(c, "abd", "1"), CACHE_STORED);
	cr_assert_eq(set(c, "ab", "1"), CACHE_STORED);
	cr_assert_eq(set(c, "a", "1"), CACHE_STORED);
	cr_assert_eq(set(c, "b", "1"), CACHE_STORED);
	/* A prefix equal to a whole key covers that key. */
	cr_assert_eq(flush(c, "abc"), CACHE_STORED);
	cr_assert_not(hit(c, "abc"));
	cr_assert(hit(c, "abd"));
	cr_assert(hit(c, "ab"), "shorter than the prefix: not covered");
	/* A newer "abc" is kept while "ab" (later) covers it again. */
	cr_assert_eq(set(c, "abc", "2"), CACHE_STORED);
	cr_assert(hit(c, "abc"));
	cr_assert_eq(flush(c, "ab"), CACHE_STORED);
	cr_assert_not(hit(c, "abc"));
	cr_assert_not(hit(c, "abd"));
	cr_assert_not(hit(c, "ab"));
	cr_assert(hit(c, "a"));
	cr_assert_eq(set(c, "abe", "3"), CACHE_STORED);
	cr_assert_eq(set(c, "abc", "3"), CACHE_STORED);
	cr_assert_eq(flush(c, "a"), CACHE_STORED);
	cr_assert_not(hit(c, "a"));
	cr_assert_not(hit(c, "abe"));
	cr_assert_not(hit(c, "abc"));
	cr_assert(hit(c, "b"));
	/* Flushing a pending prefix again covers what came since. */
	cr_assert_eq(set(c, "abc", "4"), CACHE_STORED);
	cr_assert_eq(flush(c, "abc"), CACHE_STORED);
	cr_assert_not(hit(c, "abc"));

	/* NUL and 0xff inside: compared as bytes, not strings. */
	cr_assert_eq(store(c, CACHE_SET, bytes(bin_key, sizeof(bin_key)), "b"),
		     CACHE_STORED);
	cr_assert_eq(
		store(c, CACHE_SET, bytes(bin_other, sizeof(bin_other)), "b"),
		CACHE_STORED);
	cr_assert_eq(store(c, CACHE_SET, key("k"), "b"), CACHE_STORED);
	cr_assert_eq(
		cache_flush_prefix(c, bytes(bin_prefix, sizeof(bin_prefix))),
		CACHE_STORED);
	cr_assert_not(
		get_bytes(c, bytes(bin_key, sizeof(bin_key)), v, sizeof(v)));
	cr_assert(get_bytes(c, bytes(bin_other, sizeof(bin_other)), v,
			    sizeof(v)));
	cr_assert(hit(c, "k"));
	/* Bad lengths are refused. */
	cr_assert_eq(cache_flush_prefix(c, bytes("", 0)), CACHE_NOT_FOUND);
	{
		char big[CACHE_PREFIX_MAX + 1];

		memset(big, 'a', sizeof(big));
		cr_assert_eq(cache_flush_prefix(c, bytes(big, sizeof(big))),
			     CACHE_NOT_FOUND);
	}
	/* Nothing covered comes back once the tombstones retire. */
	wait_retired(c);
	cr_assert_not(hit(c, "abc"));
	cr_assert_not(hit(c, "a"));
	cr_assert(hit(c, "b"));
	cr_assert(hit(c, "k"));
	cr_assert_gt(stats(c).prefix_reclaimed, 0);
	done(c);
}

/* ---- a random model ---- */

/* Keys from a small alphabet with NUL and high bytes, 1 to 5 bytes: many
 * share prefixes, many are prefixes of others. */
static size_t random_key(unsigned int *seed, char *k)
{
	static const char alphabet[] = { 'a', 'b', 0, (char)0xff, (char)0x80 };
	size_t n = 1 + (size_t)(rand_r(seed) % 5);

	for (size_t i = 0; i < n; i++)
		k[i] = alphabet[rand_r(seed) % sizeof(alphabet)];
	return n;
}

#define MODEL_KEYS 4096

struct model {
	char key[MODEL_KEYS][5];
	uint8_t len[MODEL_KEYS];
	char value[MODEL_KEYS][16]; /* "" when absent; "v" and an int */
	size_t n;
};

static size_t model_find(struct model *m, const char *k, size_t n)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->len[i] == n && !memcmp(m->key[i], k, n))
			return i;
	cr_assert_lt(m->n, MODEL_KEYS);
	memcpy(m->key[i], k, n);
	m->len[i] = (uint8_t)n;
	m->value[i][0] = '\0';
	m->n++;
	return i;
}

static void model_check(struct cache *c, struct model *m, unsigned long *live)
{
	*live = 0;
	for (size_t i = 0; i < m->n; i++) {
		char v[16];
		bool h =
			get_bytes(c, bytes(m->key[i], m->len[i]), v, sizeof(v));

		if (m->value[i][0]) {
			(*live)++;
			cr_assert(h, "key %zu: miss, expected %s", i,
				  m->value[i]);
			cr_assert_str_eq(v, m->value[i], "key %zu", i);
		} else {
			cr_assert_not(h, "key %zu: hit on %s, expected none", i,
				      v);
		}
	}
}

Test(cache_prefix, random_model)
{
	struct cache *c = new_cache(64 * MB);
	struct model *m = calloc(1, sizeof(*m));
	unsigned int seed = 20261204;
	unsigned long live;

	cr_assert_not_null(m);
	/* The sweep runs all along: tombstones retire in the middle. */
	for (int op = 0; op < 20000; op++) {
		char k[5], v[16];
		size_t n = random_key(&seed, k), i;
		int what = rand_r(&seed) % 100;

		if (what < 55) {
			i = model_find(m, k, n);
			snprintf(m->value[i], sizeof(m->value[i]), "v%d", op);
			cr_assert_eq(
				store(c, CACHE_SET, bytes(k, n), m->value[i]),
				CACHE_STORED);
		} else if (what < 60) {
			i = model_find(m, k, n);
			cache_delete(c, bytes(k, n));
			m->value[i][0] = '\0';
		} else if (what < 63) {
			size_t pn = 1 + (size_t)(rand_r(&seed) % 3);

			pn = pn < n ? pn : n;
			cr_assert_eq(cache_flush_prefix(c, bytes(k, pn)),
				     CACHE_STORED);
			for (i = 0; i < m->n; i++)
				if (m->len[i] >= pn &&
				    !memcmp(m->key[i], k, pn))
					m->value[i][0] = '\0';
		} else {
			bool h = get_bytes(c, bytes(k, n), v, sizeof(v));

			i = model_find(m, k, n);
			cr_assert_eq(h, m->value[i][0] != '\0', "op %d", op);
			if (h)
				cr_assert_str_eq(v, m->value[i], "op %d", op);
		}
	}
	model_check(c, m, &live);
	wait_retired(c);
	model_check(c, m, &live);
	/* Everything covered was unlinked: only the model's keys remain. */
	cr_assert_eq(stats(c).curr_items, live);
	free(m);
	done(c);
}

/* ---- the bound, flush_all ---- */

Test(cache_prefix, pending_tombstones_are_bounded)
{
	struct cache *c = new_cache(16 * MB);

	cr_assert(cache_set_max_prefix_flushes(c, 3));
	cr_assert_not(cache_set_max_prefix_flushes(c, 0));
	cache_sweep_enable(c, false); /* nothing retires */
	cr_assert_eq(set(c, "d:1", "x"), CACHE_STORED);
	cr_assert_eq(flush(c, "a"), CACHE_STORED);
	cr_assert_eq(flush(c, "b"), CACHE_STORED);
	cr_assert_eq(flush(c, "c"), CACHE_STORED);
	cr_assert_eq(flush(c, "d"), CACHE_NOT_STORED);
	cr_assert(hit(c, "d:1"), "a refused flush covers nothing");
	/* A pending prefix may be flushed again at the bound. */
	cr_assert_eq(flush(c, "b"), CACHE_STORED);
	cr_assert_eq(stats(c).prefix_tombstones, 3);
	cr_assert_eq(stats(c).prefix_refused, 1);
	cr_assert_not(cache_set_max_prefix_flushes(c, 2),
		      "below the number pending");
	usleep(300000);
	cr_assert_eq(stats(c).prefix_tombstones, 3, "no sweep, no retiring");
	cache_sweep_enable(c, true);
	wait_retired(c);
	cr_assert_eq(flush(c, "d"), CACHE_STORED);
	cr_assert_not(hit(c, "d:1"));
	cr_assert_geq(stats(c).prefix_retired, 3);
	done(c);
}

Test(cache_prefix, flush_all_takes_them_over)
{
	struct cache *c = new_cache(16 * MB);

	cache_sweep_enable(c, false);
	cr_assert_eq(set(c, "a:1", "x"), CACHE_STORED);
	cr_assert_eq(set(c, "b:1", "x"), CACHE_STORED);
	cr_assert_eq(flush(c, "a:"), CACHE_STORED);
	cr_assert_eq(stats(c).prefix_tombstones, 1);
	cache_flush(c, 0);
	cr_assert_eq(stats(c).prefix_tombstones, 0);
	cr_assert_not(hit(c, "a:1"));
	cr_assert_not(hit(c, "b:1"));
	cr_assert_eq(set(c, "a:1", "y"), CACHE_STORED);
	cr_assert(hit(c, "a:1"));
	done(c);
}

/* ---- memory ---- */

Test(cache_prefix, memory_returns_after_the_sweep)
{
	struct cache *c = new_cache(64 * MB);
	char k[32], v[101];
	struct cache_stats before, after;

	memset(v, 'v', 100);
	v[100] = '\0';
	for (int i = 0; i < 100000; i++) {
		snprintf(k, sizeof(k), "gone:%d", i);
		cr_assert_eq(set(c, k, v), CACHE_STORED);
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "kept:%d", i);
		cr_assert_eq(set(c, k, v), CACHE_STORED);
	}
	before = stats(c);
	cr_assert_eq(flush(c, "gone:"), CACHE_STORED);
	wait_retired(c);
	/* Emptied segments go back to the pool at once, and to the kernel
	 * once unused for a second: wait for that too (at most 30 s). */
	for (int i = 0; i < 3000; i++) {
		cache_reclaim(c);
		after = stats(c);
		if (after.accounted < before.accounted / 4)
			break;
		usleep(10000);
	}
	cr_assert_eq(after.curr_items, 1000);
	cr_assert_geq(after.prefix_reclaimed, 100000);
	cr_assert_lt(after.bytes, before.bytes / 50,
		     "linked bytes %llu of %llu",
		     (unsigned long long)after.bytes,
		     (unsigned long long)before.bytes);
	cr_assert_lt(after.accounted, before.accounted / 4,
		     "accounted %llu of %llu",
		     (unsigned long long)after.accounted,
		     (unsigned long long)before.accounted);
	for (int i = 0; i < 1000; i += 97) {
		snprintf(k, sizeof(k), "kept:%d", i);
		cr_assert(hit(c, k));
	}
	done(c);
}

/* ---- retirement ---- */

/*
 * A reader that found a covered item just before the sweep unlinked it
 * must still see it dead for the rest of its read-side section, however
 * long: the tombstone leaves the published set only a grace period after
 * its sweep pass has ended.
 */
Test(cache_prefix, retirement_waits_for_readers)
{
	struct cache *c = new_cache(64 * MB);
	struct cache_stats st;
	unsigned long passes;
	struct item *it;

	cr_assert_eq(set(c, "p:1", "old"), CACHE_STORED);
	cache_sweep_enable(c, false);
	cr_assert_eq(flush(c, "p:"), CACHE_STORED);
	/* The maintenance thread's ticks arm the tombstone meanwhile. */
	usleep(500000);
	passes = stats(c).sweep_passes;

	rhkv_rcu_read_lock();
	it = cache_lookup_any(c, key("p:1"));
	cr_assert_not_null(it, "the sweep ran while paused");
	cr_assert_not(cache_item_live(c, it, cache_now()));
	cache_sweep_enable(c, true);
	/* The first pass after the pause unlinks the item (no pass was
	 * running: nothing asked for one before the flush). Polled for up
	 * to 30 s. */
	for (int i = 0; i < 3000; i++) {
		st = stats(c);
		if (st.sweep_passes > passes && st.prefix_reclaimed)
			break;
		usleep(10000);
	}
	cr_assert_gt(st.sweep_passes, passes);
	cr_assert_eq(st.prefix_reclaimed, 1);
	/* Give a retirement that did not wait for us time to happen. */
	usleep(300000);
	cr_assert_not(cache_item_live(c, it, cache_now()),
		      "a covered item came back to life for its reader");
	cr_assert_eq(stats(c).prefix_tombstones, 1);
	rhkv_rcu_read_unlock();

	wait_retired(c);
	cr_assert_not(hit(c, "p:1"));
	done(c);
}
