/*
 * rhkv-client-bench: librhkv measured from the client's side, against live
 * servers given as HOST:PORT (tests/bench/client starts them). One run is
 * one round of every measurement; each prints one line of key=value pairs
 * (test=, variant=, then its figures), which tests/bench/client collects
 * over rounds into medians.
 *
 *   get        get latency of 32-byte values on the first server: rhkv_get
 *              (blocking) against rhkv_send + rhkv_poll_wait (non-blocking,
 *              one command at a time) and libmemcached's memcached_get,
 *              in interleaved chunks so that drift of the shared machine
 *              hits all variants alike; p50/p99/mean in microseconds.
 *   set        a batch of 4 KiB sets on the first server: rhkv_pipeline
 *              (results kept), rhkv_pipeline_stream, rhkv_send in batches
 *              + rhkv_poll_wait, and libmemcached; ops/s, the peak of the
 *              library's own accounting (rhkv_pipeline_buffered /
 *              rhkv_buffered) and the peak RSS. Each variant runs in a
 *              child process of its own, so that ru_maxrss is its own;
 *              an unmeasured fill comes first, so that every variant
 *              overwrites items (none pays for the server's growth).
 *   mget1      100 keys from the first server: rhkv_mget against
 *              memcached_mget + memcached_fetch_result.
 *   cluster    100 keys over all servers given (3 by the script):
 *              rhkv_cluster_mget (the servers in parallel) against
 *              rhkv_cluster_get per key, against grouping by hand
 *              (rhkv_cluster_pick, then rhkv_mget per server one after
 *              another), and libmemcached's memcached_mget over the same
 *              ketama ring; microseconds per mget.
 *
 * Every variant checks what it got (hits, lengths, statuses; for the set
 * batches the server's cmd_set delta) and reports errors= so that a fast
 * wrong answer shows.
 *
 * usage: rhkv-client-bench [options] HOST:PORT [HOST:PORT ...]
 *   --only LIST        get,set,mget1,cluster (default: all)
 *   --gets N           gets per variant (50000)
 *   --sets N           sets per batch variant (200000)
 *   --set-size B       value size of the sets (4096)
 *   --batch N          non-blocking batch size (1000)
 *   --mget-keys N      keys per mget (100)
 *   --mget-iters N     mgets per variant (1000)
 *   --mc-set LIST      libmemcached's batches, each a variant: buffered
 *                      (text protocol, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS,
 *                      a get after every --batch sets to read their
 *                      replies), binary (the same over memcached's binary
 *                      protocol),
 *                      plain (one round trip per set); default
 *                      buffered,binary
 *   --variants LIST    only the variants named (e.g. rhkv_cluster_mget, to
 *                      profile one alone); default all
 *   --round R          printed in each line; also rotates the variants'
 *                      order so that none always runs first
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rhkv.h>
#ifdef HAVE_LIBMEMCACHED
#include <libmemcached/memcached.h>
#endif

#define MAX_SERVERS 8

struct server {
	char host[256];
	int port;
};

static struct server servers[MAX_SERVERS];
static size_t nservers;

static struct {
	const char *only;
	size_t gets, sets, set_size, batch, mget_keys, mget_iters;
	const char *mc_set;
	const char *variants; /* NULL: all */
	int round;
} opt = {
	.only = "get,set,mget1,cluster",
	.gets = 50000,
	.sets = 200000,
	.set_size = 4096,
	.batch = 1000,
	.mget_keys = 100,
	.mget_iters = 1000,
	.mc_set = "buffered,binary",
	.round = 1,
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rhkv-client-bench: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether name is in the comma-separated list. */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p += len + (e != NULL);
	}
	return false;
}

static bool wanted(const char *test)
{
	return listed(opt.only, test);
}

static bool variant_wanted(const char *name)
{
	return !opt.variants || listed(opt.variants, name);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[n], in microseconds. */
static double pct_us(const uint64_t *v, size_t n, double p)
{
	size_t r = (size_t)ceil(p / 100.0 * (double)n);

	if (!n)
		return 0;
	return (double)v[r ? r - 1 : 0] / 1000.0;
}

static double mean_us(const uint64_t *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)v[i];
	return n ? s / (double)n / 1000.0 : 0;
}

/* Sorts v and prints the latency figures of one variant. */
/* This thread's CPU time: what the client itself spends per operation,
 * apart from waiting for the server. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sorts v and prints the latency figures of one variant; cpu: the
 * client's CPU time over all n + errors operations. */
