/*
 * A connection's lifecycle and its batch loop, the one request path for
 * every protocol and transport: read what the transport has, decode every
 * complete request (one ahead: its bucket prefetched while the current
 * one runs, then its item while the one after it decodes), gate on auth,
 * execute, record latency, write all replies with one write, and apply
 * backpressure (no reading while output is past the high-water mark). A
 * value above ITEM_SEG_VALUE_MAX that has not all arrived is received
 * straight into its item ("landing", below) rather than gathered in the
 * input buffer and copied.
 */
#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_watch.h"
#include "common/clock.h"
#include "common/log.h"
#include "proto/mcbin.h"
#include "proto/text.h"
#include "protocol.h"
#include "landing.h"
#include "net.h"
#include "transport.h"

#define RBUF_INITIAL 16384

/* Reads a wakeup makes at most while each fills the space it was given
 * (the socket likely holds more): then other connections get their turn. */
#define READS_PER_WAKEUP 4

/* Replies a connection may always have pending, however full
 * --conn-memory is (held()). */
#define OUTPUT_FLOOR RBUF_INITIAL

/* Seconds (at the 1 s clock's resolution: more than one) without a byte
 * after which the holder of --conn-memory's overdraft passes it to the
 * next waiter: a client that stops halfway through a large request must
 * not make every other one wait for it. */
#define OVERDRAFT_IDLE_S 2

/* How long a finished connection waits for the peer's EOF. */
#define LINGER_S 2

/* ---- large values: landing (the functions are further down) ---- */

/*
 * A storage request whose value is above ITEM_SEG_VALUE_MAX and has not
 * all arrived is received straight into its item: the header stays at the
 * start of rbuf (the decoded request points into it; nothing moves or
 * reallocates rbuf until the request has run), the value goes from the
 * socket into the item (cache_landing_new) with reads as large as what is
 * missing, and the bytes after it (the protocol's value_end, then further
 * requests) go into rbuf after the header. Once all are here the request
 * runs with the item as its value (cache_write's landed). The item counts
 * against the memory limit while it lands, as memcached's does; an idle
 * or closed connection frees it.
 */
struct landing {
	struct request req; /* decoded at rbuf[0] */
	struct item *it;    /* NULL: nothing landing */
	char *dst;	    /* its value */
	size_t hdr;	    /* the header's bytes at rbuf[0] */
	uint32_t got;	    /* value bytes received */
	uint32_t tail;	    /* bytes of value_end */
};

static bool landing(const struct conn *c)
{
	return c->land && c->land->it;
}

/* Brings the --conn-memory total up to date with this connection's
 * buffers: one shared atomic add, only when they changed. */
static void account(struct conn *c, size_t now)
{
	conn_budget_account(&c->w->net->budget, c, now);
}

static size_t buffer_bytes(const struct conn *c)
{
	return c->rcap + (c->s.out ? evbuffer_get_length(c->s.out) : 0);
}

/* Whether connection buffers, all together, are past --conn-memory. */
static bool conn_memory_full(const struct conn *c)
{
	return conn_budget_full(&c->w->net->budget);
}

/* Leaves the --conn-memory queue and gives back the overdraft: the
 * connection closes, stops reading, or has room again. */
static void budget_cancel(struct conn *c)
{
	if (c->budget_wait || c->budget_over)
		conn_budget_cancel(&c->w->net->budget, c);
}

bool conn_slot_take(struct net *net)
{
	if (atomic_fetch_add(&net->obs->curr_conns, 1) >=
	    net->cfg->conn_limit) {
		atomic_fetch_sub(&net->obs->curr_conns, 1);
		atomic_fetch_add(&net->obs->rejected_conns, 1);
		return false;
	}
	atomic_fetch_add(&net->obs->total_conns, 1);
	return true;
}

void conn_slot_give(struct net *net)
{
	atomic_fetch_sub(&net->obs->curr_conns, 1);
}

static const char too_many[] = "ERROR Too many open connections\r\n";

