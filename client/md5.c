/*
 * MD5 through OpenSSL 3's EVP interface (librhkv links OpenSSL for TLS
 * already). EVP_MD_fetch once, instead of EVP_md5() per call: each implicit
 * fetch looks the algorithm up in the provider store again.
 */
#include "md5.h"

int rhkv__md5_init(struct rhkv__md5 *m)
{
	m->md = EVP_MD_fetch(NULL, "MD5", NULL);
	m->ctx = EVP_MD_CTX_new();
	if (!m->md || !m->ctx) {
		rhkv__md5_free(m);
		return -1;
	}
	return 0;
}

int rhkv__md5(struct rhkv__md5 *m, const void *p, size_t n,
	      unsigned char out[16])
{
	unsigned int len = 0;

	if (!EVP_DigestInit_ex2(m->ctx, m->md, NULL) ||
	    !EVP_DigestUpdate(m->ctx, p, n) ||
	    !EVP_DigestFinal_ex(m->ctx, out, &len) || len != 16)
		return -1;
	return 0;
}

void rhkv__md5_free(struct rhkv__md5 *m)
{
	EVP_MD_CTX_free(m->ctx);
	EVP_MD_free(m->md);
	m->ctx = NULL;
	m->md = NULL;
}
