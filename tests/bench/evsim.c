/* evsim.c - tiny cache-eviction simulator: LRU, SIEVE, HASH-CLOCK, SLRU (memcached-like).
 * Unit-size items, "get, set on miss".  Build: gcc -O2 -o evsim evsim.c -lm
 * Usage: ./evsim A|B|C|C2|D [seed]
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

/* ---------------- PRNG / hash ---------------- */
static uint64_t rng_s;
static inline uint64_t splitmix64(void)
{
	uint64_t z = (rng_s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}
static inline double urand(void)
{
	return (splitmix64() >> 11) * (1.0 / 9007199254740992.0);
}
static uint64_t hash_seed = 0x1234567ULL;
static inline uint64_t hkey(uint64_t x)
{ /* splitmix64 finalizer, seeded */
	x += hash_seed + 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* ---------------- Zipf via precomputed CDF + binary search ---------------- */
static double *zcdf;
static uint32_t zK;
static void zipf_init(uint32_t K, double a)
{
	zK = K;
	zcdf = malloc(sizeof(double) * K);
	double s = 0;
	for (uint32_t i = 0; i < K; i++) {
		s += 1.0 / pow((double)(i + 1), a);
		zcdf[i] = s;
	}
	for (uint32_t i = 0; i < K; i++)
		zcdf[i] /= s;
}
static inline uint32_t zipf_draw(void)
{ /* returns rank-1 in [0,K) ; 0 = most popular */
	double u = urand();
	uint32_t lo = 0, hi = zK - 1;
	while (lo < hi) {
		uint32_t m = (lo + hi) >> 1;
		if (zcdf[m] < u)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* ---------------- generic cache interface ---------------- */
enum { P_LRU, P_SIEVE, P_HCLOCK, P_SLRU, NPOL };
static const char *pname[NPOL] = { "LRU", "SIEVE", "HASH-CLOCK",
				   "SLRU(memcached-like)" };

typedef struct {
	int pol;
	uint32_t cap, n;
	uint32_t *key;
	uint8_t *vis;
	int32_t *prv, *nxt;
	uint8_t *seg;
	/* open-addressing index key->slot (LRU/SIEVE/SLRU) */
	uint32_t imask;
	uint32_t *ikey;
	int32_t *islot;
	/* LRU / SIEVE list: head = newest */
	int32_t head, tail, hand;
	/* SLRU: 3 lists */
	int32_t sh[3], st[3];
	uint32_t sn[3], slim[3];
	/* HASH-CLOCK */
	int kbits;
	uint32_t nb;
	int32_t *bhead;
	int32_t *hlink; /* hlink: pointer-ish, encoded */
	uint32_t hctr;
	int32_t *link; /* pointer to current link slot */
	uint32_t nfree;
	int32_t *freel;
} cache_t;

#define NONE (-1)
static uint32_t bitrev(uint32_t x, int k)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
	x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
	x = (x >> 16) | (x << 16);
	return k ? x >> (32 - k) : 0;
}

static cache_t *cache_new(int pol, uint32_t cap, double *loadf)
{
	cache_t *c = calloc(1, sizeof *c);
	c->pol = pol;
	c->cap = cap;
	c->key = malloc(4 * cap);
	c->vis = calloc(cap, 1);
	c->prv = malloc(4 * cap);
	c->nxt = malloc(4 * cap);
	c->seg = calloc(cap, 1);
	c->freel = malloc(4 * cap);
	for (uint32_t i = 0; i < cap; i++)
		c->freel[i] = cap - 1 - i;
	c->nfree = cap;
	c->head = c->tail = c->hand = NONE;
	for (int i = 0; i < 3; i++)
		c->sh[i] = c->st[i] = NONE;
	c->slim[0] = cap / 5;
	c->slim[1] = cap * 2 / 5;
	c->slim[2] = cap;
	if (pol == P_HCLOCK) {
		/* smallest 2^k with load N/2^k <= 0.85 (gives 0.61-0.84 for the sizes used here) */
		double maxl = getenv("HC_MAXLOAD") ? atof(getenv("HC_MAXLOAD"))
						   : 0.85;
		int k = 1;
		while ((double)cap / (double)(1u << k) > maxl)
			k++;
		c->kbits = k;
		c->nb = 1u << k;
		c->bhead = malloc(4 * c->nb);
		for (uint32_t i = 0; i < c->nb; i++)
			c->bhead[i] = NONE;
		c->hctr = 0;
		c->link = &c->bhead[bitrev(0, k)];
		if (loadf)
			*loadf = (double)cap / c->nb;
	} else {
		uint32_t sz = 1;
		while (sz < 2 * cap)
			sz <<= 1;
		c->imask = sz - 1;
		c->ikey = malloc(4 * sz);
		c->islot = malloc(4 * sz);
		for (uint32_t i = 0; i < sz; i++)
			c->islot[i] = NONE;
	}
	return c;
}
static void cache_free(cache_t *c)
{
	free(c->key);
	free(c->vis);
	free(c->prv);
	free(c->nxt);
	free(c->seg);
	free(c->freel);
	free(c->bhead);
	free(c->ikey);
	free(c->islot);
	free(c);
}

/* index ops (linear probing, backward-shift deletion) */
static inline int32_t idx_find(cache_t *c, uint32_t k)
{
	uint32_t i = (uint32_t)hkey(k) & c->imask;
	for (;;) {
		int32_t s = c->islot[i];
		if (s == NONE)
			return NONE;
		if (c->ikey[i] == k)
			return s;
		i = (i + 1) & c->imask;
	}
}
static inline void idx_put(cache_t *c, uint32_t k, int32_t s)
{
	uint32_t i = (uint32_t)hkey(k) & c->imask;
	while (c->islot[i] != NONE)
		i = (i + 1) & c->imask;
	c->ikey[i] = k;
	c->islot[i] = s;
}
static inline void idx_del(cache_t *c, uint32_t k)
{
	uint32_t m = c->imask, i = (uint32_t)hkey(k) & m;
	while (c->ikey[i] != k || c->islot[i] == NONE)
		i = (i + 1) & m;
	uint32_t j = i;
	for (;;) {
		j = (j + 1) & m;
		if (c->islot[j] == NONE)
			break;
		uint32_t h = (uint32_t)hkey(c->ikey[j]) & m;
		/* can entry at j move to i? yes if h is not cyclically in (i, j] */
		if ((j > i && (h <= i || h > j)) ||
		    (j < i && (h <= i && h > j))) {
			c->ikey[i] = c->ikey[j];
			c->islot[i] = c->islot[j];
			i = j;
		}
	}
	c->islot[i] = NONE;
}

/* doubly linked list helpers on (head,tail) pair; head = newest */
static inline void l_unlink(cache_t *c, int32_t *h, int32_t *t, int32_t s)
{
	if (c->prv[s] != NONE)
		c->nxt[c->prv[s]] = c->nxt[s];
	else
		*h = c->nxt[s];
	if (c->nxt[s] != NONE)
		c->prv[c->nxt[s]] = c->prv[s];
	else
		*t = c->prv[s];
}
static inline void l_pushhead(cache_t *c, int32_t *h, int32_t *t, int32_t s)
{
	c->prv[s] = NONE;
	c->nxt[s] = *h;
	if (*h != NONE)
		c->prv[*h] = s;
	*h = s;
	if (*t == NONE)
		*t = s;
}

/* --- SLRU rebalancing (memcached lru_pull_tail semantics, simplified) --- */
static void slru_move(cache_t *c, int32_t s, int to)
{
	int from = c->seg[s];
	l_unlink(c, &c->sh[from], &c->st[from], s);
	c->sn[from]--;
	l_pushhead(c, &c->sh[to], &c->st[to], s);
	c->sn[to]++;
	c->seg[s] = to;
}
static void slru_balance(cache_t *c)
{
	while (c->sn[0] >
	       c->slim[0]) { /* HOT tail: active -> WARM, else -> COLD */
		int32_t s = c->st[0];
		if (c->vis[s]) {
			c->vis[s] = 0;
			slru_move(c, s, 1);
		} else
			slru_move(c, s, 2);
	}
	while (c->sn[1] >
	       c->slim[1]) { /* WARM tail: active -> bump within WARM, else -> COLD */
		int32_t s = c->st[1];
		if (c->vis[s]) {
			c->vis[s] = 0;
			slru_move(c, s, 1);
		} else
			slru_move(c, s, 2);
	}
}

/* evict one item, return freed slot */
static int32_t evict(cache_t *c)
{
	int32_t v;
	switch (c->pol) {
	case P_LRU:
		v = c->tail;
		l_unlink(c, &c->head, &c->tail, v);
		idx_del(c, c->key[v]);
		return v;
	case P_SIEVE: {
		int32_t o = c->hand;
		if (o == NONE)
			o = c->tail;
		while (c->vis[o]) {
			c->vis[o] = 0;
			o = c->prv[o];
			if (o == NONE)
				o = c->tail;
		}
		c->hand = c->prv[o];
		l_unlink(c, &c->head, &c->tail, o);
		idx_del(c, c->key[o]);
		return o;
	}
	case P_SLRU: {
		int sg = c->st[2] != NONE ? 2 : (c->st[1] != NONE ? 1 : 0);
		v = c->st[sg];
		l_unlink(c, &c->sh[sg], &c->st[sg], v);
		c->sn[sg]--;
		idx_del(c, c->key[v]);
		return v;
	}
	case P_HCLOCK:
		for (;;) {
			int32_t it = *c->link;
			if (it == NONE) {
				c->hctr = (c->hctr + 1) & (c->nb - 1);
				c->link = &c->bhead[bitrev(c->hctr, c->kbits)];
				continue;
			}
			if (c->vis[it]) {
				c->vis[it] = 0;
				c->link = &c->nxt[it];
				continue;
			}
			*c->link =
				c->nxt[it]; /* unlink; hand now points at the following item */
			return it;
		}
	}
	return NONE;
}

/* access key; returns 1 on hit. On miss, inserts. */
static int access_key(cache_t *c, uint32_t k)
{
	if (c->pol == P_HCLOCK) {
		uint32_t b = (uint32_t)(hkey(k) >> (64 - c->kbits));
		int32_t *lp = &c->bhead[b];
		while (*lp != NONE) {
			if (c->key[*lp] == k) {
				c->vis[*lp] = 1;
				return 1;
			}
			lp = &c->nxt[*lp];
		}
		int32_t s;
		if (c->nfree)
			s = c->freel[--c->nfree];
		else {
			s = evict(c);
			/* eviction may have unlinked the tail of this same chain: recompute tail link */
			lp = &c->bhead[b];
			while (*lp != NONE)
				lp = &c->nxt[*lp];
		}
		c->key[s] = k;
		c->vis[s] = 0;
		c->nxt[s] = NONE;
		*lp = s; /* append at chain tail */
		return 0;
	}
	int32_t s = idx_find(c, k);
	if (s != NONE) {
		if (c->pol == P_LRU) {
			l_unlink(c, &c->head, &c->tail, s);
			l_pushhead(c, &c->head, &c->tail, s);
		} else if (c->pol == P_SIEVE)
			c->vis[s] = 1;
		else { /* SLRU */
			if (c->seg[s] == 2) {
				c->vis[s] = 0;
				slru_move(c, s, 1);
				slru_balance(c);
			} else
				c->vis[s] = 1;
		}
		return 1;
	}
	s = c->nfree ? c->freel[--c->nfree] : evict(c);
	c->key[s] = k;
	c->vis[s] = 0;
	idx_put(c, k, s);
	if (c->pol == P_SLRU) {
		c->seg[s] = 0;
		l_pushhead(c, &c->sh[0], &c->st[0], s);
		c->sn[0]++;
		slru_balance(c);
	} else
		l_pushhead(c, &c->head, &c->tail, s);
	return 0;
}
static int cached(cache_t *c, uint32_t k)
{
	if (c->pol == P_HCLOCK) {
		int32_t s = c->bhead[(uint32_t)(hkey(k) >> (64 - c->kbits))];
		for (; s != NONE; s = c->nxt[s])
			if (c->key[s] == k)
				return 1;
		return 0;
	}
	return idx_find(c, k) != NONE;
}

/* ---------------- experiments ---------------- */
#define K    1000000u
#define NREQ 20000000u
#define WARM 2000000u

static uint32_t *trace;
static uint8_t *isz; /* isz: request is a zipf key (vs one-hit wonder) */
static void gen_trace(double ohw_frac)
{
	trace = malloc(4ull * NREQ);
	isz = malloc(NREQ);
	uint32_t nextu = K;
	for (uint32_t i = 0; i < NREQ; i++) {
		if (ohw_frac > 0 && urand() < ohw_frac) {
			trace[i] = nextu++;
			isz[i] = 0;
		} else {
			trace[i] = zipf_draw();
			isz[i] = 1;
		}
	}
}
static void run_trace(int pol, uint32_t cap, double *hr, double *hrz)
{
	double lf = 0;
	cache_t *c = cache_new(pol, cap, &lf);
	uint64_t h = 0, n = 0, hz = 0, nz = 0;
	for (uint32_t i = 0; i < NREQ; i++) {
		int hit = access_key(c, trace[i]);
		if (i >= WARM) {
			n++;
			h += hit;
			if (isz[i]) {
				nz++;
				hz += hit;
			}
		}
	}
	*hr = (double)h / n;
	if (hrz)
		*hrz = nz ? (double)hz / nz : 0;
	if (pol == P_HCLOCK)
		fprintf(stderr, "  [HASH-CLOCK cap=%u buckets=%u load=%.3f]\n",
			cap, c->nb, lf);
	cache_free(c);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s A|B|C|C2|D [seed]\n", argv[0]);
		return 1;
	}
	uint64_t seed = argc > 2 ? strtoull(argv[2], 0, 0) : 42;
	rng_s = seed;
	hash_seed = seed * 0x9E3779B97F4A7C15ULL + 7;
	const char *w = argv[1];
	if (!strcmp(w, "A") || !strcmp(w, "B") || !strcmp(w, "D")) {
		zipf_init(K, 0.99);
		gen_trace(!strcmp(w, "D") ? 0.30 : 0.0);
		if (!strcmp(w, "A")) {
			double pct[4] = { 0.01, 0.05, 0.10, 0.20 };
			printf("# A: Zipf(0.99) K=%u req=%u warmup=%u "
			       "seed=%llu\n| N (%%K) | LRU | SIEVE | "
			       "HASH-CLOCK | SLRU |\n|---|---|---|---|---|\n",
			       K, NREQ, WARM, (unsigned long long)seed);
			for (int j = 0; j < 4; j++) {
				uint32_t cap = (uint32_t)(K * pct[j]);
				printf("| %u (%.0f%%) |", cap, pct[j] * 100);
				for (int p = 0; p < NPOL; p++) {
					double hr;
					run_trace(p, cap, &hr, 0);
					printf(" %.4f |", hr);
					fflush(stdout);
				}
				printf("\n");
			}
		} else if (!strcmp(w, "B")) {
			uint64_t budget = (uint64_t)(K / 10) * 176; /* bytes */
			printf("# B: Zipf(0.99), equal byte budget %llu B "
			       "(=100000 x 176B) seed=%llu\n| policy | item "
			       "bytes | items | hit ratio "
			       "|\n|---|---|---|---|\n",
			       (unsigned long long)budget,
			       (unsigned long long)seed);
			for (int p = 0; p < NPOL; p++) {
				uint32_t ib = p == P_HCLOCK ? 160 : 176;
				uint32_t cap = (uint32_t)(budget / ib);
				double hr;
				run_trace(p, cap, &hr, 0);
				printf("| %s | %u | %u | %.4f |\n", pname[p],
				       ib, cap, hr);
				fflush(stdout);
			}
		} else {
			printf("# D: 70%% Zipf(0.99) + 30%% one-hit wonders, "
			       "N=100000 seed=%llu\n| policy | hit ratio (all) "
			       "| hit ratio (Zipf reqs only) "
			       "|\n|---|---|---|\n",
			       (unsigned long long)seed);
			for (int p = 0; p < NPOL; p++) {
				double hr, hrz;
				run_trace(p, K / 10, &hr, &hrz);
				printf("| %s | %.4f | %.4f |\n", pname[p], hr,
				       hrz);
				fflush(stdout);
			}
		}
	} else if (!strcmp(w, "C") || !strcmp(w, "C2") || !strcmp(w, "C3")) {
		/* C: hot set H=1000 round-robin interleaved 1:1 with one-time keys, total one-time = 10*N, N=10000.
         * C2: harder variant: R one-time keys per hot request (R=12 -> hot reuse distance 13000 > N). */
		uint32_t N = 10000, H = 1000, R = !strcmp(w, "C") ? 1 : 12,
			 total_ot = 10 * N;
		int prewarm = !strcmp(
			w,
			"C3"); /* C3 = C2 but each hot key requested twice up front (so it starts 'visited') */
		printf("# %s: N=%u hot=%u round-robin, %u one-time key(s) per "
		       "hot request, %u one-time keys total, prewarm=%d, "
		       "seed=%llu\n"
		       "| policy | hot set cached at end | hot hit ratio (all) "
		       "| hot hit ratio (2nd half) |\n|---|---|---|---|\n",
		       w, N, H, R, total_ot, prewarm, (unsigned long long)seed);
		for (int p = 0; p < NPOL; p++) {
			cache_t *c = cache_new(p, N, 0);
			uint32_t ot = 0, hi = 0, nextu = 1u << 30;
			uint64_t hh = 0, hn = 0, hh2 = 0, hn2 = 0;
			if (prewarm)
				for (int r = 0; r < 2; r++)
					for (uint32_t k = 0; k < H; k++)
						access_key(c, k);
			while (ot < total_ot) {
				int hit = access_key(c, hi % H);
				hh += hit;
				hn++;
				if (ot >= total_ot / 2) {
					hh2 += hit;
					hn2++;
				}
				hi++;
				for (uint32_t r = 0; r < R && ot < total_ot;
				     r++, ot++)
					access_key(c, nextu++);
			}
			uint32_t inc = 0;
			for (uint32_t k = 0; k < H; k++)
				inc += cached(c, k);
			printf("| %s | %.3f | %.4f | %.4f |\n", pname[p],
			       (double)inc / H, (double)hh / hn,
			       (double)hh2 / hn2);
			cache_free(c);
		}
	}
	return 0;
}
