/*
 * Every `stats` group memcached has, and `lru_crawler metadump`: formats
 * checked against memcached 1.6.18 (RHKV_TEST_SERVER=memcached runs them
 * there), values against what the test stored. Where rhkvd's storage
 * differs (one item class holding every item, docs/stats.md), the value
 * checks are rhkvd's only.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "harness.h"

static struct srv srv;
static struct hconn *c;

static void teardown(void)
{
	STOP_RHKVD(&srv, &c);
}

TestSuite(stats_groups, .fini = teardown, .timeout = 100);

static bool is_memcached(void)
{
	return srv_kind_from_env() == SRV_MEMCACHED;
}

static void start(void)
{
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

static void read_stats(const char *group, struct hstats *s)
{
	cr_assert_eq(hc_stats(c, group, s, H_TIMEOUT_MS), 0,
		     "stats %s: no good reply", group);
}

static unsigned long long stat_u(const struct hstats *s, const char *name)
{
	unsigned long long v;

	cr_assert_eq(hstats_u64(s, name, &v), 0, "no number %s", name);
	return v;
}

static void set(const char *key, const char *value, int exptime)
{
	char reply[64];

	cr_assert_eq(hc_sendf(c, "set %s 3 %d %zu\r\n%s\r\n", key, exptime,
			      strlen(value), value),
		     0);
	cr_assert_gt(hc_line(c, reply, sizeof(reply), H_TIMEOUT_MS), 0);
	cr_assert_str_eq(reply, "STORED\r\n");
}

/* The gets cas of key. */
static unsigned long long cas_of(const char *key)
{
	char line[512];
	unsigned long long cas = 0;
	unsigned int flags, bytes;

	cr_assert_eq(hc_sendf(c, "gets %s\r\n", key), 0);
	cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "VALUE %*s %u %u %llu", &flags, &bytes, &cas),
		     3, "%s", line);
	cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_str_eq(line, "END\r\n");
	return cas;
}

/* memcached's general stats that rhkvd shows too (docs/stats.md lists the
 * ones it leaves out). */
Test(stats_groups, general_names)
{
	static const char *const names[] = { "pid",
					     "uptime",
					     "time",
					     "version",
					     "libevent",
					     "pointer_size",
					     "rusage_user",
					     "rusage_system",
					     "max_connections",
					     "curr_connections",
					     "total_connections",
					     "rejected_connections",
					     "connection_structures",
					     "cmd_get",
					     "cmd_set",
					     "cmd_flush",
					     "cmd_touch",
					     "cmd_meta",
					     "get_hits",
					     "get_misses",
					     "get_expired",
					     "get_flushed",
					     "delete_misses",
					     "delete_hits",
					     "incr_misses",
					     "incr_hits",
					     "decr_misses",
					     "decr_hits",
					     "cas_misses",
					     "cas_hits",
					     "cas_badval",
					     "touch_hits",
					     "touch_misses",
					     "store_too_large",
					     "store_no_memory",
					     "auth_cmds",
					     "auth_errors",
					     "bytes_read",
					     "bytes_written",
					     "limit_maxbytes",
					     "accepting_conns",
					     "listen_disabled_num",
					     "threads",
					     "conn_yields",
					     "hash_power_level",
					     "hash_bytes",
					     "hash_is_expanding",
					     "malloc_fails",
					     "log_watcher_skipped",
					     "log_watcher_sent",
					     "log_watchers",
					     "lru_crawler_starts",
					     "bytes",
					     "curr_items",
					     "total_items",
					     "expired_unfetched",
					     "evicted_unfetched",
					     "evicted_active",
					     "evictions",
					     "reclaimed",
					     "crawler_reclaimed",
					     "crawler_items_checked" };
	struct hstats s;

	start();
	read_stats("", &s);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect_not_null(hstats_get(&s, names[i]), "no stat %s",
				   names[i]);
	cr_expect_eq(stat_u(&s, "accepting_conns"), 1);
	cr_expect_eq(stat_u(&s, "listen_disabled_num"), 0);
	cr_expect_eq(stat_u(&s, "get_flushed"), 0);
}

