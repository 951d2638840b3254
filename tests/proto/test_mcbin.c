/*
 * proto/mcbin.c: memcached's binary protocol codec. Every opcode's layout
 * (a valid request parses, a wrong one is refused), every truncated prefix
 * needs more, the magic, lengths that do not add up, the limits, and the
 * response header.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/mcbin.h"

#define BODY_MAX  (1024 * 1024 + MCBIN_BODY_SLACK)
#define VALUE_MAX (1024 * 1024)

/* Builds a request into out; returns its length. */
static size_t build(char *out, uint8_t op, const char *extras, uint8_t extlen,
		    const char *key, uint16_t keylen, const char *value,
		    uint32_t nvalue, uint32_t opaque, uint64_t cas)
{
	size_t n = MCBIN_HEADER;

	mcbin_frame_header(out, MCBIN_MAGIC_REQ, op, 0, extlen, keylen, nvalue,
			   opaque, cas);
	memcpy(out + n, extras, extlen);
	n += extlen;
	memcpy(out + n, key, keylen);
	n += keylen;
	memcpy(out + n, value, nvalue);
	return n + nvalue;
}

/* What each known opcode needs: extras length, key, value. */
static const struct {
	uint8_t op;
	uint8_t extlen;
	bool key, value, quiet;
	uint8_t base;
} ops[] = {
	{ MCBIN_GET, 0, true, false, false, MCBIN_GET },
	{ MCBIN_GETQ, 0, true, false, true, MCBIN_GET },
	{ MCBIN_GETK, 0, true, false, false, MCBIN_GETK },
	{ MCBIN_GETKQ, 0, true, false, true, MCBIN_GETK },
	{ MCBIN_SET, 8, true, true, false, MCBIN_SET },
	{ MCBIN_SETQ, 8, true, true, true, MCBIN_SET },
	{ MCBIN_ADD, 8, true, true, false, MCBIN_ADD },
	{ MCBIN_ADDQ, 8, true, true, true, MCBIN_ADD },
	{ MCBIN_REPLACE, 8, true, true, false, MCBIN_REPLACE },
	{ MCBIN_REPLACEQ, 8, true, true, true, MCBIN_REPLACE },
	{ MCBIN_DELETE, 0, true, false, false, MCBIN_DELETE },
	{ MCBIN_DELETEQ, 0, true, false, true, MCBIN_DELETE },
	{ MCBIN_INCREMENT, 20, true, false, false, MCBIN_INCREMENT },
	{ MCBIN_INCREMENTQ, 20, true, false, true, MCBIN_INCREMENT },
	{ MCBIN_DECREMENT, 20, true, false, false, MCBIN_DECREMENT },
	{ MCBIN_DECREMENTQ, 20, true, false, true, MCBIN_DECREMENT },
	{ MCBIN_QUIT, 0, false, false, false, MCBIN_QUIT },
	{ MCBIN_QUITQ, 0, false, false, true, MCBIN_QUIT },
	{ MCBIN_FLUSH, 4, false, false, false, MCBIN_FLUSH },
	{ MCBIN_FLUSHQ, 4, false, false, true, MCBIN_FLUSH },
	{ MCBIN_NOOP, 0, false, false, false, MCBIN_NOOP },
	{ MCBIN_VERSION, 0, false, false, false, MCBIN_VERSION },
	{ MCBIN_APPEND, 0, true, true, false, MCBIN_APPEND },
	{ MCBIN_APPENDQ, 0, true, true, true, MCBIN_APPEND },
	{ MCBIN_PREPEND, 0, true, true, false, MCBIN_PREPEND },
	{ MCBIN_PREPENDQ, 0, true, true, true, MCBIN_PREPEND },
	{ MCBIN_STAT, 0, true, false, false, MCBIN_STAT },
	{ MCBIN_VERBOSITY, 4, false, false, false, MCBIN_VERBOSITY },
	{ MCBIN_TOUCH, 4, true, false, false, MCBIN_TOUCH },
	{ MCBIN_GAT, 4, true, false, false, MCBIN_GAT },
	{ MCBIN_GATQ, 4, true, false, true, MCBIN_GAT },
	{ MCBIN_GATK, 4, true, false, false, MCBIN_GATK },
	{ MCBIN_GATKQ, 4, true, false, true, MCBIN_GATK },
	{ MCBIN_SASL_LIST_MECHS, 0, false, false, false,
	  MCBIN_SASL_LIST_MECHS },
	{ MCBIN_SASL_AUTH, 0, true, true, false, MCBIN_SASL_AUTH },
	{ MCBIN_SASL_STEP, 0, true, true, false, MCBIN_SASL_STEP },
};

