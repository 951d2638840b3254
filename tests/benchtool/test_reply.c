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
