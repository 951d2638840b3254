/*
 * Hot keys (hotkeys.h): the space-saving sketch (Metwally, Agrawal and El
 * Abbadi, 2005), its merge, and a worker's sampling tracker with two
 * windows.
 *
 * Why space-saving is exact enough: a counter only ever grows, and a new
 * key replaces the smallest one and inherits its count as its error, so
 * count - err <= true <= count for every key held, and a key not held had
 * at most the smallest count. With k counters the smallest count is at
 * most samples / k. Keys hot enough to matter enter early and are never
 * replaced: their error stays 0.
 *
 * Merging disjoint streams (one sketch per worker and window): a key's
 * merged count adds its count where a sketch holds it and that sketch's
 * smallest count where it does not (an upper bound there), and its error
 * adds the errors where held and the smallest counts where not; the
 * invariant holds for the sum. So the merge keeps, per key, the sum of
 * (count - min) and (err - min) over the sketches that hold it, and adds
 * the sum of every sketch's min at the end.
 *
 * Sampling weights each sample by the gap it closes (the requests since
 * the previous sample of its class): the count of a key is then an
 * unbiased estimate of its requests, and the gaps add up to every request.
 */
#include "hotkeys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

const char *const hotkeys_class_name[HOTKEYS_NCLASSES] = { "read", "write" };

/* ---- the sketch ----
 *
 * What a sample touches is kept small and apart from the keys, so that it
 * stays in cache: the heap (count and counter, 16 bytes each), each
 * counter's heap position and hash, and the index; a counter's key is
 * read only to confirm a match and written only when it is replaced. */

int hk_sketch_init(struct hk_sketch *s, uint32_t k,
		   const struct siphash_key *seed)
{
	memset(s, 0, sizeof(*s));
	if (k == 0 || k > 32768)
		return -EINVAL;
	s->k = k;
	s->seed = seed;
	s->nslots = 1;
	while (s->nslots < 2 * k)
		s->nslots <<= 1;
	s->c = malloc(k * sizeof(*s->c));
	s->heap = malloc(k * sizeof(*s->heap));
	s->pos = malloc(k * sizeof(*s->pos));
	s->hash = malloc(k * sizeof(*s->hash));
	s->slot = calloc(s->nslots, sizeof(*s->slot));
	if (!s->c || !s->heap || !s->pos || !s->hash || !s->slot) {
		hk_sketch_free(s);
		return -ENOMEM;
	}
	return 0;
}

void hk_sketch_free(struct hk_sketch *s)
{
	free(s->c);
	free(s->heap);
	free(s->pos);
	free(s->hash);
	free(s->slot);
	s->c = NULL;
	s->heap = NULL;
	s->pos = s->slot = NULL;
	s->hash = NULL;
	s->n = 0;
}

void hk_sketch_clear(struct hk_sketch *s)
{
	if (s->slot)
		memset(s->slot, 0, s->nslots * sizeof(*s->slot));
	s->n = 0;
	s->total = 0;
}

uint64_t hk_sketch_min(const struct hk_sketch *s)
{
	return s->n < s->k ? 0 : s->heap[0].count;
}

static void heap_set(struct hk_sketch *s, uint32_t pos, struct hk_heap e)
{
	s->heap[pos] = e;
	s->pos[e.ci] = (uint16_t)pos;
}

/* Counts only grow: a counter moves down the min-heap. */
static void sift_down(struct hk_sketch *s, uint32_t pos)
{
	struct hk_heap e = s->heap[pos];

	for (;;) {
		uint32_t l = 2 * pos + 1, m = l;

		if (l >= s->n)
			break;
		if (l + 1 < s->n && s->heap[l + 1].count < s->heap[l].count)
			m = l + 1;
		if (s->heap[m].count >= e.count)
			break;
		heap_set(s, pos, s->heap[m]);
		pos = m;
	}
	heap_set(s, pos, e);
}

static void sift_up(struct hk_sketch *s, uint32_t pos)
{
	struct hk_heap e = s->heap[pos];

	while (pos > 0 && s->heap[(pos - 1) / 2].count > e.count) {
		heap_set(s, pos, s->heap[(pos - 1) / 2]);
		pos = (pos - 1) / 2;
	}
	heap_set(s, pos, e);
}

/* The slot holding key, or the empty slot where it would go. */
static uint32_t slot_find(const struct hk_sketch *s, uint64_t h,
			  const char *key, size_t n)
{
	uint32_t mask = s->nslots - 1, i = (uint32_t)h & mask;

	for (; s->slot[i]; i = (i + 1) & mask) {
		uint32_t ci = s->slot[i] - 1u;

		if (s->hash[ci] == h && s->c[ci].nkey == n &&
		    !memcmp(s->c[ci].key, key, n))
			break;
	}
	return i;
}

