/*
 * Cursor scan under stress: see scan_stress.h. Keys are numbered by id;
 * key_of(id) never is 2 modulo 3, so a key that is 2 modulo 3 was never
 * inserted, and neither was a key whose id is at or above the high-water
 * mark the churn thread raises before each wave.
 */
#include "scan_stress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "walk_util.h"

/* Hard limits: the whole run, and one full scan. */
#define STRESS_EXTRA_MS	   60000
#define STRESS_MAX_SCAN_MS 30000

struct stress {
	const struct scan_stress_config *cfg;
	struct scan_stress_result *res;
	struct rhashtable ht;
	/* Ids below this may have been inserted; release before insert. */
	_Atomic uint32_t hwm_id;
	atomic_bool stop_scans, stop_churn, failed;
	atomic_ulong scans[SCAN_STRESS_COUNTS];
	atomic_ulong scans_total, scans_over_grow, scans_over_shrink,
		scans_over_reseed;
	pthread_mutex_t fail_lock;
};

struct scanner {
	struct stress *s;
	int index;
	unsigned int count;
	unsigned char *seen; /* per stable id, for the current scan */
	pthread_t thread;
};

static uint32_t key_of(uint32_t id)
{
	return id / 2 * 3 + id % 2;
}

static uint32_t id_of(uint32_t key)
{
	return key / 3 * 2 + key % 3;
}

static void stress_fail(struct stress *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->fail_lock);
	if (!atomic_load(&s->failed)) {
		va_start(ap, fmt);
		vsnprintf(s->res->error, sizeof(s->res->error), fmt, ap);
		va_end(ap);
		atomic_store(&s->failed, true);
	}
	pthread_mutex_unlock(&s->fail_lock);
	atomic_store(&s->stop_scans, true);
}

/* ---- churn: grows and shrinks the table ---- */

static void churn_wave(struct stress *s, uint32_t first_id, uint32_t n,
		       struct wobj **objs)
{
	/* release: a scanner that finds one of these keys sees the mark. */
	atomic_store_explicit(&s->hwm_id, first_id + n, memory_order_release);
	for (uint32_t i = 0; i < n; i++) {
		int err;

		objs[i] = wobj_new(key_of(first_id + i));
		err = rhashtable_lookup_insert_fast(&s->ht, &objs[i]->node,
						    wobj_params);
		if (err)
			stress_fail(s, "churn insert of key %u: %d",
				    objs[i]->key, err);
	}
	/* Remove in another order than inserted: odd indexes, then even. */
	for (uint32_t pass = 1; pass <= 2; pass++) {
		for (uint32_t i = pass % 2; i < n; i += 2) {
			int err = rhashtable_remove_fast(&s->ht, &objs[i]->node,
							 wobj_params);

			if (err)
				stress_fail(s, "churn remove of key %u: %d",
					    objs[i]->key, err);
		}
	}
	/* Scanners may still be reading them. */
	rhkv_rcu_synchronize();
	for (uint32_t i = 0; i < n; i++)
		wobj_free(objs[i]);
}

static void *churn_main(void *arg)
{
	struct stress *s = arg;
	uint32_t n = s->cfg->churn_keys;
	uint32_t next_id = s->cfg->stable_keys;
	struct wobj **objs = calloc(n, sizeof(*objs));

	if (!objs)
		abort();
	rhkv_rcu_register_thread();
	while (!atomic_load(&s->stop_churn)) {
		churn_wave(s, next_id, n, objs);
		next_id += n;
		s->res->waves++;
		if (s->cfg->reseed_every &&
		    s->res->waves % s->cfg->reseed_every == 0)
			rht__force_reseed(&s->ht);
	}
	rhkv_rcu_unregister_thread();
	free(objs);
	return NULL;
}

/* ---- scanners ---- */

struct scan_call {
	struct scanner *sc;
	unsigned int reported;
};

static void scan_report(void *obj, void *arg)
{
	struct scan_call *call = arg;
	struct stress *s = call->sc->s;
	const struct wobj *o = obj;
	uint32_t hwm, id;

	call->reported++;
	if (o->magic != WOBJ_MAGIC) {
		stress_fail(s, "scan reported a freed object (key %u)", o->key);
		return;
	}
	if (o->key % 3 == 2) {
		stress_fail(s, "scan reported never-inserted key %u", o->key);
		return;
	}
	id = id_of(o->key);
	/* acquire: pairs with the churn thread's release before insert. */
	hwm = atomic_load_explicit(&s->hwm_id, memory_order_acquire);
	if (id >= hwm) {
		stress_fail(s, "scan reported key %u, not inserted yet",
			    o->key);
		return;
	}
	if (id < s->cfg->stable_keys)
		call->sc->seen[id] = 1;
}

