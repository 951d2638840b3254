/*
 * The meta commands' parser (proto/meta.h): statuses, error messages and
 * swallowed bytes case by case, as memcached 1.6.18 answered each line
 * (or, for the flags it lacks, as the current memcached text specifies);
 * the fields of good requests; every prefix of a request is NEED_MORE;
 * and base64 with memcached's decoder quirks.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/meta.h"

#define FMT	 "CLIENT_ERROR bad command line format"
#define TOKEN	 "CLIENT_ERROR bad token in command line format"
#define DUP	 "CLIENT_ERROR duplicate flag"
#define INVALID	 "CLIENT_ERROR invalid flag"
#define INV_DUP	 "CLIENT_ERROR invalid or duplicate flag"
#define DECODE	 "CLIENT_ERROR error decoding key"
#define MLEN	 "CLIENT_ERROR incorrect length for M token"
#define OPAQUE	 "CLIENT_ERROR opaque token too long"
#define MS_MODE	 "CLIENT_ERROR invalid mode for ms M token"
#define MA_MODE	 "CLIENT_ERROR invalid mode for ma M token"
#define MG_LONG	 "CLIENT_ERROR options flags are too long"
#define TOO_LONG "CLIENT_ERROR options flags too long"
#define CHUNK	 "CLIENT_ERROR bad data chunk"
#define INITIAL	 "CLIENT_ERROR invalid numeric initial value"
#define DELTA	 "CLIENT_ERROR invalid numeric delta value"

struct meta_case {
	const char *in;
	size_t n;
	enum proto_status st;
	const char *error;
	uint64_t swallow;
};

#define C(lit, st, err, sw)                       \
	{                                         \
		lit, sizeof(lit) - 1, st, err, sw \
	}
#define OK(lit)		     C(lit, PROTO_OK, NULL, 0)
#define ERR(lit)	     C(lit, PROTO_ERROR, NULL, 0)
#define CERR(lit, msg)	     C(lit, PROTO_CLIENT_ERROR, msg, 0)
#define SWALLOW(lit, msg, n) C(lit, PROTO_CLIENT_ERROR, msg, n)

static const struct meta_case cases[] = {
	OK("mn\r\n"),
	OK("mn foo bar\r\n"), /* -> MN: mn ignores what follows */
	ERR("mx foo\r\n"),
	ERR("mx HTTP/1.1\r\n"), /* no close: m branches answer ERROR */
	ERR("mg\r\n"),
	ERR("md\r\n"),
	ERR("ma\r\n"),
	CERR("me\r\n", FMT),
	ERR("ms\r\n"),
	OK("mg k\r\n"),
	OK("mg k v c f h k l s t u q O123 P1 L1\r\n"),
	OK("mg k N30 R10 T5 E9\r\n"),
	OK("mg k C5\r\n"),
	OK("md k I T30 x C5 q k O1\r\n"),
	OK("ma k N0 J5 D2 MD v t c\r\n"),
	OK("ma k M+\r\n"),
	OK("ma k M-\r\n"),
	OK("ma k MI\r\n"),
	OK("me k\r\n"),
	OK("me Zm9v b\r\n"),
	OK("ms k 3 T30 F5 c k q\r\nabc\r\n"),
	OK("ms k 0\r\n\r\n"),
	OK("ms k 2 MA N30\r\nab\r\n"),
	OK("mg Zm9v b\r\n"),
	OK("mg Z!m9v b\r\n"), /* bytes outside the alphabet are skipped */
	CERR("mg Zm9 b\r\n", DECODE),
	CERR("mg ==== b\r\n", DECODE), /* decodes to nothing */
	CERR("me Zm9 b\r\n", FMT),
	OK("me Zm9 x\r\n"), /* only a "b" right after the key counts */
	CERR("mg k zz\r\n", INVALID),
	CERR("mg k S1\r\n", INVALID),
	CERR("mg k v v\r\n", DUP),
	CERR("mg k \x80\r\n", DUP), /* memcached's words for bytes >= 127 */
	CERR("md k v v\r\n", INV_DUP),
	CERR("ma k zz\r\n", INV_DUP),
	CERR("mg k N\r\n", TOKEN),
	CERR("mg k Nx\r\n", TOKEN),
	CERR("mg k T1x\r\n", TOKEN),
	CERR("mg k C\r\n", TOKEN),
	CERR("mg k C-1\r\n", TOKEN),
	CERR("mg k T99999999999999999999\r\n", TOKEN), /* past 64 bits */
	CERR("mg k F18446744073709551616\r\n", FMT),
	CERR("mg k x\r\n", INVALID), /* x is md's alone */
	CERR("ma k x\r\n", INV_DUP),
	SWALLOW("ms k 1 x\r\n", INVALID, 3),
	OK("mg k C-0\r\n"),
	CERR("mg k F\r\n", FMT), /* F sets no message of its own */
	CERR("mg k M\r\n", MLEN),
	CERR("mg k MEE\r\n", MLEN),
	OK("mg k MZ\r\n"), /* mg takes M and ignores it */
	CERR("mg k Nx Cx\r\n", TOKEN),
	CERR("mg k Jx\r\n", INITIAL),
	CERR("mg k Dx\r\n", DELTA),
	CERR("mg k Dx Jx\r\n", INITIAL), /* the last error's words */
	CERR("ma k MX\r\n", MA_MODE),
	/* mg and ma run, then answer the error: opaque_too_long. */
	OK("mg k O123456789012345678901234567890123\r\n"),
	OK("ma k O123456789012345678901234567890123\r\n"),
	OK("mg k O1234567890123456789012345678901\r\n"), /* 32 with the O */
	CERR("md k O123456789012345678901234567890123\r\n", OPAQUE),
	/* 17 flags are allowed (19 tokens), 18 are not. */
	CERR("mg k a b c d e f g h i j k l m n o p q\r\n", INVALID),
	CERR("mg k a b c d e f g h i j k l m n o p q r\r\n", MG_LONG),
	CERR("md k a b c d e f g h i j k l m n o p q r\r\n", TOO_LONG),
	/* A key of 251 bytes. */
	CERR("mg "
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "a"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "a"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "a"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa v\r\n",
	     FMT),
	/* ms: errors before the data length swallow nothing... */
	CERR("ms k\r\n", FMT),
	CERR("ms k x\r\n", FMT),
	CERR("ms k -1\r\n", FMT),
	CERR("ms k 1 a b c d e f g h i j k l m n o p q\r\n", TOO_LONG),
	/* ...after it, the data block and its "\r\n" go. */
	SWALLOW("ms k 3 zz\r\n", INVALID, 5),
	SWALLOW("ms k 3 v v\r\n", DUP, 5),
	SWALLOW("ms k 3 MX\r\n", MS_MODE, 5),
	SWALLOW("ms k 3 Me\r\n", MS_MODE, 5),
	SWALLOW("ms k 3 MX O123456789012345678901234567890123\r\n", MS_MODE, 5),
	SWALLOW("ms k 3 O123456789012345678901234567890123\r\n", OPAQUE, 5),
	SWALLOW("ms k 3 b\r\n", DECODE, 5),
	SWALLOW("ms k 3 F-1\r\n", FMT, 5),
	C("ms k 3\r\nabcXY", PROTO_CLIENT_ERROR, CHUNK, 0),
	C("ms k 101\r\n", PROTO_TOO_LARGE, NULL, 103),
};

