/*
 * The daemon's shared state: configuration, the cache, the workers, and
 * process-wide connection counters. Passed around explicitly (no global).
 */
#ifndef RHKV_SERVER_SERVER_H
#define RHKV_SERVER_SERVER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cache.h"
#include "config.h"
#include "conn_budget.h"
#include "observe.h"
#include "session.h"

struct conn;

struct fd_node {
	int fd;
	bool tls; /* from the TLS listener */
	struct fd_node *next;
};

/* The worker loop's event priorities (0 runs first): TLS handshakes wait
 * behind everything else, and the loop runs at most WORKER_HANDSHAKE_BATCH
 * of their callbacks before it looks for other events again. */
#define WORKER_PRIORITIES      3
#define WORKER_PRIO_NORMAL     1 /* libevent's default with 3 */
#define WORKER_PRIO_HANDSHAKE  2
#define WORKER_HANDSHAKE_BATCH 32

struct worker {
	struct server *srv;
	unsigned int id;
	pthread_t tid;
	bool running; /* tid was started (workers_stop joins it) */
	struct event_base *base;
	struct event *notify; /* activated by the listener thread */
	struct event *tick;   /* once a second: timeouts */
	/* --reuseport: this worker's own listening sockets, one per TCP
	 * listener; its thread frees them when it stops. */
	struct evconnlistener *listeners[2 * CONFIG_MAX_LISTEN];
	int nlisteners;
	/* -U: the UDP sockets this worker serves (udp.h). */
	struct udp_port *udp[CONFIG_MAX_LISTEN];
	int nudp;
	pthread_mutex_t lock; /* inbox, stop, linking into conns */
	struct fd_node *inbox;
	bool stop;
	bool stopping; /* worker-local: draining connections */
	int64_t stop_started;
	struct conn *conns;
	unsigned int nconns;
	/* This thread's counters, histograms and hot-key samples, which it
	 * alone writes: srv->obs.threads[id]. */
	struct observe_thread *obs;
} __attribute__((aligned(64)));

struct server {
	struct config cfg;
	struct cache *cache;
	struct worker *workers;
	/* Workers set up: all of them before the first thread starts, so
	 * that a worker answering `stats` (under --reuseport, as soon as its
	 * thread runs) never sees this change. */
	unsigned int nworkers;
	unsigned int next_worker;
	struct event_base *base; /* listeners and signals */
	/* The listener thread's: every TCP listener, or with --reuseport
	 * only the unix socket's (the kernel cannot spread those). */
	struct evconnlistener *listeners[2 * CONFIG_MAX_LISTEN + 1];
	int nlisteners;
	/* Every listening socket's fd (the workers' too), for `stats conns`
	 * on any thread: set before the workers start and never changed
	 * (stop() frees the listeners, not these). */
	int *listen_fd;
	int nlisten_fd;
	/* --reuseport: for TCP listener j, worker i's socket is
	 * worker_listen_fd[j * cfg.threads + i] until that worker's listener
	 * owns it (then -1); worker_listen_tls[j]: a TLS one. */
	int *worker_listen_fd;
	bool worker_listen_tls[2 * CONFIG_MAX_LISTEN];
	int nworker_listen;
	/* -U: a UDP socket per -l address (also in listen_fd), each served
	 * by one worker (udp.h); closed by stop(). */
	int udp_fd[CONFIG_MAX_LISTEN];
	int nudp_fd;
	struct event *sigterm, *sigint;
	/* Bytes of every connection's input and output buffers, and the
	 * connections waiting for room (--conn-memory, conn_budget.h). */
	struct conn_budget budget;
	/* Counters, statistics, hot keys, watchers, the metrics endpoint
	 * (observe.h): set up once the cache is. */
	struct observe obs;
	/* What executors and front ends may reach (session.h): set by
	 * start() before the workers start. */
	struct session_env env;
	struct tls *tls;       /* --tls-port: the TLS context; NULL: none */
	struct auth *auth;     /* -Y/--auth-file (auth.h); NULL: none */
	struct event *sighup;  /* reloads the TLS certificate, the auth file */
	struct event *sigusr1; /* stops, as SIGTERM (memcached's for -e) */
};

/* Worker threads (worker.c). */
int workers_start(struct server *srv);
void worker_hand_off(struct worker *w, int fd, bool tls);
void workers_stop(struct server *srv);

#endif
