/*
 * Stress test of flush_all (cache_flush) against prefix flushes
 * (cache_flush_prefix) acknowledged while it runs. flush_all takes a
 * snapshot of every thread's write sequence, then drops the tombstones it
 * made redundant; a prefix flush that lands between the two is newer than
 * the snapshot and must survive it. One thread calls flush_all without
 * pause; another stores a key under the prefix, flushes the prefix, and
 * reads the key: once the prefix flush has returned the key must be gone,
 * whatever flush_all did meanwhile. The sweep is paused (as `lru_crawler
 * disable` does), so that only the tombstone keeps the item dead, and the
 * cache has many thread slots, so that flush_all's snapshot (a pass over
 * all of them) leaves the prefix flush room to land in it.
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

#define SLOTS 512 /* the cache's threads; the writer is slot 0 */
#define KEYS  64

static struct cache *cache;
static _Atomic int stop;
static _Atomic unsigned long flushes_all;

static void *flusher(void *arg)
{
	(void)arg;
	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		cache_flush(cache, 0);
		atomic_fetch_add_explicit(&flushes_all, 1,
					  memory_order_relaxed);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* Whether key is served. */
static bool served(struct cache_key k)
{
	bool hit;

	rhkv_rcu_read_lock();
	hit = cache_find(cache, k, NULL) != NULL;
	rhkv_rcu_read_unlock();
	return hit;
}

int main(void)
{
	long ms = stress_budget_ms();
	unsigned long rounds = 0, failures = 0;
	struct timespec t0;
	pthread_t t;
	char kb[16];

	rhkv_rcu_register_thread();
	cache = cache_create(SLOTS, 64u << 20);
	if (!cache) {
		fprintf(stderr, "FAIL: cache_create\n");
		return 1;
	}
	cache_sweep_enable(cache, false);
	pthread_create(&t, NULL, flusher, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (stress_elapsed_ms(&t0) < ms && !failures) {
		int n = snprintf(kb, sizeof(kb), "p:%lu", rounds % KEYS);
		struct cache_key k = { kb, (size_t)n };

		rounds++;
		if (cache_store(cache, 0, CACHE_SET, k, 0, 0, "v", 1, 0,
				NULL) != CACHE_STORED ||
		    cache_flush_prefix(cache, (struct cache_key){ "p", 1 }) !=
			    CACHE_STORED) {
			fprintf(stderr, "FAIL: a set or a prefix flush was "
					"refused\n");
			failures++;
			break;
		}
		if (served(k)) {
			fprintf(stderr,
				"FAIL: round %lu, after %ld ms: %s served "
				"after an acknowledged flush_prefix p (a "
				"flush_all dropped its tombstone)\n",
				rounds, stress_elapsed_ms(&t0), kb);
			failures++;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("%lu rounds of set, flush_prefix, get; %lu flush_all in %ld "
	       "ms\n",
	       rounds, atomic_load(&flushes_all), stress_elapsed_ms(&t0));
	cache_sweep_enable(cache, true);
	cache_reclaim(cache);
	cache_destroy(cache);
	rhkv_rcu_unregister_thread();
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
