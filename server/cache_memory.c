/*
 * The cache's memory: items as the allocator counts them, the reservation
 * a write makes before it links, and the reclamation of unlinked items in
 * batches per (thread, cache) that wait for one grace period together.
 */
#include <malloc.h>
#include <stdlib.h>

#include "cache_internal.h"

/* glibc keeps each chunk's size in the 8 bytes before it; an allocator
 * without per-chunk headers (jemalloc, mimalloc) builds with 0. */
#ifndef RHKV_MALLOC_CHUNK_HEADER
#define RHKV_MALLOC_CHUNK_HEADER sizeof(size_t)
#endif

#define RETIRE_BATCH 64 /* unlinked items per grace period */

/*
 * Unlinked items of one cache waiting for one grace period together: no
 * rcu_head in any item. A thread keeps one open batch per cache it has
 * unlinked items of (see tls_batches) and hands it to call_rcu when it is
 * full or flushed; the callback frees its items against c's accounting.
 */
struct retire_batch {
	struct rcu_head rcu;
	struct cache *c;
	struct retire_batch *next; /* the thread's batch of another cache */
	unsigned int n;
	int64_t bytes;
	struct item *items[RETIRE_BATCH];
};

/* The calling thread's open batches, at most one per cache; a thread
 * rarely writes to more than one cache, so the list is short. */
static _Thread_local struct retire_batch *tls_batches;

size_t cache_item_footprint(const struct item *it)
{
	return malloc_usable_size((void *)it) + RHKV_MALLOC_CHUNK_HEADER;
}

void item_get(struct item *it)
{
	atomic_fetch_add_explicit(&it->refs, 1, memory_order_relaxed);
}

void item_put(struct item *it)
{
	/* acq_rel: the last holder sees every other holder's reads done. */
	if (atomic_fetch_sub_explicit(&it->refs, 1, memory_order_acq_rel) == 1)
		free(it);
}

struct item *cache__item_alloc(struct cache *c, struct cache_key key,
			       uint32_t flags, uint32_t exptime,
			       uint32_t nbytes, bool room_for_cas)
{
	struct item *it = malloc(ITEM_HEADER_BYTES + key.n + nbytes + 2 +
				 (room_for_cas ? sizeof(uint64_t) : 0));

	if (!it) {
		cache__count(&c->malloc_fails);
		return NULL;
	}
	atomic_init(&it->exptime, exptime);
	atomic_init(&it->refs, 1);
	atomic_init(&it->usage, 0);
	atomic_init(&it->atime, (uint32_t)cache_now());
	it->qnew = NULL;
	it->qold = Q_UNQUEUED;
	it->flags = flags;
	it->nbytes = nbytes;
	it->nkey = (uint8_t)key.n;
	memcpy(it->data, key.p, key.n);
	memcpy(it->data + key.n + nbytes, "\r\n", 2);
	return it;
}

void cache__item_choose_cas(struct item *it, uint64_t cas)
{
	memcpy(it->data + it->nkey + it->nbytes + 2, &cas, sizeof(cas));
	atomic_store_explicit(
		&it->usage,
		atomic_load_explicit(&it->usage, memory_order_relaxed) |
			ITEM_CAS_CHOSEN,
		memory_order_relaxed);
}

/* ---- admission ---- */

int64_t cache__item_budget(struct cache *c)
{
	int64_t limit = (int64_t)cache__limit(c);

	return limit - (int64_t)rhashtable_bucket_bytes(&c->ht);
}

bool cache__mem_reserve(struct cache *c, int64_t fp)
{
	int64_t budget = cache__item_budget(c);
	int64_t cur = cache__load64(&c->mem);

	do {
		if (cur + fp > budget)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&c->mem, &cur, cur + fp,
							memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

void cache__mem_linked(struct cache *c, const struct item *it, int64_t fp)
{
	cache__add64(&c->live, fp);
	cache__add64(&c->item_data, (int64_t)cache__item_data_size(it));
}

/* ---- reclamation ---- */

static void batch_free(struct retire_batch *b)
{
	struct cache *c = b->c;

	for (unsigned int i = 0; i < b->n; i++)
		item_put(b->items[i]);
	cache__add64(&c->retired, -b->bytes);
	cache__add64(&c->mem, -b->bytes);
	free(b);
}

static void batch_free_rcu(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	batch_free((struct retire_batch *)((char *)head -
					   offsetof(struct retire_batch, rcu)));
	rhkv_rcu_callback_exit();
}

/* The link to the calling thread's open batch of c: the head of its list
 * or a batch's next (it holds NULL when there is no such batch). */
static struct retire_batch **batch_link(struct cache *c)
{
	struct retire_batch **p = &tls_batches;

	while (*p && (*p)->c != c)
		p = &(*p)->next;
	return p;
}

/* Takes the batch at *p off the thread's list and hands it to call_rcu. */
static void batch_hand_over(struct retire_batch **p)
{
	struct retire_batch *b = *p;

	*p = b->next;
	rhkv_rcu_call(&b->rcu, batch_free_rcu);
}

void cache_thread_flush(struct cache *c)
{
	struct retire_batch **p = batch_link(c);

	if (*p)
		batch_hand_over(p);
}

/*
 * Freed (its table reference dropped) after a grace period. Outside
 * read-side sections: without memory for a batch it waits for the grace
 * period itself.
 */
void cache__item_retire(struct cache *c, struct item *it)
{
	int64_t fp = (int64_t)cache_item_footprint(it);
	struct retire_batch **p = batch_link(c);
	struct retire_batch *b = *p;

	cache__add64(&c->live, -fp);
	cache__add64(&c->item_data, -(int64_t)cache__item_data_size(it));
	cache__add64(&c->retired, fp);
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b) {
			rhkv_rcu_synchronize();
			item_put(it);
			cache__add64(&c->retired, -fp);
			cache__add64(&c->mem, -fp);
			return;
		}
		b->c = c;
		b->next = NULL;
		b->n = 0;
		b->bytes = 0;
		*p = b;
	}
	b->items[b->n++] = it;
	b->bytes += fp;
	/* Big values should not wait in a batch for company. */
	if (b->n == RETIRE_BATCH || (uint64_t)b->bytes >= cache__limit(c) / 64)
		batch_hand_over(p);
}

void cache__reclaim_wait(struct cache *c)
{
	cache__count(&c->reclaim_waits);
	cache_thread_flush(c);
	rhkv_rcu_barrier();
}
