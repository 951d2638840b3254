/*
 * Shared parts of bench-rhashtable: options, clocks, the key set, and the
 * three tables under test behind one small static inline interface, so that
 * every measurement loop is compiled once per table with the table's code
 * inlined (as a real user of rhashtable.h would have it):
 *
 *   rht  this project's rhashtable (common/rhashtable.h), default hash
 *        (SipHash-1-3 with the table's random secret);
 *   lfht liburcu's cds_lfht (urcu-memb flavour, auto-resize, accounting),
 *        hashed with SipHash-1-3 under one fixed key;
 *   rwt  a chained table under one pthread_rwlock_t, same hash as lfht.
 *
 * Keys are u64: key i is key_of(i), a bijection, so keys 0..n-1 are distinct
 * and a lookup thread can draw a random present key without reading a key
 * array. Objects live in one array per table, element i holding key_of(i).
 */
#ifndef RHKV_TESTS_BENCH_BENCH_H
#define RHKV_TESTS_BENCH_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <urcu/urcu-memb.h>

#include <urcu/rculfhash.h>

#include "common/rcu.h"
#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"
#include "common/siphash.h"

#define BENCH_MAX_THREADS 64
#define BENCH_MAX_SIZES	  16
#define BENCH_MAX_ROUNDS  15

enum bench_impl { IMPL_RHT, IMPL_LFHT, IMPL_RWT, NR_IMPLS };
enum bench_op { OP_LOOKUP, OP_INSERT, OP_MIX, NR_OPS };

struct bench_opts {
	size_t sizes[BENCH_MAX_SIZES];
	int nr_sizes;
	int threads[BENCH_MAX_THREADS];
	int nr_threads;
	double seconds; /* per measurement (cell, round, table) */
	int rounds;
	bool ops[NR_OPS];
	size_t resize_keys;
	double resize_seconds;
	int grow_reps;
	bool resize;
	bool verbose;
	bool quick;
};

extern struct bench_opts opt;
extern const char *const op_name[NR_OPS];

/* Sets opt from the command line (bench_opts.c); exits on --help. */
void parse_opts(int argc, char **argv);

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sleep_ns(int64_t ns);
void *xcalloc(size_t n, size_t size);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static inline void bench_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* splitmix64's finaliser: a bijection on u64. */
static inline uint64_t key_of(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xorshift64*: a uniform index in [0, n), n < 2^32. */
static inline uint32_t rand_index(uint64_t *s, uint32_t n)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (uint32_t)(((x * 0x2545f4914f6cdd1dULL >> 32) * n) >> 32);
}

/* ---- rht: this project's rhashtable ---- */

struct robj {
	uint64_t key;
	struct rhash_head node;
};

static const struct rhashtable_params rht_params = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct robj, key),
	.head_offset = offsetof(struct robj, node),
};

static inline int rht_find(void *tbl, uint64_t k)
{
	struct robj *o;
	int hit;

	rhkv_rcu_read_lock();
	o = rhashtable_lookup(tbl, &k, rht_params);
	hit = o && o->key == k;
	rhkv_rcu_read_unlock();
	return hit;
}

static inline int rht_insert(void *tbl, void *objs, size_t i)
{
	struct robj *o = (struct robj *)objs + i;

	return rhashtable_lookup_insert_fast(tbl, &o->node, rht_params);
}

/* ---- lfht: liburcu's cds_lfht ---- */

struct lobj {
	uint64_t key;
	struct cds_lfht_node node;
};

/* The fixed SipHash key of lfht and rwt. */
static const struct siphash_key bench_sipkey = {
	.k0 = 0x0706050403020100ULL,
	.k1 = 0x0f0e0d0c0b0a0908ULL,
};

static inline uint64_t bench_hash(uint64_t k)
{
	return siphash13(&bench_sipkey, &k, sizeof(k));
}

int lfht_match(struct cds_lfht_node *node, const void *key);

static inline int lfht_find(void *tbl, uint64_t k)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	int hit;

	urcu_memb_read_lock();
	cds_lfht_lookup(tbl, bench_hash(k), lfht_match, &k, &iter);
	node = cds_lfht_iter_get_node(&iter);
	hit = node && caa_container_of(node, struct lobj, node)->key == k;
	urcu_memb_read_unlock();
	return hit;
}

