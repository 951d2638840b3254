/*
 * What the stress scenarios of stress_rhashtable.h share (internal to
 * tests/stress/): the test object and its life-cycle checks, the scenario
 * context, failure reporting (CHECK), clocks and the per-thread PRNG.
 */
#ifndef RHKV_TESTS_STRESS_COMMON_H
#define RHKV_TESTS_STRESS_COMMON_H

#include "stress_rhashtable.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/rcu.h"
#include "common/rhashtable.h"

#define OBJ_LIVE 0x600dcafeu
#define OBJ_DEAD 0xdeadbeefu

/* Key ranges, disjoint: the model of one range never sees another's keys. */
#define KEY_STABLE  (1ull << 40)
#define KEY_OVERLAP (2ull << 40)
#define KEY_ABSENT  (3ull << 40) /* never inserted */
#define KEY_FOREIGN (4ull << 40) /* replace with a wrong key */
#define KEY_WRITER  (8ull << 40) /* + writer index << 32 */
#define KEY_DESTROY (5ull << 40)

struct stress_ctx;

struct sobj {
	uint64_t key;
	struct rhash_head node;
	uint32_t magic; /* OBJ_LIVE from alloc until free */
	uint32_t owner; /* thread that allocated it */
	struct stress_ctx *ctx;
	struct rcu_head rcu;
};

struct stress_ctx {
	struct rhashtable ht;
	const struct stress_opts *opts;
	struct stress_result *res;
	atomic_bool stop;
	atomic_bool failed;
	atomic_long live;	/* objects allocated and not freed */
	atomic_uint phase;	/* writers' wave: even fill, odd drain */
	atomic_uint arrived;	/* writers at the target of `phase` */
	atomic_ulong forced;	/* rht__force_reseed() calls */
	atomic_uint max_chain;	/* longest chain the reseeder saw */
	struct sobj **stable;	/* stable[i] has key KEY_STABLE + i */
	unsigned long freed_fn; /* stress_free_fn calls during destroy */
};

/* ---- helpers ---- */

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Records the first failure, prints every one, and stops all threads. */
void stress_fail(struct stress_ctx *ctx, int line, const char *fmt, ...);

#define CHECK(ctx, cond, ...)                                      \
	do {                                                       \
		if (!(cond)) {                                     \
			stress_fail((ctx), __LINE__, __VA_ARGS__); \
			return false;                              \
		}                                                  \
	} while (0)

static inline bool stopped(struct stress_ctx *ctx)
{
	return atomic_load_explicit(&ctx->stop, memory_order_relaxed);
}

/* xorshift64*, seeded through splitmix64 so that seed + i differ well. */
static inline uint64_t rng_init(uint64_t seed, unsigned int idx)
{
	uint64_t z = seed + idx * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline unsigned int rng_below(uint64_t *s, unsigned int n)
{
	return (unsigned int)(((rng_next(s) >> 32) * n) >> 32);
}

/* ---- objects ---- */

struct sobj *stress_obj_new(struct stress_ctx *ctx, uint64_t key,
			    uint32_t owner);

/* Frees now: the object was never in the table, or no reader remains. */
void stress_obj_free(struct sobj *o);

/* Frees an object unlinked from the table after a grace period. */
void stress_obj_retire(struct sobj *o);

/*
 * Checks a lookup result, inside the read-side section that found it: the
 * exact object `want` when exact, else any live object with the key (or
 * none). Returns false after recording a failure.
 */
bool stress_obj_check(struct stress_ctx *ctx, const char *who, uint64_t key,
		      const struct sobj *got, const struct sobj *want,
		      bool exact);

/* The free_fn of rhashtable_free_and_destroy; arg is the stress_ctx. */
void stress_free_fn(void *ptr, void *arg);

#endif