#define NOPS (sizeof(ops) / sizeof(ops[0]))

static const char extras[20] = "\x00\x00\x00\x07\x00\x00\x00\x64"
			       "\x00\x00\x00\x00\x00\x00\x00\x09"
			       "\x00\x00\x01\x2c";

/* A valid request of ops[i], into buf. */
static size_t valid(char *buf, size_t i)
{
	return build(buf, ops[i].op, extras, ops[i].extlen, "key",
		     ops[i].key ? 3 : 0, "val", ops[i].value ? 3 : 0, 42, 5);
}

Test(mcbin, every_opcode_parses_with_its_layout)
{
	char buf[128];
	struct mcbin_req q;

	for (size_t i = 0; i < NOPS; i++) {
		size_t n = valid(buf, i);

		cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
			     MCBIN_OK, "op %#x", ops[i].op);
		cr_assert_eq(q.len, n);
		cr_assert_eq(q.h.opcode, ops[i].op);
		cr_assert_eq(q.h.opaque, 42);
		cr_assert_eq(q.h.cas, 5);
		cr_assert_eq(q.lay.quiet, ops[i].quiet, "op %#x", ops[i].op);
		cr_assert_eq(q.lay.base, ops[i].base, "op %#x", ops[i].op);
		cr_assert_eq(q.h.keylen, ops[i].key ? 3 : 0);
		if (ops[i].key)
			cr_assert_eq(memcmp(q.key, "key", 3), 0);
		cr_assert_eq(q.nvalue, ops[i].value ? 3 : 0);
		if (ops[i].value)
			cr_assert_eq(memcmp(q.value, "val", 3), 0);
	}
}

Test(mcbin, extras_are_decoded_by_opcode)
{
	char buf[128];
	struct mcbin_req q;
	size_t n;

	n = build(buf, MCBIN_SET, extras, 8, "k", 1, "v", 1, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.flags, 7);
	cr_assert_eq(q.exptime, 100);
	n = build(buf, MCBIN_INCREMENT, extras, 20, "k", 1, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.delta, (uint64_t)7 << 32 | 100);
	cr_assert_eq(q.initial, 9);
	cr_assert_eq(q.exptime, 300);
	n = build(buf, MCBIN_GAT, extras, 4, "k", 1, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.exptime, 7);
	n = build(buf, MCBIN_VERBOSITY, extras, 4, "", 0, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.verbosity, 7);
	/* FLUSH's expiration is optional. */
	n = build(buf, MCBIN_FLUSH, extras, 0, "", 0, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.exptime, 0);
	n = build(buf, MCBIN_FLUSH, extras, 4, "", 0, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	cr_assert_eq(q.exptime, 7);
	/* STAT's key is optional. */
	n = build(buf, MCBIN_STAT, extras, 0, "", 0, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
}

/* Extras of another length, a key where none goes or none where one must,
 * a value where none goes: invalid arguments. */
Test(mcbin, a_wrong_layout_is_invalid)
{
	char buf[128];
	struct mcbin_req q;

	for (size_t i = 0; i < NOPS; i++) {
		size_t n;

		n = build(buf, ops[i].op, extras, ops[i].extlen ? 0 : 4, "key",
			  ops[i].key ? 3 : 0, "", 0, 0, 0);
		if (ops[i].base != MCBIN_FLUSH)
			cr_assert_eq(
				mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
				MCBIN_INVALID, "extras of op %#x", ops[i].op);
		n = build(buf, ops[i].op, extras, ops[i].extlen, "key",
			  ops[i].key ? 0 : 3, "", 0, 0, 0);
		if (ops[i].base != MCBIN_STAT)
			cr_assert_eq(
				mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
				MCBIN_INVALID, "key of op %#x", ops[i].op);
		if (ops[i].value)
			continue;
		n = build(buf, ops[i].op, extras, ops[i].extlen, "key",
			  ops[i].key ? 3 : 0, "v", 1, 0, 0);
		cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
			     MCBIN_INVALID, "value of op %#x", ops[i].op);
	}
}

Test(mcbin, every_truncated_prefix_needs_more)
{
	char buf[128];
	struct mcbin_req q;

	for (size_t i = 0; i < NOPS; i++) {
		size_t n = valid(buf, i);

		for (size_t k = 0; k < n; k++)
			cr_assert_eq(
				mcbin_parse(buf, k, BODY_MAX, VALUE_MAX, &q),
				MCBIN_NEED_MORE, "op %#x, %zu of %zu",
				ops[i].op, k, n);
	}
}

/* A response's magic (or any other) from a client ends the connection. */
Test(mcbin, bad_magic_closes)
{
	char buf[64];
	struct mcbin_req q;
	size_t n = build(buf, MCBIN_NOOP, "", 0, "", 0, "", 0, 0, 0);

	buf[0] = (char)MCBIN_MAGIC_RES;
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_CLOSE);
	cr_assert_eq(mcbin_parse(buf, 1, BODY_MAX, VALUE_MAX, &q), MCBIN_CLOSE);
	buf[0] = 'g';
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_CLOSE);
}

