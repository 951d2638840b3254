/*
 * The `stats` groups: memcached's general statistics (summed over worker
 * threads, minus the last `stats reset`), `stats settings`, `stats table`,
 * `stats memory` and `stats latency`. Every group emits entries into a
 * stats_sink (stats.h): the text lines and the binary protocol's map are
 * sinks here, the Prometheus endpoint's (general stats only) is metrics.c's.
 */
#include <event2/buffer.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "conn.h"
#include "proto/text.h"
#include "server.h"

static void sum_threads(struct server *srv, struct stats_sum *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < srv->nworkers; i++) {
		struct thread_stats *t = &srv->workers[i].stats;
#define STATS_SUM(name, type, help) \
	sum->name += atomic_load_explicit(&t->name, memory_order_relaxed);
		THREAD_STATS(STATS_SUM)
#undef STATS_SUM
	}
}

static void sum_latency(struct server *srv,
			struct latency_snapshot out[LAT_NCLASSES])
{
	memset(out, 0, sizeof(*out) * LAT_NCLASSES);
	for (unsigned int i = 0; i < srv->nworkers; i++)
		for (unsigned int k = 0; k < LAT_NCLASSES; k++)
			latency_add(&out[k], &srv->workers[i].lat[k]);
}

void server_sum_stats(struct server *srv, struct stats_sum *sum)
{
	sum_threads(srv, sum);
	pthread_mutex_lock(&srv->stats_lock);
#define STATS_BASE(name, type, help) sum->name -= srv->baseline.name;
	THREAD_STATS(STATS_BASE)
#undef STATS_BASE
	pthread_mutex_unlock(&srv->stats_lock);
}

void server_sum_latency(struct server *srv,
			struct latency_snapshot out[LAT_NCLASSES])
{
	sum_latency(srv, out);
	pthread_mutex_lock(&srv->stats_lock);
	for (unsigned int k = 0; k < LAT_NCLASSES; k++)
		latency_sub(&out[k], &srv->lat_baseline[k]);
	pthread_mutex_unlock(&srv->stats_lock);
}

void server_reset_stats(struct server *srv)
{
	/* Big (a histogram per class): not on the caller's stack. */
	static _Thread_local struct latency_snapshot lat[LAT_NCLASSES];
	struct stats_sum now;

	sum_threads(srv, &now);
	sum_latency(srv, lat);
	pthread_mutex_lock(&srv->stats_lock);
	srv->baseline = now;
	memcpy(srv->lat_baseline, lat, sizeof(lat));
	atomic_store(&srv->total_conns, 0);
	atomic_store(&srv->rejected_conns, 0);
	pthread_mutex_unlock(&srv->stats_lock);
}

static void put_u(const struct stats_sink *k, enum stats_kind kind,
		  const char *name, const char *help, uint64_t v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = kind, .u = v
	};

	k->emit(k->arg, &e);
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

static void put_text(const struct stats_sink *k, const char *name,
		     const char *help, const char *v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = STATS_TEXT, .s = v
	};

	k->emit(k->arg, &e);
}

static void put_real(const struct stats_sink *k, const char *name,
		     const char *help, double v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = STATS_REAL, .r = v
	};

	k->emit(k->arg, &e);
}

/* Entries both the general stats and `stats memory` show. */
static const char help_limit[] =
	"Bytes the cache may use (-m): items, removed items not yet freed "
	"and the hash table";
static const char help_items[] = "Items in the cache";
static const char help_bytes[] = "Bytes of the items in the cache, as "
				 "allocated";
static const char help_hash_bytes[] = "Bytes of the hash table's bucket "
				      "arrays";
static const char help_retired[] =
	"Bytes of items removed from the cache, freed once no reader can "
	"still see them";
static const char help_conn_bytes[] =
	"Bytes of every client connection's input and output buffers";

