/*
 * memcached's binary protocol over TCP, byte for byte: each test sends the
 * same request bytes and expects the same response bytes from rhkvd and
 * from memcached 1.6.18 (RHKV_TEST_SERVER=memcached), except the CAS
 * values, which each server counts its own way: those are checked for
 * what they must be (not 0, equal to the one a store gave, 0 in errors).
 * Where rhkvd differs on purpose (proto/MCBIN.md), the test says so.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "proto/mcbin.h"

static struct srv srv;
static struct hconn *c;
static char pwfile[] = "/tmp/rhkv-mcbin-pw-XXXXXX";
static bool pwfile_made;

static void start(const char *const *extra)
{
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

static void start_default(void)
{
	start(NULL);
}

static void teardown(void)
{
	int status;

	if (pwfile_made)
		unlink(pwfile);
	if (!srv.pid)
		return;
	hc_close(&c);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

TestSuite(mcbin, .init = start_default, .fini = teardown, .timeout = 60);

/* ---- requests ---- */

static struct hbuf out;

/* hbuf_add, but nothing for nothing (p may then be NULL). */
static void add(struct hbuf *b, const void *p, size_t n)
{
	if (n)
		hbuf_add(b, p, n);
}

static void req(uint8_t op, const void *extras, uint8_t extlen, const char *key,
		const void *value, size_t nvalue, uint32_t opaque, uint64_t cas)
{
	size_t nkey = key ? strlen(key) : 0;
	char hdr[MCBIN_HEADER];

	mcbin_frame_header(hdr, MCBIN_MAGIC_REQ, op, 0, extlen, (uint16_t)nkey,
			   (uint32_t)nvalue, opaque, cas);
	add(&out, hdr, sizeof(hdr));
	add(&out, extras, extlen);
	add(&out, key, nkey);
	add(&out, value, nvalue);
}

static void simple(uint8_t op, const char *key, uint32_t opaque)
{
	req(op, NULL, 0, key, NULL, 0, opaque, 0);
}

static void store(uint8_t op, const char *key, const char *v, uint32_t flags,
		  uint64_t cas)
{
	char e[8];

	mcbin_store32(e, flags);
	mcbin_store32(e + 4, 0);
	req(op, e, 8, key, v, strlen(v), 0, cas);
}

static void arith(uint8_t op, const char *key, uint64_t delta, uint64_t initial,
		  uint32_t exptime, uint64_t cas)
{
	char e[20];

	mcbin_store64(e, delta);
	mcbin_store64(e + 8, initial);
	mcbin_store32(e + 16, exptime);
	req(op, e, 20, key, NULL, 0, 0, cas);
}

static void touch(uint8_t op, const char *key)
{
	req(op, "\0\0\0\x64", 4, key, NULL, 0, 0, 0);
}

static void send_all(void)
{
	cr_assert_eq(hc_send(c, out.p, out.len), 0, "send: errno %d", errno);
	out.len = 0;
}

/* ---- responses ---- */

/* The next response must be exactly this, but for its cas, which is
 * returned. extras: flags (4 bytes) when has_flags. */
static uint64_t expect(uint8_t op, uint16_t status, uint32_t opaque,
		       bool has_flags, uint32_t flags, const char *key,
		       const void *value, size_t nvalue)
{
	size_t nkey = key ? strlen(key) : 0;
	uint8_t extlen = has_flags ? 4 : 0;
	char hdr[MCBIN_HEADER], wanthdr[MCBIN_HEADER], esc[2][200];
	struct mcbin_header h;
	struct hbuf body = { 0 };
	char e[4];
	size_t got;

	got = hc_read(c, hdr, MCBIN_HEADER, H_TIMEOUT_MS);
	cr_assert_eq(got, MCBIN_HEADER, "op %#x: %zu header bytes", op, got);
	mcbin_header_read(hdr, &h);
	mcbin_frame_header(wanthdr, MCBIN_MAGIC_RES, op, status, extlen,
			   (uint16_t)nkey, (uint32_t)nvalue, opaque, h.cas);
	cr_assert_eq(memcmp(hdr, wanthdr, MCBIN_HEADER), 0,
		     "header: expected %s got %s",
		     h_escape(esc[0], sizeof(esc[0]), wanthdr, MCBIN_HEADER),
		     h_escape(esc[1], sizeof(esc[1]), hdr, MCBIN_HEADER));
	mcbin_store32(e, flags);
	add(&body, e, extlen);
	add(&body, key, nkey);
	add(&body, value, nvalue);
	if (body.len) {
		char m[H_MSG_CAP];

		cr_assert(hc_expect(c, body.p, body.len, H_TIMEOUT_MS, m,
				    sizeof(m)),
			  "op %#x body: %s", op, m);
	}
	hbuf_free(&body);
	if (status)
		cr_assert_eq(h.cas, 0, "an error with a cas");
	return h.cas;
}

