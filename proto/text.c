/*
 * The memcached text protocol: proto_text_parse(), a pure, restartable parser
 * of one request (line and data block) over a byte buffer, and the writer of
 * VALUE lines. What each command accepts and answers was settled by probing
 * memcached 1.6.18; tests/proto/test_text.c holds those cases.
 */
#include "proto/text.h"
#include "proto/meta.h"
#include "proto/text_line.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MSG_FORMAT  "bad command line format"
#define MSG_DELETE  "bad command line format.  Usage: delete <key> [noreply]"
#define MSG_DELTA   "invalid numeric delta argument"
#define MSG_EXPTIME "invalid exptime argument"
#define MSG_CHUNK   "bad data chunk"
#define MSG_MEMLIMIT_SMALL \
	"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m"
#define MSG_MEMLIMIT_MIB \
	"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes"

/* scan's own numbers: decimal digits only; *capped when past UINT64_MAX. */
static bool parse_digits(const char *buf, struct proto_span t, uint64_t *out,
			 bool *overflow)
{
	uint64_t v = 0;

	*overflow = false;
	for (uint32_t i = 0; i < t.len; i++) {
		char c = buf[t.off + i];
		if (!is_digit(c))
			return false;
		if (v > (UINT64_MAX - (unsigned)(c - '0')) / 10)
			*overflow = true;
		else
			v = v * 10 + (unsigned)(c - '0');
	}
	*out = v;
	return t.len > 0;
}

static enum proto_status client_error(struct proto_req *req, const char *msg)
{
	req->error = msg;
	return PROTO_CLIENT_ERROR;
}

/* The last token is the literal "noreply" (memcached's only test). */
static bool last_is_noreply(const struct line *l)
{
	return span_is(l->buf, l->last, "noreply");
}

/* get/gets <key>+ and gat/gats <exptime> <key>*: first key at token first. */
static enum proto_status parse_retrieval(const struct line *l,
					 struct proto_req *req, uint32_t first)
{
	struct proto_span tok;
	uint32_t pos, i = 0;

	if (first == 2 && !parse_i32_wrap(l->buf, l->tok[1], &req->exptime))
		return client_error(req, MSG_EXPTIME);
	pos = l->tok[first - 1].off + l->tok[first - 1].len;
	req->key.off = pos;
	req->key.len = 0;
	req->keys_end = pos;
	while (token_next(l->buf, &pos, l->end, &tok)) {
		if (!key_valid(l->buf, tok))
			return client_error(req, MSG_FORMAT);
		if (i++ == 0)
			req->key = tok;
		req->keys_end = tok.off + tok.len;
	}
	return PROTO_OK;
}

/* <cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply] + data block. */
static enum proto_status parse_storage(const struct line *l, size_t n,
				       const struct proto_limits *lim,
				       struct proto_req *req)
{
	bool cas = req->cmd == PROTO_CMD_CAS;
	uint32_t max = lim != NULL ? lim->max_value : PROTO_VALUE_MAX_DEFAULT;
	int64_t bytes;
	size_t need;

	if (l->ntok != (cas ? 6u : 5u) && l->ntok != (cas ? 7u : 6u))
		return PROTO_ERROR;
	req->noreply = last_is_noreply(l);
	req->key = l->tok[1];
	if (!key_valid(l->buf, req->key))
		return client_error(req, MSG_FORMAT);
	/* memcached's safe_strtoul and safe_strtol: numbers cut to 32 bits,
	 * so that flags 4294967296 are 0 and 4294967297 bytes are 1. */
	if (!parse_u32(l->buf, l->tok[2], &req->flags) ||
	    !parse_i32_wrap(l->buf, l->tok[3], &req->exptime) ||
	    !parse_i32_wrap(l->buf, l->tok[4], &bytes) ||
	    (cas && !parse_u64(l->buf, l->tok[5], &req->cas)) || bytes < 0 ||
	    bytes > (int64_t)PROTO_BYTES_MAX)
		return client_error(req, MSG_FORMAT);
	req->nbytes = (uint32_t)bytes;
	req->value_off = l->total;
	if (req->nbytes > max) {
		req->swallow = (uint64_t)req->nbytes + 2;
		return PROTO_TOO_LARGE;
	}
	need = (size_t)l->total + req->nbytes + 2;
	req->len = need;
	if (n < need) {
		req->data_pending = true;
		return PROTO_NEED_MORE;
	}
	if (l->buf[need - 2] != '\r' || l->buf[need - 1] != '\n')
		return client_error(req, MSG_CHUNK);
	return PROTO_OK;
}

