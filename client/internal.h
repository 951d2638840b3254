/*
 * librhkv's insides, shared by its files (never installed): the handle,
 * the payload readers, the request encoder and the exchange of frames. Names
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

/* Largest reply frame body accepted (an mget of many large values). */
#define RHKV__REPLY_MAX (1u << 30)
/* The read buffer's first size, and the least room one read is given. */
#define RHKV__RBUF_INIT 16384u
#define RHKV__RBUF_MIN	4096u
/* The server's default item size limit: larger values first ask the
 * server for its limit (a longer frame would make it close). */
#define RHKV__ITEM_DEFAULT (1u << 20)

struct rhkv {
	int fd;	  /* -1: none; the next call connects */
	SSL *ssl; /* with opt.tls, on fd (non-blocking then); else NULL */
	SSL_CTX *tls_ctx; /* made at the first connect with opt.tls */
	char *host;
	int port;
	struct rhkv_options opt; /* its strings are our copies */
	uint64_t next_id;
	uint64_t item_max;  /* the server's item size limit; 0: not asked */
	msgpack_sbuffer sb; /* the request of the current call */
	msgpack_packer pk;
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

/* Maps a non-OK status to RHKV_E*, records it (a string payload, the
 * server's message, goes to errstr) and returns the code. */
int rhkv__status(rhkv *c, uint32_t status, const msgpack_object *payload);

/* ---- encoding requests (wire.c) ---- */

struct rhkv__req {
	uint32_t op;
	const void *key; /* ops with a key; stats: the group; auth: password */
	size_t klen;
	const void *val;
	size_t vlen;
	uint32_t flags;
	int64_t exptime; /* flush_all: the delay */
	uint64_t cas;
	uint64_t delta;
	const struct proto_bin_meta *meta; /* meta ops: the options map */
};

/* Appends r as one frame with id to sb (through pk, which writes to sb).
 * 0, or RHKV_ENOMEM with sb as it was. */
int rhkv__encode(msgpack_sbuffer *sb, msgpack_packer *pk, uint64_t id,
		 const struct rhkv__req *r);

/* Values above the default item size limit: asks the server for its limit
 * (once per connection), since it closes on a longer frame. 0, or
 * RHKV_ETOOLARGE or the stats call's error. */
int rhkv__check_size(rhkv *c, size_t vlen);

/* ---- the connection (conn.c) ---- */

/* Connects when c has no connection. 0 or RHKV_E*. */
int rhkv__ensure(rhkv *c);
/* Closes c's connection, if any, without a word to the server: the next
 * call connects again. */
void rhkv__disconnect(rhkv *c);

/* *dst = *src with copies of src's strings. 0, or RHKV_ENOMEM; either way
 * dst's strings are NULL or copies, for rhkv__options_free(). */
int rhkv__options_copy(struct rhkv_options *dst,
		       const struct rhkv_options *src);
void rhkv__options_free(struct rhkv_options *o);

/* ---- TLS (tls.c): c->ssl on c->fd, made by rhkv__tls_start ---- */

/* Makes c->tls_ctx from c->opt (the CAs, the client certificate). 0, or
 * RHKV_ETLS (a file that does not load) or RHKV_ENOMEM. */
int rhkv__tls_ctx(rhkv *c);
/* The handshake on the just connected, non-blocking c->fd, within the
 * connect timeout; checks the server's certificate unless tls_insecure.
 * 0, or RHKV_ETLS (verification or handshake failed), RHKV_ETIMEDOUT or
 * RHKV_ECONN with the connection dropped. */
int rhkv__tls_start(rhkv *c);
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

/* ---- exchanging frames (io.c) ---- */

/*
 * Called for reply i (0-based) of an exchange, with its status and its
 * decoded payload. Copies what it keeps: the payload lives until the next
 * reply is decoded (its bytes are the read buffer's, its objects the
 * decoder's zone). Returns 0, or RHKV_EPROTO for a payload of the wrong
 * shape (the connection is then dropped).
 */
typedef int (*rhkv__reply_fn)(rhkv *c, void *ctx, size_t i, uint32_t status,
			      const msgpack_object *payload);

/*
 * Sends out[0..len) (n requests with ids first_id, first_id + 1, ...) and
 * reads the n replies in order, handing each to fn. One send in the common
 * case; while the socket is full, replies are read as they come so that
 * neither side waits on the other. The whole exchange has the I/O timeout.
 * 0, or the connection's error (the connection is dropped).
 */
int rhkv__exchange(rhkv *c, const char *out, size_t len, uint64_t first_id,
		   size_t n, rhkv__reply_fn fn, void *ctx);

/* One request in c->sb, its reply to fn: the blocking call of ops.c. Checks
 * the key of ops that have one first (RHKV_EBADKEY, no round trip). */
int rhkv__call(rhkv *c, const struct rhkv__req *r, rhkv__reply_fn fn,
	       void *ctx);

#endif
