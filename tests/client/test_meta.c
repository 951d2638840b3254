/*
 * librhkv's meta commands against a live rhkvd: meta get (value or not,
 * touch, no bump, vivify, recache), meta set's modes, cas, new cas and
 * invalidation, meta delete and its invalidation, meta arithmetic, the
 * error paths, a large value (sent by reference), keys shared with the
 * text protocol's mg, and a race: of 20 clients vivifying one missing key
 * at once, exactly one wins.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static struct srv srv;
static rhkv *c;

static void teardown(void)
{
	rhkv_close(c);
	c = NULL;
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
}

TestSuite(meta, .fini = teardown, .timeout = 60);

static void start(const char *const *extra)
{
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = cl_connect(srv.port, 5000);
}

#define K(s) s, strlen(s)

static const struct rhkv_mget_opts with_value = { .want_value = 1 };

/* A meta get with the value; asserts its bytes. */
static void expect_meta_value(const char *key, const char *val,
			      struct rhkv_meta *m)
{
	OK(rhkv_meta_get(c, K(key), &with_value, m));
	cr_assert_not_null(m->value.data, "%s: no value", key);
	cr_assert_eq(m->value.len, strlen(val));
	cr_assert_str_eq(m->value.data, val);
	rhkv_value_free(&m->value);
}

Test(meta, get_hit_and_miss)
{
	struct rhkv_meta m;
	uint64_t cas = 0;

	start(NULL);
	ERR(rhkv_meta_get(c, K("nope"), &with_value, &m), RHKV_ENOTFOUND);
	cr_assert_null(m.value.data);
	cr_assert_not(m.won || m.stale || m.won_by_other);
	cr_assert_eq(m.ttl, -1);

	OK(rhkv_set(c, K("k"), "hello", 5, 42, 0, &cas));
	OK(rhkv_meta_get(c, K("k"), &with_value, &m));
	cr_assert_str_eq(m.value.data, "hello");
	cr_assert_eq(m.value.len, 5);
	cr_assert_eq(m.value.flags, 42);
	cr_assert_eq(m.value.cas, cas);
	cr_assert_eq(m.ttl, -1);
	cr_assert_eq(m.size, 5);
	cr_assert_not(m.hit_before, "the first fetch");
	cr_assert_leq(m.last_access, 2);
	cr_assert_not(m.won || m.stale || m.won_by_other);
	rhkv_value_free(&m.value);

	/* metadata only: no bytes, the rest as before; fetched once now */
	OK(rhkv_meta_get(c, K("k"), NULL, &m));
	cr_assert_null(m.value.data);
	cr_assert_eq(m.value.len, 0);
	cr_assert_eq(m.size, 5);
	cr_assert_eq(m.value.flags, 42);
	cr_assert_eq(m.value.cas, cas);
	cr_assert(m.hit_before);
}

Test(meta, get_touch_and_no_bump)
{
	struct rhkv_mget_opts touch = { .touch = 1, .touch_ttl = 1000 };
	struct rhkv_mget_opts no_bump = { .no_bump = 1 };
	struct rhkv_meta m;

	start(NULL);
	OK(rhkv_set(c, K("t"), "v", 1, 0, 100, NULL));
	OK(rhkv_meta_get(c, K("t"), &no_bump, &m));
	cr_assert(m.ttl > 90 && m.ttl <= 100, "ttl %lld", (long long)m.ttl);
	OK(rhkv_meta_get(c, K("t"), NULL, &m));
	cr_assert_not(m.hit_before, "a no-bump read is no access");
	OK(rhkv_meta_get(c, K("t"), &touch, &m));
	cr_assert(m.ttl > 990 && m.ttl <= 1000, "ttl %lld", (long long)m.ttl);
	cr_assert(m.hit_before);
	OK(rhkv_meta_get(c, K("t"), NULL, &m));
	cr_assert(m.ttl > 990 && m.ttl <= 1000, "touched: ttl %lld",
		  (long long)m.ttl);
	touch.touch_ttl = 0; /* never expires */
	OK(rhkv_meta_get(c, K("t"), &touch, &m));
	cr_assert_eq(m.ttl, -1);
	ERR(rhkv_meta_get(c, K("gone"), &touch, &m), RHKV_ENOTFOUND);
	/* a TTL in the past: nothing left, and the item is gone after */
	touch.touch_ttl = -1;
	OK(rhkv_meta_get(c, K("t"), &touch, &m));
	cr_assert_eq(m.ttl, 0);
	ERR(rhkv_meta_get(c, K("t"), NULL, &m), RHKV_ENOTFOUND);
}

