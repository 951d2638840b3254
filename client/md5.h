/*
 * MD5 for the ketama ring of rhkv_cluster (cluster.c), from OpenSSL's EVP
 * interface: not for security. The digest is fetched once per cluster and
 * its context reused, so hashing a key allocates nothing; like the
 * cluster, a struct rhkv__md5 is used by one thread at a time. Internal to
 * librhkv: the rhkv__ names are hidden.
 */
#ifndef RHKV_CLIENT_MD5_H
#define RHKV_CLIENT_MD5_H

#include <stddef.h>

#include <openssl/evp.h>

struct rhkv__md5 {
	EVP_MD *md; /* OpenSSL's MD5, fetched from the default library context */
	EVP_MD_CTX *ctx; /* reused for every digest */
};

/* 0, or -1 when OpenSSL has no MD5 to give (out of memory, or a
 * configuration that loads only the FIPS provider); m is then freed. */
int rhkv__md5_init(struct rhkv__md5 *m);
/* MD5 of p[0..n) into out: 0, or -1 (OpenSSL failed; out is undefined). */
int rhkv__md5(struct rhkv__md5 *m, const void *p, size_t n,
	      unsigned char out[16]);
/* Frees what init fetched; a zeroed or already freed m is fine. */
void rhkv__md5_free(struct rhkv__md5 *m);

#endif
