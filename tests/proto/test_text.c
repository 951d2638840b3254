/*
 * The text-protocol parser (proto/text.h), command by command: every field,
 * every status and every error message. Each case of the tables was first
 * sent to memcached 1.6.18 (see the comment on a case where rhkv differs on
 * purpose); the stream tests are in test_text_stream.c.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "text_test_util.h"

#define FMT   "bad command line format"
#define DEL   "bad command line format.  Usage: delete <key> [noreply]"
#define DELTA "invalid numeric delta argument"
#define EXPT  "invalid exptime argument"
#define CHUNK "bad data chunk"
#define SMALL "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m"
#define MIB   "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes"

struct status_case {
	const char *in;
	size_t n;
	enum proto_status st;
	const char *error; /* PROTO_CLIENT_ERROR */
	size_t len;	   /* bytes consumed; 0: the whole input */
	bool noreply;
};

#define C(lit, st, err, len, nr)                       \
	{                                              \
		lit, sizeof(lit) - 1, st, err, len, nr \
	}
#define OK(lit)		 C(lit, PROTO_OK, NULL, 0, false)
#define OKNR(lit)	 C(lit, PROTO_OK, NULL, 0, true)
#define ERR(lit)	 C(lit, PROTO_ERROR, NULL, 0, false)
#define CERR(lit, msg)	 C(lit, PROTO_CLIENT_ERROR, msg, 0, false)
#define CERRNR(lit, msg) C(lit, PROTO_CLIENT_ERROR, msg, 0, true)
#define ERRNR(lit)	 C(lit, PROTO_ERROR, NULL, 0, true)
#define REF(lit, msg)	 C(lit, PROTO_REFUSED, msg, 0, false)
#define REFNR(lit, msg)	 C(lit, PROTO_REFUSED, msg, 0, true)

