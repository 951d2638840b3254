/*
 * A connection's lifecycle: read what the socket has, execute every
 * complete request in one pass, write all replies with one write, and apply
 * backpressure (no reading while output is past the high-water mark).
 */
#include "conn.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/binary.h"
#include "proto/text.h"
#include "server.h"

#define RBUF_INITIAL 16384

static void conn_on_event(evutil_socket_t fd, short what, void *arg);

/* Brings srv->conn_bytes up to date with this connection's buffers: one
 * shared atomic add, only when they changed. */
static void account(struct conn *c, size_t now)
{
	if (now != c->accounted) {
		atomic_fetch_add_explicit(&c->w->srv->conn_bytes,
					  (int64_t)now - (int64_t)c->accounted,
					  memory_order_relaxed);
		c->accounted = now;
	}
}

static size_t buffer_bytes(const struct conn *c)
{
	return c->rcap + (c->out ? evbuffer_get_length(c->out) : 0);
}

/* Whether connection buffers, all together, are past --conn-memory. */
static bool conn_memory_full(const struct conn *c)
{
	const struct server *srv = c->w->srv;

	return atomic_load_explicit(&srv->conn_bytes, memory_order_relaxed) >
	       (int64_t)srv->cfg.conn_memory;
}

struct conn *conn_new(struct worker *w, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		goto fail;
	c->w = w;
	c->fd = fd;
	c->rcap = RBUF_INITIAL;
	c->rbuf = malloc(c->rcap);
	c->out = evbuffer_new();
	c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, conn_on_event, c);
	c->wev =
		event_new(w->base, fd, EV_WRITE | EV_PERSIST, conn_on_event, c);
	if (!c->rbuf || !c->out || !c->rev || !c->wev ||
	    event_add(c->rev, NULL)) {
		conn_close(c);
		return NULL;
	}
	c->last_active = cache_now();
	c->authed = w->srv->cfg.password == NULL;
	account(c, buffer_bytes(c));
	c->next = w->conns;
	if (c->next)
		c->next->prev = c;
	w->conns = c;
	w->nconns++;
	return c;
fail:
	close(fd);
	atomic_fetch_sub(&w->srv->curr_conns, 1);
	return NULL;
}

void conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->prev || w->conns == c) {
		if (c->prev)
			c->prev->next = c->next;
		else
			w->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		w->nconns--;
	}
	if (c->rev)
		event_free(c->rev);
	if (c->wev)
		event_free(c->wev);
	if (c->out)
		evbuffer_free(c->out); /* drops references to large items */
	if (c->mem_in)
		evbuffer_free(c->mem_in); /* mem_out is the feeder's */
	free(c->rbuf);
	if (c->bin) {
		msgpack_sbuffer_destroy(&c->bin->sb);
		proto_bin_decoder_destroy(&c->bin->dec[0]);
		proto_bin_decoder_destroy(&c->bin->dec[1]);
		free(c->bin);
	}
	if (c->w)
		account(c, 0);
	if (c->fd >= 0)
		close(c->fd);
	atomic_fetch_sub(&w->srv->curr_conns, 1);
	free(c);
}

static void reply(struct conn *c, const char *s)
{
	evbuffer_add(c->out, s, strlen(s));
}

/* Most a request can need in the input buffer: a line and a value. */
static size_t rbuf_limit(const struct conn *c)
{
	if (!c->authed)
		return 2 * CONN_PREAUTH_LIMIT;
	return PROTO_GET_LINE_MAX + (size_t)c->w->srv->cfg.max_item_size + 2;
}

