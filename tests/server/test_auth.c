/*
 * Protected mode and passwords. rhkvd refuses to start on a non-loopback
 * address without a password (unless --no-protected-mode); with one
 * (--auth-file or RHKV_AUTH_FILE), every command but auth and quit is
 * refused until `auth <password>` (text) or AUTH (binary) succeeds, and
 * before that requests are held to 4 KiB: bigger values are discarded as
 * they arrive, and longer lines and bigger frames close the connection.
 * rhkvd only; integration-auth-tls runs it again over TLS.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "proto/binary.h"

static struct srv srv;
static struct hconn *c;
static char pwfile[] = "/tmp/rhkv-auth-XXXXXX";

static void teardown(void)
{
	int status;

	unlink(pwfile);
	if (!srv.pid)
		return;
	hc_close(&c);
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

TestSuite(auth, .fini = teardown, .timeout = 60);

static void skip_on_memcached(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("protected mode and auth are rhkvd's; the server "
			     "under test is memcached");
}

/* Writes the password file; returns its path. */
static const char *password_file(const char *content)
{
	int fd = mkstemp(pwfile);

	cr_assert_geq(fd, 0, "mkstemp: errno %d", errno);
	cr_assert_eq(write(fd, content, strlen(content)),
		     (ssize_t)strlen(content));
	close(fd);
	return pwfile;
}

static void start_with_password(void)
{
	const char *extra[] = { "--auth-file", password_file("s3cret!\n"),
				NULL };

	skip_on_memcached();
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
}

/* Runs the rhkvd under test with args (no port of its own: it must not
 * get as far as listening); returns its exit status, its stderr in err. */
