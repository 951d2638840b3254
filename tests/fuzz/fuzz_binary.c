/*
 * libFuzzer target of the binary-protocol codec (proto/binary.h): reads the
 * input as a connection would, frame after frame, decoding each body both as
 * a request and as a reply; touches every byte range a decode hands back
 * (so that ASan checks the pointers) and checks that they lie in the body;
 * and checks that a request decodes alike with or without the codec's
 * direct path (check_paths_agree).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/binary.h"
#include "proto/meta.h"
#include "proto/text.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#define MAX_VALUE (1u << 20)

/* Small, so that too-large values are common too. */
#define SMALL_VALUE 16u

static volatile unsigned int sink;

static unsigned int touch(const char *body, size_t n, const char *p, size_t len)
{
	unsigned int sum = 0;

	if (len == 0)
		return 0;
	CHECK(p != NULL);
	CHECK(p >= body && (size_t)(p - body) <= n && len <= n - (p - body));
	for (size_t i = 0; i < len; i++)
		sum += (unsigned char)p[i];
	return sum;
}

static unsigned int touch_bytes(const char *body, size_t n,
				struct proto_bin_bytes b)
{
	return touch(body, n, b.p, b.n);
}

/* Walks a decoded object (a reply payload): str, bin and ext point into
 * the body. Depth is bounded by the codec's shape check. */
static unsigned int touch_object(const char *body, size_t n,
				 const msgpack_object *o, unsigned int depth)
{
	unsigned int sum = 0;

	CHECK(depth <= PROTO_BIN_MAX_DEPTH);
	switch (o->type) {
	case MSGPACK_OBJECT_STR:
		return touch(body, n, o->via.str.ptr, o->via.str.size);
	case MSGPACK_OBJECT_BIN:
		return touch(body, n, o->via.bin.ptr, o->via.bin.size);
	case MSGPACK_OBJECT_EXT:
		return touch(body, n, o->via.ext.ptr, o->via.ext.size);
	case MSGPACK_OBJECT_ARRAY:
		CHECK(o->via.array.size <= n);
		for (uint32_t i = 0; i < o->via.array.size; i++)
			sum += touch_object(body, n, &o->via.array.ptr[i],
					    depth + 1);
		return sum;
	case MSGPACK_OBJECT_MAP:
		CHECK(o->via.map.size <= n);
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			sum += touch_object(body, n, &o->via.map.ptr[i].key,
					    depth + 1);
			sum += touch_object(body, n, &o->via.map.ptr[i].val,
					    depth + 1);
		}
		return sum;
	default:
		return 0;
	}
}

static void check_key(const char *body, size_t n, struct proto_bin_bytes k)
{
	char spelled[PROTO_TEXT_KEY_MAX], raw[PROTO_TEXT_KEY_MAX];
	size_t spelled_n;
	bool b64;

	CHECK(k.n >= 1 && k.n <= PROTO_BIN_KEY_MAX);
	CHECK(proto_bin_key_ok(k.p, k.n));
	/* Any bytes are a key; as text replies spell it, it is a text key
	 * or base64 that decodes back to the same bytes. */
	spelled_n = proto_text_key(spelled, k.p, k.n, false, &b64);
	if (b64) {
		CHECK(!proto_key_ok(k.p, k.n));
		CHECK(proto_base64_decode(spelled, spelled_n, raw) == k.n);
		CHECK(memcmp(raw, k.p, k.n) == 0);
	} else {
		CHECK(proto_key_ok(k.p, k.n));
		CHECK(spelled_n == k.n && memcmp(spelled, k.p, k.n) == 0);
	}
	sink += touch_bytes(body, n, k);
}

static bool has_key(uint32_t op)
{
	return op != PROTO_OP_MGET && op != PROTO_OP_FLUSH_ALL &&
	       op != PROTO_OP_SCAN && op != PROTO_OP_STATS &&
	       op != PROTO_OP_VERSION && op != PROTO_OP_NOOP &&
	       op != PROTO_OP_QUIT && op != PROTO_OP_AUTH;
}

