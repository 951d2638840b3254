/*
 * The executor: one decoded request (request.h), whatever its protocol,
 * against the cache. Each command's cache call, statistics and rules
 * (CAS, flags, exptime, auth) are written here once; the connection's
 * protocol spells the answer (protocol.h).
 */
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "auth.h"
#include "cmd_meta.h"
#include "common/log.h"
#include "session.h"
#include "reply.h"
#include "proto/text.h"
#include "proto/text_auth.h"
#include "cache.h"
#include "config.h"
#include "observe.h"

#define REPLY(c) ((c)->reply)

/* A status, unless the client asked for no reply. */
static void say(struct session *c, const struct request *r,
		enum reply_status st, const char *msg)
{
	if (!r->noreply)
		REPLY(c)->status(c, r, st, msg);
}

static bool is_word(struct cache_key k, const char *w)
{
	return k.n == strlen(w) && !memcmp(k.p, w, k.n);
}

static bool is_touch(enum req_cmd cmd)
{
	return cmd == REQ_GAT || cmd == REQ_GATS;
}

/* get, gets, gat, gats: one key or many. An expired item met on the way
 * is reclaimed at once (lazy expiry) and counted. Keys followed by one
 * over 250 bytes are fetched, touched and counted as memcached does before
 * it fails, but answered with the failure alone. */
static void exec_get(struct session *c, const struct request *r)
{
	struct cache *cache = c->env->cache;
	struct thread_stats *st = c->stats;
	const struct reply_ops *ops = REPLY(c);
	bool touch = is_touch(r->cmd);
	bool answer = !r->bad_key_follows;
	int64_t exptime = touch ? cache_abs_exptime(r->exptime) : 0;
	uint32_t pos = r->keys.first;
	struct cache_key key;

	if (answer)
		ops->values_begin(c, r);
	while (r->keys.next(r, &pos, &key)) {
		struct item *it = NULL;
		bool expired = false;
		uint32_t nbytes = 0;

		STAT_INC(st, cmd_get);
		hotkeys_note(c->hot, HOTKEYS_READ, key);
		if (touch)
			STAT_INC(st, cmd_touch);
		if (key.n) {
			rhkv_rcu_read_lock();
			it = cache_find(cache, key, &expired);
			if (it) {
				if (touch)
					cache_item_set_exptime(cache, it,
							       exptime);
				if (answer)
					ops->value(c, r, it);
				nbytes = item_nbytes(it);
			}
			rhkv_rcu_read_unlock();
		}
		if (watch_wants(&c->env->obs->watch, PROTO_WATCH_FETCHERS))
			watch_fetch(&c->env->obs->watch, c->fd, key.p, key.n,
				    it != NULL, nbytes);
		observe_detail(c->env->obs, key, DETAIL_GET, it != NULL);
		if (it) {
			STAT_INC(st, get_hits);
			if (touch)
				STAT_INC(st, touch_hits);
			continue;
		}
		STAT_INC(st, get_misses);
		if (touch)
			STAT_INC(st, touch_misses);
		if (expired) {
			if (cache_reap(cache, key))
				STAT_INC(st, get_flushed);
			else
				STAT_INC(st, get_expired);
		}
		if (answer)
			ops->miss(c, r);
	}
	if (answer)
		ops->values_end(c, r);
	else
		ops->status(c, r, REPLY_BAD_KEY, NULL);
}

/* The words `watch mutations` logs for a store's outcome. */
const char *cmd_store_word(enum cache_result res)
{
	static const char *const words[] = {
		[CACHE_STORED] = "stored",
		[CACHE_NOT_STORED] = "not_stored",
		[CACHE_EXISTS] = "exists",
		[CACHE_NOT_FOUND] = "not_found",
		[CACHE_NO_MEMORY] = "no_memory",
		[CACHE_NON_NUMERIC] = "not_stored",
	};

	return words[res];
}

