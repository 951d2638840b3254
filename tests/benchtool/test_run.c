/* Integration test of rhkv-bench: start the project's rhkvd (RHKVD) on a
 * free 127.0.0.1 port, run rhkv-bench (RHKV_BENCH) for 1 second against
 * it with --prefill and --json, and check ops > 0 and zero errors; the
 * server is stopped by its PID. The --tls runs need an rhkvd with
 * --tls-port and the openssl command (a throwaway certificate); they skip
 * without either. */
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

/* Starts rhkvd with its port options (-p PORT, and --tls-port and the
 * certificate when tls_dir is given), runs rhkv-bench against port bport
 * with extra, up to 6 arguments, and checks its JSON report. */
static void run_bench(const char *tls_dir, const char *const *extra)
{
	const char *rhkvd = getenv("RHKVD");
	const char *bench = getenv("RHKV_BENCH");
	cr_assert_not_null(rhkvd, "RHKVD is not set");
	cr_assert_not_null(bench, "RHKV_BENCH is not set");
	int port = proc_free_port();
	int tport = tls_dir != NULL ? proc_free_port() : port;
	cr_assert_gt(port, 0);
	cr_assert_gt(tport, 0);
	char ports[16], tports[16], json[64], cert[256], key[256];
	snprintf(ports, sizeof(ports), "%d", port);
	snprintf(tports, sizeof(tports), "%d", tport);
	snprintf(json, sizeof(json), "/tmp/rhkv-bench-test-%d.json",
		 (int)getpid());
	snprintf(cert, sizeof(cert), "%s/cert.pem", tls_dir ? tls_dir : "");
	snprintf(key, sizeof(key), "%s/key.pem", tls_dir ? tls_dir : "");
	char *sargv[] = { (char *)rhkvd, "-p",	       ports,  "-t",
			  "2",		 "--tls-port", tports, "--tls-cert",
			  cert,		 "--tls-key",  key,    NULL };
	if (tls_dir == NULL)
		sargv[5] = NULL;
	pid_t srv = proc_start(sargv, 1);
	cr_assert_gt(srv, 0);
	if (proc_wait_port(tport, 60000) != 0) {
		kill(srv, SIGKILL);
		proc_wait(srv);
		cr_assert_fail("rhkvd did not listen on %d", tport);
	}
	char *bargv[32] = {
		(char *)bench, "--port", tports,   "--threads", "2",
		"--conns",     "4",	 "--keys", "10000",	"--prefill",
		"--duration",  "1",	 "--json", json,
	};
	unsigned n = 14;
	for (unsigned i = 0; extra != NULL && extra[i] != NULL; i++)
		bargv[n++] = (char *)extra[i];
	bargv[n] = NULL;
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

static void run_against_rhkvd(const char *extra1, const char *extra2)
{
	const char *extra[] = { extra1, extra2, NULL };
	run_bench(NULL, extra);
}

/* Whether rhkvd's --help offers --tls-port. */
static int rhkvd_has_tls(void)
{
	char cmd[512], line[512];
	snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", getenv("RHKVD"));
	FILE *p = popen(cmd, "r");
	int found = 0;
	if (p == NULL)
		return 0;
	while (fgets(line, sizeof(line), p) != NULL)
		found |= strstr(line, "--tls-port") != NULL;
	pclose(p);
	return found;
}

/* A self-signed certificate for 127.0.0.1 in a new temporary folder, whose
 * path fills dir; skips the test without rhkvd TLS or openssl. */
static void tls_setup(char *dir, size_t len)
{
	if (!rhkvd_has_tls())
		cr_skip_test("rhkvd has no --tls-port");
	snprintf(dir, len, "/tmp/rhkv-bench-tls-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char keyp[256], certp[256];
	snprintf(keyp, sizeof(keyp), "%s/key.pem", dir);
	snprintf(certp, sizeof(certp), "%s/cert.pem", dir);
	char *argv[] = { "openssl",
			 "req",
			 "-x509",
			 "-newkey",
			 "ec",
			 "-pkeyopt",
			 "ec_paramgen_curve:P-256",
			 "-nodes",
			 "-keyout",
			 keyp,
			 "-out",
			 certp,
			 "-days",
			 "1",
			 "-subj",
			 "/CN=rhkv-bench test",
			 "-addext",
			 "subjectAltName=IP:127.0.0.1",
			 NULL };
	if (proc_run(argv, 1) != 0) {
		rmdir(dir);
		cr_skip_test("no openssl command to make a certificate");
	}
}

static void tls_teardown(const char *dir)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/key.pem", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/cert.pem", dir);
	unlink(p);
	rmdir(dir);
}

/* Each protocol over TLS, the server checked against the certificate. */
static void run_tls(const char *protocol, const char *more)
{
	char dir[64], ca[128];
	tls_setup(dir, sizeof(dir));
	snprintf(ca, sizeof(ca), "%s/cert.pem", dir);
	const char *extra[] = { "--tls",  "--tls-ca", ca,  "--protocol",
				protocol, more,	      NULL };
	run_bench(dir, extra);
	tls_teardown(dir);
}

Test(run, one_second_against_rhkvd, .timeout = 60)
{
	run_against_rhkvd(NULL, NULL);
}

Test(run, one_second_pipelined, .timeout = 60)
{
	run_against_rhkvd("--pipeline", "8");
}

Test(run, one_second_open_loop, .timeout = 60)
{
	run_against_rhkvd("--rate", "2000");
}

Test(run, one_second_binary_protocol, .timeout = 60)
{
	run_against_rhkvd("--protocol", "binary");
}

Test(run, one_second_meta_protocol, .timeout = 60)
{
	run_against_rhkvd("--protocol", "meta");
}

/* A connection per request: every get hits, nothing fails. */
Test(run, one_second_reconnecting, .timeout = 60)
{
	run_against_rhkvd("--reconnect", NULL);
}

Test(run, one_second_over_tls_text, .timeout = 60)
{
	run_tls("text", "--tls-resume");
}

Test(run, one_second_over_tls_meta, .timeout = 60)
{
	run_tls("meta", NULL);
}

/* A full TLS handshake per request. */
Test(run, one_second_over_tls_reconnecting, .timeout = 60)
{
	run_tls("text", "--reconnect");
}

Test(run, one_second_over_tls_binary_pipelined, .timeout = 60)
{
	run_tls("binary", "--pipeline=8");
}