/* delete <key> [0] [noreply]: the legacy time argument must be "0". */
static enum proto_status parse_delete(const struct line *l,
				      struct proto_req *req)
{
	if (l->ntok < 2 || l->ntok > 4)
		return PROTO_ERROR;
	if (l->ntok > 2) {
		bool zero = span_is(l->buf, l->tok[2], "0");
		req->noreply = last_is_noreply(l);
		if (!(l->ntok == 3 && (zero || req->noreply)) &&
		    !(l->ntok == 4 && zero && req->noreply))
			return client_error(req, MSG_DELETE);
	}
	req->key = l->tok[1];
	if (!key_valid(l->buf, req->key))
		return client_error(req, MSG_FORMAT);
	return PROTO_OK;
}

/* incr/decr <key> <delta> [noreply] and touch <key> <exptime> [noreply]. */
static enum proto_status parse_key_number(const struct line *l,
					  struct proto_req *req)
{
	if (l->ntok != 3 && l->ntok != 4)
		return PROTO_ERROR;
	req->noreply = last_is_noreply(l);
	req->key = l->tok[1];
	if (!key_valid(l->buf, req->key))
		return client_error(req, MSG_FORMAT);
	if (req->cmd == PROTO_CMD_TOUCH) {
		if (!parse_i32_wrap(l->buf, l->tok[2], &req->exptime))
			return client_error(req, MSG_EXPTIME);
	} else if (!parse_u64(l->buf, l->tok[2], &req->delta)) {
		return client_error(req, MSG_DELTA);
	}
	return PROTO_OK;
}

/* flush_all [delay] [noreply]: a delay is read whenever one may be there. */
static enum proto_status parse_flush_all(const struct line *l,
					 struct proto_req *req)
{
	if (l->ntok > 3)
		return PROTO_ERROR;
	req->noreply = l->ntok > 1 && last_is_noreply(l);
	if (l->ntok != (req->noreply ? 2u : 1u) &&
	    !parse_i32_wrap(l->buf, l->tok[1], &req->delay))
		return client_error(req, MSG_EXPTIME);
	return PROTO_OK;
}

/* flush_prefix <prefix> [noreply]: the prefix follows the key rule. */
static enum proto_status parse_flush_prefix(const struct line *l,
					    struct proto_req *req)
{
	if (l->ntok != 2 && l->ntok != 3)
		return PROTO_ERROR;
	req->noreply = l->ntok == 3 && last_is_noreply(l);
	if (l->ntok == 3 && !req->noreply)
		return client_error(req, MSG_FORMAT);
	req->key = l->tok[1];
	if (!key_valid(l->buf, req->key))
		return client_error(req, MSG_FORMAT);
	return PROTO_OK;
}

static enum proto_status parse_verbosity(const struct line *l,
					 struct proto_req *req)
{
	if (l->ntok != 2 && l->ntok != 3)
		return PROTO_ERROR;
	req->noreply = last_is_noreply(l);
	if (!parse_u32(l->buf, l->tok[1], &req->verbosity))
		return client_error(req, MSG_FORMAT);
	return PROTO_OK;
}

/*
 * cache_memlimit <MiB> [noreply], as memcached 1.6.18 reads it: a number
 * that is no unsigned number is ERROR; one that is, cut to 32 bits (as
 * memcached stores it), must be 8..1000000000. noreply silences all three
 * errors.
 */
static enum proto_status parse_memlimit(const struct line *l,
					struct proto_req *req)
{
	uint64_t v;

	if (l->ntok != 2 && l->ntok != 3)
		return PROTO_ERROR;
	req->noreply = last_is_noreply(l);
	if (!parse_u64(l->buf, l->tok[1], &v))
		return PROTO_ERROR;
	req->memlimit = (uint32_t)v;
	if (req->memlimit < 8) {
		req->error = MSG_MEMLIMIT_SMALL;
		return PROTO_REFUSED;
	}
	if (req->memlimit > 1000000000) {
		req->error = MSG_MEMLIMIT_MIB;
		return PROTO_REFUSED;
	}
	return PROTO_OK;
}

