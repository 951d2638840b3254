/*
 * The event hooks' contract and a handle's life inside callbacks: a
 * timeout lowered on a live handle reaches the loop's timer (the libevent
 * adapter, and a loop written here on the hooks alone) while commands
 * wait on a server that never answers; a handle closed from inside its
 * own reply callback, timeout callback, or a callback run by a blocking
 * call is freed once that call returns, or by the streaming pipeline that
 * ran it when that is freed (ASan checks every access).
 */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <rhkv_libevent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

static struct srv srv;
static struct event_base *base;
static rhkv *c;
static int silent = -1;

static void teardown(void)
{
	rhkv_close(c); /* before the base: the adapter's events are its */
	c = NULL;
	if (base)
		event_base_free(base);
	base = NULL;
	if (silent >= 0)
		close(silent);
	silent = -1;
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
}

TestSuite(hooks, .fini = teardown, .timeout = 60);

/* A server that never answers: a listening socket nobody accepts from
 * (the kernel completes the connect, the requests sit in its buffer).
 * Its port. */
static int silent_server(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(silent, 0);
	cr_assert_eq(bind(silent, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(silent, 16), 0);
	cr_assert_eq(getsockname(silent, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

static rhkv *handle(int port, int io_timeout_ms)
{
	struct rhkv_options o;
	rhkv *h;

	rhkv_options_init(&o);
	o.io_timeout_ms = io_timeout_ms;
	cr_assert_eq(rhkv_new(&h, "127.0.0.1", port, &o), 0);
	return h;
}

/* What the callbacks saw. */
struct seen {
	int n;
	int status[8];
	int send_after; /* close_on_first: rhkv_send() on the closed handle */
	long long at;	/* when the first came */
	int close_on_first;
	int blocking; /* call_blocking: the blocking call's result */
};

static void on_result(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct seen *s = arg;
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };

	if (s->n == 0)
		s->at = h_now_ms();
	s->status[s->n++] = r->status;
	if (s->n == 1 && s->close_on_first) {
		rhkv_close(h);
		c = NULL; /* freed once the call that runs us returns */
		if (base)
			event_base_loopbreak(base);
	} else if (s->close_on_first) {
		/* a later command's callback, after the close: nothing new */
		s->send_after = rhkv_send(h, &get, NULL, NULL);
	}
	if (s->n == 1 && base && !s->close_on_first)
		event_base_loopbreak(base);
}

static void on_limit(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

/* Runs the loop until a callback breaks it or limit_ms pass. */
static void dispatch(int limit_ms)
{
	struct timeval tv = { limit_ms / 1000, (limit_ms % 1000) * 1000 };
	struct event *limit = evtimer_new(base, on_limit, base);

	evtimer_add(limit, &tv);
	event_base_dispatch(base);
	event_free(limit);
}

/* ---- a lowered timeout reaches the loop ---- */

enum { OLD_MS = 4000, NEW_MS = 400 };

Test(hooks, libevent_timer_follows_a_lowered_timeout)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct seen s = { 0 };
	long long t0;

	base = event_base_new();
	c = handle(silent_server(), OLD_MS);
	cr_assert_eq(rhkv_libevent_attach(c, base), 0);
	cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	/* connected and sent: the commands wait with the old deadline */
	while (rhkv_wants(c) != RHKV_WANT_READ)
		cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
	t0 = h_now_ms();
	OK(rhkv_set_timeouts(c, -1, NEW_MS));
	dispatch(3 * OLD_MS);
	cr_assert_eq(s.n, 2, "the callbacks ran %d times", s.n);
	cr_assert_eq(s.status[0], RHKV_ETIMEDOUT);
	cr_assert_eq(s.status[1], RHKV_ETIMEDOUT);
	cr_assert_lt(s.at - t0, OLD_MS / 2,
		     "failed after %lld ms: the loop kept the old deadline",
		     s.at - t0);
}

/*
 * A loop of its own on the hooks alone: it watches what update() said and
 * keeps one timer, armed from rhkv_timeout_ms() at each update and from
 * rhkv_on_timer()'s answer, as the contract in rhkv.h asks.
 */
struct loop {
	rhkv *c;
	int fd, wants;
	long long timer_at; /* -1: none */
	int updates, cleanups;
};

static void loop_update(void *data, int fd, int wants)
{
	struct loop *l = data;
	int ms = rhkv_timeout_ms(l->c);

	l->fd = fd;
	l->wants = wants;
	l->updates++;
	if (wants && ms >= 0)
		l->timer_at = h_now_ms() + ms;
}

static void loop_cleanup(void *data)
{
	((struct loop *)data)->cleanups++;
}

/* One pass: wait for the socket or the timer (at most max_ms). */
static void loop_once(struct loop *l, int max_ms)
{
	struct pollfd p = { .fd = l->wants ? l->fd : -1 };
	long long now = h_now_ms();
	int ms = max_ms;

	if (l->wants & RHKV_WANT_READ)
		p.events |= POLLIN;
	if (l->wants & RHKV_WANT_WRITE)
		p.events |= POLLOUT;
	if (l->timer_at >= 0 && l->timer_at - now < ms)
		ms = l->timer_at > now ? (int)(l->timer_at - now) : 0;
	if (poll(&p, 1, ms) > 0) {
		if (p.revents & (POLLIN | POLLERR | POLLHUP))
			rhkv_on_readable(l->c);
		else if (p.revents & POLLOUT)
			rhkv_on_writable(l->c);
	}
	if (l->timer_at >= 0 && h_now_ms() >= l->timer_at) {
		int next = rhkv_on_timer(l->c);

		l->timer_at = next < 0 ? -1 : h_now_ms() + next;
	}
}

Test(hooks, own_loop_timer_follows_a_lowered_timeout)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct loop l = { .fd = -1, .timer_at = -1 };
	struct rhkv_event_hooks h = { .data = &l,
				      .update = loop_update,
				      .cleanup = loop_cleanup };
	struct seen s = { 0 };
	long long t0, give_up;

	c = l.c = handle(silent_server(), OLD_MS);
	rhkv_set_event_hooks(c, &h);
	cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	give_up = h_now_ms() + 3 * OLD_MS;
	while (l.wants != RHKV_WANT_READ && h_now_ms() < give_up)
		loop_once(&l, 100);
	cr_assert_eq(l.wants, RHKV_WANT_READ, "connected and sent");
	cr_assert_geq(l.timer_at - h_now_ms(), OLD_MS / 2,
		      "the old deadline is armed");
	t0 = h_now_ms();
	OK(rhkv_set_timeouts(c, -1, NEW_MS));
	while (s.n == 0 && h_now_ms() < give_up)
		loop_once(&l, 100);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.status[0], RHKV_ETIMEDOUT);
	cr_assert_lt(s.at - t0, OLD_MS / 2,
		     "failed after %lld ms: the loop kept the old deadline",
		     s.at - t0);
	/* a raised timeout needs no word: the timer fires early and
	 * rhkv_on_timer() gives the later deadline */
	OK(rhkv_set_timeouts(c, -1, OLD_MS));
	rhkv_close(c);
	c = NULL;
	cr_assert_eq(l.cleanups, 1);
}

/* ---- closing a handle from inside its callbacks ---- */

/* From the reply callback of the first of three commands: the other two
 * fail with RHKV_ECONN, each once, and may send nothing more. */
Test(hooks, close_from_a_reply_callback_on_libevent)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct seen s = { .close_on_first = 1, .send_after = 1 };

	cr_assert_eq(srv_start(&srv, NULL), 0);
	base = event_base_new();
	c = handle(srv.port, 5000);
	cr_assert_eq(rhkv_libevent_attach(c, base), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	dispatch(20000);
	cr_assert_null(c, "the callback ran");
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.status[0], RHKV_ENOTFOUND);
	cr_assert_eq(s.status[1], RHKV_ECONN);
	cr_assert_eq(s.status[2], RHKV_ECONN);
	cr_assert_eq(s.send_after, RHKV_ECONN);
	/* the loop has nothing of the handle left: it returns at once */
	cr_assert_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1);
}

