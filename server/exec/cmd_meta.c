/*
 * The executor's meta commands (request.h: REQ_MGET .. REQ_MNOOP): get,
 * set, delete and arithmetic with memcached's meta options, whatever the
 * protocol that sent them. Each fills a struct meta_result and hands it to
 * the protocol's meta reply (protocol.h), which spells it and applies
 * quiet mode. Counted in stats and latency as their classic equivalents.
 *
 * Stale-while-revalidate rests on two item bits (cache.h): ITEM_STALE,
 * set on the copy an invalidation (md I, ms I) links, and ITEM_WON, which
 * cache_item_win() sets atomically, so that exactly one fetcher of a stale
 * or nearly expired item, or of one vivified on a miss, is told it won (W)
 * and every later one that another has (Z).
 */
#include <inttypes.h>
#include <stdio.h>

#include "cmd_meta.h"
#include "session.h"
#include "reply.h"
#include "cache.h"
#include "config.h"
#include "observe.h"

#define REPLY(c) ((c)->reply)

/* Seconds left of a stored exptime (0: none, -1 answered). memcached
 * prints them as an unsigned 32-bit number: an item that a T in the same
 * request expired shows a huge TTL, not a negative one. */
static int64_t ttl_of(uint32_t exptime, int64_t now)
{
	return exptime ? (int64_t)(uint32_t)((int64_t)exptime - now) : -1;
}

/* What ttl_of() shows right after a T or N of this protocol exptime sets
 * an item's (the same stored form as cache_item_set_exptime's): N30 shows
 * t30 whatever second the clock turns to meanwhile. */
static int64_t ttl_given(int64_t exptime, int64_t now)
{
	int64_t abs = cache_abs_exptime_at(exptime, now);

	if (abs == 0)
		return -1;
	return ttl_of(abs < 0		 ? 1
		      : abs > UINT32_MAX ? UINT32_MAX
					 : (uint32_t)abs,
		      now);
}

/* A miss with N: an empty item, its recache already won by this caller.
 * It is made without a TTL, as memcached makes it, and mget_hit() gives it
 * N's (or a later T's): one already run out (N-1) would otherwise be the
 * expiry sweep's to take before this request has answered from it.
 * Returns the new item's write sequence (which tells it apart from any
 * later item of the key), 0 when another got in first. */
static uint64_t vivify(struct session *c, const struct request *r)
{
	uint64_t seq = 0;
	const struct cache_write w = {
		.mode = CACHE_ADD,
		.key = r->key,
		.exptime = 0,
		.value = "",
		.cas_new = r->meta->has_new_cas ? r->meta->new_cas : 0,
		.marks = r->meta->no_win ? 0 : ITEM_WON,
		.seq_out = &seq,
	};

	if (cache_write(c->env->cache, c->thread, &w, NULL) != CACHE_STORED)
		return 0;
	return seq;
}

/* What a hit tells (mg), and the win: inside the read-side section. */
static void mget_hit(struct session *c, const struct request *r,
		     struct item *it, bool created, struct meta_result *m)
{
	const struct req_meta *q = r->meta;
	/* The clock only when an answer or a decision needs it. */
	int64_t now = (q->ret & (META_RET_TTL | META_RET_LAST)) ||
				      q->has_recache || q->has_ttl
			      ? cache_now()
			      : 0;
	uint8_t usage = atomic_load_explicit(&it->usage, memory_order_relaxed);
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	uint32_t atime = atomic_load_explicit(&it->atime, memory_order_relaxed);
	uint32_t exp_now = exp;

