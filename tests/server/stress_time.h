/*
 * The time budget of the cache stress executables (stress_*.c): how long
 * to run (RHKV_STRESS_MS, default 2000 ms) and how long they have run.
 */
#ifndef RHKV_TESTS_STRESS_TIME_H
#define RHKV_TESTS_STRESS_TIME_H

#include <stdlib.h>
#include <time.h>

static inline long stress_budget_ms(void)
{
	const char *env = getenv("RHKV_STRESS_MS");

	return env ? atol(env) : 2000;
}

static inline long stress_elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

#endif
