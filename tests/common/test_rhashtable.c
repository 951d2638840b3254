/*
 * Unit tests of common/rhashtable: every public function and its error
 * paths, the rhltable, the kernel's own test matrix (lib/test_rhashtable.c:
 * many grows, the element bound, ten threads removing every step-th key),
 * automatic growth and shrinking, the hash flooding defence, and the debug
 * assertion against inserting an object twice.
 *
 * The resize worker runs in the background: tests that wait for it poll
 * with a bounded wait (TEST_WAIT_FOR) and then assert.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"
#include "test_util.h"

/* Longest we wait for the resize worker; it normally takes milliseconds. */
#define WAIT_MS 5000

struct obj {
	int key;
	int value;
	struct rhash_head node;
};

static const struct rhashtable_params params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct obj, key),
	.head_offset = offsetof(struct obj, node),
};

/* 64-bit keys, for brute-forcing bucket collisions under a known secret. */
struct obj64 {
	uint64_t key;
	struct rhash_head node;
};

static const struct rhashtable_params params64 = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct obj64, key),
	.head_offset = offsetof(struct obj64, node),
};

static const struct siphash_key test_secret = {
	.k0 = 0x0123456789abcdefULL,
	.k1 = 0xfedcba9876543210ULL,
};

TestSuite(rhashtable, .init = test_rcu_init, .fini = test_rcu_fini,
	  .timeout = 60);
TestSuite(rhltable, .init = test_rcu_init, .fini = test_rcu_fini,
	  .timeout = 60);
TestSuite(err);

static struct obj *objs_new(size_t n)
{
	struct obj *o = calloc(n, sizeof(*o));

	cr_assert_not_null(o);
	for (size_t i = 0; i < n; i++) {
		o[i].key = (int)i;
		o[i].value = (int)i;
	}
	return o;
}

static struct obj *find(struct rhashtable *ht, int key)
{
	return rhashtable_lookup_fast(ht, &key, params);
}

static void init_ok(struct rhashtable *ht, const struct rhashtable_params *p)
{
	int err = rhashtable_init(ht, p);

	cr_assert_eq(err, 0, "rhashtable_init: %d", err);
}

/* Waits until no resize is running and the load is at most 75%. */
static bool grown(struct rhashtable *ht)
{
	return !rht__resizing(ht) &&
	       rhashtable_nelems(ht) <= rhashtable_size(ht) / 4 * 3;
}

static void wait_grown(struct rhashtable *ht)
{
	TEST_WAIT_FOR(grown(ht), WAIT_MS);
	cr_assert(grown(ht), "table did not grow: %lu elements, %u buckets",
		  rhashtable_nelems(ht), rhashtable_size(ht));
}

