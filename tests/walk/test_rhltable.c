/*
 * Criterion tests of the rhltable against a model: random inserts and
 * removes with a forced-collision hash (a few hash values for all keys,
 * whatever the seed) and several objects per key; after each batch every
 * key's list is exactly the model's set. Removing an absent object gives
 * -ENOENT; free_and_destroy frees every object once.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walk_util.h"

TestSuite(rhltable, .init = rhkv_rcu_register_thread,
	  .fini = rhkv_rcu_unregister_thread, .timeout = 60);

enum { KEYS = 40, MAX_OBJS = 4000 };

enum lobj_state { L_NEW, L_IN, L_REMOVED };

struct lobj {
	uint32_t key;
	uint32_t id;
	struct rhlist_head node;
	struct rcu_head rcu;
	enum lobj_state state; /* the model */
	unsigned int listed;   /* model_check: found in its key's list */
	unsigned int freed;    /* free_fn calls */
};

/* All keys on 3 hash values, whatever the seed: long chains of lists. */
static uint32_t collide3(const void *data, uint32_t len, uint32_t seed)
{
	(void)len;
	(void)seed;
	return *(const uint32_t *)data % 3;
}

/* The same through obj_hashfn/obj_cmpfn (key_len 0 needs a key hashfn). */
static uint32_t collide3_obj(const void *data, uint32_t len, uint32_t seed)
{
	const struct lobj *o = data;

	(void)len;
	(void)seed;
	return o->key % 3;
}

static int lobj_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct lobj *o = obj;

	return o->key == *(const uint32_t *)arg->key ? 0 : -ESRCH;
}

static const struct rhashtable_params key_len_params = {
	.key_len = sizeof(uint32_t),
	.key_offset = offsetof(struct lobj, key),
	.head_offset = offsetof(struct lobj, node),
	.hashfn = collide3,
	.automatic_shrinking = true,
};

static const struct rhashtable_params obj_fn_params = {
	.head_offset = offsetof(struct lobj, node),
	.hashfn = collide3,
	.obj_hashfn = collide3_obj,
	.obj_cmpfn = lobj_cmp,
	.automatic_shrinking = true,
};

struct model {
	struct rhltable hlt;
	struct rhashtable_params params;
	struct lobj *objs[MAX_OBJS]; /* by id; NULL once removed */
	unsigned int nobjs, in_table;
	unsigned int seed;
};

static void lobj_free_cb(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	free((char *)head - offsetof(struct lobj, rcu));
}

static unsigned int rnd(struct model *m, unsigned int n)
{
	return (unsigned int)rand_r(&m->seed) % n;
}

static void model_insert(struct model *m)
{
	struct lobj *o = calloc(1, sizeof(*o));
	uint32_t key;

	cr_assert(o);
	key = rnd(m, KEYS);
	o->key = key;
	o->id = m->nobjs;
	/* Both insert forms; with obj_hashfn only the _key form knows the
	 * lookup key. */
	if (m->params.key_len && rnd(m, 2))
		cr_assert_eq(rhltable_insert(&m->hlt, &o->node, m->params), 0);
	else
		cr_assert_eq(
			rhltable_insert_key(&m->hlt, &key, &o->node, m->params),
			0);
	o->state = L_IN;
	m->objs[m->nobjs++] = o;
	m->in_table++;
}

/* Removes a random object of the table, if any; -ENOENT on a second try. */
static void model_remove(struct model *m)
{
	unsigned int id;
	struct lobj *o;

	if (!m->in_table)
		return;
	do
		id = rnd(m, m->nobjs);
	while (!m->objs[id]);
	o = m->objs[id];
	cr_assert_eq(rhltable_remove(&m->hlt, &o->node, m->params), 0);
	o->state = L_REMOVED;
	m->objs[id] = NULL;
	m->in_table--;
	/* Still allocated (freed after a grace period): absent now. */
	cr_assert_eq(rhltable_remove(&m->hlt, &o->node, m->params), -ENOENT);
	rhkv_rcu_call(&o->rcu, lobj_free_cb);
}

/* Every key's list is exactly the model's set for the key. */
static void model_check(struct model *m)
{
	unsigned int found = 0;

	rhkv_rcu_read_lock();
	for (uint32_t key = 0; key < KEYS + 5; key++) {
		struct rhlist_head *list, *pos;
		struct lobj *o;
		unsigned int want = 0, got = 0;

		list = rhltable_lookup(&m->hlt, &key, m->params);
		rhl_for_each_entry_rcu (o, pos, list, node) {
			cr_assert_eq(o->key, key, "key %u's list has key %u",
				     key, o->key);
			cr_assert_eq(o->state, L_IN,
				     "key %u's list has removed object %u", key,
				     o->id);
			cr_assert_eq(o->listed, 0, "object %u listed twice",
				     o->id);
			o->listed = 1;
			got++;
		}
		for (unsigned int i = 0; i < m->nobjs; i++) {
			struct lobj *x = m->objs[i];

			if (!x || x->key != key)
				continue;
			want++;
			cr_assert_eq(x->listed, 1, "key %u: object %u missing",
				     key, x->id);
			x->listed = 0;
		}
		cr_assert_eq(got, want, "key %u: %u listed, %u in the model",
			     key, got, want);
		if (!want)
			cr_assert_null(list, "key %u: a list for no object",
				       key);
		found += got;
	}
	rhkv_rcu_read_unlock();
	cr_assert_eq(found, m->in_table);
	cr_assert_eq(rhashtable_nelems(&m->hlt.ht), m->in_table);
}

