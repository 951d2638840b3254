/*
 * Every single-key and server call of librhkv against a live rhkvd: round
 * trips, each error code, 1 MiB and binary values, keys shared with the
 * text protocol both ways, stats, version, scan and its iterator.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static struct srv srv;
static rhkv *c;

static void teardown(void)
{
	rhkv_close(c);
	c = NULL;
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
}

TestSuite(ops, .fini = teardown, .timeout = 60);

static void start(const char *const *extra)
{
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = cl_connect(srv.port, 5000);
}

static void expect_value(const char *key, const void *val, size_t len,
			 uint32_t flags)
{
	struct rhkv_value v;

	OK(rhkv_get(c, key, strlen(key), &v));
	cr_assert_eq(v.len, len, "%s: length %zu, expected %zu", key, v.len,
		     len);
	cr_assert(memcmp(v.data, val, len) == 0, "%s: value differs", key);
	cr_assert_eq(v.data[len], '\0');
	cr_assert_eq(v.flags, flags);
	rhkv_value_free(&v);
}

Test(ops, storage_round_trips)
{
	uint64_t cas1 = 0, cas2 = 0, n = 0;
	struct rhkv_value v;

	start(NULL);
	OK(rhkv_set(c, "k", 1, "v1", 2, 42, 0, &cas1));
	cr_assert_neq(cas1, 0);
	expect_value("k", "v1", 2, 42);
	ERR(rhkv_add(c, "k", 1, "x", 1, 0, 0, NULL), RHKV_ENOTSTORED);
	OK(rhkv_add(c, "k2", 2, "a", 1, 0, 0, NULL));
	ERR(rhkv_replace(c, "nope", 4, "x", 1, 0, 0, NULL), RHKV_ENOTSTORED);
	OK(rhkv_replace(c, "k2", 2, "b", 1, 7, 0, NULL));
	expect_value("k2", "b", 1, 7);
	OK(rhkv_append(c, "k2", 2, "cd", 2, NULL));
	OK(rhkv_prepend(c, "k2", 2, "a", 1, NULL));
	expect_value("k2", "abcd", 4, 7);
	ERR(rhkv_append(c, "nope", 4, "x", 1, NULL), RHKV_ENOTSTORED);
	ERR(rhkv_prepend(c, "nope", 4, "x", 1, NULL), RHKV_ENOTSTORED);

	OK(rhkv_get(c, "k", 1, &v));
	cr_assert_eq(v.cas, cas1);
	rhkv_value_free(&v);
	OK(rhkv_cas(c, "k", 1, "v2", 2, 1, 0, cas1, &cas2));
	cr_assert_neq(cas2, cas1);
	ERR(rhkv_cas(c, "k", 1, "v3", 2, 1, 0, cas1, NULL), RHKV_EEXISTS);
	ERR(rhkv_cas(c, "nope", 4, "v3", 2, 1, 0, cas1, NULL), RHKV_ENOTFOUND);
	expect_value("k", "v2", 2, 1);

	OK(rhkv_delete(c, "k", 1));
	ERR(rhkv_delete(c, "k", 1), RHKV_ENOTFOUND);
	ERR(rhkv_get(c, "k", 1, &v), RHKV_ENOTFOUND);
	cr_assert_null(v.data);

	OK(rhkv_set(c, "n", 1, "10", 2, 0, 0, NULL));
	OK(rhkv_incr(c, "n", 1, 5, &n));
	cr_assert_eq(n, 15);
	OK(rhkv_decr(c, "n", 1, 20, &n));
	cr_assert_eq(n, 0);
	ERR(rhkv_incr(c, "nope", 4, 1, &n), RHKV_ENOTFOUND);
	ERR(rhkv_incr(c, "k2", 2, 1, &n), RHKV_ENONNUMERIC);
	ERR(rhkv_decr(c, "k2", 2, 1, &n), RHKV_ENONNUMERIC);

	OK(rhkv_touch(c, "k2", 2, 100));
	ERR(rhkv_touch(c, "nope", 4, 100), RHKV_ENOTFOUND);
	OK(rhkv_gat(c, "k2", 2, 100, &v));
	cr_assert_eq(v.len, 4);
	cr_assert_str_eq(v.data, "abcd");
	rhkv_value_free(&v);
	ERR(rhkv_gat(c, "nope", 4, 100, &v), RHKV_ENOTFOUND);
	OK(rhkv_touch(c, "k2", 2, -1)); /* expired now */
	ERR(rhkv_get(c, "k2", 2, &v), RHKV_ENOTFOUND);

	OK(rhkv_flush_all(c, 0));
	ERR(rhkv_get(c, "n", 1, &v), RHKV_ENOTFOUND);
	cr_assert_str_neq(rhkv_errstr(c), "");
}

