/* worker: one load thread of rhkv-bench: an event loop over its
 * connections. It connects, optionally prefills its share of the keys,
 * waits at the start barrier, then sends requests closed-loop (--pipeline
 * in flight per connection), open-loop (--rate, on a fixed schedule) or
 * one per connection (--reconnect: each connection is closed after its
 * reply and opened again). */
#include "bench.h"
#include "reply.h"
#include "tls.h"

#include "proto/binary.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pending {
	uint64_t start_ns; /* sent, or scheduled (open loop) */
	uint32_t key;
	uint8_t is_get;
};

enum phase { PHASE_CONNECT, PHASE_PREFILL, PHASE_RUN };

struct conn {
	struct bench_worker *w;
	struct bufferevent *bev;
	struct event *timer; /* open loop schedule */
	struct pending *q;   /* ring of requests awaiting their reply */
	unsigned qhead, qlen, qcap;
	uint64_t next_ns;     /* open loop: next scheduled send */
	uint64_t interval_ns; /* open loop: time between sends */
	uint32_t miss_key;    /* --miss-set: key to set next */
	int miss_pending;
	int connected;
	int dead;
	uint64_t open_ns; /* --reconnect: when its connect began */
	int reopen;	  /* --reconnect: replaced once on_read is done */
};

struct bench_worker {
	pthread_t tid;
	unsigned id;
	struct bench_run *r;
	struct event_base *base;
	struct event *tick;
	struct conn *conns;
	enum phase phase;
	uint64_t rng;
	uint64_t prefill_next, prefill_end;
	uint64_t inflight;
	unsigned settled; /* connections connected or failed */
	pthread_mutex_t lock;
	struct hist *interval; /* guarded by lock */
	struct bench_counters c;
	msgpack_sbuffer sb; /* --protocol binary: frames being encoded */
	uint64_t next_id;
} __attribute__((aligned(64)));

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int queue_push(struct conn *c, struct pending p)
{
	if (c->qlen == c->qcap) {
		unsigned ncap = c->qcap ? c->qcap * 2 : 16;
		struct pending *nq = malloc(ncap * sizeof(*nq));
		if (nq == NULL)
			return -ENOMEM;
		for (unsigned i = 0; i < c->qlen; i++)
			nq[i] = c->q[(c->qhead + i) % c->qcap];
		free(c->q);
		c->q = nq;
		c->qhead = 0;
		c->qcap = ncap;
	}
	c->q[(c->qhead + c->qlen) % c->qcap] = p;
	c->qlen++;
	return 0;
}

static struct pending queue_pop(struct conn *c)
{
	struct pending p = c->q[c->qhead];
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
	return p;
}

/* A log-normal length (--value-size lognormal:...): the median times
 * e^(sigma z), z standard normal by Box-Muller, clamped to the range. */
static size_t value_len_lognormal(struct bench_worker *w)
{
	const struct bench_opts *o = w->r->o;
	double u1 = 1.0 - rng_unit(&w->rng); /* (0, 1]: log(u1) is finite */
	double u2 = rng_unit(&w->rng);
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	double len = round((double)o->value_median * exp(o->value_sigma * z));
	if (len < (double)o->value_min)
		return o->value_min;
	if (len > (double)o->value_max)
		return o->value_max;
	return (size_t)len;
}

/* The length of the next set's value: --value-size, fixed, uniform or
 * log-normal. */
static size_t value_len(struct bench_worker *w)
{
	const struct bench_opts *o = w->r->o;
	if (o->value_median != 0)
		return value_len_lognormal(w);
	size_t vlen = o->value_min;
	if (o->value_max > o->value_min)
		vlen += rng_next(&w->rng) % (o->value_max - o->value_min + 1);
	return vlen;
}

/* A binary GET or SET frame for key into w->sb; returns its length. */
static int encode_binary(struct bench_worker *w, uint32_t key, int is_get,
			 size_t vlen)
{
	const struct bench_opts *o = w->r->o;
	msgpack_packer pk;
	char k[64];
	int klen = snprintf(k, sizeof(k), "k%0*u", (int)o->key_size - 1, key);
	size_t f = proto_bin_begin(&w->sb);

	msgpack_packer_init(&pk, &w->sb, msgpack_sbuffer_write);
	if (is_get) {
		proto_bin_pack_request_head(&pk, PROTO_OP_GET, w->next_id++, 1);
		msgpack_pack_str_with_body(&pk, k, (size_t)klen);
	} else {
		proto_bin_pack_request_head(&pk, PROTO_OP_SET, w->next_id++, 4);
		msgpack_pack_str_with_body(&pk, k, (size_t)klen);
		msgpack_pack_bin_with_body(&pk, w->r->value, vlen);
		msgpack_pack_uint32(&pk, 0);
		msgpack_pack_uint64(&pk, o->ttl);
	}
	proto_bin_end(&w->sb, f);
	return (int)w->sb.size;
}