/* A status with memcached's text (none for success). */
static uint64_t expect_status(uint8_t op, uint16_t status, uint32_t opaque)
{
	const char *t = status ? mcbin_status_text(status) : "";

	return expect(op, status, opaque, false, 0, NULL, t, strlen(t));
}

static uint64_t expect_value(uint8_t op, uint32_t opaque, uint32_t flags,
			     const char *key, const char *v)
{
	return expect(op, 0, opaque, true, flags, key, v, strlen(v));
}

static void expect_closed(void)
{
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "the connection is open");
}

/* A NOOP round trip: nothing else is pending. */
static void sync_noop(void)
{
	simple(MCBIN_NOOP, NULL, 0xabcd);
	send_all();
	expect_status(MCBIN_NOOP, 0, 0xabcd);
}

/* ---- tests ---- */

Test(mcbin, set_get_getk_miss_opaque_and_cas)
{
	uint64_t cas;

	store(MCBIN_SET, "k", "hello", 0xdeadbeef, 0);
	simple(MCBIN_GET, "k", 8);
	simple(MCBIN_GETK, "k", 9);
	simple(MCBIN_GET, "nx", 10);
	simple(MCBIN_GETK, "nx", 11);
	send_all();
	cas = expect_status(MCBIN_SET, 0, 0);
	cr_assert_neq(cas, 0);
	cr_assert_eq(expect_value(MCBIN_GET, 8, 0xdeadbeef, NULL, "hello"),
		     cas);
	cr_assert_eq(expect_value(MCBIN_GETK, 9, 0xdeadbeef, "k", "hello"),
		     cas);
	expect_status(MCBIN_GET, MCBIN_ST_NOT_FOUND, 10);
	expect(MCBIN_GETK, MCBIN_ST_NOT_FOUND, 11, false, 0, "nx", NULL, 0);
	sync_noop();
}

Test(mcbin, quiet_variants_answer_errors_and_hits)
{
	store(MCBIN_SETQ, "q", "1", 0, 0);
	simple(MCBIN_GETQ, "nx", 1);
	simple(MCBIN_GETKQ, "nx", 2);
	simple(MCBIN_GETKQ, "q", 3);
	simple(MCBIN_DELETEQ, "nx", 4);
	store(MCBIN_REPLACEQ, "nx", "v", 0, 0);
	store(MCBIN_ADDQ, "q", "v", 0, 0);
	req(MCBIN_APPENDQ, NULL, 0, "nx", "v", 1, 5, 0);
	arith(MCBIN_INCREMENTQ, "q", 1, 0, 0, 0);
	arith(MCBIN_INCREMENTQ, "nx", 1, 0, 0xffffffff, 0);
	touch(MCBIN_GATQ, "nx");
	touch(MCBIN_GATKQ, "q");
	simple(MCBIN_FLUSHQ, NULL, 0);
	simple(MCBIN_GETQ, "q", 6);
	simple(MCBIN_NOOP, NULL, 7);
	send_all();
	expect_value(MCBIN_GETKQ, 3, 0, "q", "1");
	expect_status(MCBIN_DELETEQ, MCBIN_ST_NOT_FOUND, 4);
	expect_status(MCBIN_REPLACEQ, MCBIN_ST_NOT_FOUND, 0);
	expect_status(MCBIN_ADDQ, MCBIN_ST_EXISTS, 0);
	expect_status(MCBIN_APPENDQ, MCBIN_ST_NOT_STORED, 5);
	expect_status(MCBIN_INCREMENTQ, MCBIN_ST_NOT_FOUND, 0);
	expect_value(MCBIN_GATKQ, 0, 0, "q", "2");
	expect_status(MCBIN_NOOP, 0, 7);
	sync_noop();
}

