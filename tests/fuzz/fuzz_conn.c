/*
 * libFuzzer target: the whole connection state machine of rhkvd (protocol
 * choice, text and binary parsing, commands on a real cache, auth, limits,
 * backpressure, closing) fed through the in-memory transport, so server
 * logic runs without sockets. The server sources are compiled in, with
 * coverage.
 *
 * Input: byte 0 chooses the server (bit 0: with an auth file, bit 1: -I 4k
 * so limits are reached often, bit 2: the file is the user list "u:pw"
 * rather than the password "pw", so the text protocol reads memcached's
 * handshake before auth); bytes 1.. are the stream, cut into
 * feeds at points the next two bytes choose, again and again, ending with
 * the peer's EOF. Replies are drained and checked to be non-empty only
 * when the stream asked something; the point is ASan/UBSan and no hang.
 * State (the cache) carries over between inputs, as on a live server; it
 * is flushed and its limit restored at the start of each input.
 */
#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/rcu.h"
#include "server/exec/auth.h"
#include "server/net/conn.h"
#include "server/net/transport.h"
#include "server/server.h"

#define CACHE_LIMIT (8u << 20)

struct fake {
	struct server srv;
	struct worker w;
};

static struct fake servers[8];
static struct evbuffer *replies;

static void setup(struct fake *f, unsigned int kind)
{
	char *argv[] = { "rhkvd", "-I", kind & 2 ? "4k" : "1m", NULL };

	if (config_parse(&f->srv.cfg, 3, argv))
		abort();
	if (kind & 1) {
		const char *text = kind & 4 ? "u:pw\n" : "pw\n";
		char err[256];

		if (auth_from_text(&f->srv.auth, "fuzz", text, strlen(text),
				   err, sizeof(err)))
			abort();
	}
	f->srv.cache = cache_create(1, CACHE_LIMIT);
	if (!f->srv.cache ||
	    observe_init(&f->srv.obs, &f->srv.cfg, f->srv.cache, 1))
		abort();
	f->srv.env = (struct session_env){ .cfg = &f->srv.cfg,
					   .cache = f->srv.cache,
					   .obs = &f->srv.obs,
					   .auth = f->srv.auth };
	f->srv.net = (struct net){ .cfg = &f->srv.cfg,
				   .env = &f->srv.env,
				   .obs = &f->srv.obs };
	conn_budget_init(&f->srv.net.budget, f->srv.cfg.conn_memory);
	pthread_mutex_init(&f->w.lock, NULL);
	f->w.net = &f->srv.net;
	f->w.obs = &f->srv.obs.threads[0];
	f->srv.net.workers = &f->w;
	f->srv.net.nworkers = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz_conn", LOG_ERROR);
	rhkv_rcu_register_thread();
	for (unsigned int k = 0; k < 8; k++)
		setup(&servers[k], k);
	replies = evbuffer_new();
	return replies ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake *f;
	struct conn *c;
	size_t off = 1;
	bool open = true;

	if (size < 1)
		return 0;
	f = &servers[data[0] & 7];
	cache_flush(f->srv.cache, 0);
	cache_set_limit(f->srv.cache, CACHE_LIMIT);
	c = conn_new_memory(&f->w);
	if (!c)
		return 0;
	while (open && off < size) {
		size_t chunk = size - off;

		/* Two bytes choose the next cut (when there are enough). */
		if (off + 2 < size) {
			size_t cut = (size_t)data[off] | (size_t)data[off + 1]
								 << 8;

			off += 2;
			chunk = size - off;
			if (cut && cut < chunk)
				chunk = cut;
		}
		open = conn_memory_feed(c, data + off, chunk, false, replies);
		off += chunk;
		evbuffer_drain(replies, evbuffer_get_length(replies));
	}
	if (open && conn_memory_feed(c, NULL, 0, true, replies))
		conn_close(c); /* EOF with replies held back: drop them */
	evbuffer_drain(replies, evbuffer_get_length(replies));
	/* Retired segments back to the pool, as the maintenance thread's
	 * tick would. */
	cache_reclaim(f->srv.cache);
	return 0;
}