/* Extras and key longer than the body: refused from the header alone. */
Test(mcbin, key_and_extras_over_the_body_are_bad_lengths)
{
	char buf[64];
	struct mcbin_req q;
	size_t n = build(buf, MCBIN_GET, "", 0, "abc", 3, "", 0, 9, 0);

	buf[3] = 10; /* keylen 10, body 3 */
	cr_assert_eq(mcbin_parse(buf, MCBIN_HEADER, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_BAD_LENGTHS);
	cr_assert_eq(q.h.opaque, 9);
	n = build(buf, MCBIN_SET, extras, 8, "k", 1, "", 0, 0, 0);
	buf[11] = 4; /* body 4 < extras 8 + key 1 */
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_BAD_LENGTHS);
	/* The same for an unknown opcode. */
	buf[1] = 0x60;
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_BAD_LENGTHS);
}

Test(mcbin, a_key_over_250_bytes_is_invalid)
{
	static char buf[MCBIN_HEADER + 300];
	static char key[251];
	struct mcbin_req q;
	size_t n;

	memset(key, 'a', sizeof(key));
	n = build(buf, MCBIN_GET, "", 0, key, 250, "", 0, 0, 0);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q), MCBIN_OK);
	n = build(buf, MCBIN_GET, "", 0, key, 251, "", 0, 0, 0);
	/* Known from the header alone. */
	cr_assert_eq(mcbin_parse(buf, MCBIN_HEADER, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_INVALID);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_INVALID);
}

/* A body over the limit closes from the header: nothing is buffered. */
Test(mcbin, a_body_over_the_limit_closes)
{
	char buf[64];
	struct mcbin_req q;

	build(buf, MCBIN_SET, extras, 8, "k", 1, "", 0, 0, 0);
	mcbin_store32(buf + 8, 1000);
	cr_assert_eq(mcbin_parse(buf, MCBIN_HEADER, 999, 100, &q), MCBIN_CLOSE);
	cr_assert_eq(mcbin_parse(buf, MCBIN_HEADER, 1000, 100, &q),
		     MCBIN_NEED_MORE);
}

/* A value over value_max (the body within its limit): too large, once
 * header, extras and key are in; the value is to be discarded. */
