/*
 * The non-blocking core: thousands of commands in flight on a libevent
 * loop through a relay that cuts every reply at random places, callbacks
 * that queue more commands, the plain poll() loop, timeouts against a
 * paused server (the other server's commands go on), a pipeline whose
 * deadline restarts with every reply, a streaming pipeline of a million
 * commands in bounded memory (the library's own accounting), and values
 * above 1 MiB sent without blocking (the server's limit asked first).
 */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <rhkv_libevent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "relay.h"
#include "util.h"

static struct srv srv, srv2;
static struct relay *relay;
static rhkv *c, *c2;

static void teardown(void)
{
	rhkv_close(c);
	rhkv_close(c2);
	c = c2 = NULL;
	relay_stop(relay);
	relay = NULL;
	if (srv.pid)
		kill(srv.pid, SIGCONT);
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
	if (srv2.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv2), "rhkvd after SIGTERM");
}

TestSuite(async, .fini = teardown, .timeout = 120);

static void start(struct srv *s)
{
	cr_assert_eq(srv_start(s, NULL), 0);
}

/* SIGSTOP, returning once every thread has stopped (kill returns before:
 * a worker may still answer meanwhile). */
static void freeze(pid_t pid)
{
	int st;

	cr_assert_eq(kill(pid, SIGSTOP), 0);
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st));
}

/* ---- many commands on a libevent loop, replies cut anywhere ---- */

enum { HANDLES = 4, KEYS = 3000 };

struct model {
	struct event_base *base;
	rhkv *hs[HANDLES];
	char *vals[KEYS];
	size_t lens[KEYS];
	int sets, gets, misses, expected, bad;
};

struct req {
	struct model *m;
	int key; /* -1: a key never set */
};

static struct req reqs[2 * KEYS];

static void key_of(int i, char *buf, size_t cap)
{
	snprintf(buf, cap, "async:%d", i);
}

static void done_one(struct model *m)
{
	if (m->sets + m->gets + m->misses == m->expected)
		event_base_loopbreak(m->base);
}

static void on_get(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct req *q = arg;
	struct model *m = q->m;

	if (r->status && r->status != RHKV_ENOTFOUND)
		fprintf(stderr, "get: %s (%s)\n", rhkv_strerror(r->status),
			rhkv_errstr(h));
	if (q->key < 0) {
		m->bad += r->status != RHKV_ENOTFOUND || r->data;
		m->misses++;
	} else {
		m->bad += r->status != 0 || r->len != m->lens[q->key] ||
			  memcmp(r->data, m->vals[q->key], r->len) != 0 ||
			  r->flags != (uint32_t)q->key;
		m->gets++;
	}
	done_one(m);
}

/* A set's callback reads the key back and, every tenth, a missing key:
 * commands queued from a callback, on another handle too. */
static void on_set(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct req *q = arg;
	struct model *m = q->m;
	char key[32];
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = key };
	rhkv *other = m->hs[(q->key + 1) % HANDLES];

	(void)h;
	m->bad += r->status != 0 || r->number == 0;
	m->sets++;
	key_of(q->key, key, sizeof(key));
	get.klen = strlen(key);
	m->bad += rhkv_send(other, &get, on_get, q) != 0;
	if (q->key % 10 == 0) {
		struct req *miss = &reqs[KEYS + q->key];

		*miss = (struct req){ .m = m, .key = -1 };
		key_of(KEYS + q->key, key, sizeof(key));
		get.klen = strlen(key);
		m->bad += rhkv_send(h, &get, on_get, miss) != 0;
	}
	done_one(m);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

