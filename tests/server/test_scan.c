/*
 * The rhkvd `scan <cursor> [count <n>] [match <glob>]` command: complete
 * scans (every key present for the whole scan comes back at least once,
 * even while another connection makes the table grow and shrink), glob
 * filtering, count bounds, bad cursors, expiry. memcached has no scan: the
 * tests skip there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* A reply may hold a few more keys than asked (a whole bucket chain). */
#define COUNT_SLACK 64
#define STABLE_KEYS 10000
#define CHURN_KEYS  50000

/* What a test allocates lives here, freed by teardown even when an
 * assertion ends the test early (no leak reports on failures). */
static struct srv srv;
static struct hconn *c;
static struct hbuf breq;

static void setup(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		return;
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

static void teardown(void)
{
	int status;

	if (!srv.pid)
		return;
	hc_close(&c);
	hbuf_free(&breq);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(scan, .init = setup, .fini = teardown, .timeout = 180);

static void skip_on_memcached(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("scan is an rhkvd command; the server under test "
			     "is memcached (RHKV_TEST_SERVER)");
}

/* Called for each KEY line of a reply. */
typedef void (*key_fn)(const char *key, void *arg);

/*
 * One scan call on CONN: sends "scan CURSOR OPTS", checks the reply's shape,
 * calls FN per key; returns the next cursor and sets *NKEYS.
 */
static unsigned long long scan_call(struct hconn *conn,
				    unsigned long long cursor, const char *opts,
				    key_fn fn, void *arg, int *nkeys)
{
	char line[600];

	cr_assert_eq(hc_sendf(conn, "scan %llu%s%s\r\n", cursor,
			      opts[0] ? " " : "", opts),
		     0);
	*nkeys = 0;
	for (;;) {
		long n = hc_line(conn, line, sizeof(line), 10000);

		cr_assert_gt(n, 2, "scan %llu %s: no reply", cursor, opts);
		cr_assert_str_eq(line + n - 2, "\r\n", "line without \\r\\n");
		line[n - 2] = '\0';
		if (strncmp(line, "KEY ", 4) == 0) {
			cr_assert(line[4] && !strchr(line + 4, ' '),
				  "bad line KEY %s", line + 4);
			fn(line + 4, arg);
			++*nkeys;
			continue;
		}
		char *end;

		cr_assert(strncmp(line, "CURSOR ", 7) == 0,
			  "scan %llu %s: unexpected line \"%s\"", cursor, opts,
			  line);
		errno = 0;
		unsigned long long next = strtoull(line + 7, &end, 10);

		cr_assert(!errno && end != line + 7 && !*end, "bad line %s",
			  line);
		return next;
	}
}

/*
 * A full scan: from cursor 0 until the cursor is 0 again, every reply
 * within COUNT + COUNT_SLACK keys. Returns the number of calls.
 */
static long full_scan(struct hconn *conn, const char *opts, int count,
		      key_fn fn, void *arg)
{
	unsigned long long cursor = 0;
	long calls = 0;
	long long deadline = h_now_ms() + 60000;

	do {
		int n;

		cursor = scan_call(conn, cursor, opts, fn, arg, &n);
		cr_assert_leq(n, count + COUNT_SLACK,
			      "scan %s returned %d keys in one reply", opts, n);
		calls++;
		cr_assert_lt(h_now_ms(), deadline, "a full scan took 60 s");
	} while (cursor != 0);
	return calls;
}

/* Stores keys FMT % FIRST .. FIRST+N-1 with noreply, then syncs. */
static void load_keys(struct hconn *conn, const char *fmt, int first, int n,
		      int exptime)
{
	char key[64];

	breq.len = 0;
	for (int i = first; i < first + n; i++) {
		snprintf(key, sizeof(key), fmt, i);
		hbuf_printf(&breq, "set %s 0 %d 1 noreply\r\nx\r\n", key,
			    exptime);
		if (breq.len > 32768 || i == first + n - 1) {
			SEND_N(conn, breq.p, breq.len);
			breq.len = 0;
			SYNC(conn, &srv);
		}
	}
}

/* Marks keys "stable:%05d"; counts any other key as foreign. */
struct seen {
	unsigned char stable[STABLE_KEYS];
	long foreign, churn;
};

static void mark_key(const char *key, void *arg)
{
	struct seen *s = arg;
	char *end;

	if (strncmp(key, "stable:", 7) == 0) {
		long i = strtol(key + 7, &end, 10);

		if (!*end && i >= 0 && i < STABLE_KEYS) {
			s->stable[i] = 1;
			return;
		}
	}
	if (strncmp(key, "churn:", 6) == 0)
		s->churn++;
	else
		s->foreign++;
}

static int count_missing(const struct seen *s, int n)
{
	int missing = 0;

	for (int i = 0; i < n; i++)
		missing += !s->stable[i];
	return missing;
}

Test(scan, empty_and_small)
{
	static struct seen s;

	skip_on_memcached();
	full_scan(c, "", 10, mark_key, &s);
	cr_assert_eq(s.foreign + s.churn, 0, "keys in an empty server");
	load_keys(c, "stable:%05d", 0, 100, 0);
	full_scan(c, "", 10, mark_key, &s);
	cr_assert_eq(count_missing(&s, 100), 0, "%d keys never returned",
		     count_missing(&s, 100));
	cr_assert_eq(s.foreign + s.churn, 0, "unknown keys returned");
	SYNC(c, &srv);
}

/* Keys may hold control bytes (not space, "\n" or NUL): KEY lines print
 * them as they are, one "\r\n" after the key's own bytes. */
Test(scan, keys_with_control_bytes)
{
	char line[600];
	int tab = 0, cr = 0, ctl = 0;

	skip_on_memcached();
	RT(c, "set a\tb 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "set k\r 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "set \x01\x7f 0 0 1\r\nx\r\n", "STORED\r\n");
	SEND(c, "scan 0 count 1000\r\n");
	for (int i = 0; i < 3; i++) {
		long n = hc_line(c, line, sizeof(line), 10000);

		cr_assert_gt(n, 4);
		if (strcmp(line, "KEY a\tb\r\n") == 0)
			tab++;
		else if (strcmp(line, "KEY k\r\r\n") == 0)
			cr++;
		else if (strcmp(line, "KEY \x01\x7f\r\n") == 0)
			ctl++;
	}
	cr_assert(tab == 1 && cr == 1 && ctl == 1, "KEY lines %d %d %d", tab,
		  cr, ctl);
	EXPECT(c, "CURSOR 0\r\n");
	SYNC(c, &srv);
}

Test(scan, count_bounds)
{
	static const struct {
		const char *opts;
		int bound;
	} cases[] = {
		{ "", 10 },
		{ "count 1", 1 },
		{ "count 100", 100 },
		{ "count 1000", 1000 },
		{ "count 100000", 1000 }, /* the cap */
	};
	static struct seen s;
	long calls[5];

	skip_on_memcached();
	load_keys(c, "stable:%05d", 0, STABLE_KEYS, 0);
	for (int i = 0; i < 5; i++) {
		memset(&s, 0, sizeof(s));
		calls[i] = full_scan(c, cases[i].opts, cases[i].bound, mark_key,
				     &s);
		cr_assert_eq(count_missing(&s, STABLE_KEYS), 0,
			     "scan %s missed %d keys", cases[i].opts,
			     count_missing(&s, STABLE_KEYS));
	}
	/* count must matter: 1000 a call needs far fewer calls than 10 */
	cr_assert_lt(calls[3] * 5, calls[0], "calls: count 10: %ld, 1000: %ld",
		     calls[0], calls[3]);
	cr_assert_lt(calls[0] * 3, calls[1] * 2 + 1,
		     "calls: count 1: %ld, 10: %ld", calls[1], calls[0]);
}

/* Collects every returned key into a list (duplicates kept). */
struct keyset {
	char keys[64][32];
	int n;
};

static void collect_key(const char *key, void *arg)
{
	struct keyset *ks = arg;

	for (int i = 0; i < ks->n; i++)
		if (strcmp(ks->keys[i], key) == 0)
			return;
	cr_assert_lt(ks->n, 64);
	snprintf(ks->keys[ks->n++], 32, "%s", key);
}

static bool has_key(const struct keyset *ks, const char *key)
{
	for (int i = 0; i < ks->n; i++)
		if (strcmp(ks->keys[i], key) == 0)
			return true;
	return false;
}

Test(scan, match_globs)
{
	static const char *const keys[] = {
		"user:1", "user:2", "user:10", "user:x", "admin:1",
		"a*b",	  "a?b",    "axb",     "a[b",	 "a\\b",
		"ab",	  "abc",    "b",
	};
	/* pattern, then the keys it must return (and nothing else) */
	static const char *const cases[][8] = {
		{ "user:*", "user:1", "user:2", "user:10", "user:x" },
		{ "user:?", "user:1", "user:2", "user:x" },
		{ "user:[0-9]", "user:1", "user:2" },
		{ "user:[12]*", "user:1", "user:2", "user:10" },
		{ "a?b", "a*b", "a?b", "axb", "a[b", "a\\b" },
		{ "a\\*b", "a*b" },
		{ "a\\?b", "a?b" },
		{ "a\\[b", "a[b" },
		{ "a\\\\b", "a\\b" },
		{ "[b]*", "b" },
		{ "*1", "user:1", "admin:1" },
		{ "nomatch*" },
	};
	static struct keyset ks;
	char opts[64];
	size_t nkeys = sizeof(keys) / sizeof(keys[0]);

	skip_on_memcached();
	for (size_t i = 0; i < nkeys; i++) {
		cr_assert_eq(hc_sendf(c, "set %s 0 0 1\r\nx\r\n", keys[i]), 0);
		EXPECT(c, "STORED\r\n");
	}
	memset(&ks, 0, sizeof(ks));
	full_scan(c, "match *", 10, collect_key, &ks);
	cr_assert_eq(ks.n, (int)nkeys, "match * returned %d of %zu keys", ks.n,
		     nkeys);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int want = 0;

		memset(&ks, 0, sizeof(ks));
		snprintf(opts, sizeof(opts), "match %s", cases[i][0]);
		full_scan(c, opts, 10, collect_key, &ks);
		for (int j = 1; j < 8 && cases[i][j]; j++, want++)
			cr_assert(has_key(&ks, cases[i][j]),
				  "scan %s did not return %s", opts,
				  cases[i][j]);
		cr_assert_eq(ks.n, want, "scan %s returned %d keys, not %d",
			     opts, ks.n, want);
	}
	memset(&ks, 0, sizeof(ks));
	full_scan(c, "count 1000 match user:*", 1000, collect_key, &ks);
	cr_assert_eq(ks.n, 4, "count with match returned %d keys", ks.n);
}

Test(scan, bad_cursors)
{
	static const char *const bad[] = {
		"scan abc\r\n",
		"scan -1\r\n",
		"scan 99999999999999999999999\r\n",
	};
	char line[256];
	int n;

	skip_on_memcached();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SEND_N(c, bad[i], strlen(bad[i]));
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 2,
			     "no reply to %s", bad[i]);
		cr_assert(strncmp(line, "CLIENT_ERROR", 12) == 0 &&
				  strcmp(line + strlen(line) - 2, "\r\n") == 0,
			  "%s answered %s", bad[i], line);
		SYNC(c, &srv);
	}
	RT(c, "set k 0 0 1\r\nx\r\n", "STORED\r\n");
	static struct keyset ks;

	(void)scan_call(c, 0, "count 1000", collect_key, &ks, &n);
	cr_assert(has_key(&ks, "k"), "scan after errors did not work");
}