/* Requests and what memcached 1.6.18 answered (each written as "-> ..."). */
static const struct status_case cases[] = {
	/* Lines and command names. */
	ERR("\r\n"),	    /* -> ERROR */
	ERR("\n"),	    /* -> ERROR */
	ERR(" \r\n"),	    /* -> ERROR */
	ERR("VERSION\r\n"), /* -> ERROR: case-sensitive */
	ERR("GET k\r\n"),   /* -> ERROR */
	ERR("Get k\r\n"),
	ERR("g\r\n"),
	ERR("ge k\r\n"),
	ERR("getx k\r\n"),
	ERR("bget\r\n"),
	OK("bget k\r\n"),     /* memcached's old alias of get */
	ERR("version\r\r\n"), /* the token is "version\r" -> ERROR */
	ERR("get\tk\r\n"),    /* tabs do not split */
	OK("version\r\n"),    /* -> VERSION 1.6.18 */
	OK("version\n"),      /* a bare "\n" ends a line too */
	OK("version x y z\r\n"),
	OK("  version  \r\n"),
	OK("quit x\r\n"), /* -> connection closed */
	/* get/gets/gat/gats */
	ERR("get\r\n"),
	ERR("get \r\n"),
	ERR("gets\r\n"),
	ERR("gat\r\n"),
	OK("get a\n"),
	OK("get a  b   c\r\n"),
	OK("gat 0\r\n"), /* no key -> END */
	OK("gat 0 \r\n"),
	OK("gat -1 k\r\n"),
	OK("gats 0 a b c\r\n"),
	OK("gat 9223372036854775807 k\r\n"),
	OK("gat -9223372036854775808 k\r\n"),
	CERR("gat x k\r\n", EXPT),
	CERR("gat 1x k\r\n", EXPT),
	CERR("gat 99999999999999999999 k\r\n", EXPT),
	CERR("gat 9223372036854775808 k\r\n", EXPT),
	/* Keys: any bytes but space, "\n" and NUL, control bytes included. */
	OK("get k\r\r\n"), /* -> END: the key is "k\r" */
	OK("get a\tb\r\n"),
	OK("get a\x01"
	   "b\r\n"),
	OK("get a\x7f\r\n"),
	OK("get \x1f\x0b\x0c\r\n"),
	OK("get \xc3\xa9t\xc3\xa9\r\n"), /* UTF-8 is fine */
	OK("get \x80\xff\r\n"),
	OK("set a\x01 0 0 1\r\nx\r\n"), /* -> STORED */
	/* A NUL ends the line's content; the rest up to "\n" is ignored. */
	OK("get k\x00\r\n"),	    /* -> the value of "k" */
	OK("get a a\x00zz\r\n"),    /* -> two values of "a" */
	ERR("get \x00k\r\n"),	    /* -> ERROR: "get" alone */
	ERR("\x00get k\r\n"),	    /* -> ERROR: an empty line */
	ERR("set a\x00 0 0 1\r\n"), /* -> ERROR, then the data line */
	OK("set q 0 0 1 \x00noreply\r\nx\r\n"), /* -> STORED: no noreply */
	/* storage: token counts */
	ERR("set k 0 0\r\n"), /* -> ERROR, then ERROR for the data line */
	ERR("set k 0 0 1 noreply x\r\n"),
	ERR("cas k 0 0 1\r\n"),
	ERR("cas k 0 0 1 5 noreply x\r\n"),
	ERR("SET k 0 0 1\r\n"),
	OK("set k 0 0 1 x\r\nx\r\n"), /* -> STORED: a 6th token is ignored */
	OK("cas k 0 0 1 5 x\r\nx\r\n"),
	OK("set k 0 0 1 noreplyx\r\nx\r\n"),
	OK("  set  k  0  0  1  \r\nx\r\n"),
	OK("set k 0 0 1\nx\r\n"),
	OKNR("set k 0 0 1 noreply\r\nx\r\n"),
	OKNR("cas k 0 0 1 5 noreply\r\nx\r\n"),
	/* storage: numbers (all -> CLIENT_ERROR bad command line format,
	 * the data line then parsed as a command) */
	CERR("set k -1 0 1\r\n", FMT),
	CERR("set k 0x 0 1\r\n", FMT),
	CERR("set k 0 0x 1\r\n", FMT),
	CERR("set k 0 0 1x\r\n", FMT),
	CERR("set k 0 0 -1\r\n", FMT),
	CERR("set k 0 0 2147483646\r\n", FMT), /* INT_MAX - 1 */
	CERR("set k 0 0 2147483647\r\n", FMT),
	CERR("set k 0 0 4294967295\r\n", FMT),
	/* memcached cuts numbers that fit 64 bits to their 32-bit fields
	 * (-> STORED, 1 byte, flags 0): text_storage.numbers_cut_to_32_bits */
	OK("set k 0 0 4294967297\r\nx\r\n"),
	OK("set k 4294967296 0 1\r\nx\r\n"),
	OK("set k 18446744073709551615 0 1\r\nx\r\n"),
	OK("set k -18446744073709551615 0 1\r\nx\r\n"), /* flags 1 */
	CERR("set k 18446744073709551616 0 1\r\n", FMT),
	CERR("set k 0 9223372036854775808 1\r\n", FMT),
	CERR("set k 0 1.5 1\r\n", FMT),
	CERR("cas k 0 0 1 x\r\n", FMT),
	CERR("cas k 0 0 1 -1\r\n", FMT),
	CERR("cas k 0 0 1 18446744073709551616\r\n", FMT),
	OK("cas k 0 0 1 -18446744073709551615\r\nx\r\n"), /* cas 1 */
	OK("set k\x01 0 0 1\r\nx\r\n"),		 /* -> STORED, key "k\x01" */
	CERRNR("set k 0 0 -1 noreply\r\n", FMT), /* -> nothing */
	CERRNR("set k 0 0 x noreply\r\n", FMT),
	CERRNR("set k 0 0 noreply\r\n", FMT),
	CERRNR("cas k 0 0 1 noreply\r\n", FMT), /* then "x" -> ERROR */
	CERR("set k 0 noreply 1\r\n", FMT),
	OK("set k -0 0 1\r\nx\r\n"),	   /* -> STORED */
	OK("set k +5 0 1\r\nx\r\n"),	   /* -> flags 5 */
	OK("set k 0 0 +1\r\nx\r\n"),	   /* -> STORED */
	OK("set k 0 0 01\r\nx\r\n"),	   /* -> STORED */
	OK("set k 0 0 1\r\r\nx\r\n"),	   /* "1\r": a blank may follow */
	OK("set k 0\t 0 1\r\nx\r\n"),	   /* "0\t" */
	OK("set k \t0 0 1\r\nx\r\n"),	   /* "\t0" */
	OK("set k 0\tx 0 1\tyy\r\nx\r\n"), /* anything after a blank */
	OK("set k 0 -9223372036854775808 1\r\nx\r\n"),
	/* incr/decr */
	ERR("incr n\r\n"),
	ERR("incr n  \r\n"),
	ERR("incr n 1 x y\r\n"),
	OK("incr n 18446744073709551615\r\n"),
	OK("incr n +1\r\n"),
	OK("incr n -0\r\n"),
	OK("incr n 01\r\n"),
	OK("incr n 1 x\r\n"),
	OK("incr n \t1\r\n"),
	OK("incr n \v1\r\n"),
	OK("incr n 1\tjunk\r\n"),
	OK("decr n 0\r\n"),
	OKNR("incr n 1 noreply\r\n"),
	CERR("incr n 18446744073709551616\r\n", DELTA),
	CERR("incr n -1\r\n", DELTA),
	OK("incr n -18446744073709551615\r\n"), /* strtoull: 1 */
	CERR("incr n 1x\r\n", DELTA),
	CERR("incr n \"1\"\r\n", DELTA),
	CERR("decr n x\r\n", DELTA),
	CERRNR("incr k noreply\r\n", DELTA),
	/* touch */
	ERR("touch k\r\n"),
	ERR("touch k 10 x y\r\n"),
	OK("touch k 10\r\n"),
	OK("touch k 10 x\r\n"),
	OK("touch k -5\r\n"),
	OK("touch k 9223372036854775807\r\n"),
	OK("touch n 5\rjunk\r\n"),
	OKNR("touch k 10 noreply\r\n"),
	CERR("touch k x\r\n", EXPT),
	CERR("touch k 1.5\r\n", EXPT),
	CERR("touch k 9223372036854775808\r\n", EXPT),
	CERR("touch k 99999999999999999999\r\n", EXPT),
	CERRNR("touch k noreply\r\n", EXPT),
	/* delete */
	ERR("delete\r\n"),
	ERR("delete k 0 noreply x\r\n"),
	OK("delete k\r\n"),
	OK("delete k 0\r\n"),
	OK("delete noreply\r\n"), /* the key "noreply" -> NOT_FOUND */
	OKNR("delete k noreply\r\n"),
	OKNR("delete k 0 noreply\r\n"),
	CERR("delete k 1\r\n", DEL),
	CERR("delete k 00\r\n", DEL),
	CERR("delete k x\r\n", DEL),
	CERR("delete k 0 x\r\n", DEL),
	CERR("delete k 0 0\r\n", DEL),
	CERR("delete k noreply 0\r\n", DEL),
	CERR("delete k NOREPLY\r\n", DEL),
	CERRNR("delete k 1 noreply\r\n", DEL),
	CERRNR("delete k x noreply\r\n", DEL),
	OK("delete k\x02\r\n"), /* -> NOT_FOUND */
	/* flush_all */
	ERR("flush_all 0 0 0\r\n"),
	ERR("flush_all 0 noreply x\r\n"),
	OK("flush_all\r\n"),
	OK("flush_all 0\r\n"),
	OK("flush_all 10\r\n"),
	OK("flush_all -1\r\n"),
	OK("flush_all 0 x\r\n"),
	OK("flush_all 9223372036854775807\r\n"),
	OKNR("flush_all noreply\r\n"),
	OKNR("flush_all 0 noreply\r\n"),
	CERR("flush_all x\r\n", EXPT),
	CERR("flush_all \t\r\n", EXPT),
	CERR("flush_all 99999999999999999999\r\n", EXPT),
	CERR("flush_all noreply 0\r\n", EXPT),
	CERRNR("flush_all x noreply\r\n", EXPT),
	/* auth */
	ERR("auth\r\n"),
	ERR("auth a b c\r\n"),
	OK("auth s3cret!\r\n"),
	OK("auth user s3cret!\r\n"),
	/* cache_memlimit */
	ERR("cache_memlimit\r\n"),
	ERR("cache_memlimit 1 x y\r\n"),
	OK("cache_memlimit 64\r\n"),
	OK("cache_memlimit 8\r\n"),
	OK("cache_memlimit 1000000000\r\n"),
	OKNR("cache_memlimit 64 noreply\r\n"),
	REF("cache_memlimit 0\r\n", SMALL), /* -> MEMLIMIT_TOO_SMALL ... */
	REF("cache_memlimit 7\r\n", SMALL),
	REF("cache_memlimit -0\r\n", SMALL),
	REF("cache_memlimit 7 x\r\n", SMALL),
	REFNR("cache_memlimit 7 noreply\r\n", SMALL), /* -> nothing */
	REF("cache_memlimit 4294967296\r\n", SMALL),  /* cut to 32 bits: 0 */
	REF("cache_memlimit 1000000001\r\n", MIB),
	REF("cache_memlimit 18446744073709551615\r\n", MIB),
	ERR("cache_memlimit 18446744073709551616\r\n"),
	ERR("cache_memlimit x\r\n"),
	ERR("cache_memlimit -1\r\n"),
	ERRNR("cache_memlimit x noreply\r\n"), /* -> nothing */
	/* slabs: memcached's slab tuning (the executor answers, no-ops) */
	ERR("slabs\r\n"),
	ERR("slabs foo\r\n"),
	ERR("slabs HTTP/1.1\r\n"),
	ERR("slabs automove\r\n"),
	OK("slabs automove 0\r\n"),
	OK("slabs automove 2\r\n"),
	OK("slabs automove +1\r\n"),
	OK("slabs automove -0\r\n"),
	OK("slabs automove 1 2\r\n"),
	OK("slabs automove 4294967297\r\n"), /* cut to 32 bits: 1 */
	OKNR("slabs automove 1 noreply\r\n"),
	ERR("slabs automove 3\r\n"),
	ERRNR("slabs automove 3 noreply\r\n"), /* -> nothing */
	CERR("slabs automove x\r\n", FMT),
	CERR("slabs automove -1\r\n", FMT),
	CERR("slabs automove 0x1\r\n", FMT),
	CERRNR("slabs automove x noreply\r\n", FMT), /* -> nothing */
	OK("slabs automove ratio 0.5\r\n"),
	OK("slabs automove ratio 1e-3\r\n"),
	ERR("slabs automove ratio\r\n"),
	ERR("slabs automove ratio x\r\n"),
	ERR("slabs automove ratio 1e999\r\n"),
	OK("slabs reassign 1 2\r\n"),
	OK("slabs reassign -1 4294967297\r\n"),
	CERR("slabs reassign 1 x\r\n", FMT),
	CERR("slabs reassign 99999999999999999999 1\r\n", FMT),
	ERR("slabs reassign 1\r\n"),
	ERR("slabs reassign 1 2 noreply\r\n"),
	/* shutdown: the executor answers (not enabled, or a bad mode) */
	OK("shutdown\r\n"),
	OK("shutdown graceful\r\n"),
	OK("shutdown x y\r\n"),
	OK("shutdown noreply\r\n"),
	/* verbosity */
	ERR("verbosity\r\n"),
	ERR("verbosity 1 x y\r\n"),
	OK("verbosity 1\r\n"),
	OK("verbosity 0\r\n"),
	OK("verbosity 1 x\r\n"),
	OK("verbosity 4294967295\r\n"),
	OK("verbosity 4294967296\r\n"), /* -> OK (cut to 32 bits) */
	OKNR("verbosity 1 noreply\r\n"),
	CERR("verbosity x\r\n", FMT),
	CERR("verbosity -1\r\n", FMT),
	CERR("verbosity 1x\r\n", FMT),
	CERR("verbosity 99999999999999999999\r\n", FMT),
	CERRNR("verbosity noreply\r\n", FMT),
	CERRNR("verbosity x noreply\r\n", FMT),
	/* stats: the sub-command is the server's business */
	OK("stats\r\n"),
	OK("stats \r\n"),
	OK("stats foo\r\n"),
	OK("stats settings a b c d e f g h\r\n"),
	/* HTTP request lines: memcached closes without a reply, unless the
	 * command's first letter is one of its per-letter branches. */
	C("GET / HTTP/1.1\r\n", PROTO_CLOSE, NULL, 0, false),
	C("POST / HTTP/1.0\r\n", PROTO_CLOSE, NULL, 0, false),
	C("foo HTTP/\r\n", PROTO_CLOSE, NULL, 0, false),
	C("HTTP/\r\n", PROTO_CLOSE, NULL, 0, false),
	C("GET HTTP/ \r\n", PROTO_CLOSE, NULL, 0, false),
	C("mxy HTTP/\r\n", PROTO_CLOSE, NULL, 0, false),
	ERR("foo xHTTP/\r\n"),
	ERR("foo HTTP/ x\r\n"),
	ERR("GET\tHTTP/\r\n"),
	ERR("x HTTP/\r\n"),
	ERR("gx HTTP/1.1\r\n"),
	ERR("ax HTTP/1.1\r\n"),
	ERR("cx HTTP/1.1\r\n"),
	ERR("dx HTTP/1.1\r\n"),
	ERR("ix HTTP/1.1\r\n"),
	ERR("sx HTTP/1.1\r\n"),
	ERR("tx HTTP/1.1\r\n"),
	/* Two bytes starting with m: the meta parser answers (ERROR here). */
	C("mx HTTP/1.1\r\n", PROTO_META, NULL, 0, false),
	ERR("prepend HTTP/\r\n"),
	OK("get k HTTP/1.1\r\n"),
	OK("version HTTP/1.1\r\n"),
	CERR("set k 0 0 HTTP/\r\n", FMT),
	CERR("verbosity HTTP/\r\n", FMT),
	CERR("flush_all HTTP/\r\n", EXPT),
	/* scan (rhkv's own) */
	ERR("scan\r\n"),
	OK("scan 0\r\n"),
	OK("scan 18446744073709551615 count 1000 match *\r\n"),
	OK("scan 5 match a* count 7\r\n"),
	CERR("scan x\r\n", FMT),
	CERR("scan -1\r\n", FMT),
	CERR("scan +1\r\n", FMT),
	CERR("scan 18446744073709551616\r\n", FMT),
	CERR("scan 0 count 0\r\n", FMT),
	CERR("scan 0 count x\r\n", FMT),
	CERR("scan 0 count -5\r\n", FMT),
	CERR("scan 0 count\r\n", FMT),
	CERR("scan 0 match\r\n", FMT),
	CERR("scan 0 limit 5\r\n", FMT),
	CERR("scan 0 COUNT 5\r\n", FMT),
};

