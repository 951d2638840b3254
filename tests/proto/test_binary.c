/*
 * The binary-protocol codec (proto/binary.h, proto/PROTOCOL.md): requests
 * packed with msgpack-c's packer and the codec's encoders, then framed and
 * decoded, op by op and field by field; rejects (the id is known) and fatal
 * bodies (no id), hostile bodies that must not crash nor allocate much;
 * frame headers; replies; names.
 *
 * Every body is decoded from a malloc'd copy of exactly its length, so that
 * ASan (build-asan) sees any read past its end.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "proto/binary.h"
#include "proto/text.h"

#define MAX_VALUE (1u << 20)

static struct proto_bin_decoder dec;
static msgpack_sbuffer sb;
static msgpack_packer pk;
static size_t frame_at;
static char *body;
static size_t body_n;

static void setup(void)
{
	proto_bin_decoder_init(&dec);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	body = NULL;
	body_n = 0;
}

static void teardown(void)
{
	proto_bin_decoder_destroy(&dec);
	msgpack_sbuffer_destroy(&sb);
	free(body);
}

TestSuite(binary, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers ---- */

/* Starts a request frame in a cleared sb: [op, id, (nargs args follow)]. */
static void req_begin(uint32_t op, uint64_t id, uint32_t nargs)
{
	msgpack_sbuffer_clear(&sb);
	frame_at = proto_bin_begin(&sb);
	cr_assert_eq(frame_at, 0);
	proto_bin_pack_request_head(&pk, op, id, nargs);
}

static void reply_begin(uint64_t id, uint32_t status)
{
	msgpack_sbuffer_clear(&sb);
	frame_at = proto_bin_begin(&sb);
	cr_assert_eq(frame_at, 0);
	proto_bin_pack_reply_head(&pk, id, status);
}

/* Starts a raw frame whose body the caller packs freely. */
static void raw_begin(void)
{
	msgpack_sbuffer_clear(&sb);
	frame_at = proto_bin_begin(&sb);
	cr_assert_eq(frame_at, 0);
}

static void pack_str(const char *s)
{
	msgpack_pack_str(&pk, strlen(s));
	msgpack_pack_str_body(&pk, s, strlen(s));
}

static void pack_bin(const void *p, size_t n)
{
	msgpack_pack_bin(&pk, n);
	msgpack_pack_bin_body(&pk, p, n);
}

/* Ends the frame, checks its header and copies its body to `body`. */
static void finish(void)
{
	uint32_t len = 0;

	proto_bin_end(&sb, frame_at);
	cr_assert_eq(proto_bin_frame_len(sb.data, sb.size,
					 proto_bin_body_limit(MAX_VALUE), &len),
		     PROTO_BIN_FRAME_OK);
	cr_assert_eq((size_t)len + PROTO_BIN_HEADER, sb.size);
	free(body);
	body_n = len;
	body = malloc(body_n ? body_n : 1);
	cr_assert_not_null(body);
	memcpy(body, sb.data + PROTO_BIN_HEADER, body_n);
}

/* Sets `body` to n raw bytes. */
static void set_body(const void *p, size_t n)
{
	free(body);
	body_n = n;
	body = malloc(n ? n : 1);
	cr_assert_not_null(body);
	memcpy(body, p, n);
}

static enum proto_bin_result decode_max(struct proto_bin_req *r,
					uint32_t max_value, uint32_t *st,
					const char **err)
{
	*st = UINT32_MAX;
	*err = NULL;
	return proto_bin_decode_request(&dec, body, body_n, max_value, r, st,
					err);
}

static enum proto_bin_result decode(struct proto_bin_req *r, uint32_t *st,
				    const char **err)
{
	return decode_max(r, MAX_VALUE, st, err);
}

static void expect_ok(struct proto_bin_req *r)
{
	uint32_t st;
	const char *err;
	enum proto_bin_result res = decode(r, &st, &err);

	cr_assert_eq(res, PROTO_BIN_OK, "got %d status %u error %s", res, st,
		     err ? err : "(null)");
}

static void expect_reject(uint32_t want_status, uint64_t want_id)
{
	struct proto_bin_req r;
	uint32_t st;
	const char *err;

	cr_assert_eq(decode(&r, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, want_status, "status %u, want %u", st, want_status);
	cr_assert_not_null(err);
	cr_assert_gt(strlen(err), 0);
	cr_assert_eq(r.id, want_id);
}

static void expect_fatal(void)
{
	struct proto_bin_req r;
	uint32_t st;
	const char *err;

	cr_assert_eq(decode(&r, &st, &err), PROTO_BIN_FATAL);
}

static void expect_reply_fatal(void)
{
	struct proto_bin_reply rep;

	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_FATAL);
}

static void assert_bytes(struct proto_bin_bytes b, const void *p, size_t n)
{
	cr_assert_eq(b.n, n, "length %u, want %zu", b.n, n);
	if (n)
		cr_assert(memcmp(b.p, p, n) == 0);
	/* Points into the body. */
	if (n)
		cr_assert(b.p >= body && b.p + n <= body + body_n);
}

static void assert_str(struct proto_bin_bytes b, const char *s)
{
	assert_bytes(b, s, strlen(s));
}

/* ---- every op round-trips ---- */

Test(binary, protocol_example)
{
	static const unsigned char want[] = { 0x00, 0x00, 0x00, 0x08,
					      0x94, 0x04, 0x07, 0xa1,
					      0x6b, 0xc4, 0x01, 0x76 };
	static const unsigned char want_reply[] = { 0x00, 0x00, 0x00, 0x04,
						    0x93, 0x07, 0x00, 0x01 };

	req_begin(PROTO_OP_SET, 7, 2);
	pack_str("k");
	pack_bin("v", 1);
	finish();
	cr_assert_eq(sb.size, sizeof(want));
	cr_assert(memcmp(sb.data, want, sizeof(want)) == 0);

	reply_begin(7, PROTO_ST_OK);
	msgpack_pack_uint64(&pk, 1);
	finish();
	cr_assert_eq(sb.size, sizeof(want_reply));
	cr_assert(memcmp(sb.data, want_reply, sizeof(want_reply)) == 0);
}

Test(binary, key_ops)
{
	static const uint32_t ops[] = { PROTO_OP_GET, PROTO_OP_GETS,
					PROTO_OP_DELETE };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct proto_bin_req r;

		req_begin(ops[i], 1000 + i, 1);
		pack_str("user:42");
		finish();
		expect_ok(&r);
		cr_assert_eq(r.op, ops[i]);
		cr_assert_eq(r.id, 1000 + i);
		assert_str(r.key, "user:42");
		cr_assert_eq(r.value.n, 0);
		cr_assert_eq(r.nkeys, 0);

		/* bin keys too */
		req_begin(ops[i], UINT64_MAX, 1);
		pack_bin("k\x80\xff", 3);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.id, UINT64_MAX);
		assert_bytes(r.key, "k\x80\xff", 3);
	}
}

Test(binary, storage_ops_all_fields)
{
	static const uint32_t ops[] = { PROTO_OP_SET, PROTO_OP_ADD,
					PROTO_OP_REPLACE };
	unsigned char value[256];

	for (int i = 0; i < 256; i++)
		value[i] = (unsigned char)i;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct proto_bin_req r;

		req_begin(ops[i], 5, 4);
		pack_str("k");
		pack_bin(value, sizeof(value));
		msgpack_pack_uint32(&pk, UINT32_MAX);
		msgpack_pack_int64(&pk, -1);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.op, ops[i]);
		cr_assert_eq(r.id, 5);
		assert_str(r.key, "k");
		assert_bytes(r.value, value, sizeof(value));
		cr_assert_eq(r.flags, UINT32_MAX);
		cr_assert_eq(r.exptime, -1);

		/* value as str; large exptime (unix time); INT64_MIN */
		req_begin(ops[i], 6, 4);
		pack_str("k2");
		msgpack_pack_str(&pk, sizeof(value));
		msgpack_pack_str_body(&pk, value, sizeof(value));
		msgpack_pack_uint32(&pk, 12345);
		msgpack_pack_int64(&pk, INT64_MIN);
		finish();
		expect_ok(&r);
		assert_bytes(r.value, value, sizeof(value));
		cr_assert_eq(r.flags, 12345);
		cr_assert_eq(r.exptime, INT64_MIN);

		req_begin(ops[i], 6, 4);
		pack_str("k2");
		pack_bin("", 0);
		msgpack_pack_uint32(&pk, 0);
		msgpack_pack_uint64(&pk, INT64_MAX);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.value.n, 0);
		cr_assert_eq(r.exptime, INT64_MAX);
	}
}

Test(binary, storage_optional_args)
{
	struct proto_bin_req r;

	/* left out */
	req_begin(PROTO_OP_SET, 1, 2);
	pack_str("k");
	pack_bin("v", 1);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 0);
	cr_assert_eq(r.exptime, 0);
	assert_str(r.value, "v");

	/* flags only */
	req_begin(PROTO_OP_ADD, 2, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_uint32(&pk, 9);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 9);
	cr_assert_eq(r.exptime, 0);

	/* nil, nil */
	req_begin(PROTO_OP_REPLACE, 3, 4);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_nil(&pk);
	msgpack_pack_nil(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 0);
	cr_assert_eq(r.exptime, 0);

	/* nil flags, exptime given */
	req_begin(PROTO_OP_SET, 4, 4);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_nil(&pk);
	msgpack_pack_int64(&pk, 2592000);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 0);
	cr_assert_eq(r.exptime, 2592000);
}

Test(binary, append_prepend)
{
	static const uint32_t ops[] = { PROTO_OP_APPEND, PROTO_OP_PREPEND };

	for (size_t i = 0; i < 2; i++) {
		struct proto_bin_req r;

		req_begin(ops[i], 77, 2);
		pack_str("key");
		pack_bin("\0\r\n", 3);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.op, ops[i]);
		assert_str(r.key, "key");
		assert_bytes(r.value, "\0\r\n", 3);

		/* no flags/exptime: arity 2 exactly */
		req_begin(ops[i], 78, 3);
		pack_str("key");
		pack_bin("x", 1);
		msgpack_pack_uint32(&pk, 1);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 78);
	}
}

Test(binary, cas)
{
	struct proto_bin_req r;

	req_begin(PROTO_OP_CAS, 9, 5);
	pack_str("k");
	pack_bin("val", 3);
	msgpack_pack_uint32(&pk, 4);
	msgpack_pack_int64(&pk, -30);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_CAS);
	assert_str(r.key, "k");
	assert_str(r.value, "val");
	cr_assert_eq(r.flags, 4);
	cr_assert_eq(r.exptime, -30);
	cr_assert_eq(r.cas, UINT64_MAX);

	/* flags and exptime nil: defaults */
	req_begin(PROTO_OP_CAS, 10, 5);
	pack_str("k");
	pack_bin("val", 3);
	msgpack_pack_nil(&pk);
	msgpack_pack_nil(&pk);
	msgpack_pack_uint64(&pk, 1);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 0);
	cr_assert_eq(r.exptime, 0);
	cr_assert_eq(r.cas, 1);

	/* cas nil or negative or str */
	req_begin(PROTO_OP_CAS, 11, 5);
	pack_str("k");
	pack_bin("val", 3);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_int64(&pk, 0);
	msgpack_pack_nil(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 11);

	req_begin(PROTO_OP_CAS, 12, 5);
	pack_str("k");
	pack_bin("val", 3);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_int64(&pk, 0);
	msgpack_pack_int64(&pk, -1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 12);

	/* 4 arguments */
	req_begin(PROTO_OP_CAS, 13, 4);
	pack_str("k");
	pack_bin("val", 3);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_int64(&pk, 0);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 13);
}

