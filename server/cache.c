/*
 * The cache: items on the rhashtable, expiry, flush, read-modify-write
 * commands built from lookup + insert/replace with retries. See cache.h for
 * the concurrency contract.
 */
#include "cache.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* memcached: an exptime up to 30 days is relative, above it absolute. */
#define REL_TIME_MAX (60 * 60 * 24 * 30)

struct cache {
	struct rhashtable ht;
	/* Items stored before flush_at_ns are dead once it has passed. */
	_Atomic int64_t flush_at_ns;
	_Atomic long bytes;
	unsigned int threads;
	uint64_t *cas_seq; /* per thread, written only by its thread */
};

/* The table hashes with its own 32-bit seed mixed into a 128-bit secret
 * of ours, so a re-seed moves keys and the secret stays long. */
static struct siphash_key cache_secret;

static uint32_t key_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct cache_key *k = data;
	struct siphash_key sk = { cache_secret.k0 ^ seed, cache_secret.k1 };

	(void)len;
	return (uint32_t)siphash13(&sk, k->p, k->n);
}

static uint32_t item_hash(const void *obj, uint32_t len, uint32_t seed)
{
	const struct item *it = obj;
	struct cache_key k = { item_key(it), it->nkey };

	return key_hash(&k, len, seed);
}

static int item_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct cache_key *k = arg->key;
	const struct item *it = obj;

	return k->n != it->nkey || memcmp(k->p, item_key(it), k->n);
}

/* Passed by value to the inline table functions, as in the kernel, so the
 * compiler folds what this table does not use. */
static const struct rhashtable_params cache_params = {
	.head_offset = offsetof(struct item, node),
	.hashfn = key_hash,
	.obj_hashfn = item_hash,
	.obj_cmpfn = item_cmp,
	.nelem_hint = 1024,
	.automatic_shrinking = true,
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cache_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec;
}

int64_t cache_abs_exptime(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return -1;
	if (exptime <= REL_TIME_MAX)
		return cache_now() + exptime;
	return exptime;
}

struct cache *cache_create(unsigned int threads)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cas_seq = calloc(threads, sizeof(*c->cas_seq));
	if (getrandom(&cache_secret, sizeof(cache_secret), 0) !=
	    sizeof(cache_secret))
		cache_secret.k0 = (uint64_t)now_ns();
	c->threads = threads;
	if (!c->cas_seq || rhashtable_init(&c->ht, &cache_params)) {
		free(c->cas_seq);
		free(c);
		return NULL;
	}
	return c;
}

static void item_free_fn(void *ptr, void *arg)
{
	(void)arg;
	free(ptr);
}

void cache_destroy(struct cache *c)
{
	/* Items released but not yet freed are on the call_rcu queue. */
	rhkv_rcu_barrier();
	rhashtable_free_and_destroy(&c->ht, item_free_fn, NULL);
	free(c->cas_seq);
	free(c);
}

bool cache_item_live(const struct cache *c, const struct item *it, int64_t now)
{
	int64_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	int64_t flush =
		atomic_load_explicit(&c->flush_at_ns, memory_order_relaxed);

	if (exp && exp <= now)
		return false;
	if (flush && it->stored < flush && now_ns() >= flush)
		return false;
	return true;
}

void item_get(struct item *it)
{
	atomic_fetch_add_explicit(&it->refs, 1, memory_order_relaxed);
}

void item_put(struct item *it)
{
	/* acq_rel: the last holder sees every other holder's reads done. */
	if (atomic_fetch_sub_explicit(&it->refs, 1, memory_order_acq_rel) == 1)
		free(it);
}

static void item_release_rcu(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	item_put((struct item *)((char *)head - offsetof(struct item, rcu)));
}

/* Drops the table's reference to an unlinked item after a grace period. */
static void item_retire(struct cache *c, struct item *it)
{
	atomic_fetch_sub_explicit(&c->bytes,
				  (long)(sizeof(*it) + it->nkey + it->nbytes),
				  memory_order_relaxed);
	rhkv_rcu_call(&it->rcu, item_release_rcu);
}