Test(text_cases, memcached_behaviour)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct status_case *c = &cases[i];
		struct proto_req req;
		enum proto_status st;
		size_t want = c->len ? c->len : c->n;

		st = proto_text_parse(c->in, c->n, &test_lim, &req);
		cr_expect_eq(st, c->st, "case %zu \"%s\": status %d, want %d",
			     i, c->in, st, c->st);
		if (st != c->st)
			continue;
		if (st != PROTO_CLOSE)
			cr_expect_eq(req.len, want,
				     "case %zu \"%s\": len %zu, want %zu", i,
				     c->in, req.len, want);
		cr_expect_eq(req.noreply, c->noreply,
			     "case %zu \"%s\": noreply", i, c->in);
		if (c->error != NULL)
			cr_expect_str_eq(req.error, c->error, "case %zu \"%s\"",
					 i, c->in);
		else
			cr_expect_null(req.error, "case %zu \"%s\"", i, c->in);
	}
}

Test(text_storage, fields)
{
	static const char in[] = "set key 123 -45 5\r\nhello\r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(in, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_SET);
	cr_expect(span_eq(in, req.key, "key"));
	cr_expect_eq(req.flags, 123);
	cr_expect_eq(req.exptime, -45);
	cr_expect_eq(req.nbytes, 5);
	cr_expect_eq(req.value_off, 19);
	cr_expect_eq(memcmp(in + req.value_off, "hello", 5), 0);
	cr_expect_eq(req.len, sizeof(in) - 1);
	cr_expect_not(req.noreply);
	cr_expect_eq(req.cas, 0);
}

