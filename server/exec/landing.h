/*
 * What the connection's batch loop asks of the store, through the
 * executor: a large value read from the socket straight into the item
 * that will hold it (the landing: cache.h says what such an item is), and
 * the prefetches that hide a lookup's memory stalls behind the request
 * before it. Each is the store's call for the session's cache and thread,
 * inline: the batch loop pays nothing for the layer in between.
 */
#ifndef RHKV_SERVER_LANDING_H
#define RHKV_SERVER_LANDING_H

#include "cache.h"
#include "request.h"
#include "session.h"

/* An unlinked item for r's key, flags and value length, or NULL when it
 * cannot fit even in an empty cache (cache_landing_new). */
static inline struct item *exec_landing_new(const struct session *s,
					    const struct request *r)
{
	return cache_landing_new(s->env->cache, s->thread, r->key, r->flags,
				 r->nbytes);
}

/* Where the landing item's value goes. */
static inline char *exec_landing_value(struct item *it)
{
	return cache_landing_value(it);
}

/* Drops a landing item that will not be stored. */
static inline void exec_landing_free(const struct session *s, struct item *it)
{
	cache_landing_free(s->env->cache, s->thread, it);
}

/* Starts loading the table bucket of a request about to run. */
static inline void exec_prefetch(const struct session *s,
				 const struct request *r)
{
	cache_prefetch(s->env->cache, r->key);
}

/* Then, once the bucket has arrived, the item it leads to. */
static inline void exec_prefetch_item(const struct session *s,
				      const struct request *r)
{
	cache_prefetch_item(s->env->cache, r->key);
}

#endif
