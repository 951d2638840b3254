/*
 * MD5 (RFC 1321), for the ketama ring of rhkv_cluster (cluster.c): not for
 * security. Internal to librhkv: the rhkv__ names are hidden.
 */
#ifndef RHKV_CLIENT_MD5_H
#define RHKV_CLIENT_MD5_H

#include <stddef.h>
#include <stdint.h>

struct rhkv__md5 {
	uint32_t h[4];	     /* the state A, B, C, D */
	uint64_t len;	     /* bytes hashed so far */
	unsigned char b[64]; /* a partial block: len % 64 bytes */
};

void rhkv__md5_init(struct rhkv__md5 *m);
void rhkv__md5_update(struct rhkv__md5 *m, const void *p, size_t n);
void rhkv__md5_final(struct rhkv__md5 *m, unsigned char out[16]);
/* The digest of p[0..n) in one call. */
void rhkv__md5(const void *p, size_t n, unsigned char out[16]);

#endif
