/*
 * Criterion tests of the cursor scan (rhashtable_scan): the bucket-visit
 * bound on a sparse table, scans across grows and shrinks between calls, a
 * forced re-seed in the middle of a scan, rhltable lists, and the stress
 * shared with the TSan executable (scan_stress.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan_stress.h"
#include "walk_util.h"

TestSuite(scan, .init = rhkv_rcu_register_thread,
	  .fini = rhkv_rcu_unregister_thread, .timeout = 60);

/* What the scan callback of these tests records. */
struct scan_record {
	unsigned int nkeys;	/* keys 0 .. nkeys-1 are tracked */
	unsigned int *seen;	/* reports per key */
	unsigned int reported;	/* reports in the current call */
	unsigned int untracked; /* reports of keys >= nkeys */
	/* The order of reports, when order != NULL. */
	uint32_t *order;
	unsigned int norder, order_cap;
};

static void record_init(struct scan_record *r, unsigned int nkeys)
{
	memset(r, 0, sizeof(*r));
	r->nkeys = nkeys;
	r->seen = calloc(nkeys, sizeof(*r->seen));
	cr_assert(r->seen);
}

static void record_reset(struct scan_record *r)
{
	memset(r->seen, 0, r->nkeys * sizeof(*r->seen));
	r->untracked = 0;
	r->norder = 0;
}

static void record_fini(struct scan_record *r)
{
	free(r->seen);
	free(r->order);
}

static void record_obj(void *obj, void *arg)
{
	struct scan_record *r = arg;
	struct wobj *o = obj;

	cr_assert_eq(o->magic, WOBJ_MAGIC);
	r->reported++;
	if (o->key < r->nkeys)
		r->seen[o->key]++;
	else
		r->untracked++;
	if (r->order && r->norder < r->order_cap)
		r->order[r->norder++] = o->key;
}

/* One call; checks the bucket bound and the object count of the call. */
static uint64_t scan_call(struct rhashtable *ht, uint64_t cursor,
			  unsigned int count, struct scan_record *r,
			  struct rhashtable_scan_stats *st)
{
	uint64_t next;

	r->reported = 0;
	next = rhashtable_scan(ht, cursor, count, record_obj, r, st);
	cr_assert_leq(st->buckets, 10u * count,
		      "count %u: one call visited %u buckets", count,
		      st->buckets);
	cr_assert_eq(st->objects, r->reported);
	return next;
}

static void assert_all_seen(const struct scan_record *r, unsigned int n,
			    const char *what)
{
	for (unsigned int k = 0; k < n; k++)
		cr_assert_geq(r->seen[k], 1, "%s: key %u not reported", what,
			      k);
}

static struct wobj **insert_keys(struct rhashtable *ht,
				 struct rhashtable_params params,
				 uint32_t first, uint32_t n)
{
	struct wobj **objs = wobj_insert_range(ht, params, first, n);

	cr_assert_not_null(objs, "inserting keys %u..%u failed", first,
			   first + n - 1);
	return objs;
}

static void remove_keys(struct rhashtable *ht, struct rhashtable_params params,
			struct wobj **objs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(rhashtable_remove_fast(ht, &objs[i]->node, params),
			     0);
		wobj_free_rcu(objs[i]);
	}
	free(objs);
}

/*
 * 256K buckets, 10 objects: no call visits more than 10 * count buckets, a
 * call stops early only when it has reported count objects, and a full scan
 * visits every bucket once and reports every object once (nothing changes).
 * (At count 1 that is 26,000 calls: with 1M buckets, over 60 s under ASan
 * on a loaded 2-core machine.)
 */
