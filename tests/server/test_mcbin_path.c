/*
 * memcached's binary protocol over the in-memory transport: every opcode,
 * quiet variants, opaque and CAS, SASL PLAIN (success, failure, before
 * auth), malformed headers, limits, and a long pipeline of GETKQ under
 * backpressure. The bytes expected are memcached 1.6.18's where it has an
 * answer (tests/server/test_mcbin.c checks them against it over TCP).
 */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mcbin.h"
#include "server/net/conn.h"
#include "server/protocol/protocol.h"
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

TestSuite(mcbin_path, .init = setup, .fini = teardown, .timeout = 60);

/* ---- requests ---- */

struct out {
	char *p;
	size_t n, cap;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (!n)
		return;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2 + 64;
		o->p = realloc(o->p, o->cap);
		cr_assert_not_null(o->p);
	}
	memcpy(o->p + o->n, p, n);
	o->n += n;
}

static void req(struct out *o, uint8_t op, const void *extras, uint8_t extlen,
		const char *key, const void *value, size_t nvalue,
		uint32_t opaque, uint64_t cas)
{
	size_t nkey = key ? strlen(key) : 0;
	char hdr[MCBIN_HEADER];

	mcbin_frame_header(hdr, MCBIN_MAGIC_REQ, op, 0, extlen, (uint16_t)nkey,
			   (uint32_t)nvalue, opaque, cas);
	put(o, hdr, sizeof(hdr));
	put(o, extras, extlen);
	put(o, key, nkey);
	put(o, value, nvalue);
}

static void simple(struct out *o, uint8_t op, const char *key, uint32_t opaque)
{
	req(o, op, NULL, 0, key, NULL, 0, opaque, 0);
}

static void store(struct out *o, uint8_t op, const char *key, const char *v,
		  uint32_t flags, uint32_t exptime, uint64_t cas)
{
	char e[8];

	mcbin_store32(e, flags);
	mcbin_store32(e + 4, exptime);
	req(o, op, e, 8, key, v, strlen(v), 0, cas);
}

static void arith(struct out *o, uint8_t op, const char *key, uint64_t delta,
		  uint64_t initial, uint32_t exptime, uint64_t cas)
{
	char e[20];

	mcbin_store64(e, delta);
	mcbin_store64(e + 8, initial);
	mcbin_store32(e + 16, exptime);
	req(o, op, e, 20, key, NULL, 0, 0, cas);
}

static void with_exptime(struct out *o, uint8_t op, const char *key,
			 uint32_t exptime)
{
	char e[4];

	mcbin_store32(e, exptime);
	req(o, op, e, 4, key, NULL, 0, 0, 0);
}

/* ---- responses ---- */

struct resp {
	struct mcbin_header h;
	const char *extras, *key, *value;
	uint32_t nvalue;
};

#define MAXR 4096

struct replies {
	char *buf;
	size_t n;
	size_t count;
	struct resp r[MAXR];
	bool open;
};

static struct replies got;

/* Feeds o to c, parses every response (whole ones only). */
static void run(struct conn *c, struct out *o)
{
	size_t off = 0;

	got.open = conn_memory_feed(c, o->p, o->n, false, replies);
	o->n = 0;
	free(got.buf);
	got.n = evbuffer_get_length(replies);
	got.buf = malloc(got.n + 1);
	cr_assert_not_null(got.buf);
	evbuffer_remove(replies, got.buf, got.n);
	got.count = 0;
	while (got.n - off >= MCBIN_HEADER) {
		struct resp *r = &got.r[got.count];

		cr_assert_lt(got.count, MAXR);
		mcbin_header_read(got.buf + off, &r->h);
		cr_assert_eq(r->h.magic, MCBIN_MAGIC_RES);
		cr_assert_leq(MCBIN_HEADER + r->h.bodylen, got.n - off,
			      "a torn response");
		r->extras = got.buf + off + MCBIN_HEADER;
		r->key = r->extras + r->h.extlen;
		r->value = r->key + r->h.keylen;
		r->nvalue = r->h.bodylen - r->h.extlen - r->h.keylen;
		off += MCBIN_HEADER + r->h.bodylen;
		got.count++;
	}
	cr_assert_eq(off, got.n, "bytes after the last response");
}

