/*
 * The text-protocol parser over streams: every strict prefix of a request is
 * NEED_MORE and the whole request parses the same with or without bytes after
 * it; composed requests parse back into what was composed, one by one when
 * pipelined, and whatever the fragmentation of their arrival.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "text_test_util.h"

struct decided {
	const char *in;
	size_t n;
	enum proto_status st;
};

#define D(lit, st)                       \
	{                                \
		lit, sizeof(lit) - 1, st \
	}

/* Requests whose answer is decided only by their last byte. */
static const struct decided decided[] = {
	D("get k\r\n", PROTO_OK),
	D("get a b c\n", PROTO_OK),
	D("gets k1 k2\r\n", PROTO_OK),
	D("gat 10 k\r\n", PROTO_OK),
	D("gats 10 a b\r\n", PROTO_OK),
	D("set k 0 0 5\r\nhello\r\n", PROTO_OK),
	D("set k 4294967295 -1 4\r\n\r\n\r\n\r\n", PROTO_OK),
	D("add k 1 2 0\r\n\r\n", PROTO_OK),
	D("replace k 1 2 1 noreply\r\nx\r\n", PROTO_OK),
	D("append k 0 0 2\r\n\0\0\r\n", PROTO_OK),
	D("prepend k 0 0 3\r\n\r\n\n\r\n", PROTO_OK),
	D("cas k 0 0 1 18446744073709551615\r\nx\r\n", PROTO_OK),
	D("delete k\r\n", PROTO_OK),
	D("delete k 0 noreply\r\n", PROTO_OK),
	D("incr k 1\r\n", PROTO_OK),
	D("decr k 18446744073709551615 noreply\r\n", PROTO_OK),
	D("touch k 100\r\n", PROTO_OK),
	D("flush_all\r\n", PROTO_OK),
	D("flush_all 10 noreply\r\n", PROTO_OK),
	D("version\r\n", PROTO_OK),
	D("verbosity 1\r\n", PROTO_OK),
	D("quit\r\n", PROTO_OK),
	D("stats\r\n", PROTO_OK),
	D("stats slabs\r\n", PROTO_OK),
	D("scan 0\r\n", PROTO_OK),
	D("scan 12345 count 50 match a*[bc]?\r\n", PROTO_OK),
	D("\r\n", PROTO_ERROR),
	D("bogus\r\n", PROTO_ERROR),
	D("set k 0 0\r\n", PROTO_ERROR),
	D("set k 0 0 -1\r\n", PROTO_CLIENT_ERROR),
	D("set k 0 0 1\r\nxyz", PROTO_CLIENT_ERROR),
	D("incr k x\r\n", PROTO_CLIENT_ERROR),
	D("delete k 5\r\n", PROTO_CLIENT_ERROR),
	D("scan x\r\n", PROTO_CLIENT_ERROR),
	D("set k 0 0 2000000\r\n", PROTO_TOO_LARGE),
	D("GET / HTTP/1.1\r\n", PROTO_CLOSE),
};

/* Copies exactly n bytes to the heap, so that ASan sees a read past them. */
static enum proto_status parse_exact(const char *in, size_t n,
				     struct proto_req *req)
{
	char *copy = malloc(n ? n : 1);
	enum proto_status st;

	cr_assert_not_null(copy);
	memcpy(copy, in, n);
	st = proto_text_parse(copy, n, &test_lim, req);
	free(copy);
	return st;
}

/* Every strict prefix is NEED_MORE; the whole and the whole + junk agree. */
static void check_prefixes(const char *in, size_t n, enum proto_status want)
{
	static const char junk[] =
		"get x\r\nset y 0 0 1\r\nz\r\n\r\n\n\r\n\0\xff\r\n";
	struct proto_req full, more, req;
	char *ext = malloc(n + sizeof(junk));

	cr_assert_not_null(ext);
	for (size_t m = 0; m < n; m++)
		cr_assert_eq(parse_exact(in, m, &req), PROTO_NEED_MORE,
			     "\"%.*s\": prefix %zu -> %d", (int)n, in, m,
			     parse_exact(in, m, &req));
	cr_assert_eq(parse_exact(in, n, &full), want, "\"%.*s\"", (int)n, in);
	memcpy(ext, in, n);
	memcpy(ext + n, junk, sizeof(junk));
	for (size_t extra = 1; extra <= sizeof(junk); extra++) {
		cr_assert_eq(proto_text_parse(ext, n + extra, &test_lim, &more),
			     want);
		cr_assert(req_equal(&full, &more), "\"%.*s\" + %zu bytes",
			  (int)n, in, extra);
	}
	cr_assert_eq(full.len, n);
	free(ext);
}

Test(text_stream, prefixes_of_fixed_requests)
{
	for (size_t i = 0; i < sizeof(decided) / sizeof(decided[0]); i++)
		check_prefixes(decided[i].in, decided[i].n, decided[i].st);
}

Test(text_stream, prefixes_of_random_requests)
{
	uint64_t seed = 0x5eed0001;
	char *buf = malloc(8192);
	struct test_expect e;

	cr_assert_not_null(buf);
	for (int i = 0; i < 300; i++) {
		size_t len = 0;
		struct proto_req req;

		test_compose(&seed, buf, &len, 8192, &e);
		check_prefixes(buf, len, PROTO_OK);
		cr_assert_eq(proto_text_parse(buf, len, &test_lim, &req),
			     PROTO_OK);
		cr_assert(test_matches(buf, &req, &e), "\"%.*s\"", (int)len,
			  buf);
	}
	free(buf);
}

#define STREAM_REQUESTS 2000

