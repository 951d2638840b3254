/*
 * client/examples/ against live rhkvd servers: example.c must print the
 * greeting, read_through.c where each read's value came from; the three
 * services (event loop, batch job, pooled multi-threaded service) must
 * report every request right; all exit 0.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util.h"

static struct srv srv, srv2, srv3;

static void teardown(void)
{
	struct srv *all[] = { &srv, &srv2, &srv3 };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->pid)
			H_EXPECT_EXIT_OK(srv_stop(all[i]),
					 "rhkvd after SIGTERM");
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

/* Runs the program at $env with args; its first line must start with
 * want, and it must exit 0. */
static void run_service(const char *env, const char *args, const char *want)
{
	const char *exe = getenv(env);
	char cmd[4096], out[256] = "";
	FILE *f;
	int st;

	cr_assert_not_null(exe, "%s is not set", env);
	snprintf(cmd, sizeof(cmd), "'%s' %s", exe, args);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	if (!fgets(out, sizeof(out), f))
		out[0] = '\0';
	st = pclose(f);
	cr_assert(strncmp(out, want, strlen(want)) == 0, "%s printed %s", env,
		  out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x: %s",
		  env, st, out);
}

Test(example, event_loop_service)
{
	char args[64];

	cr_assert_eq(srv_start(&srv, NULL), 0);
	snprintf(args, sizeof(args), "%d 5000", srv.port);
	run_service("RHKV_EVENT_LOOP", args, "answered 5000:");
}

Test(example, batch_job)
{
	char args[64];

	cr_assert_eq(srv_start(&srv, NULL), 0);
	/* 40 MB: within the server's default memory, nothing evicted */
	snprintf(args, sizeof(args), "%d 10000", srv.port);
	run_service("RHKV_BATCH_JOB", args,
		    "stored 10000 of 10000 keys; sample of 100: 100 read back, "
		    "0 evicted, 0 wrong");
}

Test(example, pooled_service)
{
	char args[64];

	cr_assert_eq(srv_start(&srv, NULL), 0);
	cr_assert_eq(srv_start(&srv2, NULL), 0);
	cr_assert_eq(srv_start(&srv3, NULL), 0);
	snprintf(args, sizeof(args), "%d %d %d", srv.port, srv2.port,
		 srv3.port);
	run_service("RHKV_POOLED_SERVICE", args,
		    "4000 requests counted, 0 errors");
}