bool conn_admit(struct net *net, int fd, const struct sockaddr *sa)
{
	int one = 1;

	if (!conn_slot_take(net)) {
		/* Best effort, as memcached: the socket buffer is empty (a
		 * TLS client reads it as a failed handshake). */
		if (write(fd, too_many, sizeof(too_many) - 1) < 0)
			log_debug("rejected connection: %s", strerror(errno));
		close(fd);
		return false;
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return true;
}

const char *const conn_state_name[] = {
	[CONN_NEW_CMD] = "conn_new_cmd", [CONN_READ] = "conn_read",
	[CONN_NREAD] = "conn_nread",	 [CONN_SWALLOW] = "conn_swallow",
	[CONN_MWRITE] = "conn_mwrite",	 [CONN_CLOSING] = "conn_closing",
	[CONN_WATCH] = "conn_watch",
};

/* Only the owning thread writes last_active (`stats conns` reads it from
 * another): a relaxed store, no read-modify-write. */
static void conn_touch(struct conn *c)
{
	atomic_store_explicit(&c->last_active, clock_now_s(),
			      memory_order_relaxed);
}

/* For `stats conns`: what the connection now waits for. */
static void publish_state(struct conn *c)
{
	uint8_t st = c->s.close_when_done || c->peer_eof ? CONN_CLOSING
		     : c->watch				 ? CONN_WATCH
		     : c->swallow			 ? CONN_SWALLOW
		     : evbuffer_get_length(c->s.out)	 ? CONN_MWRITE
		     : landing(c) || (c->rlen && c->s.text_value_pending)
			     ? CONN_NREAD
		     : c->rlen ? CONN_READ
			       : CONN_NEW_CMD;

	if (atomic_load_explicit(&c->state, memory_order_relaxed) != st)
		atomic_store_explicit(&c->state, st, memory_order_relaxed);
}

struct conn *conn_open(struct worker *w, const struct transport *t, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		if (fd >= 0)
			close(fd);
		conn_slot_give(w->net);
		return NULL;
	}
	c->w = w;
	c->fd = fd;
	c->transport = t;
	c->rcap = RBUF_INITIAL;
	c->rbuf = malloc(c->rcap);
	c->s.env = w->net->env;
	c->s.thread = w->id;
	c->s.stats = &w->obs->stats;
	c->s.hot = &w->obs->hot;
	c->s.fd = fd;
	c->s.watch = conn_watch_start;
	c->s.out = evbuffer_new();
	atomic_init(&c->last_active, clock_now_s());
	atomic_init(&c->state, CONN_NEW_CMD);
	c->s.authed = w->net->env->auth == NULL;
	pthread_mutex_lock(&w->lock);
	c->next = w->conns;
	if (c->next)
		c->next->prev = c;
	w->conns = c;
	pthread_mutex_unlock(&w->lock);
	w->nconns++;
	if (!c->rbuf || !c->s.out || t->open(c)) {
		conn_close(c);
		return NULL;
	}
	account(c, buffer_bytes(c));
	t->wait(c, true, false);
	return c;
}

void conn_close(struct conn *c)
{
	struct worker *w = c->w;

	budget_cancel(c); /* before the transport goes: a wake uses it */
	conn_watch_stop(c);
	/* Out of the list before the fd closes: `stats conns` reads it. */
	pthread_mutex_lock(&w->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&w->lock);
	w->nconns--;
	c->transport->close(c);
	if (c->s.out)
		evbuffer_free(c->s.out); /* drops references to large items */
	free(c->rbuf);
	if (c->proto && c->proto->close)
		c->proto->close(&c->s);
	if (landing(c))
		exec_landing_free(&c->s, c->land->it);
	free(c->land);
	account(c, 0);
	conn_slot_give(w->net);
	free(c);
}

bool conn_restart(struct conn *c)
{
	if (c->rlen || c->swallow || landing(c) || c->land_next ||
	    c->s.close_when_done || c->s.broken || c->peer_eof || c->watch ||
	    c->s.dumping || c->budget_wait || c->budget_over ||
	    evbuffer_get_length(c->s.out))
		return false;
	if (c->proto && c->proto->close)
		c->proto->close(&c->s);
	c->proto = NULL;
	c->s.reply = NULL;
	c->s.pstate = NULL;
	c->s.authed = c->w->net->env->auth == NULL;
	c->s.batch_ran = 0;
	c->s.text_no_newline = 0;
	c->s.text_value_pending = false;
	return true;
}

/* ---- output ---- */

/* Bytes of replies not yet written, staged ones included. */
static size_t pending(const struct conn *c)
{
	return evbuffer_get_length(c->s.out) +
	       (c->proto && c->proto->staged ? c->proto->staged(&c->s) : 0);
}

