/*
 * Unit tests of common/rhashtable's hash flooding defence: a chain longer
 * than RHT_ELASTICITY under a known secret triggers a re-seed, forced
 * re-seeds keep every key, a user hashfn gets a new seed, and a flood soon
 * after a re-seed is deferred, not dropped.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "test_rhashtable_util.h"

enum { FLOOD_SIZE = 1024, FLOOD_KEYS = 200 };

/* A table of FLOOD_SIZE buckets whose secret is test_secret. */
static void flood_table(struct rhashtable *ht)
{
	struct rhashtable_params p = params64;

	p.nelem_hint = FLOOD_SIZE * 3 / 4;
	init_ok(ht, &p);
	cr_assert_eq(rhashtable_size(ht), FLOOD_SIZE);
	rht__set_secret(ht, &test_secret);
}

/* Inserts FLOOD_KEYS keys that share one bucket under test_secret. */
static struct obj64 *flood(struct rhashtable *ht)
{
	struct obj64 *o = calloc(FLOOD_KEYS, sizeof(*o));
	uint64_t keys[FLOOD_KEYS];

	cr_assert_not_null(o);
	colliding_keys(&test_secret, FLOOD_SIZE, 17, keys, FLOOD_KEYS);
	for (int i = 0; i < FLOOD_KEYS; i++) {
		o[i].key = keys[i];
		cr_assert_eq(rhashtable_insert_fast(ht, &o[i].node, params64),
			     0);
		/* Up to RHT_ELASTICITY entries nothing is asked for: the
		 * chain shows the secret is the one set. */
		if (i + 1 == RHT_ELASTICITY)
			cr_assert_eq(rht__max_chain(ht), RHT_ELASTICITY);
	}
	return o;
}

static void check_all_found(struct rhashtable *ht, struct obj64 *o, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(rhashtable_lookup_fast(ht, &o[i].key, params64),
			     &o[i], "key %d lost", i);
}

static bool reseeded(struct rhashtable *ht, uint32_t gen)
{
	return rhashtable_generation(ht) > gen &&
	       rht__max_chain(ht) <= RHT_ELASTICITY;
}

Test(rhashtable, hash_flood_triggers_reseed)
{
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj64 *o;

	flood_table(&ht);
	o = flood(&ht);
	TEST_WAIT_FOR(reseeded(&ht, 0), WAIT_MS);
	cr_assert_geq(rhashtable_generation(&ht), 1, "no re-seed");
	cr_assert_leq(rht__max_chain(&ht), RHT_ELASTICITY, "chain of %u",
		      rht__max_chain(&ht));
	rhashtable_get_stats(&ht, &st);
	cr_assert_geq(st.reseeds, 1);
	cr_assert_eq(st.grows, 0, "the load was low: no grow needed");
	cr_assert_eq(st.size, FLOOD_SIZE);
	cr_assert_eq(st.nelems, FLOOD_KEYS);
	check_all_found(&ht, o, FLOOD_KEYS);
	rhashtable_destroy(&ht);
	free(o);
}

Test(rhashtable, forced_reseed_keeps_keys)
{
	enum { N = 1000 };
	struct rhashtable_stats st;
	struct rhashtable ht;
	struct obj *o;

	o = grown_table(&ht, &params, N);
	cr_assert_eq(rhashtable_generation(&ht), 0);
	for (uint32_t gen = 1; gen <= 2; gen++) {
		rht__force_reseed(&ht);
		TEST_WAIT_FOR(rhashtable_generation(&ht) == gen &&
				      !rht__resizing(&ht),
			      WAIT_MS);
		cr_assert_eq(rhashtable_generation(&ht), gen);
		for (int i = 0; i < N; i++)
			cr_assert_eq(find(&ht, i), &o[i]);
		cr_assert_null(find(&ht, N));
	}
	rhashtable_get_stats(&ht, &st);
	cr_assert_eq(st.reseeds, 2);
	cr_assert_eq(st.generation, 2);
	cr_assert_eq(st.size, 2048, "a re-seed keeps the size");
	cr_assert_eq(st.nelems, N);
	rhashtable_destroy(&ht);
	free(o);
}

/* A user hashfn gets a seed derived from the secret: new after a re-seed. */
static _Atomic uint32_t seen_seed;
static _Atomic int bad_len;

static uint32_t recording_hash(const void *data, uint32_t len, uint32_t seed)
{
	if (len != sizeof(int))
		bad_len = 1;
	seen_seed = seed;
	return int_hash(data, len, seed);
}

Test(rhashtable, user_hashfn_gets_new_seed_after_reseed)
{
	enum { N = 100 };
	struct rhashtable_params p = params;
	struct rhashtable ht;
	struct obj *o = objs_new(N);
	uint32_t seed0;

	p.hashfn = recording_hash;
	init_ok(&ht, &p);
	insert_all(&ht, o, N, p);
	seed0 = seen_seed;
	cr_assert_eq(rhashtable_lookup_fast(&ht, &o[5].key, p), &o[5]);
	cr_assert_eq(seen_seed, seed0, "the seed changed without a re-seed");
	rht__force_reseed(&ht);
	TEST_WAIT_FOR(rhashtable_generation(&ht) == 1 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 1);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rhashtable_lookup_fast(&ht, &o[i].key, p), &o[i]);
	cr_assert_neq(seen_seed, seed0, "same seed after a re-seed");
	cr_assert_eq(bad_len, 0, "hashfn not given key_len");
	rhashtable_destroy(&ht);
	free(o);
}

/*
 * Regression: a flood-triggered re-seed request that arrives within
 * RHT_RESEED_INTERVAL_NS (1 s) of the previous re-seed must be deferred, not
 * dropped: no further insert comes here to ask again.
 */
Test(rhashtable, flood_soon_after_reseed_is_handled)
{
	struct rhashtable ht;
	struct obj64 *o;

	flood_table(&ht);
	rht__force_reseed(&ht);
	TEST_WAIT_FOR(rhashtable_generation(&ht) == 1 && !rht__resizing(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 1);
	rht__set_secret(&ht, &test_secret); /* still empty */
	o = flood(&ht);
	TEST_WAIT_FOR(reseeded(&ht, 1), WAIT_MS);
	cr_assert_leq(rht__max_chain(&ht), RHT_ELASTICITY,
		      "chain of %u left after %d ms", rht__max_chain(&ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_generation(&ht), 2);
	check_all_found(&ht, o, FLOOD_KEYS);
	rhashtable_destroy(&ht);
	free(o);
}
