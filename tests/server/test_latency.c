/*
 * Unit tests of the server's latency histograms (server/observe/latency.c): bucket
 * bounds cover every value with at most 1/16 relative width, percentiles on
 * known distributions are within 1/32, counts below powers of two (what the
 * Prometheus `le` buckets export) are exact, and baselines subtract.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "server/observe/latency.h"

static struct latency_hist *h;
static struct latency_snapshot *snap;

static void setup(void)
{
	h = calloc(1, sizeof(*h));
	snap = calloc(2, sizeof(*snap));
	cr_assert(h && snap);
}

static void teardown(void)
{
	free(h);
	free(snap);
}

TestSuite(latency, .init = setup, .fini = teardown, .timeout = 60);

static void check_bucket(uint64_t v)
{
	unsigned int b = latency_bucket_of(v);
	uint64_t lo = latency_bucket_lo(b), hi = latency_bucket_hi(b);

	cr_assert_lt(b, LAT_NBUCKETS, "value %lu: bucket %u", v, b);
	cr_assert(lo <= v && (v < hi || b == LAT_NBUCKETS - 1),
		  "value %lu outside bucket %u [%lu, %lu)", v, b, lo, hi);
	if (b >= LAT_LINEAR && b < LAT_NBUCKETS - 1)
		cr_assert_leq((hi - lo) * 16, lo, "bucket %u too wide", b);
}

Test(latency, buckets_cover_values)
{
	for (uint64_t v = 0; v < 100000; v++)
		check_bucket(v);
	for (unsigned int k = 5; k < 64; k++) {
		uint64_t p = 1ull << k;

		check_bucket(p - 1);
		check_bucket(p);
		check_bucket(p + 1);
		check_bucket(p + p / 3);
	}
	check_bucket(UINT64_MAX);
	/* Bounds are contiguous and increasing. */
	for (unsigned int i = 0; i + 1 < LAT_NBUCKETS; i++)
		cr_assert_eq(latency_bucket_hi(i), latency_bucket_lo(i + 1),
			     "gap after bucket %u", i);
}

static void within(uint64_t got, double want, double tol, const char *what)
{
	cr_assert((double)got >= want * (1 - tol) &&
			  (double)got <= want * (1 + tol),
		  "%s: got %lu, want %.0f +- %.1f%%", what, got, want,
		  tol * 100);
}

Test(latency, percentiles_of_uniform_values)
{
	/* 1 µs .. 1 ms in steps of 10 ns: p-th percentile = p% of 1 ms. */
	for (uint64_t v = 1000; v <= 1000000; v += 10)
		latency_record(h, v);
	latency_add(&snap[0], h);
	cr_assert_eq(snap[0].count, 99901);
	within(latency_percentile(&snap[0], 50), 500500, 1.0 / 32, "p50");
	within(latency_percentile(&snap[0], 90), 900100, 1.0 / 32, "p90");
	within(latency_percentile(&snap[0], 99), 990010, 1.0 / 32, "p99");
	within(latency_percentile(&snap[0], 99.9), 999010, 1.0 / 32, "p99.9");
	cr_assert_geq(latency_percentile(&snap[0], 100), 1000000,
		      "max below the largest value");
	within(latency_percentile(&snap[0], 100), 1000000, 1.0 / 16, "max");
	cr_assert_eq(snap[0].sum_ns, (1000ull + 1000000) * 99901 / 2);
}

Test(latency, percentiles_of_two_modes)
{
	/* 99% at 300 ns, 1% at 5 ms: p99 is fast, p99.9 is slow. */
	for (int i = 0; i < 9900; i++)
		latency_record(h, 300);
	for (int i = 0; i < 100; i++)
		latency_record(h, 5000000);
	latency_add(&snap[0], h);
	within(latency_percentile(&snap[0], 99), 300, 1.0 / 32, "p99");
	within(latency_percentile(&snap[0], 99.9), 5000000, 1.0 / 32, "p99.9");
	cr_assert_eq(latency_percentile(&snap[1], 50), 0, "empty: 0");
}

Test(latency, counts_below_powers_of_two_are_exact)
{
	unsigned int seed = 7;
	uint64_t below[40] = { 0 };

	for (int i = 0; i < 50000; i++) {
		uint64_t v = (uint64_t)rand_r(&seed) % (1u << 22) *
			     (uint64_t)(1 + rand_r(&seed) % 64);

		latency_record(h, v);
		for (unsigned int e = 0; e < 40; e++)
			if (v < (1ull << e))
				below[e]++;
	}
	latency_add(&snap[0], h);
	for (unsigned int e = 5; e < 36; e++)
		cr_assert_eq(latency_count_below_pow2(&snap[0], e), below[e],
			     "below 2^%u", e);
}

Test(latency, baseline_subtracts)
{
	for (int i = 0; i < 100; i++)
		latency_record(h, 1000);
	latency_add(&snap[1], h); /* the baseline */
	for (int i = 0; i < 10; i++)
		latency_record(h, 64000);
	latency_add(&snap[0], h);
	latency_sub(&snap[0], &snap[1]);
	cr_assert_eq(snap[0].count, 10);
	cr_assert_eq(snap[0].sum_ns, 640000);
	within(latency_percentile(&snap[0], 1), 64000, 1.0 / 32,
	       "p1 after the baseline");
}
