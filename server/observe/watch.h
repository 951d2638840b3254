/*
 * `watch`: a connection turns into a log stream of what other
 * connections do (memcached's watchers): item_get lines for fetchers,
 * item_store lines for mutations, eviction lines for evictions.
 *
 * Producers are the workers executing commands (and, for evictions, any
 * thread that evicts); each watcher is a connection on its own worker.
 * One mutex guards the watchers and their buffers; while nobody watches,
 * a command pays one relaxed load (watch_wants). A watcher's buffer is
 * bounded (WATCH_BUF_BYTES): lines that do not fit are dropped and counted,
 * and the watcher is told with a "skipped=N" line. The watching connection
 * (net/conn_watch.c) drains the buffer into its output on a timer, as long
 * as that output is below --output-limit (a slow reader loses lines, it
 * does not grow the server's memory).
 */
#ifndef RHKV_SERVER_WATCH_H
#define RHKV_SERVER_WATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/text.h"

#define WATCHERS_MAX	8
#define WATCH_BUF_BYTES 65536
#define WATCH_BUF_TEXT	"65536" /* `stats settings`' watcher_logbuf_size */

struct item;

/* The watcher registry (struct observe's watch, observe.h). */
struct watch_hub {
	_Atomic unsigned int mask; /* PROTO_WATCH_* some watcher wants */
	_Atomic uint64_t gid;	   /* the lines' sequence numbers */
	pthread_mutex_t lock;	   /* the watchers and their buffers */
	struct watcher *w[WATCHERS_MAX];
	/* Lines, under lock: written into a watcher's buffer, dropped. */
	uint64_t sent, skipped;
};

/* For `stats`: watchers now, lines sent and lines dropped. */
void watch_counts(struct watch_hub *h, uint64_t *watchers, uint64_t *sent,
		  uint64_t *skipped);

void watch_hub_init(struct watch_hub *h);
void watch_hub_destroy(struct watch_hub *h);

/* Whether a watcher wants events of kind (PROTO_WATCH_*). */
static inline bool watch_wants(struct watch_hub *h, unsigned int kind)
{
	return atomic_load_explicit(&h->mask, memory_order_relaxed) & kind;
}

/*
 * A watcher of kinds joins the hub: lines of those kinds go to its buffer
 * (WATCH_BUF_BYTES; a line that does not fit is counted as skipped) until
 * it leaves. NULL when WATCHERS_MAX watch or out of memory. The net layer
 * makes a watching connection of one (net/conn_watch.c) and drains its
 * buffer into the connection's output.
 */
struct watcher *watch_join(struct watch_hub *h, unsigned int kinds);
void watch_leave(struct watch_hub *h, struct watcher *w);
/* Hands w's buffered lines to put(arg, ...), a "skipped=N" line first
 * when lines were dropped, and empties the buffer; under the hub's lock,
 * so put must not call into the hub. */
void watch_drain(struct watch_hub *h, struct watcher *w,
		 void (*put)(void *arg, const void *p, size_t n), void *arg);

/* The events, of the client on fd. status: memcached's word (found,
 * not_found, stored, ...). */
void watch_fetch(struct watch_hub *h, int fd, const char *key, size_t n,
		 bool found, uint32_t nbytes);
void watch_store(struct watch_hub *h, int fd, const char *key, size_t n,
		 const char *status, const char *cmd, int64_t ttl,
		 uint32_t nbytes);
/* For cache_set_evict_hook (arg: the hub). */
void watch_evict(void *hub, const struct item *it);

#endif
