/*
 * rhkvd's prefix invalidation: `flush_prefix <prefix> [noreply]`, meta's
 * `mf` and the msgpack op through librhkv. An item whose key starts with
 * the prefix and was stored before the command is gone for every command
 * from the reply on (get, gets, gat, add, replace, incr, decr, append,
 * prepend, cas, touch, delete, mg, ma, md, scan); later items and other
 * keys stay, whatever their cas. Nested prefixes, a prefix equal to a
 * whole key, bytes 0x80-0xff and control bytes. Most checks run twice:
 * with the sweep paused (lru_crawler disable: the reads' check of pending
 * tombstones hides the items), then swept and retired (the items are out
 * of the table). The pending bound; a tombstone outliving the sweep pass
 * under way when it came; the counters; a clean exit with tombstones
 * pending; a model check of random sets, deletes, gets and flushes over
 * nested prefixes. memcached has no such command: skipped there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <rhkv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Retiring takes a grace period and a whole sweep pass: well under a
 * second normally, but an ASan or TSan rhkvd is many times slower. */
#define RETIRE_MS 30000

static struct srv srv;
static struct hconn *c, *c2;
static struct hbuf req;
static rhkv *rc_plain, *rc_ns;

/* Closes the connections and stops the server: its wait status. */
static int stop_server(void)
{
	hc_close(&c);
	hc_close(&c2);
	return srv_stop(&srv);
}

