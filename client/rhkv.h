/*
 * librhkv: the C client of rhkvd, over its binary protocol (msgpack frames;
 * proto/PROTOCOL.md in the source tree). This is the only header to
 * include; link with `pkg-config --cflags --libs rhkv`.
 *
 * Threads: a handle is used by one thread at a time; different handles may
 * be used in parallel. Nothing is static or global. A pool (rhkv_pool) is
 * the one object that threads share: it lends each a handle or cluster.
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
 * decides whether to repeat it. With TLS (struct rhkv_options), a server
 * whose certificate does not verify is refused with RHKV_ETLS.
 *
 * Three uses, each an example program that the test suite builds and runs
 * (client/examples/ in the source tree):
 *   - an event-loop service (event_loop.c): rhkv_new(), an adapter
 *     (rhkv_libevent.h, or rhkv_poll()), rhkv_send() with callbacks;
 *   - a batch job (batch_job.c): a streaming pipeline
 *     (rhkv_pipeline_stream()) of any length in bounded memory;
 *   - a multi-threaded service (pooled_service.c): a pool of clusters
 *     (rhkv_pool_new_cluster()), each request checking one out.
 */
#ifndef RHKV_H
#define RHKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RHKV_VERSION_MAJOR 0
#define RHKV_VERSION_MINOR 2

enum rhkv_error {
	RHKV_OK = 0,
	RHKV_ENOTFOUND = -1,	/* no such key */
	RHKV_ENOTSTORED = -2,	/* add: exists; replace/append: missing */
	RHKV_EEXISTS = -3,	/* cas: the item changed */
	RHKV_ETOOLARGE = -4,	/* value above the server's item size limit */
	RHKV_EBADKEY = -5,	/* empty or > 250 bytes */
	RHKV_ETIMEDOUT = -6,	/* no reply within the I/O timeout */
	RHKV_ECONN = -7,	/* cannot connect, or the connection was lost */
	RHKV_ESERVER = -8,	/* the server failed (out of memory, ...) */
	RHKV_EPROTO = -9,	/* a reply that breaks the protocol */
	RHKV_ENONNUMERIC = -10, /* incr/decr of a non-number */
	RHKV_ENOMEM = -11,	/* out of memory here */
	RHKV_EINVAL = -12,	/* a bad argument */
	RHKV_ERANGE = -13,	/* rhkv_get_into: the buffer is too small */
	RHKV_EAUTH = -14,	/* authentication required or refused */
	RHKV_ETLS = -15,	/* TLS failed: certificate not verified, ... */
};

typedef struct rhkv rhkv;

struct rhkv_options {
	int connect_timeout_ms; /* default 1000; 0: wait forever */
	int io_timeout_ms;	/* per call, default 1000; 0: forever */
	int nodelay;		/* TCP_NODELAY, default 1 */
	const char *password;	/* sent with AUTH after connecting; NULL */

	/*
	 * TLS (OpenSSL, TLS 1.2 at least). The handshake is part of every
	 * connect and reconnect, within connect_timeout_ms. The server's
	 * certificate must verify (its chain against the CA, its name against
	 * tls_server_name) or the connection is refused with RHKV_ETLS and
	 * rhkv_errstr() saying why. Strings are copied by rhkv_connect();
	 * files are PEM and read at the first connect.
	 */
	int tls;		     /* 1: speak TLS; default 0 */
	const char *tls_ca_file;     /* CAs to trust; NULL: the system's */
	const char *tls_cert_file;   /* a certificate (chain) to present
					when the server asks; NULL: none */
	const char *tls_key_file;    /* its private key; NULL: in
					tls_cert_file */
	const char *tls_server_name; /* the name checked in the server's
					certificate and sent as SNI; NULL:
					the host of rhkv_connect() (an IP
					address is checked against the
					certificate's IP addresses, and no SNI
					is sent); needed over a unix socket */
	int tls_insecure;	     /* 1: accept any certificate (tests
					only: anyone on the path can read and
					change the traffic); default 0 */

	/* TCP keepalive: probes after this many idle seconds (then every
	 * third of it, 3 unanswered closing the connection), so that a
	 * server gone without a word (a dead host, a dropped NAT entry) is
	 * found out by an idle handle too. Default 15; 0: off. */
	int keepalive_s;
	/* Prepended to every key on the wire (a namespace: "app1:"), copied
	 * by rhkv_connect(); callers name keys without it, and scans see the
	 * namespace only (its keys given back without the prefix). The
	 * prefix counts towards the 250-byte key limit. NULL: none. */
	const char *key_prefix;
	/* After the connection was dropped for a timeout or a lost server,
	 * commands fail at once with RHKV_ECONN for this many milliseconds
	 * instead of each waiting out its own timeout against a server that
	 * hangs (a thread pool's calls would otherwise queue behind it).
	 * Default 0: every command tries again. */
	int down_ms;
	/* A pipeline sends its queued frames once they pass this many bytes,
	 * reading replies as they come, so that a pipeline of any length
	 * holds about this much request data. Default 1 MiB; 0: the
	 * default. */
	size_t send_budget;
	/* The user name AUTH sends with password, copied by rhkv_connect():
	 * a server whose auth file lists users (`user:password` lines)
	 * checks both; one with a single password accepts any. NULL: none
	 * (AUTH sends the password alone). */
	const char *user;
};

/* Fills o with the defaults. */
void rhkv_options_init(struct rhkv_options *o);

/*
 * Changes the timeouts of a live handle (for the next connect, and for
 * the commands waiting now: the I/O deadline is counted from the last
 * byte moved). Negative values are left as they are. An event loop
 * attached with rhkv_set_event_hooks() is told when a deadline comes
 * nearer (see there). 0 or RHKV_EINVAL.
 */
int rhkv_set_timeouts(rhkv *c, int connect_timeout_ms, int io_timeout_ms);

/*
 * Connects to host:port (a name or address), or to the unix socket at host
 * when host starts with '/' (port ignored). o may be NULL (defaults).
 * *out is set even on failure when the handle itself could be made, so
 * that rhkv_errstr() can tell why; close it with rhkv_close().
 */
int rhkv_connect(rhkv **out, const char *host, int port,
		 const struct rhkv_options *o);