/* ---- the batch loop ---- */

/*
 * Whether the next request waits for the replies already pending: past
 * the connection's --output-limit, or, while all connection buffers
 * together are past --conn-memory, past OUTPUT_FLOOR. A connection whose
 * output is below the floor always runs its next request, so each one
 * moves on as its own client reads, whatever the others hold, and small
 * pipelined requests still go out together.
 */
static bool held(const struct conn *c, size_t hwm)
{
	size_t n = pending(c);

	return n >= hwm || (n > OUTPUT_FLOOR && conn_memory_full(c));
}

/* Whether a request may run before the connection has authenticated. */
static bool allowed_before_auth(const struct request *r)
{
	return r->cmd == REQ_AUTH || r->cmd == REQ_AUTH_SET ||
	       r->cmd == REQ_AUTH_MECHS || r->cmd == REQ_QUIT;
}

/* Whether memcached writes out its pending replies after this request:
 * after a classic get's END, and after mn. */
static bool flushes_pipeline(const struct request *r)
{
	return r->cmd == REQ_GET || r->cmd == REQ_GETS || r->cmd == REQ_GAT ||
	       r->cmd == REQ_GATS || r->cmd == REQ_MNOOP;
}

/* Acts on one decoded request (or a decoder's refusal). */
static void dispatch(struct conn *c, enum decode_status st,
		     const struct request *r, uint64_t *t0)
{
	const struct reply_ops *ops = &c->proto->reply;
	uint64_t t1;

	switch (st) {
	case DECODE_OK:
		if (!c->s.authed && !allowed_before_auth(r)) {
			ops->status(&c->s, r, REPLY_AUTH_REQUIRED, NULL);
			return;
		}
		c->s.reply_start = evbuffer_get_length(c->s.out);
		cmd_execute(&c->s, r);
		t1 = latency_now_ns();
		latency_record(&c->w->obs->lat[cmd_latency_class(r)], t1 - *t0);
		*t0 = t1;
		c->s.batch_ran = flushes_pipeline(r) ? 0 : c->s.batch_ran + 1;
		return;
	case DECODE_REJECT:
		if (!r->noreply)
			ops->status(&c->s, r, r->status, r->message);
		c->swallow = r->swallow;
		c->s.batch_ran++;
		return;
	case DECODE_TOO_LARGE:
		cmd_too_large(&c->s, r);
		c->swallow = r->swallow;
		c->s.batch_ran++;
		return;
	case DECODE_CLOSE:
		if (r->status != REPLY_NONE)
			ops->status(&c->s, r, r->status, r->message);
		c->s.close_when_done = true;
		return;
	case DECODE_NEED_MORE:
	case DECODE_NEED_VALUE: /* the batch loop stops before it */
		return;
	}
}

static bool conn_write(struct conn *c);

/*
 * Executes the complete requests in rbuf; returns the bytes used. Each
 * request's time runs from the end of the previous one (or the start of
 * the pass) to the end of its execution: decoding included, one clock
 * read per request.
 */