Test(meta, vivify_placeholder)
{
	struct rhkv_mget_opts o = { .want_value = 1, .vivify_ttl = 30 };
	struct rhkv_meta m;

	start(NULL);
	OK(rhkv_meta_get(c, K("v"), &o, &m));
	cr_assert(m.won, "the first to miss wins");
	cr_assert_not(m.won_by_other || m.stale);
	cr_assert_not_null(m.value.data);
	cr_assert_eq(m.value.len, 0, "an empty placeholder");
	cr_assert(m.ttl > 20 && m.ttl <= 30, "ttl %lld", (long long)m.ttl);
	rhkv_value_free(&m.value);

	/* the others see the placeholder, won by another */
	OK(rhkv_meta_get(c, K("v"), &o, &m));
	cr_assert_not(m.won);
	cr_assert(m.won_by_other);
	cr_assert_not(m.stale);
	cr_assert_eq(m.value.len, 0);
	rhkv_value_free(&m.value);

	/* the winner stores: a plain hit from then on */
	OK(rhkv_meta_set(c, K("v"), "computed", 8, NULL, NULL));
	OK(rhkv_meta_get(c, K("v"), &o, &m));
	cr_assert_not(m.won || m.won_by_other || m.stale);
	cr_assert_str_eq(m.value.data, "computed");
	rhkv_value_free(&m.value);
}

Test(meta, recache)
{
	struct rhkv_mget_opts o = { .want_value = 1, .recache_ttl = 200 };
	struct rhkv_meta m;

	start(NULL);
	OK(rhkv_set(c, K("r"), "old", 3, 0, 100, NULL));
	OK(rhkv_set(c, K("fresh"), "new", 3, 0, 1000, NULL));
	OK(rhkv_set(c, K("forever"), "x", 1, 0, 0, NULL));

	/* 100 s left, below 200: the first wins, the value still comes */
	OK(rhkv_meta_get(c, K("r"), &o, &m));
	cr_assert(m.won);
	cr_assert_str_eq(m.value.data, "old");
	rhkv_value_free(&m.value);
	OK(rhkv_meta_get(c, K("r"), &o, &m));
	cr_assert_not(m.won);
	cr_assert(m.won_by_other);
	cr_assert_not(m.stale);
	cr_assert_str_eq(m.value.data, "old", "served while recached");
	rhkv_value_free(&m.value);

	/* more time left, or no TTL: nobody wins */
	OK(rhkv_meta_get(c, K("fresh"), &o, &m));
	cr_assert_not(m.won || m.won_by_other);
	rhkv_value_free(&m.value);
	OK(rhkv_meta_get(c, K("forever"), &o, &m));
	cr_assert_not(m.won || m.won_by_other);
	rhkv_value_free(&m.value);
}

Test(meta, set_modes)
{
	struct rhkv_mset_opts o = { 0 };
	struct rhkv_meta m;
	uint64_t cas = 0;

	start(NULL);
	o.mode = 'E';
	OK(rhkv_meta_set(c, K("m"), "b", 1, &o, &cas));
	cr_assert_neq(cas, 0);
	ERR(rhkv_meta_set(c, K("m"), "x", 1, &o, NULL), RHKV_ENOTSTORED);
	o.mode = 'A';
	OK(rhkv_meta_set(c, K("m"), "c", 1, &o, NULL));
	o.mode = 'P';
	OK(rhkv_meta_set(c, K("m"), "a", 1, &o, NULL));
	expect_meta_value("m", "abc", &m);
	o.mode = 'R';
	OK(rhkv_meta_set(c, K("m"), "r", 1, &o, NULL));
	expect_meta_value("m", "r", &m);
	ERR(rhkv_meta_set(c, K("none"), "x", 1, &o, NULL), RHKV_ENOTSTORED);
	o.mode = 'A';
	ERR(rhkv_meta_set(c, K("none"), "x", 1, &o, NULL), RHKV_ENOTSTORED);
	/* append with vivify creates the missing item */
	o.vivify_ttl = 60;
	OK(rhkv_meta_set(c, K("none"), "x", 1, &o, NULL));
	expect_meta_value("none", "x", &m);
	o = (struct rhkv_mset_opts){ .mode = 'S', .flags = 7, .ttl = 500 };
	OK(rhkv_meta_set(c, K("m"), "s", 1, &o, NULL));
	OK(rhkv_meta_get(c, K("m"), &with_value, &m));
	cr_assert_str_eq(m.value.data, "s");
	cr_assert_eq(m.value.flags, 7);
	cr_assert(m.ttl > 490 && m.ttl <= 500, "ttl %lld", (long long)m.ttl);
	rhkv_value_free(&m.value);
	/* NULL options: a plain set, no flags, no TTL */
	OK(rhkv_meta_set(c, K("m"), "p", 1, NULL, NULL));
	OK(rhkv_meta_get(c, K("m"), NULL, &m));
	cr_assert_eq(m.value.flags, 0);
	cr_assert_eq(m.ttl, -1);
}

