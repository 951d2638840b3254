/*
 * What observe/ keeps for the whole server (struct observe, which the
 * top holds as srv->obs): each worker thread's counters, latency
 * histograms and hot-key samples; the connection counts; the baseline
 * `stats reset` takes; `stats detail`'s counts; the hot keys' settings;
 * the watch hub; the metrics endpoint. The numbers observe/ shows but the
 * net layer keeps (its listening sockets, connections, buffer bytes,
 * TLS context) it reads through struct observe_net, which the net layer
 * fills in when its workers start. So no file here sees a connection, a
 * worker or the server.
 *
 * Threads: a worker writes only its own struct observe_thread (stats.h
 * says how); the connection counts are atomics any thread changes; the
 * rest is set before the workers start, or guarded as its field says.
 */
#ifndef RHKV_SERVER_OBSERVE_H
#define RHKV_SERVER_OBSERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "hotkeys.h"
#include "latency.h"
#include "stats.h"
#include "watch.h"

struct config;
struct evhttp;
struct event_base;

/* One worker thread's: written by that thread alone, on every request.
 * Aligned so that no two threads' counters share a cache line. */
struct observe_thread {
	struct thread_stats stats;
	struct latency_hist *lat; /* [LAT_NCLASSES] */
	struct hotkeys_worker hot;
} __attribute__((aligned(64)));

/* The TLS listener as `stats` shows it. */
struct observe_tls {
	bool on;	      /* a TLS listener runs (--tls-port) */
	uint64_t connections; /* TLS connections open */
	int64_t refreshed;    /* when the certificate was loaded (s) */
	int verify;	      /* the OpenSSL verify flags --tls-verify asks */
};

/*
 * What the net layer keeps and `stats` shows: each call gets arg. Any
 * may be NULL (a server without sockets, in tests): then there is none.
 */
struct observe_net {
	void *arg;
	/* Every listening socket, udp when it is a UDP one. */
	void (*listeners)(void *arg, void (*each)(void *a, int fd, bool udp),
			  void *a);
	/* The client connections with a socket (`stats conns`). */
	stats_conns_walk_fn *conns;
	/* Bytes of every connection's input and output buffers. */
	uint64_t (*conn_bytes)(void *arg);
	void (*tls)(void *arg, struct observe_tls *out);
};

struct observe {
	const struct config *cfg;
	struct cache *cache;
	int64_t started; /* the server's start (cache_now), for uptime */
	struct observe_thread *threads;
	unsigned int nthreads;
	/* Client connections: open now (up to -c), since start or the last
	 * `stats reset`, and refused for -c. */
	_Atomic int curr_conns;
	_Atomic unsigned long total_conns;
	_Atomic unsigned long rejected_conns;
	pthread_mutex_t stats_lock; /* the two baselines */
	struct stats_sum baseline;  /* subtracted: `stats reset` */
	struct latency_snapshot lat_baseline[LAT_NCLASSES];
	/* `stats detail`: counting on, and the counts (stats_detail.c). */
	_Atomic bool detail_on;
	struct stats_detail *_Atomic detail;
	/* `stats hotkeys`: what every thread's tracker shares. */
	struct hotkeys_params hotkeys;
	struct watch_hub watch; /* `watch` connections */
	struct evhttp *metrics; /* --metrics-port */
	struct observe_net net;
};

/* Sets up obs for nthreads worker threads (their histograms and hot-key
 * trackers too), started now (the caller may set an earlier start); 0,
 * or -1 when out of memory (nothing to free then). */
int observe_init(struct observe *obs, const struct config *cfg,
		 struct cache *cache, unsigned int nthreads);
void observe_destroy(struct observe *obs);

/* `stats detail` counting, when on (one relaxed load when off). */
static inline void observe_detail(struct observe *obs, struct cache_key key,
				  enum stats_detail_op op, bool hit)
{
	if (atomic_load_explicit(&obs->detail_on, memory_order_relaxed))
		stats_detail_record(obs, key.p, key.n, op, hit);
}

/* The Prometheus endpoint on base; 0 when off or started. */
int metrics_start(struct observe *obs, struct event_base *base);
void metrics_stop(struct observe *obs);

#endif
