/*
 * Unit tests of common/rhashtable's public API, one function after another
 * with its error paths: err.h, init and its parameter checks, destroy and
 * free_and_destroy (also during a resize), the inserts, lookups, removal
 * and replace, string keys hashed with obj_hashfn, and the debug assertion
 * against inserting an object twice.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_rhashtable_util.h"

TestSuite(err);

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

static int obj_int_cmp(struct rhashtable_compare_arg *arg, const void *data)
{
	const struct obj *o = data;

	return o->key != *(const int *)arg->key;
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

/* ---- destroy ---- */

Test(rhashtable, destroy_leaves_objects_alone)
{
	struct rhashtable ht;
	struct obj *o = objs_new(300);

	init_ok(&ht, &params);
	insert_all(&ht, o, 300, params);
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

static unsigned int chain_entries(struct bucket_table *tbl)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < tbl->size; i++)
		for (struct rhash_head *he =
			     rht__bucket_first(&tbl->buckets[i]);
		     he; he = rht__next(he))
			n++;
	return n;
}

/*
 * Whether a grow is running with entries in both tables. The count of
 * moved buckets the worker publishes advances a stride at a time (the
 * whole of a small table): it may only be a multiple of the stride, or
 * the size once every bucket has moved.
 */
static bool half_moved(struct rhashtable *ht)
{
	struct bucket_table *tbl, *next;
	unsigned int moved;
	bool ret;

	rhkv_rcu_read_lock();
	tbl = rht__first_table(ht);
	next = rht__future(tbl);
	moved = atomic_load(&tbl->moved);
	cr_assert(moved % RHT_MOVED_STRIDE == 0 || moved == tbl->size,
		  "%u of %u buckets published moved", moved, tbl->size);
	ret = next && chain_entries(tbl) && chain_entries(next);
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

/* grow_above_pct moves the growth point: 1024 objects fill 1024 buckets
 * at 100% and need 2048 at the kernel's 75%; above 400 is refused. */
Test(rhashtable, grow_above_pct)
{
	struct rhashtable_params p = params;
	struct rhashtable ht;
	struct obj *o;

	p.nelem_hint = 8;
	p.grow_above_pct = 100;
	o = objs_new(1024);
	init_ok(&ht, &p);
	insert_all(&ht, o, 1024, p);
	wait_size(&ht, 1024);
	rhashtable_destroy(&ht);
	p.grow_above_pct = 0;
	init_ok(&ht, &p);
	insert_all(&ht, o, 1024, p);
	wait_size(&ht, 2048);
	rhashtable_destroy(&ht);
	p.grow_above_pct = 401;
	cr_assert_eq(rhashtable_init(&ht, &p), -EINVAL);
	free(o);
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
	insert_all(&ht, o, 100, params);
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
	insert_all(&ht, o, 64, params);
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
