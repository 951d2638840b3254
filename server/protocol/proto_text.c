/*
 * memcached's text protocol as a front end (protocol.h): proto/text.c's
 * parser fills a struct request, and the reply operations write memcached's
 * replies, byte for byte, straight into the connection's output.
 */
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "common/log.h"
#include "session.h"
#include "protocol.h"
#include "proto/meta.h"
#include "proto/text.h"
#include "proto/text_auth.h"
#include "config.h"
#include "stats.h"

/* The letters of the flags meta requests name, in proto/meta.h and
 * request.h alike. */
_Static_assert(PROTO_META_RET_CAS == META_RET_CAS &&
		       PROTO_META_RET_FLAGS == META_RET_FLAGS &&
		       PROTO_META_RET_HIT == META_RET_HIT &&
		       PROTO_META_RET_KEY == META_RET_KEY &&
		       PROTO_META_RET_LAST == META_RET_LAST &&
		       PROTO_META_RET_SIZE == META_RET_SIZE &&
		       PROTO_META_RET_TTL == META_RET_TTL &&
		       PROTO_META_RET_VALUE == META_RET_VALUE,
	       "meta return bits");

/*
 * A decoded meta request's own data, one per decode slot (the batch loop
 * decodes one request ahead): its options, its key when sent in base64,
 * and its flag tokens in the order sent, which the reply follows. meta is
 * first: r->meta points at it and the reply finds the rest from there.
 */
struct meta_slot {
	struct req_meta meta;
	char key[PROTO_META_BINKEY_MAX];
	bool opaque_too_long; /* answer that instead (proto/meta.h) */
	uint32_t nflags;
	struct proto_span flag[PROTO_META_FLAGS_MAX];
};

/* The text protocol's per-connection state: made on the first meta
 * request, so that classic-only connections carry none. */
struct text_state {
	struct meta_slot slot[2];
};

static const enum req_cmd cmd_of[] = {
	[PROTO_CMD_GET] = REQ_GET,
	[PROTO_CMD_GETS] = REQ_GETS,
	[PROTO_CMD_GAT] = REQ_GAT,
	[PROTO_CMD_GATS] = REQ_GATS,
	[PROTO_CMD_SET] = REQ_SET,
	[PROTO_CMD_ADD] = REQ_ADD,
	[PROTO_CMD_REPLACE] = REQ_REPLACE,
	[PROTO_CMD_APPEND] = REQ_APPEND,
	[PROTO_CMD_PREPEND] = REQ_PREPEND,
	[PROTO_CMD_CAS] = REQ_CAS,
	[PROTO_CMD_DELETE] = REQ_DELETE,
	[PROTO_CMD_INCR] = REQ_INCR,
	[PROTO_CMD_DECR] = REQ_DECR,
	[PROTO_CMD_TOUCH] = REQ_TOUCH,
	[PROTO_CMD_FLUSH_ALL] = REQ_FLUSH_ALL,
	[PROTO_CMD_VERSION] = REQ_VERSION,
	[PROTO_CMD_VERBOSITY] = REQ_VERBOSITY,
	[PROTO_CMD_QUIT] = REQ_QUIT,
	[PROTO_CMD_STATS] = REQ_STATS,
	[PROTO_CMD_SCAN] = REQ_SCAN,
	[PROTO_CMD_CACHE_MEMLIMIT] = REQ_CACHE_MEMLIMIT,
	[PROTO_CMD_AUTH] = REQ_AUTH,
	[PROTO_CMD_LRU_CRAWLER] = REQ_LRU_CRAWLER,
	[PROTO_CMD_WATCH] = REQ_WATCH,
	[PROTO_CMD_SHUTDOWN] = REQ_SHUTDOWN,
	[PROTO_CMD_REFRESH_CERTS] = REQ_REFRESH_CERTS,
	[PROTO_CMD_FLUSH_PREFIX] = REQ_FLUSH_PREFIX,
	[PROTO_CMD_SLABS] = REQ_SLABS,
};

static struct cache_key span(const char *buf, struct proto_span s)
{
	return (struct cache_key){ buf + s.off, s.len };
}

static bool next_key(const struct request *r, uint32_t *pos,
		     struct cache_key *key)
{
	struct proto_span s;

	if (!proto_text_next_key_before(r->p.text.buf, r->p.text.keys_end, pos,
					&s))
		return false;
	*key = span(r->p.text.buf, s);
	return true;
}

