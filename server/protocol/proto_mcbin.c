/*
 * memcached's binary protocol as a front end (protocol.h): proto/mcbin.c
 * parses a request's header and extras, the decoder here fills a struct
 * request, and the reply operations write memcached's responses straight
 * into the connection's output (values by reference when large). Quiet
 * variants are the encoder's business: it knows the opcode, and leaves
 * out what memcached leaves out (a success; a quiet get's miss). What is
 * supported, and where rhkvd differs from memcached: proto/MCBIN.md.
 */
#include <string.h>

#include "session.h"
#include "protocol.h"
#include "proto/mcbin.h"
#include "config.h"
#include "stats.h"

/* ---- decoding ---- */

static bool one_key(const struct request *r, uint32_t *pos,
		    struct cache_key *key)
{
	if (*pos)
		return false;
	*pos = 1;
	*key = r->key;
	return true;
}

/* The command of a known opcode's base (the quiet and key variants share
 * it); SET, ADD and REPLACE with a cas are a CAS, as in memcached. */
static enum req_cmd cmd_of(const struct mcbin_req *q)
{
	switch (q->lay.base) {
	case MCBIN_GET:
	case MCBIN_GETK:
		return REQ_GET;
	case MCBIN_GAT:
	case MCBIN_GATK:
	case MCBIN_TOUCH: /* a GAT whose reply leaves the value out */
		return REQ_GAT;
	case MCBIN_SET:
		return q->h.cas ? REQ_CAS : REQ_SET;
	case MCBIN_ADD:
		return q->h.cas ? REQ_CAS : REQ_ADD;
	case MCBIN_REPLACE:
		return q->h.cas ? REQ_CAS : REQ_REPLACE;
	case MCBIN_APPEND:
		return REQ_APPEND;
	case MCBIN_PREPEND:
		return REQ_PREPEND;
	case MCBIN_DELETE:
		return REQ_DELETE;
	case MCBIN_INCREMENT:
		return REQ_INCR;
	case MCBIN_DECREMENT:
		return REQ_DECR;
	case MCBIN_QUIT:
		return REQ_QUIT;
	case MCBIN_FLUSH:
		return REQ_FLUSH_ALL;
	case MCBIN_VERSION:
		return REQ_VERSION;
	case MCBIN_STAT:
		return REQ_STATS;
	case MCBIN_VERBOSITY:
		return REQ_VERBOSITY;
	case MCBIN_SASL_LIST_MECHS:
		return REQ_AUTH_MECHS;
	case MCBIN_SASL_AUTH:
	case MCBIN_SASL_STEP:
		return REQ_AUTH;
	default:
		return REQ_NOOP;
	}
}

/* SASL PLAIN's message, authzid NUL authcid NUL password: the user name
 * (authcid) and the password into r (the authzid is not used). Another
 * mechanism, or a malformed message, gives neither (auth fails). */
static void plain(struct request *r, const struct mcbin_req *q)
{
	const char *end = q->value + q->nvalue;
	const char *authcid, *nul;

	r->user = r->arg = (struct cache_key){ NULL, 0 };
	if (q->h.keylen != 5 || memcmp(q->key, "PLAIN", 5) || !q->nvalue)
		return;
	nul = memchr(q->value, '\0', q->nvalue);
	if (!nul)
		return;
	authcid = nul + 1;
	nul = memchr(authcid, '\0', (size_t)(end - authcid));
	if (!nul)
		return;
	r->user = (struct cache_key){ authcid, (size_t)(nul - authcid) };
	r->arg = (struct cache_key){ nul + 1, (size_t)(end - nul - 1) };
}

static void fill(struct request *r, const struct mcbin_req *q)
{
	*r = (struct request){
		.cmd = q->lay.known ? cmd_of(q) : REQ_NOOP,
		.len = q->len,
		.key = { q->key, q->h.keylen },
		.keys = { one_key, 0, 1 },
		.value = q->value,
		.nbytes = q->nvalue,
		.flags = q->flags,
		.exptime = q->exptime,
		.cas = q->h.cas,
		.delta = q->delta,
		.create = q->exptime != UINT32_MAX,
		.initial = q->initial,
		.delay = q->exptime,
		.verbosity = q->verbosity,
		.p.mcbin = { q->h.opaque, q->h.opcode },
	};
	if (r->cmd == REQ_STATS) {
		r->arg = r->key;
		req_stats_split(r);
	} else if (r->cmd == REQ_AUTH)
		plain(r, q);
}

/* A request refused from its header (its body may not be there): only
 * what the response needs, the opcode and the opaque. */
static void refuse(struct request *r, const struct mcbin_req *q, size_t len,
		   enum reply_status st)
{
	*r = (struct request){
		.cmd = REQ_NOOP,
		.len = len,
		.status = st,
		.p.mcbin = { q->h.opaque, q->h.opcode },
	};
}

