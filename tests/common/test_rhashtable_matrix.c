/*
 * Unit tests of common/rhashtable's resizing: automatic growth, shrinking
 * (at most 4x a step, never below min_size, never without
 * automatic_shrinking), and the kernel's own test matrix
 * (lib/test_rhashtable.c: many grows, the element bound, ten threads
 * removing every step-th key).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "test_rhashtable_util.h"

/* ---- statistics, growth and shrinking ---- */

Test(rhashtable, grows_automatically)
{
	enum { N = 5000 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = objs_new(N);

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_size(&ht), 64);
	insert_all(&ht, o, N, params);
	wait_grown(&ht);
	rhashtable_get_stats(&ht, &st);
	/* The smallest power of two with N at most 75% of it. */
	cr_assert_eq(st.size, 8192, "size %u", st.size);
	cr_assert_eq(st.size, rhashtable_size(&ht));
	cr_assert_eq(st.nelems, N);
	/* 64 -> 8192 is 128x, and a grow is at most 4x: 4 grows or more. */
	cr_assert_geq(st.grows, 4, "%lu grows", st.grows);
	cr_assert_eq(st.shrinks, 0);
	cr_assert_eq(st.reseeds, 0);
	cr_assert_eq(st.generation, 0, "a grow is not a re-seed");
	cr_assert_eq(rhashtable_generation(&ht), 0);
	cr_assert(!st.resizing);
	for (int i = 0; i < N; i++)
		cr_assert_eq(find(&ht, i), &o[i]);
	rhashtable_destroy(&ht);
	free(o);
}

/* 4^n, for comparing shrink ratios with a count of steps. */
static unsigned long pow4(unsigned long n)
{
	return n >= 16 ? ~0ul : 1ul << (2 * n);
}

static bool shrink_seen(struct rhashtable *ht, unsigned long shrinks)
{
	struct rhashtable_stats st;

	rhashtable_get_stats(ht, &st);
	return st.shrinks != shrinks && !st.resizing;
}

static unsigned long shrinks_of(struct rhashtable *ht)
{
	struct rhashtable_stats st;

	rhashtable_get_stats(ht, &st);
	return st.shrinks;
}

/*
 * Empties a table of 8192 buckets and follows the worker step by step. The
 * test holds the RCU read lock while it looks, so after a resize the worker
 * waits in its grace period; the test lets it go on only until the next
 * resize starts (or, when no progress shows, for a moment). Each step shrinks at most 4x (should the test miss a step,
 * n steps may shrink 4^n), and the table ends at min_size, never below.
 */
Test(rhashtable, shrinks_automatically_at_most_4x_per_step)
{
	enum { N = 4096, MIN = 16 };
	struct rhashtable_params p = params;
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o;
	unsigned int size;
	unsigned long shrinks = 0;
	int64_t deadline;

	p.automatic_shrinking = true;
	p.min_size = MIN;
	o = grown_table(&ht, &p, N);
	size = rhashtable_size(&ht);
	cr_assert_eq(size, 8192);

	deadline = test_now_ms() + WAIT_MS;
	rhkv_rcu_read_lock();
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, p), 0);
	cr_assert_eq(rhashtable_nelems(&ht), 0);
	while (size > MIN && test_now_ms() < deadline) {
		unsigned long delta;

		/* The worker can end one more resize, then it waits. */
		TEST_WAIT_FOR(shrink_seen(&ht, shrinks), 100);
		if (!shrink_seen(&ht, shrinks)) {
			/* It may be waiting for us in an earlier grace
			 * period (a grow's): let it go on. */
			rhkv_rcu_read_unlock();
			test_sleep_ms(1);
			rhkv_rcu_read_lock();
			continue;
		}
		rhashtable_get_stats(&ht, &st);
		delta = st.shrinks - shrinks;
		cr_assert(!st.resizing);
		cr_assert_lt(st.size, size);
		cr_assert_geq(st.size, MIN, "shrank to %u, below min_size",
			      st.size);
		cr_assert_leq(size / st.size, pow4(delta),
			      "%lu step(s) shrank %u -> %u", delta, size,
			      st.size);
		size = st.size;
		shrinks = st.shrinks;
		/* Let it end its grace period, until the next step starts. */
		rhkv_rcu_read_unlock();
		if (size > MIN)
			TEST_WAIT_FOR(rht__resizing(&ht) ||
					      shrinks_of(&ht) != shrinks,
				      WAIT_MS);
		rhkv_rcu_read_lock();
	}
	rhkv_rcu_read_unlock();
	cr_assert_eq(size, MIN);
	/* 8192 -> 16 is 512x: at least 5 steps of at most 4x. */
	cr_assert_geq(shrinks, 5);
	/* And it stays there. */
	test_sleep_ms(50);
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.size, MIN);
	cr_assert_eq(st.shrinks, shrinks);
	cr_assert_geq(st.grows, 1);
	rhkv_rcu_synchronize();
	rhashtable_destroy(&ht);
	free(o);
}

