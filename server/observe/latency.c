/* Latency histograms: bucket arithmetic, merging and percentiles. */
#include "latency.h"

const char *const lat_class_name[LAT_NCLASSES] = {
#define LAT_NAME(name) #name,
	LATENCY_CLASSES(LAT_NAME)
#undef LAT_NAME
};

unsigned int latency_bucket_of(uint64_t ns)
{
	unsigned int k;

	if (ns < LAT_LINEAR)
		return (unsigned int)ns;
	if (ns >> LAT_MAX_LOG2)
		return LAT_NBUCKETS - 1;
	k = 63u - (unsigned int)__builtin_clzll(ns); /* 5 <= k < 36 */
	return LAT_LINEAR + (k - 5u) * LAT_SUB +
	       (unsigned int)(ns >> (k - LAT_SUB_BITS)) - LAT_SUB;
}

uint64_t latency_bucket_lo(unsigned int i)
{
	unsigned int k, sub;

	if (i < LAT_LINEAR)
		return i;
	k = (i - LAT_LINEAR) / LAT_SUB + 5u;
	sub = (i - LAT_LINEAR) % LAT_SUB;
	return (uint64_t)(LAT_SUB + sub) << (k - LAT_SUB_BITS);
}

uint64_t latency_bucket_hi(unsigned int i)
{
	if (i < LAT_LINEAR)
		return i + 1;
	if (i == LAT_NBUCKETS - 1)
		return UINT64_MAX;
	return latency_bucket_lo(i + 1);
}

void latency_add(struct latency_snapshot *dst, const struct latency_hist *h)
{
	dst->count += atomic_load_explicit(&h->count, memory_order_relaxed);
	dst->sum_ns += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
	for (unsigned int i = 0; i < LAT_NBUCKETS; i++)
		dst->buckets[i] += atomic_load_explicit(&h->buckets[i],
							memory_order_relaxed);
}

void latency_sub(struct latency_snapshot *dst,
		 const struct latency_snapshot *base)
{
	dst->count -= base->count;
	dst->sum_ns -= base->sum_ns;
	for (unsigned int i = 0; i < LAT_NBUCKETS; i++)
		dst->buckets[i] -= base->buckets[i];
}

uint64_t latency_percentile(const struct latency_snapshot *s, double p)
{
	uint64_t total = 0, rank, seen = 0;

	/* The buckets, not count: a reader racing the owner can see a bucket
	 * bumped before count; the buckets alone are self-consistent. */
	for (unsigned int i = 0; i < LAT_NBUCKETS; i++)
		total += s->buckets[i];
	if (!total)
		return 0;
	if (p >= 100) {
		for (unsigned int i = LAT_NBUCKETS; i-- > 0;)
			if (s->buckets[i])
				return i == LAT_NBUCKETS - 1
					       ? latency_bucket_lo(i)
					       : latency_bucket_hi(i) - 1;
	}
	rank = (uint64_t)(p / 100.0 * (double)total + 0.999999);
	if (rank == 0)
		rank = 1;
	for (unsigned int i = 0; i < LAT_NBUCKETS; i++) {
		seen += s->buckets[i];
		if (seen >= rank) {
			uint64_t lo = latency_bucket_lo(i);
			uint64_t hi = latency_bucket_hi(i);

			return i < LAT_LINEAR || i == LAT_NBUCKETS - 1
				       ? lo
				       : lo + (hi - lo) / 2;
		}
	}
	return 0;
}

uint64_t latency_count_below_pow2(const struct latency_snapshot *s,
				  unsigned int log2)
{
	uint64_t n = 0;
	uint64_t bound = log2 >= 64 ? UINT64_MAX : 1ull << log2;

	for (unsigned int i = 0; i < LAT_NBUCKETS; i++) {
		if (latency_bucket_hi(i) > bound)
			break;
		n += s->buckets[i];
	}
	return n;
}
