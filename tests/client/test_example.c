/*
 * client/examples/ against a live rhkvd: example.c must print the greeting,
 * read_through.c where each read's value came from; both exit 0.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util.h"

static struct srv srv;

static void teardown(void)
{
	srv_stop(&srv);
}

TestSuite(example, .fini = teardown, .timeout = 30);

Test(example, runs)
{
	const char *exe = getenv("RHKV_EXAMPLE");
	char cmd[4096], out[256] = "";
	FILE *f;
	int st;

	cr_assert_not_null(exe, "RHKV_EXAMPLE is not set");
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	snprintf(cmd, sizeof(cmd), "'%s' %d", exe, srv.port);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	if (!fgets(out, sizeof(out), f))
		out[0] = '\0';
	st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_assert_str_eq(out, "greeting = hello\n");
}

/* client/examples/read_through.c: computed, then cached, then computed
 * again after the invalidation. */
Test(example, read_through)
{
	static const char *const want[] = {
		"user:42 = report for user:42 (computed)\n",
		"user:42 = report for user:42 (cached)\n",
		"user:42 = report for user:42 (computed)\n",
	};
	const char *exe = getenv("RHKV_READ_THROUGH");
	char cmd[4096], out[256];
	FILE *f;
	int st;

	cr_assert_not_null(exe, "RHKV_READ_THROUGH is not set");
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	snprintf(cmd, sizeof(cmd), "'%s' %d", exe, srv.port);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!fgets(out, sizeof(out), f))
			out[0] = '\0';
		cr_assert_str_eq(out, want[i], "line %zu", i + 1);
	}
	st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
