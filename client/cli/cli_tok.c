/*
 * rhkv-cli's tokenizer and quoting (cli_tok.h).
 */
#include "cli_tok.h"

#include <stdlib.h>
#include <string.h>

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

void cli_words_free(struct cli_words *w)
{
	free(w->v);
	free(w->buf);
	w->v = NULL;
	w->buf = NULL;
	w->n = 0;
}

int cli_tokenize(const char *line, struct cli_words *out, const char **err)
{
	size_t len = strlen(line), cap = 0;
	const char *s = line;
	char *o;

	out->v = NULL;
	out->n = 0;
	/* Every word is at most its input, plus one NUL per word. */
	out->buf = malloc(2 * len + 2);
	if (!out->buf) {
		*err = "out of memory";
		return -1;
	}
	o = out->buf;
	for (;;) {
		struct cli_word w;
		int quoted = 0;

		while (is_space(*s))
			s++;
		if (!*s)
			break;
		w.p = o;
		while (*s && (quoted || !is_space(*s))) {
			if (*s == '"') {
				quoted = !quoted;
				s++;
				continue;
			}
			if (*s != '\\') {
				*o++ = *s++;
				continue;
			}
			/* a backslash, in quotes or not: keys may hold any
			 * byte, and a bare word is the usual way to name one */
			switch (s[1]) {
			case '"':
			case '\\':
				*o++ = s[1];
				s += 2;
				break;
			case 'n':
				*o++ = '\n';
				s += 2;
				break;
			case 'r':
				*o++ = '\r';
				s += 2;
				break;
			case 't':
				*o++ = '\t';
				s += 2;
				break;
			case '0':
				*o++ = '\0';
				s += 2;
				break;
			case 'x': {
				int hi = s[2] ? hexval(s[2]) : -1;
				int lo = hi >= 0 && s[3] ? hexval(s[3]) : -1;

				if (hi < 0 || lo < 0) {
					*err = "bad \\x escape (want \\xNN)";
					return -1;
				}
				*o++ = (char)(hi << 4 | lo);
				s += 4;
				break;
			}
			default:
				*o++ = *s++; /* kept as it is */
				break;
			}
		}
		if (quoted) {
			*err = "unbalanced quotes";
			return -1;
		}
		w.len = (size_t)(o - w.p);
		*o++ = '\0';
		if (out->n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct cli_word *nv =
				realloc(out->v, ncap * sizeof(*nv));

			if (!nv) {
				*err = "out of memory";
				return -1;
			}
			out->v = nv;
			cap = ncap;
		}
		out->v[out->n++] = w;
	}
	return 0;
}

void cli_quote(FILE *f, const void *p, size_t len)
{
	const unsigned char *s = p;

	putc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = s[i];

		switch (ch) {
		case '"':
		case '\\':
			putc('\\', f);
			putc(ch, f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (ch >= 0x20 && ch < 0x7f)
				putc(ch, f);
			else
				fprintf(f, "\\x%02x", ch);
		}
	}
	putc('"', f);
}

void cli_put_key(FILE *f, const void *p, size_t len)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++) {
		if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == '"' ||
		    s[i] == '\\') {
			cli_quote(f, p, len);
			return;
		}
	}
	fwrite(p, 1, len, f);
}