/* Waits until the table has size buckets and no resize is running. */
static void wait_size(struct rhashtable *ht, unsigned int size)
{
	TEST_WAIT_FOR(rhashtable_size(ht) == size && !rht__resizing(ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_size(ht), size, "%u buckets, expected %u",
		     rhashtable_size(ht), size);
	cr_assert(!rht__resizing(ht));
}

/* The bucket of a uint64 key in a table of size buckets under secret. */
static unsigned int bucket_of(const struct siphash_key *secret, uint64_t key,
			      unsigned int size)
{
	return (uint32_t)siphash13(secret, &key, sizeof(key)) & (size - 1);
}

/* Fills keys[0..n) with keys that all land in bucket `target`. */
static void colliding_keys(const struct siphash_key *secret, unsigned int size,
			   unsigned int target, uint64_t *keys, size_t n)
{
	size_t found = 0;

	for (uint64_t k = 1; found < n; k++)
		if (bucket_of(secret, k, size) == target)
			keys[found++] = k;
}

/* ---- err.h ---- */

Test(err, err_ptr_round_trip)
{
	int x;

	for (long e = 1; e <= MAX_ERRNO; e++) {
		void *p = ERR_PTR(-e);

		cr_assert(IS_ERR(p), "errno %ld", e);
		cr_assert(IS_ERR_OR_NULL(p), "errno %ld", e);
		cr_assert_eq(PTR_ERR(p), -e);
	}
	cr_assert(!IS_ERR(ERR_PTR(-MAX_ERRNO - 1)));
	cr_assert(!IS_ERR(NULL));
	cr_assert(IS_ERR_OR_NULL(NULL));
	cr_assert_eq(PTR_ERR(NULL), 0);
	cr_assert(!IS_ERR(&x));
	cr_assert(!IS_ERR_OR_NULL(&x));
	cr_assert_eq(PTR_ERR(ERR_PTR(-E2BIG)), -E2BIG);
}

/* ---- rhashtable_init ---- */

static uint32_t int_hash(const void *data, uint32_t len, uint32_t seed)
{
	uint32_t h = seed ^ 2166136261u;
	const unsigned char *p = data;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static uint32_t obj_int_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct obj *o = data;

	(void)len;
	return int_hash(&o->key, sizeof(o->key), seed);
}

static int obj_int_cmp(struct rhashtable_compare_arg *arg, const void *data)
{
	const struct obj *o = data;

	return o->key != *(const int *)arg->key;
}

static int try_init(struct rhashtable_params p)
{
	struct rhashtable ht;
	int err = rhashtable_init(&ht, &p);

	if (!err)
		rhashtable_destroy(&ht);
	return err;
}

static int try_rhl_init(struct rhashtable_params p)
{
	struct rhltable hlt;
	int err = rhltable_init(&hlt, &p);

	if (!err)
		rhltable_destroy(&hlt);
	return err;
}

Test(rhashtable, init_rejects_inconsistent_params)
{
	struct rhashtable_params p;

	cr_assert_eq(try_init(params), 0);

	/* key_len 0 and no obj_hashfn: nothing to hash an object with. */
	p = params;
	p.key_len = 0;
	cr_assert_eq(try_init(p), -EINVAL);
	p.hashfn = int_hash;
	cr_assert_eq(try_init(p), -EINVAL);

	/* obj_hashfn without obj_cmpfn. */
	p = params;
	p.obj_hashfn = obj_int_hash;
	cr_assert_eq(try_init(p), -EINVAL);
	p.hashfn = int_hash;
	cr_assert_eq(try_init(p), -EINVAL);
	p.obj_cmpfn = obj_int_cmp;
	cr_assert_eq(try_init(p), 0);

	/* key_len 0 without a hashfn for lookup keys. */
	p = params;
	p.key_len = 0;
	p.obj_hashfn = obj_int_hash;
	p.obj_cmpfn = obj_int_cmp;
	cr_assert_eq(try_init(p), -EINVAL);
	p.hashfn = int_hash;
	cr_assert_eq(try_init(p), 0);

	/* The rhash_head must be aligned. */
	for (uint16_t off = 1; off < 8; off++) {
		p = params;
		p.key_offset = 0;
		p.head_offset = 8 + off;
		cr_assert_eq(try_init(p), -EINVAL, "head_offset %u", off + 8);
	}
	p = params;
	p.key_offset = 0;
	p.head_offset = 16;
	cr_assert_eq(try_init(p), 0);

	/* A key overlapping the rhash_head would be overwritten by linking. */
	p = params;
	p.head_offset = 8;
	p.key_len = 4;
	for (uint16_t off = 5; off < 16; off++) {
		p.key_offset = off;
		cr_assert_eq(try_init(p), -EINVAL, "key at %u", off);
	}
	p.key_offset = 4; /* ends right before the head */
	cr_assert_eq(try_init(p), 0);
	p.key_offset = 16; /* starts right after it */
	cr_assert_eq(try_init(p), 0);

	/* min_size above max_size. */
	p = params;
	p.min_size = 128;
	p.max_size = 64;
	cr_assert_eq(try_init(p), -EINVAL);
	p.max_size = 128;
	cr_assert_eq(try_init(p), 0);
	p.max_size = 0; /* no bound: any min_size goes */
	cr_assert_eq(try_init(p), 0);
}

struct size_case {
	unsigned int nelem_hint, min_size, max_size, size;
};

Test(rhashtable, init_sizes_round_to_powers_of_two)
{
	static const struct size_case cases[] = {
		{ 0, 0, 0, RHT_DEFAULT_SIZE },
		{ 1, 0, 0, RHT_MIN_SIZE }, /* 1 * 4/3 = 1, at least 4 */
		{ 8, 0, 0, 16 },	   /* 8 * 4/3 = 10 -> 16 */
		{ 12, 0, 0, 16 },	   /* 16: exactly a power */
		{ 100, 0, 0, 256 },	   /* 133 -> 256 */
		{ 10000, 0, 0, 16384 },	   /* 13333 -> 16384 */
		{ 3, 5, 0, 8 },		   /* min_size 5 -> 8 */
		{ 0, 100, 0, 128 },	   /* min_size 100 -> 128 */
		{ 0, 0, 100, 64 },	   /* max_size 100 -> 64 */
		{ 0, 0, 50, 32 },	   /* max_size 50 -> 32 */
		{ 1000, 0, 100, 64 },	   /* hint capped by max_size */
		{ 1000, 16, 16, 16 },
		{ 0, 0, 2, RHT_MIN_SIZE }, /* max_size below the minimum */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rhashtable_params p = params;
		struct rhashtable_stats st;
		struct rhashtable ht;

		p.nelem_hint = cases[i].nelem_hint;
		p.min_size = cases[i].min_size;
		p.max_size = cases[i].max_size;
		init_ok(&ht, &p);
		cr_assert_eq(rhashtable_size(&ht), cases[i].size,
			     "hint %u min %u max %u: size %u, expected %u",
			     p.nelem_hint, p.min_size, p.max_size,
			     rhashtable_size(&ht), cases[i].size);
		cr_assert_eq(rhashtable_nelems(&ht), 0);
		cr_assert_eq(rhashtable_generation(&ht), 0);
		rhashtable_get_stats(&ht, &st);
		cr_assert_eq(st.size, cases[i].size);
		cr_assert_eq(st.nelems, 0);
		cr_assert_eq(st.generation, 0);
		cr_assert(!st.resizing);
		cr_assert_eq(st.grows + st.shrinks + st.reseeds +
				     st.alloc_failures,
			     0);
		rhashtable_destroy(&ht);
	}
}

/* ---- destroy ---- */

Test(rhashtable, destroy_leaves_objects_alone)
{
	struct rhashtable ht;
	struct obj *o = objs_new(300);

	init_ok(&ht, &params);
	for (int i = 0; i < 300; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	rhashtable_destroy(&ht);
	/* The objects are the caller's: intact, and freed here once (ASan
	 * would report a double free had destroy freed them). */
	for (int i = 0; i < 300; i++)
		cr_assert_eq(o[i].key, i);
	free(o);
}

struct free_ctx {
	int calls;
	int wrong_arg;
	int *seen; /* per object value */
};

static struct free_ctx *free_ctx_expected;

static void count_free(void *ptr, void *arg)
{
	struct free_ctx *ctx = arg;
	struct obj *o = ptr;

	if (ctx != free_ctx_expected) {
		free_ctx_expected->wrong_arg++;
		return;
	}
	ctx->calls++;
	ctx->seen[o->value]++;
	free(o);
}

/* Inserts n separately allocated objects, two per key (duplicates). */
static void insert_pairs(struct rhashtable *ht, int n)
{
	for (int i = 0; i < n; i++) {
		struct obj *o = malloc(sizeof(*o));

		cr_assert_not_null(o);
		o->key = i / 2;
		o->value = i;
		cr_assert_eq(rhashtable_insert_fast(ht, &o->node, params), 0);
	}
}

static void check_freed_once(struct free_ctx *ctx, int n)
{
	cr_assert_eq(ctx->wrong_arg, 0, "free_fn got the wrong arg");
	cr_assert_eq(ctx->calls, n, "free_fn called %d times for %d objects",
		     ctx->calls, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(ctx->seen[i], 1, "object %d freed %d times", i,
			     ctx->seen[i]);
}

Test(rhashtable, free_and_destroy_frees_each_object_once)
{
	enum { N = 2000 };
	struct rhashtable_params p = params;
	struct free_ctx ctx = { .seen = calloc(N, sizeof(int)) };
	struct rhashtable ht;

	cr_assert_not_null(ctx.seen);
	free_ctx_expected = &ctx;
	p.nelem_hint = 8;
	init_ok(&ht, &p);
	insert_pairs(&ht, N);
	wait_grown(&ht);
	cr_assert_eq(rhashtable_nelems(&ht), N);
	rhashtable_free_and_destroy(&ht, count_free, &ctx);
	check_freed_once(&ctx, N);
	free(ctx.seen);
}

/* A hashfn that is slow on every thread but the test's: a slow worker. */
static _Thread_local bool on_test_thread;
static atomic_bool slow_worker;

static uint32_t slow_hash(const void *data, uint32_t len, uint32_t seed)
{
	if (atomic_load(&slow_worker) && !on_test_thread)
		test_sleep_ms(1);
	return int_hash(data, len, seed);
}

/* Whether a grow is running with at least two buckets moved. */
static bool half_moved(struct rhashtable *ht)
{
	struct bucket_table *tbl;
	bool ret;

	rhkv_rcu_read_lock();
	tbl = rht__first_table(ht);
	ret = rht__future(tbl) && atomic_load(&tbl->rehash) >= 2;
	rhkv_rcu_read_unlock();
	return ret;
}

/*
 * Destroy while the worker is moving entries: it stops between buckets and
 * the entries are split between two tables, each in exactly one. The worker
 * hashes slowly, so destroy is sure to find the grow half done.
 */
Test(rhashtable, free_and_destroy_during_resize)
{
	enum { N = 200 };
	struct rhashtable_params p = params;
	struct free_ctx ctx = { .seen = calloc(N, sizeof(int)) };
	struct rhashtable ht;
	bool half_done = false;

	cr_assert_not_null(ctx.seen);
	free_ctx_expected = &ctx;
	on_test_thread = true;
	atomic_store(&slow_worker, true);
	p.hashfn = slow_hash;
	init_ok(&ht, &p);
	cr_assert_eq(rhashtable_size(&ht), 64);
	for (int i = 0; i < N; i++) {
		struct obj *o = malloc(sizeof(*o));

		cr_assert_not_null(o);
		o->key = i;
		o->value = i;
		cr_assert_eq(rhashtable_insert_fast(&ht, &o->node, p), 0);
	}
	/* Some buckets moved, not all (about 50 entries move, 1 ms each). */
	TEST_WAIT_FOR((half_done = half_moved(&ht)), WAIT_MS);
	cr_assert(half_done, "no grow half done");
	rhashtable_free_and_destroy(&ht, count_free, &ctx);
	atomic_store(&slow_worker, false);
	check_freed_once(&ctx, N);
	free(ctx.seen);
}

/* ---- inserts ---- */

Test(rhashtable, insert_fast_allows_duplicates)
{
	struct rhashtable ht;
	struct obj a = { .key = 7, .value = 1 }, b = { .key = 7, .value = 2 };
	struct obj *found;

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_insert_fast(&ht, &a.node, params), 0);
	cr_assert_eq(rhashtable_insert_fast(&ht, &b.node, params), 0);
	cr_assert_eq(rhashtable_nelems(&ht), 2);
	found = find(&ht, 7);
	cr_assert(found == &a || found == &b);

	/* Removing either leaves the other findable. */
	cr_assert_eq(rhashtable_remove_fast(&ht, &found->node, params), 0);
	cr_assert_eq(find(&ht, 7), found == &a ? &b : &a);
	cr_assert_eq(rhashtable_remove_fast(&ht, &find(&ht, 7)->node, params),
		     0);
	cr_assert_null(find(&ht, 7));
	cr_assert_eq(rhashtable_nelems(&ht), 0);
	rhashtable_destroy(&ht);
}

Test(rhashtable, lookup_insert_fast_rejects_equal_key)
{
	struct rhashtable ht;
	struct obj a = { .key = 7, .value = 1 }, b = { .key = 7, .value = 2 };
	struct obj c = { .key = 8, .value = 3 };

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &a.node, params), 0);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &b.node, params),
		     -EEXIST);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &c.node, params), 0);
	cr_assert_eq(rhashtable_nelems(&ht), 2);
	cr_assert_eq(find(&ht, 7), &a);
	cr_assert_eq(find(&ht, 8), &c);
	/* b was not linked: removing it finds nothing. */
	cr_assert_eq(rhashtable_remove_fast(&ht, &b.node, params), -ENOENT);
	rhashtable_destroy(&ht);
}