static void free_all(struct out *o)
{
	free(o->p);
	free(got.buf);
	got.buf = NULL;
}

/* Response i is opcode op with status st and the value v (NULL: any). */
static void expect(size_t i, uint8_t op, uint16_t st, const char *v)
{
	const struct resp *r = &got.r[i];

	cr_assert_lt(i, got.count, "response %zu of %zu", i, got.count);
	cr_assert_eq(r->h.opcode, op, "response %zu: op %#x, not %#x", i,
		     r->h.opcode, op);
	cr_assert_eq(r->h.vbucket, st, "response %zu: status %#x, not %#x", i,
		     r->h.vbucket, st);
	if (v) {
		cr_assert_eq(r->nvalue, strlen(v), "response %zu: %.*s", i,
			     (int)r->nvalue, r->value);
		cr_assert_eq(memcmp(r->value, v, r->nvalue), 0,
			     "response %zu: %.*s", i, (int)r->nvalue, r->value);
	}
}

static uint32_t flags_of(size_t i)
{
	cr_assert_eq(got.r[i].h.extlen, 4);
	return mcbin_load32(got.r[i].extras);
}

/* ---- tests ---- */

Test(mcbin_path, set_get_getk_with_opaque_flags_and_cas)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	uint64_t cas;

	store(&o, MCBIN_SET, "k", "hello", 0xdeadbeef, 0, 0);
	o.p[12 + 3] = 7; /* opaque 7 */
	simple(&o, MCBIN_GET, "k", 8);
	simple(&o, MCBIN_GETK, "k", 9);
	simple(&o, MCBIN_GET, "nx", 10);
	simple(&o, MCBIN_GETK, "nx", 11);
	run(c, &o);
	cr_assert_eq(got.count, 5);
	expect(0, MCBIN_SET, 0, "");
	cas = got.r[0].h.cas;
	cr_assert_neq(cas, 0);
	cr_assert_eq(got.r[0].h.opaque, 7);
	expect(1, MCBIN_GET, 0, "hello");
	cr_assert_eq(flags_of(1), 0xdeadbeef);
	cr_assert_eq(got.r[1].h.cas, cas);
	cr_assert_eq(got.r[1].h.opaque, 8);
	cr_assert_eq(got.r[1].h.keylen, 0);
	expect(2, MCBIN_GETK, 0, "hello");
	cr_assert_eq(got.r[2].h.keylen, 1);
	cr_assert_eq(got.r[2].key[0], 'k');
	cr_assert_eq(got.r[2].h.opaque, 9);
	/* A miss: "Not found"; GETK's gives the key and no text. */
	expect(3, MCBIN_GET, MCBIN_ST_NOT_FOUND, "Not found");
	cr_assert_eq(got.r[3].h.cas, 0);
	expect(4, MCBIN_GETK, MCBIN_ST_NOT_FOUND, "");
	cr_assert_eq(got.r[4].h.keylen, 2);
	cr_assert_eq(memcmp(got.r[4].key, "nx", 2), 0);
	free_all(&o);
}

/* Quiet: nothing on success nor on a quiet get's miss; errors (not found
 * included) and hits answered; a NOOP ends the batch. */
