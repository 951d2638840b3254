/*
 * Keys with any byte through librhkv: every byte value 0..255, NUL in the
 * middle, space and "\n", stored and read back by rhkv_set/get/delete,
 * rhkv_mget, a pipeline, meta get and scan (whose lengths keep keys with
 * NULs whole); the empty and 251-byte keys are still refused; the scan
 * calls refuse a count outside 1..1000 with a reason; and the text
 * protocol on the same server still refuses "a b" as a key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* 256 one-byte keys, 256 "k<byte>k", "a\0b" and 250 NULs. */
#define NKEYS (2 * 256 + 2)

static struct srv srv;
static rhkv *c;
static char keys[NKEYS][250];
static size_t klens[NKEYS];
static const char *kptr[NKEYS];

static void setup(void)
{
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	c = cl_connect(srv.port, 5000);
	for (int b = 0; b < 256; b++) {
		keys[b][0] = (char)b;
		klens[b] = 1;
		memcpy(keys[256 + b], "k\0k", 3);
		keys[256 + b][1] = (char)b;
		klens[256 + b] = 3;
	}
	memcpy(keys[512], "a\0b", 3);
	klens[512] = 3;
	klens[513] = 250; /* all NULs */
	for (int i = 0; i < NKEYS; i++)
		kptr[i] = keys[i];
}

static void teardown(void)
{
	rhkv_close(c);
	c = NULL;
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
}

TestSuite(binkeys, .init = setup, .fini = teardown, .timeout = 60);

/* keys[i]'s value: its index, so that a mix-up of keys shows. */
static size_t value_of(int i, char *dst)
{
	return (size_t)snprintf(dst, 16, "v%d", i);
}

static void expect_value(int i, const struct rhkv_value *v)
{
	char want[16];
	size_t n = value_of(i, want);

	cr_assert_not_null(v->data, "key %d: no value", i);
	cr_assert_eq(v->len, n, "key %d", i);
	cr_assert_eq(memcmp(v->data, want, n), 0, "key %d: another's value", i);
}

static void set_all(void)
{
	char v[16];

	for (int i = 0; i < NKEYS; i++)
		OK(rhkv_set(c, keys[i], klens[i], v, value_of(i, v), 0, 0,
			    NULL));
}

static int find_key(const char *p, size_t n)
{
	for (int i = 0; i < NKEYS; i++)
		if (klens[i] == n && !memcmp(keys[i], p, n))
			return i;
	return -1;
}

Test(binkeys, set_get_delete_every_byte_value)
{
	struct rhkv_value v;

	set_all();
	for (int i = 0; i < NKEYS; i++) {
		OK(rhkv_get(c, keys[i], klens[i], &v));
		expect_value(i, &v);
		rhkv_value_free(&v);
	}
	for (int i = 0; i < NKEYS; i += 3)
		OK(rhkv_delete(c, keys[i], klens[i]));
	for (int i = 0; i < NKEYS; i++) {
		int rc = rhkv_get(c, keys[i], klens[i], &v);

		if (i % 3 == 0) {
			cr_assert_eq(rc, RHKV_ENOTFOUND, "key %d", i);
		} else {
			cr_assert_eq(rc, 0, "key %d: %s", i, rhkv_errstr(c));
			expect_value(i, &v);
			rhkv_value_free(&v);
		}
	}
}

Test(binkeys, empty_and_long_keys_refused)
{
	char big[251];
	struct rhkv_value v;

	memset(big, 0, sizeof(big));
	ERR(rhkv_get(c, "", 0, &v), RHKV_EBADKEY);
	ERR(rhkv_set(c, big, sizeof(big), "x", 1, 0, 0, NULL), RHKV_EBADKEY);
	OK(rhkv_set(c, big, 250, "x", 1, 0, 0, NULL));
}

Test(binkeys, mget_and_pipeline)
{
	static struct rhkv_value out[NKEYS];
	static int st[NKEYS];
	rhkv_pipeline *p = rhkv_pipeline_new(c);
	char v[16];

	cr_assert_not_null(p);
	for (int i = 0; i < NKEYS; i++)
		cr_assert_eq(rhkv_pipeline_set(p, keys[i], klens[i], v,
					       value_of(i, v), 0, 0),
			     i);
	OK(rhkv_pipeline_exec(p));
	for (int i = 0; i < NKEYS; i++)
		cr_assert_eq(rhkv_pipeline_result(p, (size_t)i, NULL), 0);
	rhkv_pipeline_reset(p);
	for (int i = 0; i < NKEYS; i++)
		cr_assert_eq(rhkv_pipeline_get(p, keys[i], klens[i]), i);
	OK(rhkv_pipeline_exec(p));
	for (int i = 0; i < NKEYS; i++) {
		struct rhkv_value r;

		cr_assert_eq(rhkv_pipeline_result(p, (size_t)i, &r), 0);
		expect_value(i, &r);
		rhkv_value_free(&r);
	}
	rhkv_pipeline_free(p);

	OK(rhkv_mget(c, NKEYS, kptr, klens, out, st));
	for (int i = 0; i < NKEYS; i++) {
		cr_assert_eq(st[i], 0, "key %d", i);
		expect_value(i, &out[i]);
		rhkv_value_free(&out[i]);
	}
}

