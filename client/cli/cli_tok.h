/*
 * rhkv-cli's line tokenizer and value printer, apart from main so that the
 * unit tests can reach them.
 *
 * A line splits at spaces and tabs into words. A double-quoted part keeps
 * spaces. Inside quotes or not, a word takes the escapes \" \\ \n \r \t
 * \0 (a NUL) and \xNN (two hex digits), since a key may hold any byte;
 * any other backslash stays as it is (so a glob's a\* reaches the server
 * unchanged). Quoted and bare parts next to each other make one word, and
 * "" is an empty word.
 */
#ifndef RHKV_CLI_TOK_H
#define RHKV_CLI_TOK_H

#include <stddef.h>
#include <stdio.h>

struct cli_word {
	char *p;    /* NUL-terminated; may hold NULs of its own (\x00) */
	size_t len; /* bytes before the terminating NUL */
};

struct cli_words {
	struct cli_word *v;
	size_t n;
	char *buf; /* the words' bytes; owned */
};

/*
 * Splits line into *out (which cli_words_free() releases, also after a
 * failure). 0, or -1 with *err set to a static message (unbalanced quotes,
 * a bad \x escape, out of memory).
 */
int cli_tokenize(const char *line, struct cli_words *out, const char **err);
void cli_words_free(struct cli_words *w);

/*
 * Writes p[len] in double quotes: printable ASCII as it is, " and \
 * backslashed, \n \r \t as such, any other byte (NUL too) as \xNN. The
 * output reads back through cli_tokenize() as the same bytes.
 */
void cli_quote(FILE *f, const void *p, size_t len);

/*
 * Writes a key for --raw output: as it is when every byte is printable
 * ASCII other than space, " and \ (so that it reads back as one word),
 * else as cli_quote() does, so that a key never splits its line.
 */
void cli_put_key(FILE *f, const void *p, size_t len);

#endif