Test(text_storage, every_command)
{
	static const struct {
		const char *in;
		enum proto_cmd cmd;
	} t[] = {
		{ "set k 1 2 3\r\nabc\r\n", PROTO_CMD_SET },
		{ "add k 1 2 3\r\nabc\r\n", PROTO_CMD_ADD },
		{ "replace k 1 2 3\r\nabc\r\n", PROTO_CMD_REPLACE },
		{ "append k 1 2 3\r\nabc\r\n", PROTO_CMD_APPEND },
		{ "prepend k 1 2 3\r\nabc\r\n", PROTO_CMD_PREPEND },
		{ "cas k 1 2 3 99\r\nabc\r\n", PROTO_CMD_CAS },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct proto_req req;
		size_t n = strlen(t[i].in);

		cr_assert_eq(proto_text_parse(t[i].in, n, &test_lim, &req),
			     PROTO_OK, "%s", t[i].in);
		cr_expect_eq(req.cmd, t[i].cmd);
		cr_expect(span_eq(t[i].in, req.key, "k"));
		cr_expect_eq(req.flags, 1);
		cr_expect_eq(req.exptime, 2);
		cr_expect_eq(req.nbytes, 3);
		cr_expect_eq(memcmp(t[i].in + req.value_off, "abc", 3), 0);
		cr_expect_eq(req.cas, t[i].cmd == PROTO_CMD_CAS ? 99u : 0u);
		cr_expect_eq(req.len, n);
	}
}

Test(text_storage, flags_and_cas_limits)
{
	struct proto_req req;

	cr_assert_eq(PARSE("set k 0 0 0\r\n\r\n", &req), PROTO_OK);
	cr_expect_eq(req.flags, 0);
	cr_assert_eq(PARSE("set k 4294967295 0 0\r\n\r\n", &req), PROTO_OK);
	cr_expect_eq(req.flags, UINT32_MAX);
	cr_assert_eq(PARSE("cas k 0 0 0 18446744073709551615\r\n\r\n", &req),
		     PROTO_OK);
	cr_expect_eq(req.cas, UINT64_MAX);
	/* strtol's whole range, then the low 32 bits (below) */
	cr_assert_eq(PARSE("set k 0 -9223372036854775808 0\r\n\r\n", &req),
		     PROTO_OK);
	cr_expect_eq(req.exptime, 0);
	cr_assert_eq(PARSE("set k 0 9223372036854775807 0\r\n\r\n", &req),
		     PROTO_OK);
	cr_expect_eq(req.exptime, -1);
}

/*
 * memcached 1.6.18 reads flags, exptimes and lengths as 64-bit numbers
 * (safe_strtoul, safe_strtol) and keeps their low 32 bits: flags
 * 4294967296 are stored as 0, an exptime of 4294967396 is 100 seconds and
 * 4294967295 is -1 (expired), a length of 4294967297 is 1 byte. rhkvd
 * refused them before (CLIENT_ERROR bad command line format).
 */
