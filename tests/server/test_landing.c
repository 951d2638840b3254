/*
 * Large values received straight into their item (conn.c, "landing"),
 * over the in-memory transport so that a request can be cut anywhere: the
 * value is stored whole whatever the pieces, never gathered in the input
 * buffer, its ending is checked, the requests behind it run, every store
 * mode and the meta set work with it, and an item that is not stored (a
 * refused add, a closed connection, a bad ending) goes back to the cache.
 */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mcbin.h"
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

TestSuite(landing, .init = setup, .fini = teardown, .timeout = 60);

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

/* Feeds p in pieces of 1..max bytes (a fixed pseudo-random sequence). */
static void feed_pieces(struct conn *c, const char *p, size_t n, size_t max,
			unsigned int seed)
{
	size_t off = 0;

	while (off < n) {
		size_t k;

		seed = seed * 1103515245u + 12345u;
		k = 1 + (seed >> 8) % max;
		if (k > n - off)
			k = n - off;
		feed(c, p + off, k);
		off += k;
	}
}

/* A value of n bytes, each depending on its position and tag. */
static char *pattern(size_t n, char tag)
{
	char *v = malloc(n);

	cr_assert_not_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (char)('a' + (i * 7 + (size_t)tag) % 26);
	return v;
}

/* "<line><value>\r\n<after>" in one buffer. */
static char *request(const char *line, const char *v, size_t vn,
		     const char *after, size_t *len)
{
	size_t ln = strlen(line), an = strlen(after);
	char *p = malloc(ln + vn + 2 + an);

	cr_assert_not_null(p);
	memcpy(p, line, ln);
	memcpy(p + ln, v, vn);
	memcpy(p + ln + vn, "\r\n", 2);
	memcpy(p + ln + vn + 2, after, an);
	*len = ln + vn + 2 + an;
	return p;
}

/* get key answers exactly value (flags as given). */
static void expect_value(struct conn *c, const char *key, uint32_t flags,
			 const char *v, size_t vn)
{
	char hdr[128];
	size_t len, hn;
	char *out;

	free(take(NULL));
	hn = (size_t)snprintf(hdr, sizeof(hdr), "VALUE %s %" PRIu32 " %zu\r\n",
			      key, flags, vn);
	feed(c, "get ", 4);
	feed_str(c, key);
	feed(c, "\r\n", 2);
	out = take(&len);
	cr_assert_eq(len, hn + vn + 7, "%zu bytes: %.60s", len, out);
	cr_assert_eq(memcmp(out, hdr, hn), 0, "%.60s", out);
	cr_assert_eq(memcmp(out + hn, v, vn), 0, "the value differs");
	cr_assert_eq(memcmp(out + hn + vn, "\r\nEND\r\n", 7), 0);
	free(out);
}

static uint64_t large_bytes(void)
{
	struct cache_stats cs;

	cache_reclaim(srv.cache);
	cache_get_stats(srv.cache, &cs, false);
	return cs.large_bytes;
}

/*
 * A 300 KB set cut into pieces of every size from 1 byte to 64 KiB,
 * followed in the same stream by more requests: stored whole, the
 * requests behind it answered, and the input buffer never grew past its
 * first size (the value went into the item, not through it).
 */
Test(landing, value_in_any_pieces_is_stored_whole)
{
	enum { VLEN = 300000 };
	static const size_t max_piece[] = { 1, 7, 1500, 65536 };
	char *v = pattern(VLEN, 'p');

	for (size_t t = 0; t < sizeof(max_piece) / sizeof(*max_piece); t++) {
		struct conn *c = conn_new_memory(&w);
		size_t rcap = c->rcap, n;
		char line[64], *in, *out;

		snprintf(line, sizeof(line), "set big%zu 9 0 %d\r\n", t, VLEN);
		/* 1-byte pieces: only the first 20 KB, the rest at once. */
		in = request(line, v, VLEN, "set after 0 0 2\r\nok\r\n", &n);
		if (max_piece[t] == 1) {
			feed_pieces(c, in, 20000, 1, 1);
			feed(c, in + 20000, n - 20000);
		} else {
			feed_pieces(c, in, n, max_piece[t], (unsigned)t);
		}
		cr_assert_str_eq(out = take(NULL), "STORED\r\nSTORED\r\n",
				 "pieces of up to %zu", max_piece[t]);
		free(out);
		cr_assert_eq(c->rcap, rcap, "the input buffer grew to %zu",
			     c->rcap);
		snprintf(line, sizeof(line), "big%zu", t);
		expect_value(c, line, 9, v, VLEN);
		expect_value(c, "after", 0, "ok", 2);
		free(in);
		conn_close(c);
	}
	free(v);
}