/* shutdown [mode]: the executor judges the mode (after whether shutdown is
 * enabled at all), so the rest of the line goes to it whole. */
static enum proto_status parse_shutdown(const struct line *l,
					struct proto_req *req)
{
	uint32_t cmd_end = l->tok[0].off + l->tok[0].len;

	req->arg.off = l->ntok > 1 ? l->tok[1].off : cmd_end;
	req->arg.len =
		l->ntok > 1 ? l->last.off + l->last.len - l->tok[1].off : 0;
	return PROTO_OK;
}

/* auth [<user>] <password>: a token each (the text protocol has no
 * quoting); the user name goes in key. */
static enum proto_status parse_auth(const struct line *l, struct proto_req *req)
{
	if (l->ntok != 2 && l->ntok != 3)
		return PROTO_ERROR;
	if (l->ntok == 3)
		req->key = l->tok[1];
	req->arg = l->tok[l->ntok - 1];
	return PROTO_OK;
}

static enum proto_status parse_stats(const struct line *l,
				     struct proto_req *req)
{
	uint32_t cmd_end = l->tok[0].off + l->tok[0].len;

	req->arg.off = l->ntok > 1 ? l->tok[1].off : cmd_end;
	req->arg.len = l->ntok > 1 ? l->tok[1].len : 0;
	req->args.off =
		l->ntok > 2 ? l->tok[2].off : req->arg.off + req->arg.len;
	req->args.len =
		l->ntok > 2 ? l->last.off + l->last.len - l->tok[2].off : 0;
	return PROTO_OK;
}

/*
 * lru_crawler metadump <all|hash|classes>, lru_crawler crawl <all|
 * classes>, lru_crawler enable and lru_crawler disable: the sub-command in
 * arg, its one argument in args. Any other sub-command, or a wrong number
 * of tokens, is ERROR (memcached's answer; its sleep and tocrawl tune a
 * crawler rhkvd has not).
 */
static enum proto_status parse_lru_crawler(const struct line *l,
					   struct proto_req *req)
{
	bool toggle = l->ntok == 2 && (span_is(l->buf, l->tok[1], "enable") ||
				       span_is(l->buf, l->tok[1], "disable"));

	if (toggle) {
		req->arg = l->tok[1];
		return PROTO_OK;
	}
	if (l->ntok != 3 || (!span_is(l->buf, l->tok[1], "metadump") &&
			     !span_is(l->buf, l->tok[1], "crawl")))
		return PROTO_ERROR;
	req->arg = l->tok[1];
	req->args = l->tok[2];
	return PROTO_OK;
}

/* A number as memcached's safe_strtod reads one: strtod's syntax, then
 * the token's end or a blank; false past a double's range. */
static bool parse_double(const char *buf, struct proto_span t)
{
	char s[PROTO_LINE_MAX + 1];
	char *end;

	if (t.len > PROTO_LINE_MAX)
		return false;
	memcpy(s, buf + t.off, t.len);
	s[t.len] = '\0';
	errno = 0;
	strtod(s, &end);
	return errno != ERANGE && end != s && (*end == '\0' || is_blank(*end));
}

/*
 * slabs automove <level> [noreply], slabs automove ratio <r> [noreply] and
 * slabs reassign <src> <dst>, as memcached 1.6.18 reads them (rhkvd has no
 * slab classes: the executor answers them as no-ops). automove's level is
 * an unsigned number cut to 32 bits (else CLIENT_ERROR), 0, 1 or 2 (else
 * ERROR); its noreply silences every answer. reassign takes exactly two
 * signed numbers, cut to 32 bits (else CLIENT_ERROR), and no noreply; any
 * other form is ERROR.
 */
static enum proto_status parse_slabs(const struct line *l,
				     struct proto_req *req)
{
	uint64_t level;
	int64_t src, dst;

