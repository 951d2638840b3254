/* Unit tests of bench/zipf: the probabilities sum to 1 and fall as the rank
 * grows; sampled frequencies of the top ranks and of the tail match the
 * expected ones within tolerance; theta 0 is uniform. */
#include "zipf.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* A fixed-seed uniform source so the test is repeatable. */
static double unit(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

Test(zipf, rejects_bad_parameters, .timeout = 10)
{
	struct zipf *z;
	cr_assert_eq(zipf_create(&z, 0, 0.99), -EINVAL);
	cr_assert_eq(zipf_create(&z, 10, -1), -EINVAL);
	cr_assert_null(z);
}

Test(zipf, probabilities, .timeout = 10)
{
	struct zipf *z;
	cr_assert_eq(zipf_create(&z, 1000, 0.99), 0);
	double sum = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		sum += zipf_prob(z, i);
		if (i > 0)
			cr_assert_lt(zipf_prob(z, i), zipf_prob(z, i - 1));
	}
	cr_assert(fabs((sum) - (1.0)) <= 1e-9);
	cr_assert(fabs(zipf_prob(z, 0) / zipf_prob(z, 1) - pow(2, 0.99)) <=
		  1e-9);
	zipf_destroy(&z);
	cr_assert_null(z);
}

static void check_frequencies(uint64_t n, double theta)
{
	const uint64_t samples = 2000000;
	struct zipf *z;
	cr_assert_eq(zipf_create(&z, n, theta), 0);
	uint64_t *hits = calloc(n, sizeof(*hits));
	uint64_t seed = 42;
	for (uint64_t i = 0; i < samples; i++) {
		uint64_t r = zipf_sample(z, unit(&seed));
		cr_assert_lt(r, n);
		hits[r]++;
	}
	/* Each of the top 20 ranks within 5 standard deviations; the
	 * tail (ranks >= n/2) in total within 2% of its expected share. */
	double tail = 0, tail_want = 0;
	for (uint64_t i = 0; i < n; i++) {
		double p = zipf_prob(z, i);
		double want = p * (double)samples;
		if (i < 20) {
			double sd = sqrt(want * (1 - p));
			cr_assert(fabs((double)hits[i] - want) <= 5 * sd + 1,
				  "theta %.2f rank %llu: %llu, want %.0f",
				  theta, (unsigned long long)i,
				  (unsigned long long)hits[i], want);
		}
		if (i >= n / 2) {
			tail += (double)hits[i];
			tail_want += want;
		}
	}
	cr_assert(fabs(tail - tail_want) <= 0.02 * tail_want,
		  "tail %.0f, want %.0f", tail, tail_want);
	free(hits);
	zipf_destroy(&z);
}

Test(zipf, frequencies_theta_099, .timeout = 60)
{
	check_frequencies(10000, 0.99);
}

Test(zipf, frequencies_theta_0_is_uniform, .timeout = 60)
{
	check_frequencies(100, 0.0);
}

Test(zipf, frequencies_theta_15, .timeout = 60)
{
	check_frequencies(1000, 1.5);
}
