/*
 * rhkvd's binary protocol at the byte level (proto/PROTOCOL.md): the first
 * byte picks the protocol per connection; replies come in request order
 * with the request's id; a malformed frame with a readable id gets
 * BAD_REQUEST and the connection goes on; one without an id, or claiming
 * more than the frame limit, closes the connection at once (nothing of it
 * is buffered); large values (zero-copy replies) arrive intact; STATS
 * gives what the text `stats` lines give; the meta ops answer result maps
 * in order, refuse unknown options and too large values. Requests are
 * packed with msgpack-c and the shared codec; replies are decoded with
 * the codec.
 * memcached has no binary protocol of this kind: skipped there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/binary.h"

static struct srv srv;
static struct hconn *c;
static msgpack_sbuffer sb;
static msgpack_packer pk;
static struct proto_bin_decoder dec;
static char *body;

static void start(const char *const *extra)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("the binary protocol is rhkvd's; the server under "
			     "test is memcached");
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_bin_decoder_init(&dec);
}

static void teardown(void)
{
	int status;

	free(body);
	body = NULL;
	msgpack_sbuffer_destroy(&sb);
	proto_bin_decoder_destroy(&dec);
	if (!srv.pid)
		return;
	hc_close(&c);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

TestSuite(binary, .fini = teardown, .timeout = 60);

/* Sends what is packed in sb and empties it. */
static void flush(void)
{
	cr_assert_eq(hc_send(c, sb.data, sb.size), 0, "send: errno %d", errno);
	sb.size = 0;
}

static void pack_bytes(const char *s)
{
	msgpack_pack_bin_with_body(&pk, s, strlen(s));
}

/* Queues [op, id, key] (key NULL: no argument). */
static void req_key(uint32_t op, uint64_t id, const char *key)
{
	size_t f = proto_bin_begin(&sb);

	proto_bin_pack_request_head(&pk, op, id, key ? 1 : 0);
	if (key)
		pack_bytes(key);
	proto_bin_end(&sb, f);
}

static void req_set(uint64_t id, const char *key, const void *val, size_t vlen)
{
	size_t f = proto_bin_begin(&sb);

	proto_bin_pack_request_head(&pk, PROTO_OP_SET, id, 4);
	pack_bytes(key);
	msgpack_pack_bin_with_body(&pk, val, vlen);
	msgpack_pack_uint32(&pk, 42);
	msgpack_pack_int64(&pk, 0);
	proto_bin_end(&sb, f);
}

/* Reads one reply frame; checks its id. */
static struct proto_bin_reply read_reply(uint64_t id)
{
	unsigned char hdr[4];
	struct proto_bin_reply r;
	uint32_t len;

	cr_assert_eq(hc_read(c, hdr, 4, H_TIMEOUT_MS), 4,
		     "no reply frame for id %lu", id);
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | hdr[3];
	cr_assert_lt(len, 8u << 20, "reply length %u", len);
	free(body);
	body = malloc(len ? len : 1);
	cr_assert_not_null(body);
	cr_assert_eq(hc_read(c, body, len, H_TIMEOUT_MS), len,
		     "short reply body");
	cr_assert_eq(proto_bin_decode_reply(&dec, body, len, &r), PROTO_BIN_OK,
		     "undecodable reply");
	cr_assert_eq(r.id, id, "reply id %lu, want %lu", r.id, id);
	return r;
}

static void expect_status(uint64_t id, uint32_t status)
{
	struct proto_bin_reply r = read_reply(id);

	cr_assert_eq(r.status, status, "id %lu: status %s, want %s", id,
		     proto_bin_status_name(r.status),
		     proto_bin_status_name(status));
}

