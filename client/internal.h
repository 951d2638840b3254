/*
 * librhkv's insides, shared by its files (never installed): the handle,
 * the payload readers, the request encoder and the engine of io.c. Names
 * are rhkv__x (module-internal, hidden by -fvisibility=hidden); only the
 * declarations of rhkv.h get default visibility.
 */
#ifndef RHKV_CLIENT_INTERNAL_H
#define RHKV_CLIENT_INTERNAL_H

#pragma GCC visibility push(default)
#include "rhkv.h"
#pragma GCC visibility pop

#include <msgpack.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/binary.h"

struct addrinfo;

/* Largest reply frame body accepted (an mget of many large values). */
#define RHKV__REPLY_MAX (1u << 30)
/* The read buffer's first size, and the least room one read is given. */
#define RHKV__RBUF_INIT 16384u
#define RHKV__RBUF_MIN	4096u
/* The server's default item size limit: larger values first ask the
 * server for its limit (a longer frame would make it close). */
#define RHKV__ITEM_DEFAULT (1u << 20)

/*
 * Called for reply i (0-based) of an exchange, with its status and its
 * decoded payload. Copies what it keeps: the payload lives until the next
 * reply is decoded (its bytes are the read buffer's, its objects the
 * decoder's zone). Returns 0, or RHKV_EPROTO for a payload of the wrong
 * shape (the connection is then dropped).
 */
typedef int (*rhkv__reply_fn)(rhkv *c, void *ctx, size_t i, uint32_t status,
			      const msgpack_object *payload);

/* Where a handle's connection is. */
enum rhkv__state {
	RHKV__CLOSED,	  /* no connection: the next command connects */
	RHKV__CONNECTING, /* a non-blocking connect() in progress */
	RHKV__HANDSHAKE,  /* TLS: SSL_connect in progress */
	RHKV__READY,	  /* frames flow */
};

/*
 * A command sent (or queued to be sent) whose reply has not come. Replies
 * come in order, so these form a FIFO. Internal calls name a handler
 * (fn, ctx, index); commands of the public non-blocking API a callback
 * (cb, arg) and their op, whose reply async.c decodes for it.
 */
struct rhkv__pending {
	uint64_t id;  /* the frame's id, checked against the reply's */
	uint64_t seq; /* the handle's submission count: c->done_seq order */
	rhkv__reply_fn fn;
	void *ctx;
	size_t index;
	rhkv_callback cb;
	void *arg;
	uint32_t op;
	/* != 0: the command was never sent (a value above the server's
	 * limit, its frame swapped for a NOOP with its id): its reply
	 * delivers this error instead (limit.c) */
	int fail;
};

/* A frame held (limit.c) whose value is above the default item size
 * limit: held[off .. off + len) with this id, checked once the server's
 * limit is known. */
struct rhkv__big {
	uint64_t id;
	size_t off, len, vlen;
};

struct rhkv {
	int fd;			    /* -1: none */
	int state;		    /* enum rhkv__state */
	SSL *ssl;		    /* with opt.tls, on fd; else NULL */
	SSL_CTX *tls_ctx;	    /* made at the first connect with opt.tls */
	short ssl_rwant, ssl_wwant; /* TLS: what the last read / write
				       waits for (POLLIN or POLLOUT) */
	char *host;
	int port;
	struct rhkv_options opt;	    /* its strings are our copies */
	size_t prefix_len;		    /* strlen(opt.key_prefix) */
	struct addrinfo *ai_list, *ai_next; /* connecting: addresses left */
	bool ai_unix; /* ai_list is the unix socket's (ours to free) */
	long long connect_deadline; /* connecting: 0 none */
	uint64_t next_id;
	uint64_t item_max;  /* the server's item size limit; 0: not asked */
	msgpack_sbuffer sb; /* scratch: a request being encoded */
	msgpack_packer pk;
	/* Frames queued to be sent: out.data[out_off .. out.size). */
	msgpack_sbuffer out;
	msgpack_packer opk;
	size_t out_off;
	/* Commands awaiting their reply, oldest at pq[pq_head]. */
	struct rhkv__pending *pq;
	size_t pq_head, pq_len, pq_cap;
	uint64_t seq;	       /* commands submitted, ever */
	uint64_t done_seq;     /* commands answered or failed, ever */
	uint64_t auth_seq;     /* the seq of the connection's AUTH */
	long long progress_ms; /* last byte moved (or first command queued
				  on an idle handle): the I/O deadline's
				  origin */
	int drop_err;	       /* the connection was dropped with this error;
				  its pending commands fail at the next safe
				  point (rhkv__settle) */
	int in_callback;       /* > 0: inside a reply callback */
	int entered;	       /* > 0: inside a library call that may run
				  callbacks (rhkv__enter); a close from
				  there is deferred to its end */
	bool closing;	       /* rhkv_close() was deferred: nothing new
				  starts, and c is freed when the outermost
				  call returns (rhkv__leave) */
	long long down_until;  /* opt.down_ms: fail fast until then */
	struct rhkv_event_hooks hooks; /* an event loop's, or zero */
	int told_fd, told_wants;       /* what hooks.update heard last */
	long long told_end; /* the deadline the loop's timer was last armed
			       for (update, or rhkv_on_timer's answer):
			       monotonic ms, -1 none */
	/* Values above the default item size limit sent without blocking
	 * while the server's limit is unknown: a stats request asks for it,
	 * and every frame queued after it waits in `held` for its reply
	 * (limit.c), so that no frame the server would refuse goes out. */
	bool holding;
	msgpack_sbuffer held;
	msgpack_packer hpk;
	struct rhkv__big *bigs;
	size_t nbigs, bigs_cap;
	struct proto_bin_decoder dec; /* replies; its zone lives with c */
	char *rbuf; /* replies: unread bytes are rbuf[roff .. rlen) */
	size_t roff, rlen, rcap;
	char err[256];
};