static inline int lfht_insert(void *tbl, void *objs, size_t i)
{
	struct lobj *o = (struct lobj *)objs + i;
	struct cds_lfht_node *ret;

	cds_lfht_node_init(&o->node);
	urcu_memb_read_lock();
	ret = cds_lfht_add_unique(tbl, bench_hash(o->key), lfht_match, &o->key,
				  &o->node);
	urcu_memb_read_unlock();
	return ret == &o->node ? 0 : -EEXIST;
}

/* ---- rwt: chained hash table under one rwlock ---- */

struct wobj {
	uint64_t key;
	struct wobj *next;
};

struct rwt {
	pthread_rwlock_t lock;
	struct wobj **buckets;
	size_t mask;
	size_t nelems;
};

void rwt_grow(struct rwt *t);

static inline int rwt_find(void *tbl, uint64_t k)
{
	struct rwt *t = tbl;
	uint64_t h = bench_hash(k);
	struct wobj *o;

	pthread_rwlock_rdlock(&t->lock);
	for (o = t->buckets[h & t->mask]; o && o->key != k; o = o->next)
		;
	pthread_rwlock_unlock(&t->lock);
	return o != NULL;
}

static inline int rwt_insert(void *tbl, void *objs, size_t i)
{
	struct rwt *t = tbl;
	struct wobj *o = (struct wobj *)objs + i, **b;
	uint64_t h = bench_hash(o->key);
	int err = 0;

	pthread_rwlock_wrlock(&t->lock);
	b = &t->buckets[h & t->mask];
	for (struct wobj *p = *b; p; p = p->next)
		if (p->key == o->key)
			err = -EEXIST;
	if (!err) {
		o->next = *b;
		*b = o;
		if (++t->nelems > (t->mask + 1) / 4 * 3)
			rwt_grow(t);
	}
	pthread_rwlock_unlock(&t->lock);
	return err;
}

/* ---- table management (bench_tables.c), single-threaded, untimed ---- */

extern const char *const impl_name[NR_IMPLS];
extern const size_t impl_obj_size[NR_IMPLS];

/* Sets key_of(first + i) in objs[i] for i < n. */
void objs_init(enum bench_impl impl, void *objs, size_t first, size_t n);
/* An empty table; nelem_hint sizes rht's first table (0: the default). */
void *table_new(enum bench_impl impl, unsigned int nelem_hint);
/* Inserts objs[i] for lo <= i < hi from this thread; dies on failure. */
void table_fill(enum bench_impl impl, void *tbl, void *objs, size_t lo,
		size_t hi);
/* Removes objs[lo..hi), which must all be in the table. */
void table_remove(enum bench_impl impl, void *tbl, void *objs, size_t lo,
		  size_t hi);
/* Number of elements, for checks. */
size_t table_count(enum bench_impl impl, void *tbl);
/* Waits until a resize in flight (rht) has finished, or a while (lfht). */
void table_settle(enum bench_impl impl, void *tbl, size_t n);
/* Frees the table; it must hold exactly objs[0..n) (checked). */
void table_destroy(enum bench_impl impl, void *tbl, void *objs, size_t n);

/*
 * liburcu 0.13's cds_lfht can stop growing for good (seen here on 2 CPUs,
 * in roughly one 10M fill out of three, more often with two inserting
 * threads or right after another table was destroyed): chains then grow
 * without bound and a 10M fill never ends. A cds_lfht_resize() call gets
 * it growing again, which points at its resize_initiated flag being left
 * set: the lazy resize launch queues the resize work and only then sets
 * the flag, so a resize worker that runs at once can finish (and clear
 * it) first. Whoever inserts into a cds_lfht calls lfht_watch() every few
 * ms with the number of inserts and the inserters' CPU time so far; when
 * the rate per CPU second falls below 1/8 of the best 100 ms window three
 * windows in a row, it forces a resize to the largest power of two not
 * above the count (at least what cds_lfht's own policy would reach),
 * counts it in lfht_kicks, and the figures measured across it are flagged.
 */
struct lfht_watch {
	int64_t t, cpu;
	uint64_t progress;
	double best; /* inserts per CPU second */
	int strikes;
};

extern unsigned long lfht_kicks;

void lfht_watch_init(struct lfht_watch *lw);
/* cpu: CPU time of the inserting threads so far (ns). */
void lfht_watch(struct lfht_watch *lw, void *tbl, uint64_t progress,
		int64_t cpu);
/* clock_gettime() in ns; 0 on error (a thread that exited). */
int64_t clock_ns(clockid_t c);

/* ---- bench_resize.c ---- */

/* Returns whether the reader's loss target was met. */
bool run_resize_tests(void);

#endif
