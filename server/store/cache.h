/*
 * The cache: items stored in the rhashtable, keyed by their bytes, packed
 * into segments within a memory limit, evicted a segment at a time and
 * expired in the background. The module's files share
 * server/store/cache_internal.h; this is its public API.
 *
 * Items are immutable once published, except exptime (atomic, so touch and
 * gat need no copy), the usage byte (the visited bit eviction reads) and
 * last access. A write builds a new item and replaces or inserts it; the
 * old item's bytes are reused after a grace period.
 *
 * Concurrency: every function may run on any registered worker thread at
 * once; `thread` arguments name the caller's writer (one OS thread each).
 * cache_find() must be called inside an RCU read-side section and the
 * item used only inside it, unless the caller takes a reference with
 * item_get() on a large item (dropped with item_put(), from any thread, at
 * any time); a segment item's bytes are copied inside the section. Writers
 * of one key are serialised by the table's bucket lock (through
 * lookup_get_insert and replace), so read-modify-write commands (append,
 * incr, cas) retry when another writer got in between. Every other
 * function must be called outside read-side sections: they may wait for a
 * grace period.
 *
 * MEMORY (cache_memory.c). Items live in segments of one arena, a single
 * anonymous mapping (so that a file could back it) of 16 KiB to 1 MiB
 * segments (the limit over 128, a power of two): each worker appends to a
 * segment of its own, items packed at 8-byte alignment with no allocator
 * header, and seals it into the eviction log when full. A value above
 * ITEM_SEG_VALUE_MAX, or an item above an eighth of a segment, takes an
 * allocation of its own (a "large item", one unit of the log by itself,
 * with a reference count so that a reply can send it without a copy).
 * What the limit bounds: every resident segment (holding items, dead
 * items and tail space, free in the pool, or retiring), large items'
 * allocations, and the bucket arrays; a segment or large item is reserved
 * (a compare-and-swap on one counter) before it is used, so the sum never
 * passes the limit. An unlinked item's segment keeps it until the segment
 * is evicted or, having no linked item left, freed early.
 * Reuse is RCU-safe: a unit is retired only once none of its items is in
 * the table (eviction unlinks or carries them, expiry and overwrites
 * unlink them); cache_reclaim() then waits for a grace period that starts
 * after the retirement, after which no reader can hold a pointer into it,
 * and only then pools the segment (or drops the large item's table
 * reference; a reply holding the item frees it when done). Nothing in a
 * segment is written while it is in the log but the atomic fields.
 * Nothing in an item points into another allocation but its table chain,
 * which a restart would rebuild by inserting every item again.
 *
 * EVICTION (cache_evict.c) takes the oldest unit of one of two logs (one
 * evictor at a time, under evict_lock), as S3-FIFO does with its queues:
 * new units enter the "new" log, what eviction keeps goes to the "kept"
 * log, and the evictor takes from the new log while it holds more than a
 * tenth of both; so an item nobody reads again (a miss's set, mostly)
 * leaves after a tenth of a turn, and kept items stay for the rest (+1.1
 * points of W5 hit ratio at equal -m over one log). A hit sets the item's
 * visited bit (one
 * relaxed byte store, only when not already set, so gets stay lock-free
 * and hot lines stay shared). The evictor copies the segment's visited
 * live items into a segment of its own (swapping each into the table with
 * rhashtable_replace_fast while readers go on; the copy keeps value, cas,
 * flags and times, its visit cleared) and unlinks the rest; while linked
 * items hold less than 3/4 of the budget (the log is full of dead bytes:
 * overwrites, deletes) it keeps every live item, compacting instead of
 * evicting. When more than half of a segment would be kept (7/8 while
 * compacting), copying would free little: the segment goes to the head of
 * the kept log whole, its visits cleared (as SIEVE's hand passes over
 * visited items), unless a whole lap found nothing else. A large item that
 * is kept goes there too, nothing copied. The maintenance thread
 * evicts ahead to keep a little room free, so writers rarely evict
 * themselves. Lock order: evict_lock, log_lock, a table bucket.
 * With evictions off (cache_set_evictions, memcached's -M) the evictor
 * still reclaims dead bytes and compacts, carrying every live item, but
 * never unlinks one: a segment whose live items do not all fit the carry
 * goes back to the log, and a write that finds no room that way is
 * answered CACHE_NO_MEMORY.
 *
 * EXPIRY is lazy on access and swept in the background: a maintenance
 * thread walks the table with its own cursor for at most 2 ms per tick
 * (every 100 ms; every 10 ms while it keeps finding dead items, so a mass
 * expiry is reclaimed in seconds without a long pause) and unlinks them;
 * a segment left without a linked item is freed then, before eviction
 * reaches it. flush_all is O(1): it records, at its time, how far each
 * thread's cas sequence had got; items with a cas at or below that are
 * dead, and the sweep reclaims them.
 *
 * PREFIX FLUSHES (cache_prefix.c) are flush_all for the keys that start
 * with a prefix: a tombstone records the prefix and that snapshot, every
 * liveness check consults the active tombstones (nothing when there are
 * none; a few comparisons of integers when there are), and a tombstone
 * retires once a whole sweep pass after it has unlinked what it covers.
 */