/* get_flushed and store_too_large count what they say. */
Test(stats_groups, general_values)
{
	struct hstats s;
	char big[2100];

	start();
	set("gone", "x", 0);
	/* memcached's flush_all has a clock of whole seconds: an item stored
	 * in the second of the flush may count as expired instead. */
	if (is_memcached())
		h_sleep_ms(1100);
	/* rhkvd's sweep reclaims flushed items in the background: paused,
	 * so that the get meets the item however slow it is to arrive. */
	if (!is_memcached())
		RT(c, "lru_crawler disable\r\n", "OK\r\n");
	RT(c, "flush_all\r\n", "OK\r\n");
	RT(c, "get gone\r\n", "END\r\n");
	if (!is_memcached())
		RT(c, "lru_crawler enable\r\n", "OK\r\n");
	memset(big, 'v', sizeof(big));
	/* The whole request, then the reply (memcached reads it all). */
	cr_assert_eq(hc_sendf(c, "set big 0 0 %d\r\n", (int)(2 << 20)), 0);
	for (int left = 2 << 20; left > 0; left -= (int)sizeof(big))
		SEND_N(c, big,
		       left < (int)sizeof(big) ? (size_t)left : sizeof(big));
	SEND(c, "\r\n");
	EXPECT(c, "SERVER_ERROR object too large for cache\r\n");
	SYNC(c, &srv);
	read_stats("", &s);
	cr_expect_eq(stat_u(&s, "get_flushed"), 1);
	cr_expect_eq(stat_u(&s, "store_too_large"), 1);
	cr_expect_eq(stat_u(&s, "get_misses"), 1);
}

/* A connection --idle-timeout closes counts in idle_kicks (memcached's
 * -o idle_timeout). */
Test(stats_groups, idle_kicks)
{
	static const char *const rh[] = { "--idle-timeout", "1", NULL };
	static const char *const mc[] = { "-o", "idle_timeout=1", NULL };
	struct hconn *idle;
	struct hstats s;

	cr_assert_eq(srv_start(&srv, is_memcached() ? mc : rh), 0);
	idle = hc_open(srv.port);
	cr_assert_not_null(idle);
	SYNC(idle, &srv);
	cr_assert_eq(hc_closed(idle, H_TIMEOUT_MS), 1, "not closed when idle");
	hc_close(&idle);
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	read_stats("", &s);
	cr_expect_eq(stat_u(&s, "idle_kicks"), 1);
}

Test(stats_groups, settings_names)
{
	static const char *const names[] = {
		"maxbytes",
		"maxconns",
		"tcpport",
		"udpport",
		"inter",
		"verbosity",
		"evictions",
		"domain_socket",
		"umask",
		"num_threads",
		"stat_key_prefix",
		"detail_enabled",
		"cas_enabled",
		"binding_protocol",
		"auth_enabled_sasl",
		"item_size_max",
		"maxconns_fast",
		"lru_crawler",
		"flush_enabled",
		"dump_enabled",
		"hash_algorithm",
		"idle_timeout",
		"lru_segmented",
		"temp_lru",
		"track_sizes",
		"ssl_enabled",
		"shutdown_command",
		"auth_enabled_ascii",
		"watcher_logbuf_size",
	};
	struct hstats s;

	start();
	read_stats("settings", &s);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect_not_null(hstats_get(&s, names[i]), "no setting %s",
				   names[i]);
	cr_expect_str_eq(hstats_get(&s, "stat_key_prefix"), ":");
	cr_expect_str_eq(hstats_get(&s, "detail_enabled"), "no");
	cr_expect_str_eq(hstats_get(&s, "evictions"), "on");
	cr_expect_str_eq(hstats_get(&s, "cas_enabled"), "yes");
	if (is_memcached())
		return; /* Debian's shows its TLS settings only with -Z */
	/* memcached's spelling: OpenSSL's verify flags, "tlsv1.2". */
	cr_expect_str_eq(hstats_get(&s, "ssl_verify_mode"), "0");
	cr_expect_str_eq(hstats_get(&s, "ssl_min_version"), "tlsv1.2");
	cr_expect_str_eq(hstats_get(&s, "ssl_keyformat"), "1");
	cr_expect_str_eq(hstats_get(&s, "ssl_wbuf_size"), "16384");
	cr_expect_str_eq(hstats_get(&s, "ssl_kernel_tls"), "no");
}

/* --tls-verify and --tls-min-version as memcached shows its ssl_verify_mode
 * 1 and 2 (OpenSSL's flags) and ssl_min_version 3 (without --tls-port
 * they are only shown). */