void cmd_watch_store(struct session *c, struct cache_key key,
		     enum cache_store_mode mode, const char *status,
		     int64_t exptime, uint32_t nbytes)
{
	static const char *const modes[] = {
		[CACHE_SET] = "set",	     [CACHE_ADD] = "add",
		[CACHE_REPLACE] = "replace", [CACHE_APPEND] = "append",
		[CACHE_PREPEND] = "prepend", [CACHE_CAS] = "cas",
	};

	if (!watch_wants(&c->env->obs->watch, PROTO_WATCH_MUTATIONS))
		return;
	watch_store(&c->env->obs->watch, c->fd, key.p, key.n, status,
		    modes[mode], exptime ? exptime - cache_now() : 0, nbytes);
}

static const enum cache_store_mode store_modes[] = {
	[REQ_SET] = CACHE_SET,	       [REQ_ADD] = CACHE_ADD,
	[REQ_REPLACE] = CACHE_REPLACE, [REQ_APPEND] = CACHE_APPEND,
	[REQ_PREPEND] = CACHE_PREPEND, [REQ_CAS] = CACHE_CAS,
};

/* `watch mutations`: a classic storage command's outcome. */
static void watch_stored(struct session *c, const struct request *r,
			 const char *status)
{
	if (r->cmd > REQ_CAS || r->cmd < REQ_SET)
		return;
	cmd_watch_store(c, r->key, store_modes[r->cmd], status,
			cache_abs_exptime(r->exptime), r->nbytes);
}

static void exec_store(struct session *c, const struct request *r)
{
	struct thread_stats *st = c->stats;
	const struct cache_write w = {
		.mode = store_modes[r->cmd],
		.key = r->key,
		.flags = r->flags,
		.exptime = cache_abs_exptime(r->exptime),
		.value = r->value,
		.nbytes = r->nbytes,
		/* The classic append and prepend compare no cas. */
		.cas_in = r->cmd == REQ_CAS ? r->cas : 0,
		.nbytes_max = c->env->cfg->max_item_size,
		.landed = r->landed,
	};
	uint64_t cas = 0;
	enum cache_result res;

	STAT_INC(st, cmd_set);
	observe_detail(c->env->obs, r->key, DETAIL_SET, false);
	res = cache_write(c->env->cache, c->thread, &w, &cas);
	watch_stored(c, r, cmd_store_word(res));
	switch (res) {
	case CACHE_STORED:
		STAT_INC(st, total_items);
		if (r->cmd == REQ_CAS)
			STAT_INC(st, cas_hits);
		if (!r->noreply)
			REPLY(c)->stored(c, r, cas);
		return;
	case CACHE_EXISTS:
		STAT_INC(st, cas_badval);
		say(c, r, REPLY_EXISTS, NULL);
		return;
	case CACHE_NOT_FOUND:
		STAT_INC(st, cas_misses);
		say(c, r, REPLY_NOT_FOUND, NULL);
		return;
	case CACHE_NO_MEMORY:
		STAT_INC(st, store_no_memory);
		say(c, r, REPLY_NO_MEMORY, "out of memory storing object");
		return;
	default:
		say(c, r, REPLY_NOT_STORED, NULL);
		return;
	}
}

/* A delete with a cas (memcached's binary protocol): the item's cas must
 * match. Checked before the delete, not atomically with it. */
static bool delete_cas_differs(struct session *c, const struct request *r)
{
	struct item *it;
	bool differs;

	rhkv_rcu_read_lock();
	it = cache_find(c->env->cache, r->key, NULL);
	differs = it && item_cas(it) != r->cas;
	rhkv_rcu_read_unlock();
	return differs;
}

static void exec_delete(struct session *c, const struct request *r)
{
	bool hit;

	if (r->cas && delete_cas_differs(c, r)) {
		say(c, r, REPLY_EXISTS, NULL);
		return;
	}
	hit = cache_delete(c->env->cache, r->key);

	observe_detail(c->env->obs, r->key, DETAIL_DEL, false);
	if (hit)
		STAT_INC(c->stats, delete_hits);
	else
		STAT_INC(c->stats, delete_misses);
	say(c, r, hit ? REPLY_DELETED : REPLY_NOT_FOUND, NULL);
}

/* incr/decr of a missing key with r->create: stores r->initial (as its
 * decimal digits) if nothing else has been stored meanwhile. */