Test(async, libevent_thousands_in_flight_cut_replies)
{
	struct model *m = calloc(1, sizeof(*m));
	struct timeval limit = { 90, 0 };
	struct event *deadline;
	unsigned seed = 7;

	start(&srv);
	relay = relay_start(srv.port, 97, 0, 42);
	cr_assert_not_null(relay);
	m->base = event_base_new();
	for (int i = 0; i < HANDLES; i++) {
		cr_assert_eq(rhkv_new(&m->hs[i], "127.0.0.1", relay_port(relay),
				      NULL),
			     0);
		cr_assert_eq(rhkv_libevent_attach(m->hs[i], m->base), 0);
		cr_assert_eq(rhkv_fd(m->hs[i]), -1, "no connect before use");
	}
	m->expected = KEYS + KEYS + (KEYS + 9) / 10;
	for (int i = 0; i < KEYS; i++) {
		char key[32];
		struct rhkv_cmd set = { .op = RHKV_OP_SET,
					.key = key,
					.flags = (uint32_t)i };

		m->lens[i] = 1 + (size_t)rand_r(&seed) % 600;
		m->vals[i] = malloc(m->lens[i]);
		for (size_t b = 0; b < m->lens[i]; b++)
			m->vals[i][b] = (char)rand_r(&seed);
		key_of(i, key, sizeof(key));
		set.klen = strlen(key);
		set.val = m->vals[i];
		set.vlen = m->lens[i];
		reqs[i] = (struct req){ .m = m, .key = i };
		cr_assert_eq(
			rhkv_send(m->hs[i % HANDLES], &set, on_set, &reqs[i]),
			0);
	}
	deadline = evtimer_new(m->base, on_deadline, m->base);
	evtimer_add(deadline, &limit);
	event_base_dispatch(m->base);
	cr_assert_eq(m->sets, KEYS);
	cr_assert_eq(m->gets, KEYS);
	cr_assert_eq(m->misses, (KEYS + 9) / 10);
	cr_assert_eq(m->bad, 0);
	for (int i = 0; i < HANDLES; i++) {
		cr_assert_eq(rhkv_pending(m->hs[i]), 0);
		rhkv_close(m->hs[i]);
	}
	event_free(deadline);
	event_base_free(m->base);
	for (int i = 0; i < KEYS; i++)
		free(m->vals[i]);
	free(m);
}

/* ---- the poll() loop, every op ---- */

struct seen {
	int n;
	struct rhkv_result r[16];
	char data[16][32];
};

static void record(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct seen *s = arg;

	(void)h;
	s->r[s->n] = *r;
	if (r->data) {
		memcpy(s->data[s->n], r->data, r->len < 31 ? r->len : 31);
		s->r[s->n].data = s->data[s->n];
	}
	s->r[s->n].meta = NULL;
	s->n++;
}

Test(async, poll_loop_every_op)
{
	struct seen s = { 0 };
	struct rhkv_mget_opts mg = { .want_value = 1 };
	struct rhkv_cmd cmds[] = {
		{ .op = RHKV_OP_SET,
		  .key = "n",
		  .klen = 1,
		  .val = "5",
		  .vlen = 1 },
		{ .op = RHKV_OP_INCR, .key = "n", .klen = 1, .delta = 10 },
		{ .op = RHKV_OP_DECR, .key = "n", .klen = 1, .delta = 3 },
		{ .op = RHKV_OP_ADD,
		  .key = "n",
		  .klen = 1,
		  .val = "x",
		  .vlen = 1 },
		{ .op = RHKV_OP_APPEND,
		  .key = "n",
		  .klen = 1,
		  .val = "!",
		  .vlen = 1 },
		{ .op = RHKV_OP_GAT, .key = "n", .klen = 1, .exptime = 100 },
		{ .op = RHKV_OP_CAS,
		  .key = "n",
		  .klen = 1,
		  .val = "y",
		  .vlen = 1,
		  .cas = 1 },
		{ .op = RHKV_OP_META_GET, .key = "n", .klen = 1, .mget = &mg },
		{ .op = RHKV_OP_DELETE, .key = "n", .klen = 1 },
		{ .op = RHKV_OP_TOUCH, .key = "n", .klen = 1 },
		{ .op = RHKV_OP_NOOP },
	};
	size_t n = sizeof(cmds) / sizeof(cmds[0]);

	start(&srv);
	c = cl_connect(srv.port, 1000);
	for (size_t i = 0; i < n; i++)
		OK(rhkv_send(c, &cmds[i], record, &s));
	cr_assert_eq(rhkv_pending(c), n);
	cr_assert(rhkv_wants(c) & RHKV_WANT_WRITE);
	OK(rhkv_poll_wait(&c, 1));
	cr_assert_eq(s.n, (int)n);
	cr_assert_eq(s.r[0].status, 0);
	cr_assert_eq(s.r[1].number, 15);
	cr_assert_eq(s.r[2].number, 12);
	cr_assert_eq(s.r[3].status, RHKV_ENOTSTORED);
	cr_assert_eq(s.r[4].status, 0);
	cr_assert_eq(s.r[5].status, 0);
	cr_assert_str_eq(s.r[5].data, "12!");
	cr_assert_eq(s.r[6].status, RHKV_EEXISTS);
	cr_assert_eq(s.r[7].status, 0);
	cr_assert_eq(s.r[7].op, RHKV_OP_META_GET);
	cr_assert_str_eq(s.r[7].data, "12!");
	cr_assert_eq(s.r[8].status, 0);
	cr_assert_eq(s.r[9].status, RHKV_ENOTFOUND);
	cr_assert_eq(s.r[10].status, 0);
	/* bad commands are refused at once, nothing queued */
	struct rhkv_cmd bad = { .op = RHKV_OP_GET, .key = "", .klen = 0 };
	ERR(rhkv_send(c, &bad, record, &s), RHKV_EBADKEY);
	bad = (struct rhkv_cmd){ .op = 999, .key = "k", .klen = 1 };
	ERR(rhkv_send(c, &bad, record, &s), RHKV_EINVAL);
	cr_assert_eq(rhkv_pending(c), 0);
	/* a blocking call completes what was queued before it */
	s.n = 0;
	OK(rhkv_send(c, &cmds[0], record, &s));
	OK(rhkv_ping(c));
	cr_assert_eq(s.n, 1);
}

