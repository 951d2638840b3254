/*
 * --conn-memory under load: the memory every connection's buffers share
 * turns load into waiting, never into errors. Fifty connections do large
 * multi-gets at once (get lines that need a bigger input buffer, replies
 * of values up to 16 KiB that together pass the budget many times over,
 * some clients reading slowly): every reply complete and exact. Every
 * connection holding replies its client has not read yet while it waits
 * for room to read its next line, and many connections holding half a
 * long line each (more input buffer than the budget in all): they drain
 * and finish, no deadlock. Only a request whose input alone needs more
 * than the whole budget is refused, with memcached's words, and only a
 * reply that alone outgrows it is cut; a client that stalls halfway
 * through a large request does not hold the queue up. Skipped under
 * memcached (--conn-memory is rhkvd's).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NCONNS 50
#define NITEMS 600
/* Keys of 200 to 249 bytes: a get line of 100 keys is over 20 KiB, more
 * than a connection's initial 16 KiB input buffer. */
#define KEY_MIN 200
/* A connection's requests (rounds) in the load test. */
#define ROUNDS 3

static struct srv srv;
static struct hconn *c;
static struct hconn *conns[NCONNS];
static struct hbuf breq;

/* --conn-memory 2 (MiB): fifty replies of about half a megabyte at once
 * are ten times that. -I 4m lets a get line be up to 4 MiB long, so that
 * one between the budget and the line limit is refused by the budget.
 * --output-limit 4m: a connection's pipelined gets run in one batch, their
 * replies together past the budget. */
static const char *const flags[] = { "-t", "4",	 "--conn-memory",
				     "2",  "-I", "4m",
				     "-m", "64", "--output-limit",
				     "4m", NULL };

static void setup(void)
{
	START_RHKVD(&srv, flags, &c, "--conn-memory and its queue");
}

static void teardown(void)
{
	for (int i = 0; i < NCONNS; i++)
		hc_close(&conns[i]);
	hbuf_free(&breq);
	STOP_RHKVD(&srv, &c);
}

TestSuite(conn_budget, .init = setup, .fini = teardown, .timeout = 150);

/* Item i: its key (NUL-terminated) and value length; the value's bytes
 * are value_byte(i, j). Every third value is small (under 200 bytes), the
 * others spread over 0..16384 (the largest copied into replies). */
static size_t key_of(int i, char *dst)
{
	size_t n = (size_t)KEY_MIN + (size_t)(i % 50);
	int k = snprintf(dst, 16, "k%04d-", i);

	memset(dst + k, 'a' + i % 26, n - (size_t)k);
	dst[n] = '\0';
	return n;
}

static size_t value_len(int i)
{
	return i % 3 == 0 ? (size_t)(i % 200)
			  : (size_t)((unsigned)i * 7919u % 16385u);
}

static char value_byte(int i, size_t j)
{
	return (char)('0' + (i * 31 + (int)j) % 64);
}

static void load_items(void)
{
	char key[256], line[64];

	for (int i = 0; i < NITEMS; i++) {
		size_t n = value_len(i);

		breq.len = 0;
		key_of(i, key);
		hbuf_printf(&breq, "set %s %d 0 %zu\r\n", key, i, n);
		for (size_t j = 0; j < n; j++)
			hbuf_add(&breq, &(char){ value_byte(i, j) }, 1);
		hbuf_add(&breq, "\r\n", 2);
		SEND_N(c, breq.p, breq.len);
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		cr_assert_str_eq(line, "STORED\r\n", "item %d", i);
	}
	breq.len = 0;
}

/* The keys of one request: n of them, from seed (items of any size, or
 * with small set only the small ones). */
static void pick(int *items, int n, unsigned int seed, bool small)
{
	for (int k = 0; k < n; k++) {
		seed = seed * 1103515245u + 12345u;
		items[k] = (int)(seed >> 8) % NITEMS;
		if (small)
			items[k] -= items[k] % 3;
	}
}

static void get_line(struct hbuf *b, const int *items, int n)
{
	char key[256];

	hbuf_add(b, "get", 3);
	for (int k = 0; k < n; k++) {
		size_t len = key_of(items[k], key);

		hbuf_add(b, " ", 1);
		hbuf_add(b, key, len);
	}
	hbuf_add(b, "\r\n", 2);
}

/* Reads the reply to a get of items[0..n) and compares every byte; slow:
 * the client pauses every few values, so that its replies stay pending in
 * the server (a pace, not a wait for anything). NULL, or what differed. */