Test(scan, sparse_table_bucket_bound)
{
	static const unsigned int counts[] = { 1, 10, 1000 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_params;
	struct scan_record r;

	params.nelem_hint = 196608; /* 196608 * 4 / 3 = 1 << 18 buckets */
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	cr_assert_eq(rhashtable_size(&ht), 1u << 18);
	free(insert_keys(&ht, params, 0, 10));
	record_init(&r, 10);

	for (unsigned int i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		unsigned int count = counts[i];
		unsigned long buckets = 0, calls = 0;
		uint64_t cursor = 0;

		record_reset(&r);
		do {
			struct rhashtable_scan_stats st;

			cursor = scan_call(&ht, cursor, count, &r, &st);
			buckets += st.buckets;
			calls++;
			/* Not stopping for nothing: at least half the bucket
			 * budget used, or count objects reported. */
			if (cursor)
				cr_assert(st.objects >= count ||
						  st.buckets >= 5 * count,
					  "count %u: stopped after %u buckets, "
					  "%u objects",
					  count, st.buckets, st.objects);
		} while (cursor);
		cr_assert_eq(buckets, 1ul << 18, "count %u: %lu buckets", count,
			     buckets);
		cr_assert_eq(r.untracked, 0);
		for (unsigned int k = 0; k < 10; k++)
			cr_assert_eq(r.seen[k], 1, "count %u: key %u seen %u",
				     count, k, r.seen[k]);
		cr_assert_geq(calls, (1ul << 18) / (10 * count));
	}
	cr_assert_eq(walk_stats(&ht).grows + walk_stats(&ht).shrinks, 0);
	record_fini(&r);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/* An empty table: one call, cursor 0 back, nothing reported. */
Test(scan, empty_table)
{
	struct rhashtable ht;
	struct scan_record r;
	struct rhashtable_scan_stats st;

	cr_assert_eq(rhashtable_init(&ht, &wobj_params), 0);
	record_init(&r, 1);
	cr_assert_eq(scan_call(&ht, 0, 1000, &r, &st), 0);
	cr_assert_eq(st.objects, 0);
	cr_assert_eq(st.buckets, RHT_DEFAULT_SIZE);
	record_fini(&r);
	rhashtable_destroy(&ht);
}

/*
 * Grows and shrinks between the calls of a scan (deterministic: the test
 * waits for each resize to finish): every stable key is reported.
 */
Test(scan, grows_and_shrinks_between_calls)
{
	enum { STABLE = 300, CHURN = 6000 };
	static const unsigned int counts[] = { 1, 10 };
	struct rhashtable ht;
	struct rhashtable_params params = wobj_params;
	struct scan_record r;
	unsigned long grows = 0, shrinks = 0;

	params.automatic_shrinking = true;
	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	free(insert_keys(&ht, params, 0, STABLE));
	cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
	record_init(&r, STABLE);

	for (unsigned int i = 0; i < 2 * sizeof(counts) / sizeof(counts[0]);
	     i++) {
		unsigned int count = counts[i % 2];
		struct wobj **churn = NULL;
		struct rhashtable_stats before = walk_stats(&ht), after;
		uint64_t cursor = 0;
		unsigned long calls = 0, phases = 0;

		record_reset(&r);
		do {
			struct rhashtable_scan_stats st;

			cursor = scan_call(&ht, cursor, count, &r, &st);
			/* Every few calls, grow (insert) or shrink (remove) */
			if (++calls % (i + 3) || phases++ >= 6)
				continue;
			if (churn) {
				remove_keys(&ht, params, churn, CHURN);
				churn = NULL;
			} else {
				churn = insert_keys(&ht, params, STABLE + 1,
						    CHURN);
			}
			cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
		} while (cursor);
		if (churn)
			remove_keys(&ht, params, churn, CHURN);
		assert_all_seen(&r, STABLE, "scan across resizes");
		after = walk_stats(&ht);
		cr_assert_gt(after.grows, before.grows);
		grows += after.grows - before.grows;
		shrinks += after.shrinks - before.shrinks;
		cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
	}
	cr_assert_gt(grows, 0);
	cr_assert_gt(shrinks, 0);
	fprintf(stderr, "scans across resizes: %lu grows, %lu shrinks\n", grows,
		shrinks);
	record_fini(&r);
	rhkv_rcu_barrier();
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/*
 * A re-seed held in flight (the test holds the lock of the last bucket the
 * worker must move): calls report nothing and return the same position, as
 * a non-zero cursor even for position 0. Once it is done, the old cursor
 * restarts from position 0 (exactly as a fresh scan), and the scan ends
 * having reported every stable key.
 */
Test(scan, reseed_in_flight_holds_position)
{
	enum { STABLE = 2000, COUNT = 10 };
	struct rhashtable ht;
	struct scan_record r, fresh;
	struct rhashtable_scan_stats st;
	struct bucket_table *tbl;
	_Atomic uintptr_t *last;
	uint64_t cursor = 0, held, fresh_cursor;
	uint32_t gen;

	cr_assert_eq(rhashtable_init(&ht, &wobj_params), 0);
	free(insert_keys(&ht, wobj_params, 0, STABLE));
	cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
	gen = rhashtable_generation(&ht);
	record_init(&r, STABLE);
	record_init(&fresh, STABLE);
	for (int i = 0; i < 20; i++)
		cursor = scan_call(&ht, cursor, COUNT, &r, &st);
	cr_assert_neq(cursor, 0);

	rhkv_rcu_read_lock(); /* keeps tbl alive */
	tbl = rht__first_table(&ht);
	last = &tbl->buckets[tbl->mask];
	rht__bucket_lock(last);
	rht__force_reseed(&ht);
	cr_assert(WALK_WAIT_FOR(walk_all_but_last_moved(tbl), 10000),
		  "the re-seed did not start");
	cr_assert_eq(atomic_load(&tbl->moved), walk_last_stride(tbl),
		     "published %u buckets moved of %u, the last held",
		     atomic_load(&tbl->moved), tbl->size);
	for (int i = 0; i < 5; i++) {
		held = scan_call(&ht, cursor, COUNT, &r, &st);
		cr_assert_eq(held, cursor, "in flight: cursor %#llx -> %#llx",
			     (unsigned long long)cursor,
			     (unsigned long long)held);
		cr_assert_eq(st.objects, 0);
	}
	held = scan_call(&ht, 0, COUNT, &r, &st);
	cr_assert_neq(held, 0, "in flight, a new scan must not end");
	cr_assert_eq(st.objects, 0);
	cr_assert_eq(scan_call(&ht, held, COUNT, &r, &st), held);
	rht__bucket_unlock(last);
	rhkv_rcu_read_unlock();

	cr_assert(walk_wait_resizes(&ht, 0, 0, 1, 10000));
	cr_assert_eq(rhashtable_generation(&ht), gen + 1);

	/* The old cursor (and the one from during the re-seed) restart: the
	 * call does exactly what a fresh scan's first call does. */
	record_reset(&r);
	fresh.order = calloc(STABLE, sizeof(*fresh.order));
	r.order = calloc(STABLE, sizeof(*r.order));
	fresh.order_cap = r.order_cap = STABLE;
	fresh_cursor = scan_call(&ht, 0, COUNT, &fresh, &st);
	cr_assert_eq(scan_call(&ht, held, COUNT, &r, &st), fresh_cursor);
	cr_assert_eq(r.norder, fresh.norder);
	cr_assert_arr_eq(r.order, fresh.order, r.norder * sizeof(*r.order));
	record_reset(&r);
	cursor = scan_call(&ht, cursor, COUNT, &r, &st);
	cr_assert_eq(cursor, fresh_cursor);
	cr_assert_eq(r.norder, fresh.norder);
	cr_assert_arr_eq(r.order, fresh.order, r.norder * sizeof(*r.order));
	while (cursor)
		cursor = scan_call(&ht, cursor, COUNT, &r, &st);
	assert_all_seen(&r, STABLE, "scan restarted by a re-seed");
	for (unsigned int k = 0; k < STABLE; k++)
		cr_assert_eq(r.seen[k], 1, "key %u reported %u times", k,
			     r.seen[k]);

	record_fini(&r);
	record_fini(&fresh);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/*
 * Forced re-seeds in the middle of full scans, calling on without waiting:
 * no crash, every scan ends and reports every stable key.
 */
Test(scan, reseed_mid_scan_keep_calling)
{
	enum { STABLE = 20000, SCANS = 6 };
	static const unsigned int counts[] = { 1, 10, 1000 };
	struct rhashtable ht;
	struct scan_record r;
	unsigned long held_calls = 0, reseeds_during = 0;

	cr_assert_eq(rhashtable_init(&ht, &wobj_params), 0);
	free(insert_keys(&ht, wobj_params, 0, STABLE));
	cr_assert(WALK_WAIT_FOR(walk_settled(&ht), 10000));
	record_init(&r, STABLE);

	for (unsigned int i = 0; i < SCANS; i++) {
		unsigned int count = counts[i % 3];
		unsigned long reseeds = walk_stats(&ht).reseeds;
		unsigned long calls = 0;
		uint64_t cursor = 0;

		record_reset(&r);
		do {
			struct rhashtable_scan_stats st;
			uint64_t next;

			next = scan_call(&ht, cursor, count, &r, &st);
			if (next == cursor)
				held_calls++;
			cursor = next;
			/* About a quarter into the scan. */
			if (++calls == STABLE / count / 4 + 1)
				rht__force_reseed(&ht);
		} while (cursor);
		assert_all_seen(&r, STABLE, "scan with a re-seed");
		cr_assert_eq(r.untracked, 0);
		cr_assert(walk_wait_resizes(&ht, 0, 0, reseeds + 1, 10000));
		reseeds_during += walk_stats(&ht).reseeds - reseeds;
	}
	cr_assert_eq(reseeds_during, SCANS);
	fprintf(stderr,
		"re-seeds during scans: %lu, calls while in flight: %lu\n",
		reseeds_during, held_calls);
	record_fini(&r);
	rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
}

/* A callback that starts a re-seed in the middle of a call. */
struct reseed_in_call {
	struct scan_record r;
	struct rhashtable *ht;
	unsigned int trigger_at; /* report number that starts it */
	bool triggered, switched;
};

static void reseed_during_report(void *obj, void *arg)
{
	struct reseed_in_call *c = arg;

	record_obj(obj, &c->r);
	if (c->triggered || c->r.reported != c->trigger_at)
		return;
	c->triggered = true;
	rht__force_reseed(c->ht);
	/* The worker moves every bucket and switches tables without waiting
	 * for us (only freeing the old table waits for our read lock). */
	c->switched = walk_wait_resizes(c->ht, 0, 0, 1, 10000);
}

/*
 * A re-seed that starts during a call, after the call's check for one in
 * flight, moves the objects of buckets the call has not visited yet to
 * unrelated buckets of the new table. Such a call must not complete the
 * scan (return 0) without having reported every object that stayed in the
 * table: it has to return a non-zero cursor, so that the scan goes on (and
 * restarts from position 0 in the new generation).
 */
Test(scan, reseed_starting_during_a_call)
{
	enum { STABLE = 40, RUNS = 5 };
	struct rhashtable ht;
	unsigned long missed_runs = 0;

	for (unsigned int run = 0; run < RUNS; run++) {
		struct reseed_in_call c = { .ht = &ht, .trigger_at = 10 };
		uint64_t cursor = 0;
		unsigned long calls = 0;
		bool missed = false;

		cr_assert_eq(rhashtable_init(&ht, &wobj_params), 0);
		free(insert_keys(&ht, wobj_params, 0, STABLE));
		record_init(&c.r, STABLE);
		do {
			/* count 1000: one call covers the 64 buckets. */
			c.r.reported = 0;
			cursor =
				rhashtable_scan(&ht, cursor, 1000,
						reseed_during_report, &c, NULL);
			calls++;
		} while (cursor && calls < 100);
		cr_assert(c.triggered && c.switched);
		cr_assert_eq(cursor, 0, "the scan did not end");
		for (unsigned int k = 0; k < STABLE; k++)
			missed |= !c.r.seen[k];
		missed_runs += missed;
		record_fini(&c.r);
		rhashtable_free_and_destroy(&ht, wobj_free_fn, NULL);
	}
	cr_assert_eq(missed_runs, 0,
		     "%lu of %d scans ended (cursor 0) without reporting every "
		     "object: a re-seed that starts during a call is not "
		     "detected",
		     missed_runs, RUNS);
}

/* The objects of an rhltable, with several per key. */
struct lobj {
	uint32_t key;
	uint32_t id;
	struct rhlist_head node;
};

static void lobj_report(void *obj, void *arg)
{
	struct lobj *o = obj;
	unsigned int *seen = arg;

	seen[o->id]++;
}

static void lobj_free_fn(void *ptr, void *arg)
{
	(void)arg;
	free(ptr);
}

/* A scan of an rhltable reports every member of every list, once. */
Test(scan, rhltable_reports_every_list_member)
{
	enum { KEYS = 50, PER_KEY = 4 };
	const struct rhashtable_params params = {
		.key_len = sizeof(uint32_t),
		.key_offset = offsetof(struct lobj, key),
		.head_offset = offsetof(struct lobj, node),
		.nelem_hint = 1000,
	};
	struct rhltable hlt;
	unsigned int seen[KEYS * PER_KEY] = { 0 };
	uint64_t cursor = 0;

	cr_assert_eq(rhltable_init(&hlt, &params), 0);
	for (uint32_t id = 0; id < KEYS * PER_KEY; id++) {
		struct lobj *o = calloc(1, sizeof(*o));

		cr_assert(o);
		o->key = id % KEYS;
		o->id = id;
		cr_assert_eq(rhltable_insert(&hlt, &o->node, params), 0);
	}
	do
		cursor = rhashtable_scan(&hlt.ht, cursor, 3, lobj_report, seen,
					 NULL);
	while (cursor);
	for (unsigned int id = 0; id < KEYS * PER_KEY; id++)
		cr_assert_eq(seen[id], 1, "object %u reported %u times", id,
			     seen[id]);
	rhltable_free_and_destroy(&hlt, lobj_free_fn, NULL);
}

/* The shared stress (also run under TSan as the scan_stress executable). */
Test(scan, stress_grow_shrink_during_scans, .timeout = 120)
{
	struct scan_stress_config cfg;
	struct scan_stress_result res;
	int err;

	scan_stress_config_from_env(&cfg);
	err = scan_stress_run(&cfg, &res);
	scan_stress_print(&res, stderr);
	cr_assert_eq(err, 0, "%s", res.error);
	cr_assert_geq(res.scans_total, cfg.min_scans);
	cr_assert_gt(res.grows, 0);
	cr_assert_gt(res.shrinks, 0);
	cr_assert_gt(res.scans_over_grow, 0);
	cr_assert_gt(res.scans_over_shrink, 0);
}