/* Writes one request for key to the connection's output. */
static void send_request(struct conn *c, uint32_t key, int is_get,
			 uint64_t start_ns)
{
	struct bench_worker *w = c->w;
	const struct bench_opts *o = w->r->o;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char line[320];
	int n, kw = (int)o->key_size - 1;
	size_t vlen = is_get ? 0 : value_len(w);
	if (o->protocol == BENCH_PROTO_BINARY) {
		n = encode_binary(w, key, is_get, vlen);
		evbuffer_add(out, w->sb.data, w->sb.size);
		w->sb.size = 0;
		goto sent;
	}
	/* The meta commands ask for what the text ones carry: mg returns
	 * the value and its client flags (v f) as get does, and ms stores
	 * flags 0 and the --ttl (F0 T<ttl>, T0: no expiry) as set does. */
	if (o->protocol == BENCH_PROTO_META && is_get)
		n = snprintf(line, sizeof(line), "mg k%0*u v f\r\n", kw, key);
	else if (o->protocol == BENCH_PROTO_META)
		n = snprintf(line, sizeof(line),
			     "ms k%0*u %zu F0 T%" PRIu64 "\r\n", kw, key, vlen,
			     o->ttl);
	else if (is_get)
		n = snprintf(line, sizeof(line), "get k%0*u\r\n", kw, key);
	else
		n = snprintf(line, sizeof(line),
			     "set k%0*u 0 %" PRIu64 " %zu\r\n", kw, key, o->ttl,
			     vlen);
	evbuffer_add(out, line, (size_t)n);
	if (!is_get) {
		evbuffer_add(out, w->r->value, vlen);
		evbuffer_add(out, "\r\n", 2);
		n += (int)vlen + 2;
	}
sent:
	count(&w->c.bytes_out, (uint64_t)n);
	struct pending p = { start_ns, key, (uint8_t)is_get };
	if (queue_push(c, p) != 0) {
		count(&w->c.errors, 1);
		return;
	}
	w->inflight++;
}

/* Whether one more request may go out now (--requests, stop). */
static int may_send(struct bench_worker *w)
{
	struct bench_run *r = w->r;
	if (atomic_load_explicit(&r->stop, memory_order_relaxed))
		return 0;
	if (r->o->requests == 0)
		return 1;
	return atomic_fetch_add_explicit(&r->issued, 1, memory_order_relaxed) <
	       r->o->requests;
}

/* The next request of the run's mix (or the set after a miss). */
static void send_next(struct conn *c, uint64_t start_ns)
{
	struct bench_worker *w = c->w;
	const struct bench_opts *o = w->r->o;
	if (c->miss_pending) {
		c->miss_pending = 0;
		send_request(c, c->miss_key, 0, start_ns);
		return;
	}
	uint32_t key;
	if (w->r->zipf != NULL)
		key = (uint32_t)zipf_sample(w->r->zipf, rng_unit(&w->rng));
	else
		key = (uint32_t)(rng_next(&w->rng) % o->keys);
	unsigned total = o->set_ratio + o->get_ratio;
	int is_get = rng_next(&w->rng) % total >= o->set_ratio;
	send_request(c, key, is_get, start_ns);
}

static void prefill_more(struct conn *c)
{
	struct bench_worker *w = c->w;
	if (w->prefill_next < w->prefill_end)
		send_request(c, (uint32_t)w->prefill_next++, 0, bench_now_ns());
}

static void conn_fail(struct conn *c)
{
	if (!c->dead) {
		c->dead = 1;
		c->w->inflight -= c->qlen;
		c->qlen = 0;
		bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		if (c->timer != NULL)
			event_del(c->timer);
	}
}

static void record(struct bench_worker *w, struct pending p,
		   enum bench_reply rep)
{
	if (w->phase != PHASE_RUN) {
		if (rep != BENCH_REPLY_STORED)
			count(&w->c.errors, 1);
		return;
	}
	uint64_t lat = bench_now_ns() - p.start_ns;
	pthread_mutex_lock(&w->lock);
	hist_record(w->interval, lat);
	pthread_mutex_unlock(&w->lock);
	count(&w->c.ops, 1);
	if (rep == BENCH_REPLY_HIT)
		count(&w->c.hits, 1);
	else if (rep == BENCH_REPLY_MISS)
		count(&w->c.misses, 1);
	else if (rep == BENCH_REPLY_STORED)
		count(&w->c.sets, 1);
	else
		count(&w->c.errors, 1);
}