	/* On a vivified item, T and N both set the TTL: the later one
	 * applies. */
	if (created || q->has_ttl) {
		int64_t e = created && !(q->has_ttl && q->ttl_last)
				    ? q->vivify_ttl
				    : q->ttl;

		cache_item_set_exptime(c->env->cache, it, cache_abs_exptime(e));
		exp_now = atomic_load_explicit(&it->exptime,
					       memory_order_relaxed);
	}
	*m = (struct meta_result){
		.code = (q->ret & META_RET_VALUE) ? META_VA : META_HD,
		.have_item = true,
		.it = (q->ret & META_RET_VALUE) ? it : NULL,
		.value_len = item_nbytes(it),
		.cas = item_cas(it),
		.flags = item_flags(it),
		.ttl = ttl_of(exp_now, now),
		.ttl_before = created ? -1 : ttl_of(exp, now),
		.ttl_set = q->has_ttl ? ttl_given(q->ttl, now) : -1,
		.ttl_vivify = created ? ttl_given(q->vivify_ttl, now) : -1,
		.created = created,
		.size = item_nbytes(it),
		.last_access = now > atime ? (uint32_t)(now - atime) : 0,
		.hit_before = usage & ITEM_FETCHED,
		.key_binary = usage & ITEM_KEY_BINARY,
		.stale = usage & ITEM_STALE,
	};
	if (q->no_win) {
		/* no win handed out: the reply is an error */
	} else if (created) {
		m->won = true; /* vivify made it with ITEM_WON set */
	} else if (usage & ITEM_WON) {
		m->already_won = true;
	} else {
		uint32_t e = q->ttl_before_recache ? exp_now : exp;
		bool due = q->has_recache && e != 0 &&
			   (int64_t)e < cache_abs_exptime(q->recache_ttl);

		if ((usage & ITEM_STALE) || due) {
			m->won = cache_item_win(it);
			m->already_won = !m->won;
		}
	}
	/* memcached bumps an item whose request has N, T, R, h or l only
	 * after the reply is built, which a too long opaque stops short of:
	 * the item then stays unfetched (a later h answers h0). */
	bool bump_after = q->has_vivify || q->has_ttl || q->has_recache ||
			  (q->ret & (META_RET_HIT | META_RET_LAST));
	if (!q->no_bump && !(q->no_win && bump_after))
		cache_item_visit(it);
}

void cmd_mget(struct session *c, const struct request *r)
{
	struct cache *cache = c->env->cache;
	struct thread_stats *st = c->stats;
	struct meta_result m = { .code = META_EN };
	uint64_t created_seq = 0;
	bool expired = false;
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_lookup(cache, r->key, &expired);
	if (!it && r->meta->has_vivify) {
		rhkv_rcu_read_unlock();
		if (expired)
			cache_reap(cache, r->key);
		expired = false;
		created_seq = vivify(c, r);
		rhkv_rcu_read_lock();
		it = cache_lookup(cache, r->key, NULL);
	}
	if (it)
		mget_hit(c, r, it, created_seq && it->cas == created_seq, &m);
	REPLY(c)->meta(c, r, &m);
	rhkv_rcu_read_unlock();

	if (watch_wants(&c->env->obs->watch, PROTO_WATCH_FETCHERS))
		watch_fetch(&c->env->obs->watch, c->fd, r->key.p, r->key.n,
			    m.have_item, m.size);
	observe_detail(c->env->obs, r->key, DETAIL_GET, m.have_item);
	if (r->meta->has_ttl) {
		STAT_INC(st, cmd_touch);
		m.have_item ? STAT_INC(st, touch_hits)
			    : STAT_INC(st, touch_misses);
	} else {
		STAT_INC(st, cmd_get);
		m.have_item ? STAT_INC(st, get_hits) : STAT_INC(st, get_misses);
	}
	if (expired) {
		if (cache_reap(cache, r->key))
			STAT_INC(st, get_flushed);
		else
			STAT_INC(st, get_expired);
	}
}

static enum cache_store_mode mset_mode(const struct req_meta *q)
{
	switch (q->mode) {
	case 'E':
		return CACHE_ADD;
	case 'A':
		return CACHE_APPEND;
	case 'P':
		return CACHE_PREPEND;
	case 'R':
		/* Replace with a cas is a cas: a missing item is NF. */
		return q->has_cas ? CACHE_CAS : CACHE_REPLACE;
	default:
		return q->has_cas ? CACHE_CAS : CACHE_SET;
	}
}