static enum cache_result incr_create(struct session *c, const struct request *r,
				     uint64_t *value, uint64_t *cas)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, r->initial);

	*value = r->initial;
	return cache_store(c->env->cache, c->thread, CACHE_ADD, r->key, 0,
			   cache_abs_exptime(r->exptime), num, (uint32_t)n, 0,
			   cas);
}

static void exec_incr(struct session *c, const struct request *r)
{
	struct thread_stats *st = c->stats;
	bool incr = r->cmd == REQ_INCR;
	uint64_t value = 0, cas = 0;
	enum cache_result res = CACHE_NOT_FOUND;
	bool created = false;

	/* A create that loses a race with another store: incr again. */
	for (int tries = 0; tries < 2 && !created; tries++) {
		res = cache_incr(c->env->cache, c->thread, r->key, incr,
				 r->delta, r->cas, &value, &cas);
		if (res != CACHE_NOT_FOUND || !r->create || r->cas)
			break;
		res = incr_create(c, r, &value, &cas);
		created = res != CACHE_NOT_STORED;
	}
	switch (res) {
	case CACHE_STORED:
		STAT_ARITH(st, incr, !created);
		if (!r->noreply)
			REPLY(c)->number(c, r, value, cas);
		return;
	case CACHE_NOT_FOUND:
		STAT_ARITH(st, incr, false);
		say(c, r, REPLY_NOT_FOUND, NULL);
		return;
	case CACHE_EXISTS:
		say(c, r, REPLY_EXISTS, NULL);
		return;
	case CACHE_NON_NUMERIC:
		say(c, r, REPLY_NON_NUMERIC, NULL);
		return;
	default:
		say(c, r, REPLY_NO_MEMORY, "out of memory");
		return;
	}
}

static void exec_touch(struct session *c, const struct request *r)
{
	bool hit = cache_touch(c->env->cache, r->key,
			       cache_abs_exptime(r->exptime));

	STAT_INC(c->stats, cmd_touch);
	if (hit)
		STAT_INC(c->stats, touch_hits);
	else
		STAT_INC(c->stats, touch_misses);
	say(c, r, hit ? REPLY_TOUCHED : REPLY_NOT_FOUND, NULL);
}

struct scan_ctx {
	struct session *c;
	const struct request *r;
};

static void scan_key(const struct item *it, void *arg)
{
	struct scan_ctx *sc = arg;
	const struct request *r = sc->r;

	if (r->match.p &&
	    !proto_glob_match(r->match.p, r->match.n, item_key(it), it->nkey))
		return;
	REPLY(sc->c)->key(sc->c, r, item_key(it), it->nkey);
}

static void exec_scan(struct session *c, const struct request *r)
{
	struct scan_ctx sc = { c, r };
	uint64_t next;

	next = cache_scan(c->env->cache, r->cursor, r->count, scan_key, &sc);
	REPLY(c)->keys_end(c, r, next);
}

/* Whether r's user name and password are the auth file's (auth.h: in
 * constant time); counted as memcached counts them. */
static bool authenticate(struct session *c, const struct request *r)
{
	bool ok = auth_check(c->env->auth, r->user.p, r->user.n, r->arg.p,
			     r->arg.n);

	STAT_INC(c->stats, auth_cmds);
	if (ok)
		c->authed = true;
	else
		STAT_INC(c->stats, auth_errors);
	return ok;
}

/* auth [<user>] <password>, SASL PLAIN, the msgpack AUTH. A failure
 * leaves an authenticated connection authenticated. */
static void exec_auth(struct session *c, const struct request *r)
{
	if (!c->env->auth) {
		STAT_INC(c->stats, auth_cmds);
		REPLY(c)->status(c, r, REPLY_NO_PASSWORD, NULL);
	} else if (authenticate(c, r)) {
		REPLY(c)->status(c, r, REPLY_OK, NULL);
	} else {
		REPLY(c)->status(c, r, REPLY_AUTH_FAILED, NULL);
	}
}

/* memcached's ASCII handshake (proto/text_auth.h): a set, answered as
 * one, that stores nothing. */
