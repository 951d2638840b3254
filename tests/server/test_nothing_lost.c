/*
 * Nothing lost: eight connections write versioned values to one shared key
 * space ("nl:0" .. "nl:19999", so the table grows as they are first
 * written) and read them back, while a scanner walks the table and a
 * churner sets and deletes 50,000 "tmp:" keys en masse (so the table grows
 * past them and shrinks back). No memory pressure, no TTL. Checked:
 *
 *  - no torn or foreign value: each value names its key, its writer and its
 *    version, and its length and filler follow from the version;
 *  - no stale read: a get never returns a version whose set was
 *    acknowledged (STORED read) before another set of the same key was sent,
 *    when that other set was itself acknowledged before the get was sent;
 *    no miss of a key acknowledged before the get was sent;
 *  - every nl: key acknowledged before a full scan began is in that scan;
 *  - at the end, a full scan has every acknowledged key and a get of each
 *    returns its last acknowledged version or one sent after it.
 *
 * Then again with -m 8 (eviction on): a key may be missing only if
 * `evictions` grew; values returned still obey the rules. Scan and
 * `stats table` are rhkvd's: the tests skip on memcached.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "harness.h"

#define NL_KEYS	    20000
#define NL_TMP_KEYS 50000
#define NL_WRITERS  8
#define NL_BATCH    40	    /* requests pipelined per round trip */
#define NL_SET_PCT  70	    /* of a writer's requests; the rest are gets */
#define NL_MAX_SETS 6000000 /* versions; writers stop when they run out */
/* The load runs NL_RUN_MS (NL_RUN_SAN for a sanitized test or server),
 * then on until NL_MIN_SCANS full scans and a tmp: cycle have run, for at
 * most NL_EXTRA_MS more; RHKV_TEST_SOAK=1 runs the _SOAK lengths. */
#define NL_RUN_MS	8000
#define NL_RUN_SAN	6000
#define NL_RUN_SOAK	30000
#define NL_RUN_SAN_SOAK 10000
#define NL_MIN_SCANS	2
#define NL_EXTRA_MS	60000
#define NL_TMP_BATCH	500
#define NL_REPLY_MS	20000

static struct srv srv;
static struct hconn *c;

/* One version: which key and writer, and the clock when its set was sent
 * and when its STORED was read (0: not yet). */
struct nl_ver {
	_Atomic uint32_t send, ack;
	_Atomic uint32_t key;
	_Atomic uint32_t writer;
};

static struct nl {
	int port;
	bool evicting;
	atomic_bool stop;
	atomic_int failed;
	pthread_mutex_t lock;
	char msg[2048];	       /* the first failure */
	atomic_int missed_key; /* a writer's miss: the key + 1 */

	_Atomic uint32_t clock;	    /* ticks at sends and acks */
	_Atomic uint32_t nversions; /* versions handed out */
	struct nl_ver *ver;	    /* [NL_MAX_SETS] */
	/* Per key: the largest send clock of an acknowledged set. */
	_Atomic uint32_t acked_send[NL_KEYS];

	atomic_long sets, gets, hits, misses, lost, scans, scanned;
	atomic_long tmp_cycles, tmp_ops;
} * nl;

static void teardown(void)
{
	int status;

	if (nl) {
		free(nl->ver);
		pthread_mutex_destroy(&nl->lock);
		free(nl);
		nl = NULL;
	}
	if (!srv.pid)
		return;
	hc_close(&c);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(nothing_lost, .fini = teardown, .timeout = 200);

/* ---- stats ---- */

static void read_stats(struct hconn *conn, const char *arg, struct hstats *s)
{
	cr_assert_eq(hc_stats(conn, arg, s, NL_REPLY_MS), 0,
		     "stats %s: no good reply", arg);
}

static unsigned long long stat_u64(const struct hstats *s, const char *name)
{
	unsigned long long v = 0;

	cr_assert_eq(hstats_u64(s, name, &v), 0,
		     "stat %s missing or not a number", name);
	return v;
}

/* ---- failures from the threads ---- */

static void nl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void nl_fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&nl->lock);
	if (!atomic_load(&nl->failed)) {
		va_start(ap, fmt);
		vsnprintf(nl->msg, sizeof(nl->msg), fmt, ap);
		va_end(ap);
	}
	atomic_fetch_add(&nl->failed, 1);
	atomic_store(&nl->stop, true);
	pthread_mutex_unlock(&nl->lock);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static uint32_t tick(void)
{
	return atomic_fetch_add(&nl->clock, 1) + 1;
}

