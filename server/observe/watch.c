/* `watch`: log streams to watching connections (watch.h). */
#include "watch.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cache.h"
#include "common/clock.h"

void watch_counts(struct watch_hub *h, uint64_t *watchers, uint64_t *sent,
		  uint64_t *skipped)
{
	pthread_mutex_lock(&h->lock);
	*watchers = 0;
	for (int i = 0; i < WATCHERS_MAX; i++)
		*watchers += h->w[i] != NULL;
	*sent = h->sent;
	*skipped = h->skipped;
	pthread_mutex_unlock(&h->lock);
}

struct watcher {
	unsigned int kinds;
	uint64_t skipped; /* lines dropped since the last drain */
	size_t len;
	char buf[WATCH_BUF_BYTES];
};

void watch_hub_init(struct watch_hub *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
}

void watch_hub_destroy(struct watch_hub *h)
{
	pthread_mutex_destroy(&h->lock);
}

/* The union of the watchers' kinds; under h->lock. */
static void update_mask(struct watch_hub *h)
{
	unsigned int m = 0;

	for (int i = 0; i < WATCHERS_MAX; i++)
		if (h->w[i])
			m |= h->w[i]->kinds;
	atomic_store_explicit(&h->mask, m, memory_order_relaxed);
}

struct watcher *watch_join(struct watch_hub *h, unsigned int kinds)
{
	struct watcher *w = calloc(1, sizeof(*w));
	int slot = -1;

	if (!w)
		return NULL;
	w->kinds = kinds;
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < WATCHERS_MAX && slot < 0; i++)
		if (!h->w[i])
			slot = i;
	if (slot >= 0) {
		h->w[slot] = w;
		update_mask(h);
	}
	pthread_mutex_unlock(&h->lock);
	if (slot < 0) {
		free(w);
		return NULL;
	}
	return w;
}

void watch_leave(struct watch_hub *h, struct watcher *w)
{
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < WATCHERS_MAX; i++)
		if (h->w[i] == w)
			h->w[i] = NULL;
	update_mask(h);
	pthread_mutex_unlock(&h->lock);
	free(w);
}

void watch_drain(struct watch_hub *h, struct watcher *w,
		 void (*put)(void *arg, const void *p, size_t n), void *arg)
{
	char note[40];

	pthread_mutex_lock(&h->lock);
	if (w->skipped) {
		int n = snprintf(note, sizeof(note), "skipped=%" PRIu64 "\n",
				 w->skipped);

		put(arg, note, (size_t)n);
		w->skipped = 0;
	}
	if (w->len)
		put(arg, w->buf, w->len);
	w->len = 0;
	pthread_mutex_unlock(&h->lock);
}

/* Appends "ts=... gid=... " + rest to every watcher of kind. */
static void emit(struct watch_hub *h, unsigned int kind, const char *rest,
		 size_t n)
{
	char head[64];
	struct timeval tv;
	int hn;

	gettimeofday(&tv, NULL);
	hn = snprintf(head, sizeof(head), "ts=%ld.%06ld gid=%" PRIu64 " ",
		      (long)tv.tv_sec, (long)tv.tv_usec,
		      atomic_fetch_add(&h->gid, 1) + 1);
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < WATCHERS_MAX; i++) {
		struct watcher *w = h->w[i];

		if (!w || !(w->kinds & kind))
			continue;
		if (w->len + (size_t)hn + n > sizeof(w->buf)) {
			w->skipped++;
			h->skipped++;
			continue;
		}
		h->sent++;
		memcpy(w->buf + w->len, head, (size_t)hn);
		memcpy(w->buf + w->len + hn, rest, n);
		w->len += (size_t)hn + n;
	}
	pthread_mutex_unlock(&h->lock);
}

/* The key as metadump writes it (URL-encoded). */
static size_t put_key(char *dst, const char *key, size_t n)
{
	return proto_text_uri_encode(dst, key,
				     n < PROTO_KEY_MAX ? n : PROTO_KEY_MAX);
}

void watch_fetch(struct watch_hub *h, int fd, const char *key, size_t n,
		 bool found, uint32_t nbytes)
{
	char line[3 * PROTO_KEY_MAX + 160];
	size_t k = 0;

	k += (size_t)snprintf(line, sizeof(line), "type=item_get key=");
	k += put_key(line + k, key, n);
	k += (size_t)snprintf(line + k, sizeof(line) - k,
			      " status=%s clsid=%d cfd=%d size=%" PRIu32 "\n",
			      found ? "found" : "not_found", found ? 1 : 0, fd,
			      found ? nbytes : 0);
	emit(h, PROTO_WATCH_FETCHERS, line, k);
}

void watch_store(struct watch_hub *h, int fd, const char *key, size_t n,
		 const char *status, const char *cmd, int64_t ttl,
		 uint32_t nbytes)
{
	char line[3 * PROTO_KEY_MAX + 200];
	size_t k = 0;

	k += (size_t)snprintf(line, sizeof(line), "type=item_store key=");
	k += put_key(line + k, key, n);
	k += (size_t)snprintf(line + k, sizeof(line) - k,
			      " status=%s cmd=%s ttl=%" PRId64
			      " clsid=1 cfd=%d size=%" PRIu32 "\n",
			      status, cmd, ttl, fd, nbytes);
	emit(h, PROTO_WATCH_MUTATIONS, line, k);
}

void watch_evict(void *hub, const struct item *it)
{
	struct watch_hub *h = hub;
	uint32_t exp = atomic_load_explicit(&it->exptime, memory_order_relaxed);
	uint32_t atime = atomic_load_explicit(&it->atime, memory_order_relaxed);
	int64_t now = clock_now_s();
	char line[3 * PROTO_KEY_MAX + 160];
	size_t k = 0;

	if (!watch_wants(h, PROTO_WATCH_EVICTIONS))
		return;
	k += (size_t)snprintf(line, sizeof(line), "type=eviction key=");
	k += put_key(line + k, item_key(it), it->nkey);
	/* la: seconds since the last access, as memcached logs it. */
	k += (size_t)snprintf(
		line + k, sizeof(line) - k,
		" fetch=%s ttl=%" PRId64 " la=%" PRId64 " clsid=1\n",
		atomic_load_explicit(&it->usage, memory_order_relaxed) &
				ITEM_FETCHED
			? "yes"
			: "no",
		exp ? (int64_t)exp - now : (int64_t)-1,
		now > atime ? now - atime : 0);
	emit(h, PROTO_WATCH_EVICTIONS, line, k);
}
