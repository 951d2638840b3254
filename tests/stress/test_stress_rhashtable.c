/*
 * Criterion wrappers of the rhashtable stress scenarios
 * (stress_rhashtable.h); stress_rhashtable_main.c runs the same ones
 * without criterion in TSan builds. RHKV_STRESS_MS and RHKV_STRESS_SEED
 * change the run time and the seed.
 */
#include "stress_rhashtable.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>

Test(stress_rhashtable, churn_grow_shrink_reseed, .timeout = 240)
{
	struct stress_opts opts;
	struct stress_result res;
	int rc;

	stress_opts_init(&opts);
	rc = stress_churn(&opts, &res);
	cr_assert_eq(rc, 0, "churn (seed %#llx): %s",
		     (unsigned long long)opts.seed, res.msg);
	cr_log_info("churn: %u ms, %lu ops, %lu grows, %lu shrinks, %lu "
		    "re-seeds",
		    res.elapsed_ms, res.ops, res.grows, res.shrinks,
		    res.reseeds);
	cr_expect_geq(res.grows, opts.min_grows);
	cr_expect_geq(res.shrinks, opts.min_shrinks);
	cr_expect_geq(res.reseeds, opts.min_reseeds);
}

Test(stress_rhashtable, free_and_destroy_while_resizing, .timeout = 240)
{
	struct stress_opts opts;
	struct stress_result res;
	int rc;

	stress_opts_init(&opts);
	rc = stress_destroy_resizing(&opts, &res);
	cr_assert_eq(rc, 0, "destroy (seed %#llx): %s",
		     (unsigned long long)opts.seed, res.msg);
	cr_expect_gt(res.caught, 0);
}