static bool is_retrieval(enum proto_cmd cmd)
{
	return cmd == PROTO_CMD_GET || cmd == PROTO_CMD_GETS ||
	       cmd == PROTO_CMD_GAT || cmd == PROTO_CMD_GATS;
}

/* The request from what the parser found (offsets into buf). */
static void fill(struct request *r, const char *buf, const struct proto_req *q)
{
	r->cmd = cmd_of[q->cmd];
	r->len = q->len;
	r->noreply = q->noreply;
	r->key = span(buf, q->key);
	r->keys = (struct req_keys){ next_key, q->key.off, 0 };
	r->bad_key_follows = false;
	r->p.text.buf = buf;
	r->p.text.keys_end = q->keys_end;
	r->value = buf + q->value_off;
	r->nbytes = q->nbytes;
	r->flags = q->flags;
	r->exptime = q->exptime;
	r->cas = q->cas;
	r->delta = q->delta;
	r->create = false;
	r->delay = q->delay;
	r->verbosity = q->verbosity;
	r->memlimit = q->memlimit;
	r->cursor = q->cursor;
	r->count = q->count;
	r->slab_src = q->slab_src;
	r->slab_dst = q->slab_dst;
	r->match = q->has_match ? span(buf, q->match)
				: (struct cache_key){ NULL, 0 };
	r->arg = span(buf, q->arg);
	r->args = span(buf, q->args);
	r->user = (struct cache_key){ NULL, 0 };
	r->landed = NULL;
	if (q->cmd == PROTO_CMD_AUTH) {
		if (q->key.len)
			r->user = r->key;
		r->key.n = 0;
	}
}

/* A storage request whose data block has not all arrived: worth receiving
 * straight into its item (DECODE_NEED_VALUE) when the value is large. */
static bool value_lands(const struct session *c, bool data_pending,
			uint32_t nbytes)
{
	return data_pending && c->authed && nbytes > ITEM_SEG_VALUE_MAX;
}

/* DECODE_NEED_VALUE's ending and the refusal when it is wrong (the
 * classic commands' words; a meta set's come with its whole line). */
static enum decode_status need_value(struct request *r, enum reply_status st,
				     const char *message)
{
	r->value_end = "\r\n";
	r->status = st;
	r->message = message;
	return DECODE_NEED_VALUE;
}

size_t text_get_line_max(const struct config *cfg)
{
	return cfg->max_item_size > PROTO_GET_LINE_MIN ? cfg->max_item_size
						       : PROTO_GET_LINE_MIN;
}

static const enum req_cmd meta_cmd_of[] = {
	['g'] = REQ_MGET,	   ['s'] = REQ_MSET,   ['d'] = REQ_MDELETE,
	['a'] = REQ_MARITH,	   ['e'] = REQ_MDEBUG, ['n'] = REQ_MNOOP,
	['f'] = REQ_MFLUSH_PREFIX,
};

/* The request from a parsed meta line; false when its slot cannot be
 * made (out of memory). */
static bool fill_meta(struct session *c, const char *buf, unsigned int slot,
		      const struct proto_meta *m, struct request *r)
{
	struct text_state *ts = c->pstate;
	struct meta_slot *ms;

	if (!ts) {
		ts = calloc(1, sizeof(*ts));
		if (!ts)
			return false;
		c->pstate = ts;
	}
	ms = &ts->slot[slot];
	ms->meta = (struct req_meta){
		.ret = m->ret,
		.quiet = m->quiet,
		.no_bump = m->no_bump,
		.invalidate = m->invalidate,
		.key_binary = m->base64,
		.has_cas = m->has_cas,
		.has_new_cas = m->has_new_cas,
		.has_ttl = m->has_ttl,
		.has_vivify = m->has_vivify,
		.has_recache = m->has_recache,
		.ttl_last = m->ttl_after_vivify,
		.ttl_before_recache = m->ttl_before_recache,
		.drop_value = m->drop_value,
		.no_win = m->opaque_too_long,
		.mode = m->mode,
		.new_cas = m->new_cas,
		.ttl = m->ttl,
		.vivify_ttl = m->vivify_ttl,
		.recache_ttl = m->recache_ttl,
	};
	ms->opaque_too_long = m->opaque_too_long;
	ms->nflags = m->nflags;
	memcpy(ms->flag, m->flag, m->nflags * sizeof(m->flag[0]));
	*r = (struct request){
		.cmd = meta_cmd_of[(unsigned char)m->cmd],
		.len = m->len,
		.key = span(buf, m->key),
		.value = buf + m->value_off,
		.nbytes = m->nbytes,
		.flags = m->client_flags,
		.exptime = m->has_ttl ? m->ttl : 0,
		.cas = m->cas,
		.delta = m->delta,
		.initial = m->initial,
		.meta = &ms->meta,
		.p.text.buf = buf,
	};
	if (m->base64 && m->key.len)
		r->key = (struct cache_key){
			ms->key, proto_base64_decode(buf + m->key.off,
						     m->key.len, ms->key)
		};
	return true;
}

