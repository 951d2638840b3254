/*
 * The request path over the in-memory transport, for what both protocols
 * must do alike: limits decided per request (a pipelined `auth` lifts the
 * pre-auth limit for what follows it in the same write), expired items met
 * by any kind of get counted and reclaimed, and a large value whose
 * zero-copy reference cannot be queued still sent whole.
 */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/rcu.h"
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

/* The replies so far (then emptied); the caller frees. */
static char *take(size_t *len)
{
	return socketless_take(replies, len);
}

static void feed(struct conn *c, const void *p, size_t n)
{
	socketless_feed(c, p, n, replies);
}

static void feed_str(struct conn *c, const char *s)
{
	feed(c, s, strlen(s));
}

static void use_password(void)
{
	socketless_auth(&srv, "pw\n");
}

TestSuite(request_path, .init = setup, .fini = teardown, .timeout = 60);

/*
 * `auth` and a set larger than the pre-auth limit in one write: the set is
 * held to the authenticated limit, is stored, and the old value survives
 * until it is replaced. (The limit used to be computed once per batch.)
 */
Test(request_path, pipelined_auth_lifts_the_limit_for_what_follows)
{
	enum { VLEN = 5000 };
	static char in[64 + VLEN + 64];
	struct conn *c;
	char *out, *want;
	size_t n = 0, len;

	use_password();
	c = conn_new_memory(&w);
	feed_str(c, "auth pw\r\nset k 0 0 3\r\nold\r\n");
	free(take(NULL));
	conn_close(c);

	c = conn_new_memory(&w);
	n += (size_t)sprintf(in + n, "auth pw\r\nset k 0 0 %d\r\n", VLEN);
	memset(in + n, 'v', VLEN);
	n += VLEN;
	n += (size_t)sprintf(in + n, "\r\nget k\r\n");
	feed(c, in, n);
	out = take(&len);
	want = malloc(64 + VLEN);
	cr_assert_not_null(want);
	len = (size_t)sprintf(want, "OK\r\nSTORED\r\nVALUE k 0 %d\r\n", VLEN);
	memset(want + len, 'v', VLEN);
	len += VLEN;
	len += (size_t)sprintf(want + len, "\r\nEND\r\n");
	cr_assert_str_eq(out, want);
	free(want);
	free(out);
}

/* The same in the binary protocol: AUTH, then a 5000-byte SET frame. */
Test(request_path, pipelined_binary_auth_lifts_the_limit)
{
	enum { VLEN = 5000 };
	static char in[64 + VLEN];
	/* [21, 1, "pw"] */
	static const char auth[] = "\0\0\0\x06\x93\x15\x01\xa2pw";
	struct conn *c;
	char *out;
	size_t n = 0, len, body;

	use_password();
	c = conn_new_memory(&w);
	memcpy(in, auth, sizeof(auth) - 1);
	n = sizeof(auth) - 1;
	/* [4, 2, "k", bin(5000)]: array, op, id, key, bin header, value */
	body = 1 + 1 + 1 + 2 + 3 + VLEN;
	in[n++] = 0;
	in[n++] = 0;
	in[n++] = (char)(body >> 8);
	in[n++] = (char)body;
	memcpy(in + n, "\x94\x04\x02\xa1k\xc5", 6);
	n += 6;
	in[n++] = (char)(VLEN >> 8);
	in[n++] = (char)VLEN;
	memset(in + n, 'v', VLEN);
	n += VLEN;
	feed(c, in, n);
	out = take(&len);
	/* [1, 0, nil], then [2, 0, cas] */
	cr_assert_geq(len, 16);
	cr_assert_eq(memcmp(out, "\0\0\0\x04\x93\x01\x00\xc0", 8), 0);
	cr_assert_eq(memcmp(out + 8 + 4, "\x93\x02\x00", 3), 0,
		     "the SET was refused (status %u)", (unsigned char)out[14]);
	free(out);
}

static unsigned long stat_get_expired(void)
{
	struct stats_sum s;

	observe_sum_stats(&srv.obs, &s);
	return s.get_expired;
}

static unsigned long curr_items(void)
{
	struct cache_stats cs;

	cache_get_stats(srv.cache, &cs, false);
	return cs.curr_items;
}

/* An expired item met by a binary MGET counts in get_expired and is
 * reclaimed, as a text get does. */
Test(request_path, binary_mget_counts_and_reaps_expired_items)
{
	/* [3, 1, ["k"]] */
	static const char mget[] = "\0\0\0\x06\x93\x03\x01\x91\xa1k";
	struct conn *text = conn_new_memory(&w), *bin;
	char *out;
	size_t len;

	feed_str(text, "set k 0 -1 1\r\nx\r\n");
	cr_assert_str_eq(out = take(NULL), "STORED\r\n");
	free(out);
	cr_assert_eq(curr_items(), 1, "the dead item is not linked");
	bin = conn_new_memory(&w);
	feed(bin, mget, sizeof(mget) - 1);
	out = take(&len);
	/* [1, 0, [nil]] */
	cr_assert_eq(len, 9);
	cr_assert_eq(memcmp(out, "\0\0\0\x05\x93\x01\x00\x91\xc0", 9), 0);
	free(out);
	cr_assert_eq(stat_get_expired(), 1, "get_expired %lu",
		     stat_get_expired());
	cr_assert_eq(curr_items(), 0, "the expired item was not reclaimed");
}