static const char *check_reply(struct hconn *hc, const int *items, int n,
			       bool slow, char *why, size_t cap)
{
	struct hvalue *v = malloc(sizeof(*v));
	char key[256];
	const char *err = NULL;

	if (!v)
		return "out of memory";
	for (int k = 0; k < n && !err; k++) {
		int i = items[k];
		size_t len = value_len(i);

		if (slow && k % 8 == 0)
			h_sleep_ms(1);
		key_of(i, key);
		if (hc_value(hc, v, 20000) != 1) {
			snprintf(why, cap, "value %d of %d: got \"%.60s\"", k,
				 n, v->line);
			err = why;
		} else if (strcmp(v->key, key) != 0 ||
			   v->flags != (unsigned long)i || v->len != len) {
			snprintf(why, cap, "value %d: \"%.60s\" for item %d", k,
				 v->line, i);
			err = why;
		} else {
			for (size_t j = 0; j < len && !err; j++)
				if (v->val[j] != value_byte(i, j)) {
					snprintf(why, cap,
						 "item %d: byte %zu differs", i,
						 j);
					err = why;
				}
		}
	}
	if (!err && hc_value(hc, v, 20000) != 0) {
		snprintf(why, cap, "no END after %d values: \"%.60s\"", n,
			 v->line);
		err = why;
	}
	free(v);
	return err;
}

/* ---- fifty connections of large multi-gets at once ---- */

struct client {
	int id;
	struct hconn *hc;
	pthread_barrier_t *start;
	char why[256];
	const char *err;
};

/* Sends b, or says why not. */
static bool send_all(struct client *cl, const struct hbuf *b, int r)
{
	if (!hc_send(cl->hc, b->p, b->len))
		return true;
	snprintf(cl->why, sizeof(cl->why), "round %d: send: errno %d", r,
		 errno);
	cl->err = cl->why;
	return false;
}

/*
 * Each round, pipelined: a get of 60 items of any size (a line that fits
 * the initial input buffer, a reply of about 300 KiB), then at once a get
 * whose line needs a bigger input buffer than the connection has had:
 * 100 items of any size (22 KiB), 200 small ones (45 KiB), 340 small ones
 * (80 KiB). The input buffer grows while this reply and the others' are
 * pending. Every fifth client reads slowly.
 */
static void *load_client(void *arg)
{
	static const int big[ROUNDS] = { 100, 200, 340 };
	struct client *cl = arg;
	struct hbuf b = { 0 };
	int first[60], second[340];
	bool slow = cl->id % 5 == 0;

	pthread_barrier_wait(cl->start);
	for (int r = 0; r < ROUNDS && !cl->err; r++) {
		pick(first, 60, (unsigned)(cl->id * 100 + r), false);
		pick(second, big[r], (unsigned)(cl->id * 100 + 50 + r), r > 0);
		b.len = 0;
		get_line(&b, first, 60);
		get_line(&b, second, big[r]);
		if (!send_all(cl, &b, r))
			break;
		cl->err = check_reply(cl->hc, first, 60, slow, cl->why,
				      sizeof(cl->why));
		if (!cl->err)
			cl->err = check_reply(cl->hc, second, big[r], slow,
					      cl->why, sizeof(cl->why));
	}
	hbuf_free(&b);
	return NULL;
}

static unsigned long long memory_waits(void)
{
	struct hstats st;
	unsigned long long n = 0;

	cr_assert_eq(hc_stats(c, "", &st, H_TIMEOUT_MS), 0);
	cr_assert_eq(hstats_u64(&st, "conn_memory_waits", &n), 0);
	return n;
}

Test(conn_budget, fifty_connections_of_large_multigets_get_every_value)
{
	static struct client cl[NCONNS];
	pthread_t tid[NCONNS];
	pthread_barrier_t start;

	load_items();
	pthread_barrier_init(&start, NULL, NCONNS);
	for (int i = 0; i < NCONNS; i++) {
		conns[i] = hc_open(srv.port);
		cr_assert_not_null(conns[i], "connect: errno %d", errno);
		cl[i] = (struct client){ .id = i,
					 .hc = conns[i],
					 .start = &start };
	}
	for (int i = 0; i < NCONNS; i++)
		cr_assert_eq(pthread_create(&tid[i], NULL, load_client, &cl[i]),
			     0);
	for (int i = 0; i < NCONNS; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < NCONNS; i++)
		cr_expect_null(cl[i].err, "client %d: %s", i, cl[i].err);
	cr_assert_gt(memory_waits(), 0,
		     "no connection waited: the load never filled "
		     "--conn-memory, so this test proved nothing");
	SYNC(c, &srv);
}

/* ---- every connection waits; those holding replies still drain ---- */

