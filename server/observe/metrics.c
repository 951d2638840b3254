/*
 * The Prometheus endpoint (--metrics-port): GET /metrics on the listener
 * thread's event base via libevent's evhttp, in the text exposition format
 * 0.0.4. It exports what `stats` shows (observe_stats_each) as rhkv_* series,
 * each with the help text and type its entry carries, plus one histogram of
 * command service time per command class. Scrapes read the workers'
 * relaxed counters and never stop them.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "config.h"
#include "observe.h"

/* Histogram bounds: 2^10 ns (1 µs) to 2^30 ns (1.07 s), doubling. */
#define METRICS_LE_FIRST 10u
#define METRICS_LE_LAST	 30u

/* Each stats kind as a series: the name's suffix and the Prometheus type. */
static const struct {
	const char *suffix, *type;
} prom_kind[] = {
	[STATS_COUNTER] = { "_total", "counter" },
	[STATS_GAUGE] = { "", "gauge" },
	[STATS_SECONDS] = { "_seconds_total", "counter" },
	[STATS_TEXT] = { "_info", "gauge" },
	[STATS_REAL] = { "", "gauge" },
};

static void series(struct evbuffer *b, const char *name, const char *suffix,
		   const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP rhkv_%s%s %s\n", name, suffix, help);
	evbuffer_add_printf(b, "# TYPE rhkv_%s%s %s\n", name, suffix, type);
}

/* The stats sink: one series per entry, its help and type from the entry. */
static void prom_entry(void *arg, const struct stats_entry *e)
{
	const char *suffix = prom_kind[e->kind].suffix;
	char buf[STATS_VALUE_MAX];

	series(arg, e->name, suffix, prom_kind[e->kind].type,
	       e->help ? e->help : e->name);
	if (e->kind == STATS_TEXT) /* Prometheus' way: an info series of 1 */
		evbuffer_add_printf(arg, "rhkv_%s%s{%s=\"%s\"} 1\n", e->name,
				    suffix, e->name, e->s);
	else
		evbuffer_add_printf(arg, "rhkv_%s%s %s\n", e->name, suffix,
				    stats_entry_value(e, buf));
}

static void prom_latency(struct observe *obs, struct evbuffer *b)
{
	static _Thread_local struct latency_snapshot lat[LAT_NCLASSES];

	observe_sum_latency(obs, lat);
	series(b, "command_duration_seconds", "", "histogram",
	       "Time to serve one command, by command class (parsing "
	       "included, socket time not)");
	for (unsigned int k = 0; k < LAT_NCLASSES; k++) {
		const char *cls = lat_class_name[k];
		uint64_t total = 0;

		for (unsigned int i = 0; i < LAT_NBUCKETS; i++)
			total += lat[k].buckets[i];
		for (unsigned int e = METRICS_LE_FIRST; e <= METRICS_LE_LAST;
		     e++)
			evbuffer_add_printf(
				b,
				"rhkv_command_duration_seconds_bucket{command="
				"\"%s\",le=\"%.12g\"} %" PRIu64 "\n",
				cls, (double)(1ull << e) / 1e9,
				latency_count_below_pow2(&lat[k], e));
		evbuffer_add_printf(b,
				    "rhkv_command_duration_seconds_bucket{"
				    "command=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
				    cls, total);
		evbuffer_add_printf(b,
				    "rhkv_command_duration_seconds_sum{command="
				    "\"%s\"} %.9f\n",
				    cls, (double)lat[k].sum_ns / 1e9);
		evbuffer_add_printf(b,
				    "rhkv_command_duration_seconds_count{"
				    "command=\"%s\"} %" PRIu64 "\n",
				    cls, total);
	}
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
	struct observe *obs = arg;
	struct evbuffer *b;
	struct stats_sink sink = { prom_entry, NULL };

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "only GET");
		return;
	}
	b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
		return;
	}
	sink.arg = b;
	observe_stats_each(obs, &sink);
	prom_latency(obs, b);
	stats_hotkeys_metrics(obs, b);
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	(void)arg;
	evhttp_send_error(req, HTTP_NOTFOUND, "try /metrics");
}

int metrics_start(struct observe *obs, struct event_base *base)
{
	const struct config *cfg = obs->cfg;

	if (!cfg->metrics_port)
		return 0;
	obs->metrics = evhttp_new(base);
	if (!obs->metrics)
		return -1;
	/* One small page per scrape: bound what a client may send. */
	evhttp_set_max_headers_size(obs->metrics, 8192);
	evhttp_set_max_body_size(obs->metrics, 0);
	evhttp_set_timeout(obs->metrics, 10);
	evhttp_set_allowed_methods(obs->metrics, EVHTTP_REQ_GET);
	if (evhttp_set_cb(obs->metrics, "/metrics", on_metrics, obs))
		return -1;
	evhttp_set_gencb(obs->metrics, on_other, NULL);
	if (!evhttp_bind_socket_with_handle(obs->metrics, cfg->metrics_listen,
					    (ev_uint16_t)cfg->metrics_port)) {
		log_error("cannot listen for metrics on %s port %d",
			  cfg->metrics_listen, cfg->metrics_port);
		return -1;
	}
	log_info("metrics on http://%s:%d/metrics", cfg->metrics_listen,
		 cfg->metrics_port);
	return 0;
}

void metrics_stop(struct observe *obs)
{
	if (obs->metrics)
		evhttp_free(obs->metrics);
	obs->metrics = NULL;
}
