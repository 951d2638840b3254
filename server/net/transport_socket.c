/*
 * The socket transport: a connected non-blocking socket on the worker's
 * event loop, with one persistent event per direction, added and removed
 * as the connection's wishes change. The TLS transport shares the events
 * (socket_events_*).
 */
#include "transport.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "net.h"

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	conn_ready(arg, what & EV_READ, what & EV_WRITE);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_wake(arg);
}

int socket_events_init(struct conn *c, struct socket_events *s)
{
	struct event_base *base = c->w->base;

	s->rev = event_new(base, c->fd, EV_READ | EV_PERSIST, on_event, c);
	s->wev = event_new(base, c->fd, EV_WRITE | EV_PERSIST, on_event, c);
	s->wake = event_new(base, -1, 0, on_wake, c);
	return s->rev && s->wev && s->wake ? 0 : -1;
}

static int sock_open(struct conn *c)
{
	struct socket_events *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	c->tstate = s;
	return socket_events_init(c, s);
}

static ssize_t sock_read(struct conn *c, void *buf, size_t n)
{
	ssize_t k = read(c->fd, buf, n);

	if (k >= 0)
		return k;
	return errno == EAGAIN || errno == EINTR ? TRANSPORT_WANT_READ
						 : TRANSPORT_ERROR;
}

static ssize_t sock_write(struct conn *c, struct evbuffer *out)
{
	int k = evbuffer_write(out, c->fd);

	if (k >= 0)
		return k;
	return errno == EAGAIN || errno == EINTR ? TRANSPORT_WANT_WRITE
						 : TRANSPORT_ERROR;
}

static bool sock_shutdown(struct conn *c)
{
	return shutdown(c->fd, SHUT_WR) == 0;
}

/* Adds or removes ev so that it is added exactly when on. */
static void set_event(struct event *ev, bool *added, bool on)
{
	if (on == *added)
		return;
	if (on ? event_add(ev, NULL) : event_del(ev))
		return; /* unchanged; the next wait tries again */
	*added = on;
}

void socket_events_wait(struct socket_events *s, bool readable, bool writable)
{
	set_event(s->rev, &s->reading, readable);
	set_event(s->wev, &s->writing, writable);
}

void socket_events_wake(struct socket_events *s)
{
	event_active(s->wake, EV_READ, 0);
}

void socket_events_free(struct socket_events *s)
{
	if (s->rev)
		event_free(s->rev);
	if (s->wev)
		event_free(s->wev);
	if (s->wake)
		event_free(s->wake);
}

static void sock_wait(struct conn *c, bool readable, bool writable)
{
	socket_events_wait(c->tstate, readable, writable);
}

static void sock_wake(struct conn *c)
{
	socket_events_wake(c->tstate);
}

static void sock_close(struct conn *c)
{
	struct socket_events *s = c->tstate;

	if (s) {
		socket_events_free(s);
		free(s);
		c->tstate = NULL;
	}
	close(c->fd);
}

const struct transport transport_socket = {
	.name = "socket",
	.open = sock_open,
	.read = sock_read,
	.write = sock_write,
	.shutdown = sock_shutdown,
	.wait = sock_wait,
	.wake = sock_wake,
	.close = sock_close,
};

struct conn *conn_new_socket(struct worker *w, int fd)
{
	return conn_open(w, &transport_socket, fd);
}