Test(binary, set_get_and_errors_in_order)
{
	struct proto_bin_reply r;

	start(NULL);
	req_set(1, "k", "value", 5);
	req_key(PROTO_OP_GET, 2, "k");
	req_key(PROTO_OP_GET, 3, "missing");
	req_key(PROTO_OP_DELETE, 4, "k");
	req_key(PROTO_OP_DELETE, 5, "k");
	req_key(PROTO_OP_GET, 6, "");
	req_key(PROTO_OP_NOOP, 7, NULL);
	flush();
	r = read_reply(1);
	cr_assert_eq(r.status, PROTO_ST_OK);
	cr_assert_eq(r.payload.type, MSGPACK_OBJECT_POSITIVE_INTEGER,
		     "a set answers with its cas");
	r = read_reply(2);
	cr_assert_eq(r.status, PROTO_ST_OK);
	cr_assert_eq(r.payload.type, MSGPACK_OBJECT_ARRAY);
	cr_assert_eq(r.payload.via.array.size, 3);
	cr_assert_eq(r.payload.via.array.ptr[0].via.u64, 42, "flags");
	cr_assert_eq(r.payload.via.array.ptr[1].type, MSGPACK_OBJECT_BIN);
	cr_assert_eq(r.payload.via.array.ptr[1].via.bin.size, 5);
	cr_assert(!memcmp(r.payload.via.array.ptr[1].via.bin.ptr, "value", 5));
	expect_status(3, PROTO_ST_NOT_FOUND);
	expect_status(4, PROTO_ST_OK);
	expect_status(5, PROTO_ST_NOT_FOUND);
	expect_status(6, PROTO_ST_BAD_KEY);
	expect_status(7, PROTO_ST_OK);
}

Test(binary, both_protocols_share_the_store)
{
	struct hconn *t;
	struct proto_bin_reply r;

	start(NULL);
	t = hc_open(srv.port);
	cr_assert_not_null(t);
	/* Written as text, read as binary. */
	cr_assert_eq(hc_sendf(t, "set shared 7 0 5\r\nhello\r\n"), 0);
	{
		char m[H_MSG_CAP];

		cr_assert(hc_expect(t, "STORED\r\n", 8, H_TIMEOUT_MS, m,
				    sizeof(m)),
			  "%s", m);
	}
	req_key(PROTO_OP_GET, 1, "shared");
	flush();
	r = read_reply(1);
	cr_assert_eq(r.status, PROTO_ST_OK);
	cr_assert_eq(r.payload.via.array.ptr[0].via.u64, 7);
	cr_assert(!memcmp(r.payload.via.array.ptr[1].via.bin.ptr, "hello", 5));
	/* Written as binary, read as text. */
	req_set(2, "other", "bytes", 5);
	flush();
	expect_status(2, PROTO_ST_OK);
	cr_assert_eq(hc_sendf(t, "get other\r\n"), 0);
	{
		char m[H_MSG_CAP];
		static const char want[] =
			"VALUE other 42 5\r\nbytes\r\nEND\r\n";

		cr_assert(hc_expect(t, want, sizeof(want) - 1, H_TIMEOUT_MS, m,
				    sizeof(m)),
			  "%s", m);
	}
	hc_close(&t);
}

/* Queues [STATS, id, group]. */
static void req_stats(uint64_t id, const char *group)
{
	size_t f = proto_bin_begin(&sb);

	proto_bin_pack_request_head(&pk, PROTO_OP_STATS, id, 1);
	msgpack_pack_str_with_body(&pk, group, strlen(group));
	proto_bin_end(&sb, f);
}

/* The reply to STATS group: OK and a map of strings. */
static msgpack_object_map read_stats_map(uint64_t id, const char *group)
{
	struct proto_bin_reply r;

	req_stats(id, group);
	flush();
	r = read_reply(id);
	cr_assert_eq(r.status, PROTO_ST_OK, "stats %s: %s", group,
		     proto_bin_status_name(r.status));
	cr_assert_eq(r.payload.type, MSGPACK_OBJECT_MAP);
	for (uint32_t i = 0; i < r.payload.via.map.size; i++) {
		cr_assert_eq(r.payload.via.map.ptr[i].key.type,
			     MSGPACK_OBJECT_STR);
		cr_assert_eq(r.payload.via.map.ptr[i].val.type,
			     MSGPACK_OBJECT_STR);
	}
	return r.payload.via.map;
}

