/*
 * A libevent service that caches through rhkvd without ever blocking its
 * loop: every "request" it serves is a cache lookup sent with rhkv_send();
 * a miss computes the value and stores it (from the callback, pipelined
 * with whatever else the loop sends). One handle carries every request
 * in flight; rhkv_libevent.h moves its bytes.
 *
 * Usage: event_loop PORT [REQUESTS] (127.0.0.1; default 1000 requests
 * over 100 keys). Prints the hits and misses and exits 0 when every
 * request was answered with the right value.
 */
#include <event2/event.h>
#include <rhkv.h>
#include <rhkv_libevent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 100

struct service {
	struct event_base *base;
	rhkv *cache;
	int requests, answered, hits, misses, wrong;
};

/* One request: which key it asked for. */
struct request {
	struct service *svc;
	char key[32];
	size_t klen;
};

/* What the slow backend would say for a key. */
static int compute(const char *key, char *buf, size_t cap)
{
	return snprintf(buf, cap, "profile of %s", key);
}

static void answered(struct service *svc, struct request *rq)
{
	free(rq);
	if (++svc->answered == svc->requests)
		event_base_loopbreak(svc->base);
}

static void on_lookup(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct request *rq = arg;
	struct service *svc = rq->svc;
	char want[64];
	int n = compute(rq->key, want, sizeof(want));

	if (r->status == 0) {
		svc->hits++;
		svc->wrong += r->len != (size_t)n || memcmp(r->data, want, n);
	} else if (r->status == RHKV_ENOTFOUND) {
		/* compute and cache it; the reply is not waited for */
		struct rhkv_cmd set = { .op = RHKV_OP_SET,
					.key = rq->key,
					.klen = rq->klen,
					.val = want,
					.vlen = (size_t)n,
					.exptime = 300 };

		svc->misses++;
		if (rhkv_send(c, &set, NULL, NULL))
			svc->wrong++;
	} else {
		fprintf(stderr, "lookup %s: %s\n", rq->key,
			rhkv_strerror(r->status));
		svc->wrong++;
	}
	answered(svc, rq);
}

/* The loop's work: a burst of requests every millisecond. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct service *svc = arg;
	static int sent;

	(void)fd;
	(void)what;
	for (int i = 0; i < 50 && sent < svc->requests; i++, sent++) {
		struct request *rq = malloc(sizeof(*rq));
		struct rhkv_cmd get = { .op = RHKV_OP_GET };

		rq->svc = svc;
		rq->klen = (size_t)snprintf(rq->key, sizeof(rq->key), "user:%d",
					    sent % KEYS);
		get.key = rq->key;
		get.klen = rq->klen;
		if (rhkv_send(svc->cache, &get, on_lookup, rq)) {
			svc->wrong++;
			answered(svc, rq);
		}
	}
}

int main(int argc, char **argv)
{
	struct service svc = { .requests = argc > 2 ? atoi(argv[2]) : 1000 };
	struct timeval ms = { 0, 1000 };
	struct rhkv_options o;
	struct event *tick;

	if (argc < 2)
		return 2;
	svc.base = event_base_new();
	rhkv_options_init(&o);
	o.key_prefix = "event-loop:"; /* this service's namespace */
	if (rhkv_new(&svc.cache, "127.0.0.1", atoi(argv[1]), &o) ||
	    rhkv_libevent_attach(svc.cache, svc.base))
		return 1;
	tick = event_new(svc.base, -1, EV_PERSIST, on_tick, &svc);
	event_add(tick, &ms);
	event_base_dispatch(svc.base);
	printf("answered %d: %d hits, %d misses, %d wrong\n", svc.answered,
	       svc.hits, svc.misses, svc.wrong);
	event_free(tick);
	rhkv_close(svc.cache);
	event_base_free(svc.base);
	return svc.wrong || svc.answered != svc.requests;
}
