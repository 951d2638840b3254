/*
 * What the text protocol's parsers share (proto/text.c for the classic
 * commands, proto/meta.c for the meta ones): finding a request line,
 * splitting it into tokens, and reading numbers as memcached reads them.
 * Internal to proto/: not installed, not part of any API.
 */
#ifndef RHKV_PROTO_TEXT_LINE_H
#define RHKV_PROTO_TEXT_LINE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto/text.h"

/* Tokens a request line keeps; more are only counted (no command needs more
 * than 7, and multi-key lines are walked again). */
#define TOKENS_KEPT 8
/* memcached looks through at most this many leading spaces for a get line
 * longer than the usual limit. */
#define GET_LINE_LEADING_SPACES 100

/* A request line split on spaces, as memcached splits it. */
struct line {
	const char *buf;
	uint32_t end;	/* where the line's content ends ("\r\n" excluded) */
	uint32_t total; /* bytes of the line with its terminator */
	uint32_t ntok;	/* number of tokens, the command included */
	struct proto_span tok[TOKENS_KEPT];
	struct proto_span last; /* the last token */
};

static inline bool span_is(const char *buf, struct proto_span s,
			   const char *word)
{
	size_t len = strlen(word);
	return s.len == len && memcmp(buf + s.off, word, len) == 0;
}

/* Next space-separated token of buf[*pos..end); false when none is left. */
static inline bool token_next(const char *buf, uint32_t *pos, uint32_t end,
			      struct proto_span *tok)
{
	uint32_t p = *pos;
	while (p < end && buf[p] == ' ')
		p++;
	if (p >= end) {
		*pos = p;
		return false;
	}
	tok->off = p;
	while (p < end && buf[p] != ' ')
		p++;
	tok->len = p - tok->off;
	*pos = p;
	return true;
}

static inline void line_split(struct line *l)
{
	struct proto_span tok;
	uint32_t pos = 0;

	l->ntok = 0;
	while (token_next(l->buf, &pos, l->end, &tok)) {
		if (l->ntok < TOKENS_KEPT)
			l->tok[l->ntok] = tok;
		l->last = tok;
		l->ntok++;
	}
}

/*
 * Whether an overlong line without its "\n" yet may still be a multi-key
 * retrieval (n > PROTO_LINE_MAX, so the bytes looked at are all there).
 */
static inline bool is_get_line(const char *buf)
{
	static const char *const prefixes[] = { "get ", "gets ", "gat ",
						"gats ", "bget " };
	size_t i = 0;

	while (buf[i] == ' ' && i <= GET_LINE_LEADING_SPACES)
		i++;
	if (i > GET_LINE_LEADING_SPACES)
		return false;
	for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		if (memcmp(buf + i, prefixes[k], strlen(prefixes[k])) == 0)
			return true;
	}
	return false;
}

/* The get-line limit lim gives. */
static inline size_t get_line_max(const struct proto_limits *lim)
{
	uint32_t max = lim != NULL ? lim->max_get_line : 0;

	if (max == 0)
		return PROTO_GET_LINE_DEFAULT;
	return max < PROTO_GET_LINE_MIN ? PROTO_GET_LINE_MIN : max;
}

/*
 * Finds the first line's "\n" within its length limit. The answer depends
 * only on the first limit + 1 bytes, so every prefix of a request agrees.
 * The search starts past lim->no_newline; *searched tells how far it went
 * when there is no "\n" yet.
 */
static inline enum proto_status line_find(const char *buf, size_t n,
					  const struct proto_limits *lim,
					  struct line *l, uint32_t *searched)
{
	size_t max = PROTO_LINE_MAX, win, from;
	const char *nl;

	if (n > PROTO_LINE_MAX && is_get_line(buf))
		max = get_line_max(lim);
	win = n < max + 1 ? n : max + 1;
	from = lim != NULL ? lim->no_newline : 0;
	if (from > win)
		from = win;
	nl = memchr(buf + from, '\n', win - from);
	if (nl == NULL) {
		if (n > max)
			return PROTO_LINE_TOO_LONG;
		*searched = (uint32_t)n;
		return PROTO_NEED_MORE;
	}
	l->buf = buf;
	l->end = (uint32_t)(nl - buf);
	l->total = l->end + 1;
	if (l->end > 0 && buf[l->end - 1] == '\r')
		l->end--;
	/* memcached reads the line as a C string: a NUL ends its content. */
	nl = memchr(buf, '\0', l->end);
	if (nl != NULL)
		l->end = (uint32_t)(nl - buf);
	return PROTO_OK;
}

/* A token of a line: it holds no ' ', '\n' or NUL by construction, so only
 * its length is left to check. */
static inline bool key_valid(const char *buf, struct proto_span k)
{
	(void)buf;
	return k.len != 0 && k.len <= PROTO_KEY_MAX;
}

/* The white space strtol() skips, less ' ' and '\n' (never in a token). */
static inline bool is_blank(char c)
{
	return c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * A number as memcached reads one (strtol and its checks): blanks, an
 * optional sign, at least one digit, then the token's end or a blank after
 * which anything is ignored. Gives the sign and the magnitude; false on no
 * digits, other trailing bytes, or a magnitude past UINT64_MAX.
 */
static inline bool number_parse(const char *buf, struct proto_span t, bool *neg,
				uint64_t *mag)
{
	const char *p = buf + t.off;
	uint32_t i = 0, start;
	uint64_t v = 0;

	while (i < t.len && is_blank(p[i]))
		i++;
	*neg = false;
	if (i < t.len && (p[i] == '+' || p[i] == '-')) {
		*neg = p[i] == '-';
		i++;
	}
	start = i;
	while (i < t.len && is_digit(p[i])) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		i++;
	}
	if (i == start || (i < t.len && !is_blank(p[i])))
		return false;
	*mag = v;
	return true;
}

/*
 * Unsigned, as memcached's safe_strtoull and safe_strtoul read a number on
 * a 64-bit build: strtoull wraps a minus sign into the unsigned range, and
 * the result is refused only when it then reads as negative. So "-0" is 0
 * and "-18446744073709551615" is 1, but "-1" is refused.
 */
static inline bool parse_u64(const char *buf, struct proto_span t,
			     uint64_t *out)
{
	bool neg;
	uint64_t mag, v;

	if (!number_parse(buf, t, &neg, &mag))
		return false;
	v = neg ? 0 - mag : mag;
	if (neg && (int64_t)v < 0)
		return false;
	*out = v;
	return true;
}

/* safe_strtoul into a 32-bit field (client flags, verbosity): read as 64
 * bits and kept as the low 32, so 4294967296 is 0. */
static inline bool parse_u32(const char *buf, struct proto_span t,
			     uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(buf, t, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

/*
 * safe_strtol into an int32_t (exptimes, data lengths, flush delays, meta
 * N/T/R): strtol's 64-bit number, refused past its range, then kept as
 * its low 32 bits, signed, so 4294967396 is 100 and 4294967295 is -1.
 */
static inline bool parse_i32_wrap(const char *buf, struct proto_span t,
				  int64_t *out)
{
	bool neg;
	uint64_t mag;

	if (!number_parse(buf, t, &neg, &mag) ||
	    mag > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return false;
	*out = (int32_t)(uint32_t)(neg ? 0 - mag : mag);
	return true;
}

#endif