static bool str_is(msgpack_object o, const char *s)
{
	return o.via.str.size == strlen(s) &&
	       !memcmp(o.via.str.ptr, s, o.via.str.size);
}

/*
 * STATS gives what the text `stats` lines give: the same names in the same
 * order, and the same values where they do not move between the two;
 * an unknown group is a BAD_REQUEST; "reset" starts the counters over.
 */
Test(binary, stats_match_the_text_lines)
{
	static const char *const groups[] = { "",	"settings", "table",
					      "memory", "items",    "slabs",
					      "sizes" };
	struct hconn *t;
	struct hstats s;
	msgpack_object_map m;
	struct proto_bin_reply r;
	uint64_t id = 1;

	start(NULL);
	t = hc_open(srv.port);
	cr_assert_not_null(t);
	req_set(id, "k", "v", 1);
	flush();
	expect_status(id++, PROTO_ST_OK);
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		m = read_stats_map(id++, groups[g]);
		cr_assert_eq(hc_stats(t, groups[g], &s, H_TIMEOUT_MS), 0);
		cr_assert_eq((int)m.size, s.n, "stats %s: %u entries, %d lines",
			     groups[g], m.size, s.n);
		for (uint32_t i = 0; i < m.size; i++) {
			const char *name = s.name[i];
			bool steady = g == 1 || g == 2 ||
				      !strcmp(name, "pid") ||
				      !strcmp(name, "version") ||
				      !strcmp(name, "cmd_set") ||
				      !strcmp(name, "curr_items") ||
				      !strcmp(name, "limit_maxbytes");

			cr_assert(str_is(m.ptr[i].key, name),
				  "stats %s: entry %u is %.*s, the line %s",
				  groups[g], i, (int)m.ptr[i].key.via.str.size,
				  m.ptr[i].key.via.str.ptr, name);
			cr_assert(!steady || str_is(m.ptr[i].val, s.value[i]),
				  "stats %s: %s is %.*s, the line says %s",
				  groups[g], name,
				  (int)m.ptr[i].val.via.str.size,
				  m.ptr[i].val.via.str.ptr, s.value[i]);
		}
	}
	m = read_stats_map(id++, "latency");
	cr_assert_gt(m.size, 0);

	req_stats(id, "nonsense");
	flush();
	r = read_reply(id++);
	cr_assert_eq(r.status, PROTO_ST_BAD_REQUEST);
	cr_assert_eq(r.payload.type, MSGPACK_OBJECT_STR, "the error says why");

	m = read_stats_map(id++, "reset");
	cr_assert_eq(m.size, 0);
	m = read_stats_map(id++, "");
	for (uint32_t i = 0; i < m.size; i++)
		if (str_is(m.ptr[i].key, "cmd_set"))
			cr_assert(str_is(m.ptr[i].val, "0"), "cmd_set %.*s",
				  (int)m.ptr[i].val.via.str.size,
				  m.ptr[i].val.via.str.ptr);
	hc_close(&t);
}

/* Groups with arguments: the group, a space, the arguments. */
Test(binary, stats_groups_with_arguments)
{
	struct proto_bin_reply r;
	msgpack_object_map m;
	uint64_t id = 1;

	start(NULL);
	req_set(id, "a:1", "xyz", 3);
	flush();
	expect_status(id++, PROTO_ST_OK);
	m = read_stats_map(id++, "cachedump 1 0");
	cr_assert_eq(m.size, 1);
	cr_expect(str_is(m.ptr[0].key, "a:1"));
	cr_expect(str_is(m.ptr[0].val, "[3 b; 0 s]"), "%.*s",
		  (int)m.ptr[0].val.via.str.size, m.ptr[0].val.via.str.ptr);
	req_stats(id, "cachedump 1");
	flush();
	r = read_reply(id++);
	cr_expect_neq(r.status, PROTO_ST_OK);
	req_stats(id, "detail on");
	flush();
	expect_status(id++, PROTO_ST_OK);
	req_set(id, "a:2", "v", 1);
	flush();
	expect_status(id++, PROTO_ST_OK);
	m = read_stats_map(id++, "detail dump");
	cr_assert_eq(m.size, 1);
	cr_expect(str_is(m.ptr[0].key, "a"));
	cr_expect(str_is(m.ptr[0].val, "get 0 hit 0 set 1 del 0"), "%.*s",
		  (int)m.ptr[0].val.via.str.size, m.ptr[0].val.via.str.ptr);
}