static void teardown(void)
{
	int status;

	hbuf_free(&req);
	rhkv_close(rc_plain);
	rhkv_close(rc_ns);
	rc_plain = rc_ns = NULL;
	if (!srv.pid)
		return;
	status = stop_server();
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(flush_prefix, .fini = teardown, .timeout = 120);

static void start(const char *const *extra)
{
	START_RHKVD(&srv, extra, &c, "flush_prefix and mf");
}

/* Stops the server and asserts a clean exit, in the test's body. */
static void finish(void)
{
	H_EXPECT_EXIT_OK(stop_server(), "the server after SIGTERM");
}

/* Sends req's bytes and empties it. */
static void send_req(struct hconn *conn)
{
	cr_assert_eq(hc_send(conn, req.p, req.len), 0, "send: errno %d", errno);
	req.len = 0;
}

/* Expects the NUL-terminated reply exp. */
static void expect_str(struct hconn *conn, const char *exp)
{
	EXPECT_N(conn, exp, strlen(exp));
}

/* set key (any bytes but space, \n, NUL) to val: STORED. */
static void set_on(struct hconn *conn, const char *key, const char *val)
{
	hbuf_printf(&req, "set %s 0 0 %zu\r\n%s\r\n", key, strlen(val), val);
	send_req(conn);
	expect_str(conn, "STORED\r\n");
}

static void set_kv(const char *key, const char *val)
{
	set_on(c, key, val);
}

/* get key: exactly val's VALUE block, or a miss when val is NULL. Byte
 * for byte, so that keys of any bytes are compared as they are. */
static void get_is_on(struct hconn *conn, const char *key, const char *val)
{
	hbuf_printf(&req, "get %s\r\n", key);
	send_req(conn);
	if (val) {
		hbuf_printf(&req, "VALUE %s 0 %zu\r\n%s\r\nEND\r\n", key,
			    strlen(val), val);
		hbuf_add(&req, "", 1);
		expect_str(conn, req.p);
		req.len = 0;
	} else {
		expect_str(conn, "END\r\n");
	}
}

static void get_is(const char *key, const char *val)
{
	get_is_on(c, key, val);
}

/* flush_prefix p: OK. */
static void flush_ok(const char *p)
{
	hbuf_printf(&req, "flush_prefix %s\r\n", p);
	send_req(c);
	expect_str(c, "OK\r\n");
}

static unsigned long long stat_of(const char *name)
{
	struct hstats s;
	unsigned long long v;

	cr_assert_eq(hc_stats(c, "", &s, H_TIMEOUT_MS), 0, "stats");
	cr_assert_eq(hstats_u64(&s, name, &v), 0, "no stat %s", name);
	return v;
}

/* stats settings says whether the sweep runs. */
static void crawler_is(const char *want)
{
	struct hstats s;
	const char *v;

	cr_assert_eq(hc_stats(c, "settings", &s, H_TIMEOUT_MS), 0);
	v = hstats_get(&s, "lru_crawler");
	cr_assert_not_null(v, "no lru_crawler in stats settings");
	cr_assert_str_eq(v, want);
}

/* Polls until no tombstone is pending; fails after RETIRE_MS. */
static void wait_retired(void)
{
	long long end = h_now_ms() + RETIRE_MS;
	unsigned long long n;

	while ((n = stat_of("prefix_tombstones")) != 0 && h_now_ms() < end)
		h_sleep_ms(20);
	cr_assert_eq(n, 0, "%llu tombstones still pending after %d ms", n,
		     RETIRE_MS);
}

/* A key and the value a get must show (NULL: a miss). */
struct kv {
	const char *key, *val;
};

static void check_all(const struct kv *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		get_is(t[i].key, t[i].val);
}

/*
 * The checks of a test run twice. First with the sweep paused: no
 * tombstone retires and no covered item leaves the table but by a read,
 * so what hides them is the reads' check of the tombstones. Then, the
 * sweep resumed and every tombstone retired, the covered items must be
 * out of the table and the others still there.
 */
static void pause_sweep(void)
{
	RT(c, "lru_crawler disable\r\n", "OK\r\n");
}

static void check_swept(const struct kv *t, size_t n)
{
	check_all(t, n);
	RT(c, "lru_crawler enable\r\n", "OK\r\n");
	wait_retired();
	check_all(t, n);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Every command on a covered key acts as on a missing one; keys outside
 * the prefix, and the one stored after it, stay. */
Test(flush_prefix, every_command_misses)
{
	static const char *const names[] = {
		"user:get",  "user:gets", "user:gat",	"user:add",
		"user:repl", "user:incr", "user:decr",	"user:app",
		"user:prep", "user:cas",  "user:touch", "user:del",
		"user:mg",   "user:ma",	  "user:md",	"user:"
	};
	struct hvalue v;
	unsigned long long cas;

	start(NULL);
	pause_sweep();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		set_kv(names[i], "7");
	set_kv("use", "kept");
	set_kv("users", "kept");
	set_kv("other:1", "kept");
	SEND(c, "gets user:cas\r\n");
	cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 1, "%s", v.line);
	cas = v.cas;
	cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 0, "%s", v.line);

	RT(c, "flush_prefix user:\r\n", "OK\r\n");
	set_kv("user:after", "new");

	RT(c, "get user:get\r\n", "END\r\n");
	RT(c, "get user:\r\n", "END\r\n");
	SEND(c, "gets user:gets other:1 user:get\r\n");
	cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 1, "%s", v.line);
	cr_assert_str_eq(v.key, "other:1");
	cr_assert_eq(hc_value(c, &v, H_TIMEOUT_MS), 0, "%s", v.line);
	RT(c, "gat 0 user:gat\r\n", "END\r\n");
	RT(c, "gats 0 user:gat\r\n", "END\r\n");
	RT(c, "replace user:repl 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "incr user:incr 1\r\n", "NOT_FOUND\r\n");
	RT(c, "decr user:decr 1\r\n", "NOT_FOUND\r\n");
	RT(c, "append user:app 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "prepend user:prep 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	hbuf_printf(&req, "cas user:cas 0 0 1 %llu\r\nx\r\n", cas);
	send_req(c);
	EXPECT(c, "NOT_FOUND\r\n");
	RT(c, "touch user:touch 0\r\n", "NOT_FOUND\r\n");
	RT(c, "delete user:del\r\n", "NOT_FOUND\r\n");
	RT(c, "mg user:mg v\r\n", "EN\r\n");
	RT(c, "ma user:ma\r\n", "NF\r\n");
	RT(c, "md user:md\r\n", "NF\r\n");
	/* add stores where the flushed item was, and it is then found */
	RT(c, "add user:add 0 0 3\r\nnew\r\n", "STORED\r\n");
	get_is("user:add", "new");

	get_is("user:after", "new");
	get_is("use", "kept");
	get_is("users", "kept");
	get_is("other:1", "kept");
	/* nothing else of the prefix came back, nor does once swept */
	RT(c, "lru_crawler enable\r\n", "OK\r\n");
	wait_retired();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i], "user:add"))
			get_is(names[i], NULL);
	get_is("user:add", "new");
	get_is("user:after", "new");
	get_is("other:1", "kept");
	finish();
}

