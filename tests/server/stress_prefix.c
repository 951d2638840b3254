/*
 * Stress test of prefix flushes (cache_flush_prefix) against writers that
 * keep storing under the prefix while flushes land. Each writer owns its
 * keys and stores increasing sequence numbers; the flusher notes how far
 * every writer had been acknowledged before each flush, then, once the
 * flush has returned, reads every key: a value at or below that mark is an
 * old one, which must never be seen again (each key either holds a value
 * stored after the flush or nothing). Keys outside the prefix must never
 * go missing. At the end, with writers stopped and the tombstones retired,
 * every key holds its last value if that was stored after the last flush,
 * and nothing if it was stored before it.
 *
 * Two rounds: one with room for everything (nothing may be lost), one with
 * a small limit, where eviction carries items forward (a copy with the old
 * sequence replaces the item) while the sweep unlinks covered items: only
 * "never an old value" holds there.
 *
 * A plain executable, so that it runs under TSan (criterion cannot).
 * RHKV_STRESS_MS bounds each round's time (default 2000 ms).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/rcu.h"
#include "server/store/cache.h"

#define WRITERS 3
#define KEYS	1024 /* per writer, under the prefix and outside it */

static struct cache *cache;
static _Atomic int stop;
static unsigned int value_size;
/* The last sequence each writer stored under each key (its own array;
 * others read it relaxed), and how far its stores were acknowledged. */
static _Atomic uint64_t last[WRITERS][2][KEYS];
static _Atomic uint64_t acked[WRITERS];
/* The sequence of the store each writer began last: one above what the
 * flusher reads after a flush began after that flush returned. */
static _Atomic uint64_t begun[WRITERS];
static _Atomic unsigned long failures;

static void key_of(char *buf, size_t cap, unsigned int w, int under,
		   unsigned int i, struct cache_key *k)
{
	int n = snprintf(buf, cap, "%s%u:%u", under ? "p" : "q", w, i);

	*k = (struct cache_key){ buf, (size_t)n };
}

static void *writer(void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	unsigned int seed = 7 + w;
	char kb[32], *val = calloc(1, value_size);
	uint64_t seq = 0;

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned int i = (unsigned int)rand_r(&seed) % KEYS;
		int under = rand_r(&seed) % 4 != 0;
		struct cache_key k;

		key_of(kb, sizeof(kb), w, under, i, &k);
		seq++;
		atomic_store(&begun[w], seq);
		memcpy(val, &seq, sizeof(seq));
		if (cache_store(cache, w, CACHE_SET, k, 0, 0, val, value_size,
				0, NULL) != CACHE_STORED) {
			atomic_fetch_add(&failures, 1);
			fprintf(stderr, "FAIL: store refused\n");
			break;
		}
		atomic_store_explicit(&last[w][under][i], seq,
				      memory_order_relaxed);
		atomic_store_explicit(&acked[w], seq, memory_order_release);
	}
	rhkv_rcu_unregister_thread();
	free(val);
	return NULL;
}

/* The sequence stored under the key, 0 for none. */
static uint64_t read_seq(struct cache_key k)
{
	uint64_t seq = 0;
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(cache, k, NULL);
	if (it)
		memcpy(&seq, item_value(it), sizeof(seq));
	rhkv_rcu_read_unlock();
	return seq;
}

static void fail(const char *what, unsigned int w, int under, unsigned int i,
		 uint64_t seq, uint64_t mark)
{
	if (atomic_fetch_add(&failures, 1) < 10)
		fprintf(stderr, "FAIL: %s: %s%u:%u holds %llu (mark %llu)\n",
			what, under ? "p" : "q", w, i, (unsigned long long)seq,
			(unsigned long long)mark);
}

/* Right after a flush: no key under the prefix holds a value acknowledged
 * before it; every key outside holds what it had at least. */
