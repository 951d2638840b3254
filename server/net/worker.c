/*
 * Worker threads: each runs its own event_base and owns the connections
 * the listener hands it (round-robin) and, with --reuseport, those its own
 * listening sockets accept. The hand-off queue and the stop flag are the
 * only state shared with other threads, under worker->lock.
 */
#include <event2/thread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "conn.h"
#include "net.h"
#include "tls.h"
#include "transport.h"
#include "udp.h"

/* Timeouts are checked, and a stopping worker looks for its end, this often. */
static const struct timeval tick_interval = { 0, 250000 };

/* A client that does not read its last replies delays shutdown this long. */
#define SHUTDOWN_GRACE_S 5

/* --reuseport: a connection this worker's own socket accepted stays here;
 * listeners[i] is the socket of TCP listener i (worker_listen_tls[i]). */
static void on_listen(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int socklen, void *arg)
{
	struct worker *w = arg;
	bool tls = false;

	(void)socklen;
	for (int i = 0; i < w->nlisteners; i++)
		if (w->listeners[i] == l)
			tls = w->net->worker_listen_tls[i];
	if (!conn_admit(w->net, fd, sa))
		return;
	if (tls)
		conn_new_tls(w, fd);
	else
		conn_new_socket(w, fd);
}

/* Closes the worker's own listening sockets and stops reading its UDP
 * ones: on its thread when it stops, or after it when it never ran. What
 * waits in the listening sockets' queues is reset, as with the listener
 * thread's at shutdown. */
static void worker_unlisten(struct worker *w)
{
	for (int i = 0; i < w->nlisteners; i++)
		evconnlistener_free(w->listeners[i]);
	w->nlisteners = 0;
	udp_worker_stop(w);
}

static void worker_check_done(struct worker *w)
{
	if (!w->stopping)
		return;
	if (w->nconns && clock_now_s() - w->stop_started >= SHUTDOWN_GRACE_S)
		while (w->conns)
			conn_close(w->conns);
	if (w->nconns == 0)
		event_base_loopbreak(w->base);
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct fd_node *list;
	bool stop;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&w->lock);
	list = w->inbox;
	w->inbox = NULL;
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	while (list) {
		struct fd_node *next = list->next;

		if (stop) {
			close(list->fd);
			conn_slot_give(w->net);
		} else if (list->tls) {
			conn_new_tls(w, list->fd);
		} else {
			conn_new_socket(w, list->fd);
		}
		free(list);
		list = next;
	}
	if (stop && !w->stopping) {
		/* Accept nothing more, finish replies already computed, read
		 * nothing more. */
		worker_unlisten(w);
		w->stopping = true;
		w->stop_started = clock_now_s();
		for (struct conn *c = w->conns, *next; c; c = next) {
			next = c->next;
			conn_shutdown(c);
		}
	}
	worker_check_done(w);
}

/* A worker's loop: with priorities, so that TLS handshakes wait behind
 * established connections, and a bound on how many handshake callbacks
 * run before the loop looks for those again (net.h). */
static struct event_base *worker_base(void)
{
	struct event_config *ec = event_config_new();
	struct event_base *base;

	if (!ec)
		return NULL;
	event_config_set_max_dispatch_interval(ec, NULL, WORKER_HANDSHAKE_BATCH,
					       WORKER_PRIO_HANDSHAKE);
	base = event_base_new_with_config(ec);
	event_config_free(ec);
	if (base && event_base_priority_init(base, WORKER_PRIORITIES)) {
		event_base_free(base);
		return NULL;
	}
	return base;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	int64_t now = clock_now_s();

