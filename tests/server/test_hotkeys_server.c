/*
 * `stats hotkeys [n]` against a real rhkvd, with the load generator's own
 * counts as the truth: a Zipf(1.0) workload over 1M keys reports the true
 * top 10 in order or within the error the reply states; a uniform one
 * reports no key above the stated bound; reads and writes are told apart;
 * binary keys print as the meta protocol prints them; a bad n is a
 * CLIENT_ERROR. While the Zipf load runs another connection reads the
 * stats without pause: under a TSan rhkvd (RHKV_TEST_SERVER) that is the
 * race check of the readers against the sampling workers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NKEYS	 1000000u
#define BATCH	 500 /* pipelined gets per round trip */
#define CONNS	 4   /* spread over both workers */
#define TOP	 10
#define LINE_MAX 512

static struct srv srv;
static struct hconn *c;

static void teardown(void)
{
	STOP_RHKVD(&srv, &c);
}

TestSuite(hotkeys, .fini = teardown, .timeout = 150);

/* One request in `sample` sampled, one window for the whole test. */
static void start_sampled(const char *sample)
{
	const char *const extra[] = { "--hotkeys-sample", sample,
				      "--hotkeys-window", "3600", NULL };

	START_RHKVD(&srv, extra, &c, "stats hotkeys");
}

static void start(void)
{
	start_sampled("1");
}

/* Requests per connection: fewer under a sanitizer, whose server is many
 * times slower; the sketch's guarantees do not depend on the count. */
static unsigned int load_size(void)
{
	return h_sanitizer(srv.pid) != H_SAN_NONE || H_SANITIZED_BUILD ? 25000
								       : 75000;
}

/* A deterministic stream per connection. */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double unit(uint64_t *x)
{
	return (double)(rnd(x) >> 11) / 9007199254740992.0;
}

/* Zipf(1.0) over NKEYS: key i (0-based) with weight 1/(i+1); cdf[i] is
 * the sum of the first i+1 weights over the total. */
static double *zipf_cdf(void)
{
	double *cdf = malloc(NKEYS * sizeof(*cdf)), sum = 0;

	cr_assert_not_null(cdf);
	for (uint32_t i = 0; i < NKEYS; i++)
		cdf[i] = sum += 1.0 / (i + 1);
	for (uint32_t i = 0; i < NKEYS; i++)
		cdf[i] /= sum;
	return cdf;
}

