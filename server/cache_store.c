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

/* Builds the item a store of mode would put in place of old (or none). */
static struct item *build(struct cache *c, unsigned int thread,
			  enum cache_store_mode mode, struct cache_key key,
			  uint32_t flags, uint32_t exptime, const char *value,
			  uint32_t nbytes, const struct item *old)
{
	struct item *it;

	if (mode != CACHE_APPEND && mode != CACHE_PREPEND) {
		it = cache__item_alloc(c, key, flags, exptime, nbytes);
		if (it)
			memcpy(it->data + key.n, value, nbytes);
	} else {
		/* Append and prepend keep the old flags and exptime. */
		uint64_t total = (uint64_t)old->nbytes + nbytes;

		if (total > UINT32_MAX)
			return NULL;
		it = cache__item_alloc(
			c, key, old->flags,
			atomic_load_explicit(&old->exptime,
					     memory_order_relaxed),
			(uint32_t)total);
		if (!it)
			return NULL;
		char *dst = it->data + key.n;
		if (mode == CACHE_APPEND) {
			memcpy(dst, item_value(old), old->nbytes);
			memcpy(dst + old->nbytes, value, nbytes);
		} else {
			memcpy(dst, value, nbytes);
			memcpy(dst + nbytes, item_value(old), old->nbytes);
		}
	}
	if (it)
		it->cas = next_cas(c, thread);
	return it;
}

/*
 * Links fresh in place of old (NULL: a new key). Returns false when another
 * writer got in first (the caller decides again). fresh's bytes must be
 * reserved; on success old is returned through *dead for retiring.
 */
static bool link_item(struct cache *c, struct cache_key key, struct item *old,
		      struct item *fresh, int64_t fp, struct item **dead)
{
	if (!old) {
		if (rhashtable_lookup_get_insert_key(&c->ht, &key, &fresh->node,
						     cache__params))
			return false;
	} else if (rhashtable_replace_fast(&c->ht, &old->node, &fresh->node,
					   cache__params)) {
		return false;
	} else {
		*dead = old;
	}
	cache__mem_linked(c, fresh, fp);
	cache__queue_push(c, fresh);
	if (atomic_load_explicit(&fresh->exptime, memory_order_relaxed))
		atomic_store_explicit(&c->sweep_wanted, true,
				      memory_order_relaxed);
	return true;
}

/* What one attempt of a write asks of its caller, outside the read-side
 * section: retire an unlinked item, make room, or try again. */
struct attempt {
	struct item *dead;
	int64_t need; /* bytes to make room for */
	bool retry;
};

/* Reserves and links fresh; on failure frees it and says why in *a. */
static bool place(struct cache *c, struct cache_key key, struct item *old,
		  struct item *fresh, struct attempt *a)
{
	int64_t fp = (int64_t)cache_item_footprint(fresh);

	if (!cache__mem_reserve(c, fp)) {
		free(fresh);
		a->need = fp;
		a->retry = true;
		return false;
	}
	if (!link_item(c, key, old, fresh, fp, &a->dead)) {
		cache__add64(&c->mem, -fp);
		free(fresh);
		a->retry = true;
		return false;
	}
	return true;
}

static enum cache_result store_once(struct cache *c, unsigned int thread,
				    enum cache_store_mode mode,
				    struct cache_key key, uint32_t flags,
				    uint32_t exptime, const char *value,
				    uint32_t nbytes, uint64_t cas_in,
				    uint64_t *cas_out, struct attempt *a)
{
	struct item *old = rhashtable_lookup(&c->ht, &key, cache__params);
	bool live = old && cache_item_live(c, old, cache_now());
	struct item *fresh;

	if (!live && (mode == CACHE_REPLACE || mode == CACHE_APPEND ||
		      mode == CACHE_PREPEND))
		return CACHE_NOT_STORED;
	if (!live && mode == CACHE_CAS)
		return CACHE_NOT_FOUND;
	if (live && mode == CACHE_ADD)
		return CACHE_NOT_STORED;
	if (live && mode == CACHE_CAS && old->cas != cas_in)
		return CACHE_EXISTS;
	fresh = build(c, thread, mode, key, flags, exptime, value, nbytes, old);
	if (!fresh)
		return CACHE_NO_MEMORY;
	if (cas_out)
		*cas_out = fresh->cas; /* before linking: then it may go */
	return place(c, key, old, fresh, a) ? CACHE_STORED : CACHE_NOT_STORED;
}