void cmd_mset(struct session *c, const struct request *r)
{
	const struct req_meta *q = r->meta;
	struct thread_stats *st = c->stats;
	enum cache_store_mode mode = mset_mode(q);
	/* s: the stored value's length; the request's when nothing was. */
	struct meta_result m = { .code = META_NS, .size = r->nbytes };
	const struct cache_write w = {
		.mode = mode,
		.key = r->key,
		.flags = r->flags,
		.exptime = cache_abs_exptime(r->exptime),
		.value = r->value,
		.nbytes = r->nbytes,
		/* add ignores a cas; append and prepend compare it */
		.cas_in = q->has_cas && mode != CACHE_ADD ? r->cas : 0,
		.cas_new = q->has_new_cas ? q->new_cas : 0,
		.marks = q->key_binary ? ITEM_KEY_BINARY : 0,
		.stale_if_older = q->invalidate && mode == CACHE_CAS,
		.vivify = q->has_vivify,
		.vivify_exptime = cache_abs_exptime(q->vivify_ttl),
		.nbytes_max = c->env->cfg->max_item_size,
		.nbytes_out = &m.size,
		/* A large value received straight into its item (conn.c) is
		 * stored as it is, as the classic set stores it: no second
		 * item, no copy. */
		.landed = r->landed,
	};
	uint64_t cas = 0;
	enum cache_result res;

	STAT_INC(st, cmd_set);
	observe_detail(c->env->obs, r->key, DETAIL_SET, false);
	res = cache_write(c->env->cache, c->thread, &w, &cas);
	cmd_watch_store(c, r->key, mode, cmd_store_word(res), w.exptime,
			r->nbytes);
	switch (res) {
	case CACHE_STORED:
		STAT_INC(st, total_items);
		if (mode == CACHE_CAS)
			STAT_INC(st, cas_hits);
		m.code = META_HD;
		m.cas = cas;
		break;
	case CACHE_EXISTS:
		if (mode == CACHE_CAS)
			STAT_INC(st, cas_badval);
		m.code = META_EX;
		break;
	case CACHE_NOT_FOUND:
		STAT_INC(st, cas_misses);
		m.code = META_NF;
		break;
	case CACHE_NO_MEMORY:
		STAT_INC(st, store_no_memory);
		REPLY(c)->status(c, r, REPLY_NO_MEMORY,
				 "out of memory storing object");
		return;
	default:
		break;
	}
	REPLY(c)->meta(c, r, &m);
}

void cmd_mdelete(struct session *c, const struct request *r)
{
	const struct req_meta *q = r->meta;
	struct cache *cache = c->env->cache;
	uint64_t cas_in = q->has_cas ? r->cas : 0;
	struct meta_result m = { .code = META_NF };
	enum cache_result res;

	/* C0 compares too (no item has cas 0): only a miss is NF. */
	if (q->has_cas && r->cas == 0)
		res = cache_exists(cache, r->key) ? CACHE_EXISTS
						  : CACHE_NOT_FOUND;
	else if (q->drop_value) {
		/* x: an empty value with md's own F and T, the cas kept. */
		const struct cache_empty e = {
			.cas_in = cas_in,
			.flags = r->flags,
			.exptime = q->has_ttl ? cache_abs_exptime(q->ttl) : 0,
			.cas_new = q->has_new_cas ? q->new_cas : 0,
			.stale = q->invalidate,
		};

		res = cache_empty_value(cache, c->thread, r->key, &e, NULL);
	} else if (q->invalidate)
		res = cache_invalidate(cache, c->thread, r->key, cas_in,
				       q->has_ttl, cache_abs_exptime(q->ttl),
				       q->has_new_cas ? q->new_cas : 0, NULL);
	else
		res = cache_delete_cas(cache, r->key, cas_in);
	observe_detail(c->env->obs, r->key, DETAIL_DEL, false);
	switch (res) {
	case CACHE_STORED:
		STAT_INC(c->stats, delete_hits);
		m.code = META_HD;
		break;
	case CACHE_EXISTS:
		STAT_INC(c->stats, delete_misses);
		m.code = META_EX;
		break;
	case CACHE_NO_MEMORY:
		REPLY(c)->status(c, r, REPLY_NO_MEMORY, "out of memory");
		return;
	default:
		STAT_INC(c->stats, delete_misses);
		break;
	}
	REPLY(c)->meta(c, r, &m);
}

/* ma N on a miss: stores the initial value; false when another store got
 * in first (the caller counts again). */
