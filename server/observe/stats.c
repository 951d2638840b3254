/*
 * The `stats` groups: memcached's general statistics (summed over worker
 * threads, minus the last `stats reset`), `stats settings`, `items`,
 * `slabs`, `sizes`, `table`, `memory` and `latency` (`conns` and
 * `cachedump` are in stats_dump.c, `detail` in stats_detail.c, `hotkeys`
 * in stats_hotkeys.c). Every group emits entries into a
 * stats_sink (stats.h): the text lines and the binary protocol's map are
 * sinks here, the Prometheus endpoint's (general stats only) is metrics.c's.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/text.h"
#include "config.h"
#include "observe.h"
#include "stats_internal.h"

/* The TLS listener's numbers, from the net layer; all 0 without one. */
static struct observe_tls tls_numbers(const struct observe *obs)
{
	struct observe_tls t = { 0 };

	if (obs->net.tls)
		obs->net.tls(obs->net.arg, &t);
	return t;
}

/* Seconds since the certificate was loaded; 0 if the clock went back. */
static uint64_t refresh_age(const struct observe_tls *t)
{
	int64_t age = clock_now_s() - t->refreshed;

	return t->on && age > 0 ? (uint64_t)age : 0;
}

static uint64_t conn_bytes(const struct observe *obs)
{
	return obs->net.conn_bytes ? obs->net.conn_bytes(obs->net.arg) : 0;
}

static void count_listener(void *arg, int fd, bool udp)
{
	(void)fd;
	(void)udp;
	++*(uint64_t *)arg;
}

/* Listening sockets, each a connection structure in memcached. */
static uint64_t listener_count(const struct observe *obs)
{
	uint64_t n = 0;

	if (obs->net.listeners)
		obs->net.listeners(obs->net.arg, count_listener, &n);
	return n;
}

static void sum_threads(struct observe *obs, struct stats_sum *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < obs->nthreads; i++) {
		struct thread_stats *t = &obs->threads[i].stats;
#define STATS_SUM(name, type, help) \
	sum->name += atomic_load_explicit(&t->name, memory_order_relaxed);
		THREAD_STATS(STATS_SUM)
#undef STATS_SUM
	}
}

static void sum_latency(struct observe *obs,
			struct latency_snapshot out[LAT_NCLASSES])
{
	memset(out, 0, sizeof(*out) * LAT_NCLASSES);
	for (unsigned int i = 0; i < obs->nthreads; i++)
		for (unsigned int k = 0; k < LAT_NCLASSES; k++)
			latency_add(&out[k], &obs->threads[i].lat[k]);
}

void observe_sum_stats(struct observe *obs, struct stats_sum *sum)
{
	sum_threads(obs, sum);
	pthread_mutex_lock(&obs->stats_lock);
#define STATS_BASE(name, type, help) sum->name -= obs->baseline.name;
	THREAD_STATS(STATS_BASE)
#undef STATS_BASE
	pthread_mutex_unlock(&obs->stats_lock);
}

void observe_sum_latency(struct observe *obs,
			 struct latency_snapshot out[LAT_NCLASSES])
{
	sum_latency(obs, out);
	pthread_mutex_lock(&obs->stats_lock);
	for (unsigned int k = 0; k < LAT_NCLASSES; k++)
		latency_sub(&out[k], &obs->lat_baseline[k]);
	pthread_mutex_unlock(&obs->stats_lock);
}

void observe_reset_stats(struct observe *obs)
{
	/* Big (a histogram per class): not on the caller's stack. */
	static _Thread_local struct latency_snapshot lat[LAT_NCLASSES];
	struct stats_sum now;

	sum_threads(obs, &now);
	sum_latency(obs, lat);
	pthread_mutex_lock(&obs->stats_lock);
	obs->baseline = now;
	memcpy(obs->lat_baseline, lat, sizeof(lat));
	atomic_store(&obs->total_conns, 0);
	atomic_store(&obs->rejected_conns, 0);
	pthread_mutex_unlock(&obs->stats_lock);
	stats_detail_reset(obs);
}

static void put_seconds(const struct stats_sink *k, const char *name,
			const char *help, struct timeval tv)
{
	const struct stats_entry e = { .name = name,
				       .help = help,
				       .kind = STATS_SECONDS,
				       .sec = tv.tv_sec,
				       .usec = tv.tv_usec };

	k->emit(k->arg, &e);
}

