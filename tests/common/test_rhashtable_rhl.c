/*
 * Unit tests of the rhltable basics in common/rhashtable: parameter checks,
 * insert, lookup and removal at every list position, string keys hashed
 * with obj_hashfn, lists across grows, the element bound, and destroy.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "test_rhashtable_util.h"

TestSuite(rhltable, .init = test_rcu_init, .fini = test_rcu_fini,
	  .timeout = 60);

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

static int try_rhl_init(struct rhashtable_params p)
{
	struct rhltable hlt;
	int err = rhltable_init(&hlt, &p);

	if (!err)
		rhltable_destroy(&hlt);
	return err;
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
