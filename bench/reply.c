/* reply: the memcached text-protocol reply parser of reply.h. A get reply
 * is END or VALUE <key> <flags> <bytes> [<cas>], the data, then END. */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

/* Length of the line at buf including "\r\n", 0 when not all here, or
 * (size_t)-1 when too long. */
static size_t line_len(const char *buf, size_t len)
{
	size_t max = len < BENCH_REPLY_MAX_LINE ? len : BENCH_REPLY_MAX_LINE;
	const char *nl = memchr(buf, '\n', max);
	if (nl == NULL)
		return len < BENCH_REPLY_MAX_LINE ? 0 : (size_t)-1;
	return (size_t)(nl - buf) + 1;
}

static int line_is(const char *buf, size_t n, const char *word)
{
	size_t w = strlen(word);
	return n == w + 2 && memcmp(buf, word, w) == 0 && buf[w] == '\r';
}

static int starts_with(const char *buf, size_t n, const char *word)
{
	size_t w = strlen(word);
	return n >= w && memcmp(buf, word, w) == 0;
}

/* The <bytes> field of a VALUE line of n bytes, or -1. */
static long value_bytes(const char *buf, size_t n)
{
	char line[BENCH_REPLY_MAX_LINE + 1];
	memcpy(line, buf, n);
	line[n] = '\0';
	char *save = NULL;
	char *tok = strtok_r(line, " \r\n", &save);
	for (int i = 0; tok != NULL && i < 3; i++)
		tok = strtok_r(NULL, " \r\n", &save);
	if (tok == NULL || tok[0] < '0' || tok[0] > '9')
		return -1;
	char *e;
	long v = strtol(tok, &e, 10);
	if (*e != '\0' || v < 0 || v > (1L << 30))
		return -1;
	return v;
}

static enum bench_reply parse_value(const char *buf, size_t len, size_t n,
				    size_t *used)
{
	long bytes = value_bytes(buf, n);
	if (bytes < 0)
		return BENCH_REPLY_INVALID;
	size_t end = n + (size_t)bytes + 2;
	if (len < end)
		return BENCH_REPLY_NEED_MORE;
	if (buf[end - 2] != '\r' || buf[end - 1] != '\n')
		return BENCH_REPLY_INVALID;
	size_t n2 = line_len(buf + end, len - end);
	if (n2 == 0)
		return BENCH_REPLY_NEED_MORE;
	if (n2 == (size_t)-1 || !line_is(buf + end, n2, "END"))
		return BENCH_REPLY_INVALID; /* several values: not asked for */
	*used = end + n2;
	return BENCH_REPLY_HIT;
}

enum bench_reply bench_reply_parse(const char *buf, size_t len, int is_get,
				   size_t *used)
{
	size_t n = line_len(buf, len);
	if (n == 0)
		return BENCH_REPLY_NEED_MORE;
	if (n == (size_t)-1)
		return BENCH_REPLY_INVALID;
	if (is_get && n > 6 && memcmp(buf, "VALUE ", 6) == 0)
		return parse_value(buf, len, n, used);
	*used = n;
	if (is_get && line_is(buf, n, "END"))
		return BENCH_REPLY_MISS;
	if (!is_get && line_is(buf, n, "STORED"))
		return BENCH_REPLY_STORED;
	if (starts_with(buf, n, "ERROR") ||
	    starts_with(buf, n, "CLIENT_ERROR") ||
	    starts_with(buf, n, "SERVER_ERROR") ||
	    line_is(buf, n, "NOT_STORED") || line_is(buf, n, "EXISTS") ||
	    line_is(buf, n, "NOT_FOUND"))
		return BENCH_REPLY_ERROR;
	return BENCH_REPLY_INVALID;
}

/* Bytes of a msgpack unsigned integer starting with type byte b, or 0. */
static size_t uint_size(unsigned char b)
{
	if (b <= 0x7f)
		return 1;
	switch (b) {
	case 0xcc:
		return 2;
	case 0xcd:
		return 3;
	case 0xce:
		return 5;
	case 0xcf:
		return 9;
	default:
		return 0;
	}
}

enum bench_reply bench_reply_parse_binary(const char *buf, size_t len,
					  int is_get, size_t *used)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t body, id;

	if (len < 4)
		return BENCH_REPLY_NEED_MORE;
	body = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 |
	       p[3];
	if (body > (64u << 20))
		return BENCH_REPLY_INVALID;
	if (len - 4 < body)
		return BENCH_REPLY_NEED_MORE;
	*used = 4 + body;
	/* [id, status, payload]: a 3-array, a uint id, a fixint status. */
	if (body < 4 || p[4] != 0x93 || !(id = uint_size(p[5])) ||
	    body < 2 + id + 1 || p[5 + id] > 0x7f)
		return BENCH_REPLY_INVALID;
	switch (p[5 + id]) {
	case 0: /* OK */
		return is_get ? BENCH_REPLY_HIT : BENCH_REPLY_STORED;
	case 1: /* NOT_FOUND */
		return is_get ? BENCH_REPLY_MISS : BENCH_REPLY_ERROR;
	default:
		return BENCH_REPLY_ERROR;
	}
}