static size_t run_batch(struct conn *c)
{
	const struct protocol *p = c->proto;
	size_t hwm = c->w->net->cfg->output_hwm;
	struct request req[2];
	enum decode_status st[2];
	unsigned int cur = 0;
	bool ahead = false;
	uint64_t t0 = latency_now_ns();
	size_t off = 0;

	c->s.batch_ran = 0;
	while (off < c->rlen && !c->s.close_when_done && !c->s.broken &&
	       !c->watch && !c->s.dumping && !held(c, hwm)) {
		const char *buf = c->rbuf + off;
		size_t n = c->rlen - off;
		struct request *r = &req[cur], *next = &req[cur ^ 1];

		if (c->swallow) {
			size_t k = c->swallow < n ? (size_t)c->swallow : n;

			off += k;
			c->swallow -= k;
			ahead = false;
			continue;
		}
		if (!ahead)
			st[cur] = p->decode(&c->s, buf, n, cur, r);
		else if (st[cur] == DECODE_OK && r->key.n)
			/* Its bucket has arrived while the last one ran: the
			 * item now, while the next request is decoded. */
			exec_prefetch_item(&c->s, r);
		ahead = false;
		if (st[cur] == DECODE_NEED_MORE)
			break;
		if (st[cur] == DECODE_NEED_VALUE) {
			c->land_next = true; /* process() lands it */
			break;
		}
		/*
		 * Pipelined batches: the request after this one is decoded
		 * now and its bucket prefetched, so that its lookup does not
		 * stall on memory while this one executes. Never past an
		 * auth, which changes the limits the next one is held to,
		 * nor past a value still to be discarded.
		 */
		if (st[cur] == DECODE_OK && r->cmd != REQ_AUTH &&
		    r->cmd != REQ_AUTH_SET && r->len < n) {
			st[cur ^ 1] = p->decode(&c->s, buf + r->len, n - r->len,
						cur ^ 1, next);
			ahead = true;
			if (st[cur ^ 1] == DECODE_OK && next->key.n)
				exec_prefetch(&c->s, next);
		}
		dispatch(c, st[cur], r, &t0);
		if (c->transport->write_per_request && !conn_write(c))
			c->s.broken = true;
		off += r->len;
		cur ^= 1;
	}
	/* Stopped by backpressure with requests left: a yield. */
	if (off < c->rlen && !c->s.close_when_done && !c->s.broken &&
	    pending(c) >= hwm)
		STAT_INC(&c->w->obs->stats, conn_yields);
	if (p->flush)
		p->flush(&c->s);
	return off;
}

/* The first byte tells the protocol: a msgpack frame's length starts with
 * 0x00, a memcached binary request with its magic 0x80; no text command
 * starts with either. -B narrows memcached's two as memcached does: with
 * ascii every other byte is text (a binary request gets text's errors),
 * with binary anything else closes the connection. */
static bool choose_protocol(struct conn *c)
{
	unsigned char b = (unsigned char)c->rbuf[0];
	int only = c->w->net->cfg->protocol;

	c->proto = b == 0		  ? &protocol_binary
		   : b == MCBIN_MAGIC_REQ ? &protocol_mcbin
					  : &protocol_text;
	if (only == CONFIG_PROTO_ASCII && c->proto == &protocol_mcbin)
		c->proto = &protocol_text;
	if (only == CONFIG_PROTO_BINARY && c->proto == &protocol_text)
		return false;
	c->s.reply = &c->proto->reply;
	return !c->proto->open || c->proto->open(&c->s) == 0;
}

/* ---- large values: landing (see struct landing) ---- */

/* Consumes the landed request's header and ending from rbuf. */
static void land_consume(struct conn *c)
{
	size_t n = c->land->hdr + c->land->tail;

	memmove(c->rbuf, c->rbuf + n, c->rlen - n);
	c->rlen -= n;
	c->land->it = NULL;
	conn_touch(c); /* a whole request arrived */
}

/* Begins landing the request at rbuf[0], which its decoder answered
 * DECODE_NEED_VALUE. */
static void land_start(struct conn *c)
{
	struct landing *l = c->land;
	struct request *r;
	size_t have, n;

	if (!l && !(l = c->land = calloc(1, sizeof(*l)))) {
		c->s.broken = true;
		return;
	}
	r = &l->req;
	if (c->proto->decode(&c->s, c->rbuf, c->rlen, 0, r) !=
	    DECODE_NEED_VALUE)
		return; /* the same bytes decode alike: cannot happen */
	l->hdr = (size_t)(r->value - c->rbuf);
	l->tail = (uint32_t)(r->len - l->hdr - r->nbytes);
	l->it = exec_landing_new(&c->s, r);
	if (!l->it) {
		/* It cannot fit even in an empty cache: refused as the store
		 * would be, and the value discarded as it arrives. */
		STAT_INC(&c->w->obs->stats, store_no_memory);
		if (!r->noreply)
			c->proto->reply.status(&c->s, r, REPLY_NO_MEMORY,
					       "out of memory storing object");
		memmove(c->rbuf, c->rbuf + l->hdr, c->rlen - l->hdr);
		c->rlen -= l->hdr;
		c->swallow = (uint64_t)r->nbytes + l->tail;
		return;
	}
	l->dst = exec_landing_value(l->it);
	/* What of the value came with the header moves into the item; the
	 * rest of rbuf (at most the start of value_end) follows the header. */
	have = c->rlen - l->hdr;
	n = have < r->nbytes ? have : r->nbytes;
	memcpy(l->dst, c->rbuf + l->hdr, n);
	memmove(c->rbuf + l->hdr, c->rbuf + l->hdr + n, have - n);
	c->rlen -= n;
	l->got = (uint32_t)n;
}