static const struct proto_limits lim = { .max_value = 100 };

Test(meta_cases, memcached_behaviour)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct meta_case *c = &cases[i];
		struct proto_meta m;
		enum proto_status st = proto_meta_parse(c->in, c->n, &lim, &m);

		cr_expect(st == c->st, "case %zu \"%s\": status %d, want %d", i,
			  c->in, st, c->st);
		if (c->error)
			cr_expect(m.error && strcmp(m.error, c->error) == 0,
				  "case %zu \"%s\": error \"%s\", want \"%s\"",
				  i, c->in, m.error ? m.error : "(none)",
				  c->error);
		cr_expect(m.swallow == c->swallow,
			  "case %zu \"%s\": swallow %llu, want %llu", i, c->in,
			  (unsigned long long)m.swallow,
			  (unsigned long long)c->swallow);
		/* Every shorter prefix waits for more. */
		for (size_t k = 0; k < c->n; k++)
			cr_expect(proto_meta_parse(c->in, k, &lim, &m) ==
					  PROTO_NEED_MORE,
				  "case %zu prefix %zu", i, k);
	}
}

Test(meta_fields, get_flags_in_order)
{
	const char *in = "mg key T30 v O9 N5 k R7 t\r\n";
	struct proto_meta m;

	cr_assert_eq(proto_meta_parse(in, strlen(in), &lim, &m), PROTO_OK);
	cr_expect_eq(m.cmd, 'g');
	cr_expect_eq(m.len, strlen(in));
	cr_expect_eq(m.key.off, 3);
	cr_expect_eq(m.key.len, 3);
	cr_expect_eq(m.nflags, 7);
	cr_expect(memcmp(in + m.flag[2].off, "O9", 2) == 0);
	cr_expect_eq(m.ret, PROTO_META_RET_VALUE | PROTO_META_RET_KEY |
				    PROTO_META_RET_TTL);
	cr_expect(m.has_ttl && m.ttl == 30);
	cr_expect(m.has_vivify && m.vivify_ttl == 5);
	cr_expect(m.has_recache && m.recache_ttl == 7);
	cr_expect(!m.ttl_after_vivify);
	cr_expect(m.ttl_before_recache);
	cr_expect_eq(m.delta, 1); /* the default */
}