Test(binary, incr_decr)
{
	static const uint32_t ops[] = { PROTO_OP_INCR, PROTO_OP_DECR };
	static const uint64_t deltas[] = { 0, 1, 127, 128, 65536, UINT64_MAX };

	for (size_t i = 0; i < 2; i++) {
		struct proto_bin_req r;

		for (size_t j = 0; j < sizeof(deltas) / sizeof(deltas[0]);
		     j++) {
			req_begin(ops[i], j, 2);
			pack_str("n");
			msgpack_pack_uint64(&pk, deltas[j]);
			finish();
			expect_ok(&r);
			cr_assert_eq(r.op, ops[i]);
			assert_str(r.key, "n");
			cr_assert_eq(r.delta, deltas[j]);
		}
		/* negative, nil, str delta */
		req_begin(ops[i], 50, 2);
		pack_str("n");
		msgpack_pack_int64(&pk, -1);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 50);

		req_begin(ops[i], 51, 2);
		pack_str("n");
		msgpack_pack_nil(&pk);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 51);

		req_begin(ops[i], 52, 2);
		pack_str("n");
		pack_str("1");
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 52);
	}
}

Test(binary, touch_gat)
{
	static const uint32_t ops[] = { PROTO_OP_TOUCH, PROTO_OP_GAT };
	static const int64_t exps[] = { 0,	   -1,	      2592000, 2592001,
					INT64_MIN, INT64_MAX, -129 };

	for (size_t i = 0; i < 2; i++) {
		struct proto_bin_req r;

		for (size_t j = 0; j < sizeof(exps) / sizeof(exps[0]); j++) {
			req_begin(ops[i], 3, 2);
			pack_str("t");
			msgpack_pack_int64(&pk, exps[j]);
			finish();
			expect_ok(&r);
			cr_assert_eq(r.op, ops[i]);
			assert_str(r.key, "t");
			cr_assert_eq(r.exptime, exps[j]);
		}
		/* above INT64_MAX */
		req_begin(ops[i], 4, 2);
		pack_str("t");
		msgpack_pack_uint64(&pk, (uint64_t)INT64_MAX + 1);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 4);

		/* exptime required */
		req_begin(ops[i], 5, 1);
		pack_str("t");
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 5);

		req_begin(ops[i], 6, 2);
		pack_str("t");
		msgpack_pack_nil(&pk);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 6);
	}
}

Test(binary, mget)
{
	struct proto_bin_req r;
	struct proto_bin_bytes k;
	char big[251];

	memset(big, 'b', sizeof(big));
	req_begin(PROTO_OP_MGET, 8, 1);
	msgpack_pack_array(&pk, 3);
	pack_str("a");
	pack_bin("bb", 2);
	pack_str("ccc");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_MGET);
	cr_assert_eq(r.id, 8);
	cr_assert_eq(r.nkeys, 3);
	cr_assert_eq(r.key.n, 0);
	cr_assert(proto_bin_mget_key(&r, 0, &k));
	assert_str(k, "a");
	cr_assert(proto_bin_mget_key(&r, 1, &k));
	assert_str(k, "bb");
	cr_assert(proto_bin_mget_key(&r, 2, &k));
	assert_str(k, "ccc");
	cr_assert_not(proto_bin_mget_key(&r, 3, &k));
	cr_assert_not(proto_bin_mget_key(&r, UINT32_MAX, &k));

	/* bad keys inside: the request is OK, each bad key is refused */
	req_begin(PROTO_OP_MGET, 9, 1);
	msgpack_pack_array(&pk, 6);
	pack_str("");
	msgpack_pack_uint32(&pk, 5);
	pack_bin(big, 251);
	msgpack_pack_nil(&pk);
	pack_str("fine");
	pack_str("x\x7f");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.nkeys, 6);
	cr_assert_not(proto_bin_mget_key(&r, 0, &k));
	cr_assert_not(proto_bin_mget_key(&r, 1, &k));
	cr_assert_not(proto_bin_mget_key(&r, 2, &k));
	cr_assert_not(proto_bin_mget_key(&r, 3, &k));
	cr_assert(proto_bin_mget_key(&r, 4, &k));
	assert_str(k, "fine");
	cr_assert(proto_bin_mget_key(&r, 5, &k)); /* control bytes are fine */
	assert_str(k, "x\x7f");

	/* empty list */
	req_begin(PROTO_OP_MGET, 10, 1);
	msgpack_pack_array(&pk, 0);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.nkeys, 0);
	cr_assert_not(proto_bin_mget_key(&r, 0, &k));

	/* not an array */
	req_begin(PROTO_OP_MGET, 11, 1);
	pack_str("a");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 11);

	/* keys as separate args */
	req_begin(PROTO_OP_MGET, 12, 2);
	pack_str("a");
	pack_str("b");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 12);
}

Test(binary, mget_many_keys)
{
	struct proto_bin_req r;
	struct proto_bin_bytes k;
	char name[16];

	req_begin(PROTO_OP_MGET, 1, 1);
	msgpack_pack_array(&pk, 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "key%d", i);
		pack_str(name);
	}
	finish();
	expect_ok(&r);
	cr_assert_eq(r.nkeys, 1000);
	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "key%u", i);
		cr_assert(proto_bin_mget_key(&r, i, &k));
		assert_str(k, name);
	}
}

Test(binary, flush_all)
{
	struct proto_bin_req r;

	req_begin(PROTO_OP_FLUSH_ALL, 1, 0);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_FLUSH_ALL);
	cr_assert_eq(r.delay, 0);

	req_begin(PROTO_OP_FLUSH_ALL, 2, 1);
	msgpack_pack_nil(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.delay, 0);

	req_begin(PROTO_OP_FLUSH_ALL, 3, 1);
	msgpack_pack_int64(&pk, 60);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.delay, 60);

	req_begin(PROTO_OP_FLUSH_ALL, 4, 1);
	msgpack_pack_int64(&pk, -5);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.delay, -5);

	req_begin(PROTO_OP_FLUSH_ALL, 5, 1);
	pack_str("60");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 5);

	req_begin(PROTO_OP_FLUSH_ALL, 6, 2);
	msgpack_pack_int64(&pk, 1);
	msgpack_pack_int64(&pk, 1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 6);
}

Test(binary, scan)
{
	struct proto_bin_req r;

	/* cursor only: count 10, no match */
	req_begin(PROTO_OP_SCAN, 1, 1);
	msgpack_pack_uint64(&pk, 0);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_SCAN);
	cr_assert_eq(r.cursor, 0);
	cr_assert_eq(r.count, 10);
	cr_assert_not(r.has_match);

	/* all given */
	req_begin(PROTO_OP_SCAN, 2, 3);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	msgpack_pack_uint32(&pk, 1000);
	pack_str("user:*");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.cursor, UINT64_MAX);
	cr_assert_eq(r.count, 1000);
	cr_assert(r.has_match);
	assert_str(r.match, "user:*");

	/* count 1, match as bin */
	req_begin(PROTO_OP_SCAN, 3, 3);
	msgpack_pack_uint64(&pk, 42);
	msgpack_pack_uint32(&pk, 1);
	pack_bin("a?c", 3);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.cursor, 42);
	cr_assert_eq(r.count, 1);
	cr_assert(r.has_match);
	assert_str(r.match, "a?c");

	/* nil count and match: defaults */
	req_begin(PROTO_OP_SCAN, 4, 3);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_nil(&pk);
	msgpack_pack_nil(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.cursor, 7);
	cr_assert_eq(r.count, 10);
	cr_assert_not(r.has_match);

	/* nil count, match given */
	req_begin(PROTO_OP_SCAN, 5, 3);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_nil(&pk);
	pack_str("*");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.count, 10);
	cr_assert(r.has_match);
	assert_str(r.match, "*");

	/* count only */
	req_begin(PROTO_OP_SCAN, 6, 2);
	msgpack_pack_uint64(&pk, 7);
	msgpack_pack_uint32(&pk, 500);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.count, 500);
	cr_assert_not(r.has_match);
}

Test(binary, scan_bad_args)
{
	static const int64_t bad_counts[] = { 0, 1001, -1, 65536,
					      (int64_t)UINT32_MAX + 2 };

	for (size_t i = 0; i < sizeof(bad_counts) / sizeof(bad_counts[0]);
	     i++) {
		req_begin(PROTO_OP_SCAN, 100 + i, 2);
		msgpack_pack_uint64(&pk, 0);
		msgpack_pack_int64(&pk, bad_counts[i]);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 100 + i);
	}
	/* cursor missing, nil, negative */
	req_begin(PROTO_OP_SCAN, 1, 0);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 1);

	req_begin(PROTO_OP_SCAN, 2, 1);
	msgpack_pack_nil(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 2);

	req_begin(PROTO_OP_SCAN, 3, 1);
	msgpack_pack_int64(&pk, -1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 3);

	/* match an integer */
	req_begin(PROTO_OP_SCAN, 4, 3);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint32(&pk, 5);
	msgpack_pack_uint32(&pk, 5);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 4);

	/* 4 args */
	req_begin(PROTO_OP_SCAN, 5, 4);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint32(&pk, 5);
	pack_str("*");
	pack_str("*");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 5);
}

Test(binary, stats)
{
	struct proto_bin_req r;

	req_begin(PROTO_OP_STATS, 1, 0);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_STATS);
	cr_assert_eq(r.text.n, 0);

	req_begin(PROTO_OP_STATS, 2, 1);
	msgpack_pack_nil(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.text.n, 0);

	req_begin(PROTO_OP_STATS, 3, 1);
	pack_str("slabs");
	finish();
	expect_ok(&r);
	assert_str(r.text, "slabs");

	req_begin(PROTO_OP_STATS, 4, 1);
	pack_str("");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.text.n, 0);

	req_begin(PROTO_OP_STATS, 5, 1);
	msgpack_pack_uint32(&pk, 1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 5);

	req_begin(PROTO_OP_STATS, 6, 2);
	pack_str("a");
	pack_str("b");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 6);
}

Test(binary, no_arg_ops)
{
	static const uint32_t ops[] = { PROTO_OP_VERSION, PROTO_OP_NOOP,
					PROTO_OP_QUIT };

	for (size_t i = 0; i < 3; i++) {
		struct proto_bin_req r;

		req_begin(ops[i], 40 + i, 0);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.op, ops[i]);
		cr_assert_eq(r.id, 40 + i);
		cr_assert_eq(r.key.n, 0);

		req_begin(ops[i], 50 + i, 1);
		msgpack_pack_nil(&pk);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 50 + i);
	}
}

