/*
 * Eviction carrying an item forward (server/store/cache_evict.c), at the cache
 * API: what a reader writes to the copy in the moment after it took the
 * original's place in the table (a touch's exptime, a visit's time, a
 * recache win) is what the item keeps once the carry is done.
 */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/rcu.h"
#include "server/store/cache.h"

static void setup(void)
{
	rhkv_rcu_register_thread();
}

static void teardown(void)
{
	rhkv_rcu_unregister_thread();
}

TestSuite(cache_evict, .init = setup, .fini = teardown, .timeout = 60);

static struct cache_key key(const char *s)
{
	return (struct cache_key){ s, strlen(s) };
}

/* What the hook does to the hot key's first copy, and what it saw. */
struct carry_probe {
	struct cache *c;
	struct cache_key k;
	int64_t exptime;	     /* the touch's */
	_Atomic unsigned long hooks; /* carries seen so far */
	_Atomic unsigned long at;    /* hooks when the key's came (0: not) */
	_Atomic int64_t visited;     /* the clock at its visit */
	_Atomic bool touched, found; /* the touch hit; the copy was found */
	_Atomic bool won;	     /* its recache win was handed out */
};

static void on_carry(void *arg, struct item *copy)
{
	struct carry_probe *p = arg;
	unsigned long n = atomic_fetch_add(&p->hooks, 1) + 1;

	if (atomic_load(&p->at) || copy->nkey != p->k.n ||
	    memcmp(item_key(copy), p->k.p, p->k.n) != 0)
		return;
	/* A reader now finds the copy: a touch, a fetch, a win. (Criterion
	 * asserts only on the test's thread: the evictor may be another.) */
	atomic_store(&p->touched, cache_touch(p->c, p->k, p->exptime));
	rhkv_rcu_read_lock();
	atomic_store(&p->found, cache_find(p->c, p->k, NULL) == copy);
	atomic_store(&p->visited, cache_now());
	atomic_store(&p->won, cache_item_win(copy));
	rhkv_rcu_read_unlock();
	atomic_store(&p->at, n);
}

/*
 * A hot key in a full cache is carried forward while fillers are evicted;
 * at that moment a reader touches it (new exptime), fetches it (its last
 * access moves to now, from a store 100 s ago) and wins its recache. After
 * the carry all three stay: the exptime is the touch's, not the one the
 * original had; the last access is the fetch's; the win is not handed out
 * again.
 */
Test(cache_evict, a_touch_on_the_copy_outlives_the_carry)
{
	struct cache *c = cache_create(1, 4u << 20);
	struct carry_probe p = { .c = c, .k = key("hot") };
	int64_t now = cache_now();
	struct cache_stats cs;
	unsigned long carried0;
	char filler[1024], name[32];
	struct item *it;

	cr_assert_not_null(c);
	memset(filler, 'f', sizeof(filler));
	p.exptime = now + 5000;
	cr_assert_eq(cache_store(c, 0, CACHE_SET, p.k, 0, now + 1000, "v", 1, 0,
				 NULL),
		     CACHE_STORED);
	/* Fetched (so the visit will move its time) and visited (so eviction
	 * keeps it), last accessed long ago. */
	rhkv_rcu_read_lock();
	it = cache_find(c, p.k, NULL);
	cr_assert_not_null(it);
	atomic_store_explicit(&it->atime, (uint32_t)(now - 100),
			      memory_order_relaxed);
	rhkv_rcu_read_unlock();
	cache_get_stats(c, &cs, false);
	carried0 = cs.carried;
	cache_set_carry_hook(c, on_carry, &p);
	/* Fillers no one reads, until the hot key has been carried: four
	 * times the cache's size at most. */
	for (unsigned int i = 0; !atomic_load(&p.at) && i < 16384; i++) {
		snprintf(name, sizeof(name), "filler-%u", i);
		cr_assert_eq(cache_store(c, 0, CACHE_SET, key(name), 0, 0,
					 filler, sizeof(filler), 0, NULL),
			     CACHE_STORED);
	}
	cr_assert_neq(atomic_load(&p.at), 0, "the hot key was never carried");
	/* Its carry is over once eviction has counted it (each hook is
	 * followed by its count, under the one evictor's lock). */
	do {
		sched_yield();
		cache_get_stats(c, &cs, false);
	} while (cs.carried - carried0 < atomic_load(&p.at));
	cache_set_carry_hook(c, NULL, NULL);
	cr_assert(atomic_load(&p.touched) && atomic_load(&p.found),
		  "the copy was not the key's live item");
	cr_assert(atomic_load(&p.won), "the copy's recache was not won");

	rhkv_rcu_read_lock();
	it = cache_lookup(c, p.k, NULL);
	cr_assert_not_null(it, "the hot key was evicted");
	cr_expect_eq(atomic_load_explicit(&it->exptime, memory_order_relaxed),
		     (uint32_t)p.exptime, "the touch's exptime was undone");
	cr_expect_geq(atomic_load_explicit(&it->atime, memory_order_relaxed),
		      (uint32_t)atomic_load(&p.visited),
		      "the fetch's last access was undone");
	cr_expect_not(cache_item_win(it), "the recache was won twice");
	rhkv_rcu_read_unlock();
	cache_destroy(c);
}
