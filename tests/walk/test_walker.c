/*
 * Criterion tests of the walker (rhashtable_walk_*): what one start..stop
 * section returns with concurrent writers, exact resumption after stop and
 * start, -EAGAIN after a resize (while stopped, or while started), peek,
 * and rhltable walks over every list member.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walk_util.h"

TestSuite(walker, .init = rhkv_rcu_register_thread,
	  .fini = rhkv_rcu_unregister_thread, .timeout = 60);

static struct wobj **fill(struct rhashtable *ht,
			  struct rhashtable_params params, uint32_t first,
			  uint32_t n)
{
	struct wobj **objs = wobj_insert_range(ht, params, first, n);

	cr_assert_not_null(objs, "inserting keys %u..%u failed", first,
			   first + n - 1);
	return objs;
}

/* A whole walk in one start..stop section, nothing changing: no -EAGAIN. */
static unsigned int walk_once(struct rhashtable *ht, void **out,
			      unsigned int cap)
{
	struct rhashtable_iter iter;
	unsigned int n = 0;
	void *obj;

	rhashtable_walk_enter(ht, &iter);
	rhashtable_walk_start(&iter);
	while ((obj = rhashtable_walk_next(&iter))) {
		cr_assert(!IS_ERR(obj), "walk_next: %ld", PTR_ERR(obj));
		cr_assert_lt(n, cap);
		out[n++] = obj;
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	return n;
}

/* Asserts that objs[0..n) holds n distinct objects. */
static void assert_distinct(void **objs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = i + 1; j < n; j++)
			cr_assert_neq(objs[i], objs[j],
				      "returned twice: %u, %u", i, j);
}

/* ---- one section, concurrent writers ---- */

enum { OTHER_BASE = 1u << 20, WRITER_BATCH = 20000 };

struct writer {
	struct rhashtable *ht;
	atomic_bool stop;
	_Atomic uint32_t hwm; /* keys below it may have been inserted */
	atomic_ulong ops;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct wobj **batch = calloc(WRITER_BATCH, sizeof(*batch));
	uint32_t next = OTHER_BASE;

	if (!batch)
		abort();
	rhkv_rcu_register_thread();
	while (!atomic_load(&w->stop)) {
		/* release: pairs with the walker's acquire of hwm. */
		atomic_store_explicit(&w->hwm, next + WRITER_BATCH,
				      memory_order_release);
		for (uint32_t i = 0; i < WRITER_BATCH; i++) {
			batch[i] = wobj_new(next + i);
			if (rhashtable_insert_fast(w->ht, &batch[i]->node,
						   wobj_params))
				abort();
		}
		for (uint32_t i = 0; i < WRITER_BATCH; i++) {
			if (rhashtable_remove_fast(w->ht, &batch[i]->node,
						   wobj_params))
				abort();
			wobj_free_rcu(batch[i]);
		}
		next += WRITER_BATCH;
		atomic_fetch_add(&w->ops, 2 * WRITER_BATCH);
	}
	rhkv_rcu_unregister_thread();
	free(batch);
	return NULL;
}

/*
 * While another thread inserts and removes other keys (growing and
 * shrinking the table), a walk in one start..stop section returns every
 * object present throughout, and nothing that was never inserted.
 */
