/*
 * rhkv-cli --stat: samples each server's general and memory stats every
 * interval and prints a line per server, redis-cli --stat's way
 * (left-aligned columns, a header every 20 lines). The
 * intervals are kept on an absolute monotonic schedule, so a slow server
 * delays its line, not the ones after it; the rates divide by the time
 * between the server's own two samples.
 */
#include "cli_stat.h"
#include "cli_code.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEADER_EVERY 20 /* lines between headers, as redis-cli */

/* What one sample of a server holds. */
struct sample {
	int ok;	   /* 0: no sample yet (or the last one failed) */
	double at; /* monotonic seconds */
	uint64_t uptime;
	uint64_t items, used, limit, conns, evictions;
	uint64_t ops;	     /* the sum of the counters in ops_names */
	uint64_t hits, gets; /* get_hits, get_hits + get_misses */
};

struct watched {
	const struct cli_stat_server *sv;
	rhkv *c;
	struct sample last;
};

/* The counters whose sum is "ops": every key a command read, stored,
 * touched, deleted or counted, and the flushes, as memcached counts them
 * (a multi-key get is one per key; cas is in cmd_set). */
static const char *const ops_names[] = {
	"cmd_get",	    "cmd_set",	   "cmd_touch",	  "cmd_flush",
	"cmd_flush_prefix", "cmd_meta",	   "delete_hits", "delete_misses",
	"incr_hits",	    "incr_misses", "decr_hits",	  "decr_misses",
};

int cli_stat_parse_server(const char *word, int default_port,
			  struct cli_stat_server *sv)
{
	const char *host = word, *colon = NULL;
	size_t hlen = strlen(word);
	long port = default_port;

	if (word[0] == '[') { /* [IPV6] or [IPV6]:PORT */
		const char *close = strchr(word, ']');

		if (!close || (close[1] && close[1] != ':'))
			return -1;
		host = word + 1;
		hlen = (size_t)(close - host);
		colon = close[1] ? close + 1 : NULL;
	} else if (word[0] != '/') {
		colon = strrchr(word, ':');
		/* a bare IPv6 address has several colons: no port then */
		if (colon && strchr(word, ':') != colon)
			colon = NULL;
		if (colon)
			hlen = (size_t)(colon - word);
	}
	if (colon) {
		char *end;

		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end)
			return -1;
	}
	if (hlen == 0 || port < 1 || port > 65535)
		return -1;
	sv->host = strndup(host, hlen);
	if (!sv->host)
		return -1;
	sv->port = (int)port;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The value of stat name in st[0..n), as a number; 0 when absent. */
static uint64_t stat_u(const struct rhkv_stat *st, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return strtoull(st[i].value, NULL, 10);
	return 0;
}

/* Reads one sample from w's server (connecting first when needed):
 * 0, or the RHKV_E* code of the failure (the handle is then closed). */
static int take_sample(struct watched *w, const struct rhkv_options *o,
		       struct sample *s)
{
	struct rhkv_stat *st = NULL, *mem = NULL;
	size_t n = 0, nmem = 0;
	int err = 0;

	if (!w->c)
		err = rhkv_connect(&w->c, w->sv->host, w->sv->port, o);
	if (!err)
		err = rhkv_stats(w->c, NULL, &st, &n);
	if (!err)
		err = rhkv_stats(w->c, "memory", &mem, &nmem);
	if (!err) {
		memset(s, 0, sizeof(*s));
		s->ok = 1;
		s->at = now_s();
		s->uptime = stat_u(st, n, "uptime");
		s->items = stat_u(st, n, "curr_items");
		s->conns = stat_u(st, n, "curr_connections");
		s->evictions = stat_u(st, n, "evictions");
		s->hits = stat_u(st, n, "get_hits");
		s->gets = s->hits + stat_u(st, n, "get_misses");
		for (size_t i = 0; i < sizeof(ops_names) / sizeof(*ops_names);
		     i++)
			s->ops += stat_u(st, n, ops_names[i]);
		/* what -m bounds, and -m */
		s->used = stat_u(mem, nmem, "accounted_bytes");
		s->limit = stat_u(mem, nmem, "limit_maxbytes");
	}
	rhkv_stats_free(st, n);
	rhkv_stats_free(mem, nmem);
	return err;
}

/* bytes as redis-cli shows them: 512B, 16.12K, 64.00M, 1.50G. */
static void human(char *buf, size_t cap, uint64_t bytes)
{
	static const char units[] = "KMGTP";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, cap, "%" PRIu64 "B", bytes);
		return;
	}
	while (v >= 1024 && u < (int)sizeof(units) - 2) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.2f%c", v, units[u]);
}

