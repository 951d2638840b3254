/*
 * rht-demo: shows the rhashtable of common/ at work on its own. T threads
 * insert N keys each into a table that starts at 64 buckets, then look
 * every key up (counting any that is missing), then remove them all; the
 * table's size, grows and shrinks are printed after each phase. During
 * each phase the main thread reads the table's figures while the resize
 * worker grows or shrinks it.
 *
 * Every thread that touches the table, the main thread included (its
 * statistics calls take the RCU read lock), is registered with RCU first:
 * a grace period does not wait for an unregistered reader, so the worker
 * could free a bucket table under it.
 */
#include "common/rhashtable.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct demo_obj {
	uint64_t key;
	struct rhash_head node;
	struct rcu_head rcu;
};

static const struct rhashtable_params demo_params = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct demo_obj, key),
	.head_offset = offsetof(struct demo_obj, node),
	.automatic_shrinking = true,
};

struct demo {
	struct rhashtable ht;
	struct demo_obj *objs;
	unsigned long keys_per_thread;
	int phase; /* 0 insert, 1 lookup, 2 remove */
	_Atomic unsigned long missing;
	_Atomic int running;	       /* workers of the phase not done yet */
	unsigned long reads, resizing; /* main's reads in the phase */
};

struct worker {
	struct demo *demo;
	unsigned long first;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct demo *d = w->demo;

	rhkv_rcu_register_thread();
	for (unsigned long i = w->first; i < w->first + d->keys_per_thread;
	     i++) {
		struct demo_obj *obj = &d->objs[i];

		if (d->phase == 0) {
			if (rhashtable_lookup_insert_fast(&d->ht, &obj->node,
							  demo_params))
				abort();
		} else if (d->phase == 1) {
			if (rhashtable_lookup_fast(&d->ht, &obj->key,
						   demo_params) != obj)
				atomic_fetch_add(&d->missing, 1);
		} else if (rhashtable_remove_fast(&d->ht, &obj->node,
						  demo_params)) {
			abort();
		}
	}
	rhkv_rcu_unregister_thread();
	atomic_fetch_sub(&d->running, 1);
	return NULL;
}

static double run_phase(struct demo *d, int phase, int threads)
{
	struct worker w[64];
	struct timespec t0, t1;

	d->phase = phase;
	d->reads = d->resizing = 0;
	atomic_store(&d->running, threads);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int t = 0; t < threads; t++) {
		w[t] = (struct worker){ .demo = d,
					.first = t * d->keys_per_thread };
		if (pthread_create(&w[t].tid, NULL, worker_main, &w[t])) {
			fprintf(stderr, "rht-demo: cannot start a thread\n");
			exit(1);
		}
	}
	/* Meanwhile the main thread reads the table's figures, which walks
	 * its chain of bucket tables while the worker grows or shrinks it. */
	while (atomic_load(&d->running)) {
		struct rhashtable_stats st;

		rhashtable_get_stats(&d->ht, &st);
		d->reads++;
		d->resizing += st.resizing;
		nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(w[t].tid, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static void report(struct demo *d, const char *what, double secs,
		   unsigned long ops)
{
	struct rhashtable_stats st;

	rhashtable_get_stats(&d->ht, &st);
	printf("%-8s %9lu ops in %6.3f s (%5.1f Mops/s)  elements %8lu  "
	       "buckets %8u  grows %2lu  shrinks %2lu  read %lu (%lu while "
	       "resizing)\n",
	       what, ops, secs, (double)ops / secs / 1e6, st.nelems, st.size,
	       st.grows, st.shrinks, d->reads, d->resizing);
}

int main(int argc, char **argv)
{
	unsigned long keys = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	struct demo d = { 0 };
	unsigned long total;

	if (!keys || threads < 1 || threads > 64) {
		fprintf(stderr,
			"usage: rht-demo [KEYS_PER_THREAD] [THREADS]\n");
		return 64;
	}
	rhkv_rcu_register_thread();
	d.keys_per_thread = keys;
	total = keys * (unsigned long)threads;
	d.objs = calloc(total, sizeof(*d.objs));
	if (!d.objs || rhashtable_init(&d.ht, &demo_params)) {
		fprintf(stderr, "rht-demo: out of memory\n");
		rhkv_rcu_unregister_thread();
		return 1;
	}
	for (unsigned long i = 0; i < total; i++)
		d.objs[i].key = i * 0x9e3779b97f4a7c15ULL;

	printf("rht-demo: %d threads, %lu keys, table of 64 buckets\n", threads,
	       total);
	report(&d, "insert", run_phase(&d, 0, threads), total);
	report(&d, "lookup", run_phase(&d, 1, threads), total);
	report(&d, "remove", run_phase(&d, 2, threads), total);
	d.reads = d.resizing = 0;
	/* Shrinking is asynchronous: give the worker a moment to finish. */
	for (int i = 0; i < 100 && rhashtable_size(&d.ht) > 64; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	report(&d, "settled", 1e-9, 0);
	printf("missing lookups: %lu\n", d.missing);
	rhashtable_destroy(&d.ht);
	rhkv_rcu_unregister_thread();
	free(d.objs);
	return d.missing ? 1 : 0;
}