/*
 * One deterministic shrink: from 128 buckets, empty, the 4x limit would
 * allow 32, but min_size is 64.
 */
Test(rhashtable, shrink_stops_at_min_size)
{
	enum { N = 20 };
	struct rhashtable_params p = params;
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = objs_new(N);

	p.automatic_shrinking = true;
	p.nelem_hint = 96;
	p.min_size = 64;
	init_ok(&ht, &p);
	cr_assert_eq(rhashtable_size(&ht), 128);
	insert_all(&ht, o, N, p);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, p), 0);
	TEST_WAIT_FOR((rhashtable_get_stats(&ht, &st),
		       st.shrinks == 1 && !st.resizing),
		      WAIT_MS);
	test_sleep_ms(50); /* room for a wrong second step */
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.shrinks, 1);
	cr_assert_eq(st.size, 64, "shrank to %u with min_size 64", st.size);
	rhkv_rcu_synchronize();
	rhashtable_destroy(&ht);
	free(o);
}

/* With a few entries left the table ends at >= 30% load, <= 75%. */
Test(rhashtable, shrinks_to_fit_remaining)
{
	enum { N = 4096, KEEP = 100 };
	struct rhashtable_params p = params;
	struct rhashtable ht;
	struct obj *o;

	p.automatic_shrinking = true;
	o = grown_table(&ht, &p, N);
	cr_assert_eq(rhashtable_size(&ht), 8192);
	for (int i = KEEP; i < N; i++)
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, p), 0);
	/* roundup_pow_of_two(100 * 3/2) = 256, at 39% load. */
	TEST_WAIT_FOR(rhashtable_size(&ht) == 256 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_size(&ht), 256, "size %u",
		     rhashtable_size(&ht));
	for (int i = 0; i < N; i++)
		cr_assert_eq(find(&ht, i), i < KEEP ? &o[i] : NULL);
	rhkv_rcu_synchronize();
	rhashtable_destroy(&ht);
	free(o);
}

Test(rhashtable, never_shrinks_without_automatic_shrinking)
{
	enum { N = 4096 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o;

	o = grown_table(&ht, &params, N);
	cr_assert_eq(rhashtable_size(&ht), 8192);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, params),
			     0);
	/* Kick the worker a few more times with a nearly empty table. */
	for (int r = 0; r < 64; r++) {
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[0].node, params),
			     0);
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[0].node, params),
			     0);
	}
	test_sleep_ms(300);
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.size, 8192);
	cr_assert_eq(st.shrinks, 0);
	cr_assert_eq(st.nelems, 0);
	rhkv_rcu_synchronize();
	rhashtable_destroy(&ht);
	free(o);
}

/* ---- the kernel's test matrix (lib/test_rhashtable.c) ---- */

/* 50,000 entries from a table of 16 buckets: many grows. */
Test(rhashtable, kernel_many_grows)
{
	enum { ENTRIES = 50000 };
	struct rhashtable_params p = params;
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = objs_new(ENTRIES);

	p.nelem_hint = 8;
	init_ok(&ht, &p);
	cr_assert_eq(rhashtable_size(&ht), 16);
	for (int i = 0; i < ENTRIES; i++) {
		o[i].key = 2 * i; /* odd keys stay absent */
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
	}
	cr_assert_eq(rhashtable_nelems(&ht), ENTRIES);
	/* Lookups while the worker may still be growing the table. */
	for (int i = 0; i < ENTRIES; i++) {
		cr_assert_eq(find(&ht, 2 * i), &o[i], "key %d", 2 * i);
		cr_assert_null(find(&ht, 2 * i + 1), "key %d", 2 * i + 1);
	}
	wait_grown(&ht);
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.size, 131072, "size %u", st.size);
	/* 16 -> 131072 is 8192x: at least 7 grows of at most 4x. */
	cr_assert_geq(st.grows, 7, "%lu grows", st.grows);
	cr_assert_eq(st.nelems, ENTRIES);
	for (int i = 0; i < ENTRIES; i++) {
		cr_assert_eq(find(&ht, 2 * i), &o[i], "key %d", 2 * i);
		cr_assert_null(find(&ht, 2 * i + 1), "key %d", 2 * i + 1);
	}
	cr_assert_null(find(&ht, -2));
	cr_assert_null(find(&ht, 2 * ENTRIES));
	rhashtable_destroy(&ht);
	free(o);
}

static unsigned int roundup_pow_of_two(unsigned int n)
{
	unsigned int r = 1;

	while (r < n)
		r <<= 1;
	return r;
}