static void report_latency(const char *test, const char *variant, uint64_t *v,
			   size_t n, size_t errors, uint64_t cpu,
			   const char *extra)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("test=%s variant=%s round=%d n=%zu p50_us=%.1f p99_us=%.1f "
	       "mean_us=%.1f client_cpu_us=%.2f errors=%zu%s%s\n",
	       test, variant, opt.round, n, pct_us(v, n, 50), pct_us(v, n, 99),
	       mean_us(v, n),
	       n + errors ? (double)cpu / 1000.0 / (double)(n + errors) : 0,
	       errors, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

static rhkv *connect_to(const struct server *s)
{
	rhkv *c = NULL;
	struct rhkv_options o;
	int rc;

	rhkv_options_init(&o);
	/* 4 KiB sets in batches of 1000 keep a server busy for a while on
	 * two shared cores: a spurious timeout would end the run */
	o.io_timeout_ms = 10000;
	rc = rhkv_connect(&c, s->host, s->port, &o);
	if (rc)
		die("connect %s:%d: %s", s->host, s->port,
		    c ? rhkv_errstr(c) : rhkv_strerror(rc));
	return c;
}

static void fill_value(char *buf, size_t n, size_t seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + (i + seed) % 26);
}

/* The server's cmd_set counter, to check that a batch stored what it
 * claims (libmemcached's buffered sets report no per-item status). */
static uint64_t server_sets(rhkv *c)
{
	struct rhkv_stat *st;
	size_t n;
	uint64_t v = 0;

	if (rhkv_stats(c, NULL, &st, &n))
		die("stats: %s", rhkv_errstr(c));
	for (size_t i = 0; i < n; i++)
		if (!strcmp(st[i].name, "cmd_set"))
			v = strtoull(st[i].value, NULL, 10);
	rhkv_stats_free(st, n);
	return v;
}

#ifdef HAVE_LIBMEMCACHED
static memcached_st *mc_new(size_t n, const struct server *s)
{
	memcached_st *mc = memcached_create(NULL);

	if (!mc)
		die("memcached_create failed");
	/* as librhkv's defaults: no Nagle delay, and the same ring */
	memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
	/* the I/O timeout librhkv's handles get here (connect_to) */
	memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 10000);
	if (n > 1)
		memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED,
				       1);
	for (size_t i = 0; i < n; i++)
		if (memcached_server_add(mc, s[i].host, (in_port_t)s[i].port) !=
		    MEMCACHED_SUCCESS)
			die("memcached_server_add %s:%d", s[i].host, s[i].port);
	return mc;
}
#endif

/* ---- get latency ---- */

struct one {
	int done;
	int status;
	size_t len;
};

static void one_cb(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct one *o = arg;

	(void)c;
	o->done = 1;
	o->status = r->status;
	o->len = r->len;
}

enum { GET_BLOCKING, GET_NONBLOCKING, GET_MC, GET_VARIANTS };

#define GET_KEYS    1000
#define GET_VSIZE   32
#define GET_CHUNK   1000
#define GET_WARM_UP 1000

static void key_of(char *buf, size_t cap, const char *prefix, size_t i)
{
	snprintf(buf, cap, "%s%06zu", prefix, i);
}

/* One get of variant v; its latency in ns, or 0 when it failed. */
static uint64_t get_once(int v, rhkv *c, void *mcp, const char *key)
{
	size_t klen = strlen(key);
	uint64_t t0 = now_ns(), t1;
	bool ok = false;

	if (v == GET_BLOCKING) {
		struct rhkv_value val;

		if (!rhkv_get(c, key, klen, &val)) {
			ok = val.len == GET_VSIZE;
			t1 = now_ns();
			rhkv_value_free(&val);
			return ok ? t1 - t0 : 0;
		}
	} else if (v == GET_NONBLOCKING) {
		struct one o = { 0 };
		struct rhkv_cmd cmd = { .op = RHKV_OP_GET,
					.key = key,
					.klen = klen };

		if (!rhkv_send(c, &cmd, one_cb, &o) && !rhkv_poll_wait(&c, 1))
			ok = o.done && !o.status && o.len == GET_VSIZE;
	} else {
#ifdef HAVE_LIBMEMCACHED
		size_t len;
		uint32_t flags;
		memcached_return_t rc;
		char *val = memcached_get(mcp, key, klen, &len, &flags, &rc);

		ok = val && rc == MEMCACHED_SUCCESS && len == GET_VSIZE;
		t1 = now_ns();
		free(val);
		return ok ? t1 - t0 : 0;
#else
		(void)mcp;
#endif
	}
	t1 = now_ns();
	return ok ? t1 - t0 : 0;
}

