/* rhkv-bench: a libevent load generator for memcached-protocol servers
 * (rhkvd, memcached: text or meta commands) and rhkvd's binary protocol,
 * over TCP or TLS.
 * main parses the options, resolves the server, starts the workers, prints
 * a progress line per second on stderr, and the summary (stdout, --json)
 * at the end. Exit 64 on bad arguments. */
#include "bench.h"
#include "tls.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_USAGE 64 /* EX_USAGE */

static int resolve(struct bench_run *r, const struct bench_opts *o)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char port[16];
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", o->port);
	int rc = getaddrinfo(o->host, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "rhkv-bench: %s: %s\n", o->host,
			gai_strerror(rc));
		return -1;
	}
	memcpy(&r->addr, res->ai_addr, res->ai_addrlen);
	r->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void progress(unsigned sec, const struct bench_totals *now,
		     const struct bench_totals *before, const struct hist *h,
		     double dt)
{
	uint64_t ops = now->ops - before->ops;
	uint64_t hits = now->hits - before->hits;
	uint64_t gets = hits + now->misses - before->misses;
	fprintf(stderr,
		"[%4us] %10.0f ops/s  hit %6.2f%%  p99 %8.1f us  errors %lu\n",
		sec, dt > 0 ? (double)ops / dt : 0.0,
		gets ? 100.0 * (double)hits / (double)gets : 0.0,
		(double)hist_percentile(h, 99) / 1000.0,
		(unsigned long)(now->errors - before->errors));
}

/* Prints a line a second until the run ends; returns the run's seconds. */
static double watch(struct bench_run *r, struct bench_worker *ws,
		    struct hist *total, struct bench_totals *final)
{
	const struct bench_opts *o = r->o;
	struct hist *tick = hist_new();
	struct bench_totals before, now;
	uint64_t t0 = bench_now_ns(), last = t0;
	uint64_t end = t0 + (uint64_t)(o->duration * 1e9);
	memset(&before, 0, sizeof(before));
	for (unsigned sec = 1;; sec++) {
		uint64_t next = t0 + sec * 1000000000ull;
		int finish = 0;
		if (o->requests == 0 && next >= end) {
			next = end;
			finish = 1;
		}
		while (bench_now_ns() < next &&
		       atomic_load(&r->done) < o->threads)
			sleep_until(bench_now_ns() + 10000000u < next
					    ? bench_now_ns() + 10000000u
					    : next);
		if (atomic_load(&r->done) >= o->threads)
			finish = 1;
		uint64_t t = bench_now_ns();
		if (finish)
			atomic_store(&r->stop, 1);
		bench_workers_totals(ws, o->threads, &now);
		if (tick != NULL) {
			hist_reset(tick);
			bench_workers_collect(ws, o->threads, tick);
			hist_merge(total, tick);
			progress(sec, &now, &before, tick,
				 (double)(t - last) / 1e9);
		}
		before = now;
		last = t;
		if (finish) {
			*final = now;
			hist_destroy(&tick);
			return (double)(t - t0) / 1e9;
		}
	}
}

static int run(const struct bench_opts *o)
{
	struct bench_run r;
	memset(&r, 0, sizeof(r));
	r.o = o;
	if (resolve(&r, o) != 0)
		return 1;
	if (o->tls && bench_tls_init(&r) != 0) {
		bench_tls_free(&r);
		return 1;
	}
	r.value = malloc(o->value_max);
	struct hist *total = hist_new();
	if (r.value == NULL || total == NULL)
		goto oom;
	memset(r.value, 'x', o->value_max);
	if (o->zipf_theta >= 0 &&
	    zipf_create(&r.zipf, o->keys, o->zipf_theta) != 0)
		goto oom;
	pthread_barrier_init(&r.start, NULL, o->threads + 1);
	struct bench_worker *ws = NULL;
	if (bench_workers_start(&r, &ws) != 0)
		goto oom;
	pthread_barrier_wait(&r.start);
	int rc = 0;
	if (atomic_load(&r.connect_failures) != 0) {
		fprintf(stderr, "rhkv-bench: %u connections to %s:%u failed\n",
			atomic_load(&r.connect_failures), o->host, o->port);
		atomic_store(&r.stop, 1);
		rc = 1;
	}
	/* Figures are read at the stop; replies after it are left out. */
	struct bench_totals t;
	memset(&t, 0, sizeof(t));
	double secs = rc == 0 ? watch(&r, ws, total, &t) : 0;
	bench_workers_join(&ws, o->threads);
	pthread_barrier_destroy(&r.start);
	/* A server may refuse to resume (no cache, single-use tickets):
	 * the run then measured full handshakes, which the figures hide. */
	if (o->tls_resume)
		fprintf(stderr,
			"rhkv-bench: %u of %u TLS connections resumed the "
			"session\n",
			atomic_load(&r.tls_resumed), o->threads * o->conns);
	if (rc == 0) {
		bench_report_print(o, &t, total, secs);
		if (o->json_path != NULL &&
		    bench_report_json(o->json_path, o, &t, total, secs) != 0) {
			fprintf(stderr, "rhkv-bench: %s: %s\n", o->json_path,
				strerror(errno));
			rc = 1;
		}
	}
	free(r.value);
	zipf_destroy(&r.zipf);
	hist_destroy(&total);
	bench_tls_free(&r);
	return rc;
oom:
	fprintf(stderr, "rhkv-bench: out of memory\n");
	bench_tls_free(&r);
	free(r.value);
	zipf_destroy(&r.zipf);
	hist_destroy(&total);
	return 1;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	char err[256];
	if (bench_opts_parse(&o, argc, argv, err, sizeof(err)) != 0) {
		fprintf(stderr, "rhkv-bench: %s\n%s", err, bench_usage);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(bench_usage, stdout);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	return run(&o);
}
