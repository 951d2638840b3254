/*
 * A server with one worker and no socket, event loop or thread, built
 * from the default configuration: what the in-memory transport's and the
 * statistics' unit tests run against.
 */
#ifndef RHKV_TESTS_SERVER_SOCKETLESS_H
#define RHKV_TESTS_SERVER_SOCKETLESS_H

#include "server/server.h"

struct conn;
struct evbuffer;

/* Registers the calling thread with RCU and sets up srv and w. */
void socketless_start(struct server *srv, struct worker *w);
/* Closes w's connections and frees what socketless_start made. */
void socketless_stop(struct server *srv, struct worker *w);

/* Requires authentication with the auth file text (auth.h's forms) for the
 * connections opened from now on; socketless_stop frees it. */
void socketless_auth(struct server *srv, const char *text);

/* The same, with a buffer for the replies of in-memory connections. */
void socketless_open(struct server *srv, struct worker *w,
		     struct evbuffer **replies);
void socketless_close(struct server *srv, struct worker *w,
		      struct evbuffer **replies);

/* The replies so far, NUL-terminated, then emptied; the caller frees.
 * *len, when len is not NULL, receives their length. */
char *socketless_take(struct evbuffer *replies, size_t *len);
/* Gives c bytes as if read (conn_memory_feed); the connection must stay
 * open. */
void socketless_feed(struct conn *c, const void *p, size_t n,
		     struct evbuffer *replies);

#endif
