/*
 * The hot-key sketch (server/observe/hotkeys.h) against an exact model: counts
 * are exact while no counter was replaced; on random streams every held
 * key's true count lies in [count - err, count], a key not held had at
 * most the smallest count, and a key above total / k is held; merging
 * sketches of disjoint streams keeps those guarantees; a worker's tracker
 * counts every request at sample 1 and none when off.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/observe/hotkeys.h"

TestSuite(hotkeys, .timeout = 30);

static const struct siphash_key seed = { 0x0123456789abcdefull,
					 0xfedcba9876543210ull };

/* A deterministic stream: xorshift64 from a fixed seed. */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static size_t key_of(char *buf, uint32_t id)
{
	return (size_t)snprintf(buf, 32, "key:%u", id);
}

/* Key id drawn with probability about 1/(id+1) (a rough Zipf(1)) over
 * nkeys, or uniformly. */
static uint32_t draw(uint32_t nkeys, bool skewed)
{
	if (!skewed)
		return (uint32_t)(rnd() % nkeys);
	for (;;) {
		double u = (double)(rnd() >> 11) / 9007199254740992.0;
		uint32_t id = (uint32_t)(nkeys * u * u * u);

		if (id < nkeys)
			return id;
	}
}

/* Counter index of key id + 1; 0: not held. */
static uint32_t held(const struct hk_sketch *s, uint32_t id)
{
	char k[32];
	size_t n = key_of(k, id);

	for (uint32_t i = 0; i < s->n; i++)
		if (s->c[i].nkey == n && !memcmp(s->c[i].key, k, n))
			return i + 1;
	return 0;
}

static uint64_t held_count(const struct hk_sketch *s, const char *k, size_t n)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->c[i].nkey == n && !memcmp(s->c[i].key, k, n))
			return hk_sketch_count(s, i);
	return 0;
}

static uint32_t id_of(const char *key, size_t n)
{
	char buf[32];

	cr_assert_lt(n, sizeof(buf));
	memcpy(buf, key, n);
	buf[n] = '\0';
	return (uint32_t)strtoul(buf + 4, NULL, 10);
}

Test(hotkeys, exact_without_replacement)
{
	struct hk_sketch s;
	uint64_t truth[50] = { 0 }, total = 0;
	char k[32];

	cr_assert_eq(hk_sketch_init(&s, 64, &seed), 0);
	for (int i = 0; i < 5000; i++) {
		uint32_t id = (uint32_t)(rnd() % 50);
		uint64_t w = 1 + rnd() % 3;

		hk_sketch_add(&s, k, key_of(k, id), w);
		truth[id] += w;
		total += w;
	}
	cr_assert_eq(s.n, 50);
	cr_assert_eq(s.total, total);
	cr_assert_eq(hk_sketch_min(&s), 0, "a free counter: nothing unseen");
	for (uint32_t id = 0; id < 50; id++) {
		uint32_t i = held(&s, id);

		cr_assert(i, "key %u lost", id);
		cr_assert_eq(hk_sketch_count(&s, i - 1), truth[id],
			     "key %u: %lu, true %lu", id,
			     (unsigned long)hk_sketch_count(&s, i - 1),
			     (unsigned long)truth[id]);
		cr_assert_eq(s.c[i - 1].err, 0);
	}
	hk_sketch_clear(&s);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(held(&s, 3), 0);
	hk_sketch_free(&s);
}

/* The space-saving guarantees of s against truth[0..nkeys). */
static void check_guarantees(const struct hk_sketch *s, const uint64_t *truth,
			     uint32_t nkeys)
{
	uint64_t min = hk_sketch_min(s), sum = 0;

	for (uint32_t i = 0; i < s->n; i++)
		sum += hk_sketch_count(s, i);
	cr_assert_eq(sum, s->total, "counts add up to what was added");
	for (uint32_t id = 0; id < nkeys; id++) {
		uint32_t i = held(s, id);
		uint64_t count, err;

		if (!i) {
			cr_assert_leq(truth[id], min,
				      "key %u not held: true %lu > min %lu", id,
				      (unsigned long)truth[id],
				      (unsigned long)min);
			cr_assert_leq(truth[id] * s->k, s->total,
				      "key %u above total/k not held", id);
			continue;
		}
		count = hk_sketch_count(s, i - 1);
		err = s->c[i - 1].err;
		cr_assert_leq(count - err, truth[id],
			      "key %u: count %lu - err %lu > true %lu", id,
			      (unsigned long)count, (unsigned long)err,
			      (unsigned long)truth[id]);
		cr_assert_geq(count, truth[id], "key %u under-counted", id);
		cr_assert_leq(err, min, "an error is at most the min");
	}
}

