/*
 * The types of the rhashtable, apart from its functions (as the kernel's
 * rhashtable-types.h): what a structure embedding a table or an object needs.
 * The functions, and the concurrency contract, are in rhashtable.h.
 */
#ifndef RHKV_COMMON_RHASHTABLE_TYPES_H
#define RHKV_COMMON_RHASHTABLE_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "siphash.h"

struct rhashtable_walker;

/* Chain length above which an insert asks for a re-seed. */
#define RHT_ELASTICITY 16
/* Buckets the resize worker moves between two publications of its progress
 * (bucket_table.moved): a lookup reads that line, which bounces between the
 * worker's CPU and the readers' once per publication. */
#define RHT_MOVED_STRIDE 64u
/* Smallest table and table size without nelem_hint, as the kernel. */
#define RHT_MIN_SIZE	 4u
#define RHT_DEFAULT_SIZE 64u
/* Largest table: bucket indexes are taken from a 32-bit hash. */
#define RHT_MAX_SIZE (1u << 31)

/* Linkage embedded in every object of an rhashtable. */
struct rhash_head {
	_Atomic(struct rhash_head *) next;
};

/* Linkage for an rhltable: objects with equal keys hang off one chain entry. */
struct rhlist_head {
	struct rhash_head rhead;
	_Atomic(struct rhlist_head *) next;
};

struct rhashtable;

struct rhashtable_compare_arg {
	struct rhashtable *ht;
	const void *key;
};

typedef uint32_t (*rht_hashfn_t)(const void *data, uint32_t len, uint32_t seed);
typedef uint32_t (*rht_obj_hashfn_t)(const void *data, uint32_t len,
				     uint32_t seed);
typedef int (*rht_obj_cmpfn_t)(struct rhashtable_compare_arg *arg,
			       const void *obj);

struct rhashtable_params {
	unsigned int nelem_hint;  /* expected elements: sizes the first table */
	uint16_t key_len;	  /* bytes of key; 0: use obj_hashfn */
	uint16_t key_offset;	  /* offset of the key in the object */
	uint16_t head_offset;	  /* offset of the rhash_head in the object */
	unsigned int max_size;	  /* largest table (buckets); 0: no bound */
	unsigned int min_size;	  /* smallest table (buckets) */
	bool automatic_shrinking; /* shrink below 30% load */
	/* Grow above this load, in percent: 0 is the kernel's 75. A table
	 * of many small objects trades a little chain length for bucket
	 * bytes with more (an extension: the kernel has no such field). */
	unsigned int grow_above_pct;
	rht_hashfn_t hashfn;	     /* hash of a key; default SipHash-1-3 */
	rht_obj_hashfn_t obj_hashfn; /* hash of an object (key_len 0) */
	rht_obj_cmpfn_t obj_cmpfn;   /* 0 when the object has the key */
};

/*
 * One array of buckets. A bucket word holds the first entry of its chain
 * and, in its two low bits, the bucket lock (RHT_LOCKED, RHT_WAITERS). The
 * chain ends with NULL. While the table is being resized, future_tbl points
 * at the table its entries are moving to; buckets below `moved` are done
 * (see "Skipping moved buckets" in rhashtable.h).
 */
struct bucket_table {
	unsigned int size; /* a power of two */
	unsigned int mask; /* size - 1 */
	uint32_t seed;	   /* seed given to a user hashfn */
	uint32_t generation;
	struct siphash_key secret;
	_Atomic(struct bucket_table *) future_tbl;
	struct rhashtable_walker *walkers; /* stopped walks, ctl->lock */
	void *alloc;			   /* what calloc returned, for free */
	/*
	 * How many buckets, from 0, the worker has moved to future_tbl, as it
	 * last published it: every RHT_MOVED_STRIDE buckets and once all are
	 * done. Lookups read it while a resize runs; on a cache line of its
	 * own, so that the line every lookup reads (size, mask, secret,
	 * future_tbl) is not invalidated, and written once per stride, not
	 * per bucket, so that readers miss on it rarely.
	 */
	_Alignas(64) _Atomic unsigned int moved;
	/* Buckets start on the next line, away from both. */
	_Alignas(64) _Atomic uintptr_t buckets[];
};

/* A stopped walk, parked on its table so a resize can tell it. */
struct rhashtable_walker {
	struct rhashtable_walker *next;
	struct rhashtable_walker **pprev;
	struct bucket_table *tbl; /* NULL: the table went away, restart */
};

#define RHT_LOCKED    ((uintptr_t)1)
#define RHT_WAITERS   ((uintptr_t)2)
#define RHT_LOCK_BITS (RHT_LOCKED | RHT_WAITERS)

struct rhashtable__ctl; /* worker, walkers, counters: rhashtable.c */

struct rhashtable {
	_Atomic(struct bucket_table *) tbl; /* oldest table of the chain */
	struct rhashtable_params p;
	unsigned int key_len;
	unsigned int max_elems; /* 0: unbounded */
	bool rhlist;
	struct rhashtable__ctl *ctl;
};

struct rhltable {
	struct rhashtable ht;
};

/* A walk's position; see WALKING in the top comment. */
struct rhashtable_iter {
	struct rhashtable *ht;
	struct rhash_head *p;	  /* chain entry last returned, or NULL */
	struct rhlist_head *list; /* in an rhltable: list member returned */
	struct rhashtable_walker walker;
	unsigned int slot; /* bucket being walked */
	unsigned int skip; /* objects of the bucket already returned */
	bool end_of_table;
	bool restarted; /* the table changed: next walk_next gives -EAGAIN */
};

#endif
