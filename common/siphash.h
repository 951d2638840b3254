/*
 * SipHash (Aumasson and Bernstein), the keyed hash of the rhashtable: with a
 * secret 128-bit key, a remote client cannot choose keys that collide. The
 * table uses SipHash-1-3 (one compression round, three finalisation rounds),
 * the variant Rust and Python use for hash tables; SipHash-2-4 is here so the
 * implementation can be checked against the paper's test vectors.
 */
#ifndef RHKV_COMMON_SIPHASH_H
#define RHKV_COMMON_SIPHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct siphash_key {
	uint64_t k0;
	uint64_t k1;
};

static inline uint64_t siphash__rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t siphash__load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

struct siphash__state {
	uint64_t v0, v1, v2, v3;
};

static inline void siphash__round(struct siphash__state *s)
{
	s->v0 += s->v1;
	s->v1 = siphash__rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = siphash__rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = siphash__rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = siphash__rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = siphash__rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = siphash__rotl(s->v2, 32);
}

static inline void siphash__absorb(struct siphash__state *s, uint64_t m,
				   int c_rounds)
{
	s->v3 ^= m;
	for (int i = 0; i < c_rounds; i++)
		siphash__round(s);
	s->v0 ^= m;
}

/* SipHash-c-d of data[0..len) under key. */
static inline uint64_t siphash_cd(const struct siphash_key *key,
				  const void *data, size_t len, int c_rounds,
				  int d_rounds)
{
	const unsigned char *p = data;
	const unsigned char *end = p + (len & ~(size_t)7);
	struct siphash__state s = {
		.v0 = key->k0 ^ 0x736f6d6570736575ULL,
		.v1 = key->k1 ^ 0x646f72616e646f6dULL,
		.v2 = key->k0 ^ 0x6c7967656e657261ULL,
		.v3 = key->k1 ^ 0x7465646279746573ULL,
	};
	uint64_t last = (uint64_t)len << 56;

	for (; p != end; p += 8)
		siphash__absorb(&s, siphash__load64(p), c_rounds);
	for (size_t i = 0; i < (len & 7); i++)
		last |= (uint64_t)p[i] << (8 * i);
	siphash__absorb(&s, last, c_rounds);
	s.v2 ^= 0xff;
	for (int i = 0; i < d_rounds; i++)
		siphash__round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static inline uint64_t siphash13(const struct siphash_key *key,
				 const void *data, size_t len)
{
	return siphash_cd(key, data, len, 1, 3);
}

static inline uint64_t siphash24(const struct siphash_key *key,
				 const void *data, size_t len)
{
	return siphash_cd(key, data, len, 2, 4);
}

#endif
