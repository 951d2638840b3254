/*
 * Stress test of the segment store (cache.h: MEMORY, EVICTION): worker
 * threads write, read, delete and touch keys of mixed sizes in a small
 * cache (4 MiB: 32 KiB segments), so that eviction, carrying visited items
 * forward (rhashtable_replace_fast while readers read) and segment reuse
 * after a grace period happen all the time, and a model says what every
 * read may see:
 *   - each worker owns its keys (one writer a key) and writes versioned,
 *     self-describing values: key id, version and length in a header, a
 *     filler derived from them, the client flags derived from the version;
 *     lengths mostly 16-300 B, some 1-16 KiB, a few 17-100 KiB (large
 *     items), and a few just below the segment size, among them large
 *     items whose allocation is exactly one segment's bytes (a set must
 *     store them: cache.h allows CACHE_NO_MEMORY only for an item that
 *     cannot fit even in an empty cache);
 *   - a value is copied inside the read-side section and checked outside:
 *     it must be intact and belong to its key; for the worker's own keys it
 *     is exactly the last version written or a miss (eviction), a miss after
 *     a delete; another worker's key shows no version above the one its
 *     owner has started writing;
 *   - every worker re-reads a small hot set often (so its items are
 *     visited and carried forward rather than evicted);
 *   - holder threads take item_get() on large items, leave the section,
 *     keep several at once while the workers overwrite and evict, check the
 *     bytes are unchanged and item_put() them;
 *   - at the end, the stats must be sane after cache_reclaim (evictions and
 *     carried items seen, nothing retiring, accounted within the limit) and
 *     curr_items must be the number of keys a final lookup pass finds, each
 *     exactly its model version.
 * A plain executable, so that it runs under TSan (criterion cannot).
 * RHKV_STRESS_MS bounds its time (default 3000 ms), RHKV_STRESS_LIMIT_KB
 * sets the cache's limit (default 4096 KiB), RHKV_STRESS_SEG_EDGE=0 leaves
 * out the values whose large item takes just one segment's bytes.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "server/store/cache.h"

#define WORKERS	    4
#define HOLDERS	    2
#define KEYS	    1500 /* per worker */
#define HOT	    8	 /* a worker's hot keys: its first ones */
#define VALUE_MAX   (100u * 1024)
#define HELD_MAX    6
#define VALUE_MAGIC 0x52564b53u

/* The value's header; the filler follows. */
struct vhdr {
	uint32_t magic, keyid, version, len;
};

/* A worker's model of its keys: present (the last write stored, no
 * delete since), and the last version written, which other threads read to
 * bound what they may see. */
struct worker {
	unsigned int id;
	uint64_t rng;
	bool present[KEYS];
	_Atomic uint32_t last[KEYS];
	unsigned long writes, reads, hits, deletes, touches;
	char *val, *got, *want;
};

static struct cache *cache;
static uint64_t limit = 4u << 20; /* RHKV_STRESS_LIMIT_KB */
static bool seg_edge = true;	  /* RHKV_STRESS_SEG_EDGE=0: none */
static uint32_t seg_size; /* the cache's, set before the threads start */
static struct worker workers[WORKERS];
static _Atomic int stop;
static _Atomic int failed;
static _Atomic unsigned long held_checked;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	atomic_store(&failed, 1);
	atomic_store(&stop, 1);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The value's length, from its key and version: mostly 16-300 B, some
 * 1-16 KiB, a few 17-100 KiB, and a few just below the segment size: a
 * large item whose allocation is exactly one segment falls among them. */
static uint32_t value_len(uint32_t keyid, uint32_t version)
{
	uint64_t h = mix(((uint64_t)keyid << 32) | version);
	uint64_t r = h % 1000, x = h >> 20;

	if (r < 960)
		return 16 + (uint32_t)(x % 285);
	if (r < 990)
		return 1024 + (uint32_t)(x % (15 * 1024 + 1));
	if (r < 995 || !seg_edge || seg_size > VALUE_MAX)
		return 17 * 1024 + (uint32_t)(x % (83 * 1024 + 1));
	if (x & 1)
		return seg_size - 200 + (uint32_t)(x % 160);
	/* The length whose allocation is just seg_size where malloc's usable
	 * size is what was asked (TSan's, ASan's): header 28, key 9, flags
	 * (odd versions) 4, struct large_item 80, malloc's chunk header 8. */
	return seg_size - 125 - ((version & 1) ? 4 : 0);
}