Test(mcbin_path, quiet_variants)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };

	store(&o, MCBIN_SETQ, "q", "1", 0, 0, 0);
	simple(&o, MCBIN_GETQ, "nx", 1);
	simple(&o, MCBIN_GETKQ, "nx", 2);
	simple(&o, MCBIN_GETKQ, "q", 3);
	simple(&o, MCBIN_DELETEQ, "nx", 4);
	store(&o, MCBIN_REPLACEQ, "nx", "v", 0, 0, 0);
	store(&o, MCBIN_ADDQ, "q", "v", 0, 0, 0); /* exists: answered */
	req(&o, MCBIN_APPENDQ, NULL, 0, "nx", "v", 1, 5, 0);
	arith(&o, MCBIN_INCREMENTQ, "q", 1, 0, 0, 0);
	arith(&o, MCBIN_INCREMENTQ, "nx", 1, 0, 0xffffffff, 0);
	with_exptime(&o, MCBIN_GATQ, "nx", 0);
	with_exptime(&o, MCBIN_GATKQ, "q", 0);
	req(&o, MCBIN_FLUSHQ, NULL, 0, NULL, NULL, 0, 0, 0);
	simple(&o, MCBIN_GETQ, "q", 6); /* flushed: nothing */
	simple(&o, MCBIN_NOOP, NULL, 7);
	run(c, &o);
	cr_assert_eq(got.count, 8, "%zu responses", got.count);
	expect(0, MCBIN_GETKQ, 0, "1");
	cr_assert_eq(got.r[0].h.opaque, 3);
	expect(1, MCBIN_DELETEQ, MCBIN_ST_NOT_FOUND, "Not found");
	cr_assert_eq(got.r[1].h.opaque, 4);
	expect(2, MCBIN_REPLACEQ, MCBIN_ST_NOT_FOUND, "Not found");
	expect(3, MCBIN_ADDQ, MCBIN_ST_EXISTS, "Data exists for key.");
	expect(4, MCBIN_APPENDQ, MCBIN_ST_NOT_STORED, "Not stored.");
	cr_assert_eq(got.r[4].h.opaque, 5);
	expect(5, MCBIN_INCREMENTQ, MCBIN_ST_NOT_FOUND, "Not found");
	expect(6, MCBIN_GATKQ, 0, "2");
	expect(7, MCBIN_NOOP, 0, "");
	cr_assert_eq(got.r[7].h.opaque, 7);
	free_all(&o);
}

Test(mcbin_path, storage_statuses_and_cas)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	uint64_t cas;

	store(&o, MCBIN_ADD, "a", "1", 0, 0, 0);
	store(&o, MCBIN_ADD, "a", "1", 0, 0, 0);
	store(&o, MCBIN_REPLACE, "nx", "1", 0, 0, 0);
	req(&o, MCBIN_APPEND, NULL, 0, "nx", "x", 1, 0, 0);
	req(&o, MCBIN_APPEND, NULL, 0, "a", "2", 1, 0, 0);
	req(&o, MCBIN_PREPEND, NULL, 0, "a", "0", 1, 0, 0);
	simple(&o, MCBIN_GET, "a", 0);
	run(c, &o);
	cr_assert_eq(got.count, 7);
	expect(0, MCBIN_ADD, 0, "");
	expect(1, MCBIN_ADD, MCBIN_ST_EXISTS, "Data exists for key.");
	expect(2, MCBIN_REPLACE, MCBIN_ST_NOT_FOUND, "Not found");
	expect(3, MCBIN_APPEND, MCBIN_ST_NOT_STORED, "Not stored.");
	expect(4, MCBIN_APPEND, 0, "");
	expect(5, MCBIN_PREPEND, 0, "");
	cr_assert_neq(got.r[5].h.cas, 0, "append and prepend give the cas");
	expect(6, MCBIN_GET, 0, "012");
	cas = got.r[6].h.cas;
	cr_assert_eq(cas, got.r[5].h.cas);
	/* SET with a cas: a CAS. */
	store(&o, MCBIN_SET, "a", "x", 0, 0, cas + 1000);
	store(&o, MCBIN_SET, "nx", "x", 0, 0, 5);
	store(&o, MCBIN_SET, "a", "y", 0, 0, cas);
	simple(&o, MCBIN_GET, "a", 0);
	run(c, &o);
	cr_assert_eq(got.count, 4);
	expect(0, MCBIN_SET, MCBIN_ST_EXISTS, "Data exists for key.");
	expect(1, MCBIN_SET, MCBIN_ST_NOT_FOUND, "Not found");
	expect(2, MCBIN_SET, 0, "");
	expect(3, MCBIN_GET, 0, "y");
	free_all(&o);
}

Test(mcbin_path, delete_with_and_without_cas)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	uint64_t cas;

	store(&o, MCBIN_SET, "d", "1", 0, 0, 0);
	run(c, &o);
	cas = got.r[0].h.cas;
	simple(&o, MCBIN_DELETE, "nx", 0);
	req(&o, MCBIN_DELETE, NULL, 0, "d", NULL, 0, 0, cas + 1);
	req(&o, MCBIN_DELETE, NULL, 0, "d", NULL, 0, 0, cas);
	simple(&o, MCBIN_GET, "d", 0);
	run(c, &o);
	cr_assert_eq(got.count, 4);
	expect(0, MCBIN_DELETE, MCBIN_ST_NOT_FOUND, "Not found");
	expect(1, MCBIN_DELETE, MCBIN_ST_EXISTS, "Data exists for key.");
	expect(2, MCBIN_DELETE, 0, "");
	expect(3, MCBIN_GET, MCBIN_ST_NOT_FOUND, "Not found");
	free_all(&o);
}