#ifndef RHKV_SERVER_CACHE_H
#define RHKV_SERVER_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/rhashtable.h"

/* The usage byte: a hit sets VISITED and FETCHED, eviction clears
 * VISITED (or drops it with the copy it carries forward); FETCHED feeds the eviction stats and meta's "hit before". The
 * other bits serve memcached's meta commands: WON is set once, by the one
 * client that is handed the right to recache the item (cache_item_win);
 * STALE and KEY_BINARY are set when the item is built and never change.
 * Every change is an atomic read-modify-write of the bits it means.
 *
 * KEY_BINARY records how a text client spelled the key (meta's b), so
 * that mg's k answers in the same spelling, as memcached does. The msgpack
 * protocol does not set it for its keys that are no text keys (space,
 * "\n", NUL): whatever prints a key as text tests the bytes themselves
 * (proto_text_key) and spells such a key in base64 anyway, which covers
 * every way in (msgpack, memcached binary, later ones) with no bit to keep
 * in step on each write path, and leaves a msgpack client's text-safe key
 * answered as it is. */
#define ITEM_VISITED	1u
#define ITEM_FETCHED	2u
#define ITEM_WON	4u  /* a recache winner has been named */
#define ITEM_STALE	8u  /* invalidated: served, flagged stale */
#define ITEM_KEY_BINARY 16u /* stored with a base64 key (meta b) */
#define ITEM_CAS_CHOSEN 32u /* the client chose its cas (meta E) */

#define ITEM_HAS_FLAGS 64u /* 4 bytes of client flags lead the data */
/* 128 is the memory file's own (cache_file.c): dead when sealed. */

/*
 * 28 bytes of header, then the data. Offsets:
 *   0 node     table chain (readers follow it until the grace period ends)
 *   8 cas      the write's sequence: sequence * threads + thread + 1
 *  16 exptime  unix seconds (0: never; 1: already expired)
 *  20 atime    unix seconds of the last access (stored at most once a
 *              second, so a hot item's line stays shared)
 *  24 nbytes16 value length, or ITEM_NBYTES_LARGE: a large item, whose
 *              length is in the 4 bytes before the item (item_nbytes)
 *  26 nkey     key length (1..250)
 *  27 usage    ITEM_* bits above
 *  28 data     with ITEM_HAS_FLAGS the client's 32 flag bits (most items
 *              have none and spend nothing), the key, the value (no line
 *              end: replies write it), then, with ITEM_CAS_CHOSEN, the
 *              cas the client chose
 * cas is the write's sequence number, which flush_all and `stats items`
 * age read: a cas a client chooses (meta E) cannot take its place, so it
 * is kept after the data and item_cas() is what clients see.
 *
 * Items live in segments (cache_segment.c) packed at 8-byte alignment with
 * no allocator header, except large ones (a value above ITEM_SEG_VALUE_MAX,
 * or an item above an eighth of a segment): those take their own
 * allocation with a reference count, so a reply can send their value
 * without copying it (item_get). An item holds no pointer but its table
 * chain, which the table rebuilds: a segment's bytes mean the same at any
 * address.
 */
struct item {
	struct rhash_head node;
	uint64_t cas;
	_Atomic uint32_t exptime;
	_Atomic uint32_t atime;
	uint16_t nbytes16;
	uint8_t nkey;
	_Atomic uint8_t usage;
	char data[];
};

_Static_assert(offsetof(struct item, data) == 28, "item header layout");