static uint32_t value_flags(uint32_t keyid, uint32_t version)
{
	return (version & 1) ? keyid ^ 0x5a5a0000u : 0;
}

/* Writes the value of keyid's version into buf; returns its length. */
static uint32_t value_make(char *buf, uint32_t keyid, uint32_t version)
{
	struct vhdr h = { VALUE_MAGIC, keyid, version,
			  value_len(keyid, version) };
	uint64_t seed = mix(((uint64_t)version << 32) | keyid) | 1;
	uint32_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i + 8 <= h.len; i += 8) {
		uint64_t w = seed ^ (i * 0x9e3779b97f4a7c15ull);

		memcpy(buf + i, &w, 8);
	}
	for (; i < h.len; i++)
		buf[i] = (char)(seed >> (i % 8 * 8));
	return h.len;
}

/* Whether the n bytes at v are an intact value of keyid (scratch: room
 * for the largest value); *version receives its version. Says why not. */
static bool value_check(const char *v, uint32_t n, uint32_t flags,
			uint32_t keyid, char *scratch, uint32_t *version)
{
	struct vhdr h;

	if (n < sizeof(h)) {
		fail("key %u: value of %u bytes, shorter than its header",
		     keyid, n);
		return false;
	}
	memcpy(&h, v, sizeof(h));
	if (h.magic != VALUE_MAGIC || h.keyid != keyid || h.len != n) {
		fail("key %u: header magic %#x key %u len %u, value of %u "
		     "bytes",
		     keyid, h.magic, h.keyid, h.len, n);
		return false;
	}
	if (value_len(keyid, h.version) != n) {
		fail("key %u version %u: %u bytes, want %u", keyid, h.version,
		     n, value_len(keyid, h.version));
		return false;
	}
	value_make(scratch, keyid, h.version);
	if (memcmp(scratch, v, n) != 0) {
		uint32_t i = 0;

		while (scratch[i] == v[i])
			i++;
		fail("key %u version %u (%u bytes): byte %u differs", keyid,
		     h.version, n, i);
		return false;
	}
	if (flags != value_flags(keyid, h.version)) {
		fail("key %u version %u: flags %#x, want %#x", keyid, h.version,
		     flags, value_flags(keyid, h.version));
		return false;
	}
	*version = h.version;
	return true;
}

static struct cache_key key_of(char *buf, uint32_t keyid)
{
	struct cache_key k;

	k.n = (size_t)snprintf(buf, 32, "st%u:%05u", keyid / KEYS,
			       keyid % KEYS);
	k.p = buf;
	return k;
}

/* Looks keyid up (cache_find when visit, else cache_lookup), copies its
 * value into got inside the section and checks it outside (scratch: room
 * for the largest value). Returns the version found, 0 on a miss or a
 * failure; *hit tells a hit. */
static uint32_t copy_check(uint32_t keyid, bool visit, char *got, char *scratch,
			   bool *hit)
{
	char kb[32];
	struct cache_key k = key_of(kb, keyid);
	struct item *it;
	uint32_t n = 0, flags = 0, version = 0;
	bool key_ok = true;

	rhkv_rcu_read_lock();
	it = visit ? cache_find(cache, k, NULL) : cache_lookup(cache, k, NULL);
	*hit = it != NULL;
	if (it) {
		n = item_nbytes(it);
		flags = item_flags(it);
		key_ok = it->nkey == k.n && !memcmp(item_key(it), k.p, k.n);
		if (n <= VALUE_MAX)
			memcpy(got, item_value(it), n);
	}
	rhkv_rcu_read_unlock();
	if (!*hit)
		return 0;
	if (!key_ok) {
		fail("lookup of %.*s returned another key's item", (int)k.n,
		     k.p);
		return 0;
	}
	if (n > VALUE_MAX) {
		fail("key %u: value of %u bytes, longer than any written",
		     keyid, n);
		return 0;
	}
	if (!value_check(got, n, flags, keyid, scratch, &version))
		return 0;
	return version;
}

/* Reads keyid as a get does and checks what it finds. Returns the version
 * found, 0 on a miss. */