static void bench_get(void)
{
	static const char *names[GET_VARIANTS] = { "rhkv_get", "rhkv_send_poll",
						   "libmemcached" };
	rhkv *c[GET_VARIANTS];
	void *mc = NULL;
	uint64_t *lat[GET_VARIANTS];
	size_t n[GET_VARIANTS] = { 0 }, err[GET_VARIANTS] = { 0 };
	uint64_t cpu[GET_VARIANTS] = { 0 };
	int nv = 2, act[GET_VARIANTS], na = 0;
	char key[64], val[GET_VSIZE];

	/* a handle per variant: none inherits another's buffers */
	for (int v = 0; v < GET_VARIANTS; v++) {
		c[v] = v < 2 ? connect_to(&servers[0]) : NULL;
		lat[v] = malloc(opt.gets * sizeof(uint64_t));
		if (!lat[v])
			die("out of memory");
	}
#ifdef HAVE_LIBMEMCACHED
	mc = mc_new(1, &servers[0]);
	nv = 3;
#endif
	for (int v = 0; v < nv; v++)
		if (variant_wanted(names[v]))
			act[na++] = v;
	for (size_t i = 0; i < GET_KEYS; i++) {
		key_of(key, sizeof(key), "cb:g:", i);
		fill_value(val, sizeof(val), i);
		if (rhkv_set(c[0], key, strlen(key), val, sizeof(val), 0, 0,
			     NULL))
			die("set: %s", rhkv_errstr(c[0]));
	}
	for (int a = 0; a < na; a++)
		for (size_t i = 0; i < GET_WARM_UP; i++) {
			key_of(key, sizeof(key), "cb:g:", i % GET_KEYS);
			if (!get_once(act[a], c[act[a]], mc, key))
				die("%s: warm-up get failed", names[act[a]]);
		}
	/* chunks in turn, the first variant of each pass rotating */
	for (size_t done = 0, pass = (size_t)opt.round; na && done < opt.gets;
	     pass++) {
		size_t m = opt.gets - done < GET_CHUNK ? opt.gets - done
						       : GET_CHUNK;

		for (int k = 0; k < na; k++) {
			int v = act[(pass + (size_t)k) % (size_t)na];

			for (size_t i = 0; i < m; i++) {
				uint64_t t, c0;

				key_of(key, sizeof(key),
				       "cb:g:", (done + i) % GET_KEYS);
				c0 = cpu_ns();
				t = get_once(v, c[v], mc, key);
				cpu[v] += cpu_ns() - c0;
				if (t)
					lat[v][n[v]++] = t;
				else
					err[v]++;
			}
		}
		done += m;
	}
	for (int a = 0; a < na; a++)
		report_latency("get", names[act[a]], lat[act[a]], n[act[a]],
			       err[act[a]], cpu[act[a]], NULL);
	for (int v = 0; v < GET_VARIANTS; v++) {
		rhkv_close(c[v]);
		free(lat[v]);
	}
#ifdef HAVE_LIBMEMCACHED
	memcached_free(mc);
#endif
}

/* ---- a batch of sets ---- */

struct setrun {
	size_t ok, failed;
	size_t peak;	  /* the library's accounting, bytes */
	rhkv_pipeline *p; /* streaming: sampled from the callback */
	rhkv *c;	  /* non-blocking: likewise */
};

static void peak_of(struct setrun *s, size_t b)
{
	if (b > s->peak)
		s->peak = b;
}

static void set_cb(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct setrun *s = arg;

	(void)c;
	if (r->status)
		s->failed++;
	else
		s->ok++;
	/* every 256th reply: often enough to see the read buffer's peak */
	if (((s->ok + s->failed) & 255) == 0)
		peak_of(s, s->p ? rhkv_pipeline_buffered(s->p)
				: rhkv_buffered(s->c));
}

static void set_key(char *buf, size_t cap, size_t i)
{
	snprintf(buf, cap, "cb:s:%07zu", i);
}