/* The slot of counter ci, found by its hash and index alone. */
static uint32_t slot_of(const struct hk_sketch *s, uint32_t ci)
{
	uint32_t mask = s->nslots - 1, i = (uint32_t)s->hash[ci] & mask;

	while (s->slot[i] != ci + 1)
		i = (i + 1) & mask;
	return i;
}

/* Linear probing's deletion: later entries of the cluster move back so
 * that no lookup stops early at the hole. */
static void slot_remove(struct hk_sketch *s, uint32_t i)
{
	uint32_t mask = s->nslots - 1, j = i;

	s->slot[i] = 0;
	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!s->slot[j])
			return;
		home = (uint32_t)s->hash[s->slot[j] - 1u] & mask;
		/* Move j back to i unless its home lies in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		s->slot[i] = s->slot[j];
		s->slot[j] = 0;
		i = j;
	}
}

void hk_sketch_add(struct hk_sketch *s, const char *key, size_t n, uint64_t w)
{
	uint64_t h = siphash13(s->seed, key, n);
	uint32_t i = slot_find(s, h, key, n), ci, pos;
	struct hk_counter *c;

	s->total += w;
	if (s->slot[i]) {
		pos = s->pos[s->slot[i] - 1u];
		s->heap[pos].count += w;
		sift_down(s, pos);
		return;
	}
	if (s->n < s->k) {
		ci = s->n++;
		s->c[ci].err = 0;
		pos = s->n - 1;
		s->heap[pos] = (struct hk_heap){ .count = w, .ci = ci };
		s->pos[ci] = (uint16_t)pos;
	} else {
		/* The smallest count goes: the new key inherits it. */
		pos = 0;
		ci = s->heap[0].ci;
		slot_remove(s, slot_of(s, ci));
		i = slot_find(s, h, key, n); /* the hole may have moved */
		s->c[ci].err = s->heap[0].count;
		s->heap[0].count += w;
	}
	c = &s->c[ci];
	s->hash[ci] = h;
	c->nkey = (uint8_t)n;
	memcpy(c->key, key, n);
	s->slot[i] = (uint16_t)(ci + 1);
	if (pos)
		sift_up(s, pos);
	else
		sift_down(s, 0);
}

/* ---- the merge ---- */

void hk_merge_init(struct hk_merge *m)
{
	memset(m, 0, sizeof(*m));
}

void hk_merge_free(struct hk_merge *m)
{
	free(m->e);
	free(m->slot);
	free(m->arena);
	memset(m, 0, sizeof(*m));
}

/* Room for one more entry and its key; false when out of memory. */
static bool merge_reserve(struct hk_merge *m, size_t nkey)
{
	if (m->arena_n + nkey > m->arena_cap) {
		size_t cap = m->arena_cap ? 2 * m->arena_cap : 16384;
		char *a;

		while (cap < m->arena_n + nkey)
			cap *= 2;
		if (cap > UINT32_MAX) /* key_off is 32 bits */
			return false;
		a = realloc(m->arena, cap);
		if (!a)
			return false;
		m->arena = a;
		m->arena_cap = cap;
	}
	if (2 * (m->n + 1) > m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 1024;
		struct hk_entry *e = realloc(m->e, cap * sizeof(*e));
		uint32_t *slot;

		if (!e)
			return false;
		m->e = e;
		slot = calloc(cap, sizeof(*slot));
		if (!slot)
			return false;
		free(m->slot);
		m->slot = slot;
		m->cap = cap;
		for (uint32_t k = 0; k < m->n; k++) {
			uint32_t i = (uint32_t)m->e[k].hash & (cap - 1);

			while (slot[i])
				i = (i + 1) & (cap - 1);
			slot[i] = k + 1;
		}
	}
	return true;
}

/* The entry of counter ci of s, added if new; NULL when out of memory. */
static struct hk_entry *merge_entry(struct hk_merge *m,
				    const struct hk_sketch *s, uint32_t ci)
{
	const struct hk_counter *c = &s->c[ci];
	uint64_t h = s->hash[ci];
	uint32_t mask, i;
	struct hk_entry *e;

	if (!merge_reserve(m, c->nkey)) {
		m->oom = true;
		return NULL;
	}
	mask = m->cap - 1;
	for (i = (uint32_t)h & mask; m->slot[i]; i = (i + 1) & mask) {
		e = &m->e[m->slot[i] - 1];
		if (e->hash == h && e->nkey == c->nkey &&
		    !memcmp(m->arena + e->key_off, c->key, c->nkey))
			return e;
	}
	e = &m->e[m->n++];
	*e = (struct hk_entry){ .hash = h,
				.key_off = (uint32_t)m->arena_n,
				.nkey = c->nkey };
	memcpy(m->arena + m->arena_n, c->key, c->nkey);
	m->arena_n += c->nkey;
	m->slot[i] = m->n;
	return e;
}

