/*
 * The `stats` command: memcached's general statistics (summed over worker
 * threads, minus the last `stats reset`), `stats settings`, `stats table`
 * and `stats latency`. The general set goes through a stats_sink so that the
 * Prometheus endpoint (metrics.c) exports exactly what `stats` shows.
 */
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
#define STATS_SUM(name) \
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
#define STATS_BASE(name) sum->name -= srv->baseline.name;
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

void server_stats_each(struct server *srv, const struct stats_sink *k)
{
	int64_t now = cache_now();
	struct cache_stats cs;
	struct stats_sum s;
	struct rusage ru;

	server_sum_stats(srv, &s);
	cache_get_stats(srv->cache, &cs, false);
	getrusage(RUSAGE_SELF, &ru);
	k->gauge(k->arg, "pid", (uint64_t)getpid());
	k->gauge(k->arg, "uptime", (uint64_t)(now - srv->started));
	k->gauge(k->arg, "time", (uint64_t)now);
	k->text(k->arg, "version", RHKV_VERSION);
	k->gauge(k->arg, "pointer_size", 8 * sizeof(void *));
	k->seconds(k->arg, "rusage_user", ru.ru_utime.tv_sec,
		   ru.ru_utime.tv_usec);
	k->seconds(k->arg, "rusage_system", ru.ru_stime.tv_sec,
		   ru.ru_stime.tv_usec);
	k->gauge(k->arg, "max_connections", (uint64_t)srv->cfg.conn_limit);
	k->gauge(k->arg, "curr_connections",
		 (uint64_t)atomic_load(&srv->curr_conns));
	k->counter(k->arg, "total_connections", atomic_load(&srv->total_conns));
	k->counter(k->arg, "rejected_connections",
		   atomic_load(&srv->rejected_conns));
#define STATS_PRINT(name) k->counter(k->arg, #name, s.name);
	THREAD_STATS(STATS_PRINT)
#undef STATS_PRINT
	k->gauge(k->arg, "limit_maxbytes", cs.limit);
	k->gauge(k->arg, "threads", srv->nworkers);
	k->gauge(k->arg, "bytes", cs.bytes);
	k->gauge(k->arg, "curr_items", cs.curr_items);
	k->gauge(k->arg, "hash_bytes", cs.hash_bytes);
	k->gauge(k->arg, "retired_bytes", cs.retired_bytes);
	k->gauge(k->arg, "conn_buffer_bytes", server_conn_bytes(srv));
	k->counter(k->arg, "evictions", cs.evictions);
	k->counter(k->arg, "evicted_unfetched", cs.evicted_unfetched);
	k->counter(k->arg, "evicted_active", cs.evicted_active);
	k->counter(k->arg, "expired_unfetched", cs.expired_unfetched);
	k->counter(k->arg, "reclaimed", cs.reclaimed);
	k->gauge(k->arg, "hash_buckets", cs.table.size);
	k->gauge(k->arg, "hash_is_expanding", cs.table.resizing);
}

static void stat_u(struct conn *c, const char *name, uint64_t v)
{
	evbuffer_add_printf(c->out, "STAT %s %" PRIu64 "\r\n", name, v);
}

static void line_u(void *arg, const char *name, uint64_t v)
{
	stat_u(arg, name, v);
}

static void line_sec(void *arg, const char *name, int64_t sec, long usec)
{
	struct conn *c = arg;

	evbuffer_add_printf(c->out, "STAT %s %" PRId64 ".%06ld\r\n", name, sec,
			    usec);
}

static void line_s(void *arg, const char *name, const char *value)
{
	struct conn *c = arg;

	evbuffer_add_printf(c->out, "STAT %s %s\r\n", name, value);
}

static void config_line(const char *name, const char *value, void *arg)
{
	line_s(arg, name, value);
}