static void sets_pipeline(rhkv *c, const char *val, struct setrun *s,
			  bool stream)
{
	rhkv_pipeline *p = stream ? rhkv_pipeline_stream(c, set_cb, s)
				  : rhkv_pipeline_new(c);
	char key[32];

	if (!p)
		die("pipeline: out of memory");
	if (stream)
		s->p = p;
	for (size_t i = 0; i < opt.sets; i++) {
		set_key(key, sizeof(key), i);
		if (rhkv_pipeline_set(p, key, strlen(key), val, opt.set_size, 0,
				      0) < 0)
			s->failed++;
		if ((i & 255) == 0)
			peak_of(s, rhkv_pipeline_buffered(p));
	}
	peak_of(s, rhkv_pipeline_buffered(p));
	if (rhkv_pipeline_exec(p))
		fprintf(stderr, "pipeline exec: %s\n", rhkv_errstr(c));
	peak_of(s, rhkv_pipeline_buffered(p));
	if (!stream)
		for (size_t i = 0; i < opt.sets; i++) {
			if (rhkv_pipeline_result(p, i, NULL))
				s->failed++;
			else
				s->ok++;
		}
	rhkv_pipeline_free(p);
}

static void sets_send(rhkv *c, const char *val, struct setrun *s)
{
	char key[32];

	s->c = c;
	for (size_t i = 0; i < opt.sets;) {
		size_t end =
			i + opt.batch < opt.sets ? i + opt.batch : opt.sets;

		/* the frame copies the key: one buffer serves the batch */
		for (; i < end; i++) {
			struct rhkv_cmd cmd = { .op = RHKV_OP_SET,
						.key = key,
						.val = val,
						.vlen = opt.set_size };

			set_key(key, sizeof(key), i);
			cmd.klen = strlen(key);
			if (rhkv_send(c, &cmd, set_cb, s))
				s->failed++;
		}
		peak_of(s, rhkv_buffered(c));
		if (rhkv_poll_wait(&c, 1))
			fprintf(stderr, "poll_wait: %s\n", rhkv_errstr(c));
		peak_of(s, rhkv_buffered(c));
	}
}

#ifdef HAVE_LIBMEMCACHED
static void sets_mc(const char *mode, const char *val, struct setrun *s)
{
	memcached_st *mc = mc_new(1, &servers[0]);
	bool plain = !strcmp(mode, "plain");
	char key[32];
	size_t len;
	uint32_t flags;
	memcached_return_t rc;
	char *last;

	if (!strcmp(mode, "binary"))
		memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL,
				       1);
	if (!plain)
		memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS,
				       1);
	for (size_t i = 0; i < opt.sets; i++) {
		set_key(key, sizeof(key), i);
		rc = memcached_set(mc, key, strlen(key), val, opt.set_size, 0,
				   0);
		if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_BUFFERED)
			break;
		s->ok++;
		if (plain || ((i + 1) % opt.batch && i + 1 < opt.sets))
			continue;
		/* buffered sets' replies are read (not checked) by the next
		 * command that waits for a reply: as rhkv_send_batch, wait
		 * after every --batch sets, with a get of the batch's last
		 * key (the caller checks cmd_set) */
		rc = memcached_flush_buffers(mc);
		if (rc != MEMCACHED_SUCCESS)
			break;
		last = memcached_get(mc, key, strlen(key), &len, &flags, &rc);
		if (!last || len != opt.set_size || memcmp(last, val, len)) {
			free(last);
			break;
		}
		free(last);
	}
	if (s->ok < opt.sets) {
		/* stop at the first failure: libmemcached closed the
		 * connection, and its next write would assert on it */
		s->failed++;
		fprintf(stderr, "libmemcached %s: set %zu: %s\n", mode, s->ok,
			memcached_last_error_message(mc));
	}
	memcached_free(mc);
}
#endif

enum { SET_PIPELINE, SET_STREAM, SET_SEND, SET_MC };

#define MC_MODES 3

/* libmemcached's batch modes (--mc-set), SET_MC + i each. */
static const char *mc_modes[MC_MODES];
static size_t n_mc_modes;

/* One variant in a child process: its ru_maxrss is then this variant's
 * alone (the parent holds little when it forks). name NULL: a fill that
 * reports nothing. */