Test(ops, get_into)
{
	char buf[8];
	size_t len = 0;
	uint32_t flags = 0;
	uint64_t cas = 0;

	start(NULL);
	OK(rhkv_set(c, "k", 1, "hello", 5, 3, 0, NULL));
	OK(rhkv_get_into(c, "k", 1, buf, sizeof(buf), &len, &flags, &cas));
	cr_assert_eq(len, 5);
	cr_assert(memcmp(buf, "hello", 5) == 0);
	cr_assert_eq(flags, 3);
	cr_assert_neq(cas, 0);
	ERR(rhkv_get_into(c, "k", 1, buf, 4, &len, NULL, NULL), RHKV_ERANGE);
	cr_assert_eq(len, 5);
	ERR(rhkv_get_into(c, "x", 1, buf, 4, &len, NULL, NULL), RHKV_ENOTFOUND);
	OK(rhkv_ping(c)); /* the connection goes on */
}

Test(ops, bad_keys_without_a_round_trip)
{
	char longkey[251];
	struct rhkv_value v;

	start(NULL);
	memset(longkey, 'a', sizeof(longkey));
	ERR(rhkv_get(c, "", 0, &v), RHKV_EBADKEY);
	ERR(rhkv_get(c, longkey, sizeof(longkey), &v), RHKV_EBADKEY);
	ERR(rhkv_delete(c, longkey, sizeof(longkey)), RHKV_EBADKEY);
	ERR(rhkv_incr(c, "", 0, 1, NULL), RHKV_EBADKEY);
	/* space, \n and NUL are key bytes in the msgpack protocol */
	OK(rhkv_set(c, "a b", 3, "x", 1, 0, 0, NULL));
	OK(rhkv_set(c, "a\nb", 3, "x", 1, 0, 0, NULL));
	ERR(rhkv_delete(c, "a\0b", 3), RHKV_ENOTFOUND);
	/* control bytes are key bytes, as in memcached's text protocol */
	OK(rhkv_set(c, "a\x01\t\x7f", 4, "x", 1, 0, 0, NULL));
	OK(rhkv_get(c, "a\x01\t\x7f", 4, &v));
	cr_assert_eq(v.len, 1);
	rhkv_value_free(&v);
	OK(rhkv_set(c, longkey, 250, "x", 1, 0, 0, NULL));
	OK(rhkv_get(c, longkey, 250, &v));
	cr_assert_eq(v.len, 1);
	rhkv_value_free(&v);
}

Test(ops, large_and_binary_values)
{
	size_t big = 1024 * 1024;
	char *v = malloc(big);
	char bytes[256];

	start(NULL);
	for (size_t i = 0; i < big; i++)
		v[i] = (char)(i * 131 + 7);
	OK(rhkv_set(c, "big", 3, v, big, 0, 0, NULL));
	expect_value("big", v, big, 0);
	for (int i = 0; i < 256; i++)
		bytes[i] = (char)i;
	OK(rhkv_set(c, "bin", 3, bytes, sizeof(bytes), 0, 0, NULL));
	expect_value("bin", bytes, sizeof(bytes), 0);
	OK(rhkv_set(c, "empty", 5, "", 0, 0, 0, NULL));
	expect_value("empty", "", 0, 0);
	free(v);
}

Test(ops, too_large)
{
	const char *const extra[] = { "-I", "1m", NULL };
	size_t big = 2 * 1024 * 1024;
	char *v = calloc(1, big);

	start(extra);
	ERR(rhkv_set(c, "big", 3, v, big, 0, 0, NULL), RHKV_ETOOLARGE);
	ERR(rhkv_set(c, "big", 3, v, 1024 * 1024 + 1, 0, 0, NULL),
	    RHKV_ETOOLARGE);
	OK(rhkv_set(c, "small", 5, "x", 1, 0, 0, NULL));
	expect_value("small", "x", 1, 0);
	free(v);
}

Test(ops, text_and_binary_share_keys)
{
	struct hconn *t;
	struct hvalue hv;

	start(NULL);
	t = hc_open(srv.port);
	cr_assert_not_null(t);
	RT(t, "set k 5 0 1\r\nx\r\n", "STORED\r\n");
	expect_value("k", "x", 1, 5);
	OK(rhkv_set(c, "fromlib", 7, "hi\r\nthere", 9, 9, 0, NULL));
	SEND(t, "get fromlib\r\n");
	cr_assert_eq(hc_value(t, &hv, H_TIMEOUT_MS), 1, "%s", hv.line);
	cr_assert_eq(hv.len, 9);
	cr_assert(memcmp(hv.val, "hi\r\nthere", 9) == 0);
	cr_assert_eq(hv.flags, 9);
	EXPECT(t, "END\r\n");
	hc_close(&t);
}