static void stats_table(struct conn *c)
{
	struct cache_stats cs;

	cache_get_stats(c->w->srv->cache, &cs, true);
	stat_u(c, "buckets", cs.table.size);
	stat_u(c, "elements", cs.table.nelems);
	stat_u(c, "resizes", cs.table.grows + cs.table.shrinks);
	stat_u(c, "grows", cs.table.grows);
	stat_u(c, "shrinks", cs.table.shrinks);
	stat_u(c, "rehashes", cs.table.reseeds);
	stat_u(c, "generation", cs.table.generation);
	stat_u(c, "resizing", cs.table.resizing);
	stat_u(c, "longest_chain", cs.longest_chain);
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
static void stats_memory(struct conn *c)
{
	struct server *srv = c->w->srv;
	struct mallinfo2 mi = mallinfo2();
	struct cache_stats cs;
	uint64_t headers;

	cache_get_stats(srv->cache, &cs, false);
	headers = (uint64_t)cs.curr_items * ITEM_HEADER_BYTES;
	stat_u(c, "limit_maxbytes", cs.limit);
	stat_u(c, "accounted_bytes",
	       cs.bytes + cs.retired_bytes + cs.hash_bytes);
	stat_u(c, "curr_items", cs.curr_items);
	/* bytes = item_headers + item_keys_values + item_alloc_overhead */
	stat_u(c, "bytes", cs.bytes);
	stat_u(c, "item_headers", headers);
	stat_u(c, "item_keys_values", cs.item_data - headers);
	stat_u(c, "item_alloc_overhead", cs.bytes - cs.item_data);
	stat_u(c, "hash_bytes", cs.hash_bytes);
	stat_u(c, "retired_bytes", cs.retired_bytes);
	stat_u(c, "reclaim_waits", cs.reclaim_waits);
	stat_u(c, "conn_buffer_bytes", server_conn_bytes(srv));
	stat_u(c, "conn_memory_limit", srv->cfg.conn_memory);
	/* The allocator's view (glibc): in use, and held from the kernel. */
	stat_u(c, "malloc_in_use", mi.uordblks + mi.hblkhd);
	stat_u(c, "malloc_held", mi.arena + mi.hblkhd);
	stat_u(c, "process_rss", process_rss());
}

/* Per command class: count, mean and percentiles in µs (3 decimals). */
static void stats_latency(struct conn *c)
{
	static const struct {
		const char *name;
		double p;
	} pct[] = { { "p50", 50 },     { "p90", 90 },	    { "p99", 99 },
		    { "p99.9", 99.9 }, { "p99.99", 99.99 }, { "max", 100 } };
	static _Thread_local struct latency_snapshot lat[LAT_NCLASSES];

	server_sum_latency(c->w->srv, lat);
	for (unsigned int k = 0; k < LAT_NCLASSES; k++) {
		const char *cls = lat_class_name[k];
		uint64_t n = lat[k].count;

		evbuffer_add_printf(c->out, "STAT %s:count %" PRIu64 "\r\n",
				    cls, n);
		if (!n)
			continue;
		evbuffer_add_printf(c->out, "STAT %s:mean_us %.3f\r\n", cls,
				    (double)lat[k].sum_ns / (double)n / 1e3);
		for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
			evbuffer_add_printf(
				c->out, "STAT %s:%s_us %.3f\r\n", cls,
				pct[i].name,
				(double)latency_percentile(&lat[k], pct[i].p) /
					1e3);
	}
}

void cmd_stats(struct conn *c, const char *buf, const struct proto_req *req)
{
	const char *arg = buf + req->arg.off;
	size_t n = req->arg.len;

	if (n == 0) {
		const struct stats_sink sink = { line_u, line_u, line_sec,
						 line_s, c };

		server_stats_each(c->w->srv, &sink);
	} else if (n == 8 && !memcmp(arg, "settings", 8)) {
		config_each(&c->w->srv->cfg, config_line, c);
	} else if (n == 5 && !memcmp(arg, "table", 5)) {
		stats_table(c);
	} else if (n == 7 && !memcmp(arg, "latency", 7)) {
		stats_latency(c);
	} else if (n == 6 && !memcmp(arg, "memory", 6)) {
		stats_memory(c);
	} else if (n == 5 && !memcmp(arg, "reset", 5)) {
		server_reset_stats(c->w->srv);
		evbuffer_add(c->out, "RESET\r\n", 7);
		return;
	} else {
		evbuffer_add(c->out, "ERROR\r\n", 7);
		return;
	}
	evbuffer_add(c->out, "END\r\n", 5);
}