static void set_variant(int v, const char *name)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rusage ru0, ru1;
		struct setrun s = { 0 };
		char *val = malloc(opt.set_size);
		rhkv *c = connect_to(&servers[0]);
		uint64_t sets0, t0, t1;

		if (!val)
			die("out of memory");
		fill_value(val, opt.set_size, (size_t)v);
		sets0 = server_sets(c);
		getrusage(RUSAGE_SELF, &ru0);
		t0 = now_ns();
		if (v == SET_PIPELINE || v == SET_STREAM)
			sets_pipeline(c, val, &s, v == SET_STREAM);
		else if (v == SET_SEND)
			sets_send(c, val, &s);
#ifdef HAVE_LIBMEMCACHED
		else
			sets_mc(mc_modes[v - SET_MC], val, &s);
#endif
		t1 = now_ns();
		getrusage(RUSAGE_SELF, &ru1);
		if (name)
			printf("test=set variant=%s round=%d n=%zu "
			       "value_bytes=%zu "
			       "ops_s=%.0f seconds=%.3f peak_buffered_kib=%.0f "
			       "rss_before_kib=%ld peak_rss_kib=%ld ok=%zu "
			       "server_sets=%" PRIu64 " errors=%zu\n",
			       name, opt.round, opt.sets, opt.set_size,
			       (double)opt.sets / ((double)(t1 - t0) / 1e9),
			       (double)(t1 - t0) / 1e9, (double)s.peak / 1024.0,
			       ru0.ru_maxrss, ru1.ru_maxrss, s.ok,
			       server_sets(c) - sets0,
			       s.failed + (s.ok != opt.sets));
		fflush(stdout);
		rhkv_close(c);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("set variant %s failed", name ? name : "(fill)");
}

static void bench_set(void)
{
	const char *names[SET_MC + MC_MODES] = { "rhkv_pipeline",
						 "rhkv_pipeline_stream",
						 "rhkv_send_batch" };
	char mcname[MC_MODES][32];
	int nv = SET_MC;

#ifdef HAVE_LIBMEMCACHED
	for (size_t i = 0; i < n_mc_modes; i++) {
		snprintf(mcname[i], sizeof(mcname[i]), "libmemcached_%s",
			 mc_modes[i]);
		names[nv++] = mcname[i];
	}
#else
	(void)mcname;
#endif
	/* the first pass over fresh servers allocates every item, later
	 * ones overwrite: an unmeasured fill puts every variant in the
	 * second case */
	set_variant(SET_STREAM, NULL);
	for (int k = 0; k < nv; k++) {
		int v = (opt.round + k) % nv;

		if (variant_wanted(names[v]))
			set_variant(v, names[v]);
	}
}

/* ---- mget, one server and a cluster ---- */

#define MGET_POOL 1000

struct keyset {
	char (*keys)[32];
	const char **ptrs;
	size_t *lens;
};

static void keyset_init(struct keyset *ks, const char *prefix)
{
	ks->keys = malloc(MGET_POOL * sizeof(*ks->keys));
	ks->ptrs = malloc(MGET_POOL * sizeof(*ks->ptrs));
	ks->lens = malloc(MGET_POOL * sizeof(*ks->lens));
	if (!ks->keys || !ks->ptrs || !ks->lens)
		die("out of memory");
	for (size_t i = 0; i < MGET_POOL; i++) {
		key_of(ks->keys[i], sizeof(ks->keys[i]), prefix, i);
		ks->ptrs[i] = ks->keys[i];
		ks->lens[i] = strlen(ks->keys[i]);
	}
}

static void keyset_free(struct keyset *ks)
{
	free(ks->keys);
	free(ks->ptrs);
	free(ks->lens);
}

/* The keys of iteration it: mget_keys consecutive ones of the pool, the
 * window moving, so that requests differ (copied: the window wraps). */
static void window(const struct keyset *ks, size_t it, const char **k,
		   size_t *l)
{
	for (size_t i = 0; i < opt.mget_keys; i++) {
		size_t j = (it * 37 + i) % MGET_POOL;

		k[i] = ks->ptrs[j];
		l[i] = ks->lens[j];
	}
}

/* Counts hits of out[n] of the right length and frees the values. */
static size_t check_values(struct rhkv_value *out, const int *status, size_t n)
{
	size_t hits = 0;

	for (size_t i = 0; i < n; i++) {
		hits += !status[i] && out[i].data && out[i].len == GET_VSIZE;
		rhkv_value_free(&out[i]);
	}
	return hits;
}

#ifdef HAVE_LIBMEMCACHED
/* memcached_mget + memcached_fetch_result into one reused result (no
 * allocation per key): the hits of the right length, or 0. */