Test(mcbin, storage_statuses)
{
	uint64_t cas;

	store(MCBIN_ADD, "a", "1", 0, 0);
	store(MCBIN_ADD, "a", "1", 0, 0);
	store(MCBIN_REPLACE, "nx", "1", 0, 0);
	req(MCBIN_APPEND, NULL, 0, "nx", "x", 1, 0, 0);
	req(MCBIN_APPEND, NULL, 0, "a", "2", 1, 0, 0);
	req(MCBIN_PREPEND, NULL, 0, "a", "0", 1, 0, 0);
	simple(MCBIN_GET, "a", 0);
	send_all();
	expect_status(MCBIN_ADD, 0, 0);
	expect_status(MCBIN_ADD, MCBIN_ST_EXISTS, 0);
	expect_status(MCBIN_REPLACE, MCBIN_ST_NOT_FOUND, 0);
	expect_status(MCBIN_APPEND, MCBIN_ST_NOT_STORED, 0);
	expect_status(MCBIN_APPEND, 0, 0);
	cas = expect_status(MCBIN_PREPEND, 0, 0);
	cr_assert_eq(expect_value(MCBIN_GET, 0, 0, NULL, "012"), cas);
	store(MCBIN_SET, "a", "x", 0, cas + 1000);
	store(MCBIN_SET, "nx", "x", 0, 5);
	store(MCBIN_SET, "a", "y", 0, cas);
	simple(MCBIN_GET, "a", 0);
	send_all();
	expect_status(MCBIN_SET, MCBIN_ST_EXISTS, 0);
	expect_status(MCBIN_SET, MCBIN_ST_NOT_FOUND, 0);
	cas = expect_status(MCBIN_SET, 0, 0);
	cr_assert_eq(expect_value(MCBIN_GET, 0, 0, NULL, "y"), cas);
}

Test(mcbin, delete_with_a_cas)
{
	uint64_t cas;

	store(MCBIN_SET, "d", "1", 0, 0);
	send_all();
	cas = expect_status(MCBIN_SET, 0, 0);
	simple(MCBIN_DELETE, "nx", 0);
	req(MCBIN_DELETE, NULL, 0, "d", NULL, 0, 0, cas + 1);
	req(MCBIN_DELETE, NULL, 0, "d", NULL, 0, 0, cas);
	simple(MCBIN_GET, "d", 0);
	send_all();
	expect_status(MCBIN_DELETE, MCBIN_ST_NOT_FOUND, 0);
	expect_status(MCBIN_DELETE, MCBIN_ST_EXISTS, 0);
	expect_status(MCBIN_DELETE, 0, 0);
	expect_status(MCBIN_GET, MCBIN_ST_NOT_FOUND, 0);
}

static uint64_t expect_number(uint8_t op, uint64_t v)
{
	char be[8];

	mcbin_store64(be, v);
	return expect(op, 0, 0, false, 0, NULL, be, 8);
}

Test(mcbin, incr_decr)
{
	uint64_t cas;

	arith(MCBIN_INCREMENT, "n", 2, 10, 0, 0);
	arith(MCBIN_INCREMENT, "n", 2, 10, 0, 0);
	arith(MCBIN_DECREMENT, "n", 100, 0, 0, 0);
	arith(MCBIN_DECREMENT, "m", 1, 5, 0xffffffff, 0);
	store(MCBIN_SET, "s", "abc", 0, 0);
	arith(MCBIN_INCREMENT, "s", 1, 0, 0, 0);
	arith(MCBIN_INCREMENT, "n", 1, 0, 0, 12345);
	arith(MCBIN_INCREMENTQ, "n", 5, 0, 0, 0);
	simple(MCBIN_GET, "n", 0);
	send_all();
	cr_assert_neq(expect_number(MCBIN_INCREMENT, 10), 0);
	expect_number(MCBIN_INCREMENT, 12);
	cas = expect_number(MCBIN_DECREMENT, 0);
	expect_status(MCBIN_DECREMENT, MCBIN_ST_NOT_FOUND, 0);
	expect_status(MCBIN_SET, 0, 0);
	expect_status(MCBIN_INCREMENT, MCBIN_ST_NON_NUMERIC, 0);
	expect_status(MCBIN_INCREMENT, MCBIN_ST_EXISTS, 0);
	cr_assert_neq(expect_value(MCBIN_GET, 0, 0, NULL, "5 "), cas);
}

