/*
 * Statistics: the per-thread counters, declared once as an X-macro table,
 * and every `stats` group, emitted entry by entry into a stats_sink. The
 * text protocol's "STAT name value" lines, the binary protocol's STATS map
 * and the Prometheus endpoint (metrics.c) are sinks over the same entries.
 *
 * Each worker owns its counters and is their only writer (a relaxed load
 * and store, no atomic read-modify-write, no shared cache line); `stats`
 * sums them.
 */
#ifndef RHKV_SERVER_STATS_H
#define RHKV_SERVER_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "latency.h"

/*
 * X(name, type, help): type is COUNTER (only grows, until `stats reset`)
 * or GAUGE (goes both ways); help says what the number means (one line,
 * no backslash: Prometheus' # HELP carries it as it is).
 */
#define THREAD_STATS(X)                                                       \
	X(cmd_get, COUNTER,                                                   \
	  "Keys looked up by retrieval commands (get, gets, gat, gats, mg)")  \
	X(cmd_set, COUNTER,                                                   \
	  "Storage commands (set, add, replace, append, prepend, cas, ms)")   \
	X(cmd_flush, COUNTER, "flush_all commands")                           \
	X(cmd_flush_prefix, COUNTER, "flush_prefix and mf commands")          \
	X(cmd_touch, COUNTER, "Keys touched (touch, gat, gats, mg with T)")   \
	X(cmd_meta, COUNTER, "me (meta debug) commands, as memcached counts") \
	X(get_hits, COUNTER, "Keys requested and found")                      \
	X(get_misses, COUNTER, "Keys requested and not found")                \
	X(get_expired, COUNTER,                                               \
	  "Keys requested and not found because their item had expired")      \
	X(get_flushed, COUNTER,                                               \
	  "Keys requested and not found because flush_all or a prefix "       \
	  "flush invalidated their item")                                     \
	X(delete_misses, COUNTER, "Deletes of a key that was not there")      \
	X(delete_hits, COUNTER, "Deletes of a key that was there")            \
	X(incr_misses, COUNTER, "Increments of a key that was not there")     \
	X(incr_hits, COUNTER, "Increments of a key that was there")           \
	X(decr_misses, COUNTER, "Decrements of a key that was not there")     \
	X(decr_hits, COUNTER, "Decrements of a key that was there")           \
	X(cas_misses, COUNTER, "cas commands on a key that was not there")    \
	X(cas_hits, COUNTER,                                                  \
	  "cas commands that stored: the cas value matched")                  \
	X(cas_badval, COUNTER,                                                \
	  "cas commands refused: the item changed since its cas value was "   \
	  "read")                                                             \
	X(touch_hits, COUNTER, "Keys touched that were there")                \
	X(touch_misses, COUNTER, "Keys touched that were not there")          \
	X(store_too_large, COUNTER,                                           \
	  "Storage commands refused: the value was over the item size limit") \
	X(store_no_memory, COUNTER,                                           \
	  "Storage commands refused: the item could not fit in the cache")    \
	X(auth_cmds, COUNTER, "Authentication attempts (auth commands)")      \
	X(bytes_read, COUNTER, "Bytes read from client connections")          \
	X(bytes_written, COUNTER, "Bytes written to client connections")      \
	X(total_items, COUNTER, "Items stored (successful storage commands)") \
	X(auth_errors, COUNTER,                                               \
	  "Authentication attempts with a wrong password")                    \
	X(idle_kicks, COUNTER, "Connections closed by --idle-timeout")        \
	X(conn_yields, COUNTER,                                               \
	  "Times a connection stopped executing its pipelined requests "      \
	  "until its replies drained (output past --output-limit)")           \
	X(conn_memory_waits, COUNTER,                                         \
	  "Times a connection stopped reading a request until other "         \
	  "connections' buffers gave back --conn-memory")                     \
	X(ssl_handshake_errors, COUNTER,                                      \
	  "TLS handshakes that failed or timed out")                          \
	X(tls_handshakes, COUNTER, "TLS handshakes completed")                \
	X(tls_resumed, COUNTER,                                               \
	  "TLS handshakes completed by resuming a session")

struct thread_stats {
#define STATS_FIELD(name, type, help) _Atomic unsigned long name;
	THREAD_STATS(STATS_FIELD)
#undef STATS_FIELD
};