static void lobj_free_fn(void *ptr, void *arg)
{
	struct lobj *o = ptr;

	cr_assert_eq(o->state, L_IN, "free_fn on object %u not in the table",
		     o->id);
	cr_assert_eq(o->freed, 0, "free_fn twice on object %u", o->id);
	o->freed = 1;
	(*(unsigned int *)arg)++;
}

static void run_model(const struct rhashtable_params *params, unsigned int seed)
{
	struct model *m = calloc(1, sizeof(*m));
	struct lobj never = { .key = 1, .id = MAX_OBJS };
	unsigned int freed = 0;

	cr_assert(m);
	m->params = *params;
	m->seed = seed;
	cr_assert_eq(rhltable_init(&m->hlt, params), 0);

	/* Batches that grow the table, then ones that shrink it. */
	for (unsigned int batch = 0; batch < 80; batch++) {
		unsigned int insert_pct = batch < 40 ? 70 : 30;

		for (unsigned int op = 0; op < 50; op++) {
			if (rnd(m, 100) < insert_pct && m->nobjs < MAX_OBJS)
				model_insert(m);
			else
				model_remove(m);
		}
		cr_assert_eq(rhltable_remove(&m->hlt, &never.node, m->params),
			     -ENOENT);
		model_check(m);
		/* The worker grows the table in the background: on a busy
		 * machine it may not have run yet when the growing batches
		 * end, so wait for it before counting its grows. */
		if (batch == 39) {
			int64_t deadline = test_now_ms() + 30000;

			while (!walk_settled(&m->hlt.ht) &&
			       test_now_ms() < deadline)
				test_sleep_ms(1);
		}
	}
	fprintf(stderr,
		"rhltable model: %u objects, %u left, %lu grows, "
		"%lu shrinks\n",
		m->nobjs, m->in_table, walk_stats(&m->hlt.ht).grows,
		walk_stats(&m->hlt.ht).shrinks);
	cr_assert_gt(walk_stats(&m->hlt.ht).grows, 0);

	rhltable_free_and_destroy(&m->hlt, lobj_free_fn, &freed);
	cr_assert_eq(freed, m->in_table);
	for (unsigned int i = 0; i < m->nobjs; i++) {
		struct lobj *o = m->objs[i];

		if (!o)
			continue; /* freed by its RCU callback */
		cr_assert_eq(o->freed, 1, "object %u not freed", o->id);
		free(o);
	}
	rhkv_rcu_barrier();
	free(m);
}

Test(rhltable, model_key_len)
{
	run_model(&key_len_params, 1);
}

Test(rhltable, model_obj_hashfn)
{
	run_model(&obj_fn_params, 2);
}

/* Removing the chain entry of a list, a middle member and the last one. */
Test(rhltable, remove_each_list_position)
{
	struct rhltable hlt;
	struct lobj *o[4];
	static const int order[] = { 3, 1, 0, 2 };
	uint32_t key = 7;

	cr_assert_eq(rhltable_init(&hlt, &key_len_params), 0);
	for (int i = 0; i < 4; i++) {
		o[i] = calloc(1, sizeof(*o[i]));
		cr_assert(o[i]);
		o[i]->key = key;
		o[i]->id = (uint32_t)i;
		cr_assert_eq(rhltable_insert(&hlt, &o[i]->node, key_len_params),
			     0);
	}
	/* The newest is the chain entry: list o3 o2 o1 o0. */
	for (int i = 0; i < 4; i++) {
		struct rhlist_head *list, *pos;
		struct lobj *x;
		unsigned int n = 0;

		cr_assert_eq(rhltable_remove(&hlt, &o[order[i]]->node,
					     key_len_params),
			     0);
		cr_assert_eq(rhltable_remove(&hlt, &o[order[i]]->node,
					     key_len_params),
			     -ENOENT);
		o[order[i]]->state = L_REMOVED;
		rhkv_rcu_read_lock();
		list = rhltable_lookup(&hlt, &key, key_len_params);
		rhl_for_each_entry_rcu (x, pos, list, node) {
			cr_assert_neq(x->state, L_REMOVED);
			n++;
		}
		rhkv_rcu_read_unlock();
		cr_assert_eq(n, 3u - (unsigned int)i);
		rhkv_rcu_call(&o[order[i]]->rcu, lobj_free_cb);
	}
	rhkv_rcu_barrier();
	rhltable_destroy(&hlt);
}