/* One reply came for p: count it and send what follows it. */
static void on_reply(struct conn *c, struct pending p, enum bench_reply rep)
{
	struct bench_worker *w = c->w;
	w->inflight--;
	record(w, p, rep);
	if (w->phase == PHASE_PREFILL) {
		prefill_more(c);
		if (w->inflight == 0 && w->prefill_next == w->prefill_end)
			event_base_loopbreak(w->base);
		return;
	}
	if (rep == BENCH_REPLY_MISS && w->r->o->miss_set) {
		c->miss_pending = 1;
		c->miss_key = p.key;
	}
	if (w->r->o->reconnect)
		c->reopen = may_send(w);
	else if (w->r->o->rate == 0 && may_send(w))
		send_next(c, bench_now_ns());
}

/* The reply at buf, in the run's protocol (reply.h). */
static enum bench_reply parse_reply(enum bench_protocol proto, const char *buf,
				    size_t len, int is_get, size_t *used)
{
	switch (proto) {
	case BENCH_PROTO_BINARY:
		return bench_reply_parse_binary(buf, len, is_get, used);
	case BENCH_PROTO_META:
		return bench_reply_parse_meta(buf, len, is_get, used);
	default:
		return bench_reply_parse(buf, len, is_get, used);
	}
}

static int conn_open(struct bench_worker *w, struct conn *c);

/* --reconnect: the connection that was answered closes, and a new one
 * starts (its request goes out once it is connected, see on_event). */
static void conn_reopen(struct conn *c)
{
	c->reopen = 0;
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	c->bev = NULL;
	c->connected = 0;
	c->open_ns = bench_now_ns();
	conn_open(c->w, c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	const char *buf = (const char *)evbuffer_pullup(in, -1);
	size_t off = 0;
	while (off < len && !c->dead) {
		if (c->qlen == 0) { /* a reply nobody asked for */
			count(&c->w->c.errors, 1);
			conn_fail(c);
			break;
		}
		size_t used = 0;
		enum bench_reply rep =
			parse_reply(c->w->r->o->protocol, buf + off, len - off,
				    c->q[c->qhead].is_get, &used);
		if (rep == BENCH_REPLY_NEED_MORE)
			break;
		if (rep == BENCH_REPLY_INVALID) {
			count(&c->w->c.errors, 1);
			conn_fail(c);
			break;
		}
		off += used;
		on_reply(c, queue_pop(c), rep);
	}
	count(&c->w->c.bytes_in, off);
	evbuffer_drain(in, c->dead ? len : off);
	/* libevent keeps the bufferevent alive until this callback
	 * returns, so it may be freed here. */
	if (c->reopen && !c->dead)
		conn_reopen(c);
}

/* The first TLS error of the run says why (a refused client certificate
 * comes after the client's handshake is done, in TLS 1.3): main reports
 * only how many connections failed, and errors counts the rest. */
static void tls_failure(struct bench_run *r, struct bufferevent *bev)
{
	unsigned long e = bufferevent_get_openssl_error(bev);
	char buf[256];
	if (e == 0 || atomic_exchange(&r->tls_error_said, 1))
		return;
	ERR_error_string_n(e, buf, sizeof(buf));
	fprintf(stderr, "rhkv-bench: TLS: %s\n", buf);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct bench_worker *w = c->w;
	if (what & BEV_EVENT_CONNECTED) {
		int one = 1;
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY,
			   &one, sizeof(one));
		c->connected = 1;
		SSL *ssl = bufferevent_openssl_get_ssl(bev);
		if (ssl != NULL && SSL_session_reused(ssl))
			atomic_fetch_add(&w->r->tls_resumed, 1);
		if (w->phase == PHASE_RUN && w->r->o->reconnect)
			send_next(c, c->open_ns);
	} else if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
		tls_failure(w->r, bev);
		if (!c->connected && w->phase == PHASE_RUN) {
			/* --reconnect: a connect refused during the run is
			 * an error of the run; that connection stops. */
			count(&w->c.errors, 1);
			conn_fail(c);
		} else if (!c->connected) {
			atomic_fetch_add(&w->r->connect_failures, 1);
			c->dead = 1;
		} else if (!atomic_load(&w->r->stop)) {
			count(&w->c.errors, 1);
			conn_fail(c);
		}
	}
	if (w->phase == PHASE_CONNECT && ++w->settled == w->r->o->conns)
		event_base_loopbreak(w->base);
	if (w->phase == PHASE_PREFILL && c->dead && w->inflight == 0)
		event_base_loopbreak(w->base);
}