static uint32_t read_key(struct worker *w, uint32_t keyid)
{
	bool hit;
	uint32_t version = copy_check(keyid, true, w->got, w->want, &hit);

	w->reads++;
	w->hits += hit;
	if (!version)
		return 0;
	if (version > atomic_load(&workers[keyid / KEYS].last[keyid % KEYS]))
		fail("key %u: version %u, above the last one written (%u)",
		     keyid, version,
		     atomic_load(&workers[keyid / KEYS].last[keyid % KEYS]));
	return version;
}

/* Reads one of w's own keys and holds it to the model. */
static void read_own(struct worker *w, uint32_t k)
{
	uint32_t keyid = w->id * KEYS + k;
	uint32_t v = read_key(w, keyid);
	uint32_t last = atomic_load_explicit(&w->last[k], memory_order_relaxed);

	if (v && !w->present[k])
		fail("key %u: version %u read after its delete", keyid, v);
	else if (v && v != last)
		fail("key %u: version %u read, the last written is %u", keyid,
		     v, last);
}

static void write_own(struct worker *w, uint32_t k)
{
	uint32_t keyid = w->id * KEYS + k;
	uint32_t version =
		atomic_load_explicit(&w->last[k], memory_order_relaxed) + 1;
	char kb[32];
	struct cache_key key = key_of(kb, keyid);
	uint32_t n, flags = value_flags(keyid, version);
	enum cache_result r;

	/* Announce the version before any reader can see it. */
	atomic_store(&w->last[k], version);
	n = value_make(w->val, keyid, version);
	if (rnd(&w->rng) % 4) {
		r = cache_store(cache, w->id, CACHE_SET, key, flags, 0, w->val,
				n, 0, NULL);
	} else {
		struct cache_write cw = { .mode = CACHE_SET,
					  .key = key,
					  .flags = flags,
					  .exptime = cache_abs_exptime(3600),
					  .value = w->val,
					  .nbytes = n };

		r = cache_write(cache, w->id, &cw, NULL);
	}
	w->writes++;
	if (r != CACHE_STORED) {
		struct cache_stats st;

		/* cache.h: CACHE_NO_MEMORY only for an item that cannot fit
		 * even in an empty cache; every value here fits. */
		cache_get_stats(cache, &st, false);
		fail("key %u version %u (%u bytes): set returned %d%s "
		     "(segment size %llu, accounted %llu of %llu, %lu "
		     "segments pooled, %llu retiring)",
		     keyid, version, n, (int)r,
		     r == CACHE_NO_MEMORY ? " (CACHE_NO_MEMORY)" : "",
		     (unsigned long long)st.segment_size,
		     (unsigned long long)st.accounted,
		     (unsigned long long)st.limit, st.segments_free,
		     (unsigned long long)st.retired_bytes);
		return;
	}
	w->present[k] = true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = rnd(&w->rng);
		unsigned int op = r % 100;
		uint32_t k = (uint32_t)((r >> 8) % KEYS);
		uint32_t hot = (uint32_t)((r >> 8) % HOT);
		unsigned int other = (unsigned int)((r >> 24) % WORKERS);

		if (op < 30) {
			write_own(w, k);
		} else if (op < 36) {
			write_own(w, hot);
		} else if (op < 52) {
			read_own(w, hot);
		} else if (op < 62) {
			read_key(w, other * KEYS + hot);
		} else if (op < 80) {
			read_own(w, k);
		} else if (op < 90) {
			read_key(w, other * KEYS + k);
		} else if (op < 95) {
			char kb[32];
			uint32_t keyid = w->id * KEYS + k;
			bool live = cache_delete(cache, key_of(kb, keyid));

			/* Eviction may have taken it: a live one only when
			 * present. */
			if (live && !w->present[k])
				fail("key %u: delete found a live item after "
				     "its delete",
				     keyid);
			w->present[k] = false;
			w->deletes++;
			read_own(w, k);
		} else {
			char kb[32];
			uint32_t keyid = w->id * KEYS + k;
			bool live = cache_touch(cache, key_of(kb, keyid),
						cache_abs_exptime(7200));

			if (live && !w->present[k])
				fail("key %u: touch found a live item after "
				     "its delete",
				     keyid);
			w->touches++;
			read_own(w, k);
		}
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

struct held {
	struct item *it;
	uint32_t keyid, n, flags, version;
};

/* Checks a held large item's bytes (no section: the reference keeps it),
 * then drops the reference. */
static void held_release(struct held *h, char *scratch)
{
	char kb[32];
	struct cache_key k = key_of(kb, h->keyid);
	uint32_t version = 0;

	if (item_nbytes(h->it) != h->n || item_flags(h->it) != h->flags ||
	    h->it->nkey != k.n || memcmp(item_key(h->it), k.p, k.n))
		fail("held item of key %u changed its header", h->keyid);
	else if (value_check(item_value(h->it), h->n, h->flags, h->keyid,
			     scratch, &version) &&
		 version != h->version)
		fail("held item of key %u: version %u became %u", h->keyid,
		     h->version, version);
	item_put(h->it);
	atomic_fetch_add(&held_checked, 1);
}

static void *holder_main(void *arg)
{
	uint64_t rng = mix((uintptr_t)arg + 77) | 1;
	char *scratch = malloc(VALUE_MAX);
	struct held held[HELD_MAX];
	unsigned int nheld = 0;

	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = rnd(&rng);
		uint32_t keyid = (uint32_t)(r % (WORKERS * KEYS));
		char kb[32];
		struct cache_key k = key_of(kb, keyid);
		struct held h = { .keyid = keyid };
		struct item *it;

		rhkv_rcu_read_lock();
		it = cache_find(cache, k, NULL);
		if (it && it->nbytes16 == ITEM_NBYTES_LARGE) {
			item_get(it);
			h.it = it;
			h.n = item_nbytes(it);
			h.flags = item_flags(it);
		}
		rhkv_rcu_read_unlock();
		if (!h.it)
			continue;
		if (h.n < sizeof(struct vhdr)) {
			fail("held item of key %u: %u bytes", keyid, h.n);
			item_put(h.it);
			break;
		}
		memcpy(&h.version, item_value(h.it) + 8, 4);
		if (nheld == HELD_MAX) {
			unsigned int i = (unsigned int)((r >> 32) % HELD_MAX);

			held_release(&held[i], scratch);
			held[i] = h;
		} else {
			held[nheld++] = h;
		}
		{
			struct timespec ts = { 0, 200000 + (long)(r >> 44) %
								   800000 };

			nanosleep(&ts, NULL);
		}
	}
	/* Drop the last ones after the workers have moved on further. */
	for (unsigned int i = 0; i < nheld; i++)
		held_release(&held[i], scratch);
	rhkv_rcu_unregister_thread();
	free(scratch);
	return NULL;
}