Test(stats_groups, settings_tls_spelling)
{
	static const char *const optional[] = { "--tls-verify", "optional",
						NULL };
	static const char *const require[] = { "--tls-verify", "require",
					       "--tls-min-version", "1.3",
					       NULL };
	struct hstats s;

	if (is_memcached() || h_tls())
		cr_skip_test("rhkvd's options, without its TLS listener");
	cr_assert_eq(srv_start(&srv, optional), 0);
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	read_stats("settings", &s);
	cr_expect_str_eq(hstats_get(&s, "ssl_verify_mode"), "1");
	STOP_RHKVD(&srv, &c);
	cr_assert_eq(srv_start(&srv, require), 0);
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	read_stats("settings", &s);
	cr_expect_str_eq(hstats_get(&s, "ssl_verify_mode"), "3");
	cr_expect_str_eq(hstats_get(&s, "ssl_min_version"), "tlsv1.3");
}

Test(stats_groups, items_and_slabs)
{
	struct hstats s;

	start();
	RT(c, "stats items\r\n", "END\r\n");
	read_stats("slabs", &s);
	cr_expect_eq(stat_u(&s, "active_slabs"), 0);
	cr_expect_not_null(hstats_get(&s, "total_malloced"));
	set("k1", "abc", 0);
	set("k2", "def", 100);
	set("k3", "ghi", 0);
	RT(c, "get k1 nx\r\n", "VALUE k1 3 3\r\nabc\r\nEND\r\n");
	RT(c, "delete k3\r\n", "DELETED\r\n");
	read_stats("items", &s);
	cr_expect_eq(stat_u(&s, "items:1:number"), 2);
	for (const char *const *n =
		     (const char *const[]){
			     "items:1:mem_requested", "items:1:evicted",
			     "items:1:evicted_nonzero", "items:1:outofmemory",
			     "items:1:tailrepairs", "items:1:reclaimed",
			     "items:1:expired_unfetched",
			     "items:1:evicted_unfetched",
			     "items:1:evicted_active",
			     "items:1:crawler_reclaimed",
			     "items:1:crawler_items_checked", NULL };
	     *n; n++)
		cr_expect_not_null(hstats_get(&s, *n), "no stat %s", *n);
	cr_expect_eq(stat_u(&s, "items:1:evicted"), 0);
	cr_expect_gt(stat_u(&s, "items:1:mem_requested"), 2 * 5);
	read_stats("slabs", &s);
	cr_expect_eq(stat_u(&s, "active_slabs"), 1);
	cr_expect_eq(stat_u(&s, "1:used_chunks"), 2);
	cr_expect_eq(stat_u(&s, "1:get_hits"), 1);
	cr_expect_eq(stat_u(&s, "1:cmd_set"), 3);
	cr_expect_eq(stat_u(&s, "1:delete_hits"), 1);
	cr_expect_gt(stat_u(&s, "1:chunk_size"), 0);
	cr_expect_gt(stat_u(&s, "total_malloced"), 0);
	for (const char *const *n =
		     (const char *const[]){
			     "1:chunks_per_page", "1:total_pages",
			     "1:total_chunks", "1:free_chunks",
			     "1:free_chunks_end", "1:incr_hits", "1:decr_hits",
			     "1:cas_hits", "1:cas_badval", "1:touch_hits",
			     NULL };
	     *n; n++)
		cr_expect_not_null(hstats_get(&s, *n), "no stat %s", *n);
	if (!is_memcached()) {
		cr_expect_eq(stat_u(&s, "1:total_chunks"), 2);
		cr_expect_eq(stat_u(&s, "1:free_chunks"), 0);
	}
	RT(c, "stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
	/* Emptied, the class still holds memory: `stats slabs` shows it, as
	 * memcached shows a class with pages; `stats items` does not. */
	RT(c, "delete k1\r\n", "DELETED\r\n");
	RT(c, "delete k2\r\n", "DELETED\r\n");
	RT(c, "stats items\r\n", "END\r\n");
	read_stats("slabs", &s);
	cr_expect_eq(stat_u(&s, "active_slabs"), 1);
	cr_expect_eq(stat_u(&s, "1:used_chunks"), 0);
	cr_expect_gt(stat_u(&s, "total_malloced"), 0);
}

/* Stores n values of 65 KiB under "<prefix><i>" for i in [from, from+n). */
static void set_big(const char *prefix, int from, int n)
{
	static char value[66560];

	memset(value, 'B', sizeof(value));
	for (int i = from; i < from + n; i++) {
		cr_assert_eq(hc_sendf(c, "set %s%d 0 0 %zu\r\n", prefix, i,
				      sizeof(value)),
			     0);
		SEND_N(c, value, sizeof(value));
		RT(c, "\r\n", "STORED\r\n");
	}
}

/* total_malloced is the memory held for items, as memcached's slab pages:
 * ten 65 KiB items replaced by ten of about their size (keys a byte
 * longer) leave it where it was, once the old ones are freed. */
Test(stats_groups, total_malloced_steady)
{
	unsigned long long first, now = 0;
	long long deadline;
	struct hstats s;
	char line[64];

	start();
	set_big("key", 0, 10);
	read_stats("slabs", &s);
	first = stat_u(&s, "total_malloced");
	cr_assert_geq(first, 10 * 66560ull);
	for (int i = 0; i < 10; i++) {
		snprintf(line, sizeof(line), "delete key%d\r\n", i);
		SEND_N(c, line, strlen(line));
		EXPECT(c, "DELETED\r\n");
	}
	set_big("key", 10, 10);
	/* rhkvd frees a removed item's memory after a grace period. */
	deadline = h_now_ms() + H_TIMEOUT_MS;
	do {
		read_stats("slabs", &s);
		now = stat_u(&s, "total_malloced");
		if (now == first)
			break;
		h_sleep_ms(50);
	} while (h_now_ms() < deadline);
	cr_expect_eq(now, first, "total_malloced %llu, then %llu", first, now);
}

/* items:1:age: seconds since the oldest item was stored, to a second. */
Test(stats_groups, items_age)
{
	struct hstats s;

	if (is_memcached())
		cr_skip_test("memcached's age is its cold LRU's (new items are "
			     "hot)");
	start();
	long long t0 = h_now_ms();

	set("old", "x", 0);
	h_sleep_ms(3200);
	set("new", "y", 0);
	read_stats("items", &s);
	/* At most the time from before the store to after the stats, rounded
	 * up, plus a second of clock granularity: a loaded machine may stretch
	 * it past the sleep. */
	long long most = (h_now_ms() - t0 + 999) / 1000 + 1;

	cr_expect_geq(stat_u(&s, "items:1:age"), 2);
	cr_expect_leq((long long)stat_u(&s, "items:1:age"), most);
	RT(c, "delete old\r\n", "DELETED\r\n");
	read_stats("items", &s);
	cr_expect_leq(stat_u(&s, "items:1:age"), 1);
}

/* The local port of the test's connection. */
static unsigned int local_port(const struct hconn *h)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	cr_assert_eq(getsockname(h->fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* The fd a `stats conns` reply gives the peer at port, or -1. */
static int conn_fd(const struct hstats *s, unsigned int port)
{
	char want[64];

	snprintf(want, sizeof(want), "tcp:127.0.0.1:%u", port);
	for (int i = 0; i < s->n; i++) {
		const char *colon = strchr(s->name[i], ':');

		if (colon && !strcmp(colon, ":addr") &&
		    !strcmp(s->value[i], want))
			return atoi(s->name[i]);
	}
	return -1;
}

/* rhkvd's state for a connection exactly; memcached's is one of its
 * conn_ states (they move on after a reply is sent). */
static void expect_state(const struct hstats *s, const char *name,
			 const char *want)
{
	const char *v = hstats_get(s, name);

	cr_assert_not_null(v, "no %s", name);
	if (is_memcached())
		cr_expect_eq(strncmp(v, "conn_", 5), 0, "%s %s", name, v);
	else
		cr_expect_str_eq(v, want, "%s", name);
}

Test(stats_groups, conns)
{
	struct hconn *idle;
	struct hstats s;
	char name[64], listen[64];
	int me, other;

	start();
	idle = hc_open(srv.port);
	cr_assert_not_null(idle);
	SYNC(idle, &srv);
	read_stats("conns", &s);
	me = conn_fd(&s, local_port(c));
	other = conn_fd(&s, local_port(idle));
	cr_assert_geq(me, 0, "no line for the test's own connection");
	cr_assert_geq(other, 0, "no line for the idle connection");
	snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%d", srv.port);
	snprintf(name, sizeof(name), "%d:state", me);
	cr_expect_str_eq(hstats_get(&s, name), "conn_parse_cmd");
	snprintf(name, sizeof(name), "%d:listen_addr", me);
	cr_expect_str_eq(hstats_get(&s, name), listen);
	/* Idle after a request. memcached's state moves on after its reply
	 * (conn_mwrite, conn_read, ...): only rhkvd's is checked. */
	snprintf(name, sizeof(name), "%d:state", other);
	expect_state(&s, name, "conn_new_cmd");
	snprintf(name, sizeof(name), "%d:secs_since_last_cmd", other);
	cr_expect_lt(stat_u(&s, name), 5);
	/* A set whose value has not come: conn_nread, as memcached says,
	 * once the server has read its line. */
	SEND(idle, "set foo 0 0 6\r\n");
	snprintf(name, sizeof(name), "%d:state", other);
	for (long long end = h_now_ms() + H_TIMEOUT_MS; h_now_ms() < end;
	     h_sleep_ms(20)) {
		const char *v;

		read_stats("conns", &s);
		v = hstats_get(&s, name);
		if (v && !strcmp(v, "conn_nread"))
			break;
	}
	cr_assert_not_null(hstats_get(&s, name));
	cr_expect_str_eq(hstats_get(&s, name), "conn_nread");
	RT(idle, "fooval\r\n", "STORED\r\n");
	/* The listening socket. */
	for (int i = 0; i < s.n; i++)
		if (!strcmp(s.value[i], "conn_listening")) {
			snprintf(name, sizeof(name), "%d:addr",
				 atoi(s.name[i]));
			cr_expect_str_eq(hstats_get(&s, name), listen);
			hc_close(&idle);
			return;
		}
	hc_close(&idle);
	cr_assert_fail("no listening socket");
}

/* Each request, then the reply it must get, in order. */
static void exchange(const char *const (*rt)[2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		SEND_N(c, rt[i][0], strlen(rt[i][0]));
		EXPECT_N(c, rt[i][1], strlen(rt[i][1]));
	}
}

Test(stats_groups, detail)
{
	static const char usage[] =
		"CLIENT_ERROR usage: stats detail on|off|dump\r\n";
	static const char counted[] =
		"PREFIX user get 2 hit 1 set 1 del 1\r\nEND\r\n";
	static const char *const off[][2] = {
		{ "stats detail dump\r\n", "END\r\n" },
		{ "stats detail\r\n", usage },
		{ "stats detail bogus\r\n", usage },
		{ "stats detail on\r\n", "OK\r\n" },
	};
	/* Keys without a ':' are not counted. */
	static const char *const on[][2] = {
		{ "get user:1\r\n", "END\r\n" },
		{ "set user:1 0 0 3\r\nabc\r\n", "STORED\r\n" },
		{ "get user:1 nodelim\r\n",
		  "VALUE user:1 0 3\r\nabc\r\nEND\r\n" },
		{ "delete user:1\r\n", "DELETED\r\n" },
		{ "set nodelim 0 0 1\r\nx\r\n", "STORED\r\n" },
		{ "stats detail dump\r\n", counted },
		{ "stats detail off\r\n", "OK\r\n" },
		{ "get user:2\r\n", "END\r\n" },
		{ "stats detail dump\r\n", counted },
		/* stats reset forgets them, on or off */
		{ "stats reset\r\n", "RESET\r\n" },
		{ "stats detail dump\r\n", "END\r\n" },
		{ "stats detail on\r\n", "OK\r\n" },
		{ "get user:2\r\n", "END\r\n" },
		{ "stats detail dump\r\n",
		  "PREFIX user get 1 hit 0 set 0 del 0\r\nEND\r\n" },
		{ "stats reset\r\n", "RESET\r\n" },
		{ "stats detail dump\r\n", "END\r\n" },
	};
	struct hstats s;

	start();
	exchange(off, sizeof(off) / sizeof(off[0]));
	read_stats("settings", &s);
	cr_expect_str_eq(hstats_get(&s, "detail_enabled"), "yes");
	exchange(on, sizeof(on) / sizeof(on[0]));
}

Test(stats_groups, cachedump)
{
	char line[512];
	bool seen[3] = { false };
	int n = 0;

	start();
	RT(c, "stats cachedump\r\n", "CLIENT_ERROR bad command line\r\n");
	RT(c, "stats cachedump 1\r\n", "CLIENT_ERROR bad command line\r\n");
	RT(c, "stats cachedump 9 0\r\n", "END\r\n");
	if (is_memcached())
		return; /* 1.6 lists its cold LRU only: new items are hot */
	set("a:1", "abc", 0);
	set("b", "hello", 2000000000);
	set("c", "", 0);
	SEND(c, "stats cachedump 1 0\r\n");
	for (;;) {
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (!strcmp(line, "END\r\n"))
			break;
		n++;
		if (!strcmp(line, "ITEM a:1 [3 b; 0 s]\r\n"))
			seen[0] = true;
		else if (!strcmp(line, "ITEM b [5 b; 2000000000 s]\r\n"))
			seen[1] = true;
		else if (!strcmp(line, "ITEM c [0 b; 0 s]\r\n"))
			seen[2] = true;
		else
			cr_assert_fail("unexpected line %s", line);
	}
	cr_expect(seen[0] && seen[1] && seen[2] && n == 3);
	SEND(c, "stats cachedump 1 2\r\n");
	for (n = 0;; n++) {
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (!strcmp(line, "END\r\n"))
			break;
	}
	cr_expect_eq(n, 2, "a limit of 2 gave %d lines", n);
}

Test(stats_groups, metadump)
{
	static const char *const keys[] = { "plain", "a:b", "50%/x" };
	static const char *const enc[] = { "plain", "a%3Ab", "50%25%2Fx" };
	unsigned long long cas[3];
	bool seen[3] = { false };
	char line[1024], key[300], fetch[8];
	long long exp, la;
	unsigned long long lcas, size;
	unsigned int cls;

	start();
	set(keys[0], "v", 0);
	set(keys[1], "value", 2000000000);
	set(keys[2], "", 0);
	for (int i = 0; i < 3; i++)
		cas[i] = cas_of(keys[i]); /* fetches them too */
	set(keys[2], "", 0);		  /* not fetched since */
	cas[2] = 0;
	RT(c, "lru_crawler\r\n", "ERROR\r\n");
	RT(c, "lru_crawler bogus all\r\n", "ERROR\r\n");
	RT(c, "lru_crawler metadump\r\n", "ERROR\r\n");
	SEND(c, "lru_crawler metadump all\r\n");
	for (;;) {
		int i;

		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (!strcmp(line, "END\r\n"))
			break;
		cr_assert_eq(sscanf(line,
				    "key=%299s exp=%lld la=%lld cas=%llu "
				    "fetch=%7s cls=%u size=%llu",
				    key, &exp, &la, &lcas, fetch, &cls, &size),
			     7, "%s", line);
		cr_assert_eq(line[strlen(line) - 1], '\n');
		cr_assert_neq(line[strlen(line) - 2], '\r', "%s", line);
		for (i = 0; i < 3 && strcmp(key, enc[i]); i++)
			;
		cr_assert_lt(i, 3, "unexpected key %s", key);
		seen[i] = true;
		cr_expect_eq(exp, i == 1 ? 2000000000 : -1, "%s", line);
		if (cas[i])
			cr_expect_eq(lcas, cas[i], "%s", line);
		cr_expect_str_eq(fetch, i == 2 ? "no" : "yes", "%s", line);
		cr_expect_eq(cls, 1);
		if (!is_memcached())
			/* header, flags (3), key, value */
			cr_expect_eq(size,
				     28 + 4 + strlen(keys[i]) +
					     (i == 1 ? 5 : i == 0),
				     "%s", line);
	}
	cr_expect(seen[0] && seen[1] && seen[2]);
	SEND(c, "lru_crawler metadump 9\r\n");
	EXPECT(c, "END\r\n");
	RT(c, "lru_crawler crawl all\r\n", "OK\r\n");
}

/* Like memcached, metadump and watch refuse to follow other requests in
 * the same read (their replies would still be pending there), a noreply
 * or refused one included; a classic get or an mn before them sends the
 * replies out first. */
Test(stats_groups, metadump_and_watch_after_pipelined_requests)
{
	static const char refused[] =
		"ERROR cannot pipeline other commands before metadump\r\n";

	start();
	set("k", "v", 0);
	SEND(c, "mg foo v\r\nlru_crawler metadump all\r\n");
	EXPECT(c, "EN\r\n");
	EXPECT(c, refused);
	SEND(c, "set a 0 0 1 noreply\r\nx\r\nlru_crawler metadump 9\r\n");
	EXPECT(c, refused);
	SEND(c, "bogus\r\nlru_crawler metadump 9\r\n");
	EXPECT(c, "ERROR\r\n");
	EXPECT(c, refused);
	SEND(c, "get foo\r\nlru_crawler metadump 9\r\n");
	EXPECT(c, "END\r\nEND\r\n");
	SEND(c, "version\r\nmn\r\nlru_crawler metadump 9\r\n");
	EXPECT_N(c, srv.version, strlen(srv.version));
	EXPECT(c, "MN\r\nEND\r\n");
	SEND(c, "version\r\nwatch\r\n");
	EXPECT_N(c, srv.version, strlen(srv.version));
	EXPECT(c, "ERROR cannot pipeline other commands before watch\r\n");
	SYNC(c, &srv);
}

struct churn {
	int port;
	_Atomic bool stop;
	_Atomic int rounds;
};

/* Connections opened, used and closed over and over, on every worker. */
static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	char line[256];

	while (!ch->stop) {
		struct hconn *h = hc_open(ch->port);

		if (!h)
			continue;
		int r = atomic_fetch_add(&ch->rounds, 1);

		if (hc_sendf(h, "set p%d:k 0 0 1\r\nx\r\nget p%d:k\r\n", r % 7,
			     r % 7) == 0)
			while (hc_line(h, line, sizeof(line), H_TIMEOUT_MS) >
				       0 &&
			       strcmp(line, "END\r\n"))
				;
		hc_close(&h);
	}
	return NULL;
}

/* `stats conns` and `stats detail` while other workers' connections come
 * and go and count: race-free (run against a TSan build of rhkvd). */
Test(stats_groups, conns_and_detail_under_churn)
{
	struct churn ch = { 0 };
	struct hconn *watcher;
	pthread_t t[2];
	struct hstats s;
	char line[512];
	long long end;

	start();
	ch.port = srv.port;
	RT(c, "stats detail on\r\n", "OK\r\n");
	/* A watcher that never reads: its lines come from every worker. */
	watcher = hc_open(srv.port);
	cr_assert_not_null(watcher);
	RT(watcher, "watch fetchers mutations evictions\r\n", "OK\r\n");
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, churn_main, &ch), 0);
	end = h_now_ms() + 1500;
	while (h_now_ms() < end) {
		SEND(c, "stats conns\r\n");
		do
			cr_assert_gt(
				hc_line(c, line, sizeof(line), H_TIMEOUT_MS),
				0);
		while (strcmp(line, "END\r\n"));
		SEND(c, "stats detail dump\r\n");
		do
			cr_assert_gt(
				hc_line(c, line, sizeof(line), H_TIMEOUT_MS),
				0);
		while (strcmp(line, "END\r\n"));
	}
	ch.stop = true;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_expect_gt(ch.rounds, 0);
	hc_close(&watcher);
	read_stats("", &s);
	cr_expect_geq(stat_u(&s, "total_connections"),
		      (unsigned long long)atomic_load(&ch.rounds) - 2);
}