#define ITEM_HEADER_BYTES offsetof(struct item, data)
#define ITEM_NBYTES_LARGE UINT16_MAX
/* Values up to this many bytes may live in a segment; a reply copies them
 * (they are never referenced outside a read-side section). */
#define ITEM_SEG_VALUE_MAX 16384

static inline uint32_t item_nbytes(const struct item *it)
{
	uint32_t n;

	if (it->nbytes16 != ITEM_NBYTES_LARGE)
		return it->nbytes16;
	memcpy(&n, (const char *)it - sizeof(n), sizeof(n));
	return n;
}

static inline uint8_t item__usage(const struct item *it)
{
	return atomic_load_explicit(&it->usage, memory_order_relaxed);
}

static inline uint32_t item_flags(const struct item *it)
{
	uint32_t f;

	if (!(item__usage(it) & ITEM_HAS_FLAGS))
		return 0;
	memcpy(&f, it->data, sizeof(f));
	return f;
}

static inline const char *item_key(const struct item *it)
{
	return it->data + ((item__usage(it) & ITEM_HAS_FLAGS) ? 4 : 0);
}

static inline const char *item_value(const struct item *it)
{
	return item_key(it) + it->nkey;
}

/* The cas clients see: the write's own, or the one a client chose. */
static inline uint64_t item_cas(const struct item *it)
{
	uint64_t v;

	if (!(item__usage(it) & ITEM_CAS_CHOSEN))
		return it->cas;
	memcpy(&v, item_value(it) + item_nbytes(it), sizeof(v));
	return v;
}

/* Header, flags, key, value and chosen cas: what the item holds (a
 * segment rounds it up to 8 bytes). */
