/* `watch`: log streams to watching connections (watch.h). */
#include "watch.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/clock.h"
#include "conn.h"
#include "protocol.h"
#include "server.h"

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

/* Moves a watcher's buffer to its connection this often. */
static const struct timeval flush_interval = { 0, 20000 };

struct watcher {
	unsigned int kinds;
	struct conn *c;	     /* its worker's; freed only after watch_stop */
	struct event *flush; /* on c's worker */
	uint64_t skipped;    /* lines dropped since the last flush */
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

/* On the watcher's worker: its buffer into its output, then written. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;
	struct conn *c = w->c;
	struct watch_hub *h = &c->w->srv->watch;
	char note[40];

	(void)fd;
	(void)what;
	if (evbuffer_get_length(c->s.out) >= c->w->srv->cfg.output_hwm)
		return; /* a slow reader: lines are dropped, not queued */
	pthread_mutex_lock(&h->lock);
	if (w->skipped) {
		int n = snprintf(note, sizeof(note), "skipped=%" PRIu64 "\n",
				 w->skipped);

		session_add(&c->s, note, (size_t)n);
		w->skipped = 0;
	}
	if (w->len)
		session_add(&c->s, w->buf, w->len);
	w->len = 0;
	pthread_mutex_unlock(&h->lock);
	if (evbuffer_get_length(c->s.out))
		conn_ready(c, false, true);
}

bool watch_start(struct session *s, unsigned int kinds)
{
	struct conn *c = conn_of_session(s);
	struct watch_hub *h = &c->w->srv->watch;
	struct watcher *w = calloc(1, sizeof(*w));
	int slot = -1;

	if (!w)
		return false;
	w->kinds = kinds;
	w->c = c;
	w->flush = event_new(c->w->base, -1, EV_PERSIST, on_flush, w);
	if (!w->flush || event_add(w->flush, &flush_interval)) {
		if (w->flush)
			event_free(w->flush);
		free(w);
		return false;
	}
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
		event_free(w->flush);
		free(w);
		return false;
	}
	c->watch = w;
	/* Published now, before the OK goes out. */
	atomic_store_explicit(&c->state, CONN_WATCH, memory_order_relaxed);
	return true;
}

void watch_stop(struct conn *c)
{
	struct watch_hub *h = &c->w->srv->watch;
	struct watcher *w = c->watch;

	if (!w)
		return;
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < WATCHERS_MAX; i++)
		if (h->w[i] == w)
			h->w[i] = NULL;
	update_mask(h);
	pthread_mutex_unlock(&h->lock);
	event_free(w->flush);
	free(w);
	c->watch = NULL;
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

void watch_fetch(struct session *c, const char *key, size_t n, bool found,
		 uint32_t nbytes)
{
	char line[3 * PROTO_KEY_MAX + 160];
	size_t k = 0;

	k += (size_t)snprintf(line, sizeof(line), "type=item_get key=");
	k += put_key(line + k, key, n);
	k += (size_t)snprintf(line + k, sizeof(line) - k,
			      " status=%s clsid=%d cfd=%d size=%" PRIu32 "\n",
			      found ? "found" : "not_found", found ? 1 : 0,
			      c->fd, found ? nbytes : 0);
	emit(&c->srv->watch, PROTO_WATCH_FETCHERS, line, k);
}

void watch_store(struct session *c, const char *key, size_t n,
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
			      status, cmd, ttl, c->fd, nbytes);
	emit(&c->srv->watch, PROTO_WATCH_MUTATIONS, line, k);
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