static uint32_t zipf_draw(const double *cdf, uint64_t *x)
{
	double u = unit(x);
	uint32_t lo = 0, hi = NKEYS - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct load {
	const double *cdf; /* NULL: uniform */
	unsigned int n;
	uint64_t seed;
	_Atomic uint32_t *truth; /* [NKEYS], every connection's gets */
	const char *failed;
};

/* One connection: n gets of "hk:<id>", BATCH at a time; every one a miss. */
static void *load_run(void *arg)
{
	struct load *l = arg;
	struct hconn *h = hc_open(srv.port);
	static const char end[] = "END\r\n";
	char *reply = malloc(BATCH * (sizeof(end) - 1));
	struct hbuf req = { 0 };
	uint64_t x = l->seed;

	if (!h || !reply) {
		l->failed = "connect";
		goto out;
	}
	for (unsigned int done = 0; done < l->n; done += BATCH) {
		req.len = 0;
		for (unsigned int i = 0; i < BATCH; i++) {
			uint32_t id = l->cdf ? zipf_draw(l->cdf, &x)
					     : (uint32_t)(rnd(&x) % NKEYS);

			atomic_fetch_add_explicit(&l->truth[id], 1,
						  memory_order_relaxed);
			hbuf_printf(&req, "get hk:%u\r\n", id);
		}
		if (hc_send(h, req.p, req.len) ||
		    hc_read(h, reply, BATCH * (sizeof(end) - 1), 20000) !=
			    BATCH * (sizeof(end) - 1)) {
			l->failed = "send or reply";
			break;
		}
	}
out:
	hbuf_free(&req);
	free(reply);
	hc_close(&h);
	return NULL;
}

/* One key of the reply. */
struct hot {
	double rps, share;
	unsigned long long count, err;
	char exact[8];
	char key[400];
	bool b64;
};

struct reply {
	unsigned long long sample, requests, bound;
	double seconds;
	int n;
	struct hot top[100];
};

/* Sends "stats hotkeys[ ARGS]" and parses class cls's lines. */
static void hotkeys(struct hconn *h, const char *args, const char *cls,
		    struct reply *r)
{
	char line[LINE_MAX], name[64], rest[LINE_MAX];
	size_t ncls = strlen(cls);

	memset(r, 0, sizeof(*r));
	cr_assert_eq(
		hc_sendf(h, "stats hotkeys%s%s\r\n", *args ? " " : "", args),
		0);
	for (;;) {
		struct hot *t;
		int rank, off = 0;

		cr_assert_gt(hc_line(h, line, sizeof(line), H_TIMEOUT_MS), 0,
			     "stats hotkeys: no END");
		if (!strcmp(line, "END\r\n"))
			return;
		cr_assert_eq(sscanf(line, "STAT %63s %[^\r]", name, rest), 2,
			     "not a STAT line: %s", line);
		if (!strcmp(name, "sample"))
			r->sample = strtoull(rest, NULL, 10);
		if (!strcmp(name, "seconds"))
			r->seconds = strtod(rest, NULL);
		if (strncmp(name, cls, ncls) || name[ncls] != ':')
			continue;
		if (!strcmp(name + ncls + 1, "requests"))
			r->requests = strtoull(rest, NULL, 10);
		else if (!strcmp(name + ncls + 1, "error_bound"))
			r->bound = strtoull(rest, NULL, 10);
		else if (sscanf(name + ncls + 1, "%d", &rank) == 1) {
			cr_assert_eq(rank, r->n + 1, "ranks in order: %s",
				     line);
			t = &r->top[r->n++];
			cr_assert_eq(sscanf(rest, "%lf %lf %llu %llu %7s %n",
					    &t->rps, &t->share, &t->count,
					    &t->err, t->exact, &off),
				     5, "bad hot key line: %s", line);
			cr_assert_eq(sscanf(rest + off, "%399s", t->key), 1);
			t->b64 = !strcmp(rest + off + strlen(t->key), " b");
		}
	}
}

static uint32_t id_of(const struct hot *t)
{
	cr_assert(!strncmp(t->key, "hk:", 3), "not a load key: %s", t->key);
	return (uint32_t)strtoul(t->key + 3, NULL, 10);
}

static int by_count_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Reads `stats hotkeys 100` on its own connection until told to stop. */
struct reader {
	_Atomic bool stop;
	int reads;
};

static void *read_run(void *arg)
{
	struct reader *rd = arg;
	struct hconn *h = hc_open(srv.port);
	struct reply r;

	while (h && !atomic_load(&rd->stop)) {
		hotkeys(h, "100", "read", &r);
		rd->reads++;
	}
	hc_close(&h);
	return NULL;
}

/* Drives CONNS connections of the workload (cdf NULL: uniform) while a
 * reader polls the stats; returns the true count per key. */
static _Atomic uint32_t *drive(const double *cdf, unsigned int *total)
{
	_Atomic uint32_t *truth = calloc(NKEYS, sizeof(*truth));
	struct load l[CONNS];
	pthread_t t[CONNS], rt;
	struct reader rd = { .stop = false };

	cr_assert_not_null(truth);
	*total = 0;
	cr_assert_eq(pthread_create(&rt, NULL, read_run, &rd), 0);
	for (int i = 0; i < CONNS; i++) {
		l[i] = (struct load){ cdf, load_size(),
				      0x9e3779b97f4a7c15ull * (uint64_t)(i + 1),
				      truth, NULL };
		cr_assert_eq(pthread_create(&t[i], NULL, load_run, &l[i]), 0);
	}
	for (int i = 0; i < CONNS; i++) {
		pthread_join(t[i], NULL);
		cr_assert_null(l[i].failed, "load connection %d: %s", i,
			       l[i].failed);
		*total += l[i].n;
	}
	atomic_store(&rd.stop, true);
	pthread_join(rt, NULL);
	cr_assert_gt(rd.reads, 0, "the reader read the stats while loaded");
	return truth;
}

Test(hotkeys, zipf_top10_is_the_true_top10)
{
	double *cdf;
	_Atomic uint32_t *truth;
	uint32_t *sorted;
	unsigned int total;
	struct reply r;

	start();
	cdf = zipf_cdf();
	truth = drive(cdf, &total);
	free(cdf);
	sorted = malloc(NKEYS * sizeof(*sorted));
	cr_assert_not_null(sorted);
	for (uint32_t i = 0; i < NKEYS; i++)
		sorted[i] = atomic_load(&truth[i]);
	qsort(sorted, NKEYS, sizeof(*sorted), by_count_desc);

	hotkeys(c, "", "read", &r);
	cr_assert_eq(r.sample, 1);
	cr_assert_eq(r.requests, total, "every get counted: %llu of %u",
		     r.requests, total);
	cr_assert_eq(r.n, TOP, "the default n is 10");
	fprintf(stderr, "zipf: %u gets, error bound %llu\n", total, r.bound);
	for (int i = 0; i < TOP; i++) {
		const struct hot *t = &r.top[i];
		uint32_t id = id_of(t), real = atomic_load(&truth[id]);

		fprintf(stderr,
			"  rank %2d key %-10s count %6llu err %llu %s, "
			"true %6u, true rank-%d count %6u\n",
			i + 1, t->key, t->count, t->err, t->exact, real, i + 1,
			sorted[i]);
		/* The space-saving bounds, with the generator's counts. */
		cr_assert_leq(t->count - t->err, real,
			      "rank %d: %llu-%llu > %u", i + 1, t->count,
			      t->err, real);
		cr_assert_geq(t->count, real, "rank %d under-counted", i + 1);
		/* The true rank-i key, or one within the stated error of it:
		 * below it by at most this entry's error, above it by at
		 * most the bound (some key above was over-counted). */
		cr_assert_geq((long long)real + (long long)t->err,
			      (long long)sorted[i],
			      "rank %d: true %u, the true "
			      "rank-%d count %u, err %llu",
			      i + 1, real, i + 1, sorted[i], t->err);
		cr_assert_leq(real, sorted[i] + r.bound, "rank %d", i + 1);
		cr_assert(!strcmp(t->exact, t->err ? "approx" : "exact"));
		cr_assert_float_eq(t->share, (double)t->count / total, 1e-5);
		cr_assert_float_eq(t->rps, (double)t->count / r.seconds,
				   0.01 * t->rps + 0.01);
	}
	free(sorted);
	free(truth);
}

/* Sampled (one in 8): each sample stands for its gap, so the class's
 * requests add up and the counts estimate the truth. The error stated is
 * three standard deviations of the sampling; the test allows twice that,
 * so that it does not fail by chance (about 1 in 10^9 per key). */
Test(hotkeys, zipf_sampled_within_the_stated_error)
{
	double *cdf;
	_Atomic uint32_t *truth;
	unsigned int total;
	struct reply r;

	start_sampled("8");
	cdf = zipf_cdf();
	truth = drive(cdf, &total);
	free(cdf);
	hotkeys(c, "", "read", &r);
	cr_assert_eq(r.sample, 8);
	/* The gaps still open when the stats were read: at most 2N-1 per
	 * worker. */
	cr_assert_leq(r.requests, total);
	cr_assert_geq(r.requests + 2 * 15, total);
	cr_assert_eq(r.n, TOP);
	for (int i = 0; i < TOP; i++) {
		const struct hot *t = &r.top[i];
		uint32_t real = atomic_load(&truth[id_of(t)]);
		long long d = (long long)t->count - (long long)real;

		cr_assert_str_eq(t->exact, "approx", "sampled: never exact");
		cr_assert_leq(d < 0 ? -d : d, 2 * (long long)t->err,
			      "rank %d %s: count %llu err %llu, true %u", i + 1,
			      t->key, t->count, t->err, real);
		/* The three hottest (7%, 3.5%, 2.3% of the gets) stand far
		 * apart: first, second and third. */
		if (i < 3)
			cr_assert_eq(id_of(t), (uint32_t)i, "rank %d: %s",
				     i + 1, t->key);
	}
	free(truth);
}

Test(hotkeys, uniform_nothing_above_the_bound)
{
	_Atomic uint32_t *truth;
	unsigned int total;
	struct reply r;
	unsigned long long lower_max = 0;

	start();
	truth = drive(NULL, &total);
	hotkeys(c, "100", "read", &r);
	cr_assert_eq(r.requests, total);
	cr_assert_eq(r.n, 100);
	for (int i = 0; i < r.n; i++) {
		const struct hot *t = &r.top[i];
		uint32_t real = atomic_load(&truth[id_of(t)]);

		cr_assert_leq(t->count - t->err, real, "rank %d", i + 1);
		/* No key looks hotter than its truth plus the bound. */
		cr_assert_leq(t->count, real + r.bound,
			      "rank %d: %llu > true %u + bound %llu", i + 1,
			      t->count, real, r.bound);
		if (t->count - t->err > lower_max)
			lower_max = t->count - t->err;
	}
	fprintf(stderr,
		"uniform: %u gets, error bound %llu, top count %llu "
		"(err %llu), true max %u, largest count-err %llu\n",
		total, r.bound, r.top[0].count, r.top[0].err,
		atomic_load(&truth[id_of(&r.top[0])]), lower_max);
	free(truth);
}

/* Reads and writes are counted apart; a multi-key get counts each key. */
Test(hotkeys, reads_and_writes)
{
	struct reply r;

	start();
	for (int i = 0; i < 30; i++) {
		RT(c, "set w1 0 0 1\r\n1\r\n", "STORED\r\n");
		RT(c, "get r1 r2 r1\r\n", "END\r\n");
	}
	RT(c, "incr w1 1\r\n", "2\r\n");
	RT(c, "delete w2\r\n", "NOT_FOUND\r\n");
	RT(c, "touch w1 0\r\n", "TOUCHED\r\n");
	RT(c, "mg r3 v\r\n", "EN\r\n");
	hotkeys(c, "", "read", &r);
	cr_assert_eq(r.requests, 91);
	cr_assert_eq(r.n, 3);
	cr_assert_str_eq(r.top[0].key, "r1");
	cr_assert_eq(r.top[0].count, 60);
	cr_assert_str_eq(r.top[0].exact, "exact");
	cr_assert_str_eq(r.top[1].key, "r2");
	cr_assert_eq(r.top[1].count, 30);
	cr_assert_str_eq(r.top[2].key, "r3");
	hotkeys(c, "1", "write", &r);
	cr_assert_eq(r.requests, 33);
	cr_assert_eq(r.n, 1, "n applies to each class");
	cr_assert_str_eq(r.top[0].key, "w1");
	cr_assert_eq(r.top[0].count, 32);
	cr_assert_float_eq(r.top[0].share, 32.0 / 33, 1e-5);
}

/* A key only the meta protocol's base64 (or msgpack) can send prints in
 * base64 with " b", as `mg` with k prints it; a text key as it is. */
Test(hotkeys, binary_keys_print_as_the_meta_protocol_does)
{
	struct reply r;

	start();
	/* "\0a b\n" */
	RT(c, "ms AGEgYgo= 1 b\r\nx\r\n", "HD\r\n");
	RT(c, "mg AGEgYgo= b k v\r\n", "VA 1 kAGEgYgo= b\r\nx\r\n");
	RT(c, "mg AGEgYgo= b v\r\n", "VA 1\r\nx\r\n");
	hotkeys(c, "", "read", &r);
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.top[0].key, "AGEgYgo=");
	cr_assert(r.top[0].b64, "binary key without its \" b\"");
	cr_assert_eq(r.top[0].count, 2);
	hotkeys(c, "", "write", &r);
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.top[0].key, "AGEgYgo=");
	cr_assert(r.top[0].b64);
	/* A text key is not encoded. */
	RT(c, "get plain\r\n", "END\r\n");
	RT(c, "get plain\r\n", "END\r\n");
	RT(c, "get plain\r\n", "END\r\n");
	hotkeys(c, "", "read", &r);
	cr_assert_str_eq(r.top[0].key, "plain");
	cr_assert_not(r.top[0].b64);
}