static void atomic_max_u32(_Atomic uint32_t *p, uint32_t v)
{
	uint32_t cur = atomic_load(p);

	while (cur < v && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

/* ---- values ---- */

/* The length of version V's value: 200 .. 500 bytes. */
static size_t nl_len(uint32_t v)
{
	return 200 + (size_t)((v * 2654435761u) >> 7) % 301;
}

/* "nl:<key>|w<writer>|v<version>|" then "<version>." repeated. */
static size_t nl_value(char *dst, int key, int writer, uint32_t v)
{
	size_t len = nl_len(v);
	char pat[16];
	int p = snprintf(dst, len, "nl:%d|w%d|v%u|", key, writer, v);
	int k = snprintf(pat, sizeof(pat), "%u.", v);

	for (size_t i = (size_t)p; i < len; i++)
		dst[i] = pat[(i - (size_t)p) % (size_t)k];
	return len;
}

/*
 * Checks a value read for KEY by a get sent when the key's largest
 * acknowledged send clock was S. 0, or -1 with the reason in WHY.
 */
static int nl_check(int key, uint32_t s, const char *val, size_t n, char *why,
		    size_t cap)
{
	char want[600];
	int k = -1, w = -1, used = 0;
	unsigned int v = 0;

	if (n > 520 ||
	    sscanf(val, "nl:%d|w%d|v%u|%n", &k, &w, &v, &used) != 3 || !used) {
		snprintf(why, cap, "unparsable value %.*s",
			 (int)(n < 80 ? n : 80), val);
		return -1;
	}
	bool known =
		v > 0 && v < NL_MAX_SETS && v <= atomic_load(&nl->nversions);

	if (k != key || !known ||
	    atomic_load(&nl->ver[v].key) != (uint32_t)key ||
	    atomic_load(&nl->ver[v].writer) != (uint32_t)w) {
		snprintf(why, cap,
			 "foreign value for nl:%d: %.*s (version %u was "
			 "written by writer %u to nl:%u)",
			 key, (int)(n < 80 ? n : 80), val, v,
			 known ? atomic_load(&nl->ver[v].writer) : 0,
			 known ? atomic_load(&nl->ver[v].key) : 0);
		return -1;
	}
	size_t len = nl_value(want, k, w, v);

	if (n != len || memcmp(val, want, len)) {
		snprintf(why, cap,
			 "torn value for nl:%d version %u: %zu bytes (want "
			 "%zu): %.*s",
			 key, v, n, len, (int)(n < 200 ? n : 200), val);
		return -1;
	}
	uint32_t ack = atomic_load(&nl->ver[v].ack);

	/* Acknowledged before a later set that was itself acknowledged before
	 * this get was sent: stale. Not yet acknowledged: its ack comes
	 * later than S. */
	if (ack && ack < s) {
		snprintf(
			why, cap,
			"stale value for nl:%d: version %u (writer %d, sent at "
			"%u, acknowledged at %u), but a set sent at %u was "
			"acknowledged before the get was sent",
			key, v, w, atomic_load(&nl->ver[v].send), ack, s);
		return -1;
	}
	return 0;
}

/* ---- writers: sets and gets of nl: keys ---- */

struct nl_req {
	bool set;
	int key;
	uint32_t v; /* set: the version; get: the snapshot S */
};

static void *nl_writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct hconn *conn = hc_open(nl->port);
	struct hvalue *hv = malloc(sizeof(*hv));
	struct hbuf b = { 0 };
	struct nl_req req[NL_BATCH];
	char val[600], line[256], why[1024];
	uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1);

	if (!conn || !hv) {
		nl_fail("writer %d: connect: errno %d", id, errno);
		goto out;
	}
	while (!atomic_load(&nl->stop)) {
		int n = 0;

		b.len = 0;
		for (; n < NL_BATCH; n++) {
			int key = (int)(rng_next(&rng) % NL_KEYS);

			req[n].key = key;
			req[n].set = rng_next(&rng) % 100 < NL_SET_PCT;
			if (!req[n].set) {
				req[n].v = atomic_load(&nl->acked_send[key]);
				hbuf_printf(&b, "get nl:%d\r\n", key);
				continue;
			}
			uint32_t v = atomic_fetch_add(&nl->nversions, 1) + 1;

			if (v >= NL_MAX_SETS) {
				atomic_store(&nl->nversions, NL_MAX_SETS - 1);
				atomic_store(&nl->stop, true);
				break;
			}
			atomic_store(&nl->ver[v].key, (uint32_t)key);
			atomic_store(&nl->ver[v].writer, (uint32_t)id);
			atomic_store(&nl->ver[v].send, tick());
			req[n].v = v;
			size_t len = nl_value(val, key, id, v);

			hbuf_printf(&b, "set nl:%d 0 0 %zu\r\n", key, len);
			hbuf_add(&b, val, len);
			hbuf_add(&b, "\r\n", 2);
		}
		if (n && hc_send(conn, b.p, b.len)) {
			nl_fail("writer %d: send: errno %d", id, errno);
			break;
		}
		for (int i = 0; i < n; i++) {
			struct nl_req *r = &req[i];

			if (r->set) {
				long got = hc_line(conn, line, sizeof(line),
						   NL_REPLY_MS);

				if (got <= 0 || strcmp(line, "STORED\r\n")) {
					nl_fail("writer %d: set nl:%d: reply "
						"%s",
						id, r->key,
						got > 0 ? line : "(none)");
					goto out;
				}
				struct nl_ver *ver = &nl->ver[r->v];

				atomic_store(&ver->ack, tick());
				atomic_max_u32(&nl->acked_send[r->key],
					       atomic_load(&ver->send));
				atomic_fetch_add(&nl->sets, 1);
				continue;
			}
			int got = hc_value(conn, hv, NL_REPLY_MS);

			atomic_fetch_add(&nl->gets, 1);
			if (got == 0) {
				if (r->v && !nl->evicting) {
					int none = 0;

					atomic_compare_exchange_strong(
						&nl->missed_key, &none,
						r->key + 1);
					nl_fail("writer %d: get nl:%d missed; "
						"a set sent at %u was "
						"acknowledged before it",
						id, r->key, r->v);
					goto out;
				}
				/* A key nobody had acknowledged may miss;
				 * one acknowledged may only if evicted. */
				atomic_fetch_add(r->v ? &nl->lost : &nl->misses,
						 1);
				continue;
			}
			char want[32];

			snprintf(want, sizeof(want), "nl:%d", r->key);
			if (got < 0 || strcmp(hv->key, want) || hv->flags) {
				nl_fail("writer %d: get %s: reply %s", id, want,
					hv->line);
				goto out;
			}
			if (nl_check(r->key, r->v, hv->val, hv->len, why,
				     sizeof(why))) {
				nl_fail("writer %d: get %s: %s", id, want, why);
				goto out;
			}
			if (hc_value(conn, hv, NL_REPLY_MS) != 0) {
				nl_fail("writer %d: get %s: no END: %s", id,
					want, hv->line);
				goto out;
			}
			atomic_fetch_add(&nl->hits, 1);
		}
	}
out:
	free(hv);
	hbuf_free(&b);
	hc_close(&conn);
	return NULL;
}