/* Executes the complete text requests in rbuf; returns the bytes used. */
static size_t process_text(struct conn *c)
{
	const struct config *cfg = &c->w->srv->cfg;
	/* Before auth a value is discarded as it arrives, never buffered. */
	const struct proto_limits lim = {
		.max_value = c->authed ? cfg->max_item_size : CONN_PREAUTH_LIMIT
	};
	struct latency_hist *lat = c->w->lat;
	struct proto_req next;
	enum proto_status next_st = PROTO_NEED_MORE;
	bool have_next = false;
	uint64_t t0 = 0, t1;
	size_t off = 0;

	/*
	 * Each request's time runs from the end of the previous one (or the
	 * start of the pass) to the end of its execution: parsing included,
	 * one clock read per request.
	 */
	if (c->rlen)
		t0 = latency_now_ns();
	while (off < c->rlen && !c->close_when_done &&
	       evbuffer_get_length(c->out) < cfg->output_hwm) {
		const char *buf = c->rbuf + off;
		size_t n = c->rlen - off;
		struct proto_req req;
		enum proto_status st;

		if (c->swallow) {
			size_t k = c->swallow < n ? (size_t)c->swallow : n;

			off += k;
			c->swallow -= k;
			continue;
		}
		/*
		 * Pipelined batches: the request after this one is parsed now
		 * and its table bucket prefetched, so that its lookup does not
		 * stall on memory while this one executes.
		 */
		if (have_next) {
			req = next;
			st = next_st;
		} else {
			st = proto_text_parse(buf, n, &lim, &req);
		}
		have_next = false;
		if (st == PROTO_OK && req.len < n) {
			next_st = proto_text_parse(buf + req.len, n - req.len,
						   &lim, &next);
			have_next = true;
			if (next_st == PROTO_OK && next.key.len)
				cache_prefetch(
					c->w->srv->cache,
					(struct cache_key){
						buf + req.len + next.key.off,
						next.key.len });
		}
		switch (st) {
		case PROTO_NEED_MORE:
			goto done;
		case PROTO_OK:
			if (!c->authed && req.cmd != PROTO_CMD_AUTH &&
			    req.cmd != PROTO_CMD_QUIT) {
				reply(c, "CLIENT_ERROR authentication "
					 "required\r\n");
				break;
			}
			cmd_execute(c, buf, &req);
			t1 = latency_now_ns();
			latency_record(&lat[cmd_latency_class(&req)], t1 - t0);
			t0 = t1;
			break;
		case PROTO_ERROR:
			reply(c, "ERROR\r\n");
			break;
		case PROTO_CLIENT_ERROR:
			/* memcached: noreply silences errors too. */
			if (!req.noreply)
				evbuffer_add_printf(c->out,
						    "CLIENT_ERROR %s\r\n",
						    req.error);
			break;
		case PROTO_TOO_LARGE:
			if (!c->authed)
				reply(c, "CLIENT_ERROR authentication "
					 "required\r\n");
			else if (!req.noreply)
				reply(c, "SERVER_ERROR object too large for "
					 "cache\r\n");
			/* As memcached: a too large set drops the old value
			 * (only for a client allowed to write). */
			if (req.cmd == PROTO_CMD_SET && c->authed)
				cache_delete(
					c->w->srv->cache,
					(struct cache_key){ buf + req.key.off,
							    req.key.len });
			c->swallow = req.swallow;
			break;
		case PROTO_LINE_TOO_LONG:
			reply(c, "CLIENT_ERROR line too long\r\n");
			c->close_when_done = true;
			req.len = n;
			break;
		case PROTO_CLOSE:
			c->close_when_done = true;
			req.len = n;
			break;
		}
		off += req.len;
	}
done:
	return off;
}

/* The first byte tells the protocol: a binary frame's length starts with
 * 0x00, which no text command does. */
static bool choose_protocol(struct conn *c)
{
	if (c->rbuf[0] != 0) {
		c->proto = CONN_TEXT;
		return true;
	}
	c->bin = calloc(1, sizeof(*c->bin));
	if (!c->bin)
		return false;
	msgpack_sbuffer_init(&c->bin->sb);
	proto_bin_decoder_init(&c->bin->dec[0]);
	proto_bin_decoder_init(&c->bin->dec[1]);
	c->proto = CONN_BINARY;
	return true;
}

/* Executes every complete request in rbuf and keeps the rest. */
static void process(struct conn *c)
{
	size_t off;

	if (!c->rlen)
		return;
	if (c->proto == CONN_UNKNOWN && !choose_protocol(c)) {
		c->close_when_done = true;
		return;
	}
	if (c->proto == CONN_BINARY)
		off = cmd_binary_process(c, c->rbuf, c->rlen);
	else
		off = process_text(c);
	if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
		c->last_active = cache_now(); /* a whole request arrived */
	}
	/* A big value has gone through: give its buffer back. */
	if (c->rlen <= RBUF_INITIAL / 2 && c->rcap > RBUF_INITIAL) {
		char *p = realloc(c->rbuf, RBUF_INITIAL);

		if (p) {
			c->rbuf = p;
			c->rcap = RBUF_INITIAL;
		}
	}
}