/* Runs the landed request once its value and ending are all here; false
 * while they are not. */
static bool land_finish(struct conn *c)
{
	struct landing *l = c->land;
	struct request r;
	uint64_t t0;

	/* Called at every wakeup while the value arrives: the request is
	 * copied only once it can run. */
	if (l->got < l->req.nbytes || c->rlen < l->hdr + l->tail)
		return false;
	r = l->req;
	if (l->tail && memcmp(c->rbuf + l->hdr, r.value_end, l->tail) != 0) {
		/* Not the ending the protocol wants: refused, as a request
		 * that arrived whole would be. */
		exec_landing_free(&c->s, l->it);
		if (!r.noreply)
			c->proto->reply.status(&c->s, &r, r.status, r.message);
		land_consume(c);
		return true;
	}
	r.value = l->dst;
	r.landed = &l->it;
	t0 = latency_now_ns();
	dispatch(c, DECODE_OK, &r, &t0);
	if (l->it) /* not taken (refused before the store) */
		exec_landing_free(&c->s, l->it);
	land_consume(c);
	return true;
}

/*
 * One read of at most space bytes into dst: how many came, 0 when none did
 * (the peer's EOF, recorded in peer_eof, or the transport waits, recorded
 * in read_wants_write when it waits to write), -1 when the connection
 * must close. Bytes alone do not count as activity (last_active): a client
 * trickling a request that never completes is idle (slowloris).
 */
static ssize_t read_some(struct conn *c, char *dst, size_t space)
{
	ssize_t n = c->transport->read(c, dst, space);

	if (n == 0) {
		/* The peer closed its side (or half-closed): no more input,
		 * but the requests already here are answered in full. */
		c->peer_eof = true;
		return 0;
	}
	if (n == TRANSPORT_WANT_WRITE)
		c->read_wants_write = true;
	if (n < 0)
		return n == TRANSPORT_ERROR ? -1 : 0;
	STAT_ADD(&c->w->obs->stats, bytes_read, (unsigned long)n);
	return n;
}

/* Reads value bytes into the landing item: as many as are missing, so one
 * read takes all the socket has of it. Returns as conn_read. */
static bool land_read(struct conn *c)
{
	struct landing *l = c->land;
	ssize_t n = read_some(c, l->dst + l->got, l->req.nbytes - l->got);

	if (n < 0)
		return false;
	l->got += (uint32_t)n;
	return true;
}

/* ---- reading and processing ---- */

/* Whether the input needs no more room for its first request: none there,
 * or all of it (a landing value needs none: it goes to its item). */
static bool first_request_whole(struct conn *c)
{
	struct request r;

	if (!c->rlen || c->swallow || landing(c) || c->land_next)
		return true;
	/* Decoding again is how land_start works too: slot 0 is free once
	 * the batch has ended. */
	return c->proto->decode(&c->s, c->rbuf, c->rlen, 0, &r) !=
	       DECODE_NEED_MORE;
}

/* Executes every complete request in rbuf and keeps the rest. */
static void process(struct conn *c)
{
	size_t off;

	if (c->watch)
		c->rlen = 0; /* a watcher's input is ignored */
	if (c->s.dumping) {
		cmd_continue(&c->s);
		if (c->s.dumping)
			return; /* the next requests wait for its END */
	}
	if (!c->rlen)
		return;
	if (!c->proto && !choose_protocol(c)) {
		c->s.broken = true;
		return;
	}
	if (landing(c) && !land_finish(c))
		return; /* the value is still arriving */
	off = run_batch(c);
	if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
		conn_touch(c); /* a whole request arrived */
	}
	if (c->budget_over && first_request_whole(c))
		/* What it grew past the limit for has all arrived: the next
		 * waiter's turn, whenever this one's replies drain. */
		conn_budget_release(&c->w->net->budget, c);
	if (c->land_next) {
		c->land_next = false;
		if (!c->s.broken && !c->s.close_when_done)
			land_start(c);
	}
}

