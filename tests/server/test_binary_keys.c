/*
 * Keys with any byte (proto/PROTOCOL.md): the msgpack protocol stores and
 * serves keys holding every byte value 0..255, NUL, space and "\n"
 * included, through every op and scan; the text protocol's outputs of
 * keys (scan's KEY, metadump, watch, mg's k, cachedump) never break a
 * line: such keys come out in base64 with " b", or URL-encoded; and a
 * text client reaches such an item with a meta command's base64 key.
 * memcached has no msgpack protocol: skipped there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/binary.h"
#include "proto/meta.h"

/* 256 one-byte keys, 256 "k<byte>k", and a few longer ones with NULs. */
#define NKEYS (2 * 256 + 4)

struct key {
	char p[PROTO_BIN_KEY_MAX];
	size_t n;
	bool seen;
};

static struct srv srv;
static struct hconn *bin, *txt;
static msgpack_sbuffer sb;
static msgpack_packer pk;
static struct proto_bin_decoder dec;
static char *body;
static struct key keys[NKEYS];

static void make_keys(void)
{
	for (int b = 0; b < 256; b++) {
		keys[b].p[0] = (char)b;
		keys[b].n = 1;
		memcpy(keys[256 + b].p, "k\0k", 3);
		keys[256 + b].p[1] = (char)b;
		keys[256 + b].n = 3;
	}
	memcpy(keys[512].p, "a\0b", 3);
	keys[512].n = 3;
	memcpy(keys[513].p, "\0\0\0 \n\r\n", 7);
	keys[513].n = 7;
	memset(keys[514].p, 0, PROTO_BIN_KEY_MAX);
	keys[514].n = PROTO_BIN_KEY_MAX;
	memset(keys[515].p, ' ', PROTO_BIN_KEY_MAX - 1);
	keys[515].p[100] = '\n';
	keys[515].n = PROTO_BIN_KEY_MAX - 1;
}

static void setup(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("the msgpack protocol is rhkvd's; the server "
			     "under test is memcached");
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	bin = hc_open(srv.port);
	txt = hc_open(srv.port);
	cr_assert(bin && txt, "connect: errno %d", errno);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_bin_decoder_init(&dec);
	make_keys();
}

