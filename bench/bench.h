/* bench: the shared types of rhkv-bench's load engine (bench.c) and its
 * report (report.c). A run has one struct bench_run, read-only once the
 * workers start but for its atomics; each worker owns its connections and
 * counters, and hands latencies to the main thread through a locked
 * interval histogram. */
#ifndef RHKV_BENCH_BENCH_H
#define RHKV_BENCH_BENCH_H

#include "hist.h"
#include "opts.h"
#include "zipf.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

/* Counters of one worker, written by it, read by main: relaxed atomics. */
#define BENCH_COUNTERS(X) \
	X(ops)            \
	X(hits)           \
	X(misses)         \
	X(sets)           \
	X(errors)         \
	X(bytes_in)       \
	X(bytes_out)

struct bench_counters {
#define BENCH_FIELD(name) _Atomic uint64_t name;
	BENCH_COUNTERS(BENCH_FIELD)
#undef BENCH_FIELD
};

struct bench_totals {
#define BENCH_FIELD(name) uint64_t name;
	BENCH_COUNTERS(BENCH_FIELD)
#undef BENCH_FIELD
};

struct bench_run {
	const struct bench_opts *o;
	struct zipf *zipf; /* NULL: uniform keys */
	char *value;	   /* value_max bytes */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	pthread_barrier_t start; /* workers + main */
	_Atomic uint64_t issued; /* requests issued (for --requests) */
	_Atomic int stop;	 /* main asks workers to stop */
	_Atomic unsigned done;	 /* workers finished */
	_Atomic unsigned connect_failures;
	SSL_CTX *tls;		      /* NULL: plain TCP */
	SSL_SESSION *tls_session;     /* --tls-resume: what each resumes */
	_Atomic unsigned tls_resumed; /* connections that resumed it */
	_Atomic int tls_error_said;   /* the first TLS error is printed */
};

struct bench_worker;

/* Starts o->threads workers; 0 or a negative errno. */
int bench_workers_start(struct bench_run *r, struct bench_worker **wsp);
/* Moves what each worker recorded since the last call into h. */
void bench_workers_collect(struct bench_worker *ws, unsigned n, struct hist *h);
void bench_workers_totals(struct bench_worker *ws, unsigned n,
			  struct bench_totals *t);
/* Joins and frees the workers; *wsp set to NULL. */
void bench_workers_join(struct bench_worker **wsp, unsigned n);

/* report.c: the summary on stdout and the JSON file; 0 or -errno. */
void bench_report_print(const struct bench_opts *o,
			const struct bench_totals *t, const struct hist *h,
			double secs);
int bench_report_json(const char *path, const struct bench_opts *o,
		      const struct bench_totals *t, const struct hist *h,
		      double secs);

uint64_t bench_now_ns(void);

#endif