/* A meta line (proto/meta.h): its errors are always answered, quiet mode
 * or not, and a refused ms has its data block swallowed. */
static enum decode_status decode_meta(struct session *c, const char *buf,
				      size_t n, unsigned int slot,
				      const struct proto_limits *lim,
				      struct request *r)
{
	struct proto_meta m;
	enum proto_status st = proto_meta_parse(buf, n, lim, &m);

	c->text_no_newline = st == PROTO_NEED_MORE ? m.no_newline : 0;
	c->text_value_pending = st == PROTO_NEED_MORE && m.data_pending;
	switch (st) {
	case PROTO_NEED_MORE:
		if (!value_lands(c, m.data_pending, m.nbytes))
			return DECODE_NEED_MORE;
		/* fall through */
	case PROTO_OK:
	case PROTO_TOO_LARGE:
		if (!fill_meta(c, buf, slot, &m, r)) {
			*r = (struct request){ .len = n,
					       .status = REPLY_SERVER_ERROR,
					       .message = "out of memory" };
			return DECODE_CLOSE;
		}
		r->swallow = m.swallow;
		if (st == PROTO_NEED_MORE)
			return need_value(r, REPLY_ERROR,
					  "CLIENT_ERROR bad data chunk");
		return st == PROTO_OK ? DECODE_OK : DECODE_TOO_LARGE;
	case PROTO_CLIENT_ERROR:
		/* REPLY_ERROR with a message prints the message alone. */
		*r = (struct request){ .len = m.len,
				       .status = REPLY_ERROR,
				       .message = m.error,
				       .swallow = m.swallow };
		return DECODE_REJECT;
	case PROTO_LINE_TOO_LONG:
		*r = (struct request){ .len = n,
				       .status = REPLY_LINE_TOO_LONG };
		return DECODE_CLOSE;
	default:
		*r = (struct request){ .len = m.len, .status = REPLY_ERROR };
		return DECODE_REJECT;
	}
}

/* Before auth with a user list (auth.h), memcached's handshake alone is
 * read (proto/text_auth.h). */
static bool handshake_only(const struct session *c)
{
	const struct auth *a = c->env->auth;

	return !c->authed && a && auth_form(a) == AUTH_FORM_USERS;
}

static enum decode_status decode_handshake(const char *buf, size_t n,
					   struct request *r)
{
	struct proto_text_auth h;

	switch (proto_text_auth_parse(buf, n, &h)) {
	case PROTO_TEXT_AUTH_NEED_MORE:
		return DECODE_NEED_MORE;
	case PROTO_TEXT_AUTH_REFUSED:
		*r = (struct request){ .len = h.len,
				       .status = REPLY_CLIENT_ERROR,
				       .message = h.error };
		return DECODE_REJECT;
	case PROTO_TEXT_AUTH_CREDENTIALS:
		*r = (struct request){ .cmd = REQ_AUTH_SET,
				       .len = h.len,
				       .user = span(buf, h.user),
				       .arg = span(buf, h.pass) };
		return DECODE_OK;
	case PROTO_TEXT_AUTH_CLOSE:
		break;
	}
	*r = (struct request){ .len = n, .status = REPLY_NONE };
	return DECODE_CLOSE;
}

static void text_close(struct session *c)
{
	free(c->pstate);
	c->pstate = NULL;
}

/*
 * c->text_no_newline carries the parser's hint (proto/text.h) from a call
 * that needed more bytes to the next one: the batch loop decodes the same
 * request again, from the same place, once more bytes have arrived (it
 * never moves past a request that needs more).
 */