static uint64_t number_of(size_t i)
{
	cr_assert_eq(got.r[i].nvalue, 8);
	return mcbin_load64(got.r[i].value);
}

Test(mcbin_path, incr_decr_initial_value_and_no_create)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };

	arith(&o, MCBIN_INCREMENT, "n", 2, 10, 0, 0);
	arith(&o, MCBIN_INCREMENT, "n", 2, 10, 0, 0);
	arith(&o, MCBIN_DECREMENT, "n", 100, 0, 0, 0);
	arith(&o, MCBIN_DECREMENT, "m", 1, 5, 0xffffffff, 0);
	store(&o, MCBIN_SET, "s", "abc", 0, 0, 0);
	arith(&o, MCBIN_INCREMENT, "s", 1, 0, 0, 0);
	arith(&o, MCBIN_INCREMENT, "n", 1, 0, 0, 12345);
	simple(&o, MCBIN_GET, "n", 0);
	run(c, &o);
	cr_assert_eq(got.count, 8);
	expect(0, MCBIN_INCREMENT, 0, NULL);
	cr_assert_eq(number_of(0), 10, "created with the initial value");
	cr_assert_neq(got.r[0].h.cas, 0);
	expect(1, MCBIN_INCREMENT, 0, NULL);
	cr_assert_eq(number_of(1), 12);
	cr_assert_gt(got.r[1].h.cas, got.r[0].h.cas);
	expect(2, MCBIN_DECREMENT, 0, NULL);
	cr_assert_eq(number_of(2), 0);
	expect(3, MCBIN_DECREMENT, MCBIN_ST_NOT_FOUND, "Not found");
	expect(5, MCBIN_INCREMENT, MCBIN_ST_NON_NUMERIC,
	       "Non-numeric server-side value for incr or decr");
	expect(6, MCBIN_INCREMENT, MCBIN_ST_EXISTS, "Data exists for key.");
	expect(7, MCBIN_GET, 0, "0 ");
	cr_assert_eq(got.r[7].h.cas, got.r[2].h.cas);
	free_all(&o);
}

Test(mcbin_path, touch_gat_gatk)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	uint64_t cas;

	store(&o, MCBIN_SET, "t", "tv", 3, 0, 0);
	with_exptime(&o, MCBIN_TOUCH, "t", 100);
	with_exptime(&o, MCBIN_GAT, "t", 100);
	with_exptime(&o, MCBIN_GATK, "t", 100);
	with_exptime(&o, MCBIN_TOUCH, "nx", 100);
	with_exptime(&o, MCBIN_GATK, "nx", 100);
	run(c, &o);
	cr_assert_eq(got.count, 6);
	cas = got.r[0].h.cas;
	expect(1, MCBIN_TOUCH, 0, "");
	cr_assert_eq(flags_of(1), 3);
	cr_assert_eq(got.r[1].h.cas, cas);
	expect(2, MCBIN_GAT, 0, "tv");
	cr_assert_eq(flags_of(2), 3);
	expect(3, MCBIN_GATK, 0, "tv");
	cr_assert_eq(got.r[3].h.keylen, 1);
	expect(4, MCBIN_TOUCH, MCBIN_ST_NOT_FOUND, "Not found");
	expect(5, MCBIN_GATK, MCBIN_ST_NOT_FOUND, "");
	cr_assert_eq(got.r[5].h.keylen, 2);
	free_all(&o);
}

