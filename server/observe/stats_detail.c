/*
 * `stats detail`: get, hit, set and delete counts per key prefix, the key
 * up to its first ':' (memcached's default delimiter, or -D's; a key
 * without one is not counted, as memcached does not count it).
 *
 * Bounded: at most DETAIL_PREFIXES prefixes, each at most a key long; once
 * the table is full a new prefix goes uncounted. Off by default; while off
 * a command pays one relaxed load (observe_detail). While on, one mutex
 * guards the table (memcached takes one global lock too): `stats detail`
 * is a debugging aid, not a production path. The table is allocated the
 * first time counting is turned on and kept until shutdown; `stats
 * detail off` only stops counting, `stats reset` forgets every prefix (as
 * memcached's does).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "observe.h"

#define DETAIL_PREFIXES 1024
#define DETAIL_SLOTS	2048 /* open addressing, at most half full */

struct detail_prefix {
	uint64_t get, hit, set, del;
	size_t n;
	char p[];
};

struct stats_detail {
	pthread_mutex_t lock;
	unsigned int count;
	/* In the order they were first seen: what `dump` shows. */
	struct detail_prefix *order[DETAIL_PREFIXES];
	/* Index + 1 into order; 0: empty. */
	uint16_t slot[DETAIL_SLOTS];
};

static struct stats_detail *detail_of(struct observe *obs)
{
	return atomic_load_explicit(&obs->detail, memory_order_acquire);
}

void stats_detail_enable(struct observe *obs, bool on)
{
	if (on && !detail_of(obs)) {
		struct stats_detail *d = calloc(1, sizeof(*d)), *none = NULL;

		if (!d)
			return; /* stays off: nothing to count into */
		pthread_mutex_init(&d->lock, NULL);
		/* Two `stats detail on` at once: one table wins. */
		if (!atomic_compare_exchange_strong_explicit(
			    &obs->detail, &none, d, memory_order_acq_rel,
			    memory_order_acquire)) {
			pthread_mutex_destroy(&d->lock);
			free(d);
		}
	}
	atomic_store_explicit(&obs->detail_on, on, memory_order_release);
}

void stats_detail_free(struct observe *obs)
{
	struct stats_detail *d = atomic_exchange(&obs->detail, NULL);

	atomic_store(&obs->detail_on, false);
	if (!d)
		return;
	for (unsigned int i = 0; i < d->count; i++)
		free(d->order[i]);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void stats_detail_reset(struct observe *obs)
{
	struct stats_detail *d = detail_of(obs);

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (unsigned int i = 0; i < d->count; i++)
		free(d->order[i]);
	d->count = 0;
	memset(d->slot, 0, sizeof(d->slot));
	pthread_mutex_unlock(&d->lock);
}

/* FNV-1a: the table is small and its keys are the client's own. */
static uint32_t prefix_hash(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* The prefix's counts, added if there is room; NULL when the table is
 * full. Under d->lock. */
static struct detail_prefix *prefix_find(struct stats_detail *d, const char *p,
					 size_t n)
{
	uint32_t i = prefix_hash(p, n) % DETAIL_SLOTS;
	struct detail_prefix *e;

	for (; d->slot[i]; i = (i + 1) % DETAIL_SLOTS) {
		e = d->order[d->slot[i] - 1];
		if (e->n == n && !memcmp(e->p, p, n))
			return e;
	}
	if (d->count == DETAIL_PREFIXES)
		return NULL;
	e = calloc(1, sizeof(*e) + n);
	if (!e)
		return NULL;
	memcpy(e->p, p, n);
	e->n = n;
	d->order[d->count++] = e;
	d->slot[i] = (uint16_t)d->count;
	return e;
}

void stats_detail_record(struct observe *obs, const char *key, size_t n,
			 enum stats_detail_op op, bool hit)
{
	struct stats_detail *d = detail_of(obs);
	const char *delim = n ? memchr(key, obs->cfg->detail_delim, n) : NULL;
	struct detail_prefix *e;

	if (!d || !delim ||
	    !atomic_load_explicit(&obs->detail_on, memory_order_relaxed))
		return;
	pthread_mutex_lock(&d->lock);
	e = prefix_find(d, key, (size_t)(delim - key));
	if (e) {
		switch (op) {
		case DETAIL_GET:
			e->get++;
			e->hit += hit;
			break;
		case DETAIL_SET:
			e->set++;
			break;
		case DETAIL_DEL:
			e->del++;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
}

/* `stats detail dump`: "PREFIX <p> get N hit N set N del N" per prefix. */
void stats_detail_dump(struct observe *obs, const struct stats_sink *k)
{
	struct stats_detail *d = detail_of(obs);
	/* a prefix, or its base64 and " b" (proto_text_key) */
	char name[PROTO_TEXT_KEY_MAX + 3], value[100], line[sizeof(name) + 120];
	bool b64;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (unsigned int i = 0; i < d->count; i++) {
		const struct detail_prefix *e = d->order[i];
		struct stats_entry en = {
			.name = name,
			.line = line,
			.help = "Gets, hits, sets and deletes "
				"of keys with this prefix",
			.kind = STATS_TEXT,
			.s = value
		};

		size_t kn = 0;

		/* the empty prefix (keys without the delimiter) is no key:
		 * it prints as nothing, as memcached prints it */
		b64 = false;
		if (e->n)
			kn = proto_text_key(name, e->p, e->n, false, &b64);

		memcpy(name + kn, b64 ? " b" : "", b64 ? 3 : 1);
		snprintf(value, sizeof(value),
			 "get %" PRIu64 " hit %" PRIu64 " set %" PRIu64
			 " del %" PRIu64,
			 e->get, e->hit, e->set, e->del);
		snprintf(line, sizeof(line), "PREFIX %s %s", name, value);
		k->emit(k->arg, &en);
	}
	pthread_mutex_unlock(&d->lock);
}
