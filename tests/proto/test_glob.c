/*
 * proto_glob_match(), the glob of `scan ... match`: the syntax case by case,
 * agreement with a plain recursive matcher on many random short patterns,
 * and hostile patterns that must stay fast (no exponential backtracking).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "text_test_util.h"

static bool glob(const char *pat, const char *s)
{
	return proto_glob_match(pat, strlen(pat), s, strlen(s));
}

Test(glob, syntax)
{
	static const struct {
		const char *pat, *s;
		bool match;
	} t[] = {
		{ "", "", true },
		{ "", "a", false },
		{ "*", "", true },
		{ "*", "anything", true },
		{ "**", "", true },
		{ "?", "", false },
		{ "?", "a", true },
		{ "?", "ab", false },
		{ "a?c", "abc", true },
		{ "a?c", "ac", false },
		{ "abc", "abc", true },
		{ "abc", "abd", false },
		{ "abc", "ab", false },
		{ "ab", "abc", false },
		{ "a*", "a", true },
		{ "a*", "abc", true },
		{ "a*", "ba", false },
		{ "*c", "abc", true },
		{ "*c", "abd", false },
		{ "a*b*c", "aXbYc", true },
		{ "a*b*c", "aXbY", false },
		{ "a*b*c", "abcbc", true },
		{ "*a*", "bab", true },
		{ "user:*", "user:42", true },
		{ "user:*", "usr:42", false },
		/* classes */
		{ "[abc]", "b", true },
		{ "[abc]", "d", false },
		{ "[a-c]x", "bx", true },
		{ "[a-c]x", "dx", false },
		{ "[!a-c]", "d", true },
		{ "[!a-c]", "a", false },
		{ "[^a]", "b", true },
		{ "[^a]", "a", false },
		{ "[]]", "]", true },
		{ "[]a]", "a", true },
		{ "[]a]", "b", false },
		{ "[!]]", "]", false },
		{ "[!]]", "a", true },
		{ "[^]a]", "b", true },
		{ "[a-]", "-", true },
		{ "[-a]", "-", true },
		{ "[a-]", "b", false },
		{ "[z-a]", "m", true },
		{ "[z-a]", "A", false },
		{ "[\\]]", "]", true },
		{ "[a\\-z]", "-", true },
		{ "[a\\-z]", "m", false },
		{ "[\\!a]", "!", true },
		{ "[*]", "*", true },
		{ "[*]", "a", false },
		{ "[?]", "?", true },
		{ "[?]", "a", false },
		{ "[[]", "[", true },
		{ "[a-c-e]", "-", true },
		{ "[a-c-e]", "d", false },
		{ "[0-9][0-9]", "42", true },
		{ "[0-9][0-9]", "4x", false },
		/* a `[` without `]` is a literal `[` */
		{ "[", "[", true },
		{ "[", "a", false },
		{ "[a", "[a", true },
		{ "[a", "a", false },
		{ "a[", "a[", true },
		{ "[!", "[!", true },
		{ "[]", "[]", true },
		{ "[\\]", "[]", true },
		{ "*[", "xx[", true },
		{ "[ab][", "a[", true },
		/* escapes */
		{ "\\*", "*", true },
		{ "\\*", "a", false },
		{ "\\?", "?", true },
		{ "\\?", "a", false },
		{ "\\[a]", "[a]", true },
		{ "\\[a]", "a", false },
		{ "a\\", "a\\", true },
		{ "\\\\", "\\", true },
		{ "\\a", "a", true },
		{ "*\\*", "ab*", true },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(glob(t[i].pat, t[i].s), t[i].match,
			     "\"%s\" on \"%s\"", t[i].pat, t[i].s);
}

Test(glob, bytes_are_unsigned_and_nul_is_a_byte)
{
	cr_expect(glob("[\x80-\xff]", "\x90"));
	cr_expect_not(glob("[\x80-\xff]", "\x7f"));
	cr_expect(glob("\xff*", "\xff\x01"));
	cr_expect(proto_glob_match("a\0*", 3, "a\0bc", 4));
	cr_expect_not(proto_glob_match("a\0*", 3, "abc", 3));
	cr_expect(proto_glob_match("?", 1, "\0", 1));
}

/* The same syntax, matched by plain recursion (exponential, for short
 * strings only). */