Test(mcbin, a_value_over_the_item_size_is_too_large)
{
	char buf[64];
	struct mcbin_req q;
	size_t head = MCBIN_HEADER + 8 + 1;

	build(buf, MCBIN_SETQ, extras, 8, "k", 1, "", 0, 3, 0);
	mcbin_store32(buf + 8, 9 + 200);
	cr_assert_eq(mcbin_parse(buf, head - 1, 1000, 100, &q),
		     MCBIN_NEED_MORE);
	cr_assert_eq(mcbin_parse(buf, head, 1000, 100, &q), MCBIN_TOO_LARGE);
	cr_assert_eq(q.len, head);
	cr_assert_eq(q.swallow, 200);
	cr_assert_eq(q.h.keylen, 1);
	cr_assert_eq(q.key[0], 'k');
	cr_assert_eq(q.h.opaque, 3);
	/* At the limit it is a request like any other. */
	mcbin_store32(buf + 8, 9 + 100);
	cr_assert_eq(mcbin_parse(buf, head, 1000, 100, &q), MCBIN_NEED_MORE);
}

Test(mcbin, an_unknown_opcode_is_consumed_whole)
{
	char buf[64];
	struct mcbin_req q;
	size_t n = build(buf, 0x60, "", 0, "k", 1, "vv", 2, 0, 0);

	cr_assert_eq(mcbin_parse(buf, n - 1, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_NEED_MORE);
	cr_assert_eq(mcbin_parse(buf, n, BODY_MAX, VALUE_MAX, &q),
		     MCBIN_UNKNOWN);
	cr_assert_eq(q.len, n);
	cr_assert_not(mcbin_layout(0x1f).known);
	cr_assert_not(mcbin_layout(0xff).known);
}

/* Pipelined requests: each parse takes exactly its own. */
Test(mcbin, pipelined_requests_parse_one_at_a_time)
{
	char buf[256];
	struct mcbin_req q;
	size_t n = 0, off = 0;

	n += build(buf + n, MCBIN_GETKQ, "", 0, "a", 1, "", 0, 1, 0);
	n += build(buf + n, MCBIN_GETKQ, "", 0, "bb", 2, "", 0, 2, 0);
	n += build(buf + n, MCBIN_NOOP, "", 0, "", 0, "", 0, 3, 0);
	for (uint32_t i = 1; i <= 3; i++) {
		cr_assert_eq(mcbin_parse(buf + off, n - off, BODY_MAX,
					 VALUE_MAX, &q),
			     MCBIN_OK);
		cr_assert_eq(q.h.opaque, i);
		off += q.len;
	}
	cr_assert_eq(off, n);
}

Test(mcbin, response_header_round_trips)
{
	char out[MCBIN_HEADER];
	struct mcbin_header h = { MCBIN_MAGIC_RES,
				  MCBIN_GETK,
				  0x0102,
				  4,
				  0,
				  MCBIN_ST_NOT_FOUND,
				  0x01020304,
				  0xdeadbeef,
				  0x0102030405060708ULL };
	struct mcbin_header back;
	static const unsigned char want[MCBIN_HEADER] = {
		0x81, 0x0c, 0x01, 0x02, 0x04, 0x00, 0x00, 0x01,
		0x01, 0x02, 0x03, 0x04, 0xde, 0xad, 0xbe, 0xef,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};

	mcbin_header_write(out, &h);
	cr_assert_eq(memcmp(out, want, sizeof(want)), 0);
	mcbin_header_read(out, &back);
	cr_assert_eq(back.magic, h.magic);
	cr_assert_eq(back.opcode, h.opcode);
	cr_assert_eq(back.keylen, h.keylen);
	cr_assert_eq(back.extlen, h.extlen);
	cr_assert_eq(back.datatype, h.datatype);
	cr_assert_eq(back.vbucket, h.vbucket);
	cr_assert_eq(back.bodylen, h.bodylen);
	cr_assert_eq(back.opaque, h.opaque);
	cr_assert_eq(back.cas, h.cas);
}

Test(mcbin, status_texts_are_memcached_s)
{
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_NOT_FOUND), "Not found");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_EXISTS),
			 "Data exists for key.");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_TOO_LARGE), "Too large.");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_INVALID),
			 "Invalid arguments");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_NOT_STORED), "Not stored.");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_AUTH_ERROR),
			 "Auth failure.");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_UNKNOWN_COMMAND),
			 "Unknown command");
	cr_assert_str_eq(mcbin_status_text(MCBIN_ST_NO_MEMORY),
			 "Out of memory");
}