Test(mcbin_path, flush_noop_version_verbosity_quit)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	char e[4] = { 0, 0, 0, 0 };

	store(&o, MCBIN_SET, "f", "1", 0, 0, 0);
	req(&o, MCBIN_FLUSH, e, 4, NULL, NULL, 0, 0, 0);
	simple(&o, MCBIN_GET, "f", 0);
	simple(&o, MCBIN_NOOP, NULL, 0);
	simple(&o, MCBIN_VERSION, NULL, 0);
	req(&o, MCBIN_VERBOSITY, e, 4, NULL, NULL, 0, 0, 0);
	simple(&o, MCBIN_QUIT, NULL, 77);
	simple(&o, MCBIN_NOOP, NULL, 0); /* after QUIT: never answered */
	run(c, &o);
	cr_assert_not(got.open, "QUIT closes");
	cr_assert_eq(got.count, 7);
	expect(1, MCBIN_FLUSH, 0, "");
	expect(2, MCBIN_GET, MCBIN_ST_NOT_FOUND, NULL);
	expect(3, MCBIN_NOOP, 0, "");
	expect(4, MCBIN_VERSION, 0, RHKV_VERSION);
	expect(5, MCBIN_VERBOSITY, 0, "");
	expect(6, MCBIN_QUIT, 0, "");
	cr_assert_eq(got.r[6].h.opaque, 77);
	c = conn_new_memory(&w);
	simple(&o, MCBIN_QUITQ, NULL, 0);
	run(c, &o);
	cr_assert_not(got.open);
	cr_assert_eq(got.count, 0);
	free_all(&o);
}

Test(mcbin_path, stat_general_group_reset_and_unknown)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	bool pid = false;

	simple(&o, MCBIN_STAT, NULL, 3);
	run(c, &o);
	cr_assert_gt(got.count, 10);
	for (size_t i = 0; i + 1 < got.count; i++) {
		expect(i, MCBIN_STAT, 0, NULL);
		cr_assert_gt(got.r[i].h.keylen, 0);
		cr_assert_eq(got.r[i].h.opaque, 3);
		if (got.r[i].h.keylen == 3 && !memcmp(got.r[i].key, "pid", 3))
			pid = true;
	}
	cr_assert(pid, "no pid entry");
	expect(got.count - 1, MCBIN_STAT, 0, "");
	cr_assert_eq(got.r[got.count - 1].h.keylen, 0);
	simple(&o, MCBIN_STAT, "settings", 0);
	run(c, &o);
	cr_assert_gt(got.count, 2);
	cr_assert_eq(got.r[got.count - 1].h.bodylen, 0);
	simple(&o, MCBIN_STAT, "reset", 0);
	simple(&o, MCBIN_STAT, "nosuch", 0);
	run(c, &o);
	cr_assert_eq(got.count, 2);
	expect(0, MCBIN_STAT, 0, "");
	expect(1, MCBIN_STAT, MCBIN_ST_NOT_FOUND, "Not found");
	free_all(&o);
}

static void use_password(void)
{
	socketless_auth(&srv, "pw\n");
}

static void plain(struct out *o, uint8_t op, const char *msg, size_t n)
{
	req(o, op, NULL, 0, "PLAIN", msg, n, 0, 0);
}

Test(mcbin_path, sasl_plain_failure_then_success)
{
	struct conn *c;
	struct out o = { 0 };

	use_password();
	c = conn_new_memory(&w);
	simple(&o, MCBIN_SASL_LIST_MECHS, NULL, 1);
	plain(&o, MCBIN_SASL_AUTH, "\0u\0wrong", 8);
	plain(&o, MCBIN_SASL_AUTH, "no nul", 6);
	req(&o, MCBIN_SASL_AUTH, NULL, 0, "CRAM-MD5", "x", 1, 0, 0);
	plain(&o, MCBIN_SASL_AUTH, "\0u\0pw", 5);
	store(&o, MCBIN_SET, "k", "v", 0, 0, 0);
	run(c, &o);
	cr_assert(got.open);
	cr_assert_eq(got.count, 6);
	expect(0, MCBIN_SASL_LIST_MECHS, 0, "PLAIN");
	expect(1, MCBIN_SASL_AUTH, MCBIN_ST_AUTH_ERROR, "Auth failure.");
	expect(2, MCBIN_SASL_AUTH, MCBIN_ST_AUTH_ERROR, "Auth failure.");
	expect(3, MCBIN_SASL_AUTH, MCBIN_ST_AUTH_ERROR, "Auth failure.");
	expect(4, MCBIN_SASL_AUTH, 0, "Authenticated");
	expect(5, MCBIN_SET, 0, "");
	/* SASL STEP with PLAIN is an AUTH, authzid given. */
	c = conn_new_memory(&w);
	plain(&o, MCBIN_SASL_STEP, "me\0u\0pw", 7);
	run(c, &o);
	expect(0, MCBIN_SASL_STEP, 0, "Authenticated");
	free_all(&o);
}