Test(rhashtable, lookup_get_insert_fast_returns_present_object)
{
	struct rhashtable ht;
	struct obj a = { .key = 7, .value = 1 }, b = { .key = 7, .value = 2 };

	init_ok(&ht, &params);
	cr_assert_null(rhashtable_lookup_get_insert_fast(&ht, &a.node, params));
	cr_assert_eq(rhashtable_lookup_get_insert_fast(&ht, &b.node, params),
		     &a);
	cr_assert_eq(rhashtable_nelems(&ht), 1);
	cr_assert_eq(find(&ht, 7), &a);
	rhashtable_destroy(&ht);
}

/* The bound is 2 * max_size elements; max_size 16 gives 32. */
Test(rhashtable, element_bound_gives_e2big)
{
	enum { BOUND = 32 };
	struct rhashtable_params p = params;
	struct obj *o = objs_new(BOUND + 3);
	struct obj dup = { .key = 0, .value = -1 };
	struct rhashtable ht;
	void *ret;

	p.max_size = 16;
	init_ok(&ht, &p);
	for (int i = 0; i < BOUND; i++)
		cr_assert_null(
			rhashtable_lookup_get_insert_fast(&ht, &o[i].node, p),
			"insert %d", i);
	cr_assert_eq(rhashtable_nelems(&ht), BOUND);

	ret = rhashtable_lookup_get_insert_fast(&ht, &o[BOUND].node, p);
	cr_assert(IS_ERR(ret));
	cr_assert_eq(PTR_ERR(ret), -E2BIG);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &o[BOUND].node, p),
		     -E2BIG);
	cr_assert_eq(rhashtable_insert_fast(&ht, &o[BOUND].node, p), -E2BIG);
	cr_assert_eq(rhashtable_lookup_insert_key(&ht, &o[BOUND].key,
						  &o[BOUND].node, p),
		     -E2BIG);
	cr_assert_eq(PTR_ERR(rhashtable_lookup_get_insert_key(
			     &ht, &o[BOUND].key, &o[BOUND].node, p)),
		     -E2BIG);
	/* A present key is found before the bound is checked. */
	cr_assert_eq(rhashtable_lookup_get_insert_fast(&ht, &dup.node, p),
		     &o[0]);
	cr_assert_eq(rhashtable_lookup_insert_fast(&ht, &dup.node, p), -EEXIST);
	cr_assert_eq(rhashtable_nelems(&ht), BOUND);
	cr_assert_null(find(&ht, BOUND));
	wait_size(&ht, 16);
	test_sleep_ms(20);
	cr_assert_eq(rhashtable_size(&ht), 16, "grew past max_size");

	/* Room again after a remove. */
	cr_assert_eq(rhashtable_remove_fast(&ht, &o[3].node, p), 0);
	cr_assert_eq(rhashtable_insert_fast(&ht, &o[BOUND].node, p), 0);
	cr_assert_eq(find(&ht, BOUND), &o[BOUND]);
	cr_assert_eq(rhashtable_insert_fast(&ht, &o[BOUND + 1].node, p),
		     -E2BIG);
	rhashtable_destroy(&ht);
	free(o);
}