Test(text_storage, numbers_cut_to_32_bits)
{
	static const struct {
		const char *in;
		uint32_t flags;
		int64_t exptime;
		uint32_t nbytes;
	} t[] = {
		{ "set k 4294967296 0 1\r\nx\r\n", 0, 0, 1 },
		{ "set k 4294967297 0 1\r\nx\r\n", 1, 0, 1 },
		{ "set k 18446744073709551615 0 1\r\nx\r\n", UINT32_MAX, 0, 1 },
		{ "set k -18446744073709551615 0 1\r\nx\r\n", 1, 0, 1 },
		{ "set k 0 4294967396 1\r\nx\r\n", 0, 100, 1 },
		{ "set k 0 4294967295 1\r\nx\r\n", 0, -1, 1 },
		{ "set k 0 -4294967196 1\r\nx\r\n", 0, 100, 1 },
		{ "set k 0 2147483648 1\r\nx\r\n", 0, INT32_MIN, 1 },
		{ "set k 0 0 4294967297\r\nx\r\n", 0, 0, 1 },
		{ "set k 0 0 -4294967295\r\nx\r\n", 0, 0, 1 },
		{ "set k 0 0 4294967296\r\n\r\n", 0, 0, 0 },
		{ "append k 4294967301 4294967396 4294967298\r\nxy\r\n", 5, 100,
		  2 },
	};
	struct proto_req req;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t n = strlen(t[i].in);

		cr_assert_eq(proto_text_parse(t[i].in, n, &test_lim, &req),
			     PROTO_OK, "%s", t[i].in);
		cr_expect_eq(req.flags, t[i].flags, "%s", t[i].in);
		cr_expect_eq(req.exptime, t[i].exptime, "%s", t[i].in);
		cr_expect_eq(req.nbytes, t[i].nbytes, "%s", t[i].in);
		cr_expect_eq(req.len, n, "%s", t[i].in);
	}
	/* What stays refused: past 64 bits, or negative after the cut. */
	cr_expect_eq(PARSE("set k 0 0 4294967295\r\n", &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_eq(PARSE("set k 0 0 2147483648\r\n", &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_eq(PARSE("set k 18446744073709551616 0 1\r\n", &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_eq(PARSE("set k 0 9223372036854775808 1\r\n", &req),
		     PROTO_CLIENT_ERROR);
	/* touch, gat and flush_all's delay likewise */
	cr_assert_eq(PARSE("touch k 4294967295\r\n", &req), PROTO_OK);
	cr_expect_eq(req.exptime, -1);
	cr_assert_eq(PARSE("gat -4294967196 k\r\n", &req), PROTO_OK);
	cr_expect_eq(req.exptime, 100);
	cr_assert_eq(PARSE("flush_all 4294967296\r\n", &req), PROTO_OK);
	cr_expect_eq(req.delay, 0);
	cr_assert_eq(PARSE("verbosity 4294967297\r\n", &req), PROTO_OK);
	cr_expect_eq(req.verbosity, 1);
}

Test(text_storage, zero_length_and_binary_values)
{
	static const char zero[] = "set k 0 0 0\r\n\r\n";
	static const char crlf[] = "set k 0 0 2\r\n\r\n\r\n";
	static const char bin[] = "set k 0 0 6\r\n\0\r\n\xff\n\r\r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(zero, &req), PROTO_OK);
	cr_expect_eq(req.nbytes, 0);
	cr_expect_eq(req.value_off, 13);
	cr_expect_eq(req.len, sizeof(zero) - 1);
	cr_assert_eq(PARSE(crlf, &req), PROTO_OK); /* -> VALUE k 0 2 */
	cr_expect_eq(req.nbytes, 2);
	cr_expect_eq(memcmp(crlf + req.value_off, "\r\n", 2), 0);
	cr_expect_eq(req.len, sizeof(crlf) - 1);
	cr_assert_eq(PARSE(bin, &req), PROTO_OK);
	cr_expect_eq(memcmp(bin + req.value_off, "\0\r\n\xff\n\r", 6), 0);
	cr_expect_eq(req.len, sizeof(bin) - 1);
}

/* memcached reads <bytes> + 2 bytes, then wants them to end in "\r\n";
 * whatever follows is the next command. */
Test(text_storage, bad_data_chunk)
{
	static const struct {
		const char *in;
		size_t len; /* consumed */
	} t[] = {
		{ "set k 0 0 1\r\nxyz\r\nversion\r\n", 16 }, /* then ERROR */
		{ "set k 0 0 1\r\nxy\r\nversion\r\n", 16 },  /* then "\n" */
		{ "set k 0 0 1\r\nx\nversion\r\n", 16 },     /* "ersion" */
		{ "set k 0 0 1\r\nx\r\rversion\r\n", 16 },   /* VERSION */
		{ "set k 0 0 3\r\nabcde\r\nversion\r\n", 18 },
		{ "set k 0 0 3\r\nabcdefgh\r\nversion\r\n", 18 },
		{ "set k 0 0 3\r\nabcd\nversion\r\n", 18 },
		{ "set k 0 0 0\r\nxy\r\nget k\r\n", 15 },
		{ "set k 0 0 1\nx\nget k\n", 15 },
		{ "set k 0 0 2\r\na\nb\r\nget k\r\n", 17 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct proto_req req;
		size_t n = strlen(t[i].in);

		cr_assert_eq(proto_text_parse(t[i].in, n, &test_lim, &req),
			     PROTO_CLIENT_ERROR, "%s", t[i].in);
		cr_expect_str_eq(req.error, CHUNK);
		cr_expect_eq(req.len, t[i].len, "%s: %zu", t[i].in, req.len);
		/* Not decided before the whole block is there. */
		cr_expect_eq(proto_text_parse(t[i].in, t[i].len - 1, &test_lim,
					      &req),
			     PROTO_NEED_MORE);
	}
	struct proto_req req;
	cr_assert_eq(PARSE("set k 0 0 1 noreply\r\nxyz\r\n", &req),
		     PROTO_CLIENT_ERROR); /* -> nothing, then ERROR */
	cr_expect(req.noreply);
}

/* memcached -I 1k: "set k 0 0 2000\r\n" + 2000 bytes + "\r\nget k\r\n" ->
 * SERVER_ERROR object too large for cache, END (the old k is gone); with
 * noreply nothing; "a{2000}XY" is swallowed alike (not checked). */
Test(text_storage, too_large)
{
	static const struct proto_limits lim = { .max_value = 1000 };
	static const char in[] = "set big 7 0 2000 noreply\r\n";
	struct proto_req req;

	cr_assert_eq(proto_text_parse(in, sizeof(in) - 1, &lim, &req),
		     PROTO_TOO_LARGE);
	cr_expect_eq(req.len, sizeof(in) - 1);
	cr_expect_eq(req.swallow, 2002);
	cr_expect(req.noreply);
	cr_expect_eq(req.cmd, PROTO_CMD_SET);
	cr_expect(span_eq(in, req.key, "big"));
	cr_expect_eq(req.nbytes, 2000);
	/* The limit itself fits. */
	cr_expect_eq(proto_text_parse("set k 0 0 1000\r\n", 16, &lim, &req),
		     PROTO_NEED_MORE);
	cr_expect_eq(proto_text_parse("add k 0 0 1001\r\n", 16, &lim, &req),
		     PROTO_TOO_LARGE);
	cr_expect_eq(req.swallow, 1003);
	/* The largest <bytes> memcached takes at all. */
	cr_expect_eq(PARSE("set k 0 0 2147483645\r\n", &req), PROTO_TOO_LARGE);
	cr_expect_eq(req.swallow, 2147483647ULL);
	/* No limits given: the default, memcached's 1 MiB. */
	cr_expect_eq(proto_text_parse("set k 0 0 1048577\r\n", 19, NULL, &req),
		     PROTO_TOO_LARGE);
	cr_expect_eq(proto_text_parse("set k 0 0 1048576\r\n", 19, NULL, &req),
		     PROTO_NEED_MORE);
	/* Errors in the line come first, without a swallow. */
	cr_expect_eq(proto_text_parse("cas k 0 0 2000 x\r\n", 18, &lim, &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_eq(req.swallow, 0);
}

Test(text_keys, length_limits)
{
	char buf[600];
	struct proto_req req;
	int n;

	/* 250 bytes -> STORED; 251 -> CLIENT_ERROR bad command line format
	 * (then the data line -> ERROR), for every command with a key. */
	n = snprintf(
		buf, sizeof(buf), "set %.*s 0 0 1\r\nx\r\n", 250,
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		"kkkkkkkkkkkkkkkkkkkkk");
	cr_assert_eq(proto_text_parse(buf, (size_t)n, &test_lim, &req),
		     PROTO_OK);
	cr_expect_eq(req.key.len, 250);

	static const char *const fmts[] = {
		"set %s 0 0 1\r\n",
		"cas %s 0 0 1 1\r\n",
		"get %s\r\n",
		"gets a %s b\r\n",
		"gat 0 %s\r\n",
		"delete %s\r\n",
		"delete %s 0\r\n",
		"incr %s x\r\n",
		"touch %s x\r\n",
		"set %s x 0 1\r\n",
		"set %s 0 0 99999999\r\n",
	};
	char key[252];
	memset(key, 'k', 251);
	key[251] = '\0';
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		n = snprintf(buf, sizeof(buf), fmts[i], key);
		cr_expect_eq(proto_text_parse(buf, (size_t)n, &test_lim, &req),
			     PROTO_CLIENT_ERROR, "%s", fmts[i]);
		cr_expect_str_eq(req.error, FMT, "%s", fmts[i]);
		cr_expect_eq(req.len, (size_t)n);
	}
	/* Which check comes first, as memcached: */
	n = snprintf(buf, sizeof(buf), "delete %s 1\r\n", key);
	proto_text_parse(buf, (size_t)n, &test_lim, &req);
	cr_expect_str_eq(req.error, DEL);
	n = snprintf(buf, sizeof(buf), "gat x %s\r\n", key);
	proto_text_parse(buf, (size_t)n, &test_lim, &req);
	cr_expect_str_eq(req.error, EXPT);
}

/* A get or gat with a key over 250 bytes fails the line, but memcached
 * has fetched (gat: touched) the keys before it by then: the request
 * says which they are, so that the server may do the same. */
Test(text_retrieval, keys_before_a_too_long_key)
{
	char buf[600], key[252];
	struct proto_req req;
	struct proto_span k;
	uint32_t pos;
	int n;

	memset(key, 'K', 251);
	key[251] = '\0';
	n = snprintf(buf, sizeof(buf), "gat 500 a bb %s c\r\n", key);
	cr_assert_eq(proto_text_parse(buf, (size_t)n, &test_lim, &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_str_eq(req.error, FMT);
	cr_expect_eq(req.len, (size_t)n);
	cr_expect_eq(req.cmd, PROTO_CMD_GAT);
	cr_expect_eq(req.exptime, 500);
	cr_expect(span_eq(buf, req.key, "a"));
	pos = req.key.off;
	cr_assert(proto_text_next_key(buf, &req, &pos, &k));
	cr_expect(span_eq(buf, k, "a"));
	cr_assert(proto_text_next_key(buf, &req, &pos, &k));
	cr_expect(span_eq(buf, k, "bb"));
	cr_expect_not(proto_text_next_key(buf, &req, &pos, &k));

	n = snprintf(buf, sizeof(buf), "bget %s a\r\n", key);
	cr_assert_eq(proto_text_parse(buf, (size_t)n, &test_lim, &req),
		     PROTO_CLIENT_ERROR);
	cr_expect_eq(req.key.len, 0);
}

/* memcached 1.6.18 stores keys with control bytes; a NUL ends the line. */
Test(text_keys, control_bytes_and_nul)
{
	static const char ctl[] = "set \x01\t\x7f\r 0 0 1\r\nx\r\n";
	static const char nul[] = "gets a b\x00"
				  "c d\r\n";
	static const char cr[] = "get k\r\r\n";
	struct proto_req req;
	struct proto_span k;
	uint32_t pos;

	cr_assert_eq(PARSE(ctl, &req), PROTO_OK);
	cr_expect(span_eq(ctl, req.key, "\x01\t\x7f\r"));
	cr_expect_eq(req.len, sizeof(ctl) - 1);

	cr_assert_eq(PARSE(nul, &req), PROTO_OK);
	cr_expect_eq(req.len, sizeof(nul) - 1);
	pos = req.key.off;
	cr_assert(proto_text_next_key(nul, &req, &pos, &k));
	cr_expect(span_eq(nul, k, "a"));
	cr_assert(proto_text_next_key(nul, &req, &pos, &k));
	cr_expect(span_eq(nul, k, "b"));
	cr_expect_not(proto_text_next_key(nul, &req, &pos, &k));

	cr_assert_eq(PARSE(cr, &req), PROTO_OK);
	cr_expect(span_eq(cr, req.key, "k\r"));

	/* The shared key rule. */
	cr_expect(proto_key_ok("\x01", 1));
	cr_expect(proto_key_ok("k\r", 2));
	cr_expect(proto_key_ok("\x7f\x80\xff", 3));
	cr_expect_not(proto_key_ok("a b", 3));
	cr_expect_not(proto_key_ok("a\nb", 3));
	cr_expect_not(proto_key_ok("a\0b", 3));
	cr_expect_not(proto_key_ok("", 0));
	char big[251];
	memset(big, 'k', sizeof(big));
	cr_expect(proto_key_ok(big, 250));
	cr_expect_not(proto_key_ok(big, 251));
}

Test(text_retrieval, keys_and_iteration)
{
	static const char in[] = "gets  a bb   ccc \r\n";
	struct proto_req req;
	struct proto_span k;
	uint32_t pos;
	const char *want[] = { "a", "bb", "ccc" };
	size_t i = 0;

	cr_assert_eq(PARSE("bget a b\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_GET);
	cr_assert_eq(PARSE(in, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_GETS);
	cr_expect(span_eq(in, req.key, "a"));
	cr_expect_eq(req.keys_end, 16);
	for (pos = req.key.off; proto_text_next_key(in, &req, &pos, &k); i++) {
		cr_assert_lt(i, 3);
		cr_expect(span_eq(in, k, want[i]));
	}
	cr_expect_eq(i, 3);

	static const char gat[] = "gat 100 x\r\n";
	cr_assert_eq(PARSE(gat, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_GAT);
	cr_expect_eq(req.exptime, 100);
	cr_expect(span_eq(gat, req.key, "x"));

	static const char none[] = "gats -7\r\n";
	cr_assert_eq(PARSE(none, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_GATS);
	cr_expect_eq(req.exptime, -7);
	cr_expect_eq(req.key.len, 0);
	pos = req.key.off;
	cr_expect_not(proto_text_next_key(none, &req, &pos, &k));
}

/* "get k k ... k" of exactly len bytes into buf (len odd). */
static void fill_get_line(char *buf, size_t len)
{
	memcpy(buf, "get", 3);
	for (size_t i = 3; i < len; i += 2)
		memcpy(buf + i, " k", 2);
}

Test(text_retrieval, get_line_limits)
{
	const size_t max = PROTO_GET_LINE_MIN + 1;
	const struct proto_limits lim = { .max_value = 1024,
					  .max_get_line = (uint32_t)max };
	size_t cap = PROTO_GET_LINE_DEFAULT + 16;
	char *buf = malloc(cap);
	struct proto_req req;

	cr_assert_not_null(buf);
	/* Exactly max bytes before the "\n": the longest get line. */
	fill_get_line(buf, max);
	buf[max] = '\n';
	for (size_t n = PROTO_LINE_MAX - 2; n <= max; n += 997)
		cr_expect_eq(proto_text_parse(buf, n, &lim, &req),
			     PROTO_NEED_MORE, "%zu", n);
	cr_assert_eq(proto_text_parse(buf, max + 1, &lim, &req), PROTO_OK);
	cr_expect_eq(req.len, max + 1);
	/* One byte more: too long. */
	buf[max] = 'k';
	cr_expect_eq(proto_text_parse(buf, max + 1, &lim, &req),
		     PROTO_LINE_TOO_LONG);
	/* A limit below PROTO_GET_LINE_MIN counts as that. */
	const struct proto_limits small = { .max_value = 1024,
					    .max_get_line = 10 };
	buf[PROTO_GET_LINE_MIN] = '\n';
	cr_expect_eq(
		proto_text_parse(buf, PROTO_GET_LINE_MIN + 1, &small, &req),
		PROTO_OK);
	/* No limits: PROTO_GET_LINE_DEFAULT. */
	fill_get_line(buf, PROTO_GET_LINE_DEFAULT + 1);
	buf[PROTO_GET_LINE_DEFAULT] = '\n';
	cr_expect_eq(
		proto_text_parse(buf, PROTO_GET_LINE_DEFAULT + 1, NULL, &req),
		PROTO_OK);
	cr_expect_eq(
		proto_text_parse(buf, PROTO_GET_LINE_DEFAULT + 2, &lim, &req),
		PROTO_LINE_TOO_LONG);
	/* gat too, after up to 100 spaces; not after 101. */
	memset(buf, ' ', 100);
	memcpy(buf + 100, "gat 0 ", 6);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &lim, &req),
		     PROTO_NEED_MORE);
	memset(buf, ' ', 101);
	memcpy(buf + 101, "gat 0 ", 6);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &lim, &req),
		     PROTO_LINE_TOO_LONG);
	/* "getx " and "get" + "\t" are no get lines. */
	memcpy(buf, "getx ", 5);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &lim, &req),
		     PROTO_LINE_TOO_LONG);
	free(buf);
}

/* A long line arriving in pieces: with the hint passed back, each piece is
 * searched once, and the answers are those without it. */
Test(text_retrieval, get_line_in_pieces)
{
	const size_t len = 1000001, step = 16384;
	struct proto_limits lim = { .max_value = 1024 };
	char *buf = malloc(len + 1);
	struct proto_req req, plain;
	size_t searched = 0, n;

	cr_assert_not_null(buf);
	fill_get_line(buf, len);
	buf[len] = '\n';
	for (n = step; n <= len; n += step) {
		cr_assert_eq(proto_text_parse(buf, n, &lim, &req),
			     PROTO_NEED_MORE);
		cr_assert_eq(req.no_newline, n);
		cr_assert_geq(n, lim.no_newline);
		searched += n - lim.no_newline;
		lim.no_newline = req.no_newline;
	}
	cr_assert_eq(proto_text_parse(buf, len + 1, &lim, &req), PROTO_OK);
	searched += len + 1 - lim.no_newline;
	cr_expect_eq(searched, len + 1, "searched %zu bytes", searched);
	cr_assert_eq(proto_text_parse(buf, len + 1, NULL, &plain), PROTO_OK);
	cr_expect(req_equal(&req, &plain));
	cr_expect_eq(req.no_newline, 0);
	/* A stale hint longer than the bytes given is clamped. */
	lim.no_newline = (uint32_t)len * 2;
	cr_expect_eq(proto_text_parse(buf, 100, &lim, &req), PROTO_NEED_MORE);
	/* A storage command waiting for its data block has its line. */
	cr_expect_eq(proto_text_parse("set k 0 0 5\r\nab", 15, NULL, &req),
		     PROTO_NEED_MORE);
	cr_expect_eq(req.no_newline, 0);
	free(buf);
}

/* memcached closes a connection that sent more than 2048 bytes without a
 * "\n" (set k{3000} -> closed; x{2048} -> waits). */
Test(text_lines, line_limits)
{
	char buf[PROTO_LINE_MAX + 8];
	struct proto_req req;

	memset(buf, 'x', sizeof(buf));
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX, &test_lim, &req),
		     PROTO_NEED_MORE);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &test_lim, &req),
		     PROTO_LINE_TOO_LONG);
	/* PROTO_LINE_MAX bytes, then "\n": still a line (ERROR). */
	buf[PROTO_LINE_MAX] = '\n';
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &test_lim, &req),
		     PROTO_ERROR);
	cr_expect_eq(req.len, PROTO_LINE_MAX + 1);
	/* A set line of PROTO_LINE_MAX bytes + "\r\n" is parsed (its key is
	 * too long); one more byte is too long. */
	memcpy(buf, "set ", 4);
	memcpy(buf + PROTO_LINE_MAX - 7, " 0 0 1\r\n", 8);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 1, &test_lim, &req),
		     PROTO_CLIENT_ERROR);
	memcpy(buf + PROTO_LINE_MAX - 6, " 0 0 1\r\n", 8);
	cr_expect_eq(proto_text_parse(buf, PROTO_LINE_MAX + 2, &test_lim, &req),
		     PROTO_LINE_TOO_LONG);
}