/* Before auth the decoders hold every request to CONN_PREAUTH_LIMIT (a
 * text line, a frame, a value kept; larger values are discarded as they
 * arrive): the initial input buffer holds any of them, and never grows. */
_Static_assert(RBUF_INITIAL >= 2 * CONN_PREAUTH_LIMIT + PROTO_LINE_MAX,
	       "the initial input buffer must hold any request before auth");

/* Most a request can need in the input buffer: the text protocol's
 * longest line, one byte more to see that it is too long, and a value (a
 * binary frame needs less). */
static size_t rbuf_limit(const struct conn *c)
{
	const struct config *cfg = c->w->net->cfg;

	if (!c->s.authed)
		return RBUF_INITIAL;
	return text_get_line_max(cfg) + 1 + (size_t)cfg->max_item_size + 2;
}

/*
 * Makes room to read; false when the connection must close now. When other
 * connections hold the --conn-memory this needs, the connection waits for
 * it (budget_wait: reads nothing until its transport's wake) and this
 * returns true with no room made. A request that alone needs more input
 * buffer than all of --conn-memory is refused: an error is queued and
 * close_when_done set.
 */
static bool grow_rbuf(struct conn *c)
{
	size_t limit = rbuf_limit(c), budget = c->w->net->cfg->conn_memory;
	size_t cap = c->rcap * 2;
	bool was_waiting;
	char *p;

	/* Never smaller than it is: the room to read is rcap - rlen. */
	if (c->rcap >= limit) {
		/* The decoders bound requests below the limit, so only input
		 * they have not refused yet gets here: closed, never read. */
		log_info("closing connection %d: a request larger than its "
			 "input buffer may grow (%zu bytes)",
			 c->fd, limit);
		return false;
	}
	if (cap > limit)
		cap = limit;
	if (cap > budget)
		cap = budget > c->rcap ? budget : c->rcap;
	if (cap == c->rcap) {
		/* Its bytes are dropped, the error sent, and the connection
		 * closes as after a quit (what the client still sends is read
		 * and discarded, so the error is not lost to a reset). */
		log_info("closing connection %d: a request larger than "
			 "--conn-memory",
			 c->fd);
		session_add(&c->s,
			    "SERVER_ERROR out of memory reading request\r\n",
			    44);
		c->s.close_when_done = true;
		c->rlen = 0;
		return true;
	}
	was_waiting = c->budget_wait;
	if (!conn_budget_take(&c->w->net->budget, c, cap - c->rcap)) {
		if (!was_waiting)
			STAT_INC(&c->w->obs->stats, conn_memory_waits);
		return true; /* woken once the room is there */
	}
	if (c->budget_over)
		c->over_since = clock_now_s();
	p = realloc(c->rbuf, cap);
	if (!p)
		return false; /* the room taken goes back at the close */
	c->rbuf = p;
	c->rcap = cap;
	/* Counted now (the room is already in `accounted`): a wakeup may
	 * grow it again before it ends. */
	account(c, buffer_bytes(c));
	return true;
}

/* Reads once (a landing value, then what follows it); returns false when
 * the connection must close now. */
static bool conn_read(struct conn *c)
{
	size_t space;
	ssize_t n;

	c->read_wants_write = false;
	c->read_full = false;
	if (landing(c) && c->land->got < c->land->req.nbytes) {
		if (!land_read(c))
			return false;
		if (c->peer_eof || c->read_wants_write ||
		    c->land->got < c->land->req.nbytes)
			return true;
		/* The value is whole: read its ending (and what follows) now,
		 * not at the next wakeup. */
	}
	if (landing(c)) {
		/* rbuf holds the header: never moved while landing. When it is
		 * full, what is there is enough to finish the request. */
		if (c->rlen == c->rcap)
			return true;
	} else if (c->rlen == c->rcap) {
		if (!grow_rbuf(c))
			return false;
		if (c->s.close_when_done || c->budget_wait)
			return true; /* refused, or waiting for room */
	} else if (c->budget_wait) {
		/* Requests ran while it waited and made room: the room it
		 * waited for (reserved, if woken) is not needed now. */
		budget_cancel(c);
	}
	space = c->rcap - c->rlen;
	n = read_some(c, c->rbuf + c->rlen, space);
	if (n < 0)
		return false;
	if (n > 0 && c->budget_over)
		c->over_since = clock_now_s();
	c->rlen += (size_t)n;
	c->read_full = (size_t)n == space;
	return true;
}