/* As rhkv_connect, without connecting: the first command (blocking or
 * not) connects. For event loops, where a connect must not block (host
 * names are still resolved with getaddrinfo(), which may: give an
 * address). 0, RHKV_EINVAL or RHKV_ENOMEM (*out NULL then). */
int rhkv_new(rhkv **out, const char *host, int port,
	     const struct rhkv_options *o);
/*
 * Closes the connection (commands still waiting fail with RHKV_ECONN,
 * their callbacks called) and frees c. NULL is fine.
 *
 * From inside a callback (c's own, or another handle's while c is inside
 * a call that runs callbacks) the close is deferred, as hiredis does: the
 * connection closes at once and c starts nothing new (rhkv_send() and
 * other calls on it fail with RHKV_ECONN), and c is freed when the
 * library call that ran the callback returns (rhkv_on_readable(),
 * rhkv_on_timer(), rhkv_poll(), a blocking call, ...; that call then
 * returns an error, never 0). After that call c must not be used: take it
 * out of the arrays given to rhkv_poll(). A pipeline or a scan iterator
 * keeps its handle: one closed while they exist (a streaming pipeline's
 * callback may close it) is freed by the last rhkv_pipeline_free() or
 * rhkv_scan_end(), and meanwhile their calls fail with RHKV_ECONN. A
 * handle of a cluster or a pool belongs to it and is never closed by the
 * caller.
 */
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
/*
 * Invalidates every item whose key starts with prefix (the handle's key
 * prefix in front, as for any key) and was stored before the call; items
 * stored later are kept. The server answers at once: it records the prefix
 * and reclaims the items in the background. RHKV_ESERVER with "too many
 * pending prefix flushes" when the server holds its limit of them (they
 * clear as its sweep passes; retry later); RHKV_EBADKEY for a prefix that
 * is no valid key.
 */
int rhkv_flush_prefix(rhkv *c, const void *prefix, size_t plen);
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

/* One hot key of `stats hotkeys`, over the server's hot-key window. */
struct rhkv_hotkey {
	char *key; /* its bytes (binary keys decoded), NUL-terminated */
	size_t klen;
	double rps;	/* requests per second */
	double share;	/* of its class's requests, 0 to 1 */
	uint64_t count; /* requests (estimated) */
	/* Without sampling count - err <= true <= count; with sampling
	 * true is within err either way (three standard deviations). */
	uint64_t err;
	int exact; /* count is the true count */
};

enum { RHKV_HOTKEYS_READ, RHKV_HOTKEYS_WRITE };

struct rhkv_hotkeys {
	uint32_t sample; /* one request in this many sampled; 0: off */
	double seconds;	 /* the span the counts cover */
	/* Per class, [RHKV_HOTKEYS_READ] and [RHKV_HOTKEYS_WRITE]: its
	 * requests, the most a key not listed may have had, and the n
	 * hottest keys, hottest first. */
	uint64_t requests[2];
	uint64_t bound[2];
	size_t n[2];
	struct rhkv_hotkey *top[2];
};

/* The n (1 to 100; 0: 10) hottest keys of each class, reads and writes.
 * Free with rhkv_hotkeys_free(). */
int rhkv_hotkeys(rhkv *c, unsigned int n, struct rhkv_hotkeys **out);
void rhkv_hotkeys_free(struct rhkv_hotkeys *h);

/* ---- meta commands: stale-while-revalidate, stampede-safe caching ----
 *
 * memcached's meta commands (mg, ms, md, ma), over the binary protocol's
 * meta ops. An options struct zero-initialised (or NULL) means the
 * defaults; each field says what its non-zero value does.
 *
 * A read-through cache in which one client at a time recomputes a value:
 * get with want_value, vivify_ttl and recache_ttl, then
 *   won                          compute, rhkv_meta_set() it, use it;
 *   stale or (won_by_other and a value)
 *                                use the value while the winner
 *                                recomputes it;
 *   won_by_other, not stale, empty value
 *                                the winner's placeholder: retry shortly;
 *   else                         a hit.
 * (client/examples/read_through.c; a cache whose values may be empty
 * should store them with a byte of its own, so as to tell them from the
 * placeholder.)
 */

struct rhkv_mget_opts {
	int want_value;	     /* 1: the value's bytes (else metadata only) */
	int no_bump;	     /* 1: the read counts as no access */
	int touch;	     /* 1: set the item's exptime to touch_ttl */
	int64_t touch_ttl;   /* an exptime, as rhkv_set's */
	int64_t vivify_ttl;  /* > 0: on a miss create an empty placeholder
				with this exptime; this caller wins */
	int64_t recache_ttl; /* > 0: win (once) when the item has fewer
				seconds than this left */
};

/* What a meta get found. */
struct rhkv_meta {
	/* The value (data NULL unless asked for and found; free it with
	 * rhkv_value_free(&m.value)); flags and cas are set on a hit even
	 * when the bytes were not asked for. */
	struct rhkv_value value;
	int64_t ttl;	      /* seconds left; -1: none */
	uint32_t size;	      /* bytes of value */
	uint32_t last_access; /* seconds since, before this read */
	int hit_before;	      /* fetched before this read */
	int won;	      /* this caller should recompute and store */
	int stale;	      /* the value was invalidated */
	int won_by_other;     /* another caller won and is recomputing */
};

/*
 * Reads key with memcached's meta get: 0 on a hit, RHKV_ENOTFOUND on a
 * miss; *out is filled in both cases (a miss may still say won). o may be
 * NULL: the metadata only, no value.
 */
int rhkv_meta_get(rhkv *c, const void *key, size_t klen,
		  const struct rhkv_mget_opts *o, struct rhkv_meta *out);

struct rhkv_mset_opts {
	/* 0 or 'S' set, 'E' add, 'A' append, 'P' prepend, 'R' replace. */
	char mode;
	uint32_t flags;
	int64_t ttl;	  /* the exptime (0: never) */
	uint64_t cas;	  /* != 0: store only if the item's cas is this */
	uint64_t new_cas; /* != 0: the stored item's cas */
	/* 1, with cas: a cas lower than the item's is accepted and the item
	 * is stored stale (a late writer must not win over a newer one). */
	int invalidate;
	int64_t vivify_ttl; /* > 0, modes 'A' and 'P': a missing item is
			       created from val, with this exptime */
};