Test(text_misc, shutdown_and_memlimit_fields)
{
	static const char sh[] = "shutdown  graceful x \r\n";
	static const char mem[] = "cache_memlimit 4096 noreply\r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(sh, &req), PROTO_OK);
	cr_expect(req.cmd == PROTO_CMD_SHUTDOWN &&
		  span_eq(sh, req.arg, "graceful x"));
	cr_assert_eq(PARSE("shutdown\r\n", &req), PROTO_OK);
	cr_expect_eq(req.arg.len, 0);
	cr_assert_eq(PARSE(mem, &req), PROTO_OK);
	cr_expect(req.memlimit == 4096 && req.noreply);
}

/* slabs reassign's classes, cut to 32 bits as memcached reads them. */
Test(text_misc, slabs_fields)
{
	static const char reassign[] = "slabs reassign -1 4294967298\r\n";
	static const char automove[] = "slabs automove 2 noreply\r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(reassign, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_SLABS);
	cr_expect(span_eq(reassign, req.arg, "reassign"));
	cr_expect_eq(req.slab_src, -1);
	cr_expect_eq(req.slab_dst, 2);
	cr_expect(!req.noreply);
	cr_assert_eq(PARSE(automove, &req), PROTO_OK);
	cr_expect(span_eq(automove, req.arg, "automove"));
	cr_expect(req.noreply);
}