static void teardown(void)
{
	int status;

	free(body);
	body = NULL;
	if (!srv.pid)
		return;
	msgpack_sbuffer_destroy(&sb);
	proto_bin_decoder_destroy(&dec);
	hc_close(&bin);
	hc_close(&txt);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

TestSuite(binkeys, .init = setup, .fini = teardown, .timeout = 120);

/* Queues [op, id, key, args...]: nargs more arguments follow the key,
 * packed by the caller, then bin_end(). */
static size_t bin_begin(uint32_t op, uint64_t id, const struct key *k,
			uint32_t nargs)
{
	size_t f = proto_bin_begin(&sb);

	proto_bin_pack_request_head(&pk, op, id, nargs + 1);
	msgpack_pack_bin_with_body(&pk, k->p, k->n);
	return f;
}

/* Queues [op, id, key] with one more argument: v (UINT32_MAX: none), or
 * a map {opt: v} when opt is not NULL (a meta op). */
static void bin_u32(uint32_t op, uint64_t id, const struct key *k,
		    const char *opt, uint32_t v)
{
	size_t f = bin_begin(op, id, k, v == UINT32_MAX ? 0 : 1);

	if (opt) {
		msgpack_pack_map(&pk, 1);
		msgpack_pack_str_with_body(&pk, opt, strlen(opt));
	}
	if (v != UINT32_MAX)
		msgpack_pack_uint32(&pk, v);
	proto_bin_end(&sb, f);
}

static void bin_send(void)
{
	cr_assert_eq(hc_send(bin, sb.data, sb.size), 0, "send: errno %d",
		     errno);
	sb.size = 0;
}

static struct proto_bin_reply bin_reply(uint64_t id, uint32_t status)
{
	unsigned char hdr[4];
	struct proto_bin_reply r;
	uint32_t len;

	cr_assert_eq(hc_read(bin, hdr, 4, H_TIMEOUT_MS), 4, "no reply %lu", id);
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | hdr[3];
	cr_assert_lt(len, 1u << 20);
	free(body);
	body = malloc(len ? len : 1);
	cr_assert_not_null(body);
	cr_assert_eq(hc_read(bin, body, len, H_TIMEOUT_MS), len);
	cr_assert_eq(proto_bin_decode_reply(&dec, body, len, &r), PROTO_BIN_OK);
	cr_assert_eq(r.id, id, "reply id %lu, want %lu", r.id, id);
	cr_assert_eq(r.status, status, "id %lu: %s, want %s", id,
		     proto_bin_status_name(r.status),
		     proto_bin_status_name(status));
	return r;
}

static bool obj_is(const msgpack_object *o, const void *p, size_t n)
{
	if (o->type == MSGPACK_OBJECT_BIN)
		return o->via.bin.size == n && !memcmp(o->via.bin.ptr, p, n);
	if (o->type == MSGPACK_OBJECT_STR)
		return o->via.str.size == n && !memcmp(o->via.str.ptr, p, n);
	return false;
}

/* The value stored under keys[i]: its index, so a mix-up shows. */
static int value_of(int i, char *dst)
{
	return snprintf(dst, 16, "v%d", i);
}

static void set_all(void)
{
	char v[16];

	for (int i = 0; i < NKEYS; i++) {
		size_t f = bin_begin(PROTO_OP_SET, (uint64_t)i, &keys[i], 1);

		msgpack_pack_bin_with_body(&pk, v, (size_t)value_of(i, v));
		proto_bin_end(&sb, f);
	}
	bin_send();
	for (int i = 0; i < NKEYS; i++)
		bin_reply((uint64_t)i, PROTO_ST_OK);
}

static struct key *find_key(const char *p, size_t n)
{
	for (int i = 0; i < NKEYS; i++)
		if (keys[i].n == n && !memcmp(keys[i].p, p, n))
			return &keys[i];
	return NULL;
}

static void expect_all_seen(const char *how)
{
	for (int i = 0; i < NKEYS; i++) {
		cr_expect(keys[i].seen, "%s: key %d (%zu bytes) missing", how,
			  i, keys[i].n);
		keys[i].seen = false;
	}
}

Test(binkeys, every_byte_value_through_every_op)
{
	char v[16];
	struct proto_bin_reply r;

	set_all();
	for (int i = 0; i < NKEYS; i++) {
		size_t f = bin_begin(PROTO_OP_GET, (uint64_t)i, &keys[i], 0);

		proto_bin_end(&sb, f);
	}
	bin_send();
	for (int i = 0; i < NKEYS; i++) {
		r = bin_reply((uint64_t)i, PROTO_ST_OK);
		cr_assert_eq(r.payload.via.array.size, 3);
		cr_assert(obj_is(&r.payload.via.array.ptr[1], v,
				 (size_t)value_of(i, v)),
			  "key %d read another's value", i);
	}

	/* one mget of them all, in order */
	size_t f = proto_bin_begin(&sb);

	proto_bin_pack_request_head(&pk, PROTO_OP_MGET, 1000, 1);
	msgpack_pack_array(&pk, NKEYS);
	for (int i = 0; i < NKEYS; i++)
		msgpack_pack_bin_with_body(&pk, keys[i].p, keys[i].n);
	proto_bin_end(&sb, f);
	bin_send();
	r = bin_reply(1000, PROTO_ST_OK);
	cr_assert_eq(r.payload.via.array.size, NKEYS);
	for (int i = 0; i < NKEYS; i++) {
		msgpack_object e = r.payload.via.array.ptr[i];

		cr_assert_eq(e.type, MSGPACK_OBJECT_ARRAY, "mget miss %d", i);
		cr_assert(
			obj_is(&e.via.array.ptr[1], v, (size_t)value_of(i, v)));
	}

	/* append, incr, touch, meta get, delete on NUL, space, "\n" */
	const int some[] = { 0, ' ', '\n', 256 + 0, 512, 513, 514, 515 };

	for (size_t j = 0; j < sizeof(some) / sizeof(some[0]); j++) {
		const struct key *k = &keys[some[j]];
		uint64_t id = 2000 + 10 * j;

		f = bin_begin(PROTO_OP_APPEND, id, k, 1);
		msgpack_pack_bin_with_body(&pk, "+", 1);
		proto_bin_end(&sb, f);
		bin_u32(PROTO_OP_TOUCH, id + 1, k, NULL, 0);
		f = bin_begin(PROTO_OP_META_GET, id + 2, k, 1);
		msgpack_pack_map(&pk, 1);
		msgpack_pack_str_with_body(&pk, "v", 1);
		msgpack_pack_true(&pk);
		proto_bin_end(&sb, f);
		bin_u32(PROTO_OP_DELETE, id + 3, k, NULL, UINT32_MAX);
		bin_u32(PROTO_OP_GET, id + 4, k, NULL, UINT32_MAX);
		bin_u32(PROTO_OP_INCR, id + 5, k, NULL, 1);
		bin_u32(PROTO_OP_META_ARITH, id + 6, k, "vivify", 0);
		bin_u32(PROTO_OP_INCR, id + 7, k, NULL, 5);
		bin_send();
		bin_reply(id, PROTO_ST_OK);
		bin_reply(id + 1, PROTO_ST_OK);
		r = bin_reply(id + 2, PROTO_ST_OK);
		cr_assert_eq(r.payload.type, MSGPACK_OBJECT_MAP);
		bin_reply(id + 3, PROTO_ST_OK);
		bin_reply(id + 4, PROTO_ST_NOT_FOUND);
		bin_reply(id + 5, PROTO_ST_NOT_FOUND);
		bin_reply(id + 6, PROTO_ST_OK);
		r = bin_reply(id + 7, PROTO_ST_OK);
		cr_assert_eq(r.payload.via.u64, 5, "key %d", some[j]);
	}
}

Test(binkeys, empty_and_long_keys_are_refused)
{
	struct key k = { .n = 0 };

	size_t f = bin_begin(PROTO_OP_GET, 1, &k, 0);

	proto_bin_end(&sb, f);
	k.n = PROTO_BIN_KEY_MAX + 1;
	f = bin_begin(PROTO_OP_GET, 2, &k, 0);
	proto_bin_end(&sb, f);
	bin_send();
	bin_reply(1, PROTO_ST_BAD_KEY);
	bin_reply(2, PROTO_ST_BAD_KEY);
}

/* Decodes a text KEY/ITEM spelling: base64 when followed by " b". */
static struct key *spelled_key(const char *s, size_t n, bool b64)
{
	char raw[PROTO_BIN_KEY_MAX + 3];
	size_t len;

	if (!b64)
		return find_key(s, n);
	cr_assert_leq(n, PROTO_TEXT_KEY_MAX);
	len = proto_base64_decode(s, n, raw);
	cr_assert_gt(len, 0, "bad base64 %.*s", (int)n, s);
	cr_assert(!proto_key_ok(raw, len), "a text key spelled in base64: %.*s",
		  (int)n, s);
	return find_key(raw, len);
}

/* A text reply line into line (NUL-terminated, \r\n cut); checks that it
 * holds no byte that a key could have broken it with. */
static long text_line(char *line, size_t cap)
{
	long n = hc_line(txt, line, cap, H_TIMEOUT_MS);

	cr_assert_gt(n, 1, "no reply line");
	cr_assert_eq(line[n - 1], '\n');
	n -= line[n - 2] == '\r' ? 2 : 1;
	line[n] = '\0';
	cr_assert_eq(strlen(line), (size_t)n, "a NUL inside a line");
	return n;
}

/* Marks the key of "PREFIX<key>[ b]<rest>" seen; rest starts at the
 * first space after the key's spelling. */
static void mark_spelled(const char *line, size_t skip)
{
	const char *k = line + skip, *sp = strchr(k, ' ');
	size_t n = sp ? (size_t)(sp - k) : strlen(k);
	bool b64 = sp && sp[1] == 'b' && (sp[2] == ' ' || !sp[2]);
	struct key *key = spelled_key(k, n, b64);

	if (key)
		key->seen = true;
}

Test(binkeys, text_scan_spells_them_in_base64)
{
	char line[600];
	unsigned long long cursor = 0;

	set_all();
	do {
		cr_assert_eq(hc_sendf(txt, "scan %llu count 1000\r\n", cursor),
			     0);
		while (text_line(line, sizeof(line)) &&
		       !strncmp(line, "KEY ", 4))
			mark_spelled(line, 4);
		cr_assert(!strncmp(line, "CURSOR ", 7), "line %s", line);
		cursor = strtoull(line + 7, NULL, 10);
	} while (cursor);
	expect_all_seen("text scan");
}

Test(binkeys, msgpack_scan_returns_them_intact)
{
	uint64_t cursor = 0;

	set_all();
	do {
		struct proto_bin_reply r;
		size_t f = proto_bin_begin(&sb);

		proto_bin_pack_request_head(&pk, PROTO_OP_SCAN, 1, 2);
		msgpack_pack_uint64(&pk, cursor);
		msgpack_pack_uint32(&pk, 1000);
		proto_bin_end(&sb, f);
		bin_send();
		r = bin_reply(1, PROTO_ST_OK);
		cursor = r.payload.via.array.ptr[0].via.u64;
		msgpack_object_array ks = r.payload.via.array.ptr[1].via.array;
		for (uint32_t i = 0; i < ks.size; i++) {
			const msgpack_object *o = &ks.ptr[i];
			struct key *k = o->type == MSGPACK_OBJECT_BIN
						? find_key(o->via.bin.ptr,
							   o->via.bin.size)
						: find_key(o->via.str.ptr,
							   o->via.str.size);

			cr_assert_not_null(k, "scan returned an unknown key");
			k->seen = true;
		}
	} while (cursor);
	expect_all_seen("msgpack scan");
}

/* %XX back to bytes; returns the length. */
static size_t uri_decode(const char *s, size_t n, char *dst)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned int b;

		if (s[i] == '%' && i + 2 < n &&
		    sscanf(s + i + 1, "%2x", &b) == 1) {
			dst[k++] = (char)b;
			i += 2;
		} else {
			dst[k++] = s[i];
		}
	}
	return k;
}