/* Writes what it can; returns false on a broken connection. */
static bool conn_write(struct conn *c)
{
	ssize_t n;

	if (!evbuffer_get_length(c->s.out))
		return true;
	n = c->transport->write(c, c->s.out);
	if (n == TRANSPORT_ERROR)
		return false;
	if (n > 0) {
		STAT_ADD(&c->w->obs->stats, bytes_written, (unsigned long)n);
		conn_touch(c);
		c->stalled_since = 0;
	}
	return true;
}

/* Tells the transport what the connection now waits for. */
static void update_events(struct conn *c)
{
	size_t out = evbuffer_get_length(c->s.out);
	/* Past --conn-memory, connections with replies pending (past the
	 * floor, as held()) wait for them to drain before they read more;
	 * one waiting for room to read reads nothing until its wake. */
	bool want_read = !c->s.close_when_done && !c->peer_eof &&
			 !c->budget_wait && out < c->w->net->cfg->output_hwm &&
			 !(out > OUTPUT_FLOOR && conn_memory_full(c));

	if (!out)
		c->stalled_since = 0;
	else if (!c->stalled_since)
		c->stalled_since = clock_now_s();
	if (!want_read && c->budget_over)
		/* It reads nothing until its client has read replies: the
		 * overdraft goes to the next waiter meanwhile (it waits in
		 * the queue again if it still needs room). */
		conn_budget_release(&c->w->net->budget, c);
	c->transport->wait(c, want_read && !c->read_wants_write,
			   out || (want_read && c->read_wants_write));
}

/*
 * Ends a connection whose replies have all been written. A plain close
 * with unread input makes the kernel send a reset, which throws away the
 * replies still in the socket's send queue: so first shut down our side
 * (the peer reads every reply, then EOF), discard what the peer still
 * sends, and close on its EOF or after LINGER_S. Returns false once closed.
 */
static bool conn_finish(struct conn *c)
{
	budget_cancel(c);
	if (c->peer_eof || !c->transport->shutdown(c)) {
		conn_close(c);
		return false;
	}
	c->lingering = true;
	atomic_store_explicit(&c->state, CONN_CLOSING, memory_order_relaxed);
	c->linger_since = clock_now_s();
	c->rlen = 0;
	c->transport->wait(c, true, false);
	return true;
}

/* A lingering connection: discards input until the peer's EOF. */
static bool conn_drain_input(struct conn *c)
{
	char sink[4096];
	ssize_t n;

	while ((n = c->transport->read(c, sink, sizeof(sink))) > 0)
		;
	if (n == TRANSPORT_WANT_READ || n == TRANSPORT_WANT_WRITE)
		return true;
	conn_close(c);
	return false;
}

bool conn_ready(struct conn *c, bool readable, bool writable)
{
	unsigned int reads = 1;

	if (c->lingering)
		return conn_drain_input(c);
	if ((readable || (writable && c->read_wants_write)) && !conn_read(c)) {
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
		size_t before = c->rlen, unsent;
		bool dumped = c->s.dumping, wrote;

		process(c);
		unsent = evbuffer_get_length(c->s.out);
		if (c->s.broken || !conn_write(c)) {
			conn_close(c);
			return false;
		}
		wrote = evbuffer_get_length(c->s.out) < unsent;
		/* The last read filled its space: read on now rather than at
		 * the next wakeup (a value bigger than the buffer, a deep
		 * pipeline), unless backpressure holds the input. */
		if (c->read_full && reads < READS_PER_WAKEUP &&
		    !c->s.close_when_done && !c->peer_eof && !c->watch &&
		    evbuffer_get_length(c->s.out) <
			    c->w->net->cfg->output_hwm) {
			reads++;
			if (!conn_read(c)) {
				conn_close(c);
				return false;
			}
			continue;
		}
		/* A dump goes on as long as its output drains; once it ends,
		 * the requests that waited for it run. Requests held for the
		 * output (held()) run once a write has made room: no event
		 * may come for them otherwise. */
		if (c->s.close_when_done ||
		    evbuffer_get_length(c->s.out) >=
			    c->w->net->cfg->output_hwm ||
		    (!dumped && (!c->rlen || (c->rlen == before && !wrote))))
			break;
	}
	/* Closing waits for the output to drain; after the peer's EOF, what
	 * is left in the input is an incomplete request (or none). */
	if ((c->s.close_when_done || c->peer_eof) &&
	    !evbuffer_get_length(c->s.out))
		return conn_finish(c);
	if (c->budget_wait &&
	    (c->rlen < c->rcap || c->s.close_when_done || c->peer_eof))
		budget_cancel(c); /* room made by its own requests, or done */
	account(c, buffer_bytes(c));
	update_events(c);
	publish_state(c);
	return true;
}

