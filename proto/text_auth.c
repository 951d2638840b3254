/*
 * memcached's ASCII authentication handshake (proto/text_auth.h): the
 * checks of memcached 1.6.18's try_read_command_asciiauth, on offsets.
 */
#include "proto/text_auth.h"

#include <limits.h>
#include <string.h>

/* The first max runs of bytes other than ' ' in s[0..n), stopping at a NUL
 * as memcached's tokenizer (which works on C strings) does; returns how
 * many it found. */
static size_t tokens(const char *s, size_t n, struct proto_span *tok,
		     size_t max)
{
	size_t found = 0, i = 0;
	const char *nul = memchr(s, '\0', n);

	if (nul)
		n = (size_t)(nul - s);
	while (found < max) {
		size_t start;

		while (i < n && s[i] == ' ')
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && s[i] != ' ')
			i++;
		tok[found++] = (struct proto_span){ (uint32_t)start,
						    (uint32_t)(i - start) };
	}
	return found;
}

/* isspace() in the C locale, which memcached's strtoul runs in. */
static int c_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * memcached's safe_strtoul on a token: strtoul's reading (white space, a
 * sign, decimal digits; a value past ULONG_MAX fails), then the token must
 * end or go on with white space after the digits, and a value negative as a
 * long fails when the token has a '-'. The result is cut to 32 bits, as
 * memcached stores it in a uint32_t.
 */
static int token_strtoul(const char *s, size_t n, uint32_t *out)
{
	unsigned long v = 0;
	size_t i = 0, digits;
	int neg = 0;

	while (i < n && c_space(s[i]))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	digits = i;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned long d = (unsigned long)(s[i] - '0');

		if (v > (ULONG_MAX - d) / 10)
			return 0; /* ERANGE */
		v = v * 10 + d;
	}
	if (i == digits)
		return 0; /* no digits: endptr == str */
	if (neg)
		v = -v;
	if (i < n && !c_space(s[i]))
		return 0;
	if ((long)v < 0 && memchr(s, '-', n))
		return 0;
	*out = (uint32_t)v;
	return 1;
}

static enum proto_text_auth_status refuse(struct proto_text_auth *out,
					  size_t len, const char *error)
{
	out->len = len;
	out->error = error;
	return PROTO_TEXT_AUTH_REFUSED;
}

enum proto_text_auth_status proto_text_auth_parse(const char *buf, size_t n,
						  struct proto_text_auth *out)
{
	struct proto_span tok[5];
	const char *nl;
	size_t line, data;
	uint32_t size, rl;

	*out = (struct proto_text_auth){ 0 };
	/* memcached: "impossible for the auth command to be this short" */
	if (n < 2)
		return PROTO_TEXT_AUTH_NEED_MORE;
	nl = memchr(buf, '\n', n);
	if (!nl)
		return n > PROTO_TEXT_AUTH_LINE_MAX ? PROTO_TEXT_AUTH_CLOSE
						    : PROTO_TEXT_AUTH_NEED_MORE;
	line = (size_t)(nl - buf);
	if (tokens(buf, line, tok, 5) < 5 || tok[0].len != 3 ||
	    memcmp(buf + tok[0].off, "set", 3) ||
	    !token_strtoul(buf + tok[4].off, tok[4].len, &size))
		return refuse(out, line + 1, PROTO_TEXT_AUTH_UNAUTHENTICATED);
	/* memcached waits for <bytes> + 2 bytes, counted in 32 bits. */
	rl = size + 2u;
	data = line + 1;
	if (rl > n - data)
		return PROTO_TEXT_AUTH_NEED_MORE;
	out->len = data + rl;
	/* The data must end with "\r\n". With fewer than 2 bytes memcached
	 * looks before them, at the "\n" it has made a NUL: never a match. */
	if (rl < 2 || memcmp(buf + data + rl - 2, "\r\n", 2))
		return refuse(out, data + rl, PROTO_TEXT_AUTH_BAD_END);
	if (tokens(buf + data, rl - 2, tok, 2) < 2)
		return refuse(out, data + rl, PROTO_TEXT_AUTH_BAD_FORMAT);
	out->user = (struct proto_span){ (uint32_t)(data + tok[0].off),
					 tok[0].len };
	out->pass = (struct proto_span){ (uint32_t)(data + tok[1].off),
					 tok[1].len };
	return PROTO_TEXT_AUTH_CREDENTIALS;
}