/* The next watch line with " type=<type> key=<key> " in it; fails after
 * H_TIMEOUT_MS. Lines of other types and keys (memcached also logs the
 * lookups its storage commands make) are passed over. */
static void watch_line(struct hconn *w, const char *type, const char *key,
		       char *line, size_t cap)
{
	char want[320];

	snprintf(want, sizeof(want), " type=%s key=%s ", type, key);
	for (;;) {
		cr_assert_gt(hc_line(w, line, cap, H_TIMEOUT_MS), 0,
			     "no %s line for %s", type, key);
		cr_assert_eq(strncmp(line, "ts=", 3), 0, "%s", line);
		cr_assert_eq(line[strlen(line) - 1], '\n');
		if (strstr(line, want))
			return;
	}
}

Test(stats_groups, watch)
{
	struct hconn *w;
	struct hstats s;
	char line[512], name[64];
	double ts;
	unsigned long long gid, gid2;

	start();
	RT(c, "watch bogus\r\n", "ERROR\r\n");
	w = hc_open(srv.port);
	cr_assert_not_null(w);
	RT(w, "watch fetchers mutations\r\n", "OK\r\n");
	read_stats("conns", &s);
	snprintf(name, sizeof(name), "%d:state", conn_fd(&s, local_port(w)));
	expect_state(&s, name, "conn_watch");
	set("w:1", "abc", 0);
	RT(c, "get w:1 nx\r\n", "VALUE w:1 3 3\r\nabc\r\nEND\r\n");
	RT(c, "add w:1 0 100 1\r\nx\r\n", "NOT_STORED\r\n");
	watch_line(w, "item_store", "w%3A1", line, sizeof(line));
	cr_assert_eq(sscanf(line, "ts=%lf gid=%llu ", &ts, &gid), 2, "%s",
		     line);
	cr_expect_gt(ts, 1e9);
	cr_expect(strstr(line, " status=stored cmd=set ttl=0 clsid=1 ") &&
			  strstr(line, " size=3\n"),
		  "%s", line);
	watch_line(w, "item_get", "w%3A1", line, sizeof(line));
	cr_assert_eq(sscanf(line, "ts=%lf gid=%llu ", &ts, &gid2), 2);
	cr_expect_gt(gid2, gid);
	cr_expect(strstr(line, " status=found clsid=1 ") &&
			  strstr(line, " size=3\n"),
		  "%s", line);
	watch_line(w, "item_get", "nx", line, sizeof(line));
	cr_expect(strstr(line, " status=not_found clsid=0 ") &&
			  strstr(line, " size=0\n"),
		  "%s", line);
	watch_line(w, "item_store", "w%3A1", line, sizeof(line));
	cr_expect(strstr(line, " status=not_stored cmd=add ttl=100 "), "%s",
		  line);
	/* A meta set logs as the classic command its mode is. */
	RT(c, "ms w:1 2 MA\r\nyz\r\n", "HD\r\n");
	watch_line(w, "item_store", "w%3A1", line, sizeof(line));
	cr_expect(strstr(line, " status=stored cmd=append ttl=0 "), "%s", line);
	/* The watcher stays one: what it sends is not executed. */
	SEND(w, "get w:1\r\n");
	h_sleep_ms(100);
	RT(c, "get w:2\r\n", "END\r\n");
	do {
		cr_assert_gt(hc_line(w, line, sizeof(line), H_TIMEOUT_MS), 0);
		cr_assert_null(strstr(line, " key=w%3A1 "), "%s", line);
	} while (!strstr(line, " key=w%3A2 "));
	hc_close(&w);
}