Test(binary, large_values_by_reference_arrive_whole)
{
	size_t n = 1000 * 1000;
	char *v = malloc(n);
	struct proto_bin_reply r;

	start(NULL);
	cr_assert_not_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (char)(i * 7 + (i >> 10));
	req_set(1, "big", v, n);
	for (uint64_t id = 2; id < 6; id++)
		req_key(PROTO_OP_GET, id, "big");
	flush();
	expect_status(1, PROTO_ST_OK);
	for (uint64_t id = 2; id < 6; id++) {
		r = read_reply(id);
		cr_assert_eq(r.status, PROTO_ST_OK);
		cr_assert_eq(r.payload.via.array.ptr[1].via.bin.size, n);
		cr_assert(!memcmp(r.payload.via.array.ptr[1].via.bin.ptr, v, n),
			  "value %lu differs", id);
		cr_assert_gt(r.payload.via.array.ptr[2].via.u64, 0, "cas");
	}
	free(v);
}

Test(binary, malformed_frame_with_an_id_gets_bad_request)
{
	start(NULL);
	/* [99, 5]: an unknown op, and the id is readable. */
	hc_send(c, "\0\0\0\x03\x92\x63\x05", 7);
	hc_send(c, "\0\0\0\x03\x92\x01\x06", 7); /* get with no key */
	req_key(PROTO_OP_NOOP, 7, NULL);
	flush();
	{
		struct proto_bin_reply r;

		r = read_reply(5);
		cr_assert_eq(r.status, PROTO_ST_BAD_REQUEST);
		cr_assert_eq(r.payload.type, MSGPACK_OBJECT_STR,
			     "the error says why");
	}
	expect_status(6, PROTO_ST_BAD_REQUEST);
	expect_status(7, PROTO_ST_OK);
}

Test(binary, frame_without_an_id_closes)
{
	start(NULL);
	hc_send(c, "\0\0\0\x01\xc0", 5); /* nil: not an array */
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
	/* The server goes on. */
	hc_close(&c);
	c = hc_open(srv.port);
	SYNC(c, &srv);
}

Test(binary, claimed_length_over_the_limit_closes_at_once)
{
	const char *extra[] = { "-I", "1m", NULL };

	start(extra);
	/* 16 MiB - 1 claimed, nothing sent after it: closed without
	 * waiting for (or buffering) the body. */
	hc_send(c, "\0\xff\xff\xff", 4);
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
	/* At the limit (1 MiB + 4 KiB) the server waits for the body. */
	hc_close(&c);
	c = hc_open(srv.port);
	hc_send(c, "\0\x10\x10\x00", 4);
	cr_assert_eq(hc_closed(c, 300), 0, "closed a frame at the limit");
	hc_close(&c);
	c = hc_open(srv.port);
	SYNC(c, &srv);
}

Test(binary, depth_bomb_and_huge_claims_close_without_harm)
{
	static char bomb[4 + 1000];

	start(NULL);
	bomb[3] = (char)0xe8; /* 1000 bytes: 0x91 nested arrays */
	bomb[2] = 0x03;
	memset(bomb + 4, 0x91, 1000);
	hc_send(c, bomb, sizeof(bomb));
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
	hc_close(&c);
	/* An array claiming 2^32 - 1 elements in 5 bytes. */
	c = hc_open(srv.port);
	hc_send(c, "\0\0\0\x05\xdd\xff\xff\xff\xff", 9);
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
	hc_close(&c);
	c = hc_open(srv.port);
	SYNC(c, &srv);
}

