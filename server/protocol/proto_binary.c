/*
 * rhkv's msgpack protocol (proto/PROTOCOL.md) as a front end (protocol.h):
 * frames cut from the input and decoded by proto/binary.c into a struct
 * request; replies staged in a per-connection buffer that goes to the
 * output once per batch (flush): the common ones written there directly,
 * the others with msgpack-c's packer. Values up to REPLY_COPY_MAX are
 * copied; larger ones of a GET go by reference, as in the text protocol.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "protocol.h"
#include "proto/binary.h"
#include "proto/text.h"
#include "config.h"
#include "stats.h"

/* A connection's replies, staged, and its decoders: two, because the batch
 * loop decodes one frame ahead while the current one's request still
 * points into the first. */
struct bin_state {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_bin_decoder dec[2];
	struct proto_bin_req req[2];
	struct req_meta meta[2]; /* a meta request's r->meta, per slot */
	/* scan keys and stats entries, packed before their count is known */
	msgpack_sbuffer scratch;
	msgpack_packer spk;
	uint32_t nscratch;
	size_t frame; /* an mget's frame, open from values_begin to _end */
	struct stats_sink sink;
	/* A staging write failed (out of memory): what is staged is not
	 * whole, so the flush breaks the connection instead of sending it. */
	bool failed;
};

static struct bin_state *state(const struct session *c)
{
	return c->pstate;
}

static int stage_write(void *data, const char *buf, size_t len)
{
	struct bin_state *s = data;

	if (msgpack_sbuffer_write(&s->sb, buf, len)) {
		s->failed = true;
		return -1;
	}
	return 0;
}

static int scratch_write(void *data, const char *buf, size_t len)
{
	struct bin_state *s = data;

	if (msgpack_sbuffer_write(&s->scratch, buf, len)) {
		s->failed = true;
		return -1;
	}
	return 0;
}

/* A reply frame's header, reserved; (size_t)-1 when out of memory. */
static size_t frame_begin(struct bin_state *s)
{
	size_t f = proto_bin_begin(&s->sb);

	if (f == (size_t)-1)
		s->failed = true;
	return f;
}

static void frame_end(struct bin_state *s, size_t f)
{
	if (f != (size_t)-1)
		proto_bin_end(&s->sb, f);
}

/*
 * Room for n more bytes at the end of the staging buffer, or NULL (out of
 * memory: marked failed). The buffer is msgpack-c's sbuffer, which grows
 * with realloc and is freed with free: growing it here keeps that.
 */
static unsigned char *stage_reserve(struct bin_state *s, size_t n)
{
	msgpack_sbuffer *sb = &s->sb;
	size_t cap = sb->alloc ? sb->alloc : MSGPACK_SBUFFER_INIT_SIZE;
	char *p;

	if (sb->alloc - sb->size >= n)
		return (unsigned char *)sb->data + sb->size;
	while (cap - sb->size < n)
		cap *= 2;
	p = realloc(sb->data, cap);
	if (!p) {
		s->failed = true;
		return NULL;
	}
	sb->data = p;
	sb->alloc = cap;
	return (unsigned char *)p + sb->size;
}

/*
 * The common replies (a status without a message, a number, a value) are
 * written directly into the staging buffer: direct_begin reserves a whole
 * frame (payload_max bytes of payload at most) and writes its header's
 * place and [id, status; the caller writes the payload from the pointer
 * it returns (NULL: out of memory) and hands its end to direct_end, which
 * fills in the length. The bytes are those the packer would write.
 */
static unsigned char *direct_begin(struct bin_state *s, const struct request *r,
				   uint32_t status, size_t payload_max)
{
	unsigned char *p = stage_reserve(
		s, PROTO_BIN_HEADER + PROTO_BIN_REPLY_HEAD_MAX + payload_max);

	if (!p)
		return NULL;
	p += PROTO_BIN_HEADER;
	return p + proto_bin_put_reply_head(p, r->p.bin.id, status);
}