Test(binary, auth)
{
	struct proto_bin_req r;

	req_begin(PROTO_OP_AUTH, 1, 1);
	pack_str("s3cret pass");
	finish();
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_AUTH);
	assert_str(r.text, "s3cret pass");
	cr_assert_eq(r.key.n, 0);
	cr_assert_null(r.user.p, "no user name sent");

	/* [user, password] */
	req_begin(PROTO_OP_AUTH, 5, 2);
	pack_str("alice");
	pack_str("s3cret");
	finish();
	expect_ok(&r);
	assert_str(r.user, "alice");
	assert_str(r.text, "s3cret");

	req_begin(PROTO_OP_AUTH, 6, 2);
	msgpack_pack_nil(&pk);
	pack_str("s3cret");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 6);

	req_begin(PROTO_OP_AUTH, 2, 1);
	pack_bin("\0\1", 2);
	finish();
	expect_ok(&r);
	assert_bytes(r.text, "\0\1", 2);

	req_begin(PROTO_OP_AUTH, 3, 0);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 3);

	req_begin(PROTO_OP_AUTH, 4, 1);
	msgpack_pack_nil(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 4);
}

/* A request with the same id decoded over and over with one decoder, and
 * ids of every width. */
Test(binary, ids_and_decoder_reuse)
{
	static const uint64_t ids[] = {
		0,	   1,	  127,	 128,	     255,
		256,	   65535, 65536, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
		UINT64_MAX
	};

	for (int round = 0; round < 50; round++)
		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			struct proto_bin_req r;

			req_begin(PROTO_OP_NOOP, ids[i], 0);
			finish();
			expect_ok(&r);
			cr_assert_eq(r.id, ids[i]);
		}
}

/* ---- rejects: the id is known ---- */

/* The fewest and most args per op (PROTOCOL.md). */
static const struct {
	uint32_t op;
	uint32_t min, max;
} arities[] = {
	{ PROTO_OP_GET, 1, 1 },	       { PROTO_OP_GETS, 1, 1 },
	{ PROTO_OP_MGET, 1, 1 },       { PROTO_OP_SET, 2, 4 },
	{ PROTO_OP_ADD, 2, 4 },	       { PROTO_OP_REPLACE, 2, 4 },
	{ PROTO_OP_APPEND, 2, 2 },     { PROTO_OP_PREPEND, 2, 2 },
	{ PROTO_OP_CAS, 5, 5 },	       { PROTO_OP_DELETE, 1, 1 },
	{ PROTO_OP_INCR, 2, 2 },       { PROTO_OP_DECR, 2, 2 },
	{ PROTO_OP_TOUCH, 2, 2 },      { PROTO_OP_GAT, 2, 2 },
	{ PROTO_OP_FLUSH_ALL, 0, 1 },  { PROTO_OP_SCAN, 1, 3 },
	{ PROTO_OP_STATS, 0, 1 },      { PROTO_OP_VERSION, 0, 0 },
	{ PROTO_OP_NOOP, 0, 0 },       { PROTO_OP_QUIT, 0, 0 },
	{ PROTO_OP_AUTH, 1, 2 },       { PROTO_OP_META_GET, 1, 2 },
	{ PROTO_OP_META_SET, 2, 3 },   { PROTO_OP_META_DELETE, 1, 2 },
	{ PROTO_OP_META_ARITH, 1, 2 }, { PROTO_OP_FLUSH_PREFIX, 1, 1 },
};

Test(binary, wrong_arity)
{
	cr_assert_eq(sizeof(arities) / sizeof(arities[0]), PROTO_OP_MAX);
	for (size_t i = 0; i < sizeof(arities) / sizeof(arities[0]); i++) {
		uint64_t id = 0x1122334455667700u + i;

		if (arities[i].min > 0) {
			req_begin(arities[i].op, id, arities[i].min - 1);
			for (uint32_t j = 0; j + 1 < arities[i].min; j++)
				pack_str("k");
			finish();
			expect_reject(PROTO_ST_BAD_REQUEST, id);
		}
		req_begin(arities[i].op, id, arities[i].max + 1);
		for (uint32_t j = 0; j < arities[i].max + 1; j++)
			pack_str("k");
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, id);

		/* far too many */
		req_begin(arities[i].op, id, 20);
		for (uint32_t j = 0; j < 20; j++)
			msgpack_pack_nil(&pk);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, id);
	}
}

Test(binary, unknown_ops)
{
	static const uint64_t ops[] = { 0,
					27,
					28,
					127,
					255,
					UINT32_MAX,
					(uint64_t)UINT32_MAX + 1,
					(uint64_t)UINT32_MAX + 4,
					UINT64_MAX };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		raw_begin();
		msgpack_pack_array(&pk, 3);
		msgpack_pack_uint64(&pk, ops[i]);
		msgpack_pack_uint64(&pk, 99 + i);
		pack_str("k");
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 99 + i);

		raw_begin();
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, ops[i]);
		msgpack_pack_uint64(&pk, 7);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 7);
	}
}

/* Every op with a key, a bad key in its place. */
static void bad_key_everywhere(const char *key, size_t n, uint32_t want)
{
	for (size_t i = 0; i < sizeof(arities) / sizeof(arities[0]); i++) {
		uint32_t op = arities[i].op;

		if (op == PROTO_OP_MGET || op == PROTO_OP_FLUSH_ALL ||
		    op == PROTO_OP_SCAN || op == PROTO_OP_STATS ||
		    op == PROTO_OP_VERSION || op == PROTO_OP_NOOP ||
		    op == PROTO_OP_QUIT || op == PROTO_OP_AUTH)
			continue;
		req_begin(op, 500 + i, arities[i].min);
		pack_bin(key, n);
		for (uint32_t j = 1; j < arities[i].min; j++)
			if (j == 1 && op != PROTO_OP_INCR &&
			    op != PROTO_OP_DECR && op != PROTO_OP_TOUCH &&
			    op != PROTO_OP_GAT)
				pack_bin("v", 1);
			else
				msgpack_pack_uint32(&pk, 1);
		finish();
		if (want == PROTO_ST_OK) {
			struct proto_bin_req r;

			expect_ok(&r);
			assert_bytes(r.key, key, n);
		} else {
			expect_reject(want, 500 + i);
		}
	}
}

Test(binary, keys)
{
	char k[256];

	memset(k, 'a', sizeof(k));
	bad_key_everywhere(k, 1, PROTO_ST_OK);
	bad_key_everywhere(k, 250, PROTO_ST_OK);
	bad_key_everywhere(k, 251, PROTO_ST_BAD_KEY);
	bad_key_everywhere(k, 0, PROTO_ST_BAD_KEY);
	/* any byte is a key byte, those the text protocol refuses too */
	bad_key_everywhere("a b", 3, PROTO_ST_OK);
	bad_key_everywhere(" ", 1, PROTO_ST_OK);
	bad_key_everywhere("x\0y", 3, PROTO_ST_OK);
	bad_key_everywhere("\0", 1, PROTO_ST_OK);
	bad_key_everywhere("x\r\n", 3, PROTO_ST_OK);
	bad_key_everywhere("\n", 1, PROTO_ST_OK);
	bad_key_everywhere("a\x7f", 2, PROTO_ST_OK);
	bad_key_everywhere("\x7f", 1, PROTO_ST_OK);
	bad_key_everywhere("\x01\t\r", 3, PROTO_ST_OK);
	bad_key_everywhere("\x80\xff", 2, PROTO_ST_OK);
	for (int c = 0; c < 256; c++) {
		char one = (char)c, mid[3] = { 'a', (char)c, 'b' };

		cr_assert(proto_bin_key_ok(&one, 1), "byte 0x%02x", c);
		cr_assert(proto_bin_key_ok(mid, 3), "byte 0x%02x", c);
		bad_key_everywhere(&one, 1, PROTO_ST_OK);
		bad_key_everywhere(mid, 3, PROTO_ST_OK);
	}
	/* the text protocol's rule stays memcached's */
	cr_assert_not(proto_key_ok("a b", 3));
	cr_assert_not(proto_key_ok("a\0b", 3));
	cr_assert_not(proto_key_ok("a\nb", 3));
	cr_assert(proto_bin_key_ok(k, 250));
	cr_assert_not(proto_bin_key_ok(k, 251));
	cr_assert_not(proto_bin_key_ok(k, 0));
	cr_assert_not(proto_bin_key_ok(NULL, 0));
	memset(k, 0, sizeof(k));
	bad_key_everywhere(k, 250, PROTO_ST_OK);
	bad_key_everywhere(k, 251, PROTO_ST_BAD_KEY);
}

/* An mget's keys follow the same rule, one by one. */
Test(binary, mget_binary_keys)
{
	static const char *const keys[] = { "a b", "\0", "x\ny", "" };
	static const size_t lens[] = { 3, 1, 3, 0 };
	struct proto_bin_req r;
	struct proto_bin_bytes b;

	req_begin(PROTO_OP_MGET, 9, 1);
	msgpack_pack_array(&pk, 4);
	for (int i = 0; i < 4; i++)
		pack_bin(keys[i], lens[i]);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.nkeys, 4);
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert(proto_bin_mget_key(&r, i, &b));
		assert_bytes(b, keys[i], lens[i]);
	}
	cr_assert_not(proto_bin_mget_key(&r, 3, &b));
}

Test(binary, key_as_str_250_and_251)
{
	char k[252];
	struct proto_bin_req r;

	memset(k, 'z', sizeof(k));
	k[250] = '\0';
	req_begin(PROTO_OP_GET, 1, 1);
	pack_str(k);
	finish();
	expect_ok(&r);
	assert_bytes(r.key, k, 250);

	k[250] = 'z';
	k[251] = '\0';
	req_begin(PROTO_OP_GET, 2, 1);
	pack_str(k);
	finish();
	expect_reject(PROTO_ST_BAD_KEY, 2);
}

Test(binary, wrong_types)
{
	/* key as integer, nil, array, map */
	req_begin(PROTO_OP_GET, 1, 1);
	msgpack_pack_uint32(&pk, 5);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 1);

	req_begin(PROTO_OP_SET, 2, 2);
	msgpack_pack_nil(&pk);
	pack_bin("v", 1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 2);

	req_begin(PROTO_OP_DELETE, 3, 1);
	msgpack_pack_array(&pk, 1);
	pack_str("k");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 3);

	req_begin(PROTO_OP_DELETE, 4, 1);
	msgpack_pack_map(&pk, 0);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 4);

	/* value as integer / nil */
	req_begin(PROTO_OP_SET, 5, 2);
	pack_str("k");
	msgpack_pack_uint32(&pk, 1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 5);

	req_begin(PROTO_OP_APPEND, 6, 2);
	pack_str("k");
	msgpack_pack_nil(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 6);

	/* flags negative, above 2^32-1, a string, a float, a bool */
	req_begin(PROTO_OP_SET, 7, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_int64(&pk, -1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 7);

	req_begin(PROTO_OP_SET, 8, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_uint64(&pk, (uint64_t)UINT32_MAX + 1);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 8);

	req_begin(PROTO_OP_SET, 9, 3);
	pack_str("k");
	pack_bin("v", 1);
	pack_str("1");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 9);

	req_begin(PROTO_OP_ADD, 10, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_double(&pk, 1.0);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 10);

	req_begin(PROTO_OP_ADD, 11, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_true(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 11);

	/* exptime a string, above INT64_MAX */
	req_begin(PROTO_OP_SET, 12, 4);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_uint32(&pk, 0);
	pack_str("0");
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 12);

	req_begin(PROTO_OP_SET, 13, 4);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 13);

	/* delay a string */
	req_begin(PROTO_OP_FLUSH_ALL, 14, 1);
	msgpack_pack_false(&pk);
	finish();
	expect_reject(PROTO_ST_BAD_REQUEST, 14);
}