/* An item's cas may be the client's (ms E<cas>): which items a flush
 * covers is decided by when they were stored, never by their cas. */
Test(flush_prefix, client_cas)
{
	static const struct kv end[] = {
		{ "e:big", NULL },
		{ "e:small", NULL },
		{ "e:after", "z" },
	};

	start(NULL);
	pause_sweep();
	RT(c, "ms e:big 1 E99999999999\r\nx\r\n", "HD\r\n");
	RT(c, "ms e:small 1 E1\r\ny\r\n", "HD\r\n");
	flush_ok("e:");
	RT(c, "ms e:after 1 E2\r\nz\r\n", "HD\r\n");
	RT(c, "mg e:after v c\r\n", "VA 1 c2\r\nz\r\n");
	check_swept(end, N_OF(end));
	finish();
}

/*
 * Nested and sibling prefixes: a covered key is found through the chain of
 * its prefixes whichever of them sorts last below it ("x25" under "x2"
 * with "x24" between them), prefixes sharing their first 8 bytes (the
 * search compares those as one integer), a key equal to its prefix, a
 * longer prefix flushed after a shorter one covering what came between.
 */
Test(flush_prefix, nested_prefixes)
{
	static const struct kv end[] = {
		{ "a", NULL },
		{ "ab", NULL },
		{ "abc", NULL },
		{ "abd", NULL },
		{ "b", "1" },
		{ "ba", "1" },
		{ "abx", NULL },
		{ "abcq", NULL },
		{ "abz", "3" },
		{ "abcr", NULL },
		{ "aa", "3" },
		{ "x2a", NULL },
		{ "x25", NULL },
		{ "x241", NULL },
		{ "x25n", "2" },
		{ "x24n", NULL },
		{ "x3", "1" },
		{ "x1", "1" },
		{ "namespace:alpha:1", NULL },
		{ "namespace:beta:1", NULL },
		{ "namespace:gamma:1", "1" },
		{ "namespac", "1" },
	};

	start(NULL);
	pause_sweep();
	set_kv("a", "1");
	set_kv("ab", "1");
	set_kv("abc", "1");
	set_kv("abd", "1");
	set_kv("b", "1");
	set_kv("ba", "1");
	flush_ok("ab");
	get_is("a", "1");
	get_is("ab", NULL);
	get_is("abc", NULL);
	get_is("b", "1");
	get_is("ba", "1");

	set_kv("abx", "2");
	set_kv("abcq", "2");
	flush_ok("a");
	set_kv("abz", "3");
	set_kv("abcr", "3");
	set_kv("aa", "3");
	flush_ok("abc");

	set_kv("x2a", "1");
	set_kv("x25", "1");
	set_kv("x241", "1");
	set_kv("x3", "1");
	set_kv("x1", "1");
	flush_ok("x2");
	set_kv("x25n", "2");
	set_kv("x24n", "2");
	flush_ok("x24");

	set_kv("namespace:alpha:1", "1");
	set_kv("namespace:beta:1", "1");
	set_kv("namespace:gamma:1", "1");
	set_kv("namespac", "1");
	flush_ok("namespace:beta");
	flush_ok("namespace:alpha:");
	check_swept(end, N_OF(end));
	finish();
}

/* A prefix of the longest key length equals a whole key; one byte more is
 * refused and flushes nothing. */
Test(flush_prefix, whole_key_prefix)
{
	static char key[252], shorter[251];
	const struct kv end[] = { { key, NULL }, { shorter, NULL } };

	memset(key, 'k', 250);
	memcpy(shorter, key, 249);
	start(NULL);
	pause_sweep();
	set_kv(key, "long");
	set_kv(shorter, "short");
	key[250] = 'k';
	hbuf_printf(&req, "flush_prefix %s\r\n", key);
	send_req(c);
	EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	key[250] = '\0';
	get_is(key, "long");
	flush_ok(key);
	get_is(key, NULL);
	get_is(shorter, "short");
	flush_ok(shorter);
	check_swept(end, N_OF(end));
	finish();
}

/* Text keys may hold any byte but space, \n and NUL: prefixes of high
 * bytes (compared unsigned) and control bytes. */