Test(conn_budget, connections_waiting_for_memory_drain_and_finish)
{
	static int first[NCONNS][200], second[NCONNS][200];
	static struct hbuf rest[NCONNS];
	struct hbuf b = { 0 };
	char why[256];
	const char *err;

	load_items();
	/* Each asks for about a megabyte and reads none of it yet: together
	 * far past the budget, so that no input buffer may grow. */
	for (int i = 0; i < NCONNS; i++) {
		conns[i] = hc_open(srv.port);
		cr_assert_not_null(conns[i], "connect: errno %d", errno);
		pick(first[i], 200, (unsigned)(i * 7 + 1), false);
		pick(second[i], 200, (unsigned)(i * 7 + 2), true);
		b.len = 0;
		get_line(&b, first[i], 200);
		SEND_N(conns[i], b.p, b.len);
	}
	/* Then each sends the first 24 KiB of a 46 KiB get line: its input
	 * buffer must grow to hold it, and it waits; the waiting input
	 * buffers together need more than the budget too. Then the rest. */
	for (int i = 0; i < NCONNS; i++) {
		b.len = 0;
		get_line(&b, second[i], 200);
		cr_assert_gt(b.len, 40000);
		SEND_N(conns[i], b.p, 24576);
		rest[i].len = 0;
		hbuf_add(&rest[i], b.p + 24576, b.len - 24576);
	}
	hbuf_free(&b);
	for (int i = 0; i < NCONNS; i++) {
		SEND_N(conns[i], rest[i].p, rest[i].len);
		hbuf_free(&rest[i]);
	}
	/* Now every client reads: the replies drain, the waiting lines are
	 * read as room comes back, and every reply arrives whole. */
	for (int i = 0; i < NCONNS; i++) {
		err = check_reply(conns[i], first[i], 200, false, why,
				  sizeof(why));
		cr_assert_null(err, "connection %d, first reply: %s", i, err);
	}
	for (int i = 0; i < NCONNS; i++) {
		err = check_reply(conns[i], second[i], 200, false, why,
				  sizeof(why));
		cr_assert_null(err, "connection %d, second reply: %s", i, err);
	}
	cr_assert_gt(memory_waits(), 0, "no connection waited");
	SYNC(c, &srv);
}

/* ---- a request larger than the whole budget ---- */

/* A get line of about n bytes, of keys that are not there. */
static void missing_keys_line(size_t n)
{
	breq.len = 0;
	hbuf_add(&breq, "get", 3);
	while (breq.len < n)
		hbuf_add(&breq, " nokey", 6);
	hbuf_add(&breq, "\r\n", 2);
}

Test(conn_budget, only_a_request_larger_than_the_budget_is_refused)
{
	char line[256];

	/* 1.5 MiB: within the 2 MiB budget, read whole. */
	missing_keys_line(3 << 19);
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "END\r\n");
	/* 3 MiB: within the line limit (-I 4m), past the budget. */
	conns[0] = hc_open(srv.port);
	cr_assert_not_null(conns[0], "connect: errno %d", errno);
	missing_keys_line(3 << 20);
	(void)hc_send(conns[0], breq.p, breq.len); /* may fail once closed */
	cr_assert_gt(hc_line(conns[0], line, sizeof(line), 10000), 0,
		     "no reply to a 3 MiB line past --conn-memory 2");
	cr_assert_str_eq(line,
			 "SERVER_ERROR out of memory reading request\r\n");
	cr_assert_eq(hc_closed(conns[0], H_TIMEOUT_MS), 1, "not closed");
	SYNC(c, &srv);
}

/* ---- a reply is cut only for its own size ---- */

/* Two pipelined gets of 25 values of 60,000 bytes (1.5 MB each, within
 * the 2 MiB budget): both whole, though together they pass it. */
Test(conn_budget, replies_pending_before_a_reply_do_not_cut_it)
{
	static struct hvalue v;
	static char val[60000];

	memset(val, 'v', sizeof(val));
	breq.len = 0;
	hbuf_printf(&breq, "set big 0 0 %zu\r\n", sizeof(val));
	hbuf_add(&breq, val, sizeof(val));
	hbuf_printf(&breq, "\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "STORED\r\n");
	breq.len = 0;
	for (int r = 0; r < 2; r++) {
		hbuf_printf(&breq, "get");
		for (int i = 0; i < 25; i++)
			hbuf_printf(&breq, " big");
		hbuf_printf(&breq, "\r\n");
	}
	SEND_N(c, breq.p, breq.len);
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 25; i++) {
			cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 1,
				     "reply %d, value %d: \"%.60s\"", r, i,
				     v.line);
			cr_assert_eq(v.len, sizeof(val));
			cr_assert_eq(memcmp(v.val, val, sizeof(val)), 0);
		}
		cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 0,
			     "reply %d: \"%.60s\" instead of END", r, v.line);
	}
	SYNC(c, &srv);
}

/* ---- a client that stalls halfway through a large request ---- */

/* --conn-memory 1 (MiB), no idle timeout: only the server can make the
 * queue move past a client that stops sending. */