static enum decode_status decode(struct session *c, const char *buf, size_t n,
				 unsigned int slot, struct request *r)
{
	/* Before auth a value is discarded as it arrives, never buffered. */
	const struct proto_limits lim = {
		.max_value = c->authed ? c->env->cfg->max_item_size
				       : CONN_PREAUTH_LIMIT,
		.max_get_line = (uint32_t)text_get_line_max(c->env->cfg),
		.no_newline = c->text_no_newline,
	};
	struct proto_req q;
	enum proto_status st;

	if (handshake_only(c))
		return decode_handshake(buf, n, r);
	/* Before auth a line is held to CONN_PREAUTH_LIMIT, a get line
	 * too: the input buffer never grows for a client that has not
	 * authenticated (conn.c's rbuf_limit). */
	if (!c->authed && n > CONN_PREAUTH_LIMIT &&
	    !memchr(buf, '\n', CONN_PREAUTH_LIMIT + 1)) {
		*r = (struct request){ .len = n,
				       .status = REPLY_LINE_TOO_LONG };
		return DECODE_CLOSE;
	}
	/* A meta command goes straight to its parser (a line with leading
	 * spaces gets there through proto_text_parse's PROTO_META). */
	if (n >= 3 && buf[0] == 'm' &&
	    (buf[2] == ' ' || buf[2] == '\r' || buf[2] == '\n'))
		return decode_meta(c, buf, n, slot, &lim, r);
	st = proto_text_parse(buf, n, &lim, &q);
	c->text_no_newline = st == PROTO_NEED_MORE ? q.no_newline : 0;
	c->text_value_pending = st == PROTO_NEED_MORE && q.data_pending;
	switch (st) {
	case PROTO_NEED_MORE:
		if (!value_lands(c, q.data_pending, q.nbytes))
			return DECODE_NEED_MORE;
		fill(r, buf, &q);
		return need_value(r, REPLY_CLIENT_ERROR, "bad data chunk");
	case PROTO_OK:
		fill(r, buf, &q);
		return DECODE_OK;
	case PROTO_ERROR:
		*r = (struct request){ .len = q.len,
				       .noreply = q.noreply,
				       .status = REPLY_ERROR };
		return DECODE_REJECT;
	case PROTO_REFUSED:
		/* REPLY_ERROR with a message prints the message alone. */
		*r = (struct request){ .len = q.len,
				       .noreply = q.noreply,
				       .status = REPLY_ERROR,
				       .message = q.error };
		return DECODE_REJECT;
	case PROTO_CLIENT_ERROR:
		if (is_retrieval(q.cmd) && q.key.len) {
			/* keys, then one too long: fetched, then refused */
			fill(r, buf, &q);
			r->bad_key_follows = true;
			return DECODE_OK;
		}
		/* memcached: noreply silences errors too; with -F, a
		 * flush_all is refused before its delay is read. */
		*r = (struct request){ .len = q.len,
				       .noreply = q.noreply,
				       .status = REPLY_CLIENT_ERROR,
				       .message = q.error };
		if (q.cmd == PROTO_CMD_FLUSH_ALL &&
		    c->env->cfg->disable_flush_all)
			r->message = CMD_FLUSH_ALL_REFUSED;
		return DECODE_REJECT;
	case PROTO_TOO_LARGE:
		fill(r, buf, &q);
		r->swallow = q.swallow;
		return DECODE_TOO_LARGE;
	case PROTO_LINE_TOO_LONG:
		*r = (struct request){ .len = n,
				       .status = REPLY_LINE_TOO_LONG };
		return DECODE_CLOSE;
	case PROTO_META:
		return decode_meta(c, buf, n, slot, &lim, r);
	case PROTO_CLOSE:
		break;
	}
	*r = (struct request){ .len = n, .status = REPLY_NONE };
	return DECODE_CLOSE;
}

static void add_str(struct session *c, const char *s)
{
	session_add(c, s, strlen(s));
}

