/*
 * Pipelines, mget and mset against a live rhkvd: 10,000 commands in one
 * exec, 1,000-key mgets with misses, results and numbers per command.
 */
#include <criterion/criterion.h>
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

TestSuite(pipeline, .fini = teardown, .timeout = 60);

static void start(void)
{
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	c = cl_connect(srv.port, 10000);
}

Test(pipeline, ten_thousand_commands)
{
	enum { N = 10000 };
	rhkv_pipeline *p;
	char key[32], val[32];
	struct rhkv_value v;

	start();
	p = rhkv_pipeline_new(c);
	cr_assert_not_null(p);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "p:%d", i);
		snprintf(val, sizeof(val), "value-%d", i);
		cr_assert_eq(rhkv_pipeline_set(p, key, strlen(key), val,
					       strlen(val), (uint32_t)i, 0),
			     i);
	}
	cr_assert_eq(rhkv_pipeline_exec(p), 0, "%s", rhkv_errstr(c));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(rhkv_pipeline_result(p, (size_t)i, NULL), 0);
		cr_assert_neq(rhkv_pipeline_number(p, (size_t)i), 0);
	}
	rhkv_pipeline_reset(p);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "p:%d", i);
		cr_assert_eq(rhkv_pipeline_get(p, key, strlen(key)), 2 * i);
		cr_assert_eq(rhkv_pipeline_incr(p, key, strlen(key), 1),
			     2 * i + 1);
	}
	/* a refused command takes its index: the later ones keep theirs */
	cr_assert_eq(rhkv_pipeline_get(p, "", 0), RHKV_EBADKEY);
	cr_assert_eq(rhkv_pipeline_delete(p, "p:0", 3), 2 * N + 1);
	cr_assert_eq(rhkv_pipeline_touch(p, "p:1", 3, 100), 2 * N + 2);
	cr_assert_eq(rhkv_pipeline_touch(p, "p:0", 3, 100), 2 * N + 3);
	cr_assert_eq(rhkv_pipeline_exec(p), 0, "%s", rhkv_errstr(c));
	for (int i = 0; i < N; i++) {
		snprintf(val, sizeof(val), "value-%d", i);
		cr_assert_eq(rhkv_pipeline_result(p, 2 * (size_t)i, &v), 0);
		cr_assert_str_eq(v.data, val);
		cr_assert_eq(v.flags, (uint32_t)i);
		rhkv_value_free(&v);
		cr_assert_eq(rhkv_pipeline_result(p, 2 * (size_t)i + 1, NULL),
			     RHKV_ENONNUMERIC);
	}
	cr_assert_eq(rhkv_pipeline_result(p, 2 * N, NULL), RHKV_EBADKEY);
	cr_assert_eq(rhkv_pipeline_result(p, 2 * N + 1, NULL), 0);
	cr_assert_eq(rhkv_pipeline_result(p, 2 * N + 2, NULL), 0);
	cr_assert_eq(rhkv_pipeline_result(p, 2 * N + 3, NULL), RHKV_ENOTFOUND);
	cr_assert_eq(rhkv_pipeline_result(p, 2 * N + 4, NULL), RHKV_EINVAL);
	rhkv_pipeline_free(p);
	cr_assert_eq(rhkv_ping(c), 0);
}

Test(pipeline, mset_and_mget_with_misses)
{
	enum { N = 1000 };
	static char keys[N][16];
	const char *kp[N]; /* the type callers have: no cast */
	size_t kl[N];
	struct rhkv_item items[N / 2];
	struct rhkv_value out[N];
	int st[N];

	start();
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "m:%d", i);
		kp[i] = keys[i];
		kl[i] = strlen(keys[i]);
	}
	for (int i = 0; i < N / 2; i++) /* the even keys */
		items[i] = (struct rhkv_item){ .key = keys[2 * i],
					       .klen = kl[2 * i],
					       .val = keys[2 * i],
					       .vlen = kl[2 * i],
					       .flags = (uint32_t)i };
	cr_assert_eq(rhkv_mset(c, N / 2, items, st), 0);
	for (int i = 0; i < N / 2; i++)
		cr_assert_eq(st[i], 0);
	kl[3] = 0; /* a bad key among them */
	cr_assert_eq(rhkv_mget(c, N, kp, kl, out, st), 0, "%s", rhkv_errstr(c));
	for (int i = 0; i < N; i++) {
		if (i == 3) {
			cr_assert_eq(st[i], RHKV_EBADKEY);
			cr_assert_null(out[i].data);
		} else if (i % 2) {
			cr_assert_eq(st[i], RHKV_ENOTFOUND, "%d: %d", i, st[i]);
			cr_assert_null(out[i].data);
		} else {
			cr_assert_eq(st[i], 0);
			cr_assert_str_eq(out[i].data, keys[i]);
			cr_assert_eq(out[i].flags, (uint32_t)(i / 2));
		}
		rhkv_value_free(&out[i]);
	}
}