/* ---- string keys reached through a pointer (key_len 0) ---- */

struct sobj {
	const char *name;
	int value;
	struct rhash_head node;
};

static uint32_t str_hash(const void *data, uint32_t len, uint32_t seed)
{
	const unsigned char *s = data;
	uint32_t h = seed ^ 2166136261u;

	(void)len;
	while (*s)
		h = (h ^ *s++) * 16777619u;
	return h;
}

static uint32_t sobj_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct sobj *o = data;

	return str_hash(o->name, len, seed);
}

static int sobj_cmp(struct rhashtable_compare_arg *arg, const void *data)
{
	const struct sobj *o = data;

	return strcmp(o->name, arg->key) != 0;
}

static const struct rhashtable_params str_params = {
	.head_offset = offsetof(struct sobj, node),
	.hashfn = str_hash,
	.obj_hashfn = sobj_hash,
	.obj_cmpfn = sobj_cmp,
};

Test(rhashtable, insert_key_with_obj_hashfn)
{
	struct rhashtable ht;
	/* Equal names in distinct buffers: only the contents count. */
	char n1[] = "alpha", n2[] = "alpha", n3[] = "beta", probe[] = "alpha";
	struct sobj a = { .name = n1 }, a2 = { .name = n2 }, b = { .name = n3 };

	init_ok(&ht, &str_params);
	cr_assert_eq(
		rhashtable_lookup_insert_key(&ht, a.name, &a.node, str_params),
		0);
	cr_assert_eq(rhashtable_lookup_insert_key(&ht, a2.name, &a2.node,
						  str_params),
		     -EEXIST);
	cr_assert_eq(rhashtable_lookup_get_insert_key(&ht, a2.name, &a2.node,
						      str_params),
		     &a);
	cr_assert_null(rhashtable_lookup_get_insert_key(&ht, b.name, &b.node,
							str_params));
	cr_assert_eq(rhashtable_nelems(&ht), 2);
	cr_assert_eq(rhashtable_lookup_fast(&ht, probe, str_params), &a);
	cr_assert_eq(rhashtable_lookup_fast(&ht, "beta", str_params), &b);
	cr_assert_null(rhashtable_lookup_fast(&ht, "gamma", str_params));

	/* Remove and replace hash the object with obj_hashfn. */
	cr_assert_eq(
		rhashtable_replace_fast(&ht, &a.node, &a2.node, str_params), 0);
	cr_assert_eq(rhashtable_lookup_fast(&ht, probe, str_params), &a2);
	cr_assert_eq(rhashtable_remove_fast(&ht, &a2.node, str_params), 0);
	cr_assert_null(rhashtable_lookup_fast(&ht, probe, str_params));
	cr_assert_eq(rhashtable_remove_fast(&ht, &a.node, str_params), -ENOENT);
	rhashtable_destroy(&ht);
}

/* Growing rehashes objects with obj_hashfn and the table's seed. */
Test(rhashtable, insert_key_table_grows)
{
	enum { N = 3000 };
	struct rhashtable_params p = str_params;
	struct sobj *o = calloc(N, sizeof(*o));
	char(*names)[16] = calloc(N, sizeof(*names));
	struct rhashtable_stats st;
	struct rhashtable ht;

	cr_assert(o && names);
	p.nelem_hint = 8;
	init_ok(&ht, &p);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "key-%d", i);
		o[i].name = names[i];
		o[i].value = i;
		cr_assert_eq(rhashtable_lookup_insert_key(&ht, names[i],
							  &o[i].node, p),
			     0);
	}
	wait_grown(&ht);
	rhashtable_get_stats(&ht, &st);
	cr_assert_geq(st.grows, 1);
	for (int i = 0; i < N; i++) {
		char probe[16];

		snprintf(probe, sizeof(probe), "key-%d", i);
		cr_assert_eq(rhashtable_lookup_fast(&ht, probe, p), &o[i]);
	}
	cr_assert_null(rhashtable_lookup_fast(&ht, "key-x", p));
	rhashtable_destroy(&ht);
	free(names);
	free(o);
}

/* ---- lookups and removal ---- */

Test(rhashtable, lookup_under_read_lock)
{
	struct rhashtable ht;
	struct obj *o = objs_new(100);
	int key = 42, missing = 1000;

	init_ok(&ht, &params);
	rhkv_rcu_read_lock();
	/* Writers may run inside a read-side section. */
	for (int i = 0; i < 100; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	cr_assert_eq(rhashtable_lookup(&ht, &key, params), &o[42]);
	cr_assert_null(rhashtable_lookup(&ht, &missing, params));
	cr_assert_eq(rhashtable_remove_fast(&ht, &o[42].node, params), 0);
	cr_assert_null(rhashtable_lookup(&ht, &key, params));
	/* Read-side sections nest. */
	cr_assert_eq(rhashtable_lookup_fast(&ht, &o[7].key, params), &o[7]);
	rhkv_rcu_read_unlock();
	for (int i = 0; i < 100; i++)
		cr_assert_eq(find(&ht, i), i == 42 ? NULL : &o[i]);
	rhashtable_destroy(&ht);
	free(o);
}

Test(rhashtable, remove_fast)
{
	struct rhashtable ht;
	struct obj *o = objs_new(64);
	struct obj stranger = { .key = 5 };

	init_ok(&ht, &params);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	/* Never inserted, though its key is present. */
	cr_assert_eq(rhashtable_remove_fast(&ht, &stranger.node, params),
		     -ENOENT);
	cr_assert_eq(rhashtable_nelems(&ht), 64);
	for (int i = 0; i < 64; i += 2) {
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, params),
			     0);
		cr_assert_eq(rhashtable_remove_fast(&ht, &o[i].node, params),
			     -ENOENT);
	}
	cr_assert_eq(rhashtable_nelems(&ht), 32);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(find(&ht, i), i % 2 ? &o[i] : NULL, "key %d", i);
	/* A removed object can be inserted again. */
	cr_assert_eq(rhashtable_insert_fast(&ht, &o[0].node, params), 0);
	cr_assert_eq(find(&ht, 0), &o[0]);
	rhashtable_destroy(&ht);
	free(o);
}

