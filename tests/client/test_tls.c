/*
 * TLS: librhkv against rhkvd's TLS listener, with certificates made for
 * each test by gen_certs.sh (RHKV_TLS_GEN_CERTS) in a temporary folder: a
 * verified connection carries every kind of call and survives reconnects;
 * a certificate from another CA or for another name is refused with
 * RHKV_ETLS unless tls_insecure; a server that requires a client
 * certificate takes ours and refuses a client without one; a cluster
 * speaks TLS to every server. Skipped when rhkvd has no --tls-port.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

static char dir[] = "/tmp/rhkv-tls-test-XXXXXX";
static int dir_made;
static char ca[64], other_ca[64], srv_crt[64], srv_key[64], cli_crt[64],
	cli_key[64];
static pid_t pids[2];
static int tls_ports[2];
static rhkv *c;
static int lfd = -1;

/* Whether the server under test has a TLS listener. */
static int server_has_tls(void)
{
	const char *server = getenv(H_ENV_SERVER);
	char cmd[4096], line[512];
	int found = 0;
	FILE *p;

	cr_assert(server, "%s is not set", H_ENV_SERVER);
	snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", server);
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p))
		found |= strstr(line, "--tls-port") != NULL;
	pclose(p);
	return found;
}

static void setup(void)
{
	const char *gen = getenv("RHKV_TLS_GEN_CERTS");
	char cmd[512];

	if (!server_has_tls())
		cr_skip_test("rhkvd has no --tls-port");
	cr_assert(gen, "RHKV_TLS_GEN_CERTS is not set");
	cr_assert(mkdtemp(dir), "mkdtemp");
	dir_made = 1;
	snprintf(cmd, sizeof(cmd), "sh '%s' '%s' 2>/dev/null", gen, dir);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(other_ca, sizeof(other_ca), "%s/other-ca.crt", dir);
	snprintf(srv_crt, sizeof(srv_crt), "%s/server.crt", dir);
	snprintf(srv_key, sizeof(srv_key), "%s/server.key", dir);
	snprintf(cli_crt, sizeof(cli_crt), "%s/client.crt", dir);
	snprintf(cli_key, sizeof(cli_key), "%s/client.key", dir);
}

static void teardown(void)
{
	char cmd[128];

	rhkv_close(c);
	c = NULL;
	for (int i = 0; i < 2; i++) {
		if (pids[i] > 0)
			H_EXPECT_EXIT_OK(cl_stop(pids[i]),
					 "rhkvd after SIGTERM");
		pids[i] = 0;
	}
	if (lfd >= 0)
		close(lfd);
	lfd = -1;
	if (dir_made) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
}

TestSuite(tls, .init = setup, .fini = teardown, .timeout = 60);

/* Starts server i with a TLS listener (verify: --tls-verify's mode); its
 * TLS port is tls_ports[i]. */
static void start(int i, const char *verify)
{
	char port[16];
	const char *extra[] = { "--tls-port",	port,	 "--tls-cert", srv_crt,
				"--tls-key",	srv_key, "--tls-ca",   ca,
				"--tls-verify", verify,	 NULL };

	tls_ports[i] = cl_free_port();
	snprintf(port, sizeof(port), "%d", tls_ports[i]);
	pids[i] = cl_start_on(cl_free_port(), extra);
	cr_assert_gt(pids[i], 0, "rhkvd with TLS did not start");
}

/* TLS options trusting ca_file. */
static struct rhkv_options tls_opts(const char *ca_file)
{
	struct rhkv_options o;

	rhkv_options_init(&o);
	o.tls = 1;
	o.tls_ca_file = ca_file;
	return o;
}

static int connect_to(const char *host, int port, const struct rhkv_options *o)
{
	rhkv_close(c);
	c = NULL;
	return rhkv_connect(&c, host, port, o);
}

Test(tls, verified_connection_carries_calls)
{
	struct rhkv_options o = tls_opts(ca);
	size_t big_len = 600 * 1024; /* many TLS records each way */
	char *big = malloc(big_len);
	struct rhkv_value v;
	uint64_t n;

	cr_assert(big);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)('a' + i % 26);
	start(0, "none");
	OK(connect_to("127.0.0.1", tls_ports[0], &o));
	OK(rhkv_set(c, "k", 1, "hello", 5, 7, 0, NULL));
	OK(rhkv_get(c, "k", 1, &v));
	cr_assert_eq(v.len, 5);
	cr_assert_eq(memcmp(v.data, "hello", 5), 0);
	cr_assert_eq(v.flags, 7);
	rhkv_value_free(&v);
	OK(rhkv_set(c, "n", 1, "41", 2, 0, 0, NULL));
	OK(rhkv_incr(c, "n", 1, 1, &n));
	cr_assert_eq(n, 42);
	OK(rhkv_set(c, "big", 3, big, big_len, 0, 0, NULL));
	OK(rhkv_get(c, "big", 3, &v));
	cr_assert_eq(v.len, big_len);
	cr_assert_eq(memcmp(v.data, big, big_len), 0);
	rhkv_value_free(&v);

	/* a pipeline: many requests in one write, their replies in one
	 * stream of records */
	rhkv_pipeline *p = rhkv_pipeline_new(c);
	cr_assert(p);
	for (int i = 0; i < 200; i++)
		cr_assert_geq(rhkv_pipeline_set(p, "pk", 2, "v", 1, 0, 0), 0);
	OK(rhkv_pipeline_exec(p));
	rhkv_pipeline_free(p);

	/* the server closes after quit: the next call connects again, with
	 * a new handshake */
	OK(rhkv_quit(c));
	OK(rhkv_get(c, "k", 1, &v));
	rhkv_value_free(&v);
	free(big);
}

