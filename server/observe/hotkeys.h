/*
 * Hot keys: which keys take the most requests, reads and writes apart.
 *
 * Each worker samples its requests (one in --hotkeys-sample on average, at
 * random gaps so that a periodic key pattern cannot hide behind the
 * sampling period) into a space-saving sketch per request class: k
 * counters, a new key takes the counter with the smallest count and
 * inherits that count as its error. For every key the sketch holds,
 * count - err <= true samples <= count; a key it does not hold was
 * sampled at most min times, the smallest count (0 while a counter is
 * free). The counts cover a window of --hotkeys-window seconds, the
 * current one and the one before.
 *
 * Concurrency: a worker's tracker is written by its worker only, under
 * the tracker's mutex, and only on a sampled request and at its tick
 * (window turns); a request that is not sampled touches only the
 * worker's own countdown, no lock, no atomic. A reader (`stats hotkeys`,
 * the metrics endpoint, any thread) takes each worker's mutex in turn and
 * merges that worker's sketches into its own table (struct hk_merge),
 * which needs no lock.
 */
#ifndef RHKV_SERVER_HOTKEYS_H
#define RHKV_SERVER_HOTKEYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "common/siphash.h"
#include "proto/text.h"

/* Counters per worker, class and window: the error bound is 1/k of that
 * worker's samples in the window. */
#define HOTKEYS_COUNTERS 512
/* `stats hotkeys [n]`: n's default and largest value. */
#define HOTKEYS_TOP_DEFAULT 10
#define HOTKEYS_TOP_MAX	    100

enum hotkeys_class { HOTKEYS_READ, HOTKEYS_WRITE, HOTKEYS_NCLASSES };

extern const char *const hotkeys_class_name[HOTKEYS_NCLASSES];

/* ---- the space-saving sketch: one writer, no locking of its own ---- */

/* A counter's key, kept apart from what every sample reads. */
struct hk_counter {
	uint64_t err; /* at most this much of its count is not this key's */
	uint8_t nkey;
	char key[PROTO_KEY_MAX];
};

/* A heap entry: a counter's count (samples' weight, an upper bound). */
struct hk_heap {
	uint64_t count;
	uint32_t ci;
};

struct hk_sketch {
	uint32_t k, n;	 /* counters, counters in use */
	uint32_t nslots; /* the index: a power of two, at least 2k */
	uint64_t total;	 /* weight added */
	const struct siphash_key *seed;
	struct hk_counter *c; /* [k] */
	struct hk_heap *heap; /* [n]: a min-heap by count */
	uint16_t *pos;	      /* [k]: each counter's place in the heap */
	uint64_t *hash;	      /* [k]: each counter's key's hash */
	uint16_t *slot;	      /* counter index + 1, linear probing; 0: empty */
};

/* 0, or -ENOMEM. k is at most 32768. seed is shared, not copied. */
int hk_sketch_init(struct hk_sketch *s, uint32_t k,
		   const struct siphash_key *seed);
void hk_sketch_free(struct hk_sketch *s);
/* Forgets every key (the memory stays). */
void hk_sketch_clear(struct hk_sketch *s);
/* Counts w requests of key (1..PROTO_KEY_MAX bytes): one sample that
 * stands for w requests (the gap since the previous sample). */
void hk_sketch_add(struct hk_sketch *s, const char *key, size_t n, uint64_t w);
/* Counter i's count (i < s->n). */
static inline uint64_t hk_sketch_count(const struct hk_sketch *s, uint32_t i)
{
	return s->heap[s->pos[i]].count;
}

/* What a key not held may have had: the smallest count, 0 while a
 * counter is free. */
uint64_t hk_sketch_min(const struct hk_sketch *s);

/* ---- merging sketches: a reader's table ---- */

struct hk_entry {
	uint64_t hash;
	int64_t count, err; /* minus the sum of the mins (hk_merge_top) */
	uint32_t key_off;   /* into the merge's arena */
	uint8_t nkey;
};

struct hk_merge {
	struct hk_entry *e;
	uint32_t n, cap; /* entries; cap a power of two, or 0 */
	uint32_t *slot;	 /* entry + 1, linear probing */
	char *arena;	 /* the keys */
	size_t arena_n, arena_cap;
	uint64_t base;	/* sum of the merged sketches' mins */
	uint64_t total; /* sum of their totals */
	bool oom;	/* an allocation failed: keys were left out */
};

/* One key of a merge: count - err <= its true samples <= count, where the
 * merged sketches counted disjoint parts of the stream. */
