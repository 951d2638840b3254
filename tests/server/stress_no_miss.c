/*
 * Stress test of the store's first promise (cache.h): without memory
 * pressure, a key whose set returned STORED is found by every lookup that
 * begins afterwards, whatever else runs. The shape of the network test
 * "nothing lost", without the network, so that it runs many times more
 * operations per second and under TSan:
 *   - writer threads set versioned values on one shared key space (every
 *     key is written by every writer, so sets replace each other's items
 *     in the table all the time) and read keys back;
 *   - reader threads, with no cache thread of their own, only read;
 *   - a churner sets and then deletes a burst of other keys, over and over,
 *     so that the table grows past them and shrinks back while the others
 *     run (moves between bucket tables under lookups and replaces);
 *   - a get of a key whose set had returned before the get began must hit,
 *     and hold an intact value of that key; on a miss the lookup is tried
 *     again and the failure says whether the key was there by then (a
 *     lookup that passed a present item) or gone (an item lost).
 * The limit is eight times what the live keys take: segments of old
 * versions are reused and live items carried forward out of them, but no
 * live item is evicted (a miss after an eviction would not break the
 * promise), which the test checks: `evictions` stays 0.
 * A plain executable, so that it runs under TSan (criterion cannot).
 * RHKV_STRESS_MS bounds its time (default 3000 ms).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "server/store/cache.h"

#define WRITERS	  4
#define READERS	  2
#define KEYS	  20000
#define TMP_KEYS  50000
#define SET_PCT	  60 /* of a writer's operations */
#define VALUE_MAX 256
#define LIMIT	  (32ull << 20) /* live keys take 4 MiB: no eviction */
#define CHURN_TID WRITERS	/* the churner's cache thread */

static struct cache *cache;
static _Atomic int stop, failed;
static _Atomic uint32_t versions;    /* handed out, from 1 */
static _Atomic uint32_t acked[KEYS]; /* newest version whose set returned */
static atomic_ulong sets, gets, hits, churns;

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&failed, 1))
		return; /* the first failure says it */
	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	atomic_store(&stop, 1);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct cache_key key_of(char *buf, const char *space, uint32_t id)
{
	struct cache_key k;

	k.n = (size_t)snprintf(buf, 32, "%s:%u", space, id);
	k.p = buf;
	return k;
}

/* "<key id>|<version>|" and a filler: 24 .. VALUE_MAX bytes. */
static uint32_t value_make(char *buf, uint32_t keyid, uint32_t version)
{
	uint32_t len = 24 + (version * 2654435761u >> 8) % (VALUE_MAX - 24);
	int p = snprintf(buf, VALUE_MAX, "%u|%u|", keyid, version);

	for (uint32_t i = (uint32_t)p; i < len; i++)
		buf[i] = (char)('a' + (version + i) % 26);
	return len;
}

static bool value_ok(const char *v, uint32_t n, uint32_t keyid)
{
	char want[VALUE_MAX];
	unsigned int k, version;

	if (n > VALUE_MAX || sscanf(v, "%u|%u|", &k, &version) != 2 ||
	    k != keyid)
		return false;
	return value_make(want, keyid, version) == n && !memcmp(want, v, n);
}

/* Looks keyid up; copies its value out inside the section. 1: a hit
 * (checked), 0: a miss, -1: a bad item (failed). */
static int read_key(uint32_t keyid)
{
	char kb[32], got[VALUE_MAX];
	struct cache_key k = key_of(kb, "nm", keyid);
	uint32_t n = 0;
	bool key_ok = true;
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(cache, k, NULL);
	if (it) {
		n = item_nbytes(it);
		key_ok = it->nkey == k.n && !memcmp(item_key(it), k.p, k.n);
		if (n <= VALUE_MAX)
			memcpy(got, item_value(it), n);
	}
	rhkv_rcu_read_unlock();
	if (!it)
		return 0;
	if (!key_ok || !value_ok(got, n, keyid)) {
		fail("nm:%u: a bad item (%s, %u bytes: %.*s)", keyid,
		     key_ok ? "its value" : "another key", n,
		     (int)(n < 64 ? n : 64), got);
		return -1;
	}
	return 1;
}

/* A get of keyid that must hit when a set of it had returned before. */
static void get_checked(uint32_t keyid)
{
	uint32_t before = atomic_load(&acked[keyid]);
	int r = read_key(keyid);

	atomic_fetch_add_explicit(&gets, 1, memory_order_relaxed);
	if (r > 0)
		atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	if (r || !before)
		return;

	struct cache_stats st;
	int again = read_key(keyid);

	cache_get_stats(cache, &st, false);
	fail("nm:%u missed although version %u's set had returned; a second "
	     "lookup %s; evictions %lu, carried %lu; table %u buckets%s, "
	     "%lu grows, %lu shrinks, %lu re-seeds",
	     keyid, before,
	     again > 0 ? "found it (the first passed it)" : "missed it too",
	     st.evictions, st.carried, st.table.size,
	     st.table.resizing ? " (resizing)" : "", st.table.grows,
	     st.table.shrinks, st.table.reseeds);
}