/* Open loop: send every request whose scheduled time has come. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	uint64_t now = bench_now_ns();
	while (c->next_ns <= now && may_send(c->w)) {
		send_next(c, c->next_ns);
		c->next_ns += c->interval_ns;
	}
	if (c->next_ns > now) {
		uint64_t d = c->next_ns - now;
		struct timeval tv = { (time_t)(d / 1000000000u),
				      (suseconds_t)(d % 1000000000u / 1000u) };
		evtimer_add(c->timer, &tv);
	}
}

/* Every 10 ms: stop when main asks, or when --requests are all answered. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct bench_worker *w = arg;
	(void)fd;
	(void)what;
	struct bench_run *r = w->r;
	if (atomic_load(&r->stop))
		event_base_loopbreak(w->base);
	else if (r->o->requests != 0 && w->inflight == 0 &&
		 atomic_load(&r->issued) >= r->o->requests)
		event_base_loopbreak(w->base);
}

/* With TLS, libevent's bufferevent_openssl sits between the socket and the
 * buffers: it retries an SSL_write that wants a read on the next readable
 * event and the reverse, and drains what SSL_pending holds before it waits
 * for the socket again, so the protocol code above sees plain bytes. */
static struct bufferevent *conn_bev(struct bench_worker *w)
{
	if (w->r->tls == NULL)
		return bufferevent_socket_new(w->base, -1,
					      BEV_OPT_CLOSE_ON_FREE);
	SSL *ssl = bench_tls_new(w->r);
	if (ssl == NULL)
		return NULL;
	/* It frees ssl too, on failure and with the bufferevent. */
	struct bufferevent *bev = bufferevent_openssl_socket_new(
		w->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
		BEV_OPT_CLOSE_ON_FREE);
	/* The run ends by closing connections, never by close_notify; a
	 * server that does the same is no error. */
	if (bev != NULL)
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/* A connection that could not start: before the run, a failed
 * connection (counted, or the worker would wait for it forever); during a
 * --reconnect run, an error, and that connection stops. */
static void conn_open_failed(struct bench_worker *w, struct conn *c)
{
	c->dead = 1;
	if (w->phase == PHASE_RUN) {
		count(&w->c.errors, 1);
		return;
	}
	atomic_fetch_add(&w->r->connect_failures, 1);
	w->settled++;
}

static int conn_open(struct bench_worker *w, struct conn *c)
{
	c->w = w;
	c->bev = conn_bev(w);
	if (c->bev == NULL) {
		conn_open_failed(w, c);
		return -ENOMEM;
	}
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&w->r->addr,
				       (int)w->r->addrlen) != 0)
		conn_open_failed(w, c);
	return 0;
}

static void start_run(struct bench_worker *w)
{
	const struct bench_opts *o = w->r->o;
	uint64_t now = bench_now_ns();
	uint64_t nconn = (uint64_t)o->threads * o->conns;
	for (unsigned i = 0; i < o->conns; i++) {
		struct conn *c = &w->conns[i];
		if (c->dead)
			continue;
		if (o->reconnect) {
			/* Every request's latency includes its connect,
			 * the first one's too. */
			if (may_send(w))
				conn_reopen(c);
			continue;
		}
		if (o->rate == 0) {
			for (unsigned k = 0; k < o->pipeline && may_send(w);
			     k++)
				send_next(c, bench_now_ns());
			continue;
		}
		c->interval_ns = nconn * 1000000000ull / o->rate;
		/* Spread the connections over one interval. */
		c->next_ns = now + c->interval_ns *
					   ((uint64_t)w->id * o->conns + i) /
					   nconn;
		c->timer = evtimer_new(w->base, on_timer, c);
		if (c->timer != NULL)
			on_timer(-1, 0, c);
	}
}

