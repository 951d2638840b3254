/*
 * rhkv_cluster: keys spread over several servers by a ketama ring that
 * places points the way libmemcached does (MD5 of "host:port-N", or of
 * "host-N" on port 11211), so that both pick the same server for a key.
 * A server that fails is skipped (its points lead to the next point
 * clockwise) until its retry time; the ring itself never changes, so only
 * the failed server's keys move.
 */
#include "internal.h"
#include "md5.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libmemcached's figures: points per server in weighted ketama (4 per
 * digest), and in plain ketama (1 per digest); its default port, the one
 * left out of the hashed names. */
#define POINTS_WEIGHTED	 160
#define POINTS_PLAIN	 100
#define DEFAULT_PORT	 11211
#define DEFAULT_RETRY_MS 2000

struct node {
	char *host;
	int port;
	unsigned int weight;
	rhkv *c;	     /* NULL until first picked */
	long long dead_at;   /* monotonic ms of its failure; 0: alive */
	unsigned long tried; /* the pick that last failed to connect it */
};

struct point {
	uint32_t value;
	uint32_t node;
};

struct rhkv_cluster {
	struct rhkv_options opt; /* its strings are our copies */
	struct node *nodes;
	size_t n, cap;
	struct point *ring; /* sorted by value */
	size_t npoints;
	int stale; /* the ring must be rebuilt (servers added) */
	int mode;  /* enum rhkv_ketama */
	int retry_ms;
	unsigned long picks; /* rhkv_cluster_pick calls, from 1 */
	char err[320];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_err(rhkv_cluster *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_err(rhkv_cluster *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
}

/* Point i (0..3) of a digest: its bytes 4i..4i+3, little-endian. */
static uint32_t digest_word(const unsigned char d[16], int i)
{
	return (uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 |
	       (uint32_t)d[4 * i + 2] << 16 | (uint32_t)d[4 * i + 3] << 24;
}

static uint32_t key_hash(const void *key, size_t klen)
{
	unsigned char d[16];

	rhkv__md5(key, klen, d);
	return digest_word(d, 0);
}

/* How many digests server i contributes. The weighted share is computed
 * in float, then floored, as libmemcached does (so that shares like 1/6
 * round the same way). */
static uint32_t digests_of(const rhkv_cluster *cl, size_t i,
			   unsigned long long total)
{
	float share, per4;

	if (cl->mode == RHKV_KETAMA_PLAIN)
		return POINTS_PLAIN;
	share = (float)cl->nodes[i].weight / (float)total;
	per4 = share * POINTS_WEIGHTED / 4 * (float)cl->n;
	/* floor() as a cast: the value is not negative */
	return (uint32_t)((double)per4 + 0.0000000001);
}

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int rebuild(rhkv_cluster *cl)
{
	unsigned long long total = 0;
	size_t count = 0, k = 0;
	int per = cl->mode == RHKV_KETAMA_PLAIN ? 1 : 4;
	struct point *ring;

	for (size_t i = 0; i < cl->n; i++)
		total += cl->nodes[i].weight;
	for (size_t i = 0; i < cl->n; i++)
		count += (size_t)digests_of(cl, i, total) * per;
	ring = malloc((count ? count : 1) * sizeof(*ring));
	if (!ring)
		return RHKV_ENOMEM;
	for (size_t i = 0; i < cl->n; i++) {
		const struct node *nd = &cl->nodes[i];
		uint32_t nd_digests = digests_of(cl, i, total);

		for (uint32_t j = 0; j < nd_digests; j++) {
			char name[1100];
			unsigned char d[16];
			int len;

			if (nd->port == DEFAULT_PORT)
				len = snprintf(name, sizeof(name), "%s-%u",
					       nd->host, j);
			else
				len = snprintf(name, sizeof(name), "%s:%u-%u",
					       nd->host, (unsigned)nd->port, j);
			rhkv__md5(name, (size_t)len, d);
			for (int w = 0; w < per; w++) {
				ring[k].value = digest_word(d, w);
				ring[k++].node = (uint32_t)i;
			}
		}
	}
	qsort(ring, count, sizeof(*ring), cmp_point);
	free(cl->ring);
	cl->ring = ring;
	cl->npoints = count;
	cl->stale = 0;
	return 0;
}

/* The first point at or after the key's hash (wrapping), then clockwise
 * to the first live server, not one that pick number `pick` (0: none)
 * failed to connect; -1 when none is live (or none was added). */
static long owner(rhkv_cluster *cl, const void *key, size_t klen, long long now,
		  unsigned long pick)
{
	uint32_t h;
	size_t lo = 0, hi;

	if (cl->stale && rebuild(cl))
		return -1;
	if (!cl->npoints)
		return -1;
	h = key_hash(key, klen);
	hi = cl->npoints;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cl->ring[mid].value < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t s = 0; s < cl->npoints; s++) {
		uint32_t i = cl->ring[(lo + s) % cl->npoints].node;

		const struct node *nd = &cl->nodes[i];

		if (pick && nd->tried == pick)
			continue;
		if (!nd->dead_at || now - nd->dead_at >= cl->retry_ms)
			return i;
	}
	return -1;
}

static void mark_dead(rhkv_cluster *cl, struct node *nd, int err)
{
	nd->dead_at = now_ms();
	if (!nd->dead_at)
		nd->dead_at = 1;
	set_err(cl, "%s:%d: %s (%s); skipped for %d ms", nd->host, nd->port,
		rhkv_strerror(err), nd->c ? rhkv_errstr(nd->c) : "",
		cl->retry_ms);
}

static int is_conn_err(int err)
{
	/* a server whose TLS fails cannot be used either */
	return err == RHKV_ECONN || err == RHKV_ETIMEDOUT || err == RHKV_ETLS;
}

int rhkv_cluster_new(rhkv_cluster **out, const struct rhkv_options *o)
{
	rhkv_cluster *cl;

	if (!out)
		return RHKV_EINVAL;
	*out = NULL;
	if (o && (o->connect_timeout_ms < 0 || o->io_timeout_ms < 0))
		return RHKV_EINVAL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return RHKV_ENOMEM;
	if (!o)
		rhkv_options_init(&cl->opt);
	else if (rhkv__options_copy(&cl->opt, o)) {
		rhkv__options_free(&cl->opt);
		free(cl);
		return RHKV_ENOMEM;
	}
	cl->retry_ms = DEFAULT_RETRY_MS;
	cl->mode = RHKV_KETAMA_WEIGHTED;
	*out = cl;
	return 0;
}

int rhkv_cluster_add(rhkv_cluster *cl, const char *host, int port,
		     unsigned int weight)
{
	struct node *nd;

	if (!cl || !host || !*host || strlen(host) > 1024 || port < 0 ||
	    port > 65535)
		return RHKV_EINVAL;
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? 2 * cl->cap : 4;
		struct node *p = realloc(cl->nodes, cap * sizeof(*p));

		if (!p)
			return RHKV_ENOMEM;
		cl->nodes = p;
		cl->cap = cap;
	}
	nd = &cl->nodes[cl->n];
	memset(nd, 0, sizeof(*nd));
	nd->host = strdup(host);
	if (!nd->host)
		return RHKV_ENOMEM;
	nd->port = port;
	nd->weight = weight ? weight : 1;
	cl->n++;
	cl->stale = 1;
	return 0;
}

int rhkv_cluster_set_retry(rhkv_cluster *cl, int retry_ms)
{
	if (!cl || retry_ms < 0)
		return RHKV_EINVAL;
	cl->retry_ms = retry_ms;
	return 0;
}

int rhkv_cluster_set_ketama(rhkv_cluster *cl, int mode)
{
	if (!cl || (mode != RHKV_KETAMA_WEIGHTED && mode != RHKV_KETAMA_PLAIN))
		return RHKV_EINVAL;
	if (mode != cl->mode)
		cl->stale = 1;
	cl->mode = mode;
	return 0;
}

rhkv *rhkv_cluster_pick(rhkv_cluster *cl, const void *key, size_t klen)
{
	if (!cl || (!key && klen))
		return NULL;
	if (!++cl->picks)
		cl->picks = 1;
	for (;;) {
		long i = owner(cl, key, klen, now_ms(), cl->picks);
		struct node *nd;
		int rc;

		if (i < 0) {
			if (cl->n)
				set_err(cl, "no server is alive");
			else
				set_err(cl, "no server was added");
			return NULL;
		}
		nd = &cl->nodes[i];
		if (!nd->c) {
			rc = rhkv_connect(&nd->c, nd->host, nd->port, &cl->opt);
			if (!nd->c) {
				set_err(cl, "%s:%d: %s", nd->host, nd->port,
					rhkv_strerror(rc));
				return NULL;
			}
		} else {
			rc = rhkv__ensure(nd->c);
		}
		/* nothing was sent yet: the key may go to the next server */
		if (is_conn_err(rc)) {
			mark_dead(cl, nd, rc);
			nd->tried = cl->picks; /* even with a retry of 0 */
			continue;
		}
		return nd->c;
	}
}

void rhkv_cluster_failed(rhkv_cluster *cl, rhkv *c, int err)
{
	if (!cl || !c || !is_conn_err(err))
		return;
	for (size_t i = 0; i < cl->n; i++)
		if (cl->nodes[i].c == c)
			mark_dead(cl, &cl->nodes[i], err);
}

int rhkv_cluster_server_of(rhkv_cluster *cl, const void *key, size_t klen,
			   char *host, size_t cap, int *port)
{
	long i;

	if (!cl || (!key && klen) || (!host && cap))
		return RHKV_EINVAL;
	if (!cl->n)
		return RHKV_EINVAL;
	if (cl->stale && rebuild(cl))
		return RHKV_ENOMEM;
	i = owner(cl, key, klen, now_ms(), 0);
	if (i < 0)
		return RHKV_ECONN;
	if (port)
		*port = cl->nodes[i].port;
	if (host) {
		if (strlen(cl->nodes[i].host) >= cap)
			return RHKV_ERANGE;
		strcpy(host, cl->nodes[i].host);
	}
	return 0;
}

/* After a call on a picked server: a lost server is skipped from now on. */
static int after(rhkv_cluster *cl, rhkv *c, int rc)
{
	if (rc && rc != RHKV_ENOTFOUND)
		set_err(cl, "%s", rhkv_errstr(c));
	if (is_conn_err(rc))
		rhkv_cluster_failed(cl, c, rc);
	return rc;
}

int rhkv_cluster_get(rhkv_cluster *cl, const void *key, size_t klen,
		     struct rhkv_value *out)
{
	rhkv *c = rhkv_cluster_pick(cl, key, klen);