Test(flush_prefix, high_and_control_bytes)
{
	static const char *const prefixes[] = { "\x80", "\xff\xfe", "\x01\t",
						"\x1b\r", "\xc1" };
	static const struct kv end[] = {
		{ "\x80"
		  "a",
		  NULL },
		{ "\x7f"
		  "a",
		  "1" },
		{ "\xff\xfe"
		  "x",
		  NULL },
		{ "\xff\xff", "1" },
		{ "\xfe", "1" },
		{ "\x01\tk", NULL },
		{ "\x01k", "1" },
		{ "\x1b\r\x0b", NULL },
		{ "\xc0\xc1", "1" },
		{ "\xc1", NULL },
	};

	start(NULL);
	pause_sweep();
	for (size_t i = 0; i < N_OF(end); i++)
		set_kv(end[i].key, "1");
	for (size_t i = 0; i < N_OF(prefixes); i++)
		flush_ok(prefixes[i]);
	check_swept(end, N_OF(end));
	finish();
}

/* Items stored after the reply stay: on another connection right after
 * OK, and in the same pipelined write right after the command. */
Test(flush_prefix, later_items_kept)
{
	start(NULL);
	c2 = hc_open(srv.port);
	cr_assert_not_null(c2, "connect: errno %d", errno);
	set_kv("p:old", "1");
	flush_ok("p:");
	set_on(c2, "p:new", "2");
	get_is_on(c2, "p:new", "2");
	get_is("p:new", "2");
	get_is_on(c2, "p:old", NULL);

	RT(c, "set p:x 0 0 1\r\nx\r\nflush_prefix p:\r\nset p:y 0 0 1\r\ny\r\n",
	   "STORED\r\nOK\r\nSTORED\r\n");
	get_is("p:x", NULL);
	get_is("p:y", "y");
	get_is_on(c2, "p:new", NULL);
	finish();
}

/* scan never returns a covered key, and returns every other one. */
Test(flush_prefix, scan_skips_covered)
{
	enum { N = 200 };
	static char seen[N];
	unsigned long long cursor = 0;
	long long end;
	char line[300];
	int calls = 0;

	start(NULL);
	/* paused: the scan's own check hides them, not the sweep */
	pause_sweep();
	for (int i = 0; i < N; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s:%d", i % 2 ? "s" : "t", i);
		set_kv(key, "v");
	}
	flush_ok("s:");
	end = h_now_ms() + 60000;
	do {
		cr_assert_eq(hc_sendf(c, "scan %llu count 50\r\n", cursor), 0);
		for (;;) {
			long n = hc_line(c, line, sizeof(line), H_TIMEOUT_MS);
			int i;

			cr_assert_gt(n, 2, "scan: no reply");
			line[n - 2] = '\0';
			if (strncmp(line, "CURSOR ", 7) == 0) {
				cursor = strtoull(line + 7, NULL, 10);
				break;
			}
			cr_assert(sscanf(line, "KEY t:%d", &i) == 1 && i >= 0 &&
					  i < N,
				  "scan returned \"%s\"", line);
			seen[i] = 1;
		}
		calls++;
	} while (cursor && h_now_ms() < end);
	cr_assert_eq(cursor, 0, "scan unfinished after %d calls", calls);
	for (int i = 0; i < N; i += 2)
		cr_assert(seen[i], "t:%d not scanned", i);
	finish();
}

/* noreply: nothing is answered, the flush happened; a third word other
 * than noreply is refused. A prefix spelled "noreply" is a prefix. */
Test(flush_prefix, noreply)
{
	start(NULL);
	set_kv("n:1", "1");
	set_kv("noreply:1", "1");
	RT(c, "flush_prefix n: noreply\r\nget n:1\r\n", "END\r\n");
	RT(c, "flush_prefix noreply\r\n", "OK\r\n");
	get_is("noreply:1", NULL);
	RT(c, "flush_prefix o: norep\r\n",
	   "CLIENT_ERROR bad command line format\r\n");
	finish();
}