/* ---- replace ---- */

Test(rhashtable, replace_fast)
{
	struct rhashtable ht;
	struct obj a = { .key = 5, .value = 1 }, b = { .key = 5, .value = 2 };
	struct obj c = { .key = 5, .value = 3 }, d = { .key = 6, .value = 4 };
	int k5 = 5, k6 = 6;

	init_ok(&ht, &params);
	rht__set_secret(&ht, &test_secret);
	/* Keys 5 and 6 must hash differently for the -EINVAL case. */
	cr_assert_neq((uint32_t)siphash13(&test_secret, &k5, sizeof(int)),
		      (uint32_t)siphash13(&test_secret, &k6, sizeof(int)));

	cr_assert_eq(rhashtable_insert_fast(&ht, &a.node, params), 0);
	cr_assert_eq(rhashtable_replace_fast(&ht, &a.node, &b.node, params), 0);
	cr_assert_eq(find(&ht, 5), &b);
	cr_assert_eq(rhashtable_nelems(&ht), 1);
	/* a is gone: neither removable nor replaceable. */
	cr_assert_eq(rhashtable_remove_fast(&ht, &a.node, params), -ENOENT);
	cr_assert_eq(rhashtable_replace_fast(&ht, &a.node, &c.node, params),
		     -ENOENT);
	cr_assert_eq(find(&ht, 5), &b);
	/* Different hashes. */
	cr_assert_eq(rhashtable_replace_fast(&ht, &b.node, &d.node, params),
		     -EINVAL);
	cr_assert_eq(find(&ht, 5), &b);
	cr_assert_null(find(&ht, 6));
	cr_assert_eq(rhashtable_remove_fast(&ht, &b.node, params), 0);
	cr_assert_eq(rhashtable_nelems(&ht), 0);
	rhashtable_destroy(&ht);
}

/* Replace at the head, in the middle and at the tail of a long chain. */
Test(rhashtable, replace_fast_in_chain)
{
	enum { N = 6 };
	struct rhashtable_params p = params64;
	struct obj64 o[N], repl[N];
	uint64_t keys[N];
	struct rhashtable ht;

	init_ok(&ht, &p);
	rht__set_secret(&ht, &test_secret);
	colliding_keys(&test_secret, rhashtable_size(&ht), 3, keys, N);
	for (int i = 0; i < N; i++) {
		o[i].key = repl[i].key = keys[i];
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
	}
	cr_assert_eq(rht__max_chain(&ht), N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(rhashtable_replace_fast(&ht, &o[i].node,
						     &repl[i].node, p),
			     0);
		for (int j = 0; j < N; j++)
			cr_assert_eq(rhashtable_lookup_fast(&ht, &keys[j], p),
				     j <= i ? &repl[j] : &o[j]);
	}
	cr_assert_eq(rht__max_chain(&ht), N);
	cr_assert_eq(rhashtable_nelems(&ht), N);
	rhashtable_destroy(&ht);
}

/* ---- statistics, growth and shrinking ---- */

Test(rhashtable, grows_automatically)
{
	enum { N = 5000 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = objs_new(N);

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_size(&ht), 64);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
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
	struct obj *o = objs_new(N);
	unsigned int size;
	unsigned long shrinks = 0;
	int64_t deadline;

	p.automatic_shrinking = true;
	p.min_size = MIN;
	init_ok(&ht, &p);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
	wait_grown(&ht);
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
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
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
	struct obj *o = objs_new(N);

	p.automatic_shrinking = true;
	init_ok(&ht, &p);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
	wait_grown(&ht);
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
	struct obj *o = objs_new(N);

	init_ok(&ht, &params);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	wait_grown(&ht);
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

/* ---- hash flooding ---- */

enum { FLOOD_SIZE = 1024, FLOOD_KEYS = 200 };

/* A table of FLOOD_SIZE buckets whose secret is test_secret. */
static void flood_table(struct rhashtable *ht)
{
	struct rhashtable_params p = params64;

	p.nelem_hint = FLOOD_SIZE * 3 / 4;
	init_ok(ht, &p);
	cr_assert_eq(rhashtable_size(ht), FLOOD_SIZE);
	rht__set_secret(ht, &test_secret);
}

/* Inserts FLOOD_KEYS keys that share one bucket under test_secret. */
static struct obj64 *flood(struct rhashtable *ht)
{
	struct obj64 *o = calloc(FLOOD_KEYS, sizeof(*o));
	uint64_t keys[FLOOD_KEYS];

	cr_assert_not_null(o);
	colliding_keys(&test_secret, FLOOD_SIZE, 17, keys, FLOOD_KEYS);
	for (int i = 0; i < FLOOD_KEYS; i++) {
		o[i].key = keys[i];
		cr_assert_eq(rhashtable_insert_fast(ht, &o[i].node, params64),
			     0);
		/* Up to RHT_ELASTICITY entries nothing is asked for: the
		 * chain shows the secret is the one set. */
		if (i + 1 == RHT_ELASTICITY)
			cr_assert_eq(rht__max_chain(ht), RHT_ELASTICITY);
	}
	return o;
}

static void check_all_found(struct rhashtable *ht, struct obj64 *o, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(rhashtable_lookup_fast(ht, &o[i].key, params64),
			     &o[i], "key %d lost", i);
}

static bool reseeded(struct rhashtable *ht, uint32_t gen)
{
	return rhashtable_generation(ht) > gen &&
	       rht__max_chain(ht) <= RHT_ELASTICITY;
}

Test(rhashtable, hash_flood_triggers_reseed)
{
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj64 *o;

	flood_table(&ht);
	o = flood(&ht);
	TEST_WAIT_FOR(reseeded(&ht, 0), WAIT_MS);
	cr_assert_geq(rhashtable_generation(&ht), 1, "no re-seed");
	cr_assert_leq(rht__max_chain(&ht), RHT_ELASTICITY, "chain of %u",
		      rht__max_chain(&ht));
	rhashtable_get_stats(&ht, &st);
	cr_assert_geq(st.reseeds, 1);
	cr_assert_eq(st.grows, 0, "the load was low: no grow needed");
	cr_assert_eq(st.size, FLOOD_SIZE);
	cr_assert_eq(st.nelems, FLOOD_KEYS);
	check_all_found(&ht, o, FLOOD_KEYS);
	rhashtable_destroy(&ht);
	free(o);
}

Test(rhashtable, forced_reseed_keeps_keys)
{
	enum { N = 1000 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o = objs_new(N);

	init_ok(&ht, &params);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, params),
			     0);
	wait_grown(&ht);
	cr_assert_eq(rhashtable_generation(&ht), 0);
	for (uint32_t gen = 1; gen <= 2; gen++) {
		rht__force_reseed(&ht);
		TEST_WAIT_FOR(rhashtable_generation(&ht) == gen &&
				      !rht__resizing(&ht),
			      WAIT_MS);
		cr_assert_eq(rhashtable_generation(&ht), gen);
		for (int i = 0; i < N; i++)
			cr_assert_eq(find(&ht, i), &o[i]);
		cr_assert_null(find(&ht, N));
	}
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.reseeds, 2);
	cr_assert_eq(st.generation, 2);
	cr_assert_eq(st.size, 2048, "a re-seed keeps the size");
	cr_assert_eq(st.nelems, N);
	rhashtable_destroy(&ht);
	free(o);
}

