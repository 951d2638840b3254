/* Unit tests of bench/reply: each reply kind of the text, meta and binary
 * parsers, every strict prefix answers NEED_MORE, replies back to back,
 * and garbage is INVALID. */
#include "reply.h"

#include <criterion/criterion.h>
#include <string.h>

typedef enum bench_reply (*parse_fn)(const char *, size_t, int, size_t *);

/* Every strict prefix of s[0..len) is NEED_MORE (partial reads), the whole
 * is want, and the reply takes all of it. */
static void check_with(parse_fn parse, const char *s, size_t len, int is_get,
		       enum bench_reply want)
{
	size_t used = 0;
	for (size_t n = 0; n < len; n++)
		cr_assert_eq(parse(s, n, is_get, &used), BENCH_REPLY_NEED_MORE,
			     "prefix %zu of %.*s", n, (int)len, s);
	cr_assert_eq(parse(s, len, is_get, &used), want, "%.*s", (int)len, s);
	cr_assert_eq(used, len, "%.*s", (int)len, s);
}

/* Whole replies of the text and meta dialects, each checked on every
 * prefix. */
static const struct {
	parse_fn parse;
	const char *s;
	int is_get;
	enum bench_reply want;
} kinds[] = {
	{ bench_reply_parse, "VALUE k1 0 5\r\nhello\r\nEND\r\n", 1,
	  BENCH_REPLY_HIT },
	{ bench_reply_parse, "VALUE k1 7 0 99\r\n\r\nEND\r\n", 1,
	  BENCH_REPLY_HIT },
	{ bench_reply_parse, "END\r\n", 1, BENCH_REPLY_MISS },
	{ bench_reply_parse, "STORED\r\n", 0, BENCH_REPLY_STORED },
	{ bench_reply_parse, "NOT_STORED\r\n", 0, BENCH_REPLY_ERROR },
	{ bench_reply_parse, "SERVER_ERROR out of memory\r\n", 0,
	  BENCH_REPLY_ERROR },
	{ bench_reply_parse, "CLIENT_ERROR bad\r\n", 1, BENCH_REPLY_ERROR },
	{ bench_reply_parse, "ERROR\r\n", 1, BENCH_REPLY_ERROR },
	/* mg <key> v f: VA <bytes> f<flags>, the data, no END. */
	{ bench_reply_parse_meta, "VA 5 f0\r\nhello\r\n", 1, BENCH_REPLY_HIT },
	{ bench_reply_parse_meta, "VA 0\r\n\r\n", 1, BENCH_REPLY_HIT },
	{ bench_reply_parse_meta, "VA 2 f7 c99 t-1\r\nhi\r\n", 1,
	  BENCH_REPLY_HIT },
	/* Data that looks like lines is still counted by its length. */
	{ bench_reply_parse_meta, "VA 4 f0\r\n\r\n\r\n\r\n", 1,
	  BENCH_REPLY_HIT },
	{ bench_reply_parse_meta, "EN\r\n", 1, BENCH_REPLY_MISS },
	{ bench_reply_parse_meta, "HD\r\n", 0, BENCH_REPLY_STORED },
	{ bench_reply_parse_meta, "HD c12 O7\r\n", 0, BENCH_REPLY_STORED },
	{ bench_reply_parse_meta, "NS\r\n", 0, BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta, "EX\r\n", 0, BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta, "NF\r\n", 0, BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta, "NF k1\r\n", 1, BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta,
	  "SERVER_ERROR out of memory storing object\r\n", 0,
	  BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta, "CLIENT_ERROR bad data chunk\r\n", 0,
	  BENCH_REPLY_ERROR },
	{ bench_reply_parse_meta, "ERROR\r\n", 1, BENCH_REPLY_ERROR },
};

Test(reply, kinds_and_prefixes, .timeout = 10)
{
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		check_with(kinds[i].parse, kinds[i].s, strlen(kinds[i].s),
			   kinds[i].is_get, kinds[i].want);
}

/* Malformed replies, and (meta) a text reply, or a get's reply to a set or
 * the reverse: the replies no longer line up with the requests. */
