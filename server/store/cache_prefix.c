/*
 * Prefix invalidation (cache_flush_prefix): a tombstone per flushed prefix
 * holds, as flush_all's snapshot does, how far every thread's cas sequence
 * had got; an item whose key starts with the prefix and whose sequence is
 * at or below its thread's entry is dead. The command is O(1) in the
 * number of items; the expiry sweep unlinks what the tombstones cover, and
 * a tombstone retires once a whole sweep pass has run after it.
 *
 * Readers see the active tombstones as one immutable set (struct
 * tomb_set), published by pointer and read inside their RCU read-side
 * section; every change builds a new set under tomb_lock, and the old one
 * is freed by the maintenance thread after a grace period. The set keeps
 * the prefixes sorted, so that the prefixes of one key are found by one
 * binary search and a walk up a chain of nested prefixes.
 *
 * Why retiring is safe. An item a tombstone covers took its sequence
 * before the snapshot, inside the read-side section in which its writer
 * links it, so after one grace period every such item that will ever be
 * linked is. The maintenance thread waits for that grace period, then for
 * a sweep pass that starts after it: the pass visits every item in the
 * table for its whole length (rhashtable_scan's contract), unlinking the
 * covered ones. Two writes may put an item with an old sequence into the
 * table later, by replacing one: eviction carrying an item forward and
 * meta delete emptying one. The sweep handles a replace that beats its
 * remove by looking the key up again (sweep_visit), and a replace of an
 * item the sweep unlinked first fails. Once the pass has ended, the
 * tombstone stays in the published set for one more grace period: a
 * reader that found a covered item just before the sweep unlinked it
 * still tests it against the set, and must find the tombstone there.
 */
#include <stdlib.h>

#include "cache_internal.h"

/* A flushed prefix. stage and pass belong to the maintenance thread,
 * under tomb_lock. */
struct tomb {
	struct tomb *next_free; /* garbage, awaiting a grace period */
	enum {
		TOMB_NEW,
		TOMB_WAITING,
		TOMB_ARMED,
		TOMB_DONE,
		TOMB_RETIRING
	} stage;
	uint64_t pass; /* ARMED: done when this sweep pass completes */
	uint8_t len;
	char prefix[CACHE_PREFIX_MAX];
	uint64_t snap[]; /* [threads]: each thread's cas sequence then */
};

/* The first 8 bytes of s, big-endian, zero-padded: integers that compare
 * as the strings do whenever they differ (a tie needs the whole bytes). */
static uint64_t head8(const char *s, size_t n)
{
	unsigned char b[8] = { 0 };

	memcpy(b, s, n < 8 ? n : 8);
	return (uint64_t)b[0] << 56 | (uint64_t)b[1] << 48 |
	       (uint64_t)b[2] << 40 | (uint64_t)b[3] << 32 |
	       (uint64_t)b[4] << 24 | (uint64_t)b[5] << 16 |
	       (uint64_t)b[6] << 8 | (uint64_t)b[7];
}

/* Lexicographic order, a prefix before what it prefixes. */
static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int r = memcmp(a, b, an < bn ? an : bn);

	if (r)
		return r;
	return an < bn ? -1 : an > bn;
}

static bool is_prefix(const char *p, size_t pn, const char *s, size_t sn)
{
	return pn <= sn && memcmp(p, s, pn) == 0;
}

/* ---- the reader's side ---- */

