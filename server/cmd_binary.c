/*
 * The binary protocol (proto/PROTOCOL.md) on a connection: frames cut from
 * the input, decoded by the codec, executed against the cache, and replies
 * packed into the connection's msgpack buffer, which goes to the output
 * once per batch. Values up to COPY_MAX are copied; larger ones are sent by
 * reference, pinned by the item's refcount, as the text protocol does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "proto/binary.h"
#include "proto/text.h"
#include "server.h"

#define COPY_MAX 16384

/* The connection's reply buffer and its packer. */
struct out {
	struct conn *c;
	msgpack_sbuffer *sb;
	msgpack_packer pk;
};

/* Moves what is packed so far to the connection's output. */
static void out_flush(struct out *o)
{
	if (o->sb->size) {
		evbuffer_add(o->c->out, o->sb->data, o->sb->size);
		o->sb->size = 0;
	}
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

/* A reply whose payload is nil, or a message string when msg is set. */
static void reply_simple(struct out *o, uint64_t id, uint32_t status,
			 const char *msg)
{
	size_t f = proto_bin_begin(o->sb);

	proto_bin_pack_reply_head(&o->pk, id, status);
	if (msg)
		pack_str(&o->pk, msg);
	else
		msgpack_pack_nil(&o->pk);
	proto_bin_end(o->sb, f);
}

static void reply_u64(struct out *o, uint64_t id, uint64_t v)
{
	size_t f = proto_bin_begin(o->sb);

	proto_bin_pack_reply_head(&o->pk, id, PROTO_ST_OK);
	msgpack_pack_uint64(&o->pk, v);
	proto_bin_end(o->sb, f);
}

static void unpin_item(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	item_put(arg);
}

/*
 * [id, OK, [flags, value, cas]] for a live item (RCU read lock held). A
 * large value goes by reference: everything before it is flushed, the
 * frame length counted ahead, the cas packed after it.
 */
static void reply_item(struct out *o, uint64_t id, struct item *it)
{
	size_t f = proto_bin_begin(o->sb);
	char tail[16];
	msgpack_sbuffer tsb = { 0 };
	msgpack_packer tpk;
	uint32_t len;
	unsigned char *p;

	proto_bin_pack_reply_head(&o->pk, id, PROTO_ST_OK);
	msgpack_pack_array(&o->pk, 3);
	msgpack_pack_uint32(&o->pk, it->flags);
	msgpack_pack_bin(&o->pk, it->nbytes);
	if (it->nbytes <= COPY_MAX) {
		msgpack_pack_bin_body(&o->pk, item_value(it), it->nbytes);
		msgpack_pack_uint64(&o->pk, it->cas);
		proto_bin_end(o->sb, f);
		return;
	}
	/* The cas's encoding, at most 9 bytes, into a stack buffer. */
	tsb.data = tail;
	tsb.alloc = sizeof(tail);
	msgpack_packer_init(&tpk, &tsb, msgpack_sbuffer_write);
	msgpack_pack_uint64(&tpk, it->cas);
	len = (uint32_t)(o->sb->size - f - PROTO_BIN_HEADER + it->nbytes +
			 tsb.size);
	p = (unsigned char *)o->sb->data + f;
	p[0] = (unsigned char)(len >> 24);
	p[1] = (unsigned char)(len >> 16);
	p[2] = (unsigned char)(len >> 8);
	p[3] = (unsigned char)len;
	out_flush(o);
	item_get(it); /* dropped when the bytes have left the buffer */
	evbuffer_add_reference(o->c->out, item_value(it), it->nbytes,
			       unpin_item, it);
	evbuffer_add(o->c->out, tail, tsb.size);
}

static struct cache_key key_of(struct proto_bin_bytes b)
{
	return (struct cache_key){ b.p, b.n };
}

static void op_get(struct out *o, const struct proto_bin_req *r)
{
	struct cache *cache = o->c->w->srv->cache;
	struct thread_stats *st = &o->c->w->stats;
	bool expired;
	struct item *it;

	STAT_INC(st, cmd_get);
	if (r->op == PROTO_OP_GAT)
		STAT_INC(st, cmd_touch);
	rhkv_rcu_read_lock();
	it = cache_find(cache, key_of(r->key), &expired);
	if (it) {
		if (r->op == PROTO_OP_GAT)
			cache_item_set_exptime(cache, it,
					       cache_abs_exptime(r->exptime));
		reply_item(o, r->id, it);
	}
	rhkv_rcu_read_unlock();
	if (it) {
		STAT_INC(st, get_hits);
		if (r->op == PROTO_OP_GAT)
			STAT_INC(st, touch_hits);
		return;
	}
	STAT_INC(st, get_misses);
	if (r->op == PROTO_OP_GAT)
		STAT_INC(st, touch_misses);
	if (expired) {
		STAT_INC(st, get_expired);
		cache_reap(cache, key_of(r->key));
	}
	reply_simple(o, r->id, PROTO_ST_NOT_FOUND, NULL);
}

/* mget: values are copied (one frame holds them all). */
static void op_mget(struct out *o, const struct proto_bin_req *r)
{
	struct cache *cache = o->c->w->srv->cache;
	struct thread_stats *st = &o->c->w->stats;
	size_t f = proto_bin_begin(o->sb);

	proto_bin_pack_reply_head(&o->pk, r->id, PROTO_ST_OK);
	msgpack_pack_array(&o->pk, r->nkeys);
	for (uint32_t i = 0; i < r->nkeys; i++) {
		struct proto_bin_bytes k;
		struct item *it = NULL;

		STAT_INC(st, cmd_get);
		rhkv_rcu_read_lock();
		if (proto_bin_mget_key(r, i, &k))
			it = cache_find(cache, key_of(k), NULL);
		if (it) {
			msgpack_pack_array(&o->pk, 3);
			msgpack_pack_uint32(&o->pk, it->flags);
			msgpack_pack_bin(&o->pk, it->nbytes);
			msgpack_pack_bin_body(&o->pk, item_value(it),
					      it->nbytes);
			msgpack_pack_uint64(&o->pk, it->cas);
		} else {
			msgpack_pack_nil(&o->pk);
		}
		rhkv_rcu_read_unlock();
		it ? STAT_INC(st, get_hits) : STAT_INC(st, get_misses);
	}
	proto_bin_end(o->sb, f);
}

static uint32_t status_of(enum cache_result res)
{
	switch (res) {
	case CACHE_STORED:
		return PROTO_ST_OK;
	case CACHE_EXISTS:
		return PROTO_ST_EXISTS;
	case CACHE_NOT_FOUND:
		return PROTO_ST_NOT_FOUND;
	case CACHE_NO_MEMORY:
		return PROTO_ST_OUT_OF_MEMORY;
	case CACHE_NON_NUMERIC:
		return PROTO_ST_NON_NUMERIC;
	default:
		return PROTO_ST_NOT_STORED;
	}
}

static void op_store(struct out *o, const struct proto_bin_req *r)
{
	static const enum cache_store_mode modes[] = {
		[PROTO_OP_SET] = CACHE_SET,
		[PROTO_OP_ADD] = CACHE_ADD,
		[PROTO_OP_REPLACE] = CACHE_REPLACE,
		[PROTO_OP_APPEND] = CACHE_APPEND,
		[PROTO_OP_PREPEND] = CACHE_PREPEND,
		[PROTO_OP_CAS] = CACHE_CAS,
	};
	struct worker *w = o->c->w;
	uint64_t cas = 0;
	enum cache_result res;

	STAT_INC(&w->stats, cmd_set);
	res = cache_store(w->srv->cache, w->id, modes[r->op], key_of(r->key),
			  r->flags, cache_abs_exptime(r->exptime), r->value.p,
			  r->value.n, r->cas, &cas);
	if (res == CACHE_STORED) {
		STAT_INC(&w->stats, total_items);
		if (r->op == PROTO_OP_CAS)
			STAT_INC(&w->stats, cas_hits);
		reply_u64(o, r->id, cas);
		return;
	}
	if (res == CACHE_EXISTS)
		STAT_INC(&w->stats, cas_badval);
	else if (res == CACHE_NOT_FOUND)
		STAT_INC(&w->stats, cas_misses);
	reply_simple(o, r->id, status_of(res),
		     res == CACHE_NO_MEMORY ? "out of memory storing object"
					    : NULL);
}

static void op_incr(struct out *o, const struct proto_bin_req *r)
{
	struct worker *w = o->c->w;
	bool incr = r->op == PROTO_OP_INCR;
	uint64_t value = 0;
	enum cache_result res;

	res = cache_incr(w->srv->cache, w->id, key_of(r->key), incr, r->delta,
			 &value);
	if (res == CACHE_NOT_FOUND)
		incr ? STAT_INC(&w->stats, incr_misses)
		     : STAT_INC(&w->stats, decr_misses);
	else if (res == CACHE_STORED)
		incr ? STAT_INC(&w->stats, incr_hits)
		     : STAT_INC(&w->stats, decr_hits);
	if (res == CACHE_STORED)
		reply_u64(o, r->id, value);
	else
		reply_simple(o, r->id, status_of(res), NULL);
}

struct scan_keys {
	struct evbuffer *keys; /* uint8 length + bytes, per key */
	uint32_t n;
	const char *pat;
	size_t plen;
};

static void scan_key(const struct item *it, void *arg)
{
	struct scan_keys *sk = arg;
	uint8_t len = it->nkey;

	if (sk->pat &&
	    !proto_glob_match(sk->pat, sk->plen, item_key(it), it->nkey))
		return;
	evbuffer_add(sk->keys, &len, 1);
	evbuffer_add(sk->keys, item_key(it), it->nkey);
	sk->n++;
}

static void op_scan(struct out *o, const struct proto_bin_req *r)
{
	struct scan_keys sk = { .keys = evbuffer_new() };
	uint64_t next;
	size_t f;

	if (!sk.keys) {
		reply_simple(o, r->id, PROTO_ST_SERVER_ERROR, "out of memory");
		return;
	}
	if (r->has_match) {
		sk.pat = r->match.p;
		sk.plen = r->match.n;
	}
	next = cache_scan(o->c->w->srv->cache, r->cursor, r->count, scan_key,
			  &sk);
	f = proto_bin_begin(o->sb);
	proto_bin_pack_reply_head(&o->pk, r->id, PROTO_ST_OK);
	msgpack_pack_array(&o->pk, 2);
	msgpack_pack_uint64(&o->pk, next);
	msgpack_pack_array(&o->pk, sk.n);
	for (uint32_t i = 0; i < sk.n; i++) {
		char key[256];
		uint8_t len;

		evbuffer_remove(sk.keys, &len, 1);
		evbuffer_remove(sk.keys, key, len);
		msgpack_pack_bin(&o->pk, len);
		msgpack_pack_bin_body(&o->pk, key, len);
	}
	proto_bin_end(o->sb, f);
	evbuffer_free(sk.keys);
}

/*
 * stats [group]: a map of name -> value string, the text lines' values;
 * "reset" starts the counters over and gives an empty map.
 */
static void op_stats(struct out *o, const struct proto_bin_req *r)
{
	struct server *srv = o->c->w->srv;
	const char *group = r->text.n ? r->text.p : "";
	size_t f = proto_bin_begin(o->sb);
	int rc = 1;

	proto_bin_pack_reply_head(&o->pk, r->id, PROTO_ST_OK);
	if (r->text.n == 5 && !memcmp(group, "reset", 5)) {
		server_reset_stats(srv);
		msgpack_pack_map(&o->pk, 0);
	} else {
		rc = stats_pack(srv, group, r->text.n, &o->pk);
	}
	if (rc == 1) {
		proto_bin_end(o->sb, f);
		return;
	}
	o->sb->size = f; /* not this frame: an error instead */
	if (rc == 0)
		reply_simple(o, r->id, PROTO_ST_BAD_REQUEST,
			     "unknown stats group");
	else
		reply_simple(o, r->id, PROTO_ST_SERVER_ERROR, "out of memory");
}

static void op_auth(struct out *o, const struct proto_bin_req *r)
{
	struct conn *c = o->c;
	const struct config *cfg = &c->w->srv->cfg;

	if (!cfg->password) {
		reply_simple(o, r->id, PROTO_ST_BAD_REQUEST,
			     "no password is configured");
	} else if (config_password_ok(cfg, r->text.p, r->text.n)) {
		c->authed = true;
		reply_simple(o, r->id, PROTO_ST_OK, NULL);
	} else {
		STAT_INC(&c->w->stats, auth_errors);
		reply_simple(o, r->id, PROTO_ST_AUTH_REQUIRED, "auth failed");
	}
}

static void execute(struct out *o, const struct proto_bin_req *r)
{
	struct conn *c = o->c;
	struct server *srv = c->w->srv;

	if (!c->authed && r->op != PROTO_OP_AUTH && r->op != PROTO_OP_QUIT) {
		reply_simple(o, r->id, PROTO_ST_AUTH_REQUIRED,
			     "authentication required");
		return;
	}
	switch (r->op) {
	case PROTO_OP_GET:
	case PROTO_OP_GETS:
	case PROTO_OP_GAT:
		op_get(o, r);
		break;
	case PROTO_OP_MGET:
		op_mget(o, r);
		break;
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
	case PROTO_OP_CAS:
		op_store(o, r);
		break;
	case PROTO_OP_DELETE: {
		bool hit = cache_delete(srv->cache, key_of(r->key));

		hit ? STAT_INC(&c->w->stats, delete_hits)
		    : STAT_INC(&c->w->stats, delete_misses);
		reply_simple(o, r->id, hit ? PROTO_ST_OK : PROTO_ST_NOT_FOUND,
			     NULL);
		break;
	}
	case PROTO_OP_INCR:
	case PROTO_OP_DECR:
		op_incr(o, r);
		break;
	case PROTO_OP_TOUCH: {
		bool hit = cache_touch(srv->cache, key_of(r->key),
				       cache_abs_exptime(r->exptime));

		STAT_INC(&c->w->stats, cmd_touch);
		hit ? STAT_INC(&c->w->stats, touch_hits)
		    : STAT_INC(&c->w->stats, touch_misses);
		reply_simple(o, r->id, hit ? PROTO_ST_OK : PROTO_ST_NOT_FOUND,
			     NULL);
		break;
	}
	case PROTO_OP_FLUSH_ALL:
		STAT_INC(&c->w->stats, cmd_flush);
		cache_flush(srv->cache, r->delay);
		reply_simple(o, r->id, PROTO_ST_OK, NULL);
		break;
	case PROTO_OP_SCAN:
		op_scan(o, r);
		break;
	case PROTO_OP_STATS:
		op_stats(o, r);
		break;
	case PROTO_OP_VERSION: {
		size_t f = proto_bin_begin(o->sb);

		proto_bin_pack_reply_head(&o->pk, r->id, PROTO_ST_OK);
		pack_str(&o->pk, RHKV_VERSION);
		proto_bin_end(o->sb, f);
		break;
	}
	case PROTO_OP_NOOP:
		reply_simple(o, r->id, PROTO_ST_OK, NULL);
		break;
	case PROTO_OP_QUIT:
		reply_simple(o, r->id, PROTO_ST_OK, NULL);
		c->close_when_done = true;
		break;
	case PROTO_OP_AUTH:
		op_auth(o, r);
		break;
	}
}

static unsigned int latency_class(uint32_t op)
{
	switch (op) {
	case PROTO_OP_GET:
	case PROTO_OP_GETS:
	case PROTO_OP_GAT:
	case PROTO_OP_MGET:
		return LAT_get;
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
	case PROTO_OP_CAS:
		return LAT_set;
	case PROTO_OP_DELETE:
		return LAT_delete;
	case PROTO_OP_INCR:
	case PROTO_OP_DECR:
		return LAT_incr;
	case PROTO_OP_TOUCH:
		return LAT_touch;
	case PROTO_OP_SCAN:
		return LAT_scan;
	default:
		return LAT_other;
	}
}

/* One frame of the input, decoded. */
struct frame {
	enum { F_NEED_MORE, F_CLOSE, F_OK, F_REJECT } kind;
	uint32_t len; /* of the body */
	struct proto_bin_req req;
	uint32_t status; /* F_REJECT: the reply */
	const char *error;
};

/* Decodes the frame at p (avail bytes) with the connection's decoder
 * `slot`; the two decoders let the next frame be decoded ahead while the
 * current one's request still points into the first. */
static void decode_frame(struct conn *c, const char *p, size_t avail,
			 size_t limit, unsigned int slot, struct frame *f)
{
	switch (proto_bin_frame_len(p, avail, limit, &f->len)) {
	case PROTO_BIN_FRAME_NEED_MORE:
		f->kind = F_NEED_MORE;
		return;
	case PROTO_BIN_FRAME_TOO_LARGE:
		/* Nothing of it is buffered: the connection ends. */
		f->kind = F_CLOSE;
		return;
	case PROTO_BIN_FRAME_OK:
		break;
	}
	if (avail - PROTO_BIN_HEADER < f->len) {
		f->kind = F_NEED_MORE;
		return;
	}
	switch (proto_bin_decode_request(
		&c->bin->dec[slot], p + PROTO_BIN_HEADER, f->len,
		c->w->srv->cfg.max_item_size, &f->req, &f->status, &f->error)) {
	case PROTO_BIN_OK:
		f->kind = F_OK;
		break;
	case PROTO_BIN_REJECT:
		f->kind = F_REJECT;
		break;
	case PROTO_BIN_FATAL:
		f->kind = F_CLOSE;
		break;
	}
}

size_t cmd_binary_process(struct conn *c, const char *buf, size_t n)
{
	const struct config *cfg = &c->w->srv->cfg;
	struct out o = { .c = c, .sb = &c->bin->sb };
	uint64_t t0 = latency_now_ns(), t1;
	struct frame fr[2];
	unsigned int cur = 0;
	bool ahead = false;
	size_t off = 0;

	msgpack_packer_init(&o.pk, o.sb, msgpack_sbuffer_write);
	while (off < n && !c->close_when_done &&
	       evbuffer_get_length(c->out) + o.sb->size < cfg->output_hwm) {
		size_t limit =
			c->authed ? proto_bin_body_limit(cfg->max_item_size)
				  : CONN_PREAUTH_LIMIT;
		struct frame *f = &fr[cur], *nf = &fr[cur ^ 1];
		size_t next;

		if (!ahead)
			decode_frame(c, buf + off, n - off, limit, cur, f);
		ahead = false;
		if (f->kind == F_NEED_MORE)
			break;
		if (f->kind == F_CLOSE) {
			c->close_when_done = true;
			off = n;
			break;
		}
		next = off + PROTO_BIN_HEADER + f->len;
		/*
		 * Pipelined batches: decode the next frame now and prefetch
		 * its key's bucket, so that its lookup does not stall on
		 * memory (not past an AUTH, which changes the limits).
		 */
		if (next < n && f->kind == F_OK && f->req.op != PROTO_OP_AUTH) {
			decode_frame(c, buf + next, n - next, limit, cur ^ 1,
				     nf);
			ahead = true;
			if (nf->kind == F_OK && nf->req.key.n)
				cache_prefetch(c->w->srv->cache,
					       key_of(nf->req.key));
		}
		if (f->kind == F_OK) {
			execute(&o, &f->req);
			t1 = latency_now_ns();
			latency_record(&c->w->lat[latency_class(f->req.op)],
				       t1 - t0);
			t0 = t1;
		} else {
			reply_simple(&o, f->req.id, f->status, f->error);
		}
		off = next;
		cur ^= 1;
	}
	out_flush(&o);
	return off;
}