static int run_rhkvd(const char *const *args, char *err, size_t cap)
{
	const char *path = getenv(H_ENV_SERVER);
	int pipefd[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (!path || !*path)
		path = getenv(H_ENV_SERVER_DEFAULT);
	cr_assert_not_null(path);
	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *argv[16] = { path };
		int i = 1;

		dup2(pipefd[1], 2);
		close(pipefd[0]);
		for (; *args && i < 15; args++)
			argv[i++] = *args;
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	while (got + 1 < cap &&
	       (n = read(pipefd[0], err + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = '\0';
	close(pipefd[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(auth, protected_mode_refuses_a_public_address_without_password)
{
	const char *args[] = { "-l", "0.0.0.0", "-p", "1", NULL };
	char err[2048];

	skip_on_memcached();
	cr_assert_eq(run_rhkvd(args, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "--auth-file"), "%s", err);
	cr_assert_not_null(strstr(err, "RHKV_AUTH_FILE"), "%s", err);
	cr_assert_not_null(strstr(err, "--no-protected-mode"), "%s", err);
}

Test(auth, protected_mode_opt_out_and_password_pass_the_check)
{
	/* TEST-NET-1 is on no interface: past the check, binding fails
	 * (exit 71), which shows that protected mode let it through. Nothing
	 * ever listens beyond loopback. */
	const char *optout[] = { "-l", "192.0.2.1",	      "-p",
				 "1",  "--no-protected-mode", NULL };
	const char *withpw[] = { "-l", "192.0.2.1",   "-p",
				 "1",  "--auth-file", password_file("pw\n"),
				 NULL };
	const char *missing[] = { "--auth-file", "/nonexistent/pw", NULL };
	char err[2048];

	skip_on_memcached();
	cr_assert_neq(run_rhkvd(optout, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "cannot listen"), "%s", err);
	cr_assert_neq(run_rhkvd(withpw, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "cannot listen"), "%s", err);
	cr_assert_eq(run_rhkvd(missing, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "/nonexistent/pw"), "%s", err);
}

Test(auth, text_commands_wait_for_auth)
{
	start_with_password();
	RT(c, "get a\r\n", "CLIENT_ERROR authentication required\r\n");
	/* The value is consumed with its command, not run as commands. */
	RT(c, "set a 0 0 5\r\nhello\r\n",
	   "CLIENT_ERROR authentication required\r\n");
	RT(c, "version\r\n", "CLIENT_ERROR authentication required\r\n");
	RT(c, "auth wrong\r\n", "CLIENT_ERROR auth failed\r\n");
	RT(c, "auth s3cret\r\n", "CLIENT_ERROR auth failed\r\n");
	RT(c, "auth s3cret!!\r\n", "CLIENT_ERROR auth failed\r\n");
	RT(c, "auth s3cret!\r\n", "OK\r\n");
	RT(c, "set a 0 0 5\r\nhello\r\n", "STORED\r\n");
	RT(c, "get a\r\n", "VALUE a 0 5\r\nhello\r\nEND\r\n");
	SEND(c, "stats\r\n");
	{
		char line[256];
		bool seen = false;

		while (hc_line(c, line, sizeof(line), H_TIMEOUT_MS) > 0 &&
		       strcmp(line, "END\r\n"))
			seen |= !strcmp(line, "STAT auth_errors 3\r\n");
		cr_assert(seen, "auth_errors is not 3");
	}
	/* Each connection authenticates for itself. */
	hc_close(&c);
	c = hc_open(srv.port);
	RT(c, "get a\r\n", "CLIENT_ERROR authentication required\r\n");
}

Test(auth, before_auth_requests_are_held_to_4k)
{
	static char big[100000];

	start_with_password();
	/* A value over 4 KiB before auth: refused and discarded, and no
	 * key is touched (a too large set would otherwise delete it). */
	memset(big, 'x', sizeof(big));
	cr_assert_eq(hc_sendf(c, "set k 0 0 %zu\r\n", sizeof(big)), 0);
	SEND_N(c, big, sizeof(big));
	SEND(c, "\r\n");
	EXPECT(c, "CLIENT_ERROR authentication required\r\n");
	RT(c, "auth s3cret!\r\n", "OK\r\n");
	RT(c, "get k\r\n", "END\r\n");
	/* After auth the normal limits apply. */
	cr_assert_eq(hc_sendf(c, "set k 0 0 %zu\r\n", sizeof(big)), 0);
	SEND_N(c, big, sizeof(big));
	RT(c, "\r\n", "STORED\r\n");
	/* A long get line before auth: the input buffer may not grow. */
	hc_close(&c);
	c = hc_open(srv.port);
	/* (the server may close while this is still sending: a reset) */
	hc_send(c, "get ", 4);
	for (int i = 0; i < 2000; i++)
		if (hc_send(c, "key0123456 ", 11))
			break;
	EXPECT(c, "CLIENT_ERROR line too long\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
		     "a 22 KB line before auth was buffered");
}

/*
 * A get line longer than the initial 16 KiB input buffer, before auth and
 * with no newline: the buffer must not grow (nor shrink under what it
 * holds), the line is refused with memcached's words and the connection
 * closes. Over TLS too (integration-auth-tls): TLS reads into whatever
 * room the buffer claims to have. The server stays up for a client that
 * authenticates.
 */
Test(auth, a_long_line_before_auth_is_refused_and_closes)
{
	static char line[17004];

	start_with_password();
	memcpy(line, "get ", 4);
	memset(line + 4, 'k', sizeof(line) - 4);
	/* (the server may close while this is still sending: a reset) */
	if (!hc_send(c, line, sizeof(line)))
		for (int i = 0; i < 64; i++)
			if (hc_send(c, line + 4, 1024))
				break;
	EXPECT(c, "CLIENT_ERROR line too long\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
	hc_close(&c);
	c = hc_open(srv.port);
	cr_assert_not_null(c, "connect: errno %d", errno);
	RT(c, "auth s3cret!\r\n", "OK\r\n");
	RT(c, "set a 0 0 5\r\nhello\r\n", "STORED\r\n");
	RT(c, "get a\r\n", "VALUE a 0 5\r\nhello\r\nEND\r\n");
}

/* [op, id, args] frames, packed with msgpack-c. */
static size_t frame(char *out, size_t cap, uint32_t op, uint64_t id,
		    const char *arg)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t f, n;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	f = proto_bin_begin(&sb);
	proto_bin_pack_request_head(&pk, op, id, arg ? 1 : 0);
	if (arg)
		msgpack_pack_str_with_body(&pk, arg, strlen(arg));
	proto_bin_end(&sb, f);
	n = sb.size < cap ? sb.size : cap;
	memcpy(out, sb.data, n);
	msgpack_sbuffer_destroy(&sb);
	return n;
}

/* The status of the next reply, which must carry id. */
static uint32_t status_of_reply(uint64_t id)
{
	struct proto_bin_decoder d;
	struct proto_bin_reply r;
	unsigned char hdr[4];
	char body[512];
	uint32_t len;

	cr_assert_eq(hc_read(c, hdr, 4, H_TIMEOUT_MS), 4, "no reply");
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | hdr[3];
	cr_assert_leq(len, sizeof(body));
	cr_assert_eq(hc_read(c, body, len, H_TIMEOUT_MS), len);
	proto_bin_decoder_init(&d);
	cr_assert_eq(proto_bin_decode_reply(&d, body, len, &r), PROTO_BIN_OK);
	proto_bin_decoder_destroy(&d);
	cr_assert_eq(r.id, id);
	return r.status;
}

Test(auth, binary_requests_wait_for_auth)
{
	char f[256];
	size_t n;

	start_with_password();
	n = frame(f, sizeof(f), PROTO_OP_GET, 1, "a");
	SEND_N(c, f, n);
	cr_assert_eq(status_of_reply(1), PROTO_ST_AUTH_REQUIRED);
	n = frame(f, sizeof(f), PROTO_OP_AUTH, 2, "nope");
	SEND_N(c, f, n);
	cr_assert_eq(status_of_reply(2), PROTO_ST_AUTH_REQUIRED);
	n = frame(f, sizeof(f), PROTO_OP_AUTH, 3, "s3cret!");
	SEND_N(c, f, n);
	cr_assert_eq(status_of_reply(3), PROTO_ST_OK);
	n = frame(f, sizeof(f), PROTO_OP_GET, 4, "a");
	SEND_N(c, f, n);
	cr_assert_eq(status_of_reply(4), PROTO_ST_NOT_FOUND);
	/* Before auth a frame over 4 KiB closes the connection. */
	hc_close(&c);
	c = hc_open(srv.port);
	SEND_N(c, "\0\0\x20\0", 4); /* 8 KiB claimed */
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1, "still open");
}
