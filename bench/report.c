/* report: rhkv-bench's results: the human summary on stdout and the same
 * figures as a JSON object in a file (--json), for scripts and tests. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

static const double pcts[] = { 50, 90, 99, 99.9 };
static const char *const pct_names[] = { "p50", "p90", "p99", "p99_9" };

void bench_report_print(const struct bench_opts *o,
			const struct bench_totals *t, const struct hist *h,
			double secs)
{
	uint64_t gets = t->hits + t->misses;
	printf("rhkv-bench: %s:%u, %u threads x %u conns, pipeline %u, %s\n",
	       o->host, o->port, o->threads, o->conns, o->pipeline,
	       o->rate	      ? "open loop"
	       : o->reconnect ? "closed loop, a new connection per request"
			      : "closed loop");
	printf("duration   %.3f s\n", secs);
	printf("ops        %" PRIu64 " (%.0f ops/s)\n", t->ops,
	       secs > 0 ? (double)t->ops / secs : 0.0);
	printf("gets       %" PRIu64 " (hits %" PRIu64 ", misses %" PRIu64
	       ", hit ratio %.2f%%)\n",
	       gets, t->hits, t->misses,
	       gets ? 100.0 * (double)t->hits / (double)gets : 0.0);
	printf("sets       %" PRIu64 "\n", t->sets);
	printf("latency    ");
	for (unsigned i = 0; i < 4; i++)
		printf("%s %.1f us, ", pct_names[i],
		       (double)hist_percentile(h, pcts[i]) / 1000.0);
	printf("max %.1f us\n", (double)hist_max(h) / 1000.0);
	printf("bytes      in %" PRIu64 ", out %" PRIu64 "\n", t->bytes_in,
	       t->bytes_out);
	printf("errors     %" PRIu64 "\n", t->errors);
}

int bench_report_json(const char *path, const struct bench_opts *o,
		      const struct bench_totals *t, const struct hist *h,
		      double secs)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -errno;
	fprintf(f, "{\n  \"threads\": %u, \"conns\": %u, \"pipeline\": %u,",
		o->threads, o->conns, o->pipeline);
	fprintf(f, " \"rate\": %" PRIu64 ", \"reconnect\": %s,\n", o->rate,
		o->reconnect ? "true" : "false");
	fprintf(f, "  \"duration_s\": %.6f,\n", secs);
	fprintf(f, "  \"ops\": %" PRIu64 ",\n", t->ops);
	fprintf(f, "  \"ops_per_sec\": %.1f,\n",
		secs > 0 ? (double)t->ops / secs : 0.0);
	fprintf(f, "  \"hits\": %" PRIu64 ",\n  \"misses\": %" PRIu64 ",\n",
		t->hits, t->misses);
	fprintf(f, "  \"sets\": %" PRIu64 ",\n", t->sets);
	fprintf(f, "  \"errors\": %" PRIu64 ",\n", t->errors);
	fprintf(f, "  \"bytes_in\": %" PRIu64 ",\n", t->bytes_in);
	fprintf(f, "  \"bytes_out\": %" PRIu64 ",\n", t->bytes_out);
	fprintf(f, "  \"latency_us\": {");
	for (unsigned i = 0; i < 4; i++)
		fprintf(f, "\"%s\": %.3f, ", pct_names[i],
			(double)hist_percentile(h, pcts[i]) / 1000.0);
	fprintf(f, "\"max\": %.3f}\n}\n", (double)hist_max(h) / 1000.0);
	if (fclose(f) != 0)
		return -errno;
	return 0;
}