	(void)fd;
	(void)what;
	for (struct conn *c = w->conns, *next; c; c = next) {
		next = c->next;
		conn_tick(c, now);
	}
	hotkeys_tick(&w->obs->hot);
	worker_check_done(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	rhkv_rcu_register_thread();
	event_base_dispatch(w->base);
	while (w->conns)
		conn_close(w->conns);
	rhkv_rcu_unregister_thread();
	return NULL;
}

static int worker_init(struct net *net, struct worker *w, unsigned int id)
{
	w->net = net;
	w->id = id;
	w->obs = &net->obs->threads[id];
	pthread_mutex_init(&w->lock, NULL);
	w->base = worker_base();
	if (!w->base)
		return -1;
	w->notify = event_new(w->base, -1, EV_PERSIST, on_notify, w);
	w->tick = event_new(w->base, -1, EV_PERSIST, on_tick, w);
	if (!w->notify || !w->tick || event_add(w->notify, NULL) ||
	    event_add(w->tick, &tick_interval))
		return -1;
	/* Its sockets of --reuseport's groups, already listening (backlog
	 * 0: listen() is not called again). */
	for (int j = 0; j < net->nworker_listen; j++) {
		int *fd =
			&net->worker_listen_fd[j * net->cfg->threads + (int)id];
		struct evconnlistener *l = evconnlistener_new(
			w->base, on_listen, w,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, *fd);

		if (!l)
			return -1;
		*fd = -1; /* the listener closes it */
		w->listeners[w->nlisteners++] = l;
	}
	return udp_worker_init(w);
}

static void worker_free(struct worker *w)
{
	worker_unlisten(w);
	udp_worker_free(w);
	if (w->notify)
		event_free(w->notify);
	if (w->tick)
		event_free(w->tick);
	if (w->base)
		event_base_free(w->base);
	pthread_mutex_destroy(&w->lock);
}

/*
 * `stats conns`' walk (stats.h): each worker's list under that worker's
 * lock, which its thread takes to link and unlink a connection (never to
 * use one), so no connection is freed or its fd closed meanwhile. The
 * fields read are the fd (set before linking), and the state and last
 * activity, which the owning thread publishes with atomic stores.
 */
static void conns_walk(void *arg, const struct session *self,
		       void (*row)(void *a, const struct stats_conn_row *r),
		       void *a)
{
	struct net *net = arg;

	for (unsigned int w = 0; w < net->nworkers; w++) {
		struct worker *wk = &net->workers[w];

		pthread_mutex_lock(&wk->lock);
		for (const struct conn *c = wk->conns; c; c = c->next) {
			uint8_t st = atomic_load_explicit(&c->state,
							  memory_order_relaxed);
			struct stats_conn_row r = {
				.fd = c->fd,
				.state = &c->s == self ? "conn_parse_cmd"
						       : conn_state_name[st],
				.last_active = atomic_load_explicit(
					&c->last_active, memory_order_relaxed),
				.thread = w,
			};

			if (c->fd >= 0)
				row(a, &r);
		}
		pthread_mutex_unlock(&wk->lock);
	}
}

/* Every listening socket, for `stats conns` and connection_structures:
 * set before the workers start, and never changed while they run. */
static void listeners_each(void *arg, void (*each)(void *a, int fd, bool udp),
			   void *a)
{
	struct net *net = arg;

	for (int i = 0; i < net->nlisten_fd; i++) {
		bool udp = false;

		for (int j = 0; j < net->nudp_fd; j++)
			udp |= net->udp_fd[j] == net->listen_fd[i];
		each(a, net->listen_fd[i], udp);
	}
}

static uint64_t conn_bytes(void *arg)
{
	struct net *net = arg;
	int64_t v =
		atomic_load_explicit(&net->budget.bytes, memory_order_relaxed);

	return v > 0 ? (uint64_t)v : 0;
}

static void tls_numbers(void *arg, struct observe_tls *out)
{
	struct net *net = arg;

	out->verify = tls_verify_flags(net->cfg);
	if (!net->tls)
		return;
	out->on = true;
	out->connections = (uint64_t)atomic_load(&net->tls->connections);
	out->refreshed = atomic_load(&net->tls->refreshed);
}

int workers_start(struct net *net)
{
	unsigned int n = (unsigned int)net->cfg->threads;

	/* Cache-line aligned (struct worker is): calloc gives 16 bytes. */
	net->workers = aligned_alloc(64, n * sizeof(*net->workers));
	if (!net->workers)
		return -1;
	memset(net->workers, 0, n * sizeof(*net->workers));
	net->obs->net = (struct observe_net){ .arg = net,
					      .listeners = listeners_each,
					      .conns = conns_walk,
					      .conn_bytes = conn_bytes,
					      .tls = tls_numbers };
	for (unsigned int i = 0; i < n; i++) {
		if (worker_init(net, &net->workers[i], i))
			return -1;
		net->nworkers = i + 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (pthread_create(&net->workers[i].tid, NULL, worker_main,
				   &net->workers[i]))
			return -1;
		net->workers[i].running = true;
	}
	return 0;
}

void worker_hand_off(struct worker *w, int fd, bool tls)
{
	struct fd_node *node = malloc(sizeof(*node));

	if (!node) {
		close(fd);
		conn_slot_give(w->net);
		return;
	}
	node->fd = fd;
	node->tls = tls;
	pthread_mutex_lock(&w->lock);
	node->next = w->inbox;
	w->inbox = node;
	pthread_mutex_unlock(&w->lock);
	event_active(w->notify, EV_READ, 0);
}

void workers_stop(struct net *net)
{
	for (unsigned int i = 0; i < net->nworkers; i++) {
		struct worker *w = &net->workers[i];

		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_mutex_unlock(&w->lock);
		event_active(w->notify, EV_READ, 0);
	}
	/* All joined before any is freed: a worker still draining may be
	 * answering `stats`, which reads every worker's counters. */
	for (unsigned int i = 0; i < net->nworkers; i++)
		if (net->workers[i].running)
			pthread_join(net->workers[i].tid, NULL);
	for (unsigned int i = 0; i < net->nworkers; i++)
		worker_free(&net->workers[i]);
	free(net->workers);
	net->workers = NULL;
	net->nworkers = 0;
}