/* Megabytes each way in one exchange: the server stops reading while its
 * replies wait, so the client's writes stall and it must read between
 * them (OpenSSL's reads and writes interleaved on one socket). */
Test(tls, pipeline_fills_both_directions)
{
	struct rhkv_options o = tls_opts(ca);
	size_t vlen = 200 * 1024, n = 150;
	char *val = malloc(vlen);
	rhkv_pipeline *p;
	char key[16];

	cr_assert(val);
	memset(val, 'x', vlen);
	start(0, "none");
	o.io_timeout_ms = 20000;
	OK(connect_to("127.0.0.1", tls_ports[0], &o));
	p = rhkv_pipeline_new(c);
	cr_assert(p);
	for (size_t i = 0; i < n; i++) {
		int len = snprintf(key, sizeof(key), "big%zu", i);

		val[0] = (char)('a' + i % 26);
		cr_assert_eq(
			rhkv_pipeline_set(p, key, (size_t)len, val, vlen, 0, 0),
			(long)(2 * i));
		cr_assert_eq(rhkv_pipeline_get(p, key, (size_t)len),
			     (long)(2 * i + 1));
	}
	OK(rhkv_pipeline_exec(p));
	for (size_t i = 0; i < n; i++) {
		struct rhkv_value v;

		cr_assert_eq(rhkv_pipeline_result(p, 2 * i, NULL), 0);
		cr_assert_eq(rhkv_pipeline_result(p, 2 * i + 1, &v), 0);
		cr_assert_eq(v.len, vlen);
		cr_assert_eq(v.data[0], (char)('a' + i % 26));
		rhkv_value_free(&v);
	}
	rhkv_pipeline_free(p);
	free(val);
}

Test(tls, name_checked_against_the_host)
{
	struct rhkv_options o = tls_opts(ca);

	start(0, "none");
	OK(connect_to("localhost", tls_ports[0], &o));
	OK(rhkv_ping(c));
	o.tls_server_name = "localhost";
	OK(connect_to("127.0.0.1", tls_ports[0], &o));
	OK(rhkv_ping(c));
}

Test(tls, other_ca_refused)
{
	struct rhkv_options o = tls_opts(other_ca);

	start(0, "none");
	ERR(connect_to("127.0.0.1", tls_ports[0], &o), RHKV_ETLS);
	cr_assert(strstr(rhkv_errstr(c), "did not verify"), "%s",
		  rhkv_errstr(c));
	cr_assert_str_eq(rhkv_strerror(RHKV_ETLS), "TLS failed");
	/* every later call tries again, and is refused again */
	ERR(rhkv_ping(c), RHKV_ETLS);
}

Test(tls, hostname_mismatch_refused)
{
	struct rhkv_options o = tls_opts(ca);

	start(0, "none");
	o.tls_server_name = "wrong.example";
	ERR(connect_to("127.0.0.1", tls_ports[0], &o), RHKV_ETLS);
	cr_assert(strstr(rhkv_errstr(c), "hostname mismatch"), "%s",
		  rhkv_errstr(c));
}

Test(tls, insecure_accepts_any_certificate)
{
	struct rhkv_options o = tls_opts(other_ca);

	start(0, "none");
	o.tls_insecure = 1;
	o.tls_server_name = "wrong.example";
	OK(connect_to("127.0.0.1", tls_ports[0], &o));
	OK(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL));
}

Test(tls, client_certificate_required)
{
	struct rhkv_options o = tls_opts(ca);
	int rc;

	start(0, "require");
	o.tls_cert_file = cli_crt;
	o.tls_key_file = cli_key;
	OK(connect_to("127.0.0.1", tls_ports[0], &o));
	OK(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL));

	/* without one: TLS 1.3 finishes the client's side of the handshake
	 * before the server checks, so the refusal (an alert, or a closed
	 * connection) may come at the first call */
	o.tls_cert_file = o.tls_key_file = NULL;
	rc = connect_to("127.0.0.1", tls_ports[0], &o);
	if (rc == 0)
		rc = rhkv_ping(c);
	cr_assert(rc == RHKV_ETLS || rc == RHKV_ECONN, "%d %s (%s)", rc,
		  rhkv_strerror(rc), rhkv_errstr(c));
}