/* A value not followed by "\r\n": CLIENT_ERROR bad data chunk as for a
 * request that arrived whole; the old value stays, the item goes back,
 * and the connection goes on with the next request. */
Test(landing, bad_ending_is_refused_and_nothing_leaks)
{
	enum { VLEN = 40000 };
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 'b'), *in, *out;
	uint64_t before;
	size_t n;

	feed_str(c, "set k 0 0 3\r\nold\r\n");
	free(take(NULL));
	before = large_bytes();
	in = request("set k 0 0 40000\r\n", v, VLEN, "", &n);
	in[n - 2] = 'X'; /* "X\n" instead of "\r\n" */
	feed(c, in, 20000);
	feed(c, in + 20000, n - 20000);
	feed_str(c, "get k\r\n");
	cr_assert_str_eq(out = take(NULL),
			 "CLIENT_ERROR bad data chunk\r\nVALUE k 0 3\r\n"
			 "old\r\nEND\r\n");
	free(out);
	cr_assert_eq(large_bytes(), before);
	free(in);
	free(v);
	conn_close(c);
}

/* The peer goes away in the middle of a value: the item is freed. */
Test(landing, closed_in_the_middle_frees_the_item)
{
	enum { VLEN = 200000 };
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 'c'), *in;
	uint64_t before = large_bytes();
	size_t n;

	in = request("set gone 0 0 200000\r\n", v, VLEN, "", &n);
	feed(c, in, 100000);
	cr_assert_gt(large_bytes(), before, "the item holds the value");
	cr_assert_not(conn_memory_feed(c, NULL, 0, true, replies),
		      "EOF with a request half read: closed");
	cr_assert_eq(large_bytes(), before);
	c = conn_new_memory(&w);
	feed_str(c, "get gone\r\n");
	free(in);
	cr_assert_str_eq(in = take(NULL), "END\r\n");
	free(in);
	free(v);
	conn_close(c);
}

/* Every store mode with a landed value: add and replace decide as usual
 * (a refused one frees the item), append and prepend join it to the old
 * value, cas compares, noreply says nothing. */