Test(meta_fields, set_and_arith)
{
	const char *set = "ms k 2 F7 T-1 C12 E99 MA I b q\r\nxy\r\n";
	const char *arith = "ma k N3 T9 J42 D7 M-\r\n";
	struct proto_meta m;

	cr_assert_eq(proto_meta_parse(set, strlen(set), &lim, &m),
		     PROTO_CLIENT_ERROR); /* "k" is not base64 */
	set = "ms Zm9v 2 F7 T-1 C12 E99 MA I b q\r\nxy\r\n";
	cr_assert_eq(proto_meta_parse(set, strlen(set), &lim, &m), PROTO_OK);
	cr_expect_eq(m.nbytes, 2);
	cr_expect(memcmp(set + m.value_off, "xy", 2) == 0);
	cr_expect_eq(m.client_flags, 7);
	cr_expect(m.has_ttl && m.ttl == -1);
	cr_expect(m.has_cas && m.cas == 12);
	cr_expect(m.has_new_cas && m.new_cas == 99);
	cr_expect_eq(m.mode, 'A');
	cr_expect(m.invalidate && m.base64 && m.quiet);
	cr_assert_eq(proto_meta_parse(arith, strlen(arith), &lim, &m),
		     PROTO_OK);
	cr_expect(m.has_vivify && m.vivify_ttl == 3);
	cr_expect(m.ttl_after_vivify);
	cr_expect_eq(m.initial, 42);
	cr_expect_eq(m.delta, 7);
	cr_expect_eq(m.mode, '-');
}

Test(meta_fields, long_opaque)
{
	const char *mg = "mg k v O123456789012345678901234567890123\r\n";
	const char *mg_ok = "mg k v O1234567890123456789012345678901\r\n";
	struct proto_meta m;

	cr_assert_eq(proto_meta_parse(mg, strlen(mg), &lim, &m), PROTO_OK);
	cr_expect(m.opaque_too_long);
	cr_assert_eq(proto_meta_parse(mg_ok, strlen(mg_ok), &lim, &m),
		     PROTO_OK);
	cr_expect(!m.opaque_too_long);
}

Test(meta_fields, numbers_wrap_as_memcached_stores_them)
{
	const char *in = "mg k T4294967306 N-2147483649 F4294967297 C-0\r\n";
	const char *set = "ms k 4294967298\r\nhi\r\n";
	struct proto_meta m;

	cr_assert_eq(proto_meta_parse(in, strlen(in), &lim, &m), PROTO_OK);
	cr_expect_eq(m.ttl, 10);
	cr_expect_eq(m.vivify_ttl, 2147483647);
	cr_expect_eq(m.client_flags, 1);
	cr_expect(m.has_cas && m.cas == 0);
	cr_assert_eq(proto_meta_parse(set, strlen(set), &lim, &m), PROTO_OK);
	cr_expect_eq(m.nbytes, 2);
}

Test(meta_fields, leading_spaces_and_bare_newline)
{
	const char *in = "  mg   k   v\n";
	struct proto_meta m;

	cr_assert_eq(proto_meta_parse(in, strlen(in), &lim, &m), PROTO_OK);
	cr_expect_eq(m.key.off, 7);
	cr_expect_eq(m.nflags, 1);
}

Test(base64, round_trip_every_length)
{
	char src[PROTO_META_BINKEY_MAX], enc[PROTO_KEY_MAX + 4],
		dec[PROTO_KEY_MAX];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 37 + 11);
	for (size_t n = 1; n <= sizeof(src); n++) {
		size_t e = proto_base64_encode(src, n, enc);

		cr_assert_eq(e, (n + 2) / 3 * 4);
		cr_assert_eq(proto_base64_decode(enc, e, dec), n, "n=%zu", n);
		cr_assert(memcmp(src, dec, n) == 0, "n=%zu", n);
	}
}

Test(base64, memcached_quirks)
{
	char out[16];

	cr_expect_eq(proto_base64_decode("Zm9v", 4, out), 3);
	cr_expect_eq(proto_base64_decode("Zm8=", 4, out), 2);
	cr_expect_eq(proto_base64_decode("Zg==", 4, out), 1);
	cr_expect(memcmp(out, "f", 1) == 0);
	cr_expect_eq(proto_base64_decode("Z===", 4, out), 0);
	cr_expect_eq(proto_base64_decode("Zm9", 3, out), 0);
	cr_expect_eq(proto_base64_decode("", 0, out), 0);
	/* Bytes outside the alphabet are skipped; padding ends the key. */
	cr_expect_eq(proto_base64_decode("Z\tm9v", 5, out), 3);
	cr_expect_eq(proto_base64_decode("Zg==Zm9v", 8, out), 1);
}
