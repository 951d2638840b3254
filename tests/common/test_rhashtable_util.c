/*
 * The helpers of test_rhashtable_util.h, and the rhashtable suite's
 * fixture. The test_rhashtable_*.c files build one criterion executable, in
 * which a suite can be declared only once: here, since several files add
 * tests to it.
 */
#include "test_rhashtable_util.h"

#include <criterion/criterion.h>
#include <stdlib.h>

TestSuite(rhashtable, .init = test_rcu_init, .fini = test_rcu_fini,
	  .timeout = 60);

const struct siphash_key test_secret = {
	.k0 = 0x0123456789abcdefULL,
	.k1 = 0xfedcba9876543210ULL,
};

struct obj *objs_new(size_t n)
{
	struct obj *o = calloc(n, sizeof(*o));

	cr_assert_not_null(o);
	for (size_t i = 0; i < n; i++) {
		o[i].key = (int)i;
		o[i].value = (int)i;
	}
	return o;
}

void init_ok(struct rhashtable *ht, const struct rhashtable_params *p)
{
	int err = rhashtable_init(ht, p);

	cr_assert_eq(err, 0, "rhashtable_init: %d", err);
}

int try_init(struct rhashtable_params p)
{
	struct rhashtable ht;
	int err = rhashtable_init(&ht, &p);

	if (!err)
		rhashtable_destroy(&ht);
	return err;
}

static bool grown(struct rhashtable *ht)
{
	return !rht__resizing(ht) &&
	       rhashtable_nelems(ht) <= rhashtable_size(ht) / 4 * 3;
}

void wait_grown(struct rhashtable *ht)
{
	TEST_WAIT_FOR(grown(ht), WAIT_MS);
	cr_assert(grown(ht), "table did not grow: %lu elements, %u buckets",
		  rhashtable_nelems(ht), rhashtable_size(ht));
}

struct obj *grown_table(struct rhashtable *ht,
			const struct rhashtable_params *p, int n)
{
	struct obj *o = objs_new((size_t)n);

	init_ok(ht, p);
	insert_all(ht, o, n, *p);
	wait_grown(ht);
	return o;
}

void wait_size(struct rhashtable *ht, unsigned int size)
{
	TEST_WAIT_FOR(rhashtable_size(ht) == size && !rht__resizing(ht),
		      WAIT_MS);
	cr_assert_eq(rhashtable_size(ht), size, "%u buckets, expected %u",
		     rhashtable_size(ht), size);
	cr_assert(!rht__resizing(ht));
}

/* The bucket of a uint64 key in a table of size buckets under secret. */
static unsigned int bucket_of(const struct siphash_key *secret, uint64_t key,
			      unsigned int size)
{
	return (uint32_t)siphash13(secret, &key, sizeof(key)) & (size - 1);
}

void colliding_keys(const struct siphash_key *secret, unsigned int size,
		    unsigned int target, uint64_t *keys, size_t n)
{
	size_t found = 0;

	for (uint64_t k = 1; found < n; k++)
		if (bucket_of(secret, k, size) == target)
			keys[found++] = k;
}

uint32_t int_hash(const void *data, uint32_t len, uint32_t seed)
{
	uint32_t h = seed ^ 2166136261u;
	const unsigned char *p = data;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

uint32_t obj_int_hash(const void *data, uint32_t len, uint32_t seed)
{
	const struct obj *o = data;

	(void)len;
	return int_hash(&o->key, sizeof(o->key), seed);
}

uint32_t str_hash(const void *data, uint32_t len, uint32_t seed)
{
	const unsigned char *s = data;
	uint32_t h = seed ^ 2166136261u;

	(void)len;
	while (*s)
		h = (h ^ *s++) * 16777619u;
	return h;
}