void server_stats_each(struct server *srv, const struct stats_sink *k)
{
	int64_t now = cache_now();
	struct cache_stats cs;
	struct stats_sum s;
	struct rusage ru;

	server_sum_stats(srv, &s);
	cache_get_stats(srv->cache, &cs, false);
	getrusage(RUSAGE_SELF, &ru);
	put_u(k, STATS_GAUGE, "pid", "Process id of the server",
	      (uint64_t)getpid());
	put_u(k, STATS_GAUGE, "uptime", "Seconds since the server started",
	      (uint64_t)(now - srv->started));
	put_u(k, STATS_GAUGE, "time", "The server's clock, in unix seconds",
	      (uint64_t)now);
	put_text(k, "version",
		 "The memcached version the server answers as, then rhkv's",
		 RHKV_VERSION);
	put_u(k, STATS_GAUGE, "pointer_size", "Bits of a pointer on the server",
	      8 * sizeof(void *));
	put_seconds(k, "rusage_user", "CPU time the server spent in user mode",
		    ru.ru_utime);
	put_seconds(k, "rusage_system",
		    "CPU time the kernel spent on the server's behalf",
		    ru.ru_stime);
	put_u(k, STATS_GAUGE, "max_connections",
	      "Client connections allowed at once (-c)",
	      (uint64_t)srv->cfg.conn_limit);
	put_u(k, STATS_GAUGE, "curr_connections", "Client connections open",
	      (uint64_t)atomic_load(&srv->curr_conns));
	put_u(k, STATS_COUNTER, "total_connections",
	      "Client connections accepted", atomic_load(&srv->total_conns));
	put_u(k, STATS_COUNTER, "rejected_connections",
	      "Client connections closed at once: max_connections were open",
	      atomic_load(&srv->rejected_conns));
#define STATS_PUT(name, type, help) put_u(k, STATS_##type, #name, help, s.name);
	THREAD_STATS(STATS_PUT)
#undef STATS_PUT
	put_u(k, STATS_GAUGE, "limit_maxbytes", help_limit, cs.limit);
	put_u(k, STATS_GAUGE, "threads", "Worker threads", srv->nworkers);
	put_u(k, STATS_GAUGE, "bytes", help_bytes, cs.bytes);
	put_u(k, STATS_GAUGE, "curr_items", help_items, cs.curr_items);
	put_u(k, STATS_GAUGE, "hash_bytes", help_hash_bytes, cs.hash_bytes);
	put_u(k, STATS_GAUGE, "retired_bytes", help_retired, cs.retired_bytes);
	put_u(k, STATS_GAUGE, "conn_buffer_bytes", help_conn_bytes,
	      server_conn_bytes(srv));
	put_u(k, STATS_COUNTER, "evictions",
	      "Live items removed to make room for new ones", cs.evictions);
	put_u(k, STATS_COUNTER, "evicted_unfetched",
	      "Evicted items that were never read", cs.evicted_unfetched);
	put_u(k, STATS_COUNTER, "evicted_active",
	      "Evicted items that had been read", cs.evicted_active);
	put_u(k, STATS_COUNTER, "expired_unfetched",
	      "Expired items taken out that were never read",
	      cs.expired_unfetched);
	put_u(k, STATS_COUNTER, "reclaimed",
	      "Expired items taken out of the cache (by the sweep, a lookup "
	      "or eviction)",
	      cs.reclaimed);
	put_u(k, STATS_GAUGE, "hash_buckets", "Buckets of the hash table",
	      cs.table.size);
	put_u(k, STATS_GAUGE, "hash_is_expanding",
	      "1 while the hash table is being resized, else 0",
	      cs.table.resizing);
}

struct settings_ctx {
	const struct stats_sink *k;
	uint64_t maxbytes; /* the cache's limit now */
};

static void settings_entry(const char *name, const char *value, void *arg)
{
	const struct settings_ctx *x = arg;
	char buf[24];

	/* -m at start; cache_memlimit changes it since. */
	if (!strcmp(name, "maxbytes")) {
		snprintf(buf, sizeof(buf), "%" PRIu64, x->maxbytes);
		value = buf;
	}
	put_text(x->k, name, NULL, value);
}

static void stats_settings(struct server *srv, const struct stats_sink *k)
{
	struct cache_stats cs;
	struct settings_ctx x = { k, 0 };

	cache_get_stats(srv->cache, &cs, false);
	x.maxbytes = cs.limit;
	config_each(&srv->cfg, settings_entry, &x);
}