/* Stores key = val. 0 (cas_out, may be NULL, takes the new cas), or
 * RHKV_ENOTSTORED (the mode's condition), RHKV_EEXISTS (cas differs),
 * RHKV_ENOTFOUND (cas given, no item). o may be NULL: a plain set. */
int rhkv_meta_set(rhkv *c, const void *key, size_t klen, const void *val,
		  size_t vlen, const struct rhkv_mset_opts *o,
		  uint64_t *cas_out);

struct rhkv_mdelete_opts {
	/* 1: keep the item, mark it stale (the next meta get wins and the
	 * others are served the stale value) and give it a new cas. */
	int invalidate;
	uint64_t cas;	  /* != 0: only if the item's cas is this */
	int64_t ttl;	  /* != 0, with invalidate: the stale item's exptime */
	uint64_t new_cas; /* != 0, with invalidate: its new cas */
};

/* Deletes (or invalidates) key: 0, RHKV_ENOTFOUND or RHKV_EEXISTS. o may
 * be NULL: a plain delete. */
int rhkv_meta_delete(rhkv *c, const void *key, size_t klen,
		     const struct rhkv_mdelete_opts *o);

struct rhkv_marith_opts {
	int decr;	    /* 1: subtract (not below 0); else add */
	uint64_t cas;	    /* != 0: only if the item's cas is this */
	int64_t vivify_ttl; /* > 0: on a miss create the item as initial,
				with this exptime */
	uint64_t initial;
	int touch; /* 1: set the item's exptime to touch_ttl */
	int64_t touch_ttl;
	uint64_t new_cas; /* != 0: the item's cas after the change */
};

/* Adds delta to (or subtracts it from) the number at key: 0 with *value
 * and *cas_out (either may be NULL), or RHKV_ENOTFOUND, RHKV_EEXISTS,
 * RHKV_ENONNUMERIC, RHKV_ENOTSTORED. o may be NULL: a plain incr. */
int rhkv_meta_arith(rhkv *c, const void *key, size_t klen, uint64_t delta,
		    const struct rhkv_marith_opts *o, uint64_t *value,
		    uint64_t *cas_out);

/* ---- non-blocking use: commands with callbacks, an event loop ----
 *
 * Every command can also be sent without waiting: rhkv_send() queues it
 * and returns; its callback runs when the reply has been read, from the
 * handle's event functions below (or from a later blocking call on the
 * same handle, which first completes everything queued before it).
 * Commands queued in one pass of a loop go out in one write: pipelining
 * is the default.
 *
 * An event loop drives the handle through its fd: rhkv_wants() says which
 * events to wait for, rhkv_on_readable() / rhkv_on_writable() move bytes
 * and call callbacks, rhkv_on_timer() enforces the timeouts. The
 * header-only adapter rhkv_libevent.h does this for libevent; a plain
 * poll() loop is part of the library itself (rhkv_poll(), below: no other
 * header); another loop needs the dozen lines of rhkv_set_event_hooks().
 * The blocking calls of this header are built on the same core: a
 * blocking call is a command queued and waited for.
 *
 * Timeouts: a command fails with RHKV_ETIMEDOUT when no byte has moved on
 * its connection for io_timeout_ms while it waits (the deadline restarts
 * with every reply, so a long stream of replies never times out), and
 * the connection is dropped: every command waiting on it fails, each
 * callback called once with the error. A connect in progress fails after
 * connect_timeout_ms.
 *
 * Rules: callbacks may queue new commands (on any handle) but must not
 * make blocking calls on their own handle (those return RHKV_EINVAL
 * there); a callback may close its handle (rhkv_close(): the free is
 * deferred until the library call that ran the callback returns); values
 * in a struct rhkv_result live until the callback returns (copy what you
 * keep). The key operations, the meta commands, flush_all and noop have a
 * non-blocking form (enum rhkv_op); stats, version and scans are blocking
 * calls only (they are rare and their replies are built into allocated
 * arrays).
 *
 * Values above 1 MiB: a frame longer than the server's item size limit
 * makes it close the connection, so such a value goes out only once the
 * limit is known on the connection. A blocking store asks for it and
 * waits. rhkv_send() does not wait: the first such value on a connection
 * queues the request for the limit ahead of it, and the value's command
 * and every command queued after it are held (in order) until the answer
 * comes, one round trip; a value above the limit then fails in its
 * callback with RHKV_ETOOLARGE without reaching the server, and the rest
 * go out. Later values on the same connection are checked at once
 * (rhkv_send() returns RHKV_ETOOLARGE). A reconnect forgets the limit.
 */

/* Operations of struct rhkv_cmd. */
enum rhkv_op {
	RHKV_OP_GET = 1,     /* -> value */
	RHKV_OP_GAT,	     /* key, exptime -> value */
	RHKV_OP_SET,	     /* key, val, flags, exptime -> number: the cas */
	RHKV_OP_ADD,	     /* as SET */
	RHKV_OP_REPLACE,     /* as SET */
	RHKV_OP_APPEND,	     /* key, val -> number: the cas */
	RHKV_OP_PREPEND,     /* as APPEND */
	RHKV_OP_CAS,	     /* as SET, with cas */
	RHKV_OP_DELETE,	     /* key */
	RHKV_OP_INCR,	     /* key, delta -> number: the new value */
	RHKV_OP_DECR,	     /* as INCR */
	RHKV_OP_TOUCH,	     /* key, exptime */
	RHKV_OP_FLUSH_ALL,   /* exptime: the delay */
	RHKV_OP_NOOP,	     /* a ping */
	RHKV_OP_META_GET,    /* key, mget -> meta (and value when asked) */
	RHKV_OP_META_SET,    /* key, val, mset -> number: the cas */
	RHKV_OP_META_DELETE, /* key, mdelete */
	RHKV_OP_META_ARITH,  /* key, delta, marith -> number: the value */
};

/* One command: the fields its op uses (see enum rhkv_op); zero the rest. */
struct rhkv_cmd {
	int op; /* enum rhkv_op */
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
	uint32_t flags;
	int64_t exptime;
	uint64_t cas;
	uint64_t delta;
	/* The meta ops' options (NULL: defaults), as their blocking calls. */
	const struct rhkv_mget_opts *mget;
	const struct rhkv_mset_opts *mset;
	const struct rhkv_mdelete_opts *mdelete;
	const struct rhkv_marith_opts *marith;
};

