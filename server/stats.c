/*
 * The `stats` command: memcached's general statistics (summed over worker
 * threads, minus the last `stats reset`), `stats settings` and `stats table`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "conn.h"
#include "proto/text.h"
#include "server.h"

void server_sum_stats(struct server *srv, struct stats_sum *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < srv->nworkers; i++) {
		struct thread_stats *t = &srv->workers[i].stats;
#define STATS_SUM(name) \
	sum->name += atomic_load_explicit(&t->name, memory_order_relaxed);
		THREAD_STATS(STATS_SUM)
#undef STATS_SUM
	}
	pthread_mutex_lock(&srv->stats_lock);
#define STATS_BASE(name) sum->name -= srv->baseline.name;
	THREAD_STATS(STATS_BASE)
#undef STATS_BASE
	pthread_mutex_unlock(&srv->stats_lock);
}

void server_reset_stats(struct server *srv)
{
	struct stats_sum now;

	memset(&now, 0, sizeof(now));
	for (unsigned int i = 0; i < srv->nworkers; i++) {
		struct thread_stats *t = &srv->workers[i].stats;
#define STATS_SUM(name) \
	now.name += atomic_load_explicit(&t->name, memory_order_relaxed);
		THREAD_STATS(STATS_SUM)
#undef STATS_SUM
	}
	pthread_mutex_lock(&srv->stats_lock);
	srv->baseline = now;
	atomic_store(&srv->total_conns, 0);
	atomic_store(&srv->rejected_conns, 0);
	pthread_mutex_unlock(&srv->stats_lock);
}

static void stat_u(struct conn *c, const char *name, unsigned long v)
{
	evbuffer_add_printf(c->out, "STAT %s %lu\r\n", name, v);
}

static void stat_s(const char *name, const char *value, void *arg)
{
	struct conn *c = arg;

	evbuffer_add_printf(c->out, "STAT %s %s\r\n", name, value);
}

static void stats_general(struct conn *c)
{
	struct server *srv = c->w->srv;
	int64_t now = cache_now();
	struct cache_stats cs;
	struct stats_sum s;
	struct rusage ru;

	server_sum_stats(srv, &s);
	cache_get_stats(srv->cache, &cs, false);
	getrusage(RUSAGE_SELF, &ru);
	stat_u(c, "pid", (unsigned long)getpid());
	stat_u(c, "uptime", (unsigned long)(now - srv->started));
	stat_u(c, "time", (unsigned long)now);
	stat_s("version", RHKV_VERSION, c);
	stat_u(c, "pointer_size", 8 * sizeof(void *));
	evbuffer_add_printf(c->out, "STAT rusage_user %ld.%06ld\r\n",
			    (long)ru.ru_utime.tv_sec,
			    (long)ru.ru_utime.tv_usec);
	evbuffer_add_printf(c->out, "STAT rusage_system %ld.%06ld\r\n",
			    (long)ru.ru_stime.tv_sec,
			    (long)ru.ru_stime.tv_usec);
	stat_u(c, "max_connections", (unsigned long)srv->cfg.conn_limit);
	stat_u(c, "curr_connections",
	       (unsigned long)atomic_load(&srv->curr_conns));
	stat_u(c, "total_connections", atomic_load(&srv->total_conns));
	stat_u(c, "rejected_connections", atomic_load(&srv->rejected_conns));
#define STATS_PRINT(name) stat_u(c, #name, s.name);
	THREAD_STATS(STATS_PRINT)
#undef STATS_PRINT
	stat_u(c, "limit_maxbytes", (unsigned long)srv->cfg.memory_limit);
	stat_u(c, "threads", srv->nworkers);
	stat_u(c, "bytes", cs.bytes);
	stat_u(c, "curr_items", cs.curr_items);
	stat_u(c, "evictions", 0);
	stat_u(c, "expired_unfetched", 0);
	stat_u(c, "reclaimed", 0);
	stat_u(c, "hash_buckets", cs.table.size);
	stat_u(c, "hash_is_expanding", cs.table.resizing);
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

void cmd_stats(struct conn *c, const char *buf, const struct proto_req *req)
{
	const char *arg = buf + req->arg.off;
	size_t n = req->arg.len;

	if (n == 0) {
		stats_general(c);
	} else if (n == 8 && !memcmp(arg, "settings", 8)) {
		config_each(&c->w->srv->cfg, stat_s, c);
	} else if (n == 5 && !memcmp(arg, "table", 5)) {
		stats_table(c);
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