/* A user hashfn gets a seed derived from the secret: new after a re-seed. */
static _Atomic uint32_t seen_seed;
static _Atomic int bad_len;

static uint32_t recording_hash(const void *data, uint32_t len, uint32_t seed)
{
	if (len != sizeof(int))
		bad_len = 1;
	seen_seed = seed;
	return int_hash(data, len, seed);
}

Test(rhashtable, user_hashfn_gets_new_seed_after_reseed)
{
	enum { N = 100 };
	struct rhashtable_params p = params;
	struct rhashtable ht;
	struct obj *o = objs_new(N);
	uint32_t seed0;

	p.hashfn = recording_hash;
	init_ok(&ht, &p);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_insert_fast(&ht, &o[i].node, p), 0);
	seed0 = seen_seed;
	cr_assert_eq(rhashtable_lookup_fast(&ht, &o[5].key, p), &o[5]);
	cr_assert_eq(seen_seed, seed0, "the seed changed without a re-seed");
	rht__force_reseed(&ht);
	TEST_WAIT_FOR(rhashtable_generation(&ht) == 1 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 1);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_lookup_fast(&ht, &o[i].key, p), &o[i]);
	cr_assert_neq(seen_seed, seed0, "same seed after a re-seed");
	cr_assert_eq(bad_len, 0, "hashfn not given key_len");
	rhashtable_destroy(&ht);
	free(o);
}

/*
 * Regression: a flood-triggered re-seed request that arrives within
 * RHT_RESEED_INTERVAL_NS (1 s) of the previous re-seed must be deferred, not
 * dropped: no further insert comes here to ask again.
 */
Test(rhashtable, flood_soon_after_reseed_is_handled)
{
	struct rhashtable ht;
	struct obj64 *o;

	flood_table(&ht);
	rht__force_reseed(&ht);
	TEST_WAIT_FOR(rhashtable_generation(&ht) == 1 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 1);
	rht__set_secret(&ht, &test_secret); /* still empty */
	o = flood(&ht);
	TEST_WAIT_FOR(reseeded(&ht, 1), WAIT_MS);
	cr_assert_leq(rht__max_chain(&ht), RHT_ELASTICITY,
		      "chain of %u left after %d ms", rht__max_chain(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 2);
	check_all_found(&ht, o, FLOOD_KEYS);
	rhashtable_destroy(&ht);
	free(o);
}

/*
 * Regression: with obj_cmpfn but without obj_hashfn the object is still
 * hashed from key_len bytes at key_offset, so a key overlapping the linkage
 * would be overwritten by linking: rhashtable_init must return -EINVAL.
 */
Test(rhashtable, overlap_with_obj_cmpfn_is_rejected)
{
	struct rhashtable_params p = params;

	p.key_offset = p.head_offset;
	p.key_len = sizeof(void *);
	p.obj_cmpfn = obj_int_cmp;
	cr_assert_eq(try_init(p), -EINVAL);
}

/* ---- debug assertion ---- */

#ifndef NDEBUG
Test(rhashtable, double_insert_aborts, .signal = SIGABRT)
{
	struct rhashtable ht;
	struct obj a = { .key = 1 };

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_insert_fast(&ht, &a.node, params), 0);
	rhashtable_insert_fast(&ht, &a.node, params);
	cr_assert_fail("inserting an object twice did not abort");
}

Test(rhashtable, double_lookup_insert_aborts, .signal = SIGABRT)
{
	struct rhashtable ht;
	struct obj a = { .key = 1 }, b = { .key = 2 };

	init_ok(&ht, &params);
	cr_assert_eq(rhashtable_insert_fast(&ht, &a.node, params), 0);
	cr_assert_eq(rhashtable_insert_fast(&ht, &b.node, params), 0);
	rhashtable_lookup_insert_fast(&ht, &a.node, params);
	cr_assert_fail("inserting an object twice did not abort");
}
#endif

/* ---- rhltable ---- */

struct lobj {
	int key;
	int value;
	struct rhlist_head node;
};

static const struct rhashtable_params lparams = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct lobj, key),
	.head_offset = offsetof(struct lobj, node),
};