/* Each status's words: a prefix, then the message (or the default). */
static const struct {
	const char *prefix, *text;
} words[] = {
	[REPLY_NONE] = { NULL, NULL },
	[REPLY_OK] = { "", "OK" },
	[REPLY_STORED] = { "", "STORED" },
	[REPLY_NOT_STORED] = { "", "NOT_STORED" },
	[REPLY_EXISTS] = { "", "EXISTS" },
	[REPLY_NOT_FOUND] = { "", "NOT_FOUND" },
	[REPLY_DELETED] = { "", "DELETED" },
	[REPLY_TOUCHED] = { "", "TOUCHED" },
	[REPLY_RESET] = { "", "RESET" },
	[REPLY_BYE] = { NULL, NULL }, /* quit: memcached says nothing */
	[REPLY_ERROR] = { "", "ERROR" },
	[REPLY_CLIENT_ERROR] = { "CLIENT_ERROR ", "bad command line format" },
	[REPLY_BAD_KEY] = { "CLIENT_ERROR ", "bad command line format" },
	[REPLY_TOO_LARGE] = { "SERVER_ERROR ", "object too large for cache" },
	[REPLY_NO_MEMORY] = { "SERVER_ERROR ", "out of memory" },
	[REPLY_NON_NUMERIC] = { "CLIENT_ERROR ",
				"cannot increment or decrement non-numeric "
				"value" },
	[REPLY_LINE_TOO_LONG] = { "CLIENT_ERROR ", "line too long" },
	[REPLY_SERVER_ERROR] = { "SERVER_ERROR ", "internal error" },
	[REPLY_AUTH_REQUIRED] = { "CLIENT_ERROR ", "authentication required" },
	[REPLY_AUTH_FAILED] = { "CLIENT_ERROR ", "auth failed" },
	[REPLY_NO_PASSWORD] = { "CLIENT_ERROR ", "no password is configured" },
	[REPLY_UNKNOWN_GROUP] = { "", "ERROR" },
};

static void status(struct session *c, const struct request *r,
		   enum reply_status st, const char *msg)
{
	(void)r;
	if (!words[st].prefix)
		return;
	add_str(c, words[st].prefix);
	add_str(c, msg ? msg : words[st].text);
	session_add(c, "\r\n", 2);
}

static void stored(struct session *c, const struct request *r, uint64_t cas)
{
	(void)r;
	(void)cas;
	session_add(c, "STORED\r\n", 8);
}

static void number(struct session *c, const struct request *r, uint64_t v,
		   uint64_t cas)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\r\n", v);

	(void)r;
	(void)cas;
	session_add(c, buf, (size_t)n);
}

static void version(struct session *c, const struct request *r, const char *s)
{
	(void)r;
	add_str(c, "VERSION ");
	add_str(c, s);
	session_add(c, "\r\n", 2);
}

static void nothing(struct session *c, const struct request *r)
{
	(void)c;
	(void)r;
}

/*
 * VALUE line, then the data and its "\r\n".
 *
 * One multi-get's reply is written whole, whatever the output limit
 * (--output-limit pauses reading between requests, not inside one) and
 * whatever other connections hold (the batch loop holds requests while
 * connection memory is full, conn.c). A reply that alone outgrows all
 * connection memory (--conn-memory; replies pending before it do not
 * count: c->reply_start) is cut:
 * the values so far, then memcached's "SERVER_ERROR out of memory writing
 * get response" instead of END, and the connection closes once that is
 * sent. (The batch loop runs no request after a close was decided, so
 * close_when_done is false when a get starts.)
 */
static void value(struct session *c, const struct request *r, struct item *it)
{
	char hdr[PROTO_VALUE_HEADER_MAX];
	bool with_cas = r->cmd == REQ_GETS || r->cmd == REQ_GATS;
	size_t n;

	if (c->close_when_done)
		return;
	if (evbuffer_get_length(c->out) - c->reply_start >
	    c->env->cfg->conn_memory) {
		log_info("closing connection %d: a get reply past "
			 "--conn-memory",
			 c->fd);
		add_str(c, "SERVER_ERROR out of memory writing get "
			   "response\r\n");
		c->close_when_done = true;
		return;
	}
	n = proto_text_value_header(hdr, item_key(it), it->nkey, item_flags(it),
				    item_nbytes(it), with_cas, item_cas(it));
	session_add(c, hdr, n);
	session_add_item_bytes(c, it, item_value(it), item_nbytes(it));
	session_add(c, "\r\n", 2);
}

static void values_end(struct session *c, const struct request *r)
{
	(void)r;
	if (!c->close_when_done)
		session_add(c, "END\r\n", 5);
}

/* scan's "KEY <key>\r\n", or "KEY <base64> b\r\n" for a key that only
 * the msgpack protocol can store (proto_text_key). */
