/* zipf: the inverse-CDF Zipf sampler of zipf.h: a cumulative table and a
 * binary search per sample. */
#include "zipf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct zipf {
	uint64_t n;
	double theta;
	double zeta;
	double *cdf; /* cdf[i] = P(rank <= i); cdf[n-1] == 1 */
};

int zipf_create(struct zipf **zp, uint64_t n, double theta)
{
	*zp = NULL;
	if (n == 0 || !(theta >= 0) || n > (1ull << 32))
		return -EINVAL;
	struct zipf *z = calloc(1, sizeof(*z));
	if (z == NULL)
		return -ENOMEM;
	z->cdf = malloc(n * sizeof(double));
	if (z->cdf == NULL) {
		free(z);
		return -ENOMEM;
	}
	z->n = n;
	z->theta = theta;
	double sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), theta);
		z->cdf[i] = sum;
	}
	z->zeta = sum;
	for (uint64_t i = 0; i < n; i++)
		z->cdf[i] /= sum;
	z->cdf[n - 1] = 1.0;
	*zp = z;
	return 0;
}

void zipf_destroy(struct zipf **zp)
{
	if (zp == NULL || *zp == NULL)
		return;
	free((*zp)->cdf);
	free(*zp);
	*zp = NULL;
}

uint64_t zipf_sample(const struct zipf *z, double u)
{
	uint64_t lo = 0, hi = z->n - 1;
	while (lo < hi) { /* first i with cdf[i] > u */
		uint64_t mid = lo + (hi - lo) / 2;
		if (z->cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

double zipf_prob(const struct zipf *z, uint64_t i)
{
	if (i >= z->n)
		return 0;
	return 1.0 / pow((double)(i + 1), z->theta) / z->zeta;
}