/* mf and each of its flags. */
Test(flush_prefix, meta_mf)
{
	/* each flushes m:, and then m:<i> is gone: "m:" is bTo= in base64,
	 * k echoes the prefix as given, q answers nothing (mn shows it) */
	static const struct {
		const char *req, *rep;
	} ok[] = {
		{ "mf m:\r\n", "HD\r\n" },
		{ "mf bTo= b\r\n", "HD\r\n" },
		{ "mf m: k\r\n", "HD km:\r\n" },
		{ "mf bTo= b k O77\r\n", "HD kbTo= b O77\r\n" },
		{ "mf m: Oabc\r\n", "HD Oabc\r\n" },
		{ "mf m: q\r\nmn\r\n", "MN\r\n" },
	};

	start(NULL);
	set_kv("mm", "1");
	for (size_t i = 0; i < N_OF(ok); i++) {
		char key[16];

		snprintf(key, sizeof(key), "m:%zu", i);
		set_kv(key, "1");
		SEND_N(c, ok[i].req, strlen(ok[i].req));
		expect_str(c, ok[i].rep);
		get_is(key, NULL);
	}
	get_is("mm", "1");

	/* errors, also in quiet mode; none of them flushed anything */
	set_kv("m:7", "1");
	RT(c, "mf m: x\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
	RT(c, "mf m: q T1\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
	RT(c, "mf m: k k\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
	/* a base64 prefix that does not decode, as md answers one */
	RT(c, "mf !!! b\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
	RT(c, "mf m: O123456789012345678901234567890123\r\n",
	   "CLIENT_ERROR opaque token too long\r\n");
	RT(c, "mf\r\n", "ERROR\r\n");
	hbuf_printf(&req, "mf %0251d\r\n", 0);
	send_req(c);
	EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	get_is("m:7", "1");
	finish();
}

Test(flush_prefix, text_errors)
{
	start(NULL);
	set_kv("e:1", "1");
	RT(c, "flush_prefix\r\n", "ERROR\r\n");
	RT(c, "flush_prefix e: noreply x\r\n", "ERROR\r\n");
	RT(c, "flush_prefix e: x\r\n",
	   "CLIENT_ERROR bad command line format\r\n");
	hbuf_printf(&req, "flush_prefix %0251d\r\n", 0);
	send_req(c);
	EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	get_is("e:1", "1");
	cr_assert_eq(stat_of("cmd_flush_prefix"), 0);
	finish();
}

/* -F refuses every form; nothing is flushed or counted. */
Test(flush_prefix, disable_flush_all)
{
	static const char *const extra[] = { "-F", NULL };

	start(extra);
	set_kv("f:1", "1");
	RT(c, "flush_prefix f:\r\n",
	   "CLIENT_ERROR flush_prefix not allowed\r\n");
	RT(c, "mf f:\r\n", "CLIENT_ERROR flush_prefix not allowed\r\n");
	RT(c, "mf f: q\r\n", "CLIENT_ERROR flush_prefix not allowed\r\n");
	get_is("f:1", "1");
	cr_assert_eq(stat_of("prefix_tombstones"), 0);
	cr_assert_eq(stat_of("cmd_flush_prefix"), 0);

	rc_plain = NULL;
	cr_assert_eq(rhkv_connect(&rc_plain, "127.0.0.1", srv.port, NULL), 0);
	cr_assert_neq(rhkv_flush_prefix(rc_plain, "f:", 2), 0);
	get_is("f:1", "1");
	finish();
}

/*
 * The bound, made deterministic by pausing the sweep: a third distinct
 * prefix is refused (text and meta) and flushes nothing, a pending prefix
 * flushed again is accepted at the bound. Resumed, the sweep unlinks what
 * they cover (curr_items drops, prefix_reclaimed grows: no read touched
 * those keys) and the tombstones retire, after which the bound is free.
 */
Test(flush_prefix, pending_bound)
{
	static const char *const extra[] = { "--max-prefix-flushes", "2",
					     NULL };
	enum { PER = 50 };
	unsigned long long items;

	start(extra);
	RT(c, "lru_crawler disable\r\n", "OK\r\n");
	crawler_is("no");
	for (int i = 0; i < PER; i++) {
		char key[32];

		for (int p = 1; p <= 3; p++) {
			snprintf(key, sizeof(key), "b%d:%d", p, i);
			set_kv(key, "v");
		}
	}
	set_kv("other", "v");
	items = stat_of("curr_items");
	cr_assert_eq(items, 3 * PER + 1);

	flush_ok("b1:");
	flush_ok("b2:");
	RT(c, "flush_prefix b3:\r\n",
	   "SERVER_ERROR too many pending prefix flushes\r\n");
	RT(c, "mf b3:\r\n", "SERVER_ERROR too many pending prefix flushes\r\n");
	RT(c, "mf b3: q\r\nmn\r\n",
	   "SERVER_ERROR too many pending prefix flushes\r\nMN\r\n");
	flush_ok("b1:");
	RT(c, "mf b2: q\r\nmn\r\n", "MN\r\n");
	cr_assert_eq(stat_of("prefix_tombstones"), 2);
	cr_assert_eq(stat_of("prefix_flushes_refused"), 3);
	cr_assert_eq(stat_of("cmd_flush_prefix"), 7);
	cr_assert_eq(stat_of("prefix_tombstones_retired"), 0);
	/* paused: still pending a while later */
	h_sleep_ms(300);
	cr_assert_eq(stat_of("prefix_tombstones"), 2);
	get_is("b3:0", "v");

	RT(c, "lru_crawler enable\r\n", "OK\r\n");
	crawler_is("yes");
	wait_retired();
	cr_assert_eq(stat_of("prefix_tombstones_retired"), 2);
	cr_assert_eq(stat_of("curr_items"), PER + 1);
	cr_assert_eq(stat_of("prefix_reclaimed"), 2 * PER);
	for (int i = 0; i < PER; i++) {
		char key[32];

		snprintf(key, sizeof(key), "b1:%d", i);
		get_is(key, NULL);
		snprintf(key, sizeof(key), "b2:%d", i);
		get_is(key, NULL);
		snprintf(key, sizeof(key), "b3:%d", i);
		get_is(key, "v");
	}
	get_is("other", "v");
	flush_ok("b3:");
	get_is("b3:0", NULL);
	finish();
}

/*
 * A tombstone retires only after a whole sweep pass that began after it:
 * the pass under way when it came has already passed some of what it
 * covers. Made deterministic by pausing the sweep in the middle of a pass
 * (crawler_items_checked grew, lru_crawler_starts did not), flushing, and
 * resuming: once the tombstone retired, none of the covered items may be
 * left in the table.
 */
Test(flush_prefix, retire_after_whole_pass)
{
	static const char *const extra[] = { "-m", "256", NULL };
	enum { N = 200000, BATCH = 2000 };
	unsigned long long starts, checked, tries = 0;
	bool mid_pass = false;

	start(extra);
	for (int i = 0; i < N; i += BATCH) {
		for (int j = i; j < i + BATCH; j++)
			hbuf_printf(&req, "set big:%d 0 0 1 noreply\r\nv\r\n",
				    j);
		send_req(c);
	}
	set_kv("small", "v");
	cr_assert_eq(stat_of("curr_items"), N + 1);

	/* A pass takes many maintenance ticks at this size; a pass that
	 * ended before the pause is tried again. */
	while (!mid_pass && tries++ < 5) {
		long long end = h_now_ms() + RETIRE_MS;

		starts = stat_of("lru_crawler_starts");
		checked = stat_of("crawler_items_checked");
		RT(c, "lru_crawler crawl all\r\n", "OK\r\n");
		while (stat_of("crawler_items_checked") == checked &&
		       h_now_ms() < end)
			h_sleep_ms(1);
		pause_sweep();
		mid_pass = stat_of("lru_crawler_starts") == starts;
		if (!mid_pass)
			RT(c, "lru_crawler enable\r\n", "OK\r\n");
	}
	cr_assert(mid_pass, "every pass ended before the sweep paused");
	flush_ok("big:");
	set_kv("big:later", "v");
	/* paused: the maintenance thread arms the tombstone meanwhile */
	h_sleep_ms(300);
	cr_assert_eq(stat_of("prefix_tombstones"), 1);
	RT(c, "lru_crawler enable\r\n", "OK\r\n");
	wait_retired();
	cr_assert_eq(stat_of("curr_items"), 2);
	cr_assert_eq(stat_of("prefix_reclaimed"), N);
	get_is("big:0", NULL);
	get_is("big:later", "v");
	get_is("small", "v");
	finish();
}

/* The counters from a fresh server through one flush and its
 * retirement. */
Test(flush_prefix, stats_counters)
{
	static const char *const names[] = {
		"cmd_flush_prefix", "prefix_tombstones", "prefix_reclaimed",
		"prefix_tombstones_retired", "prefix_flushes_refused"
	};

	start(NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_eq(stat_of(names[i]), 0, "%s", names[i]);
	for (int i = 0; i < 10; i++) {
		char key[32];

		snprintf(key, sizeof(key), "z:%d", i);
		set_kv(key, "v");
	}
	set_kv("y", "v");
	flush_ok("z:");
	cr_assert_eq(stat_of("cmd_flush_prefix"), 1);
	wait_retired();
	cr_assert_eq(stat_of("prefix_tombstones_retired"), 1);
	cr_assert_eq(stat_of("prefix_reclaimed"), 10);
	cr_assert_eq(stat_of("curr_items"), 1);
	cr_assert_eq(stat_of("prefix_flushes_refused"), 0);
	get_is("z:0", NULL);
	get_is("y", "v");
	finish();
}

/* The msgpack op through librhkv: the handle's key prefix goes in front
 * of the flushed prefix as of any key; bad prefixes are refused by the
 * library, the bound by the server. */
Test(flush_prefix, msgpack_librhkv)
{
	static const char *const extra[] = { "--max-prefix-flushes", "1",
					     NULL };
	struct rhkv_options o;
	struct rhkv_value v;
	char big[251];

	start(extra);
	cr_assert_eq(rhkv_connect(&rc_plain, "127.0.0.1", srv.port, NULL), 0);
	rhkv_options_init(&o);
	o.key_prefix = "ns1:";
	cr_assert_eq(rhkv_connect(&rc_ns, "127.0.0.1", srv.port, &o), 0);
	set_kv("lp:a", "1");
	set_kv("ns1:lp:a", "1");
	set_kv("ns1:lq", "1");
	cr_assert_eq(rhkv_flush_prefix(rc_ns, "lp:", 3), 0, "%s",
		     rhkv_errstr(rc_ns));
	get_is("ns1:lp:a", NULL);
	get_is("ns1:lq", "1");
	get_is("lp:a", "1");
	cr_assert_eq(rhkv_get(rc_ns, "lq", 2, &v), 0);
	rhkv_value_free(&v);
	cr_assert_eq(rhkv_get(rc_ns, "lp:a", 4, &v), RHKV_ENOTFOUND);
	/* msgpack keys and prefixes may hold what text ones cannot (after
	 * the first retired: the bound is 1) */
	wait_retired();
	cr_assert_eq(rhkv_set(rc_plain, "s p\n:1", 6, "1", 1, 0, 0, NULL), 0);
	cr_assert_eq(rhkv_set(rc_plain, "s p:1", 5, "1", 1, 0, 0, NULL), 0);
	cr_assert_eq(rhkv_flush_prefix(rc_plain, "s p\n", 4), 0);
	cr_assert_eq(rhkv_get(rc_plain, "s p\n:1", 6, &v), RHKV_ENOTFOUND);
	cr_assert_eq(rhkv_get(rc_plain, "s p:1", 5, &v), 0);
	rhkv_value_free(&v);
	wait_retired();

	/* the bound of 1 is free once those retire; then, the sweep
	 * paused, lp: stays pending and holds it */
	RT(c, "lru_crawler disable\r\n", "OK\r\n");
	cr_assert_eq(rhkv_flush_prefix(rc_plain, "lp:", 3), 0, "%s",
		     rhkv_errstr(rc_plain));
	cr_assert_eq(rhkv_get(rc_plain, "lp:a", 4, &v), RHKV_ENOTFOUND);
	get_is("lp:a", NULL);
	cr_assert_eq(rhkv_set(rc_plain, "lp:b", 4, "2", 1, 0, 0, NULL), 0);
	get_is("lp:b", "2");
	cr_assert_eq(rhkv_flush_prefix(rc_plain, "lr:", 3), RHKV_ESERVER);
	cr_assert(strstr(rhkv_errstr(rc_plain),
			 "too many pending prefix flushes"),
		  "%s", rhkv_errstr(rc_plain));
	cr_assert_eq(rhkv_flush_prefix(rc_plain, "lp:", 3), 0);
	get_is("lp:b", NULL);

	memset(big, 'p', sizeof(big));
	cr_assert_eq(rhkv_flush_prefix(rc_plain, big, 251), RHKV_EBADKEY);
	cr_assert_eq(rhkv_flush_prefix(rc_plain, big, 0), RHKV_EBADKEY);
	/* 4 + 247 bytes: over the limit with the handle's prefix */
	cr_assert_eq(rhkv_flush_prefix(rc_ns, big, 247), RHKV_EBADKEY);
	/* still a usable connection */
	cr_assert_eq(rhkv_ping(rc_plain), 0);
	finish();
}

/* ---- the model check ---- */

#define M_KEYS 200
#define M_OPS  3000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* xorshift64*: the same sequence on every run. */
static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32) % n;
}

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/*
 * One connection, a fixed seed: sets, deletes, gets and flushes of nested
 * prefixes over 200 keys, every get compared with a model of what must be
 * visible: half of them while the sweep runs and retires tombstones under
 * them, half with it paused. Then, the sweep resumed and no tombstone
 * pending, every key again, and curr_items equals the model's count: the
 * sweep left nothing it covered behind.
 */
Test(flush_prefix, model_check)
{
	static const char *const groups[] = { "m:a:1:", "m:a:", "m:b:", "m:",
					      "n:" };
	static const char *const prefixes[] = { "m",	  "m:",	   "m:a",
						"m:a:",	  "m:a:1", "m:a:1:1",
						"m:b",	  "n",	   "n:3",
						"m:a:1:", "m:b:1" };
	static char keys[M_KEYS][16];
	static char model[M_KEYS][16];
	static bool present[M_KEYS];
	unsigned int n_prefix = sizeof(prefixes) / sizeof(prefixes[0]);
	unsigned long long live = 0;
	int flushes = 0;

	start(NULL);
	for (int i = 0; i < M_KEYS; i++)
		snprintf(keys[i], sizeof(keys[i]), "%s%d", groups[i % 5],
			 i / 5);
	for (int op = 0; op < M_OPS; op++) {
		uint32_t r = rnd(100);
		int k = (int)rnd(M_KEYS);

		/* the second half with the sweep paused: the reads' check of
		 * pending tombstones alone hides what they cover */
		if (op == M_OPS / 2)
			pause_sweep();

		if (r < 40) {
			snprintf(model[k], sizeof(model[k]), "v%d", op);
			set_kv(keys[k], model[k]);
			present[k] = true;
		} else if (r < 45) {
			const char *p = prefixes[rnd(n_prefix)];

			flush_ok(p);
			flushes++;
			for (int i = 0; i < M_KEYS; i++)
				if (starts_with(keys[i], p))
					present[i] = false;
		} else if (r < 55) {
			hbuf_printf(&req, "delete %s\r\n", keys[k]);
			send_req(c);
			expect_str(c, present[k] ? "DELETED\r\n"
						 : "NOT_FOUND\r\n");
			present[k] = false;
		} else {
			get_is(keys[k], present[k] ? model[k] : NULL);
		}
	}
	cr_assert_gt(flushes, 50);
	cr_assert_gt(stat_of("prefix_tombstones"), 0);
	RT(c, "lru_crawler enable\r\n", "OK\r\n");
	wait_retired();
	for (int i = 0; i < M_KEYS; i++) {
		get_is(keys[i], present[i] ? model[i] : NULL);
		live += present[i];
	}
	cr_assert_eq(stat_of("curr_items"), live);
	cr_assert_eq(stat_of("cmd_flush_prefix"), (unsigned long long)flushes);
	finish();
}

/*
 * Stopping with a tombstone pending (the sweep paused): the server frees
 * the published set and the tombstones, and exits 0. Flushes that retired
 * first left freed sets behind, whose memory the last set reuses as it
 * would in a long-running server.
 */
Test(flush_prefix, exit_with_pending)
{
	start(NULL);
	for (int i = 0; i < 3; i++) {
		set_kv("q:1", "1");
		flush_ok("q:");
		wait_retired();
		h_sleep_ms(50);
	}
	set_kv("q:1", "1");
	RT(c, "lru_crawler disable\r\n", "OK\r\n");
	flush_ok("q:");
	get_is("q:1", NULL);
	cr_assert_eq(stat_of("prefix_tombstones"), 1);
	finish();
}
