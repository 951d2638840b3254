/*
 * Stress test of the cache's recache winner (cache.h: ITEM_WON,
 * cache_item_win, cache_invalidate), the ground of meta's
 * stale-while-revalidate: threads race on one key, round after round,
 * doing what mg N / md I do, and the model says what must have happened:
 *   - a vivify race (an add of an empty item marked ITEM_WON): exactly one
 *     add stores;
 *   - a stale item (cache_invalidate): exactly one cache_item_win is true;
 *   - after another invalidation, exactly one again (the mark is cleared).
 * A plain executable, so that it runs under TSan (criterion cannot).
 * RHKV_STRESS_MS bounds its time (default 2000 ms).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "server/store/cache.h"
#include "stress_time.h"

#define THREADS 8

static struct cache *cache;
static pthread_barrier_t start, done;
static _Atomic int stop;
static _Atomic unsigned long adds_stored, wins;
static char key_buf[32];
static struct cache_key key;

/* One racer: each phase of a round between two barriers. */
static void *racer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;

	rhkv_rcu_register_thread();
	for (;;) {
		struct cache_write w;
		struct item *it;

		pthread_barrier_wait(&start); /* phase 1: vivify */
		if (atomic_load(&stop))
			break;
		/* The round's key: main sets it before the barrier. */
		w = (struct cache_write){ .mode = CACHE_ADD,
					  .key = key,
					  .value = "",
					  .marks = ITEM_WON };
		if (cache_write(cache, id, &w, NULL) == CACHE_STORED)
			atomic_fetch_add(&adds_stored, 1);
		pthread_barrier_wait(&done);

		pthread_barrier_wait(&start); /* phase 2: win a stale item */
		rhkv_rcu_read_lock();
		it = cache_find(cache, key, NULL);
		if (it && cache_item_win(it))
			atomic_fetch_add(&wins, 1);
		rhkv_rcu_read_unlock();
		pthread_barrier_wait(&done);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

static int fail(const char *what, unsigned long round, unsigned long got)
{
	fprintf(stderr, "FAIL round %lu: %s: %lu, want 1\n", round, what, got);
	return 1;
}

int main(void)
{
	long budget = stress_budget_ms();
	pthread_t th[THREADS];
	struct timespec t0;
	unsigned long round = 0;
	int rc = 0;

	rhkv_rcu_register_thread();
	cache = cache_create(THREADS + 1, 64u << 20);
	if (!cache)
		return 1;
	pthread_barrier_init(&start, NULL, THREADS + 1);
	pthread_barrier_init(&done, NULL, THREADS + 1);
	for (unsigned int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, racer, (void *)(uintptr_t)i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (; rc == 0 && stress_elapsed_ms(&t0) < budget; round++) {
		key.n = (size_t)snprintf(key_buf, sizeof(key_buf), "k%lu",
					 round);
		key.p = key_buf;
		atomic_store(&adds_stored, 0);
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		if (atomic_load(&adds_stored) != 1)
			rc = fail("vivify adds stored", round,
				  atomic_load(&adds_stored));
		/* The vivified item's winner is its creator: mark it stale
		 * so that the next fetchers race for the recache. */
		if (cache_invalidate(cache, THREADS, key, 0, false, 0, 0,
				     NULL) != CACHE_STORED)
			rc = fail("invalidate stored", round, 0);
		atomic_store(&wins, 0);
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		if (atomic_load(&wins) != 1)
			rc = fail("wins of a stale item", round,
				  atomic_load(&wins));
		cache_delete(cache, key);
	}
	atomic_store(&stop, 1);
	pthread_barrier_wait(&start);
	for (unsigned int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	cache_destroy(cache);
	rhkv_rcu_unregister_thread();
	printf("%s: %lu rounds of %d threads\n", rc ? "FAIL" : "PASS", round,
	       THREADS);
	return rc;
}
