/*
 * rhkv-cli's tokenizer and quoting (client/cli/cli_tok.c), case by case.
 */
#include "cli_tok.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct cli_words w;

static void teardown(void)
{
	cli_words_free(&w);
}

TestSuite(cli_tok, .fini = teardown);

static void tok_ok(const char *line)
{
	const char *err = NULL;

	cr_assert_eq(cli_tokenize(line, &w, &err), 0, "%s: %s", line, err);
}

static void word_is(size_t i, const void *p, size_t len)
{
	cr_assert_lt(i, w.n);
	cr_assert_eq(w.v[i].len, len, "word %zu: len %zu, want %zu", i,
		     w.v[i].len, len);
	cr_assert_eq(memcmp(w.v[i].p, p, len), 0, "word %zu", i);
	cr_assert_eq(w.v[i].p[len], '\0');
}

Test(cli_tok, empty_and_blank)
{
	tok_ok("");
	cr_assert_eq(w.n, 0);
	cli_words_free(&w);
	tok_ok("  \t \r\n");
	cr_assert_eq(w.n, 0);
}

Test(cli_tok, plain_words)
{
	tok_ok("  set  foo\tbar 1 \n");
	cr_assert_eq(w.n, 4);
	word_is(0, "set", 3);
	word_is(1, "foo", 3);
	word_is(2, "bar", 3);
	word_is(3, "1", 1);
}

Test(cli_tok, quotes_keep_spaces)
{
	tok_ok("set k \"hello world\"");
	cr_assert_eq(w.n, 3);
	word_is(2, "hello world", 11);
}

Test(cli_tok, empty_quoted_word)
{
	tok_ok("set k \"\"");
	cr_assert_eq(w.n, 3);
	word_is(2, "", 0);
}

Test(cli_tok, escapes)
{
	tok_ok("\"a\\\"b\\\\c\\n\\r\\t\\x00\\xfF\\x41\\0\"");
	cr_assert_eq(w.n, 1);
	word_is(0,
		"a\"b\\c\n\r\t\0\xff"
		"A\0",
		12);
}

Test(cli_tok, unknown_escape_kept)
{
	tok_ok("\"a\\*b\"");
	word_is(0, "a\\*b", 4);
}

Test(cli_tok, escapes_outside_quotes)
{
	tok_ok("a\\x41 b\\n \\0\\x00\\t\\\\ a\\\"b c\\*");
	cr_assert_eq(w.n, 5);
	word_is(0, "aA", 2);
	word_is(1, "b\n", 2);
	word_is(2, "\0\0\t\\", 4);
	word_is(3, "a\"b", 3);
	word_is(4, "c\\*", 3);
}

Test(cli_tok, put_key_bare_only_when_it_reads_back)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	cr_assert_not_null(f);
	cli_put_key(f, "user:1", 6);
	putc('|', f);
	cli_put_key(f, "a b", 3);
	putc('|', f);
	cli_put_key(f, "a\0\n", 3);
	putc('|', f);
	cli_put_key(f, "q\"", 2);
	fclose(f);
	cr_assert_str_eq(out, "user:1|\"a b\"|\"a\\x00\\n\"|\"q\\\"\"");
	free(out);
}

Test(cli_tok, adjacent_parts_join)
{
	tok_ok("ab\"c d\"e f");
	cr_assert_eq(w.n, 2);
	word_is(0, "abc de", 6);
	word_is(1, "f", 1);
}

Test(cli_tok, unbalanced)
{
	const char *err = NULL;

	cr_assert_eq(cli_tokenize("get \"abc", &w, &err), -1);
	cr_assert_str_eq(err, "unbalanced quotes");
}

Test(cli_tok, bad_hex)
{
	const char *err = NULL;

	cr_assert_eq(cli_tokenize("\"\\xg0\"", &w, &err), -1);
	cr_assert_not_null(err);
	cli_words_free(&w);
	cr_assert_eq(cli_tokenize("\"\\x4", &w, &err), -1);
	cli_words_free(&w);
	cr_assert_eq(cli_tokenize("\"\\x\"", &w, &err), -1);
}

Test(cli_tok, many_words)
{
	char line[4096] = "";

	for (int i = 0; i < 500; i++)
		strcat(line, "k ");
	tok_ok(line);
	cr_assert_eq(w.n, 500);
	word_is(499, "k", 1);
}

/* cli_quote's output reads back as the same bytes. */
Test(cli_tok, quote_round_trip)
{
	unsigned char all[256];
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	cr_assert_not_null(f);
	cli_quote(f, all, sizeof(all));
	fclose(f);
	for (size_t i = 0; i < outlen; i++)
		cr_assert(out[i] >= 0x20 && out[i] < 0x7f, "byte %zu", i);
	tok_ok(out);
	cr_assert_eq(w.n, 1);
	word_is(0, all, sizeof(all));
	free(out);
}

Test(cli_tok, quote_exact)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	cli_quote(f, "a \"b\"\\\n\x01\x7f", 9);
	fclose(f);
	cr_assert_str_eq(out, "\"a \\\"b\\\"\\\\\\n\\x01\\x7f\"");
	free(out);
}
