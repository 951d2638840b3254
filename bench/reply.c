/* reply: the memcached reply parsers of reply.h. A text get reply is END
 * or VALUE <key> <flags> <bytes> [<cas>], the data, then END; a meta get
 * reply (mg) is EN or VA <bytes> <flags>*, then the data, with no END. */
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

/* The data block of bytes and its "\r\n" after the value line of n bytes
 * at buf: HIT with *end past it, NEED_MORE, or INVALID when bytes is bad
 * (< 0) or the block does not end in "\r\n" (the stream is lost). */
static enum bench_reply data_block(const char *buf, size_t len, size_t n,
				   long bytes, size_t *end)
{
	if (bytes < 0)
		return BENCH_REPLY_INVALID;
	*end = n + (size_t)bytes + 2;
	if (len < *end)
		return BENCH_REPLY_NEED_MORE;
	if (buf[*end - 2] != '\r' || buf[*end - 1] != '\n')
		return BENCH_REPLY_INVALID;
	return BENCH_REPLY_HIT;
}

/* A text hit: the VALUE line, the data, then END. */
static enum bench_reply parse_value(const char *buf, size_t len, size_t n,
				    size_t *used)
{
	size_t end;
	enum bench_reply r = data_block(buf, len, n, value_bytes(buf, n), &end);
	if (r != BENCH_REPLY_HIT)
		return r;
	size_t n2 = line_len(buf + end, len - end);
	if (n2 == 0)
		return BENCH_REPLY_NEED_MORE;
	if (n2 == (size_t)-1 || !line_is(buf + end, n2, "END"))
		return BENCH_REPLY_INVALID; /* several values: not asked for */
	*used = end + n2;
	return BENCH_REPLY_HIT;
}

/* Whether the line of n bytes is the meta status code (two letters),
 * alone or followed by return flags after a space. */
static int meta_is(const char *buf, size_t n, const char *code)
{
	if (n < 4 || memcmp(buf, code, 2) != 0 || buf[n - 2] != '\r')
		return 0;
	return n == 4 || buf[2] == ' ';
}

/* The <bytes> of a "VA <bytes> <flags>*" line, or -1. The line ends in
 * '\n', so the digits stop within it. */
static long meta_value_bytes(const char *buf)
{
	long v = 0;
	size_t i = 3;
	for (; buf[i] >= '0' && buf[i] <= '9'; i++) {
		v = v * 10 + (buf[i] - '0');
		if (v > (1L << 30))
			return -1;
	}
	if (i == 3 || (buf[i] != ' ' && buf[i] != '\r'))
		return -1;
	return v;
}

/* A meta hit: the VA line, then the data, with no END after it. */
static enum bench_reply parse_va(const char *buf, size_t len, size_t n,
				 size_t *used)
{
	size_t end;
	enum bench_reply r =
		data_block(buf, len, n, meta_value_bytes(buf), &end);
	if (r == BENCH_REPLY_HIT)
		*used = end;
	return r;
}

/* The status lines of one dialect: text commands or meta commands. */
struct dialect {
	const char *value; /* how a hit's first line starts */
	enum bench_reply (*parse_value)(const char *buf, size_t len, size_t n,
					size_t *used);
	int (*is)(const char *buf, size_t n, const char *word);
	const char *miss, *stored;
	/* Whole replies that answer the command but not as asked: not
	 * stored, a cas mismatch, not found. */
	const char *fails[3];
};

static const struct dialect text = {
	.value = "VALUE ",
	.parse_value = parse_value,
	.is = line_is,
	.miss = "END",
	.stored = "STORED",
	.fails = { "NOT_STORED", "EXISTS", "NOT_FOUND" },
};

/* Meta status codes may carry return flags: "HD c12". */
static const struct dialect meta = {
	.value = "VA ",
	.parse_value = parse_va,
	.is = meta_is,
	.miss = "EN",
	.stored = "HD",
	.fails = { "NS", "EX", "NF" },
};

static enum bench_reply parse_dialect(const struct dialect *d, const char *buf,
				      size_t len, int is_get, size_t *used)
{
	size_t n = line_len(buf, len);
	if (n == 0)
		return BENCH_REPLY_NEED_MORE;
	if (n == (size_t)-1)
		return BENCH_REPLY_INVALID;
	if (is_get && starts_with(buf, n, d->value))
		return d->parse_value(buf, len, n, used);
	*used = n;
	if (is_get && d->is(buf, n, d->miss))
		return BENCH_REPLY_MISS;
	if (!is_get && d->is(buf, n, d->stored))
		return BENCH_REPLY_STORED;
	if (starts_with(buf, n, "ERROR") ||
	    starts_with(buf, n, "CLIENT_ERROR") ||
	    starts_with(buf, n, "SERVER_ERROR"))
		return BENCH_REPLY_ERROR;
	for (unsigned i = 0; i < 3; i++)
		if (d->is(buf, n, d->fails[i]))
			return BENCH_REPLY_ERROR;
	return BENCH_REPLY_INVALID;
}

enum bench_reply bench_reply_parse(const char *buf, size_t len, int is_get,
				   size_t *used)
{
	return parse_dialect(&text, buf, len, is_get, used);
}

enum bench_reply bench_reply_parse_meta(const char *buf, size_t len, int is_get,
					size_t *used)
{
	return parse_dialect(&meta, buf, len, is_get, used);
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
