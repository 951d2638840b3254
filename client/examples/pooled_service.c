/*
 * A multi-threaded service over a cluster: each worker thread takes a
 * cluster from a pool for one request and gives it back, so that T
 * threads share a few clusters (and a few connections per server)
 * instead of holding T of each. A request reads a counter with a fallback
 * to creating it, then bumps it.
 *
 * Usage: pooled_service PORT [PORT...] (127.0.0.1 servers). 8 threads,
 * a pool of 3 clusters, 500 requests each; exits 0 when every counter
 * adds up.
 */
#include <pthread.h>
#include <rhkv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS	 8
#define REQUESTS 500
#define COUNTERS 16

static rhkv_pool *pool;
static int errors;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;

	for (int i = 0; i < REQUESTS; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "hits:%u",
				 (unsigned)rand_r(&seed) % COUNTERS);
		rhkv_cluster *cl;
		int rc = rhkv_pool_get_cluster(pool, 1000, &cl);

		if (rc == 0) {
			rc = rhkv_cluster_incr(cl, key, (size_t)n, 1, NULL);
			if (rc == RHKV_ENOTFOUND) /* first hit: create it */
				rc = rhkv_cluster_add_key(cl, key, (size_t)n,
							  "1", 1, 0, 0, NULL);
			if (rc == RHKV_ENOTSTORED) /* another thread did */
				rc = rhkv_cluster_incr(cl, key, (size_t)n, 1,
						       NULL);
			rhkv_pool_put_cluster(pool, cl);
		}
		if (rc) {
			pthread_mutex_lock(&lock);
			errors++;
			pthread_mutex_unlock(&lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct rhkv_server servers[8];
	pthread_t th[THREADS];
	unsigned long long total = 0;
	rhkv_cluster *cl;
	int n = argc - 1 < 8 ? argc - 1 : 8;

	if (n < 1)
		return 2;
	for (int i = 0; i < n; i++)
		servers[i] = (struct rhkv_server){ .host = "127.0.0.1",
						   .port = atoi(argv[i + 1]),
						   .weight = 1 };
	if (rhkv_pool_new_cluster(&pool, servers, (size_t)n, NULL, NULL, 3))
		return 1;
	for (size_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(i + 1));
	for (size_t i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	if (rhkv_pool_get_cluster(pool, 0, &cl) == 0) {
		for (int k = 0; k < COUNTERS; k++) {
			char key[32], buf[24];
			int kn = snprintf(key, sizeof(key), "hits:%d", k);
			size_t len = 0;

			if (rhkv_cluster_get_into(cl, key, (size_t)kn, buf,
						  sizeof(buf) - 1, &len, NULL,
						  NULL) == 0) {
				buf[len] = '\0';
				total += strtoull(buf, NULL, 10);
			}
		}
		rhkv_pool_put_cluster(pool, cl);
	}
	rhkv_pool_free(pool);
	printf("%llu requests counted, %d errors\n", total, errors);
	return errors || total != THREADS * REQUESTS;
}