Test(mcbin, touch_gat_gatk)
{
	uint64_t cas;

	store(MCBIN_SET, "t", "tv", 3, 0);
	touch(MCBIN_TOUCH, "t");
	touch(MCBIN_GAT, "t");
	touch(MCBIN_GATK, "t");
	touch(MCBIN_TOUCH, "nx");
	touch(MCBIN_GAT, "nx");
	touch(MCBIN_GATK, "nx");
	send_all();
	cas = expect_status(MCBIN_SET, 0, 0);
	cr_assert_eq(expect(MCBIN_TOUCH, 0, 0, true, 3, NULL, NULL, 0), cas);
	cr_assert_eq(expect_value(MCBIN_GAT, 0, 3, NULL, "tv"), cas);
	cr_assert_eq(expect_value(MCBIN_GATK, 0, 3, "t", "tv"), cas);
	expect_status(MCBIN_TOUCH, MCBIN_ST_NOT_FOUND, 0);
	expect_status(MCBIN_GAT, MCBIN_ST_NOT_FOUND, 0);
	expect(MCBIN_GATK, MCBIN_ST_NOT_FOUND, 0, false, 0, "nx", NULL, 0);
}

Test(mcbin, flush_version_stat_quit)
{
	char v[64];
	const char *p = srv.version + strlen("VERSION ");
	size_t n = strcspn(p, "\r");

	store(MCBIN_SET, "f", "1", 0, 0);
	req(MCBIN_FLUSH, "\0\0\0\0", 4, NULL, NULL, 0, 0, 0);
	simple(MCBIN_FLUSH, NULL, 0);
	simple(MCBIN_GET, "f", 0);
	simple(MCBIN_VERSION, NULL, 0);
	simple(MCBIN_STAT, "reset", 0);
	simple(MCBIN_STAT, "nosuch", 0);
	send_all();
	expect_status(MCBIN_SET, 0, 0);
	expect_status(MCBIN_FLUSH, 0, 0);
	expect_status(MCBIN_FLUSH, 0, 0);
	expect_status(MCBIN_GET, MCBIN_ST_NOT_FOUND, 0);
	cr_assert_lt(n, sizeof(v));
	memcpy(v, p, n);
	expect(MCBIN_VERSION, 0, 0, false, 0, NULL, v, n);
	expect_status(MCBIN_STAT, 0, 0);
	expect_status(MCBIN_STAT, MCBIN_ST_NOT_FOUND, 0);
	simple(MCBIN_QUIT, NULL, 77);
	simple(MCBIN_NOOP, NULL, 0);
	send_all();
	expect_status(MCBIN_QUIT, 0, 77);
	expect_closed();
	hc_close(&c);
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	simple(MCBIN_QUITQ, NULL, 0);
	simple(MCBIN_NOOP, NULL, 0);
	send_all();
	expect_closed();
}

/* General stats: entries with a key and a value, then one with neither. */
Test(mcbin, stat_general)
{
	char hdr[MCBIN_HEADER], body[512];
	struct mcbin_header h;
	int entries = 0;
	bool pid = false;

	simple(MCBIN_STAT, NULL, 5);
	send_all();
	for (;;) {
		cr_assert_eq(hc_read(c, hdr, MCBIN_HEADER, H_TIMEOUT_MS),
			     MCBIN_HEADER);
		mcbin_header_read(hdr, &h);
		cr_assert_eq(h.magic, MCBIN_MAGIC_RES);
		cr_assert_eq(h.opcode, MCBIN_STAT);
		cr_assert_eq(h.vbucket, 0);
		cr_assert_eq(h.opaque, 5);
		cr_assert_eq(h.extlen, 0);
		cr_assert_lt(h.bodylen, sizeof(body));
		cr_assert_eq(hc_read(c, body, h.bodylen, H_TIMEOUT_MS),
			     h.bodylen);
		if (!h.bodylen)
			break;
		cr_assert_gt(h.keylen, 0);
		if (h.keylen == 3 && !memcmp(body, "pid", 3))
			pid = true;
		entries++;
	}
	cr_assert_gt(entries, 20);
	cr_assert(pid);
	sync_noop();
}