	if (l->ntok == 4 && span_is(l->buf, l->tok[1], "reassign")) {
		req->arg = l->tok[1];
		if (!parse_i32_wrap(l->buf, l->tok[2], &src) ||
		    !parse_i32_wrap(l->buf, l->tok[3], &dst))
			return client_error(req, MSG_FORMAT);
		req->slab_src = (int32_t)src;
		req->slab_dst = (int32_t)dst;
		return PROTO_OK;
	}
	if (l->ntok < 3 || !span_is(l->buf, l->tok[1], "automove"))
		return PROTO_ERROR;
	req->arg = l->tok[1];
	req->noreply = last_is_noreply(l);
	if (span_is(l->buf, l->tok[2], "ratio"))
		return l->ntok >= 4 && parse_double(l->buf, l->tok[3])
			       ? PROTO_OK
			       : PROTO_ERROR;
	if (!parse_u64(l->buf, l->tok[2], &level))
		return client_error(req, MSG_FORMAT);
	return (uint32_t)level <= 2 ? PROTO_OK : PROTO_ERROR;
}

/* watch [fetchers|mutations|evictions]...: none means fetchers; any other
 * word is ERROR. */
static enum proto_status parse_watch(const struct line *l,
				     struct proto_req *req)
{
	static const struct {
		const char *word;
		uint32_t bit;
	} kinds[] = { { "fetchers", PROTO_WATCH_FETCHERS },
		      { "mutations", PROTO_WATCH_MUTATIONS },
		      { "evictions", PROTO_WATCH_EVICTIONS } };
	struct proto_span tok;
	uint32_t pos = l->tok[0].off + l->tok[0].len;

	while (token_next(l->buf, &pos, l->end, &tok)) {
		size_t i = 0;

		while (i < sizeof(kinds) / sizeof(kinds[0]) &&
		       !span_is(l->buf, tok, kinds[i].word))
			i++;
		if (i == sizeof(kinds) / sizeof(kinds[0]))
			return PROTO_ERROR;
		req->flags |= kinds[i].bit;
	}
	if (!req->flags)
		req->flags = PROTO_WATCH_FETCHERS;
	return PROTO_OK;
}

/* scan <cursor> [count <n>] [match <glob>]: options in any order, the last
 * of a repeated one wins. */
static enum proto_status parse_scan(const struct line *l, struct proto_req *req)
{
	struct proto_span opt, val;
	uint32_t pos;
	uint64_t v;
	bool overflow;

	if (l->ntok < 2)
		return PROTO_ERROR;
	if (!parse_digits(l->buf, l->tok[1], &req->cursor, &overflow) ||
	    overflow)
		return client_error(req, MSG_FORMAT);
	req->count = PROTO_SCAN_COUNT_DEFAULT;
	pos = l->tok[1].off + l->tok[1].len;
	while (token_next(l->buf, &pos, l->end, &opt)) {
		if (!token_next(l->buf, &pos, l->end, &val))
			return client_error(req, MSG_FORMAT);
		if (span_is(l->buf, opt, "count")) {
			if (!parse_digits(l->buf, val, &v, &overflow) || v == 0)
				return client_error(req, MSG_FORMAT);
			if (overflow || v > PROTO_SCAN_COUNT_MAX)
				v = PROTO_SCAN_COUNT_MAX;
			req->count = (uint32_t)v;
		} else if (span_is(l->buf, opt, "match")) {
			req->has_match = true;
			req->match = val;
		} else {
			return client_error(req, MSG_FORMAT);
		}
	}
	return PROTO_OK;
}

