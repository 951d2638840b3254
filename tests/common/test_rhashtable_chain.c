/*
 * rhashtable_longest_chain(): what it returns on a table whose chains are
 * known, and that it walks a large table in many short RCU read-side
 * sections, not one. This executable is linked with
 * -Wl,--wrap=urcu_memb_read_lock and -Wl,--wrap=urcu_memb_read_unlock: the
 * calls from the test and librhkv-common go through the wrappers below,
 * which count the outermost read-side sections of the calling thread.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rhashtable.h"
#include "test_util.h"

void __real_urcu_memb_read_lock(void);
void __real_urcu_memb_read_unlock(void);
void __wrap_urcu_memb_read_lock(void);
void __wrap_urcu_memb_read_unlock(void);

static _Thread_local unsigned int depth;
static _Thread_local unsigned long sections; /* outermost ones entered */

void __wrap_urcu_memb_read_lock(void)
{
	if (depth++ == 0)
		sections++;
	__real_urcu_memb_read_lock();
}

void __wrap_urcu_memb_read_unlock(void)
{
	depth--;
	__real_urcu_memb_read_unlock();
}

/* 8192 buckets: eight slices of the walk. */
#define SIZE	    8192u
#define SLICE	    1024u
#define NELEM_HINT  6000u /* 6000 * 4 / 3 rounds up to SIZE */
#define MAX_ENTRIES 64

struct obj {
	uint32_t key;
	struct rhash_head node;
};

/* The key is its own hash: key b + j * SIZE lands in bucket b, whatever
 * the seed, so a re-seed could not spread a chain (none is asked for:
 * every chain here is at most RHT_ELASTICITY long). */
static uint32_t identity_hash(const void *data, uint32_t len, uint32_t seed)
{
	uint32_t key;

	(void)len;
	(void)seed;
	memcpy(&key, data, sizeof(key));
	return key;
}

static const struct rhashtable_params params = {
	.key_len = sizeof(uint32_t),
	.key_offset = offsetof(struct obj, key),
	.head_offset = offsetof(struct obj, node),
	.hashfn = identity_hash,
	.nelem_hint = NELEM_HINT,
};

TestSuite(rhashtable_chain, .init = test_rcu_init, .fini = test_rcu_fini,
	  .timeout = 60);

/* Chains of known lengths on both sides of slice boundaries. */
static const struct {
	unsigned int bucket, len;
} chains[] = {
	{ 0, 3 },	  /* the first bucket */
	{ SLICE - 1, 5 }, /* the last of the first slice */
	{ SLICE, 7 },	  /* the first of the second */
	{ 5 * SLICE + 17, 2 },
	{ SIZE - 1, 9 }, /* the very last bucket */
};

static int fill(struct rhashtable *ht, struct obj *o)
{
	int n = 0;

	for (size_t c = 0; c < sizeof(chains) / sizeof(chains[0]); c++)
		for (unsigned int j = 0; j < chains[c].len; j++) {
			o[n].key = chains[c].bucket + j * SIZE;
			cr_assert_eq(
				rhashtable_insert_fast(ht, &o[n].node, params),
				0);
			n++;
		}
	cr_assert_leq(n, MAX_ENTRIES);
	return n;
}

/* Removes the len entries of the chain in bucket b. */
static void empty_bucket(struct rhashtable *ht, struct obj *o, int n,
			 unsigned int b)
{
	for (int i = 0; i < n; i++)
		if (o[i].key % SIZE == b)
			cr_assert_eq(
				rhashtable_remove_fast(ht, &o[i].node, params),
				0);
}

Test(rhashtable_chain, empty_table_is_zero)
{
	struct rhashtable ht;

	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	cr_assert_eq(rhashtable_size(&ht), SIZE);
	cr_assert_eq(rhashtable_longest_chain(&ht), 0);
	rhashtable_destroy(&ht);
}

/*
 * The longest chain is found wherever it is: the longest is removed one
 * chain at a time and the next longest must be reported each time.
 */
Test(rhashtable_chain, known_chains)
{
	struct obj o[MAX_ENTRIES];
	struct rhashtable ht;
	int n;

	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	n = fill(&ht, o);
	cr_assert_eq(rhashtable_size(&ht), SIZE, "the table resized");
	cr_assert_eq(rhashtable_longest_chain(&ht), 9);
	empty_bucket(&ht, o, n, SIZE - 1);
	cr_assert_eq(rhashtable_longest_chain(&ht), 7);
	empty_bucket(&ht, o, n, SLICE);
	cr_assert_eq(rhashtable_longest_chain(&ht), 5);
	empty_bucket(&ht, o, n, SLICE - 1);
	cr_assert_eq(rhashtable_longest_chain(&ht), 3);
	empty_bucket(&ht, o, n, 0);
	cr_assert_eq(rhashtable_longest_chain(&ht), 2);
	empty_bucket(&ht, o, n, 5 * SLICE + 17);
	cr_assert_eq(rhashtable_longest_chain(&ht), 0);
	cr_assert_eq(rhashtable_nelems(&ht), 0);
	cr_assert_eq(rhashtable_size(&ht), SIZE, "the table resized");
	rhashtable_destroy(&ht);
}

/*
 * A grace period is never held up by the whole walk: the 8192 buckets take
 * a read-side section per SLICE buckets, not one for all.
 */
Test(rhashtable_chain, walk_is_sliced)
{
	struct obj o[MAX_ENTRIES];
	struct rhashtable ht;
	unsigned long before;
	unsigned int longest;

	cr_assert_eq(rhashtable_init(&ht, &params), 0);
	fill(&ht, o);
	before = sections;
	longest = rhashtable_longest_chain(&ht);
	cr_assert_eq(longest, 9);
	cr_assert_geq(sections - before, SIZE / SLICE,
		      "%lu read-side sections for %u buckets",
		      sections - before, SIZE);
	cr_assert_eq(depth, 0);
	rhashtable_destroy(&ht);
}