Test(ops, server_calls)
{
	char ver[64];
	struct rhkv_stat *st;
	size_t n;
	int found = 0;

	start(NULL);
	OK(rhkv_version(c, ver, sizeof(ver)));
	cr_assert(strlen(ver) > 0);
	cr_assert(strncmp(srv.version + 8, ver, strlen(ver)) == 0, "%s vs %s",
		  ver, srv.version);
	ERR(rhkv_version(c, ver, 2), RHKV_ERANGE);
	OK(rhkv_ping(c));
	OK(rhkv_stats(c, NULL, &st, &n));
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++)
		found += strcmp(st[i].name, "pid") == 0;
	cr_assert_eq(found, 1);
	rhkv_stats_free(st, n);
	OK(rhkv_stats(c, "settings", &st, &n));
	cr_assert_gt(n, 0);
	rhkv_stats_free(st, n);
	OK(rhkv_quit(c));
	OK(rhkv_ping(c)); /* connects again */
}

/* rhkv_hotkeys: the server's `stats hotkeys` as structs, per class, a
 * binary key decoded from the base64 the server prints. */
Test(ops, hotkeys)
{
	static const char *const extra[] = { "--hotkeys-sample", "1", NULL };
	static const char bin[] = { 0, 'a', ' ', 'b', '\n', (char)0xff };
	struct rhkv_hotkeys *h;
	struct rhkv_value v;

	start(extra);
	OK(rhkv_set(c, bin, sizeof(bin), "x", 1, 0, 0, NULL));
	for (int i = 0; i < 3; i++) {
		OK(rhkv_get(c, bin, sizeof(bin), &v));
		rhkv_value_free(&v);
	}
	ERR(rhkv_get(c, "cold", 4, &v), RHKV_ENOTFOUND);
	OK(rhkv_hotkeys(c, 0, &h));
	cr_assert_eq(h->sample, 1);
	cr_assert_eq(h->requests[RHKV_HOTKEYS_READ], 4);
	cr_assert_eq(h->n[RHKV_HOTKEYS_READ], 2);
	cr_assert_eq(h->top[RHKV_HOTKEYS_READ][0].klen, sizeof(bin));
	cr_assert(!memcmp(h->top[RHKV_HOTKEYS_READ][0].key, bin, sizeof(bin)));
	cr_assert_eq(h->top[RHKV_HOTKEYS_READ][0].count, 3);
	cr_assert(h->top[RHKV_HOTKEYS_READ][0].exact);
	cr_assert_float_eq(h->top[RHKV_HOTKEYS_READ][0].share, 0.75, 1e-6);
	cr_assert_str_eq(h->top[RHKV_HOTKEYS_READ][1].key, "cold");
	cr_assert_eq(h->n[RHKV_HOTKEYS_WRITE], 1);
	cr_assert_eq(h->requests[RHKV_HOTKEYS_WRITE], 1);
	rhkv_hotkeys_free(h);
	OK(rhkv_hotkeys(c, 1, &h));
	cr_assert_eq(h->n[RHKV_HOTKEYS_READ], 1);
	rhkv_hotkeys_free(h);
	ERR(rhkv_hotkeys(c, 101, &h), RHKV_EINVAL);
}

Test(ops, scan_every_key)
{
	enum { N = 500 };
	char key[32];
	char *seen = calloc(N, 1);
	rhkv_scan_iter *it;
	const char *k;
	size_t klen;
	int rc, total = 0;
	uint64_t next;
	char **keys;
	size_t nk;

	start(NULL);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "scan:%d", i);
		OK(rhkv_set(c, key, strlen(key), "v", 1, 0, 0, NULL));
	}
	OK(rhkv_set(c, "other", 5, "v", 1, 0, 0, NULL));
	it = rhkv_scan_begin(c, "scan:*", 50);
	cr_assert_not_null(it);
	while ((rc = rhkv_scan_next(it, &k, &klen)) == 1) {
		int i;

		cr_assert_eq(strncmp(k, "scan:", 5), 0, "%s", k);
		cr_assert_eq(klen, strlen(k));
		i = atoi(k + 5);
		cr_assert(i >= 0 && i < N);
		seen[i] = 1;
		total++;
	}
	cr_assert_eq(rc, 0, "%s", rhkv_strerror(rc));
	rhkv_scan_end(it);
	for (int i = 0; i < N; i++)
		cr_assert(seen[i], "scan:%d never came back", i);
	cr_assert_geq(total, N);
	free(seen);

	OK(rhkv_scan(c, 0, 1000, "oth*", &next, &keys, &nk));
	while (next && nk == 0) { /* the match may find it in a later step */
		rhkv_keys_free(keys, nk);
		OK(rhkv_scan(c, next, 1000, "oth*", &next, &keys, &nk));
	}
	cr_assert_eq(nk, 1);
	cr_assert_str_eq(keys[0], "other");
	rhkv_keys_free(keys, nk);
}