static void exec_auth_set(struct session *c, const struct request *r)
{
	if (authenticate(c, r))
		REPLY(c)->stored(c, r, 0);
	else
		REPLY(c)->status(c, r, REPLY_CLIENT_ERROR,
				 PROTO_TEXT_AUTH_FAILURE);
}

/* Auth mechanisms (SASL LIST_MECHS): the protocol names them. */
static void exec_auth_mechs(struct session *c, const struct request *r)
{
	REPLY(c)->status(c, r, c->env->auth ? REPLY_OK : REPLY_NO_PASSWORD,
			 NULL);
}

static void exec_stats(struct session *c, const struct request *r)
{
	struct observe *obs = c->env->obs;
	const struct stats_query q = { r->arg.p, r->arg.n, r->args.p, r->args.n,
				       c };
	const struct stats_sink *sink;
	const char *bad;

	if (is_word(r->arg, "reset")) {
		observe_reset_stats(obs);
		REPLY(c)->status(c, r, REPLY_RESET, NULL);
		return;
	}
	if (is_word(r->arg, "cachedump") && c->env->cfg->disable_dumping) {
		REPLY(c)->status(c, r, REPLY_CLIENT_ERROR,
				 "stats cachedump not allowed"); /* -X */
		return;
	}
	if (is_word(r->arg, "detail") &&
	    (is_word(r->args, "on") || is_word(r->args, "off"))) {
		stats_detail_enable(obs, is_word(r->args, "on"));
		REPLY(c)->status(c, r, REPLY_OK, NULL);
		return;
	}
	bad = stats_args_error(&q);
	if (bad) {
		REPLY(c)->status(c, r, REPLY_CLIENT_ERROR, bad);
		return;
	}
	sink = REPLY(c)->stats_begin(c, r);
	REPLY(c)->stats_end(c, r, stats_emit(obs, &q, sink));
}

struct metadump_ctx {
	struct session *c;
	const struct request *r;
};

static void metadump_item(const struct item *it, void *arg)
{
	struct metadump_ctx *m = arg;
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	const struct proto_metadump_item mi = {
		.key = item_key(it),
		.nkey = it->nkey,
		.exp = exp ? (int64_t)exp : -1,
		.la = atomic_load_explicit(&it->atime, memory_order_relaxed),
		.cas = item_cas(it),
		.fetched =
			atomic_load_explicit(&it->usage, memory_order_relaxed) &
			ITEM_FETCHED,
		.cls = 1,
		.size = (uint32_t)item_size(it),
	};
	char line[PROTO_METADUMP_LINE_MAX];

	REPLY(m->c)->dump_line(m->c, m->r, line,
			       proto_text_metadump_line(line, &mi));
}

/* Whether a metadump's class list ("all", "hash", "1,3") takes class 1,
 * rhkvd's only one (stats.c). */
static bool metadump_wants_items(struct cache_key a)
{
	if (is_word(a, "all") || is_word(a, "hash"))
		return true;
	for (size_t i = 0; i < a.n;) {
		size_t j = i;

		while (j < a.n && a.p[j] != ',')
			j++;
		if (j - i == 1 && a.p[i] == '1')
			return true;
		i = j + 1;
	}
	return false;
}

/* Table walk steps of a dump until the output reaches --output-limit. */
void cmd_continue(struct session *c)
{
	/* The request is gone by now: the dump replies need none. */
	struct metadump_ctx m = { c, NULL };
	size_t hwm = c->env->cfg->output_hwm;

	if (!c->dumping)
		return;
	do
		c->dump_cursor = cache_scan(c->env->cache, c->dump_cursor, 256,
					    metadump_item, &m);
	while (c->dump_cursor && !c->broken &&
	       evbuffer_get_length(c->out) < hwm);
	if (!c->dump_cursor) {
		c->dumping = false;
		REPLY(c)->dump_end(c, NULL);
	}
}

/*
 * lru_crawler metadump: one line per live item, the whole table in hash
 * order (memcached walks its LRUs in a background thread). rhkvd writes
 * the lines on the connection's worker, a batch at a time as its output
 * drains, so a large cache's dump neither holds the worker nor grows the
 * output past --output-limit; the connection's next requests wait for the
 * dump's END. lru_crawler crawl: asks the expiry sweep for a pass now;
 * enable and disable start and pause it.
 */