/* Marks the key of a line holding "key=<url-encoded> " seen. */
static void mark_uri_key(const char *line)
{
	const char *k = strstr(line, "key="), *sp;
	char raw[3 * PROTO_BIN_KEY_MAX];
	struct key *key;

	cr_assert_not_null(k, "no key= in %s", line);
	k += 4;
	sp = strchr(k, ' ');
	cr_assert_not_null(sp);
	for (const char *p = line; *p; p++)
		cr_assert((unsigned char)*p > ' ' || *p == ' ',
			  "a raw control byte in %s", line);
	key = find_key(raw, uri_decode(k, (size_t)(sp - k), raw));
	if (key)
		key->seen = true;
}

Test(binkeys, metadump_and_cachedump_lines_stay_whole)
{
	char line[1200];

	set_all();
	cr_assert_eq(hc_sendf(txt, "lru_crawler metadump all\r\n"), 0);
	while (text_line(line, sizeof(line)) && strcmp(line, "END"))
		mark_uri_key(line);
	expect_all_seen("metadump");

	cr_assert_eq(hc_sendf(txt, "stats cachedump 1 0\r\n"), 0);
	while (text_line(line, sizeof(line)) && strcmp(line, "END")) {
		cr_assert(!strncmp(line, "ITEM ", 5), "line %s", line);
		mark_spelled(line, 5);
	}
	expect_all_seen("cachedump");
}

