/*
 * librhkv on a libevent loop: rhkv_libevent_attach(c, base) and the
 * handle's commands sent with rhkv_send() (or any non-blocking call) are
 * moved by the loop: a read and a write event on the handle's socket,
 * added and removed as the handle asks (rhkv_set_event_hooks), and a
 * timer for its deadlines (moved nearer when a timeout is lowered on the
 * live handle). Header-only, so that librhkv itself does not depend on
 * libevent; link the program with libevent.
 *
 * A connected handle always waits to read (a server that closes an idle
 * connection is noticed), so its read event keeps event_base_dispatch()
 * running for as long as the handle is connected: a service's loop runs
 * until the service ends it, and a program that does one job breaks the
 * loop from the callback that finishes the job:
 *
 *	static void on_get(rhkv *c, const struct rhkv_result *r, void *arg)
 *	{
 *		if (r->status == 0)
 *			printf("%.*s\n", (int)r->len, r->data);
 *		event_base_loopbreak(arg); (the job is done)
 *	}
 *
 *	struct event_base *base = event_base_new();
 *	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
 *	rhkv *c;
 *
 *	rhkv_new(&c, "127.0.0.1", 11311, NULL);
 *	rhkv_libevent_attach(c, base);
 *	rhkv_send(c, &get, on_get, base);
 *	event_base_dispatch(base); (returns after on_get's loopbreak)
 *	rhkv_close(c);		   (before the base: it frees the events)
 *	event_base_free(base);
 *
 * The adapter lives until rhkv_close() (or other hooks replace it).
 * (client/examples/event_loop.c is a whole service built this way.)
 */
#ifndef RHKV_LIBEVENT_H
#define RHKV_LIBEVENT_H

#include <event2/event.h>
#include <stdlib.h>

#include "rhkv.h"

struct rhkv_libevent {
	rhkv *c;
	struct event_base *base;
	struct event *rev, *wev, *timer;
	int fd;
};

static void rhkv_libevent__io(evutil_socket_t fd, short what, void *arg)
{
	struct rhkv_libevent *a = (struct rhkv_libevent *)arg;

	(void)fd;
	if (what & EV_READ)
		rhkv_on_readable(a->c);
	else if (what & EV_WRITE)
		rhkv_on_writable(a->c);
}

static void rhkv_libevent__arm(struct rhkv_libevent *a, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (ms >= 0)
		evtimer_add(a->timer, &tv);
}

static void rhkv_libevent__timer(evutil_socket_t fd, short what, void *arg)
{
	struct rhkv_libevent *a = (struct rhkv_libevent *)arg;

	(void)fd;
	(void)what;
	/* -1 also when a callback closed the handle: a is gone then */
	rhkv_libevent__arm(a, rhkv_on_timer(a->c));
}

static void rhkv_libevent__update(void *data, int fd, int wants)
{
	struct rhkv_libevent *a = (struct rhkv_libevent *)data;

	if (fd != a->fd) {
		event_del(a->rev);
		event_del(a->wev);
		a->fd = fd;
		if (fd < 0)
			return;
		event_assign(a->rev, a->base, fd, EV_READ | EV_PERSIST,
			     rhkv_libevent__io, a);
		event_assign(a->wev, a->base, fd, EV_WRITE | EV_PERSIST,
			     rhkv_libevent__io, a);
	}
	if (wants & RHKV_WANT_READ)
		event_add(a->rev, NULL);
	else
		event_del(a->rev);
	if (wants & RHKV_WANT_WRITE)
		event_add(a->wev, NULL);
	else
		event_del(a->wev);
	/* the nearest deadline may have changed (a connect done, commands
	 * queued, a timeout lowered: the handle then calls with the same fd
	 * and wants): the timer follows it (evtimer_add replaces a pending
	 * timeout), and re-arms itself until none */
	if (wants)
		rhkv_libevent__arm(a, rhkv_timeout_ms(a->c));
}

static void rhkv_libevent__cleanup(void *data)
{
	struct rhkv_libevent *a = (struct rhkv_libevent *)data;

	event_free(a->rev);
	event_free(a->wev);
	event_free(a->timer);
	free(a);
}

/* Attaches c to base. 0, or RHKV_ENOMEM / RHKV_EINVAL. */
static inline int rhkv_libevent_attach(rhkv *c, struct event_base *base)
{
	struct rhkv_libevent *a;
	struct rhkv_event_hooks h;

	if (!c || !base)
		return RHKV_EINVAL;
	a = (struct rhkv_libevent *)calloc(1, sizeof(*a));
	if (!a)
		return RHKV_ENOMEM;
	a->c = c;
	a->base = base;
	a->fd = -1;
	/* made on fd -1 for now: the hooks assign them the real socket */
	a->rev =
		event_new(base, -1, EV_READ | EV_PERSIST, rhkv_libevent__io, a);
	a->wev = event_new(base, -1, EV_WRITE | EV_PERSIST, rhkv_libevent__io,
			   a);
	a->timer = evtimer_new(base, rhkv_libevent__timer, a);
	if (!a->rev || !a->wev || !a->timer) {
		rhkv_libevent__cleanup(a);
		return RHKV_ENOMEM;
	}
	h.data = a;
	h.update = rhkv_libevent__update;
	h.cleanup = rhkv_libevent__cleanup;
	rhkv_set_event_hooks(c, &h);
	return 0;
}

#endif