Test(walker, one_section_returns_all_present_with_writers)
{
	enum { STABLE = 2000, MIN_WALKS = 40 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_params;
	struct writer w = { .ht = &ht };
	unsigned int *seen = calloc(STABLE, sizeof(*seen));
	unsigned long walks = 0, eagain_walks = 0, overlapped = 0;
	int64_t end = test_now_ms() + 1000;
	pthread_t thread;

	cr_assert(seen);
	params.automatic_shrinking = true;
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(fill(&ht, params, 0, STABLE));
	pthread_create(&thread, NULL, writer_main, &w);

	/* A second, then on until a resize has hit a walk (4 s at most). */
	while (walks < MIN_WALKS || test_now_ms() < end ||
	       (!eagain_walks && test_now_ms() < end + 4000)) {
		struct rhashtable_iter iter;
		unsigned long ops = atomic_load(&w.ops);
		unsigned int eagain = 0;
		void *obj;

		memset(seen, 0, STABLE * sizeof(*seen));
		rhashtable_walk_enter(&ht, &iter);
		rhashtable_walk_start(&iter);
		while ((obj = rhashtable_walk_next(&iter))) {
			struct wobj *o = obj;
			uint32_t hwm;

			if (IS_ERR(obj)) {
				cr_assert_eq(PTR_ERR(obj), -EAGAIN);
				eagain++;
				continue;
			}
			cr_assert_eq(o->magic, WOBJ_MAGIC);
			if (o->key < STABLE) {
				seen[o->key]++;
				continue;
			}
			hwm = atomic_load_explicit(&w.hwm,
						   memory_order_acquire);
			cr_assert(o->key >= OTHER_BASE && o->key < hwm,
				  "walk returned never-inserted key %u",
				  o->key);
		}
		rhashtable_walk_stop(&iter);
		rhashtable_walk_exit(&iter);
		for (uint32_t k = 0; k < STABLE; k++)
			cr_assert_geq(seen[k], 1, "walk %lu missed key %u",
				      walks, k);
		walks++;
		eagain_walks += eagain > 0;
		overlapped += atomic_load(&w.ops) != ops;
	}
	atomic_store(&w.stop, true);
	pthread_join(thread, NULL);
	fprintf(stderr,
		"%lu walks, %lu overlapping writes, %lu with -EAGAIN, "
		"%lu grows, %lu shrinks\n",
		walks, overlapped, eagain_walks, walk_stats(&ht).grows,
		walk_stats(&ht).shrinks);
	cr_assert_gt(overlapped, 0, "the writer never ran during a walk");
	cr_assert_gt(eagain_walks, 0, "no resize during a walk");
	rhkv_rcu_barrier();
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
	free(seen);
}

/* ---- resumption ---- */

/*
 * With nothing changing, a walk that stops and starts after every object
 * returns each object exactly once, in the order of a walk without stops:
 * each object after a resume is the successor of the last one. peek gives
 * the last object before and after the stop.
 */
static void check_resume_every_object(struct rhashtable_params params)
{
	enum { N = 40 };
	struct rhashtable ht;
	struct rhashtable_iter iter;
	void *ref[N + 1];
	unsigned int i;
	void *obj;

	params.nelem_hint = 100; /* 256 buckets: no resize */
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(fill(&ht, params, 0, N));
	cr_assert_eq(walk_once(&ht, ref, N + 1), N);
	assert_distinct(ref, N);

	rhashtable_walk_enter(&ht, &iter);
	cr_assert_eq(rhashtable_walk_start_check(&iter), 0);
	for (i = 0; (obj = rhashtable_walk_next(&iter)); i++) {
		cr_assert_lt(i, N);
		cr_assert_eq(obj, ref[i], "object %u is not the successor", i);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
		rhashtable_walk_stop(&iter);
		cr_assert_eq(rhashtable_walk_start_check(&iter), 0);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
	}
	cr_assert_eq(i, N);
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

Test(walker, resume_after_every_object_default_hash)
{
	check_resume_every_object(wobj_params);
}

/* Chains of 5: resumption inside chains, not only between buckets. */
Test(walker, resume_after_every_object_long_chains)
{
	check_resume_every_object(wobj_collide_params);
}

/*
 * While the walk is stopped, an object with the same hash goes in at the
 * head of the last object's chain, ahead of it: the walk still resumes
 * right after the last object (a resume by count would return it again),
 * and the result is the walk without stops.
 */
Test(walker, resume_after_inserts_ahead_in_chain)
{
	enum { N = 40 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_collide_params;
	struct rhashtable_iter iter;
	void *ref[N + 1];
	unsigned int i;
	void *obj;

	params.nelem_hint = 100; /* 256 buckets, 8 used: no resize */
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(fill(&ht, params, 0, N));
	cr_assert_eq(walk_once(&ht, ref, N + 1), N);

	rhashtable_walk_enter(&ht, &iter);
	rhashtable_walk_start(&iter);
	for (i = 0; (obj = rhashtable_walk_next(&iter)); i++) {
		struct wobj *o = obj, *ahead;

		cr_assert_lt(i, N, "returned an object inserted ahead");
		cr_assert_eq(obj, ref[i], "object %u is not the successor", i);
		rhashtable_walk_stop(&iter);
		/* Same hash (key % 8), pushed at the head of o's chain. */
		ahead = wobj_new(1000 + 8 * i + o->key % 8);
		cr_assert_eq(rhashtable_insert_fast(&ht, &ahead->node, params),
			     0);
		rhashtable_walk_start(&iter);
	}
	cr_assert_eq(i, N);
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	cr_assert_eq(walk_stats(&ht).grows + walk_stats(&ht).reseeds, 0);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/*
 * The documented case of a last object removed while stopped: the walk
 * resumes at the same count of objects into the bucket. Chain 0, 8, 16, 24;
 * after 0 and 8, 8 goes: the walk goes on with the third object, 24 (16 is
 * skipped, as the header says it may be), and never returns 8.
 */
Test(walker, resume_after_last_object_removed)
{
	struct rhashtable ht;
	struct rhashtable_params params = wobj_collide_params;
	struct rhashtable_iter iter;
	struct wobj *objs[4];
	struct wobj *o;

	params.nelem_hint = 100;
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	for (int i = 3; i >= 0; i--) { /* head inserts: chain 0 8 16 24 */
		objs[i] = wobj_new(8 * (uint32_t)i);
		cr_assert_eq(
			rhashtable_insert_fast(&ht, &objs[i]->node, params), 0);
	}
	rhashtable_walk_enter(&ht, &iter);
	rhashtable_walk_start(&iter);
	cr_assert_eq(rhashtable_walk_next(&iter), objs[0]);
	cr_assert_eq(rhashtable_walk_next(&iter), objs[1]);
	rhashtable_walk_stop(&iter);
	cr_assert_eq(rhashtable_remove_fast(&ht, &objs[1]->node, params), 0);
	wobj_free_rcu(objs[1]);
	cr_assert_eq(rhashtable_walk_start_check(&iter), 0);
	o = rhashtable_walk_next(&iter);
	cr_assert_eq(o, objs[3], "resumed at key %d",
		     IS_ERR_OR_NULL(o) ? -1 : (int)o->key);
	cr_assert_null(rhashtable_walk_next(&iter));
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	rhkv_rcu_barrier();
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/* ---- resizes ---- */

/*
 * A resize (grow, or re-seed) completes while the walk is stopped: the next
 * walk_next returns ERR_PTR(-EAGAIN) exactly once (or walk_start_check
 * returns -EAGAIN, and walk_next does not), then the walk restarts in the
 * new table and returns every object exactly once.
 */
static void check_resize_while_stopped(bool grow, bool start_check)
{
	enum { N = 40, MORE = 20 };
	struct rhashtable ht;
	struct rhashtable_iter iter;
	unsigned int seen[N + MORE] = { 0 };
	unsigned int present = grow ? N + MORE : N, eagain = 0;
	uint32_t gen;
	void *obj;

	cr_assert_eq(rhashtable_init(&ht, &wobj_params), 0); /* 64 buckets */
	free(fill(&ht, wobj_params, 0, N));
	cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
	gen = rhashtable_generation(&ht);

	rhashtable_walk_enter(&ht, &iter);
	rhashtable_walk_start(&iter);
	for (int i = 0; i < 10; i++) {
		obj = rhashtable_walk_next(&iter);
		cr_assert(!IS_ERR_OR_NULL(obj));
	}
	rhashtable_walk_stop(&iter);

	if (grow) {
		/* 60 objects > 75% of 64: one grow, to 128. */
		free(fill(&ht, wobj_params, N, MORE));
		cr_assert(walk_wait_resizes(&ht, 1, 0, 0, 10000));
		cr_assert_eq(rhashtable_size(&ht), 128);
	} else {
		rht__force_reseed(&ht);
		cr_assert(walk_wait_resizes(&ht, 0, 0, 1, 10000));
		cr_assert_eq(rhashtable_generation(&ht), gen + 1);
	}

	if (start_check) {
		cr_assert_eq(rhashtable_walk_start_check(&iter), -EAGAIN);
	} else {
		rhashtable_walk_start(&iter);
		obj = rhashtable_walk_next(&iter);
		cr_assert_eq(obj, ERR_PTR(-EAGAIN));
		eagain++;
	}
	while ((obj = rhashtable_walk_next(&iter))) {
		struct wobj *o = obj;

		if (IS_ERR(obj)) {
			eagain++;
			continue;
		}
		cr_assert_lt(o->key, present);
		seen[o->key]++;
	}
	cr_assert_eq(eagain, start_check ? 0 : 1, "%u -EAGAIN", eagain);
	for (unsigned int k = 0; k < present; k++)
		cr_assert_eq(seen[k], 1, "key %u returned %u times", k,
			     seen[k]);
	rhashtable_walk_stop(&iter);
	/* At the end, starting again reports nothing new. */
	cr_assert_eq(rhashtable_walk_start_check(&iter), 0);
	cr_assert_null(rhashtable_walk_next(&iter));
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

Test(walker, grow_while_stopped_eagain_once)
{
	check_resize_while_stopped(true, false);
}

Test(walker, reseed_while_stopped_eagain_once)
{
	check_resize_while_stopped(false, false);
}

Test(walker, grow_while_stopped_start_check)
{
	check_resize_while_stopped(true, true);
}

Test(walker, reseed_while_stopped_start_check)
{
	check_resize_while_stopped(false, true);
}

/*
 * A resize that runs (hold_half_way: is held in flight) during a started
 * walk: the walk finishes the old table, returns -EAGAIN once, walks the
 * new one, and returns every object at least once; when the resize
 * completed, every object again after the -EAGAIN.
 */
static void check_resize_during_walk(bool hold_half_way)
{
	enum { N = 200 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_params;
	struct rhashtable_iter iter;
	unsigned int seen[N] = { 0 }, after[N] = { 0 };
	unsigned int eagain = 0;
	struct bucket_table *tbl;
	_Atomic uintptr_t *last = NULL;
	void *obj;

	params.nelem_hint = 300; /* 512 buckets */
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(fill(&ht, params, 0, N));

	rhashtable_walk_enter(&ht, &iter);
	rhashtable_walk_start(&iter);
	for (int i = 0; i < 50; i++) {
		struct wobj *o = rhashtable_walk_next(&iter);

		cr_assert(!IS_ERR_OR_NULL(o));
		seen[o->key]++;
	}
	tbl = rht__first_table(&ht); /* alive: the walk holds the lock */
	if (hold_half_way) {
		last = &tbl->buckets[tbl->mask];
		rht__bucket_lock(last);
	}
	rht__force_reseed(&ht);
	if (hold_half_way) {
		cr_assert(WALK_WAIT_FOR(walk_all_but_last_moved(tbl), 10000));
		cr_assert_eq(atomic_load(&tbl->moved), walk_last_stride(tbl));
	} else {
		/* The switch to the new table does not wait for readers. */
		cr_assert(walk_wait_resizes(&ht, 0, 0, 1, 10000));
	}
	while ((obj = rhashtable_walk_next(&iter))) {
		struct wobj *o = obj;

		if (IS_ERR(obj)) {
			cr_assert_eq(PTR_ERR(obj), -EAGAIN);
			eagain++;
			continue;
		}
		cr_assert_lt(o->key, N);
		seen[o->key]++;
		if (eagain)
			after[o->key]++;
	}
	if (hold_half_way)
		rht__bucket_unlock(last);
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);

	cr_assert_eq(eagain, 1, "%u -EAGAIN", eagain);
	for (unsigned int k = 0; k < N; k++) {
		cr_assert_geq(seen[k], 1, "key %u never returned", k);
		if (!hold_half_way)
			cr_assert_eq(after[k], 1,
				     "key %u returned %u times after -EAGAIN",
				     k, after[k]);
	}
	cr_assert(walk_wait_resizes(&ht, 0, 0, 1, 10000));
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

Test(walker, resize_completes_during_started_walk)
{
	check_resize_during_walk(false);
}

Test(walker, resize_in_flight_during_started_walk)
{
	check_resize_during_walk(true);
}

/* ---- peek ---- */

/*
 * peek returns the last object walk_next returned, any number of times,
 * without advancing; at the start of a walk it returns the first object,
 * which then counts as returned (as in the kernel: walk_next goes on after
 * it); at the end it returns NULL.
 */
Test(walker, peek)
{
	enum { N = 30 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_collide_params;
	struct rhashtable_iter iter;
	void *ref[N + 1];
	void *obj;
	unsigned int i;

	params.nelem_hint = 100;
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(fill(&ht, params, 0, N));
	cr_assert_eq(walk_once(&ht, ref, N + 1), N);

	rhashtable_walk_enter(&ht, &iter);
	rhashtable_walk_start(&iter);
	cr_assert_eq(rhashtable_walk_peek(&iter), ref[0]);
	cr_assert_eq(rhashtable_walk_peek(&iter), ref[0]);
	for (i = 1; (obj = rhashtable_walk_next(&iter)); i++) {
		cr_assert_lt(i, N);
		cr_assert_eq(obj, ref[i]);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
	}
	cr_assert_eq(i, N);
	cr_assert_null(rhashtable_walk_peek(&iter));
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/* ---- rhltable ---- */

struct lobj {
	uint32_t key;
	uint32_t id;
	struct rhlist_head node;
};

static const struct rhashtable_params lobj_params = {
	.key_len = sizeof(uint32_t),
	.key_offset = offsetof(struct lobj, key),
	.head_offset = offsetof(struct lobj, node),
	.hashfn = wobj_collide_hash, /* several keys per chain */
	.nelem_hint = 1000,	     /* no resize */
};

static void lobj_free_fn(void *ptr, void *arg)
{
	(void)arg;
	free(ptr);
}

static struct lobj *lobj_insert(struct rhltable *hlt, uint32_t key, uint32_t id)
{
	struct lobj *o = calloc(1, sizeof(*o));

	cr_assert(o);
	o->key = key;
	o->id = id;
	cr_assert_eq(rhltable_insert(hlt, &o->node, lobj_params), 0);
	return o;
}

/*
 * rhltable_walk_enter walks every object of every list exactly once, and a
 * walk that stops and starts after every object returns the same sequence,
 * even when, while it is stopped, a new object with the last object's key
 * joins the front of its list.
 */
Test(walker, rhltable_walks_every_list_member)
{
	enum { KEYS = 30 };
	struct rhltable hlt;
	struct rhashtable_iter iter;
	void *ref[KEYS * 5 + 1];
	unsigned int n = 0, i;
	uint32_t next_id = 0;
	void *obj;

	cr_assert_eq(rhltable_init(&hlt, &lobj_params), 0);
	for (uint32_t k = 0; k < KEYS; k++)
		for (uint32_t j = 0; j <= k % 5; j++)
			lobj_insert(&hlt, k, next_id++);
	n = next_id;

	rhltable_walk_enter(&hlt, &iter);
	rhashtable_walk_start(&iter);
	for (i = 0; (obj = rhashtable_walk_next(&iter)); i++) {
		cr_assert(!IS_ERR(obj));
		cr_assert_lt(i, n);
		ref[i] = obj;
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	cr_assert_eq(i, n, "walked %u of %u objects", i, n);
	assert_distinct(ref, n);

	rhltable_walk_enter(&hlt, &iter);
	rhashtable_walk_start(&iter);
	for (i = 0; (obj = rhashtable_walk_next(&iter)); i++) {
		struct lobj *o = obj;

		cr_assert_lt(i, n, "returned an object inserted ahead");
		cr_assert_eq(obj, ref[i], "object %u is not the successor", i);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
		rhashtable_walk_stop(&iter);
		if (i % 2)
			lobj_insert(&hlt, o->key, next_id++);
		cr_assert_eq(rhashtable_walk_start_check(&iter), 0);
		cr_assert_eq(rhashtable_walk_peek(&iter), obj);
	}
	cr_assert_eq(i, n);
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	cr_assert_eq(walk_stats(&hlt.ht).grows + walk_stats(&hlt.ht).reseeds,
		     0);
	rhltable_free_and_destroy(&hlt, lobj_free_fn, NULL);
}