Test(text_misc, stats_args)
{
	static const char none[] = "stats\r\n";
	static const char one[] = "stats  items \r\n";
	static const char more[] = "stats detail  on x \r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(none, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_STATS);
	cr_expect_eq(req.arg.len, 0);
	cr_expect_eq(req.args.len, 0);
	cr_assert_eq(PARSE(one, &req), PROTO_OK);
	cr_expect(span_eq(one, req.arg, "items"));
	cr_expect_eq(req.args.len, 0);
	cr_assert_eq(PARSE(more, &req), PROTO_OK);
	cr_expect(span_eq(more, req.arg, "detail"));
	cr_expect(span_eq(more, req.args, "on x"));
}

Test(text_misc, numbers_of_every_command)
{
	struct proto_req req;

	cr_assert_eq(PARSE("incr n 18446744073709551615 noreply\r\n", &req),
		     PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_INCR);
	cr_expect_eq(req.delta, UINT64_MAX);
	cr_expect(req.noreply);
	cr_assert_eq(PARSE("decr n 7\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_DECR);
	cr_expect_eq(req.delta, 7);
	cr_assert_eq(PARSE("touch t -9223372036854775807\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_TOUCH);
	cr_expect_eq(req.exptime, 1); /* the low 32 bits */
	cr_assert_eq(PARSE("flush_all 30 noreply\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_FLUSH_ALL);
	cr_expect_eq(req.delay, 30);
	cr_assert_eq(PARSE("flush_all\r\n", &req), PROTO_OK);
	cr_expect_eq(req.delay, 0);
	cr_assert_eq(PARSE("verbosity 4294967295\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_VERBOSITY);
	cr_expect_eq(req.verbosity, UINT32_MAX);
	cr_assert_eq(PARSE("delete d 0 noreply\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_DELETE);
	cr_assert_eq(PARSE("quit\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_QUIT);
	cr_assert_eq(PARSE("version\r\n", &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_VERSION);
}

Test(text_misc, scan)
{
	static const char plain[] = "scan 0\r\n";
	static const char full[] = "scan 42 count 100 match user:*\r\n";
	static const char swap[] = "scan 1 match [a-c]? count 99999999999\r\n";
	static const char again[] =
		"scan 1 count 5 count 6 match a match b\r\n";
	struct proto_req req;

	cr_assert_eq(PARSE(plain, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_SCAN);
	cr_expect_eq(req.cursor, 0);
	cr_expect_eq(req.count, PROTO_SCAN_COUNT_DEFAULT);
	cr_expect_not(req.has_match);
	cr_assert_eq(PARSE(full, &req), PROTO_OK);
	cr_expect_eq(req.cursor, 42);
	cr_expect_eq(req.count, 100);
	cr_expect(req.has_match);
	cr_expect(span_eq(full, req.match, "user:*"));
	cr_assert_eq(PARSE(swap, &req), PROTO_OK);
	cr_expect_eq(req.count, PROTO_SCAN_COUNT_MAX);
	cr_expect(span_eq(swap, req.match, "[a-c]?"));
	cr_assert_eq(PARSE("scan 1 count 1001\r\n", &req), PROTO_OK);
	cr_expect_eq(req.count, PROTO_SCAN_COUNT_MAX);
	cr_assert_eq(PARSE("scan 1 count 1\r\n", &req), PROTO_OK);
	cr_expect_eq(req.count, 1);
	cr_assert_eq(PARSE("scan 1 count 99999999999999999999999\r\n", &req),
		     PROTO_OK);
	cr_expect_eq(req.count, PROTO_SCAN_COUNT_MAX);
	cr_assert_eq(PARSE(again, &req), PROTO_OK);
	cr_expect_eq(req.count, 6);
	cr_expect(span_eq(again, req.match, "b"));
}

Test(text_misc, value_header)
{
	char dst[PROTO_VALUE_HEADER_MAX];
	char key[PROTO_KEY_MAX + 1];
	size_t n;

	n = proto_text_value_header(dst, "k", 1, 0, 1, false, 0);
	cr_expect_eq(n, 13);
	cr_expect_eq(memcmp(dst, "VALUE k 0 1\r\n", n), 0);
	n = proto_text_value_header(dst, "k", 1, 0, 1, true, 51);
	cr_expect_eq(memcmp(dst, "VALUE k 0 1 51\r\n", n), 0);
	cr_expect_eq(n, 16);
	/* The longest header fills PROTO_VALUE_HEADER_MAX exactly. */
	memset(key, 'z', sizeof(key));
	n = proto_text_value_header(dst, key, PROTO_KEY_MAX, UINT32_MAX,
				    UINT32_MAX, true, UINT64_MAX);
	cr_expect_eq(n, PROTO_VALUE_HEADER_MAX);
	cr_expect_eq(memcmp(dst + 6 + PROTO_KEY_MAX,
			    " 4294967295 4294967295 18446744073709551615\r\n",
			    45),
		     0);
	cr_expect_eq(proto_text_value_header(dst, key, PROTO_KEY_MAX + 1, 0, 0,
					     false, 0),
		     0);
}

Test(text_misc, lru_crawler)
{
	static const char dump[] = "lru_crawler  metadump all\r\n";
	static const char crawl[] = "lru_crawler crawl 1,2\n";
	static const char *const errors[] = {
		"lru_crawler\r\n",
		"lru_crawler metadump\r\n",
		"lru_crawler metadump all x\r\n",
		"lru_crawler enable now\r\n",
		"lru_crawler disable all\r\n",
		"lru_crawler sleep 10\r\n",
		"lru_crawler bogus all\r\n",
	};
	static const char enable[] = "lru_crawler enable\r\n";
	static const char disable[] = "lru_crawler disable\n";
	struct proto_req req;

	cr_assert_eq(PARSE(enable, &req), PROTO_OK);
	cr_expect(span_eq(enable, req.arg, "enable"));
	cr_assert_eq(PARSE(disable, &req), PROTO_OK);
	cr_expect(span_eq(disable, req.arg, "disable"));
	cr_assert_eq(PARSE(dump, &req), PROTO_OK);
	cr_expect_eq(req.cmd, PROTO_CMD_LRU_CRAWLER);
	cr_expect_eq(req.len, sizeof(dump) - 1);
	cr_expect(span_eq(dump, req.arg, "metadump"));
	cr_expect(span_eq(dump, req.args, "all"));
	cr_assert_eq(PARSE(crawl, &req), PROTO_OK);
	cr_expect(span_eq(crawl, req.arg, "crawl"));
	cr_expect(span_eq(crawl, req.args, "1,2"));
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		cr_expect_eq(proto_text_parse(errors[i], strlen(errors[i]),
					      &test_lim, &req),
			     PROTO_ERROR, "%s", errors[i]);
}

Test(text_misc, uri_encode)
{
	char out[3 * 256 + 1];
	char all[256];
	size_t n;

	n = proto_text_uri_encode(out, "aZ09-._~", 8);
	cr_expect_eq(n, 8);
	cr_expect_eq(memcmp(out, "aZ09-._~", 8), 0);
	n = proto_text_uri_encode(out, "a:b %/\xff", 7);
	out[n] = '\0';
	cr_expect_str_eq(out, "a%3Ab%20%25%2F%FF");
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	n = proto_text_uri_encode(out, all, 256);
	cr_expect_eq(n, 66 + 3 * 190, "%zu", n);
}

Test(text_misc, metadump_line)
{
	char key[PROTO_KEY_MAX];
	char line[PROTO_METADUMP_LINE_MAX + 1];
	struct proto_metadump_item it = { .key = "a:b",
					  .nkey = 3,
					  .exp = -1,
					  .la = 1700000000,
					  .cas = 42,
					  .fetched = true,
					  .cls = 1,
					  .size = 58 };
	size_t n = proto_text_metadump_line(line, &it);

	line[n] = '\0';
	cr_expect_str_eq(line, "key=a%3Ab exp=-1 la=1700000000 cas=42 "
			       "fetch=yes cls=1 size=58\n");
	/* The longest: every key byte encoded, every number at its widest. */
	memset(key, '%', sizeof(key));
	it = (struct proto_metadump_item){ .key = key,
					   .nkey = sizeof(key),
					   .exp = INT64_MIN,
					   .la = INT64_MIN,
					   .cas = UINT64_MAX,
					   .cls = UINT32_MAX,
					   .size = UINT64_MAX };
	n = proto_text_metadump_line(line, &it);
	cr_expect_leq(n, PROTO_METADUMP_LINE_MAX);
	line[n] = '\0';
	cr_expect(strstr(line, " exp=-9223372036854775808 ") != NULL, "%s",
		  line);
	cr_expect(strstr(line, " fetch=no ") != NULL);
}

Test(text_misc, watch)
{
	static const struct {
		const char *line;
		enum proto_status st;
		uint32_t kinds;
	} cases[] = {
		{ "watch\r\n", PROTO_OK, PROTO_WATCH_FETCHERS },
		{ "watch fetchers\r\n", PROTO_OK, PROTO_WATCH_FETCHERS },
		{ "watch mutations  evictions\r\n", PROTO_OK,
		  PROTO_WATCH_MUTATIONS | PROTO_WATCH_EVICTIONS },
		{ "watch evictions fetchers mutations fetchers\n", PROTO_OK,
		  PROTO_WATCH_FETCHERS | PROTO_WATCH_MUTATIONS |
			  PROTO_WATCH_EVICTIONS },
		{ "watch bogus\r\n", PROTO_ERROR, 0 },
		{ "watch fetchers x\r\n", PROTO_ERROR, 0 },
	};
	struct proto_req req;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum proto_status st = proto_text_parse(
			cases[i].line, strlen(cases[i].line), &test_lim, &req);

		cr_expect_eq(st, cases[i].st, "%s", cases[i].line);
		if (st != PROTO_OK)
			continue;
		cr_expect_eq(req.cmd, PROTO_CMD_WATCH);
		cr_expect_eq(req.flags, cases[i].kinds, "%s", cases[i].line);
		cr_expect_eq(req.len, strlen(cases[i].line));
	}
}
