/*
 * TLS for rhkvd: the server's OpenSSL context (certificate chain, key,
 * client CAs, versions, ciphers, session resumption) and its reload.
 *
 * One context serves every new TLS connection; a reload (SIGHUP, the
 * `refresh_certs` command) builds a new one from the files and swaps it
 * in under a mutex only when the files load: connections made afterwards
 * use it, established ones keep the context they were made with (each
 * SSL object holds a reference), and a bad file leaves the old context in
 * use. Session ticket keys carry over to the new context, so a client's
 * ticket still resumes after a reload (the keys live as long as the
 * process: a restart rotates them); the TLS 1.2 session cache is the
 * context's own and starts empty.
 *
 * Threads: tls_ctx_get and tls_reload may run on any thread at once.
 */
#ifndef RHKV_SERVER_TLS_H
#define RHKV_SERVER_TLS_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct config;
struct net;

/* Plaintext handed to OpenSSL per write call: up to one full record
 * (`stats settings` shows it as memcached's ssl_wbuf_size). */
#define TLS_WRITE_CHUNK 16384

struct tls {
	pthread_mutex_t lock; /* guards ctx */
	SSL_CTX *ctx;
	_Atomic int64_t refreshed; /* unix seconds of the last load */
	_Atomic int connections;   /* open TLS connections */
};

/* Loads the context from cfg (--tls-*); NULL after logging why. */
struct tls *tls_create(const struct config *cfg);
void tls_destroy(struct tls *t);

/* The current context with a reference the caller drops (SSL_CTX_free). */
SSL_CTX *tls_ctx_get(struct tls *t);

/* The OpenSSL verify flags --tls-verify asks for (SSL_VERIFY_*): what
 * `stats settings` shows as ssl_verify_mode, the number memcached shows. */
int tls_verify_flags(const struct config *cfg);

/* Loads the files again. NULL on success, else why not (the old context
 * stays in use); the text is the caller's thread's until its next call. */
const char *tls_reload(struct tls *t, const struct config *cfg);

#endif