static struct item *item_alloc(struct cache_key key, uint32_t flags,
			       int64_t exptime, uint32_t nbytes)
{
	struct item *it = malloc(sizeof(*it) + key.n + nbytes + 2);

	if (!it)
		return NULL;
	atomic_init(&it->exptime, exptime);
	atomic_init(&it->refs, 1);
	it->stored = now_ns();
	it->flags = flags;
	it->nbytes = nbytes;
	it->nkey = (uint8_t)key.n;
	memcpy(it->data, key.p, key.n);
	memcpy(it->data + key.n + nbytes, "\r\n", 2);
	return it;
}

static uint64_t next_cas(struct cache *c, unsigned int thread)
{
	/* Unique without a shared counter: sequence * threads + thread. */
	return ++c->cas_seq[thread] * c->threads + thread + 1;
}

void cache_prefetch(struct cache *c, struct cache_key key)
{
	rhkv_rcu_read_lock();
	rhashtable_prefetch(&c->ht, &key, cache_params);
	rhkv_rcu_read_unlock();
}

struct item *cache_find(struct cache *c, struct cache_key key, bool *expired)
{
	struct item *it = rhashtable_lookup(&c->ht, &key, cache_params);

	if (expired)
		*expired = false;
	if (it && !cache_item_live(c, it, cache_now())) {
		if (expired)
			*expired = true;
		/* Lazy expiry: reclaim it now that we met it. */
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache_params))
			item_retire(c, it);
		return NULL;
	}
	return it;
}

/* Puts fresh in the place of old (which may have expired). Returns false
 * when old was unlinked meanwhile: the caller starts over. */
static bool swap_in(struct cache *c, struct item *old, struct item *fresh)
{
	if (rhashtable_replace_fast(&c->ht, &old->node, &fresh->node,
				    cache_params))
		return false;
	item_retire(c, old);
	return true;
}