static void check_after_flush(const uint64_t *before, bool nothing_lost)
{
	char kb[32];

	for (unsigned int w = 0; w < WRITERS; w++)
		for (unsigned int i = 0; i < KEYS; i++) {
			struct cache_key k;
			uint64_t had = atomic_load_explicit(
					 &last[w][0][i], memory_order_relaxed),
				 seq;

			key_of(kb, sizeof(kb), w, 1, i, &k);
			seq = read_seq(k);
			if (seq && seq <= before[w])
				fail("old value after the flush", w, 1, i, seq,
				     before[w]);
			key_of(kb, sizeof(kb), w, 0, i, &k);
			seq = read_seq(k);
			if (nothing_lost && had && seq < had)
				fail("a key outside the prefix lost", w, 0, i,
				     seq, had);
		}
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void wait_retired(void)
{
	struct cache_stats st;

	for (int i = 0; i < 3000; i++) {
		cache_get_stats(cache, &st, false);
		if (!st.prefix_tombstones)
			return;
		cache_crawl(cache);
		usleep(10000);
	}
	atomic_fetch_add(&failures, 1);
	fprintf(stderr, "FAIL: tombstones pending after 30 s\n");
}

/* The end: writers stopped, tombstones retired. */
static void check_final(const uint64_t *before, const uint64_t *after,
			bool nothing_lost)
{
	char kb[32];

	for (unsigned int w = 0; w < WRITERS; w++)
		for (unsigned int i = 0; i < KEYS; i++)
			for (int under = 0; under < 2; under++) {
				uint64_t l = atomic_load(&last[w][under][i]);
				struct cache_key k;
				uint64_t seq;

				key_of(kb, sizeof(kb), w, under, i, &k);
				seq = read_seq(k);
				if (seq && seq != l)
					fail("not the last value", w, under, i,
					     seq, l);
				if (under && seq && l <= before[w])
					fail("stored before the last flush", w,
					     under, i, seq, before[w]);
				if (nothing_lost && l &&
				    (!under || l > after[w]) && !seq)
					fail("stored after the last flush, "
					     "lost",
					     w, under, i, l, after[w]);
			}
}

static int run_round(uint64_t limit, unsigned int vsize, bool nothing_lost,
		     long ms)
{
	pthread_t t[WRITERS];
	uint64_t before[WRITERS], after[WRITERS];
	struct timespec t0;
	unsigned long flushes = 0;
	struct cache_stats st;

	cache = cache_create(WRITERS, limit);
	if (!cache) {
		fprintf(stderr, "FAIL: cache_create\n");
		return 1;
	}
	value_size = vsize;
	memset(last, 0, sizeof(last));
	memset(acked, 0, sizeof(acked));
	memset(begun, 0, sizeof(begun));
	atomic_store(&stop, 0);
	for (unsigned int w = 0; w < WRITERS; w++)
		pthread_create(&t[w], NULL, writer, (void *)(uintptr_t)w);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < ms && !atomic_load(&failures)) {
		usleep(2000);
		for (unsigned int w = 0; w < WRITERS; w++)
			before[w] = atomic_load_explicit(&acked[w],
							 memory_order_acquire);
		if (cache_flush_prefix(cache, (struct cache_key){ "p", 1 }) !=
		    CACHE_STORED) {
			atomic_fetch_add(&failures, 1);
			fprintf(stderr, "FAIL: flush refused\n");
			break;
		}
		for (unsigned int w = 0; w < WRITERS; w++)
			after[w] = atomic_load(&begun[w]);
		flushes++;
		check_after_flush(before, nothing_lost);
	}
	atomic_store(&stop, 1);
	for (unsigned int w = 0; w < WRITERS; w++)
		pthread_join(t[w], NULL);
	wait_retired();
	check_final(before, after, nothing_lost);
	cache_get_stats(cache, &st, false);
	printf("limit %llu MiB: %lu flushes, %lu reclaimed by them, %lu "
	       "evictions, %lu carried, %lu items\n",
	       (unsigned long long)(limit >> 20), flushes, st.prefix_reclaimed,
	       st.evictions, st.carried, st.curr_items);
	if (nothing_lost && st.evictions) {
		fprintf(stderr, "FAIL: evictions in the round without them\n");
		atomic_fetch_add(&failures, 1);
	}
	cache_reclaim(cache);
	cache_destroy(cache);
	return atomic_load(&failures) != 0;
}

int main(void)
{
	const char *env = getenv("RHKV_STRESS_MS");
	long ms = env ? atol(env) : 2000;
	int rc;

	rhkv_rcu_register_thread();
	rc = run_round(64u << 20, 16, true, ms);
	/* 2 * 3 * 1024 keys of 1 KiB in 2 MiB: eviction all along. */
	if (!rc)
		rc = run_round(2u << 20, 1024, false, ms);
	rhkv_rcu_unregister_thread();
	if (!rc)
		printf("ok\n");
	return rc;
}