Test(binary, deep_pipeline_answers_everything)
{
	enum { N = 20000 };
	unsigned int seen = 0;

	start(NULL);
	for (uint64_t id = 1; id <= N; id++) {
		char key[32];

		snprintf(key, sizeof(key), "p%lu", id % 100);
		if (id % 2)
			req_set(id, key, "v", 1);
		else
			req_key(PROTO_OP_GET, id, key);
		if (sb.size > 65536)
			flush();
	}
	flush();
	for (uint64_t id = 1; id <= N; id++) {
		struct proto_bin_reply r = read_reply(id);

		cr_assert(r.status == PROTO_ST_OK ||
				  r.status == PROTO_ST_NOT_FOUND,
			  "id %lu: %s", id, proto_bin_status_name(r.status));
		seen++;
	}
	cr_assert_eq(seen, N);
}

/* Queues a meta op on key with options m (NULL: none), and for META_SET
 * the value val[vlen]. */
static void req_meta(uint32_t op, uint64_t id, const char *key, const void *val,
		     size_t vlen, const struct proto_bin_meta *m)
{
	size_t f = proto_bin_begin(&sb);
	bool set = op == PROTO_OP_META_SET;

	proto_bin_pack_request_head(&pk, op, id, 1 + set + (m != NULL));
	pack_bytes(key);
	if (set)
		msgpack_pack_bin_with_body(&pk, val, vlen);
	if (m)
		proto_bin_pack_meta_opts(&pk, m);
	proto_bin_end(&sb, f);
}

/* A meta reply with the given status; its result map into *mr. */
static void expect_meta(uint64_t id, uint32_t status,
			struct proto_bin_meta_reply *mr)
{
	struct proto_bin_reply r = read_reply(id);

	cr_assert_eq(r.status, status, "id %lu: status %s, want %s", id,
		     proto_bin_status_name(r.status),
		     proto_bin_status_name(status));
	cr_assert_eq(r.payload.type, MSGPACK_OBJECT_MAP,
		     "id %lu: a meta reply's payload is a map", id);
	cr_assert(proto_bin_meta_reply_decode(&r.payload, mr));
}

