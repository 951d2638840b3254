/*
 * Text protocol, command by command: every command and reply string of the
 * memcached text protocol, byte for byte, against a fresh server per test.
 * Every expectation was checked against memcached 1.6.18; where memcached
 * and the rhkvd issue differ, memcached's bytes are expected (see README.md).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

/* What a test allocates lives here, freed by teardown even when an
 * assertion ends the test early (no leak reports on failures). */
static struct srv srv;
static struct hconn *c, *c2;
static struct hbuf breq, brep;
static struct hvalue hv;
static char big[5000000];

static void start_with(const char *const *extra)
{
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

static void setup(void)
{
	start_with(NULL);
}

static void setup_1k(void)
{
	static const char *const extra[] = { "-I", "1k", NULL };

	start_with(extra);
}

static void setup_no_flush(void)
{
	static const char *const extra[] = { "-F", NULL };

	start_with(extra);
}

static void setup_shutdown(void)
{
	static const char *const extra[] = { "-A", NULL };

	start_with(extra);
}

static void teardown(void)
{
	int status;

	hc_close(&c);
	hc_close(&c2);
	hbuf_free(&breq);
	hbuf_free(&brep);
	if (!srv.pid)
		return;
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(text, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(text_1k, .init = setup_1k, .fini = teardown, .timeout = 60);
TestSuite(text_F, .init = setup_no_flush, .fini = teardown, .timeout = 60);
TestSuite(text_A, .init = setup_shutdown, .fini = teardown, .timeout = 60);

/* Reads one gets/gats item of KEY and the END after it; returns its cas. */
static unsigned long long read_one_cas(const char *key)
{
	struct hvalue *v = &hv;
	unsigned long long cas;

	cr_assert_eq(hc_value(c, v, H_TIMEOUT_MS), 1, "bad item: %s", v->line);
	cr_assert_str_eq(v->key, key);
	cr_assert_neq(v->cas, 0, "no cas on %s", v->line);
	cas = v->cas;
	EXPECT(c, "END\r\n");
	return cas;
}

static unsigned long long gets_cas(const char *key)
{
	cr_assert_eq(hc_sendf(c, "gets %s\r\n", key), 0);
	return read_one_cas(key);
}

/*
 * Reads the reply to "get KEY" of a counter: the digits, possibly padded
 * with spaces (memcached shortens a counter in place, padding with spaces;
 * protocol.txt allows it), then END.
 */
static void expect_counter(const char *key, const char *digits)
{
	struct hvalue *v = &hv;
	size_t n = strlen(digits);

	cr_assert_eq(hc_sendf(c, "get %s\r\n", key), 0);
	cr_assert_eq(hc_value(c, v, H_TIMEOUT_MS), 1, "bad item: %s", v->line);
	cr_assert(v->len >= n && memcmp(v->val, digits, n) == 0,
		  "%s: expected %s, got %.*s", key, digits, (int)v->len,
		  v->val);
	for (size_t i = n; i < v->len; i++)
		cr_assert_eq(v->val[i], ' ', "counter %s not space-padded",
			     key);
	EXPECT(c, "END\r\n");
}

Test(text, storage_commands)
{
	RT(c, "set k 0 0 5\r\nhello\r\n", "STORED\r\n");
	RT(c, "get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n");
	RT(c, "add k 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "add k2 3 0 2\r\nab\r\n", "STORED\r\n");
	RT(c, "replace nx 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "replace k 7 0 3\r\nnew\r\n", "STORED\r\n");
	/* append and prepend keep the item's flags, ignoring theirs */
	RT(c, "append k 9 0 3\r\n+ap\r\n", "STORED\r\n");
	RT(c, "prepend k 9 0 3\r\npp+\r\n", "STORED\r\n");
	RT(c, "get k\r\n", "VALUE k 7 9\r\npp+new+ap\r\nEND\r\n");
	RT(c, "append nx 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "prepend nx 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	RT(c, "get nx\r\n", "END\r\n");
	RT(c, "get k2\r\n", "VALUE k2 3 2\r\nab\r\nEND\r\n");
	RT(c, "set k 0 0 1 \r\nz\r\n", "STORED\r\n");	    /* trailing space */
	RT(c, "get  k\r\n", "VALUE k 0 1\r\nz\r\nEND\r\n"); /* two spaces */
}

Test(text, keys_of_250_bytes)
{
	char key[251], req[600];

	memset(key, 'k', 250);
	key[250] = '\0';
	snprintf(req, sizeof(req), "set %s 0 0 1\r\nx\r\n", key);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "STORED\r\n");
	snprintf(req, sizeof(req), "get %s\r\n", key);
	SEND_N(c, req, strlen(req));
	snprintf(req, sizeof(req), "VALUE %s 0 1\r\nx\r\nEND\r\n", key);
	EXPECT_N(c, req, strlen(req));
}

/*
 * memcached 1.6.18 stores keys with any bytes but space, "\n" and NUL:
 * control bytes, DEL and high bytes included (memcaslap's keys start with
 * such bytes). A NUL ends the line: what follows it is ignored.
 */
Test(text, keys_with_control_bytes)
{
	/* Literals with their lengths: some hold a NUL. */
#define L(req, rep)                                        \
	{                                                  \
		req, sizeof(req) - 1, rep, sizeof(rep) - 1 \
	}
	static const struct {
		const char *req;
		size_t nreq;
		const char *rep;
		size_t nrep;
	} rt[] = {
		L("set \x01\x02k 0 0 1\r\na\r\n", "STORED\r\n"),
		L("set a\tb 0 0 1\r\nb\r\n", "STORED\r\n"),
		L("set k\r 0 0 1\r\nc\r\n", "STORED\r\n"),
		L("set \x7f\x1f\x0b\x0c 0 0 1\r\nd\r\n", "STORED\r\n"),
		L("set \x80\xff 0 0 1\r\ne\r\n", "STORED\r\n"),
		L("get \x01\x02k a\tb\r\n",
		  "VALUE \x01\x02k 0 1\r\na\r\nVALUE a\tb 0 1\r\nb\r\nEND\r\n"),
		/* only the "\r" right before "\n" belongs to the line end */
		L("get k\r\r\n", "VALUE k\r 0 1\r\nc\r\nEND\r\n"),
		L("get k\r\n", "END\r\n"),
		L("get \x7f\x1f\x0b\x0c \x80\xff\r\n",
		  "VALUE \x7f\x1f\x0b\x0c 0 1\r\nd\r\n"
		  "VALUE \x80\xff 0 1\r\ne\r\nEND\r\n"),
		L("append a\tb 0 0 1\r\nB\r\n", "STORED\r\n"),
		L("touch a\tb 0\r\n", "TOUCHED\r\n"),
		L("set n\x01 0 0 1\r\n5\r\n", "STORED\r\n"),
		L("incr n\x01 2\r\n", "7\r\n"),
		L("gat 0 a\tb\r\n", "VALUE a\tb 0 2\r\nbB\r\nEND\r\n"),
		L("delete \x01\x02k\r\n", "DELETED\r\n"),
		L("get \x01\x02k\r\n", "END\r\n"),
		/* a NUL ends the line's content */
		L("get a\tb\0zz\r\n", "VALUE a\tb 0 2\r\nbB\r\nEND\r\n"),
		L("set z\0 0 0 1\r\nx\r\n", "ERROR\r\nERROR\r\n"),
		L("get z\r\n", "END\r\n"),
		L("set q 0 0 1 \0noreply\r\nx\r\n", "STORED\r\n"),
		L("get \0q\r\n", "ERROR\r\n"),
	};
#undef L

	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
		SEND_N(c, rt[i].req, rt[i].nreq);
		EXPECT_N(c, rt[i].rep, rt[i].nrep);
	}
	SYNC(c, &srv);
}

Test(text, binary_and_empty_values)
{
	char all[256];

	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	hbuf_printf(&breq, "set bin 0 0 256\r\n");
	hbuf_add(&breq, all, sizeof(all));
	hbuf_printf(&breq, "\r\nget bin\r\n");
	hbuf_printf(&brep, "STORED\r\nVALUE bin 0 256\r\n");
	hbuf_add(&brep, all, sizeof(all));
	hbuf_printf(&brep, "\r\nEND\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT_N(c, brep.p, brep.len);

	/* values that look like protocol */
	RT(c, "set crlf 0 0 9\r\n\r\nEND\r\n\r\n\r\n", "STORED\r\n");
	RT(c, "get crlf\r\n", "VALUE crlf 0 9\r\n\r\nEND\r\n\r\n\r\nEND\r\n");
	RT(c, "set nul 0 0 3\r\na\0b\r\n", "STORED\r\n");
	RT(c, "get nul\r\n", "VALUE nul 0 3\r\na\0b\r\nEND\r\n");

	/* zero-length values */
	RT(c, "set z 0 0 0\r\n\r\n", "STORED\r\n");
	RT(c, "get z\r\n", "VALUE z 0 0\r\n\r\nEND\r\n");
	RT(c, "append z 0 0 0\r\n\r\n", "STORED\r\n");
	RT(c, "append z 0 0 2\r\nab\r\n", "STORED\r\n");
	RT(c, "get z\r\n", "VALUE z 0 2\r\nab\r\nEND\r\n");
}

Test(text, flags_limits)
{
	RT(c, "set f0 0 0 1\r\na\r\n", "STORED\r\n");
	RT(c, "set fmax 4294967295 0 1\r\nb\r\n", "STORED\r\n");
	RT(c, "get f0 fmax\r\n",
	   "VALUE f0 0 1\r\na\r\nVALUE fmax 4294967295 1\r\nb\r\nEND\r\n");
	RT(c, "append fmax 0 0 1\r\nc\r\n", "STORED\r\n");
	RT(c, "gat 0 fmax\r\n", "VALUE fmax 4294967295 2\r\nbc\r\nEND\r\n");
	RT(c, "set fneg -1 0 1\r\na\r\n",
	   "CLIENT_ERROR bad command line format\r\nERROR\r\n");
}

/*
 * memcached reads flags, exptimes and data lengths as 64-bit numbers and
 * keeps the low 32 bits (flags 4294967296 -> 0, exptime 4294967295 -> -1,
 * 4294967297 bytes -> 1); rhkvd refused them before. Each case here would
 * expire nothing, or answer CLIENT_ERROR, without the cut.
 */
Test(text, numbers_cut_to_32_bits_as_memcached)
{
	RT(c, "set f32 4294967296 0 1\r\na\r\n", "STORED\r\n");
	RT(c, "set f64 18446744073709551615 0 1\r\nb\r\n", "STORED\r\n");
	RT(c, "get f32 f64\r\n",
	   "VALUE f32 0 1\r\na\r\nVALUE f64 4294967295 1\r\nb\r\nEND\r\n");
	/* 4294967295 is -1: already expired (not the year 2106) */
	RT(c, "set e1 0 4294967295 1\r\nx\r\n", "STORED\r\n");
	RT(c, "get e1\r\n", "END\r\n");
	RT(c, "set e2 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "touch e2 4294967295\r\n", "TOUCHED\r\n");
	RT(c, "get e2\r\n", "END\r\n");
	/* -4294967196 is 100 seconds, not already expired */
	RT(c, "set e3 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "gat -4294967196 e3\r\n", "VALUE e3 0 1\r\nx\r\nEND\r\n");
	RT(c, "get e3\r\n", "VALUE e3 0 1\r\nx\r\nEND\r\n");
	RT(c, "flush_all 4294967296\r\n", "OK\r\n"); /* 0: now */
	RT(c, "get e3\r\n", "END\r\n");
	/* a length of 4294967297 is 1 byte */
	RT(c, "set l 0 0 4294967297\r\nx\r\n", "STORED\r\n");
	RT(c, "get l\r\n", "VALUE l 0 1\r\nx\r\nEND\r\n");
	RT(c, "verbosity 4294967296\r\n", "OK\r\n");
	/* strtoull wraps a minus sign: -18446744073709551615 is 1 */
	RT(c, "set n 0 0 1\r\n5\r\n", "STORED\r\n");
	RT(c, "decr n -18446744073709551615\r\n", "4\r\n");
}

/* memcached's undocumented alias of get, which old clients send. */
Test(text, bget_is_get)
{
	RT(c, "set b 3 0 2\r\nhi\r\n", "STORED\r\n");
	RT(c, "bget b nx\r\n", "VALUE b 3 2\r\nhi\r\nEND\r\n");
	RT(c, "bget\r\n", "ERROR\r\n");
}

/*
 * A get or gat whose keys include one over 250 bytes is refused, but
 * memcached has fetched (and gat touched) the keys before it by then:
 * they count as fetched (mg h1), and gat -1 has expired them.
 */
Test(text, keys_before_a_too_long_key_are_fetched)
{
	char key[252], req[600];

	memset(key, 'K', 251);
	key[251] = '\0';
	RT(c, "set g 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "set t 0 0 1\r\nx\r\n", "STORED\r\n");
	snprintf(req, sizeof(req), "get g %s\r\n", key);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	RT(c, "mg g h\r\n", "HD h1\r\n");
	snprintf(req, sizeof(req), "gat -1 t %s g\r\n", key);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	RT(c, "get t g\r\n", "VALUE g 0 1\r\nx\r\nEND\r\n");
}

/*
 * Meta flags act in request order, and t answers the TTL as it stands at
 * its place (META.md, Replies): N30 then t on a miss is t30, whatever T
 * comes after; T60 then t is t60 though a later N30 makes it 30. (rhkvd
 * answered the final TTL wherever t stood.)
 */
Test(text, meta_t_answers_the_ttl_where_it_stands)
{
	char line[128];
	unsigned long long t;

	RT(c, "mg m1 N30 t T60\r\n", "HD t30 W\r\n");
	RT(c, "mg m2 T60 t N30\r\n", "HD t60 W\r\n");
	RT(c, "ma m3 N30 t T60\r\n", "HD t30\r\n");
	RT(c, "ma m4 t N30 T60\r\n", "HD t-1\r\n");
	/* N-1 makes an item that has already expired: its TTL is spelled as
	 * an unsigned 32-bit number, as mg T-1 t does (rhkvd said t-1,
	 * "never expires") */
	SEND(c, "ma m5 N-1 t\r\n");
	cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "HD t%llu", &t), 1, "%s", line);
	cr_expect_geq(t, 1ull << 31, "%s", line);
}

/* memcached compares no cas of 0: ms C0 I of an existing item is EX, not
 * a stale store (rhkvd stored it, stale). */
Test(text, meta_set_cas_zero_is_never_older)
{
	RT(c, "set s 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "ms s 1 C0 I\r\ny\r\n", "EX\r\n");
	RT(c, "mg s v\r\n", "VA 1\r\nx\r\n");
}

/* ma refuses an empty value before it looks at the cas (rhkvd: EX). */
Test(text, meta_arith_refuses_an_empty_value_before_the_cas)
{
	RT(c, "set e 0 0 0\r\n\r\n", "STORED\r\n");
	RT(c, "ma e C12345\r\n",
	   "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
}

/* An mg with T (or N, R, h, l) that fails on a too long opaque has not
 * marked the item fetched in memcached, which bumps such items only after
 * the reply is built; one without them has (rhkvd marked both). */
Test(text, meta_get_with_a_too_long_opaque_leaves_the_item_unfetched)
{
	static const char o33[] = "Oooooooooooooooooooooooooooooooooo";

	RT(c, "set o 0 0 1\r\nx\r\n", "STORED\r\n");
	SEND(c, "mg o T100 ");
	SEND(c, o33);
	SEND(c, "\r\nmg o h\r\n");
	EXPECT(c, "CLIENT_ERROR opaque token too long\r\nHD h0\r\n");
	RT(c, "set p 0 0 1\r\nx\r\n", "STORED\r\n");
	SEND(c, "mg p ");
	SEND(c, o33);
	SEND(c, "\r\nmg p h\r\n");
	EXPECT(c, "CLIENT_ERROR opaque token too long\r\nHD h1\r\n");
}

/* memcached's append and prepend make a new item whose key is not marked
 * binary, whatever the request's b: mg k answers it plain (rhkvd kept the
 * b of ms ... b MA and answered kYQ== b). */
Test(text, meta_append_with_a_binary_key_makes_a_plain_one)
{
	RT(c, "set a 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "ms YQ== 1 b MA\r\ny\r\n", "HD\r\n");
	RT(c, "mg a k v\r\n", "VA 2 ka\r\nxy\r\n");
	RT(c, "ms Yg== 1 b\r\nx\r\n", "HD\r\n");
	RT(c, "mg b k\r\n", "HD kYg== b\r\n");
	RT(c, "ms Yg== 1 b MP\r\ny\r\n", "HD\r\n");
	RT(c, "mg b k v\r\n", "VA 2 kb\r\nyx\r\n");
}

Test(text, multi_get_keeps_order_and_skips_misses)
{
	RT(c, "set a 1 0 1\r\nA\r\n", "STORED\r\n");
	RT(c, "set b 2 0 2\r\nBB\r\n", "STORED\r\n");
	RT(c, "set c 3 0 0\r\n\r\n", "STORED\r\n");
	RT(c, "get nx1 a nx2 b a c nx3\r\n",
	   "VALUE a 1 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nVALUE a 1 1\r\nA\r\n"
	   "VALUE c 3 0\r\n\r\nEND\r\n");
	RT(c, "get nx1 nx2\r\n", "END\r\n");

	unsigned long long ca = gets_cas("a"), cb = gets_cas("b");
	char exp[256];
	int n = snprintf(exp, sizeof(exp),
			 "VALUE b 2 2 %llu\r\nBB\r\nVALUE a 1 1 %llu\r\nA\r\n"
			 "END\r\n",
			 cb, ca);

	SEND(c, "gets nx b a\r\n");
	EXPECT_N(c, exp, (size_t)n);
}

Test(text, cas)
{
	unsigned long long cas, cas2;

	RT(c, "set k 0 0 1\r\na\r\n", "STORED\r\n");
	cas = gets_cas("k");
	hc_sendf(c, "cas k 0 0 1 %llu\r\nb\r\n", cas + 1);
	EXPECT(c, "EXISTS\r\n");
	hc_sendf(c, "cas nx 0 0 1 %llu\r\nb\r\n", cas);
	EXPECT(c, "NOT_FOUND\r\n");
	hc_sendf(c, "cas k 5 0 1 %llu\r\nb\r\n", cas);
	EXPECT(c, "STORED\r\n");
	RT(c, "get k\r\n", "VALUE k 5 1\r\nb\r\nEND\r\n");
	hc_sendf(c, "cas k 0 0 1 %llu\r\nc\r\n", cas);
	EXPECT(c, "EXISTS\r\n");
	cas2 = gets_cas("k");
	cr_assert_neq(cas2, cas, "a store must change the cas unique");
	RT(c, "set k 0 0 1\r\nd\r\n", "STORED\r\n");
	hc_sendf(c, "cas k 0 0 1 %llu\r\ne\r\n", cas2);
	EXPECT(c, "EXISTS\r\n");
	cas2 = gets_cas("k");
	/* noreply: silent on success and on failure */
	hc_sendf(c, "cas k 0 0 1 %llu noreply\r\nf\r\n", cas2);
	hc_sendf(c, "cas k 0 0 1 %llu noreply\r\ng\r\n", cas2);
	hc_sendf(c, "cas nx 0 0 1 %llu noreply\r\ng\r\n", cas2);
	SYNC(c, &srv);
	RT(c, "get k\r\n", "VALUE k 0 1\r\nf\r\nEND\r\n");
}

Test(text, incr_decr)
{
	RT(c, "set n 0 0 2\r\n10\r\n", "STORED\r\n");
	RT(c, "incr n 5\r\n", "15\r\n");
	RT(c, "decr n 3\r\n", "12\r\n");
	RT(c, "decr n 100\r\n", "0\r\n"); /* decr floors at 0 */
	RT(c, "incr n 18446744073709551615\r\n", "18446744073709551615\r\n");
	RT(c, "incr n 1\r\n", "0\r\n"); /* 2^64-1 + 1 wraps to 0 */
	RT(c, "set n 3 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
	RT(c, "incr n 2\r\n", "1\r\n");
	expect_counter("n", "1");
	RT(c, "set n 0 0 2\r\n99\r\n", "STORED\r\n");
	RT(c, "incr n 1\r\n", "100\r\n");
	RT(c, "get n\r\n", "VALUE n 0 3\r\n100\r\nEND\r\n");
	RT(c, "decr n 1\r\n", "99\r\n");
	expect_counter("n", "99");
	RT(c, "incr nx 1\r\n", "NOT_FOUND\r\n");
	RT(c, "decr nx 1\r\n", "NOT_FOUND\r\n");
	RT(c, "incr n 1 noreply\r\n", "");
	RT(c, "decr n 10 noreply\r\n", "");
	RT(c, "incr nx 1 noreply\r\n", "");
	SYNC(c, &srv);
	expect_counter("n", "90");
}

Test(text, incr_errors)
{
	static const char *const bad[] = {
		"abc", "-1", "", "12a", "184467440737095516160",
	};
	char req[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(req, sizeof(req), "set v 0 0 %zu\r\n%s\r\n",
			 strlen(bad[i]), bad[i]);
		SEND_N(c, req, strlen(req));
		EXPECT(c, "STORED\r\n");
		RT(c, "incr v 1\r\n",
		   "CLIENT_ERROR cannot increment or decrement non-numeric "
		   "value\r\n");
		RT(c, "decr v 1\r\n",
		   "CLIENT_ERROR cannot increment or decrement non-numeric "
		   "value\r\n");
	}
	RT(c, "set n 0 0 1\r\n5\r\n", "STORED\r\n");
	RT(c, "incr n abc\r\n",
	   "CLIENT_ERROR invalid numeric delta argument\r\n");
	RT(c, "incr n -1\r\n",
	   "CLIENT_ERROR invalid numeric delta argument\r\n");
	RT(c, "decr n 18446744073709551616\r\n",
	   "CLIENT_ERROR invalid numeric delta argument\r\n");
	RT(c, "incr n\r\n", "ERROR\r\n");
	RT(c, "incr\r\n", "ERROR\r\n");
	RT(c, "get n\r\n", "VALUE n 0 1\r\n5\r\nEND\r\n");
}

Test(text, delete)
{
	RT(c, "set k 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "delete k\r\n", "DELETED\r\n");
	RT(c, "delete k\r\n", "NOT_FOUND\r\n");
	RT(c, "get k\r\n", "END\r\n");
	RT(c, "set k 0 0 1\r\nx\r\n", "STORED\r\n");
	RT(c, "delete k 0\r\n", "DELETED\r\n"); /* legacy hold time 0 */
	RT(c, "delete k 5\r\n",
	   "CLIENT_ERROR bad command line format.  "
	   "Usage: delete <key> [noreply]\r\n");
	RT(c, "delete a b c\r\n",
	   "CLIENT_ERROR bad command line format.  "
	   "Usage: delete <key> [noreply]\r\n");
	RT(c, "set k 0 0 1\r\nx\r\n", "STORED\r\n");
	SEND(c,
	     "delete k noreply\r\ndelete k noreply\r\ndelete k 0 noreply\r\n");
	SYNC(c, &srv);
	RT(c, "get k\r\n", "END\r\n");
	RT(c, "delete\r\n", "ERROR\r\n");
}

Test(text, touch_and_gat)
{
	unsigned long long cas;
	char exp[128];

	RT(c, "set k 4 0 1\r\nv\r\n", "STORED\r\n");
	RT(c, "touch k 100\r\n", "TOUCHED\r\n");
	RT(c, "touch nx 100\r\n", "NOT_FOUND\r\n");
	SEND(c, "touch k 100 noreply\r\ntouch nx 100 noreply\r\n");
	SYNC(c, &srv);
	RT(c, "touch k\r\n", "ERROR\r\n");
	RT(c, "touch k abc\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	RT(c, "gat 100 k nx k\r\n",
	   "VALUE k 4 1\r\nv\r\nVALUE k 4 1\r\nv\r\nEND\r\n");
	RT(c, "gat 100 nx\r\n", "END\r\n");
	cas = gets_cas("k");
	SEND(c, "gats 100 k\r\n");
	snprintf(exp, sizeof(exp), "VALUE k 4 1 %llu\r\nv\r\nEND\r\n", cas);
	EXPECT_N(c, exp, strlen(exp));
	RT(c, "gat k\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	RT(c, "gat abc k\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	RT(c, "gat\r\n", "ERROR\r\n");
	RT(c, "gat 100\r\n", "END\r\n"); /* an exptime and no key */
	RT(c, "gats\r\n", "ERROR\r\n");
}

Test(text, exptime_relative_absolute_negative)
{
	long long t0 = h_now_ms(), now = (long long)time(NULL);
	char req[256];
	bool rel = true, abs = true;

	/* One-second clocks: an exptime of 3 (relative or absolute) ends 2 to
	 * 3 seconds from now, time enough for the first get on a busy
	 * machine. */
	RT(c, "set rel 0 3 1\r\nr\r\n", "STORED\r\n");
	snprintf(req, sizeof(req), "set abs 0 %lld 1\r\na\r\n", now + 3);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "STORED\r\n");
	RT(c, "set neg 0 -1 1\r\nn\r\n", "STORED\r\n");
	snprintf(req, sizeof(req), "set past 0 %lld 1\r\np\r\n", now - 100);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "STORED\r\n");
	RT(c, "set keep 0 0 1\r\nk\r\n", "STORED\r\n");
	RT(c, "get neg past\r\n", "END\r\n");
	RT(c, "get rel abs\r\n",
	   "VALUE rel 0 1\r\nr\r\nVALUE abs 0 1\r\na\r\nEND\r\n");
	/* both disappear after 2 to 3 seconds; the deadline is generous */
	while ((rel || abs) && h_now_ms() - t0 < 30000) {
		struct hvalue *v = &hv;
		int r;

		h_sleep_ms(100);
		SEND(c, "get rel abs\r\n");
		rel = abs = false;
		while ((r = hc_value(c, v, H_TIMEOUT_MS)) == 1) {
			rel |= strcmp(v->key, "rel") == 0;
			abs |= strcmp(v->key, "abs") == 0;
		}
		cr_assert_eq(r, 0, "bad get reply");
		if (rel)
			cr_assert_gt(h_now_ms() - t0, 0);
		if (!rel)
			cr_assert_geq(h_now_ms() - t0, 1900,
				      "a 3 s item expired after %lld ms",
				      h_now_ms() - t0);
	}
	cr_assert(!rel && !abs, "items with exptime 3 outlived 30 s");
	RT(c, "get keep\r\n", "VALUE keep 0 1\r\nk\r\nEND\r\n");
}

Test(text, touch_and_gat_extend_ttl)
{
	long long t0 = h_now_ms();
	bool ctl = true;

	/* A relative exptime of 3 lasts 2 seconds at least (one-second
	 * clocks): time enough for the touches on a busy machine. ctl, set
	 * last and not touched, tells when the others would have expired. */
	RT(c, "set t 0 3 1\r\nt\r\n", "STORED\r\n");
	RT(c, "set g 0 3 1\r\ng\r\n", "STORED\r\n");
	RT(c, "set gs 0 3 1\r\ns\r\n", "STORED\r\n");
	RT(c, "set ctl 0 3 1\r\nc\r\n", "STORED\r\n");
	RT(c, "touch t 100\r\n", "TOUCHED\r\n");
	RT(c, "gat 100 g\r\n", "VALUE g 0 1\r\ng\r\nEND\r\n");
	SEND(c, "gats 100 gs\r\n");
	(void)read_one_cas("gs");
	while (ctl && h_now_ms() - t0 < 30000) {
		char line[64];

		h_sleep_ms(100);
		SEND(c, "get ctl\r\n");
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		ctl = strcmp(line, "END\r\n") != 0;
		if (ctl)
			EXPECT(c, "c\r\nEND\r\n");
	}
	cr_assert(!ctl, "an exptime of 3 outlived 30 s");
	RT(c, "get t g gs\r\n",
	   "VALUE t 0 1\r\nt\r\nVALUE g 0 1\r\ng\r\nVALUE gs 0 "
	   "1\r\ns\r\nEND\r\n");
	/* touch with a negative exptime expires at once */
	RT(c, "touch t -1\r\n", "TOUCHED\r\n");
	RT(c, "get t\r\n", "END\r\n");
}

Test(text, flush_all)
{
	RT(c, "set a 0 0 1\r\na\r\n", "STORED\r\n");
	RT(c, "set b 0 0 1\r\nb\r\n", "STORED\r\n");
	RT(c, "flush_all\r\n", "OK\r\n");
	RT(c, "get a b\r\n", "END\r\n");
	RT(c, "set a 0 0 1\r\nA\r\n", "STORED\r\n"); /* later sets survive */
	RT(c, "get a\r\n", "VALUE a 0 1\r\nA\r\nEND\r\n");
	RT(c, "flush_all 0\r\n", "OK\r\n");
	RT(c, "get a\r\n", "END\r\n");
	RT(c, "set a 0 0 1\r\nA\r\n", "STORED\r\n");
	SEND(c, "flush_all noreply\r\n");
	SYNC(c, &srv);
	RT(c, "get a\r\n", "END\r\n");
	RT(c, "flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	RT(c, "flush_all noreply x\r\n",
	   "CLIENT_ERROR invalid exptime argument\r\n");
	RT(c, "flush_all foo bar\r\n",
	   "CLIENT_ERROR invalid exptime argument\r\n");
}

Test(text, flush_all_with_delay)
{
	long long t0;
	bool there = true;

	RT(c, "set a 0 0 1\r\na\r\n", "STORED\r\n");
	t0 = h_now_ms();
	/* A delay of 3 acts 2 seconds from now at the earliest (one-second
	 * clocks): time enough for the first get on a busy machine. */
	RT(c, "flush_all 3\r\n", "OK\r\n");
	RT(c, "get a\r\n", "VALUE a 0 1\r\na\r\nEND\r\n");
	while (there && h_now_ms() - t0 < 30000) {
		char line[64];

		h_sleep_ms(100);
		SEND(c, "get a\r\n");
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		there = strcmp(line, "END\r\n") != 0;
		if (there)
			EXPECT(c, "a\r\nEND\r\n");
	}
	cr_assert(!there, "flush_all 3 left the item for 30 s");
	cr_assert_geq(h_now_ms() - t0, 900, "flush_all 3 acted at once");
}

/* An append or prepend whose whole value would pass the item size limit
 * is NOT_STORED (ms: NS) and keeps the old item, as in memcached; rhkvd
 * stored it, past its own limit. */
Test(text_1k, append_past_the_limit_is_not_stored)
{
	memset(big, 'y', 5000000);
	hbuf_printf(&breq, "set k 0 0 900\r\n");
	hbuf_add(&breq, big, 900);
	hbuf_printf(&breq, "\r\nappend k 0 0 200\r\n");
	hbuf_add(&breq, big, 200);
	hbuf_printf(&breq, "\r\nprepend k 0 0 200\r\n");
	hbuf_add(&breq, big, 200);
	hbuf_printf(&breq, "\r\nms k 200 MA\r\n");
	hbuf_add(&breq, big, 200);
	hbuf_printf(&breq, "\r\nmg k s\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "STORED\r\nNOT_STORED\r\nNOT_STORED\r\nNS\r\nHD s900\r\n");
}

Test(text_1k, too_large_value)
{
	memset(big, 'y', 5000000);
	RT(c, "set k 0 0 5\r\nsmall\r\n", "STORED\r\n");
	hbuf_printf(&breq, "set k 0 0 2000\r\n");
	hbuf_add(&breq, big, 2000);
	hbuf_printf(&breq, "\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "SERVER_ERROR object too large for cache\r\n");
	/* a failed set removes the old item; the connection goes on */
	RT(c, "get k\r\n", "END\r\n");
	SYNC(c, &srv);

	/* other commands keep the old item */
	RT(c, "set k 0 0 5\r\nsmall\r\n", "STORED\r\n");
	breq.len = 0;
	hbuf_printf(&breq, "append k 0 0 2000\r\n");
	hbuf_add(&breq, big, 2000);
	hbuf_printf(&breq, "\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "SERVER_ERROR object too large for cache\r\n");
	RT(c, "get k\r\n", "VALUE k 0 5\r\nsmall\r\nEND\r\n");

	/* noreply silences the error, not its effect */
	breq.len = 0;
	hbuf_printf(&breq, "set k 0 0 2000 noreply\r\n");
	hbuf_add(&breq, big, 2000);
	hbuf_printf(&breq, "\r\n");
	SEND_N(c, breq.p, breq.len);
	SYNC(c, &srv);
	RT(c, "get k\r\n", "END\r\n");

	/* a value far over the limit is read and discarded too */
	breq.len = 0;
	hbuf_printf(&breq, "set k 0 0 5000000\r\n");
	hbuf_add(&breq, big, 5000000);
	hbuf_printf(&breq, "\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "SERVER_ERROR object too large for cache\r\n");
	SYNC(c, &srv);

	/* a value well under the limit fits */
	breq.len = 0;
	hbuf_printf(&breq, "set fits 0 0 500\r\n");
	hbuf_add(&breq, big, 500);
	hbuf_printf(&breq, "\r\nget fits\r\n");
	SEND_N(c, breq.p, breq.len);
	EXPECT(c, "STORED\r\nVALUE fits 0 500\r\n");
	EXPECT_N(c, big, 500);
	EXPECT(c, "\r\nEND\r\n");
}

Test(text, bad_command_lines)
{
	static const char *const cases[][2] = {
		{ "set k 0 0\r\n", "ERROR\r\n" },
		{ "set k 0 0 x\r\n",
		  "CLIENT_ERROR bad command line format\r\n" },
		{ "set k abc 0 1\r\nx\r\n",
		  "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
		{ "set k 0 abc 1\r\nx\r\n",
		  "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
		{ "set k 0 0 -1\r\nx\r\n",
		  "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
		{ "set k 0 0 1 noreply extra\r\nx\r\n", "ERROR\r\nERROR\r\n" },
		{ "cas k 0 0 1\r\nx\r\n", "ERROR\r\nERROR\r\n" },
		{ "cas k 0 0 1 abc\r\nx\r\n",
		  "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
		{ "cas k 0 0 1 -1\r\nx\r\n",
		  "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
		/* the data block is 1 byte: "xy\r" fails, "\n" is a line */
		{ "set k 0 0 1\r\nxy\r\n",
		  "CLIENT_ERROR bad data chunk\r\nERROR\r\n" },
		{ "get\r\n", "ERROR\r\n" },
		{ "gets\r\n", "ERROR\r\n" },
	};
	char key[252], req[600];

	RT(c, "set k 0 0 3\r\nold\r\n", "STORED\r\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		SEND_N(c, cases[i][0], strlen(cases[i][0]));
		EXPECT_N(c, cases[i][1], strlen(cases[i][1]));
	}
	RT(c, "get k\r\n", "VALUE k 0 3\r\nold\r\nEND\r\n");

	/* keys of 251 bytes */
	memset(key, 'k', 251);
	key[251] = '\0';
	snprintf(req, sizeof(req), "set %s 0 0 1\r\nx\r\n", key);
	SEND_N(c, req, strlen(req));
	EXPECT(c, "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	static const char *const fmts[] = { "get %s\r\n",     "get a %s b\r\n",
					    "delete %s\r\n",  "incr %s 1\r\n",
					    "touch %s 1\r\n", "gat 1 %s\r\n" };
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(req, sizeof(req), fmts[i], key);
		SEND_N(c, req, strlen(req));
		EXPECT(c, "CLIENT_ERROR bad command line format\r\n");
	}
	SYNC(c, &srv);
}

Test(text, unknown_commands_and_line_endings)
{
	RT(c, "foo\r\n", "ERROR\r\n");
	RT(c, "GET k\r\n", "ERROR\r\n");
	RT(c, "\r\n", "ERROR\r\n");
	RT(c, "foo bar baz\r\n", "ERROR\r\n");
	/* a bare "\n" ends a command line too */
	SEND(c, "version\n");
	EXPECT_N(c, srv.version, strlen(srv.version));
	RT(c, "set a 0 0 1\nx\r\nget a\n",
	   "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
}

Test(text, version_verbosity_quit)
{
	char line[128];

	SEND(c, "version\r\n");
	cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert(strncmp(line, "VERSION ", 8) == 0 && strlen(line) > 10 &&
			  !strchr(line + 8, ' '),
		  "bad version line %s", line);
	RT(c, "verbosity 1\r\n", "OK\r\n");
	RT(c, "verbosity 0\r\n", "OK\r\n");
	RT(c, "verbosity 1 2\r\n", "OK\r\n");
	/* noreply silences even the error of a bad level */
	SEND(c, "verbosity 0 noreply\r\nverbosity noreply\r\n");
	SYNC(c, &srv);
	RT(c, "verbosity abc\r\n", "CLIENT_ERROR bad command line format\r\n");
	RT(c, "verbosity\r\n", "ERROR\r\n");
	RT(c, "verbosity 1 2 3\r\n", "ERROR\r\n");
	/* version ignores arguments (memccapable checks this of a 1.6) */
	SEND(c, "version foo bar\r\nversion noreply\r\n");
	EXPECT_N(c, srv.version, strlen(srv.version));
	EXPECT_N(c, srv.version, strlen(srv.version));

	/* quit: no reply, closed, nothing after it runs */
	RT(c, "set q 0 0 1\r\nx\r\nquit\r\nset q 0 0 1\r\ny\r\n", "STORED\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "quit did not close");
	c2 = hc_open(srv.port);
	cr_assert_not_null(c2);
	RT(c2, "get q\r\n", "VALUE q 0 1\r\nx\r\nEND\r\n");
	hc_close(&c2);
	/* quit with arguments quits too */
	static const char *const quits[] = { "quit foo bar\r\n",
					     "quit noreply\r\n" };
	for (int i = 0; i < 2; i++) {
		c2 = hc_open(srv.port);
		cr_assert_not_null(c2);
		SEND_N(c2, quits[i], strlen(quits[i]));
		cr_assert_eq(hc_closed(c2, H_TIMEOUT_MS), 1, "%s", quits[i]);
		hc_close(&c2);
	}
}

Test(text, noreply_forms)
{
	SEND(c, "set k 1 0 1 noreply\r\na\r\n"
		"add k 0 0 1 noreply\r\nX\r\n"
		"add k2 0 0 1 noreply\r\nb\r\n"
		"replace k 2 0 1 noreply\r\nc\r\n"
		"replace nx 0 0 1 noreply\r\nX\r\n"
		"append k 0 0 1 noreply\r\nd\r\n"
		"prepend k 0 0 1 noreply\r\ne\r\n"
		"append nx 0 0 1 noreply\r\nX\r\n"
		"set n 0 0 1 noreply\r\n5\r\n"
		"incr n 10 noreply\r\n"
		"decr n 3 noreply\r\n"
		"incr k 1 noreply\r\n"
		"touch k 0 noreply\r\n"
		"delete k2 noreply\r\n"
		"delete k2 noreply\r\n"
		"verbosity 0 noreply\r\n");
	SYNC(c, &srv);
	RT(c, "get k k2 n\r\n",
	   "VALUE k 2 3\r\necd\r\nVALUE n 0 2\r\n12\r\nEND\r\n");
	/* a word other than "noreply" in its place is ignored */
	RT(c, "set k 0 0 1 norepl\r\nz\r\n", "STORED\r\n");
	SEND(c, "flush_all 0 noreply\r\n");
	SYNC(c, &srv);
	RT(c, "get k n\r\n", "END\r\n");
}

/* Reads a "stats" reply: every line "STAT <name> <value>\r\n", then END. */
static int read_stats(char names[][48], char values[][80], int cap)
{
	char line[256];
	int n = 0;

	for (;;) {
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (strcmp(line, "END\r\n") == 0)
			return n;
		cr_assert_lt(n, cap, "too many stats");
		size_t len = strlen(line);
		char *sp = strchr(line + 5, ' ');

		cr_assert(strncmp(line, "STAT ", 5) == 0 && sp && len > 2 &&
				  strcmp(line + len - 2, "\r\n") == 0,
			  "bad stats line %s", line);
		line[len - 2] = '\0';
		*sp = '\0';
		snprintf(names[n], 48, "%.47s", line + 5);
		snprintf(values[n], 80, "%.79s", sp + 1);
		n++;
	}
}

static const char *stat_of(char names[][48], char values[][80], int n,
			   const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	cr_assert_fail("no STAT %s", name);
	return NULL;
}

Test(text, stats)
{
	static const char *const names[] = {
		"pid",
		"uptime",
		"time",
		"version",
		"pointer_size",
		"curr_connections",
		"total_connections",
		"rejected_connections",
		"cmd_get",
		"cmd_set",
		"cmd_flush",
		"cmd_touch",
		"get_hits",
		"get_misses",
		"get_expired",
		"delete_hits",
		"delete_misses",
		"incr_hits",
		"incr_misses",
		"decr_hits",
		"decr_misses",
		"cas_hits",
		"cas_misses",
		"cas_badval",
		"touch_hits",
		"touch_misses",
		"bytes_read",
		"bytes_written",
		"limit_maxbytes",
		"threads",
		"bytes",
		"curr_items",
		"total_items",
		"evictions",
		"expired_unfetched",
		"reclaimed",
	};
	static const char *const want[][2] = {
		{ "cmd_get", "5" },
		{ "get_hits", "3" },
		{ "get_misses", "2" },
		{ "cmd_set", "5" },
		{ "delete_hits", "1" },
		{ "delete_misses", "1" },
		{ "incr_hits", "1" },
		{ "incr_misses", "1" },
		{ "decr_hits", "1" },
		{ "decr_misses", "1" },
		{ "cas_hits", "1" },
		{ "cas_misses", "1" },
		{ "cas_badval", "1" },
		{ "touch_hits", "1" },
		{ "touch_misses", "1" },
		{ "cmd_touch", "2" },
		{ "cmd_flush", "0" },
		{ "curr_items", "1" },
		{ "threads", "2" },
		{ "limit_maxbytes", "67108864" },
		{ "rejected_connections", "0" },
	};
	static char nm[400][48], val[400][80];
	unsigned long long cas;
	char buf[128];
	int n;

	RT(c, "set a 0 0 1\r\na\r\nget a\r\nget nx\r\nget a nx\r\n",
	   "STORED\r\nVALUE a 0 1\r\na\r\nEND\r\nEND\r\n"
	   "VALUE a 0 1\r\na\r\nEND\r\n");
	RT(c, "delete a\r\ndelete a\r\n", "DELETED\r\nNOT_FOUND\r\n");
	RT(c, "set n 0 0 1\r\n5\r\nincr n 1\r\nincr nx 1\r\n",
	   "STORED\r\n6\r\nNOT_FOUND\r\n");
	RT(c, "decr n 1\r\ndecr nx 1\r\n", "5\r\nNOT_FOUND\r\n");
	RT(c, "cas nx 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
	cas = gets_cas("n");
	hc_sendf(c, "cas n 0 0 1 %llu\r\n7\r\n", cas);
	EXPECT(c, "STORED\r\n");
	hc_sendf(c, "cas n 0 0 1 %llu\r\n8\r\n", cas);
	EXPECT(c, "EXISTS\r\n");
	RT(c, "touch n 0\r\ntouch nx 0\r\n", "TOUCHED\r\nNOT_FOUND\r\n");

	SEND(c, "stats\r\n");
	n = read_stats(nm, val, 400);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		(void)stat_of(nm, val, n, names[i]);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect_str_eq(stat_of(nm, val, n, want[i][0]), want[i][1],
				 "STAT %s", want[i][0]);
	snprintf(buf, sizeof(buf), "%d", (int)srv.pid);
	cr_expect_str_eq(stat_of(nm, val, n, "pid"), buf);
	snprintf(buf, sizeof(buf), "VERSION %s\r\n",
		 stat_of(nm, val, n, "version"));
	cr_expect_str_eq(buf, srv.version);
	long long t =
		atoll(stat_of(nm, val, n, "time")) - (long long)time(NULL);
	cr_expect(t >= -3 && t <= 3, "STAT time is %lld s off", t);

	RT(c, "flush_all\r\n", "OK\r\n");
	RT(c, "stats reset\r\n", "RESET\r\n");
	SEND(c, "stats\r\n");
	n = read_stats(nm, val, 400);
	cr_expect_str_eq(stat_of(nm, val, n, "cmd_get"), "0");
	cr_expect_str_eq(stat_of(nm, val, n, "get_hits"), "0");
	cr_expect_str_eq(stat_of(nm, val, n, "cmd_flush"), "0");
	SEND(c, "stats settings\r\n");
	cr_expect_gt(read_stats(nm, val, 400), 5);
	RT(c, "stats nonsense\r\n", "ERROR\r\n");
	RT(c, "stats noreply\r\n", "ERROR\r\n");
}

/* Sends each request of a table and expects its reply ("" for none). */
static void round_trips(const char *const (*cases)[2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		SEND_N(c, cases[i][0], strlen(cases[i][0]));
		EXPECT_N(c, cases[i][1], strlen(cases[i][1]));
	}
	SYNC(c, &srv);
}

#define ROUND_TRIPS(cases) \
	round_trips((cases), sizeof(cases) / sizeof(*(cases)))

/* `stats settings` holds NAME with the value WANT. */
static void expect_setting(const char *name, const char *want)
{
	struct hstats s;
	const char *v;

	cr_assert_eq(hc_stats(c, "settings", &s, H_TIMEOUT_MS), 0);
	v = hstats_get(&s, name);
	cr_assert_not_null(v, "no %s in stats settings", name);
	cr_assert_str_eq(v, want, "stats settings %s", name);
}

/* cache_memlimit's refusals, in memcached 1.6.18's words; `stats settings`
 * maxbytes follows the limit. */
Test(text, cache_memlimit_replies)
{
	static const char *const cases[][2] = {
		{ "cache_memlimit 0\r\n", "MEMLIMIT_TOO_SMALL cannot set "
					  "maxbytes to less than 8m\r\n" },
		{ "cache_memlimit 7 x\r\n", "MEMLIMIT_TOO_SMALL cannot set "
					    "maxbytes to less than 8m\r\n" },
		{ "cache_memlimit 4294967296\r\n",
		  "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than "
		  "8m\r\n" },
		{ "cache_memlimit 1000000001\r\n",
		  "MEMLIMIT_ADJUST_FAILED input value is megabytes not "
		  "bytes\r\n" },
		{ "cache_memlimit -1\r\n", "ERROR\r\n" },
		{ "cache_memlimit x\r\n", "ERROR\r\n" },
		{ "cache_memlimit\r\n", "ERROR\r\n" },
		{ "cache_memlimit 7 noreply\r\n", "" },
		{ "cache_memlimit x noreply\r\n", "" },
		{ "cache_memlimit 100\r\n", "OK\r\n" },
	};

	ROUND_TRIPS(cases);
	expect_setting("maxbytes", "104857600");
	RT(c, "cache_memlimit 8\r\n", "OK\r\n");
	expect_setting("maxbytes", "8388608");
	expect_setting("shutdown_command", "no");
	expect_setting("flush_enabled", "yes");
}

/* slabs automove and slabs reassign, memcached's slab tuning: its replies
 * (no-ops in rhkvd, which has no slab classes). */
Test(text, slabs_replies)
{
	static const char *const cases[][2] = {
		{ "slabs automove 0\r\n", "OK\r\n" },
		{ "slabs automove 1\r\n", "OK\r\n" },
		{ "slabs automove 2\r\n", "OK\r\n" },
		{ "slabs automove 3\r\n", "ERROR\r\n" },
		{ "slabs automove invalid\r\n",
		  "CLIENT_ERROR bad command line format\r\n" },
		{ "slabs automove -1\r\n",
		  "CLIENT_ERROR bad command line format\r\n" },
		{ "slabs automove 1 noreply\r\n", "" },
		{ "slabs automove invalid noreply\r\n", "" },
		{ "slabs automove ratio 0.5\r\n", "OK\r\n" },
		{ "slabs automove ratio\r\n", "ERROR\r\n" },
		{ "slabs automove\r\n", "ERROR\r\n" },
		{ "slabs reassign 1 1\r\n",
		  "SAME src and dst class are identical\r\n" },
		{ "slabs reassign 0 1\r\n",
		  "NOSPARE source class has no spare pages\r\n" },
		{ "slabs reassign 1 0\r\n",
		  "NOSPARE source class has no spare pages\r\n" },
		{ "slabs reassign -1 1\r\n",
		  "BADCLASS invalid src or dst class id\r\n" },
		{ "slabs reassign 1 100\r\n",
		  "BADCLASS invalid src or dst class id\r\n" },
		{ "slabs reassign 1 x\r\n",
		  "CLIENT_ERROR bad command line format\r\n" },
		{ "slabs reassign 1 2 noreply\r\n", "ERROR\r\n" },
		{ "slabs reassign 1\r\n", "ERROR\r\n" },
		{ "slabs foo\r\n", "ERROR\r\n" },
		{ "slabs\r\n", "ERROR\r\n" },
	};

	ROUND_TRIPS(cases);
	/* memcached's classes 2..39 have no spare page either (NOSPARE);
	 * rhkvd has only 1 and 0 (docs/stats.md). */
	if (srv_kind_from_env() != SRV_MEMCACHED)
		RT(c, "slabs reassign 1 2\r\n",
		   "BADCLASS invalid src or dst class id\r\n");
}

/* Without -A, every shutdown is refused, noreply or not. */
Test(text, shutdown_not_enabled)
{
	static const char *const cases[][2] = {
		{ "shutdown\r\n", "ERROR: shutdown not enabled\r\n" },
		{ "shutdown graceful\r\n", "ERROR: shutdown not enabled\r\n" },
		{ "shutdown noreply\r\n", "ERROR: shutdown not enabled\r\n" },
		{ "shutdown x y\r\n", "ERROR: shutdown not enabled\r\n" },
	};

	ROUND_TRIPS(cases);
}

/* -F: flush_all refused before its delay is read; noreply silences it. */
Test(text_F, flush_all_not_allowed)
{
	static const char *const cases[][2] = {
		{ "set k 0 0 1\r\nx\r\n", "STORED\r\n" },
		{ "flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n" },
		{ "flush_all 0\r\n", "CLIENT_ERROR flush_all not allowed\r\n" },
		{ "flush_all x\r\n", "CLIENT_ERROR flush_all not allowed\r\n" },
		{ "flush_all 1 2 3\r\n", "ERROR\r\n" },
		{ "flush_all noreply\r\nflush_all 0 noreply\r\n", "" },
		{ "get k\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n" },
	};

	ROUND_TRIPS(cases);
	expect_setting("flush_enabled", "no");
}

/* Whether the server stops accepting within 30 s (generous: a sanitizer
 * daemon on a busy machine stops slowly). */
static bool stops_accepting(void)
{
	for (long long end = h_now_ms() + 30000; h_now_ms() < end;) {
		struct hconn *probe = hc_open(srv.port);

		if (!probe)
			return true;
		hc_close(&probe);
		h_sleep_ms(20);
	}
	return false;
}

/* -A: a bad mode is refused (noreply is no mode); "shutdown" closes the
 * connection without a word and the server exits with status 0. */
Test(text_A, shutdown_stops_the_server)
{
	expect_setting("shutdown_command", "yes");
	RT(c, "shutdown x y\r\n", "CLIENT_ERROR invalid shutdown mode\r\n");
	RT(c, "shutdown noreply\r\n", "CLIENT_ERROR invalid shutdown mode\r\n");
	SEND(c, "shutdown\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "not closed");
	cr_assert(stops_accepting(), "still accepting after shutdown");
}

Test(text_A, shutdown_graceful_stops_the_server)
{
	SEND(c, "shutdown graceful\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "not closed");
	cr_assert(stops_accepting(), "still accepting after shutdown");
}