static void random_stream(bool skewed)
{
	enum { NKEYS = 3000, K = 64 };
	static uint64_t truth[NKEYS];
	struct hk_sketch s;
	char k[32];

	memset(truth, 0, sizeof(truth));
	cr_assert_eq(hk_sketch_init(&s, K, &seed), 0);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 50000; i++) {
			uint32_t id = draw(NKEYS, skewed);
			uint64_t w = 1 + rnd() % 4;

			hk_sketch_add(&s, k, key_of(k, id), w);
			truth[id] += w;
		}
		check_guarantees(&s, truth, NKEYS);
	}
	cr_assert_eq(s.n, K);
	hk_sketch_free(&s);
}

Test(hotkeys, guarantees_skewed)
{
	random_stream(true);
}

Test(hotkeys, guarantees_uniform)
{
	random_stream(false);
}

/* Keys of every length and byte, replaced over and over: the index finds
 * each one again after others were removed from it. */
Test(hotkeys, binary_keys_and_replacement)
{
	struct hk_sketch s;
	char key[PROTO_KEY_MAX];

	cr_assert_eq(hk_sketch_init(&s, 8, &seed), 0);
	for (int i = 0; i < 20000; i++) {
		size_t n = 1 + rnd() % PROTO_KEY_MAX;

		for (size_t j = 0; j < n; j++)
			key[j] = (char)rnd();
		hk_sketch_add(&s, key, n, 1);
		/* the key just added is held, and found again */
		hk_sketch_add(&s, key, n, 1);
		cr_assert_eq(s.n, i < 8 ? (uint32_t)i + 1 : 8);
	}
	for (uint32_t i = 0; i < s.n; i++) {
		uint64_t before = hk_sketch_count(&s, i);
		char copy[PROTO_KEY_MAX];
		size_t n = s.c[i].nkey;

		memcpy(copy, s.c[i].key, n);
		hk_sketch_add(&s, copy, n, 5);
		cr_assert_eq(held_count(&s, copy, n), before + 5);
	}
	hk_sketch_free(&s);
}

/* Four sketches over disjoint parts of one stream, merged. */
Test(hotkeys, merge)
{
	enum { NKEYS = 2000, K = 32, PARTS = 4 };
	static uint64_t truth[NKEYS];
	struct hk_sketch s[PARTS];
	struct hk_merge m;
	struct hk_top top[100];
	bool listed[NKEYS] = { false };
	uint64_t total = 0;
	size_t n;
	char k[32];

	memset(truth, 0, sizeof(truth));
	for (int p = 0; p < PARTS; p++) {
		cr_assert_eq(hk_sketch_init(&s[p], K, &seed), 0);
		for (int i = 0; i < 20000; i++) {
			uint32_t id = draw(NKEYS, true);

			hk_sketch_add(&s[p], k, key_of(k, id), 1);
			truth[id]++;
			total++;
		}
	}
	hk_merge_init(&m);
	for (int p = 0; p < PARTS; p++)
		hk_merge_add(&m, &s[p]);
	cr_assert_eq(m.total, total);
	n = hk_merge_top(&m, top, 100);
	cr_assert_eq(n, 100);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = id_of(top[i].key, top[i].nkey);

		listed[id] = true;
		if (i)
			cr_assert_geq(top[i - 1].count, top[i].count);
		cr_assert_leq(top[i].count - top[i].err, truth[id],
			      "rank %zu key %u: %lu - %lu > true %lu", i + 1,
			      id, (unsigned long)top[i].count,
			      (unsigned long)top[i].err,
			      (unsigned long)truth[id]);
		cr_assert_geq(top[i].count, truth[id]);
		cr_assert_leq(top[i].err, hk_merge_bound(&m));
	}
	/* A key not listed counts no more than the last listed one (a key
	 * no sketch holds: at most the bound, which every count is over). */
	for (uint32_t id = 0; id < NKEYS; id++)
		if (!listed[id])
			cr_assert_leq(truth[id], top[n - 1].count, "key %u",
				      id);
	/* The hottest key is far above the bound: listed first, exactly. */
	cr_assert_eq(id_of(top[0].key, top[0].nkey), 0);
	hk_merge_free(&m);
	for (int p = 0; p < PARTS; p++)
		hk_sketch_free(&s[p]);
}

