/*
 * rhkv_pool: handles (or clusters) shared by threads. A mutex guards the
 * stack of idle items and the count of items made; a condition variable
 * wakes a waiting checkout when an item is put back or a slot to make one
 * frees. Items are made and closed outside the lock, since connecting
 * takes up to the connect timeout.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum pool_kind {
	POOL_HANDLES,
	POOL_CLUSTERS,
};

struct rhkv_pool {
	pthread_mutex_t lock; /* guards idle, nidle, made */
	pthread_cond_t back;  /* an item was put back, or a slot freed */
	void **idle;	      /* size slots; the idle items are [0, nidle) */
	size_t nidle;
	size_t made; /* items that exist (idle, out or being made) */
	size_t size;
	enum pool_kind kind;

	/* what an item is made of: read-only once the pool exists */
	struct rhkv_options opt; /* its strings are our copies */
	char *host;		 /* POOL_HANDLES */
	int port;
	struct rhkv_server *servers; /* POOL_CLUSTERS; hosts are copies */
	size_t nservers;
	struct rhkv_cluster_config cfg;
};

static int make_handle(const rhkv_pool *p, void **out)
{
	rhkv *c;
	int rc = rhkv_connect(&c, p->host, p->port, &p->opt);

	if (rc) {
		rhkv_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int make_cluster(const rhkv_pool *p, void **out)
{
	rhkv_cluster *cl;
	int rc = rhkv_cluster_new(&cl, &p->opt);

	for (size_t i = 0; !rc && i < p->nservers; i++)
		rc = rhkv_cluster_add(cl, p->servers[i].host,
				      p->servers[i].port, p->servers[i].weight);
	if (!rc)
		rc = rhkv_cluster_set_ketama(cl, p->cfg.ketama);
	if (!rc)
		rc = rhkv_cluster_set_retry(cl, p->cfg.retry_ms);
	if (!rc)
		rc = rhkv_cluster_set_rejoin(cl, p->cfg.rejoin,
					     p->cfg.quiet_ms);
	if (rc) {
		rhkv_cluster_free(cl);
		return rc;
	}
	*out = cl;
	return 0;
}

static int make_item(const rhkv_pool *p, void **out)
{
	return p->kind == POOL_HANDLES ? make_handle(p, out)
				       : make_cluster(p, out);
}

static void close_item(const rhkv_pool *p, void *item)
{
	if (p->kind == POOL_HANDLES)
		rhkv_close(item);
	else
		rhkv_cluster_free(item);
}

/* A pool of kind with its lock, condition variable (on the monotonic
 * clock, which wall-clock steps do not move) and idle slots; NULL when
 * any of them cannot be made. */
static rhkv_pool *pool_alloc(enum pool_kind kind, size_t size,
			     const struct rhkv_options *o)
{
	rhkv_pool *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int ok;

	if (!p)
		return NULL;
	p->kind = kind;
	p->size = size;
	p->idle = calloc(size, sizeof(*p->idle));
	if (!p->idle || pthread_condattr_init(&ca)) {
		free(p->idle);
		free(p);
		return NULL;
	}
	ok = !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) &&
	     !pthread_cond_init(&p->back, &ca);
	pthread_condattr_destroy(&ca);
	if (ok && pthread_mutex_init(&p->lock, NULL)) {
		pthread_cond_destroy(&p->back);
		ok = 0;
	}
	if (!ok) {
		free(p->idle);
		free(p);
		return NULL;
	}
	if (!o)
		rhkv_options_init(&p->opt);
	else if (rhkv__options_copy(&p->opt, o)) {
		rhkv_pool_free(p);
		return NULL;
	}
	return p;
}

int rhkv_pool_new(rhkv_pool **out, const char *host, int port,
		  const struct rhkv_options *o, size_t size)
{
	rhkv_pool *p;

	if (!out)
		return RHKV_EINVAL;
	*out = NULL;
	if (!host || !*host || port < 0 || port > 65535 || !size ||
	    (o && (o->connect_timeout_ms < 0 || o->io_timeout_ms < 0)))
		return RHKV_EINVAL;
	p = pool_alloc(POOL_HANDLES, size, o);
	if (!p)
		return RHKV_ENOMEM;
	p->host = strdup(host);
	if (!p->host) {
		rhkv_pool_free(p);
		return RHKV_ENOMEM;
	}
	p->port = port;
	*out = p;
	return 0;
}

/* The pool's own copy of servers[0..n). 0 or RHKV_ENOMEM. */
static int copy_servers(rhkv_pool *p, const struct rhkv_server *servers,
			size_t n)
{
	p->servers = calloc(n, sizeof(*p->servers));
	if (!p->servers)
		return RHKV_ENOMEM;
	p->nservers = n;
	for (size_t i = 0; i < n; i++) {
		p->servers[i] = servers[i];
		p->servers[i].host = strdup(servers[i].host);
		if (!p->servers[i].host)
			return RHKV_ENOMEM;
	}
	return 0;
}

int rhkv_pool_new_cluster(rhkv_pool **out, const struct rhkv_server *servers,
			  size_t n, const struct rhkv_options *o,
			  const struct rhkv_cluster_config *cfg, size_t size)
{
	rhkv_pool *p;
	void *trial;
	int rc;

	if (!out)
		return RHKV_EINVAL;
	*out = NULL;
	if (!servers || !n || !size)
		return RHKV_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!servers[i].host)
			return RHKV_EINVAL;
	p = pool_alloc(POOL_CLUSTERS, size, o);
	if (!p)
		return RHKV_ENOMEM;
	if (cfg)
		p->cfg = *cfg;
	else
		rhkv_cluster_config_init(&p->cfg);
	rc = copy_servers(p, servers, n);
	/* one cluster made now checks every argument the way a checkout
	 * will (it connects nothing); the pool stays lazy */
	if (!rc)
		rc = make_cluster(p, &trial);
	if (rc) {
		rhkv_pool_free(p);
		return rc;
	}
	rhkv_cluster_free(trial);
	*out = p;
	return 0;
}