/*
 * Allocation failure inside libevent: while allocs_left is not negative,
 * that many allocations through libevent's memory functions succeed, and
 * every one after them fails.
 */
static int allocs_left = -1;

static bool may_allocate(void)
{
	if (allocs_left < 0)
		return true;
	if (allocs_left == 0)
		return false;
	allocs_left--;
	return true;
}

static void *test_malloc(size_t n)
{
	return may_allocate() ? malloc(n) : NULL;
}

static void *test_realloc(void *p, size_t n)
{
	return may_allocate() ? realloc(p, n) : NULL;
}

static void setup_failing_mem(void)
{
	event_set_mem_functions(test_malloc, test_realloc, free);
	setup();
}

TestSuite(failing_mem, .init = setup_failing_mem, .fini = teardown,
	  .timeout = 60);

/*
 * A get of a large value (sent by reference) while libevent cannot
 * allocate: the reply is either whole or the connection closes; it is
 * never sent without its value, and the item's pin is not leaked (once
 * the key is deleted and a grace period has passed, no retired bytes
 * remain).
 */
Test(failing_mem, large_value_reply_whole_or_closed_never_torn)
{
	enum { VLEN = 100000 };
	static char in[64 + VLEN];
	static const char hdr[] = "VALUE big 0 100000\r\n";
	struct conn *c = conn_new_memory(&w);
	struct cache_stats cs;
	size_t n = 0, len;
	bool open;
	char *out;

	n += (size_t)sprintf(in, "set big 0 0 %d\r\n", VLEN);
	memset(in + n, 'z', VLEN);
	n += VLEN;
	memcpy(in + n, "\r\n", 2);
	n += 2;
	feed(c, in, n);
	free(take(NULL));
	/* The request gets into the input (one allocation: its chain), and
	 * then every allocation fails. */
	allocs_left = 1;
	open = conn_memory_feed(c, "get big\r\n", 9, false, replies);
	allocs_left = -1;
	out = take(&len);
	if (len) {
		cr_assert_eq(len, strlen(hdr) + VLEN + 2 + 5, "%zu bytes", len);
		cr_assert_eq(memcmp(out, hdr, strlen(hdr)), 0);
		for (size_t i = 0; i < VLEN; i++)
			cr_assert_eq(out[strlen(hdr) + i], 'z', "byte %zu", i);
		cr_assert_str_eq(out + strlen(hdr) + VLEN, "\r\nEND\r\n");
	} else {
		cr_assert_not(open, "no reply, yet the connection is open");
	}
	free(out);
	if (open)
		conn_close(c);
	c = conn_new_memory(&w);
	feed_str(c, "delete big\r\n");
	cr_assert_str_eq(out = take(NULL), "DELETED\r\n");
	free(out);
	cache_reclaim(srv.cache);
	cache_get_stats(srv.cache, &cs, false);
	cr_assert_eq(cs.retired_bytes, 0, "%" PRIu64 " retired bytes pinned",
		     cs.retired_bytes);
}

/* `verbosity N` sets the log level at once: 0 warnings, 1 info, 2+ debug. */
Test(request_path, verbosity_sets_the_log_level)
{
	struct conn *c = conn_new_memory(&w);
	enum log_level was = log_get_level();
	char *out;

	feed_str(c, "verbosity 2\r\n");
	cr_assert_str_eq(out = take(NULL), "OK\r\n");
	free(out);
	cr_assert_eq(log_get_level(), LOG_DEBUG);
	feed_str(c, "verbosity 1 noreply\r\nverbosity 0\r\n");
	cr_assert_str_eq(out = take(NULL), "OK\r\n");
	free(out);
	cr_assert_eq(log_get_level(), LOG_WARN);
	log_set_level(was);
}

/* A msgpack SET over the item size limit answers TOO_LARGE and drops the
 * key's old value, as a text set does (and memcached's protocols do). */
Test(request_path, binary_too_large_set_drops_the_old_value)
{
	enum { VLEN = (1 << 20) + 1 };
	/* [4, 2, "k", bin32(VLEN)] */
	static const char head[] = "\x94\x04\x02\xa1k\xc6";
	struct conn *text = conn_new_memory(&w), *bin;
	size_t body = sizeof(head) - 1 + 4 + VLEN, n = 0, len;
	char *in = malloc(4 + body), *out;

	cr_assert_not_null(in);
	feed_str(text, "set k 0 0 3\r\nold\r\n");
	free(take(NULL));
	for (int i = 3; i >= 0; i--)
		in[n++] = (char)(body >> (8 * i));
	memcpy(in + n, head, sizeof(head) - 1);
	n += sizeof(head) - 1;
	for (int i = 3; i >= 0; i--)
		in[n++] = (char)((uint32_t)VLEN >> (8 * i));
	memset(in + n, 'v', VLEN);
	n += VLEN;
	bin = conn_new_memory(&w);
	feed(bin, in, n);
	free(in);
	out = take(&len);
	/* [2, TOO_LARGE (4), "object too large for cache"] */
	cr_assert_gt(len, 7);
	cr_assert_eq(memcmp(out + 4, "\x93\x02\x04", 3), 0);
	free(out);
	feed_str(text, "get k\r\n");
	cr_assert_str_eq(out = take(NULL), "END\r\n");
	free(out);
}
