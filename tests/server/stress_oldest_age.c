/*
 * Stress test of the oldest-age walk (cache_oldest_age, which `stats
 * items` and `stats slabs` run) against writers that store landed large
 * items (cache_landing_new, as a connection receiving a large value does)
 * and delete them at once. A large unit stays on the eviction log for a
 * moment after its item left the table, and the walk must then look at
 * that one item and nothing past it: a landed item's allocation counts 8
 * bytes for a cas it may not have chosen, and walking it as a segment
 * reads a second item header past the allocation, which an ASan build
 * reports. Every age read must be a sane number of seconds, and every
 * value stored must read back whole before its delete.
 *
 * A plain executable, so that it runs under TSan (criterion cannot).
 * RHKV_STRESS_MS bounds its time (default 2000 ms).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "server/store/cache.h"
#include "stress_time.h"

#define WRITERS 2
#define KEYS	8 /* per writer, stored and deleted in turn */
/* Above the largest segment value, so that it lands in an item of its
 * own; with an 8-byte key, header, key and value add up to a multiple of
 * 8, so the reserved cas bytes fill a whole slot past the item. */
#define VALUE_BYTES (16384 + 4)

static struct cache *cache;
static _Atomic int stop;
static _Atomic unsigned long failures, stores, walks;

static void fail(const char *what, unsigned long v)
{
	if (atomic_fetch_add(&failures, 1) < 10)
		fprintf(stderr, "FAIL: %s (%lu)\n", what, v);
}

/* Whether key holds VALUE_BYTES bytes of byte b. */
static bool holds(struct cache_key k, char b)
{
	bool ok = false;
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(cache, k, NULL);
	if (it && item_nbytes(it) == VALUE_BYTES) {
		const char *v = item_value(it);

		ok = v[0] == b && v[VALUE_BYTES - 1] == b;
	}
	rhkv_rcu_read_unlock();
	return ok;
}

static void *writer(void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	unsigned long n = 0;
	char kb[16];

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char b = (char)('a' + n % 26);
		struct cache_key k = { kb, 8 };
		struct item *it;
		struct cache_write cw;
		enum cache_result r;

		snprintf(kb, sizeof(kb), "k%u:%05lu", w, n++ % KEYS);
		it = cache_landing_new(cache, w, k, 0, VALUE_BYTES);
		if (!it) {
			fail("cache_landing_new refused", n);
			break;
		}
		memset(cache_landing_value(it), b, VALUE_BYTES);
		cw = (struct cache_write){ .mode = CACHE_SET,
					   .key = k,
					   .value = cache_landing_value(it),
					   .nbytes = VALUE_BYTES,
					   .landed = &it };
		r = cache_write(cache, w, &cw, NULL);
		if (r != CACHE_STORED) {
			fail("a landed set refused", (unsigned long)r);
			break;
		}
		if (!holds(k, b))
			fail("a value read back other than stored", n);
		cache_delete(cache, k);
		atomic_fetch_add_explicit(&stores, 1, memory_order_relaxed);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	long ms = stress_budget_ms();
	pthread_t t[WRITERS];
	struct timespec t0;

	rhkv_rcu_register_thread();
	cache = cache_create(WRITERS, 64u << 20);
	if (!cache) {
		fprintf(stderr, "FAIL: cache_create\n");
		return 1;
	}
	for (unsigned int w = 0; w < WRITERS; w++)
		pthread_create(&t[w], NULL, writer, (void *)(uintptr_t)w);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (stress_elapsed_ms(&t0) < ms && !atomic_load(&failures)) {
		int64_t age = cache_oldest_age(cache);

		/* The cache is younger than this test's time limit. */
		if (age < 0 || age > ms / 1000 + 60)
			fail("oldest age out of range", (unsigned long)age);
		walks++;
	}
	atomic_store(&stop, 1);
	for (unsigned int w = 0; w < WRITERS; w++)
		pthread_join(t[w], NULL);
	printf("%lu landed sets and deletes, %lu oldest-age walks in %ld ms\n",
	       atomic_load(&stores), atomic_load(&walks),
	       stress_elapsed_ms(&t0));
	cache_reclaim(cache);
	cache_destroy(cache);
	rhkv_rcu_unregister_thread();
	if (atomic_load(&failures))
		return 1;
	printf("ok\n");
	return 0;
}