/* Reads once; returns false when the connection must close now. */
static bool conn_read(struct conn *c)
{
	ssize_t n;

	if (c->rlen == c->rcap) {
		size_t cap = c->rcap * 2;
		char *p;

		if (cap > rbuf_limit(c))
			cap = rbuf_limit(c);
		if (cap == c->rcap)
			return false; /* the parser bounds lines: cannot happen */
		if (conn_memory_full(c)) {
			/* Growing now would take memory other clients' buffers
			 * need: this request cannot be read. */
			log_info("closing connection %d: connection memory "
				 "full (--conn-memory)",
				 c->fd);
			evbuffer_add_printf(
				c->out, "SERVER_ERROR out of memory reading "
					"request\r\n");
			if (c->mem_in)
				evbuffer_add_buffer(c->mem_out, c->out);
			else
				evbuffer_write(c->out, c->fd);
			return false;
		}
		p = realloc(c->rbuf, cap);
		if (!p)
			return false;
		c->rbuf = p;
		c->rcap = cap;
	}
	if (c->mem_in) {
		n = evbuffer_remove(c->mem_in, c->rbuf + c->rlen,
				    c->rcap - c->rlen);
		if (n == 0 && !c->mem_eof)
			return true;
	} else {
		n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
	}
	if (n == 0) {
		/* The peer closed its side (or half-closed): no more input,
		 * but the requests already here are answered in full. */
		c->peer_eof = true;
		return true;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	/* Bytes alone do not count as activity (last_active): a client
	 * trickling a request that never completes is idle (slowloris). */
	c->rlen += (size_t)n;
	STAT_ADD(&c->w->stats, bytes_read, (unsigned long)n);
	return true;
}

/* Writes what it can; returns false on a broken connection. */
static bool conn_write(struct conn *c)
{
	size_t before = evbuffer_get_length(c->out);
	int n;

	if (!before)
		return true;
	if (c->mem_in) /* the peer takes everything at once */
		n = evbuffer_add_buffer(c->mem_out, c->out) ? -1 : (int)before;
	else
		n = evbuffer_write(c->out, c->fd);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n > 0) {
		STAT_ADD(&c->w->stats, bytes_written, (unsigned long)n);
		c->last_active = cache_now();
		c->stalled_since = 0;
	}
	return true;
}

/* Subscribes to what the connection now waits for. */
static void update_events(struct conn *c)
{
	size_t pending = evbuffer_get_length(c->out);
	/* Past --conn-memory, connections with replies pending wait for
	 * them to drain before they may add more. */
	bool want_read = !c->close_when_done && !c->peer_eof &&
			 pending < c->w->srv->cfg.output_hwm &&
			 !(pending && conn_memory_full(c));

	if (pending) {
		if (c->wev)
			event_add(c->wev, NULL);
		if (!c->stalled_since)
			c->stalled_since = cache_now();
	} else {
		if (c->wev)
			event_del(c->wev);
		c->stalled_since = 0;
	}
	if (want_read == c->read_paused) {
		if (c->rev) {
			if (want_read)
				event_add(c->rev, NULL);
			else
				event_del(c->rev);
		}
		c->read_paused = !want_read;
	}
}

/* How long a finished connection waits for the peer's EOF. */
#define LINGER_S 2

/*
 * Ends a connection whose replies have all been written. A plain close()
 * with unread input makes the kernel send a reset, which throws away the
 * replies still in the socket's send queue: so first shut down our side
 * (the peer reads every reply, then EOF), discard what the peer still
 * sends, and close on its EOF or after LINGER_S. Returns false once closed.
 */