static void decode_request(struct proto_bin_decoder *d, const char *body,
			   size_t n, uint32_t max_value)
{
	struct proto_bin_req req;
	uint32_t status = UINT32_MAX;
	const char *error = NULL;
	enum proto_bin_result r;

	r = proto_bin_decode_request(d, body, n, max_value, &req, &status,
				     &error);
	if (r == PROTO_BIN_FATAL)
		return;
	if (r == PROTO_BIN_REJECT) {
		CHECK(status == PROTO_ST_BAD_REQUEST ||
		      status == PROTO_ST_BAD_KEY ||
		      status == PROTO_ST_TOO_LARGE);
		CHECK(error != NULL && strlen(error) > 0);
		CHECK(strcmp(proto_bin_status_name(status), "?") != 0);
		return;
	}
	CHECK(r == PROTO_BIN_OK);
	CHECK(req.op >= 1 && req.op <= PROTO_OP_MAX);
	CHECK(strcmp(proto_bin_op_name(req.op), "?") != 0);
	if (has_key(req.op))
		check_key(body, n, req.key);
	else
		CHECK(req.key.n == 0);
	CHECK(req.value.n <= max_value);
	sink += touch_bytes(body, n, req.value);
	sink += touch_bytes(body, n, req.match);
	sink += touch_bytes(body, n, req.text);
	if (req.op == PROTO_OP_SCAN)
		CHECK(req.count >= 1 && req.count <= 1000);
	if (proto_bin_op_is_meta(req.op)) {
		const struct proto_bin_meta *m = &req.meta;

		CHECK((m->opts & ~0xfffu) == 0);
		CHECK((m->opts & PROTO_META_DELTA) || m->delta == 1);
		CHECK(!(m->opts & PROTO_META_MODE) == !m->mode);
		if (m->mode)
			CHECK(strchr(req.op == PROTO_OP_META_SET ? "SEAPR"
								 : "ID",
				     m->mode) != NULL);
		if (req.op != PROTO_OP_META_SET)
			CHECK(req.value.n == 0);
	} else {
		CHECK(req.meta.opts == 0);
	}
	if (req.op == PROTO_OP_MGET) {
		CHECK(req.nkeys <= n);
		for (uint32_t i = 0; i < req.nkeys; i++) {
			struct proto_bin_bytes k = { 0 };

			if (proto_bin_mget_key(&req, i, &k))
				check_key(body, n, k);
			sink += touch_object(body, n, &req.keys[i], 2);
		}
		CHECK(!proto_bin_mget_key(&req, req.nkeys,
					  &(struct proto_bin_bytes){ 0 }));
	} else {
		CHECK(req.nkeys == 0);
	}
}

static bool same_bytes(struct proto_bin_bytes a, struct proto_bin_bytes b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/*
 * A fixarray body decodes as the same body with an array16 header: the
 * first may take binary.c's direct path, the second never does, so both
 * paths must give the same result and the same request.
 */
static void check_paths_agree(struct proto_bin_decoder *d, const char *body,
			      size_t n, uint32_t max_value)
{
	struct proto_bin_req a, b;
	uint32_t sa = 0, sb = 0;
	const char *ea = NULL, *eb = NULL;
	enum proto_bin_result ra, rb;
	char *alt;

	if (n == 0 || (unsigned char)body[0] < 0x90 ||
	    (unsigned char)body[0] > 0x9f)
		return;
	alt = malloc(n + 2);
	CHECK(alt != NULL);
	alt[0] = (char)0xdc;
	alt[1] = 0;
	alt[2] = (char)(body[0] & 0x0f);
	memcpy(alt + 3, body + 1, n - 1);
	ra = proto_bin_decode_request(d, body, n, max_value, &a, &sa, &ea);
	rb = proto_bin_decode_request(d, alt, n + 2, max_value, &b, &sb, &eb);
	CHECK(ra == rb);
	if (ra == PROTO_BIN_REJECT)
		CHECK(sa == sb && strcmp(ea, eb) == 0);
	if (ra == PROTO_BIN_OK) {
		CHECK(a.op == b.op && a.id == b.id);
		CHECK(same_bytes(a.key, b.key) && same_bytes(a.value, b.value));
		CHECK(a.flags == b.flags && a.exptime == b.exptime);
		CHECK(a.cas == b.cas && a.delta == b.delta);
		CHECK(a.delay == b.delay && a.cursor == b.cursor);
		CHECK(a.count == b.count && a.has_match == b.has_match);
		CHECK(same_bytes(a.match, b.match) &&
		      same_bytes(a.text, b.text));
		CHECK(a.nkeys == b.nkeys && a.meta.opts == b.meta.opts);
	}
	free(alt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const size_t limit = proto_bin_body_limit(MAX_VALUE);
	struct proto_bin_decoder d;
	size_t off = 0;

	proto_bin_decoder_init(&d);
	for (;;) {
		struct proto_bin_reply reply;
		const char *body;
		uint32_t len = 0;
		enum proto_bin_frame f;

		f = proto_bin_frame_len(buf + off, size - off, limit, &len);
		if (size - off < PROTO_BIN_HEADER) {
			CHECK(f == PROTO_BIN_FRAME_NEED_MORE);
			break;
		}
		CHECK(f != PROTO_BIN_FRAME_NEED_MORE);
		CHECK((f == PROTO_BIN_FRAME_TOO_LARGE) == (len > limit));
		if (f != PROTO_BIN_FRAME_OK)
			break;
		if (len > size - off - PROTO_BIN_HEADER)
			break; /* the body is not all here */
		body = buf + off + PROTO_BIN_HEADER;

		decode_request(&d, body, len, MAX_VALUE);
		decode_request(&d, body, len, SMALL_VALUE);
		check_paths_agree(&d, body, len, MAX_VALUE);
		check_paths_agree(&d, body, len, SMALL_VALUE);
		if (proto_bin_decode_reply(&d, body, len, &reply) ==
		    PROTO_BIN_OK) {
			struct proto_bin_meta_reply mr;

			sink += touch_object(body, len, &reply.payload, 1);
			if (proto_bin_meta_reply_decode(&reply.payload, &mr))
				sink += touch_bytes(body, len, mr.value);
		}
		off += PROTO_BIN_HEADER + len;
	}
	proto_bin_decoder_destroy(&d);
	return 0;
}
