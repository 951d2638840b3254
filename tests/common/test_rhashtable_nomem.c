/*
 * Allocation failures in common/rhashtable. This executable is linked with
 * -Wl,--wrap=calloc and -Wl,--wrap=aligned_alloc: every call of those from
 * the objects linked into it (the test and librhkv-common, not the shared
 * libraries) goes through the wrappers below, which fail on demand.
 *
 * rhashtable.c allocates its control block with aligned_alloc and bucket
 * tables with calloc (at init, and in the worker for each resize).
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"
#include "test_util.h"

#define WAIT_MS 30000

void *__real_calloc(size_t nmemb, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);

/* Set by a test; read by the worker thread too. */
static atomic_bool fail_calloc, fail_aligned_alloc;
static atomic_int calloc_calls, calloc_failed, aligned_calls, aligned_failed;

void *__wrap_calloc(size_t nmemb, size_t size)
{
	atomic_fetch_add(&calloc_calls, 1);
	if (atomic_load(&fail_calloc)) {
		atomic_fetch_add(&calloc_failed, 1);
		return NULL;
	}
	return __real_calloc(nmemb, size);
}

void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
	atomic_fetch_add(&aligned_calls, 1);
	if (atomic_load(&fail_aligned_alloc)) {
		atomic_fetch_add(&aligned_failed, 1);
		return NULL;
	}
	return __real_aligned_alloc(alignment, size);
}

struct obj {
	int key;
	struct rhash_head node;
};

static const struct rhashtable_params params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct obj, key),
	.head_offset = offsetof(struct obj, node),
};

struct lobj {
	int key;
	struct rhlist_head node;
};

static const struct rhashtable_params lparams = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct lobj, key),
	.head_offset = offsetof(struct lobj, node),
};

static void nomem_init(void)
{
	test_rcu_init();
	atomic_store(&fail_calloc, false);
	atomic_store(&fail_aligned_alloc, false);
}

TestSuite(rhashtable_nomem, .init = nomem_init, .fini = test_rcu_fini,
	  .timeout = 60);

Test(rhashtable_nomem, wrappers_are_linked)
{
	void *p = calloc(1, 16);

	cr_assert_not_null(p);
	free(p);
	cr_assert_eq(atomic_load(&calloc_calls), 1);
	atomic_store(&fail_calloc, true);
	cr_assert_null(calloc(1, 16));
	atomic_store(&fail_calloc, false);
}

Test(rhashtable_nomem, init_fails_without_control_block)
{
	struct rhashtable ht;
	struct rhltable hlt;

	atomic_store(&fail_aligned_alloc, true);
	cr_assert_eq(rhashtable_init(&ht, &params), -ENOMEM);
	cr_assert_eq(rhltable_init(&hlt, &lparams), -ENOMEM);
	atomic_store(&fail_aligned_alloc, false);
	cr_assert_eq(atomic_load(&aligned_failed), 2);
	/* Leaks are checked by LeakSanitizer in the ASan build: glibc's
	 * heap figures also count other threads' allocations. */
	/* Parameters are checked before anything is allocated. */
	{
		struct rhashtable_params bad = params;

		bad.key_len = 0;
		atomic_store(&fail_aligned_alloc, true);
		cr_assert_eq(rhashtable_init(&ht, &bad), -EINVAL);
		atomic_store(&fail_aligned_alloc, false);
	}
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	rhashtable_destroy(&ht);
}

/* The control block is allocated, the bucket table is not: the control
 * block must be freed again (ASan's leak check). */
Test(rhashtable_nomem, init_fails_without_bucket_table)
{
	struct rhashtable ht;
	struct rhltable hlt;

	atomic_store(&fail_calloc, true);
	cr_assert_eq(rhashtable_init(&ht, &params), -ENOMEM);
	cr_assert_eq(rhltable_init(&hlt, &lparams), -ENOMEM);
	atomic_store(&fail_calloc, false);
	cr_assert_eq(atomic_load(&calloc_failed), 2);
	cr_assert_eq(atomic_load(&aligned_calls), 2,
		     "the control block was not allocated first");
	/* Leaks are checked by LeakSanitizer in the ASan build: glibc's
	 * heap figures also count other threads' allocations. */
	cr_assert_eq(rhltable_init(&hlt, &lparams), 0);
	rhltable_destroy(&hlt);
}

/*
 * A grow that cannot allocate is skipped: inserts go on into the table as
 * it is, nothing is lost, and the failure is counted. Once memory is back,
 * the next insert's kick grows the table.
 */