/* ---- the scanner ---- */

/*
 * One full scan (count COUNT) on CONN; marks the nl: keys it returns in
 * SEEN. Returns the keys returned, or -1 after nl_fail.
 */
static long nl_scan(struct hconn *conn, int count, unsigned char *seen,
		    const char *who)
{
	unsigned long long cursor = 0;
	long keys = 0;
	char line[600];

	do {
		if (hc_sendf(conn, "scan %llu count %d\r\n", cursor, count)) {
			nl_fail("%s: send: errno %d", who, errno);
			return -1;
		}
		for (;;) {
			char *end;
			int k, used = 0;

			if (hc_line(conn, line, sizeof(line), NL_REPLY_MS) <=
			    0) {
				nl_fail("%s: no reply to scan %llu", who,
					cursor);
				return -1;
			}
			if (!strncmp(line, "CURSOR ", 7)) {
				cursor = strtoull(line + 7, &end, 10);
				if (strcmp(end, "\r\n")) {
					nl_fail("%s: %s", who, line);
					return -1;
				}
				break;
			}
			keys++;
			if (sscanf(line, "KEY nl:%d\r\n%n", &k, &used) == 1 &&
			    used && !line[used] && k >= 0 && k < NL_KEYS) {
				seen[k] = 1;
				continue;
			}
			used = 0;
			if (sscanf(line, "KEY tmp:%d\r\n%n", &k, &used) == 1 &&
			    used && !line[used] && k >= 0 && k < NL_TMP_KEYS)
				continue;
			nl_fail("%s: bad line %s", who, line);
			return -1;
		}
	} while (cursor && !atomic_load(&nl->stop));
	return keys;
}