static const struct {
	parse_fn parse;
	const char *s;
	int is_get;
} invalid[] = {
	{ bench_reply_parse, "HELLO\r\n", 1 },
	{ bench_reply_parse, "VALUE a 0 zz\r\n", 1 },
	{ bench_reply_parse, "VALUE a 0 1\r\nxyz\r\nEND\r\n", 1 },
	{ bench_reply_parse_meta, "VA\r\n", 1 },
	{ bench_reply_parse_meta, "VA x f0\r\n", 1 },
	{ bench_reply_parse_meta, "VA -1\r\n", 1 },
	{ bench_reply_parse_meta, "VA 5f0\r\nhello\r\n", 1 },
	{ bench_reply_parse_meta, "VA 99999999999 f0\r\n", 1 },
	{ bench_reply_parse_meta, "VA 1 f0\r\nxyz\r\n", 1 },
	{ bench_reply_parse_meta, "HDX\r\n", 0 },
	{ bench_reply_parse_meta, "HD\n", 0 },
	{ bench_reply_parse_meta, "END\r\n", 1 },
	{ bench_reply_parse_meta, "STORED\r\n", 0 },
	{ bench_reply_parse_meta, "HD\r\n", 1 },
	{ bench_reply_parse_meta, "EN\r\n", 0 },
	{ bench_reply_parse_meta, "VA 1 f0\r\nx\r\n", 0 },
};

Test(reply, back_to_back_and_invalid, .timeout = 10)
{
	const char *s = "END\r\nVALUE a 0 1\r\nx\r\nEND\r\n";
	size_t used;
	cr_assert_eq(bench_reply_parse(s, strlen(s), 1, &used),
		     BENCH_REPLY_MISS);
	cr_assert_eq(used, 5);
	cr_assert_eq(bench_reply_parse(s + 5, strlen(s) - 5, 1, &used),
		     BENCH_REPLY_HIT);
	for (unsigned i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		cr_assert_eq(invalid[i].parse(invalid[i].s,
					      strlen(invalid[i].s),
					      invalid[i].is_get, &used),
			     BENCH_REPLY_INVALID, "%s", invalid[i].s);
	char longline[BENCH_REPLY_MAX_LINE + 10];
	memset(longline, 'a', sizeof(longline));
	cr_assert_eq(bench_reply_parse(longline, sizeof(longline), 0, &used),
		     BENCH_REPLY_INVALID);
	cr_assert_eq(
		bench_reply_parse_meta(longline, sizeof(longline), 1, &used),
		BENCH_REPLY_INVALID);
}

Test(reply, meta_back_to_back, .timeout = 10)
{
	const char *s = "EN\r\nVA 1 f0\r\nx\r\nHD\r\n";
	size_t len = strlen(s), used;
	cr_assert_eq(bench_reply_parse_meta(s, len, 1, &used),
		     BENCH_REPLY_MISS);
	cr_assert_eq(used, 4);
	cr_assert_eq(bench_reply_parse_meta(s + 4, len - 4, 1, &used),
		     BENCH_REPLY_HIT);
	cr_assert_eq(used, 12);
	cr_assert_eq(bench_reply_parse_meta(s + 16, len - 16, 0, &used),
		     BENCH_REPLY_STORED);
	cr_assert_eq(used, 4);
}

/* Binary frames: [id, status, payload] after a 4-byte big-endian length. */
static void check_bin(const char *s, size_t len, int is_get,
		      enum bench_reply want)
{
	check_with(bench_reply_parse_binary, s, len, is_get, want);
}

Test(reply, binary_frames, .timeout = 10)
{
	/* [7, OK, [0, bin "v", 3]] */
	static const char hit[] = "\0\0\0\x09\x93\x07\x00\x93\x00\xc4\x01v\x03";
	/* [300, NOT_FOUND, nil]: a 3-byte id */
	static const char miss[] = "\0\0\0\x06\x93\xcd\x01\x2c\x01\xc0";
	/* [7, OK, 5]: a set's cas */
	static const char stored[] = "\0\0\0\x04\x93\x07\x00\x05";
	/* [7, OUT_OF_MEMORY, "..."] */
	static const char oom[] = "\0\0\0\x05\x93\x07\x07\xa1x";
	static const char notarray[] = "\0\0\0\x03\x92\x07\x00";
	size_t used;

	check_bin(hit, sizeof(hit) - 1, 1, BENCH_REPLY_HIT);
	check_bin(miss, sizeof(miss) - 1, 1, BENCH_REPLY_MISS);
	check_bin(stored, sizeof(stored) - 1, 0, BENCH_REPLY_STORED);
	check_bin(oom, sizeof(oom) - 1, 0, BENCH_REPLY_ERROR);
	cr_assert_eq(bench_reply_parse_binary(notarray, sizeof(notarray) - 1, 1,
					      &used),
		     BENCH_REPLY_INVALID);
	/* A claimed length past any reply: the stream is lost. */
	cr_assert_eq(bench_reply_parse_binary("\x7f\0\0\0", 4, 1, &used),
		     BENCH_REPLY_INVALID);
}