Test(binkeys, meta_get)
{
	const struct rhkv_mget_opts o = { .want_value = 1 };
	struct rhkv_meta m;

	set_all();
	for (int i = 0; i < NKEYS; i++) {
		OK(rhkv_meta_get(c, keys[i], klens[i], &o, &m));
		expect_value(i, &m.value);
		rhkv_value_free(&m.value);
	}
}

Test(binkeys, scan_gives_whole_keys)
{
	static int seen[NKEYS];
	rhkv_scan_iter *it;
	const char *k;
	size_t kn;
	uint64_t next = 0;
	char **ks;
	size_t *kl, n;
	int rc;

	set_all();
	/* one step at a time, with lengths */
	do {
		OK(rhkv_scan_keys(c, next, 1000, NULL, &next, &ks, &kl, &n));
		for (size_t j = 0; j < n; j++) {
			int i = find_key(ks[j], kl[j]);

			cr_assert_geq(i, 0, "an unknown key of %zu bytes",
				      kl[j]);
			cr_assert_eq(ks[j][kl[j]], '\0');
			seen[i]++;
		}
		rhkv_keys_free(ks, n);
	} while (next);
	for (int i = 0; i < NKEYS; i++) {
		cr_assert_geq(seen[i], 1, "key %d not scanned", i);
		seen[i] = 0;
	}

	/* the iterator */
	OK(rhkv_scan_open(c, NULL, 7, &it));
	while ((rc = rhkv_scan_next(it, &k, &kn)) == 1) {
		int i = find_key(k, kn);

		cr_assert_geq(i, 0, "an unknown key of %zu bytes", kn);
		seen[i]++;
	}
	cr_assert_eq(rc, 0, "%s", rhkv_errstr(c));
	rhkv_scan_end(it);
	for (int i = 0; i < NKEYS; i++)
		cr_assert_geq(seen[i], 1, "key %d not iterated", i);
}

Test(binkeys, scan_count_out_of_range_is_refused_with_a_reason)
{
	rhkv_scan_iter *it = (rhkv_scan_iter *)&it;
	uint64_t next;
	char **ks;
	size_t n;

	ERR(rhkv_scan_open(c, NULL, 0, &it), RHKV_EINVAL);
	cr_assert_null(it);
	cr_assert_neq(strstr(rhkv_errstr(c), "count"), NULL, "%s",
		      rhkv_errstr(c));
	ERR(rhkv_scan_open(c, NULL, 1001, &it), RHKV_EINVAL);
	ERR(rhkv_scan_open(c, NULL, 10, NULL), RHKV_EINVAL);
	cr_assert_eq(rhkv_scan_open(NULL, NULL, 10, &it), RHKV_EINVAL);
	cr_assert_null(rhkv_scan_begin(c, NULL, 0));
	cr_assert_null(rhkv_scan_begin(c, NULL, 1001));
	ERR(rhkv_scan(c, 0, 0, NULL, &next, &ks, &n), RHKV_EINVAL);
	ERR(rhkv_scan_keys(c, 0, 1001, NULL, &next, &ks, NULL, &n),
	    RHKV_EINVAL);
	OK(rhkv_scan(c, 0, 1, NULL, &next, &ks, &n));
	rhkv_keys_free(ks, n);
	OK(rhkv_scan(c, 0, 1000, NULL, &next, &ks, &n));
	rhkv_keys_free(ks, n);
	it = rhkv_scan_begin(c, "x*", 1);
	cr_assert_not_null(it);
	rhkv_scan_end(it);
}

/* The text protocol keeps memcached's key rule on the same server, and
 * reaches a key stored here through its base64 spelling. */
Test(binkeys, text_protocol_keeps_its_rule)
{
	struct hconn *t = hc_open(srv.port);
	char line[256];
	long n;

	cr_assert_not_null(t, "connect: errno %d", errno);
	OK(rhkv_set(c, "a b", 3, "sp", 2, 0, 0, NULL));
	/* "a b" is two tokens there: the key "a", then bad flags */
	cr_assert_eq(hc_sendf(t, "set a b 0 0 2\r\n"), 0);
	n = hc_line(t, line, sizeof(line), H_TIMEOUT_MS);
	cr_assert_gt(n, 0);
	cr_assert_eq(strncmp(line, "CLIENT_ERROR", 12), 0, "%s", line);
	/* base64 of "a b" */
	cr_assert_eq(hc_sendf(t, "mn\r\nmg YSBi b k v\r\n"), 0);
	do
		n = hc_line(t, line, sizeof(line), H_TIMEOUT_MS);
	while (n > 0 && strcmp(line, "MN\r\n"));
	n = hc_line(t, line, sizeof(line), H_TIMEOUT_MS);
	cr_assert_str_eq(line, "VA 2 kYSBi b\r\n");
	n = hc_line(t, line, sizeof(line), H_TIMEOUT_MS);
	cr_assert_str_eq(line, "sp\r\n");
	hc_close(&t);
}
