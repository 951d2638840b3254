/*
 * proto_glob_match(): the glob of `scan ... match <glob>`. One pass over the
 * subject with backtracking to the last `*` only, so that no pattern, however
 * hostile (`*a*a*a*a*a*b`, `*[[[[...`), costs more than O(plen * n).
 */
#include "proto/text.h"

/*
 * Why classes stay cheap: a `[` either opens a class that ends at its `]`,
 * or, when no `]` closes it, stands for a literal `[`. glob_prepare() finds
 * the first such lone `[`; every `[` after it is lone too (a `]` that could
 * close a later class would have closed that one, as `\` pairs up bytes the
 * same way in a class and outside one), so matching never looks for a `]`
 * past the element it is in.
 */

struct glob {
	const unsigned char *pat;
	size_t plen;
	size_t lone_from; /* every `[` from here on is a literal */
};

/* One class member at *q, `\` escaping the next byte; advances *q. */
static unsigned char class_byte(const struct glob *g, size_t *q)
{
	if (g->pat[*q] == '\\' && *q + 1 < g->plen) {
		*q += 2;
		return g->pat[*q - 1];
	}
	return g->pat[(*q)++];
}

/*
 * The class opened by the `[` at p: whether c is in it; *end is the index
 * after its `]`, or 0 when no `]` closes it.
 */
static bool class_match(const struct glob *g, size_t p, unsigned char c,
			size_t *end)
{
	size_t q = p + 1;
	bool neg = false, in = false, first = true;

	if (q < g->plen && (g->pat[q] == '!' || g->pat[q] == '^')) {
		neg = true;
		q++;
	}
	for (;;) {
		unsigned char lo, hi;

		if (q >= g->plen) {
			*end = 0;
			return false;
		}
		if (g->pat[q] == ']' && !first) {
			*end = q + 1;
			return in != neg;
		}
		first = false;
		lo = class_byte(g, &q);
		hi = lo;
		if (q + 1 < g->plen && g->pat[q] == '-' &&
		    g->pat[q + 1] != ']') {
			q++;
			hi = class_byte(g, &q);
		}
		if (lo > hi) {
			unsigned char t = lo;
			lo = hi;
			hi = t;
		}
		if (c >= lo && c <= hi)
			in = true;
	}
}

static void glob_prepare(struct glob *g)
{
	size_t p = 0, end;

	g->lone_from = g->plen;
	while (p < g->plen) {
		if (g->pat[p] == '\\' && p + 1 < g->plen) {
			p += 2;
		} else if (g->pat[p] == '[') {
			class_match(g, p, 0, &end);
			if (end == 0) {
				g->lone_from = p;
				return;
			}
			p = end;
		} else {
			p++;
		}
	}
}

/* Whether the element at p (not `*`) matches c; *next is the index after
 * the element. */
static bool element_match(const struct glob *g, size_t p, unsigned char c,
			  size_t *next)
{
	unsigned char e = g->pat[p];

	*next = p + 1;
	if (e == '?')
		return true;
	if (e == '\\' && p + 1 < g->plen) {
		*next = p + 2;
		return g->pat[p + 1] == c;
	}
	if (e == '[' && p < g->lone_from) {
		bool in = class_match(g, p, c, next);
		if (*next != 0) /* always, as glob_prepare() found */
			return in;
		*next = p + 1;
	}
	return e == c;
}

bool proto_glob_match(const char *pat, size_t plen, const char *s, size_t n)
{
	struct glob g = { (const unsigned char *)pat, plen, 0 };
	const unsigned char *str = (const unsigned char *)s;
	size_t p = 0, i = 0, star_p = 0, star_i = 0, next;
	bool star = false;

	glob_prepare(&g);
	while (i < n) {
		if (p < plen && g.pat[p] == '*') {
			/* Let the star match nothing first; remember it. */
			star = true;
			star_p = ++p;
			star_i = i;
			continue;
		}
		if (p < plen && element_match(&g, p, str[i], &next)) {
			p = next;
			i++;
			continue;
		}
		if (!star)
			return false;
		/* Backtrack: the last star takes one more byte. */
		p = star_p;
		i = ++star_i;
	}
	while (p < plen && g.pat[p] == '*')
		p++;
	return p == plen;
}