Test(scan, expired_keys_are_not_returned)
{
	static struct seen s;

	skip_on_memcached();
	load_keys(c, "stable:%05d", 0, 50, 1);
	load_keys(c, "stable:%05d", 50, 50, 0);
	/* Until the last key stored with exptime 1 has expired (the server
	 * agrees); the deadline is generous. */
	for (long long end = h_now_ms() + 30000;;) {
		char line[64];

		SEND(c, "get stable:00049\r\n");
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (strcmp(line, "END\r\n") == 0)
			break;
		cr_assert_lt(h_now_ms(), end, "exptime 1 outlived 30 s");
		(void)hc_line(c, line, sizeof(line), H_TIMEOUT_MS);
		EXPECT(c, "END\r\n");
		h_sleep_ms(100);
	}
	RT(c, "get stable:00000\r\n", "END\r\n");
	full_scan(c, "", 10, mark_key, &s);
	for (int i = 1; i < 50; i++)
		cr_assert_eq(s.stable[i], 0, "expired stable:%05d returned", i);
	for (int i = 50; i < 100; i++)
		cr_assert_eq(s.stable[i], 1, "stable:%05d not returned", i);
}

/* Inserts then deletes CHURN_KEYS keys, over and over, until told. */
struct churn {
	int port;
	atomic_int stop, cycles, failed;
	char err[256]; /* read after the join, or once failed is set */
};

