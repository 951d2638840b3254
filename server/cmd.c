/*
 * Command execution: a parsed request, the cache, and memcached's replies.
 * Protocol-independent in spirit: the text parser fills a proto_req, this
 * file turns it into cache calls and reply bytes in the connection's output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "proto/text.h"
#include "server.h"

/* Values up to this size are copied into the output inside the read-side
 * section; larger ones are referenced, pinned by the item's refcount. */
#define COPY_MAX 16384

static void reply(struct conn *c, const char *s)
{
	evbuffer_add(c->out, s, strlen(s));
}

static struct cache_key key_of(const char *buf, struct proto_span s)
{
	return (struct cache_key){ buf + s.off, s.len };
}

static void unpin_item(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	item_put(arg);
}

/* Appends VALUE line, data and "\r\n" for a live item (read lock held). */
static void add_value(struct conn *c, struct item *it, bool with_cas)
{
	char hdr[PROTO_VALUE_HEADER_MAX];
	size_t n =
		proto_text_value_header(hdr, item_key(it), it->nkey, it->flags,
					it->nbytes, with_cas, it->cas);

	evbuffer_add(c->out, hdr, n);
	if (it->nbytes <= COPY_MAX) {
		evbuffer_add(c->out, item_value(it), it->nbytes + 2);
		return;
	}
	item_get(it); /* dropped when the bytes have left the buffer */
	evbuffer_add_reference(c->out, item_value(it), it->nbytes + 2,
			       unpin_item, it);
}

static void cmd_get(struct conn *c, const char *buf,
		    const struct proto_req *req)
{
	struct cache *cache = c->w->srv->cache;
	struct thread_stats *st = &c->w->stats;
	bool touch = req->cmd == PROTO_CMD_GAT || req->cmd == PROTO_CMD_GATS;
	bool with_cas =
		req->cmd == PROTO_CMD_GETS || req->cmd == PROTO_CMD_GATS;
	int64_t exptime = touch ? cache_abs_exptime(req->exptime) : 0;
	uint32_t pos = req->key.off;
	struct proto_span key;

	while (proto_text_next_key(buf, req, &pos, &key)) {
		struct item *it;
		bool expired;

		STAT_INC(st, cmd_get);
		if (touch)
			STAT_INC(st, cmd_touch);
		rhkv_rcu_read_lock();
		it = cache_find(cache, key_of(buf, key), &expired);
		if (it) {
			if (touch)
				cache_item_set_exptime(cache, it, exptime);
			add_value(c, it, with_cas);
		}
		rhkv_rcu_read_unlock();
		if (expired) /* lazy expiry: reclaim what we met */
			cache_reap(cache, key_of(buf, key));
		if (it) {
			STAT_INC(st, get_hits);
			if (touch)
				STAT_INC(st, touch_hits);
		} else {
			STAT_INC(st, get_misses);
			if (touch)
				STAT_INC(st, touch_misses);
			if (expired)
				STAT_INC(st, get_expired);
		}
	}
	reply(c, "END\r\n");
}

static void cmd_store(struct conn *c, const char *buf,
		      const struct proto_req *req)
{
	static const enum cache_store_mode modes[] = {
		[PROTO_CMD_SET] = CACHE_SET,
		[PROTO_CMD_ADD] = CACHE_ADD,
		[PROTO_CMD_REPLACE] = CACHE_REPLACE,
		[PROTO_CMD_APPEND] = CACHE_APPEND,
		[PROTO_CMD_PREPEND] = CACHE_PREPEND,
		[PROTO_CMD_CAS] = CACHE_CAS,
	};
	struct thread_stats *st = &c->w->stats;
	enum cache_result res;
	const char *text;

	STAT_INC(st, cmd_set);
	res = cache_store(c->w->srv->cache, c->w->id, modes[req->cmd],
			  key_of(buf, req->key), req->flags,
			  cache_abs_exptime(req->exptime), buf + req->value_off,
			  req->nbytes, req->cas, NULL);
	switch (res) {
	case CACHE_STORED:
		text = "STORED\r\n";
		STAT_INC(st, total_items);
		if (req->cmd == PROTO_CMD_CAS)
			STAT_INC(st, cas_hits);
		break;
	case CACHE_EXISTS:
		text = "EXISTS\r\n";
		STAT_INC(st, cas_badval);
		break;
	case CACHE_NOT_FOUND:
		text = "NOT_FOUND\r\n";
		STAT_INC(st, cas_misses);
		break;
	case CACHE_NO_MEMORY:
		text = "SERVER_ERROR out of memory storing object\r\n";
		break;
	default:
		text = "NOT_STORED\r\n";
		break;
	}
	if (!req->noreply)
		reply(c, text);
}

static void cmd_delete(struct conn *c, const char *buf,
		       const struct proto_req *req)
{
	bool hit = cache_delete(c->w->srv->cache, key_of(buf, req->key));

	if (hit)
		STAT_INC(&c->w->stats, delete_hits);
	else
		STAT_INC(&c->w->stats, delete_misses);
	if (!req->noreply)
		reply(c, hit ? "DELETED\r\n" : "NOT_FOUND\r\n");
}

static void cmd_incr(struct conn *c, const char *buf,
		     const struct proto_req *req)
{
	struct thread_stats *st = &c->w->stats;
	bool incr = req->cmd == PROTO_CMD_INCR;
	uint64_t value = 0;
	enum cache_result res;

	res = cache_incr(c->w->srv->cache, c->w->id, key_of(buf, req->key),
			 incr, req->delta, &value);
	if (res == CACHE_NOT_FOUND)
		incr ? STAT_INC(st, incr_misses) : STAT_INC(st, decr_misses);
	else if (res == CACHE_STORED)
		incr ? STAT_INC(st, incr_hits) : STAT_INC(st, decr_hits);
	if (req->noreply)
		return;
	switch (res) {
	case CACHE_STORED:
		evbuffer_add_printf(c->out, "%" PRIu64 "\r\n", value);
		break;
	case CACHE_NOT_FOUND:
		reply(c, "NOT_FOUND\r\n");
		break;
	case CACHE_NON_NUMERIC:
		reply(c, "CLIENT_ERROR cannot increment or decrement "
			 "non-numeric value\r\n");
		break;
	default:
		reply(c, "SERVER_ERROR out of memory\r\n");
		break;
	}
}

