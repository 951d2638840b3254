/*
 * bench-rhashtable: the command line (see usage()).
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

struct bench_opts opt;

const char *const op_name[NR_OPS] = { "lookup", "insert", "mix90/10" };

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-rhashtable [options]\n"
		   "  --quick           tiny smoke run (a few seconds)\n"
		   "  --sizes LIST      table sizes, e.g. 1000,100k,10M "
		   "(default 1000,100000,10000000)\n"
		   "  --threads LIST    thread counts (default 1,2)\n"
		   "  --seconds S       time per measurement (default 0.5)\n"
		   "  --rounds N        rounds per cell, median shown (default "
		   "3)\n"
		   "  --ops LIST        of lookup,insert,mix (default all)\n"
		   "  --resize-keys N   keys of the resize test (default 1M)\n"
		   "  --resize-seconds S  duration of the re-seed test "
		   "(default 3)\n"
		   "  --grow-reps N     grows measured (default 3)\n"
		   "  --no-resize       skip the resize tests\n"
		   "  --resize-only     only the resize tests\n"
		   "  --verbose         per-round figures\n");
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		die("bad number: %s", s);
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1e6, end++;
	if (*end && *end != ',')
		die("bad number: %s", s);
	return (size_t)v;
}

/* Splits a comma-separated list; returns the count. */
static int parse_list(const char *s, size_t *out, int max)
{
	int n = 0;

	while (*s) {
		if (n == max)
			die("list too long: %s", s);
		out[n++] = parse_size(s);
		s = strchr(s, ',');
		if (!s)
			break;
		s++;
	}
	return n;
}

void parse_opts(int argc, char **argv)
{
	opt.nr_sizes = 3;
	opt.sizes[0] = 1000;
	opt.sizes[1] = 100000;
	opt.sizes[2] = 10000000;
	opt.nr_threads = 2;
	opt.threads[0] = 1;
	opt.threads[1] = 2;
	opt.seconds = 0.5;
	opt.rounds = 3;
	opt.ops[OP_LOOKUP] = opt.ops[OP_INSERT] = opt.ops[OP_MIX] = true;
	opt.resize_keys = 1000000;
	opt.resize_seconds = 3;
	opt.grow_reps = 3;
	opt.resize = true;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		size_t list[BENCH_MAX_THREADS];
		bool arg = true;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--quick")) {
			opt.quick = true;
			opt.nr_sizes = 2;
			opt.sizes[0] = 1000;
			opt.sizes[1] = 20000;
			opt.seconds = 0.03;
			opt.resize_keys = 100000;
			opt.resize_seconds = 0.5;
			opt.grow_reps = 1;
			arg = false;
		} else if (!strcmp(a, "--no-resize")) {
			opt.resize = false;
			arg = false;
		} else if (!strcmp(a, "--resize-only")) {
			opt.ops[OP_LOOKUP] = opt.ops[OP_INSERT] =
				opt.ops[OP_MIX] = false;
			arg = false;
		} else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
			opt.verbose = true;
			arg = false;
		} else if (!v) {
			usage(stderr);
			die("%s: unknown option or missing value", a);
		} else if (!strcmp(a, "--sizes")) {
			opt.nr_sizes =
				parse_list(v, opt.sizes, BENCH_MAX_SIZES);
		} else if (!strcmp(a, "--threads")) {
			opt.nr_threads = parse_list(v, list, BENCH_MAX_THREADS);
			for (int k = 0; k < opt.nr_threads; k++)
				opt.threads[k] = (int)list[k];
		} else if (!strcmp(a, "--seconds")) {
			opt.seconds = strtod(v, NULL);
		} else if (!strcmp(a, "--rounds")) {
			opt.rounds = atoi(v);
		} else if (!strcmp(a, "--ops")) {
			opt.ops[OP_LOOKUP] = strstr(v, "lookup") != NULL;
			opt.ops[OP_INSERT] = strstr(v, "insert") != NULL;
			opt.ops[OP_MIX] = strstr(v, "mix") != NULL;
		} else if (!strcmp(a, "--resize-keys")) {
			opt.resize_keys = parse_size(v);
		} else if (!strcmp(a, "--resize-seconds")) {
			opt.resize_seconds = strtod(v, NULL);
		} else if (!strcmp(a, "--grow-reps")) {
			opt.grow_reps = atoi(v);
		} else {
			usage(stderr);
			die("%s: unknown option", a);
		}
		i += arg;
	}
	if (opt.seconds <= 0 || opt.rounds < 1 || opt.rounds > BENCH_MAX_ROUNDS)
		die("--seconds must be > 0 and --rounds in 1..%d",
		    BENCH_MAX_ROUNDS);
	for (int k = 0; k < opt.nr_threads; k++)
		if (opt.threads[k] < 1 || opt.threads[k] > BENCH_MAX_THREADS)
			die("thread counts must be in 1..%d",
			    BENCH_MAX_THREADS);
	for (int k = 0; k < opt.nr_sizes; k++)
		if (opt.sizes[k] < 1 || opt.sizes[k] > UINT32_MAX / 2)
			die("sizes must be in 1..%u", UINT32_MAX / 2);
	if (opt.resize_keys < 1000 || opt.resize_keys > UINT32_MAX / 4)
		die("--resize-keys must be in 1000..%u", UINT32_MAX / 4);
}