static size_t ref_class(const char *p, size_t plen, size_t i, unsigned char c,
			bool *in)
{
	size_t q = i + 1;
	bool neg = false, found = false;

	if (q < plen && (p[q] == '!' || p[q] == '^'))
		neg = true, q++;
	for (size_t first = q; q < plen; q++) {
		unsigned char lo, hi;
		if (p[q] == ']' && q != first) {
			*in = found != neg;
			return q + 1;
		}
		if (p[q] == '\\' && q + 1 < plen)
			q++;
		lo = hi = (unsigned char)p[q];
		if (q + 2 < plen && p[q + 1] == '-' && p[q + 2] != ']') {
			q += 2;
			if (p[q] == '\\' && q + 1 < plen)
				q++;
			hi = (unsigned char)p[q];
		}
		if ((c >= lo && c <= hi) || (c >= hi && c <= lo))
			found = true;
	}
	return 0;
}

static bool ref_match(const char *p, size_t plen, const char *s, size_t n)
{
	size_t next;
	bool in;

	if (plen == 0)
		return n == 0;
	if (p[0] == '*') {
		for (size_t k = 0; k <= n; k++) {
			if (ref_match(p + 1, plen - 1, s + k, n - k))
				return true;
		}
		return false;
	}
	if (n == 0)
		return false;
	if (p[0] == '?') {
		in = true;
		next = 1;
	} else if (p[0] == '\\' && plen > 1) {
		in = p[1] == s[0];
		next = 2;
	} else if (p[0] == '[' &&
		   (next = ref_class(p, plen, 0, (unsigned char)s[0], &in)) !=
			   0) {
	} else {
		in = p[0] == s[0];
		next = 1;
	}
	return in && ref_match(p + next, plen - next, s + 1, n - 1);
}

Test(glob, agrees_with_recursion)
{
	static const char pat_alpha[] = "ab*?[]!^-\\";
	static const char str_alpha[] = "ab[]-\\!^*?";
	uint64_t seed = 0x610b;
	char p[10], s[10];

	for (int i = 0; i < 300000; i++) {
		size_t plen = test_rand_below(&seed, 10);
		size_t n = test_rand_below(&seed, 9);
		for (size_t k = 0; k < plen; k++)
			p[k] = pat_alpha[test_rand_below(&seed, 10)];
		for (size_t k = 0; k < n; k++)
			s[k] = str_alpha[test_rand_below(&seed, 10)];
		cr_assert_eq(proto_glob_match(p, plen, s, n),
			     ref_match(p, plen, s, n), "\"%.*s\" on \"%.*s\"",
			     (int)plen, p, (int)n, s);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Patterns that make naive backtracking exponential, on long subjects:
 * each must answer in well under a second (O(plen * n) ~ 10^7 steps). */
Test(glob, hostile_patterns_stay_fast)
{
	static char pat[PROTO_LINE_MAX], s[4096];
	size_t plen, n = sizeof(s);
	double t0 = now_s();

	memset(s, 'a', n);
	cr_expect_not(glob("*a*a*a*a*a*a*b",
			   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	/* "*a" x 1000 then "b", on 4096 a's */
	for (plen = 0; plen + 3 < sizeof(pat); plen += 2)
		memcpy(pat + plen, "*a", 2);
	pat[plen++] = 'b';
	cr_expect_not(proto_glob_match(pat, plen, s, n));
	pat[plen - 1] = '*';
	cr_expect(proto_glob_match(pat, plen, s, n));
	/* "*[a-z]" repeated, then a byte that never comes */
	for (plen = 0; plen + 8 < sizeof(pat); plen += 6)
		memcpy(pat + plen, "*[a-z]", 6);
	pat[plen++] = '!';
	cr_expect_not(proto_glob_match(pat, plen, s, n));
	/* "*" then lone `[`s (each must not look for its `]` again) */
	pat[0] = '*';
	memset(pat + 1, '[', sizeof(pat) - 1);
	cr_expect_not(proto_glob_match(pat, sizeof(pat), s, n));
	memset(s, '[', n);
	cr_expect(proto_glob_match(pat, sizeof(pat), s, n));
	/* "*?" x 1000 + "b" */
	memset(s, 'a', n);
	for (plen = 0; plen + 3 < sizeof(pat); plen += 2)
		memcpy(pat + plen, "*?", 2);
	pat[plen++] = 'b';
	cr_expect_not(proto_glob_match(pat, plen, s, n));
	/* one long class, retried at every position */
	pat[0] = '*';
	pat[1] = '[';
	memset(pat + 2, 'b', sizeof(pat) - 4);
	pat[sizeof(pat) - 2] = ']';
	pat[sizeof(pat) - 1] = 'c';
	cr_expect_not(proto_glob_match(pat, sizeof(pat), s, n));
	cr_expect_lt(now_s() - t0, 2.0, "took %.3f s", now_s() - t0);
}