static enum decode_status decode(struct session *c, const char *buf, size_t n,
				 unsigned int slot, struct request *r)
{
	uint32_t value_max =
		c->authed ? c->env->cfg->max_item_size : CONN_PREAUTH_LIMIT;
	struct mcbin_req q;

	(void)slot; /* requests point into buf: nothing kept per slot */
	switch (mcbin_parse(buf, n, value_max + MCBIN_BODY_SLACK, value_max,
			    &q)) {
	case MCBIN_NEED_MORE:
		/* A large value still arriving lands in its item (conn.c). */
		if (!q.data_pending || !c->authed ||
		    q.nvalue <= ITEM_SEG_VALUE_MAX)
			return DECODE_NEED_MORE;
		fill(r, &q);
		r->value_end = NULL;
		return DECODE_NEED_VALUE;
	case MCBIN_OK:
		fill(r, &q);
		return DECODE_OK;
	case MCBIN_TOO_LARGE:
		fill(r, &q);
		r->swallow = q.swallow;
		return DECODE_TOO_LARGE;
	case MCBIN_UNKNOWN:
		refuse(r, &q, q.len, REPLY_ERROR);
		return DECODE_REJECT;
	case MCBIN_INVALID:
		refuse(r, &q, n, REPLY_CLIENT_ERROR);
		return DECODE_CLOSE;
	case MCBIN_BAD_LENGTHS:
		refuse(r, &q, n, REPLY_ERROR);
		return DECODE_CLOSE;
	case MCBIN_CLOSE:
		break;
	}
	*r = (struct request){ .len = n, .status = REPLY_NONE };
	return DECODE_CLOSE;
}

/* ---- replies ---- */

static bool quiet(const struct request *r)
{
	return mcbin_layout(r->p.mcbin.op).quiet;
}

static uint8_t base_op(const struct request *r)
{
	return mcbin_layout(r->p.mcbin.op).base;
}

/* A response's parts; the value, when it is an item's, goes separately. */
struct part {
	const void *p;
	size_t n;
};

static void respond(struct session *c, const struct request *r, uint16_t status,
		    uint64_t cas, struct part extras, struct part key,
		    struct part value, uint32_t item_bytes)
{
	char hdr[MCBIN_HEADER];

	mcbin_frame_header(hdr, MCBIN_MAGIC_RES, r->p.mcbin.op, status,
			   (uint8_t)extras.n, (uint16_t)key.n,
			   (uint32_t)value.n + item_bytes, r->p.mcbin.opaque,
			   cas);
	session_add(c, hdr, sizeof(hdr));
	if (extras.n)
		session_add(c, extras.p, extras.n);
	if (key.n)
		session_add(c, key.p, key.n);
	if (value.n)
		session_add(c, value.p, value.n);
}

static const struct part none = { NULL, 0 };

static struct part str(const char *s)
{
	return (struct part){ s, strlen(s) };
}

static uint16_t status_code(const struct request *r, enum reply_status st)
{
	switch (st) {
	case REPLY_NONE:
	case REPLY_OK:
	case REPLY_STORED:
	case REPLY_DELETED:
	case REPLY_TOUCHED:
	case REPLY_RESET:
	case REPLY_BYE:
		return MCBIN_ST_OK;
	case REPLY_NOT_STORED:
		/* memcached: an ADD of a present key exists, a REPLACE of a
		 * missing one is not found. */
		if (base_op(r) == MCBIN_ADD)
			return MCBIN_ST_EXISTS;
		if (base_op(r) == MCBIN_REPLACE)
			return MCBIN_ST_NOT_FOUND;
		return MCBIN_ST_NOT_STORED;
	case REPLY_EXISTS:
		return MCBIN_ST_EXISTS;
	case REPLY_NOT_FOUND:
	case REPLY_UNKNOWN_GROUP:
		return MCBIN_ST_NOT_FOUND;
	case REPLY_ERROR:
	case REPLY_NO_PASSWORD: /* memcached without SASL: no such command */
		return MCBIN_ST_UNKNOWN_COMMAND;
	case REPLY_CLIENT_ERROR:
	case REPLY_BAD_KEY:
	case REPLY_LINE_TOO_LONG:
		return MCBIN_ST_INVALID;
	case REPLY_TOO_LARGE:
		return MCBIN_ST_TOO_LARGE;
	case REPLY_NON_NUMERIC:
		return MCBIN_ST_NON_NUMERIC;
	case REPLY_AUTH_REQUIRED:
	case REPLY_AUTH_FAILED:
		return MCBIN_ST_AUTH_ERROR;
	case REPLY_NO_MEMORY:
	case REPLY_SERVER_ERROR:
		break;
	}
	return MCBIN_ST_NO_MEMORY;
}