static void *writer_main(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (id + 1);
	char kb[32], val[VALUE_MAX];

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint32_t keyid = (uint32_t)(rnd(&rng) % KEYS);

		if (rnd(&rng) % 100 >= SET_PCT) {
			get_checked(keyid);
			continue;
		}
		uint32_t version = atomic_fetch_add(&versions, 1) + 1;
		uint32_t n = value_make(val, keyid, version);
		enum cache_result r = cache_store(cache, id, CACHE_SET,
						  key_of(kb, "nm", keyid), 0, 0,
						  val, n, 0, NULL);

		if (r != CACHE_STORED) {
			fail("set nm:%u: result %d", keyid, r);
			break;
		}
		uint32_t cur = atomic_load(&acked[keyid]);

		while (cur < version && !atomic_compare_exchange_weak(
						&acked[keyid], &cur, version))
			;
		atomic_fetch_add_explicit(&sets, 1, memory_order_relaxed);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

static void *reader_main(void *arg)
{
	uint64_t rng = 0xc4ceb9fe1a85ec53ull * ((uintptr_t)arg + 1);

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		get_checked((uint32_t)(rnd(&rng) % KEYS));
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* Sets TMP_KEYS keys, deletes them all, again: the table grows past them
 * and shrinks back. */
static void *churner_main(void *arg)
{
	char kb[32], val[32];

	(void)arg;
	memset(val, 't', sizeof(val));
	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (uint32_t i = 0; i < TMP_KEYS && !atomic_load(&stop); i++)
			if (cache_store(cache, CHURN_TID, CACHE_SET,
					key_of(kb, "tmp", i), 0, 0, val,
					sizeof(val), 0, NULL) != CACHE_STORED)
				fail("set tmp:%u failed", i);
		for (uint32_t i = 0; i < TMP_KEYS; i++)
			cache_delete(cache, key_of(kb, "tmp", i));
		atomic_fetch_add(&churns, 1);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	const char *env = getenv("RHKV_STRESS_MS");
	int64_t ms = env ? atoll(env) : 3000, t0;
	pthread_t th[WRITERS + READERS + 1];
	unsigned int n = 0;
	struct cache_stats st;

	rhkv_rcu_register_thread();
	cache = cache_create(WRITERS + 1, LIMIT);
	if (!cache) {
		fprintf(stderr, "FAIL: cache_create\n");
		return 1;
	}
	for (unsigned int i = 0; i < WRITERS; i++)
		pthread_create(&th[n++], NULL, writer_main,
			       (void *)(uintptr_t)i);
	for (unsigned int i = 0; i < READERS; i++)
		pthread_create(&th[n++], NULL, reader_main,
			       (void *)(uintptr_t)i);
	pthread_create(&th[n++], NULL, churner_main, NULL);
	t0 = now_ms();
	/* Until the time is up and the table has shrunk at least once. */
	while (!atomic_load(&stop)) {
		struct timespec ts = { 0, 20 * 1000000 };

		nanosleep(&ts, NULL);
		cache_get_stats(cache, &st, false);
		if (now_ms() - t0 >= ms &&
		    (st.table.shrinks > 0 || now_ms() - t0 >= 10 * ms))
			break;
	}
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	cache_get_stats(cache, &st, false);
	if (!atomic_load(&failed) && st.evictions)
		fail("%lu evictions under a limit never reached", st.evictions);
	if (!atomic_load(&failed) && (!st.table.grows || !st.table.shrinks))
		fail("the table did not both grow (%lu) and shrink (%lu)",
		     st.table.grows, st.table.shrinks);
	printf("stress-no-miss: %.1f s, %lu sets, %lu gets (%lu hits), %lu "
	       "churn cycles; table %lu grows, %lu shrinks; %lu carried, "
	       "%lu evictions: %s\n",
	       (now_ms() - t0) / 1000.0, atomic_load(&sets), atomic_load(&gets),
	       atomic_load(&hits), atomic_load(&churns), st.table.grows,
	       st.table.shrinks, st.carried, st.evictions,
	       atomic_load(&failed) ? "FAILED" : "ok");
	cache_destroy(cache);
	rhkv_rcu_unregister_thread();
	return atomic_load(&failed) ? 1 : 0;
}
