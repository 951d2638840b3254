/*
 * client/examples/example.c against a live rhkvd: it must print the
 * greeting and exit 0.
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