/* Sums, as plain numbers. */
struct stats_sum {
#define STATS_FIELD(name, type, help) unsigned long name;
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

/* An incr or decr (classic or meta): a hit, or a miss (a create too). */
#define STAT_ARITH(st, incr, hit)                                          \
	stat_add((incr) ? ((hit) ? &(st)->incr_hits : &(st)->incr_misses)  \
			: ((hit) ? &(st)->decr_hits : &(st)->decr_misses), \
		 1)

struct conn;
struct session;
struct observe;
struct evbuffer;

/* What an entry's value is, and so which member of its union holds it. */
enum stats_kind {
	STATS_COUNTER, /* u: only grows (until `stats reset`) */
	STATS_GAUGE,   /* u: goes both ways */
	STATS_SECONDS, /* sec, usec: time spent, only grows */
	STATS_TEXT,    /* s: a string */
	STATS_REAL,    /* r: shown with 3 decimals */
};

struct stats_entry {
	const char *name;
	/* Not NULL: the text protocol shows this line (without its line end)
	 * instead of "STAT name value": `stats cachedump`'s "ITEM ..." and
	 * `stats detail dump`'s "PREFIX ..." lines. */
	const char *line;
	/* What it means (one line, no backslash); NULL only for the entries
	 * of `stats settings`. */
	const char *help;
	enum stats_kind kind;
	union {
		uint64_t u;
		struct {
			int64_t sec;
			long usec;
		};
		const char *s;
		double r;
	};
};

/*
 * Where entries go: emit is called once per entry, in the order `stats`
 * shows them; the entry and its strings live only for the call.
 */
struct stats_sink {
	void (*emit)(void *arg, const struct stats_entry *e);
	void *arg;
};

/* What `stats` asked for. */
struct stats_query {
	const char *group; /* n bytes; n == 0: the general stats */
	size_t n;
	const char *args; /* what follows the group ("1 0"), nargs bytes */
	size_t nargs;
	const struct session *self; /* the asking session, or NULL */
};

/* A client connection as `stats conns` shows it. */
struct stats_conn_row {
	int fd;
	const char *state;   /* memcached's name: conn_read, conn_nread, ... */
	int64_t last_active; /* seconds */
	unsigned int thread; /* its worker (0-based) */
};

/*
 * The net layer's walk of its client connections with a socket, for
 * `stats conns` (struct observe_net's conns, observe.h): row(a, ...) for
 * each, while none of them can close; the asking session's state is
 * conn_parse_cmd. net is the net layer's own argument.
 */
typedef void stats_conns_walk_fn(void *net, const struct session *self,
				 void (*row)(void *a,
					     const struct stats_conn_row *r),
				 void *a);

/*
 * Emits stats group q->group into sink; returns false for an unknown
 * group (nothing emitted). `reset` is not a group: callers call
 * observe_reset_stats(); nor are `detail on|off`: stats_detail_enable().
 * Arguments are checked first with stats_args_error().
 */
bool stats_emit(struct observe *obs, const struct stats_query *q,
		const struct stats_sink *sink);

/* Why q's arguments are wrong (memcached's CLIENT_ERROR text), or NULL. */
const char *stats_args_error(const struct stats_query *q);

/* ---- stats detail: per key prefix (up to ':') get/hit/set/del counts ---- */

enum stats_detail_op { DETAIL_GET, DETAIL_SET, DETAIL_DEL };

/* Turns counting on or off (counts so far are kept). */
void stats_detail_enable(struct observe *obs, bool on);
/* Counts op on key's prefix (hit: a get that found the key); a no-op
 * unless detail is on. Any thread. */
void stats_detail_record(struct observe *obs, const char *key, size_t n,
			 enum stats_detail_op op, bool hit);
/* Forgets every prefix and its counts (`stats reset`); counting stays on
 * or off. Any thread. */
void stats_detail_reset(struct observe *obs);
/* Frees the counts (at shutdown). */
void stats_detail_free(struct observe *obs);
/* `stats detail dump`'s entries (stats_emit calls it). */
void stats_detail_dump(struct observe *obs, const struct stats_sink *sink);

/* Enough for any value stats_entry_value() formats (-DBL_MAX as %.3f is
 * 314 characters). */
#define STATS_VALUE_MAX 320

/* The value as the text protocol shows it: buf, or the entry's string. */
const char *stats_entry_value(const struct stats_entry *e,
			      char buf[STATS_VALUE_MAX]);

/* The text sink: arg is a struct evbuffer *, each entry a line
 * "STAT name value\r\n". */
void stats_text_entry(void *arg, const struct stats_entry *e);

/* The hot keys' top 10 per class as Prometheus series (stats_hotkeys.c;
 * key names only with --metrics-hotkey-names). */
void stats_hotkeys_metrics(struct observe *obs, struct evbuffer *b);

/* The general stats (stats_emit with n == 0). */
void observe_stats_each(struct observe *obs, const struct stats_sink *sink);
/* Adds up every worker's counters, minus the last reset. */
void observe_sum_stats(struct observe *obs, struct stats_sum *sum);
/* Merges every worker's histograms for each class, minus the last reset. */
void observe_sum_latency(struct observe *obs,
			 struct latency_snapshot out[LAT_NCLASSES]);
/* `stats reset`: counters, connection totals and histograms start over;
 * `stats detail`'s prefixes are forgotten. */
void observe_reset_stats(struct observe *obs);

#endif