static inline size_t item_size(const struct item *it)
{
	uint8_t u = item__usage(it);

	return ITEM_HEADER_BYTES + ((u & ITEM_HAS_FLAGS) ? 4 : 0) + it->nkey +
	       item_nbytes(it) + ((u & ITEM_CAS_CHOSEN) ? 8 : 0);
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

/* threads: how many worker threads will store (their index is the
 * `thread` argument below); limit: bytes. Starts the maintenance thread.
 * Caches in one process are independent: each hashes with its own table's
 * secret, and none changes how another hashes. */
struct cache *cache_create(unsigned int threads, uint64_t limit);
/*
 * Warm restart: a cache whose arena lives in a file (tmpfs, or a DAX
 * file), so that a restarted server comes back with its items.
 * cache_destroy seals the file (a graceful stop); the next
 * cache_create_file with the same layout (limit, item size limit) adopts
 * its segments and links their live items again: key, value, flags, cas,
 * exptime (items that expired while down are dropped), and the order of
 * the eviction logs. Large items are written after the arena at the stop
 * and read back. Anything else starts empty, and says why in *r: a file
 * not sealed (a crash: nothing in it is trusted), another layout, another
 * format, a truncated file. Within a sealed file, a segment or large item
 * whose checksum fails is dropped, the rest restored. cas values given
 * afterwards are above every restored one.
 *
 * The file is created with mode 0600 for owner; one that another user
 * owns, or that others may read or write, or a symbolic link, is refused
 * (*refused set, NULL returned, err says why): it holds every value. A
 * file another rhkvd holds is refused too (not *refused: try later).
 */
struct cache_file_config {
	const char *path;
	unsigned int owner; /* uid that must own the file */
	uint32_t item_max;  /* -I: the layout depends on it */
};
enum cache_restore_how {
	CACHE_RESTORE_NONE,	/* no file */
	CACHE_RESTORE_NEW,	/* a new file */
	CACHE_RESTORE_RESTORED, /* a sealed file, adopted */
	CACHE_RESTORE_EMPTY,	/* a file not restored: why says why */
};
struct cache_restore {
	enum cache_restore_how how;
	char why[200];
	bool slow_fs; /* not tmpfs or ramfs: its writes reach a disk */
	unsigned long items, large_items;
	unsigned long expired;		/* dropped: expired while down */
	unsigned long duplicates;	/* dropped: a key seen twice */
	unsigned long segments;		/* restored */
	unsigned long corrupt_segments; /* dropped: checksum */
	unsigned long corrupt_large;	/* large items dropped */
	bool large_not_freed;		/* the area could not be cut off */
	int64_t down_seconds;		/* since the seal */
	double seconds;			/* the restore took */
};
struct cache *cache_create_file(unsigned int threads, uint64_t limit,
				const struct cache_file_config *fc, char *err,
				size_t errlen, bool *refused);
/* What the start found in the file (all 0 without one). */
void cache_get_restore(struct cache *c, struct cache_restore *r);
/* Seals the memory file now: no other thread may use the cache any more
 * (the maintenance thread is stopped). 0, or -1 (the file stays unsealed
 * and the next start is empty). cache_destroy seals if this was not
 * called; 0 without a file. */
int cache_seal(struct cache *c);

/* No other thread may use c any more; the caller is an RCU reader thread
 * outside read-side sections. With a memory file, seals it first. */
void cache_destroy(struct cache *c);

/*
 * Evictions on (the default) or off (memcached's -M: a write that needs a
 * live item's room fails with CACHE_NO_MEMORY instead). Off, a lowered
 * limit is reached only as items are deleted, expire or are flushed.
 */
void cache_set_evictions(struct cache *c, bool on);
bool cache_evictions(struct cache *c);

/*
 * Changes the limit (cache_memlimit); evicts down to it in the background.
 * A limit above cache_limit_max is capped there. Returns the limit set.
 */
uint64_t cache_set_limit(struct cache *c, uint64_t limit);
/*
 * The highest limit the arena's segments can back: with a memory file,
 * the limit it was created with (the file holds that many segments and
 * cannot grow under a mapping readers use); without one, the address
 * space reserved at the start (at least 65536 segments: 4 GiB at -m 8),
 * rounded down to a MiB.
 */
uint64_t cache_limit_max(const struct cache *c);

/*
 * Waits for one grace period, then reuses or frees every segment and large
 * item of c retired before the call (all their items were out of the table
 * by then). The maintenance thread does it every tick and writers when
 * they need room; tests call it to see the accounting settle. Outside
 * read-side sections.
 */
void cache_reclaim(struct cache *c);

/* The current unix time, as the cache sees it. */
int64_t cache_now(void);

/* Converts a protocol exptime (0, relative up to 30 days, absolute, or
 * negative) to an absolute one; negative means already expired. */
int64_t cache_abs_exptime(int64_t exptime);
/* The same, relative to the given unix time instead of the clock's. */
int64_t cache_abs_exptime_at(int64_t exptime, int64_t now);

/* Whether the item is alive now (not expired, not flushed). */
bool cache_item_live(struct cache *c, const struct item *it, int64_t now);
/* Whether flush_all has invalidated the item (whatever its exptime). */
bool cache_item_flushed(struct cache *c, const struct item *it);

/* Live item with key, or NULL (*expired tells whether a dead one was
 * found; may be NULL); inside an RCU read-side section. A hit counts as
 * a visit for eviction. Dead items found are left to cache_reap(). */
struct item *cache_find(struct cache *c, struct cache_key key, bool *expired);
/* cache_find without the visit: the item is not marked as accessed. */
struct item *cache_lookup(struct cache *c, struct cache_key key, bool *expired);
/* key's item, live or not (the caller judges it): inside the section. */
struct item *cache_lookup_any(struct cache *c, struct cache_key key);
/* Whether key has a live item (no access recorded); outside read-side
 * sections. */
bool cache_exists(struct cache *c, struct cache_key key);
/* Marks a live item as accessed (what cache_find does on a hit): visited
 * and fetched; its last access moves to now from the second fetch on. */
void cache_item_visit(struct item *it);
/* Names the item's recache winner: true for exactly one caller over the
 * item's life (ITEM_WON), false for every other. Inside the section. */
bool cache_item_win(struct item *it);

/* Unlinks key's item if it is dead (after cache_find said so); outside
 * read-side sections. Returns whether the dead item found was invalidated
 * by flush_all (false: it expired, or it was gone already). */
bool cache_reap(struct cache *c, struct cache_key key);
/* Starts loading the table bucket of key (a hint for an imminent request;
 * takes the RCU read lock itself). */
void cache_prefetch(struct cache *c, struct cache_key key);
/* The second stage, a little later (the bucket has arrived): starts
 * loading the item the bucket leads to, whose key the lookup compares. */
void cache_prefetch_item(struct cache *c, struct cache_key key);
/* Sets a live item's exptime (gat), inside the read-side section. */
void cache_item_set_exptime(struct cache *c, struct item *it, int64_t exptime);

/* References for large items (a value above ITEM_SEG_VALUE_MAX) read
 * outside a read-side section; a segment item is never referenced (it is
 * copied), and item_get() on one aborts. */
void item_get(struct item *it);
void item_put(struct item *it);

/*
 * Stores value under key per mode (cas: only if the live item's cas equals
 * cas_in). thread picks the cas sequence (unique per thread, no sharing).
 * CACHE_NO_MEMORY only when the item cannot fit even in an empty cache.
 * cas_out (may be NULL) receives the stored item's cas.
 */
enum cache_result cache_store(struct cache *c, unsigned int thread,
			      enum cache_store_mode mode, struct cache_key key,
			      uint32_t flags, int64_t exptime,
			      const char *value, uint32_t nbytes,
			      uint64_t cas_in, uint64_t *cas_out);

/*
 * Large values received straight into their item: a connection that has
 * read a storage request's header makes the item first, reads the value
 * from the socket into it, then stores it with cache_write (w->landed), so
 * that a value of hundreds of kilobytes is never gathered in an input
 * buffer and copied. Only values above ITEM_SEG_VALUE_MAX, whose items
 * have an allocation of their own that nothing else sees until linked (a
 * segment item would sit in its writer's open segment, which other
 * requests of that worker seal while the value is still arriving).
 *
 * cache_landing_new makes an unlinked item for key with room for nbytes
 * of value (flags as the request sent them), counted against the limit
 * like any item (eviction makes room first), or NULL: nbytes not above
 * ITEM_SEG_VALUE_MAX, or no room even in an empty cache.
 * cache_landing_value is where its nbytes of value go; cache_landing_free
 * drops one that will not be stored. Outside read-side sections.
 */
struct item *cache_landing_new(struct cache *c, unsigned int thread,
			       struct cache_key key, uint32_t flags,
			       uint32_t nbytes);
char *cache_landing_value(struct item *it);
void cache_landing_free(struct cache *c, unsigned int thread, struct item *it);

/*
 * A write with everything memcached's meta set can ask (cache_store is the
 * classic subset). mode and cas_in as cache_store's, and:
 * - cas_in also guards APPEND and PREPEND when not 0;
 * - stale_if_older (CACHE_CAS only): a cas_in below the item's stores the
 *   value anyway, marked ITEM_STALE, keeping the old item's exptime and
 *   its ITEM_WON;
 * - vivify (APPEND, PREPEND): a missing item is created with the value
 *   and vivify_exptime instead of CACHE_NOT_STORED;
 * - nbytes_max (APPEND, PREPEND), when not 0: the most bytes the joined
 *   value may hold (the item size limit); a longer one is CACHE_NOT_STORED
 *   and the old item stays, as memcached answers an append it cannot
 *   allocate;
 * - cas_new, when not 0, is the stored item's cas instead of a fresh one;
 * - marks: ITEM_* bits the new item starts with (ITEM_WON, ITEM_KEY_BINARY);
 * - nbytes_out (may be NULL) receives the stored value's length (an
 *   append's whole value); seq_out (may be NULL) the stored item's write
 *   sequence (its cas field, unlike cas_out never a chosen cas), which
 *   tells that very item apart from a later one;
 * - landed, when not NULL: *landed is an item from cache_landing_new
 *   holding the whole value (value and nbytes must be its value and
 *   length, flags its flags): it becomes the stored item instead of a
 *   copy, or an append's or prepend's source. cache_write takes it,
 *   whatever the result (linked, or freed), and sets *landed to NULL.
 */
struct cache_write {
	enum cache_store_mode mode;
	struct cache_key key;
	uint32_t flags;
	int64_t exptime; /* absolute (cache_abs_exptime) */
	const char *value;
	uint32_t nbytes;
	uint64_t cas_in;
	uint64_t cas_new;
	uint8_t marks;
	bool stale_if_older;
	bool vivify;
	int64_t vivify_exptime;
	uint32_t nbytes_max;
	uint32_t *nbytes_out;
	uint64_t *seq_out;
	struct item **landed;
};
enum cache_result cache_write(struct cache *c, unsigned int thread,
			      const struct cache_write *w, uint64_t *cas_out);

/* Removes key if present (live or not). Returns whether a live one was. */
bool cache_delete(struct cache *c, struct cache_key key);

/* Removes key's live item if its cas is cas_in (any cas when 0): the check
 * and the unlink are one step. CACHE_STORED when removed, else
 * CACHE_NOT_FOUND or CACHE_EXISTS. */
enum cache_result cache_delete_cas(struct cache *c, struct cache_key key,
				   uint64_t cas_in);

/*
 * memcached's meta invalidate: replaces key's live item (whose cas must be
 * cas_in unless that is 0) by a copy marked ITEM_STALE with ITEM_WON
 * cleared (the next fetcher wins the recache) and a new cas (cas_new when
 * not 0), with exptime when set_exptime. CACHE_STORED, CACHE_NOT_FOUND,
 * CACHE_EXISTS or CACHE_NO_MEMORY.
 */
enum cache_result cache_invalidate(struct cache *c, unsigned int thread,
				   struct cache_key key, uint64_t cas_in,
				   bool set_exptime, int64_t exptime,
				   uint64_t cas_new, uint64_t *cas_out);

/*
 * The current memcached text's meta delete with x: key's live item (cas
 * cas_in unless 0) is replaced by one with an empty value, client flags
 * flags and exptime (0: none), keeping its cas (cas_new when not 0);
 * stale marks it ITEM_STALE, as an invalidation does.
 */
struct cache_empty {
	uint64_t cas_in;
	uint32_t flags;
	int64_t exptime; /* absolute */
	uint64_t cas_new;
	bool stale;
};
enum cache_result cache_empty_value(struct cache *c, unsigned int thread,
				    struct cache_key key,
				    const struct cache_empty *e,
				    uint64_t *cas_out);
/* incr/decr: *result is the new value, *cas_out (when not NULL) the new
 * item's cas. cas_in, when not 0, must be the item's cas (else
 * CACHE_EXISTS). */
enum cache_result cache_incr(struct cache *c, unsigned int thread,
			     struct cache_key key, bool incr, uint64_t delta,
			     uint64_t cas_in, uint64_t *result,
			     uint64_t *cas_out);

/* cache_incr with meta's extras: when set_exptime, the new item's exptime
 * is exptime (absolute); cas_new, when not 0, is its cas; out tells the new
 * value and cas, and the exptime the item had before and has now. As in
 * memcached, a result that fits the old value's length keeps the item's
 * marks (stale, won, binary key, fetched, last access), as an update in
 * place would; a longer one makes a new item without them. */
struct cache_incr_out {
	uint64_t value, cas;
	uint32_t exptime_before, exptime; /* stored form: 0 none */
};
enum cache_result cache_incr_meta(struct cache *c, unsigned int thread,
				  struct cache_key key, bool incr,
				  uint64_t delta, uint64_t cas_in,
				  bool set_exptime, int64_t exptime,
				  uint64_t cas_new, struct cache_incr_out *out);

/* Sets exptime of a live item. Returns whether there was one. */
bool cache_touch(struct cache *c, struct cache_key key, int64_t exptime);

/* Calls fn(arg, item) for each live item evicted, from the evicting thread
 * (under evict_lock, inside a read-side section: fn must take no cache
 * lock and must not wait for a grace period). Set it before
 * other threads use the cache's eviction; NULL: none. */
void cache_set_evict_hook(struct cache *c,
			  void (*fn)(void *arg, const struct item *it),
			  void *arg);

/* Calls fn(arg, copy) each time eviction carries an item forward, from the
 * evicting thread, right after the copy took the original's place in the
 * table and before the evictor does anything else with it (under
 * evict_lock, inside a read-side section: fn may read and touch items but
 * must not store, take a cache lock or wait for a grace period). For tests
 * of what readers do to a carried item at that moment; NULL: none. */
void cache_set_carry_hook(struct cache *c,
			  void (*fn)(void *arg, struct item *copy), void *arg);

/*
 * Seconds since the oldest item still in the cache was stored (`stats
 * items` age): the first one still linked in the oldest unit of either
 * eviction log, or of an open segment when none is sealed. Items keep no store time (atime is the last access,
 * which every hit moves): their cas sequence is matched
 * against marks the maintenance thread records, one a second at most and
 * thinned as they age, so this is a lower bound, exact to the spacing of
 * the marks around that item (a second for recent items, wider for old
 * ones). 0 when the cache is empty.
 */
int64_t cache_oldest_age(struct cache *c);

/* Asks the expiry sweep for a pass over the table now (lru_crawler crawl). */
void cache_crawl(struct cache *c);
/* Pauses (false) or resumes the expiry sweep (lru_crawler disable and
 * enable). While it is paused, dead items are unlinked only when a
 * lookup or eviction meets them, and prefix tombstones do not retire. */
void cache_sweep_enable(struct cache *c, bool on);
bool cache_sweep_enabled(struct cache *c);

/* Invalidates every item stored before the flush time, once it comes:
 * now + delay (delay up to 30 days, as memcached) or the unix time delay. */
void cache_flush(struct cache *c, int64_t delay);

/*
 * Prefix flushes: every item whose key starts with prefix (1 to
 * CACHE_PREFIX_MAX bytes) and was stored before the call is dead from its
 * return on, for every reader and writer (as flush_all makes them); items
 * stored later are not touched. O(log n) in the active tombstones, none
 * in the items. CACHE_STORED; CACHE_NOT_STORED when the limit of active
 * tombstones is reached (they retire as the sweep passes); CACHE_NO_MEMORY;
 * CACHE_NOT_FOUND for a prefix of a bad length. A prefix flushed again
 * replaces its tombstone (the newer covers all the older did); flush_all
 * drops the tombstones its snapshot covers, never one taken after it (a
 * prefix flush that returns while a flush_all runs stays in force).
 */
#define CACHE_PREFIX_MAX	     250
#define CACHE_PREFIX_FLUSHES_DEFAULT 1024
enum cache_result cache_flush_prefix(struct cache *c, struct cache_key prefix);
/* The most tombstones active at once (default
 * CACHE_PREFIX_FLUSHES_DEFAULT); false when max is 0, below the number
 * active now, or memory ran out. */
bool cache_set_max_prefix_flushes(struct cache *c, unsigned int max);

/* Calls fn for live keys from cursor; returns the next cursor (see
 * rhashtable_scan). */
uint64_t cache_scan(struct cache *c, uint64_t cursor, unsigned int count,
		    void (*fn)(const struct item *it, void *arg), void *arg);

struct cache_stats {
	unsigned long curr_items;
	uint64_t limit;	    /* bytes */
	uint64_t bytes;	    /* linked items as placed (cache_item_footprint) */
	uint64_t item_data; /* linked items, item_size() */
	/* What the limit bounds, bucket arrays aside: resident segments
	 * (holding items, dead bytes and tail space, or pooled) and large
	 * items' allocations, retiring units included. */
	uint64_t accounted;
	uint64_t retired_bytes; /* of accounted: waiting for a grace period */
	uint64_t hash_bytes;	/* bucket arrays */
	uint64_t segment_size;
	uint64_t segment_live;	     /* of bytes: linked items in segments */
	unsigned long segments;	     /* resident */
	unsigned long segments_free; /* of those, pooled */
	uint64_t large_bytes;	     /* large items, linked or retiring */
	uint64_t large_pages;	     /* the same, each in whole 4 KiB pages */
	unsigned long carried;	     /* items eviction copied forward */
	unsigned long passed_over;   /* units eviction put back whole */
	unsigned long segments_freed_empty; /* freed before eviction */
	unsigned long evictions, evicted_unfetched, evicted_active;
	unsigned long expired_unfetched, reclaimed;
	unsigned long sweep_passes;
	unsigned long reclaim_waits;   /* writers waiting for a grace period */
	unsigned long evicted_nonzero; /* evictions of items with an exptime */
	unsigned long malloc_fails;    /* items the allocator refused */
	unsigned long sweep_checked;   /* items the expiry sweep looked at */
	unsigned long sweep_reclaimed; /* dead items the sweep took out */
	unsigned long prefix_tombstones; /* active now */
	unsigned long prefix_flushes;	 /* accepted */
	unsigned long prefix_refused;	 /* over the limit */
	unsigned long prefix_retired;	 /* tombstones done */
	unsigned long prefix_reclaimed;	 /* items unlinked for them */
	struct rhashtable_stats table;
	unsigned int longest_chain;
};
void cache_get_stats(struct cache *c, struct cache_stats *st, bool chain);

/* The bytes an item holds as placed: its size rounded to 8 in a segment,
 * a large item's allocation as the allocator counts it. */
size_t cache_item_footprint(const struct item *it);

#endif
