/*
 * `stats hotkeys [n]`: the n hottest keys of each class (reads, writes)
 * over the hot-key window, merged from every worker's sketches
 * (hotkeys.h), and the same top 10 as Prometheus series (metrics.c).
 * docs/stats.md describes the lines.
 */
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "observe.h"
#include "stats_internal.h"

/* The report of one class over every worker; false when tracking is off
 * or memory ran out (then nothing to free). */
static bool report(struct observe *obs, enum hotkeys_class cls, size_t n,
		   struct hotkeys_report *r)
{
	hotkeys_report_begin(r, &obs->hotkeys, cls);
	if (!obs->hotkeys.sample)
		return false;
	for (unsigned int i = 0; i < obs->nthreads; i++)
		hotkeys_report_add(r, &obs->threads[i].hot);
	if (hotkeys_report_end(r, n)) {
		hotkeys_report_free(r);
		return false;
	}
	return true;
}

/* n of `stats hotkeys [n]`: HOTKEYS_TOP_DEFAULT without one; false when
 * it is not a number in 1..HOTKEYS_TOP_MAX. */
static bool top_n(const struct stats_query *q, uint64_t *n)
{
	size_t pos = 0;

	*n = HOTKEYS_TOP_DEFAULT;
	if (!q->nargs)
		return true;
	return stats__arg_u64(q->args, q->nargs, &pos, n) && pos == q->nargs &&
	       *n >= 1 && *n <= HOTKEYS_TOP_MAX;
}

const char *stats__hotkeys_args_error(const struct stats_query *q)
{
	uint64_t n;

	return top_n(q, &n) ? NULL
			    : "bad hotkeys count: a number from 1 to 100";
}

/* "<rps> <share> <count> <err> exact|approx <key>[ b]": the key last, as
 * the protocol prints keys (binary ones in base64 with " b"), so that
 * the fixed fields parse whatever the key holds. */
static void put_key(const struct stats_sink *k, const struct hotkeys_report *r,
		    size_t rank)
{
	const struct hk_top *t = &r->top[rank];
	char name[32], key[PROTO_TEXT_KEY_MAX + 1];
	char value[128 + sizeof(key)];
	bool b64;
	size_t kn = proto_text_key(key, t->key, t->nkey, false, &b64);

	key[kn] = '\0';
	snprintf(name, sizeof(name), "%s:%zu", hotkeys_class_name[r->cls],
		 rank + 1);
	snprintf(value, sizeof(value),
		 "%.3f %.6f %" PRIu64 " %" PRIu64 " %s %s%s",
		 (double)t->count / r->seconds,
		 r->requests ? (double)t->count / (double)r->requests : 0.0,
		 t->count, t->err, hotkeys_exact(r, t) ? "exact" : "approx",
		 key, b64 ? " b" : "");
	stats__put_text(k, name,
			"A hot key: requests per second, share of the class's "
			"requests, requests, error bound, whether exact, key",
			value);
}

static void put_class(const struct stats_sink *k,
		      const struct hotkeys_report *r)
{
	const char *cls = hotkeys_class_name[r->cls];
	char name[32];

	snprintf(name, sizeof(name), "%s:requests", cls);
	stats__put_u(k, STATS_GAUGE, name,
		     "Requests of this class (before the colon) in the "
		     "window, every key",
		     r->requests);
	snprintf(name, sizeof(name), "%s:error_bound", cls);
	stats__put_u(k, STATS_GAUGE, name,
		     "Requests a key not listed may have had at most, and "
		     "the most any listed count may be over",
		     r->bound);
	for (size_t i = 0; i < r->n; i++)
		put_key(k, r, i);
}