/* Sketches that never replaced a counter merge into exact sums. */
Test(hotkeys, merge_exact)
{
	struct hk_sketch a, b;
	struct hk_merge m;
	struct hk_top top[3];
	char k[32];

	cr_assert_eq(hk_sketch_init(&a, 8, &seed), 0);
	cr_assert_eq(hk_sketch_init(&b, 8, &seed), 0);
	hk_sketch_add(&a, k, key_of(k, 1), 5);
	hk_sketch_add(&a, k, key_of(k, 2), 3);
	hk_sketch_add(&b, k, key_of(k, 2), 4);
	hk_sketch_add(&b, k, key_of(k, 3), 1);
	hk_merge_init(&m);
	hk_merge_add(&m, &a);
	hk_merge_add(&m, &b);
	cr_assert_eq(hk_merge_top(&m, top, 3), 3);
	cr_assert_eq(hk_merge_bound(&m), 0);
	cr_assert_eq(id_of(top[0].key, top[0].nkey), 2);
	cr_assert_eq(top[0].count, 7);
	cr_assert_eq(id_of(top[1].key, top[1].nkey), 1);
	cr_assert_eq(top[1].count, 5);
	cr_assert_eq(top[2].count, 1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(top[i].err, 0);
	hk_merge_free(&m);
	hk_sketch_free(&a);
	hk_sketch_free(&b);
}

static void note(struct hotkeys_worker *h, enum hotkeys_class cls, uint32_t id)
{
	char k[32];
	size_t n = key_of(k, id);

	hotkeys_note(h, cls, (struct cache_key){ k, n });
}

/* The report of class cls over the one tracker h. */
static void report(struct hotkeys_report *r, const struct hotkeys_params *p,
		   struct hotkeys_worker *h, enum hotkeys_class cls, size_t n)
{
	hotkeys_report_begin(r, p, cls);
	hotkeys_report_add(r, h);
	cr_assert_eq(hotkeys_report_end(r, n), 0);
}

/* Sample 1: every request counted, exact; reads and writes apart. */
Test(hotkeys, tracker_exact)
{
	struct hotkeys_params p;
	struct hotkeys_worker h;
	struct hotkeys_report r;

	hotkeys_params_init(&p, 1, 3600);
	cr_assert_eq(hotkeys_worker_init(&h, &p, 0), 0);
	for (int i = 0; i < 1000; i++) {
		note(&h, HOTKEYS_READ, (uint32_t)(i % 4)); /* 250 each */
		if (i % 10 == 0)
			note(&h, HOTKEYS_WRITE, 9);
	}
	hotkeys_tick(&h);
	report(&r, &p, &h, HOTKEYS_READ, 10);
	cr_assert_eq(r.requests, 1000);
	cr_assert_eq(r.n, 4);
	cr_assert_eq(r.bound, 0);
	for (size_t i = 0; i < r.n; i++) {
		cr_assert_eq(r.top[i].count, 250);
		cr_assert(hotkeys_exact(&r, &r.top[i]));
	}
	hotkeys_report_free(&r);
	report(&r, &p, &h, HOTKEYS_WRITE, 1);
	cr_assert_eq(r.requests, 100);
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.top[0].count, 100);
	hotkeys_report_free(&r);
	hotkeys_worker_free(&h);
}

/* Sampling one in 8: every request is in the class's total once its gap
 * closes, and a key of half the requests is estimated within the error
 * the report states. */
Test(hotkeys, tracker_sampled)
{
	struct hotkeys_params p;
	struct hotkeys_worker h;
	struct hotkeys_report r;
	const int total = 80000;

	hotkeys_params_init(&p, 8, 3600);
	cr_assert_eq(hotkeys_worker_init(&h, &p, 1), 0);
	for (int i = 0; i < total; i++)
		note(&h, HOTKEYS_READ,
		     i % 2 ? 0 : 1 + (uint32_t)(rnd() % 5000));
	report(&r, &p, &h, HOTKEYS_READ, 5);
	cr_assert_leq(r.requests, (uint64_t)total);
	cr_assert_gt(r.requests + 2 * 8, (uint64_t)total);
	cr_assert_eq(id_of(r.top[0].key, r.top[0].nkey), 0);
	cr_assert_leq(r.top[0].count, total / 2 + r.top[0].err);
	cr_assert_geq(r.top[0].count + r.top[0].err, (uint64_t)total / 2);
	cr_assert_not(hotkeys_exact(&r, &r.top[0]));
	hotkeys_report_free(&r);
	hotkeys_worker_free(&h);
}

/* Off (sample 0), or a tracker never set up (all zero): notes cost a
 * countdown and record nothing. */
Test(hotkeys, tracker_off)
{
	struct hotkeys_params p;
	struct hotkeys_worker h, zero;
	struct hotkeys_report r;

	hotkeys_params_init(&p, 0, 10);
	cr_assert_eq(hotkeys_worker_init(&h, &p, 0), 0);
	memset(&zero, 0, sizeof(zero));
	for (int i = 0; i < 1000; i++) {
		note(&h, HOTKEYS_READ, 1);
		note(&zero, HOTKEYS_WRITE, 1);
	}
	hotkeys_tick(&h);
	hotkeys_tick(&zero);
	hotkeys_report_begin(&r, &p, HOTKEYS_READ);
	hotkeys_report_add(&r, &h);
	hotkeys_report_add(&r, &zero);
	cr_assert_eq(hotkeys_report_end(&r, 10), 0);
	cr_assert_eq(r.n, 0);
	cr_assert_eq(r.requests, 0);
	hotkeys_report_free(&r);
	hotkeys_worker_free(&h);
	hotkeys_worker_free(&zero);
}
