/*
 * memcached's ASCII auth handshake parser (proto/text_auth.h): each case
 * was first sent to memcached 1.6.18 started with -Y (the integration test
 * test_ascii_auth.c compares the replies of both servers); every prefix
 * of a request is NEED_MORE, and what follows it is never read.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/text_auth.h"

#define UNAUTH	PROTO_TEXT_AUTH_UNAUTHENTICATED
#define FORMAT	PROTO_TEXT_AUTH_BAD_FORMAT
#define BAD_END PROTO_TEXT_AUTH_BAD_END

struct auth_case {
	const char *in;
	size_t n;
	enum proto_text_auth_status st;
	const char *error; /* REFUSED */
	const char *user, *pass;
};

#define REF(lit, err)                                                          \
	{                                                                      \
		lit, sizeof(lit) - 1, PROTO_TEXT_AUTH_REFUSED, err, NULL, NULL \
	}
#define CRED(lit, u, p)                                                       \
	{                                                                     \
		lit, sizeof(lit) - 1, PROTO_TEXT_AUTH_CREDENTIALS, NULL, u, p \
	}

static const struct auth_case cases[] = {
	REF("get foo\r\n", UNAUTH),
	REF("\r\n", UNAUTH),
	REF("quit\r\n", UNAUTH),
	REF("mn\r\n", UNAUTH),
	REF("add a 0 0 3\r\n", UNAUTH),
	REF("SET a 0 0 3\r\n", UNAUTH),
	REF("sets a 0 0 3\r\n", UNAUTH),
	REF("set a 0 0\r\n", UNAUTH),
	REF("set a 0 0 x\r\n", UNAUTH),
	REF("set a 0 0 3x\r\n", UNAUTH),
	REF("set a 0 0 -1\r\n", UNAUTH),
	REF("set a 0 0 -\r\n", UNAUTH),
	REF("set a 0 0 18446744073709551616\r\n", UNAUTH),
	REF("set a 0 0 \r\r\n", UNAUTH),
	REF("set\0 a 0 0 3\r\n", UNAUTH),
	REF("set a 0 0\0 3\r\n", UNAUTH),
	REF("set foo 0 0 2\r\nhi\r\n", FORMAT),
	REF("set a 0 0 0\r\n\r\n", FORMAT),
	REF("set a 0 0 -0\r\n\r\n", FORMAT),
	REF("set a 0 0 3\r\n   \r\n", FORMAT),
	REF("set a 0 0 7\r\nfoo\0bar\r\n", FORMAT),
	REF("set a 0 0 7\r\nfoo:bar\r\n", FORMAT),
	REF("set a 0 0 3\r\nabcde", BAD_END),
	REF("set a 0 0 7\r\nfoo bar\n\n", BAD_END),
	REF("set a 0 0 7\r\nfoo bar\0\n", BAD_END),
	REF("set a 0 0 4294967294\r\n", BAD_END),
	REF("set a 0 0 4294967295\r\nx", BAD_END),
	REF("set a 0 0 18446744073709551615\r\nx", BAD_END), /* 2^32-1 */
	CRED("set a 0 0 7\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 7 noreply\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 7\nfoo bar\r\n", "foo", "bar"),
	CRED(" set  a 0 0   7 \r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 10\r\n foo  bar \r\n", "foo", "bar"),
	CRED("set a 0 0 11\r\nfoo bar baz\r\n", "foo", "bar"),
	CRED("set a 0 0 +7\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 7\t\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 7\r\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 007\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 4294967303\r\nfoo bar\r\n", "foo", "bar"),
	CRED("set a 0 0 9\r\nfoo bar\r\n\r\n", "foo", "bar\r\n"),
	CRED("set a 0 0 9\r\nfoo\tx bar\r\n", "foo\tx", "bar"),
	CRED("set a b c 3 d e f\r\na b\r\n", "a", "b"),
};

static void check(const struct auth_case *k)
{
	struct proto_text_auth out;
	enum proto_text_auth_status st;

	st = proto_text_auth_parse(k->in, k->n, &out);
	cr_assert_eq(st, k->st, "'%s': status %d, want %d", k->in, st, k->st);
	cr_assert_eq(out.len, k->n, "'%s': len %zu", k->in, out.len);
	if (st == PROTO_TEXT_AUTH_REFUSED)
		cr_assert_str_eq(out.error, k->error, "'%s'", k->in);
	if (st == PROTO_TEXT_AUTH_CREDENTIALS) {
		cr_assert_eq(out.user.len, strlen(k->user), "'%s'", k->in);
		cr_assert_eq(out.pass.len, strlen(k->pass), "'%s'", k->in);
		cr_assert_eq(
			memcmp(k->in + out.user.off, k->user, out.user.len), 0,
			"'%s'", k->in);
		cr_assert_eq(
			memcmp(k->in + out.pass.off, k->pass, out.pass.len), 0,
			"'%s'", k->in);
	}
}

Test(text_auth, cases)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check(&cases[i]);
}

/* Every prefix of a request needs more; bytes after it change nothing. */
Test(text_auth, prefixes_need_more_and_the_rest_is_not_read)
{
	char buf[128];
	struct proto_text_auth out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct auth_case *k = &cases[i];
		struct auth_case more = *k;

		for (size_t n = 0; n < k->n; n++)
			cr_assert_eq(proto_text_auth_parse(k->in, n, &out),
				     PROTO_TEXT_AUTH_NEED_MORE,
				     "'%s' cut at %zu", k->in, n);
		cr_assert_lt(k->n + 9, sizeof(buf));
		memcpy(buf, k->in, k->n);
		memcpy(buf + k->n, "get a\r\n\r\n", 9);
		more.in = buf;
		check(&more);
	}
}

/* A line: up to 2048 bytes without "\n" wait, more close. */
Test(text_auth, a_line_without_newline)
{
	static char junk[4096];
	struct proto_text_auth out;

	memset(junk, 'x', sizeof(junk));
	cr_assert_eq(
		proto_text_auth_parse(junk, PROTO_TEXT_AUTH_LINE_MAX, &out),
		PROTO_TEXT_AUTH_NEED_MORE);
	cr_assert_eq(
		proto_text_auth_parse(junk, PROTO_TEXT_AUTH_LINE_MAX + 1, &out),
		PROTO_TEXT_AUTH_CLOSE);
	junk[3000] = '\n';
	cr_assert_eq(proto_text_auth_parse(junk, sizeof(junk), &out),
		     PROTO_TEXT_AUTH_REFUSED);
	cr_assert_eq(out.len, 3001);
	cr_assert_str_eq(out.error, UNAUTH);
}

/* A data block that has not all arrived waits, however large. */
Test(text_auth, a_large_data_block_waits)
{
	struct proto_text_auth out;

	cr_assert_eq(proto_text_auth_parse("set a 0 0 100000\r\nx", 19, &out),
		     PROTO_TEXT_AUTH_NEED_MORE);
}