static void exec_lru_crawler(struct session *c, const struct request *r)
{
	if (is_word(r->arg, "crawl")) {
		cache_crawl(c->env->cache);
		REPLY(c)->status(c, r, REPLY_OK, NULL);
		return;
	}
	if (is_word(r->arg, "enable") || is_word(r->arg, "disable")) {
		cache_sweep_enable(c->env->cache, is_word(r->arg, "enable"));
		REPLY(c)->status(c, r, REPLY_OK, NULL);
		return;
	}
	if (c->env->cfg->disable_dumping) {
		/* -X; REPLY_ERROR with a message prints the message alone. */
		REPLY(c)->status(c, r, REPLY_ERROR,
				 "ERROR metadump not allowed");
		return;
	}
	if (c->batch_ran) {
		REPLY(c)->status(c, r, REPLY_ERROR,
				 "ERROR cannot pipeline other commands before "
				 "metadump");
		return;
	}
	if (!metadump_wants_items(r->args)) {
		REPLY(c)->dump_end(c, r);
		return;
	}
	c->dumping = true;
	c->dump_cursor = 0;
	cmd_continue(c);
}

/* watch: the connection becomes a log stream (watch.h). */
static void exec_watch(struct session *c, const struct request *r)
{
	if (c->env->cfg->disable_watch) /* -W */
		REPLY(c)->status(c, r, REPLY_CLIENT_ERROR,
				 "watch commands not allowed");
	else if (c->batch_ran)
		REPLY(c)->status(c, r, REPLY_ERROR,
				 "ERROR cannot pipeline other commands before "
				 "watch");
	else if (!c->watch(c, r->flags))
		REPLY(c)->status(c, r, REPLY_SERVER_ERROR, "too many watchers");
	else
		REPLY(c)->status(c, r, REPLY_OK, NULL);
}

static void exec_flush_all(struct session *c, const struct request *r)
{
	if (c->env->cfg->disable_flush_all) {
		say(c, r, REPLY_CLIENT_ERROR, CMD_FLUSH_ALL_REFUSED);
		return;
	}
	STAT_INC(c->stats, cmd_flush);
	cache_flush(c->env->cache, r->delay);
	say(c, r, REPLY_OK, NULL);
}

/* flush_prefix, and meta's mf (its "HD"): a tombstone, O(1) in the items;
 * refused with flush_all under -F. */
static void exec_flush_prefix(struct session *c, const struct request *r)
{
	static const struct meta_result hd = { .code = META_HD };
	enum cache_result res;

	if (c->env->cfg->disable_flush_all) {
		say(c, r, REPLY_CLIENT_ERROR, CMD_FLUSH_PREFIX_REFUSED);
		return;
	}
	STAT_INC(c->stats, cmd_flush_prefix);
	res = cache_flush_prefix(c->env->cache, r->key);
	if (res == CACHE_STORED && r->cmd == REQ_MFLUSH_PREFIX)
		REPLY(c)->meta(c, r, &hd);
	else if (res == CACHE_STORED)
		say(c, r, REPLY_OK, NULL);
	else if (res == CACHE_NOT_STORED)
		say(c, r, REPLY_SERVER_ERROR,
		    "too many pending prefix flushes");
	else
		say(c, r, REPLY_SERVER_ERROR, "out of memory");
}

static void exec_version(struct session *c, const struct request *r)
{
	REPLY(c)->version(c, r, RHKV_VERSION);
}

static void exec_verbosity(struct session *c, const struct request *r)
{
	log_set_level(config_log_level((int)r->verbosity));
	say(c, r, REPLY_OK, NULL);
}

/* A limit above what the arena holds is capped there, and the reply says
 * so in memcached's words for a limit it cannot set (a client that asked
 * for more memory did not get it). */