Test(tls, cluster_over_tls)
{
	struct rhkv_options o = tls_opts(ca);
	rhkv_cluster *cl;
	int used[2] = { 0, 0 };
	char key[16];

	start(0, "require");
	start(1, "require");
	o.tls_cert_file = cli_crt;
	o.tls_key_file = cli_key;
	cr_assert_eq(rhkv_cluster_new(&cl, &o), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(rhkv_cluster_add(cl, "127.0.0.1", tls_ports[i], 1),
			     0);
	for (int i = 0; i < 100; i++) {
		int len = snprintf(key, sizeof(key), "key%d", i);
		int port = 0;

		cr_assert_eq(rhkv_cluster_server_of(cl, key, (size_t)len, NULL,
						    0, &port),
			     0);
		used[port == tls_ports[1]] = 1;
		cr_assert_eq(rhkv_cluster_set(cl, key, (size_t)len, key,
					      (size_t)len, 0, 0, NULL),
			     0, "%s", rhkv_cluster_errstr(cl));
	}
	cr_assert(used[0] && used[1]);
	for (int i = 0; i < 100; i++) {
		int len = snprintf(key, sizeof(key), "key%d", i);
		struct rhkv_value v;

		cr_assert_eq(rhkv_cluster_get(cl, key, (size_t)len, &v), 0,
			     "%s", rhkv_cluster_errstr(cl));
		cr_assert_eq(v.len, (size_t)len);
		cr_assert_eq(memcmp(v.data, key, v.len), 0);
		rhkv_value_free(&v);
	}
	rhkv_cluster_free(cl);
}

Test(tls, plain_port_refused)
{
	struct rhkv_options o = tls_opts(ca);
	const char *extra[] = { NULL };
	int port = cl_free_port();
	int rc;

	pids[0] = cl_start_on(port, extra);
	cr_assert_gt(pids[0], 0);
	rc = connect_to("127.0.0.1", port, &o);
	cr_assert(rc == RHKV_ETLS || rc == RHKV_ECONN || rc == RHKV_ETIMEDOUT,
		  "%d %s (%s)", rc, rhkv_strerror(rc), rhkv_errstr(c));
}

/* A peer that accepts (the kernel does) and never answers: the handshake
 * is bounded by the connect timeout. */
Test(tls, handshake_timeout)
{
	struct rhkv_options o = tls_opts(ca);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	long long t0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(lfd >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	o.connect_timeout_ms = 300;
	t0 = h_now_ms();
	ERR(connect_to("127.0.0.1", ntohs(sa.sin_port), &o), RHKV_ETIMEDOUT);
	cr_assert_lt(h_now_ms() - t0, 2000);
}

Test(tls, bad_options)
{
	struct rhkv_options o = tls_opts("/nonexistent/ca.pem");

	/* nothing to check a certificate's name against */
	ERR(connect_to("/tmp/rhkv-no-such.sock", 0, &o), RHKV_EINVAL);
	ERR(connect_to("127.0.0.1", 1, &o), RHKV_ETLS);
	cr_assert(strstr(rhkv_errstr(c), "No such file"), "%s", rhkv_errstr(c));
	o = tls_opts(ca);
	o.tls_cert_file = srv_crt;
	o.tls_key_file = cli_key; /* not the certificate's */
	ERR(connect_to("127.0.0.1", 1, &o), RHKV_ETLS);
}

/* The non-blocking core over TLS: a handle made without connecting does
 * its handshake from the loop's events, then many commands with large
 * values in flight at once, replies in TLS records of any size. */
struct tls_async {
	int n, bad;
	size_t vlen;
};

static void on_tls_reply(rhkv *h, const struct rhkv_result *r, void *arg)
{
	struct tls_async *t = arg;

	(void)h;
	t->bad += r->status != 0 || (r->op == RHKV_OP_GET &&
				     (r->len != t->vlen || r->data[0] != 'q'));
	t->n++;
}

Test(tls, non_blocking_handshake_and_commands)
{
	struct rhkv_options o = tls_opts(ca);
	struct tls_async t = { .vlen = 70000 };
	char *val = malloc(t.vlen);
	char key[16];

	memset(val, 'q', t.vlen);
	start(0, "none");
	o.io_timeout_ms = 20000;
	cr_assert_eq(rhkv_new(&c, "127.0.0.1", tls_ports[0], &o), 0);
	for (int i = 0; i < 200; i++) {
		struct rhkv_cmd set = { .op = RHKV_OP_SET,
					.key = key,
					.val = val,
					.vlen = t.vlen };
		struct rhkv_cmd get = { .op = RHKV_OP_GET, .key = key };

		set.klen = get.klen =
			(size_t)snprintf(key, sizeof(key), "t%d", i % 20);
		OK(rhkv_send(c, &set, on_tls_reply, &t));
		OK(rhkv_send(c, &get, on_tls_reply, &t));
	}
	OK(rhkv_poll_wait(&c, 1));
	cr_assert_eq(t.n, 400);
	cr_assert_eq(t.bad, 0);
	OK(rhkv_ping(c));
	free(val);
}