Test(rhashtable_nomem, grow_without_memory_is_skipped)
{
	enum { N = 400, MORE = 10 };
	struct obj *o = malloc((N + MORE) * sizeof(*o));
	struct rhashtable_stats st;
	struct rhashtable ht;

	cr_assert_not_null(o);
	for (int i = 0; i < N + MORE; i++)
		o[i].key = i;
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	cr_assert_eq(rhashtable_size(&ht), 64);

	atomic_store(&fail_calloc, true);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params), 0,
			     "insert %d", i);
	TEST_WAIT_FOR((rhashtable_get_stats(&ht, &st),
		       st.alloc_failures > 0 && !st.resizing),
		      WAIT_MS);
	rhashtable_get_stats(&ht, &st);
	cr_assert_gt(st.alloc_failures, 0);
	cr_assert_gt(atomic_load(&calloc_failed), 0);
	cr_assert_eq(st.size, 64, "size changed to %u", st.size);
	cr_assert_eq(st.grows, 0);
	cr_assert(!st.resizing);
	cr_assert_eq(st.nelems, N);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_lookup_fast(&ht, &o[i].key, params),
			     &o[i], "key %d", i);

	atomic_store(&fail_calloc, false);
	for (int i = N; i < N + MORE; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	TEST_WAIT_FOR(rhashtable_size(&ht) == 1024 && !rht__resizing(&ht),
		      WAIT_MS);
	rhashtable_get_stats(&ht, &st);
	/* 410 entries at <= 75% load: 1024 buckets. */
	cr_assert_eq(st.size, 1024, "size %u after memory came back", st.size);
	cr_assert_geq(st.grows, 1);
	for (int i = 0; i < N + MORE; i++)
		cr_assert_eq(rhashtable_lookup_fast(&ht, &o[i].key, params),
			     &o[i], "key %d", i);
	rhashtable_destroy(&ht);
	free(o);
}

/* A table holding n objects with keys 0 .. n-1; the caller frees them. */
static struct obj *filled_table(struct rhashtable *ht, int n)
{
	struct obj *o = malloc((size_t)n * sizeof(*o));

	cr_assert_not_null(o);
	cr_assert_eq(rhashtable_init(ht, &params), 0);
	for (int i = 0; i < n; i++) {
		o[i].key = i;
		cr_assert_eq(rhashtable_insert_fast(ht, &o[i].node, params), 0);
	}
	return o;
}

static void check_all_found(struct rhashtable *ht, struct obj *o, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(rhashtable_lookup_fast(ht, &o[i].key, params),
			     &o[i], "key %d", i);
}

/* A re-seed that cannot allocate keeps the old secret and every entry. */
Test(rhashtable_nomem, reseed_without_memory_is_skipped)
{
	enum { N = 40 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = filled_table(&ht, N);

	atomic_store(&fail_calloc, true);
	rht__force_reseed(&ht);
	TEST_WAIT_FOR((rhashtable_get_stats(&ht, &st), st.alloc_failures > 0),
		      WAIT_MS);
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.alloc_failures, 1);
	cr_assert_eq(st.generation, 0);
	cr_assert_eq(st.reseeds, 0);
	check_all_found(&ht, o, N);
	atomic_store(&fail_calloc, false);
	rht__force_reseed(&ht);
	TEST_WAIT_FOR(rhashtable_generation(&ht) == 1 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 1);
	check_all_found(&ht, o, N);
	rhashtable_destroy(&ht);
	free(o);
}

/*
 * A flood re-seed (an insert saw a chain over RHT_ELASTICITY) whose table
 * cannot be allocated stays requested: the worker tries again once the
 * re-seed interval has passed, and succeeds when memory is back.
 */
Test(rhashtable_nomem, flood_reseed_without_memory_is_retried)
{
	enum { N = 40 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = filled_table(&ht, N);

	atomic_store(&fail_calloc, true);
	/* What an insert does when it walks a chain that is too long. */
	rhkv_rcu_read_lock();
	rht__chain_too_long(&ht, rht__first_table(&ht));
	rhkv_rcu_read_unlock();
	TEST_WAIT_FOR((rhashtable_get_stats(&ht, &st), st.alloc_failures > 0),
		      WAIT_MS);
	atomic_store(&fail_calloc, false);
	rhashtable_get_stats(&ht, &st);
	cr_assert_gt(st.alloc_failures, 0);
	cr_assert_eq(st.reseeds, 0);
	cr_assert_eq(st.generation, 0);

	/* Nothing kicks the worker from here on: it must come back itself. */
	TEST_WAIT_FOR((rhashtable_get_stats(&ht, &st),
		       st.reseeds == 1 && !st.resizing),
		      WAIT_MS);
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.reseeds, 1, "the re-seed was not retried");
	cr_assert_eq(st.generation, 1);
	check_all_found(&ht, o, N);
	rhashtable_destroy(&ht);
	free(o);
}
