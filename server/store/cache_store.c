/*
 * The cache's writes: the store modes (set, add, replace, append, prepend,
 * cas), incr/decr and delete. Each builds a new item, reserves its bytes,
 * and links it in place of the old one, retrying when another writer of
 * the key got in between.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache_internal.h"

static uint64_t next_cas(struct cache *c, unsigned int thread)
{
	/* Unique without a shared counter: sequence * threads + thread. */
	uint64_t seq = atomic_load_explicit(&c->cas_seq[thread].v,
					    memory_order_relaxed) +
		       1;

	/* A flush whose time has come applies before this write. */
	cache__flush_if_due(c);
	atomic_store_explicit(&c->cas_seq[thread].v, seq, memory_order_relaxed);
	return seq * c->threads + thread + 1;
}

/* What one attempt of a write asks of its caller, outside the read-side
 * section: make room, or try again. */
struct attempt {
	struct cache_room need; /* room to make (bytes 0: none) */
	bool retry;
};

/*
 * A new unlinked item for writer thread, or NULL: when there was no room
 * *a asks the caller to make some and try again (and *res is meaningless);
 * else the allocator refused (*res CACHE_NO_MEMORY).
 */
static struct item *alloc_item(struct cache *c, unsigned int thread,
			       struct cache_key key, uint32_t flags,
			       uint32_t exptime, uint32_t nbytes,
			       bool room_for_cas, struct attempt *a)
{
	struct cache_room need;
	struct item *it = cache__item_alloc(c, thread, key, flags, exptime,
					    nbytes, room_for_cas, &need);

	if (!it && need.bytes) {
		a->need = need;
		a->retry = true;
	}
	return it;
}

/* The result of an attempt whose item could not be allocated. */
static enum cache_result no_item(const struct attempt *a)
{
	return a->retry ? CACHE_NOT_STORED : CACHE_NO_MEMORY;
}

/* Builds the item a write would put in place of old (or none). */
static struct item *build(struct cache *c, unsigned int thread,
			  const struct cache_write *w, uint32_t exptime,
			  const struct item *old, struct attempt *a)
{
	struct cache_key key = w->key;
	bool join =
		old && (w->mode == CACHE_APPEND || w->mode == CACHE_PREPEND);
	struct item *it;

	if (!join && w->landed) {
		/* The value is in place already: only the times are set. */
		it = *w->landed;
		atomic_store_explicit(&it->exptime, exptime,
				      memory_order_relaxed);
		atomic_store_explicit(&it->atime, (uint32_t)cache_now(),
				      memory_order_relaxed);
	} else if (!join) {
		it = alloc_item(c, thread, key, w->flags, exptime, w->nbytes,
				w->cas_new != 0, a);
		if (it)
			memcpy(cache__item_value_w(it), w->value, w->nbytes);
	} else {
		/* Append and prepend keep the old flags and exptime. */
		uint32_t old_n = item_nbytes(old);
		uint64_t total = (uint64_t)old_n + w->nbytes;

		if (total > UINT32_MAX)
			return NULL;
		it = alloc_item(c, thread, key, item_flags(old),
				atomic_load_explicit(&old->exptime,
						     memory_order_relaxed),
				(uint32_t)total, w->cas_new != 0, a);
		if (!it)
			return NULL;
		char *dst = cache__item_value_w(it);
		if (w->mode == CACHE_APPEND) {
			memcpy(dst, item_value(old), old_n);
			memcpy(dst + old_n, w->value, w->nbytes);
		} else {
			memcpy(dst, w->value, w->nbytes);
			memcpy(dst + w->nbytes, item_value(old), old_n);
		}
	}
	if (it) {
		it->cas = next_cas(c, thread);
		/* memcached's joined item is a new one whose key is not marked
		 * binary, whichever way the old one or the request spelled it
		 * (mg k then answers it plain). */
		cache__item_set_marks(it, join ? w->marks & ~ITEM_KEY_BINARY
					       : w->marks);
		if (w->cas_new)
			cache__item_choose_cas(it, w->cas_new);
	}
	return it;
}

/*
 * Links fresh in place of old (NULL: a new key), inside the read-side
 * section. On failure (another writer got in first) fresh goes back (a
 * landed item is kept for the next attempt) and the caller is asked to
 * decide again.
 */
