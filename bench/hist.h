/* hist: a log-bucketed latency histogram in the manner of HdrHistogram.
 * Each power-of-two range [2^k, 2^(k+1)) holds 128 linear sub-buckets, so a
 * reported value (the middle of its bucket) is within 1/256 of any value
 * recorded into that bucket. Not thread-safe: one owner per histogram;
 * merge per-thread histograms on read. */
#ifndef RHKV_BENCH_HIST_H
#define RHKV_BENCH_HIST_H

#include <stdint.h>

struct hist;

/* A new empty histogram, or NULL when out of memory. */
struct hist *hist_new(void);
/* Frees *hp and sets it to NULL; NULL is allowed. */
void hist_destroy(struct hist **hp);
void hist_reset(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* Adds every count of src into dst. */
void hist_merge(struct hist *dst, const struct hist *src);
uint64_t hist_count(const struct hist *h);
uint64_t hist_max(const struct hist *h);
/* The value at percentile p (0..100): the middle of the bucket holding the
 * ceil(p/100 * count)-th smallest value, clamped to the recorded maximum;
 * 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);

#endif