/* One full scan, cursor 0 until 0. Returns false on failure. */
static bool full_scan(struct scanner *sc)
{
	struct stress *s = sc->s;
	struct scan_stress_result *res = s->res;
	struct rhashtable_stats before = walk_stats(&s->ht), after;
	int64_t deadline = test_now_ms() + STRESS_MAX_SCAN_MS;
	uint64_t cursor = 0;
	unsigned int stable = s->cfg->stable_keys;
	unsigned long ncalls = 0;

	memset(sc->seen, 0, stable);
	do {
		struct scan_call call = { .sc = sc };
		struct rhashtable_scan_stats st;

		cursor = rhashtable_scan(&s->ht, cursor, sc->count, scan_report,
					 &call, &st);
		res->calls[sc->index]++;
		ncalls++;
		if (st.buckets > 10ull * sc->count) {
			stress_fail(s, "count %u: one call visited %u buckets",
				    sc->count, st.buckets);
			return false;
		}
		if (st.objects != call.reported) {
			stress_fail(s,
				    "count %u: stats say %u objects, %u seen",
				    sc->count, st.objects, call.reported);
			return false;
		}
		if (atomic_load(&s->failed))
			return false;
		if (test_now_ms() > deadline) {
			stress_fail(s, "count %u: a full scan took over %d ms",
				    sc->count, STRESS_MAX_SCAN_MS);
			return false;
		}
	} while (cursor);
	after = walk_stats(&s->ht);

	for (unsigned int id = 0; id < stable; id++) {
		if (!sc->seen[id]) {
			stress_fail(s,
				    "count %u: full scan missed stable key %u "
				    "(during it: %lu grows, %lu shrinks, %lu "
				    "re-seeds, size %u -> %u, %lu calls)",
				    sc->count, key_of(id),
				    after.grows - before.grows,
				    after.shrinks - before.shrinks,
				    after.reseeds - before.reseeds, before.size,
				    after.size, ncalls);
			return false;
		}
	}
	atomic_fetch_add(&s->scans[sc->index], 1);
	atomic_fetch_add(&s->scans_total, 1);
	if (after.grows > before.grows)
		atomic_fetch_add(&s->scans_over_grow, 1);
	if (after.shrinks > before.shrinks)
		atomic_fetch_add(&s->scans_over_shrink, 1);
	if (after.reseeds > before.reseeds)
		atomic_fetch_add(&s->scans_over_reseed, 1);
	return true;
}

static void *scanner_main(void *arg)
{
	struct scanner *sc = arg;

	rhkv_rcu_register_thread();
	while (!atomic_load(&sc->s->stop_scans) && full_scan(sc))
		;
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- the run ---- */

static unsigned int env_uint(const char *name, unsigned int dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned int)strtoul(v, NULL, 10) : dflt;
}

void scan_stress_config_from_env(struct scan_stress_config *cfg)
{
	cfg->duration_ms = env_uint("RHKV_SCAN_STRESS_MS", 2000);
	cfg->churn_keys = env_uint("RHKV_SCAN_STRESS_CHURN", 40000);
	cfg->stable_keys = env_uint("RHKV_SCAN_STRESS_STABLE", 1000);
	cfg->min_scans = env_uint("RHKV_SCAN_STRESS_MIN_SCANS", 100);
	cfg->reseed_every = env_uint("RHKV_SCAN_STRESS_RESEED", 2);
}

static bool enough(struct stress *s, int64_t elapsed)
{
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++)
		if (!atomic_load(&s->scans[i]))
			return false;
	return elapsed >= s->cfg->duration_ms &&
	       atomic_load(&s->scans_total) >= s->cfg->min_scans &&
	       atomic_load(&s->scans_over_grow) > 0 &&
	       atomic_load(&s->scans_over_shrink) > 0;
}

static void insert_stable(struct stress *s)
{
	for (uint32_t id = 0; id < s->cfg->stable_keys; id++) {
		struct wobj *o = wobj_new(key_of(id));
		int err = rhashtable_lookup_insert_fast(&s->ht, &o->node,
							wobj_params);

		if (err) {
			stress_fail(s, "stable insert of key %u: %d", o->key,
				    err);
			wobj_free(o);
		}
	}
	atomic_store_explicit(&s->hwm_id, s->cfg->stable_keys,
			      memory_order_release);
}

