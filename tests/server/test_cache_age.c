/*
 * The oldest-age walk (cache_oldest_age, `stats items` age) in the states
 * a race makes, built here one step at a time with the cache's internals:
 * a landed large item taken out of the table but not yet off the eviction
 * log (the moment between a delete's unlink and its log update). The walk
 * must read that one item and nothing past its allocation; an ASan build
 * reports a read past it as a heap-buffer-overflow.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/rcu.h"
#include "server/store/cache_internal.h"

static void setup(void)
{
	rhkv_rcu_register_thread();
}

static void teardown(void)
{
	rhkv_rcu_unregister_thread();
}

TestSuite(cache_age, .init = setup, .fini = teardown, .timeout = 60);

/* A landed item of nbytes under k, stored. */
static void store_landed(struct cache *c, struct cache_key k, uint32_t nbytes)
{
	struct item *it = cache_landing_new(c, 0, k, 0, nbytes);
	struct cache_write w;

	cr_assert_not_null(it);
	memset(cache_landing_value(it), 'x', nbytes);
	w = (struct cache_write){ .mode = CACHE_SET,
				  .key = k,
				  .value = cache_landing_value(it),
				  .nbytes = nbytes,
				  .landed = &it };
	cr_assert_eq(cache_write(c, 0, &w, NULL), CACHE_STORED);
}

Test(cache_age, unlinked_landed_item_still_on_the_log)
{
	struct cache *c = cache_create(1, 64u << 20);
	/* Header, key and value a multiple of 8: the 8 bytes reserved for a
	 * chosen cas make a whole slot after the item, where a walk that
	 * takes the unit for a segment would read another header. */
	struct cache_key k = { "landed:1", 8 };
	const uint32_t nbytes = ITEM_SEG_VALUE_MAX + 4;
	struct item *it;
	int64_t age;

	cr_assert_not_null(c);
	cr_assert_eq((ITEM_HEADER_BYTES + k.n + nbytes) % 8, 0);
	store_landed(c, k, nbytes);
	cr_assert_lt(cache_oldest_age(c), 5);

	/* A delete's first half: out of the table, still on the log. */
	rhkv_rcu_read_lock();
	it = rhashtable_lookup(&c->ht, &k, cache__params);
	cr_assert_not_null(it);
	cr_assert(cache__item_is_large(it));
	cr_assert_eq(rhashtable_remove_fast(&c->ht, &it->node, cache__params),
		     0);
	rhkv_rcu_read_unlock();

	age = cache_oldest_age(c);

	/* Its second half. */
	rhkv_rcu_read_lock();
	cache__item_unlinked(c, it);
	rhkv_rcu_read_unlock();
	cr_assert(age >= 0 && age < 5, "oldest age %lld", (long long)age);
	cache_reclaim(c);
	cache_destroy(c);
}