static void cmd_touch(struct conn *c, const char *buf,
		      const struct proto_req *req)
{
	bool hit = cache_touch(c->w->srv->cache, key_of(buf, req->key),
			       cache_abs_exptime(req->exptime));

	STAT_INC(&c->w->stats, cmd_touch);
	if (hit)
		STAT_INC(&c->w->stats, touch_hits);
	else
		STAT_INC(&c->w->stats, touch_misses);
	if (!req->noreply)
		reply(c, hit ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
}

struct scan_out {
	struct conn *c;
	const char *pat;
	size_t plen;
};

static void scan_key(const struct item *it, void *arg)
{
	struct scan_out *so = arg;

	if (so->pat &&
	    !proto_glob_match(so->pat, so->plen, item_key(it), it->nkey))
		return;
	evbuffer_add(so->c->out, "KEY ", 4);
	evbuffer_add(so->c->out, item_key(it), it->nkey);
	evbuffer_add(so->c->out, "\r\n", 2);
}

static void cmd_scan(struct conn *c, const char *buf,
		     const struct proto_req *req)
{
	struct scan_out so = { c, NULL, 0 };
	uint64_t next;

	if (req->has_match) {
		so.pat = buf + req->match.off;
		so.plen = req->match.len;
	}
	next = cache_scan(c->w->srv->cache, req->cursor, req->count, scan_key,
			  &so);
	evbuffer_add_printf(c->out, "CURSOR %" PRIu64 "\r\n", next);
}

/* auth <password>: constant-time comparison; failures are counted. */
static void cmd_auth_text(struct conn *c, const char *buf,
			  const struct proto_req *req)
{
	const struct config *cfg = &c->w->srv->cfg;

	if (!cfg->password) {
		reply(c, "CLIENT_ERROR no password is configured\r\n");
		return;
	}
	if (config_password_ok(cfg, buf + req->arg.off, req->arg.len)) {
		c->authed = true;
		reply(c, "OK\r\n");
		return;
	}
	STAT_INC(&c->w->stats, auth_errors);
	reply(c, "CLIENT_ERROR auth failed\r\n");
}

unsigned int cmd_latency_class(const struct proto_req *req)
{
	switch (req->cmd) {
	case PROTO_CMD_GET:
	case PROTO_CMD_GETS:
	case PROTO_CMD_GAT:
	case PROTO_CMD_GATS:
		return LAT_get;
	case PROTO_CMD_SET:
	case PROTO_CMD_ADD:
	case PROTO_CMD_REPLACE:
	case PROTO_CMD_APPEND:
	case PROTO_CMD_PREPEND:
	case PROTO_CMD_CAS:
		return LAT_set;
	case PROTO_CMD_DELETE:
		return LAT_delete;
	case PROTO_CMD_INCR:
	case PROTO_CMD_DECR:
		return LAT_incr;
	case PROTO_CMD_TOUCH:
		return LAT_touch;
	case PROTO_CMD_SCAN:
		return LAT_scan;
	default:
		return LAT_other;
	}
}

void cmd_execute(struct conn *c, const char *buf, const struct proto_req *req)
{
	struct server *srv = c->w->srv;

	switch (req->cmd) {
	case PROTO_CMD_GET:
	case PROTO_CMD_GETS:
	case PROTO_CMD_GAT:
	case PROTO_CMD_GATS:
		cmd_get(c, buf, req);
		break;
	case PROTO_CMD_SET:
	case PROTO_CMD_ADD:
	case PROTO_CMD_REPLACE:
	case PROTO_CMD_APPEND:
	case PROTO_CMD_PREPEND:
	case PROTO_CMD_CAS:
		cmd_store(c, buf, req);
		break;
	case PROTO_CMD_DELETE:
		cmd_delete(c, buf, req);
		break;
	case PROTO_CMD_INCR:
	case PROTO_CMD_DECR:
		cmd_incr(c, buf, req);
		break;
	case PROTO_CMD_TOUCH:
		cmd_touch(c, buf, req);
		break;
	case PROTO_CMD_FLUSH_ALL:
		STAT_INC(&c->w->stats, cmd_flush);
		cache_flush(srv->cache, req->delay);
		if (!req->noreply)
			reply(c, "OK\r\n");
		break;
	case PROTO_CMD_VERSION:
		reply(c, "VERSION " RHKV_VERSION "\r\n");
		break;
	case PROTO_CMD_VERBOSITY:
		atomic_store(&srv->verbosity, (int)req->verbosity);
		if (!req->noreply)
			reply(c, "OK\r\n");
		break;
	case PROTO_CMD_AUTH:
		cmd_auth_text(c, buf, req);
		break;
	case PROTO_CMD_CACHE_MEMLIMIT:
		cache_set_limit(srv->cache, (uint64_t)req->memlimit << 20);
		if (!req->noreply)
			reply(c, "OK\r\n");
		break;
	case PROTO_CMD_QUIT:
		c->close_when_done = true;
		break;
	case PROTO_CMD_STATS:
		cmd_stats(c, buf, req);
		break;
	case PROTO_CMD_SCAN:
		cmd_scan(c, buf, req);
		break;
	}
}