static const char *const stall_flags[] = { "--conn-memory", "1", "-o",
					   "idle_timeout=0", NULL };

static void setup_stall(void)
{
	START_RHKVD(&srv, stall_flags, &c, "--conn-memory and its queue");
}

TestSuite(conn_budget_stall, .init = setup_stall, .fini = teardown,
	  .timeout = 60);

static unsigned long long stat_of(const char *name)
{
	struct hstats st;
	unsigned long long n = 0;

	cr_assert_eq(hc_stats(c, "", &st, H_TIMEOUT_MS), 0);
	cr_assert_eq(hstats_u64(&st, name, &n), 0, "no stat %s", name);
	return n;
}

/*
 * X sends 900 KB of a get line and stops, its input buffer grown past
 * the whole budget (it holds the overdraft); Z then sends a 40 KB get
 * line, which needs a bigger input buffer than the budget has room for.
 * Z is answered while X stays open and silent: X's overdraft passes on
 * once X stops sending, so a stalled client cannot make the others wait
 * for as long as it keeps its connection.
 */
Test(conn_budget_stall, a_stalled_large_request_does_not_block_the_queue)
{
	struct hconn **x = &conns[0], **z = &conns[1];
	long long deadline;
	char line[64];

	*x = hc_open(srv.port);
	cr_assert_not_null(*x, "connect: errno %d", errno);
	missing_keys_line(900000);
	SEND_N(*x, breq.p, breq.len - 2); /* no newline */
	/* Until X's input buffer holds it: past the whole budget. */
	deadline = h_now_ms() + 20000;
	while (stat_of("conn_buffer_bytes") <= (1u << 20)) {
		cr_assert_lt(h_now_ms(), deadline,
			     "X's input buffer never grew past the budget");
		h_sleep_ms(10);
	}
	*z = hc_open(srv.port);
	cr_assert_not_null(*z, "connect: errno %d", errno);
	missing_keys_line(40000);
	SEND_N(*z, breq.p, breq.len);
	cr_assert_gt(hc_line(*z, line, sizeof(line), 20000), 0,
		     "Z's get waited for the stalled client X");
	cr_assert_str_eq(line, "END\r\n");
	cr_assert_gt(stat_of("conn_memory_waits"), 0,
		     "Z never waited: this test proved nothing");
	cr_assert_eq(hc_closed(*x, 0), 0, "X was closed");
	/* X's line, completed, is still served. */
	SEND(*x, "\r\n");
	cr_assert_gt(hc_line(*x, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_str_eq(line, "END\r\n");
	SYNC(c, &srv);
}

/* Until the connection buffers together pass `bytes`. */
static void wait_buffers_past(unsigned long long bytes, const char *what)
{
	long long deadline = h_now_ms() + 20000;

	while (stat_of("conn_buffer_bytes") <= bytes) {
		cr_assert_lt(h_now_ms(), deadline, "%s", what);
		h_sleep_ms(10);
	}
}

/*
 * What a stalled holder keeps when it passes the overdraft on is bounded:
 * X1 stalls after 900 KB of a get line, X2 gets the overdraft and stalls
 * the same way, the buffers now past twice the budget; when Z then waits,
 * X2's request is refused (memcached's words, and a close) rather than
 * passed over, and Z is answered. X1 stays open.
 */
Test(conn_budget_stall, stalled_requests_past_twice_the_budget_are_refused)
{
	struct hconn **x1 = &conns[0], **x2 = &conns[1], **z = &conns[2];
	char line[64];

	*x1 = hc_open(srv.port);
	*x2 = hc_open(srv.port);
	*z = hc_open(srv.port);
	cr_assert(*x1 && *x2 && *z, "connect: errno %d", errno);
	missing_keys_line(900000);
	SEND_N(*x1, breq.p, breq.len - 2);
	wait_buffers_past(1u << 20, "X1's input buffer never grew");
	SEND_N(*x2, breq.p, breq.len - 2);
	wait_buffers_past(2u << 20, "X2 never got the overdraft from X1");
	missing_keys_line(40000);
	SEND_N(*z, breq.p, breq.len);
	cr_assert_gt(hc_line(*z, line, sizeof(line), 20000), 0,
		     "Z's get waited for the stalled clients");
	cr_assert_str_eq(line, "END\r\n");
	cr_assert_gt(hc_line(*x2, line, sizeof(line), H_TIMEOUT_MS), 0,
		     "no reply to X2's stalled request");
	cr_assert_str_eq(line,
			 "SERVER_ERROR out of memory reading request\r\n");
	cr_assert_eq(hc_closed(*x2, H_TIMEOUT_MS), 1, "X2 not closed");
	cr_assert_eq(hc_closed(*x1, 0), 0, "X1 was closed");
	SYNC(c, &srv);
}