Test(landing, every_store_mode)
{
	enum { VLEN = 20000 };
	struct conn *c = conn_new_memory(&w);
	char *a = pattern(VLEN, 'a'), *b = pattern(VLEN, 'b');
	char *joined = malloc(3 * VLEN), *in, *out;
	char line[96];
	uint64_t before = large_bytes(), cas;
	size_t n;

	cr_assert_not_null(joined);
	/* Each request in two pieces (the value lands), value a. */
#define SEND(fmt, ...)                                                    \
	do {                                                              \
		snprintf(line, sizeof(line), fmt, __VA_ARGS__);           \
		in = request(line, a, VLEN, "", &n);                      \
		feed(c, in, strlen(line) + 100);                          \
		feed(c, in + strlen(line) + 100, n - strlen(line) - 100); \
		free(in);                                                 \
	} while (0)
	SEND("replace m 1 0 %d\r\n", VLEN);
	SEND("add m 1 0 %d\r\n", VLEN);
	cr_assert_str_eq(out = take(NULL), "NOT_STORED\r\nSTORED\r\n");
	free(out);
	SEND("add m 2 0 %d\r\n", VLEN);
	cr_assert_str_eq(out = take(NULL), "NOT_STORED\r\n");
	free(out);
	snprintf(line, sizeof(line), "append m 3 0 %d\r\n", VLEN);
	in = request(line, b, VLEN, "", &n);
	feed(c, in, 50);
	feed(c, in + 50, n - 50);
	free(in);
	snprintf(line, sizeof(line), "prepend m 3 0 %d\r\n", VLEN);
	in = request(line, b, VLEN, "", &n);
	feed(c, in, 50);
	feed(c, in + 50, n - 50);
	free(in);
	cr_assert_str_eq(out = take(NULL), "STORED\r\nSTORED\r\n");
	free(out);
	memcpy(joined, b, VLEN);
	memcpy(joined + VLEN, a, VLEN);
	memcpy(joined + 2 * VLEN, b, VLEN);
	expect_value(c, "m", 1, joined, 3 * VLEN);
	/* cas: a stale one is EXISTS, the current one stores. */
	feed_str(c, "gets m\r\n");
	out = take(NULL);
	cr_assert_eq(sscanf(out, "VALUE m 1 60000 %" SCNu64, &cas), 1, "%.40s",
		     out);
	free(out);
	SEND("cas m 4 0 %d 1\r\n", VLEN);
	SEND("cas m 4 0 %d %" PRIu64 "\r\n", VLEN, cas);
	SEND("set q 5 0 %d noreply\r\n", VLEN);
	cr_assert_str_eq(out = take(NULL), "EXISTS\r\nSTORED\r\n");
	free(out);
	expect_value(c, "m", 4, a, VLEN);
	expect_value(c, "q", 5, a, VLEN);
#undef SEND
	feed_str(c, "delete m\r\ndelete q\r\n");
	free(take(NULL));
	cr_assert_eq(large_bytes(), before, "refused items were not freed");
	free(joined);
	free(a);
	free(b);
	conn_close(c);
}

/* The meta set: its flags (opaque, key, base64 key, returned cas) are
 * answered from the line, which stays in the input buffer while the value
 * lands. */
Test(landing, meta_set_answers_from_its_line)
{
	enum { VLEN = 50000 };
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 'm'), *in, *out;
	size_t n;

	/* "bWs=" is base64 for "mk". */
	in = request("ms bWs= 50000 b F7 T0 Oabc k c\r\n", v, VLEN, "mn\r\n",
		     &n);
	feed_pieces(c, in, n, 3000, 5);
	free(in);
	out = take(NULL);
	cr_assert(strncmp(out, "HD Oabc kbWs= b c", 17) == 0, "%s", out);
	cr_assert(strstr(out, "\r\nMN\r\n") != NULL, "%s", out);
	free(out);
	expect_value(c, "mk", 7, v, VLEN);
	/* A bad ending: the meta protocol's error. */
	in = request("ms mk 50000 T0\r\n", v, VLEN, "mn\r\n", &n);
	in[n - 5] = '!';
	feed(c, in, 1000);
	feed(c, in + 1000, n - 1000);
	free(in);
	cr_assert_str_eq(out = take(NULL),
			 "CLIENT_ERROR bad data chunk\r\nMN\r\n");
	free(out);
	free(v);
	conn_close(c);
}

/* A value that cannot fit even in an empty cache: the store's error, the
 * value discarded as it arrives, the next request answered. */
Test(landing, no_room_is_an_error_and_the_value_is_discarded)
{
	enum { VLEN = 1000000 };
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 'n'), *in, *out;
	size_t n;

	/* 1 MiB, less the segment's worth of room writers leave for
	 * eviction's carry: no 1,000,000-byte value fits. */
	cache_set_limit(srv.cache, 1u << 20);
	in = request("set huge 0 0 1000000\r\n", v, VLEN, "get huge\r\n", &n);
	feed(c, in, 5000);
	feed(c, in + 5000, n - 5000);
	free(in);
	cr_assert_str_eq(out = take(NULL),
			 "SERVER_ERROR out of memory storing object\r\n"
			 "END\r\n");
	free(out);
	free(v);
	conn_close(c);
}

