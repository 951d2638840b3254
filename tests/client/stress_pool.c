/*
 * Stress test of rhkv_pool: THREADS threads share a pool of fewer handles
 * (then a pool of clusters) to one rhkvd, each doing CHECKOUTS checkouts of
 * a few gets and sets on keys of its own, and checking every read against
 * its model of what it wrote. Some handles are put back after a quit, so
 * that the next thread's call reconnects, and some with a set sent but not
 * waited for, which the put completes. A plain executable, so that the
 * TSan build runs it too (criterion cannot run under TSan here). Exits 0,
 * or 1 with what went wrong on stderr.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rhkv.h>

#include "harness.h"

#define THREADS	  8
#define POOL_SIZE 3
#define CHECKOUTS 1500
#define KEYS	  16
#define OPS	  4 /* per checkout */

static rhkv_pool *pool;
static int clusters; /* the phase: 1 when pool holds clusters */
static _Atomic unsigned long failures;

struct worker {
	unsigned int id;
	unsigned int seed;
	unsigned long model[KEYS]; /* the last value written; 0: none */
};

#define FAIL(...)                                        \
	do {                                             \
		if (atomic_fetch_add(&failures, 1) < 20) \
			fprintf(stderr, __VA_ARGS__);    \
	} while (0)

/* A get or a set of one of w's keys, on c or cl, checked against the
 * model. */
static void one_op(struct worker *w, rhkv *c, rhkv_cluster *cl, unsigned long n)
{
	unsigned int k = (unsigned int)rand_r(&w->seed) % KEYS;
	char key[32], val[32];
	struct rhkv_value v;
	int rc;

	snprintf(key, sizeof(key), "t%u:k%u", w->id, k);
	if (rand_r(&w->seed) % 2) {
		snprintf(val, sizeof(val), "%lu", n);
		rc = c ? rhkv_set(c, key, strlen(key), val, strlen(val), 0, 0,
				  NULL)
		       : rhkv_cluster_set(cl, key, strlen(key), val,
					  strlen(val), 0, 0, NULL);
		if (rc)
			FAIL("set %s: %s\n", key, rhkv_strerror(rc));
		else
			w->model[k] = n;
		return;
	}
	rc = c ? rhkv_get(c, key, strlen(key), &v)
	       : rhkv_cluster_get(cl, key, strlen(key), &v);
	if (rc == RHKV_ENOTFOUND && !w->model[k])
		return;
	if (rc) {
		FAIL("get %s: %s\n", key, rhkv_strerror(rc));
		return;
	}
	if (strtoul(v.data, NULL, 10) != w->model[k])
		FAIL("get %s: %s, wrote %lu\n", key, v.data, w->model[k]);
	rhkv_value_free(&v);
}

struct sent {
	struct worker *w;
	unsigned int k;
	unsigned long n;
};

static void sent_done(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct sent *s = arg;

	(void)c;
	if (r->status)
		FAIL("sent set: %s\n", rhkv_strerror(r->status));
	else
		s->w->model[s->k] = s->n;
	free(s);
}

/* A set sent without waiting: rhkv_pool_put completes it in this thread
 * (the callback updates the model), before another thread may take c. */
static void send_set(struct worker *w, rhkv *c, unsigned long n)
{
	struct sent *s = malloc(sizeof(*s));
	struct rhkv_cmd cmd = { .op = RHKV_OP_SET };
	char key[32], val[32];
	int rc;

	if (!s) {
		FAIL("out of memory\n");
		return;
	}
	*s = (struct sent){ w, (unsigned int)rand_r(&w->seed) % KEYS, n };
	snprintf(key, sizeof(key), "t%u:k%u", w->id, s->k);
	snprintf(val, sizeof(val), "%lu", n);
	cmd.key = key;
	cmd.klen = strlen(key);
	cmd.val = val;
	cmd.vlen = strlen(val);
	rc = rhkv_send(c, &cmd, sent_done, s);
	if (rc) {
		FAIL("send: %s\n", rhkv_strerror(rc));
		free(s);
	}
}

static void one_checkout(struct worker *w, unsigned long round)
{
	rhkv_cluster *cl = NULL;
	rhkv *c = NULL;
	int rc;

	rc = clusters ? rhkv_pool_get_cluster(pool, -1, &cl)
		      : rhkv_pool_get(pool, -1, &c);
	if (rc) {
		FAIL("checkout: %s\n", rhkv_strerror(rc));
		return;
	}
	for (unsigned long i = 0; i < OPS; i++)
		one_op(w, c, cl, round * OPS + i + 1);
	if (clusters) {
		rhkv_pool_put_cluster(pool, cl);
		return;
	}
	/* now and then the server drops it: the next user reconnects */
	if (rand_r(&w->seed) % 16 == 0)
		rhkv_quit(c);
	else if (rand_r(&w->seed) % 8 == 0)
		send_set(w, c, round * OPS + OPS);
	rhkv_pool_put(pool, c);
}

static void *run(void *arg)
{
	struct worker *w = arg;

	for (unsigned long r = 0; r < CHECKOUTS; r++)
		one_checkout(w, r);
	return NULL;
}

static int phase(void)
{
	static struct worker w[THREADS];
	pthread_t t[THREADS];

	for (unsigned int i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i + THREADS * (unsigned int)clusters;
		w[i].seed = i * 7919u + 1;
		if (pthread_create(&t[i], NULL, run, &w[i])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (unsigned int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(void)
{
	struct rhkv_server sv = { "127.0.0.1", 0, 1 };
	struct rhkv_options o;
	struct srv s;
	int rc, st;

	if (srv_start(&s, NULL))
		return 1;
	rhkv_options_init(&o);
	o.io_timeout_ms = 10000; /* slow under TSan */
	rc = rhkv_pool_new(&pool, "127.0.0.1", s.port, &o, POOL_SIZE);
	if (!rc)
		rc = phase();
	rhkv_pool_free(pool);
	sv.port = s.port;
	clusters = 1;
	if (!rc)
		rc = rhkv_pool_new_cluster(&pool, &sv, 1, &o, NULL, POOL_SIZE);
	if (!rc)
		rc = phase();
	rhkv_pool_free(pool);
	st = srv_stop(&s);
	if (rc)
		fprintf(stderr, "stress_pool: %s\n",
			rc < 0 ? rhkv_strerror(rc) : "failed");
	if (st)
		fprintf(stderr, "stress_pool: rhkvd exited with status %d\n",
			st);
	if (failures)
		fprintf(stderr, "stress_pool: %lu failures\n",
			(unsigned long)failures);
	printf("stress_pool: %d threads x %d checkouts x 2 pools of %d: %s\n",
	       THREADS, CHECKOUTS, POOL_SIZE,
	       rc || st || failures ? "FAILED" : "ok");
	return rc || st || failures ? 1 : 0;
}
