/*
 * memcached's UDP protocol (udp.h): a worker's UDP sockets, the transport
 * its sessions use, and the cutting of replies into datagrams.
 *
 * The session's transport reads from the datagram being served and sends
 * each request's replies to its sender as a message of their own, as
 * memcached does; it never waits to write, and at the datagram's end it
 * has nothing more to read (so the batch loop stops there). After each
 * datagram the session is made ready for the next (conn_restart), or
 * closed when a request was left half done.
 */
#include "udp.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "conn.h"
#include "net.h"
#include "transport.h"

/* Datagrams served per readiness, before the worker's other events get
 * their turn. */
#define UDP_BATCH 64
/* The largest UDP payload (IPv6's; IPv4's is 65507). */
#define UDP_RECV_MAX 65527

struct udp_port {
	struct worker *w;
	int fd; /* the server's socket */
	struct event *ev;
	struct conn *session; /* NULL: none open */
	/* The datagram being served: its requests not yet read, its id and
	 * its sender, to whom each request's replies go. */
	const char *in;
	size_t in_len;
	unsigned int id;
	struct sockaddr_storage from;
	socklen_t fromlen;
	bool readable; /* what the session waits for */
	char buf[UDP_RECV_MAX];
};

static void put_be16(unsigned char *p, unsigned int v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/*
 * Sends the replies in out (removed from it) to the datagram's sender as
 * one message: datagrams with its id, their sequence numbers and count.
 * What cannot be sent is dropped: UDP promises no delivery.
 */
static void send_message(struct udp_port *p, struct evbuffer *out)
{
	static const char too_large[] =
		"SERVER_ERROR reply too large for UDP\r\n";
	const size_t room = UDP_DATAGRAM_MAX - UDP_HEADER_SIZE;
	size_t len = evbuffer_get_length(out);
	size_t count = (len + room - 1) / room;
	unsigned char d[UDP_DATAGRAM_MAX];

	if (count > 0xffff) {
		/* The sequence numbers would wrap: memcached has no answer
		 * for it; rhkvd says so. */
		evbuffer_drain(out, len);
		evbuffer_add(out, too_large, sizeof(too_large) - 1);
		count = 1;
	}
	for (size_t seq = 0; seq < count; seq++) {
		int n = evbuffer_remove(out, d + UDP_HEADER_SIZE, room);
		size_t size = UDP_HEADER_SIZE + (size_t)(n > 0 ? n : 0);

		put_be16(d, p->id);
		put_be16(d + 2, (unsigned int)seq);
		put_be16(d + 4, (unsigned int)count);
		put_be16(d + 6, 0);
		if (n < 0 || sendto(p->fd, d, size, MSG_DONTWAIT | MSG_NOSIGNAL,
				    (struct sockaddr *)&p->from,
				    p->fromlen) != (ssize_t)size) {
			log_debug("UDP reply to a client dropped: %s",
				  strerror(errno));
			break;
		}
	}
	evbuffer_drain(out, evbuffer_get_length(out));
}

/* ---- the session's transport ---- */

static struct udp_port *port_of(const struct conn *c)
{
	return c->tstate;
}

/* conn_open calls this before udp.c can set c->tstate (start_session
 * does, right after): nothing to attach. */
static int udp_open(struct conn *c)
{
	(void)c;
	return 0;
}

static ssize_t udp_read(struct conn *c, void *buf, size_t n)
{
	struct udp_port *p = port_of(c);

	if (!p || !p->in_len)
		return TRANSPORT_WANT_READ;
	if (n > p->in_len)
		n = p->in_len;
	memcpy(buf, p->in, n);
	p->in += n;
	p->in_len -= n;
	return (ssize_t)n;
}

/* A request's replies (write_per_request), or what the end of a batch
 * left: a message, sent at once. The session never waits to write. */
static ssize_t udp_write(struct conn *c, struct evbuffer *out)
{
	size_t n = evbuffer_get_length(out);

	if (!port_of(c))
		return TRANSPORT_ERROR;
	send_message(port_of(c), out);
	return (ssize_t)n;
}

/* No stream to end: the session closes at once. */
static bool udp_shutdown(struct conn *c)
{
	(void)c;
	return false;
}

static void udp_wait(struct conn *c, bool readable, bool writable)
{
	(void)writable; /* always writable */
	if (port_of(c))
		port_of(c)->readable = readable;
}

/* A session waiting for --conn-memory is closed when its datagram's
 * serving ends (run_requests), which takes it off the queue: a wake has
 * nothing to run. */
static void udp_wake(struct conn *c)
{
	(void)c;
}

/* The session is closing (its datagram's end, a quit, the worker
 * stopping): the port forgets it. */
static void udp_close(struct conn *c)
{
	if (port_of(c))
		port_of(c)->session = NULL;
	c->tstate = NULL;
}

static const struct transport transport_udp = {
	.name = "udp",
	.open = udp_open,
	.read = udp_read,
	.write = udp_write,
	.shutdown = udp_shutdown,
	.wait = udp_wait,
	.wake = udp_wake,
	.close = udp_close,
	.never_idle = true,
	.write_per_request = true,
};

/* ---- serving datagrams ---- */

static struct conn *start_session(struct udp_port *p)
{
	struct conn *c;

	if (!conn_slot_take(p->w->net))
		return NULL;
	c = conn_open(p->w, &transport_udp, -1);
	if (!c)
		return NULL;
	c->tstate = p;
	p->session = c;
	p->readable = true;
	return c;
}

/* Serves the requests of one datagram's payload, as the event loop would
 * serve a connection: read while there is input and the session wants it,
 * write whenever it waits to. */
static void run_requests(struct udp_port *p, const char *data, size_t n)
{
	struct conn *c = p->session ? p->session : start_session(p);
	bool open = c != NULL;

	if (!open) {
		static const char busy[] =
			"ERROR Too many open connections\r\n";
		struct evbuffer *out = evbuffer_new();

		if (out && !evbuffer_add(out, busy, sizeof(busy) - 1))
			send_message(p, out);
		if (out)
			evbuffer_free(out);
		return;
	}
	p->in = data;
	p->in_len = n;
	while (open && !c->budget_wait && (p->in_len || !p->readable))
		open = conn_ready(c, p->readable, !p->readable);
	/* What is left of the datagram (a request waiting for room, or
	 * cut off at its end) is dropped with the session. */
	if (open && !conn_restart(c))
		conn_close(c);
	p->in = NULL;
	p->in_len = 0;
}

static void on_datagram(evutil_socket_t fd, short what, void *arg)
{
	struct udp_port *p = arg;

	(void)what;
	for (int i = 0; i < UDP_BATCH; i++) {
		const unsigned char *h = (const unsigned char *)p->buf;
		ssize_t n;

		p->fromlen = sizeof(p->from);
		n = recvfrom(fd, p->buf, sizeof(p->buf), MSG_DONTWAIT,
			     (struct sockaddr *)&p->from, &p->fromlen);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				log_debug("UDP receive: %s", strerror(errno));
			return;
		}
		/* Not ours (no request id to answer with), or a request in
		 * several datagrams, which memcached 1.6 drops unanswered
		 * too. */
		if (n < UDP_HEADER_SIZE || h[4] != 0 || h[5] != 1)
			continue;
		p->id = (unsigned int)h[0] << 8 | h[1];
		run_requests(p, p->buf + UDP_HEADER_SIZE,
			     (size_t)n - UDP_HEADER_SIZE);
	}
}

/* ---- the worker's ports ---- */

int udp_worker_init(struct worker *w)
{
	struct net *net = w->net;

	for (int j = 0; j < net->nudp_fd; j++) {
		struct udp_port *p;

		if (j % net->cfg->threads != (int)w->id)
			continue;
		p = calloc(1, sizeof(*p));
		if (!p)
			return -1;
		w->udp[w->nudp++] = p;
		p->w = w;
		p->fd = net->udp_fd[j];
		p->ev = event_new(w->base, p->fd, EV_READ | EV_PERSIST,
				  on_datagram, p);
		if (!p->ev || event_add(p->ev, NULL))
			return -1;
	}
	return 0;
}

void udp_worker_stop(struct worker *w)
{
	for (int i = 0; i < w->nudp; i++)
		if (w->udp[i]->ev)
			event_del(w->udp[i]->ev);
}

void udp_worker_free(struct worker *w)
{
	for (int i = 0; i < w->nudp; i++) {
		struct udp_port *p = w->udp[i];

		if (p->session)
			conn_close(p->session);
		if (p->ev)
			event_free(p->ev);
		free(p);
	}
	w->nudp = 0;
}
