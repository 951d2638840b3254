/* zipf: an exact Zipf(theta) sampler over ranks 0..n-1 by inverse CDF.
 * P(rank i) = (1/(i+1)^theta) / sum_j 1/(j+1)^theta. The table is built once
 * (O(n) time and 8n bytes) and then only read, so threads may share it.
 * Pure: the caller supplies the uniform random number. */
#ifndef RHKV_BENCH_ZIPF_H
#define RHKV_BENCH_ZIPF_H

#include <stdint.h>

struct zipf;

/* 0 and *zp set, or -EINVAL (n == 0, theta < 0) or -ENOMEM. */
int zipf_create(struct zipf **zp, uint64_t n, double theta);
void zipf_destroy(struct zipf **zp);
/* The rank for u in [0, 1). */
uint64_t zipf_sample(const struct zipf *z, double u);
/* The exact probability of rank i. */
double zipf_prob(const struct zipf *z, uint64_t i);

#endif