/* A watcher that does not read loses lines, and is told how many. */
Test(stats_groups, watch_skips_when_full)
{
	static const char *const extra[] = { "--output-limit", "4k", NULL };
	struct hbuf req = { 0 };
	struct hstats s;
	struct hconn *w;
	char line[512];
	bool skipped = false;

	if (is_memcached())
		cr_skip_test("memcached's logger buffers differ");
	cr_assert_eq(srv_start(&srv, extra), 0);
	c = hc_open(srv.port);
	w = hc_open(srv.port);
	cr_assert(c && w);
	RT(w, "watch\r\n", "OK\r\n");
	for (int i = 0; i < 40000; i++)
		hbuf_printf(&req, "get key:%d\r\n", i);
	/* Nobody reads w meanwhile: its socket, output and buffer fill. */
	for (int round = 0; round < 5; round++) {
		SEND_N(c, req.p, req.len);
		for (int i = 0; i < 40000; i++)
			EXPECT(c, "END\r\n");
	}
	hbuf_free(&req);
	while (!skipped && hc_line(w, line, sizeof(line), H_TIMEOUT_MS) > 0)
		skipped = !strncmp(line, "skipped=", 8);
	cr_expect(skipped, "no skipped= line");
	read_stats("", &s);
	cr_expect_eq(stat_u(&s, "log_watchers"), 1);
	cr_expect_gt(stat_u(&s, "log_watcher_skipped"), 0);
	cr_expect_gt(stat_u(&s, "log_watcher_sent"), 0);
	hc_close(&w);
}