static void *nl_scanner(void *arg)
{
	struct hconn *conn = hc_open(nl->port);
	unsigned char *want = malloc(NL_KEYS), *seen = malloc(NL_KEYS);

	(void)arg;
	if (!conn || !want || !seen) {
		nl_fail("scanner: connect: errno %d", errno);
		goto out;
	}
	while (!atomic_load(&nl->stop)) {
		/* Keys acknowledged now stay for the whole scan (never
		 * deleted; without eviction never dropped). */
		for (int k = 0; k < NL_KEYS; k++)
			want[k] = atomic_load(&nl->acked_send[k]) != 0;
		memset(seen, 0, NL_KEYS);
		long n = nl_scan(conn, 100, seen, "scanner");

		if (n < 0)
			break;
		if (atomic_load(&nl->stop))
			break; /* cut short */
		atomic_fetch_add(&nl->scans, 1);
		atomic_fetch_add(&nl->scanned, n);
		if (nl->evicting)
			continue;
		for (int k = 0; k < NL_KEYS; k++)
			if (want[k] && !seen[k]) {
				nl_fail("scanner: full scan %ld missed nl:%d, "
					"acknowledged before it began",
					atomic_load(&nl->scans), k);
				goto out;
			}
	}
out:
	free(want);
	free(seen);
	hc_close(&conn);
	return NULL;
}

/* ---- the churner: tmp: keys set and deleted en masse ---- */

static bool tmp_batch(struct hconn *conn, struct hbuf *b, int from, int n,
		      bool del)
{
	char line[256];

	b->len = 0;
	for (int i = from; i < from + n; i++)
		if (del)
			hbuf_printf(b, "delete tmp:%d\r\n", i);
		else
			hbuf_printf(b, "set tmp:%d 0 0 24\r\ntmp-%020d\r\n", i,
				    i);
	if (hc_send(conn, b->p, b->len)) {
		nl_fail("churner: send: errno %d", errno);
		return false;
	}
	for (int i = from; i < from + n; i++) {
		long got = hc_line(conn, line, sizeof(line), NL_REPLY_MS);
		bool ok = got > 0 &&
			  (del ? !strcmp(line, "DELETED\r\n") ||
					   (nl->evicting &&
					    !strcmp(line, "NOT_FOUND\r\n"))
			       : !strcmp(line, "STORED\r\n"));

		if (!ok) {
			nl_fail("churner: %s tmp:%d: reply %s",
				del ? "delete" : "set", i,
				got > 0 ? line : "(none)");
			return false;
		}
		atomic_fetch_add(&nl->tmp_ops, 1);
	}
	return true;
}

static void *nl_churner(void *arg)
{
	struct hconn *conn = hc_open(nl->port);
	struct hbuf b = { 0 };

	(void)arg;
	if (!conn) {
		nl_fail("churner: connect: errno %d", errno);
		return NULL;
	}
	while (!atomic_load(&nl->stop)) {
		int i;

		for (i = 0; i < NL_TMP_KEYS && !atomic_load(&nl->stop);
		     i += NL_TMP_BATCH)
			if (!tmp_batch(conn, &b, i, NL_TMP_BATCH, false))
				goto out;
		/* Even when stopping: no tmp: key stays behind. */
		for (int j = 0; j < i; j += NL_TMP_BATCH)
			if (!tmp_batch(conn, &b, j, NL_TMP_BATCH, true))
				goto out;
		if (i >= NL_TMP_KEYS)
			atomic_fetch_add(&nl->tmp_cycles, 1);
	}
out:
	hbuf_free(&b);
	hc_close(&conn);
	return NULL;
}

/* ---- the run ---- */

/*
 * What the server says once a writer failed, for the failure's message:
 * whether a missed key is there now (a lookup that missed a present item,
 * or an item gone), and the counters that could explain it.
 */