/* The monotonic time ms from now. */
static struct timespec deadline_in(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Waits, the lock held, until an item is idle or may be made, or the
 * timeout has passed. */
static void do_wait(rhkv_pool *p, int timeout_ms)
{
	struct timespec until;
	int rc = 0;

	if (timeout_ms > 0)
		until = deadline_in(timeout_ms);
	while (!p->nidle && p->made == p->size && rc != ETIMEDOUT) {
		if (timeout_ms == 0)
			break;
		if (timeout_ms < 0)
			pthread_cond_wait(&p->back, &p->lock);
		else
			rc = pthread_cond_timedwait(&p->back, &p->lock, &until);
	}
}

static int checkout(rhkv_pool *p, int timeout_ms, void **out)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	do_wait(p, timeout_ms);
	if (p->nidle) {
		/* the most recently used: its connection is the likeliest
		 * to be alive */
		*out = p->idle[--p->nidle];
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	if (p->made == p->size) {
		pthread_mutex_unlock(&p->lock);
		return RHKV_ETIMEDOUT;
	}
	p->made++; /* the slot is ours while we make the item unlocked */
	pthread_mutex_unlock(&p->lock);
	rc = make_item(p, out);
	if (rc) {
		pthread_mutex_lock(&p->lock);
		p->made--;
		pthread_cond_signal(&p->back); /* a waiter may make one */
		pthread_mutex_unlock(&p->lock);
	}
	return rc;
}

static void checkin(rhkv_pool *p, void *item)
{
	pthread_mutex_lock(&p->lock);
	/* more idle than made is a double put: keep the stack in bounds */
	if (p->nidle < p->made)
		p->idle[p->nidle++] = item;
	pthread_cond_signal(&p->back);
	pthread_mutex_unlock(&p->lock);
}

/* A checkout from a pool of kind into *out (NULL on failure). */
static int get_item(rhkv_pool *pool, enum pool_kind kind, int timeout_ms,
		    void **out)
{
	*out = NULL;
	if (!pool || pool->kind != kind)
		return RHKV_EINVAL;
	return checkout(pool, timeout_ms, out);
}

int rhkv_pool_get(rhkv_pool *pool, int timeout_ms, rhkv **out)
{
	void *item;
	int rc;

	if (!out)
		return RHKV_EINVAL;
	rc = get_item(pool, POOL_HANDLES, timeout_ms, &item);
	*out = item;
	return rc;
}

void rhkv_pool_put(rhkv_pool *pool, rhkv *c)
{
	if (!pool || !c || pool->kind != POOL_HANDLES)
		return;
	/* the next thread must not run this one's callbacks, nor report to
	 * its event loop: a blocking call completes what is queued first */
	if (rhkv_pending(c))
		rhkv_ping(c);
	rhkv_set_event_hooks(c, NULL);
	checkin(pool, c);
}

int rhkv_pool_get_cluster(rhkv_pool *pool, int timeout_ms, rhkv_cluster **out)
{
	void *item;
	int rc;

	if (!out)
		return RHKV_EINVAL;
	rc = get_item(pool, POOL_CLUSTERS, timeout_ms, &item);
	*out = item;
	return rc;
}

void rhkv_pool_put_cluster(rhkv_pool *pool, rhkv_cluster *cl)
{
	if (pool && cl && pool->kind == POOL_CLUSTERS)
		checkin(pool, cl);
}

void rhkv_pool_free(rhkv_pool *pool)
{
	if (!pool)
		return;
	for (size_t i = 0; i < pool->nidle; i++)
		close_item(pool, pool->idle[i]);
	for (size_t i = 0; i < pool->nservers; i++)
		free((char *)pool->servers[i].host);
	free(pool->servers);
	free(pool->host);
	rhkv__options_free(&pool->opt);
	free(pool->idle);
	pthread_cond_destroy(&pool->back);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}
