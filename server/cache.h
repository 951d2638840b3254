/*
 * The cache: items stored in the rhashtable, keyed by their bytes.
 *
 * Items are immutable once published, except exptime (atomic, so touch and
 * gat need no copy) and the reference count. A write builds a new item and
 * replaces or inserts it; the old item is released after a grace period.
 *
 * Concurrency: every function may run on any registered worker thread at
 * once. cache_find() must be called inside an RCU read-side section and the
 * item used only inside it, unless the caller takes a reference with
 * item_get() (dropped with item_put(), from any thread, at any time).
 * Writers of one key are serialised by the table's bucket lock (through
 * lookup_get_insert and replace), so read-modify-write commands (append,
 * incr, cas) retry when another writer got in between.
 */
#ifndef RHKV_SERVER_CACHE_H
#define RHKV_SERVER_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/rhashtable.h"

struct item {
	struct rhash_head node;
	_Atomic int64_t exptime; /* unix seconds; 0: never */
	int64_t stored;		 /* unix seconds when written (flush_all) */
	uint64_t cas;
	uint32_t flags;
	uint32_t nbytes;       /* value bytes, without the "\r\n" */
	_Atomic uint32_t refs; /* 1 for the table, +1 per writer in flight */
	uint8_t nkey;
	struct rcu_head rcu;
	char data[]; /* key, then value, then "\r\n" */
};

static inline const char *item_key(const struct item *it)
{
	return it->data;
}

static inline const char *item_value(const struct item *it)
{
	return it->data + it->nkey;
}

struct cache_key {
	const char *p;
	size_t n;
};

enum cache_store_mode {
	CACHE_SET,
	CACHE_ADD,
	CACHE_REPLACE,
	CACHE_APPEND,
	CACHE_PREPEND,
	CACHE_CAS,
};

enum cache_result {
	CACHE_STORED,
	CACHE_NOT_STORED,
	CACHE_EXISTS,
	CACHE_NOT_FOUND,
	CACHE_NO_MEMORY,
	CACHE_NON_NUMERIC,
};

struct cache;

struct cache *cache_create(unsigned int threads);
void cache_destroy(struct cache *c);

/* The current unix time, as the cache sees it. */
int64_t cache_now(void);

/* Converts a protocol exptime (0, relative up to 30 days, absolute, or
 * negative) to an absolute one; negative means already expired. */
int64_t cache_abs_exptime(int64_t exptime);

/* Whether the item is alive now (not expired, not flushed). */
bool cache_item_live(const struct cache *c, const struct item *it, int64_t now);

/* Live item with key, or NULL (*expired tells whether a dead one was
 * found and reclaimed; may be NULL); inside an RCU read-side section. */
struct item *cache_find(struct cache *c, struct cache_key key, bool *expired);
/* Starts loading the table bucket of key (a hint for an imminent request;
 * takes the RCU read lock itself). */
void cache_prefetch(struct cache *c, struct cache_key key);

/* References for items read outside a read-side section (large values). */
void item_get(struct item *it);
void item_put(struct item *it);

/*
 * Stores value under key per mode (cas: only if the live item's cas equals
 * cas_in). thread picks the cas sequence (unique per thread, no sharing).
 */
enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in);

/* Removes key if present (live or not). Returns whether a live one was. */
bool cache_delete(struct cache *c, struct cache_key key);

/* incr/decr: *result is the new value. */
enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t *result);

/* Sets exptime of a live item. Returns whether there was one. */
bool cache_touch(struct cache *c, struct cache_key key, int64_t exptime);

/* Invalidates every item stored before now + delay, once that time comes. */
void cache_flush(struct cache *c, int64_t delay);

/* Calls fn for live keys from cursor; returns the next cursor (see
 * rhashtable_scan). */
uint64_t cache_scan(struct cache *c, uint64_t cursor, unsigned int count,
		    void (*fn)(const struct item *it, void *arg), void *arg);

struct cache_stats {
	unsigned long curr_items;
	unsigned long bytes;
	struct rhashtable_stats table;
	unsigned int longest_chain;
};
void cache_get_stats(struct cache *c, struct cache_stats *st, bool chain);

#endif