static void failure_state(char *dst, size_t cap)
{
	struct hvalue *hv = malloc(sizeof(*hv));
	struct hstats s = { 0 }, t = { 0 };
	int key = atomic_load(&nl->missed_key) - 1;
	size_t n = 0;

	cr_assert_not_null(hv);
	dst[0] = 0;
	if (key >= 0) {
		char req[64];
		int got;

		snprintf(req, sizeof(req), "get nl:%d\r\n", key);
		got = hc_send(c, req, strlen(req))
			      ? -1
			      : hc_value(c, hv, NL_REPLY_MS);
		if (got == 1 && hc_value(c, hv, NL_REPLY_MS) != 0)
			got = -1;
		n += (size_t)snprintf(dst, cap, "nl:%d now: %s; ", key,
				      got == 1	 ? "present"
				      : got == 0 ? "missing"
						 : "no good reply");
	}
	free(hv);
	if (n < cap && !hc_stats(c, "", &s, NL_REPLY_MS) &&
	    !hc_stats(c, "table", &t, NL_REPLY_MS)) {
		unsigned long long ev = 0, carried = 0, grows = 0, shrinks = 0,
				   buckets = 0;

		hstats_u64(&s, "evictions", &ev);
		hstats_u64(&s, "items_carried", &carried);
		hstats_u64(&t, "grows", &grows);
		hstats_u64(&t, "shrinks", &shrinks);
		hstats_u64(&t, "buckets", &buckets);
		snprintf(dst + n, cap - n,
			 "evictions %llu, items_carried %llu; table %llu "
			 "buckets, %llu grows, %llu shrinks",
			 ev, carried, grows, shrinks, buckets);
	}
}

