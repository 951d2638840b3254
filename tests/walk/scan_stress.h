/*
 * Cursor scan under stress, shared by the criterion test (test_scan.c) and
 * the plain executable that TSan runs (scan_stress_main.c). One thread grows
 * and shrinks the table in waves (insert then remove tens of thousands of
 * keys, automatic_shrinking, now and then a forced re-seed) while three
 * threads run full cursor scans with counts 1, 10 and 1000. Every full scan
 * must report every key of a stable set, and no scan may report a key that
 * was never inserted.
 */
#ifndef RHKV_TESTS_WALK_SCAN_STRESS_H
#define RHKV_TESTS_WALK_SCAN_STRESS_H

#include <stdio.h>

struct scan_stress_config {
	unsigned int duration_ms;  /* RHKV_SCAN_STRESS_MS, default 2000 */
	unsigned int churn_keys;   /* RHKV_SCAN_STRESS_CHURN, default 40000 */
	unsigned int stable_keys;  /* RHKV_SCAN_STRESS_STABLE, default 1000 */
	unsigned int min_scans;	   /* RHKV_SCAN_STRESS_MIN_SCANS, default 100 */
	unsigned int reseed_every; /* RHKV_SCAN_STRESS_RESEED: waves, 0 never */
};

#define SCAN_STRESS_COUNTS 3 /* scanner threads: counts 1, 10, 1000 */

struct scan_stress_result {
	unsigned int counts[SCAN_STRESS_COUNTS];
	unsigned long scans[SCAN_STRESS_COUNTS]; /* full scans completed */
	unsigned long calls[SCAN_STRESS_COUNTS]; /* rhashtable_scan calls */
	unsigned long scans_total;
	/* Full scans during which the table grew / shrank / was re-seeded. */
	unsigned long scans_over_grow, scans_over_shrink, scans_over_reseed;
	/* Resizes from the first scan's start to the last scan's end. */
	unsigned long grows, shrinks, reseeds;
	unsigned long waves; /* churn waves (insert all, remove all) */
	unsigned long elapsed_ms;
	char error[256]; /* the first failure; empty when none */
};

/* Defaults, overridden by the environment variables named above. */
void scan_stress_config_from_env(struct scan_stress_config *cfg);

/*
 * Runs the stress; the calling thread must be registered with RCU. Returns
 * 0 when every check passed, -1 with res->error set otherwise. Runs at least
 * duration_ms and until min_scans full scans, at least one of them spanning
 * a grow and one spanning a shrink, are done (within a hard limit).
 */
int scan_stress_run(const struct scan_stress_config *cfg,
		    struct scan_stress_result *res);

void scan_stress_print(const struct scan_stress_result *res, FILE *out);

#endif