struct stream {
	char *buf;
	size_t len;
	struct test_expect *want;
};

static void stream_make(struct stream *s, uint64_t seed)
{
	size_t cap = (size_t)STREAM_REQUESTS * 4096;

	s->buf = malloc(cap);
	s->want = malloc(STREAM_REQUESTS * sizeof(*s->want));
	cr_assert(s->buf != NULL && s->want != NULL);
	s->len = 0;
	for (int i = 0; i < STREAM_REQUESTS; i++)
		test_compose(&seed, s->buf, &s->len, cap, &s->want[i]);
}

static void stream_free(struct stream *s)
{
	free(s->buf);
	free(s->want);
}

/* All requests back to back in one buffer, parsed one by one. */
Test(text_stream, pipelined)
{
	struct stream s;
	size_t off = 0;

	stream_make(&s, 0x5eed0002);
	for (int i = 0; i < STREAM_REQUESTS; i++) {
		struct proto_req req;

		cr_assert_eq(proto_text_parse(s.buf + off, s.len - off,
					      &test_lim, &req),
			     PROTO_OK, "request %d", i);
		cr_assert(test_matches(s.buf + off, &req, &s.want[i]),
			  "request %d: \"%.*s\"", i, (int)s.want[i].len,
			  s.buf + off);
		off += req.len;
	}
	cr_assert_eq(off, s.len);
	stream_free(&s);
}

/*
 * The same stream arriving in random pieces (1 byte to 4 KiB) into a
 * connection buffer that is compacted after each parsed request.
 */
Test(text_stream, random_fragmentation)
{
	uint64_t seed = 0x5eed0003;
	struct stream s;

	stream_make(&s, 0x5eed0004);
	for (int round = 0; round < 4; round++) {
		char *conn = malloc(s.len);
		size_t have = 0, sent = 0;
		int next = 0;

		cr_assert_not_null(conn);
		while (sent < s.len) {
			size_t piece =
				round == 0
					? 1
					: 1 + test_rand_below(
						      &seed,
						      round == 1 ? 16 : 4096);
			struct proto_req req;

			if (piece > s.len - sent)
				piece = s.len - sent;
			memcpy(conn + have, s.buf + sent, piece);
			have += piece;
			sent += piece;
			for (;;) {
				enum proto_status st = proto_text_parse(
					conn, have, &test_lim, &req);
				if (st == PROTO_NEED_MORE)
					break;
				cr_assert_eq(st, PROTO_OK);
				cr_assert_lt(next, STREAM_REQUESTS);
				cr_assert(
					test_matches(conn, &req, &s.want[next]),
					"round %d request %d", round, next);
				next++;
				memmove(conn, conn + req.len, have - req.len);
				have -= req.len;
			}
		}
		cr_assert_eq(next, STREAM_REQUESTS);
		cr_assert_eq(have, 0);
		free(conn);
	}
	stream_free(&s);
}

/*
 * Errors and too-large values in a stream, as a connection handles them:
 * consume req->len, then discard req->swallow bytes as they arrive; the
 * requests after them parse normally.
 */
Test(text_stream, errors_and_swallow)
{
	static const struct proto_limits lim = { .max_value = 8 };
	static const char in[] =
		"set a 0 0 9\r\n123456789\r\n"	       /* large */
		"get a\r\n"			       /* OK */
		"set b 0 0 2\r\nxyz\r\n"	       /* chunk */
		"bogus\r\n"			       /* ERROR */
		"set c 0 0 10 noreply\r\n0123456789XY" /* large */
		"set d 0 0 8\r\n12345678\r\n"	       /* OK */
		"incr d -1\r\n"			       /* delta */
		"GET / HTTP/1.0\r\n";		       /* close */
	static const enum proto_status want[] = {
		PROTO_TOO_LARGE, PROTO_OK,	     PROTO_CLIENT_ERROR,
		PROTO_ERROR,	 PROTO_ERROR,	     PROTO_TOO_LARGE,
		PROTO_OK,	 PROTO_CLIENT_ERROR, PROTO_CLOSE,
	};
	uint64_t seed = 0x5eed0005;

	for (int round = 0; round < 200; round++) {
		char conn[sizeof(in)];
		size_t have = 0, sent = 0, n = sizeof(in) - 1;
		uint64_t swallow = 0;
		size_t next = 0;
		bool closed = false;

		while (sent < n && !closed) {
			size_t piece = 1 + test_rand_below(&seed, 24);
			struct proto_req req;

			if (piece > n - sent)
				piece = n - sent;
			memcpy(conn + have, in + sent, piece);
			have += piece;
			sent += piece;
			while (!closed) {
				size_t drop =
					swallow < have ? (size_t)swallow : have;
				memmove(conn, conn + drop, have - drop);
				have -= drop;
				swallow -= drop;
				if (swallow > 0)
					break;
				enum proto_status st = proto_text_parse(
					conn, have, &lim, &req);
				if (st == PROTO_NEED_MORE)
					break;
				cr_assert_lt(next,
					     sizeof(want) / sizeof(want[0]));
				cr_assert_eq(st, want[next],
					     "round %d step %zu", round, next);
				next++;
				closed = st == PROTO_CLOSE;
				swallow =
					st == PROTO_TOO_LARGE ? req.swallow : 0;
				memmove(conn, conn + req.len, have - req.len);
				have -= req.len;
			}
		}
		/* b's block is "xyz\r": its "\n" is left over, an empty line
		 * (ERROR), as memcached answers after its bad data chunk. */
		cr_assert_eq(next, sizeof(want) / sizeof(want[0]));
		cr_assert(closed);
	}
}
