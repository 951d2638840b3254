/* Unit tests of bench/hist: percentiles of known synthetic distributions
 * (uniform 1..1e6 ns, exponential values) within 1% of the exact ones, the
 * small exact range, merge and reset. */
#include "hist.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static void assert_within(uint64_t got, double want, double rel)
{
	cr_assert(fabs((double)got - want) <= rel * want + 0.5,
		  "got %llu, want %.1f (+-%.2f%%)", (unsigned long long)got,
		  want, rel * 100);
}

Test(hist, uniform_percentiles_within_one_percent, .timeout = 30)
{
	struct hist *h = hist_new();
	cr_assert_not_null(h);
	for (uint64_t v = 1; v <= 1000000; v++)
		hist_record(h, v);
	cr_assert_eq(hist_count(h), 1000000);
	cr_assert_eq(hist_max(h), 1000000);
	const double ps[] = { 1, 10, 50, 90, 99, 99.9, 99.99 };
	for (unsigned i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		assert_within(hist_percentile(h, ps[i]), ps[i] * 10000, 0.01);
	cr_assert_eq(hist_percentile(h, 100), 1000000);
	hist_destroy(&h);
	cr_assert_null(h);
}

Test(hist, scaled_values_within_one_percent, .timeout = 30)
{
	/* Values k * 1000 for k in 1..100000, shuffled order does not
	 * matter; every percentile lands within 1% of k * 1000. */
	struct hist *h = hist_new();
	for (uint64_t k = 100000; k >= 1; k--)
		hist_record(h, k * 1000);
	for (double p = 0.5; p < 100; p += 0.5)
		assert_within(hist_percentile(h, p), p * 1000 * 1000, 0.01);
	/* Large values too. */
	hist_reset(h);
	hist_record(h, 1ull << 40);
	assert_within(hist_percentile(h, 50), (double)(1ull << 40), 0.01);
	hist_destroy(&h);
}

Test(hist, small_values_exact_and_merge, .timeout = 30)
{
	struct hist *a = hist_new(), *b = hist_new();
	for (uint64_t v = 0; v < 100; v++)
		hist_record(a, v);
	for (uint64_t v = 100; v < 200; v++)
		hist_record(b, v);
	cr_assert_eq(hist_percentile(a, 50), 49);
	hist_merge(a, b);
	cr_assert_eq(hist_count(a), 200);
	cr_assert_eq(hist_max(a), 199);
	cr_assert_eq(hist_percentile(a, 50), 99);
	cr_assert_eq(hist_percentile(a, 100), 199);
	hist_reset(a);
	cr_assert_eq(hist_count(a), 0);
	cr_assert_eq(hist_percentile(a, 99), 0);
	hist_destroy(&a);
	hist_destroy(&b);
}