static bool marith_create(struct session *c, const struct request *r,
			  struct cache_incr_out *out)
{
	const struct req_meta *q = r->meta;
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, r->initial);
	/* T and N both set the new item's TTL: the later one applies. */
	int64_t ttl = q->has_ttl && q->ttl_last ? q->ttl : q->vivify_ttl;
	const struct cache_write w = {
		.mode = CACHE_ADD,
		.key = r->key,
		.exptime = cache_abs_exptime(ttl),
		.value = num,
		.nbytes = (uint32_t)n,
		.cas_new = q->has_new_cas ? q->new_cas : 0,
	};
	enum cache_result res;

	res = cache_write(c->env->cache, c->thread, &w, &out->cas);
	out->value = r->initial;
	out->exptime_before = 0;
	/* stored form: 0 never, 1 already expired (N-1) */
	out->exptime = w.exptime == 0  ? 0
		       : w.exptime < 0 ? 1
				       : (uint32_t)w.exptime;
	return res != CACHE_NOT_STORED;
}

void cmd_marith(struct session *c, const struct request *r)
{
	const struct req_meta *q = r->meta;
	struct thread_stats *st = c->stats;
	bool incr = q->mode != 'D' && q->mode != '-';
	struct cache_incr_out out = { 0 };
	struct meta_result m = { .code = META_NF };
	enum cache_result res = CACHE_NOT_FOUND;
	bool created = false;
	char digits[24];
	int64_t now;

	/* A create that loses a race with another store: count again. */
	for (int tries = 0; tries < 2 && !created; tries++) {
		res = cache_incr_meta(c->env->cache, c->thread, r->key, incr,
				      r->delta, q->has_cas ? r->cas : 0,
				      q->has_ttl, cache_abs_exptime(q->ttl),
				      q->has_new_cas ? q->new_cas : 0, &out);
		if (res != CACHE_NOT_FOUND || !q->has_vivify)
			break;
		created = marith_create(c, r, &out);
		res = created ? CACHE_STORED : res;
	}
	switch (res) {
	case CACHE_STORED:
		STAT_ARITH(st, incr, !created);
		break;
	case CACHE_NOT_FOUND:
		STAT_ARITH(st, incr, false);
		REPLY(c)->meta(c, r, &m);
		return;
	case CACHE_EXISTS:
		m.code = META_EX;
		REPLY(c)->meta(c, r, &m);
		return;
	case CACHE_NON_NUMERIC:
		REPLY(c)->status(c, r, REPLY_NON_NUMERIC, NULL);
		return;
	default:
		REPLY(c)->status(c, r, REPLY_NO_MEMORY, "out of memory");
		return;
	}
	now = cache_now();
	m = (struct meta_result){
		.code = (q->ret & META_RET_VALUE) ? META_VA : META_HD,
		.have_item = true,
		.value = digits,
		.value_len = (uint32_t)snprintf(digits, sizeof(digits),
						"%" PRIu64, out.value),
		.cas = out.cas,
		.ttl = ttl_of(out.exptime, now),
		.ttl_before = created ? -1 : ttl_of(out.exptime_before, now),
		.ttl_set = q->has_ttl ? ttl_given(q->ttl, now) : -1,
		.ttl_vivify = created ? ttl_given(q->vivify_ttl, now) : -1,
		.created = created,
	};
	REPLY(c)->meta(c, r, &m);
}

/* me: the item as memcached's debug line shows it; no access recorded. */
void cmd_mdebug(struct session *c, const struct request *r)
{
	struct meta_result m = { .code = META_EN };
	int64_t now = cache_now();
	struct item *it;

	STAT_INC(c->stats, cmd_meta);
	rhkv_rcu_read_lock();
	it = cache_lookup(c->env->cache, r->key, NULL);
	if (it) {
		uint8_t usage =
			atomic_load_explicit(&it->usage, memory_order_relaxed);
		uint32_t atime =
			atomic_load_explicit(&it->atime, memory_order_relaxed);

		m = (struct meta_result){
			.code = META_ME,
			.have_item = true,
			.cas = item_cas(it),
			.ttl = ttl_of(
				atomic_load_explicit(&it->exptime,
						     memory_order_relaxed),
				now),
			.size = (uint32_t)item_size(it),
			.last_access =
				now > atime ? (uint32_t)(now - atime) : 0,
			.hit_before = usage & ITEM_FETCHED,
			.key_binary = usage & ITEM_KEY_BINARY,
		};
	}
	REPLY(c)->meta(c, r, &m);
	rhkv_rcu_read_unlock();
}

void cmd_mnoop(struct session *c, const struct request *r)
{
	const struct meta_result m = { .code = META_HD };

	REPLY(c)->meta(c, r, &m);
}