static void direct_end(struct bin_state *s, unsigned char *end)
{
	unsigned char *f = (unsigned char *)s->sb.data + s->sb.size;
	uint32_t len = (uint32_t)(end - f - PROTO_BIN_HEADER);

	f[0] = (unsigned char)(len >> 24);
	f[1] = (unsigned char)(len >> 16);
	f[2] = (unsigned char)(len >> 8);
	f[3] = (unsigned char)len;
	s->sb.size = (size_t)(end - (unsigned char *)s->sb.data);
}

static int open_state(struct session *c)
{
	struct bin_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	msgpack_sbuffer_init(&s->sb);
	msgpack_packer_init(&s->pk, s, stage_write);
	msgpack_sbuffer_init(&s->scratch);
	msgpack_packer_init(&s->spk, s, scratch_write);
	proto_bin_decoder_init(&s->dec[0]);
	proto_bin_decoder_init(&s->dec[1]);
	c->pstate = s;
	return 0;
}

static void close_state(struct session *c)
{
	struct bin_state *s = state(c);

	if (!s)
		return;
	msgpack_sbuffer_destroy(&s->sb);
	msgpack_sbuffer_destroy(&s->scratch);
	proto_bin_decoder_destroy(&s->dec[0]);
	proto_bin_decoder_destroy(&s->dec[1]);
	free(s);
	c->pstate = NULL;
}

/* ---- decoding ---- */

static const enum req_cmd cmd_of[] = {
	[PROTO_OP_GET] = REQ_GET,
	[PROTO_OP_GETS] = REQ_GETS,
	[PROTO_OP_MGET] = REQ_GETS,
	[PROTO_OP_SET] = REQ_SET,
	[PROTO_OP_ADD] = REQ_ADD,
	[PROTO_OP_REPLACE] = REQ_REPLACE,
	[PROTO_OP_APPEND] = REQ_APPEND,
	[PROTO_OP_PREPEND] = REQ_PREPEND,
	[PROTO_OP_CAS] = REQ_CAS,
	[PROTO_OP_DELETE] = REQ_DELETE,
	[PROTO_OP_INCR] = REQ_INCR,
	[PROTO_OP_DECR] = REQ_DECR,
	[PROTO_OP_TOUCH] = REQ_TOUCH,
	[PROTO_OP_GAT] = REQ_GATS,
	[PROTO_OP_FLUSH_ALL] = REQ_FLUSH_ALL,
	[PROTO_OP_SCAN] = REQ_SCAN,
	[PROTO_OP_STATS] = REQ_STATS,
	[PROTO_OP_VERSION] = REQ_VERSION,
	[PROTO_OP_NOOP] = REQ_NOOP,
	[PROTO_OP_QUIT] = REQ_QUIT,
	[PROTO_OP_AUTH] = REQ_AUTH,
	[PROTO_OP_META_GET] = REQ_MGET,
	[PROTO_OP_META_SET] = REQ_MSET,
	[PROTO_OP_META_DELETE] = REQ_MDELETE,
	[PROTO_OP_META_ARITH] = REQ_MARITH,
	[PROTO_OP_FLUSH_PREFIX] = REQ_FLUSH_PREFIX,
};

static struct cache_key bytes(struct proto_bin_bytes b)
{
	return (struct cache_key){ b.p, b.n };
}

/* GET, GETS, GAT: the one key. */
static bool one_key(const struct request *r, uint32_t *pos,
		    struct cache_key *key)
{
	if (*pos)
		return false;
	*pos = 1;
	*key = r->key;
	return true;
}

/* MGET: each element of the array; one that is not a valid key is
 * answered as a miss (length 0). */
static bool mget_key(const struct request *r, uint32_t *pos,
		     struct cache_key *key)
{
	const struct proto_bin_req *q = r->p.bin.keys;
	struct proto_bin_bytes k;