static size_t mc_mget(memcached_st *mc, memcached_result_st *res,
		      const char *const *k, const size_t *l, size_t n)
{
	memcached_return_t rc;
	size_t hits = 0;

	if (memcached_mget(mc, k, l, n) != MEMCACHED_SUCCESS)
		return 0;
	while (memcached_fetch_result(mc, res, &rc))
		hits += memcached_result_length(res) == GET_VSIZE;
	return hits;
}
#endif

struct mget_ctx {
	const char **k;
	size_t *l;
	struct rhkv_value *out;
	int *status;
	rhkv *single;	  /* mget1 */
	rhkv_cluster *cl; /* cluster */
	void *mc;	  /* libmemcached, one or all servers */
	void *mc_res;
};

enum {
	MG_RHKV,    /* mget1: rhkv_mget */
	MG_CLUSTER, /* rhkv_cluster_mget */
	MG_PER_KEY, /* rhkv_cluster_get, key after key */
	MG_GROUPED, /* rhkv_cluster_pick + rhkv_mget per server */
	MG_MC,	    /* memcached_mget + fetch */
};

static size_t grouped_mget(struct mget_ctx *x)
{
	rhkv *h[MAX_SERVERS];
	size_t nh = 0, hits = 0;
	const char *gk[opt.mget_keys];
	size_t gl[opt.mget_keys];
	size_t *which = malloc(opt.mget_keys * sizeof(size_t));

	if (!which)
		die("out of memory");
	for (size_t i = 0; i < opt.mget_keys; i++) {
		rhkv *c = rhkv_cluster_pick(x->cl, x->k[i], x->l[i]);
		size_t j = 0;

		while (j < nh && h[j] != c)
			j++;
		if (j == nh && nh < MAX_SERVERS)
			h[nh++] = c;
		which[i] = j;
	}
	for (size_t j = 0; j < nh; j++) {
		size_t m = 0;
		int rc;

		for (size_t i = 0; i < opt.mget_keys; i++)
			if (which[i] == j) {
				gk[m] = x->k[i];
				gl[m++] = x->l[i];
			}
		if (!h[j])
			continue;
		rc = rhkv_mget(h[j], m, gk, gl, x->out, x->status);
		if (rc)
			rhkv_cluster_failed(x->cl, h[j], rc);
		else
			hits += check_values(x->out, x->status, m);
	}
	free(which);
	return hits;
}

static size_t mget_once(int v, struct mget_ctx *x)
{
	size_t n = opt.mget_keys, hits = 0;

	switch (v) {
	case MG_RHKV:
		if (!rhkv_mget(x->single, n, x->k, x->l, x->out, x->status))
			hits = check_values(x->out, x->status, n);
		break;
	case MG_CLUSTER:
		if (!rhkv_cluster_mget(x->cl, n, x->k, x->l, x->out, x->status))
			hits = check_values(x->out, x->status, n);
		break;
	case MG_PER_KEY:
		for (size_t i = 0; i < n; i++) {
			struct rhkv_value val;

			if (!rhkv_cluster_get(x->cl, x->k[i], x->l[i], &val)) {
				hits += val.len == GET_VSIZE;
				rhkv_value_free(&val);
			}
		}
		break;
	case MG_GROUPED:
		hits = grouped_mget(x);
		break;
	case MG_MC:
#ifdef HAVE_LIBMEMCACHED
		hits = mc_mget(x->mc, x->mc_res, x->k, x->l, n);
#endif
		break;
	}
	return hits;
}

/* Runs variants vs[nv] interleaved (one mget each in turn, the order
 * rotating), then reports each. */