/* Builds the item a store of mode would put in place of old (or none). */
static struct item *build(struct cache *c, unsigned int thread,
			  enum cache_store_mode mode, struct cache_key key,
			  uint32_t flags, int64_t exptime, const char *value,
			  uint32_t nbytes, const struct item *old)
{
	struct item *it;

	if (mode != CACHE_APPEND && mode != CACHE_PREPEND) {
		it = item_alloc(key, flags, exptime, nbytes);
		if (it)
			memcpy(it->data + key.n, value, nbytes);
	} else {
		/* Append and prepend keep the old flags and exptime. */
		uint64_t total = (uint64_t)old->nbytes + nbytes;

		if (total > UINT32_MAX)
			return NULL;
		it = item_alloc(key, old->flags,
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

static enum cache_result
store_once(struct cache *c, unsigned int thread, enum cache_store_mode mode,
	   struct cache_key key, uint32_t flags, int64_t exptime,
	   const char *value, uint32_t nbytes, uint64_t cas_in, bool *retry)
{
	struct item *old = rhashtable_lookup(&c->ht, &key, cache_params);
	bool live = old && cache_item_live(c, old, cache_now());
	struct item *fresh;

	*retry = false;
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
	if (!old) {
		struct item *other = rhashtable_lookup_get_insert_key(
			&c->ht, &key, &fresh->node, cache_params);

		if (other) { /* a writer got in first: decide again */
			free(fresh);
			*retry = true;
			return CACHE_NOT_STORED;
		}
	} else if (!swap_in(c, old, fresh)) {
		free(fresh);
		*retry = true;
		return CACHE_NOT_STORED;
	}
	atomic_fetch_add_explicit(
		&c->bytes, (long)(sizeof(*fresh) + key.n + fresh->nbytes),
		memory_order_relaxed);
	return CACHE_STORED;
}

enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in)
{
	enum cache_result res;
	bool retry;

	do {
		rhkv_rcu_read_lock();
		res = store_once(c, thread, mode, key, flags, exptime, value,
				 nbytes, cas_in, &retry);
		rhkv_rcu_read_unlock();
	} while (retry);
	return res;
}

bool cache_delete(struct cache *c, struct cache_key key)
{
	bool live = false;

	rhkv_rcu_read_lock();
	for (;;) {
		struct item *it = rhashtable_lookup(&c->ht, &key, cache_params);

		if (!it)
			break;
		if (!rhashtable_remove_fast(&c->ht, &it->node, cache_params)) {
			live = cache_item_live(c, it, cache_now());
			item_retire(c, it);
			break;
		}
	}
	rhkv_rcu_read_unlock();
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

enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t *result)
{
	enum cache_result res;

	for (;;) {
		struct item *old, *fresh;
		char num[24];
		uint64_t v;
		int len, width;

		rhkv_rcu_read_lock();
		old = cache_find(c, key, NULL);
		if (!old) {
			res = CACHE_NOT_FOUND;
			break;
		}
		if (!parse_u64(item_value(old), old->nbytes, &v)) {
			res = CACHE_NON_NUMERIC;
			break;
		}
		v = incr ? v + delta : (v < delta ? 0 : v - delta);
		len = snprintf(num, sizeof(num), "%" PRIu64, v);
		/* A shorter result keeps the old length, padded with spaces,
		 * as memcached's in-place update does. */
		width = len < (int)old->nbytes ? (int)old->nbytes : len;
		fresh = item_alloc(key, old->flags,
				   atomic_load_explicit(&old->exptime,
							memory_order_relaxed),
				   (uint32_t)width);
		if (!fresh) {
			res = CACHE_NO_MEMORY;
			break;
		}
		memset(fresh->data + key.n, ' ', (size_t)width);
		memcpy(fresh->data + key.n, num, (size_t)len);
		fresh->cas = next_cas(c, thread);
		if (swap_in(c, old, fresh)) {
			atomic_fetch_add_explicit(
				&c->bytes,
				(long)(sizeof(*fresh) + key.n + width),
				memory_order_relaxed);
			*result = v;
			res = CACHE_STORED;
			break;
		}
		free(fresh);
		rhkv_rcu_read_unlock();
	}
	rhkv_rcu_read_unlock();
	return res;
}

bool cache_touch(struct cache *c, struct cache_key key, int64_t exptime)
{
	struct item *it;

	rhkv_rcu_read_lock();
	it = cache_find(c, key, NULL);
	if (it)
		atomic_store_explicit(&it->exptime, exptime,
				      memory_order_relaxed);
	rhkv_rcu_read_unlock();
	return it != NULL;
}

void cache_flush(struct cache *c, int64_t delay)
{
	int64_t at = now_ns() + (delay > 0 ? delay * 1000000000 : 0);

	atomic_store_explicit(&c->flush_at_ns, at, memory_order_relaxed);
}

struct scan_ctx {
	struct cache *c;
	int64_t now;
	void (*fn)(const struct item *it, void *arg);
	void *arg;
};

static void scan_one(void *obj, void *arg)
{
	struct scan_ctx *sc = arg;
	const struct item *it = obj;

	if (cache_item_live(sc->c, it, sc->now))
		sc->fn(it, sc->arg);
}

uint64_t cache_scan(struct cache *c, uint64_t cursor, unsigned int count,
		    void (*fn)(const struct item *it, void *arg), void *arg)
{
	struct scan_ctx sc = { c, cache_now(), fn, arg };

	return rhashtable_scan(&c->ht, cursor, count, scan_one, &sc, NULL);
}

void cache_get_stats(struct cache *c, struct cache_stats *st, bool chain)
{
	rhashtable_get_stats(&c->ht, &st->table);
	st->curr_items = st->table.nelems;
	st->bytes = (unsigned long)atomic_load_explicit(&c->bytes,
							memory_order_relaxed);
	st->longest_chain = chain ? rhashtable_longest_chain(&c->ht) : 0;
}