	if (*pos >= q->nkeys)
		return false;
	*key = proto_bin_mget_key(q, *pos, &k) ? bytes(k)
					       : (struct cache_key){ NULL, 0 };
	(*pos)++;
	return true;
}

/*
 * A meta op's options as the executor takes them. A meta get always
 * returns all it knows of the item (a few bytes, where asking for them
 * would take another round trip), the value only when "v" asks for it.
 */
static void fill_meta(struct request *r, const struct proto_bin_req *q,
		      struct req_meta *m)
{
	const struct proto_bin_meta *o = &q->meta;
	uint32_t ret = 0;

	switch (q->op) {
	case PROTO_OP_META_GET:
		ret = META_RET_CAS | META_RET_FLAGS | META_RET_HIT |
		      META_RET_LAST | META_RET_SIZE | META_RET_TTL;
		break;
	case PROTO_OP_META_SET:
		ret = META_RET_CAS;
		break;
	case PROTO_OP_META_ARITH:
		ret = META_RET_CAS | META_RET_TTL;
		break;
	default:
		break;
	}
	if (o->opts & PROTO_META_VALUE)
		ret |= META_RET_VALUE;
	*m = (struct req_meta){
		.ret = ret,
		.no_bump = o->opts & PROTO_META_NOBUMP,
		.invalidate = o->opts & PROTO_META_INVALIDATE,
		.has_cas = o->opts & PROTO_META_CAS,
		.has_new_cas = o->opts & PROTO_META_NEW_CAS,
		.has_ttl = o->opts & PROTO_META_TTL,
		.has_vivify = o->opts & PROTO_META_VIVIFY,
		.has_recache = o->opts & PROTO_META_RECACHE,
		.mode = o->mode,
		.new_cas = o->new_cas,
		.ttl = o->ttl,
		.vivify_ttl = o->vivify_ttl,
		.recache_ttl = o->recache_ttl,
	};
	r->meta = m;
	r->flags = o->flags;
	r->exptime = m->has_ttl ? o->ttl : 0;
	r->cas = o->cas;
	r->delta = o->delta;
	r->initial = o->initial;
}

static void fill(struct request *r, const struct proto_bin_req *q,
		 struct req_meta *meta)
{
	/* Whole, from zero: a field added to struct request is never left
	 * over from this slot's previous request. An unknown op (a rejected
	 * frame) executes nothing. */
	*r = (struct request){
		.cmd = q->op && q->op <= PROTO_OP_MAX ? cmd_of[q->op]
						      : REQ_NOOP,
		.p.bin = { .id = q->id, .op = q->op, .keys = q },
		.key = bytes(q->key),
		.keys = q->op == PROTO_OP_MGET
				? (struct req_keys){ mget_key, 0, q->nkeys }
				: (struct req_keys){ one_key, 0, 1 },
		.value = q->value.p,
		.nbytes = q->value.n,
		.flags = q->flags,
		.exptime = q->exptime,
		.cas = q->cas,
		.delta = q->delta,
		.delay = q->delay,
		.cursor = q->cursor,
		.count = q->count,
		.match = q->has_match ? bytes(q->match)
				      : (struct cache_key){ 0 },
		.arg = bytes(q->text),
		.user = bytes(q->user),
		.status = REPLY_NONE,
	};
	if (q->op == PROTO_OP_STATS)
		req_stats_split(r);
	if (proto_bin_op_is_meta(q->op))
		fill_meta(r, q, meta);
}

static enum reply_status status_of_code(uint32_t code)
{
	switch (code) {
	case PROTO_ST_BAD_KEY:
		return REPLY_BAD_KEY;
	case PROTO_ST_TOO_LARGE:
		return REPLY_TOO_LARGE;
	default:
		return REPLY_CLIENT_ERROR;
	}
}

