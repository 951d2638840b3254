/*
 * rhkv_cluster: keys spread over several servers by a ketama ring that
 * places points the way libmemcached does (MD5 of "host:port-N", or of
 * "host-N" on port 11211), so that both pick the same server for a key;
 * MD5 is OpenSSL's (md5.h).
 * A server that fails is skipped (its points lead to the next point
 * clockwise) until its retry time; the ring itself never changes, so only
 * the failed server's keys move. How a server rejoins after its retry time
 * (at once, after a quiet period of successful pings, or flushed first) is
 * the rejoin mode: see the comment before rhkv_cluster_new in rhkv.h.
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

/*
 * A server. It serves keys while dead_at is 0. After a failure it is
 * skipped until retry_ms after its last failure or probe, then rejoins as
 * the cluster's rejoin mode says (node_ready): with RHKV_REJOIN_QUIET each
 * successful ping is a probe, and ok_since the first of an unbroken run.
 */
struct node {
	char *host;
	int port;
	unsigned int weight;
	rhkv *c;	     /* NULL until first picked */
	long long dead_at;   /* monotonic ms of its failure; 0: alive */
	long long probed_at; /* monotonic ms of its last successful probe */
	long long ok_since;  /* first probe without a failure since; 0: none */
	unsigned long tried; /* the pick that last skipped it */
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
	int rejoin;   /* enum rhkv_rejoin */
	int quiet_ms; /* RHKV_REJOIN_QUIET: the failure-free time to rejoin */
	unsigned long picks; /* rhkv_cluster_pick calls, from 1 */
	struct rhkv__md5 md5;
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

/* The key's point in *h: 0, or -1 when MD5 failed (cl->err says so). */
static int key_hash(rhkv_cluster *cl, const void *key, size_t klen, uint32_t *h)
{
	unsigned char d[16];

	if (rhkv__md5(&cl->md5, key, klen, d)) {
		set_err(cl, "MD5 of a key failed (OpenSSL)");
		return -1;
	}
	*h = digest_word(d, 0);
	return 0;
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
	if (!ring) {
		set_err(cl, "out of memory for a ring of %zu points", count);
		return RHKV_ENOMEM;
	}
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
			if (rhkv__md5(&cl->md5, name, (size_t)len, d)) {
				free(ring);
				set_err(cl, "MD5 of %s failed (OpenSSL)", name);
				return RHKV_ENOMEM;
			}
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

/*
 * Whether nd may take keys at now: alive, or its retry time has come (it
 * then rejoins in node_ready). Without I/O (will_probe 0) a quiet server
 * counts only once its quiet period is over, as its next probe would let
 * it in.
 */
static int available(const rhkv_cluster *cl, const struct node *nd,
		     long long now, int will_probe)
{
	long long last =
		nd->dead_at > nd->probed_at ? nd->dead_at : nd->probed_at;

	if (!nd->dead_at)
		return 1;
	if (now - last < cl->retry_ms)
		return 0;
	if (cl->rejoin == RHKV_REJOIN_QUIET && !will_probe)
		return nd->ok_since && now - nd->ok_since >= cl->quiet_ms;
	return 1;
}

/* The first point at or after the key's hash (wrapping), then clockwise
 * to the first available server, not one that pick number `pick` (0: none,
 * and no I/O will follow) skipped already; -1 when none is (or none was
 * added); -2 when the ring could not be built or the key hashed (out of
 * memory; cl->err says which). *home (may be NULL) takes the key's own
 * server, the first point's, alive or not. */
static long owner(rhkv_cluster *cl, const void *key, size_t klen, long long now,
		  unsigned long pick, long *home)
{
	uint32_t h;
	size_t lo = 0, hi;

	if (cl->stale && rebuild(cl))
		return -2;
	if (!cl->npoints)
		return -1;
	if (key_hash(cl, key, klen, &h))
		return -2;
	hi = cl->npoints;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cl->ring[mid].value < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (home)
		*home = cl->ring[lo % cl->npoints].node;
	for (size_t s = 0; s < cl->npoints; s++) {
		uint32_t i = cl->ring[(lo + s) % cl->npoints].node;

		const struct node *nd = &cl->nodes[i];

		if (pick && nd->tried == pick)
			continue;
		if (available(cl, nd, now, pick != 0))
			return i;
	}
	return -1;
}

static void mark_dead(rhkv_cluster *cl, struct node *nd, int err)
{
	nd->dead_at = now_ms();
	if (!nd->dead_at)
		nd->dead_at = 1;
	nd->probed_at = 0;
	nd->ok_since = 0;
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
	if (rhkv__md5_init(&cl->md5)) {
		free(cl);
		return RHKV_ENOMEM;
	}
	if (!o)
		rhkv_options_init(&cl->opt);
	else if (rhkv__options_copy(&cl->opt, o)) {
		rhkv__options_free(&cl->opt);
		rhkv__md5_free(&cl->md5);
		free(cl);
		return RHKV_ENOMEM;
	}
	cl->retry_ms = DEFAULT_RETRY_MS;
	cl->mode = RHKV_KETAMA_WEIGHTED;
	cl->rejoin = RHKV_REJOIN_AT_ONCE;
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

void rhkv_cluster_config_init(struct rhkv_cluster_config *cfg)
{
	cfg->ketama = RHKV_KETAMA_WEIGHTED;
	cfg->retry_ms = DEFAULT_RETRY_MS;
	cfg->rejoin = RHKV_REJOIN_AT_ONCE;
	cfg->quiet_ms = 0;
}

int rhkv_cluster_set_rejoin(rhkv_cluster *cl, enum rhkv_rejoin mode,
			    int quiet_ms)
{
	if (!cl || quiet_ms < 0 ||
	    (mode != RHKV_REJOIN_AT_ONCE && mode != RHKV_REJOIN_QUIET &&
	     mode != RHKV_REJOIN_FLUSH))
		return RHKV_EINVAL;
	cl->rejoin = mode;
	cl->quiet_ms = quiet_ms;
	return 0;
}

/* nd's handle, made on first use and connected. 0, a connection error
 * (nothing was sent), or RHKV_ENOMEM/RHKV_EINVAL with no handle made. */
static int node_connect(rhkv_cluster *cl, struct node *nd)
{
	int rc;

	if (nd->c)
		return rhkv__ensure(nd->c);
	rc = rhkv_connect(&nd->c, nd->host, nd->port, &cl->opt);
	if (!nd->c)
		set_err(cl, "%s:%d: %s", nd->host, nd->port, rhkv_strerror(rc));
	return rc;
}

/*
 * The rejoin step of a server whose retry time has come: 0 to let it take
 * keys, 1 while RHKV_REJOIN_QUIET still waits (the ping worked), or the
 * ping's or flush's error. No key was sent to it before this, so a
 * failure here loses nothing: the caller goes on to the next server.
 */
static int rejoin_step(rhkv_cluster *cl, struct node *nd, long long now)
{
	int rc;

	switch (cl->rejoin) {
	case RHKV_REJOIN_QUIET:
		rc = rhkv_ping(nd->c);
		if (rc)
			return rc;
		nd->probed_at = now;
		if (!nd->ok_since)
			nd->ok_since = now;
		return now - nd->ok_since >= cl->quiet_ms ? 0 : 1;
	case RHKV_REJOIN_FLUSH:
		/* what it held before failing may be stale: none of it may
		 * be read */
		return rhkv_flush_all(nd->c, 0);
	default:
		return 0;
	}
}

/*
 * Makes nd ready for a call: connected and, if it failed before and rejoin
 * is set, rejoined. 0; 1 when it is not to take keys yet (quiet); a
 * negative error, after which a server that failed to connect or rejoin is
 * marked dead. A handle that could not be made at all (RHKV_ENOMEM,
 * RHKV_EINVAL) marks nothing.
 */
static int node_ready(rhkv_cluster *cl, struct node *nd, int rejoin)
{
	int rc = node_connect(cl, nd);

	if (!nd->c)
		return rc;
	if (!rc && nd->dead_at && rejoin) {
		rc = rejoin_step(cl, nd, now_ms());
		if (!rc)
			nd->dead_at = nd->probed_at = nd->ok_since = 0;
	}
	if (rc < 0 && (is_conn_err(rc) || nd->dead_at)) {
		mark_dead(cl, nd, rc);
		return rc;
	}
	/* other errors (say RHKV_EAUTH) are the calls' to report */
	return rc > 0 ? rc : 0;
}

rhkv *rhkv__cluster_pick(rhkv_cluster *cl, const void *key, size_t klen,
			 bool *moved)
{
	if (!cl || (!key && klen))
		return NULL;
	if (!++cl->picks)
		cl->picks = 1;
	for (;;) {
		long home = -1;
		long i = owner(cl, key, klen, now_ms(), cl->picks, &home);
		struct node *nd;
		int rc;

		if (i == -2)
			return NULL;
		if (i < 0) {
			if (cl->n)
				set_err(cl, "no server is alive");
			else
				set_err(cl, "no server was added");
			return NULL;
		}
		nd = &cl->nodes[i];
		rc = node_ready(cl, nd, 1);
		if (!nd->c)
			return NULL;
		if (moved)
			*moved = i != home;
		if (!rc)
			return nd->c;
		/* nothing was sent yet: the key may go to the next server */
		nd->tried = cl->picks; /* even with a retry of 0 */
	}
}

rhkv *rhkv_cluster_pick(rhkv_cluster *cl, const void *key, size_t klen)
{
	return rhkv__cluster_pick(cl, key, klen, NULL);
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
	i = owner(cl, key, klen, now_ms(), 0, NULL);
	if (i == -2)
		return RHKV_ENOMEM;
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

/* What a single-key call returns when no server could be picked. */
static int no_server(const rhkv_cluster *cl, const void *key, size_t klen)
{
	return !cl || (!key && klen) ? RHKV_EINVAL : RHKV_ECONN;
}

/*
 * The body of a single-key call: call (an expression using c) runs on the
 * key's server, picked as by rhkv_cluster_pick, and after() marks the
 * server failed on a connection error. Returns from the function.
 */
#define ON_KEY(call)                                                        \
	do {                                                                \
		rhkv *c = rhkv_cluster_pick(cl, key, klen);                 \
                                                                            \
		return c ? after(cl, c, (call)) : no_server(cl, key, klen); \
	} while (0)

int rhkv_cluster_get(rhkv_cluster *cl, const void *key, size_t klen,
		     struct rhkv_value *out)
{
	ON_KEY(rhkv_get(c, key, klen, out));
}

int rhkv_cluster_get_into(rhkv_cluster *cl, const void *key, size_t klen,
			  void *buf, size_t cap, size_t *len, uint32_t *flags,
			  uint64_t *cas)
{
	ON_KEY(rhkv_get_into(c, key, klen, buf, cap, len, flags, cas));
}

int rhkv_cluster_gat(rhkv_cluster *cl, const void *key, size_t klen,
		     int64_t exptime, struct rhkv_value *out)
{
	ON_KEY(rhkv_gat(c, key, klen, exptime, out));
}

int rhkv_cluster_set(rhkv_cluster *cl, const void *key, size_t klen,
		     const void *val, size_t vlen, uint32_t flags,
		     int64_t exptime, uint64_t *cas_out)
{
	ON_KEY(rhkv_set(c, key, klen, val, vlen, flags, exptime, cas_out));
}

int rhkv_cluster_add_key(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint32_t flags,
			 int64_t exptime, uint64_t *cas_out)
{
	ON_KEY(rhkv_add(c, key, klen, val, vlen, flags, exptime, cas_out));
}

int rhkv_cluster_replace(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint32_t flags,
			 int64_t exptime, uint64_t *cas_out)
{
	ON_KEY(rhkv_replace(c, key, klen, val, vlen, flags, exptime, cas_out));
}

int rhkv_cluster_append(rhkv_cluster *cl, const void *key, size_t klen,
			const void *val, size_t vlen, uint64_t *cas_out)
{
	ON_KEY(rhkv_append(c, key, klen, val, vlen, cas_out));
}

int rhkv_cluster_prepend(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint64_t *cas_out)
{
	ON_KEY(rhkv_prepend(c, key, klen, val, vlen, cas_out));
}

int rhkv_cluster_cas(rhkv_cluster *cl, const void *key, size_t klen,
		     const void *val, size_t vlen, uint32_t flags,
		     int64_t exptime, uint64_t cas, uint64_t *cas_out)
{
	ON_KEY(rhkv_cas(c, key, klen, val, vlen, flags, exptime, cas, cas_out));
}

int rhkv_cluster_delete(rhkv_cluster *cl, const void *key, size_t klen)
{
	ON_KEY(rhkv_delete(c, key, klen));
}

int rhkv_cluster_incr(rhkv_cluster *cl, const void *key, size_t klen,
		      uint64_t delta, uint64_t *value)
{
	ON_KEY(rhkv_incr(c, key, klen, delta, value));
}

int rhkv_cluster_decr(rhkv_cluster *cl, const void *key, size_t klen,
		      uint64_t delta, uint64_t *value)
{
	ON_KEY(rhkv_decr(c, key, klen, delta, value));
}

int rhkv_cluster_touch(rhkv_cluster *cl, const void *key, size_t klen,
		       int64_t exptime)
{
	ON_KEY(rhkv_touch(c, key, klen, exptime));
}

int rhkv_cluster_meta_get(rhkv_cluster *cl, const void *key, size_t klen,
			  const struct rhkv_mget_opts *o, struct rhkv_meta *out)
{
	ON_KEY(rhkv_meta_get(c, key, klen, o, out));
}

int rhkv_cluster_meta_set(rhkv_cluster *cl, const void *key, size_t klen,
			  const void *val, size_t vlen,
			  const struct rhkv_mset_opts *o, uint64_t *cas_out)
{
	ON_KEY(rhkv_meta_set(c, key, klen, val, vlen, o, cas_out));
}

int rhkv_cluster_meta_delete(rhkv_cluster *cl, const void *key, size_t klen,
			     const struct rhkv_mdelete_opts *o)
{
	ON_KEY(rhkv_meta_delete(c, key, klen, o));
}

int rhkv_cluster_meta_arith(rhkv_cluster *cl, const void *key, size_t klen,
			    uint64_t delta, const struct rhkv_marith_opts *o,
			    uint64_t *value, uint64_t *cas_out)
{
	ON_KEY(rhkv_meta_arith(c, key, klen, delta, o, value, cas_out));
}

/* ---- every server ---- */

size_t rhkv_cluster_count(const rhkv_cluster *cl)
{
	return cl ? cl->n : 0;
}

int rhkv_cluster_server(rhkv_cluster *cl, size_t i, const char **host,
			int *port, rhkv **c)
{
	struct node *nd;
	int rc, rejoin;

	if (c)
		*c = NULL;
	if (!cl || i >= cl->n)
		return RHKV_EINVAL;
	nd = &cl->nodes[i];
	if (host)
		*host = nd->host;
	if (port)
		*port = nd->port;
	if (!c)
		return 0;
	/* a quiet server that answered its last ping takes commands to
	 * every server, only not keys yet */
	rejoin = available(cl, nd, now_ms(), 1);
	if (!rejoin && !nd->ok_since) {
		set_err(cl, "%s:%d: skipped until its retry time", nd->host,
			nd->port);
		return RHKV_ECONN;
	}
	rc = node_ready(cl, nd, rejoin);
	if (rc < 0)
		return rc;
	*c = nd->c;
	return 0;
}

/* call(c, arg) on every server: status[i] (status may be NULL) is server
 * i's result; returns the first error, or 0. */
static int every_server(rhkv_cluster *cl, int (*call)(rhkv *c, const void *arg),
			const void *arg, int *status)
{
	int first = 0;

	if (!cl)
		return RHKV_EINVAL;
	for (size_t i = 0; i < rhkv_cluster_count(cl); i++) {
		rhkv *c;
		int rc = rhkv_cluster_server(cl, i, NULL, NULL, &c);

		if (!rc)
			rc = after(cl, c, call(c, arg));
		if (status)
			status[i] = rc;
		if (rc && !first)
			first = rc;
	}
	return first;
}

static int flush_all_one(rhkv *c, const void *arg)
{
	return rhkv_flush_all(c, *(const int64_t *)arg);
}

int rhkv_cluster_flush_all(rhkv_cluster *cl, int64_t delay, int *status)
{
	return every_server(cl, flush_all_one, &delay, status);
}

struct prefix_arg {
	const void *p;
	size_t n;
};

static int flush_prefix_one(rhkv *c, const void *arg)
{
	const struct prefix_arg *a = arg;

	return rhkv_flush_prefix(c, a->p, a->n);
}

int rhkv_cluster_flush_prefix(rhkv_cluster *cl, const void *prefix, size_t plen,
			      int *status)
{
	const struct prefix_arg a = { prefix, plen };

	return every_server(cl, flush_prefix_one, &a, status);
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
	rhkv__md5_free(&cl->md5);
	free(cl);
}