Test(binkeys, watch_lines_stay_whole)
{
	char line[1200];

	cr_assert_eq(hc_sendf(txt, "watch fetchers mutations\r\n"), 0);
	text_line(line, sizeof(line));
	cr_assert_str_eq(line, "OK");
	/* a store and a fetch line per key, a few keys at a time so that
	 * the watcher's buffer drops none */
	for (int first = 0; first < NKEYS; first += 16) {
		int n = NKEYS - first < 16 ? NKEYS - first : 16;

		for (int i = first; i < first + n; i++) {
			size_t f = bin_begin(PROTO_OP_SET, (uint64_t)i,
					     &keys[i], 1);

			msgpack_pack_bin_with_body(&pk, "v", 1);
			proto_bin_end(&sb, f);
			f = bin_begin(PROTO_OP_GET, (uint64_t)i, &keys[i], 0);
			proto_bin_end(&sb, f);
		}
		bin_send();
		for (int i = first; i < first + n; i++) {
			bin_reply((uint64_t)i, PROTO_ST_OK);
			bin_reply((uint64_t)i, PROTO_ST_OK);
		}
		for (int got = 0; got < 2 * n; got++) {
			text_line(line, sizeof(line));
			cr_assert(strstr(line, "type=item_store") ||
					  strstr(line, "type=item_get"),
				  "line %s", line);
			mark_uri_key(line);
		}
	}
	expect_all_seen("watch");
}