static enum decode_status decode(struct session *c, const char *buf, size_t n,
				 unsigned int slot, struct request *r)
{
	struct bin_state *s = state(c);
	const struct config *cfg = c->env->cfg;
	size_t limit = c->authed ? proto_bin_body_limit(cfg->max_item_size)
				 : CONN_PREAUTH_LIMIT;
	struct proto_bin_req *q = &s->req[slot];
	uint32_t len, code;
	const char *error;

	switch (proto_bin_frame_len(buf, n, limit, &len)) {
	case PROTO_BIN_FRAME_NEED_MORE:
		return DECODE_NEED_MORE;
	case PROTO_BIN_FRAME_TOO_LARGE:
		/* Nothing of it is buffered: the connection ends. */
		*r = (struct request){ .len = n, .status = REPLY_NONE };
		return DECODE_CLOSE;
	case PROTO_BIN_FRAME_OK:
		break;
	}
	if (n - PROTO_BIN_HEADER < len)
		return DECODE_NEED_MORE;
	switch (proto_bin_decode_request(&s->dec[slot], buf + PROTO_BIN_HEADER,
					 len, cfg->max_item_size, q, &code,
					 &error)) {
	case PROTO_BIN_OK:
		fill(r, q, &s->meta[slot]);
		r->len = PROTO_BIN_HEADER + len;
		return DECODE_OK;
	case PROTO_BIN_REJECT:
		fill(r, q, &s->meta[slot]);
		r->len = PROTO_BIN_HEADER + len;
		if (code == PROTO_ST_TOO_LARGE)
			return DECODE_TOO_LARGE;
		r->status = status_of_code(code);
		r->message = error;
		r->swallow = 0;
		return DECODE_REJECT;
	case PROTO_BIN_FATAL:
		break;
	}
	*r = (struct request){ .len = n, .status = REPLY_NONE };
	return DECODE_CLOSE;
}

/* ---- replies ---- */

static void flush(struct session *c)
{
	struct bin_state *s = state(c);

	if (s->failed) {
		c->broken = true;
		s->sb.size = 0;
		return;
	}
	if (s->sb.size) {
		session_add(c, s->sb.data, s->sb.size);
		s->sb.size = 0;
	}
}

static size_t staged(const struct session *c)
{
	return state(c)->sb.size;
}

static void pack_str(msgpack_packer *pk, const char *str)
{
	size_t n = strlen(str);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, str, n);
}

/* Each status's code and message (NULL: a nil payload). */
static const struct {
	uint32_t code;
	const char *msg;
} codes[] = {
	[REPLY_NONE] = { PROTO_ST_OK, NULL },
	[REPLY_OK] = { PROTO_ST_OK, NULL },
	[REPLY_STORED] = { PROTO_ST_OK, NULL },
	[REPLY_NOT_STORED] = { PROTO_ST_NOT_STORED, NULL },
	[REPLY_EXISTS] = { PROTO_ST_EXISTS, NULL },
	[REPLY_NOT_FOUND] = { PROTO_ST_NOT_FOUND, NULL },
	[REPLY_DELETED] = { PROTO_ST_OK, NULL },
	[REPLY_TOUCHED] = { PROTO_ST_OK, NULL },
	[REPLY_RESET] = { PROTO_ST_OK, NULL },
	[REPLY_BYE] = { PROTO_ST_OK, NULL },
	[REPLY_ERROR] = { PROTO_ST_BAD_REQUEST, "unknown command" },
	[REPLY_CLIENT_ERROR] = { PROTO_ST_BAD_REQUEST, "bad request" },
	[REPLY_BAD_KEY] = { PROTO_ST_BAD_KEY, "bad key" },
	[REPLY_TOO_LARGE] = { PROTO_ST_TOO_LARGE,
			      "object too large for cache" },
	[REPLY_NO_MEMORY] = { PROTO_ST_OUT_OF_MEMORY, NULL },
	[REPLY_NON_NUMERIC] = { PROTO_ST_NON_NUMERIC, NULL },
	[REPLY_LINE_TOO_LONG] = { PROTO_ST_BAD_REQUEST, "frame too long" },
	[REPLY_SERVER_ERROR] = { PROTO_ST_SERVER_ERROR, "internal error" },
	[REPLY_AUTH_REQUIRED] = { PROTO_ST_AUTH_REQUIRED,
				  "authentication required" },
	[REPLY_AUTH_FAILED] = { PROTO_ST_AUTH_REQUIRED, "auth failed" },
	[REPLY_NO_PASSWORD] = { PROTO_ST_BAD_REQUEST,
				"no password is configured" },
	[REPLY_UNKNOWN_GROUP] = { PROTO_ST_BAD_REQUEST, "unknown stats group" },
};