/* The last entry at or below key (-1: none). */
static int last_at_or_below(const struct tomb_set *s, const char *k, size_t n)
{
	uint64_t h = head8(k, n);
	int lo = 0, hi = (int)s->n - 1, found = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const struct tomb_entry *e = &s->e[mid];
		int r = e->head != h ? (e->head < h ? -1 : 1)
				     : bytes_cmp(e->t->prefix, e->t->len, k, n);

		if (r <= 0) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

/*
 * Every prefix of key in the set is the last entry at or below key or one
 * of its ancestors: a string between a prefix p of key and key itself
 * starts with p. So one search, then up the parent chain (each entry's
 * parent is the longest other entry that prefixes it).
 */
bool cache__tomb_covers(const struct tomb_set *s, const struct item *it,
			uint64_t seq, unsigned int thread)
{
	const char *k = item_key(it);
	size_t n = it->nkey;
	int i;

	if (n < s->min_len ||
	    !(s->first[(uint8_t)k[0] >> 6] & (1ull << ((uint8_t)k[0] & 63))))
		return false;
	i = last_at_or_below(s, k, n);
	while (i >= 0 && !is_prefix(s->e[i].t->prefix, s->e[i].t->len, k, n))
		i = s->e[i].parent;
	for (; i >= 0; i = s->e[i].parent)
		if (seq <= s->e[i].t->snap[thread])
			return true;
	return false;
}

/* ---- building sets (under tomb_lock) ---- */

/* A set of the active tombstones (sorted), or NULL when there are none
 * or no memory (*ok false then). */
static struct tomb_set *set_build(struct cache *c, bool *ok)
{
	unsigned int n = c->tomb_n, th = c->threads;
	struct tomb_set *s;
	int stack[CACHE_PREFIX_MAX + 1], depth = 0;

	*ok = true;
	if (!n)
		return NULL;
	s = malloc(sizeof(*s) + n * sizeof(s->e[0]) + th * sizeof(uint64_t));
	if (!s) {
		*ok = false;
		return NULL;
	}
	s->next_free = NULL;
	s->n = n;
	s->min_len = CACHE_PREFIX_MAX;
	memset(s->first, 0, sizeof(s->first));
	s->max_seq = (uint64_t *)&s->e[n];
	memset(s->max_seq, 0, th * sizeof(uint64_t));
	for (unsigned int i = 0; i < n; i++) {
		const struct tomb *t = c->tomb_active[i];
		struct tomb_entry *e = &s->e[i];

		/* Nested prefixes come in order, each right after the
		 * chain of its own prefixes: a stack finds the parent. */
		while (depth &&
		       !is_prefix(c->tomb_active[stack[depth - 1]]->prefix,
				  c->tomb_active[stack[depth - 1]]->len,
				  t->prefix, t->len))
			depth--;
		e->parent = depth ? stack[depth - 1] : -1;
		stack[depth++] = (int)i;
		e->t = t;
		e->head = head8(t->prefix, t->len);
		if (t->len < s->min_len)
			s->min_len = t->len;
		s->first[(uint8_t)t->prefix[0] >> 6] |=
			1ull << ((uint8_t)t->prefix[0] & 63);
		for (unsigned int k = 0; k < th; k++)
			if (t->snap[k] > s->max_seq[k])
				s->max_seq[k] = t->snap[k];
	}
	return s;
}

/* Publishes a set built from the active list; the old set becomes
 * garbage. Under tomb_lock. */
static bool set_publish(struct cache *c)
{
	bool ok;
	struct tomb_set *s = set_build(c, &ok), *old;

	if (!ok)
		return false;
	old = atomic_load_explicit(&c->tombs, memory_order_relaxed);
	atomic_store_explicit(&c->tombs, s, memory_order_release);
	if (old) {
		old->next_free = c->sets_garbage;
		c->sets_garbage = old;
	}
	return true;
}

/* Position of prefix in the sorted active list, or where it would go. */
static unsigned int active_find(struct cache *c, const char *p, size_t n,
				bool *found)
{
	unsigned int lo = 0, hi = c->tomb_n;

	*found = false;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		const struct tomb *t = c->tomb_active[mid];
		int r = bytes_cmp(t->prefix, t->len, p, n);

		if (r == 0) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void tomb_garbage(struct cache *c, struct tomb *t)
{
	t->next_free = c->tombs_garbage;
	c->tombs_garbage = t;
}

/* ---- the API ---- */

int cache__prefix_init(struct cache *c)
{
	pthread_mutex_init(&c->tomb_lock, NULL);
	c->tomb_max = CACHE_PREFIX_FLUSHES_DEFAULT;
	c->tomb_active = calloc(c->tomb_max, sizeof(*c->tomb_active));
	return c->tomb_active ? 0 : -1;
}

static void free_garbage(struct tomb_set *s, struct tomb *t)
{
	while (s) {
		struct tomb_set *next = s->next_free;

		free(s);
		s = next;
	}
	while (t) {
		struct tomb *next = t->next_free;

		free(t);
		t = next;
	}
}

void cache__prefix_destroy(struct cache *c)
{
	free(atomic_load_explicit(&c->tombs, memory_order_relaxed));
	free_garbage(c->sets_garbage, c->tombs_garbage);
	for (unsigned int i = 0; i < c->tomb_n; i++)
		free(c->tomb_active[i]);
	free(c->tomb_active);
	pthread_mutex_destroy(&c->tomb_lock);
}

bool cache_set_max_prefix_flushes(struct cache *c, unsigned int max)
{
	struct tomb **a;
	bool ok = false;

	if (max < 1)
		return false;
	pthread_mutex_lock(&c->tomb_lock);
	if (max >= c->tomb_n) {
		a = realloc(c->tomb_active, max * sizeof(*a));
		if (a) {
			c->tomb_active = a;
			c->tomb_max = max;
			ok = true;
		}
	}
	pthread_mutex_unlock(&c->tomb_lock);
	return ok;
}

enum cache_result cache_flush_prefix(struct cache *c, struct cache_key prefix)
{
	struct tomb *t;
	unsigned int at;
	bool found;

	if (prefix.n < 1 || prefix.n > CACHE_PREFIX_MAX)
		return CACHE_NOT_FOUND;
	t = malloc(sizeof(*t) + c->threads * sizeof(t->snap[0]));
	if (!t)
		return CACHE_NO_MEMORY;
	t->stage = TOMB_NEW;
	t->pass = 0;
	t->len = (uint8_t)prefix.n;
	memcpy(t->prefix, prefix.p, prefix.n);
	pthread_mutex_lock(&c->tomb_lock);
	at = active_find(c, prefix.p, prefix.n, &found);
	if (!found && c->tomb_n == c->tomb_max) {
		pthread_mutex_unlock(&c->tomb_lock);
		free(t);
		cache__count(&c->prefix_refused);
		return CACHE_NOT_STORED;
	}
	/* Taken under the lock, after every earlier tombstone's: the active
	 * list's snapshots never go down, so a newer tombstone of a prefix
	 * covers all that the one it replaces did. */
	for (unsigned int k = 0; k < c->threads; k++)
		t->snap[k] = atomic_load_explicit(&c->cas_seq[k].v,
						  memory_order_relaxed);
	if (found) {
		tomb_garbage(c, c->tomb_active[at]);
		c->tomb_active[at] = t;
	} else {
		memmove(&c->tomb_active[at + 1], &c->tomb_active[at],
			(c->tomb_n - at) * sizeof(c->tomb_active[0]));
		c->tomb_active[at] = t;
		c->tomb_n++;
	}
	if (!set_publish(c)) {
		/* Back out: nothing was published. */
		if (found) {
			c->tomb_active[at] = c->tombs_garbage;
			c->tombs_garbage = c->tombs_garbage->next_free;
		} else {
			c->tomb_n--;
			memmove(&c->tomb_active[at], &c->tomb_active[at + 1],
				(c->tomb_n - at) * sizeof(c->tomb_active[0]));
		}
		pthread_mutex_unlock(&c->tomb_lock);
		free(t);
		return CACHE_NO_MEMORY;
	}
	pthread_mutex_unlock(&c->tomb_lock);
	cache__count(&c->prefix_flushes);
	atomic_store_explicit(&c->sweep_wanted, true, memory_order_relaxed);
	cache__maint_wake(c);
	return CACHE_STORED;
}

/*
 * flush_all has just raised flush_snap: the tombstones whose snapshot it
 * covers for every thread are redundant and go. Only those: a prefix flush
 * acknowledged after flush_all took its snapshot (between that and this
 * call, under tomb_lock) is newer, and still covers items the flush_all
 * did not. Under flush_lock, so flush_snap is the one just stored.
 */
void cache__prefix_drop_flushed(struct cache *c)
{
	unsigned int kept = 0, n, th = c->threads;
	struct tomb *gone = NULL;

	pthread_mutex_lock(&c->tomb_lock);
	n = c->tomb_n;
	for (unsigned int i = 0; i < n; i++) {
		struct tomb *t = c->tomb_active[i];
		bool covered = true;

		/* Dead under flush_all: sequences below flush_snap; under
		 * the tombstone: at or below its snap. */
		for (unsigned int k = 0; k < th && covered; k++)
			covered = t->snap[k] <
				  atomic_load_explicit(&c->flush_snap[k],
						       memory_order_relaxed);
		if (covered) {
			t->next_free = gone;
			gone = t;
		} else {
			c->tomb_active[kept++] = t;
		}
	}
	if (gone) {
		c->tomb_n = kept;
		if (set_publish(c)) {
			while (gone) {
				struct tomb *next = gone->next_free;

				tomb_garbage(c, gone);
				gone = next;
			}
		} else {
			/* No memory for the new set: keep them (redundant,
			 * not wrong), back in prefix order. */
			while (gone) {
				struct tomb *next = gone->next_free;
				bool found;
				unsigned int at = active_find(
					c, gone->prefix, gone->len, &found);

				memmove(&c->tomb_active[at + 1],
					&c->tomb_active[at],
					(c->tomb_n - at) *
						sizeof(c->tomb_active[0]));
				c->tomb_active[at] = gone;
				c->tomb_n++;
				gone = next;
			}
		}
	}
	pthread_mutex_unlock(&c->tomb_lock);
}

/* ---- the maintenance thread's side ---- */

/* Takes the RETIRING tombstones out of the active list and publishes the
 * set without them; they become garbage. On no memory they go back to
 * DONE, for the next tick. Under tomb_lock. */
static void retire_locked(struct cache *c)
{
	unsigned int kept = 0, n = c->tomb_n;
	struct tomb *gone = NULL;

	for (unsigned int i = 0; i < n; i++) {
		struct tomb *t = c->tomb_active[i];

		if (t->stage == TOMB_RETIRING) {
			t->next_free = gone;
			gone = t;
		} else {
			c->tomb_active[kept++] = t;
		}
	}
	if (!gone)
		return;
	c->tomb_n = kept;
	if (!set_publish(c)) {
		/* Put back in order: the list is sorted by prefix. */
		while (gone) {
			struct tomb *next = gone->next_free;
			bool found;
			unsigned int at =
				active_find(c, gone->prefix, gone->len, &found);

			memmove(&c->tomb_active[at + 1], &c->tomb_active[at],
				(c->tomb_n - at) * sizeof(c->tomb_active[0]));
			c->tomb_active[at] = gone;
			c->tomb_n++;
			gone->stage = TOMB_DONE;
			gone = next;
		}
		return;
	}
	while (gone) {
		struct tomb *next = gone->next_free;

		tomb_garbage(c, gone);
		cache__count(&c->prefix_retired);
		gone = next;
	}
}

/*
 * Every tick, outside read-side sections: frees garbage older than one
 * grace period, and when there is anything to do waits for one (a single
 * wait serves all three):
 * - tombstones made before it are armed: each then waits for the next
 *   sweep pass to start and end;
 * - tombstones whose pass had ended before it leave the published set. A
 *   reader may have found a covered item just before the sweep unlinked
 *   it and test it against the set only now: until that reader's section
 *   ends the set must still hold the tombstone.
 */
void cache__prefix_tick(struct cache *c)
{
	struct tomb_set *sets;
	struct tomb *tombs;
	bool waiting = false, retiring = false;

	pthread_mutex_lock(&c->tomb_lock);
	sets = c->sets_garbage;
	tombs = c->tombs_garbage;
	c->sets_garbage = NULL;
	c->tombs_garbage = NULL;
	for (unsigned int i = 0; i < c->tomb_n; i++) {
		struct tomb *t = c->tomb_active[i];

		if (t->stage == TOMB_NEW) {
			t->stage = TOMB_WAITING;
			waiting = true;
		} else if (t->stage == TOMB_DONE) {
			t->stage = TOMB_RETIRING;
			retiring = true;
		}
	}
	pthread_mutex_unlock(&c->tomb_lock);
	if (!waiting && !retiring && !sets && !tombs)
		return;
	rhkv_rcu_synchronize();
	free_garbage(sets, tombs);
	if (!waiting && !retiring)
		return;
	pthread_mutex_lock(&c->tomb_lock);
	for (unsigned int i = 0; i < c->tomb_n; i++) {
		struct tomb *t = c->tomb_active[i];

		if (t->stage == TOMB_WAITING) {
			t->stage = TOMB_ARMED;
			t->pass = c->sweep_started + 1;
		}
	}
	/* A flush of the same prefix, or flush_all, may have replaced some
	 * meanwhile: those are garbage already. */
	retire_locked(c);
	pthread_mutex_unlock(&c->tomb_lock);
}

/* Sweep pass number `pass` has ended: the tombstones armed for it (or an
 * earlier one) are done; the next tick retires them. */
void cache__prefix_pass_done(struct cache *c, uint64_t pass)
{
	pthread_mutex_lock(&c->tomb_lock);
	for (unsigned int i = 0; i < c->tomb_n; i++) {
		struct tomb *t = c->tomb_active[i];

		if (t->stage == TOMB_ARMED && t->pass <= pass)
			t->stage = TOMB_DONE;
	}
	pthread_mutex_unlock(&c->tomb_lock);
}

unsigned int cache__prefix_active(struct cache *c)
{
	unsigned int n;

	pthread_mutex_lock(&c->tomb_lock);
	n = c->tomb_n;
	pthread_mutex_unlock(&c->tomb_lock);
	return n;
}
