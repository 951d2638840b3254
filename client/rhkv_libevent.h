/*
 * librhkv on a libevent loop: rhkv_libevent_attach(c, base) and the
 * handle's commands sent with rhkv_send() (or any non-blocking call) are
 * moved by the loop: a read and a write event on the handle's socket,
 * added and removed as the handle asks (rhkv_set_event_hooks), and a
 * timer for its deadlines. Header-only, so that librhkv itself does not
 * depend on libevent; link the program with libevent.
 *
 *	struct event_base *base = event_base_new();
 *	rhkv *c;
 *	rhkv_new(&c, "127.0.0.1", 11211, NULL);
 *	rhkv_libevent_attach(c, base);
 *	rhkv_send(c, &(struct rhkv_cmd){ .op = RHKV_OP_GET, .key = "k",
 *					 .klen = 1 }, on_get, NULL);
 *	event_base_dispatch(base);
 *
 * The adapter lives until rhkv_close() (or other hooks replace it).
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
	 * queued): the timer follows it, and re-arms itself until none */
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