static const struct {
	const char *name;
	enum proto_cmd cmd;
} commands[] = {
	{ "get", PROTO_CMD_GET },
	/* memcached's undocumented alias of get, kept for old clients */
	{ "bget", PROTO_CMD_GET },
	{ "gets", PROTO_CMD_GETS },
	{ "gat", PROTO_CMD_GAT },
	{ "gats", PROTO_CMD_GATS },
	{ "set", PROTO_CMD_SET },
	{ "add", PROTO_CMD_ADD },
	{ "replace", PROTO_CMD_REPLACE },
	{ "append", PROTO_CMD_APPEND },
	{ "prepend", PROTO_CMD_PREPEND },
	{ "cas", PROTO_CMD_CAS },
	{ "delete", PROTO_CMD_DELETE },
	{ "incr", PROTO_CMD_INCR },
	{ "decr", PROTO_CMD_DECR },
	{ "touch", PROTO_CMD_TOUCH },
	{ "flush_all", PROTO_CMD_FLUSH_ALL },
	{ "version", PROTO_CMD_VERSION },
	{ "verbosity", PROTO_CMD_VERBOSITY },
	{ "quit", PROTO_CMD_QUIT },
	{ "stats", PROTO_CMD_STATS },
	{ "scan", PROTO_CMD_SCAN },
	{ "cache_memlimit", PROTO_CMD_CACHE_MEMLIMIT },
	{ "auth", PROTO_CMD_AUTH },
	{ "lru_crawler", PROTO_CMD_LRU_CRAWLER },
	{ "watch", PROTO_CMD_WATCH },
	{ "shutdown", PROTO_CMD_SHUTDOWN },
	{ "refresh_certs", PROTO_CMD_REFRESH_CERTS },
	{ "flush_prefix", PROTO_CMD_FLUSH_PREFIX },
	{ "slabs", PROTO_CMD_SLABS },
};

/*
 * An unknown command: memcached answers ERROR, but closes the connection
 * when the last token starts with "HTTP/", unless the command's first byte
 * sends it down one of its per-letter branches first (which answer ERROR).
 */
static enum proto_status unknown_command(const struct line *l)
{
	struct proto_span c = l->tok[0];
	char first = l->buf[c.off];

	if (c.len < 2 || memchr("acdgist", first, 7) != NULL)
		return PROTO_ERROR;
	if (l->last.len >= 5 && memcmp(l->buf + l->last.off, "HTTP/", 5) == 0)
		return PROTO_CLOSE;
	return PROTO_ERROR;
}

static enum proto_status dispatch(const struct line *l, size_t n,
				  const struct proto_limits *lim,
				  struct proto_req *req)
{
	size_t i;

	if (l->tok[0].len == 2 && l->buf[l->tok[0].off] == 'm')
		return PROTO_META;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (span_is(l->buf, l->tok[0], commands[i].name))
			break;
	}
	if (i == sizeof(commands) / sizeof(commands[0]))
		return unknown_command(l);
	req->cmd = commands[i].cmd;
	switch (req->cmd) {
	case PROTO_CMD_GET:
	case PROTO_CMD_GETS:
		return l->ntok < 2 ? PROTO_ERROR : parse_retrieval(l, req, 1);
	case PROTO_CMD_GAT:
	case PROTO_CMD_GATS:
		return l->ntok < 2 ? PROTO_ERROR : parse_retrieval(l, req, 2);
	case PROTO_CMD_SET:
	case PROTO_CMD_ADD:
	case PROTO_CMD_REPLACE:
	case PROTO_CMD_APPEND:
	case PROTO_CMD_PREPEND:
	case PROTO_CMD_CAS:
		return parse_storage(l, n, lim, req);
	case PROTO_CMD_DELETE:
		return parse_delete(l, req);
	case PROTO_CMD_INCR:
	case PROTO_CMD_DECR:
	case PROTO_CMD_TOUCH:
		return parse_key_number(l, req);
	case PROTO_CMD_FLUSH_ALL:
		return parse_flush_all(l, req);
	case PROTO_CMD_FLUSH_PREFIX:
		return parse_flush_prefix(l, req);
	case PROTO_CMD_VERBOSITY:
		return parse_verbosity(l, req);
	case PROTO_CMD_STATS:
		return parse_stats(l, req);
	case PROTO_CMD_SCAN:
		return parse_scan(l, req);
	case PROTO_CMD_CACHE_MEMLIMIT:
		return parse_memlimit(l, req);
	case PROTO_CMD_AUTH:
		return parse_auth(l, req);
	case PROTO_CMD_LRU_CRAWLER:
		return parse_lru_crawler(l, req);
	case PROTO_CMD_WATCH:
		return parse_watch(l, req);
	case PROTO_CMD_SHUTDOWN:
		return parse_shutdown(l, req);
	case PROTO_CMD_SLABS:
		return parse_slabs(l, req);
	case PROTO_CMD_REFRESH_CERTS:
		/* memcached's: anything after it is ignored, but noreply. */
		req->noreply = l->ntok > 1 && last_is_noreply(l);
		break;
	case PROTO_CMD_VERSION:
	case PROTO_CMD_QUIT:
		break;
	}
	return PROTO_OK;
}

