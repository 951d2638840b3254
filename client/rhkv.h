/*
 * librhkv: the C client of rhkvd, over its binary protocol (msgpack frames;
 * proto/PROTOCOL.md in the source tree). This is the only header to
 * include; link with `pkg-config --cflags --libs rhkv`.
 *
 * Threads: a handle is used by one thread at a time; different handles may
 * be used in parallel. Nothing is static or global.
 *
 * Errors: every call returns 0 or a negative RHKV_E* code; rhkv_strerror()
 * names a code, rhkv_errstr() tells the last failure of a handle in words.
 *
 * Memory: values come back in struct rhkv_value, whose data the library
 * allocates and the caller frees with rhkv_value_free() (data is followed
 * by a NUL byte not counted in len, so text values print directly).
 * rhkv_get_into() copies into a caller's buffer instead.
 *
 * Connections: a call finds the connection lost (RHKV_ECONN) or timed out
 * (RHKV_ETIMEDOUT); the handle then drops it and the next call connects
 * again. A command is never sent twice on its own: after RHKV_ECONN or
 * RHKV_ETIMEDOUT the caller cannot know whether a write took effect, and
 * decides whether to repeat it.
 */
#ifndef RHKV_H
#define RHKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RHKV_VERSION_MAJOR 0
#define RHKV_VERSION_MINOR 1

enum rhkv_error {
	RHKV_OK = 0,
	RHKV_ENOTFOUND = -1,	/* no such key */
	RHKV_ENOTSTORED = -2,	/* add: exists; replace/append: missing */
	RHKV_EEXISTS = -3,	/* cas: the item changed */
	RHKV_ETOOLARGE = -4,	/* value above the server's item size limit */
	RHKV_EBADKEY = -5,	/* empty, > 250 bytes, space or control byte */
	RHKV_ETIMEDOUT = -6,	/* no reply within the I/O timeout */
	RHKV_ECONN = -7,	/* cannot connect, or the connection was lost */
	RHKV_ESERVER = -8,	/* the server failed (out of memory, ...) */
	RHKV_EPROTO = -9,	/* a reply that breaks the protocol */
	RHKV_ENONNUMERIC = -10, /* incr/decr of a non-number */
	RHKV_ENOMEM = -11,	/* out of memory here */
	RHKV_EINVAL = -12,	/* a bad argument */
	RHKV_ERANGE = -13,	/* rhkv_get_into: the buffer is too small */
	RHKV_EAUTH = -14,	/* authentication required or refused */
};

typedef struct rhkv rhkv;

struct rhkv_options {
	int connect_timeout_ms; /* default 1000; 0: wait forever */
	int io_timeout_ms;	/* per call, default 1000; 0: forever */
	int nodelay;		/* TCP_NODELAY, default 1 */
	const char *password;	/* sent with AUTH after connecting; NULL */
};

/* Fills o with the defaults. */
void rhkv_options_init(struct rhkv_options *o);

/*
 * Connects to host:port (a name or address), or to the unix socket at host
 * when host starts with '/' (port ignored). o may be NULL (defaults).
 * *out is set even on failure when the handle itself could be made, so
 * that rhkv_errstr() can tell why; close it with rhkv_close().
 */
int rhkv_connect(rhkv **out, const char *host, int port,
		 const struct rhkv_options *o);
void rhkv_close(rhkv *c);

const char *rhkv_strerror(int err);
/* The last failure of c, in words ("" when none). */
const char *rhkv_errstr(const rhkv *c);

struct rhkv_value {
	char *data; /* owned: rhkv_value_free(); NUL after len bytes */
	size_t len;
	uint32_t flags;
	uint64_t cas;
};

void rhkv_value_free(struct rhkv_value *v);

/* Reads key: 0 and *out filled, or RHKV_ENOTFOUND. */
int rhkv_get(rhkv *c, const void *key, size_t klen, struct rhkv_value *out);
/* As rhkv_get into buf[cap]; *len is the value's length even when it is
 * RHKV_ERANGE. flags and cas may be NULL. */
int rhkv_get_into(rhkv *c, const void *key, size_t klen, void *buf, size_t cap,
		  size_t *len, uint32_t *flags, uint64_t *cas);
/* get and touch: sets the exptime of a live item and returns it. */
int rhkv_gat(rhkv *c, const void *key, size_t klen, int64_t exptime,
	     struct rhkv_value *out);

/* Storage: cas_out (may be NULL) receives the stored item's cas. exptime:
 * 0 never, up to 30 days relative seconds, else a unix time. */
int rhkv_set(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t *cas_out);
int rhkv_add(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t *cas_out);
int rhkv_replace(rhkv *c, const void *key, size_t klen, const void *val,
		 size_t vlen, uint32_t flags, int64_t exptime,
		 uint64_t *cas_out);
int rhkv_append(rhkv *c, const void *key, size_t klen, const void *val,
		size_t vlen, uint64_t *cas_out);
int rhkv_prepend(rhkv *c, const void *key, size_t klen, const void *val,
		 size_t vlen, uint64_t *cas_out);