Test(binary, meta_ops_answer_maps_in_order)
{
	const struct proto_bin_meta v = { .opts = PROTO_META_VALUE };
	const struct proto_bin_meta viv = {
		.opts = PROTO_META_VALUE | PROTO_META_VIVIFY, .vivify_ttl = 30
	};
	const struct proto_bin_meta add = { .opts = PROTO_META_MODE,
					    .mode = 'E' };
	const struct proto_bin_meta inval = { .opts = PROTO_META_INVALIDATE };
	const struct proto_bin_meta incr = {
		.opts = PROTO_META_VALUE | PROTO_META_DELTA, .delta = 5
	};
	struct proto_bin_meta_reply mr;
	size_t big = 100000;
	char *bv = malloc(big);

	start(NULL);
	cr_assert_not_null(bv);
	memset(bv, 'b', big);
	req_meta(PROTO_OP_META_GET, 1, "k", NULL, 0, &v);
	req_meta(PROTO_OP_META_SET, 2, "k", "val", 3, NULL);
	req_meta(PROTO_OP_META_SET, 3, "k", "x", 1, &add);
	req_meta(PROTO_OP_META_GET, 4, "k", NULL, 0, &v);
	req_meta(PROTO_OP_META_DELETE, 5, "k", NULL, 0, &inval);
	req_meta(PROTO_OP_META_GET, 6, "k", NULL, 0, &v);
	req_meta(PROTO_OP_META_GET, 7, "k", NULL, 0, NULL);
	req_meta(PROTO_OP_META_GET, 8, "viv", NULL, 0, &viv);
	req_meta(PROTO_OP_META_SET, 9, "n", "10", 2, NULL);
	req_meta(PROTO_OP_META_ARITH, 10, "n", NULL, 0, &incr);
	req_meta(PROTO_OP_META_ARITH, 11, "k", NULL, 0, NULL);
	req_meta(PROTO_OP_META_SET, 12, "big", bv, big, NULL);
	req_meta(PROTO_OP_META_GET, 13, "big", NULL, 0, &v);
	req_key(PROTO_OP_NOOP, 14, NULL);
	flush();

	expect_meta(1, PROTO_ST_NOT_FOUND, &mr);
	cr_assert_eq(mr.fields, 0, "a miss knows nothing");
	expect_meta(2, PROTO_ST_OK, &mr);
	cr_assert_eq(mr.fields, PROTO_MR_CAS, "a set answers its cas");
	cr_assert_gt(mr.cas, 0);
	expect_meta(3, PROTO_ST_NOT_STORED, &mr);
	expect_meta(4, PROTO_ST_OK, &mr);
	cr_assert(mr.fields & PROTO_MR_VALUE);
	cr_assert_eq(mr.value.n, 3);
	cr_assert(!memcmp(mr.value.p, "val", 3));
	cr_assert_eq(mr.ttl, -1);
	cr_assert_eq(mr.size, 3);
	cr_assert_not(mr.hit);
	expect_meta(5, PROTO_ST_OK, &mr);
	expect_meta(6, PROTO_ST_OK, &mr);
	cr_assert_eq(mr.fields & (PROTO_MR_WON | PROTO_MR_STALE),
		     PROTO_MR_WON | PROTO_MR_STALE);
	cr_assert(!memcmp(mr.value.p, "val", 3), "the stale value");
	expect_meta(7, PROTO_ST_OK, &mr);
	cr_assert_eq(mr.fields & (PROTO_MR_WONBY | PROTO_MR_STALE |
				  PROTO_MR_WON | PROTO_MR_VALUE),
		     PROTO_MR_WONBY | PROTO_MR_STALE);
	cr_assert(mr.hit);
	expect_meta(8, PROTO_ST_OK, &mr);
	cr_assert(mr.fields & PROTO_MR_WON);
	cr_assert_eq(mr.value.n, 0);
	expect_meta(9, PROTO_ST_OK, &mr);
	expect_meta(10, PROTO_ST_OK, &mr);
	cr_assert(mr.fields & PROTO_MR_NUMBER);
	cr_assert_eq(mr.number, 15);
	expect_status(11, PROTO_ST_NON_NUMERIC);
	expect_meta(12, PROTO_ST_OK, &mr);
	expect_meta(13, PROTO_ST_OK, &mr);
	cr_assert_eq(mr.value.n, big, "a large value by reference");
	cr_assert(!memcmp(mr.value.p, bv, big));
	expect_status(14, PROTO_ST_OK);
	free(bv);
}

Test(binary, meta_bad_options_and_too_large)
{
	struct proto_bin_meta_reply mr;
	size_t f;

	start(NULL);
	/* an unknown option: BAD_REQUEST with a message; goes on */
	f = proto_bin_begin(&sb);
	proto_bin_pack_request_head(&pk, PROTO_OP_META_GET, 1, 2);
	pack_bytes("k");
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "bogus", 5);
	msgpack_pack_true(&pk);
	proto_bin_end(&sb, f);
	req_meta(PROTO_OP_META_SET, 2, "k", "old", 3, NULL);
	flush();
	{
		struct proto_bin_reply r = read_reply(1);

		cr_assert_eq(r.status, PROTO_ST_BAD_REQUEST);
		cr_assert_eq(r.payload.type, MSGPACK_OBJECT_STR);
	}
	expect_meta(2, PROTO_ST_OK, &mr);

	/* a value over the limit: TOO_LARGE, and the old value is gone,
	 * as after a too large SET */
	{
		size_t n = 1024 * 1024 + 1;
		char *v = calloc(1, n);

		cr_assert_not_null(v);
		req_meta(PROTO_OP_META_SET, 3, "k", v, n, NULL);
		free(v);
	}
	req_meta(PROTO_OP_META_GET, 4, "k", NULL, 0, NULL);
	flush();
	expect_status(3, PROTO_ST_TOO_LARGE);
	expect_meta(4, PROTO_ST_NOT_FOUND, &mr);
}