bool conn_wake(struct conn *c)
{
	/* A wake asked just before budget_cancel ran is not taken back:
	 * reading now could read while update_events has turned it off. */
	if (!c->budget_wait)
		return true;
	return conn_ready(c, true, false);
}

void conn_shutdown(struct conn *c)
{
	if (c->lingering)
		return;
	c->s.close_when_done = true;
	budget_cancel(c);
	if (!evbuffer_get_length(c->s.out)) {
		conn_finish(c);
		return;
	}
	update_events(c);
}

/* A buffer grown for a big request goes back to its initial size once the
 * connection is idle: at a tick, not after every request, so that a client
 * sending such requests one after another does not regrow it each time. */
static void shrink_rbuf(struct conn *c)
{
	char *p;

	if (c->rcap <= RBUF_INITIAL || c->rlen > RBUF_INITIAL / 2 || landing(c))
		return;
	p = realloc(c->rbuf, RBUF_INITIAL);
	if (p) {
		c->rbuf = p;
		c->rcap = RBUF_INITIAL;
		account(c, buffer_bytes(c));
	}
}

/*
 * The overdraft's holder has received nothing for OVERDRAFT_IDLE_S while
 * others wait. It passes the overdraft on and keeps what it took, so each
 * such hand-off leaves memory past the limit; once that is past twice the
 * limit, the stalled request is refused instead (its buffer freed, the
 * error sent, the connection closed as after a quit), which is what lets
 * the others through.
 */
static void overdraft_stalled(struct conn *c)
{
	struct conn_budget *b = &c->w->net->budget;

	if (!conn_budget_far_over(b)) {
		log_debug("connection %d: no bytes for %d s, the "
			  "--conn-memory overdraft passes on",
			  c->fd, OVERDRAFT_IDLE_S);
		conn_budget_release(b, c);
		return;
	}
	log_info("closing connection %d: a request stalled past "
		 "--conn-memory",
		 c->fd);
	session_add(&c->s, "SERVER_ERROR out of memory reading request\r\n",
		    44);
	c->rlen = 0;
	c->swallow = 0;
	c->s.text_no_newline = 0;
	shrink_rbuf(c);
	conn_shutdown(c);
}

void conn_tick(struct conn *c, int64_t now)
{
	const struct config *cfg = c->w->net->cfg;

	if (c->lingering) {
		if (now - c->linger_since >= LINGER_S)
			conn_close(c);
		return;
	}
	/* A TLS handshake has its own timeout, before any idle one. */
	if (c->transport->expired && c->transport->expired(c, now)) {
		conn_close(c);
		return;
	}
	if (c->stalled_since && now - c->stalled_since >= cfg->stall_timeout) {
		log_info("closing connection %d: output stalled %d s", c->fd,
			 cfg->stall_timeout);
		conn_close(c);
		return;
	}
	if (c->budget_over && now - c->over_since >= OVERDRAFT_IDLE_S &&
	    conn_budget_waiting(&c->w->net->budget)) {
		overdraft_stalled(c);
		return;
	}
	if (c->budget_wait) {
		/* Waiting for --conn-memory is the server's doing, not the
		 * client's: not idle, and the idle clock starts again when
		 * the wait ends. */
		atomic_store_explicit(&c->last_active, now,
				      memory_order_relaxed);
		return;
	}
	if (cfg->idle_timeout && !c->transport->never_idle &&
	    now - atomic_load_explicit(&c->last_active, memory_order_relaxed) >=
		    cfg->idle_timeout) {
		log_debug("closing idle connection %d", c->fd);
		STAT_INC(&c->w->obs->stats, idle_kicks);
		conn_close(c);
		return;
	}
	if (now - atomic_load_explicit(&c->last_active, memory_order_relaxed) >=
	    1)
		shrink_rbuf(c);
}