/* A metadump larger than the output limit streams, whole, and the
 * requests after it wait for its END. */
Test(stats_groups, metadump_streams)
{
	static const char *const extra[] = { "--output-limit", "4k", NULL };
	struct hbuf req = { 0 };
	static bool seen[3000];
	char line[512];
	int n = 0, k;

	if (is_memcached())
		cr_skip_test("memcached refuses commands pipelined after "
			     "metadump");
	cr_assert_eq(srv_start(&srv, extra), 0);
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	for (int i = 0; i < 3000; i++)
		hbuf_printf(&req, "set key-%d 0 0 1 noreply\r\nx\r\n", i);
	SEND_N(c, req.p, req.len);
	hbuf_free(&req);
	SYNC(c, &srv);
	SEND(c, "lru_crawler metadump all\r\nversion\r\n");
	/* Every key at least once. The dump is a cursor scan, which may
	 * report a key twice when the table resizes meanwhile (its deferred
	 * grow after the 3000 sets can land during the dump): counted once. */
	for (;;) {
		cr_assert_gt(hc_line(c, line, sizeof(line), H_TIMEOUT_MS), 0);
		if (!strcmp(line, "END\r\n"))
			break;
		cr_assert_eq(sscanf(line, "key=key-%d ", &k), 1, "%s", line);
		cr_assert(k >= 0 && k < 3000, "%s", line);
		n += !seen[k];
		seen[k] = true;
	}
	cr_expect_eq(n, 3000);
	EXPECT_N(c, srv.version, strlen(srv.version));
}