/* Collects the objects of key into out (at most max); returns how many. */
static int rhl_collect(struct rhltable *hlt, int key, struct lobj **out,
		       int max)
{
	struct rhlist_head *list, *pos;
	struct lobj *o;
	int n = 0;

	rhkv_rcu_read_lock();
	list = rhltable_lookup(hlt, &key, lparams);
	rhl_for_each_entry_rcu (o, pos, list, node) {
		if (n < max)
			out[n] = o;
		n++;
	}
	rhkv_rcu_read_unlock();
	return n;
}

/* Whether the objects of key are exactly want[0..n), in any order. */
static bool rhl_is(struct rhltable *hlt, int key, struct lobj **want, int n)
{
	struct lobj *got[16];
	int m = rhl_collect(hlt, key, got, 16);

	if (m != n)
		return false;
	for (int i = 0; i < n; i++) {
		int hits = 0;

		for (int j = 0; j < m; j++)
			hits += got[j] == want[i];
		if (hits != 1)
			return false;
	}
	return true;
}

static void rhl_init_ok(struct rhltable *hlt, const struct rhashtable_params *p)
{
	int err = rhltable_init(hlt, p);

	cr_assert_eq(err, 0, "rhltable_init: %d", err);
}

Test(rhltable, init_rejects_inconsistent_params)
{
	struct rhashtable_params p;

	cr_assert_eq(try_rhl_init(lparams), 0);
	p = lparams;
	p.key_len = 0;
	cr_assert_eq(try_rhl_init(p), -EINVAL);
	p = lparams;
	p.obj_hashfn = obj_int_hash;
	cr_assert_eq(try_rhl_init(p), -EINVAL);
	p = lparams;
	p.head_offset = 12;
	p.key_offset = 0;
	cr_assert_eq(try_rhl_init(p), -EINVAL);
	p = lparams;
	p.min_size = 64;
	p.max_size = 32;
	cr_assert_eq(try_rhl_init(p), -EINVAL);
	/* An rhlist_head is two pointers: a key in its second half overlaps
	 * in an rhltable but not in an rhashtable. */
	p = lparams;
	p.head_offset = 8;
	p.key_offset = 16;
	cr_assert_eq(try_rhl_init(p), -EINVAL);
	cr_assert_eq(try_init(p), 0);
	p.key_offset = 24;
	cr_assert_eq(try_rhl_init(p), 0);
}

Test(rhltable, insert_lookup_remove)
{
	struct rhltable hlt;
	struct lobj a = { .key = 1, .value = 1 }, b = { .key = 1, .value = 2 };
	struct lobj c = { .key = 1, .value = 3 }, d = { .key = 2, .value = 4 };
	struct lobj stranger = { .key = 1 };
	int k3 = 3;

	rhl_init_ok(&hlt, &lparams);
	cr_assert_eq(rhltable_insert(&hlt, &a.node, lparams), 0);
	cr_assert_eq(rhltable_insert(&hlt, &b.node, lparams), 0);
	cr_assert_eq(rhltable_insert(&hlt, &c.node, lparams), 0);
	cr_assert_eq(rhltable_insert(&hlt, &d.node, lparams), 0);
	cr_assert_eq(rhashtable_nelems(&hlt.ht), 4, "nelems counts objects");
	cr_assert(rhl_is(&hlt, 1, (struct lobj *[]){ &a, &b, &c }, 3));
	cr_assert(rhl_is(&hlt, 2, (struct lobj *[]){ &d }, 1));
	rhkv_rcu_read_lock();
	cr_assert_null(rhltable_lookup(&hlt, &k3, lparams));
	rhkv_rcu_read_unlock();

	/* Absent objects: never inserted, and of a key with no list. */
	cr_assert_eq(rhltable_remove(&hlt, &stranger.node, lparams), -ENOENT);
	stranger.key = 3;
	cr_assert_eq(rhltable_remove(&hlt, &stranger.node, lparams), -ENOENT);

	/* The middle of the list (b), then the chain entry, then the last. */
	cr_assert_eq(rhltable_remove(&hlt, &b.node, lparams), 0);
	cr_assert_eq(rhltable_remove(&hlt, &b.node, lparams), -ENOENT);
	cr_assert(rhl_is(&hlt, 1, (struct lobj *[]){ &a, &c }, 2));
	cr_assert_eq(rhltable_remove(&hlt, &c.node, lparams), 0);
	cr_assert(rhl_is(&hlt, 1, (struct lobj *[]){ &a }, 1));
	cr_assert_eq(rhltable_remove(&hlt, &a.node, lparams), 0);
	cr_assert(rhl_is(&hlt, 1, NULL, 0));
	cr_assert(rhl_is(&hlt, 2, (struct lobj *[]){ &d }, 1));
	cr_assert_eq(rhashtable_nelems(&hlt.ht), 1);
	/* Removed objects can come back. */
	cr_assert_eq(rhltable_insert(&hlt, &b.node, lparams), 0);
	cr_assert(rhl_is(&hlt, 1, (struct lobj *[]){ &b }, 1));
	rhltable_destroy(&hlt);
}

/* Removing each member position of lists of 1..5 objects. */
Test(rhltable, remove_every_position)
{
	struct rhltable hlt;
	struct lobj o[5];

	rhl_init_ok(&hlt, &lparams);
	for (int len = 1; len <= 5; len++) {
		for (int victim = 0; victim < len; victim++) {
			struct lobj *want[5];
			int n = 0;

			for (int i = 0; i < len; i++) {
				o[i].key = 9;
				o[i].value = i;
				cr_assert_eq(rhltable_insert(&hlt, &o[i].node,
							     lparams),
					     0);
			}
			cr_assert_eq(
				rhltable_remove(&hlt, &o[victim].node, lparams),
				0);
			for (int i = 0; i < len; i++)
				if (i != victim)
					want[n++] = &o[i];
			cr_assert(rhl_is(&hlt, 9, want, n),
				  "list of %d without member %d", len, victim);
			for (int i = 0; i < n; i++)
				cr_assert_eq(rhltable_remove(&hlt,
							     &want[i]->node,
							     lparams),
					     0);
			cr_assert(rhl_is(&hlt, 9, NULL, 0));
			cr_assert_eq(rhashtable_nelems(&hlt.ht), 0);
		}
	}
	rhltable_destroy(&hlt);
}