/* Inserts keys 0, 1, ... until -E2BIG; returns how many went in. */
static int fill_to_bound(unsigned int max_size, unsigned int want_size)
{
	enum { ENTRIES = 50000 };
	struct rhashtable_params p = params;
	struct rhashtable ht;
	struct obj *o = objs_new(ENTRIES);
	int n = 0, err = 0;

	p.nelem_hint = 8;
	p.max_size = max_size;
	init_ok(&ht, &p);
	while (n < ENTRIES &&
	       !(err = rhashtable_insert_fast(&ht, &o[n].node, p)))
		n++;
	cr_assert_eq(err, -E2BIG, "insert %d: %d", n, err);
	cr_assert_eq(rhashtable_nelems(&ht), (unsigned long)n);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &o[n].node, p), -E2BIG);
	cr_assert_null(find(&ht, n));
	for (int i = 0; i < n; i++)
		cr_assert_eq(find(&ht, i), &o[i]);
	wait_size(&ht, want_size);
	test_sleep_ms(20);
	cr_assert_eq(rhashtable_size(&ht), want_size, "grew past max_size");
	rhashtable_destroy(&ht);
	free(o);
	return n;
}

Test(rhashtable, kernel_max_size_bound)
{
	unsigned int max_size = roundup_pow_of_two(50000 / 8);

	cr_assert_eq(max_size, 8192);
	cr_assert_eq(fill_to_bound(max_size, max_size), 2 * 8192);
	/* A max_size that is not a power of two is rounded down first. */
	cr_assert_eq(fill_to_bound(50000 / 8, 4096), 2 * 4096);
}

#define TCOUNT	 10
#define TENTRIES 5000

struct thread_data {
	pthread_t thread;
	int id;
	struct obj *objs;
	bool removed[TENTRIES];
	int insert_errors, remove_errors, lookup_errors;
};

static struct rhashtable thread_ht;
static struct rhashtable_params thread_params;
static pthread_barrier_t inserted_barrier, check_barrier;

/* Present iff not removed, and the very object inserted. */
static int thread_lookup_test(struct thread_data *td)
{
	int errors = 0;

	for (int i = 0; i < TENTRIES; i++) {
		struct obj *want = td->removed[i] ? NULL : &td->objs[i];
		struct obj *got = rhashtable_lookup_fast(
			&thread_ht, &td->objs[i].key, thread_params);

		errors += got != want;
	}
	return errors;
}

static void *thread_main(void *arg)
{
	struct thread_data *td = arg;

	rhkv_rcu_register_thread();
	for (int i = 0; i < TENTRIES; i++)
		td->insert_errors +=
			rhashtable_insert_fast(&thread_ht, &td->objs[i].node,
					       thread_params) != 0;
	pthread_barrier_wait(&inserted_barrier);
	pthread_barrier_wait(&check_barrier);
	td->lookup_errors += thread_lookup_test(td);
	for (int step = 10; step > 0; step--) {
		for (int i = 0; i < TENTRIES; i += step) {
			if (td->removed[i])
				continue;
			td->remove_errors +=
				rhashtable_remove_fast(&thread_ht,
						       &td->objs[i].node,
						       thread_params) != 0;
			td->removed[i] = true;
		}
		td->lookup_errors += thread_lookup_test(td);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

Test(rhashtable, kernel_threads_remove_every_step)
{
	struct thread_data *td = calloc(TCOUNT, sizeof(*td));

	cr_assert_not_null(td);
	thread_params = params;
	thread_params.nelem_hint = 8;
	thread_params.automatic_shrinking = true;
	init_ok(&thread_ht, &thread_params);
	pthread_barrier_init(&inserted_barrier, NULL, TCOUNT + 1);
	pthread_barrier_init(&check_barrier, NULL, TCOUNT + 1);
	for (int t = 0; t < TCOUNT; t++) {
		td[t].id = t;
		td[t].objs = objs_new(TENTRIES);
		for (int i = 0; i < TENTRIES; i++)
			td[t].objs[i].key = t * TENTRIES + i;
		cr_assert_eq(pthread_create(&td[t].thread, NULL, thread_main,
					    &td[t]),
			     0);
	}
	pthread_barrier_wait(&inserted_barrier);
	cr_assert_eq(rhashtable_nelems(&thread_ht),
		     (unsigned long)TCOUNT * TENTRIES);
	pthread_barrier_wait(&check_barrier);
	for (int t = 0; t < TCOUNT; t++)
		pthread_join(td[t].thread, NULL);
	for (int t = 0; t < TCOUNT; t++) {
		cr_assert_eq(td[t].insert_errors, 0, "thread %d", t);
		cr_assert_eq(td[t].remove_errors, 0, "thread %d", t);
		cr_assert_eq(td[t].lookup_errors, 0, "thread %d", t);
	}
	cr_assert_eq(rhashtable_nelems(&thread_ht), 0);
	for (int k = 0; k < TCOUNT * TENTRIES; k += 7)
		cr_assert_null(
			rhashtable_lookup_fast(&thread_ht, &k, thread_params));
	rhkv_rcu_synchronize();
	rhashtable_destroy(&thread_ht);
	pthread_barrier_destroy(&inserted_barrier);
	pthread_barrier_destroy(&check_barrier);
	for (int t = 0; t < TCOUNT; t++)
		free(td[t].objs);
	free(td);
}