static void exec_memlimit(struct session *c, const struct request *r)
{
	struct cache *cache = c->env->cache;
	uint64_t want = (uint64_t)r->memlimit << 20;
	uint64_t set = cache_set_limit(cache, want);
	struct cache_restore rs;
	char msg[120];

	if (set == want) {
		say(c, r, REPLY_OK, NULL);
		return;
	}
	cache_get_restore(cache, &rs);
	snprintf(msg, sizeof(msg),
		 "MEMLIMIT_ADJUST_FAILED maxbytes capped at %" PRIu64
		 "m: the %s holds no more",
		 set >> 20,
		 rs.how == CACHE_RESTORE_NONE
			 ? "address space reserved at start"
			 : "memory file");
	/* REPLY_ERROR with a message prints the message alone. */
	say(c, r, REPLY_ERROR, msg);
}

/*
 * shutdown [graceful], memcached's words: refused unless -A; with it, the
 * connection closes without a reply and the process gets SIGTERM, whose
 * handler on the main thread stops the server in order (main.c). Both
 * modes stop alike: rhkvd's stop is always the graceful one.
 */
static void exec_shutdown(struct session *c, const struct request *r)
{
	if (!c->env->cfg->enable_shutdown) {
		REPLY(c)->status(c, r, REPLY_ERROR,
				 "ERROR: shutdown not enabled");
		return;
	}
	if (r->arg.n != 0 &&
	    !(r->arg.n == 8 && memcmp(r->arg.p, "graceful", 8) == 0)) {
		REPLY(c)->status(c, r, REPLY_CLIENT_ERROR,
				 "invalid shutdown mode");
		return;
	}
	log_info("shutdown command on connection %d: stopping", c->fd);
	c->close_when_done = true;
	kill(getpid(), SIGTERM);
}

/* refresh_certs, memcached's command: the TLS certificate and key are
 * read again for new connections (the net layer's reload, which the
 * session's env holds); a bad file keeps the old. */