/* After an attempt, outside the read-side section. False: give up with
 * CACHE_NO_MEMORY (the item cannot fit even in an empty cache). */
static bool settle(struct cache *c, struct attempt *a, unsigned int *tries)
{
	if (a->dead) {
		cache__item_unlinked(c, a->dead);
		a->dead = NULL;
	}
	if (a->need) {
		int64_t need = a->need;

		a->need = 0;
		/* Writers racing for the same room: bounded retries. */
		if (!cache__make_room(c, need) || ++*tries > 100)
			return false;
	}
	return true;
}

enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in, uint64_t *cas_out)
{
	struct attempt a = { 0 };
	unsigned int tries = 0;
	enum cache_result res;

	do {
		a.retry = false;
		rhkv_rcu_read_lock();
		res = store_once(c, thread, mode, key, flags,
				 cache__exptime_u32(exptime), value, nbytes,
				 cas_in, cas_out, &a);
		rhkv_rcu_read_unlock();
		if (!settle(c, &a, &tries))
			return CACHE_NO_MEMORY;
	} while (a.retry);
	return res;
}

bool cache_delete(struct cache *c, struct cache_key key)
{
	struct item *dead = NULL;
	bool live = false;

	rhkv_rcu_read_lock();
	for (;;) {
		struct item *it =
			rhashtable_lookup(&c->ht, &key, cache__params);

		if (!it)
			break;
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache__params)) {
			live = cache_item_live(c, it, cache_now());
			dead = it;
			break;
		}
	}
	rhkv_rcu_read_unlock();
	if (dead)
		cache__item_unlinked(c, dead);
	return live;
}

/* memcached's rule: a value is numeric when it is digits (at most 20)
 * that fit in 64 bits, optionally followed by the spaces a shrinking
 * incr/decr leaves. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	while (n > 0 && s[n - 1] == ' ')
		n--;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

static enum cache_result incr_once(struct cache *c, unsigned int thread,
				   struct cache_key key, bool incr,
				   uint64_t delta, uint64_t cas_in,
				   uint64_t *result, uint64_t *cas_out,
				   struct attempt *a)
{
	struct item *old = cache_find(c, key, NULL), *fresh;
	char num[24];
	uint64_t v;
	int len, width;

	if (!old)
		return CACHE_NOT_FOUND;
	if (cas_in && cas_in != old->cas)
		return CACHE_EXISTS;
	if (!parse_u64(item_value(old), old->nbytes, &v))
		return CACHE_NON_NUMERIC;
	v = incr ? v + delta : (v < delta ? 0 : v - delta);
	len = snprintf(num, sizeof(num), "%" PRIu64, v);
	/* A shorter result keeps the old length, padded with spaces, as
	 * memcached's in-place update does. */
	width = len < (int)old->nbytes ? (int)old->nbytes : len;
	fresh = cache__item_alloc(
		c, key, old->flags,
		atomic_load_explicit(&old->exptime, memory_order_relaxed),
		(uint32_t)width);
	if (!fresh)
		return CACHE_NO_MEMORY;
	memset(fresh->data + key.n, ' ', (size_t)width);
	memcpy(fresh->data + key.n, num, (size_t)len);
	fresh->cas = next_cas(c, thread);
	*result = v;
	if (cas_out)
		*cas_out = fresh->cas;
	return place(c, key, old, fresh, a) ? CACHE_STORED : CACHE_NOT_STORED;
}

enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t cas_in, uint64_t *result,
			     uint64_t *cas_out)
{
	struct attempt a = { 0 };
	unsigned int tries = 0;
	enum cache_result res;

	do {
		a.retry = false;
		rhkv_rcu_read_lock();
		res = incr_once(c, thread, key, incr, delta, cas_in, result,
				cas_out, &a);
		rhkv_rcu_read_unlock();
		if (!settle(c, &a, &tries))
			return CACHE_NO_MEMORY;
	} while (a.retry);
	return res;
}