/* Monotonic milliseconds. */
static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The final pass: every key against its model (all writers done).
 * Returns how many keys were found. */
static unsigned long final_pass(char *got, char *scratch)
{
	unsigned long found = 0;

	for (uint32_t keyid = 0; keyid < WORKERS * KEYS; keyid++) {
		struct worker *w = &workers[keyid / KEYS];
		uint32_t k = keyid % KEYS;
		bool hit;
		uint32_t version = copy_check(keyid, false, got, scratch, &hit);

		found += hit;
		if (version &&
		    (!w->present[k] || version != atomic_load(&w->last[k])))
			fail("final: key %u: version %u, model %s %u", keyid,
			     version, w->present[k] ? "present" : "deleted",
			     atomic_load(&w->last[k]));
	}
	return found;
}

static void print_stats(const char *when, const struct cache_stats *st)
{
	printf("%s: items %lu bytes %llu accounted %llu (limit %llu) "
	       "retired %llu large %llu segments %lu (free %lu, size %llu) "
	       "evictions %lu carried %lu passed_over %lu freed_empty %lu "
	       "reclaim_waits %lu\n",
	       when, st->curr_items, (unsigned long long)st->bytes,
	       (unsigned long long)st->accounted, (unsigned long long)st->limit,
	       (unsigned long long)st->retired_bytes,
	       (unsigned long long)st->large_bytes, st->segments,
	       st->segments_free, (unsigned long long)st->segment_size,
	       st->evictions, st->carried, st->passed_over,
	       st->segments_freed_empty, st->reclaim_waits);
}