/* A blocking call from a callback is refused (it would wait on itself). */
static void blocking_inside(rhkv *h, const struct rhkv_result *r, void *arg)
{
	(void)r;
	*(int *)arg = rhkv_ping(h);
}

Test(async, no_blocking_call_from_a_callback)
{
	struct rhkv_cmd noop = { .op = RHKV_OP_NOOP };
	int inner = 0;

	start(&srv);
	c = cl_connect(srv.port, 1000);
	OK(rhkv_send(c, &noop, blocking_inside, &inner));
	OK(rhkv_poll_wait(&c, 1));
	cr_assert_eq(inner, RHKV_EINVAL);
	OK(rhkv_ping(c));
}

/* Closing a handle fails what waits on it, each callback once. */
Test(async, close_fails_pending_commands)
{
	struct seen s = { 0 };
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };

	start(&srv);
	c = cl_connect(srv.port, 1000);
	for (int i = 0; i < 5; i++)
		OK(rhkv_send(c, &get, record, &s));
	rhkv_close(c);
	c = NULL;
	cr_assert_eq(s.n, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(s.r[i].status, RHKV_ECONN);
}

/* ---- timeouts ---- */

Test(async, paused_server_times_out_others_proceed)
{
	struct seen a = { 0 }, b = { 0 };
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	rhkv *hs[2];
	long long t0, took;
	struct rhkv_value v;

	start(&srv);
	start(&srv2);
	hs[0] = c = cl_connect(srv.port, 600);
	hs[1] = c2 = cl_connect(srv2.port, 600);
	freeze(srv.pid);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(rhkv_send(hs[0], &get, record, &a), 0);
		cr_assert_eq(rhkv_send(hs[1], &get, record, &b), 0);
	}
	t0 = h_now_ms();
	cr_assert_eq(rhkv_poll_wait(hs, 2), 0);
	took = h_now_ms() - t0;
	cr_assert_eq(a.n, 8);
	cr_assert_eq(b.n, 8);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(a.r[i].status, RHKV_ETIMEDOUT);
		cr_assert_eq(b.r[i].status, RHKV_ENOTFOUND);
	}
	cr_assert_geq(took, 590, "failed after %lld ms, before the deadline",
		      took);
	/* the blocking call: the same deadline, changed on the live handle */
	OK(rhkv_set_timeouts(c, -1, 100));
	t0 = h_now_ms();
	ERR(rhkv_get(c, "k", 1, &v), RHKV_ETIMEDOUT);
	took = h_now_ms() - t0;
	cr_assert_geq(took, 95, "%lld ms", took);
	cr_assert_lt(took, 550, "the old timeout was kept: %lld ms", took);
	cr_assert_eq(kill(srv.pid, SIGCONT), 0);
	OK(rhkv_set_timeouts(c, -1, 2000));
	ERR(rhkv_get(c, "k", 1, &v), RHKV_ENOTFOUND);
}

