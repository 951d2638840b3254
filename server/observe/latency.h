/*
 * Per-command service-time histograms: one set per worker thread, written
 * only by its owner (relaxed load and store, no read-modify-write, so a hit
 * costs two cache-local stores), read by `stats latency` and the metrics
 * endpoint from any thread, which merge the workers' sets.
 *
 * Buckets are log-linear: values below 32 ns have a bucket each, above that
 * each power of two [2^k, 2^(k+1)) is split into 16 equal sub-buckets, so a
 * reported percentile (the middle of its bucket) is within 1/32 (3%) of the
 * true value. Values from 2^36 ns (69 s) up share the last bucket. Powers of
 * two are bucket boundaries, so Prometheus `le` bounds at 2^k ns are exact.
 */
#ifndef RHKV_SERVER_LATENCY_H
#define RHKV_SERVER_LATENCY_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define LAT_LINEAR   32u /* values with a bucket each */
#define LAT_SUB_BITS 4u
#define LAT_SUB	     (1u << LAT_SUB_BITS)
#define LAT_MAX_LOG2 36u
#define LAT_NBUCKETS (LAT_LINEAR + (LAT_MAX_LOG2 - 5u) * LAT_SUB)

/* Command classes timed separately. */
#define LATENCY_CLASSES(X) \
	X(get)             \
	X(set)             \
	X(delete)          \
	X(incr)            \
	X(touch)           \
	X(scan)            \
	X(other)

enum lat_class {
#define LAT_ENUM(name) LAT_##name,
	LATENCY_CLASSES(LAT_ENUM)
#undef LAT_ENUM
		LAT_NCLASSES
};

extern const char *const lat_class_name[LAT_NCLASSES];

struct latency_hist {
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t buckets[LAT_NBUCKETS];
};

/* A merged, plain copy: what readers compute percentiles from. */
struct latency_snapshot {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t buckets[LAT_NBUCKETS];
};

unsigned int latency_bucket_of(uint64_t ns);
/* The bucket's bounds [lo, hi) in ns. */
uint64_t latency_bucket_lo(unsigned int i);
uint64_t latency_bucket_hi(unsigned int i);

/* Only the owning thread records. */
static inline void latency_record(struct latency_hist *h, uint64_t ns)
{
	_Atomic uint64_t *b = &h->buckets[latency_bucket_of(ns)];

#define LAT_BUMP(p, v)                                                      \
	atomic_store_explicit(                                              \
		(p), atomic_load_explicit((p), memory_order_relaxed) + (v), \
		memory_order_relaxed)
	LAT_BUMP(b, 1);
	LAT_BUMP(&h->count, 1);
	LAT_BUMP(&h->sum_ns, ns);
#undef LAT_BUMP
}

/* A monotonic clock in ns (vDSO: no system call). */
static inline uint64_t latency_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* dst += h (any thread; the owner may be recording meanwhile). */
void latency_add(struct latency_snapshot *dst, const struct latency_hist *h);
/* dst -= base, for `stats reset` baselines. */
void latency_sub(struct latency_snapshot *dst,
		 const struct latency_snapshot *base);
/* The value in ns at percentile p (0..100]: the middle of the bucket holding
 * that rank; 0 when empty. p = 100 gives the top non-empty bucket's upper
 * bound, so "max" is within 3% and never below the true maximum. */
uint64_t latency_percentile(const struct latency_snapshot *s, double p);
/* How many recorded values are below 2^log2 ns (exact: a bucket bound). */
uint64_t latency_count_below_pow2(const struct latency_snapshot *s,
				  unsigned int log2);

#endif