/* The end: the accounting settled and sane, curr_items what a pass finds. */
static void final_checks(void)
{
	char *got = malloc(VALUE_MAX), *scratch = malloc(VALUE_MAX);
	struct cache_stats st, st2;
	unsigned long found = 0;
	int tries;

	for (tries = 0; tries < 500; tries++) {
		cache_reclaim(cache);
		cache_get_stats(cache, &st, false);
		found = final_pass(got, scratch);
		cache_get_stats(cache, &st2, false);
		if (st.retired_bytes == 0 && st.curr_items == found &&
		    st2.curr_items == found)
			break;
		/* The maintenance thread may still evict ahead. */
		sleep_ms(20);
	}
	print_stats("end", &st);
	if (st.retired_bytes != 0)
		fail("retired_bytes %llu after cache_reclaim",
		     (unsigned long long)st.retired_bytes);
	if (st.curr_items != found || st2.curr_items != found)
		fail("curr_items %lu (then %lu), a lookup pass found %lu",
		     st.curr_items, st2.curr_items, found);
	if (st.accounted > st.limit || st.limit != limit)
		fail("accounted %llu, limit %llu (set %llu)",
		     (unsigned long long)st.accounted,
		     (unsigned long long)st.limit, (unsigned long long)limit);
	if (st.bytes > st.accounted || st.segment_live > st.bytes)
		fail("bytes %llu, segment_live %llu, accounted %llu",
		     (unsigned long long)st.bytes,
		     (unsigned long long)st.segment_live,
		     (unsigned long long)st.accounted);
	if (st.evictions == 0)
		fail("no evictions: the cache never filled");
	if (st.carried == 0)
		fail("no item carried forward by eviction");
	if (found == 0)
		fail("no key left in the cache");
	free(got);
	free(scratch);
}

int main(void)
{
	const char *ms_env = getenv("RHKV_STRESS_MS");
	long budget = ms_env ? atol(ms_env) : 3000;
	pthread_t wt[WORKERS], ht[HOLDERS];
	unsigned long writes = 0, reads = 0, hits = 0, dels = 0, touches = 0;
	struct cache_stats st;
	long t0;

	rhkv_rcu_register_thread();
	if (getenv("RHKV_STRESS_LIMIT_KB"))
		limit = (uint64_t)atol(getenv("RHKV_STRESS_LIMIT_KB")) << 10;
	cache = cache_create(WORKERS, limit);
	if (!cache) {
		fprintf(stderr, "FAIL: cache_create\n");
		return 1;
	}
	cache_get_stats(cache, &st, false);
	seg_size = (uint32_t)st.segment_size;
	seg_edge = !getenv("RHKV_STRESS_SEG_EDGE") ||
		   atoi(getenv("RHKV_STRESS_SEG_EDGE")) != 0;
	for (unsigned int i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];

		w->id = i;
		w->rng = mix(i + 1) | 1;
		w->val = malloc(VALUE_MAX);
		w->got = malloc(VALUE_MAX);
		w->want = malloc(VALUE_MAX);
		pthread_create(&wt[i], NULL, worker_main, w);
	}
	for (unsigned int i = 0; i < HOLDERS; i++)
		pthread_create(&ht[i], NULL, holder_main, (void *)(uintptr_t)i);
	t0 = now_ms();
	/* Meanwhile: grace periods of our own and stats read under load. */
	while (!atomic_load(&stop) && now_ms() - t0 < budget) {
		sleep_ms(25);
		cache_reclaim(cache);
		cache_get_stats(cache, &st, false);
		if (st.accounted > st.limit)
			fail("during the run: accounted %llu above the limit "
			     "%llu",
			     (unsigned long long)st.accounted,
			     (unsigned long long)st.limit);
	}
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < WORKERS; i++)
		pthread_join(wt[i], NULL);
	for (unsigned int i = 0; i < HOLDERS; i++)
		pthread_join(ht[i], NULL);
	for (unsigned int i = 0; i < WORKERS; i++) {
		writes += workers[i].writes;
		reads += workers[i].reads;
		hits += workers[i].hits;
		dels += workers[i].deletes;
		touches += workers[i].touches;
	}
	printf("%ld ms: %lu writes, %lu reads (%lu hits), %lu deletes, %lu "
	       "touches, %lu large items held and checked\n",
	       now_ms() - t0, writes, reads, hits, dels, touches,
	       atomic_load(&held_checked));
	if (!atomic_load(&failed))
		final_checks();
	cache_destroy(cache);
	for (unsigned int i = 0; i < WORKERS; i++) {
		free(workers[i].val);
		free(workers[i].got);
		free(workers[i].want);
	}
	rhkv_rcu_unregister_thread();
	printf("%s\n", atomic_load(&failed) ? "FAIL" : "PASS");
	return atomic_load(&failed) ? 1 : 0;
}
