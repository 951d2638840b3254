/*
 * Per-thread statistics, declared once as an X-macro table. Each worker
 * owns its counters and is their only writer (a relaxed load and store, no
 * atomic read-modify-write, no shared cache line); `stats` sums them.
 */
#ifndef RHKV_SERVER_STATS_H
#define RHKV_SERVER_STATS_H

#include <stdatomic.h>

#define THREAD_STATS(X)  \
	X(cmd_get)       \
	X(cmd_set)       \
	X(cmd_flush)     \
	X(cmd_touch)     \
	X(get_hits)      \
	X(get_misses)    \
	X(get_expired)   \
	X(delete_misses) \
	X(delete_hits)   \
	X(incr_misses)   \
	X(incr_hits)     \
	X(decr_misses)   \
	X(decr_hits)     \
	X(cas_misses)    \
	X(cas_hits)      \
	X(cas_badval)    \
	X(touch_hits)    \
	X(touch_misses)  \
	X(bytes_read)    \
	X(bytes_written) \
	X(total_items)   \
	X(auth_errors)

struct thread_stats {
#define STATS_FIELD(name) _Atomic unsigned long name;
	THREAD_STATS(STATS_FIELD)
#undef STATS_FIELD
};

/* Sums, as plain numbers. */
struct stats_sum {
#define STATS_FIELD(name) unsigned long name;
	THREAD_STATS(STATS_FIELD)
#undef STATS_FIELD
};

/* Only the owning thread calls this. */
static inline void stat_add(_Atomic unsigned long *s, unsigned long v)
{
	atomic_store_explicit(s,
			      atomic_load_explicit(s, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

#define STAT_INC(st, name)    stat_add(&(st)->name, 1)
#define STAT_ADD(st, name, v) stat_add(&(st)->name, (v))

#endif
