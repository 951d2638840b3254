/*
 * rhkv_pool: handles made lazily (counted by the server's connections),
 * checkout that waits, times out or fails at once, a waiter woken by a
 * put, handles that come back after errors, a pool of clusters, and bad
 * arguments. The threads' stress is stress_pool.c (a plain executable, for
 * TSan).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

static pid_t pid;
static int port;

static void pool_fini(void)
{
	if (pid > 0)
		H_EXPECT_EXIT_OK(cl_stop(pid), "rhkvd after SIGTERM");
	pid = 0;
}

TestSuite(pool, .fini = pool_fini, .timeout = 60);

static void start(void)
{
	port = cl_free_port();
	pid = cl_start_on(port, NULL);
	cr_assert_gt(pid, 0, "rhkvd on %d", port);
}

/* The server's connections, less the one that asks. */
static long conns(void)
{
	return cl_stat(port, "curr_connections") - 1;
}

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The server closes connections in its own time: wait for the count. */
static void expect_conns(long want)
{
	long n = -1;

	/* Up to 30 s: a loaded machine may be slow to close them. */
	for (int i = 0; i < 3000 && (n = conns()) != want; i++)
		h_sleep_ms(10);
	cr_assert_eq(n, want, "%ld connections, expected %ld", n, want);
}

Test(pool, lazy_and_reused)
{
	rhkv_pool *p;
	rhkv *a, *b, *again;

	start();
	expect_conns(0);
	cr_assert_eq(rhkv_pool_new(&p, "127.0.0.1", port, NULL, 3), 0);
	expect_conns(0);
	cr_assert_eq(rhkv_pool_get(p, 0, &a), 0);
	expect_conns(1);
	cr_assert_eq(rhkv_pool_get(p, 0, &b), 0);
	cr_assert_neq(a, b);
	expect_conns(2);
	rhkv_pool_put(p, b);
	cr_assert_eq(rhkv_pool_get(p, 0, &again), 0);
	cr_assert_eq(again, b, "an idle handle is reused");
	expect_conns(2);
	rhkv_pool_put(p, again);
	rhkv_pool_put(p, a);
	rhkv_pool_free(p);
	expect_conns(0);
}

Test(pool, timeout)
{
	rhkv_pool *p;
	rhkv *c[2], *x;
	long long t0;

	start();
	cr_assert_eq(rhkv_pool_new(&p, "127.0.0.1", port, NULL, 2), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(rhkv_pool_get(p, 0, &c[i]), 0);
	t0 = ms_now();
	cr_assert_eq(rhkv_pool_get(p, 0, &x), RHKV_ETIMEDOUT);
	cr_assert_null(x);
	cr_assert_lt(ms_now() - t0, 100, "0 waits for nothing");
	t0 = ms_now();
	cr_assert_eq(rhkv_pool_get(p, 200, &x), RHKV_ETIMEDOUT);
	cr_assert_geq(ms_now() - t0, 195);
	cr_assert_lt(ms_now() - t0, 1500);
	rhkv_pool_put(p, c[1]);
	cr_assert_eq(rhkv_pool_get(p, 200, &x), 0);
	cr_assert_eq(x, c[1]);
	rhkv_pool_put(p, x);
	rhkv_pool_put(p, c[0]);
	rhkv_pool_free(p);
}

struct waiter {
	rhkv_pool *p;
	int timeout_ms;
	rhkv *got;
	int rc;
};

static void *wait_get(void *arg)
{
	struct waiter *w = arg;

	w->rc = rhkv_pool_get(w->p, w->timeout_ms, &w->got);
	return NULL;
}

/* A waiter (for ever, or with a long timeout) wakes when one is put. */
static void woken_by_put(int timeout_ms)
{
	struct waiter w = { .timeout_ms = timeout_ms };
	pthread_t t;
	rhkv *c;

	cr_assert_eq(rhkv_pool_new(&w.p, "127.0.0.1", port, NULL, 1), 0);
	cr_assert_eq(rhkv_pool_get(w.p, 0, &c), 0);
	cr_assert_eq(pthread_create(&t, NULL, wait_get, &w), 0);
	h_sleep_ms(100);
	rhkv_pool_put(w.p, c);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.rc, 0, "%s", rhkv_strerror(w.rc));
	cr_assert_eq(w.got, c);
	rhkv_pool_put(w.p, w.got);
	rhkv_pool_free(w.p);
}

Test(pool, put_wakes_waiter)
{
	start();
	woken_by_put(-1);
	woken_by_put(30000);
}

static void count_done(rhkv *c, const struct rhkv_result *r, void *arg)
{
	(void)c;
	(void)r;
	(*(int *)arg)++;
}

/* Commands sent without waiting complete in the putting thread. */
Test(pool, put_completes_pending)
{
	struct rhkv_cmd cmd = {
		.op = RHKV_OP_SET, .key = "k", .klen = 1, .val = "v", .vlen = 1
	};
	rhkv_pool *p;
	rhkv *c;
	int done = 0;

	start();
	cr_assert_eq(rhkv_pool_new(&p, "127.0.0.1", port, NULL, 1), 0);
	cr_assert_eq(rhkv_pool_get(p, 0, &c), 0);
	for (int i = 0; i < 10; i++)
		OK(rhkv_send(c, &cmd, count_done, &done));
	cr_assert_gt(rhkv_pending(c), 0);
	rhkv_pool_put(p, c);
	cr_assert_eq(done, 10);
	cr_assert_eq(rhkv_pending(c), 0);
	rhkv_pool_free(p);
}

