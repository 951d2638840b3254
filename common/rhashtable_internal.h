/*
 * What the files of the rhashtable module share with each other, and the
 * few hooks tests and benchmarks need to force what normally happens only
 * by chance (a re-seed, a known secret). Not for other modules.
 */
#ifndef RHKV_COMMON_RHASHTABLE_INTERNAL_H
#define RHKV_COMMON_RHASHTABLE_INTERNAL_H

#include <pthread.h>

#include "rhashtable.h"

#define RHT_COUNT_SHARDS 16

/* One counter per cache line, so writers on different threads do not
 * bounce a shared line on every insert. */
struct rht__shard {
	_Alignas(64) _Atomic long n;
};

/*
 * Lock order: ctl->lock may be taken inside an RCU read-side section and
 * while holding nothing else; nobody waits for a grace period while holding
 * it. Bucket locks are never held while taking ctl->lock.
 */
struct rhashtable__ctl {
	struct rht__shard count[RHT_COUNT_SHARDS];
	pthread_mutex_t lock; /* future_tbl attach, tbl switch, walkers */
	pthread_cond_t cond;  /* wakes the worker */
	pthread_t worker;
	_Atomic bool stop;
	bool joined; /* the worker has ended (rhashtable_stop_worker) */
	_Atomic int run_pending;      /* worker kicked since it last looked */
	_Atomic int reseed_requested; /* a chain over RHT_ELASTICITY */
	_Atomic int force_reseed;     /* rht__force_reseed() */
	_Atomic bool busy;	      /* see rht__resize_busy() */
	int64_t last_reseed_ns;	      /* worker only */
	_Atomic unsigned long grows, shrinks, reseeds, alloc_failures;
};

/* Tells the walkers parked on old that it is gone; under ctl->lock. */
void rht__walkers_table_gone(struct bucket_table *old);

/* Wakes the resize worker. */
void rht__kick(struct rhashtable *ht);

/* Asks the worker for a same-size rehash with a new secret, now; if its
 * table cannot be allocated, it is retried as a flood re-seed would be. */
void rht__force_reseed(struct rhashtable *ht);

/* Sets the secret of an empty table that is not resizing (tests only). */
void rht__set_secret(struct rhashtable *ht, const struct siphash_key *key);

/* rhashtable_longest_chain(): walks in slices, taking the RCU read lock
 * for each. */
unsigned int rht__max_chain(struct rhashtable *ht);

/* Whether a resize is in flight: future_tbl attached (the switch to the new
 * table ends it; it does not wait for readers). */
bool rht__resizing(struct rhashtable *ht);

/*
 * Whether the worker is busy with a resize: from before it allocates the
 * new table until it has freed the old one after a grace period, a longer
 * span than rht__resizing()'s, so that everything a resize costs the
 * readers falls inside (what the resize benchmark measures). Do not wait
 * for it to clear inside a read-side section: the grace period it ends
 * with would wait for you.
 */
bool rht__resize_busy(struct rhashtable *ht);

#endif
