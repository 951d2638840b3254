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

/* Runs the program at $env with the server's port: its first n lines of
 * output must be want[0..n), and it must exit 0. */
static void run_example(const char *env, const char *const *want, size_t n)
{
	const char *exe = getenv(env);
	char cmd[4096], out[256];
	FILE *f;
	int st;

	cr_assert_not_null(exe, "%s is not set", env);
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	snprintf(cmd, sizeof(cmd), "'%s' %d", exe, srv.port);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	for (size_t i = 0; i < n; i++) {
		if (!fgets(out, sizeof(out), f))
			out[0] = '\0';
		cr_assert_str_eq(out, want[i], "line %zu", i + 1);
	}
	st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

Test(example, runs)
{
	static const char *const want[] = { "greeting = hello\n" };

	run_example("RHKV_EXAMPLE", want, 1);
}

/* Computed, then cached, then computed again after the invalidation. */
Test(example, read_through)
{
	static const char *const want[] = {
		"user:42 = report for user:42 (computed)\n",
		"user:42 = report for user:42 (cached)\n",
		"user:42 = report for user:42 (computed)\n",
	};

	run_example("RHKV_READ_THROUGH", want, 3);
}
