/*
 * memcached's text protocol as a front end (protocol.h): proto/text.c's
 * parser fills a struct request, and the reply operations write memcached's
 * replies, byte for byte, straight into the connection's output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "conn.h"
#include "protocol.h"
#include "proto/text.h"
#include "server.h"

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

/* The request from what the parser found (offsets into buf). */
static void fill(struct request *r, const char *buf, const struct proto_req *q)
{
	r->cmd = cmd_of[q->cmd];
	r->len = q->len;
	r->noreply = q->noreply;
	r->key = span(buf, q->key);
	r->keys = (struct req_keys){ next_key, q->key.off, 0 };
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
	r->match = q->has_match ? span(buf, q->match)
				: (struct cache_key){ NULL, 0 };
	r->arg = span(buf, q->arg);
	r->args = span(buf, q->args);
}

size_t text_get_line_max(const struct config *cfg)
{
	return cfg->max_item_size > PROTO_GET_LINE_MIN ? cfg->max_item_size
						       : PROTO_GET_LINE_MIN;
}

/*
 * c->text_no_newline carries the parser's hint (proto/text.h) from a call
 * that needed more bytes to the next one: the batch loop decodes the same
 * request again, from the same place, once more bytes have arrived (it
 * never moves past a request that needs more).
 */
static enum decode_status decode(struct conn *c, const char *buf, size_t n,
				 unsigned int slot, struct request *r)
{
	/* Before auth a value is discarded as it arrives, never buffered. */
	const struct proto_limits lim = {
		.max_value = c->authed ? c->w->srv->cfg.max_item_size
				       : CONN_PREAUTH_LIMIT,
		.max_get_line = (uint32_t)text_get_line_max(&c->w->srv->cfg),
		.no_newline = c->text_no_newline,
	};
	struct proto_req q;
	enum proto_status st;

	(void)slot; /* requests point into buf: nothing kept per slot */
	st = proto_text_parse(buf, n, &lim, &q);
	c->text_no_newline = st == PROTO_NEED_MORE ? q.no_newline : 0;
	switch (st) {
	case PROTO_NEED_MORE:
		return DECODE_NEED_MORE;
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
		/* memcached: noreply silences errors too; with -F, a
		 * flush_all is refused before its delay is read. */
		*r = (struct request){ .len = q.len,
				       .noreply = q.noreply,
				       .status = REPLY_CLIENT_ERROR,
				       .message = q.error };
		if (q.cmd == PROTO_CMD_FLUSH_ALL &&
		    c->w->srv->cfg.disable_flush_all)
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
	case PROTO_CLOSE:
		break;
	}
	*r = (struct request){ .len = n, .status = REPLY_NONE };
	return DECODE_CLOSE;
}

static void add_str(struct conn *c, const char *s)
{
	conn_add(c, s, strlen(s));
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

static void status(struct conn *c, const struct request *r,
		   enum reply_status st, const char *msg)
{
	(void)r;
	if (!words[st].prefix)
		return;
	add_str(c, words[st].prefix);
	add_str(c, msg ? msg : words[st].text);
	conn_add(c, "\r\n", 2);
}

static void stored(struct conn *c, const struct request *r, uint64_t cas)
{
	(void)r;
	(void)cas;
	conn_add(c, "STORED\r\n", 8);
}

static void number(struct conn *c, const struct request *r, uint64_t v,
		   uint64_t cas)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\r\n", v);

	(void)r;
	(void)cas;
	conn_add(c, buf, (size_t)n);
}

static void version(struct conn *c, const struct request *r, const char *s)
{
	(void)r;
	add_str(c, "VERSION ");
	add_str(c, s);
	conn_add(c, "\r\n", 2);
}

static void nothing(struct conn *c, const struct request *r)
{
	(void)c;
	(void)r;
}

/*
 * VALUE line, then the data and its "\r\n" (stored with the value).
 *
 * One multi-get's reply is written whole, whatever the output limit
 * (--output-limit pauses reading between requests, not inside one). A
 * reply that alone outgrows all connection memory (--conn-memory) is cut:
 * the values so far, then memcached's "SERVER_ERROR out of memory writing
 * get response" instead of END, and the connection closes once that is
 * sent. (The batch loop runs no request after a close was decided, so
 * close_when_done is false when a get starts.)
 */
static void value(struct conn *c, const struct request *r, struct item *it)
{
	char hdr[PROTO_VALUE_HEADER_MAX];
	bool with_cas = r->cmd == REQ_GETS || r->cmd == REQ_GATS;
	size_t n;

	if (c->close_when_done)
		return;
	if (evbuffer_get_length(c->out) > c->w->srv->cfg.conn_memory) {
		log_info("closing connection %d: a get reply past "
			 "--conn-memory",
			 c->fd);
		add_str(c, "SERVER_ERROR out of memory writing get "
			   "response\r\n");
		c->close_when_done = true;
		return;
	}
	n = proto_text_value_header(hdr, item_key(it), it->nkey, it->flags,
				    it->nbytes, with_cas, it->cas);
	conn_add(c, hdr, n);
	conn_add_item_bytes(c, it, item_value(it), it->nbytes + 2);
}

static void values_end(struct conn *c, const struct request *r)
{
	(void)r;
	if (!c->close_when_done)
		conn_add(c, "END\r\n", 5);
}

static void key(struct conn *c, const struct request *r, const char *k,
		size_t n)
{
	(void)r;
	conn_add(c, "KEY ", 4);
	conn_add(c, k, n);
	conn_add(c, "\r\n", 2);
}

static void keys_end(struct conn *c, const struct request *r, uint64_t cursor)
{
	char buf[40];
	int n = snprintf(buf, sizeof(buf), "CURSOR %" PRIu64 "\r\n", cursor);

	(void)r;
	conn_add(c, buf, (size_t)n);
}

/* ---- stats: "STAT <name> <value>\r\n" lines ---- */

static const struct stats_sink *stats_begin(struct conn *c,
					    const struct request *r)
{
	/* One stats reply at a time per worker thread. */
	static _Thread_local struct stats_sink sink;

	(void)r;
	sink = (struct stats_sink){ .emit = stats_text_entry, .arg = c->out };
	return &sink;
}

static void stats_end(struct conn *c, const struct request *r, bool ok)
{
	(void)r;
	add_str(c, ok ? "END\r\n" : "ERROR\r\n");
}

static void dump_line(struct conn *c, const struct request *r, const char *line,
		      size_t n)
{
	(void)r;
	conn_add(c, line, n);
}

static void dump_end(struct conn *c, const struct request *r)
{
	(void)r;
	conn_add(c, "END\r\n", 5);
}

const struct protocol protocol_text = {
	.name = "text",
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
	},
};