static void status(struct session *c, const struct request *r,
		   enum reply_status st, const char *msg)
{
	struct bin_state *s = state(c);
	unsigned char *p;
	size_t f;

	if (!msg && !codes[st].msg && st != REPLY_RESET) { /* nil payload */
		p = direct_begin(s, r, codes[st].code, 1);
		if (p) {
			*p++ = 0xc0;
			direct_end(s, p);
		}
		return;
	}
	f = frame_begin(s);
	if (st == REPLY_RESET) { /* STATS "reset": an empty map */
		proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
		msgpack_pack_map(&s->pk, 0);
		frame_end(s, f);
		return;
	}
	if (!msg)
		msg = codes[st].msg;
	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, codes[st].code);
	if (msg)
		pack_str(&s->pk, msg);
	else
		msgpack_pack_nil(&s->pk);
	frame_end(s, f);
}

static void pack_number(struct session *c, const struct request *r, uint64_t v)
{
	struct bin_state *s = state(c);
	unsigned char *p = direct_begin(s, r, PROTO_ST_OK, PROTO_BIN_UINT_MAX);

	if (p)
		direct_end(s, p + proto_bin_put_uint(p, v));
}

static void number(struct session *c, const struct request *r, uint64_t v,
		   uint64_t cas)
{
	(void)cas;
	pack_number(c, r, v);
}

static void version(struct session *c, const struct request *r, const char *v)
{
	struct bin_state *s = state(c);
	size_t f = frame_begin(s);

	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
	pack_str(&s->pk, v);
	frame_end(s, f);
}

static bool is_mget(const struct request *r)
{
	return r->p.bin.op == PROTO_OP_MGET;
}

static void values_begin(struct session *c, const struct request *r)
{
	struct bin_state *s = state(c);

	if (!is_mget(r))
		return;
	s->frame = frame_begin(s);
	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
	msgpack_pack_array(&s->pk, r->keys.count);
}

/* [flags, value, cas]: copied (an mget's frame holds all its values). */
static void pack_item(msgpack_packer *pk, const struct item *it)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint32(pk, item_flags(it));
	msgpack_pack_bin(pk, item_nbytes(it));
	msgpack_pack_bin_body(pk, item_value(it), item_nbytes(it));
	msgpack_pack_uint64(pk, item_cas(it));
}

/*
 * Ends frame f, whose body goes on past what is staged with n value bytes
 * of it and then tail[0..tn): the length is counted ahead, everything
 * staged moves to the output, and the value follows by reference.
 */
static void frame_end_by_reference(struct session *c, size_t f, struct item *it,
				   const char *v, uint32_t n, const char *tail,
				   size_t tn)
{
	struct bin_state *s = state(c);
	unsigned char *p;
	uint32_t len;

	if (s->failed) {
		flush(c);
		return;
	}
	len = (uint32_t)(s->sb.size - f - PROTO_BIN_HEADER + n + tn);
	p = (unsigned char *)s->sb.data + f;
	p[0] = (unsigned char)(len >> 24);
	p[1] = (unsigned char)(len >> 16);
	p[2] = (unsigned char)(len >> 8);
	p[3] = (unsigned char)len;
	flush(c);
	session_add_item_bytes(c, it, v, n);
	if (tn)
		session_add(c, tail, tn);
}