static void key(struct session *c, const struct request *r, const char *k,
		size_t n)
{
	char spelled[PROTO_TEXT_KEY_MAX];
	bool b64;
	size_t len = proto_text_key(spelled, k, n, false, &b64);

	(void)r;
	session_add(c, "KEY ", 4);
	session_add(c, spelled, len);
	if (b64)
		session_add(c, " b", 2);
	session_add(c, "\r\n", 2);
}

static void keys_end(struct session *c, const struct request *r,
		     uint64_t cursor)
{
	char buf[40];
	int n = snprintf(buf, sizeof(buf), "CURSOR %" PRIu64 "\r\n", cursor);

	(void)r;
	session_add(c, buf, (size_t)n);
}

/* ---- stats: "STAT <name> <value>\r\n" lines ---- */

static const struct stats_sink *stats_begin(struct session *c,
					    const struct request *r)
{
	/* One stats reply at a time per worker thread. */
	static _Thread_local struct stats_sink sink;

	(void)r;
	sink = (struct stats_sink){ .emit = stats_text_entry, .arg = c->out };
	return &sink;
}

static void stats_end(struct session *c, const struct request *r, bool ok)
{
	(void)r;
	add_str(c, ok ? "END\r\n" : "ERROR\r\n");
}

static void dump_line(struct session *c, const struct request *r,
		      const char *line, size_t n)
{
	(void)r;
	session_add(c, line, n);
}

static void dump_end(struct session *c, const struct request *r)
{
	(void)r;
	session_add(c, "END\r\n", 5);
}

/* ---- meta replies: a two-letter code, then flags in request order ---- */

/* The longest meta reply line: a code and its size, then at most one of
 * each flag letter (a base64 key and its " b", an opaque of 32 bytes,
 * numbers of 20 digits), W, X and Z. */
#define META_LINE_MAX 1024

/* A reply line built on the stack and added to the output at once. */
struct meta_line {
	size_t n;
	char b[META_LINE_MAX];
};

static void line_put(struct meta_line *l, const void *p, size_t n)
{
	memcpy(l->b + l->n, p, n);
	l->n += n;
}

