/*
 * Objects, parameters and helpers shared by the rhashtable unit tests
 * (test_rhashtable_*.c, one criterion executable): the int-keyed and
 * uint64-keyed test objects, table set-up, bounded waits for the resize
 * worker, and colliding keys for a known secret.
 */
#ifndef RHKV_TESTS_COMMON_TEST_RHASHTABLE_UTIL_H
#define RHKV_TESTS_COMMON_TEST_RHASHTABLE_UTIL_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"
#include "test_util.h"

/* Longest we wait for the resize worker; it normally takes milliseconds. */
#define WAIT_MS 30000

struct obj {
	int key;
	int value;
	struct rhash_head node;
};

/*
 * The parameters are static const here, not extern, so that the inline
 * *_fast functions see them as constants, as in the kernel.
 */
static const struct rhashtable_params params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct obj, key),
	.head_offset = offsetof(struct obj, node),
};

/* 64-bit keys, for brute-forcing bucket collisions under a known secret. */
struct obj64 {
	uint64_t key;
	struct rhash_head node;
};

static const struct rhashtable_params params64 = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct obj64, key),
	.head_offset = offsetof(struct obj64, node),
};

/* The secret that colliding_keys() brute-forces against. */
extern const struct siphash_key test_secret;

/* n objects with key and value 0 .. n-1; the caller frees them. */
struct obj *objs_new(size_t n);

/* The object of key in a table of struct obj, or NULL. */
static inline struct obj *find(struct rhashtable *ht, int key)
{
	return rhashtable_lookup_fast(ht, &key, params);
}

/* Inserts o[0..n) with rhashtable_insert_fast; every insert must succeed. */
static inline void insert_all(struct rhashtable *ht, struct obj *o, int n,
			      const struct rhashtable_params p)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(rhashtable_insert_fast(ht, &o[i].node, p), 0,
			     "insert %d", i);
}

/* rhashtable_init, which must succeed. */
void init_ok(struct rhashtable *ht, const struct rhashtable_params *p);

/* Initializes a table with p and destroys it; returns what init returned. */
int try_init(struct rhashtable_params p);

/*
 * Initializes ht with p, inserts objs_new(n) with insert_all and waits until
 * the table has grown for them; returns the objects (the caller frees them).
 */
struct obj *grown_table(struct rhashtable *ht,
			const struct rhashtable_params *p, int n);

/* Waits until no resize is running and the load is at most 75%. */
void wait_grown(struct rhashtable *ht);

/* Waits until the table has size buckets and no resize is running. */
void wait_size(struct rhashtable *ht, unsigned int size);

/* Fills keys[0..n) with keys that all land in bucket `target`. */
void colliding_keys(const struct siphash_key *secret, unsigned int size,
		    unsigned int target, uint64_t *keys, size_t n);

/* FNV-1a of len bytes, for user hashfns; and of an object's int key. */
uint32_t int_hash(const void *data, uint32_t len, uint32_t seed);
uint32_t obj_int_hash(const void *data, uint32_t len, uint32_t seed);

/* FNV-1a of a NUL-terminated string (len is ignored). */
uint32_t str_hash(const void *data, uint32_t len, uint32_t seed);

#endif