/* From the timeout callback, the libevent adapter's timer running it. */
Test(hooks, close_from_a_timeout_callback_on_libevent)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct seen s = { .close_on_first = 1, .send_after = 1 };

	base = event_base_new();
	c = handle(silent_server(), 200);
	cr_assert_eq(rhkv_libevent_attach(c, base), 0);
	cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	cr_assert_eq(rhkv_send(c, &get, on_result, &s), 0);
	dispatch(20000);
	cr_assert_null(c, "the callback ran");
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.status[0], RHKV_ETIMEDOUT);
	cr_assert_eq(s.status[1], RHKV_ETIMEDOUT);
	cr_assert_eq(s.send_after, RHKV_ECONN);
}

/* From the timeout callback run by rhkv_poll(): freed when it returns. */
Test(hooks, close_from_a_timeout_callback_in_rhkv_poll)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct seen s = { .close_on_first = 1, .send_after = 1 };
	long long give_up = h_now_ms() + 20000;
	rhkv *h;

	h = c = handle(silent_server(), 200);
	cr_assert_eq(rhkv_send(h, &get, on_result, &s), 0);
	cr_assert_eq(rhkv_send(h, &get, on_result, &s), 0);
	while (c && h_now_ms() < give_up)
		cr_assert_geq(rhkv_poll(&h, 1, 100), 0);
	cr_assert_null(c, "the callback ran");
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.status[0], RHKV_ETIMEDOUT);
	cr_assert_eq(s.status[1], RHKV_ETIMEDOUT);
	cr_assert_eq(s.send_after, RHKV_ECONN);
}

/* From a callback that a blocking call on the same handle runs (it
 * completes the commands queued before it): the blocking call fails and
 * the handle is freed as it returns. */
Test(hooks, close_from_a_callback_run_by_a_blocking_call)
{
	struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = "k", .klen = 1 };
	struct seen s = { .close_on_first = 1, .send_after = 1 };
	rhkv *h;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	h = c = cl_connect(srv.port, 5000);
	cr_assert_eq(rhkv_send(h, &get, on_result, &s), 0);
	cr_assert_eq(rhkv_send(h, &get, on_result, &s), 0);
	cr_assert_eq(rhkv_ping(h), RHKV_ECONN);
	cr_assert_null(c, "the callback ran");
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.status[0], RHKV_ENOTFOUND);
	cr_assert_eq(s.status[1], RHKV_ECONN);
}

/* From a streaming pipeline's callback: the pipeline keeps the handle
 * until rhkv_pipeline_free(), its later calls failing. */
Test(hooks, close_from_a_streaming_pipeline_callback)
{
	struct seen s = { .close_on_first = 1, .send_after = 1 };
	rhkv_pipeline *p;
	rhkv *h;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	h = c = cl_connect(srv.port, 5000);
	p = rhkv_pipeline_stream(h, on_result, &s);
	cr_assert_not_null(p);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rhkv_pipeline_get(p, "k", 1), i);
	cr_assert_eq(rhkv_pipeline_exec(p), RHKV_ECONN);
	cr_assert_null(c, "the callback ran");
	cr_assert_lt(rhkv_pipeline_get(p, "k", 1), 0);
	rhkv_pipeline_free(p);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.status[0], RHKV_ENOTFOUND);
	cr_assert_eq(s.status[1], RHKV_ECONN);
	cr_assert_eq(s.status[2], RHKV_ECONN);
}