Test(binary, flags_limits)
{
	struct proto_bin_req r;

	req_begin(PROTO_OP_SET, 1, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_uint64(&pk, UINT32_MAX);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, UINT32_MAX);

	/* a signed encoding of a non-negative value is still unsigned */
	req_begin(PROTO_OP_SET, 2, 3);
	pack_str("k");
	pack_bin("v", 1);
	msgpack_pack_int64(&pk, 7);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.flags, 7);
}

Test(binary, too_large_value)
{
	static char big[1025];
	struct proto_bin_req r;
	uint32_t st;
	const char *err;

	memset(big, 'x', sizeof(big));
	req_begin(PROTO_OP_SET, 33, 2);
	pack_str("k");
	pack_bin(big, 1024);
	finish();
	cr_assert_eq(decode_max(&r, 1024, &st, &err), PROTO_BIN_OK);
	cr_assert_eq(r.value.n, 1024);

	req_begin(PROTO_OP_SET, 34, 2);
	pack_str("k");
	pack_bin(big, 1025);
	finish();
	cr_assert_eq(decode_max(&r, 1024, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, PROTO_ST_TOO_LARGE);
	cr_assert_eq(r.id, 34);
	cr_assert_not_null(err);

	/* every storage op; max_value 0 */
	for (size_t i = 0; i < sizeof(arities) / sizeof(arities[0]); i++) {
		uint32_t op = arities[i].op;

		if (op < PROTO_OP_SET || op > PROTO_OP_CAS)
			continue;
		req_begin(op, 35 + i, arities[i].min);
		pack_str("k");
		pack_str("vv");
		for (uint32_t j = 2; j < arities[i].min; j++)
			msgpack_pack_uint32(&pk, 1);
		finish();
		cr_assert_eq(decode_max(&r, 1, &st, &err), PROTO_BIN_REJECT,
			     "op %u", op);
		cr_assert_eq(st, PROTO_ST_TOO_LARGE);
		cr_assert_eq(r.id, 35 + i);
		cr_assert_eq(decode_max(&r, 2, &st, &err), PROTO_BIN_OK);
	}

	/* a value of exactly max_value in a frame: a 1 MiB value fits the
	 * body limit */
	{
		char *v = malloc(MAX_VALUE + 1);

		cr_assert_not_null(v);
		memset(v, 0xab, MAX_VALUE + 1);
		req_begin(PROTO_OP_SET, 36, 4);
		pack_bin(big, 250);
		pack_bin(v, MAX_VALUE);
		msgpack_pack_uint32(&pk, UINT32_MAX);
		msgpack_pack_int64(&pk, INT64_MIN);
		finish();
		expect_ok(&r);
		cr_assert_eq(r.value.n, MAX_VALUE);

		req_begin(PROTO_OP_SET, 37, 2);
		pack_str("k");
		pack_bin(v, MAX_VALUE + 1);
		finish();
		expect_reject(PROTO_ST_TOO_LARGE, 37);
		free(v);
	}
}

/* ---- fatal: no id ---- */

Test(binary, fatal_shapes)
{
	static const struct {
		const char *b;
		size_t n;
	} cases[] = {
#define B(lit) { lit, sizeof(lit) - 1 }
		B(""),		       /* empty body */
		B("\x01"),	       /* an int */
		B("\xc0"),	       /* nil */
		B("\xa1k"),	       /* a str */
		B("\x81\x01\x02"),     /* a map */
		B("\x90"),	       /* [] */
		B("\x91\x01"),	       /* [1] */
		B("\x92\xff\x01"),     /* [-1, 1] */
		B("\x92\x01\xff"),     /* [1, -1] */
		B("\x92\xc0\x01"),     /* [nil, 1] */
		B("\x92\x01\xc0"),     /* [1, nil] */
		B("\x92\xa1\x31\x01"), /* ["1", 1] */
		B("\x92\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00\x01"), /* [1.0,1] */
		B("\x92\x01\xca\x3f\x80\x00\x00"), /* [1,1.0f] */
		B("\x92\xc3\x01"),		   /* [true,1] */
		B("\x92\x91\x01\x01"),		   /* [[1],1] */
		B("\x92\x13\xd0\xff"),		   /* [19, int8 -1] */
		B("\x92\xd3\x80\x00\x00\x00\x00\x00\x00\x00\x01"),
#undef B
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_body(cases[i].b, cases[i].n);
		expect_fatal();
		expect_reply_fatal();
	}
}

Test(binary, truncated_bodies)
{
	static const unsigned char v[256];

	/* every prefix of a long request */
	req_begin(PROTO_OP_CAS, UINT64_MAX, 5);
	pack_str("some:key");
	pack_bin(v, sizeof(v));
	msgpack_pack_uint32(&pk, UINT32_MAX);
	msgpack_pack_int64(&pk, INT64_MIN);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	finish();
	{
		size_t full = body_n;
		char *whole = malloc(full);

		cr_assert_not_null(whole);
		memcpy(whole, body, full);
		for (size_t n = 0; n < full; n++) {
			set_body(whole, n);
			expect_fatal();
			expect_reply_fatal();
		}
		set_body(whole, full);
		{
			struct proto_bin_req r;

			expect_ok(&r);
		}
		free(whole);
	}

	/* and of an mget with nested keys */
	req_begin(PROTO_OP_MGET, 1, 1);
	msgpack_pack_array(&pk, 3);
	pack_str("a");
	pack_str("bb");
	pack_bin("ccc", 3);
	finish();
	{
		size_t full = body_n;
		char *whole = malloc(full);

		cr_assert_not_null(whole);
		memcpy(whole, body, full);
		for (size_t n = 0; n < full; n++) {
			set_body(whole, n);
			expect_fatal();
		}
		free(whole);
	}
}

Test(binary, trailing_garbage)
{
	static const char tails[] = { '\xc0', '\x00', '\x91', '\xc1', '\x01' };
	char buf[64];

	for (size_t i = 0; i < sizeof(tails); i++) {
		size_t n;

		req_begin(PROTO_OP_GET, 5, 1);
		pack_str("k");
		finish();
		n = body_n;
		cr_assert_lt(n + 1, sizeof(buf));
		memcpy(buf, body, n);
		buf[n] = tails[i];
		set_body(buf, n + 1);
		expect_fatal();
		expect_reply_fatal();
	}
	/* two whole requests in one body */
	req_begin(PROTO_OP_NOOP, 1, 0);
	finish();
	memcpy(buf, body, body_n);
	memcpy(buf + body_n, body, body_n);
	set_body(buf, 2 * body_n);
	expect_fatal();
}

/* Bodies that claim far more than they hold: they must fail fast, without
 * allocating what they claim (ASan would abort on a 4 GiB or 100 GiB
 * malloc; criterion's timeout catches a hang). */
Test(binary, hostile_claims)
{
	static const struct {
		const char *b;
		size_t n;
	} cases[] = {
#define B(lit) { lit, sizeof(lit) - 1 }
		B("\xdd\xff\xff\xff\xff"),     /* array32 of 2^32-1 */
		B("\xdf\xff\xff\xff\xff"),     /* map32 of 2^32-1 */
		B("\xdc\xff\xff"),	       /* array16 of 65535 */
		B("\xde\xff\xff"),	       /* map16 of 65535 */
		B("\x9f"),		       /* fixarray of 15, empty */
		B("\x8f"),		       /* fixmap of 15 */
		B("\xdb\xff\xff\xff\xff"),     /* str32 of 4 GiB */
		B("\xc6\xff\xff\xff\xff"),     /* bin32 of 4 GiB */
		B("\xc9\xff\xff\xff\xff\x01"), /* ext32 of 4 GiB */
		/* inside a request */
		B("\x93\x01\x01\xdb\xff\xff\xff\xff"),
		B("\x93\x01\x01\xc6\xff\xff\xff\xff"),
		B("\x93\x01\x01\xc9\xff\xff\xff\xff\x01"),
		B("\x93\x03\x01\xdd\xff\xff\xff\xff"),
		B("\x93\x03\x01\xdf\xff\xff\xff\xff"),
		B("\x93\x03\x01\xdd\x00\x00\x00\x10\xc0\xc0"),
		B("\x93\x11\x01\xdf\x7f\xff\xff\xff"),
		B("\xdd\x00\x00\x00\x03\x01\x01"), /* 3 claimed, 2 there */
		B("\x93\x01\x01\xd9\x05"
		  "ab"),		       /* str8 short */
		B("\x93\x01\x01\xda\x00"),     /* str16 header cut */
		B("\x93\x01\x01\xdb\x00\x00"), /* str32 header cut */
		B("\x93\x01\x01\xc4"),	       /* bin8 header cut */
		B("\x93\x01\x01\xcf\x00"),     /* uint64 cut */
		B("\x92\xcf\x00\x00\x00\x00\x00\x00\x00"),
		/* the reserved byte */
		B("\xc1"),
		B("\x93\x01\x01\xc1"),
		B("\x92\xc1\x01"),
		B("\x94\x04\x01\xa1k\xc1"),
#undef B
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_body(cases[i].b, cases[i].n);
		expect_fatal();
		expect_reply_fatal();
	}
}

/* A huge count whose elements would each need a byte: the claim is checked
 * against the bytes that remain, not the bytes of the whole body. */
Test(binary, hostile_claims_with_padding)
{
	size_t n = 4096;
	char *b = malloc(n);

	cr_assert_not_null(b);
	memset(b, 0xc0, n);
	/* [3, 1, array32 of 2^32-1, nil * ...] */
	memcpy(b, "\x93\x03\x01\xdd\xff\xff\xff\xff", 8);
	set_body(b, n);
	expect_fatal();
	expect_reply_fatal();
	/* map32 of 2^31 pairs in 4 KiB */
	memcpy(b, "\x93\x03\x01\xdf\x80\x00\x00\x00", 8);
	set_body(b, n);
	expect_fatal();
	/* map16 of 2047 pairs: 4094 objects, 4090 bytes left */
	memcpy(b, "\x93\x03\x01\xde\x07\xff", 6);
	set_body(b, n);
	expect_fatal();
	free(b);
}

Test(binary, depth_bombs)
{
	size_t n = 1001;
	char *b = malloc(n + 16);

	cr_assert_not_null(b);
	/* 1,000 nested fixarrays, then nil */
	memset(b, 0x91, n - 1);
	b[n - 1] = (char)0xc0;
	set_body(b, n);
	expect_fatal();
	expect_reply_fatal();
	/* cut short: no nil */
	set_body(b, n - 1);
	expect_fatal();
	/* inside a request: [3, 1, [[[[[...]]]]]] */
	memcpy(b, "\x93\x03\x01", 3);
	memset(b + 3, 0x91, 997);
	b[1000] = (char)0xc0;
	set_body(b, 1001);
	expect_fatal();
	expect_reply_fatal();
	/* nested fixmaps {x: {x: ...}} */
	for (size_t i = 0; i < 500; i++) {
		b[2 * i] = (char)0x81;
		b[2 * i + 1] = 0x01;
	}
	b[1000] = (char)0xc0;
	set_body(b, 1001);
	expect_fatal();
	expect_reply_fatal();
	/* array32 headers nested */
	for (size_t i = 0; i < 200; i++)
		memcpy(b + 5 * i, "\xdd\x00\x00\x00\x01", 5);
	b[1000] = (char)0xc0;
	set_body(b, 1001);
	expect_fatal();
	free(b);
}

/* Nesting allowed: [op, id, [keys]] is depth 2; a reply's mget payload
 * [id, st, [[flags, value, cas]]] depth 3; 5 levels is too deep. */
Test(binary, depth_limit_edges)
{
	struct proto_bin_reply rep;
	struct proto_bin_req r;
	uint32_t st;
	const char *err;

	/* [1, 1, [[[ "k" ]]]]: depth 4 holds; a REJECT, not FATAL */
	set_body("\x93\x01\x01\x91\x91\x91\xa1k", 8);
	cr_assert_eq(decode(&r, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, PROTO_ST_BAD_REQUEST);
	cr_assert_eq(r.id, 1);
	/* one level deeper: FATAL */
	set_body("\x93\x01\x01\x91\x91\x91\x91\xa1k", 9);
	expect_fatal();

	set_body("\x93\x07\x00\x91\x93\x00\xc4\x01v\x05", 10);
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_ARRAY);
}

Test(binary, ext_types)
{
	static const struct {
		const char *b;
		size_t n;
	} fatal[] = {
#define B(lit) { lit, sizeof(lit) - 1 }
		B("\xd4\x01\x02"), /* fixext1 */
		B("\xd8\x01"
		  "0123456789abcdef"),		   /* fixext16 */
		B("\xc7\x00\x05"),		   /* ext8 empty */
		B("\x92\xd4\x01\x02\x01"),	   /* [ext, 1] */
		B("\x92\x01\xd5\x01\x02\x03"),	   /* [1, ext] */
		B("\x93\x01\x01\xc7\x05\x01"),	   /* ext8 cut */
		B("\x93\x01\x01\xc8\xff\xff\x01"), /* ext16 cut */
		B("\x93\x01\x01\xd8\x01"),	   /* fixext16 cut */
#undef B
	};

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		set_body(fatal[i].b, fatal[i].n);
		expect_fatal();
		expect_reply_fatal();
	}
	/* an ext where a key goes: the id is known */
	set_body("\x93\x01\x09\xd4\x01\x02", 6);
	expect_reject(PROTO_ST_BAD_REQUEST, 9);
	set_body("\x93\x01\x09\xc9\x00\x00\x00\x01\x05\xaa", 10);
	expect_reject(PROTO_ST_BAD_REQUEST, 9);
}

