/*
 * Observability of rhkvd: `stats latency` (per-command service-time
 * histograms, merged over worker threads, reset by `stats reset`) and the
 * Prometheus endpoint (--metrics-port): the same counters as `stats`, every
 * series with # HELP and # TYPE lines, one histogram per command class
 * whose buckets are cumulative and whose +Inf bucket equals its count.
 * memcached has neither: the tests skip there.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static struct srv srv;
static struct hconn *c;
static struct hbuf page;

static void teardown(void)
{
	int status;

	hbuf_free(&page);
	if (!srv.pid)
		return;
	hc_close(&c);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

TestSuite(observability, .fini = teardown, .timeout = 60);

static void start(const char *const *extra)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("stats latency and --metrics-port are rhkvd's; "
			     "the server under test is memcached");
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

static void read_stats(const char *arg, struct hstats *s)
{
	cr_assert_eq(hc_stats(c, arg, s, H_TIMEOUT_MS), 0,
		     "stats %s: no good reply", arg);
}

static double stat_of(const struct hstats *s, const char *name)
{
	const char *v = hstats_get(s, name);

	cr_assert_not_null(v, "no stat %s", name);
	return strtod(v, NULL);
}

static void check_percentiles(const struct hstats *s, const char *cls)
{
	static const char *const order[] = { "p50",   "p90",	"p99",
					     "p99.9", "p99.99", "max" };
	char name[48];
	double prev = 0;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		double v;

		snprintf(name, sizeof(name), "%s:%s_us", cls, order[i]);
		v = stat_of(s, name);
		cr_assert(v > 0 && v >= prev, "%s = %g after %g", name, v,
			  prev);
		prev = v;
	}
	snprintf(name, sizeof(name), "%s:mean_us", cls);
	cr_assert(stat_of(s, name) > 0 && stat_of(s, name) <= prev * 1.07,
		  "%s = %g, max %g", name, stat_of(s, name), prev);
}

Test(observability, stats_latency_counts_each_command_class)
{
	struct hstats s;

	start(NULL);
	for (int i = 0; i < 10; i++) {
		hc_sendf(c, "set k%d 0 0 1\r\nx\r\n", i);
		EXPECT(c, "STORED\r\n");
	}
	for (int i = 0; i < 100; i++) {
		/* Half hits, half misses; a multi-key get counts once. */
		char want[32];

		hc_sendf(c, "get k%d k%d\r\n", i % 10, 100 + i);
		snprintf(want, sizeof(want), "VALUE k%d 0 1\r\n", i % 10);
		EXPECT_N(c, want, strlen(want));
		EXPECT(c, "x\r\nEND\r\n");
	}
	RT(c, "delete k1\r\n", "DELETED\r\n");
	RT(c, "delete k1\r\n", "NOT_FOUND\r\n");
	RT(c, "incr nope 1\r\n", "NOT_FOUND\r\n");
	read_stats("latency", &s);
	cr_assert_eq(stat_of(&s, "get:count"), 100);
	cr_assert_eq(stat_of(&s, "set:count"), 10);
	cr_assert_eq(stat_of(&s, "delete:count"), 2);
	cr_assert_eq(stat_of(&s, "incr:count"), 1);
	cr_assert_eq(stat_of(&s, "touch:count"), 0);
	check_percentiles(&s, "get");
	check_percentiles(&s, "set");

	/* stats reset starts the histograms over. */
	RT(c, "stats reset\r\n", "RESET\r\n");
	RT(c, "get k2\r\n", "VALUE k2 0 1\r\nx\r\nEND\r\n");
	read_stats("latency", &s);
	cr_assert_eq(stat_of(&s, "get:count"), 1);
	cr_assert_eq(stat_of(&s, "set:count"), 0);
}