/* Before auth: 0x20, and the connection closes (memcached with SASL). */
Test(mcbin_path, before_auth_commands_get_auth_error_and_close)
{
	struct conn *c;
	struct out o = { 0 };

	use_password();
	c = conn_new_memory(&w);
	simple(&o, MCBIN_GET, "k", 9);
	simple(&o, MCBIN_NOOP, NULL, 0);
	run(c, &o);
	cr_assert_not(got.open);
	cr_assert_eq(got.count, 1);
	expect(0, MCBIN_GET, MCBIN_ST_AUTH_ERROR, "Auth failure.");
	cr_assert_eq(got.r[0].h.opaque, 9);
	/* A SET over the pre-auth limit: the same. */
	c = conn_new_memory(&w);
	{
		static char big[CONN_PREAUTH_LIMIT + 1];

		memset(big, 'x', sizeof(big));
		req(&o, MCBIN_SET, "\0\0\0\0\0\0\0\0", 8, "k", big, sizeof(big),
		    0, 0);
	}
	run(c, &o);
	cr_assert_not(got.open);
	expect(0, MCBIN_SET, MCBIN_ST_AUTH_ERROR, NULL);
	free_all(&o);
}

/* No password configured: SASL is an unknown command (memcached without
 * -S), and everything else works. */
Test(mcbin_path, sasl_without_a_password_is_unknown)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };

	simple(&o, MCBIN_SASL_LIST_MECHS, NULL, 0);
	plain(&o, MCBIN_SASL_AUTH, "\0u\0pw", 5);
	simple(&o, MCBIN_NOOP, NULL, 0);
	run(c, &o);
	cr_assert_eq(got.count, 3);
	expect(0, MCBIN_SASL_LIST_MECHS, MCBIN_ST_UNKNOWN_COMMAND,
	       "Unknown command");
	expect(1, MCBIN_SASL_AUTH, MCBIN_ST_UNKNOWN_COMMAND, "Unknown command");
	expect(2, MCBIN_NOOP, 0, "");
	free_all(&o);
}

Test(mcbin_path, malformed_headers)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };

	/* Short: no reply, the connection waits. */
	simple(&o, MCBIN_NOOP, NULL, 0);
	o.n = 10;
	run(c, &o);
	cr_assert(got.open);
	cr_assert_eq(got.count, 0);
	{
		struct out rest = { o.p + 10, 14, 14 };

		run(c, &rest);
	}
	cr_assert_eq(got.count, 1);
	expect(0, MCBIN_NOOP, 0, "");
	/* An unknown opcode: answered, the connection goes on. */
	req(&o, 0x60, NULL, 0, "k", "v", 1, 4, 0);
	simple(&o, MCBIN_NOOP, NULL, 0);
	run(c, &o);
	cr_assert_eq(got.count, 2);
	expect(0, 0x60, MCBIN_ST_UNKNOWN_COMMAND, "Unknown command");
	cr_assert_eq(got.r[0].h.opaque, 4);
	/* A response's magic mid-stream: closed, no word. */
	simple(&o, MCBIN_NOOP, NULL, 0);
	o.p[0] = (char)MCBIN_MAGIC_RES;
	run(c, &o);
	cr_assert_not(got.open);
	cr_assert_eq(got.count, 0);

	/* Key longer than the body: unknown command, closed. */
	c = conn_new_memory(&w);
	simple(&o, MCBIN_GET, "abc", 0);
	o.p[3] = 10;
	simple(&o, MCBIN_NOOP, NULL, 0);
	run(c, &o);
	cr_assert_not(got.open);
	cr_assert_eq(got.count, 1);
	expect(0, MCBIN_GET, MCBIN_ST_UNKNOWN_COMMAND, "Unknown command");

	/* A key over 250 bytes, missing extras: invalid arguments, closed. */
	c = conn_new_memory(&w);
	{
		char key[252];

		memset(key, 'a', 251);
		key[251] = '\0';
		simple(&o, MCBIN_GET, key, 0);
	}
	run(c, &o);
	cr_assert_not(got.open);
	expect(0, MCBIN_GET, MCBIN_ST_INVALID, "Invalid arguments");
	c = conn_new_memory(&w);
	req(&o, MCBIN_SET, NULL, 0, "k", "v", 1, 0, 0);
	run(c, &o);
	cr_assert_not(got.open);
	expect(0, MCBIN_SET, MCBIN_ST_INVALID, "Invalid arguments");
	/* SASL_AUTH with extras (found by fuzz_conn: the refusal read the
	 * mechanism before the body was there). */
	c = conn_new_memory(&w);
	req(&o, MCBIN_SASL_AUTH, "\0\0\0\0", 4, "PLAIN", "\0u\0pw", 5, 0, 0);
	run(c, &o);
	cr_assert_not(got.open);
	expect(0, MCBIN_SASL_AUTH, MCBIN_ST_INVALID, "Invalid arguments");

	/* A body over the item size limit: closed from the header. */
	c = conn_new_memory(&w);
	store(&o, MCBIN_SET, "k", "", 0, 0, 0);
	mcbin_store32(o.p + 8, srv.cfg.max_item_size + MCBIN_BODY_SLACK + 1);
	run(c, &o);
	cr_assert_not(got.open);
	cr_assert_eq(got.count, 0);
	free_all(&o);
}