/* ---- frames ---- */

/* ---- the direct path (binary.c) and the general one agree ---- */

/*
 * The plain encodings of GET, GETS, DELETE and the stores are read
 * directly; the same request as an array16 (0xdc) goes through msgpack-c.
 * Every request here is decoded both ways: same result, same fields.
 */
static void decode_both(const unsigned char *fix, size_t n)
{
	unsigned char *alt = malloc(n + 2);
	char *keep;
	struct proto_bin_req a, b;
	uint32_t sa, sb_;
	const char *ea, *eb;
	enum proto_bin_result ra, rb;

	cr_assert_not_null(alt);
	cr_assert(fix[0] >= 0x90 && fix[0] <= 0x9f);
	alt[0] = 0xdc;
	alt[1] = 0;
	alt[2] = fix[0] & 0x0f;
	memcpy(alt + 3, fix + 1, n - 1);

	set_body(fix, n);
	ra = decode(&a, &sa, &ea);
	keep = body; /* a points into it */
	body = NULL;
	set_body(alt, n + 2);
	rb = decode(&b, &sb_, &eb);
	cr_assert_eq(ra, rb, "direct %d, general %d", ra, rb);
	if (ra == PROTO_BIN_REJECT) {
		cr_assert_eq(sa, sb_);
		cr_assert_str_eq(ea, eb);
	}
	if (ra == PROTO_BIN_OK) {
		cr_assert_eq(a.op, b.op);
		cr_assert_eq(a.id, b.id);
		cr_assert_eq(a.key.n, b.key.n);
		cr_assert(memcmp(a.key.p, b.key.p, a.key.n) == 0);
		cr_assert_eq(a.value.n, b.value.n);
		cr_assert(a.value.n == 0 ||
			  memcmp(a.value.p, b.value.p, a.value.n) == 0);
		cr_assert_eq(a.flags, b.flags);
		cr_assert_eq(a.exptime, b.exptime);
		cr_assert_eq(a.cas, b.cas);
		cr_assert_eq(a.delta, b.delta);
		cr_assert_eq(a.nkeys, b.nkeys);
		cr_assert_eq(a.meta.opts, b.meta.opts);
	}
	free(keep);
	free(alt);
}