Test(meta, set_cas)
{
	struct rhkv_mset_opts o = { 0 };
	struct rhkv_meta m;
	uint64_t cas = 0, cas2 = 0;

	start(NULL);
	OK(rhkv_meta_set(c, K("c"), "1", 1, NULL, &cas));
	o.cas = cas + 1000;
	ERR(rhkv_meta_set(c, K("c"), "2", 1, &o, NULL), RHKV_EEXISTS);
	ERR(rhkv_meta_set(c, K("missing"), "2", 1, &o, NULL), RHKV_ENOTFOUND);
	o.cas = cas;
	OK(rhkv_meta_set(c, K("c"), "2", 1, &o, &cas2));
	cr_assert_neq(cas2, cas);
	ERR(rhkv_meta_set(c, K("c"), "3", 1, &o, NULL), RHKV_EEXISTS);
	expect_meta_value("c", "2", &m);

	/* a cas of the client's choosing */
	o = (struct rhkv_mset_opts){ .new_cas = 999999 };
	OK(rhkv_meta_set(c, K("c"), "4", 1, &o, &cas));
	cr_assert_eq(cas, 999999);
	OK(rhkv_meta_get(c, K("c"), NULL, &m));
	cr_assert_eq(m.value.cas, 999999);

	/* invalidate: a late writer (lower cas) stores, but stale */
	o = (struct rhkv_mset_opts){ .cas = 5, .invalidate = 1 };
	OK(rhkv_meta_set(c, K("c"), "late", 4, &o, NULL));
	OK(rhkv_meta_get(c, K("c"), &with_value, &m));
	cr_assert(m.stale);
	cr_assert(m.won);
	cr_assert_str_eq(m.value.data, "late");
	rhkv_value_free(&m.value);
	/* a higher cas than the item's: EEXISTS even with invalidate */
	o.cas = 1u << 30;
	ERR(rhkv_meta_set(c, K("c"), "x", 1, &o, NULL), RHKV_EEXISTS);
}

Test(meta, delete_and_invalidate)
{
	struct rhkv_mdelete_opts inval = { .invalidate = 1, .ttl = 30 };
	struct rhkv_mdelete_opts o = { 0 };
	struct rhkv_mget_opts g = { .want_value = 1, .vivify_ttl = 30 };
	struct rhkv_meta m;
	uint64_t cas = 0;

	start(NULL);
	ERR(rhkv_meta_delete(c, K("nope"), NULL), RHKV_ENOTFOUND);
	OK(rhkv_meta_set(c, K("d"), "v", 1, NULL, &cas));
	o.cas = cas + 1;
	ERR(rhkv_meta_delete(c, K("d"), &o), RHKV_EEXISTS);
	o.cas = cas;
	OK(rhkv_meta_delete(c, K("d"), &o));
	ERR(rhkv_meta_get(c, K("d"), NULL, &m), RHKV_ENOTFOUND);

	/* invalidated: the first reader wins and gets the stale value, the
	 * others are served it while the winner recomputes */
	OK(rhkv_meta_set(c, K("s"), "old", 3, NULL, &cas));
	OK(rhkv_meta_delete(c, K("s"), &inval));
	OK(rhkv_meta_get(c, K("s"), &g, &m));
	cr_assert(m.stale);
	cr_assert(m.won);
	cr_assert_not(m.won_by_other);
	cr_assert_str_eq(m.value.data, "old");
	cr_assert_neq(m.value.cas, cas, "invalidation gives a new cas");
	cr_assert(m.ttl > 20 && m.ttl <= 30, "ttl %lld", (long long)m.ttl);
	rhkv_value_free(&m.value);
	OK(rhkv_meta_get(c, K("s"), &g, &m));
	cr_assert(m.stale);
	cr_assert_not(m.won);
	cr_assert(m.won_by_other);
	cr_assert_str_eq(m.value.data, "old");
	rhkv_value_free(&m.value);
	OK(rhkv_meta_set(c, K("s"), "new", 3, NULL, NULL));
	OK(rhkv_meta_get(c, K("s"), &g, &m));
	cr_assert_not(m.stale || m.won || m.won_by_other);
	cr_assert_str_eq(m.value.data, "new");
	rhkv_value_free(&m.value);
	ERR(rhkv_meta_delete(c, K("nope"), &inval), RHKV_ENOTFOUND);
}