/* A handle put back after its connection broke works at its next call;
 * a handle that cannot connect is not made, and its slot is free again. */
Test(pool, after_errors)
{
	struct rhkv_options o;
	struct rhkv_value v;
	rhkv_pool *p;
	rhkv *c;
	int rc;

	port = cl_free_port();
	rhkv_options_init(&o);
	o.connect_timeout_ms = 500;
	o.io_timeout_ms = 500;
	cr_assert_eq(rhkv_pool_new(&p, "127.0.0.1", port, &o, 1), 0);
	rc = rhkv_pool_get(p, 0, &c);
	cr_assert_eq(rc, RHKV_ECONN, "no server: %s", rhkv_strerror(rc));
	cr_assert_null(c);

	pid = cl_start_on(port, NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(rhkv_pool_get(p, 0, &c), 0, "the slot was freed");
	OK(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL));
	rhkv_pool_put(p, c);

	/* the server goes and comes back: the call fails, the handle is put
	 * back, and its next call connects again */
	H_EXPECT_EXIT_OK(cl_stop(pid), "rhkvd after SIGTERM");
	pid = cl_start_on(port, NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(rhkv_pool_get(p, 0, &c), 0);
	rc = rhkv_get(c, "k", 1, &v);
	cr_assert(rc == RHKV_ECONN || rc == RHKV_ENOTFOUND, "%s",
		  rhkv_strerror(rc));
	rhkv_pool_put(p, c);
	cr_assert_eq(rhkv_pool_get(p, 0, &c), 0);
	OK(rhkv_set(c, "k", 1, "w", 1, 0, 0, NULL));
	OK(rhkv_get(c, "k", 1, &v));
	cr_assert_str_eq(v.data, "w");
	rhkv_value_free(&v);
	rhkv_pool_put(p, c);
	rhkv_pool_free(p);
}

Test(pool, clusters)
{
	struct rhkv_cluster_config cfg;
	struct rhkv_server sv[2];
	rhkv_cluster *a, *b, *x;
	struct rhkv_value v;
	rhkv_pool *p;
	rhkv *c;

	start();
	sv[0] = (struct rhkv_server){ "127.0.0.1", port, 1 };
	/* a second server that is down: its keys go to the first */
	sv[1] = (struct rhkv_server){ "127.0.0.1", cl_free_port(), 1 };
	rhkv_cluster_config_init(&cfg);
	cfg.retry_ms = 60000;
	cfg.rejoin = RHKV_REJOIN_FLUSH;
	cr_assert_eq(rhkv_pool_new_cluster(&p, sv, 2, NULL, &cfg, 2), 0);
	cr_assert_eq(rhkv_pool_get(p, 0, &c), RHKV_EINVAL, "not handles");
	cr_assert_eq(rhkv_pool_get_cluster(p, 0, &a), 0);
	cr_assert_eq(rhkv_pool_get_cluster(p, 0, &b), 0);
	cr_assert_eq(rhkv_pool_get_cluster(p, 0, &x), RHKV_ETIMEDOUT);
	cr_assert_eq(rhkv_cluster_count(a), 2);
	for (int k = 0; k < 50; k++) {
		char key[16];

		snprintf(key, sizeof(key), "pc:%d", k);
		cr_assert_eq(rhkv_cluster_set(a, key, strlen(key), key,
					      strlen(key), 0, 0, NULL),
			     0, "%s", rhkv_cluster_errstr(a));
		cr_assert_eq(rhkv_cluster_get(b, key, strlen(key), &v), 0, "%s",
			     rhkv_cluster_errstr(b));
		cr_assert_str_eq(v.data, key);
		rhkv_value_free(&v);
	}
	rhkv_pool_put_cluster(p, a);
	rhkv_pool_put_cluster(p, b);
	rhkv_pool_free(p);
}

Test(pool, bad_arguments)
{
	struct rhkv_cluster_config cfg;
	struct rhkv_server sv = { "127.0.0.1", 1, 1 };
	struct rhkv_options o;
	rhkv_pool *p;
	rhkv *c;

	cr_assert_eq(rhkv_pool_new(&p, NULL, 1, NULL, 1), RHKV_EINVAL);
	cr_assert_null(p);
	cr_assert_eq(rhkv_pool_new(&p, "h", 70000, NULL, 1), RHKV_EINVAL);
	cr_assert_eq(rhkv_pool_new(&p, "h", 1, NULL, 0), RHKV_EINVAL);
	rhkv_options_init(&o);
	o.io_timeout_ms = -1;
	cr_assert_eq(rhkv_pool_new(&p, "h", 1, &o, 1), RHKV_EINVAL);
	cr_assert_eq(rhkv_pool_new_cluster(&p, &sv, 0, NULL, NULL, 1),
		     RHKV_EINVAL);
	rhkv_cluster_config_init(&cfg);
	cfg.quiet_ms = -5;
	cr_assert_eq(rhkv_pool_new_cluster(&p, &sv, 1, NULL, &cfg, 1),
		     RHKV_EINVAL);
	sv.port = -1;
	cr_assert_eq(rhkv_pool_new_cluster(&p, &sv, 1, NULL, NULL, 1),
		     RHKV_EINVAL);
	cr_assert_null(p);
	cr_assert_eq(rhkv_pool_get(NULL, 0, &c), RHKV_EINVAL);
	rhkv_pool_put(NULL, NULL);
	rhkv_pool_free(NULL);
}