/* memcached's binary protocol: a SET whose value arrives in pieces lands
 * too (its value ends the frame: no ending to check), and a GET after it
 * in the same stream answers the whole value. */
Test(landing, memcached_binary_set)
{
	enum { VLEN = 100000 };
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 'x');
	size_t n = 2 * MCBIN_HEADER + 8 + 2 * 3 + VLEN, off = 0, len;
	char *in = malloc(n), *out;
	char extras[8] = { 0, 0, 0, 42, 0, 0, 0, 0 }; /* flags 42, exptime 0 */

	cr_assert_not_null(in);
	mcbin_frame_header(in, MCBIN_MAGIC_REQ, MCBIN_SET, 0, 8, 3, VLEN, 1, 0);
	off = MCBIN_HEADER;
	memcpy(in + off, extras, 8);
	memcpy(in + off + 8, "bin", 3);
	memcpy(in + off + 11, v, VLEN);
	off += 11 + VLEN;
	mcbin_frame_header(in + off, MCBIN_MAGIC_REQ, MCBIN_GET, 0, 0, 3, 0, 2,
			   0);
	memcpy(in + off + MCBIN_HEADER, "bin", 3);
	feed_pieces(c, in, n, 4000, 9);
	out = take(&len);
	/* SET's response (24 bytes, status 0), then GET's: 4 bytes of flags
	 * and the value. */
	cr_assert_eq(len, 2 * MCBIN_HEADER + 4 + VLEN, "%zu bytes", len);
	cr_assert_eq(out[6] | out[7], 0, "SET's status");
	cr_assert_eq(memcmp(out + 2 * MCBIN_HEADER, "\0\0\0\x2a", 4), 0);
	cr_assert_eq(memcmp(out + 2 * MCBIN_HEADER + 4, v, VLEN), 0);
	free(out);
	free(in);
	free(v);
	conn_close(c);
}

/* Sets the limit so that one more large item of vlen bytes fits, beside
 * what the cache holds now, but not two: a write that copied the landed
 * value into a second item would be refused. */
static void room_for_one(size_t vlen)
{
	/* The item's header, key, chosen cas and allocator rounding. */
	uint64_t one = vlen + 4096;
	struct cache_stats cs;

	cache_set_limit(srv.cache, 16u << 20);
	cache_reclaim(srv.cache);
	cache_get_stats(srv.cache, &cs, false);
	/* Pooled segments do not count (a large item takes their room), and
	 * writers leave a segment's room for eviction's carry. */
	cache_set_limit(srv.cache, cs.accounted -
					   cs.segments_free * cs.segment_size +
					   cs.hash_bytes + cs.segment_size +
					   one + one / 2);
}

/*
 * A meta set's value lands in the item it is stored as, as a classic
 * set's does, in every mode that stores the request's value whole: with
 * room for one item of its size (not two) each is stored, not refused for
 * a second copy. A small old value, where the mode wants one, is stored
 * before the room is measured; append joins (a new item anyway) under the
 * normal limit.
 */