Test(binary, direct_and_general_paths_agree)
{
	static const struct {
		const char *what;
		unsigned char b[40];
		size_t n;
	} cases[] = {
		{ "get", { 0x93, 0x01, 0x05, 0xa1, 'k' }, 5 },
		{ "gets, uint64 id",
		  { 0x93, 0x02, 0xcf, 1, 2, 3, 4, 5, 6, 7, 8, 0xa1, 'k' },
		  13 },
		{ "delete, bin8 key",
		  { 0x93, 0x0a, 0xcc, 0xff, 0xc4, 1, 'k' },
		  7 },
		{ "set, str value",
		  { 0x94, 0x04, 0x01, 0xa1, 'k', 0xa2, 'v', 'w' },
		  8 },
		{ "set, nil flags and exptime",
		  { 0x96, 0x04, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0xc0, 0xc0 },
		  10 },
		{ "set, largest flags, negative fixint exptime",
		  { 0x96, 0x04, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0xce, 0xff, 0xff,
		    0xff, 0xff, 0xff },
		  14 },
		{ "add, int8 exptime (read by msgpack-c only)",
		  { 0x96, 0x05, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0x00, 0xd0,
		    0x9c },
		  11 },
		{ "replace, largest exptime",
		  { 0x96, 0x06, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0x00, 0xcf, 0x7f,
		    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
		  18 },
		{ "append, str16 key",
		  { 0x94, 0x07, 0x01, 0xda, 0, 1, 'k', 0xc4, 0 },
		  9 },
		{ "prepend, empty value",
		  { 0x94, 0x08, 0x01, 0xa1, 'k', 0xc4, 0 },
		  7 },
		/* Not for the direct path: the general one decides. */
		{ "flags past 32 bits",
		  { 0x95, 0x04, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0xcf, 0, 0, 0, 1,
		    0, 0, 0, 0 },
		  17 },
		{ "exptime past INT64_MAX",
		  { 0x96, 0x04, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0x00, 0xcf, 0x80,
		    0, 0, 0, 0, 0, 0, 0 },
		  18 },
		{ "empty key", { 0x93, 0x01, 0x05, 0xa0 }, 4 },
		{ "key not bytes", { 0x93, 0x01, 0x05, 0x07 }, 4 },
		{ "value not bytes", { 0x94, 0x04, 0x05, 0xa1, 'k', 0x07 }, 6 },
		{ "get with two keys",
		  { 0x94, 0x01, 0x05, 0xa1, 'k', 0xa1, 'j' },
		  7 },
		{ "append with flags",
		  { 0x95, 0x07, 0x01, 0xa1, 'k', 0xc4, 1, 'v', 0x00 },
		  9 },
		{ "key cut short", { 0x93, 0x01, 0x05, 0xa3, 'k' }, 5 },
		{ "a uint16 id that takes the key's header",
		  { 0x93, 0x01, 0xcd, 0x01, 0xa1, 'k' },
		  6 },
		{ "op not an integer",
		  { 0x93, 0xa1, 'x', 0x05, 0xa1, 'k' },
		  6 },
		{ "unknown op", { 0x93, 0x63, 0x05, 0xa1, 'k' }, 5 },
		{ "incr", { 0x94, 0x0b, 0x05, 0xa1, 'k', 0x02 }, 6 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_log_info("%s", cases[i].what);
		decode_both(cases[i].b, cases[i].n);
	}
}

Test(binary, direct_path_takes_only_whole_bodies)
{
	/* A GET with a byte after it: no request, even read directly. */
	static const unsigned char extra[] = {
		0x93, 0x01, 0x05, 0xa1, 'k', 0xc0
	};
	static const unsigned char set[] = { 0x96, 0x04, 0x01, 0xa1, 'k', 0xc4,
					     2,	   'v',	 'w',  0x07, 0xff };
	struct proto_bin_req r;
	uint32_t st;
	const char *err;

	set_body(extra, sizeof(extra));
	expect_fatal();
	/* Every cut of a SET short of its end fails too. */
	for (size_t n = 1; n < sizeof(set); n++) {
		set_body(set, n);
		cr_assert_neq(decode(&r, &st, &err), PROTO_BIN_OK, "cut at %zu",
			      n);
	}
	set_body(set, sizeof(set));
	expect_ok(&r);
	cr_assert_eq(r.flags, 7);
	cr_assert_eq(r.exptime, -1);
	assert_bytes(r.value, "vw", 2);
	/* A value over the limit: TOO_LARGE, as without the direct path. */
	cr_assert_eq(decode_max(&r, 1, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, PROTO_ST_TOO_LARGE);
}

/* The direct writers write what msgpack-c's packer writes. */
Test(binary, put_matches_the_packer)
{
	static const uint64_t v[] = {
		0,	1,	 0x7f,	      0x80,	    0xff,      0x100,
		0xffff, 0x10000, 0xffffffffu, 0x100000000u, UINT64_MAX
	};
	static const uint32_t lens[] = { 0,	1,     255,	  256,
					 65535, 65536, UINT32_MAX };
	unsigned char out[PROTO_BIN_REPLY_HEAD_MAX];
	size_t n;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		msgpack_sbuffer_clear(&sb);
		msgpack_pack_uint64(&pk, v[i]);
		n = proto_bin_put_uint(out, v[i]);
		cr_assert_leq(n, PROTO_BIN_UINT_MAX);
		cr_assert_eq(n, sb.size, "%llx", (unsigned long long)v[i]);
		cr_assert(memcmp(out, sb.data, n) == 0);
		if (v[i] <= UINT32_MAX) { /* flags are packed as uint32 */
			msgpack_sbuffer_clear(&sb);
			msgpack_pack_uint32(&pk, (uint32_t)v[i]);
			cr_assert_eq(n, sb.size);
			cr_assert(memcmp(out, sb.data, n) == 0);
		}
		msgpack_sbuffer_clear(&sb);
		proto_bin_pack_reply_head(&pk, v[i], PROTO_ST_AUTH_REQUIRED);
		n = proto_bin_put_reply_head(out, v[i], PROTO_ST_AUTH_REQUIRED);
		cr_assert_eq(n, sb.size);
		cr_assert(memcmp(out, sb.data, n) == 0);
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		msgpack_sbuffer_clear(&sb);
		msgpack_pack_bin(&pk, lens[i]);
		n = proto_bin_put_bin_head(out, lens[i]);
		cr_assert_eq(n, sb.size, "%u", lens[i]);
		cr_assert(memcmp(out, sb.data, n) == 0);
	}
}

Test(binary, frame_len)
{
	const size_t limit = proto_bin_body_limit(MAX_VALUE);
	uint32_t len;

	cr_assert_eq(limit, MAX_VALUE + 4096u);
	for (size_t n = 0; n < 4; n++) {
		len = 12345;
		cr_assert_eq(proto_bin_frame_len("\0\0\0\1", n, limit, &len),
			     PROTO_BIN_FRAME_NEED_MORE);
	}
	cr_assert_eq(proto_bin_frame_len("\0\0\0\0", 4, limit, &len),
		     PROTO_BIN_FRAME_OK);
	cr_assert_eq(len, 0);
	cr_assert_eq(
		proto_bin_frame_len("\x00\x01\x02\x03\xff", 5, limit, &len),
		PROTO_BIN_FRAME_OK);
	cr_assert_eq(len, 0x010203);
	/* at the limit: 1 MiB + 4096 = 0x00101000 */
	cr_assert_eq(proto_bin_frame_len("\x00\x10\x10\x00", 4, limit, &len),
		     PROTO_BIN_FRAME_OK);
	cr_assert_eq(len, limit);
	cr_assert_eq(proto_bin_frame_len("\x00\x10\x10\x01", 4, limit, &len),
		     PROTO_BIN_FRAME_TOO_LARGE);
	cr_assert_eq(len, limit + 1);
	cr_assert_eq(proto_bin_frame_len("\xff\xff\xff\xff", 4, limit, &len),
		     PROTO_BIN_FRAME_TOO_LARGE);
	cr_assert_eq(len, UINT32_MAX);
	cr_assert_eq(proto_bin_frame_len("\x80\x00\x00\x00", 4, limit, &len),
		     PROTO_BIN_FRAME_TOO_LARGE);
	/* limit 0 */
	cr_assert_eq(proto_bin_frame_len("\0\0\0\0", 4, 0, &len),
		     PROTO_BIN_FRAME_OK);
	cr_assert_eq(proto_bin_frame_len("\0\0\0\1", 4, 0, &len),
		     PROTO_BIN_FRAME_TOO_LARGE);
}

Test(binary, pipelined_frames)
{
	struct proto_bin_req r;
	uint32_t st, len;
	const char *err;
	size_t off = 0, count = 0;

	msgpack_sbuffer_clear(&sb);
	for (uint32_t op = 1; op <= PROTO_OP_MAX; op++) {
		size_t at = proto_bin_begin(&sb);

		cr_assert_neq(at, (size_t)-1);
		proto_bin_pack_request_head(&pk, op, op * 1000u, 0);
		proto_bin_end(&sb, at);
	}
	while (proto_bin_frame_len(sb.data + off, sb.size - off,
				   proto_bin_body_limit(MAX_VALUE),
				   &len) == PROTO_BIN_FRAME_OK) {
		enum proto_bin_result res;

		cr_assert_leq(len, sb.size - off - PROTO_BIN_HEADER);
		set_body(sb.data + off + PROTO_BIN_HEADER, len);
		res = decode(&r, &st, &err);
		count++;
		cr_assert_neq(res, PROTO_BIN_FATAL);
		cr_assert_eq(r.id, count * 1000u);
		off += PROTO_BIN_HEADER + len;
	}
	cr_assert_eq(off, sb.size);
	cr_assert_eq(count, PROTO_OP_MAX);
}

/* ---- replies ---- */

Test(binary, replies)
{
	struct proto_bin_reply rep;

	/* nil */
	reply_begin(7, PROTO_ST_NOT_FOUND);
	msgpack_pack_nil(&pk);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.id, 7);
	cr_assert_eq(rep.status, PROTO_ST_NOT_FOUND);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_NIL);

	/* int */
	reply_begin(UINT64_MAX, PROTO_ST_OK);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.id, UINT64_MAX);
	cr_assert_eq(rep.status, PROTO_ST_OK);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_POSITIVE_INTEGER);
	cr_assert_eq(rep.payload.via.u64, UINT64_MAX);

	/* [flags, value, cas] */
	reply_begin(1, PROTO_ST_OK);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint32(&pk, 5);
	pack_bin("val\0ue", 6);
	msgpack_pack_uint64(&pk, 99);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_ARRAY);
	cr_assert_eq(rep.payload.via.array.size, 3);
	cr_assert_eq(rep.payload.via.array.ptr[0].via.u64, 5);
	cr_assert_eq(rep.payload.via.array.ptr[1].type, MSGPACK_OBJECT_BIN);
	cr_assert_eq(rep.payload.via.array.ptr[1].via.bin.size, 6);
	cr_assert(memcmp(rep.payload.via.array.ptr[1].via.bin.ptr, "val\0ue",
			 6) == 0);
	cr_assert_eq(rep.payload.via.array.ptr[2].via.u64, 99);

	/* mget: [nil, [flags, value, cas]] */
	reply_begin(2, PROTO_ST_OK);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_nil(&pk);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint32(&pk, 0);
	pack_bin("x", 1);
	msgpack_pack_uint64(&pk, 1);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.payload.via.array.size, 2);
	cr_assert_eq(rep.payload.via.array.ptr[0].type, MSGPACK_OBJECT_NIL);
	cr_assert_eq(rep.payload.via.array.ptr[1].via.array.size, 3);

	/* stats map */
	reply_begin(3, PROTO_ST_OK);
	msgpack_pack_map(&pk, 2);
	pack_str("pid");
	pack_str("123");
	pack_str("uptime");
	pack_str("9");
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_MAP);
	cr_assert_eq(rep.payload.via.map.size, 2);
	cr_assert_eq(rep.payload.via.map.ptr[1].key.via.str.size, 6);
	cr_assert(memcmp(rep.payload.via.map.ptr[1].key.via.str.ptr, "uptime",
			 6) == 0);

	/* error with a message */
	reply_begin(4, PROTO_ST_BAD_REQUEST);
	pack_str("unknown op");
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.status, PROTO_ST_BAD_REQUEST);
	cr_assert_eq(rep.payload.type, MSGPACK_OBJECT_STR);

	/* unknown statuses still decode: the client judges them */
	reply_begin(5, UINT32_MAX);
	msgpack_pack_nil(&pk);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.status, UINT32_MAX);
}

Test(binary, malformed_replies)
{
	static const struct {
		const char *b;
		size_t n;
	} cases[] = {
#define B(lit) { lit, sizeof(lit) - 1 }
		B("\x92\x07\x00"),	   /* 2 elements */
		B("\x94\x07\x00\xc0\xc0"), /* 4 elements */
		B("\x93\x07\xa1\x30\xc0"), /* status a str */
		B("\x93\x07\xc0\xc0"),	   /* status nil */
		B("\x93\x07\xff\xc0"),	   /* status negative */
		B("\x93\x07\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xc0"),
		B("\x93\xff\x00\xc0"),		   /* id negative */
		B("\x93\xc0\x00\xc0"),		   /* id nil */
		B("\x93\x07\x00"),		   /* payload missing */
		B("\x93\x07\x00\xc0\xc0"),	   /* trailing byte */
		B("\x83\x07\x00\x01\x02\x03\x04"), /* a map */
#undef B
	};
	struct proto_bin_reply rep;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_body(cases[i].b, cases[i].n);
		cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
			     PROTO_BIN_FATAL, "case %zu", i);
	}
	/* a request is not a reply when its length differs */
	req_begin(PROTO_OP_GET, 1, 1);
	pack_str("k");
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK); /* [1, 1, "k"] has a reply's shape */
	req_begin(PROTO_OP_SET, 1, 2);
	pack_str("k");
	pack_bin("v", 1);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_FATAL);
}

/* ---- meta ops ---- */

/* A meta request: key (and value for META_SET), then the options packed
 * by the codec's encoder (with_opts false: the argument left out). */
static void meta_req(uint32_t op, uint64_t id, const char *key,
		     const struct proto_bin_meta *m, bool with_opts)
{
	bool set = op == PROTO_OP_META_SET;

	req_begin(op, id, 1 + set + with_opts);
	pack_str(key);
	if (set)
		pack_bin("val", 3);
	if (with_opts)
		cr_assert_eq(proto_bin_pack_meta_opts(&pk, m), 0);
	finish();
}

Test(binary, meta_protocol_example)
{
	static const unsigned char want[] = { 0x00, 0x00, 0x00, 0x09, 0x94,
					      0x16, 0x08, 0xa1, 0x6b, 0x81,
					      0xa1, 0x76, 0xc3 };
	static const char want_reply[] =
		"\x00\x00\x00\x2d\x93\x08\x00\x87\xa5"
		"flags\x00\xa3"
		"cas\x01\xa3ttl\xff\xa4size\x01\xa2la\x03\xa3hit\xc3\xa5value"
		"\xc4\x01v";
	struct proto_bin_meta m = { .opts = PROTO_META_VALUE };
	struct proto_bin_meta_reply mr = {
		.fields = PROTO_MR_FLAGS | PROTO_MR_CAS | PROTO_MR_TTL |
			  PROTO_MR_SIZE | PROTO_MR_LA | PROTO_MR_HIT |
			  PROTO_MR_VALUE,
		.cas = 1,
		.ttl = -1,
		.size = 1,
		.last_access = 3,
		.hit = true,
		.value = { "v", 1 },
	};
	struct proto_bin_req r;

	meta_req(PROTO_OP_META_GET, 8, "k", &m, true);
	cr_assert_eq(sb.size, sizeof(want));
	cr_assert(memcmp(sb.data, want, sizeof(want)) == 0);
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_META_GET);
	cr_assert_eq(r.meta.opts, PROTO_META_VALUE);

	reply_begin(8, PROTO_ST_OK);
	cr_assert_eq(proto_bin_pack_meta_reply(&pk, &mr, true), 0);
	finish();
	cr_assert_eq(sb.size, sizeof(want_reply) - 1);
	cr_assert(memcmp(sb.data, want_reply, sb.size) == 0);
}