/* What a command brought back, for its callback. */
struct rhkv_result {
	int op;	    /* the command's enum rhkv_op */
	int status; /* 0, or RHKV_E* (a miss: RHKV_ENOTFOUND) */
	/* A value (get, gat, a meta get that asked for it): its bytes, valid
	 * until the callback returns; NULL when none. */
	const char *data;
	size_t len;
	uint32_t flags;
	uint64_t cas;
	uint64_t number; /* stores: the cas; incr, decr, arith: the value */
	/* A meta get's metadata (its value.data is NULL: the bytes are in
	 * data above); NULL for other ops. */
	const struct rhkv_meta *meta;
	size_t index; /* in a streaming pipeline: the command's index */
	/* In rhkv_cluster_exec(): 1 when the key's own server was skipped as
	 * dead and the command went to the next server of the ring (its
	 * fallback), so that a miss says nothing of the key; else 0. (Last in
	 * the struct: the library fills it, so callbacks built against an
	 * older header are unaffected.) */
	int moved;
};

typedef void (*rhkv_callback)(rhkv *c, const struct rhkv_result *r, void *arg);

/*
 * Queues cmd; cb (may be NULL) is called once with its result. Connects
 * (without blocking) when the handle has no connection. 0, or RHKV_E*
 * with nothing queued and cb not called (a bad key or argument, no
 * memory, a connect that failed at once).
 */
int rhkv_send(rhkv *c, const struct rhkv_cmd *cmd, rhkv_callback cb, void *arg);

/* The handle's socket, -1 when it has none (it changes when the handle
 * reconnects: adapters watch for that through the hooks below). */
int rhkv_fd(const rhkv *c);

enum { RHKV_WANT_READ = 1, RHKV_WANT_WRITE = 2 };
/* The events the handle waits for now: RHKV_WANT_* bits (0: nothing). */
int rhkv_wants(const rhkv *c);
/* The socket is readable / writable: move bytes, call callbacks. Both
 * return 0 or the error that dropped the connection (its commands'
 * callbacks have then been called with it). */
int rhkv_on_readable(rhkv *c);
int rhkv_on_writable(rhkv *c);
/* Milliseconds until the handle's next deadline (a connect, or commands
 * waiting), -1 when it has none. */
int rhkv_timeout_ms(const rhkv *c);
/* A timer armed with rhkv_timeout_ms() fired: fails what is past its
 * deadline. Returns the ms to the next deadline (re-arm), or -1. */
int rhkv_on_timer(rhkv *c);
/* Commands queued or sent whose reply has not come. */
size_t rhkv_pending(const rhkv *c);
/* Bytes the handle holds for its I/O now: queued frames, the read buffer,
 * the pending commands' records (the library's own accounting). */
size_t rhkv_buffered(const rhkv *c);

/*
 * Hooks through which the handle tells an event loop what to watch:
 *
 *   update(data, fd, wants) whenever its fd or wanted events change (fd -1:
 *     watch nothing), and also, with the same fd and wants as last time,
 *     whenever its deadline comes nearer than the loop's timer was last
 *     armed for (a timeout lowered on the live handle with
 *     rhkv_set_timeouts()). So on every update with wants != 0 the loop
 *     (re)arms its timer with rhkv_timeout_ms() (-1: leave it); when the
 *     timer fires it calls rhkv_on_timer() and re-arms with its answer. A
 *     deadline that moves later is not told: the timer fires early and
 *     rhkv_on_timer() gives the new one. An update must be idempotent:
 *     the same fd and wants may come twice.
 *   cleanup(data) once, from rhkv_close() or when other hooks replace
 *     these. NULL hooks detach.
 *
 * A loop written to the first version of this contract (which promised
 * updates only on changes of fd or wants, and asked for the timer to be
 * armed with rhkv_timeout_ms() on each) keeps working, and learns lowered
 * deadlines too; the struct and the calls are unchanged, so programs
 * built against that header (rhkv_libevent.h is compiled into them) get
 * this by upgrading librhkv alone.
 *
 * A loop of its own, in outline (rhkv_libevent.h is the same for
 * libevent):
 *
 *	static void update(void *data, int fd, int wants)
 *	{
 *		struct my_loop_handle *h = data;
 *		int ms = rhkv_timeout_ms(h->c);
 *
 *		my_loop_watch(h, fd, wants);  (fd -1: stop watching)
 *		if (wants && ms >= 0)
 *			my_loop_timer(h, ms); (replaces an armed timer)
 *	}
 *	(on readable: rhkv_on_readable(h->c); on writable:
 *	 rhkv_on_writable(h->c); on the timer:
 *	 ms = rhkv_on_timer(h->c), and my_loop_timer(h, ms) when ms >= 0)
 */
struct rhkv_event_hooks {
	void *data;
	void (*update)(void *data, int fd, int wants);
	void (*cleanup)(void *data);
};

void rhkv_set_event_hooks(rhkv *c, const struct rhkv_event_hooks *hooks);

/*
 * The plain poll() loop: one poll() over the n handles (NULL entries
 * skipped) for what each wants, at most max_ms (-1: until an event or the
 * earliest deadline), then their events and timers handled, callbacks
 * called. The number of handles that had events, or RHKV_ECONN (poll
 * failed) or RHKV_ENOMEM.
 */
int rhkv_poll(rhkv *const *handles, size_t n, int max_ms);
/* rhkv_poll() until no handle has a command waiting (each ends answered,
 * failed or timed out). 0 or rhkv_poll()'s error. */
int rhkv_poll_wait(rhkv *const *handles, size_t n);

/* ---- multi-key and pipelines ---- */

/*
 * Reads n keys in one round trip. out[i] is filled for hits; for misses
 * out[i].data is NULL and status[i] (if status is not NULL) is
 * RHKV_ENOTFOUND. Returns 0 when the exchange worked (misses included).
 */