static bool place(struct cache *c, unsigned int thread, struct cache_key key,
		  struct item *old, struct item *fresh, bool landed,
		  struct attempt *a)
{
	if (old ? rhashtable_replace_fast(&c->ht, &old->node, &fresh->node,
					  cache__params) != 0
		: rhashtable_lookup_get_insert_key(&c->ht, &key, &fresh->node,
						   cache__params) != NULL) {
		if (!landed)
			cache__item_discard(c, thread, fresh);
		a->retry = true;
		return false;
	}
	cache__item_linked(c, fresh);
	if (old)
		cache__item_unlinked(c, old);
	if (atomic_load_explicit(&fresh->exptime, memory_order_relaxed))
		atomic_store_explicit(&c->sweep_wanted, true,
				      memory_order_relaxed);
	return true;
}

struct rewrite;
struct incr_req;

/*
 * One write of any kind (store, rewrite, incr) as run() retries it: once()
 * is an attempt inside a read-side section; the fields are the kind's own.
 */
struct job {
	enum cache_result (*once)(struct cache *c, const struct job *j,
				  struct attempt *a);
	unsigned int thread;
	struct cache_key key;
	uint64_t *cas_out;
	const struct cache_write *w; /* store */
	const struct rewrite *rw;    /* rewrite */
	uint64_t cas_in;	     /* rewrite */
	const struct incr_req *q;    /* incr */
	struct cache_incr_out *out;  /* incr */
};

static enum cache_result store_once(struct cache *c, const struct job *j,
				    struct attempt *a)
{
	unsigned int thread = j->thread;
	const struct cache_write *w = j->w;
	uint64_t *cas_out = j->cas_out;
	struct item *old = rhashtable_lookup(&c->ht, &w->key, cache__params);
	bool live = old && cache_item_live(c, old, cache_now());
	enum cache_store_mode mode = w->mode;
	uint32_t exptime = cache__exptime_u32(w->exptime);
	struct cache_write stale;
	struct item *fresh;
	bool landed;

	if (!live && w->vivify &&
	    (mode == CACHE_APPEND || mode == CACHE_PREPEND))
		exptime = cache__exptime_u32(w->vivify_exptime);
	else if (!live && (mode == CACHE_REPLACE || mode == CACHE_APPEND ||
			   mode == CACHE_PREPEND))
		return CACHE_NOT_STORED;
	if (!live && mode == CACHE_CAS)
		return CACHE_NOT_FOUND;
	if (live && mode == CACHE_ADD)
		return CACHE_NOT_STORED;
	if (live && (mode == CACHE_APPEND || mode == CACHE_PREPEND) &&
	    w->cas_in && item_cas(old) != w->cas_in)
		return CACHE_EXISTS;
	if (live && (mode == CACHE_APPEND || mode == CACHE_PREPEND) &&
	    w->nbytes_max &&
	    (uint64_t)item_nbytes(old) + w->nbytes > w->nbytes_max)
		return CACHE_NOT_STORED;
	if (live && mode == CACHE_CAS && item_cas(old) != w->cas_in) {
		/* cas 0 is no cas to memcached: in cas mode it neither
		 * matches nor counts as older (ms C0 I is EX). */
		if (!w->stale_if_older || w->cas_in == 0 ||
		    w->cas_in > item_cas(old))
			return CACHE_EXISTS;
		/* An older writer's value, kept but flagged stale: the old
		 * item's exptime and recache winner stay. */
		stale = *w;
		stale.marks |= ITEM_STALE |
			       (atomic_load_explicit(&old->usage,
						     memory_order_relaxed) &
				ITEM_WON);
		exptime = atomic_load_explicit(&old->exptime,
					       memory_order_relaxed);
		w = &stale;
	}
	fresh = build(c, thread, w, exptime, live ? old : NULL, a);
	if (!fresh)
		return no_item(a);
	if (cas_out)
		*cas_out = item_cas(fresh); /* before linking: then it may go */
	if (w->nbytes_out)
		*w->nbytes_out = item_nbytes(fresh);
	if (w->seq_out)
		*w->seq_out = fresh->cas;
	landed = w->landed && fresh == *w->landed;
	if (!place(c, thread, w->key, old, fresh, landed, a))
		return CACHE_NOT_STORED;
	if (landed)
		*w->landed = NULL; /* linked: the table's now */
	return CACHE_STORED;
}

/* After an attempt, outside the read-side section. False: give up with
 * CACHE_NO_MEMORY (the item cannot fit even in an empty cache). */