static void run_mgets(const char *test, struct mget_ctx *x,
		      const struct keyset *ks, const int *all_vs,
		      const char *const *all_names, int all_nv)
{
	uint64_t *lat[8];
	size_t err[8] = { 0 }, n[8] = { 0 };
	uint64_t cpu[8] = { 0 };
	char extra[64];
	int vs[8], nv = 0;
	const char *names[8];

	for (int k = 0; k < all_nv && nv < 8; k++)
		if (variant_wanted(all_names[k])) {
			vs[nv] = all_vs[k];
			names[nv++] = all_names[k];
		}

	for (int k = 0; k < nv; k++) {
		lat[k] = malloc(opt.mget_iters * sizeof(uint64_t));
		if (!lat[k])
			die("out of memory");
		/* warm-up: connects, and grows every buffer once */
		for (size_t it = 0; it < 20; it++) {
			window(ks, it, x->k, x->l);
			if (mget_once(vs[k], x) != opt.mget_keys)
				die("%s %s: warm-up mget missed keys", test,
				    names[k]);
		}
	}
	for (size_t it = 0; it < opt.mget_iters; it++) {
		window(ks, it, x->k, x->l);
		for (int j = 0; j < nv; j++) {
			int k = (int)((it + (size_t)opt.round + (size_t)j) %
				      (size_t)nv);
			uint64_t c0 = cpu_ns(), t0 = now_ns(), t1;
			size_t hits = mget_once(vs[k], x);

			t1 = now_ns();
			cpu[k] += cpu_ns() - c0;
			if (hits == opt.mget_keys)
				lat[k][n[k]++] = t1 - t0;
			else
				err[k]++;
		}
	}
	snprintf(extra, sizeof(extra), "keys=%zu servers=%zu", opt.mget_keys,
		 strcmp(test, "cluster") ? (size_t)1 : nservers);
	for (int k = 0; k < nv; k++) {
		report_latency(test, names[k], lat[k], n[k], err[k], cpu[k],
			       extra);
		free(lat[k]);
	}
}

static void mget_ctx_init(struct mget_ctx *x)
{
	memset(x, 0, sizeof(*x));
	x->k = malloc(opt.mget_keys * sizeof(*x->k));
	x->l = malloc(opt.mget_keys * sizeof(*x->l));
	x->out = calloc(opt.mget_keys, sizeof(*x->out));
	x->status = calloc(opt.mget_keys, sizeof(*x->status));
	if (!x->k || !x->l || !x->out || !x->status)
		die("out of memory");
}

static void mget_ctx_free(struct mget_ctx *x)
{
	free(x->k);
	free(x->l);
	free(x->out);
	free(x->status);
}

static void bench_mget1(void)
{
	static const int vs[] = { MG_RHKV, MG_MC };
	static const char *names[] = { "rhkv_mget", "libmemcached_mget" };
	struct mget_ctx x;
	struct keyset ks;
	char val[GET_VSIZE];
	int nv = 1;
#ifdef HAVE_LIBMEMCACHED
	memcached_result_st res;
#endif

	mget_ctx_init(&x);
	keyset_init(&ks, "cb:m:");
	x.single = connect_to(&servers[0]);
	for (size_t i = 0; i < MGET_POOL; i++) {
		fill_value(val, sizeof(val), i);
		if (rhkv_set(x.single, ks.ptrs[i], ks.lens[i], val, sizeof(val),
			     0, 0, NULL))
			die("set: %s", rhkv_errstr(x.single));
	}
#ifdef HAVE_LIBMEMCACHED
	x.mc = mc_new(1, &servers[0]);
	x.mc_res = memcached_result_create(x.mc, &res);
	nv = 2;
#endif
	run_mgets("mget1", &x, &ks, vs, names, nv);
#ifdef HAVE_LIBMEMCACHED
	memcached_result_free(&res);
	memcached_free(x.mc);
#endif
	rhkv_close(x.single);
	keyset_free(&ks);
	mget_ctx_free(&x);
}