/* memcached 1.6.18 reads an unknown opcode's body wrongly (what follows
 * it is lost): the request here has none. */
Test(mcbin, unknown_opcode_goes_on)
{
	simple(0x60, NULL, 4);
	send_all();
	expect_status(0x60, MCBIN_ST_UNKNOWN_COMMAND, 4);
	sync_noop();
}

/* memcached 1.6.18 has no binary VERBOSITY (unknown command, and its
 * extras are misread); rhkvd answers it as the protocol describes. */
Test(mcbin, verbosity)
{
	if (srv.kind == SRV_MEMCACHED)
		cr_skip_test("memcached 1.6.18 has no binary VERBOSITY");
	req(MCBIN_VERBOSITY, "\0\0\0\0", 4, NULL, NULL, 0, 0, 0);
	simple(MCBIN_VERBOSITY, NULL, 0);
	send_all();
	expect_status(MCBIN_VERBOSITY, 0, 0);
	expect_status(MCBIN_VERBOSITY, MCBIN_ST_INVALID, 0);
	expect_closed();
}

Test(mcbin, missing_extras_are_invalid_and_close)
{
	req(MCBIN_SET, NULL, 0, "k", "v", 1, 0, 0);
	simple(MCBIN_NOOP, NULL, 0);
	send_all();
	expect_status(MCBIN_SET, MCBIN_ST_INVALID, 0);
	expect_closed();
}

Test(mcbin, a_get_with_a_value_is_invalid_and_closes)
{
	req(MCBIN_GET, NULL, 0, "k", "v", 1, 0, 0);
	send_all();
	expect_status(MCBIN_GET, MCBIN_ST_INVALID, 0);
	expect_closed();
}

Test(mcbin, a_key_over_250_bytes_is_invalid_and_closes)
{
	char key[252];

	memset(key, 'a', 251);
	key[251] = '\0';
	simple(MCBIN_GET, key, 0);
	send_all();
	expect_status(MCBIN_GET, MCBIN_ST_INVALID, 0);
	expect_closed();
}

Test(mcbin, a_key_longer_than_the_body_closes)
{
	simple(MCBIN_GET, "abc", 0);
	out.p[3] = 10;
	simple(MCBIN_NOOP, NULL, 0);
	send_all();
	expect_status(MCBIN_GET, MCBIN_ST_UNKNOWN_COMMAND, 0);
	expect_closed();
}

/* 0x81 first: not this protocol; both servers read it as text. */
Test(mcbin, response_magic_from_a_client_is_text)
{
	simple(MCBIN_NOOP, NULL, 0);
	out.p[0] = (char)MCBIN_MAGIC_RES;
	send_all();
	{
		char m[H_MSG_CAP];

		cr_assert(hc_expect(c, "ERROR\r\n", 7, H_TIMEOUT_MS, m,
				    sizeof(m)),
			  "%s", m);
	}
}

Test(mcbin, too_large_set_drops_the_old_value)
{
	size_t vlen = 1024 * 1024 + 1;
	char *big = malloc(vlen);

	cr_assert_not_null(big);
	memset(big, 'b', vlen);
	store(MCBIN_SET, "b", "old", 0, 0);
	req(MCBIN_SET, "\0\0\0\0\0\0\0\0", 8, "b", big, vlen, 0, 0);
	simple(MCBIN_GET, "b", 0);
	send_all();
	expect_status(MCBIN_SET, 0, 0);
	expect_status(MCBIN_SET, MCBIN_ST_TOO_LARGE, 0);
	expect_status(MCBIN_GET, MCBIN_ST_NOT_FOUND, 0);
	free(big);
}