static bool settle(struct cache *c, struct attempt *a, unsigned int *tries)
{
	if (a->need.bytes) {
		struct cache_room need = a->need;

		a->need.bytes = 0;
		/* Writers racing for the same room: bounded retries. */
		if (!cache__make_room(c, need) || ++*tries > 100)
			return false;
	}
	return true;
}

/* Attempts j until it settles: retried when another writer got in first
 * or room was made for it. */
static enum cache_result run(struct cache *c, const struct job *j)
{
	struct attempt a = { 0 };
	unsigned int tries = 0;
	enum cache_result res;

	do {
		a.retry = false;
		rhkv_rcu_read_lock();
		res = j->once(c, j, &a);
		rhkv_rcu_read_unlock();
		if (!settle(c, &a, &tries))
			return CACHE_NO_MEMORY;
	} while (a.retry);
	return res;
}

enum cache_result cache_write(struct cache *c, unsigned int thread,
			      const struct cache_write *w, uint64_t *cas_out)
{
	const struct job j = { .once = store_once,
			       .thread = thread,
			       .key = w->key,
			       .cas_out = cas_out,
			       .w = w };
	enum cache_result res = run(c, &j);

	/* Not linked (refused, or an append's source): freed. */
	if (w->landed && *w->landed) {
		cache__item_discard(c, thread, *w->landed);
		*w->landed = NULL;
	}
	return res;
}

struct item *cache_landing_new(struct cache *c, unsigned int thread,
			       struct cache_key key, uint32_t flags,
			       uint32_t nbytes)
{
	unsigned int tries = 0;
	struct cache_room need;
	struct item *it;

	if (nbytes <= ITEM_SEG_VALUE_MAX)
		return NULL;
	/* With room for a chosen cas: whether the write will choose one is
	 * not known yet (8 bytes of a large allocation). */
	while (!(it = cache__item_alloc(c, thread, key, flags, 0, nbytes, true,
					&need))) {
		/* As settle(): room made, then a bounded number of tries. */
		if (!need.bytes || !cache__make_room(c, need) || ++tries > 100)
			return NULL;
	}
	return it;
}

char *cache_landing_value(struct item *it)
{
	return cache__item_value_w(it);
}

void cache_landing_free(struct cache *c, unsigned int thread, struct item *it)
{
	cache__item_discard(c, thread, it);
}

enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in, uint64_t *cas_out)
{
	const struct cache_write w = {
		.mode = mode,
		.key = key,
		.flags = flags,
		.exptime = exptime,
		.value = value,
		.nbytes = nbytes,
		/* The classic append and prepend compare no cas. */
		.cas_in = mode == CACHE_CAS ? cas_in : 0,
	};

	return cache_write(c, thread, &w, cas_out);
}

bool cache_delete(struct cache *c, struct cache_key key)
{
	bool live = false;

	rhkv_rcu_read_lock();
	for (;;) {
		struct item *it =
			rhashtable_lookup(&c->ht, &key, cache__params);

		if (!it)
			break;
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache__params)) {
			live = cache_item_live(c, it, cache_now());
			cache__item_unlinked(c, it);
			break;
		}
	}
	rhkv_rcu_read_unlock();
	return live;
}

enum cache_result cache_delete_cas(struct cache *c, struct cache_key key,
				   uint64_t cas_in)
{
	enum cache_result res = CACHE_NOT_FOUND;

	rhkv_rcu_read_lock();
	for (;;) {
		struct item *it = cache_lookup(c, key, NULL);

		if (!it)
			break;
		if (cas_in && item_cas(it) != cas_in) {
			res = CACHE_EXISTS;
			break;
		}
		/* Fails when a writer replaced this very item: look again. */
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache__params)) {
			cache__item_unlinked(c, it);
			res = CACHE_STORED;
			break;
		}
	}
	rhkv_rcu_read_unlock();
	return res;
}

/* A copy of the live item old with value bytes [0, nbytes) of it, for the
 * meta writes that change an item's marks or drop its value. */
static struct item *copy_item(struct cache *c, unsigned int thread,
			      const struct item *old, struct cache_key key,
			      uint32_t nbytes, uint32_t flags, uint32_t exptime,
			      bool room_for_cas, struct attempt *a)
{
	struct item *it = alloc_item(c, thread, key, flags, exptime, nbytes,
				     room_for_cas, a);

	if (it)
		memcpy(cache__item_value_w(it), item_value(old), nbytes);
	return it;
}