static bool conn_finish(struct conn *c)
{
	if (c->fd < 0 || c->peer_eof || shutdown(c->fd, SHUT_WR)) {
		conn_close(c);
		return false;
	}
	c->lingering = true;
	c->linger_since = cache_now();
	c->rlen = 0;
	if (c->wev)
		event_del(c->wev);
	if (c->read_paused && c->rev)
		event_add(c->rev, NULL);
	c->read_paused = false;
	return true;
}

/* A lingering connection: discards input until the peer's EOF. */
static bool conn_drain_input(struct conn *c)
{
	char sink[4096];
	ssize_t n;

	while ((n = read(c->fd, sink, sizeof(sink))) > 0)
		;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	conn_close(c);
	return false;
}

/* Reads (when what has EV_READ), runs and writes; false once closed. */
static bool conn_service(struct conn *c, short what)
{
	if (c->lingering)
		return conn_drain_input(c);
	if ((what & EV_READ) && !conn_read(c)) {
		conn_close(c);
		return false;
	}
	/*
	 * Also after a write: requests held back by backpressure. When the
	 * write drains the output below the high-water mark and complete
	 * requests wait in the input, go on now: no read event may come
	 * (the client sent everything and waits for the replies).
	 */
	for (;;) {
		size_t before = c->rlen;

		process(c);
		if (!conn_write(c)) {
			conn_close(c);
			return false;
		}
		if (!c->rlen || c->rlen == before || c->close_when_done ||
		    evbuffer_get_length(c->out) >= c->w->srv->cfg.output_hwm)
			break;
	}
	/* Closing waits for the output to drain; after the peer's EOF, what
	 * is left in the input is an incomplete request (or none). */
	if ((c->close_when_done || c->peer_eof) && !evbuffer_get_length(c->out))
		return conn_finish(c);
	account(c, buffer_bytes(c));
	update_events(c);
	return true;
}

static void conn_on_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	conn_service(arg, what);
}

void conn_shutdown(struct conn *c)
{
	if (c->lingering)
		return;
	c->close_when_done = true;
	if (!evbuffer_get_length(c->out)) {
		conn_finish(c);
		return;
	}
	update_events(c);
}

void conn_tick(struct conn *c, int64_t now)
{
	const struct config *cfg = &c->w->srv->cfg;

	if (c->lingering) {
		if (now - c->linger_since >= LINGER_S)
			conn_close(c);
		return;
	}
	if (c->stalled_since && now - c->stalled_since >= cfg->stall_timeout) {
		log_info("closing connection %d: output stalled %d s", c->fd,
			 cfg->stall_timeout);
		conn_close(c);
		return;
	}
	if (cfg->idle_timeout && now - c->last_active >= cfg->idle_timeout) {
		log_debug("closing idle connection %d", c->fd);
		conn_close(c);
	}
}

struct conn *conn_new_memory(struct worker *w)
{
	struct conn *c = calloc(1, sizeof(*c));

	atomic_fetch_add(&w->srv->curr_conns, 1);
	if (!c) {
		atomic_fetch_sub(&w->srv->curr_conns, 1);
		return NULL;
	}
	c->w = w;
	c->fd = -1;
	c->rcap = RBUF_INITIAL;
	c->rbuf = malloc(c->rcap);
	c->out = evbuffer_new();
	c->mem_in = evbuffer_new();
	if (!c->rbuf || !c->out || !c->mem_in) {
		conn_close(c);
		return NULL;
	}
	c->last_active = cache_now();
	c->authed = w->srv->cfg.password == NULL;
	account(c, buffer_bytes(c));
	c->next = w->conns;
	if (c->next)
		c->next->prev = c;
	w->conns = c;
	w->nconns++;
	return c;
}

bool conn_memory_feed(struct conn *c, const void *p, size_t n, bool eof,
		      struct evbuffer *replies)
{
	bool open = true;

	if (n && evbuffer_add(c->mem_in, p, n))
		return true;
	c->mem_eof = eof;
	c->mem_out = replies; /* written straight there, even as it closes */
	/* As the event loop would: read while there is input and the
	 * connection wants it, then once more for what backpressure held. */
	do {
		open = conn_service(c, c->read_paused ? EV_WRITE : EV_READ);
	} while (open &&
		 (evbuffer_get_length(c->mem_in) || (eof && !c->read_paused)));
	if (open)
		c->mem_out = NULL;
	return open;
}
