/* hist: the log-bucketed histogram of hist.h. Values below 256 have a
 * bucket each; above, 128 linear sub-buckets per power of two, so the bucket
 * width is at most 1/128 of its lower bound. */
#include "hist.h"

#include <stdlib.h>
#include <string.h>

#define HIST_SUB_BITS 7
#define HIST_SUB      (1u << HIST_SUB_BITS) /* sub-buckets per power of 2 */
#define HIST_LINEAR   (2u * HIST_SUB)	    /* values with a bucket each */
#define HIST_NBUCKETS (HIST_LINEAR + (64u - 8u) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t max;
	uint64_t buckets[HIST_NBUCKETS];
};

static unsigned bucket_of(uint64_t v)
{
	if (v < HIST_LINEAR)
		return (unsigned)v;
	unsigned k = 63u - (unsigned)__builtin_clzll(v); /* k >= 8 */
	unsigned sub = (unsigned)(v >> (k - HIST_SUB_BITS)) - HIST_SUB;
	return HIST_LINEAR + (k - 8u) * HIST_SUB + sub;
}

/* The middle of bucket i. */
static uint64_t bucket_mid(unsigned i)
{
	if (i < HIST_LINEAR)
		return i;
	unsigned k = (i - HIST_LINEAR) / HIST_SUB + 8u;
	unsigned sub = (i - HIST_LINEAR) % HIST_SUB;
	uint64_t width = 1ull << (k - HIST_SUB_BITS);
	uint64_t lo = (uint64_t)(HIST_SUB + sub) * width;
	return lo + width / 2;
}

struct hist *hist_new(void)
{
	return calloc(1, sizeof(struct hist));
}

void hist_destroy(struct hist **hp)
{
	if (hp == NULL)
		return;
	free(*hp);
	*hp = NULL;
}

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_record(struct hist *h, uint64_t v)
{
	h->buckets[bucket_of(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_count(const struct hist *h)
{
	return h->count;
}

uint64_t hist_max(const struct hist *h)
{
	return h->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (h->count == 0)
		return 0;
	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t v = bucket_mid(i);
			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}