/* What a meta rewrite of one item does to it (cache_invalidate,
 * cache_empty_value). */
struct rewrite {
	bool invalidate; /* stale, recache winner cleared */
	bool empty;	 /* a new empty value with flags; cas kept */
	bool set_exptime;
	uint32_t exptime;
	uint32_t flags; /* empty only */
	uint64_t cas_new;
};

static enum cache_result rewrite_once(struct cache *c, const struct job *j,
				      struct attempt *a)
{
	unsigned int thread = j->thread;
	struct cache_key key = j->key;
	uint64_t cas_in = j->cas_in;
	const struct rewrite *rw = j->rw;
	uint64_t *cas_out = j->cas_out;
	struct item *old = cache_lookup(c, key, NULL), *fresh;
	uint64_t chosen;
	uint8_t usage;

	if (!old)
		return CACHE_NOT_FOUND;
	if (cas_in && item_cas(old) != cas_in)
		return CACHE_EXISTS;
	usage = atomic_load_explicit(&old->usage, memory_order_relaxed);
	/* An emptied item keeps its cas, a chosen one included. */
	chosen = rw->cas_new				  ? rw->cas_new
		 : rw->empty && (usage & ITEM_CAS_CHOSEN) ? item_cas(old)
							  : 0;
	fresh = copy_item(c, thread, old, key, rw->empty ? 0 : item_nbytes(old),
			  rw->empty ? rw->flags : item_flags(old),
			  rw->set_exptime
				  ? rw->exptime
				  : atomic_load_explicit(&old->exptime,
							 memory_order_relaxed),
			  chosen != 0, a);
	if (!fresh)
		return no_item(a);
	/* An emptied item starts afresh but for its key; an invalidated
	 * one is stale, and the next fetcher wins the recache. */
	usage &= rw->empty ? ITEM_KEY_BINARY
			   : ITEM_KEY_BINARY | ITEM_FETCHED | ITEM_STALE |
				     ITEM_WON;
	if (rw->invalidate)
		usage = (uint8_t)((usage | ITEM_STALE) & ~ITEM_WON);
	cache__item_set_marks(fresh, usage);
	if (!rw->empty)
		atomic_init(&fresh->atime,
			    atomic_load_explicit(&old->atime,
						 memory_order_relaxed));
	fresh->cas = rw->empty ? old->cas : next_cas(c, thread);
	if (chosen)
		cache__item_choose_cas(fresh, chosen);
	if (cas_out)
		*cas_out = item_cas(fresh);
	return place(c, thread, key, old, fresh, false, a) ? CACHE_STORED
							   : CACHE_NOT_STORED;
}

static enum cache_result rewrite(struct cache *c, unsigned int thread,
				 struct cache_key key, uint64_t cas_in,
				 const struct rewrite *rw, uint64_t *cas_out)
{
	const struct job j = { .once = rewrite_once,
			       .thread = thread,
			       .key = key,
			       .cas_out = cas_out,
			       .rw = rw,
			       .cas_in = cas_in };

	return run(c, &j);
}

enum cache_result cache_invalidate(struct cache *c, unsigned int thread,
				   struct cache_key key, uint64_t cas_in,
				   bool set_exptime, int64_t exptime,
				   uint64_t cas_new, uint64_t *cas_out)
{
	const struct rewrite rw = { .invalidate = true,
				    .set_exptime = set_exptime,
				    .exptime = cache__exptime_u32(exptime),
				    .cas_new = cas_new };

	return rewrite(c, thread, key, cas_in, &rw, cas_out);
}

enum cache_result cache_empty_value(struct cache *c, unsigned int thread,
				    struct cache_key key,
				    const struct cache_empty *e,
				    uint64_t *cas_out)
{
	const struct rewrite rw = {
		.invalidate = e->stale,
		.empty = true,
		.set_exptime = true,
		.exptime = cache__exptime_u32(e->exptime),
		.flags = e->flags,
		.cas_new = e->cas_new,
	};

	return rewrite(c, thread, key, e->cas_in, &rw, cas_out);
}

/*
 * memcached's rule, strtoull's over the value: optional white space, an
 * optional sign, decimal digits that fit in 64 bits, then the value's end,
 * a white space or a NUL (after which anything goes: " 12", "12 " and
 * "1\0002" are numbers). A minus sign is refused unless the number is 0.
 */