/* A value over the item size: 0x03, its bytes discarded as they come, the
 * old value of a SET dropped. */
Test(mcbin_path, too_large_set_drops_the_old_value)
{
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	size_t vlen = srv.cfg.max_item_size + 1;
	char *big = malloc(vlen);

	cr_assert_not_null(big);
	memset(big, 'b', vlen);
	store(&o, MCBIN_SET, "b", "old", 0, 0, 0);
	run(c, &o);
	req(&o, MCBIN_SET, "\0\0\0\0\0\0\0\0", 8, "b", big, vlen, 0, 0);
	/* In two feeds: the value is discarded across them. */
	{
		size_t half = o.n / 2, all = o.n;
		struct out first = { o.p, half, half };

		run(c, &first);
		cr_assert_eq(got.count, 1);
		expect(0, MCBIN_SET, MCBIN_ST_TOO_LARGE, "Too large.");
		memmove(o.p, o.p + half, all - half);
		o.n = all - half;
		run(c, &o);
		cr_assert_eq(got.count, 0);
	}
	simple(&o, MCBIN_GET, "b", 0);
	run(c, &o);
	expect(0, MCBIN_GET, MCBIN_ST_NOT_FOUND, "Not found");
	free(big);
	free_all(&o);
}

/*
 * Multi-get as clients do it: many GETKQ then a NOOP, with values large
 * enough to go by reference and to pass the output high-water mark many
 * times over. Every hit comes back, in order, then the NOOP.
 */
Test(mcbin_path, long_getkq_pipeline_under_backpressure)
{
	enum { N = 1500, VLEN = 20000 };
	struct conn *c = conn_new_memory(&w);
	struct out o = { 0 };
	char *v = malloc(VLEN + 1);
	char key[16];

	cr_assert_not_null(v);
	memset(v, 'z', VLEN);
	v[VLEN] = '\0';
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		store(&o, MCBIN_SETQ, key, v, (uint32_t)i, 0, 0);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i % 20); /* half miss */
		req(&o, MCBIN_GETKQ, NULL, 0, key, NULL, 0, (uint32_t)i, 0);
	}
	simple(&o, MCBIN_NOOP, NULL, N);
	run(c, &o);
	cr_assert(got.open);
	cr_assert_eq(got.count, N / 2 + 1, "%zu responses", got.count);
	for (size_t i = 0; i < N / 2; i++) {
		uint32_t want = (uint32_t)(i / 10 * 20 + i % 10);

		expect(i, MCBIN_GETKQ, 0, v);
		cr_assert_eq(got.r[i].h.opaque, want);
		cr_assert_eq(flags_of(i), want % 20);
	}
	expect(N / 2, MCBIN_NOOP, 0, "");
	free(v);
	free_all(&o);
}
