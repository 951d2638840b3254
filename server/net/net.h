/*
 * The net layer's state (struct net, which the top holds as srv->net):
 * the worker threads, the listening sockets the top opened for them, the
 * connections' buffer budget and the TLS context; and what it is handed
 * of the rest of the server: the settings, the sessions' env, the
 * observe state. Passed around explicitly (no global).
 *
 * Threads: set up by the top before the workers start; then each worker
 * owns its struct worker (its lock guards what other threads touch), and
 * the fields of struct net do not change until the workers have stopped.
 */
#ifndef RHKV_SERVER_NET_H
#define RHKV_SERVER_NET_H

#include <event2/event.h>
#include <event2/listener.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "conn_budget.h"
#include "observe.h"
#include "session.h"

struct conn;
struct net;

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
	struct net *net;
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
	 * alone writes: the observe state's threads[id]. */
	struct observe_thread *obs;
} __attribute__((aligned(64)));

struct net {
	const struct config *cfg;
	const struct session_env *env; /* every connection's session's */
	struct observe *obs;
	struct worker *workers;
	/* Workers set up: all of them before the first thread starts, so
	 * that a worker answering `stats conns` (under --reuseport, as soon
	 * as its thread runs) never sees this change. */
	unsigned int nworkers;
	unsigned int next_worker; /* the listener thread's round robin */
	/* Every listening socket's fd (the workers' too), for `stats conns`
	 * on any thread: set before the workers start and never changed
	 * (the top frees the listeners, not these). */
	int *listen_fd;
	int nlisten_fd;
	/* --reuseport: for TCP listener j, worker i's socket is
	 * worker_listen_fd[j * cfg->threads + i] until that worker's listener
	 * owns it (then -1); worker_listen_tls[j]: a TLS one. */
	int *worker_listen_fd;
	bool worker_listen_tls[2 * CONFIG_MAX_LISTEN];
	int nworker_listen;
	/* -U: a UDP socket per -l address (also in listen_fd), each served
	 * by one worker (udp.h); closed by the top's stop. */
	int udp_fd[CONFIG_MAX_LISTEN];
	int nudp_fd;
	/* Bytes of every connection's input and output buffers, and the
	 * connections waiting for room (--conn-memory, conn_budget.h). */
	struct conn_budget budget;
	struct tls *tls; /* --tls-port: the TLS context; NULL: none */
};

/* Worker threads (worker.c): started with every socket of net set up;
 * workers_stop lets them finish their replies and joins them. */
int workers_start(struct net *net);
void worker_hand_off(struct worker *w, int fd, bool tls);
void workers_stop(struct net *net);

#endif