void hk_merge_add(struct hk_merge *m, const struct hk_sketch *s)
{
	uint64_t min = hk_sketch_min(s);

	m->base += min;
	m->total += s->total;
	for (uint32_t i = 0; i < s->n; i++) {
		struct hk_entry *e = merge_entry(m, s, i);

		if (!e)
			continue;
		e->count += (int64_t)(hk_sketch_count(s, i) - min);
		e->err += (int64_t)s->c[i].err - (int64_t)min;
	}
}

static int by_count(const void *a, const void *b)
{
	const struct hk_entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->err != y->err)
		return x->err < y->err ? -1 : 1;
	return 0;
}

size_t hk_merge_top(struct hk_merge *m, struct hk_top *top, size_t n)
{
	/* The entries are not looked up again: sorting them in place is
	 * fine, the slots are stale from here on. */
	if (m->n)
		qsort(m->e, m->n, sizeof(*m->e), by_count);
	if (n > m->n)
		n = m->n;
	for (size_t i = 0; i < n; i++) {
		const struct hk_entry *e = &m->e[i];

		top[i] = (struct hk_top){
			.count = (uint64_t)(e->count + (int64_t)m->base),
			.err = (uint64_t)(e->err + (int64_t)m->base),
			.key = m->arena + e->key_off,
			.nkey = e->nkey,
		};
	}
	return n;
}

/* ---- a worker's tracker ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: the gaps need no more than to look random to a client. */
static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/* The next gap: uniform in 1 .. 2N-1 (mean N), so that a key that comes
 * back every N requests is not sampled always or never. */
static uint32_t draw_gap(struct hotkeys_worker *h)
{
	uint32_t n = h->p->sample;

	if (n <= 1)
		return 1;
	return 1 + (uint32_t)(rng_next(&h->rng) % (2 * (uint64_t)n - 1));
}

void hotkeys_params_init(struct hotkeys_params *p, uint32_t sample,
			 int window_s)
{
	memset(p, 0, sizeof(*p));
	p->sample = sample;
	p->window_ms = (int64_t)(window_s > 0 ? window_s : 1) * 1000;
	p->started_ms = mono_ms();
	if (getrandom(&p->seed, sizeof(p->seed), 0) != sizeof(p->seed))
		p->seed = (struct siphash_key){ (uint64_t)p->started_ms,
						(uint64_t)time(NULL) };
}

int hotkeys_worker_init(struct hotkeys_worker *h,
			const struct hotkeys_params *p, unsigned int id)
{
	int64_t epoch;

	memset(h, 0, sizeof(*h));
	h->p = p;
	for (int c = 0; c < HOTKEYS_NCLASSES; c++)
		h->left[c] = h->drawn[c] = UINT32_MAX;
	if (!p->sample)
		return 0;
	if (getrandom(&h->rng, sizeof(h->rng), 0) != sizeof(h->rng))
		h->rng = (uint64_t)mono_ms();
	h->rng ^= 0x9e3779b97f4a7c15ull * (id + 1);
	if (!h->rng)
		h->rng = 1;
	pthread_mutex_init(&h->lock, NULL);
	h->on = true;
	epoch = mono_ms() / p->window_ms;
	for (int w = 0; w < 2; w++) {
		h->win[w].epoch = epoch - 1 + w;
		for (int c = 0; c < HOTKEYS_NCLASSES; c++)
			if (hk_sketch_init(&h->win[w].sk[c], HOTKEYS_COUNTERS,
					   &p->seed)) {
				hotkeys_worker_free(h);
				return -ENOMEM;
			}
	}
	h->cur = 1;
	for (int c = 0; c < HOTKEYS_NCLASSES; c++)
		h->left[c] = h->drawn[c] = draw_gap(h);
	return 0;
}

void hotkeys_worker_free(struct hotkeys_worker *h)
{
	if (!h->on)
		return;
	for (int w = 0; w < 2; w++)
		for (int c = 0; c < HOTKEYS_NCLASSES; c++)
			hk_sketch_free(&h->win[w].sk[c]);
	pthread_mutex_destroy(&h->lock);
	h->on = false;
}

void hotkeys__sample(struct hotkeys_worker *h, enum hotkeys_class cls,
		     struct cache_key key)
{
	struct hotkeys_window *w;