Test(hotkeys, bad_count_is_a_client_error)
{
	static const char *const bad[] = { "0",	 "101",
					   "x",	 "5 5",
					   "-1", "99999999999999999999999" };
	struct reply r;

	start();
	RT(c, "get k\r\n", "END\r\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hc_sendf(c, "stats hotkeys %s\r\n", bad[i]);
		EXPECT(c, "CLIENT_ERROR bad hotkeys count: a number from 1 to "
			  "100\r\n");
	}
	hotkeys(c, "100", "read", &r);
	cr_assert_eq(r.n, 1);
	hotkeys(c, "1", "read", &r);
	cr_assert_eq(r.n, 1);
	SYNC(c, &srv);
}

/* --hotkeys-sample 0: tracking off, the group says so and lists nothing. */
Test(hotkeys, off)
{
	static const char *const extra[] = { "--hotkeys-sample", "0", NULL };

	START_RHKVD(&srv, extra, &c, "stats hotkeys");
	RT(c, "get k\r\n", "END\r\n");
	RT(c, "stats hotkeys\r\n", "STAT sample 0\r\nEND\r\n");
}

/* --hotkeys-window 1: the counts cover the current window and the one
 * before; windows turn while gets and stats run on two connections (two
 * workers), and after two idle windows nothing is left. */
