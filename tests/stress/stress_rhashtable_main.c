/*
 * The rhashtable stress scenarios as a plain executable, for the TSan build
 * (criterion cannot start under TSan on Debian 12) and for running by hand:
 *   stress_rhashtable [DURATION_MS [SEED]]
 * The RHKV_STRESS_* variables of stress_rhashtable.h work here too.
 */
#include "stress_rhashtable.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct stress_opts opts;
	struct stress_result res;
	int failed = 0;

	stress_opts_init(&opts);
	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [DURATION_MS [SEED]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		opts.duration_ms = (unsigned int)strtoul(argv[1], NULL, 0);
	if (argc > 2)
		opts.seed = strtoull(argv[2], NULL, 0);
	if (opts.max_ms < opts.duration_ms)
		opts.max_ms = opts.duration_ms;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (stress_churn(&opts, &res)) {
		fprintf(stderr, "churn FAILED: %s\n", res.msg);
		failed++;
	}
	if (stress_destroy_resizing(&opts, &res)) {
		fprintf(stderr, "destroy while resizing FAILED: %s\n", res.msg);
		failed++;
	}
	if (failed)
		fprintf(stderr, "replay with: %s %u %#" PRIx64 "\n", argv[0],
			opts.duration_ms, opts.seed);
	return failed ? 1 : 0;
}