	if (!h->on) {
		h->left[cls] = UINT32_MAX;
		return;
	}
	pthread_mutex_lock(&h->lock);
	w = &h->win[h->cur];
	w->requests[cls] += h->drawn[cls];
	/* An invalid key (length 0) counts as a request of no key. */
	if (key.n && key.n <= PROTO_KEY_MAX)
		hk_sketch_add(&w->sk[cls], key.p, key.n, h->drawn[cls]);
	pthread_mutex_unlock(&h->lock);
	h->left[cls] = h->drawn[cls] = draw_gap(h);
}

static void window_clear(struct hotkeys_window *w, int64_t epoch)
{
	w->epoch = epoch;
	for (int c = 0; c < HOTKEYS_NCLASSES; c++) {
		w->requests[c] = 0;
		hk_sketch_clear(&w->sk[c]);
	}
}

void hotkeys_tick(struct hotkeys_worker *h)
{
	int64_t epoch;
	struct hotkeys_window *cur;

	if (!h->on)
		return;
	epoch = mono_ms() / h->p->window_ms;
	cur = &h->win[h->cur];
	if (epoch == cur->epoch)
		return;
	pthread_mutex_lock(&h->lock);
	/* The requests of the gaps in progress belong to the old window;
	 * the samples that end those gaps stand for the rest. */
	for (int c = 0; c < HOTKEYS_NCLASSES; c++) {
		cur->requests[c] += h->drawn[c] - h->left[c];
		h->drawn[c] = h->left[c];
	}
	if (epoch != cur->epoch + 1)
		window_clear(cur, epoch - 1); /* idle for a window or more */
	h->cur ^= 1;
	window_clear(&h->win[h->cur], epoch);
	pthread_mutex_unlock(&h->lock);
}

/* ---- reading ---- */

void hotkeys_report_begin(struct hotkeys_report *r,
			  const struct hotkeys_params *p,
			  enum hotkeys_class cls)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->cls = cls;
	hk_merge_init(&r->merge);
	if (!p->sample)
		return;
	r->now_ms = mono_ms();
	r->epoch = r->now_ms / p->window_ms;
}

void hotkeys_report_add(struct hotkeys_report *r, struct hotkeys_worker *h)
{
	if (!h->on)
		return;
	pthread_mutex_lock(&h->lock);
	/* The reader's current and previous windows; a worker whose tick
	 * has not turned its window yet holds them one place later. */
	for (int w = 0; w < 2; w++) {
		const struct hotkeys_window *win = &h->win[w];

		if (win->epoch < r->epoch - 1 || win->epoch > r->epoch)
			continue;
		r->requests += win->requests[r->cls];
		hk_merge_add(&r->merge, &win->sk[r->cls]);
	}
	pthread_mutex_unlock(&h->lock);
}

/* The integer square root, rounded up (no libm: the fuzz target
 * compiles these sources without it). */
static uint64_t sqrt_up(uint64_t v)
{
	uint64_t r = 0;

	for (uint64_t bit = 1ull << 62; bit; bit >>= 2) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
	}
	return r + (v != 0);
}

/* Three standard deviations of a sampled count c: a gap uniform in
 * 1..2N-1 has E[g^2] / E[g] about 4N/3, so the variance is about 4Nc/3,
 * and 3 sigma is sqrt(12 N c). */
static uint64_t sampling_err(uint32_t sample, uint64_t c)
{
	if (sample <= 1)
		return 0;
	if (c > UINT64_MAX / 12 / sample)
		c = UINT64_MAX / 12 / sample;
	return sqrt_up(12 * (uint64_t)sample * c);
}

int hotkeys_report_end(struct hotkeys_report *r, size_t n)
{
	const struct hotkeys_params *p = r->p;
	int64_t start;

	if (!p->sample)
		return 0;
	start = (r->epoch - 1) * p->window_ms;
	if (start < p->started_ms)
		start = p->started_ms;
	r->seconds = (double)(r->now_ms - start) / 1000.0;
	if (r->seconds < 0.001)
		r->seconds = 0.001;
	r->bound = r->merge.base + sampling_err(p->sample, r->merge.base);
	if (n > HOTKEYS_TOP_MAX)
		n = HOTKEYS_TOP_MAX;
	r->top = calloc(n ? n : 1, sizeof(*r->top));
	if (!r->top)
		return -ENOMEM;
	r->n = hk_merge_top(&r->merge, r->top, n);
	for (size_t i = 0; i < r->n; i++)
		r->top[i].err += sampling_err(p->sample, r->top[i].count);
	return r->merge.oom ? -ENOMEM : 0;
}

void hotkeys_report_free(struct hotkeys_report *r)
{
	free(r->top);
	r->top = NULL;
	r->n = 0;
	hk_merge_free(&r->merge);
}
