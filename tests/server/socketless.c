/* The socketless server of socketless.h. */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/rcu.h"
#include "server/exec/auth.h"
#include "server/net/conn.h"
#include "server/net/transport.h"
#include "socketless.h"

void socketless_start(struct server *srv, struct worker *w)
{
	char *argv[] = { "rhkvd", NULL };

	rhkv_rcu_register_thread();
	cr_assert_eq(config_parse(&srv->cfg, 1, argv), 0);
	srv->cache = cache_create(1, 16u << 20);
	cr_assert_not_null(srv->cache);
	cr_assert_eq(observe_init(&srv->obs, &srv->cfg, srv->cache, 1), 0);
	srv->env = (struct session_env){ .cfg = &srv->cfg,
					 .cache = srv->cache,
					 .obs = &srv->obs };
	srv->net = (struct net){ .cfg = &srv->cfg,
				 .env = &srv->env,
				 .obs = &srv->obs };
	conn_budget_init(&srv->net.budget, srv->cfg.conn_memory);
	pthread_mutex_init(&w->lock, NULL);
	w->net = &srv->net;
	w->obs = &srv->obs.threads[0];
	srv->net.workers = w;
	srv->net.nworkers = 1;
}

void socketless_auth(struct server *srv, const char *text)
{
	char err[256];

	auth_destroy(&srv->auth);
	cr_assert_eq(auth_from_text(&srv->auth, "test", text, strlen(text), err,
				    sizeof(err)),
		     0, "%s", err);
	srv->env.auth = srv->auth;
}

void socketless_stop(struct server *srv, struct worker *w)
{
	while (w->conns)
		conn_close(w->conns);
	auth_destroy(&srv->auth);
	cache_destroy(srv->cache);
	observe_destroy(&srv->obs);
	pthread_mutex_destroy(&w->lock);
	conn_budget_destroy(&srv->net.budget);
	rhkv_rcu_unregister_thread();
}

void socketless_open(struct server *srv, struct worker *w,
		     struct evbuffer **replies)
{
	socketless_start(srv, w);
	*replies = evbuffer_new();
	cr_assert_not_null(*replies);
}

void socketless_close(struct server *srv, struct worker *w,
		      struct evbuffer **replies)
{
	socketless_stop(srv, w);
	evbuffer_free(*replies);
	*replies = NULL;
}

char *socketless_take(struct evbuffer *replies, size_t *len)
{
	size_t n = evbuffer_get_length(replies);
	char *s = malloc(n + 1);

	cr_assert_not_null(s);
	evbuffer_remove(replies, s, n);
	s[n] = '\0';
	if (len)
		*len = n;
	return s;
}

void socketless_feed(struct conn *c, const void *p, size_t n,
		     struct evbuffer *replies)
{
	cr_assert(conn_memory_feed(c, p, n, false, replies),
		  "the connection closed");
}