/* Multi-get as clients do it: GETKQ per key, then a NOOP. */
Test(mcbin, getkq_pipeline)
{
	enum { N = 400 };
	char key[16];

	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "key%d", i);
		store(MCBIN_SETQ, key, key, (uint32_t)i, 0);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "key%d", i);
		req(MCBIN_GETKQ, NULL, 0, key, NULL, 0, (uint32_t)i, 0);
	}
	simple(MCBIN_NOOP, NULL, N);
	send_all();
	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "key%d", i);
		expect_value(MCBIN_GETKQ, (uint32_t)i, (uint32_t)i, key, key);
	}
	expect_status(MCBIN_NOOP, 0, N);
}

/* Without SASL configured: the SASL commands are unknown (memcached
 * without -S), and the connection goes on. */
Test(mcbin, sasl_without_a_password_is_unknown)
{
	simple(MCBIN_SASL_LIST_MECHS, NULL, 0);
	req(MCBIN_SASL_AUTH, NULL, 0, "PLAIN", "\0u\0pw", 5, 0, 0);
	send_all();
	expect_status(MCBIN_SASL_LIST_MECHS, MCBIN_ST_UNKNOWN_COMMAND, 0);
	expect_status(MCBIN_SASL_AUTH, MCBIN_ST_UNKNOWN_COMMAND, 0);
	sync_noop();
}

/*
 * With a password (--auth-file). memcached needs -S for SASL, and then
 * refuses the text protocol the harness starts it with: skipped there.
 * The same requests to memcached 1.6.18 -S gave these bytes (LIST_MECHS
 * "PLAIN", failures 0x20 "Auth failure.", a command before auth 0x20 and
 * the close), but for VERSION, which memcached answers before auth.
 */
static void start_with_password(void)
{
	const char *extra[] = { "--auth-file", pwfile, NULL };
	int fd;

	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("memcached -S refuses the text protocol the "
			     "harness starts it with");
	fd = mkstemp(pwfile);
	cr_assert_geq(fd, 0);
	pwfile_made = true;
	cr_assert_eq(write(fd, "s3cret\n", 7), 7);
	close(fd);
	start(extra);
}

TestSuite(mcbin_sasl, .init = start_with_password, .fini = teardown,
	  .timeout = 60);

Test(mcbin_sasl, list_mechs_and_a_failure)
{
	simple(MCBIN_SASL_LIST_MECHS, NULL, 0);
	req(MCBIN_SASL_AUTH, NULL, 0, "PLAIN", "\0u\0nope", 7, 1, 0);
	req(MCBIN_SASL_AUTH, NULL, 0, "CRAM-MD5", "xx", 2, 2, 0);
	send_all();
	expect(MCBIN_SASL_LIST_MECHS, 0, 0, false, 0, NULL, "PLAIN", 5);
	expect_status(MCBIN_SASL_AUTH, MCBIN_ST_AUTH_ERROR, 1);
	expect_status(MCBIN_SASL_AUTH, MCBIN_ST_AUTH_ERROR, 2);
	/* Still unauthenticated: the next command is refused, and closes. */
	simple(MCBIN_NOOP, NULL, 3);
	send_all();
	expect_status(MCBIN_NOOP, MCBIN_ST_AUTH_ERROR, 3);
	expect_closed();
}

Test(mcbin_sasl, plain_with_the_auth_file_password)
{
	req(MCBIN_SASL_AUTH, NULL, 0, "PLAIN", "\0u\0s3cret", 9, 2, 0);
	store(MCBIN_SET, "k", "v", 0, 0);
	send_all();
	expect(MCBIN_SASL_AUTH, 0, 2, false, 0, NULL, "Authenticated", 13);
	expect_status(MCBIN_SET, 0, 0);
}

Test(mcbin_sasl, before_auth_an_auth_error_and_close)
{
	simple(MCBIN_GET, "k", 3);
	send_all();
	expect_status(MCBIN_GET, MCBIN_ST_AUTH_ERROR, 3);
	expect_closed();
}

/* STAT of a group memcached has: its entries, then the empty terminator. */
Test(mcbin, stat_sizes_group)
{
	simple(MCBIN_STAT, "sizes", 7);
	send_all();
	expect(MCBIN_STAT, 0, 7, false, 0, "sizes_status", "disabled", 8);
	expect(MCBIN_STAT, 0, 7, false, 0, NULL, NULL, 0);
}