Test(hotkeys, old_windows_are_dropped)
{
	static const char *const extra[] = { "--hotkeys-sample", "1",
					     "--hotkeys-window", "1", NULL };
	struct hconn *load;
	struct reply r;
	long long end;
	int rounds = 0;

	START_RHKVD(&srv, extra, &c, "stats hotkeys");
	load = hc_open(srv.port);
	cr_assert_not_null(load);
	for (end = h_now_ms() + 2500; h_now_ms() < end; rounds++) {
		RT(load, "get old\r\n", "END\r\n");
		hotkeys(c, "", "read", &r);
		cr_assert_eq(r.n, 1, "round %d", rounds);
		cr_assert_str_eq(r.top[0].key, "old");
		cr_assert_leq(r.seconds, 2.5, "two windows at most");
		/* This connection's stats are no reads: only "old" is. */
		cr_assert_eq(r.top[0].count, r.requests);
	}
	hc_close(&load);
	/* Two idle windows take 2 to 3 seconds: poll, with a generous
	 * deadline for a loaded machine. */
	for (end = h_now_ms() + 30000;; h_sleep_ms(100)) {
		hotkeys(c, "", "read", &r);
		if (r.n == 0 || h_now_ms() > end)
			break;
	}
	cr_assert_eq(r.n, 0, "%d keys left after two idle windows", r.n);
	cr_assert_eq(r.requests, 0);
}