/* Stores only if the item's cas is still `cas`: else RHKV_EEXISTS (changed)
 * or RHKV_ENOTFOUND (gone). */
int rhkv_cas(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t cas,
	     uint64_t *cas_out);

int rhkv_delete(rhkv *c, const void *key, size_t klen);
/* *value (may be NULL) receives the new value. */
int rhkv_incr(rhkv *c, const void *key, size_t klen, uint64_t delta,
	      uint64_t *value);
int rhkv_decr(rhkv *c, const void *key, size_t klen, uint64_t delta,
	      uint64_t *value);
int rhkv_touch(rhkv *c, const void *key, size_t klen, int64_t exptime);
/* Invalidates every item, now (delay 0) or after delay seconds. */
int rhkv_flush_all(rhkv *c, int64_t delay);
/* The server's version string into buf[cap] (NUL-terminated). */
int rhkv_version(rhkv *c, char *buf, size_t cap);
int rhkv_ping(rhkv *c);
/* Asks the server to close; the handle reconnects on its next call. */
int rhkv_quit(rhkv *c);

struct rhkv_stat {
	char *name;
	char *value;
};

/* group: NULL or "" for the general statistics, else "settings",
 * "table", "latency", "memory". Free with rhkv_stats_free(). */
int rhkv_stats(rhkv *c, const char *group, struct rhkv_stat **stats, size_t *n);
void rhkv_stats_free(struct rhkv_stat *stats, size_t n);

/* ---- multi-key and pipelines ---- */

/*
 * Reads n keys in one round trip. out[i] is filled for hits; for misses
 * out[i].data is NULL and status[i] (if status is not NULL) is
 * RHKV_ENOTFOUND. Returns 0 when the exchange worked (misses included).
 */
int rhkv_mget(rhkv *c, size_t n, const void *const *keys, const size_t *klens,
	      struct rhkv_value *out, int *status);

struct rhkv_item {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
	uint32_t flags;
	int64_t exptime;
};

/* Sets n items in one round trip; status[i] (may be NULL) per item.
 * Returns 0 when the exchange worked, even if some items failed. */
int rhkv_mset(rhkv *c, size_t n, const struct rhkv_item *items, int *status);

/*
 * A pipeline: queue any number of commands (nothing is sent), then
 * rhkv_pipeline_exec() sends them in one write and reads every reply, in
 * order. Each queued command gets an index (0, 1, ...) for its result.
 */
typedef struct rhkv_pipeline rhkv_pipeline;

rhkv_pipeline *rhkv_pipeline_new(rhkv *c);
void rhkv_pipeline_free(rhkv_pipeline *p);
/* Queue functions return the command's index, or a negative RHKV_E*. */
long rhkv_pipeline_get(rhkv_pipeline *p, const void *key, size_t klen);
long rhkv_pipeline_set(rhkv_pipeline *p, const void *key, size_t klen,
		       const void *val, size_t vlen, uint32_t flags,
		       int64_t exptime);
long rhkv_pipeline_delete(rhkv_pipeline *p, const void *key, size_t klen);
long rhkv_pipeline_incr(rhkv_pipeline *p, const void *key, size_t klen,
			uint64_t delta);
long rhkv_pipeline_touch(rhkv_pipeline *p, const void *key, size_t klen,
			 int64_t exptime);
/* Sends and reads everything queued. 0, or the connection's error: then
 * the results of commands without a reply are that error too. */
int rhkv_pipeline_exec(rhkv_pipeline *p);
/* The result of command i: 0 or RHKV_E*. For a get, *out (may be NULL)
 * takes over its value (free it with rhkv_value_free()). */
int rhkv_pipeline_result(rhkv_pipeline *p, size_t i, struct rhkv_value *out);
/* incr: the new value; set: the cas. 0 when there is none. */
uint64_t rhkv_pipeline_number(const rhkv_pipeline *p, size_t i);
/* Empties the pipeline for reuse (results are dropped). */
void rhkv_pipeline_reset(rhkv_pipeline *p);

/* ---- scanning ---- */

/*
 * One scan call: keys from cursor (0 to start), at most about count
 * (1..1000), matching the glob match (NULL: all); *next is 0 when the scan
 * is complete. keys[i] are NUL-terminated; free with rhkv_keys_free().
 */
int rhkv_scan(rhkv *c, uint64_t cursor, unsigned int count, const char *match,
	      uint64_t *next, char ***keys, size_t *n);
void rhkv_keys_free(char **keys, size_t n);

/*
 * An iterator over a whole scan that hides the cursor: every key present
 * for the whole iteration comes back at least once (duplicates possible).
 */
typedef struct rhkv_scan_iter rhkv_scan_iter;

rhkv_scan_iter *rhkv_scan_begin(rhkv *c, const char *match, unsigned int count);
/* 1 and *key (valid until the next call) for the next key, 0 at the end,
 * or a negative RHKV_E*. */
int rhkv_scan_next(rhkv_scan_iter *it, const char **key, size_t *klen);
void rhkv_scan_end(rhkv_scan_iter *it);

#ifdef __cplusplus
}
#endif

#endif