Test(meta, arith)
{
	struct rhkv_marith_opts o = { 0 };
	struct rhkv_meta m;
	uint64_t v = 0, cas = 0, cas2 = 0;

	start(NULL);
	ERR(rhkv_meta_arith(c, K("n"), 1, NULL, &v, NULL), RHKV_ENOTFOUND);
	o.vivify_ttl = 60;
	o.initial = 10;
	OK(rhkv_meta_arith(c, K("n"), 5, &o, &v, &cas));
	cr_assert_eq(v, 10, "created as initial");
	cr_assert_neq(cas, 0);
	OK(rhkv_meta_arith(c, K("n"), 5, NULL, &v, &cas2));
	cr_assert_eq(v, 15);
	cr_assert_neq(cas2, cas);
	o = (struct rhkv_marith_opts){ .decr = 1 };
	OK(rhkv_meta_arith(c, K("n"), 3, &o, &v, NULL));
	cr_assert_eq(v, 12);
	OK(rhkv_meta_arith(c, K("n"), 100, &o, &v, NULL));
	cr_assert_eq(v, 0, "not below 0");
	OK(rhkv_meta_arith(c, K("n"), 0, NULL, &v, &cas));
	cr_assert_eq(v, 0);

	o = (struct rhkv_marith_opts){ .cas = cas + 1 };
	ERR(rhkv_meta_arith(c, K("n"), 1, &o, &v, NULL), RHKV_EEXISTS);
	o.cas = cas;
	OK(rhkv_meta_arith(c, K("n"), 1, &o, &v, NULL));
	cr_assert_eq(v, 1);
	o = (struct rhkv_marith_opts){ .touch = 1,
				       .touch_ttl = 100,
				       .new_cas = 4242 };
	OK(rhkv_meta_arith(c, K("n"), UINT64_MAX, &o, &v, &cas));
	cr_assert_eq(v, 0, "wraps as incr does");
	cr_assert_eq(cas, 4242);
	OK(rhkv_meta_get(c, K("n"), NULL, &m));
	cr_assert(m.ttl > 90 && m.ttl <= 100, "touched: ttl %lld",
		  (long long)m.ttl);
	cr_assert_eq(m.value.cas, cas);

	OK(rhkv_set(c, K("text"), "abc", 3, 0, 0, NULL));
	ERR(rhkv_meta_arith(c, K("text"), 1, NULL, &v, NULL), RHKV_ENONNUMERIC);
	/* value and cas may be NULL */
	OK(rhkv_meta_arith(c, K("n"), 1, NULL, NULL, NULL));
}