void stats__hotkeys(struct observe *obs, const struct stats_query *q,
		    const struct stats_sink *k)
{
	struct hotkeys_report r[HOTKEYS_NCLASSES];
	bool ok[HOTKEYS_NCLASSES];
	uint64_t n;

	if (!top_n(q, &n))
		return;
	stats__put_u(k, STATS_GAUGE, "sample",
		     "One request in this many is sampled (0: tracking off)",
		     obs->hotkeys.sample);
	if (!obs->hotkeys.sample)
		return;
	for (int c = 0; c < HOTKEYS_NCLASSES; c++)
		ok[c] = report(obs, (enum hotkeys_class)c, n, &r[c]);
	stats__put_u(k, STATS_GAUGE, "counters",
		     "Counters per worker, class and window", HOTKEYS_COUNTERS);
	stats__put_u(k, STATS_GAUGE, "window",
		     "Seconds of one window (--hotkeys-window)",
		     (uint64_t)obs->cfg->hotkeys_window);
	if (ok[HOTKEYS_READ])
		stats__put_real(k, "seconds",
				"Seconds the counts cover: the current window "
				"and the one before",
				r[HOTKEYS_READ].seconds);
	for (int c = 0; c < HOTKEYS_NCLASSES; c++) {
		if (!ok[c])
			continue;
		put_class(k, &r[c]);
		hotkeys_report_free(&r[c]);
	}
}

/* A Prometheus label value: backslash, double quote and newline escaped
 * (the text format's rules); the key is a text key here. */
static void label_escape(struct evbuffer *b, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\' || p[i] == '"')
			evbuffer_add_printf(b, "\\%c", p[i]);
		else if (p[i] == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, &p[i], 1);
	}
}

/* Whether a text key is also fit for a label as it is: printable ASCII
 * (a label value must be UTF-8; control bytes would confuse readers). */
static bool label_plain(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e)
			return false;
	return true;
}

static void metric_labels(struct evbuffer *b, const struct hotkeys_report *r,
			  size_t rank, bool names)
{
	const struct hk_top *t = &r->top[rank];
	char key[PROTO_TEXT_KEY_MAX];
	bool b64 = !label_plain(t->key, t->nkey);
	size_t kn;

	evbuffer_add_printf(b, "{class=\"%s\",rank=\"%zu\"",
			    hotkeys_class_name[r->cls], rank + 1);
	if (names) {
		kn = proto_text_key(key, t->key, t->nkey, b64, &b64);
		evbuffer_add(b, ",key=\"", 6);
		label_escape(b, key, kn);
		evbuffer_add_printf(b, "\"%s", b64 ? ",key_base64=\"1\"" : "");
	}
	evbuffer_add(b, "}", 1);
}

void stats_hotkeys_metrics(struct observe *obs, struct evbuffer *b)
{
	static const struct {
		const char *name, *help;
	} series[] = {
		{ "hotkey_requests_per_second",
		  "Requests per second of the rank-th hottest key of the class "
		  "over the hot-key window (stats hotkeys)" },
		{ "hotkey_share", "That key's share of the class's requests" },
		{ "hotkey_error_requests_per_second",
		  "How far its rate may be over the true one (with sampling, "
		  "within three standard deviations)" },
	};
	struct hotkeys_report r[HOTKEYS_NCLASSES];
	bool ok[HOTKEYS_NCLASSES];
	bool names = obs->cfg->metrics_hotkey_names;

	if (!obs->hotkeys.sample)
		return;
	for (int c = 0; c < HOTKEYS_NCLASSES; c++)
		ok[c] = report(obs, (enum hotkeys_class)c, HOTKEYS_TOP_DEFAULT,
			       &r[c]);
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
		evbuffer_add_printf(b, "# HELP rhkv_%s %s\n", series[s].name,
				    series[s].help);
		evbuffer_add_printf(b, "# TYPE rhkv_%s gauge\n",
				    series[s].name);
		for (int c = 0; c < HOTKEYS_NCLASSES; c++) {
			for (size_t i = 0; ok[c] && i < r[c].n; i++) {
				const struct hk_top *t = &r[c].top[i];
				double v = (double)t->count / r[c].seconds;

				if (s == 1)
					v = r[c].requests
						    ? (double)t->count /
							      (double)r[c]
								      .requests
						    : 0;
				else if (s == 2)
					v = (double)t->err / r[c].seconds;
				evbuffer_add_printf(b, "rhkv_%s",
						    series[s].name);
				metric_labels(b, &r[c], i, names);
				evbuffer_add_printf(b, " %.6g\n", v);
			}
		}
	}
	for (int c = 0; c < HOTKEYS_NCLASSES; c++)
		if (ok[c])
			hotkeys_report_free(&r[c]);
}
