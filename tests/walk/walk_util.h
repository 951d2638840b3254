/*
 * What the walker, scan and rhltable tests share: an object type carrying
 * its key, table parameters (default hash, or a forced-collision hash that
 * ignores the seed), clocks, and bounded polling for the resize worker.
 */
#ifndef RHKV_TESTS_WALK_WALK_UTIL_H
#define RHKV_TESTS_WALK_WALK_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "common/rcu.h"
#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"
#include "tests/common/test_util.h"

#define WOBJ_MAGIC 0x5ca11ed5u

/* An object that carries its key, so whoever finds it can check it. */
struct wobj {
	uint32_t key;
	uint32_t magic; /* WOBJ_MAGIC while allocated */
	struct rhash_head node;
	struct rcu_head rcu;
};

static inline struct wobj *wobj_new(uint32_t key)
{
	struct wobj *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->key = key;
	o->magic = WOBJ_MAGIC;
	return o;
}

static inline void wobj_free(struct wobj *o)
{
	o->magic = 0;
	free(o);
}

static inline void wobj_free_rcu_cb(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	wobj_free((struct wobj *)((char *)head - offsetof(struct wobj, rcu)));
}

/* Frees a removed object after a grace period. */
static inline void wobj_free_rcu(struct wobj *o)
{
	rhkv_rcu_call(&o->rcu, wobj_free_rcu_cb);
}

/* free_fn for free_and_destroy; arg, if not NULL, counts the calls. */
static inline void wobj_free_fn(void *ptr, void *arg)
{
	if (arg)
		(*(unsigned long *)arg)++;
	wobj_free(ptr);
}

/*
 * Inserts new objects with keys first .. first + n - 1 (lookup_insert).
 * Returns them, or NULL if an insert failed.
 */
static inline struct wobj **wobj_insert_range(struct rhashtable *ht,
					      struct rhashtable_params params,
					      uint32_t first, uint32_t n)
{
	struct wobj **objs = calloc(n, sizeof(*objs));

	if (!objs)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		objs[i] = wobj_new(first + i);
		if (rhashtable_lookup_insert_fast(ht, &objs[i]->node, params)) {
			wobj_free(objs[i]);
			free(objs);
			return NULL;
		}
	}
	return objs;
}

/* Maps every key to one of 8 hash values, whatever the seed. */
static inline uint32_t wobj_collide_hash(const void *data, uint32_t len,
					 uint32_t seed)
{
	(void)len;
	(void)seed;
	return *(const uint32_t *)data % 8;
}

static const struct rhashtable_params wobj_params = {
	.key_len = sizeof(uint32_t),
	.key_offset = offsetof(struct wobj, key),
	.head_offset = offsetof(struct wobj, node),
};

static const struct rhashtable_params wobj_collide_params = {
	.key_len = sizeof(uint32_t),
	.key_offset = offsetof(struct wobj, key),
	.head_offset = offsetof(struct wobj, node),
	.hashfn = wobj_collide_hash,
};

/*
 * Polls cond every millisecond until it holds or timeout_ms have passed;
 * evaluates to cond's final value.
 */
#define WALK_WAIT_FOR(cond, timeout_ms)                           \
	__extension__({                                           \
		int64_t deadline_ = test_now_ms() + (timeout_ms); \
		while (!(cond) && test_now_ms() < deadline_)      \
			test_sleep_ms(1);                         \
		(bool)(cond);                                     \
	})

static inline struct rhashtable_stats walk_stats(struct rhashtable *ht)
{
	struct rhashtable_stats st;

	rhashtable_get_stats(ht, &st);
	return st;
}

/*
 * Waits until the worker has finished `grows` grows, `shrinks` shrinks and
 * `reseeds` re-seeds in all and is not resizing. Returns whether it did
 * within timeout_ms.
 */
static inline bool walk_wait_resizes(struct rhashtable *ht, unsigned long grows,
				     unsigned long shrinks,
				     unsigned long reseeds, long timeout_ms)
{
	int64_t deadline = test_now_ms() + timeout_ms;

	for (;;) {
		struct rhashtable_stats st = walk_stats(ht);

		if (st.grows >= grows && st.shrinks >= shrinks &&
		    st.reseeds >= reseeds && !st.resizing)
			return true;
		if (test_now_ms() > deadline)
			return false;
		test_sleep_ms(1);
	}
}

/*
 * Whether the worker has nothing left to do: no resize running and none
 * due at the current load (exact when no writer runs).
 */
static inline bool walk_settled(struct rhashtable *ht)
{
	struct rhashtable_stats st = walk_stats(ht);

	if (st.resizing)
		return false;
	if (st.nelems > st.size / 4 * 3 && st.size < ht->p.max_size)
		return false;
	return !(ht->p.automatic_shrinking && st.nelems < st.size * 3ul / 10 &&
		 st.size > ht->p.min_size);
}

/* Where the worker's published count of moved buckets stops while the
 * last bucket of tbl is held: the start of the last stride (see
 * bucket_table.moved), never past the held bucket. */
static inline unsigned int walk_last_stride(const struct bucket_table *tbl)
{
	return tbl->mask & ~(RHT_MOVED_STRIDE - 1);
}

/*
 * Whether the worker has moved every bucket of tbl but the last, whose lock
 * the caller holds (so the resize stays in flight). The count it publishes
 * only advances a stride at a time, so it says that of the buckets below
 * the last stride; the rest of that stride is seen moved by being empty (a
 * bucket the worker moved stays empty, nothing inserts into it). Needs the
 * RCU read lock, which keeps tbl.
 */
static inline bool walk_all_but_last_moved(struct bucket_table *tbl)
{
	unsigned int from = walk_last_stride(tbl);

	if (!rht__future(tbl) ||
	    atomic_load_explicit(&tbl->moved, memory_order_acquire) < from)
		return false;
	for (unsigned int i = from; i < tbl->mask; i++)
		if (rht__bucket_first(&tbl->buckets[i]))
			return false;
	return true;
}

#endif