static void exec_refresh_certs(struct session *c, const struct request *r)
{
	static _Thread_local char msg[600];
	const char *err;

	if (!c->env->tls_reload) {
		say(c, r, REPLY_ERROR, "ERROR TLS is not enabled (--tls-port)");
		return;
	}
	err = c->env->tls_reload(c->env->tls_arg);
	if (!err) {
		say(c, r, REPLY_OK, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "ERROR %s", err);
	say(c, r, REPLY_ERROR, msg);
}

/* A class id `stats slabs` could name: 1, which holds every item, or 0,
 * memcached's pool of free pages. */
static bool slab_class_known(int32_t id)
{
	return id == 0 || id == 1;
}

/*
 * slabs automove and slabs reassign, memcached's slab tuning: rhkvd has no
 * slab classes to balance (every item shows in class 1, docs/stats.md), so
 * both change nothing and answer in memcached's words. automove: OK.
 * reassign: as memcached answers when no class has a page to spare (SAME
 * and BADCLASS checked first, as it does).
 */
static void exec_slabs(struct session *c, const struct request *r)
{
	const char *msg = "NOSPARE source class has no spare pages";

	if (is_word(r->arg, "automove")) {
		say(c, r, REPLY_OK, NULL);
		return;
	}
	if (r->slab_src == r->slab_dst)
		msg = "SAME src and dst class are identical";
	else if (!slab_class_known(r->slab_src) ||
		 !slab_class_known(r->slab_dst))
		msg = "BADCLASS invalid src or dst class id";
	/* REPLY_ERROR with a message prints the message alone. */
	say(c, r, REPLY_ERROR, msg);
}

static void exec_quit(struct session *c, const struct request *r)
{
	REPLY(c)->status(c, r, REPLY_BYE, NULL);
	c->close_when_done = true;
}

static void exec_noop(struct session *c, const struct request *r)
{
	REPLY(c)->status(c, r, REPLY_OK, NULL);
}

/* Every command: how it runs, and which latency histogram it counts in. */
static const struct {
	void (*exec)(struct session *c, const struct request *r);
	unsigned int latency;
} commands[REQ_NCMDS] = {
	[REQ_GET] = { exec_get, LAT_get },
	[REQ_GETS] = { exec_get, LAT_get },
	[REQ_GAT] = { exec_get, LAT_get },
	[REQ_GATS] = { exec_get, LAT_get },
	[REQ_SET] = { exec_store, LAT_set },
	[REQ_ADD] = { exec_store, LAT_set },
	[REQ_REPLACE] = { exec_store, LAT_set },
	[REQ_APPEND] = { exec_store, LAT_set },
	[REQ_PREPEND] = { exec_store, LAT_set },
	[REQ_CAS] = { exec_store, LAT_set },
	[REQ_DELETE] = { exec_delete, LAT_delete },
	[REQ_INCR] = { exec_incr, LAT_incr },
	[REQ_DECR] = { exec_incr, LAT_incr },
	[REQ_TOUCH] = { exec_touch, LAT_touch },
	[REQ_FLUSH_ALL] = { exec_flush_all, LAT_other },
	[REQ_FLUSH_PREFIX] = { exec_flush_prefix, LAT_other },
	[REQ_MFLUSH_PREFIX] = { exec_flush_prefix, LAT_other },
	[REQ_VERSION] = { exec_version, LAT_other },
	[REQ_VERBOSITY] = { exec_verbosity, LAT_other },
	[REQ_QUIT] = { exec_quit, LAT_other },
	[REQ_STATS] = { exec_stats, LAT_other },
	[REQ_SCAN] = { exec_scan, LAT_scan },
	[REQ_CACHE_MEMLIMIT] = { exec_memlimit, LAT_other },
	[REQ_AUTH] = { exec_auth, LAT_other },
	[REQ_AUTH_SET] = { exec_auth_set, LAT_other },
	[REQ_SHUTDOWN] = { exec_shutdown, LAT_other },
	[REQ_AUTH_MECHS] = { exec_auth_mechs, LAT_other },
	[REQ_NOOP] = { exec_noop, LAT_other },
	[REQ_LRU_CRAWLER] = { exec_lru_crawler, LAT_scan },
	[REQ_WATCH] = { exec_watch, LAT_other },
	[REQ_REFRESH_CERTS] = { exec_refresh_certs, LAT_other },
	[REQ_SLABS] = { exec_slabs, LAT_other },
	[REQ_MGET] = { cmd_mget, LAT_get },
	[REQ_MSET] = { cmd_mset, LAT_set },
	[REQ_MDELETE] = { cmd_mdelete, LAT_delete },
	[REQ_MARITH] = { cmd_marith, LAT_incr },
	[REQ_MDEBUG] = { cmd_mdebug, LAT_other },
	[REQ_MNOOP] = { cmd_mnoop, LAT_other },
};

/* `stats hotkeys`: a one-key request's class. A get counts each of its
 * keys as a read, in exec_get. */
static void note_hotkey(struct session *c, const struct request *r)
{
	switch (r->cmd) {
	case REQ_MGET:
		hotkeys_note(c->hot, HOTKEYS_READ, r->key);
		return;
	case REQ_SET:
	case REQ_ADD:
	case REQ_REPLACE:
	case REQ_APPEND:
	case REQ_PREPEND:
	case REQ_CAS:
	case REQ_DELETE:
	case REQ_INCR:
	case REQ_DECR:
	case REQ_TOUCH:
	case REQ_MSET:
	case REQ_MDELETE:
	case REQ_MARITH:
		hotkeys_note(c->hot, HOTKEYS_WRITE, r->key);
		return;
	default:
		return;
	}
}

void cmd_execute(struct session *c, const struct request *r)
{
	note_hotkey(c, r);
	commands[r->cmd].exec(c, r);
}

void cmd_too_large(struct session *c, const struct request *r)
{
	if (!c->authed) {
		REPLY(c)->status(c, r, REPLY_AUTH_REQUIRED, NULL);
		return;
	}
	STAT_INC(c->stats, store_too_large);
	watch_stored(c, r, "too_large");
	say(c, r, REPLY_TOO_LARGE, NULL);
	/* memcached drops the old value on a too-large ms of any mode. */
	if (r->cmd == REQ_SET || r->cmd == REQ_MSET)
		cache_delete(c->env->cache, r->key);
}

unsigned int cmd_latency_class(const struct request *r)
{
	return commands[r->cmd].latency;
}