/* ---- errors (error.c) ---- */

/* CLOCK_MONOTONIC in milliseconds (io.c). */
long long rhkv__now_ms(void);

/* Records the failure in c's errstr and returns err. */
int rhkv__fail(rhkv *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Closes c's connection (the next call reconnects), records the failure
 * and returns err. */
int rhkv__drop(rhkv *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- reading reply payloads (wire.c) ----
 *
 * Payloads are objects decoded by the codec (proto_bin_decode_reply into
 * c->dec); their bytes point into the read buffer and the objects live in
 * the decoder's zone, both valid only until the next reply is decoded. */

bool rhkv__pl_uint(const msgpack_object *o, uint64_t *v);
/* A str or bin. */
bool rhkv__pl_bytes(const msgpack_object *o, const char **p, uint32_t *n);
/* A get-like payload [flags, value, cas]. */
bool rhkv__pl_value(const msgpack_object *o, uint32_t *flags, const char **val,
		    uint32_t *len, uint64_t *cas);
/* A stats name or value: a string, or a number written in decimal into
 * num[0..cap) (then *p is num). */
bool rhkv__pl_stat(const msgpack_object *o, const char **p, uint32_t *n,
		   char *num, size_t cap);
/* A scan payload [cursor, [keys]]: the keys' objects (not yet checked). */
bool rhkv__pl_scan(const msgpack_object *o, uint64_t *cursor,
		   const msgpack_object **keys, uint32_t *n);

/* The OK payload of a non-meta op (a wire op) into r: a value (data
 * pointing into the payload), a number, or nothing. */
bool rhkv__pl_result(uint32_t op, const msgpack_object *o,
		     struct rhkv_result *r);

/* Maps a non-OK status to RHKV_E*, records it (a string payload, the
 * server's message, goes to errstr) and returns the code. */
int rhkv__status(rhkv *c, uint32_t status, const msgpack_object *payload);

/* ---- encoding requests (wire.c) ---- */

struct rhkv__req {
	uint32_t op;
	const void *key; /* ops with a key; stats: the group; auth: the
			    password, or the user when val is the password */
	size_t klen;
	const void *val;
	size_t vlen;
	uint32_t flags;
	int64_t exptime; /* flush_all: the delay */
	uint64_t cas;
	uint64_t delta;
	const struct proto_bin_meta *meta; /* meta ops: the options map */
};

/* Whether key (klen bytes) is a valid key once c's key prefix is put in
 * front of it. */
bool rhkv__key_ok(const rhkv *c, size_t klen, const void *key);
/* Whether r's key, if its op has a cache key, is one (rhkv__key_ok). */
bool rhkv__req_key_ok(const rhkv *c, const struct rhkv__req *r);
/* Appends r as one frame with id to sb (through pk, which writes to sb),
 * its key behind c's key prefix. 0, or RHKV_EBADKEY or RHKV_ENOMEM with
 * sb as it was. */
int rhkv__encode(const rhkv *c, msgpack_sbuffer *sb, msgpack_packer *pk,
		 uint64_t id, const struct rhkv__req *r);

/* ---- the server's item size limit (limit.c) ---- */

/* Values above the default item size limit: asks the server for its limit
 * (once per connection), since it closes on a longer frame. 0, or
 * RHKV_ETOOLARGE or the stats call's error. Blocking. */
int rhkv__check_size(rhkv *c, size_t vlen);
/* The same without blocking, for a value of vlen bytes about to be queued
 * on c's connection (started): 0 when it may be queued (below the default,
 * or the limit is known and allows it; or unknown: then the limit's
 * request is queued, unless it already was, and c holds every frame
 * queued from now on until its reply), or RHKV_ETOOLARGE / RHKV_ENOMEM. */
int rhkv__limit_prepare(rhkv *c, size_t vlen);
/* After such a value's frame was queued at held[off ..): remembers it, to
 * be checked against the limit when it comes (room was made by
 * rhkv__limit_prepare). */
void rhkv__limit_track(rhkv *c, size_t off, size_t vlen);
/* Forgets what is held (the connection is gone: the held commands'
 * records fail with it). */
void rhkv__limit_reset(rhkv *c);

/* ---- the connection (conn.c) ---- */

/* Connects when c has no connection, waiting (within the connect
 * timeout) for a connect the event loop started; AUTH follows as c's first
 * command. 0 or RHKV_E*. */
int rhkv__ensure(rhkv *c);
/* Starts a non-blocking connect when c has none: the state becomes
 * CONNECTING (or READY at once); AUTH is queued first. 0 or RHKV_E*. */
int rhkv__connect_start(rhkv *c);
/* Moves a connect on after its socket reported an event. 0 (see
 * c->state) or RHKV_E* with the connection dropped. */
int rhkv__connect_step(rhkv *c);
/* Sets SO_RCVTIMEO on fd to the I/O timeout (plain TCP only). 0 or an
 * errno value. */
int rhkv__set_rcvtimeo(rhkv *c, int fd);
/* Closes c's connection, if any, without a word to the server: the next
 * call connects again. Queued frames are discarded; pending commands are
 * left to rhkv__settle. */
void rhkv__disconnect(rhkv *c);

/* *dst = *src with copies of src's strings. 0, or RHKV_ENOMEM; either way
 * dst's strings are NULL or copies, for rhkv__options_free(). */
int rhkv__options_copy(struct rhkv_options *dst,
		       const struct rhkv_options *src);
void rhkv__options_free(struct rhkv_options *o);

/* ---- TLS (tls.c): c->ssl on c->fd, made by rhkv__tls_begin ---- */

/* Makes c->tls_ctx from c->opt (the CAs, the client certificate). 0, or
 * RHKV_ETLS (a file that does not load) or RHKV_ENOMEM. */
int rhkv__tls_ctx(rhkv *c);
/* Makes c->ssl on the just connected c->fd. 0 or RHKV_E* (dropped). */
int rhkv__tls_begin(rhkv *c);
/* One step of the handshake: 0 done, 1 to be retried once c->fd reports
 * c->ssl_wwant, or RHKV_ETLS (verification or handshake failed) or
 * RHKV_ECONN with the connection dropped. Checks the server's certificate
 * unless tls_insecure. */
int rhkv__tls_step(rhkv *c);
/* One SSL_read_ex / SSL_write_ex: 0 with *n bytes moved, or, when *n is
 * 0, to be retried once c->fd reports *want (POLLIN or POLLOUT). Else the
 * failure, the connection dropped: RHKV_ECONN (lost or closed) or
 * RHKV_ETLS (a TLS error or alert; errstr says which). A write that moved
 * nothing is retried with the same bytes. */
int rhkv__tls_read(rhkv *c, void *buf, size_t cap, size_t *n, short *want);
int rhkv__tls_write(rhkv *c, const void *buf, size_t len, size_t *n,
		    short *want);
/* Decrypted bytes wait in c->ssl: poll() would not report them. */
bool rhkv__tls_pending(const rhkv *c);
/* Frees c->ssl (when any); notify: sends close_notify first (a healthy
 * connection closed on purpose). */
void rhkv__tls_end(rhkv *c, bool notify);

/* ---- the engine (io.c): queued frames, replies, waiting ---- */

/*
 * Appends out[0..len) (n frames with ids first_id, first_id + 1, ...) to
 * c's queue, each reply to go to fn with its index 0..n-1. The frames are
 * sent by the next flush. 0, or RHKV_ENOMEM with nothing queued.
 */
int rhkv__submit(rhkv *c, const char *out, size_t len, uint64_t first_id,
		 size_t n, rhkv__reply_fn fn, void *ctx);
/* Encodes r as one frame onto c's queue with a pending record for it:
 * *how with its id and seq filled in (fn, ctx, index for an internal
 * handler; or, fn NULL, the public callback cb, arg and op). 0,
 * RHKV_EBADKEY (nothing queued) or RHKV_ENOMEM. */
int rhkv__queue(rhkv *c, const struct rhkv__req *r,
		const struct rhkv__pending *how);
/* The seq of the last command queued (wait for it with rhkv__wait). */
static inline uint64_t rhkv__last_seq(const rhkv *c)
{
	return c->seq;
}

/*
 * Blocks until every command up to seq is answered (or failed): sends
 * what is queued and reads replies, polling c's socket, the I/O deadline
 * restarting whenever bytes move. 0, or the error that dropped the
 * connection (the commands not answered then are failed).
 */
int rhkv__wait(rhkv *c, uint64_t seq);
/* As rhkv__wait, but returns as soon as fewer than budget bytes wait to be
 * sent and at most max_pending commands wait for replies (the streaming
 * pipeline's back-pressure). */
int rhkv__drain(rhkv *c, size_t budget, size_t max_pending);

/* One non-blocking round: sends what it can, reads what has come (each
 * complete reply dispatched). 0 or the connection's error. */
int rhkv__io(rhkv *c, bool can_read, bool can_write);
/* Fails the commands of a dropped connection (the safe point after
 * rhkv__drop, outside any reply handler). */
void rhkv__settle(rhkv *c);
/* Tells an event loop's hooks what c waits for now, if that changed. */
void rhkv__notify(rhkv *c);
/* What c waits for: RHKV_WANT_READ / RHKV_WANT_WRITE bits. */
int rhkv__wants(const rhkv *c);
/* ms until the connect or I/O deadline (0: passed), -1: none. */
long long rhkv__deadline_left(const rhkv *c, long long now);
/* Past the deadline: drops the connection with RHKV_ETIMEDOUT. 0 (not
 * past) or RHKV_ETIMEDOUT. */
int rhkv__expire(rhkv *c, long long now);

/* One request, its reply to fn: the blocking call of ops.c. Clears the
 * handle's errstr, connects when needed, queues, waits. */
int rhkv__call(rhkv *c, const struct rhkv__req *r, rhkv__reply_fn fn,
	       void *ctx);
/* Sends out[0..len) (n frames from first_id) and waits for their replies,
 * each to fn: rhkv__submit and rhkv__wait after connecting. */
int rhkv__exchange(rhkv *c, const char *out, size_t len, uint64_t first_id,
		   size_t n, rhkv__reply_fn fn, void *ctx);

/* A public command as a request: r (and meta, for the meta ops, which r
 * then points at) filled, its key and size checked. 0 or RHKV_E*
 * (recorded in errstr). */
int rhkv__cmd_req(rhkv *c, const struct rhkv_cmd *cmd, struct rhkv__req *r,
		  struct proto_bin_meta *meta);
/* The meta ops' options map from cmd's options struct (meta.c). */
int rhkv__meta_opts(rhkv *c, const struct rhkv_cmd *cmd,
		    struct proto_bin_meta *opts);
/* Whether a meta reply of this status carries a result map. */
bool rhkv__meta_has_result(uint32_t status);
/* A meta reply's metadata into out (its value not copied: data NULL). */
void rhkv__meta_fill(const struct proto_bin_meta_reply *mr,
		     struct rhkv_meta *out);

/* The pending record of the frame with id, NULL when none (io.c). */
struct rhkv__pending *rhkv__pending_find(rhkv *c, uint64_t id);

/*
 * A library call that may run c's callbacks brackets them: rhkv__enter
 * first, rhkv__leave(c, rc) as its last use of c (a pipeline or a scan
 * iterator likewise, from its creation to its free). A rhkv_close() made
 * meanwhile (from a callback) is deferred, and the outermost leave frees
 * c: it then returns rc, or RHKV_ECONN when rc is 0, so that a caller
 * never takes success for a live handle. rhkv__close_now frees (conn.c).
 */
static inline void rhkv__enter(rhkv *c)
{
	c->entered++;
}
int rhkv__leave(rhkv *c, int rc);
void rhkv__close_now(rhkv *c);

/* rhkv_cluster_pick, and *moved (may be NULL) whether the handle is not
 * the key's own server's, that one being dead (cluster.c). */
rhkv *rhkv__cluster_pick(rhkv_cluster *cl, const void *key, size_t klen,
			 bool *moved);

/* Decodes the reply of a public command for its callback (async.c). */
void rhkv__deliver(rhkv *c, const struct rhkv__pending *p, uint32_t status,
		   const msgpack_object *payload);
/* Fails a public command's callback with err (async.c). */
void rhkv__deliver_error(rhkv *c, const struct rhkv__pending *p, int err);

#endif