enum proto_status proto_text_parse(const char *buf, size_t n,
				   const struct proto_limits *lim,
				   struct proto_req *req)
{
	struct line l;
	enum proto_status st;

	memset(req, 0, sizeof(*req));
	st = line_find(buf, n, lim, &l, &req->no_newline);
	if (st != PROTO_OK)
		return st;
	req->len = l.total;
	line_split(&l);
	if (l.ntok == 0)
		return PROTO_ERROR;
	return dispatch(&l, n, lim, req);
}

bool proto_text_next_key(const char *buf, const struct proto_req *req,
			 uint32_t *pos, struct proto_span *key)
{
	return token_next(buf, pos, req->keys_end, key);
}

bool proto_text_next_key_before(const char *buf, uint32_t keys_end,
				uint32_t *pos, struct proto_span *key)
{
	return token_next(buf, pos, keys_end, key);
}

/* Decimal digits of v at dst; returns how many. */
static size_t put_u64(char *dst, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		dst[i] = tmp[n - 1 - i];
	return n;
}

size_t proto_text_value_header(char *dst, const char *key, size_t key_len,
			       uint32_t flags, uint32_t nbytes, bool with_cas,
			       uint64_t cas)
{
	size_t n = 6;

	if (key_len > PROTO_KEY_MAX)
		return 0;
	memcpy(dst, "VALUE ", 6);
	memcpy(dst + n, key, key_len);
	n += key_len;
	dst[n++] = ' ';
	n += put_u64(dst + n, flags);
	dst[n++] = ' ';
	n += put_u64(dst + n, nbytes);
	if (with_cas) {
		dst[n++] = ' ';
		n += put_u64(dst + n, cas);
	}
	dst[n++] = '\r';
	dst[n++] = '\n';
	return n;
}

size_t proto_text_key(char *dst, const char *key, size_t n, bool binary,
		      bool *b64)
{
	if (n > PROTO_KEY_MAX)
		n = PROTO_KEY_MAX;
	*b64 = binary || !proto_key_ok(key, n);
	if (*b64)
		return proto_base64_encode(key, n, dst);
	memcpy(dst, key, n);
	return n;
}

size_t proto_text_uri_encode(char *dst, const char *src, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    is_digit((char)c) || c == '-' || c == '.' || c == '_' ||
		    c == '~') {
			dst[k++] = (char)c;
		} else {
			dst[k++] = '%';
			dst[k++] = hex[c >> 4];
			dst[k++] = hex[c & 15];
		}
	}
	return k;
}

/* A signed decimal at dst; returns how many bytes. */
static size_t put_i64(char *dst, int64_t v)
{
	if (v >= 0)
		return put_u64(dst, (uint64_t)v);
	dst[0] = '-';
	return 1 + put_u64(dst + 1, (uint64_t)0 - (uint64_t)v);
}

static size_t put_str(char *dst, const char *s)
{
	size_t n = strlen(s);

	memcpy(dst, s, n);
	return n;
}

size_t proto_text_metadump_line(char *dst, const struct proto_metadump_item *it)
{
	size_t n = put_str(dst, "key=");

	n += proto_text_uri_encode(dst + n, it->key,
				   it->nkey < PROTO_KEY_MAX ? it->nkey
							    : PROTO_KEY_MAX);
	n += put_str(dst + n, " exp=");
	n += put_i64(dst + n, it->exp);
	n += put_str(dst + n, " la=");
	n += put_i64(dst + n, it->la);
	n += put_str(dst + n, " cas=");
	n += put_u64(dst + n, it->cas);
	n += put_str(dst + n, it->fetched ? " fetch=yes" : " fetch=no");
	n += put_str(dst + n, " cls=");
	n += put_u64(dst + n, it->cls);
	n += put_str(dst + n, " size=");
	n += put_u64(dst + n, it->size);
	dst[n++] = '\n';
	return n;
}