Test(meta, error_paths)
{
	struct rhkv_mget_opts neg = { .vivify_ttl = -1 };
	struct rhkv_mget_opts neg2 = { .recache_ttl = -1 };
	struct rhkv_mset_opts bad_mode = { .mode = 'X' };
	struct rhkv_marith_opts neg3 = { .vivify_ttl = -5 };
	struct rhkv_meta m;
	char key[251];

	start(NULL);
	memset(key, 'a', sizeof(key));
	ERR(rhkv_meta_get(NULL, K("k"), NULL, &m), RHKV_EINVAL);
	ERR(rhkv_meta_get(c, NULL, 1, NULL, &m), RHKV_EINVAL);
	ERR(rhkv_meta_get(c, K("k"), NULL, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_get(c, K("k"), &neg, &m), RHKV_EINVAL);
	ERR(rhkv_meta_get(c, K("k"), &neg2, &m), RHKV_EINVAL);
	ERR(rhkv_meta_get(c, key, sizeof(key), NULL, &m), RHKV_EBADKEY);
	ERR(rhkv_meta_get(c, "", 0, NULL, &m), RHKV_EBADKEY);
	ERR(rhkv_meta_set(NULL, K("k"), "v", 1, NULL, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_set(c, K("k"), NULL, 1, NULL, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_set(c, K("k"), "v", 1, &bad_mode, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_set(c, key, sizeof(key), "v", 1, NULL, NULL),
	    RHKV_EBADKEY);
	ERR(rhkv_meta_delete(NULL, K("k"), NULL), RHKV_EINVAL);
	ERR(rhkv_meta_delete(c, "", 0, NULL), RHKV_EBADKEY);
	ERR(rhkv_meta_arith(NULL, K("k"), 1, NULL, NULL, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_arith(c, K("k"), 1, &neg3, NULL, NULL), RHKV_EINVAL);
	ERR(rhkv_meta_arith(c, key, sizeof(key), 1, NULL, NULL, NULL),
	    RHKV_EBADKEY);
	/* the connection is still good */
	OK(rhkv_meta_set(c, K("k"), "", 0, NULL, NULL));
	OK(rhkv_ping(c));
}

Test(meta, too_large)
{
	const char *const extra[] = { "-I", "1m", NULL };
	size_t big = 1024 * 1024 + 1;
	char *v = calloc(1, big);

	cr_assert_not_null(v);
	start(extra);
	ERR(rhkv_meta_set(c, K("big"), v, big, NULL, NULL), RHKV_ETOOLARGE);
	OK(rhkv_meta_set(c, K("big"), v, big - 1 - 4096, NULL, NULL));
	free(v);
}

/* Values above the server's copy threshold go out by reference. */
Test(meta, large_values)
{
	size_t sizes[] = { 16384, 16385, 100000, 1000000 };
	struct rhkv_meta m;

	start(NULL);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *v = malloc(sizes[i]);

		cr_assert_not_null(v);
		for (size_t j = 0; j < sizes[i]; j++)
			v[j] = (char)(j * 7 + i);
		OK(rhkv_meta_set(c, K("large"), v, sizes[i], NULL, NULL));
		OK(rhkv_meta_get(c, K("large"), &with_value, &m));
		cr_assert_eq(m.value.len, sizes[i]);
		cr_assert_eq(m.size, sizes[i]);
		cr_assert(memcmp(m.value.data, v, sizes[i]) == 0);
		rhkv_value_free(&m.value);
		/* and a plain call after it on the same connection */
		OK(rhkv_ping(c));
		free(v);
	}
}

Test(meta, text_protocol_sees_the_same_items)
{
	struct hconn *t;
	struct rhkv_meta m;

	start(NULL);
	t = hc_open(srv.port);
	cr_assert_not_null(t);
	OK(rhkv_meta_set(c, K("shared"), "hi", 2, NULL, NULL));
	RT(t, "mg shared v\r\n", "VA 2\r\nhi\r\n");
	RT(t, "md shared I\r\n", "HD\r\n");
	OK(rhkv_meta_get(c, K("shared"), &with_value, &m));
	cr_assert(m.stale && m.won);
	cr_assert_str_eq(m.value.data, "hi");
	rhkv_value_free(&m.value);
	RT(t, "mg shared v\r\n", "VA 2 Z X\r\nhi\r\n");
	hc_close(&t);
}

/* ---- the race: one winner among many ---- */

#define RACERS 20

static pthread_barrier_t go;
static int racer_port;

struct racer {
	int rc;
	int won, won_by_other;
};

static void *race(void *arg)
{
	struct rhkv_mget_opts o = { .want_value = 1, .vivify_ttl = 60 };
	struct racer *r = arg;
	struct rhkv_meta m;
	rhkv *h = NULL;

	r->rc = rhkv_connect(&h, "127.0.0.1", racer_port, NULL);
	if (r->rc == 0)
		r->rc = rhkv_ping(h); /* connected before the start */
	pthread_barrier_wait(&go);
	if (r->rc == 0)
		r->rc = rhkv_meta_get(h, K("contended"), &o, &m);
	if (r->rc == 0) {
		r->won = m.won;
		r->won_by_other = m.won_by_other;
		rhkv_value_free(&m.value);
	}
	rhkv_close(h);
	return NULL;
}

Test(meta, vivify_race_has_one_winner)
{
	pthread_t th[RACERS];
	struct racer r[RACERS];
	int winners = 0, others = 0, rc;

	start(NULL);
	racer_port = srv.port;
	for (int round = 0; round < 5; round++) {
		memset(r, 0, sizeof(r));
		rc = rhkv_meta_delete(c, K("contended"), NULL);
		cr_assert(rc == 0 || rc == RHKV_ENOTFOUND, "%s",
			  rhkv_strerror(rc));
		cr_assert_eq(pthread_barrier_init(&go, NULL, RACERS), 0);
		for (int i = 0; i < RACERS; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, race, &r[i]),
				     0);
		for (int i = 0; i < RACERS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&go);
		winners = others = 0;
		for (int i = 0; i < RACERS; i++) {
			cr_assert_eq(r[i].rc, 0, "racer %d: %s", i,
				     rhkv_strerror(r[i].rc));
			winners += r[i].won;
			others += r[i].won_by_other;
		}
		cr_assert_eq(winners, 1, "round %d: %d winners", round,
			     winners);
		cr_assert_eq(others, RACERS - 1, "round %d", round);
	}
}
