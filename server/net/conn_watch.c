/*
 * A watching connection (`watch`): the connection joins the watch hub
 * (observe/watch.h), and a timer on its worker moves the lines the hub
 * buffered for it into its output and writes them.
 */
#include "conn_watch.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>

#include "conn.h"
#include "net.h"
#include "watch.h"

/* Moves the buffered lines to the connection this often. */
static const struct timeval flush_interval = { 0, 20000 };

struct conn_watch {
	struct watcher *w;
	struct event *flush; /* on the connection's worker */
	struct conn *c;
};

static void put_line(void *arg, const void *p, size_t n)
{
	session_add(arg, p, n);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct conn_watch *cw = arg;
	struct conn *c = cw->c;

	(void)fd;
	(void)what;
	if (evbuffer_get_length(c->s.out) >= c->w->net->cfg->output_hwm)
		return; /* a slow reader: lines are dropped, not queued */
	watch_drain(&c->w->net->obs->watch, cw->w, put_line, &c->s);
	if (evbuffer_get_length(c->s.out))
		conn_ready(c, false, true);
}

bool conn_watch_start(struct session *s, unsigned int kinds)
{
	struct conn *c = conn_of_session(s);
	struct conn_watch *cw = calloc(1, sizeof(*cw));

	if (!cw)
		return false;
	cw->c = c;
	cw->flush = event_new(c->w->base, -1, EV_PERSIST, on_flush, cw);
	if (!cw->flush || event_add(cw->flush, &flush_interval) ||
	    !(cw->w = watch_join(&c->w->net->obs->watch, kinds))) {
		if (cw->flush)
			event_free(cw->flush);
		free(cw);
		return false;
	}
	c->watch = cw;
	/* Published now, before the OK goes out. */
	atomic_store_explicit(&c->state, CONN_WATCH, memory_order_relaxed);
	return true;
}

void conn_watch_stop(struct conn *c)
{
	struct conn_watch *cw = c->watch;

	if (!cw)
		return;
	watch_leave(&c->w->net->obs->watch, cw->w);
	event_free(cw->flush);
	free(cw);
	c->watch = NULL;
}
