/*
 * The connection state machine over the in-memory transport
 * (conn_new_memory / conn_memory_feed): the same parsing, both protocols,
 * auth and limits as over a socket, with no socket and no event loop, so
 * that requests split anywhere give the same replies as whole ones, a
 * quit or a fatal frame closes, and a peer's EOF closes; a connection
 * waiting for --conn-memory is not idle. Also what the
 * connection fuzz target (tests/fuzz/fuzz_conn.c) builds on.
 */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "server/exec/auth.h"
#include "server/net/conn.h"
#include "server/net/transport.h"
#include "socketless.h"

static struct server srv;
static struct worker w;
static struct evbuffer *replies;

static void setup(void)
{
	socketless_open(&srv, &w, &replies);
}

static void teardown(void)
{
	socketless_close(&srv, &w, &replies);
}

TestSuite(conn_memory, .init = setup, .fini = teardown, .timeout = 60);

/* The replies so far, as a string (then emptied). */
static char *take(void)
{
	static char buf[65536];
	size_t n = evbuffer_get_length(replies);

	cr_assert_lt(n, sizeof(buf));
	evbuffer_remove(replies, buf, n);
	buf[n] = '\0';
	return buf;
}

static const char script[] = "set a 0 0 5\r\nhello\r\n"
			     "get a b\r\n"
			     "incr n 1\r\n"
			     "set n 0 0 1\r\n7\r\n"
			     "incr n 5\r\n"
			     "delete a\r\n"
			     "get a\r\n";
static const char answers[] = "STORED\r\n"
			      "VALUE a 0 5\r\nhello\r\nEND\r\n"
			      "NOT_FOUND\r\n"
			      "STORED\r\n"
			      "12\r\n"
			      "DELETED\r\n"
			      "END\r\n";

Test(conn_memory, whole_and_split_give_the_same_replies)
{
	struct conn *c = conn_new_memory(&w);

	cr_assert_not_null(c);
	cr_assert(conn_memory_feed(c, script, sizeof(script) - 1, false,
				   replies));
	cr_assert_str_eq(take(), answers);
	/* Byte by byte, on a new connection, with a clean slate. */
	cr_assert(conn_memory_feed(c, "flush_all\r\n", 11, false, replies));
	cr_assert_str_eq(take(), "OK\r\n");
	for (size_t i = 0; i < sizeof(script) - 1; i++)
		cr_assert(conn_memory_feed(c, script + i, 1, false, replies));
	cr_assert_str_eq(take(), answers);
}

Test(conn_memory, quit_and_eof_close)
{
	struct conn *c = conn_new_memory(&w);

	cr_assert_eq(conn_memory_feed(c, "version\r\nquit\r\nget a\r\n", 22,
				      false, replies),
		     false, "open after quit");
	cr_assert_str_eq(take(), "VERSION " RHKV_VERSION "\r\n");
	cr_assert_eq(w.nconns, 0);
	c = conn_new_memory(&w);
	cr_assert(conn_memory_feed(c, "get a", 5, false, replies));
	cr_assert_eq(conn_memory_feed(c, NULL, 0, true, replies), false,
		     "open after EOF");
	cr_assert_eq(atomic_load(&srv.obs.curr_conns), 0);
}

Test(conn_memory, binary_frames_and_a_fatal_one)
{
	/* [19, 5]: NOOP id 5 -> [5, 0, nil]; then a nil body: no id. */
	static const char in[] = "\0\0\0\x03\x92\x13\x05"
				 "\0\0\0\x01\xc0";
	struct conn *c = conn_new_memory(&w);
	char *out;

	cr_assert_eq(conn_memory_feed(c, in, sizeof(in) - 1, false, replies),
		     false, "open after a frame without an id");
	cr_assert_eq(evbuffer_get_length(replies), 8, "%zu bytes of replies",
		     evbuffer_get_length(replies));
	out = take();
	cr_assert_eq(memcmp(out, "\0\0\0\x04\x93\x05\x00\xc0", 8), 0,
		     "%02x %02x %02x %02x %02x %02x %02x %02x",
		     (unsigned char)out[0], (unsigned char)out[1],
		     (unsigned char)out[2], (unsigned char)out[3],
		     (unsigned char)out[4], (unsigned char)out[5],
		     (unsigned char)out[6], (unsigned char)out[7]);
}

Test(conn_memory, password_gates_commands)
{
	struct conn *c;

	socketless_auth(&srv, "pw\n");
	c = conn_new_memory(&w);
	cr_assert(conn_memory_feed(c, "get a\r\nauth pw\r\nget a\r\n", 23,
				   false, replies));
	cr_assert_str_eq(take(), "CLIENT_ERROR authentication required\r\n"
				 "OK\r\nEND\r\n");
	conn_close(c);
	auth_destroy(&srv.auth);
}

/* A get line of n bytes of keys that are not there, without its "\r\n". */
static char *missing_keys(size_t n)
{
	char *p = malloc(n);

	cr_assert_not_null(p);
	memcpy(p, "get", 3);
	for (size_t i = 3; i < n; i++)
		p[i] = i % 6 == 3 ? ' ' : 'k';
	p[n - 1] = 'k';
	return p;
}

/*
 * A connection waiting for --conn-memory is not idle: the server makes it
 * wait. At a tick long past --idle-timeout it stays open, and once the
 * room comes back its request is answered.
 */
Test(conn_memory, waiting_for_conn_memory_is_not_idle)
{
	struct conn *a, *b;
	char *line = missing_keys(20000);

	conn_budget_destroy(&srv.net.budget);
	srv.cfg.conn_memory = 40000;
	srv.cfg.idle_timeout = 10;
	conn_budget_init(&srv.net.budget, srv.cfg.conn_memory);
	a = conn_new_memory(&w);
	b = conn_new_memory(&w);
	/* a's line outgrows the initial buffer and the budget: a holds the
	 * overdraft; b's needs room too, and waits behind it. */
	cr_assert(conn_memory_feed(a, line, 20000, false, replies));
	cr_assert(a->budget_over);
	cr_assert(conn_memory_feed(b, line, 20000, false, replies));
	cr_assert(b->budget_wait, "b did not wait: nothing tested");
	conn_tick(b, cache_now() + 100);
	cr_assert_eq(w.nconns, 2, "closed as idle while it waited");
	/* a's request ends: the overdraft and its room pass to b. */
	cr_assert(conn_memory_feed(a, "\r\n", 2, false, replies));
	cr_assert_str_eq(take(), "END\r\n");
	cr_assert(conn_memory_feed(b, "\r\n", 2, false, replies));
	cr_assert_str_eq(take(), "END\r\n");
	free(line);
	conn_close(b);
	conn_close(a);
}
