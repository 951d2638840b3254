/* tls: rhkv-bench's TLS client side (--tls): one SSL_CTX for the run,
 * shared by every worker, and an SSL per connection that libevent's
 * bufferevent_openssl drives. */
#ifndef RHKV_BENCH_TLS_H
#define RHKV_BENCH_TLS_H

#include "bench.h"

#include <openssl/ssl.h>

/* Builds r->tls from r->o (CA, client certificate) and, with --tls-resume,
 * primes r->tls_session with one full handshake; 0, or -1 with a message
 * on stderr. */
int bench_tls_init(struct bench_run *r);
void bench_tls_free(struct bench_run *r);
/* A client SSL for one connection to r's server: host checked when --tls-ca
 * is given, resuming r->tls_session when there is one. NULL: out of
 * memory. */
SSL *bench_tls_new(struct bench_run *r);

#endif