static uint64_t log2_floor(uint64_t v)
{
	uint64_t n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

/* Entries both the general stats and `stats memory` show. */
static const char help_limit[] =
	"Bytes the cache may use (-m): items, removed items not yet freed "
	"and the hash table";
static const char help_items[] = "Items in the cache";
static const char help_bytes[] = "Bytes of the items in the cache, as "
				 "placed (8-byte rounded in a segment)";
static const char help_hash_bytes[] = "Bytes of the hash table's bucket "
				      "arrays";
static const char help_retired[] =
	"Bytes of segments and large items removed from the cache, reused "
	"once no reader can still see them";
static const char help_conn_bytes[] =
	"Bytes of every client connection's input and output buffers";

/* Entries the general stats and `stats items` or `stats slabs` show. */
static const char help_requested[] =
	"Bytes the items hold: header, key and value";
static const char help_evictions[] =
	"Live items removed to make room for new ones";
static const char help_evicted_unfetched[] =
	"Evicted items that were never read";
static const char help_evicted_active[] = "Evicted items that had been read";
static const char help_expired_unfetched[] =
	"Expired items taken out that were never read";
static const char help_sweep_reclaimed[] =
	"Expired items the expiry sweep took out";
static const char help_sweep_checked[] = "Items the expiry sweep looked at";
static const char help_chunks[] = "Items: one chunk each";
static const char help_none_free[] = "Allocated and unused: none (0)";

/* What the start found in --memory-file (warm restart). */
static void put_restore(const struct stats_sink *k, struct observe *obs)
{
	static const char *const how[] = {
		[CACHE_RESTORE_NONE] = "none",
		[CACHE_RESTORE_NEW] = "new",
		[CACHE_RESTORE_RESTORED] = "restored",
		[CACHE_RESTORE_EMPTY] = "empty",
	};
	struct cache_restore r;

	cache_get_restore(obs->cache, &r);
	stats__put_text(k, "restore",
			"What the start found in --memory-file: none (no "
			"file), new, restored, or empty (not restored; the "
			"log says why)",
			how[r.how]);
	stats__put_u(k, STATS_GAUGE, "restore_items",
		     "Items restored from --memory-file at the start", r.items);
	stats__put_u(k, STATS_GAUGE, "restore_skipped_items",
		     "Items of --memory-file not restored: expired (or "
		     "flushed by a delayed flush_all) while down, or large "
		     "items whose checksum failed",
		     r.expired + r.duplicates + r.corrupt_large);
	stats__put_u(k, STATS_GAUGE, "restore_skipped_segments",
		     "Segments of --memory-file not restored: their checksum "
		     "failed",
		     r.corrupt_segments);
	stats__put_real(k, "restore_seconds",
			"Seconds the restore from --memory-file took",
			r.seconds);
}

void observe_stats_each(struct observe *obs, const struct stats_sink *k)
{
	uint64_t watchers, sent, skipped;
	int64_t now = clock_now_s();
	struct cache_stats cs;
	struct stats_sum s;
	struct rusage ru;
	struct observe_tls tls = tls_numbers(obs);

	observe_sum_stats(obs, &s);
	cache_get_stats(obs->cache, &cs, false);
	getrusage(RUSAGE_SELF, &ru);
	stats__put_u(k, STATS_GAUGE, "pid", "Process id of the server",
		     (uint64_t)getpid());
	stats__put_u(k, STATS_GAUGE, "uptime",
		     "Seconds since the server started",
		     (uint64_t)(now - obs->started));
	stats__put_u(k, STATS_GAUGE, "time",
		     "The server's clock, in unix seconds", (uint64_t)now);
	stats__put_text(
		k, "version",
		"The memcached version the server answers as, then rhkv's",
		RHKV_VERSION);
	stats__put_text(k, "libevent", "Version of libevent the server runs on",
			event_get_version());
	stats__put_u(k, STATS_GAUGE, "pointer_size",
		     "Bits of a pointer on the server", 8 * sizeof(void *));
	put_seconds(k, "rusage_user", "CPU time the server spent in user mode",
		    ru.ru_utime);
	put_seconds(k, "rusage_system",
		    "CPU time the kernel spent on the server's behalf",
		    ru.ru_stime);
	stats__put_u(k, STATS_GAUGE, "max_connections",
		     "Client connections allowed at once (-c)",
		     (uint64_t)obs->cfg->conn_limit);
	stats__put_u(k, STATS_GAUGE, "curr_connections",
		     "Client connections open",
		     (uint64_t)atomic_load(&obs->curr_conns));
	stats__put_u(k, STATS_COUNTER, "total_connections",
		     "Client connections accepted",
		     atomic_load(&obs->total_conns));
	stats__put_u(k, STATS_GAUGE, "tls_connections",
		     "TLS client connections open (handshaking included)",
		     tls.connections);
	stats__put_u(k, STATS_GAUGE, "time_since_server_cert_refresh",
		     "Seconds since the TLS certificate was last loaded",
		     refresh_age(&tls));
	stats__put_u(
		k, STATS_COUNTER, "rejected_connections",
		"Client connections closed at once: max_connections were open",
		atomic_load(&obs->rejected_conns));
	stats__put_u(
		k, STATS_GAUGE, "connection_structures",
		"Connection structures allocated: open client connections and "
		"listening sockets",
		(uint64_t)atomic_load(&obs->curr_conns) + listener_count(obs));
#define STATS_PUT(name, type, help) \
	stats__put_u(k, STATS_##type, #name, help, s.name);
	THREAD_STATS(STATS_PUT)
#undef STATS_PUT
	stats__put_u(k, STATS_GAUGE, "limit_maxbytes", help_limit, cs.limit);
	stats__put_u(
		k, STATS_GAUGE, "accepting_conns",
		"1 while the server accepts connections (rhkvd never stops: at "
		"max_connections it closes new ones at once)",
		1);
	stats__put_u(
		k, STATS_COUNTER, "listen_disabled_num",
		"Times accepting was paused at max_connections: always 0 in "
		"rhkvd, which closes new connections instead",
		0);
	stats__put_u(k, STATS_GAUGE, "threads", "Worker threads",
		     obs->nthreads);
	stats__put_u(k, STATS_GAUGE, "bytes", help_bytes, cs.bytes);
	stats__put_u(k, STATS_GAUGE, "curr_items", help_items, cs.curr_items);
	stats__put_u(k, STATS_GAUGE, "hash_power_level",
		     "Log2 of the hash table's buckets",
		     log2_floor(cs.table.size));
	stats__put_u(k, STATS_GAUGE, "hash_bytes", help_hash_bytes,
		     cs.hash_bytes);
	stats__put_u(k, STATS_GAUGE, "retired_bytes", help_retired,
		     cs.retired_bytes);
	stats__put_u(k, STATS_GAUGE, "conn_buffer_bytes", help_conn_bytes,
		     conn_bytes(obs));
	watch_counts(&obs->watch, &watchers, &sent, &skipped);
	stats__put_u(k, STATS_COUNTER, "log_watcher_skipped",
		     "Log lines dropped: a watcher's buffer was full", skipped);
	stats__put_u(k, STATS_COUNTER, "log_watcher_sent",
		     "Log lines written into watchers' buffers", sent);
	stats__put_u(k, STATS_GAUGE, "log_watchers",
		     "Connections in watch mode", watchers);
	stats__put_u(k, STATS_COUNTER, "malloc_fails",
		     "Items the allocator could not allocate", cs.malloc_fails);
	stats__put_u(k, STATS_COUNTER, "lru_crawler_starts",
		     "Passes of the expiry sweep over the whole table",
		     cs.sweep_passes);
	stats__put_u(k, STATS_COUNTER, "crawler_reclaimed",
		     help_sweep_reclaimed, cs.sweep_reclaimed);
	stats__put_u(k, STATS_COUNTER, "crawler_items_checked",
		     help_sweep_checked, cs.sweep_checked);
	stats__put_u(k, STATS_COUNTER, "evictions", help_evictions,
		     cs.evictions);
	stats__put_u(k, STATS_COUNTER, "evicted_unfetched",
		     help_evicted_unfetched, cs.evicted_unfetched);
	stats__put_u(k, STATS_COUNTER, "evicted_active", help_evicted_active,
		     cs.evicted_active);
	stats__put_u(k, STATS_COUNTER, "expired_unfetched",
		     help_expired_unfetched, cs.expired_unfetched);
	stats__put_u(
		k, STATS_COUNTER, "reclaimed",
		"Expired items taken out of the cache (by the sweep, a lookup "
		"or eviction)",
		cs.reclaimed);
	stats__put_u(k, STATS_GAUGE, "prefix_tombstones",
		     "Prefix flushes pending: their tombstones hide the items "
		     "they cover until the sweep has taken them out",
		     cs.prefix_tombstones);
	stats__put_u(
		k, STATS_COUNTER, "prefix_flushes_refused",
		"Prefix flushes refused: --max-prefix-flushes were pending",
		cs.prefix_refused);
	stats__put_u(k, STATS_COUNTER, "prefix_tombstones_retired",
		     "Prefix tombstones retired after a whole sweep pass",
		     cs.prefix_retired);
	stats__put_u(k, STATS_COUNTER, "prefix_reclaimed",
		     "Items taken out of the cache because a prefix flush "
		     "covered them",
		     cs.prefix_reclaimed);
	put_restore(k, obs);
	stats__put_u(k, STATS_GAUGE, "hash_buckets",
		     "Buckets of the hash table", cs.table.size);
	stats__put_u(k, STATS_GAUGE, "hash_is_expanding",
		     "1 while the hash table is being resized, else 0",
		     cs.table.resizing);
}

struct settings_ctx {
	const struct stats_sink *k;
	uint64_t maxbytes; /* the cache's limit now */
	bool sweep;	   /* lru_crawler enable/disable */
	int verify;	   /* --tls-verify as OpenSSL's flags */
};

/* TLS settings in memcached's spelling: the verify mode as the OpenSSL
 * flags it sets (none 0, optional 1, require 3), the lowest version as
 * "tlsv1.2". Returns the value to show: value, or buf. */
static const char *tls_setting(const struct settings_ctx *x, const char *name,
			       const char *value, char *buf, size_t len)
{
	if (!strcmp(name, "ssl_verify_mode")) {
		snprintf(buf, len, "%d", x->verify);
		return buf;
	}
	if (!strcmp(name, "ssl_min_version") && strncmp(value, "tlsv", 4)) {
		snprintf(buf, len, "tlsv%s", value);
		return buf;
	}
	return value;
}

static void settings_entry(const char *name, const char *value, void *arg)
{
	const struct settings_ctx *x = arg;
	char buf[24], tls[64];

	/* -m at start; cache_memlimit changes it since. */
	if (!strcmp(name, "maxbytes")) {
		snprintf(buf, sizeof(buf), "%" PRIu64, x->maxbytes);
		value = buf;
	}
	if (!strcmp(name, "lru_crawler"))
		value = x->sweep ? "yes" : "no";
	value = tls_setting(x, name, value, tls, sizeof(tls));
	stats__put_text(x->k, name, NULL, value);
	/* memcached's name for it, too. */
	if (!strcmp(name, "ssl_ktls"))
		stats__put_text(x->k, "ssl_kernel_tls", NULL, value);
}

/* memcached's TLS setting that no option changes in rhkvd: keys are read
 * as PEM (OpenSSL's SSL_FILETYPE_PEM, 1). (ssl_wbuf_size and
 * ssl_session_cache come with the options.) */
static void tls_fixed_settings(const struct stats_sink *k)
{
	stats__put_text(k, "ssl_keyformat", NULL, "1");
}

static void stats_settings(struct observe *obs, const struct stats_sink *k)
{
	struct cache_stats cs;
	struct settings_ctx x = { k, 0, true, 0 };
	char cap[24];

	cache_get_stats(obs->cache, &cs, false);
	x.maxbytes = cs.limit;
	x.sweep = cache_sweep_enabled(obs->cache);
	x.verify = tls_numbers(obs).verify;
	config_each(obs->cfg, settings_entry, &x);
	tls_fixed_settings(k);
	/* Not options: the most cache_memlimit can set (what the arena
	 * holds); `stats detail` switches counting at run time. */
	snprintf(cap, sizeof(cap), "%" PRIu64, cache_limit_max(obs->cache));
	stats__put_text(k, "maxbytes_cap", NULL, cap);
	stats__put_text(k, "stat_key_prefix", NULL,
			(char[]){ obs->cfg->detail_delim, '\0' });
	stats__put_text(k, "watcher_logbuf_size", NULL, WATCH_BUF_TEXT);
	stats__put_text(
		k, "detail_enabled", NULL,
		atomic_load_explicit(&obs->detail_on, memory_order_relaxed)
			? "yes"
			: "no");
}

/*
 * `stats items` and `stats slabs`. rhkvd has no slab classes: items of
 * every size share segments and eviction takes the oldest segment
 * whatever it holds. Both groups show that
 * as memcached would show a server whose items all lie in one class,
 * class 1, holding every item: its counts are the cache's; sizes a slab
 * allocator has and malloc has not are mapped as docs/stats.md says (one
 * "chunk" per item, a "page" per item). Like memcached, a class without
 * items is not shown.
 */
/* One entry of class STATS_ITEM_CLASS: "<prefix>1:<name>". */
struct class_stat {
	const char *name;
	enum stats_kind kind;
	uint64_t v;
	const char *help;
};

static void put_class(const struct stats_sink *k, const char *prefix,
		      const struct class_stat *a, size_t n)
{
	char full[64];

	for (size_t i = 0; i < n; i++) {
		snprintf(full, sizeof(full), "%s%d:%s", prefix,
			 STATS_ITEM_CLASS, a[i].name);
		stats__put_u(k, a[i].kind, full, a[i].help, a[i].v);
	}
}

/* The value and help of the general counter h->name. */
static void sum_lookup(const struct stats_sum *s, struct class_stat *h)
{
#define STATS_FIND(n, type, help_text) \
	if (!strcmp(h->name, #n)) {    \
		h->v = s->n;           \
		h->help = help_text;   \
	}
	THREAD_STATS(STATS_FIND)
#undef STATS_FIND
}

/*
 * Memory allocated for items (`stats slabs` total_malloced), as memcached
 * counts the slab pages it holds: segments in use (pooled empty ones are
 * not) and large items' allocations in whole pages. It does not move when
 * items replace others of about their size; cs->bytes, the items as
 * placed, does. The two segment counts are read apart: never below zero.
 */
static uint64_t items_malloced(const struct cache_stats *cs)
{
	unsigned long in_use = cs->segments > cs->segments_free
				       ? cs->segments - cs->segments_free
				       : 0;

	return (uint64_t)in_use * cs->segment_size + cs->large_pages;
}

/* Whether `stats slabs` shows class STATS_ITEM_CLASS: while memory is
 * allocated for items, as memcached shows a class that holds pages, empty
 * or not (`stats items` shows it only while it holds items). */
static bool class_shown(const struct cache_stats *cs, bool slabs)
{
	return cs->curr_items || (slabs && items_malloced(cs));
}

/* The entries of class STATS_ITEM_CLASS: `stats slabs`' (slabs) or `stats
 * items`', from cs; none when class_shown() says so. */
static void put_item_class(struct observe *obs, const struct stats_sink *k,
			   bool slabs, const struct cache_stats *c)
{
	static const char *const hits[] = {
		"get_hits",  "cmd_set",	 "delete_hits", "incr_hits",
		"decr_hits", "cas_hits", "cas_badval",	"touch_hits",
	};
	const struct cache_stats cs = *c;
	struct stats_sum s;

	if (!class_shown(&cs, slabs))
		return;
	observe_sum_stats(obs, &s);
	/* Which group each is in: 'i' items, 's' slabs. */
	const struct {
		char group;
		struct class_stat e;
	} all[] = {
		{ 'i', { "number", STATS_GAUGE, cs.curr_items, help_items } },
		{ 'i',
		  { "age", STATS_GAUGE, (uint64_t)cache_oldest_age(obs->cache),
		    "Seconds since the oldest item was stored (a lower "
		    "bound)" } },
		{ 'i',
		  { "mem_requested", STATS_GAUGE, cs.item_data,
		    help_requested } },
		{ 'i',
		  { "evicted", STATS_COUNTER, cs.evictions, help_evictions } },
		{ 'i',
		  { "evicted_nonzero", STATS_COUNTER, cs.evicted_nonzero,
		    "Evicted items that had an expiry time" } },
		{ 'i',
		  { "outofmemory", STATS_COUNTER, s.store_no_memory,
		    "Storage commands refused: the item could not fit" } },
		{ 'i',
		  { "tailrepairs", STATS_COUNTER, 0,
		    "Items freed while still referenced: never in rhkvd "
		    "(0)" } },
		{ 'i',
		  { "reclaimed", STATS_COUNTER, cs.reclaimed,
		    "Expired items taken out of the cache" } },
		{ 'i',
		  { "expired_unfetched", STATS_COUNTER, cs.expired_unfetched,
		    help_expired_unfetched } },
		{ 'i',
		  { "evicted_unfetched", STATS_COUNTER, cs.evicted_unfetched,
		    help_evicted_unfetched } },
		{ 'i',
		  { "evicted_active", STATS_COUNTER, cs.evicted_active,
		    help_evicted_active } },
		{ 'i',
		  { "crawler_reclaimed", STATS_COUNTER, cs.sweep_reclaimed,
		    help_sweep_reclaimed } },
		{ 'i',
		  { "crawler_items_checked", STATS_COUNTER, cs.sweep_checked,
		    help_sweep_checked } },
		{ 's',
		  { "chunk_size", STATS_GAUGE,
		    cs.curr_items ? cs.bytes / cs.curr_items : 0,
		    "Mean bytes of an item, as allocated" } },
		{ 's',
		  { "chunks_per_page", STATS_GAUGE, 1,
		    "Items per allocation: 1 (each is malloc'd)" } },
		{ 's',
		  { "total_pages", STATS_GAUGE, cs.curr_items,
		    "Allocations holding items: one per item" } },
		{ 's',
		  { "total_chunks", STATS_GAUGE, cs.curr_items, help_chunks } },
		{ 's',
		  { "used_chunks", STATS_GAUGE, cs.curr_items, help_chunks } },
		{ 's', { "free_chunks", STATS_GAUGE, 0, help_none_free } },
		{ 's', { "free_chunks_end", STATS_GAUGE, 0, help_none_free } },
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i].group == (slabs ? 's' : 'i'))
			put_class(k, slabs ? "" : "items:", &all[i].e, 1);
	/* Per class, the server's totals (every hit is in class 1). */
	for (size_t i = 0; slabs && i < sizeof(hits) / sizeof(hits[0]); i++) {
		struct class_stat h = { hits[i], STATS_COUNTER, 0, NULL };

		sum_lookup(&s, &h);
		put_class(k, "", &h, 1);
	}
}

static void stats_items(struct observe *obs, const struct stats_sink *k)
{
	struct cache_stats cs;

	cache_get_stats(obs->cache, &cs, false);
	put_item_class(obs, k, false, &cs);
}

static void stats_slabs(struct observe *obs, const struct stats_sink *k)
{
	struct cache_stats cs;

	cache_get_stats(obs->cache, &cs, false);
	put_item_class(obs, k, true, &cs);
	stats__put_u(k, STATS_GAUGE, "active_slabs",
		     "Classes holding memory for items: 1, or 0 when none is "
		     "allocated",
		     class_shown(&cs, true) ? 1 : 0);
	stats__put_u(k, STATS_GAUGE, "total_malloced",
		     "Bytes allocated for items: segments in use and large "
		     "items' allocations, in whole pages",
		     items_malloced(&cs));
}

/* memcached's item size histogram is off unless started with it; rhkvd
 * has none. */
static void stats_sizes(struct observe *obs, const struct stats_sink *k)
{
	(void)obs;
	stats__put_text(k, "sizes_status",
			"Whether the item size histogram is kept", "disabled");
}

static void stats_table(struct observe *obs, const struct stats_sink *k)
{
	struct cache_stats cs;

	cache_get_stats(obs->cache, &cs, true);
	stats__put_u(k, STATS_GAUGE, "buckets", "Buckets of the hash table",
		     cs.table.size);
	stats__put_u(k, STATS_GAUGE, "elements",
		     "Items linked in the hash table", cs.table.nelems);
	stats__put_u(k, STATS_COUNTER, "resizes",
		     "Times the table was resized (grows + shrinks)",
		     cs.table.grows + cs.table.shrinks);
	stats__put_u(k, STATS_COUNTER, "grows", "Times the table grew",
		     cs.table.grows);
	stats__put_u(k, STATS_COUNTER, "shrinks", "Times the table shrank",
		     cs.table.shrinks);
	stats__put_u(
		k, STATS_COUNTER, "rehashes",
		"Times the table was rebuilt with a new hash secret (a defence "
		"against hash flooding)",
		cs.table.reseeds);
	stats__put_u(
		k, STATS_GAUGE, "generation",
		"Generation of the hash secret: one more after each rehash",
		cs.table.generation);
	stats__put_u(k, STATS_GAUGE, "resizing",
		     "1 while a resize is in flight, else 0",
		     cs.table.resizing);
	stats__put_u(k, STATS_GAUGE, "longest_chain",
		     "Entries in the longest bucket chain", cs.longest_chain);
}

/* Resident bytes of the process (0 if /proc cannot tell). */
static uint64_t process_rss(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Where the memory goes, as the cache counts it (what -m bounds) and as
 * the allocator and the kernel see it, to cross-check the accounting.
 */
static void stats_memory(struct observe *obs, const struct stats_sink *k)
{
	struct mallinfo2 mi = mallinfo2();
	struct cache_stats cs;
	uint64_t headers;

	cache_get_stats(obs->cache, &cs, false);
	headers = (uint64_t)cs.curr_items * ITEM_HEADER_BYTES;
	stats__put_u(k, STATS_GAUGE, "limit_maxbytes", help_limit, cs.limit);
	stats__put_u(k, STATS_GAUGE, "accounted_bytes",
		     "Bytes counted against limit_maxbytes: segment_bytes + "
		     "large_bytes + hash_bytes",
		     cs.accounted + cs.hash_bytes);
	stats__put_u(k, STATS_GAUGE, "curr_items", help_items, cs.curr_items);
	/* bytes = item_headers + item_keys_values + item_alloc_overhead */
	stats__put_u(k, STATS_GAUGE, "bytes", help_bytes, cs.bytes);
	stats__put_u(k, STATS_GAUGE, "item_headers",
		     "Bytes of the items' headers", headers);
	stats__put_u(k, STATS_GAUGE, "item_keys_values",
		     "Bytes of the items' flags, keys, values and chosen cas",
		     cs.item_data - headers);
	stats__put_u(k, STATS_GAUGE, "item_alloc_overhead",
		     "Bytes items take beyond their data: rounding to 8 in a "
		     "segment, the allocator's share of a large item",
		     cs.bytes - cs.item_data);
	stats__put_u(k, STATS_GAUGE, "segment_size", "Bytes of one segment",
		     cs.segment_size);
	stats__put_u(k, STATS_GAUGE, "segments",
		     "Segments resident: holding items, retiring, or free",
		     cs.segments);
	stats__put_u(k, STATS_GAUGE, "segments_free",
		     "Resident segments free for the next writer",
		     cs.segments_free);
	stats__put_u(k, STATS_GAUGE, "segment_bytes",
		     "Bytes of resident segments",
		     cs.segments * cs.segment_size);
	stats__put_u(k, STATS_GAUGE, "large_bytes",
		     "Bytes of large items' own allocations, retiring ones "
		     "included",
		     cs.large_bytes);
	stats__put_u(k, STATS_GAUGE, "segment_unused_bytes",
		     "Bytes of resident segments holding no linked item: dead "
		     "items not yet evicted, tail space, free and retiring "
		     "segments",
		     cs.segments * cs.segment_size - cs.segment_live);
	stats__put_u(k, STATS_COUNTER, "items_carried",
		     "Items eviction kept by copying them forward", cs.carried);
	stats__put_u(k, STATS_COUNTER, "units_passed_over",
		     "Segments and large items eviction kept whole (mostly "
		     "visited, or live while dead bytes fill the cache)",
		     cs.passed_over);
	stats__put_u(
		k, STATS_COUNTER, "segments_freed_empty",
		"Segments freed when their last item went, before eviction",
		cs.segments_freed_empty);
	stats__put_u(k, STATS_GAUGE, "hash_bytes", help_hash_bytes,
		     cs.hash_bytes);
	stats__put_u(k, STATS_GAUGE, "retired_bytes", help_retired,
		     cs.retired_bytes);
	stats__put_u(k, STATS_COUNTER, "reclaim_waits",
		     "Times a writer waited for removed items to be freed",
		     cs.reclaim_waits);
	stats__put_u(k, STATS_GAUGE, "conn_buffer_bytes", help_conn_bytes,
		     conn_bytes(obs));
	stats__put_u(
		k, STATS_GAUGE, "conn_memory_limit",
		"Bytes all connection buffers together may use (--conn-memory)",
		obs->cfg->conn_memory);
	/* The allocator's view (glibc): in use, and held from the kernel. */
	stats__put_u(k, STATS_GAUGE, "malloc_in_use",
		     "Bytes the C library's allocator has handed out",
		     mi.uordblks + mi.hblkhd);
	stats__put_u(k, STATS_GAUGE, "malloc_held",
		     "Bytes the C library's allocator holds from the kernel",
		     mi.arena + mi.hblkhd);
	stats__put_u(k, STATS_GAUGE, "process_rss",
		     "Resident bytes of the process (0: unknown)",
		     process_rss());
}

/* Per command class: count, mean and percentiles in µs (3 decimals). */
static void stats_latency(struct observe *obs, const struct stats_sink *k)
{
	static const char help_pct[] =
		"Service time in microseconds that this percentage of the "
		"class's commands took at most (within 3%)";
	static const struct {
		const char *name;
		double p;
		const char *help;
	} pct[] = { { "p50", 50, help_pct },
		    { "p90", 90, help_pct },
		    { "p99", 99, help_pct },
		    { "p99.9", 99.9, help_pct },
		    { "p99.99", 99.99, help_pct },
		    { "max", 100,
		      "Longest service time in microseconds of the class's "
		      "commands (within 3%)" } };
	static _Thread_local struct latency_snapshot lat[LAT_NCLASSES];
	char name[64];

	observe_sum_latency(obs, lat);
	for (unsigned int c = 0; c < LAT_NCLASSES; c++) {
		const char *cls = lat_class_name[c];
		uint64_t n = lat[c].count;

		snprintf(name, sizeof(name), "%s:count", cls);
		stats__put_u(k, STATS_COUNTER, name,
			     "Commands of this class (before the colon) served",
			     n);
		if (!n)
			continue;
		snprintf(name, sizeof(name), "%s:mean_us", cls);
		stats__put_real(
			k, name,
			"Mean service time in microseconds of the class's "
			"commands",
			(double)lat[c].sum_ns / (double)n / 1e3);
		for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
			snprintf(name, sizeof(name), "%s:%s_us", cls,
				 pct[i].name);
			stats__put_real(
				k, name, pct[i].help,
				(double)latency_percentile(&lat[c], pct[i].p) /
					1e3);
		}
	}
}

bool stats_emit(struct observe *obs, const struct stats_query *q,
		const struct stats_sink *sink)
{
	static const struct {
		const char *name;
		void (*emit)(struct observe *obs, const struct stats_sink *k);
		void (*emit_q)(struct observe *obs, const struct stats_query *q,
			       const struct stats_sink *k);
	} groups[] = { { "", observe_stats_each, NULL },
		       { "settings", stats_settings, NULL },
		       { "items", stats_items, NULL },
		       { "slabs", stats_slabs, NULL },
		       { "sizes", stats_sizes, NULL },
		       { "conns", NULL, stats__conns },
		       { "detail", stats_detail_dump, NULL },
		       { "cachedump", NULL, stats__cachedump },
		       { "table", stats_table, NULL },
		       { "memory", stats_memory, NULL },
		       { "latency", stats_latency, NULL },
		       { "hotkeys", NULL, stats__hotkeys } };

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (strlen(groups[i].name) == q->n &&
		    (!q->n || !memcmp(groups[i].name, q->group, q->n))) {
			if (groups[i].emit)
				groups[i].emit(obs, sink);
			else
				groups[i].emit_q(obs, q, sink);
			return true;
		}
	return false;
}

const char *stats_entry_value(const struct stats_entry *e,
			      char buf[STATS_VALUE_MAX])
{
	buf[0] = '\0';
	switch (e->kind) {
	case STATS_COUNTER:
	case STATS_GAUGE:
		snprintf(buf, STATS_VALUE_MAX, "%" PRIu64, e->u);
		break;
	case STATS_SECONDS:
		snprintf(buf, STATS_VALUE_MAX, "%" PRId64 ".%06ld", e->sec,
			 e->usec);
		break;
	case STATS_TEXT:
		return e->s;
	case STATS_REAL:
		snprintf(buf, STATS_VALUE_MAX, "%.3f", e->r);
		break;
	}
	return buf;
}

void stats_text_entry(void *arg, const struct stats_entry *e)
{
	char buf[STATS_VALUE_MAX];

	if (e->line)
		evbuffer_add_printf(arg, "%s\r\n", e->line);
	else
		evbuffer_add_printf(arg, "STAT %s %s\r\n", e->name,
				    stats_entry_value(e, buf));
}