Test(async, pipeline_deadline_restarts_with_each_reply)
{
	enum { N = 3000 };
	rhkv_pipeline *p;
	long long t0, took;
	char key[32];

	start(&srv);
	/* every reply crawls in: the whole takes far longer than the
	 * timeout, but bytes keep coming */
	relay = relay_start(srv.port, 256, 3000, 3);
	cr_assert_not_null(relay);
	c = cl_connect(relay_port(relay), 500);
	p = rhkv_pipeline_new(c);
	for (int i = 0; i < N; i++) {
		key_of(i, key, sizeof(key));
		cr_assert_eq(rhkv_pipeline_set(p, key, strlen(key), key,
					       strlen(key), 0, 0),
			     i);
	}
	t0 = h_now_ms();
	OK(rhkv_pipeline_exec(p));
	took = h_now_ms() - t0;
	cr_assert_gt(took, 500,
		     "the test needs a pipeline longer than the "
		     "timeout: %lld ms",
		     took);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhkv_pipeline_result(p, (size_t)i, NULL), 0);
	rhkv_pipeline_free(p);
}

/* ---- a streaming pipeline in bounded memory ---- */

struct stream {
	rhkv_pipeline *p;
	size_t n, bad, next, peak;
};

static void on_streamed(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct stream *s = arg;
	size_t b = rhkv_pipeline_buffered(s->p);

	(void)h;
	s->bad += r->status != 0 || r->index != s->next;
	s->next++;
	s->n++;
	if (b > s->peak)
		s->peak = b;
}

Test(async, streaming_pipeline_of_a_million_in_bounded_memory)
{
	enum { N = 1000000 };
	struct rhkv_options o;
	struct stream s = { 0 };
	struct rhkv_value v;
	char key[32], val[32];

	start(&srv);
	rhkv_options_init(&o);
	o.io_timeout_ms = 10000;
	o.send_budget = 64 * 1024;
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	s.p = rhkv_pipeline_stream(c, on_streamed, &s);
	cr_assert_not_null(s.p);
	for (int i = 0; i < N; i++) {
		int kl = snprintf(key, sizeof(key), "s:%d", i);
		int vl = snprintf(val, sizeof(val), "v%d", i);

		cr_assert_eq(rhkv_pipeline_set(s.p, key, (size_t)kl, val,
					       (size_t)vl, 0, 0),
			     i);
	}
	OK(rhkv_pipeline_exec(s.p));
	cr_assert_eq(s.n, N);
	cr_assert_eq(s.bad, 0);
	/* about 30 MB of requests went through at most a few budgets */
	cr_assert_lt(s.peak, 1024 * 1024, "peak %zu bytes", s.peak);
	cr_assert_lt(rhkv_pipeline_buffered(s.p), 1024 * 1024);
	rhkv_pipeline_free(s.p);
	OK(rhkv_get(c, "s:999999", 8, &v));
	cr_assert_str_eq(v.data, "v999999");
	rhkv_value_free(&v);
}

/* An empty value is a hit with data "" (not NULL) in both forms. */
Test(async, empty_value_is_a_hit)
{
	struct seen s = { 0 };
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "e", .klen = 1 };
	struct rhkv_value v;
	rhkv_pipeline *p;

	start(&srv);
	c = cl_connect(srv.port, 1000);
	OK(rhkv_set(c, "e", 1, "", 0, 0, 0, NULL));
	OK(rhkv_send(c, &get, record, &s));
	OK(rhkv_poll_wait(&c, 1));
	cr_assert_eq(s.r[0].status, 0);
	cr_assert_not_null(s.r[0].data);
	cr_assert_eq(s.r[0].len, 0);
	p = rhkv_pipeline_new(c);
	cr_assert_eq(rhkv_pipeline_get(p, "e", 1), 0);
	OK(rhkv_pipeline_exec(p));
	OK(rhkv_pipeline_result(p, 0, &v));
	cr_assert_not_null(v.data);
	cr_assert_eq(v.len, 0);
	rhkv_value_free(&v);
	rhkv_pipeline_free(p);
}

/* ---- values above 1 MiB without blocking ---- */

/* A value above the default limit: rhkv_send() asks the server's limit
 * without waiting and holds it, and what follows it, until the answer. */
static void send_big(const char *key, const char *val, size_t vlen,
		     struct seen *s)
{
	struct rhkv_cmd set = { .op = RHKV_OP_SET,
				.key = key,
				.klen = strlen(key),
				.val = val,
				.vlen = vlen };

	OK(rhkv_send(c, &set, record, s));
}