static void run_threads(struct stress *s, struct scanner *scanners)
{
	static const unsigned int counts[SCAN_STRESS_COUNTS] = { 1, 10, 1000 };
	struct rhashtable_stats before, after;
	pthread_t churn;
	int64_t start = test_now_ms(), elapsed;

	pthread_create(&churn, NULL, churn_main, s);
	before = walk_stats(&s->ht);
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++) {
		scanners[i] = (struct scanner){ .s = s,
						.index = i,
						.count = counts[i] };
		s->res->counts[i] = counts[i];
		scanners[i].seen = calloc(s->cfg->stable_keys + 1, 1);
		if (!scanners[i].seen)
			abort();
		pthread_create(&scanners[i].thread, NULL, scanner_main,
			       &scanners[i]);
	}
	do {
		test_sleep_ms(10);
		elapsed = test_now_ms() - start;
	} while (!atomic_load(&s->failed) && !enough(s, elapsed) &&
		 elapsed < s->cfg->duration_ms + STRESS_EXTRA_MS);
	atomic_store(&s->stop_scans, true);
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++) {
		pthread_join(scanners[i].thread, NULL);
		free(scanners[i].seen);
	}
	after = walk_stats(&s->ht);
	atomic_store(&s->stop_churn, true);
	pthread_join(churn, NULL);

	s->res->elapsed_ms = (unsigned long)(test_now_ms() - start);
	s->res->grows = after.grows - before.grows;
	s->res->shrinks = after.shrinks - before.shrinks;
	s->res->reseeds = after.reseeds - before.reseeds;
}

int scan_stress_run(const struct scan_stress_config *cfg,
		    struct scan_stress_result *res)
{
	struct rhashtable_params params = wobj_params;
	struct scanner scanners[SCAN_STRESS_COUNTS];
	struct stress *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		abort();
	memset(res, 0, sizeof(*res));
	s->cfg = cfg;
	s->res = res;
	pthread_mutex_init(&s->fail_lock, NULL);
	params.automatic_shrinking = true;
	err = rhashtable_init(&s->ht, &params);
	if (err) {
		snprintf(res->error, sizeof(res->error), "init: %d", err);
		goto out;
	}
	insert_stable(s);
	if (!atomic_load(&s->failed))
		run_threads(s, scanners);
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++)
		res->scans[i] = atomic_load(&s->scans[i]);
	res->scans_total = atomic_load(&s->scans_total);
	res->scans_over_grow = atomic_load(&s->scans_over_grow);
	res->scans_over_shrink = atomic_load(&s->scans_over_shrink);
	res->scans_over_reseed = atomic_load(&s->scans_over_reseed);
	if (rhashtable_nelems(&s->ht) != cfg->stable_keys)
		stress_fail(s, "%lu objects left, %u expected",
			    rhashtable_nelems(&s->ht), cfg->stable_keys);
	rhashtable_free_and_destroy(&s->ht, wobj_free_fn, NULL);

	if (res->scans_total < cfg->min_scans)
		stress_fail(s, "only %lu full scans, %u wanted",
			    res->scans_total, cfg->min_scans);
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++)
		if (!res->scans[i])
			stress_fail(s, "no full scan with count %u finished",
				    res->counts[i]);
	if (!res->scans_over_grow || !res->scans_over_shrink)
		stress_fail(s,
			    "no full scan spanned a grow (%lu) or a shrink "
			    "(%lu)",
			    res->scans_over_grow, res->scans_over_shrink);
out:
	pthread_mutex_destroy(&s->fail_lock);
	free(s);
	return res->error[0] ? -1 : 0;
}

void scan_stress_print(const struct scan_stress_result *res, FILE *out)
{
	fprintf(out, "scan stress: %lu ms, %lu churn waves, %lu full scans\n",
		res->elapsed_ms, res->waves, res->scans_total);
	for (int i = 0; i < SCAN_STRESS_COUNTS; i++)
		fprintf(out, "  count %u: %lu full scans, %lu calls\n",
			res->counts[i], res->scans[i], res->calls[i]);
	fprintf(out,
		"  during the scans: %lu grows, %lu shrinks, %lu re-seeds; "
		"scans spanning a grow %lu, a shrink %lu, a re-seed %lu\n",
		res->grows, res->shrinks, res->reseeds, res->scans_over_grow,
		res->scans_over_shrink, res->scans_over_reseed);
	if (res->error[0])
		fprintf(out, "  FAILED: %s\n", res->error);
}