/* A port that was free a moment ago. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* GET PATH over HTTP/1.0 into `page`; returns the status code. */
static int http_get(int port, const char *path)
{
	struct hconn *h = hc_open(port);
	char buf[4096];
	int code = 0;
	size_t n;

	cr_assert_not_null(h, "connect to the metrics port: errno %d", errno);
	hc_sendf(h, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
	page.len = 0;
	while ((n = hc_read(h, buf, sizeof(buf), H_TIMEOUT_MS)) > 0) {
		hbuf_add(&page, buf, n);
		if (n < sizeof(buf))
			break;
	}
	hbuf_add(&page, "", 1);
	hc_close(&h);
	cr_assert_eq(sscanf(page.p, "HTTP/1.%*d %d", &code), 1,
		     "not an HTTP reply: %.80s", page.p);
	return code;
}

/* The value of the series line starting with NAME (labels included). */
static double series(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = page.p; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, name, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	cr_assert_fail("no series %s in the page", name);
	return 0;
}

/* Whether the page has the line "# KIND FAMILY TEXT" with a text (TYPE:
 * the text `type`, when set). */
static bool has_comment(const char *kind, const char *family, size_t n,
			const char *type)
{
	char want[160];
	const char *p;

	snprintf(want, sizeof(want), "\n# %s %.*s ", kind, (int)n, family);
	p = strstr(page.p, want);
	if (!p)
		return false;
	p += strlen(want);
	if (type)
		return !strncmp(p, type, strlen(type)) &&
		       p[strlen(type)] == '\n';
	return *p && *p != '\n';
}

/*
 * Every series has its family's # HELP (with a text) and # TYPE lines; a
 * histogram's _bucket, _sum and _count series belong to the family without
 * the suffix. Every `stats` entry has a series.
 */
static void check_help_and_type(const struct hstats *s)
{
	static const char *const hist[] = { "_bucket", "_sum", "_count" };
	static const char *const suffix[] = { " ", "_total ", "_seconds_total ",
					      "_info{" };
	const char *body = strstr(page.p, "\r\n\r\n");
	char want[160];
	int nseries = 0;

	cr_assert_not_null(body);
	for (const char *p = body + 3; p; p = strchr(p + 1, '\n')) {
		size_t n = strcspn(p + 1, "{ \n");
		const char *type = NULL;

		if (strncmp(p + 1, "rhkv_", 5))
			continue;
		nseries++;
		if (!has_comment("TYPE", p + 1, n, NULL)) {
			for (size_t i = 0; i < 3 && !type; i++) {
				size_t k = strlen(hist[i]);

				if (n > k &&
				    !strncmp(p + 1 + n - k, hist[i], k))
					type = hist[i];
			}
			cr_assert_not_null(type, "no # TYPE for %.*s", (int)n,
					   p + 1);
			n -= strlen(type);
			cr_assert(has_comment("TYPE", p + 1, n, "histogram"),
				  "no # TYPE histogram for %.*s", (int)n,
				  p + 1);
		}
		cr_assert(has_comment("HELP", p + 1, n, NULL),
			  "no # HELP for %.*s", (int)n, p + 1);
	}
	cr_assert_gt(nseries, s->n);
	for (int i = 0; i < s->n; i++) {
		bool found = false;

		for (size_t k = 0; k < 4 && !found; k++) {
			snprintf(want, sizeof(want), "\nrhkv_%s%s", s->name[i],
				 suffix[k]);
			found = strstr(page.p, want) != NULL;
		}
		cr_assert(found, "stat %s has no series", s->name[i]);
	}
}

Test(observability, metrics_endpoint_exports_stats_and_histograms)
{
	char port[16], name[160];
	const char *extra[] = { "--metrics-port", port, NULL };
	int mport = free_port();
	double prev = 0;
	struct hstats s;

	snprintf(port, sizeof(port), "%d", mport);
	start(extra);
	for (int i = 0; i < 50; i++) {
		hc_sendf(c, "set m%d 0 0 2\r\nab\r\n", i);
		EXPECT(c, "STORED\r\n");
		char want[32];

		hc_sendf(c, "get m%d nope\r\n", i);
		snprintf(want, sizeof(want), "VALUE m%d 0 2\r\n", i);
		EXPECT_N(c, want, strlen(want));
		EXPECT(c, "ab\r\nEND\r\n");
	}
	read_stats("", &s);

	cr_assert_eq(http_get(mport, "/metrics"), 200, "%.200s", page.p);
	cr_assert_not_null(strstr(page.p, "Content-Type: text/plain; "
					  "version=0.0.4"),
			   "%.300s", page.p);
	cr_assert_eq(series("rhkv_cmd_get_total"), stat_of(&s, "cmd_get"));
	cr_assert_eq(series("rhkv_get_hits_total"), 50);
	cr_assert_eq(series("rhkv_get_misses_total"), 50);
	cr_assert_eq(series("rhkv_curr_items"), 50);
	cr_assert_eq(series("rhkv_threads"), 2);
	check_help_and_type(&s);
	cr_assert_not_null(strstr(page.p, "# TYPE rhkv_command_duration_"
					  "seconds histogram"));
	for (unsigned int e = 10; e <= 30; e++) {
		double v;

		snprintf(name, sizeof(name),
			 "rhkv_command_duration_seconds_bucket{command=\"get\","
			 "le=\"%.12g\"}",
			 (double)(1ull << e) / 1e9);
		v = series(name);
		cr_assert_geq(v, prev, "%s not cumulative", name);
		prev = v;
	}
	cr_assert_eq(series("rhkv_command_duration_seconds_bucket{command="
			    "\"get\",le=\"+Inf\"}"),
		     50);
	cr_assert_eq(series("rhkv_command_duration_seconds_count{command="
			    "\"get\"}"),
		     50);
	cr_assert_gt(series("rhkv_command_duration_seconds_sum{command="
			    "\"set\"}"),
		     0);

	cr_assert_eq(http_get(mport, "/"), 404);
	cr_assert_eq(http_get(mport, "/metrics/x"), 404);
	/* The cache port is untouched by scrapes. */
	SYNC(c, &srv);
}

/* The hot keys' series: the top 10 per class by rank; the key itself only
 * with --metrics-hotkey-names (the endpoint has no password), escaped as
 * Prometheus label values are, a binary key in base64. */
static void hotkey_metrics(bool names)
{
	char port[16];
	const char *extra[] = {
		"--metrics-port", port, "--hotkeys-sample", "1", NULL, NULL
	};
	int mport = free_port();

	snprintf(port, sizeof(port), "%d", mport);
	extra[4] = names ? "--metrics-hotkey-names" : NULL;
	start(extra);
	for (int i = 0; i < 30; i++) {
		hc_sendf(c, "get k%d\r\n", i);
		EXPECT(c, "END\r\n");
		for (int j = 0; j <= i % 3; j++) {
			RT(c, "get a\"b\\c\r\n", "END\r\n");
			if (j) /* fewer than a"b\c: ranks 1 and 2 */
				RT(c, "mg AGEgYgo= b v\r\n", "EN\r\n");
		}
	}
	RT(c, "set w 0 0 1\r\n1\r\n", "STORED\r\n");
	cr_assert_eq(http_get(mport, "/metrics"), 200);
	cr_assert_not_null(strstr(page.p, "# TYPE rhkv_hotkey_requests_per_"
					  "second gauge"));
	/* 12 read keys seen, 10 listed; one write key. */
	cr_assert_not_null(strstr(page.p, "rank=\"10\""));
	cr_assert_null(strstr(page.p, "rank=\"11\""));
	if (!names) {
		cr_assert_gt(series("rhkv_hotkey_requests_per_second{class="
				    "\"read\",rank=\"1\"}"),
			     0);
		cr_assert_eq(series("rhkv_hotkey_share{class=\"write\","
				    "rank=\"1\"}"),
			     1);
		cr_assert_null(strstr(page.p, "key="), "a key name leaked");
		return;
	}
	cr_assert_gt(series("rhkv_hotkey_requests_per_second{class=\"read\","
			    "rank=\"1\",key=\"a\\\"b\\\\c\"}"),
		     0);
	cr_assert_gt(series("rhkv_hotkey_requests_per_second{class=\"read\","
			    "rank=\"2\",key=\"AGEgYgo=\",key_base64=\"1\"}"),
		     0);
	cr_assert_eq(series("rhkv_hotkey_share{class=\"write\",rank=\"1\","
			    "key=\"w\"}"),
		     1);
}

Test(observability, metrics_hotkeys_by_rank)
{
	hotkey_metrics(false);
}

Test(observability, metrics_hotkeys_named_only_when_asked)
{
	hotkey_metrics(true);
}