static void run(bool evicting)
{
	static const char *const evict_flags[] = { "-m", "8", NULL };
	pthread_t th[NL_WRITERS + 2];
	int nth = 0;
	struct hstats s, t;

	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("scan and stats table are rhkvd's; the server "
			     "under test is memcached (RHKV_TEST_SERVER)");
	cr_assert_eq(srv_start(&srv, evicting ? evict_flags : NULL), 0,
		     "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);

	nl = calloc(1, sizeof(*nl));
	cr_assert_not_null(nl);
	nl->ver = calloc(NL_MAX_SETS, sizeof(*nl->ver));
	cr_assert_not_null(nl->ver);
	pthread_mutex_init(&nl->lock, NULL);
	nl->port = srv.port;
	nl->evicting = evicting;

	long long run_ms =
		H_SANITIZED_BUILD || h_sanitizer(srv.pid) != H_SAN_NONE
			? h_soak_ms(NL_RUN_SAN, NL_RUN_SAN_SOAK)
			: h_soak_ms(NL_RUN_MS, NL_RUN_SOAK);

	for (int i = 0; i < NL_WRITERS + 2; i++) {
		void *(*fn)(void *) = i < NL_WRITERS	? nl_writer
				      : i == NL_WRITERS ? nl_scanner
							: nl_churner;

		if (pthread_create(&th[nth], NULL, fn, (void *)(intptr_t)i)) {
			nl_fail("pthread_create failed");
			break;
		}
		nth++;
	}
	long long t0 = h_now_ms(), end = t0 + run_ms, cap = end + NL_EXTRA_MS;

	while (!atomic_load(&nl->stop) &&
	       (h_now_ms() < end || ((atomic_load(&nl->scans) < NL_MIN_SCANS ||
				      atomic_load(&nl->tmp_cycles) < 1) &&
				     h_now_ms() < cap)))
		h_sleep_ms(50);
	atomic_store(&nl->stop, true);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	long long ran_ms = h_now_ms() - t0;

	if (atomic_load(&nl->failed)) {
		char diag[512];

		failure_state(diag, sizeof(diag));
		cr_assert_fail("%d failures; first: %s; %s",
			       atomic_load(&nl->failed), nl->msg, diag);
	}

	/* Every writer read every reply: nothing is in flight. A full scan
	 * and a get of every acknowledged key. */
	unsigned char *seen = calloc(1, NL_KEYS);
	struct hvalue *hv = malloc(sizeof(*hv));
	char why[1024], want[32];
	long acked = 0, in_scan = 0, scan_missing = 0, got_ok = 0,
	     get_missing = 0;
	int first_missing = -1;

	cr_assert(seen && hv);
	atomic_store(&nl->stop, false);
	long scanned = nl_scan(c, 1000, seen, "final scan");

	cr_assert_geq(scanned, 0, "%s", nl->msg);
	for (int k = 0; k < NL_KEYS; k++) {
		if (!atomic_load(&nl->acked_send[k]))
			continue;
		acked++;
		if (seen[k]) {
			in_scan++;
		} else {
			scan_missing++;
			if (first_missing < 0)
				first_missing = k;
		}
	}
	for (int k0 = 0; k0 < NL_KEYS; k0 += 100) {
		struct hbuf b = { 0 };

		hbuf_printf(&b, "get");
		for (int k = k0; k < k0 + 100; k++)
			hbuf_printf(&b, " nl:%d", k);
		hbuf_printf(&b, "\r\n");
		int sent = hc_send(c, b.p, b.len);

		hbuf_free(&b);
		cr_assert_eq(sent, 0, "send: errno %d", errno);
		int next = k0, r;

		while ((r = hc_value(c, hv, NL_REPLY_MS)) == 1) {
			int k = -1, used = 0;

			cr_assert(sscanf(hv->key, "nl:%d%n", &k, &used) == 1 &&
					  !hv->key[used] && k >= next &&
					  k < k0 + 100,
				  "final get: unexpected %s", hv->line);
			for (; next < k; next++)
				if (atomic_load(&nl->acked_send[next]))
					get_missing++;
			next = k + 1;
			cr_assert(atomic_load(&nl->acked_send[k]),
				  "final get: nl:%d was never acknowledged "
				  "but is there",
				  k);
			snprintf(want, sizeof(want), "nl:%d", k);
			cr_assert(!nl_check(k, atomic_load(&nl->acked_send[k]),
					    hv->val, hv->len, why, sizeof(why)),
				  "final get %s: %s", want, why);
			got_ok++;
		}
		cr_assert_eq(r, 0, "final get: bad reply %s", hv->line);
		for (; next < k0 + 100; next++)
			if (atomic_load(&nl->acked_send[next]))
				get_missing++;
	}
	free(seen);
	free(hv);

	read_stats(c, "", &s);
	read_stats(c, "table", &t);
	unsigned long long evictions = stat_u64(&s, "evictions");

	cr_log_info(
		"nothing-lost%s: %.1f s, %ld sets acknowledged, %ld gets "
		"checked (%ld hits, %ld misses of keys not yet acknowledged, "
		"%ld of acknowledged ones), %ld full scans (%ld keys), "
		"%ld tmp cycles (%ld tmp ops); final: %ld keys "
		"acknowledged, %ld in the scan, %ld values checked, "
		"%ld missing; evictions %llu; table: %llu buckets, %llu "
		"grows, %llu shrinks",
		evicting ? " (-m 8)" : "", ran_ms / 1000.0,
		atomic_load(&nl->sets), atomic_load(&nl->gets),
		atomic_load(&nl->hits), atomic_load(&nl->misses),
		atomic_load(&nl->lost), atomic_load(&nl->scans),
		atomic_load(&nl->scanned), atomic_load(&nl->tmp_cycles),
		atomic_load(&nl->tmp_ops), acked, in_scan, got_ok, get_missing,
		evictions, stat_u64(&t, "buckets"), stat_u64(&t, "grows"),
		stat_u64(&t, "shrinks"));

	cr_assert_gt(atomic_load(&nl->sets), 0);
	cr_assert_gt(atomic_load(&nl->hits), 0);
	cr_assert_gt(atomic_load(&nl->scans), 0, "no full scan completed");
	if (!evicting) {
		cr_assert_eq(evictions, 0, "evictions without memory pressure");
		cr_assert_eq(scan_missing, 0,
			     "the final scan missed %ld of %ld acknowledged "
			     "keys (first nl:%d)",
			     scan_missing, acked, first_missing);
		cr_assert_eq(get_missing, 0,
			     "the final gets missed %ld of %ld acknowledged "
			     "keys",
			     get_missing, acked);
		cr_assert_eq(atomic_load(&nl->lost), 0);
		cr_assert_gt(stat_u64(&t, "grows"), 0, "the table never grew");
		if (atomic_load(&nl->tmp_cycles) > 0)
			cr_assert_gt(stat_u64(&t, "shrinks"), 0,
				     "the table never shrank");
	} else {
		cr_assert(evictions > 0 || (!scan_missing && !get_missing &&
					    !atomic_load(&nl->lost)),
			  "keys missing (scan %ld, final gets %ld, gets "
			  "during the run %ld) but evictions is 0",
			  scan_missing, get_missing, atomic_load(&nl->lost));
		cr_assert_gt(evictions, 0, "-m 8 and no eviction");
	}
	SYNC(c, &srv);
}

Test(nothing_lost, no_eviction)
{
	run(false);
}

Test(nothing_lost, with_eviction)
{
	run(true);
}