/* [id, OK, [flags, value, cas]] by reference, the cas packed after the
 * value. */
static void value_by_reference(struct session *c, const struct request *r,
			       struct item *it)
{
	struct bin_state *s = state(c);
	size_t f = frame_begin(s);
	char tail[16];
	msgpack_sbuffer tsb = { .data = tail, .alloc = sizeof(tail) };
	msgpack_packer tpk;

	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
	msgpack_pack_array(&s->pk, 3);
	msgpack_pack_uint32(&s->pk, item_flags(it));
	msgpack_pack_bin(&s->pk, item_nbytes(it));
	/* The cas's encoding, at most 9 bytes, into a stack buffer. */
	msgpack_packer_init(&tpk, &tsb, msgpack_sbuffer_write);
	msgpack_pack_uint64(&tpk, item_cas(it));
	frame_end_by_reference(c, f, it, item_value(it), item_nbytes(it), tail,
			       tsb.size);
}

static void value(struct session *c, const struct request *r, struct item *it)
{
	struct bin_state *s = state(c);
	uint32_t n = item_nbytes(it);
	unsigned char *p;

	if (is_mget(r)) {
		pack_item(&s->pk, it);
		return;
	}
	if (n > REPLY_COPY_MAX) {
		value_by_reference(c, r, it);
		return;
	}
	/* [flags, value, cas]: the 3-array, two integers and a bin header
	 * (5 bytes at most) around the value. */
	p = direct_begin(s, r, PROTO_ST_OK, 1 + 2 * PROTO_BIN_UINT_MAX + 5 + n);
	if (!p)
		return;
	*p++ = 0x93;
	p += proto_bin_put_uint(p, item_flags(it));
	p += proto_bin_put_bin_head(p, n);
	memcpy(p, item_value(it), n);
	p += n;
	p += proto_bin_put_uint(p, item_cas(it));
	direct_end(s, p);
}

static void miss(struct session *c, const struct request *r)
{
	if (is_mget(r))
		msgpack_pack_nil(&state(c)->pk);
	else
		status(c, r, REPLY_NOT_FOUND, NULL);
}

static void values_end(struct session *c, const struct request *r)
{
	struct bin_state *s = state(c);

	if (is_mget(r))
		frame_end(s, s->frame);
}

static void stored(struct session *c, const struct request *r, uint64_t cas)
{
	pack_number(c, r, cas);
}

static void key(struct session *c, const struct request *r, const char *k,
		size_t n)
{
	struct bin_state *s = state(c);

	(void)r;
	msgpack_pack_bin(&s->spk, n);
	msgpack_pack_bin_body(&s->spk, k, n);
	s->nscratch++;
}

/* Packs the scratch buffer's entries after a header, and empties it. */
static void take_scratch(struct bin_state *s)
{
	stage_write(s, s->scratch.data, s->scratch.size);
	s->scratch.size = 0;
	s->nscratch = 0;
}

static void keys_end(struct session *c, const struct request *r,
		     uint64_t cursor)
{
	struct bin_state *s = state(c);
	size_t f = frame_begin(s);

	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
	msgpack_pack_array(&s->pk, 2);
	msgpack_pack_uint64(&s->pk, cursor);
	msgpack_pack_array(&s->pk, s->nscratch);
	take_scratch(s);
	frame_end(s, f);
}

/* ---- stats: a map of name -> value, both strings ---- */

static void stat_entry(void *arg, const struct stats_entry *e)
{
	struct bin_state *s = arg;
	char buf[STATS_VALUE_MAX];

	pack_str(&s->spk, e->name);
	pack_str(&s->spk, stats_entry_value(e, buf));
	s->nscratch++;
}

static const struct stats_sink *stats_begin(struct session *c,
					    const struct request *r)
{
	struct bin_state *s = state(c);

	(void)r;
	s->scratch.size = 0;
	s->nscratch = 0;
	s->sink = (struct stats_sink){ .emit = stat_entry, .arg = s };
	return &s->sink;
}

