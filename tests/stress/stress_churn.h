/*
 * The threads of the churn scenario (stress_churn_workers.c) as the
 * scenario (stress_churn.c) starts, joins and checks them. Internal to
 * tests/stress/.
 */
#ifndef RHKV_TESTS_STRESS_CHURN_H
#define RHKV_TESTS_STRESS_CHURN_H

#include <pthread.h>

#include "stress_common.h"

/* Of each kind: writers, readers, overlapping writers. */
#define MAX_THREADS 64

static const struct rhashtable_params churn_params = {
	.nelem_hint = 16,
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct sobj, key),
	.head_offset = offsetof(struct sobj, node),
	.automatic_shrinking = true,
};

/* A writer on its own key range, with the exact model of that range. */
struct writer {
	struct stress_ctx *ctx;
	pthread_t tid;
	unsigned int idx; /* thread index: seed + idx */
	uint64_t base;	  /* keys base .. base + n - 1 */
	unsigned int n;
	struct sobj **model; /* the object of each key, or NULL */
	unsigned int present;
	unsigned int phase; /* the wave phase last seen */
	bool arrived;	    /* reached the target of `phase` */
	uint64_t rng;
	unsigned long ops, lookups;
};

/* A reader of the stable set, or a writer on the shared range. */
struct reader {
	struct stress_ctx *ctx;
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long ops, lookups;
};

/* Looks key up under the read lock and checks it as stress_obj_check. */
bool churn_lookup_check(struct stress_ctx *ctx, const char *who, uint64_t key,
			const struct sobj *want, bool exact);

/* Every own key of w must be exactly the model's, through both lookups. */
bool churn_writer_check_all(struct writer *w);

/* Thread bodies: arg is a struct writer, reader, and reader respectively. */
void *churn_writer_main(void *arg);
void *churn_reader_main(void *arg);
void *churn_overlap_main(void *arg);

#endif