static void print_header(FILE *out, int name_w)
{
	if (name_w)
		fprintf(out, "%-*s ", name_w, "server");
	fprintf(out, "%-10s %-9s %-9s %-7s %-10s %-7s %s\n", "items", "used",
		"limit", "conns", "ops/s", "hits", "evictions");
}

/*
 * The line of sample s after prev: the rates only when prev is a sample of
 * the same server run (counters did not go back: no restart and no
 * `stats reset` since), else "-".
 */
static void print_line(FILE *out, int name_w, const char *name,
		       const struct sample *prev, const struct sample *s)
{
	char used[32], limit[32], ops[32] = "-", hits[32] = "-";
	int rates = prev->ok && s->uptime >= prev->uptime &&
		    s->ops >= prev->ops && s->gets >= prev->gets &&
		    s->hits >= prev->hits && s->evictions >= prev->evictions &&
		    s->at > prev->at;
	uint64_t new_ev = rates ? s->evictions - prev->evictions : 0;

	human(used, sizeof(used), s->used);
	human(limit, sizeof(limit), s->limit);
	if (rates) {
		uint64_t gets = s->gets - prev->gets;

		snprintf(ops, sizeof(ops), "%.0f",
			 (double)(s->ops - prev->ops) / (s->at - prev->at));
		if (gets)
			snprintf(hits, sizeof(hits), "%.1f%%",
				 100.0 * (double)(s->hits - prev->hits) /
					 (double)gets);
	}
	if (name_w)
		fprintf(out, "%-*s ", name_w, name);
	fprintf(out,
		"%-10" PRIu64 " %-9s %-9s %-7" PRIu64 " %-10s %-7s %" PRIu64,
		s->items, used, limit, s->conns, ops, hits, s->evictions);
	if (rates)
		fprintf(out, " (+%" PRIu64 ")", new_ev);
	fputc('\n', out);
}

static void print_error(FILE *out, int name_w, const char *name, const rhkv *c,
			int err)
{
	const char *msg =
		c && *rhkv_errstr(c) ? rhkv_errstr(c) : rhkv_strerror(err);

	if (name_w)
		fprintf(out, "%-*s ", name_w, name);
	fprintf(out, "(error) %s: %s\n", cli_code_name(err), msg);
}

/* The name a server's lines start with, into buf. */
static const char *server_name(const struct cli_stat_server *sv, char *buf,
			       size_t cap)
{
	if (sv->host[0] == '/')
		snprintf(buf, cap, "%s", sv->host);
	else if (strchr(sv->host, ':'))
		snprintf(buf, cap, "[%s]:%d", sv->host, sv->port);
	else
		snprintf(buf, cap, "%s:%d", sv->host, sv->port);
	return buf;
}

/* Sleeps until the monotonic time t (seconds), through signals. */
static void sleep_until(double t)
{
	struct timespec ts = {
		.tv_sec = (time_t)t,
		.tv_nsec = (long)((t - (double)(time_t)t) * 1e9),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* One interval: a line per server. Returns 1 when any failed. */
static int tick(struct watched *w, size_t n, const struct rhkv_options *o,
		int name_w, FILE *out)
{
	int failed = 0;

	for (size_t i = 0; i < n; i++) {
		char name[1100];
		struct sample s;
		int err = take_sample(&w[i], o, &s);

		server_name(w[i].sv, name, sizeof(name));
		if (err) {
			print_error(out, name_w, name, w[i].c, err);
			rhkv_close(w[i].c);
			w[i].c = NULL;
			w[i].last.ok = 0;
			failed = 1;
			continue;
		}
		print_line(out, name_w, name, &w[i].last, &s);
		w[i].last = s;
	}
	fflush(out);
	return failed;
}

int cli_stat_run(const struct cli_stat_server *sv, size_t n,
		 const struct rhkv_options *o, double interval,
		 unsigned long count, FILE *out)
{
	struct watched *w = calloc(n, sizeof(*w));
	int name_w = 0, failed = 0;
	size_t since_header = HEADER_EVERY;
	double next = now_s();

	if (!w) {
		fprintf(stderr, "rhkv-cli: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char name[1100];

		w[i].sv = &sv[i];
		if (n > 1 && (int)strlen(server_name(&sv[i], name,
						     sizeof(name))) > name_w)
			name_w = (int)strlen(name);
	}
	for (unsigned long t = 0; !count || t < count; t++) {
		if (t) {
			next += interval;
			/* after a stall (a server that took longer than the
			 * interval), go on from now rather than catch up */
			if (next < now_s() - interval)
				next = now_s();
			sleep_until(next);
		}
		/* whole intervals together: the header never splits one */
		if (since_header >= HEADER_EVERY) {
			print_header(out, name_w);
			since_header = 0;
		}
		failed |= tick(w, n, o, name_w, out);
		since_header += n;
	}
	for (size_t i = 0; i < n; i++)
		rhkv_close(w[i].c);
	free(w);
	return failed;
}
