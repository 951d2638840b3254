/*
 * A connection that streams `watch` lines (conn_watch.c). Both on the
 * connection's worker thread.
 */
#ifndef RHKV_SERVER_CONN_WATCH_H
#define RHKV_SERVER_CONN_WATCH_H

#include <stdbool.h>

struct conn;
struct session;

/* The session's watch (session.h): its connection joins the watch hub
 * for kinds and streams their lines; false when WATCHERS_MAX watch or out
 * of memory. */
bool conn_watch_start(struct session *s, unsigned int kinds);
/* The connection closes: it leaves the hub (conn_close calls it). */
void conn_watch_stop(struct conn *c);

#endif