/* mg <base64> b reaches an item that only the msgpack protocol could
 * store, and k answers the key in base64 with b. */
Test(binkeys, text_meta_reaches_them_through_base64)
{
	char b64[PROTO_TEXT_KEY_MAX + 1], line[600], want[700];
	const int some[] = { 0, ' ', '\n', 256 + 0, 512, 513 };

	set_all();
	for (size_t j = 0; j < sizeof(some) / sizeof(some[0]); j++) {
		const struct key *k = &keys[some[j]];
		char v[16];
		int vn = value_of(some[j], v);

		b64[proto_base64_encode(k->p, k->n, b64)] = '\0';
		cr_assert_eq(hc_sendf(txt, "mg %s b k v\r\n", b64), 0);
		text_line(line, sizeof(line));
		snprintf(want, sizeof(want), "VA %d k%s b", vn, b64);
		cr_assert_str_eq(line, want);
		text_line(line, sizeof(line));
		cr_assert_eq(strncmp(line, v, (size_t)vn), 0);
		cr_assert_eq(hc_sendf(txt, "me %s b\r\n", b64), 0);
		text_line(line, sizeof(line));
		snprintf(want, sizeof(want), "ME %s ", b64);
		cr_assert_eq(strncmp(line, want, strlen(want)), 0, "%s", line);
	}
	/* the text protocol's own keys stay memcached's */
	/* a msgpack key that is a text key is answered as it is */
	cr_assert_eq(hc_sendf(txt, "mg k\x01k k v\r\n"), 0);
	text_line(line, sizeof(line));
	cr_assert_str_eq(line, "VA 4 kk\x01k");
	text_line(line, sizeof(line));
	cr_assert_str_eq(line, "v257");
	cr_assert_eq(hc_sendf(txt, "set a b 0 0 1\r\n"), 0);
	text_line(line, sizeof(line));
	cr_assert(!strncmp(line, "CLIENT_ERROR", 12), "%s", line);
}

/* stats detail counts per prefix; a prefix that is no text key is
 * spelled in base64 with b, as keys are. */
Test(binkeys, stats_detail_dump_spells_prefixes)
{
	const struct key k = { .p = "a b:\n", .n = 5 };
	char line[600];
	bool found = false;

	cr_assert_eq(hc_sendf(txt, "stats detail on\r\n"), 0);
	text_line(line, sizeof(line));
	cr_assert_str_eq(line, "OK");
	size_t f = bin_begin(PROTO_OP_SET, 1, &k, 1);

	msgpack_pack_bin_with_body(&pk, "v", 1);
	proto_bin_end(&sb, f);
	bin_send();
	bin_reply(1, PROTO_ST_OK);
	cr_assert_eq(hc_sendf(txt, "stats detail dump\r\n"), 0);
	while (text_line(line, sizeof(line)) && strcmp(line, "END")) {
		cr_assert(!strncmp(line, "PREFIX ", 7), "line %s", line);
		/* "a b" in base64 */
		found = found || !strncmp(line, "PREFIX YSBi b get ", 18);
	}
	cr_assert(found, "no PREFIX line for \"a b\"");
}
