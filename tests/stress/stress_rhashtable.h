/*
 * Concurrency stress scenarios for the rhashtable, shared by the criterion
 * tests (test_stress_rhashtable.c) and the plain executable that TSan builds
 * run (stress_rhashtable_main.c). Plain C and pthreads, no test framework.
 *
 * Each scenario registers the calling thread with RCU on entry and
 * unregisters it on return (so the caller must not be registered), runs for
 * a bounded time, and returns 0, or -1 with the first failure in
 * result->msg (also printed to stderr when it happens). Every thread's PRNG
 * is seeded with opts->seed + its index; the seed is printed at the start
 * so that a failure can be replayed (thread interleavings still vary).
 */
#ifndef RHKV_TESTS_STRESS_RHASHTABLE_H
#define RHKV_TESTS_STRESS_RHASHTABLE_H

#include <stdbool.h>
#include <stdint.h>

struct stress_opts {
	unsigned int duration_ms; /* each scenario (RHKV_STRESS_MS) */
	unsigned int max_ms;	  /* churn: longest run while the minimum
				     resizes below are not reached */
	uint64_t seed;		  /* RHKV_STRESS_SEED */
	unsigned int writers;	  /* disjoint-range writer threads */
	unsigned int readers;	  /* threads reading the stable set */
	unsigned int overlappers; /* writers sharing one key range */
	unsigned int writer_keys; /* keys per disjoint writer */
	unsigned int stable_keys; /* keys inserted first, never removed */
	unsigned int overlap_keys;
	unsigned int reseed_ms; /* between forced re-seeds; 0: none */
	unsigned long min_grows, min_shrinks, min_reseeds;
	unsigned int stall_ms;	     /* longest resize without progress */
	unsigned int destroy_reps;   /* at least (RHKV_STRESS_DESTROY_REPS) */
	unsigned int destroy_nelems; /* RHKV_STRESS_DESTROY_N */
	bool quiet;		     /* no summaries (RHKV_STRESS_QUIET) */
	bool verbose; /* progress every second (RHKV_STRESS_VERBOSE) */
};

struct stress_result {
	unsigned int elapsed_ms;
	unsigned long ops;     /* writer operations, all threads */
	unsigned long lookups; /* lookups, all threads */
	unsigned long waves;   /* fill-then-drain cycles of the writers */
	unsigned long grows, shrinks, reseeds;
	unsigned long nelems; /* entries left at the end, checked */
	unsigned int caught;  /* destroys that hit a resize in flight */
	char msg[512];	      /* first failure */
};

/* Defaults (about 2.5 s per scenario), then the RHKV_STRESS_* overrides. */
void stress_opts_init(struct stress_opts *opts);

/*
 * Writers on disjoint ranges checked against exact models, readers of a
 * stable set, writers racing on one range, forced re-seeds, while the table
 * grows and shrinks; then the end-state checks and free_and_destroy.
 */
int stress_churn(const struct stress_opts *opts, struct stress_result *res);

/* free_and_destroy while a grow or a re-seed of a large table runs. */
int stress_destroy_resizing(const struct stress_opts *opts,
			    struct stress_result *res);

#endif