	if (!c)
		return cl ? RHKV_ECONN : RHKV_EINVAL;
	return after(cl, c, rhkv_get(c, key, klen, out));
}

int rhkv_cluster_set(rhkv_cluster *cl, const void *key, size_t klen,
		     const void *val, size_t vlen, uint32_t flags,
		     int64_t exptime, uint64_t *cas_out)
{
	rhkv *c = rhkv_cluster_pick(cl, key, klen);

	if (!c)
		return cl ? RHKV_ECONN : RHKV_EINVAL;
	return after(
		cl, c,
		rhkv_set(c, key, klen, val, vlen, flags, exptime, cas_out));
}

int rhkv_cluster_delete(rhkv_cluster *cl, const void *key, size_t klen)
{
	rhkv *c = rhkv_cluster_pick(cl, key, klen);

	if (!c)
		return cl ? RHKV_ECONN : RHKV_EINVAL;
	return after(cl, c, rhkv_delete(c, key, klen));
}

const char *rhkv_cluster_errstr(const rhkv_cluster *cl)
{
	return cl ? cl->err : "out of memory";
}

void rhkv_cluster_free(rhkv_cluster *cl)
{
	if (!cl)
		return;
	for (size_t i = 0; i < cl->n; i++) {
		rhkv_close(cl->nodes[i].c);
		free(cl->nodes[i].host);
	}
	free(cl->nodes);
	free(cl->ring);
	rhkv__options_free(&cl->opt);
	free(cl);
}