static void stats_end(struct session *c, const struct request *r, bool ok)
{
	struct bin_state *s = state(c);
	size_t f;

	if (!ok) {
		s->scratch.size = 0;
		s->nscratch = 0;
		status(c, r, REPLY_UNKNOWN_GROUP, NULL);
		return;
	}
	f = frame_begin(s);
	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, PROTO_ST_OK);
	msgpack_pack_map(&s->pk, s->nscratch);
	take_scratch(s);
	frame_end(s, f);
}

/* ---- meta replies: a map (PROTOCOL.md) ---- */

static uint32_t meta_status(enum meta_code code)
{
	switch (code) {
	case META_EN:
	case META_NF:
		return PROTO_ST_NOT_FOUND;
	case META_NS:
		return PROTO_ST_NOT_STORED;
	case META_EX:
		return PROTO_ST_EXISTS;
	default: /* HD, VA; ME is the text protocol's */
		return PROTO_ST_OK;
	}
}

/* Arithmetic's digits as a number; false if they are not one. */
static bool digits_u64(const char *p, uint32_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (n == 0 || n > 20)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		unsigned int d = (unsigned char)p[i] - '0';

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* The binary protocol has no quiet mode: every meta request is answered. */
static void meta(struct session *c, const struct request *r,
		 const struct meta_result *m)
{
	struct bin_state *s = state(c);
	struct proto_bin_meta_reply mr = { 0 };
	struct item *by_ref = NULL;
	size_t f;

	if (m->have_item) {
		mr.fields |= PROTO_MR_FLAGS | PROTO_MR_TTL | PROTO_MR_SIZE |
			     PROTO_MR_LA | PROTO_MR_HIT;
		mr.flags = m->flags;
		/* A TTL this request set in the past comes as memcached
		 * prints it, unsigned 32-bit (huge): here it is 0, none
		 * left. */
		mr.ttl = m->ttl > INT32_MAX ? 0 : m->ttl;
		mr.size = m->size;
		mr.last_access = m->last_access;
		mr.hit = m->hit_before;
	}
	if (m->have_item || m->cas) {
		mr.fields |= PROTO_MR_CAS;
		mr.cas = m->cas;
	}
	if (m->won)
		mr.fields |= PROTO_MR_WON;
	if (m->stale)
		mr.fields |= PROTO_MR_STALE;
	if (m->already_won)
		mr.fields |= PROTO_MR_WONBY;
	if (m->code == META_VA && r->cmd == REQ_MARITH && m->value &&
	    digits_u64(m->value, m->value_len, &mr.number)) {
		mr.fields |= PROTO_MR_NUMBER;
	} else if (m->code == META_VA && (m->it || m->value)) {
		mr.fields |= PROTO_MR_VALUE;
		mr.value.p = m->it ? item_value(m->it) : m->value;
		mr.value.n = m->value_len;
		if (m->it && m->value_len > REPLY_COPY_MAX)
			by_ref = m->it;
	}
	f = frame_begin(s);
	proto_bin_pack_reply_head(&s->pk, r->p.bin.id, meta_status(m->code));
	proto_bin_pack_meta_reply(&s->pk, &mr, !by_ref);
	if (by_ref)
		frame_end_by_reference(c, f, by_ref, mr.value.p, mr.value.n,
				       NULL, 0);
	else
		frame_end(s, f);
}

const struct protocol protocol_binary = {
	.name = "binary",
	.open = open_state,
	.close = close_state,
	.decode = decode,
	.flush = flush,
	.staged = staged,
	.reply = {
		.status = status,
		.stored = stored,
		.number = number,
		.version = version,
		.values_begin = values_begin,
		.value = value,
		.miss = miss,
		.values_end = values_end,
		.key = key,
		.keys_end = keys_end,
		.stats_begin = stats_begin,
		.stats_end = stats_end,
		.meta = meta,
	},
};
