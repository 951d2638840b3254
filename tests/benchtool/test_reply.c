/* Unit tests of bench/reply: each reply kind, every strict prefix answers
 * NEED_MORE, replies back to back, and garbage is INVALID. */
#include "reply.h"

#include <criterion/criterion.h>
#include <string.h>

static void check(const char *s, int is_get, enum bench_reply want)
{
	size_t len = strlen(s), used = 0;
	for (size_t n = 0; n < len; n++)
		cr_assert_eq(bench_reply_parse(s, n, is_get, &used),
			     BENCH_REPLY_NEED_MORE, "prefix %zu of %s", n, s);
	cr_assert_eq(bench_reply_parse(s, len, is_get, &used), want, "%s", s);
	cr_assert_eq(used, len);
}

Test(reply, kinds_and_prefixes, .timeout = 10)
{
	check("VALUE k1 0 5\r\nhello\r\nEND\r\n", 1, BENCH_REPLY_HIT);
	check("VALUE k1 7 0 99\r\n\r\nEND\r\n", 1, BENCH_REPLY_HIT);
	check("END\r\n", 1, BENCH_REPLY_MISS);
	check("STORED\r\n", 0, BENCH_REPLY_STORED);
	check("NOT_STORED\r\n", 0, BENCH_REPLY_ERROR);
	check("SERVER_ERROR out of memory\r\n", 0, BENCH_REPLY_ERROR);
	check("CLIENT_ERROR bad\r\n", 1, BENCH_REPLY_ERROR);
	check("ERROR\r\n", 1, BENCH_REPLY_ERROR);
}

Test(reply, back_to_back_and_invalid, .timeout = 10)
{
	const char *s = "END\r\nVALUE a 0 1\r\nx\r\nEND\r\n";
	size_t used;
	cr_assert_eq(bench_reply_parse(s, strlen(s), 1, &used),
		     BENCH_REPLY_MISS);
	cr_assert_eq(used, 5);
	cr_assert_eq(bench_reply_parse(s + 5, strlen(s) - 5, 1, &used),
		     BENCH_REPLY_HIT);
	const char *bad[] = { "HELLO\r\n", "VALUE a 0 zz\r\n",
			      "VALUE a 0 1\r\nxyz\r\nEND\r\n" };
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(
			bench_reply_parse(bad[i], strlen(bad[i]), 1, &used),
			BENCH_REPLY_INVALID, "%s", bad[i]);
	char longline[BENCH_REPLY_MAX_LINE + 10];
	memset(longline, 'a', sizeof(longline));
	cr_assert_eq(bench_reply_parse(longline, sizeof(longline), 0, &used),
		     BENCH_REPLY_INVALID);
}

/* Binary frames: [id, status, payload] after a 4-byte big-endian length. */
static void check_bin(const char *s, size_t len, int is_get,
		      enum bench_reply want)
{
	size_t used = 0;
	for (size_t n = 0; n < len; n++)
		cr_assert_eq(bench_reply_parse_binary(s, n, is_get, &used),
			     BENCH_REPLY_NEED_MORE, "prefix %zu", n);
	cr_assert_eq(bench_reply_parse_binary(s, len, is_get, &used), want);
	cr_assert_eq(used, len);
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
