/*
 * A session: what an executor and a front end may use of the connection a
 * request came in on. The connection (server/net/conn.h) holds one and
 * passes it to its protocol's decoder and reply operations and to the
 * executor; they never see the connection, its transport or its socket.
 * (In the executors and front ends a session is named c: the client.)
 *
 * A session belongs to one worker thread, which alone uses it.
 */
#ifndef RHKV_SERVER_SESSION_H
#define RHKV_SERVER_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct hotkeys_worker;
struct item;
struct auth;
struct cache;
struct config;
struct observe;
struct reply_ops;
struct thread_stats;

/*
 * What every session of the server shares: the top sets it up before the
 * workers start, and it does not change while they run (what it points
 * to keeps its own rules). Executors and front ends reach the rest of the
 * server only through it.
 */
struct session_env {
	const struct config *cfg;
	struct cache *cache;
	struct observe *obs; /* counters, stats, hot keys, watch */
	struct auth *auth;   /* -Y/--auth-file (auth.h); NULL: none */
	/* refresh_certs: loads the TLS certificate and key again; NULL on
	 * success, else why not. NULL: no TLS listener. */
	const char *(*tls_reload)(void *arg);
	void *tls_arg;
};

struct session {
	/* Set when the connection opens. */
	const struct session_env *env;
	unsigned int thread;	    /* the worker's id (0-based) */
	struct thread_stats *stats; /* the worker's counters */
	struct hotkeys_worker *hot; /* the worker's hot-key samples */
	int fd;			    /* for messages; -1 when none */
	/* Replies go here (session_add); the connection writes them. */
	struct evbuffer *out;
	/* The reply operations and per-connection state of the protocol
	 * the first byte chose (NULL before it). */
	const struct reply_ops *reply;
	void *pstate;
	bool authed;	      /* no password set, or auth succeeded */
	bool close_when_done; /* quit, line too long, shutdown */
	bool broken;	      /* output lost: close without a reply */
	/* The text decoder's hint: bytes known to hold no newline. */
	uint32_t text_no_newline;
	/* The text decoder's too: the request at the start of the input is
	 * a storage command whose line is here and whose value is not yet
	 * (`stats conns` says conn_nread). */
	bool text_value_pending;
	size_t reply_start; /* output bytes before the running request */
	/* Requests run in this pass of the batch loop whose replies would
	 * still be in memcached's pipeline: a get or an mn sends them there,
	 * so they start the count again. metadump and watch refuse to follow
	 * any (cmd.c), as memcached's do. */
	uint32_t batch_ran;
	/* lru_crawler metadump in progress: written a batch at a time while
	 * the output is below --output-limit (cmd_continue). */
	bool dumping;
	uint64_t dump_cursor;
	/* `watch`: turns the connection into a log stream of kinds
	 * (PROTO_WATCH_*, watch.h); false when it cannot. The connection's
	 * own (net/conn_watch.c). */
	bool (*watch)(struct session *c, unsigned int kinds);
};

/* Values up to this size are copied into the output inside the read-side
 * section; larger ones (large items: cache.h) are referenced, pinned by
 * the item's refcount. */
#define REPLY_COPY_MAX 16384

/*
 * Appends n bytes of a live item at p (inside it) to the output: copied
 * when small, else by reference, pinning the item until the bytes have
 * been written. When the reference cannot be queued the bytes are copied;
 * when that fails too the session is marked broken (its connection closes
 * without sending anything more) and false is returned.
 */
bool session_add_item_bytes(struct session *c, struct item *it, const char *p,
			    size_t n);

/* Appends bytes to the output; a failure marks the session broken. */
void session_add(struct session *c, const void *p, size_t n);

#endif