static void bench_cluster(void)
{
	static const int vs[] = { MG_CLUSTER, MG_PER_KEY, MG_GROUPED, MG_MC };
	static const char *names[] = { "rhkv_cluster_mget", "rhkv_cluster_get",
				       "pick_mget_sequential",
				       "libmemcached_mget" };
	struct mget_ctx x;
	struct keyset ks;
	struct rhkv_item *items;
	int *st, nv = 3;
	char(*vals)[GET_VSIZE];
#ifdef HAVE_LIBMEMCACHED
	memcached_result_st res;
#endif

	if (nservers < 2) {
		fprintf(stderr, "rhkv-client-bench: cluster needs 2 or more "
				"servers; skipped\n");
		return;
	}
	mget_ctx_init(&x);
	keyset_init(&ks, "cb:c:");
	if (rhkv_cluster_new(&x.cl, NULL))
		die("cluster: out of memory");
	for (size_t i = 0; i < nservers; i++)
		if (rhkv_cluster_add(x.cl, servers[i].host, servers[i].port, 1))
			die("cluster add: %s", rhkv_cluster_errstr(x.cl));
	items = calloc(MGET_POOL, sizeof(*items));
	st = calloc(MGET_POOL, sizeof(*st));
	vals = malloc(MGET_POOL * sizeof(*vals));
	if (!items || !st || !vals)
		die("out of memory");
	for (size_t i = 0; i < MGET_POOL; i++) {
		fill_value(vals[i], GET_VSIZE, i);
		items[i] = (struct rhkv_item){ .key = ks.ptrs[i],
					       .klen = ks.lens[i],
					       .val = vals[i],
					       .vlen = GET_VSIZE };
	}
	if (rhkv_cluster_mset(x.cl, MGET_POOL, items, st))
		die("cluster mset: %s", rhkv_cluster_errstr(x.cl));
	for (size_t i = 0; i < MGET_POOL; i++)
		if (st[i])
			die("cluster mset: %s", rhkv_strerror(st[i]));
	free(items);
	free(st);
	free(vals);
#ifdef HAVE_LIBMEMCACHED
	/* the same ring (rhkv.h: RHKV_KETAMA_WEIGHTED is libmemcached's
	 * KETAMA_WEIGHTED), so its mget finds the keys librhkv placed */
	x.mc = mc_new(nservers, servers);
	x.mc_res = memcached_result_create(x.mc, &res);
	nv = 4;
#endif
	run_mgets("cluster", &x, &ks, vs, names, nv);
#ifdef HAVE_LIBMEMCACHED
	memcached_result_free(&res);
	memcached_free(x.mc);
#endif
	rhkv_cluster_free(x.cl);
	keyset_free(&ks);
	mget_ctx_free(&x);
}

/* ---- main ---- */

static size_t count_arg(const char *name, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !v)
		die("%s takes a positive integer, not '%s'", name, s);
	return (size_t)v;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: rhkv-client-bench [--only get,set,mget1,cluster] "
		"[--gets N] [--sets N]\n"
		"         [--set-size B] [--batch N] [--mget-keys N] "
		"[--mget-iters N]\n"
		"         [--mc-set buffered,binary,plain] [--variants LIST] "
		"[--round R] "
		"HOST:PORT [HOST:PORT ...]\n");
	exit(rc);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(0);
		if (a[0] == '-' && a[1] == '-') {
			if (!v)
				usage(64);
			i++;
			if (!strcmp(a, "--only"))
				opt.only = v;
			else if (!strcmp(a, "--gets"))
				opt.gets = count_arg(a, v);
			else if (!strcmp(a, "--sets"))
				opt.sets = count_arg(a, v);
			else if (!strcmp(a, "--set-size"))
				opt.set_size = count_arg(a, v);
			else if (!strcmp(a, "--batch"))
				opt.batch = count_arg(a, v);
			else if (!strcmp(a, "--mget-keys"))
				opt.mget_keys = count_arg(a, v);
			else if (!strcmp(a, "--mget-iters"))
				opt.mget_iters = count_arg(a, v);
			else if (!strcmp(a, "--mc-set"))
				opt.mc_set = v;
			else if (!strcmp(a, "--variants"))
				opt.variants = v;
			else if (!strcmp(a, "--round"))
				opt.round = (int)count_arg(a, v);
			else
				usage(64);
			continue;
		}
		{
			const char *colon = strrchr(a, ':');
			size_t hl = colon ? (size_t)(colon - a) : 0;

			if (!colon || !hl || hl >= sizeof(servers[0].host) ||
			    nservers == MAX_SERVERS)
				usage(64);
			memcpy(servers[nservers].host, a, hl);
			servers[nservers].host[hl] = '\0';
			servers[nservers].port =
				(int)count_arg("port", colon + 1);
			nservers++;
		}
	}
	if (!nservers)
		usage(64);
	if (opt.mget_keys > MGET_POOL)
		die("--mget-keys is at most %d", MGET_POOL);
	for (char *m = strtok(strdup(opt.mc_set), ","); m;
	     m = strtok(NULL, ",")) {
		if ((strcmp(m, "buffered") && strcmp(m, "binary") &&
		     strcmp(m, "plain")) ||
		    n_mc_modes == MC_MODES)
			usage(64);
		mc_modes[n_mc_modes++] = m;
	}
#ifndef HAVE_LIBMEMCACHED
	fprintf(stderr, "rhkv-client-bench: built without libmemcached: its "
			"variants are skipped\n");
#endif
	if (wanted("get"))
		bench_get();
	if (wanted("set"))
		bench_set();
	if (wanted("mget1"))
		bench_mget1();
	if (wanted("cluster"))
		bench_cluster();
	return 0;
}