Test(binary, meta_get_options)
{
	struct proto_bin_meta m = { .opts = PROTO_META_VALUE | PROTO_META_TTL |
					    PROTO_META_VIVIFY |
					    PROTO_META_RECACHE |
					    PROTO_META_NOBUMP |
					    PROTO_META_NEW_CAS,
				    .new_cas = 3,
				    .ttl = -5,
				    .vivify_ttl = 30,
				    .recache_ttl = INT64_MAX };
	struct proto_bin_req r;

	meta_req(PROTO_OP_META_GET, 1, "key", &m, true);
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_META_GET);
	cr_assert_eq(r.id, 1);
	assert_str(r.key, "key");
	cr_assert_eq(r.meta.opts, m.opts);
	cr_assert_eq(r.meta.ttl, -5);
	cr_assert_eq(r.meta.vivify_ttl, 30);
	cr_assert_eq(r.meta.recache_ttl, INT64_MAX);
	cr_assert_eq(r.meta.new_cas, 3);
	cr_assert_eq(r.meta.delta, 1);

	/* no options, nil options, an empty map: the defaults */
	meta_req(PROTO_OP_META_GET, 2, "key", NULL, false);
	expect_ok(&r);
	cr_assert_eq(r.meta.opts, 0);
	cr_assert_eq(r.meta.delta, 1);
	req_begin(PROTO_OP_META_GET, 3, 2);
	pack_str("key");
	msgpack_pack_nil(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.meta.opts, 0);
	req_begin(PROTO_OP_META_GET, 4, 2);
	pack_str("key");
	msgpack_pack_map(&pk, 0);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.meta.opts, 0);

	/* a boolean false is as if absent */
	req_begin(PROTO_OP_META_GET, 5, 2);
	pack_str("key");
	msgpack_pack_map(&pk, 2);
	pack_str("v");
	msgpack_pack_false(&pk);
	pack_str("nobump");
	msgpack_pack_true(&pk);
	finish();
	expect_ok(&r);
	cr_assert_eq(r.meta.opts, PROTO_META_NOBUMP);
}

Test(binary, meta_set_options)
{
	struct proto_bin_meta m = {
		.opts = PROTO_META_TTL | PROTO_META_CAS | PROTO_META_NEW_CAS |
			PROTO_META_MODE | PROTO_META_FLAGS |
			PROTO_META_INVALIDATE,
		.mode = 'E',
		.flags = UINT32_MAX,
		.ttl = 100,
		.cas = UINT64_MAX,
		.new_cas = 77,
	};
	static const char modes[] = "SEAPRseapr";
	struct proto_bin_req r;

	meta_req(PROTO_OP_META_SET, 9, "k", &m, true);
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_META_SET);
	assert_str(r.key, "k");
	assert_bytes(r.value, "val", 3);
	cr_assert_eq(r.meta.opts, m.opts);
	cr_assert_eq(r.meta.mode, 'E');
	cr_assert_eq(r.meta.flags, UINT32_MAX);
	cr_assert_eq(r.meta.ttl, 100);
	cr_assert_eq(r.meta.cas, UINT64_MAX);
	cr_assert_eq(r.meta.new_cas, 77);

	for (size_t i = 0; modes[i]; i++) {
		m = (struct proto_bin_meta){ .opts = PROTO_META_MODE,
					     .mode = modes[i] };
		meta_req(PROTO_OP_META_SET, 10, "k", &m, true);
		expect_ok(&r);
		cr_assert_eq(r.meta.mode, "SEAPRSEAPR"[i]);
	}
	meta_req(PROTO_OP_META_SET, 11, "k", NULL, false);
	expect_ok(&r);
	cr_assert_eq(r.meta.opts, 0);
	cr_assert_eq(r.meta.mode, 0);
}

Test(binary, meta_set_too_large)
{
	struct proto_bin_req r;
	uint32_t st;
	const char *err;
	char v[17] = { 0 };

	req_begin(PROTO_OP_META_SET, 12, 2);
	pack_str("k");
	pack_bin(v, 17);
	finish();
	cr_assert_eq(decode_max(&r, 16, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, PROTO_ST_TOO_LARGE);
	cr_assert_eq(r.op, PROTO_OP_META_SET);
	assert_str(r.key, "k");
	cr_assert_eq(decode_max(&r, 17, &st, &err), PROTO_BIN_OK);

	/* bad options come first: BAD_REQUEST, not TOO_LARGE */
	req_begin(PROTO_OP_META_SET, 13, 3);
	pack_str("k");
	pack_bin(v, 17);
	msgpack_pack_map(&pk, 1);
	pack_str("nope");
	msgpack_pack_true(&pk);
	finish();
	cr_assert_eq(decode_max(&r, 16, &st, &err), PROTO_BIN_REJECT);
	cr_assert_eq(st, PROTO_ST_BAD_REQUEST);
}

Test(binary, meta_delete_and_arith_options)
{
	struct proto_bin_meta m = { .opts = PROTO_META_INVALIDATE |
					    PROTO_META_CAS | PROTO_META_TTL |
					    PROTO_META_NEW_CAS,
				    .cas = 5,
				    .ttl = 30,
				    .new_cas = 6 };
	static const char modes[] = "ID+-id";
	struct proto_bin_req r;

	meta_req(PROTO_OP_META_DELETE, 1, "k", &m, true);
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_META_DELETE);
	cr_assert_eq(r.meta.opts, m.opts);
	cr_assert_eq(r.meta.cas, 5);
	cr_assert_eq(r.meta.ttl, 30);
	cr_assert_eq(r.meta.new_cas, 6);

	m = (struct proto_bin_meta){
		.opts = PROTO_META_VALUE | PROTO_META_MODE | PROTO_META_DELTA |
			PROTO_META_INITIAL | PROTO_META_VIVIFY |
			PROTO_META_TTL | PROTO_META_CAS | PROTO_META_NEW_CAS,
		.mode = 'D',
		.delta = UINT64_MAX,
		.initial = 42,
		.vivify_ttl = 60,
		.ttl = 0,
		.cas = 9,
		.new_cas = 10,
	};
	meta_req(PROTO_OP_META_ARITH, 2, "n", &m, true);
	expect_ok(&r);
	cr_assert_eq(r.op, PROTO_OP_META_ARITH);
	cr_assert_eq(r.meta.opts, m.opts);
	cr_assert_eq(r.meta.mode, 'D');
	cr_assert_eq(r.meta.delta, UINT64_MAX);
	cr_assert_eq(r.meta.initial, 42);
	cr_assert_eq(r.meta.vivify_ttl, 60);
	cr_assert_eq(r.meta.ttl, 0);
	cr_assert_eq(r.meta.cas, 9);
	cr_assert_eq(r.meta.new_cas, 10);

	for (size_t i = 0; modes[i]; i++) {
		m = (struct proto_bin_meta){ .opts = PROTO_META_MODE,
					     .mode = modes[i] };
		meta_req(PROTO_OP_META_ARITH, 3, "n", &m, true);
		expect_ok(&r);
		cr_assert_eq(r.meta.mode, "IDIDID"[i]);
		cr_assert_eq(r.meta.delta, 1, "the default delta");
	}
	meta_req(PROTO_OP_META_ARITH, 4, "n", NULL, false);
	expect_ok(&r);
	cr_assert_eq(r.meta.delta, 1);
	cr_assert_eq(r.meta.mode, 0);
}

/* A meta request whose options map is one entry: name, then a value the
 * caller packs with fn. */
static void meta_one_opt(uint32_t op, uint64_t id, const char *name,
			 void (*fn)(void))
{
	bool set = op == PROTO_OP_META_SET;

	req_begin(op, id, 2 + set);
	pack_str("k");
	if (set)
		pack_bin("v", 1);
	msgpack_pack_map(&pk, 1);
	pack_str(name);
	fn();
	finish();
}

static void v_true(void)
{
	msgpack_pack_true(&pk);
}
static void v_one(void)
{
	msgpack_pack_uint32(&pk, 1);
}
static void v_neg(void)
{
	msgpack_pack_int32(&pk, -1);
}
static void v_str(void)
{
	pack_str("1");
}
static void v_nil(void)
{
	msgpack_pack_nil(&pk);
}
static void v_u33(void)
{
	msgpack_pack_uint64(&pk, (uint64_t)UINT32_MAX + 1);
}
static void v_u64max(void)
{
	msgpack_pack_uint64(&pk, UINT64_MAX);
}
static void v_float(void)
{
	msgpack_pack_double(&pk, 1.0);
}
static void v_array(void)
{
	msgpack_pack_array(&pk, 1);
	msgpack_pack_true(&pk);
}
static void v_map(void)
{
	msgpack_pack_map(&pk, 1);
	pack_str("v");
	msgpack_pack_true(&pk);
}
static void v_mode_two(void)
{
	pack_str("SE");
}
static void v_mode_empty(void)
{
	pack_str("");
}
static void v_mode_x(void)
{
	pack_str("X");
}
static void v_mode_i(void)
{
	pack_str("I");
}
static void v_mode_s(void)
{
	pack_str("S");
}
static void v_mode_nul(void)
{
	msgpack_pack_str(&pk, 1);
	msgpack_pack_str_body(&pk, "", 1);
}

Test(binary, meta_malformed_options)
{
	static const struct {
		uint32_t op;
		const char *name;
		void (*val)(void);
	} bad[] = {
		/* unknown, or not this op's */
		{ PROTO_OP_META_GET, "nope", v_true },
		{ PROTO_OP_META_GET, "", v_true },
		{ PROTO_OP_META_GET, "V", v_true },
		{ PROTO_OP_META_GET, "vv", v_true },
		{ PROTO_OP_META_GET, "cas", v_one },
		{ PROTO_OP_META_GET, "flags", v_one },
		{ PROTO_OP_META_GET, "mode", v_mode_s },
		{ PROTO_OP_META_SET, "v", v_true },
		{ PROTO_OP_META_SET, "recache", v_one },
		{ PROTO_OP_META_DELETE, "vivify", v_one },
		{ PROTO_OP_META_SET, "delta", v_one },
		{ PROTO_OP_META_DELETE, "v", v_true },
		{ PROTO_OP_META_DELETE, "mode", v_mode_s },
		{ PROTO_OP_META_DELETE, "flags", v_one },
		{ PROTO_OP_META_ARITH, "invalidate", v_true },
		{ PROTO_OP_META_ARITH, "recache", v_one },
		{ PROTO_OP_META_ARITH, "nobump", v_true },
		/* wrong types */
		{ PROTO_OP_META_GET, "v", v_one },
		{ PROTO_OP_META_GET, "v", v_nil },
		{ PROTO_OP_META_GET, "v", v_str },
		{ PROTO_OP_META_GET, "nobump", v_one },
		{ PROTO_OP_META_GET, "ttl", v_str },
		{ PROTO_OP_META_GET, "ttl", v_true },
		{ PROTO_OP_META_GET, "ttl", v_u64max },
		{ PROTO_OP_META_GET, "ttl", v_float },
		{ PROTO_OP_META_GET, "ttl", v_nil },
		{ PROTO_OP_META_GET, "vivify", v_array },
		{ PROTO_OP_META_GET, "recache", v_map },
		{ PROTO_OP_META_SET, "flags", v_u33 },
		{ PROTO_OP_META_SET, "flags", v_neg },
		{ PROTO_OP_META_SET, "cas", v_neg },
		{ PROTO_OP_META_SET, "cas", v_str },
		{ PROTO_OP_META_SET, "newcas", v_neg },
		{ PROTO_OP_META_SET, "invalidate", v_one },
		{ PROTO_OP_META_SET, "mode", v_mode_two },
		{ PROTO_OP_META_SET, "mode", v_mode_empty },
		{ PROTO_OP_META_SET, "mode", v_mode_x },
		{ PROTO_OP_META_SET, "mode", v_mode_i },
		{ PROTO_OP_META_SET, "mode", v_mode_nul },
		{ PROTO_OP_META_SET, "mode", v_one },
		{ PROTO_OP_META_ARITH, "mode", v_mode_s },
		{ PROTO_OP_META_ARITH, "mode", v_mode_nul },
		{ PROTO_OP_META_ARITH, "delta", v_neg },
		{ PROTO_OP_META_ARITH, "initial", v_str },
		{ PROTO_OP_META_DELETE, "ttl", v_str },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		meta_one_opt(bad[i].op, 600 + i, bad[i].name, bad[i].val);
		expect_reject(PROTO_ST_BAD_REQUEST, 600 + i);
	}
	/* the same values where they belong are fine */
	meta_one_opt(PROTO_OP_META_SET, 1, "flags", v_one);
	expect_ok(&(struct proto_bin_req){ 0 });
	meta_one_opt(PROTO_OP_META_ARITH, 1, "delta", v_u64max);
	expect_ok(&(struct proto_bin_req){ 0 });
	meta_one_opt(PROTO_OP_META_GET, 1, "ttl", v_neg);
	expect_ok(&(struct proto_bin_req){ 0 });
	meta_one_opt(PROTO_OP_META_ARITH, 1, "mode", v_mode_i);
	expect_ok(&(struct proto_bin_req){ 0 });
}