int rhkv_mget(rhkv *c, size_t n, const char *const *keys, const size_t *klens,
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
 * A pipeline: queue any number of commands, then rhkv_pipeline_exec()
 * waits for every reply; each queued command gets an index (0, 1, ...)
 * for its result. Queued frames are sent once they pass the handle's
 * send_budget (struct rhkv_options), replies being read while sending, and
 * at exec: a pipeline of any length streams, and holds about a send budget
 * of request bytes (plus its results; a streaming pipeline keeps none).
 * The deadline of a pipeline restarts with every reply (the handle's I/O
 * timeout counts from the last byte moved).
 *
 * A command that cannot be queued (a bad key, ...) still takes its index:
 * the queue call returns the error, and so does its result, so that the
 * indexes of later commands stay the caller's count. Other calls on the
 * handle between queue and exec are fine: they complete the pipeline's
 * commands sent before them.
 */
typedef struct rhkv_pipeline rhkv_pipeline;

rhkv_pipeline *rhkv_pipeline_new(rhkv *c);
/* A streaming pipeline: each result goes to cb (its index in r->index) as
 * it arrives and is not kept (rhkv_pipeline_result() does not apply);
 * commands whose queue call failed get no callback. NULL cb: NULL. */
rhkv_pipeline *rhkv_pipeline_stream(rhkv *c, rhkv_callback cb, void *arg);
/* Waits for the replies of commands still on their way, then frees. */
void rhkv_pipeline_free(rhkv_pipeline *p);
/* Queue functions return the command's index, or a negative RHKV_E*. Any
 * command: rhkv_pipeline_cmd() (meta ops in streaming pipelines only). */
long rhkv_pipeline_cmd(rhkv_pipeline *p, const struct rhkv_cmd *cmd);
long rhkv_pipeline_get(rhkv_pipeline *p, const void *key, size_t klen);
long rhkv_pipeline_set(rhkv_pipeline *p, const void *key, size_t klen,
		       const void *val, size_t vlen, uint32_t flags,
		       int64_t exptime);
long rhkv_pipeline_delete(rhkv_pipeline *p, const void *key, size_t klen);
long rhkv_pipeline_incr(rhkv_pipeline *p, const void *key, size_t klen,
			uint64_t delta);
long rhkv_pipeline_touch(rhkv_pipeline *p, const void *key, size_t klen,
			 int64_t exptime);
/* Sends what is queued and waits for every reply. 0, or the first
 * connection error met: then the results of commands without a reply are
 * that error too (commands queued after a lost connection went out on a
 * new one). */
int rhkv_pipeline_exec(rhkv_pipeline *p);
/* The result of command i: 0 or RHKV_E*. For a get or gat, *out (may be
 * NULL) takes over its value (free it with rhkv_value_free()). */
int rhkv_pipeline_result(rhkv_pipeline *p, size_t i, struct rhkv_value *out);
/* incr/decr: the new value; stores: the cas. 0 when there is none. */
uint64_t rhkv_pipeline_number(const rhkv_pipeline *p, size_t i);
/* Empties the pipeline for reuse (waits for replies on their way; results
 * are dropped). */
void rhkv_pipeline_reset(rhkv_pipeline *p);
/* Bytes held for p: its results' records and its handle's buffers. */
size_t rhkv_pipeline_buffered(const rhkv_pipeline *p);

/* ---- scanning ---- */

/*
 * Keys are any 1..250 bytes, NUL included, so a key's length is the only
 * sure way to know where it ends: rhkv_scan_keys() and rhkv_scan_next()
 * give it. rhkv_scan() gives none; a key holding a NUL looks shorter there.
 */

/*
 * One scan call: keys from cursor (0 to start), at most about count
 * (1..1000, else RHKV_EINVAL), matching the glob match (NULL: all); *next
 * is 0 when the scan is complete. keys[i] are NUL-terminated; free with
 * rhkv_keys_free().
 */
int rhkv_scan(rhkv *c, uint64_t cursor, unsigned int count, const char *match,
	      uint64_t *next, char ***keys, size_t *n);
/*
 * rhkv_scan() with the keys' lengths: (*klens)[i] is the length of
 * keys[i] (NULL klens: not wanted). The lengths share the keys' block:
 * rhkv_keys_free(keys, n) frees both.
 */
int rhkv_scan_keys(rhkv *c, uint64_t cursor, unsigned int count,
		   const char *match, uint64_t *next, char ***keys,
		   size_t **klens, size_t *n);
void rhkv_keys_free(char **keys, size_t n);

/*
 * An iterator over a whole scan that hides the cursor: every key present
 * for the whole iteration comes back at least once (duplicates possible).
 */
typedef struct rhkv_scan_iter rhkv_scan_iter;

/*
 * Starts an iteration of count keys per round trip (1..1000) over the
 * keys matching match (NULL: all), in *out. 0, or RHKV_EINVAL (a count out
 * of range, a NULL argument) or RHKV_ENOMEM, with rhkv_errstr() saying
 * why (when c is not NULL). Nothing is sent until rhkv_scan_next().
 */
int rhkv_scan_open(rhkv *c, const char *match, unsigned int count,
		   rhkv_scan_iter **out);
/* rhkv_scan_open() that answers the iterator, or NULL on any error. */
rhkv_scan_iter *rhkv_scan_begin(rhkv *c, const char *match, unsigned int count);
/* 1 and *key (valid until the next call) and *klen (NULL: not wanted) for
 * the next key, 0 at the end, or a negative RHKV_E*. */
int rhkv_scan_next(rhkv_scan_iter *it, const char **key, size_t *klen);
void rhkv_scan_end(rhkv_scan_iter *it);

/* ---- clusters: consistent hashing over several servers ---- */

/*
 * A cluster spreads keys over several servers with a ketama ring (MD5
 * points, clockwise search) built the way libmemcached builds its own, so
 * that librhkv and libmemcached pick the same server for every key when
 * given the same servers (same host strings, ports, weights and order):
 *
 *   RHKV_KETAMA_WEIGHTED (the default) is libmemcached with
 *     MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED = 1: each server gets
 *     floor(weight / total_weight * 40 * servers) MD5 digests of
 *     "host:port-N" (N from 0; "host-N" when port is 11211), each digest
 *     4 points (its bytes 4i..4i+3, little-endian): 160 points per server
 *     when the weights are equal.
 *   RHKV_KETAMA_PLAIN is libmemcached with MEMCACHED_BEHAVIOR_DISTRIBUTION
 *     = MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA and MEMCACHED_BEHAVIOR_HASH
 *     = MEMCACHED_HASH_MD5 (not weighted): 100 points per server, one per
 *     digest (bytes 0..3); weights are ignored.
 *
 * A key's hash is the first 4 bytes of MD5(key), little-endian; its server
 * owns the first point at or above it, wrapping to the lowest point. The
 * key hashed is the caller's: a key_prefix of the options is not part of
 * it.
 *
 * A proxy's ring (twemproxy/nutcracker's ketama) is not this one: it
 * hashes other names (its configured server names) and need not place
 * the same number of points per server. Reach a tier of servers either
 * through the proxy or directly with a cluster, never both, or the two
 * will put the same key on different servers.
 *
 * Failures: a server that cannot be connected, or on which a call of the
 * cluster fails with RHKV_ECONN, RHKV_ETIMEDOUT or RHKV_ETLS, is marked
 * dead for the retry interval (default 2000 ms). While dead its points are
 * skipped (the key goes to the next point clockwise that belongs to a live
 * server, its fallback), so only its keys move, and only while it is dead;
 * the ring is never rebuilt (libmemcached's auto-eject rebuilds it, which
 * with unequal weights moves other keys too). A call that failed is not
 * repeated on another server (it may have taken effect); a connection that
 * could not be made sent nothing, so pick goes on to the next server then.
 *
 * Stale reads after a server comes back. When its retry time has come, a
 * failed server rejoins as rhkv_cluster_set_rejoin() says, and its keys
 * move back to it. It still holds what it held when it failed, unless it
 * restarted empty; the fallback meanwhile took the writes of its keys. So
 * a key written during the outage is read, after the rejoin, as it was
 * before the outage: a stale value, not a miss. Deletes done during the
 * outage come back to life the same way. The modes:
 *
 *   RHKV_REJOIN_AT_ONCE (the default; libmemcached's behaviour) takes the
 *     server back at the first call after its retry time. Stale reads as
 *     above; a server that flaps moves its keys back and forth each time.
 *   RHKV_REJOIN_QUIET takes it back only after it answered pings (one per
 *     retry interval, sent when a call would have gone to it) with no
 *     failure for quiet_ms; until then its keys stay on the fallback.
 *     This stops a flapping server from bouncing keys, but once it
 *     rejoins its old values are served just as with AT_ONCE: stale.
 *   RHKV_REJOIN_FLUSH sends the server flush_all before any key goes to
 *     it (a failed flush keeps it out), so nothing it held before failing
 *     can be read. The price: it comes back empty, every key a miss.
 *
 * No mode cleans the fallback: it keeps the copies written to it during
 * the outage, and if the server fails again its keys go back there, to
 * values that may be older than ones written to the server since. Short
 * exptimes bound both risks; a client that cannot read a stale value must
 * not cache it in a cluster (or must check it, as with a cas or version
 * field of its own).
 *
 * Each rhkv_cluster learns of failures by itself, and the modes act on
 * what it saw: a pool of clusters (rhkv_pool_new_cluster) has one failure
 * state per cluster, and other processes have theirs. A cluster that made
 * no call during the outage never moved the keys and reads the server as
 * it is (for it nothing failed); with RHKV_REJOIN_FLUSH each cluster that
 * saw the failure flushes the server when it rejoins, emptying what others
 * wrote there since their own rejoin (misses, not stale values).
 *
 * Threads: like a handle, a cluster (and the handles it gives out) is used
 * by one thread at a time; rhkv_pool shares clusters between threads.
 */
typedef struct rhkv_cluster rhkv_cluster;

enum rhkv_ketama {
	RHKV_KETAMA_WEIGHTED = 0, /* libmemcached KETAMA_WEIGHTED (default) */
	RHKV_KETAMA_PLAIN = 1,	  /* libmemcached CONSISTENT_KETAMA + MD5 */
};

/* An empty cluster; o (may be NULL: defaults) applies to every server's
 * handle (copied, password and TLS settings included; with TLS each
 * server's certificate is checked against the host it was added with,
 * unless tls_server_name names one for all). 0, RHKV_EINVAL or
 * RHKV_ENOMEM (also when OpenSSL, whose MD5 the ring uses, offers none:
 * a configuration that loads only its FIPS provider). */
int rhkv_cluster_new(rhkv_cluster **out, const struct rhkv_options *o);
/* Adds host:port with weight (0 counts as 1, as in libmemcached); nothing
 * connects until a key picks it. Adding a server moves about 1/n of the
 * keys to it. 0, RHKV_EINVAL or RHKV_ENOMEM. */
int rhkv_cluster_add(rhkv_cluster *cl, const char *host, int port,
		     unsigned int weight);
/* How long a failed server is skipped, in milliseconds (default 2000; 0:
 * retried on the next call), counted from its last failure (while
 * RHKV_REJOIN_QUIET waits, from its last ping); applies at once, to
 * servers already skipped too. 0 or RHKV_EINVAL. */
int rhkv_cluster_set_retry(rhkv_cluster *cl, int retry_ms);
/* The ring's layout: an enum rhkv_ketama. 0 or RHKV_EINVAL. */
int rhkv_cluster_set_ketama(rhkv_cluster *cl, int mode);

/* How a failed server takes keys again (see "Stale reads" above). */
enum rhkv_rejoin {
	RHKV_REJOIN_AT_ONCE = 0, /* at its retry time (default) */
	RHKV_REJOIN_QUIET = 1,	 /* after quiet_ms of answered pings */
	RHKV_REJOIN_FLUSH = 2,	 /* at its retry time, flushed first */
};

/* Sets the rejoin mode; quiet_ms counts for RHKV_REJOIN_QUIET only (0:
 * the first answered ping lets it in). Applies to servers already dead
 * too. 0 or RHKV_EINVAL. */
int rhkv_cluster_set_rejoin(rhkv_cluster *cl, enum rhkv_rejoin mode,
			    int quiet_ms);
/*
 * The handle of the live server that owns key, connected (lazily, once);
 * valid until rhkv_cluster_free(). NULL when no server is alive or none
 * was added (rhkv_cluster_errstr() tells). After a call on it fails, pass
 * the error to rhkv_cluster_failed() so that a lost server is skipped.
 */
rhkv *rhkv_cluster_pick(rhkv_cluster *cl, const void *key, size_t klen);
/* Marks c's server dead for the retry interval when err is RHKV_ECONN,
 * RHKV_ETIMEDOUT or RHKV_ETLS; other errors (and handles not of cl) are ignored. */
void rhkv_cluster_failed(rhkv_cluster *cl, rhkv *c, int err);
/* The server that owns key now (skipping dead ones), without connecting:
 * its host into host[cap] and its port into *port (either may be NULL
 * with cap 0). 0, RHKV_ECONN (none alive), RHKV_ERANGE (cap too small) or
 * RHKV_EINVAL (no servers). */
int rhkv_cluster_server_of(rhkv_cluster *cl, const void *key, size_t klen,
			   char *host, size_t cap, int *port);
/*
 * Single-key calls on the key's server: each is its rhkv_ namesake on the
 * handle rhkv_cluster_pick() gives, with rhkv_cluster_failed() after it;
 * RHKV_ECONN when no server is alive. rhkv_cluster_add_key is rhkv_add
 * (rhkv_cluster_add adds a server).
 */
int rhkv_cluster_get(rhkv_cluster *cl, const void *key, size_t klen,
		     struct rhkv_value *out);
int rhkv_cluster_get_into(rhkv_cluster *cl, const void *key, size_t klen,
			  void *buf, size_t cap, size_t *len, uint32_t *flags,
			  uint64_t *cas);
int rhkv_cluster_gat(rhkv_cluster *cl, const void *key, size_t klen,
		     int64_t exptime, struct rhkv_value *out);
int rhkv_cluster_set(rhkv_cluster *cl, const void *key, size_t klen,
		     const void *val, size_t vlen, uint32_t flags,
		     int64_t exptime, uint64_t *cas_out);
int rhkv_cluster_add_key(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint32_t flags,
			 int64_t exptime, uint64_t *cas_out);
int rhkv_cluster_replace(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint32_t flags,
			 int64_t exptime, uint64_t *cas_out);
int rhkv_cluster_append(rhkv_cluster *cl, const void *key, size_t klen,
			const void *val, size_t vlen, uint64_t *cas_out);
int rhkv_cluster_prepend(rhkv_cluster *cl, const void *key, size_t klen,
			 const void *val, size_t vlen, uint64_t *cas_out);
int rhkv_cluster_cas(rhkv_cluster *cl, const void *key, size_t klen,
		     const void *val, size_t vlen, uint32_t flags,
		     int64_t exptime, uint64_t cas, uint64_t *cas_out);
int rhkv_cluster_delete(rhkv_cluster *cl, const void *key, size_t klen);
int rhkv_cluster_incr(rhkv_cluster *cl, const void *key, size_t klen,
		      uint64_t delta, uint64_t *value);
int rhkv_cluster_decr(rhkv_cluster *cl, const void *key, size_t klen,
		      uint64_t delta, uint64_t *value);
int rhkv_cluster_touch(rhkv_cluster *cl, const void *key, size_t klen,
		       int64_t exptime);
int rhkv_cluster_meta_get(rhkv_cluster *cl, const void *key, size_t klen,
			  const struct rhkv_mget_opts *o,
			  struct rhkv_meta *out);
int rhkv_cluster_meta_set(rhkv_cluster *cl, const void *key, size_t klen,
			  const void *val, size_t vlen,
			  const struct rhkv_mset_opts *o, uint64_t *cas_out);
int rhkv_cluster_meta_delete(rhkv_cluster *cl, const void *key, size_t klen,
			     const struct rhkv_mdelete_opts *o);
int rhkv_cluster_meta_arith(rhkv_cluster *cl, const void *key, size_t klen,
			    uint64_t delta, const struct rhkv_marith_opts *o,
			    uint64_t *value, uint64_t *cas_out);

/*
 * Every server, for commands that go to all of them (stats, version, scan
 * of the tier, flush): server i is 0 .. rhkv_cluster_count() - 1, in the
 * order added. rhkv_cluster_server() sets *host (valid until
 * rhkv_cluster_free()) and *port (either may be NULL) and, when c is not
 * NULL, *c to the server's handle, connected (lazily) and valid until
 * rhkv_cluster_free(). A server skipped as dead gives RHKV_ECONN without
 * a try; one whose retry time has come rejoins here as for a key (its
 * flush, its ping); a connect that fails is returned and marks the server
 * dead as pick does. *c is NULL on any error. 0, RHKV_EINVAL (i out of
 * range) or the connection's error. After a call on *c fails, pass the
 * error to rhkv_cluster_failed() as after pick.
 *
 *	for (size_t i = 0; i < rhkv_cluster_count(cl); i++) {
 *		const char *host;
 *		int port, rc;
 *		rhkv *c;
 *		struct rhkv_stat *st;
 *		size_t n;
 *
 *		rc = rhkv_cluster_server(cl, i, &host, &port, &c);
 *		if (!rc)
 *			rc = rhkv_stats(c, NULL, &st, &n);
 *		if (rc) {
 *			rhkv_cluster_failed(cl, c, rc); (c NULL is fine)
 *			continue;     (report host:port as unreachable)
 *		}
 *		... use st[0..n) ...
 *		rhkv_stats_free(st, n);
 *	}
 *
 * A scan of the tier is the same loop with rhkv_scan_begin(c, ...) /
 * rhkv_scan_next / rhkv_scan_end on each server in turn: each key lives on
 * one server, so the union is the tier's keys (with a key copied to a
 * fallback during an outage possibly found twice).
 */
size_t rhkv_cluster_count(const rhkv_cluster *cl);
int rhkv_cluster_server(rhkv_cluster *cl, size_t i, const char **host,
			int *port, rhkv **c);
/* rhkv_flush_all on every server: status[i] (status may be NULL; else
 * rhkv_cluster_count() entries) is server i's result. 0 when all
 * succeeded, else the first error. */
int rhkv_cluster_flush_all(rhkv_cluster *cl, int64_t delay, int *status);
/* rhkv_flush_prefix on every server (a prefix's keys live on all of
 * them): status as rhkv_cluster_flush_all's, each server's own result, so
 * that a dead server's failure is told apart from the others' success. */
int rhkv_cluster_flush_prefix(rhkv_cluster *cl, const void *prefix, size_t plen,
			      int *status);

/*
 * Batches over the servers in parallel: every command goes to its key's
 * server at once (rhkv_send), then one poll() loop moves all servers'
 * bytes together, so a batch costs about the slowest server's round trip,
 * not their sum. cb (may be NULL) gets each command's result with
 * r->index its position in cmds (and a NULL handle when the command never
 * reached a server: no server alive, RHKV_ECONN). A server lost during the
 * batch is marked failed as after a single call. Returns 0 when the batch
 * ran (failed commands included), or RHKV_EINVAL / RHKV_ENOMEM.
 */
int rhkv_cluster_exec(rhkv_cluster *cl, size_t n, const struct rhkv_cmd *cmds,
		      rhkv_callback cb, void *arg);
/*
 * rhkv_mget and rhkv_mset over the cluster, each server's part in
 * parallel (rhkv_cluster_exec): out[i] and status[i] as rhkv_mget's.
 *
 * A key whose own server is dead is read on its fallback (the next server
 * of the ring, as for every call): there it is usually a miss,
 * RHKV_ENOTFOUND like any other, since the fallback holds only what was
 * written to it during outages ("Stale reads" above). A miss then says
 * nothing of the key: a caller that must not treat it as "absent" (a
 * negative cache, a lock, a counter), or that wants to spare its backend
 * a wave of recomputations, asks rhkv_cluster_mget_moved(), whose
 * moved[i] (may be NULL) is 1 for each key read on a fallback, 0 for one
 * read on its own server or never sent. The plain call cannot say it: its
 * status codes stay those of rhkv_mget, so that existing callers that test
 * for RHKV_ENOTFOUND keep working.
 */
int rhkv_cluster_mget(rhkv_cluster *cl, size_t n, const char *const *keys,
		      const size_t *klens, struct rhkv_value *out, int *status);
int rhkv_cluster_mget_moved(rhkv_cluster *cl, size_t n, const char *const *keys,
			    const size_t *klens, struct rhkv_value *out,
			    int *status, int *moved);
int rhkv_cluster_mset(rhkv_cluster *cl, size_t n, const struct rhkv_item *items,
		      int *status);
/* The cluster's last failure in words ("" when none). */
const char *rhkv_cluster_errstr(const rhkv_cluster *cl);
/* Closes every server's handle and frees cl (NULL is fine). */
void rhkv_cluster_free(rhkv_cluster *cl);

/* ---- pools: handles and clusters shared by threads ---- */

/*
 * A pool of at most size handles to one server (rhkv_pool_new) or of
 * clusters of the same servers and settings (rhkv_pool_new_cluster),
 * made lazily: a checkout takes an idle one, else makes one while fewer
 * than size exist, else waits for one to be put back.
 *
 * Threads: rhkv_pool_get, rhkv_pool_put, rhkv_pool_get_cluster and
 * rhkv_pool_put_cluster may be called by any threads at once (a mutex and
 * a condition variable inside). A handle or cluster checked out belongs to
 * its thread alone until put back, and after rhkv_pool_put the thread
 * must not touch it. rhkv_pool_new, rhkv_pool_new_cluster and
 * rhkv_pool_free are not thread-safe: the pool is made before the threads
 * share it and freed after they are done with it.
 *
 * Errors: a handle is put back whatever happened on it. One whose
 * connection failed (RHKV_ECONN, RHKV_ETIMEDOUT) has dropped it and
 * connects again at its next call; one that was given RHKV_EPROTO has
 * dropped it too. Nothing to do but put it back.
 *
 * Non-blocking use: rhkv_pool_put completes the commands a handle still
 * has pending (their callbacks run in the putting thread, as in a
 * blocking call) and detaches its event hooks, so that the next thread
 * inherits neither. The handles of a checked-out cluster are not
 * checked: put a cluster back with nothing pending on them.
 */
typedef struct rhkv_pool rhkv_pool;

/* A server of a cluster pool (as rhkv_cluster_add's arguments). */
struct rhkv_server {
	const char *host;
	int port;
	unsigned int weight; /* 0 counts as 1 */
};

/* The settings of each cluster of a pool (rhkv_cluster_set_*). */
struct rhkv_cluster_config {
	int ketama;		 /* enum rhkv_ketama */
	int retry_ms;		 /* rhkv_cluster_set_retry */
	enum rhkv_rejoin rejoin; /* rhkv_cluster_set_rejoin */
	int quiet_ms;
};

/* Fills cfg with a new cluster's defaults. */
void rhkv_cluster_config_init(struct rhkv_cluster_config *cfg);

/* A pool of up to size (> 0) handles to host:port, each made by
 * rhkv_connect() with o (NULL: defaults; copied). 0, RHKV_EINVAL or
 * RHKV_ENOMEM. */
int rhkv_pool_new(rhkv_pool **out, const char *host, int port,
		  const struct rhkv_options *o, size_t size);
/* A pool of up to size (> 0) clusters of servers[0..n) (copied), each
 * made with o (NULL: defaults) and cfg (NULL: defaults). */
int rhkv_pool_new_cluster(rhkv_pool **out, const struct rhkv_server *servers,
			  size_t n, const struct rhkv_options *o,
			  const struct rhkv_cluster_config *cfg, size_t size);

/*
 * Checks out a handle (a pool of rhkv_pool_new) into *out. timeout_ms: how
 * long to wait when all size are out; 0: not at all, -1: for ever. 0, or
 * RHKV_ETIMEDOUT (none came back in time), RHKV_EINVAL (a cluster pool),
 * or a new handle's rhkv_connect() error (nothing is checked out then).
 */
int rhkv_pool_get(rhkv_pool *pool, int timeout_ms, rhkv **out);
/* Gives back a handle of this pool (NULL is ignored). */
void rhkv_pool_put(rhkv_pool *pool, rhkv *c);
/* As rhkv_pool_get, for a pool of rhkv_pool_new_cluster. A new cluster
 * connects nothing, so the errors are RHKV_ETIMEDOUT, RHKV_EINVAL and
 * RHKV_ENOMEM. */
int rhkv_pool_get_cluster(rhkv_pool *pool, int timeout_ms, rhkv_cluster **out);
void rhkv_pool_put_cluster(rhkv_pool *pool, rhkv_cluster *cl);

/* Closes every handle or cluster and frees pool (NULL is fine). All must
 * have been put back: it waits for none, and one still out is not closed
 * (and must not be put back). */
void rhkv_pool_free(rhkv_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