/* The body of a success that has one (SASL), else none. */
static struct part success_body(const struct request *r)
{
	if (r->cmd == REQ_AUTH)
		return str("Authenticated");
	if (r->cmd == REQ_AUTH_MECHS)
		return str("PLAIN");
	return none;
}

static void status(struct session *c, const struct request *r,
		   enum reply_status st, const char *msg)
{
	uint16_t code = status_code(r, st);

	(void)msg; /* memcached's texts are fixed per status */
	if (st == REPLY_AUTH_REQUIRED)
		c->close_when_done = true; /* memcached with SASL does so */
	else if (quiet(r) && code == MCBIN_ST_OK)
		return;
	respond(c, r, code, 0, none, none,
		code ? str(mcbin_status_text(code)) : success_body(r), 0);
}

static void stored(struct session *c, const struct request *r, uint64_t cas)
{
	if (!quiet(r))
		respond(c, r, MCBIN_ST_OK, cas, none, none, none, 0);
}

static void number(struct session *c, const struct request *r, uint64_t v,
		   uint64_t cas)
{
	char be[8];

	if (quiet(r))
		return;
	mcbin_store64(be, v);
	respond(c, r, MCBIN_ST_OK, cas, none, none, (struct part){ be, 8 }, 0);
}

static void version(struct session *c, const struct request *r, const char *s)
{
	respond(c, r, MCBIN_ST_OK, 0, none, none, str(s), 0);
}

static void nothing(struct session *c, const struct request *r)
{
	(void)c;
	(void)r;
}

static bool with_key(const struct request *r)
{
	return base_op(r) == MCBIN_GETK || base_op(r) == MCBIN_GATK;
}

/* Flags as extras, the key for GETK and GATK, the value (not for a
 * TOUCH), the item's cas. Hits are answered by the quiet variants too. */
static void value(struct session *c, const struct request *r, struct item *it)
{
	char flags[4];
	uint32_t n = base_op(r) == MCBIN_TOUCH ? 0 : item_nbytes(it);
	struct part key = { item_key(it), it->nkey };

	mcbin_store32(flags, item_flags(it));
	respond(c, r, MCBIN_ST_OK, item_cas(it), (struct part){ flags, 4 },
		with_key(r) ? key : none, none, n);
	if (n)
		session_add_item_bytes(c, it, item_value(it), n);
}

/* A miss: nothing from a quiet variant; GETK and GATK give the key (and
 * no text), the others "Not found". */
static void miss(struct session *c, const struct request *r)
{
	if (quiet(r))
		return;
	if (with_key(r))
		respond(c, r, MCBIN_ST_NOT_FOUND, 0, none,
			(struct part){ r->key.p, r->key.n }, none, 0);
	else
		respond(c, r, MCBIN_ST_NOT_FOUND, 0, none, none,
			str(mcbin_status_text(MCBIN_ST_NOT_FOUND)), 0);
}

/* scan is not a command of this protocol: never called. */
static void key(struct session *c, const struct request *r, const char *k,
		size_t n)
{
	(void)c;
	(void)r;
	(void)k;
	(void)n;
}

static void keys_end(struct session *c, const struct request *r,
		     uint64_t cursor)
{
	(void)c;
	(void)r;
	(void)cursor;
}

/* ---- stats: one response per entry (key: the name, value: the value),
 * then one with neither ---- */

struct stats_ctx {
	struct stats_sink sink;
	struct session *c;
	const struct request *r;
};

static void stat_entry(void *arg, const struct stats_entry *e)
{
	struct stats_ctx *sc = arg;
	char buf[STATS_VALUE_MAX];

	respond(sc->c, sc->r, MCBIN_ST_OK, 0, none, str(e->name),
		str(stats_entry_value(e, buf)), 0);
}

static const struct stats_sink *stats_begin(struct session *c,
					    const struct request *r)
{
	/* One stats reply at a time per worker thread. */
	static _Thread_local struct stats_ctx sc;

	sc = (struct stats_ctx){ { stat_entry, &sc }, c, r };
	return &sc.sink;
}

static void stats_end(struct session *c, const struct request *r, bool ok)
{
	if (ok)
		respond(c, r, MCBIN_ST_OK, 0, none, none, none, 0);
	else
		status(c, r, REPLY_UNKNOWN_GROUP, NULL);
}

const struct protocol protocol_mcbin = {
	.name = "mcbin",
	.decode = decode,
	.reply = {
		.status = status,
		.stored = stored,
		.number = number,
		.version = version,
		.values_begin = nothing,
		.value = value,
		.miss = miss,
		.values_end = nothing,
		.key = key,
		.keys_end = keys_end,
		.stats_begin = stats_begin,
		.stats_end = stats_end,
		/* .meta stays NULL: this decoder never produces REQ_M*. */
	},
};