Test(landing, meta_set_stores_its_landed_item)
{
	/* More than twice a segment (128 KiB): the maintenance thread's
	 * headroom (two segments) leaves the stored item alone. */
	enum { VLEN = 400000 };
	static const struct {
		const char *old; /* stored first (NULL: none) */
		const char *line;
		const char *reply; /* what the line ends with, then mn */
		const char *key;
		uint32_t flags;
	} cases[] = {
		{ NULL, "ms s1 400000 F3 T0", "HD\r\nMN\r\n", "s1", 3 },
		{ NULL, "ms s2 400000 ME F1", "HD\r\nMN\r\n", "s2", 1 },
		{ "set s3 9 0 3\r\nold\r\n", "ms s3 400000 MR F4",
		  "HD\r\nMN\r\n", "s3", 4 },
		{ "set s4 9 0 3\r\nold\r\n", "ms s4 400000 C%CAS% F5",
		  "HD\r\nMN\r\n", "s4", 5 },
		/* An older cas with I: stored, marked stale. */
		{ "set s5 9 0 3\r\nold\r\n", "ms s5 400000 C1 I F6",
		  "HD\r\nMN\r\n", "s5", 6 },
		/* I without a cas means nothing. */
		{ NULL, "ms s6 400000 I F7", "HD\r\nMN\r\n", "s6", 7 },
		/* "czc=" is base64 for "s7". */
		{ NULL, "ms czc= 400000 b F8", "HD\r\nMN\r\n", "s7", 8 },
		{ NULL, "ms s8 400000 q F9", "MN\r\n", "s8", 9 },
		/* Append to a miss with N: the value is the new item. */
		{ NULL, "ms s9 400000 MA N0", "HD\r\nMN\r\n", "s9", 0 },
		{ NULL, "ms sa 400000 E12345 Oxy", "HD Oxy\r\nMN\r\n", "sa",
		  0 },
	};
	struct conn *c = conn_new_memory(&w);
	char *v = pattern(VLEN, 's'), *in, *out;
	char line[96], cas[24] = "";
	size_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *p = strstr(cases[i].line, "%CAS%");

		if (cases[i].old) {
			feed_str(c, cases[i].old);
			free(take(NULL));
			snprintf(line, sizeof(line), "mg %s c\r\n",
				 cases[i].key);
			feed_str(c, line);
			out = take(NULL);
			cr_assert_eq(sscanf(out, "HD c%20[0-9]", cas), 1, "%s",
				     out);
			free(out);
		}
		if (p)
			snprintf(line, sizeof(line), "%.*s%s%s\r\n",
				 (int)(p - cases[i].line), cases[i].line, cas,
				 p + 5);
		else
			snprintf(line, sizeof(line), "%s\r\n", cases[i].line);
		room_for_one(VLEN);
		in = request(line, v, VLEN, "mn\r\n", &n);
		feed(c, in, strlen(line) + 100);
		feed(c, in + strlen(line) + 100, n - strlen(line) - 100);
		free(in);
		out = take(NULL);
		cr_assert_str_eq(out, cases[i].reply, "%s: %s", line, out);
		free(out);
		cache_set_limit(srv.cache, 16u << 20);
		expect_value(c, cases[i].key, cases[i].flags, v, VLEN);
		snprintf(line, sizeof(line), "delete %s\r\n", cases[i].key);
		feed_str(c, line);
		free(take(NULL));
	}
	free(v);
	conn_close(c);
}

/* Append and prepend with a landed value join it to the old one. */
Test(landing, meta_append_and_prepend)
{
	enum { VLEN = 30000 };
	struct conn *c = conn_new_memory(&w);
	char *a = pattern(VLEN, 'a'), *b = pattern(VLEN, 'b');
	char *joined = malloc(3 * VLEN), *in, *out;
	uint64_t before = large_bytes();
	size_t n;

	cr_assert_not_null(joined);
	feed_str(c, "ms j 30000 F2 T0\r\n");
	feed(c, a, VLEN);
	feed_str(c, "\r\n");
	in = request("ms j 30000 MA\r\n", b, VLEN, "", &n);
	feed(c, in, 100);
	feed(c, in + 100, n - 100);
	free(in);
	in = request("ms j 30000 MP\r\n", b, VLEN, "mn\r\n", &n);
	feed(c, in, 100);
	feed(c, in + 100, n - 100);
	free(in);
	cr_assert_str_eq(out = take(NULL), "HD\r\nHD\r\nHD\r\nMN\r\n");
	free(out);
	memcpy(joined, b, VLEN);
	memcpy(joined + VLEN, a, VLEN);
	memcpy(joined + 2 * VLEN, b, VLEN);
	expect_value(c, "j", 2, joined, 3 * VLEN);
	feed_str(c, "delete j\r\n");
	free(take(NULL));
	cr_assert_eq(large_bytes(), before, "a joined source was not freed");
	free(joined);
	free(a);
	free(b);
	conn_close(c);
}