static int churn_batch(struct hconn *conn, int first, int n, bool del)
{
	struct hbuf req = { 0 };
	char line[128];
	long got;

	for (int i = first; i < first + n; i++) {
		if (del)
			hbuf_printf(&req, "delete churn:%d noreply\r\n", i);
		else
			hbuf_printf(&req, "set churn:%d 0 0 1 noreply\r\nc\r\n",
				    i);
	}
	hbuf_printf(&req, "version\r\n");
	got = hc_send(conn, req.p, req.len) == 0
		      ? hc_line(conn, line, sizeof(line), 10000)
		      : -1;
	hbuf_free(&req);
	return got > 0 && strcmp(line, srv.version) == 0 ? 0 : -1;
}

static void *churn_thread(void *arg)
{
	struct churn *ch = arg;
	struct hconn *conn = hc_open(ch->port);
	long long deadline = h_now_ms() + 90000;

	if (!conn) {
		snprintf(ch->err, sizeof(ch->err), "connect: errno %d", errno);
		atomic_store(&ch->failed, 1);
		return NULL;
	}
	while (!atomic_load(&ch->stop) && h_now_ms() < deadline) {
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < CHURN_KEYS; i += 500)
				if (churn_batch(conn, i, 500, pass == 1) < 0) {
					snprintf(ch->err, sizeof(ch->err),
						 "churn batch %d failed", i);
					atomic_store(&ch->failed, 1);
					hc_close(&conn);
					return NULL;
				}
		atomic_fetch_add(&ch->cycles, 1);
	}
	hc_close(&conn);
	return NULL;
}

