/*
 * A server with one worker and no socket, event loop or thread, built
 * from the default configuration: what the in-memory transport's and the
 * statistics' unit tests run against.
 */
#ifndef RHKV_TESTS_SERVER_SOCKETLESS_H
#define RHKV_TESTS_SERVER_SOCKETLESS_H

#include "server/server.h"

struct evbuffer;

/* Registers the calling thread with RCU and sets up srv and w. */
void socketless_start(struct server *srv, struct worker *w);
/* Closes w's connections and frees what socketless_start made. */
void socketless_stop(struct server *srv, struct worker *w);

/* The same, with a buffer for the replies of in-memory connections. */
void socketless_open(struct server *srv, struct worker *w,
		     struct evbuffer **replies);
void socketless_close(struct server *srv, struct worker *w,
		      struct evbuffer **replies);

#endif
