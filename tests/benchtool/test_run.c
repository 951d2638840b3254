/* Integration test of rhkv-bench: start the project's rhkvd (RHKVD) on a
 * free 127.0.0.1 port, run rhkv-bench (RHKV_BENCH) for 2 seconds against
 * it with --prefill and --json, and check ops > 0 and zero errors; the
 * server is stopped by its PID. */
#include "proc.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number after "name": in the JSON text, or -1. */
static double json_number(const char *text, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\"%s\":", name);
	const char *p = strstr(text, key);
	if (p == NULL)
		return -1;
	return strtod(p + strlen(key), NULL);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	char *buf = calloc(1, 65536);
	if (buf != NULL)
		fread(buf, 1, 65535, f);
	fclose(f);
	return buf;
}

static void run_against_rhkvd(const char *extra1, const char *extra2)
{
	const char *rhkvd = getenv("RHKVD");
	const char *bench = getenv("RHKV_BENCH");
	cr_assert_not_null(rhkvd, "RHKVD is not set");
	cr_assert_not_null(bench, "RHKV_BENCH is not set");
	int port = proc_free_port();
	cr_assert_gt(port, 0);
	char ports[16], json[64];
	snprintf(ports, sizeof(ports), "%d", port);
	snprintf(json, sizeof(json), "/tmp/rhkv-bench-test-%d.json",
		 (int)getpid());
	char *sargv[] = { (char *)rhkvd, "-p", ports, "-t", "2", NULL };
	pid_t srv = proc_start(sargv, 1);
	cr_assert_gt(srv, 0);
	if (proc_wait_port(port, 10000) != 0) {
		kill(srv, SIGKILL);
		proc_wait(srv);
		cr_assert_fail("rhkvd did not listen on %d", port);
	}
	char *bargv[] = {
		(char *)bench,	"--port", ports,    "--threads", "2",
		"--conns",	"4",	  "--keys", "10000",	 "--prefill",
		"--duration",	"2",	  "--json", json,	 (char *)extra1,
		(char *)extra2, NULL
	};
	int rc = proc_run(bargv, 1);
	kill(srv, SIGTERM);
	int src = proc_wait(srv);
	cr_assert_eq(rc, 0, "rhkv-bench exited %d", rc);
	char *text = read_all(json);
	unlink(json);
	cr_assert_not_null(text, "no %s", json);
	double ops = json_number(text, "ops");
	double errors = json_number(text, "errors");
	double hits = json_number(text, "hits");
	cr_assert_gt(ops, 0, "ops %.0f\n%s", ops, text);
	cr_assert_eq(errors, 0, "errors %.0f\n%s", errors, text);
	cr_assert_gt(hits, 0, "prefilled keys missed\n%s", text);
	free(text);
	cr_expect(src == 0 || src == 128 + SIGTERM, "rhkvd exit %d", src);
}

Test(run, two_seconds_against_rhkvd, .timeout = 60)
{
	run_against_rhkvd(NULL, NULL);
}

Test(run, two_seconds_pipelined, .timeout = 60)
{
	run_against_rhkvd("--pipeline", "8");
}

Test(run, two_seconds_open_loop, .timeout = 60)
{
	run_against_rhkvd("--rate", "2000");
}

Test(run, two_seconds_binary_protocol, .timeout = 60)
{
	run_against_rhkvd("--protocol", "binary");
}

Test(run, two_seconds_meta_protocol, .timeout = 60)
{
	run_against_rhkvd("--protocol", "meta");
}