Test(binary, meta_malformed_maps)
{
	static const uint32_t ops[] = { PROTO_OP_META_GET, PROTO_OP_META_SET,
					PROTO_OP_META_DELETE,
					PROTO_OP_META_ARITH };

	for (size_t i = 0; i < 4; i++) {
		uint32_t op = ops[i], set = op == PROTO_OP_META_SET;

		/* options that are not a map */
		req_begin(op, 1, 2 + set);
		pack_str("k");
		if (set)
			pack_bin("v", 1);
		msgpack_pack_array(&pk, 0);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 1);
		req_begin(op, 2, 2 + set);
		pack_str("k");
		if (set)
			pack_bin("v", 1);
		pack_str("v");
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 2);

		/* a key that is not a string */
		req_begin(op, 3, 2 + set);
		pack_str("k");
		if (set)
			pack_bin("v", 1);
		msgpack_pack_map(&pk, 1);
		msgpack_pack_uint32(&pk, 1);
		msgpack_pack_true(&pk);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 3);

		/* a key twice */
		req_begin(op, 4, 2 + set);
		pack_str("k");
		if (set)
			pack_bin("v", 1);
		msgpack_pack_map(&pk, 2);
		pack_str("ttl");
		msgpack_pack_uint32(&pk, 1);
		pack_str("ttl");
		msgpack_pack_uint32(&pk, 2);
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 4);

		/* more entries than options exist */
		req_begin(op, 5, 2 + set);
		pack_str("k");
		if (set)
			pack_bin("v", 1);
		msgpack_pack_map(&pk, PROTO_BIN_META_OPTS_MAX + 1);
		for (uint32_t j = 0; j <= PROTO_BIN_META_OPTS_MAX; j++) {
			pack_str("ttl");
			msgpack_pack_uint32(&pk, j);
		}
		finish();
		expect_reject(PROTO_ST_BAD_REQUEST, 5);

		/* a bad key is BAD_KEY whatever the options */
		req_begin(op, 6, 2 + set);
		pack_str("");
		if (set)
			pack_bin("v", 1);
		msgpack_pack_map(&pk, 0);
		finish();
		expect_reject(PROTO_ST_BAD_KEY, 6);
	}
}

Test(binary, meta_hostile_maps)
{
	/* [22, 1, "k", map32 claiming 2^32-1 entries]: refused before
	 * msgpack-c could allocate for them */
	static const unsigned char claim[] = { 0x94, 0x16, 0x01, 0xa1, 0x6b,
					       0xdf, 0xff, 0xff, 0xff, 0xff,
					       0xa1, 0x76, 0xc3 };
	/* an option whose value nests past the depth limit */
	static const unsigned char deep[] = { 0x94, 0x16, 0x01, 0xa1,
					      0x6b, 0x81, 0xa1, 0x76,
					      0x91, 0x91, 0x91, 0xc3 };

	set_body(claim, sizeof(claim));
	expect_fatal();
	set_body(deep, sizeof(deep));
	expect_fatal();
}

Test(binary, meta_replies)
{
	struct proto_bin_meta_reply in = {
		.fields = PROTO_MR_FLAGS | PROTO_MR_CAS | PROTO_MR_TTL |
			  PROTO_MR_SIZE | PROTO_MR_LA | PROTO_MR_HIT |
			  PROTO_MR_WON | PROTO_MR_STALE | PROTO_MR_WONBY |
			  PROTO_MR_VALUE,
		.flags = UINT32_MAX,
		.cas = UINT64_MAX,
		.ttl = -1,
		.size = 6,
		.last_access = 12,
		.hit = false,
		.value = { "val\0ue", 6 },
	};
	struct proto_bin_meta_reply out;
	struct proto_bin_reply rep;
	size_t at;

	reply_begin(1, PROTO_ST_OK);
	cr_assert_eq(proto_bin_pack_meta_reply(&pk, &in, true), 0);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	cr_assert_eq(out.fields, in.fields, "%#x %#x", out.fields, in.fields);
	cr_assert_eq(out.flags, UINT32_MAX);
	cr_assert_eq(out.cas, UINT64_MAX);
	cr_assert_eq(out.ttl, -1);
	cr_assert_eq(out.size, 6);
	cr_assert_eq(out.last_access, 12);
	cr_assert_not(out.hit);
	assert_bytes(out.value, "val\0ue", 6);

	/* the value's bytes appended by the caller (by reference) */
	reply_begin(2, PROTO_ST_OK);
	cr_assert_eq(proto_bin_pack_meta_reply(&pk, &in, false), 0);
	at = sb.size;
	msgpack_sbuffer_write(&sb, "val\0ue", 6);
	cr_assert_eq(sb.size, at + 6);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	assert_bytes(out.value, "val\0ue", 6);

	/* arithmetic's number; only the true booleans are sent */
	in = (struct proto_bin_meta_reply){ .fields = PROTO_MR_NUMBER |
						      PROTO_MR_CAS,
					    .number = UINT64_MAX,
					    .cas = 3 };
	reply_begin(3, PROTO_ST_OK);
	cr_assert_eq(proto_bin_pack_meta_reply(&pk, &in, true), 0);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_eq(rep.payload.via.map.size, 2);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	cr_assert_eq(out.fields, PROTO_MR_NUMBER | PROTO_MR_CAS);
	cr_assert_eq(out.number, UINT64_MAX);
	cr_assert_eq(out.cas, 3);

	/* an empty map and nil: nothing known */
	reply_begin(4, PROTO_ST_NOT_FOUND);
	msgpack_pack_map(&pk, 0);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	cr_assert_eq(out.fields, 0);
	reply_begin(5, PROTO_ST_NOT_FOUND);
	msgpack_pack_nil(&pk);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	cr_assert_eq(out.fields, 0);

	/* unknown keys are skipped; false booleans are absent */
	reply_begin(6, PROTO_ST_OK);
	msgpack_pack_map(&pk, 4);
	pack_str("future");
	msgpack_pack_array(&pk, 0);
	pack_str("won");
	msgpack_pack_false(&pk);
	pack_str("hit");
	msgpack_pack_true(&pk);
	pack_str("cas");
	msgpack_pack_uint32(&pk, 8);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert(proto_bin_meta_reply_decode(&rep.payload, &out));
	cr_assert_eq(out.fields, PROTO_MR_HIT | PROTO_MR_CAS);
	cr_assert(out.hit);
	cr_assert_eq(out.cas, 8);
}

Test(binary, meta_malformed_replies)
{
	static const struct {
		const char *key;
		void (*val)(void);
	} bad[] = {
		{ "flags", v_u33 }, { "flags", v_neg },	  { "cas", v_neg },
		{ "cas", v_str },   { "ttl", v_u64max },  { "ttl", v_str },
		{ "size", v_neg },  { "la", v_true },	  { "hit", v_one },
		{ "won", v_one },   { "stale", v_nil },	  { "wonby", v_str },
		{ "value", v_neg }, { "value", v_array }, { "value", v_true },
	};
	struct proto_bin_meta_reply out;
	struct proto_bin_reply rep;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reply_begin(i, PROTO_ST_OK);
		msgpack_pack_map(&pk, 1);
		pack_str(bad[i].key);
		bad[i].val();
		finish();
		cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
			     PROTO_BIN_OK);
		cr_assert_not(proto_bin_meta_reply_decode(&rep.payload, &out),
			      "%s", bad[i].key);
	}
	/* not a map; a key not a string */
	reply_begin(20, PROTO_ST_OK);
	msgpack_pack_array(&pk, 0);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_not(proto_bin_meta_reply_decode(&rep.payload, &out));
	reply_begin(21, PROTO_ST_OK);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_uint32(&pk, 1);
	msgpack_pack_true(&pk);
	finish();
	cr_assert_eq(proto_bin_decode_reply(&dec, body, body_n, &rep),
		     PROTO_BIN_OK);
	cr_assert_not(proto_bin_meta_reply_decode(&rep.payload, &out));
}

/* ---- names ---- */

Test(binary, names)
{
	static const char *const ops[] = {
		NULL,	       "get",	     "gets",	     "mget",
		"set",	       "add",	     "replace",	     "append",
		"prepend",     "cas",	     "delete",	     "incr",
		"decr",	       "touch",	     "gat",	     "flush_all",
		"scan",	       "stats",	     "version",	     "noop",
		"quit",	       "auth",	     "meta_get",     "meta_set",
		"meta_delete", "meta_arith", "flush_prefix",
	};
	static const char *const sts[] = {
		"OK",	       "NOT_FOUND",    "NOT_STORED",	"EXISTS",
		"TOO_LARGE",   "BAD_KEY",      "NON_NUMERIC",	"OUT_OF_MEMORY",
		"BAD_REQUEST", "SERVER_ERROR", "AUTH_REQUIRED",
	};

	for (uint32_t op = 1; op <= PROTO_OP_MAX; op++)
		cr_assert_str_eq(proto_bin_op_name(op), ops[op]);
	cr_assert_str_eq(proto_bin_op_name(0), "?");
	cr_assert_str_eq(proto_bin_op_name(27), "?");
	cr_assert_str_eq(proto_bin_op_name(UINT32_MAX), "?");
	for (uint32_t s = 0; s <= PROTO_ST_MAX; s++)
		cr_assert_str_eq(proto_bin_status_name(s), sts[s]);
	cr_assert_str_eq(proto_bin_status_name(11), "?");
	cr_assert_str_eq(proto_bin_status_name(UINT32_MAX), "?");
}