static bool is_space(char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	size_t i = 0, start;
	bool neg = false;
	uint64_t v = 0;

	while (i < n && is_space(s[i]))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	start = i;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == start || (i < n && !is_space(s[i]) && s[i] != '\0'))
		return false;
	if (neg && v != 0)
		return false;
	*out = v;
	return true;
}

/* What one incr/decr asks (cache_incr, cache_incr_meta). */
struct incr_req {
	bool incr;
	uint64_t delta, cas_in;
	bool set_exptime;
	uint32_t exptime;
	uint64_t cas_new;
};

static enum cache_result incr_once(struct cache *c, const struct job *j,
				   struct attempt *a)
{
	unsigned int thread = j->thread;
	struct cache_key key = j->key;
	const struct incr_req *q = j->q;
	struct cache_incr_out *out = j->out;
	/* No access recorded: memcached's incr leaves "fetched" alone. */
	struct item *old = cache_lookup(c, key, NULL), *fresh;
	uint32_t exptime;
	char num[24];
	uint64_t v;
	int len, width;

	if (!old)
		return CACHE_NOT_FOUND;
	/* memcached refuses an empty value before it compares the cas */
	if (item_nbytes(old) == 0)
		return CACHE_NON_NUMERIC;
	if (q->cas_in && q->cas_in != item_cas(old))
		return CACHE_EXISTS;
	if (!parse_u64(item_value(old), item_nbytes(old), &v))
		return CACHE_NON_NUMERIC;
	v = q->incr ? v + q->delta : (v < q->delta ? 0 : v - q->delta);
	len = snprintf(num, sizeof(num), "%" PRIu64, v);
	/* A shorter result keeps the old length, padded with spaces, as
	 * memcached's in-place update does. */
	width = len < (int)item_nbytes(old) ? (int)item_nbytes(old) : len;
	out->exptime_before =
		atomic_load_explicit(&old->exptime, memory_order_relaxed);
	exptime = q->set_exptime ? q->exptime : out->exptime_before;
	fresh = alloc_item(c, thread, key, item_flags(old), exptime,
			   (uint32_t)width, q->cas_new != 0, a);
	if (!fresh)
		return no_item(a);
	memset(cache__item_value_w(fresh), ' ', (size_t)width);
	memcpy(cache__item_value_w(fresh), num, (size_t)len);
	fresh->cas = next_cas(c, thread);
	if (len <= (int)item_nbytes(old)) {
		/* What memcached's update in place keeps. */
		cache__item_set_marks(fresh,
				      item__usage(old) &
					      (ITEM_FETCHED | ITEM_WON |
					       ITEM_STALE | ITEM_KEY_BINARY));
		atomic_init(&fresh->atime,
			    atomic_load_explicit(&old->atime,
						 memory_order_relaxed));
	}
	if (q->cas_new)
		cache__item_choose_cas(fresh, q->cas_new);
	out->value = v;
	out->cas = item_cas(fresh);
	out->exptime = exptime;
	return place(c, thread, key, old, fresh, false, a) ? CACHE_STORED
							   : CACHE_NOT_STORED;
}

static enum cache_result incr_run(struct cache *c, unsigned int thread,
				  struct cache_key key,
				  const struct incr_req *q,
				  struct cache_incr_out *out)
{
	const struct job j = { .once = incr_once,
			       .thread = thread,
			       .key = key,
			       .q = q,
			       .out = out };

	return run(c, &j);
}

enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t cas_in, uint64_t *result,
			     uint64_t *cas_out)
{
	const struct incr_req q = { incr, delta, cas_in, false, 0, 0 };
	struct cache_incr_out out = { 0 };
	enum cache_result res = incr_run(c, thread, key, &q, &out);

	*result = out.value;
	if (cas_out)
		*cas_out = out.cas;
	return res;
}

enum cache_result cache_incr_meta(struct cache *c, unsigned int thread,
				  struct cache_key key, bool incr,
				  uint64_t delta, uint64_t cas_in,
				  bool set_exptime, int64_t exptime,
				  uint64_t cas_new, struct cache_incr_out *out)
{
	const struct incr_req q = {
		incr,	delta, cas_in, set_exptime, cache__exptime_u32(exptime),
		cas_new
	};

	*out = (struct cache_incr_out){ 0 };
	return incr_run(c, thread, key, &q, out);
}