/*
 * Logs "stats table" (the rhashtable's statistics) and returns its "grows"
 * and "shrinks" counts (-1 where the server has no such line).
 */
static void table_stats(const char *when, long *grows, long *shrinks)
{
	char line[256];

	*grows = *shrinks = -1;
	SEND(c, "stats table\r\n");
	while (hc_line(c, line, sizeof(line), H_TIMEOUT_MS) > 0) {
		if (strcmp(line, "END\r\n") == 0 ||
		    strncmp(line, "STAT ", 5) != 0)
			break;
		cr_log_info("%s: %.*s", when, (int)strlen(line) - 2, line);
		sscanf(line, "STAT grows %ld", grows);
		sscanf(line, "STAT shrinks %ld", shrinks);
	}
}

Test(scan, every_stable_key_while_the_table_churns)
{
	static struct seen s;
	static struct churn ch;
	static const char *const opts[] = { "", "count 100", "count 1000" };
	static const int counts[] = { 10, 100, 1000 };
	pthread_t tid;
	int scans = 0;
	long long deadline;
	long grows0, shrinks0, grows1, shrinks1;

	skip_on_memcached();
	load_keys(c, "stable:%05d", 0, STABLE_KEYS, 0);
	table_stats("before", &grows0, &shrinks0);
	ch.port = srv.port;
	cr_assert_eq(pthread_create(&tid, NULL, churn_thread, &ch), 0);
	deadline = h_now_ms() + 90000;
	/* at least 3 full scans, and go on until a whole grow-and-shrink
	 * cycle of the churn ran during the scans */
	while ((scans < 3 || atomic_load(&ch.cycles) < 1) &&
	       !atomic_load(&ch.failed) && h_now_ms() < deadline) {
		memset(&s, 0, sizeof(s));
		full_scan(c, opts[scans % 3], counts[scans % 3], mark_key, &s);
		cr_assert_eq(count_missing(&s, STABLE_KEYS), 0,
			     "full scan %d (%s) missed %d stable keys", scans,
			     opts[scans % 3], count_missing(&s, STABLE_KEYS));
		cr_assert_eq(s.foreign, 0, "scan returned unknown keys");
		scans++;
	}
	atomic_store(&ch.stop, 1);
	pthread_join(tid, NULL);
	cr_assert_eq(ch.err[0], '\0', "churn: %s", ch.err);
	cr_assert_geq(scans, 3, "only %d full scans in 90 s", scans);
	cr_assert_geq(atomic_load(&ch.cycles), 1,
		      "the churn did not complete a cycle");
	table_stats("after", &grows1, &shrinks1);
	/* A shrink runs in the background after the deletes that call for
	 * it: give it a moment (the churn may just have finished). */
	for (int i = 0; i < 300 && shrinks0 >= 0 && shrinks1 <= shrinks0; i++) {
		usleep(100000);
		table_stats("after", &grows1, &shrinks1);
	}
	/* the churn must have resized the table both ways, if it says so */
	if (grows0 >= 0 && grows1 >= 0)
		cr_expect_gt(grows1, grows0, "the table never grew");
	if (shrinks0 >= 0 && shrinks1 >= 0)
		cr_expect_gt(shrinks1, shrinks0, "the table never shrank");
}