struct lsobj {
	const char *name;
	struct rhlist_head node;
};

static uint32_t lsobj_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct lsobj *o = data;

	return str_hash(o->name, len, seed);
}

static int lsobj_cmp(struct rhashtable_compare_arg *arg, const void *data)
{
	const struct lsobj *o = data;

	return strcmp(o->name, arg->key) != 0;
}

Test(rhltable, insert_key_with_obj_hashfn)
{
	static const struct rhashtable_params lsparams = {
		.head_offset = offsetof(struct lsobj, node),
		.hashfn = str_hash,
		.obj_hashfn = lsobj_hash,
		.obj_cmpfn = lsobj_cmp,
	};
	char n1[] = "x", n2[] = "x", n3[] = "y";
	struct lsobj a = { .name = n1 }, b = { .name = n2 }, c = { .name = n3 };
	struct rhlist_head *list, *pos;
	struct lsobj *o;
	struct rhltable hlt;
	int count_x = 0;

	rhl_init_ok(&hlt, &lsparams);
	cr_assert_eq(rhltable_insert_key(&hlt, a.name, &a.node, lsparams), 0);
	cr_assert_eq(rhltable_insert_key(&hlt, b.name, &b.node, lsparams), 0);
	cr_assert_eq(rhltable_insert_key(&hlt, c.name, &c.node, lsparams), 0);
	rhkv_rcu_read_lock();
	list = rhltable_lookup(&hlt, "x", lsparams);
	rhl_for_each_entry_rcu (o, pos, list, node) {
		cr_assert(o == &a || o == &b);
		count_x++;
	}
	cr_assert_eq(count_x, 2);
	list = rhltable_lookup(&hlt, "y", lsparams);
	cr_assert_not_null(list);
	cr_assert_null(rhl__next(list));
	cr_assert_null(rhltable_lookup(&hlt, "z", lsparams));
	rhkv_rcu_read_unlock();
	cr_assert_eq(rhltable_remove(&hlt, &a.node, lsparams), 0);
	rhkv_rcu_read_lock();
	list = rhltable_lookup(&hlt, "x", lsparams);
	cr_assert_eq(list, &b.node);
	cr_assert_null(rhl__next(list));
	rhkv_rcu_read_unlock();
	rhltable_destroy(&hlt);
}

/* Lists survive grows; every object of every key is still listed. */
Test(rhltable, lists_survive_grows)
{
	enum { KEYS = 1500, PER_KEY = 3, N = KEYS * PER_KEY };
	struct rhashtable_params p = lparams;
	struct lobj *o = calloc(N, sizeof(*o));
	struct rhltable hlt;

	cr_assert_not_null(o);
	p.nelem_hint = 8;
	rhl_init_ok(&hlt, &p);
	for (int i = 0; i < N; i++) {
		o[i].key = i % KEYS;
		o[i].value = i;
		cr_assert_eq(rhltable_insert(&hlt, &o[i].node, p), 0);
	}
	wait_grown(&hlt.ht);
	cr_assert_eq(rhashtable_nelems(&hlt.ht), N);
	for (int k = 0; k < KEYS; k++)
		cr_assert(rhl_is(&hlt, k,
				 (struct lobj *[]){ &o[k], &o[k + KEYS],
						    &o[k + 2 * KEYS] },
				 3),
			  "key %d", k);
	/* Remove the middle object of each key. */
	for (int k = 0; k < KEYS; k++)
		cr_assert_eq(rhltable_remove(&hlt, &o[k + KEYS].node, p), 0);
	for (int k = 0; k < KEYS; k++)
		cr_assert(rhl_is(&hlt, k,
				 (struct lobj *[]){ &o[k], &o[k + 2 * KEYS] },
				 2),
			  "key %d", k);
	rhltable_destroy(&hlt);
	free(o);
}

Test(rhltable, new_key_at_bound_gives_e2big)
{
	struct rhashtable_params p = lparams;
	struct lobj o[9];
	struct rhltable hlt;

	p.max_size = 4; /* bound: 8 objects */
	rhl_init_ok(&hlt, &p);
	for (int i = 0; i < 9; i++)
		o[i].key = i;
	for (int i = 0; i < 8; i++)
		cr_assert_eq(rhltable_insert(&hlt, &o[i].node, p), 0);
	cr_assert_eq(rhltable_insert(&hlt, &o[8].node, p), -E2BIG);
	cr_assert(rhl_is(&hlt, 8, NULL, 0));
	rhltable_destroy(&hlt);
}

static int lobj_calls, lobj_wrong_arg;
static int lobj_seen[64];

static void lobj_free(void *ptr, void *arg)
{
	struct lobj *o = ptr;

	if (arg != &lobj_calls) {
		lobj_wrong_arg++;
		return;
	}
	lobj_calls++;
	lobj_seen[o->value]++;
	free(o);
}

Test(rhltable, free_and_destroy_frees_every_list_member)
{
	struct rhltable hlt;

	rhl_init_ok(&hlt, &lparams);
	/* 64 objects: keys 0..7, eight objects each. */
	for (int i = 0; i < 64; i++) {
		struct lobj *o = malloc(sizeof(*o));

		cr_assert_not_null(o);
		o->key = i % 8;
		o->value = i;
		cr_assert_eq(rhltable_insert(&hlt, &o->node, lparams), 0);
	}
	rhltable_free_and_destroy(&hlt, lobj_free, &lobj_calls);
	cr_assert_eq(lobj_wrong_arg, 0);
	cr_assert_eq(lobj_calls, 64);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(lobj_seen[i], 1, "object %d freed %d times", i,
			     lobj_seen[i]);
}

Test(rhltable, destroy_leaves_objects_alone)
{
	struct rhltable hlt;
	struct lobj *o = calloc(32, sizeof(*o));

	cr_assert_not_null(o);
	rhl_init_ok(&hlt, &lparams);
	for (int i = 0; i < 32; i++) {
		o[i].key = i % 4;
		o[i].value = i;
		cr_assert_eq(rhltable_insert(&hlt, &o[i].node, lparams), 0);
	}
	rhltable_destroy(&hlt);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(o[i].value, i);
	free(o);
}