static void stats_table(struct server *srv, const struct stats_sink *k)
{
	struct cache_stats cs;

	cache_get_stats(srv->cache, &cs, true);
	put_u(k, STATS_GAUGE, "buckets", "Buckets of the hash table",
	      cs.table.size);
	put_u(k, STATS_GAUGE, "elements", "Items linked in the hash table",
	      cs.table.nelems);
	put_u(k, STATS_COUNTER, "resizes",
	      "Times the table was resized (grows + shrinks)",
	      cs.table.grows + cs.table.shrinks);
	put_u(k, STATS_COUNTER, "grows", "Times the table grew",
	      cs.table.grows);
	put_u(k, STATS_COUNTER, "shrinks", "Times the table shrank",
	      cs.table.shrinks);
	put_u(k, STATS_COUNTER, "rehashes",
	      "Times the table was rebuilt with a new hash secret (a defence "
	      "against hash flooding)",
	      cs.table.reseeds);
	put_u(k, STATS_GAUGE, "generation",
	      "Generation of the hash secret: one more after each rehash",
	      cs.table.generation);
	put_u(k, STATS_GAUGE, "resizing",
	      "1 while a resize is in flight, else 0", cs.table.resizing);
	put_u(k, STATS_GAUGE, "longest_chain",
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
static void stats_memory(struct server *srv, const struct stats_sink *k)
{
	struct mallinfo2 mi = mallinfo2();
	struct cache_stats cs;
	uint64_t headers;

	cache_get_stats(srv->cache, &cs, false);
	headers = (uint64_t)cs.curr_items * ITEM_HEADER_BYTES;
	put_u(k, STATS_GAUGE, "limit_maxbytes", help_limit, cs.limit);
	put_u(k, STATS_GAUGE, "accounted_bytes",
	      "Bytes counted against limit_maxbytes: bytes + retired_bytes + "
	      "hash_bytes",
	      cs.bytes + cs.retired_bytes + cs.hash_bytes);
	put_u(k, STATS_GAUGE, "curr_items", help_items, cs.curr_items);
	/* bytes = item_headers + item_keys_values + item_alloc_overhead */
	put_u(k, STATS_GAUGE, "bytes", help_bytes, cs.bytes);
	put_u(k, STATS_GAUGE, "item_headers", "Bytes of the items' headers",
	      headers);
	put_u(k, STATS_GAUGE, "item_keys_values",
	      "Bytes of the items' keys and values", cs.item_data - headers);
	put_u(k, STATS_GAUGE, "item_alloc_overhead",
	      "Bytes the allocator gives items beyond header, key and value",
	      cs.bytes - cs.item_data);
	put_u(k, STATS_GAUGE, "hash_bytes", help_hash_bytes, cs.hash_bytes);
	put_u(k, STATS_GAUGE, "retired_bytes", help_retired, cs.retired_bytes);
	put_u(k, STATS_COUNTER, "reclaim_waits",
	      "Times a writer waited for removed items to be freed",
	      cs.reclaim_waits);
	put_u(k, STATS_GAUGE, "conn_buffer_bytes", help_conn_bytes,
	      server_conn_bytes(srv));
	put_u(k, STATS_GAUGE, "conn_memory_limit",
	      "Bytes all connection buffers together may use (--conn-memory)",
	      srv->cfg.conn_memory);
	/* The allocator's view (glibc): in use, and held from the kernel. */
	put_u(k, STATS_GAUGE, "malloc_in_use",
	      "Bytes the C library's allocator has handed out",
	      mi.uordblks + mi.hblkhd);
	put_u(k, STATS_GAUGE, "malloc_held",
	      "Bytes the C library's allocator holds from the kernel",
	      mi.arena + mi.hblkhd);
	put_u(k, STATS_GAUGE, "process_rss",
	      "Resident bytes of the process (0: unknown)", process_rss());
}

/* Per command class: count, mean and percentiles in µs (3 decimals). */
static void stats_latency(struct server *srv, const struct stats_sink *k)
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

	server_sum_latency(srv, lat);
	for (unsigned int c = 0; c < LAT_NCLASSES; c++) {
		const char *cls = lat_class_name[c];
		uint64_t n = lat[c].count;

		snprintf(name, sizeof(name), "%s:count", cls);
		put_u(k, STATS_COUNTER, name,
		      "Commands of this class (before the colon) served", n);
		if (!n)
			continue;
		snprintf(name, sizeof(name), "%s:mean_us", cls);
		put_real(k, name,
			 "Mean service time in microseconds of the class's "
			 "commands",
			 (double)lat[c].sum_ns / (double)n / 1e3);
		for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
			snprintf(name, sizeof(name), "%s:%s_us", cls,
				 pct[i].name);
			put_real(k, name, pct[i].help,
				 (double)latency_percentile(&lat[c], pct[i].p) /
					 1e3);
		}
	}
}

bool stats_emit(struct server *srv, const char *group, size_t n,
		const struct stats_sink *sink)
{
	static const struct {
		const char *name;
		void (*emit)(struct server *srv, const struct stats_sink *k);
	} groups[] = { { "", server_stats_each },
		       { "settings", stats_settings },
		       { "table", stats_table },
		       { "memory", stats_memory },
		       { "latency", stats_latency } };

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (strlen(groups[i].name) == n &&
		    (!n || !memcmp(groups[i].name, group, n))) {
			groups[i].emit(srv, sink);
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

	evbuffer_add_printf(arg, "STAT %s %s\r\n", e->name,
			    stats_entry_value(e, buf));
}