/* Over the server's limit (1 MiB, its default): the value fails in its
 * callback without reaching the server, which keeps the connection; the
 * commands around it are answered in order (here completed by a blocking
 * call queued behind them); once the limit is known a second one is
 * refused at once. */
Test(async, value_over_the_limit_fails_in_its_callback)
{
	struct seen s = { 0 };
	size_t big = (1u << 20) + 1;
	char *val = calloc(1, big);
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct rhkv_cmd set = {
		.op = RHKV_OP_SET, .key = "k", .klen = 1, .val = "v", .vlen = 1
	};
	int fd;

	start(&srv);
	c = cl_connect(srv.port, 5000);
	fd = rhkv_fd(c);
	OK(rhkv_send(c, &set, record, &s));
	send_big("big", val, big, &s);
	OK(rhkv_send(c, &get, record, &s));
	OK(rhkv_ping(c));
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.r[0].status, 0);
	cr_assert_eq(s.r[1].status, RHKV_ETOOLARGE, "%s",
		     rhkv_strerror(s.r[1].status));
	cr_assert_eq(s.r[1].op, RHKV_OP_SET);
	cr_assert_eq(s.r[2].status, 0);
	cr_assert_str_eq(s.r[2].data, "v");
	cr_assert_eq(rhkv_fd(c), fd, "the connection was kept");
	ERR(rhkv_send(c,
		      &(struct rhkv_cmd){ .op = RHKV_OP_SET,
					  .key = "big",
					  .klen = 3,
					  .val = val,
					  .vlen = big },
		      record, &s),
	    RHKV_ETOOLARGE);
	free(val);
}

/* Under a larger limit (-I 4m), on a libevent loop: a 3 MiB value sent
 * without blocking is stored; a 5 MiB one held with it fails alone (sent,
 * it would have made the server close the connection); the command
 * queued behind both is answered. */
Test(async, value_above_one_mib_under_a_larger_limit)
{
	const char *const extra[] = { "-I", "4m", NULL };
	size_t big = 3u << 20, huge = 5u << 20;
	char *val = malloc(huge);
	struct seen s = { 0 };
	struct event_base *base = event_base_new();
	struct rhkv_cmd noop = { .op = RHKV_OP_NOOP };
	struct rhkv_value v;

	for (size_t i = 0; i < huge; i++)
		val[i] = (char)('a' + i % 26);
	cr_assert_eq(srv_start(&srv, extra), 0);
	OK(rhkv_new(&c, "127.0.0.1", srv.port, NULL));
	OK(rhkv_libevent_attach(c, base));
	send_big("big", val, big, &s);
	send_big("huge", val, huge, &s);
	OK(rhkv_send(c, &noop, record, &s));
	while (s.n < 3)
		cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
	cr_assert_eq(s.r[0].status, 0, "%s (%s)", rhkv_strerror(s.r[0].status),
		     rhkv_errstr(c));
	cr_assert_eq(s.r[1].status, RHKV_ETOOLARGE);
	cr_assert_eq(s.r[2].status, 0);
	rhkv_close(c);
	c = NULL;
	event_base_free(base);
	c = cl_connect(srv.port, 5000);
	OK(rhkv_get(c, "big", 3, &v));
	cr_assert_eq(v.len, big);
	cr_assert(memcmp(v.data, val, big) == 0);
	rhkv_value_free(&v);
	free(val);
}

/* Refusals that happen before anything is queued: a meta op in a
 * pipeline that keeps results (it has nowhere to put them); a streaming
 * pipeline takes the meta op. */
Test(async, refused_before_queueing)
{
	struct seen s = { 0 };
	struct rhkv_cmd mg = { .op = RHKV_OP_META_GET, .key = "k", .klen = 1 };
	rhkv_pipeline *p;

	start(&srv);
	c = cl_connect(srv.port, 1000);
	p = rhkv_pipeline_new(c);
	cr_assert_eq(rhkv_pipeline_cmd(p, &mg), RHKV_EINVAL);
	rhkv_pipeline_free(p);
	p = rhkv_pipeline_stream(c, record, &s);
	cr_assert_eq(rhkv_pipeline_cmd(p, &mg), 0);
	OK(rhkv_pipeline_exec(p));
	rhkv_pipeline_free(p);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.r[0].status, RHKV_ENOTFOUND);
	cr_assert_eq(s.r[0].op, RHKV_OP_META_GET);
}