static void *worker_main(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *r = w->r;
	const struct bench_opts *o = r->o;
	for (unsigned i = 0; i < o->conns; i++)
		conn_open(w, &w->conns[i]);
	if (w->settled < o->conns)
		event_base_dispatch(w->base);
	if (o->prefill && atomic_load(&r->connect_failures) == 0) {
		w->phase = PHASE_PREFILL;
		w->prefill_next = o->keys * w->id / o->threads;
		w->prefill_end = o->keys * (w->id + 1) / o->threads;
		for (unsigned i = 0; i < o->conns; i++)
			for (unsigned k = 0; k < 16 && !w->conns[i].dead; k++)
				prefill_more(&w->conns[i]);
		if (w->inflight > 0)
			event_base_dispatch(w->base);
	}
	/* The run's bytes start at the barrier; prefill errors stay. */
	atomic_store(&w->c.bytes_in, 0);
	atomic_store(&w->c.bytes_out, 0);
	pthread_barrier_wait(&r->start);
	w->phase = PHASE_RUN;
	if (atomic_load(&r->connect_failures) == 0) {
		struct timeval tv = { 0, 10000 };
		w->tick = event_new(w->base, -1, EV_PERSIST, on_tick, w);
		event_add(w->tick, &tv);
		start_run(w);
		event_base_dispatch(w->base);
	}
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

static void worker_free(struct bench_worker *w, unsigned nconns)
{
	msgpack_sbuffer_destroy(&w->sb);
	for (unsigned i = 0; w->conns != NULL && i < nconns; i++) {
		struct conn *c = &w->conns[i];
		if (c->timer != NULL)
			event_free(c->timer);
		if (c->bev != NULL)
			bufferevent_free(c->bev);
		free(c->q);
	}
	free(w->conns);
	if (w->tick != NULL)
		event_free(w->tick);
	if (w->base != NULL)
		event_base_free(w->base);
	hist_destroy(&w->interval);
	pthread_mutex_destroy(&w->lock);
}

static int worker_init(struct bench_run *r, struct bench_worker *w, unsigned id)
{
	w->id = id;
	w->r = r;
	/* --seed: each thread's stream, hence its keys, mix and lengths,
	 * the same from run to run (which connection sends what still
	 * depends on the replies' timing). */
	w->rng = (r->o->seed != 0 ? r->o->seed : bench_now_ns()) ^
		 ((uint64_t)id << 32) ^ 0x5bd1e995u;
	pthread_mutex_init(&w->lock, NULL);
	w->interval = hist_new();
	w->conns = calloc(r->o->conns, sizeof(struct conn));
	struct event_config *cfg = event_config_new();
	if (cfg != NULL) {
		if (r->o->rate != 0)
			event_config_set_flag(cfg,
					      EVENT_BASE_FLAG_PRECISE_TIMER);
		w->base = event_base_new_with_config(cfg);
		event_config_free(cfg);
	}
	if (w->interval == NULL || w->conns == NULL || w->base == NULL)
		return -ENOMEM;
	return 0;
}

int bench_workers_start(struct bench_run *r, struct bench_worker **wsp)
{
	unsigned n = r->o->threads;
	struct bench_worker *ws = aligned_alloc(64, sizeof(*ws) * n);
	if (ws == NULL)
		return -ENOMEM;
	memset(ws, 0, sizeof(*ws) * n);
	for (unsigned i = 0; i < n; i++) {
		if (worker_init(r, &ws[i], i) != 0) {
			for (unsigned j = 0; j <= i; j++)
				worker_free(&ws[j], r->o->conns);
			free(ws);
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		int rc = pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);
		if (rc != 0) {
			fprintf(stderr, "rhkv-bench: pthread_create: %s\n",
				strerror(rc));
			abort(); /* the barrier would never open */
		}
	}
	*wsp = ws;
	return 0;
}

void bench_workers_collect(struct bench_worker *ws, unsigned n, struct hist *h)
{
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_lock(&ws[i].lock);
		hist_merge(h, ws[i].interval);
		hist_reset(ws[i].interval);
		pthread_mutex_unlock(&ws[i].lock);
	}
}

void bench_workers_totals(struct bench_worker *ws, unsigned n,
			  struct bench_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < n; i++) {
#define BENCH_SUM(name) \
	t->name += atomic_load_explicit(&ws[i].c.name, memory_order_relaxed);
		BENCH_COUNTERS(BENCH_SUM)
#undef BENCH_SUM
	}
}

void bench_workers_join(struct bench_worker **wsp, unsigned n)
{
	struct bench_worker *ws = *wsp;
	for (unsigned i = 0; i < n; i++)
		pthread_join(ws[i].tid, NULL);
	for (unsigned i = 0; i < n; i++)
		worker_free(&ws[i], ws[i].r->o->conns);
	free(ws);
	*wsp = NULL;
}