struct hk_top {
	uint64_t count, err;
	const char *key; /* in the merge's arena */
	uint8_t nkey;
};

void hk_merge_init(struct hk_merge *m);
void hk_merge_free(struct hk_merge *m);
/* Adds a sketch's counters (the sketch is only read; every sketch merged
 * must hash with the same seed). */
void hk_merge_add(struct hk_merge *m, const struct hk_sketch *s);
/* The n highest counts into top[] (ties: the smaller error first);
 * returns how many. */
size_t hk_merge_top(struct hk_merge *m, struct hk_top *top, size_t n);
/* A key not among the entries was sampled at most this often. */
static inline uint64_t hk_merge_bound(const struct hk_merge *m)
{
	return m->base;
}

/* ---- a worker's tracker ---- */

/* Shared by every worker's tracker: set before the workers start. */
struct hotkeys_params {
	uint32_t sample; /* one request in sample; 0: tracking off */
	int64_t window_ms;
	int64_t started_ms; /* monotonic: when tracking started */
	struct siphash_key seed;
};

struct hotkeys_window {
	int64_t epoch; /* monotonic ms / window_ms */
	uint64_t requests[HOTKEYS_NCLASSES];
	struct hk_sketch sk[HOTKEYS_NCLASSES];
};

struct hotkeys_worker {
	/* The worker's own, read by no other thread: requests left until
	 * the next sample, and the gap that countdown started from. */
	uint32_t left[HOTKEYS_NCLASSES];
	uint32_t drawn[HOTKEYS_NCLASSES];
	uint64_t rng;
	const struct hotkeys_params *p;
	bool on; /* set before the worker starts, then constant */
	/* Under lock: cur is win[cur], the window before it the other. */
	pthread_mutex_t lock;
	unsigned int cur;
	struct hotkeys_window win[2];
};

/* Fills p: sample 0 turns tracking off; a fresh random seed. */
void hotkeys_params_init(struct hotkeys_params *p, uint32_t sample,
			 int window_s);

/* Sets up a worker's tracker (params p->sample 0: off, nothing
 * allocated). 0, or -ENOMEM. */
int hotkeys_worker_init(struct hotkeys_worker *h,
			const struct hotkeys_params *p, unsigned int id);
void hotkeys_worker_free(struct hotkeys_worker *h);

/* The sampled request's slow path (hotkeys_note). Worker only. */
void hotkeys__sample(struct hotkeys_worker *h, enum hotkeys_class cls,
		     struct cache_key key);

/*
 * One request of class cls on key, on the worker that owns h: most calls
 * cost a decrement and a branch. A tracker that is off, or was never set
 * up (all zero), counts down from 2^32 and re-arms there.
 */
static inline void hotkeys_note(struct hotkeys_worker *h,
				enum hotkeys_class cls, struct cache_key key)
{
	if (__builtin_expect(--h->left[cls] != 0, 1))
		return;
	hotkeys__sample(h, cls, key);
}

/* The worker's tick: turns its window when the epoch has moved on. */
void hotkeys_tick(struct hotkeys_worker *h);

/* What a reader sees of one class over every worker. */
struct hotkeys_report {
	const struct hotkeys_params *p;
	enum hotkeys_class cls;
	int64_t epoch, now_ms;
	double seconds;	   /* the span the counts cover */
	uint64_t requests; /* of the class, every key, in that span */
	/* Requests: a key not listed had at most this many (with sampling:
	 * within three standard deviations). */
	uint64_t bound;
	size_t n;	       /* entries in top */
	struct hk_top *top;    /* count and err in requests */
	struct hk_merge merge; /* owns top's keys */
};

/*
 * A reader's merge of class cls over every worker's current and previous
 * window, any thread: begin, add each worker's tracker (takes its lock for
 * the time of the copy), then end keeps the n highest counts (n at most
 * HOTKEYS_TOP_MAX). Free with hotkeys_report_free().
 */
void hotkeys_report_begin(struct hotkeys_report *r,
			  const struct hotkeys_params *p,
			  enum hotkeys_class cls);
void hotkeys_report_add(struct hotkeys_report *r, struct hotkeys_worker *h);
/* 0, or -ENOMEM (r holds nothing to list, and is still to be freed). */
int hotkeys_report_end(struct hotkeys_report *r, size_t n);
void hotkeys_report_free(struct hotkeys_report *r);

/* Whether an entry's count is exact: no sketch error, no sampling. */
static inline bool hotkeys_exact(const struct hotkeys_report *r,
				 const struct hk_top *t)
{
	return r->p->sample == 1 && t->err == 0;
}

#endif