static void line_digits(struct meta_line *l, uint64_t v)
{
	char digits[20];
	size_t k = 0;

	do
		digits[k++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (k)
		l->b[l->n++] = digits[--k];
}

/* " <letter><v>", the letter left out when 0. */
static void line_u64(struct meta_line *l, char letter, uint64_t v)
{
	l->b[l->n++] = ' ';
	if (letter)
		l->b[l->n++] = letter;
	line_digits(l, v);
}

static void line_i64(struct meta_line *l, char letter, int64_t v)
{
	l->b[l->n++] = ' ';
	l->b[l->n++] = letter;
	if (v < 0)
		l->b[l->n++] = '-';
	line_digits(l, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* " k<key>", in base64 with " b" after it for a key stored or asked for
 * in base64, and for one that is no text key (stored through the msgpack
 * protocol, which takes any byte): proto_text_key. */
static void line_key(struct meta_line *l, struct cache_key k, bool binary)
{
	bool b64;

	line_put(l, " k", 2);
	l->n += proto_text_key(l->b + l->n, k.p, k.n, binary, &b64);
	if (b64)
		line_put(l, " b", 2);
}

static const char *const meta_words[] = {
	[META_HD] = "HD", [META_VA] = "VA", [META_EN] = "EN", [META_NS] = "NS",
	[META_EX] = "EX", [META_NF] = "NF", [META_ME] = "ME",
};

/* me's line: memcached's fields; rhkvd has one item class (cls=1), and
 * exp is memcached's too: now minus the expiry time (-1 for none). */
static void meta_debug(struct session *c, const struct request *r,
		       const struct meta_result *m)
{
	char spelled[PROTO_TEXT_KEY_MAX], line[160];
	bool b64;
	int n;

	if (m->code != META_ME) {
		session_add(c, "EN\r\n", 4);
		return;
	}
	session_add(c, "ME ", 3);
	session_add(c, spelled,
		    proto_text_key(spelled, r->key.p, r->key.n, m->key_binary,
				   &b64));
	n = snprintf(line, sizeof(line),
		     " exp=%" PRId64 " la=%" PRIu32 " cas=%" PRIu64
		     " fetch=%s cls=1 size=%" PRIu32 "\r\n",
		     m->ttl < 0 ? (int64_t)-1 : -m->ttl, m->last_access, m->cas,
		     m->hit_before ? "yes" : "no", m->size);
	session_add(c, line, (size_t)n);
}

/* Whether quiet mode hides this reply: mg's miss, the others' success
 * (ma's, unless it created the item, as memcached does). */
static bool meta_hidden(const struct request *r, const struct meta_result *m)
{
	if (!r->meta->quiet)
		return false;
	switch (r->cmd) {
	case REQ_MGET:
		return m->code == META_EN;
	case REQ_MARITH:
		return (m->code == META_HD || m->code == META_VA) &&
		       !m->created;
	default:
		return m->code == META_HD;
	}
}

static void meta(struct session *c, const struct request *r,
		 const struct meta_result *m)
{
	const struct meta_slot *ms = (const struct meta_slot *)r->meta;
	const char *buf = r->p.text.buf;
	/* Item flags (c t f s l h) only where there is an item to speak
	 * of: mg's hit, ma's success; ms and md have none. */
	bool item =
		m->have_item && (r->cmd == REQ_MGET || r->cmd == REQ_MARITH);
	/* t answers the TTL as it stands at its place among the flags */
	int64_t ttl = m->ttl_before;
	struct meta_line l;

	if (r->cmd == REQ_MNOOP) {
		session_add(c, "MN\r\n", 4);
		return;
	}
	if (r->cmd == REQ_MDEBUG) {
		meta_debug(c, r, m);
		return;
	}
	if (ms->opaque_too_long) {
		add_str(c, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (meta_hidden(r, m))
		return;
	l.n = 0;
	line_put(&l, meta_words[m->code], 2);
	if (m->code == META_VA)
		line_u64(&l, 0, m->value_len);
	for (uint32_t i = 0; i < ms->nflags; i++) {
		struct proto_span t = ms->flag[i];

		switch (buf[t.off]) {
		case 'O':
			line_put(&l, " ", 1);
			line_put(&l, buf + t.off, t.len);
			break;
		case 'k':
			line_key(&l, r->key,
				 r->cmd == REQ_MGET && item
					 ? m->key_binary
					 : r->meta->key_binary);
			break;
		case 'c':
			/* ms answers its cas whatever the code (0: none). */
			if (item || r->cmd == REQ_MSET)
				line_u64(&l, 'c', m->cas);
			break;
		case 'T':
			ttl = m->ttl_set;
			break;
		case 'N':
			ttl = m->created ? m->ttl_vivify : ttl;
			break;
		case 't':
			if (item)
				line_i64(&l, 't', ttl);
			break;
		case 'f':
			if (item && r->cmd == REQ_MGET)
				line_u64(&l, 'f', m->flags);
			break;
		case 's':
			/* ms s is the current text's: the stored size. */
			if ((item && r->cmd == REQ_MGET) || r->cmd == REQ_MSET)
				line_u64(&l, 's', m->size);
			break;
		case 'l':
			if (item && r->cmd == REQ_MGET)
				line_u64(&l, 'l', m->last_access);
			break;
		case 'h':
			if (item && r->cmd == REQ_MGET)
				line_u64(&l, 'h', m->hit_before);
			break;
		}
	}
	if (m->already_won)
		line_put(&l, " Z", 2);
	if (m->stale)
		line_put(&l, " X", 2);
	if (m->won)
		line_put(&l, " W", 2);
	line_put(&l, "\r\n", 2);
	if (m->code == META_VA && !m->it) {
		/* ma's number: small, in the same line buffer. */
		line_put(&l, m->value, m->value_len);
		line_put(&l, "\r\n", 2);
	}
	session_add(c, l.b, l.n);
	if (m->code == META_VA && m->it) {
		session_add_item_bytes(c, m->it, item_value(m->it),
				       m->value_len);
		session_add(c, "\r\n", 2);
	}
}

const struct protocol protocol_text = {
	.name = "text",
	.close = text_close,
	.decode = decode,
	.reply = {
		.status = status,
		.stored = stored,
		.number = number,
		.version = version,
		.values_begin = nothing,
		.value = value,
		.miss = nothing,
		.values_end = values_end,
		.key = key,
		.keys_end = keys_end,
		.stats_begin = stats_begin,
		.stats_end = stats_end,
		.dump_line = dump_line,
		.dump_end = dump_end,
		.meta = meta,
	},
};
