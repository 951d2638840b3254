/*
 * memcached's ASCII authentication (-Y FILE of user:password lines).
 *
 * ascii_auth: every case runs against the server under test and, when
 * memcached is on PATH, against memcached 1.6.18 started with the same
 * -Y file (the reference), each byte of each reply compared with the
 * table, which was recorded from memcached: the handshake, every failure
 * reply, the 2 KiB line limit, a data block too large to buffer, a SIGHUP
 * reload (a user added works, a removed one no longer does).
 *
 * ascii_auth_rhkvd (rhkvd only): the same users over SASL PLAIN (the user
 * name checked), the msgpack AUTH [user, password] and the text `auth
 * user password`, the counters, and the files refused at start.
 *
 * Cases send one request and read its reply before the next: memcached
 * answers only the last of the requests it reads at once before auth
 * (proto/TEXT.md), rhkvd each.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "proto/binary.h"

#define UNAUTH	"CLIENT_ERROR unauthenticated\r\n"
#define FORMAT	"CLIENT_ERROR bad authentication token format\r\n"
#define BAD_END "CLIENT_ERROR bad command line termination\r\n"
#define FAILURE "CLIENT_ERROR authentication failure\r\n"
/* (memcached refuses an empty line) */
#define USERS	  "alice:wonder\nbob:builder\r\ncarol:pa:ss\n"
#define MAX_STEPS 4

static struct srv sut, ref; /* ref: memcached, pid 0 when absent */
static char users[] = "/tmp/rhkv-users-XXXXXX";
static bool users_made;

/* Writes the user file (mode 0600) in place. */
static void write_users(const char *content)
{
	int fd;

	if (!users_made) {
		fd = mkstemp(users);
		users_made = true;
	} else {
		fd = open(users, O_WRONLY | O_TRUNC);
	}
	cr_assert_geq(fd, 0, "the user file: errno %d", errno);
	cr_assert_eq(write(fd, content, strlen(content)),
		     (ssize_t)strlen(content));
	close(fd);
}

/* Whether memcached is on PATH. */
static bool have_memcached(void)
{
	return system("command -v memcached >/dev/null 2>&1") == 0;
}

static void start(bool with_ref)
{
	const char *extra[] = { "-Y", users, NULL };

	write_users(USERS);
	cr_assert_eq(srv_start(&sut, extra), 0, "the server did not start");
	if (with_ref && sut.kind != SRV_MEMCACHED && have_memcached())
		cr_assert_eq(srv_start_as(&ref, "memcached", extra), 0,
			     "memcached did not start");
}

static void start_both(void)
{
	start(true);
}

static void start_rhkvd(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("SASL with -Y, the msgpack protocol and `auth` "
			     "are rhkvd's; the server under test is "
			     "memcached");
	start(false);
}

static void stop(void)
{
	if (ref.pid)
		H_EXPECT_EXIT_OK(srv_stop(&ref), "memcached after SIGTERM");
	if (sut.pid)
		H_EXPECT_EXIT_OK(srv_stop(&sut), "the server after SIGTERM");
	if (users_made)
		unlink(users);
}

TestSuite(ascii_auth, .init = start_both, .fini = stop, .timeout = 120);
TestSuite(ascii_auth_rhkvd, .init = start_rhkvd, .fini = stop, .timeout = 60);

/* The servers a case runs against: the one under test, memcached. */
static const struct srv *server(int i)
{
	if (i == 0)
		return &sut;
	return i == 1 && ref.pid ? &ref : NULL;
}

static const char *name_of(const struct srv *s)
{
	return s->kind == SRV_MEMCACHED ? "memcached" : "rhkvd";
}

/* Reads the exact bytes exp from c, failing with the case's name. */
static void expect(const struct srv *s, struct hconn *c, const char *what,
		   const char *exp, size_t n)
{
	char m[H_MSG_CAP];

	cr_assert(hc_expect(c, exp, n, H_TIMEOUT_MS, m, sizeof(m)),
		  "%s, %s: %s", name_of(s), what, m);
}

/* Whether c is authenticated now, by a meta no-op: MN, or memcached's
 * refusal. Nothing else may be pending. */
static void probe(const struct srv *s, struct hconn *c, const char *what,
		  bool authed)
{
	cr_assert_eq(hc_send(c, "mn\r\n", 4), 0);
	if (authed)
		expect(s, c, what, "MN\r\n", 4);
	else
		expect(s, c, what, UNAUTH, sizeof(UNAUTH) - 1);
}

struct step {
	const char *send;
	size_t n;
	const char *reply; /* NULL: the connection closes */
	size_t len;
};

struct auth_case {
	const char *name;
	struct step step[MAX_STEPS];
	bool authed; /* after the steps */
};

#define STEP(req, rep)                                     \
	{                                                  \
		req, sizeof(req) - 1, rep, sizeof(rep) - 1 \
	}
#define SENT(req)                           \
	{                                   \
		req, sizeof(req) - 1, "", 0 \
	} /* no reply yet */

static const struct auth_case cases[] = {
	{ "a get", { STEP("get foo\r\n", UNAUTH) }, false },
	{ "quit stays open", { STEP("quit\r\n", UNAUTH) }, false },
	{ "an empty line", { STEP("\r\n", UNAUTH) }, false },
	{ "a meta set", { STEP("ms k 2\r\n", UNAUTH) }, false },
	{ "rhkv's auth", { STEP("auth alice wonder\r\n", UNAUTH) }, false },
	{ "add is not set", { STEP("add a 0 0 12\r\n", UNAUTH) }, false },
	{ "SET is not set", { STEP("SET a 0 0 12\r\n", UNAUTH) }, false },
	{ "four tokens", { STEP("set a 0 0\r\n", UNAUTH) }, false },
	{ "bytes not a number", { STEP("set a 0 0 x\r\n", UNAUTH) }, false },
	{ "negative bytes", { STEP("set a 0 0 -1\r\n", UNAUTH) }, false },
	{ "bytes past 2^64",
	  { STEP("set a 0 0 18446744073709551616\r\n", UNAUTH) },
	  false },
	{ "a NUL in the line", { STEP("set\0 a 0 0 12\r\n", UNAUTH) }, false },
	{ "the harness's set", /* memcached's t/ascii-auth.t */
	  { STEP("set foo 0 0 2\r\nhi\r\n", FORMAT) },
	  false },
	{ "one token", { STEP("set a 0 0 5\r\nalice\r\n", FORMAT) }, false },
	{ "empty data", { STEP("set a 0 0 0\r\n\r\n", FORMAT) }, false },
	{ "-0 bytes", { STEP("set a 0 0 -0\r\n\r\n", FORMAT) }, false },
	{ "a NUL ends the data",
	  { STEP("set a 0 0 12\r\nalice\0wonder\r\n", FORMAT) },
	  false },
	{ "user:password as one token",
	  { STEP("set a 0 0 12\r\nalice:wonder\r\n", FORMAT) },
	  false },
	{ "data not ending in \\r\\n",
	  { STEP("set a 0 0 3\r\nabcde", BAD_END) },
	  false },
	{ "bytes + 2 wraps to 0",
	  { STEP("set a 0 0 4294967294\r\n", BAD_END) },
	  false },
	{ "bytes + 2 wraps to 1",
	  { STEP("set a 0 0 4294967295\r\nx", BAD_END) },
	  false },
	{ "a wrong password",
	  { STEP("set a 0 0 12\r\nalice wondeR\r\n", FAILURE) },
	  false },
	{ "another user's password",
	  { STEP("set a 0 0 10\r\nbob wonder\r\n", FAILURE) },
	  false },
	{ "an unknown user",
	  { STEP("set a 0 0 12\r\nzed wonderxx\r\n", FAILURE) },
	  false },
	{ "the data's \\r\\n in the password",
	  { STEP("set a 0 0 14\r\nalice wonder\r\n\r\n", FAILURE) },
	  false },
	{ "a failure, then the right one",
	  { STEP("set a 0 0 12\r\nalice wondeR\r\n", FAILURE),
	    STEP("set a 0 0 12\r\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "alice",
	  { STEP("set a 0 0 12\r\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "bob, whose line ends in \\r\\n",
	  { STEP("set x 1 2 11\r\nbob builder\r\n", "STORED\r\n") },
	  true },
	{ "a ':' in the password",
	  { STEP("set a 0 0 11\r\ncarol pa:ss\r\n", "STORED\r\n") },
	  true },
	{ "more tokens than two",
	  { STEP("set a 0 0 18\r\nalice wonder extra\r\n", "STORED\r\n") },
	  true },
	{ "runs of spaces",
	  { STEP("  set  a 0 0  15 \r\n alice   wonder\r\n", "STORED\r\n") },
	  true },
	{ "noreply is answered",
	  { STEP("set a 0 0 12 noreply\r\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "bytes cut to 32 bits",
	  { STEP("set a 0 0 4294967308\r\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "bytes with a sign and a tab",
	  { STEP("set a 0 0 +12\t\r\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "a line ending in \\n alone",
	  { STEP("set a 0 0 12\nalice wonder\r\n", "STORED\r\n") },
	  true },
	{ "in pieces",
	  { SENT("set a 0 0 12\r"), SENT("\nalice won"),
	    STEP("der\r\n", "STORED\r\n") },
	  true },
	{ "then commands, in the same write",
	  { STEP("set a 0 0 12\r\nalice wonder\r\nset k 0 0 2\r\nhi\r\n"
		 "get k\r\n",
		 "STORED\r\nSTORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n") },
	  true },
};

static void run_case(const struct srv *s, const struct auth_case *k)
{
	struct hconn *c = hc_open(s->port);

	cr_assert_not_null(c, "%s: connect: errno %d", name_of(s), errno);
	for (int i = 0; i < MAX_STEPS && k->step[i].send; i++) {
		const struct step *st = &k->step[i];

		cr_assert_eq(hc_send(c, st->send, st->n), 0);
		if (st->reply)
			expect(s, c, k->name, st->reply, st->len);
		else
			cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
				     "%s, %s: still open", name_of(s), k->name);
	}
	probe(s, c, k->name, k->authed);
	hc_close(&c);
}

Test(ascii_auth, handshake_and_every_failure)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int j = 0; server(j); j++)
			run_case(server(j), &cases[i]);
}

/* 2048 bytes without a "\n" are held (the line is refused once it ends);
 * one more closes the connection without a reply. */
Test(ascii_auth, a_line_of_2_kib_without_newline)
{
	static char junk[2049];

	memset(junk, 'x', sizeof(junk));
	for (int j = 0; server(j); j++) {
		const struct srv *s = server(j);
		struct hconn *c = hc_open(s->port);

		cr_assert_eq(hc_send(c, junk, 2048), 0);
		cr_assert_eq(hc_send(c, "\r\n", 2), 0);
		expect(s, c, "2048 bytes, then the end", UNAUTH,
		       sizeof(UNAUTH) - 1);
		cr_assert_eq(hc_send(c, junk, sizeof(junk)), 0);
		cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
			     "%s: 2049 bytes and open", name_of(s));
		hc_close(&c);
	}
}

/* A data block larger than the 16 KiB input buffer: the connection closes
 * once the buffer is full, without a reply (memcached: a reset). */
Test(ascii_auth, data_larger_than_the_buffer)
{
	static char data[20000];

	memset(data, 'y', sizeof(data));
	for (int j = 0; server(j); j++) {
		const struct srv *s = server(j);
		struct hconn *c = hc_open(s->port);

		cr_assert_eq(hc_send(c, "set a 0 0 100000\r\n", 18), 0);
		/* (the server may close while this is still sending) */
		hc_send(c, data, sizeof(data));
		cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
			     "%s: 20000 bytes buffered", name_of(s));
		hc_close(&c);
	}
}

/* Whether user pass authenticates on a new connection to s. */
static bool handshake(const struct srv *s, const char *user, const char *pass)
{
	struct hconn *c = hc_open(s->port);
	char line[128];
	long n;

	cr_assert_not_null(c);
	cr_assert_eq(hc_sendf(c, "set a 0 0 %zu\r\n%s %s\r\n",
			      strlen(user) + 1 + strlen(pass), user, pass),
		     0);
	n = hc_line(c, line, sizeof(line), H_TIMEOUT_MS);
	hc_close(&c);
	cr_assert_gt(n, 0, "%s: no reply", name_of(s));
	if (!strcmp(line, "STORED\r\n"))
		return true;
	cr_assert_str_eq(line, FAILURE);
	return false;
}

/* Waits until user pass authenticates on s (the reload is asynchronous:
 * memcached applies it on its next clock tick). */
static void wait_for_user(const struct srv *s, const char *user,
			  const char *pass)
{
	long long deadline = h_now_ms() + H_TIMEOUT_MS;

	while (!handshake(s, user, pass)) {
		cr_assert_lt(h_now_ms(), deadline,
			     "%s: %s never authenticated after SIGHUP",
			     name_of(s), user);
		h_sleep_ms(20);
	}
}

Test(ascii_auth, sighup_reloads_the_file)
{
	for (int j = 0; server(j); j++)
		cr_assert(handshake(server(j), "alice", "wonder"));
	write_users("bob:builder\ndave:diver\n");
	for (int j = 0; server(j); j++) {
		cr_assert(!handshake(server(j), "dave", "diver"));
		cr_assert_eq(kill(server(j)->pid, SIGHUP), 0);
	}
	for (int j = 0; server(j); j++) {
		wait_for_user(server(j), "dave", "diver");
		cr_assert(!handshake(server(j), "alice", "wonder"),
			  "%s: alice still authenticates", name_of(server(j)));
		cr_assert(handshake(server(j), "bob", "builder"));
	}
}

/* `stats settings` names the file, as memcached does. */
Test(ascii_auth, settings_name_the_file)
{
	char want[128];

	snprintf(want, sizeof(want), "STAT auth_enabled_ascii %s\r\n", users);
	for (int j = 0; server(j); j++) {
		const struct srv *s = server(j);
		struct hconn *c = hc_open(s->port);
		char line[256];
		bool seen = false;

		SEND(c, "set a 0 0 12\r\nalice wonder\r\n");
		expect(s, c, "auth", "STORED\r\n", 8);
		cr_assert_eq(hc_send(c, "stats settings\r\n", 16), 0);
		while (hc_line(c, line, sizeof(line), H_TIMEOUT_MS) > 0 &&
		       strcmp(line, "END\r\n"))
			seen |= !strcmp(line, want);
		cr_assert(seen, "%s: no line %s", name_of(s), want);
		hc_close(&c);
	}
}

/* ---- rhkvd only: the same users over its other ways in ---- */

/* A SASL_AUTH PLAIN request (memcached's binary protocol) with msg. */
static void sasl_plain(struct hconn *c, const char *msg, size_t n,
		       unsigned char opaque)
{
	unsigned char h[24] = { 0x80, 0x21, 0, 5 };
	size_t body = 5 + n;

	h[8] = (unsigned char)(body >> 24);
	h[9] = (unsigned char)(body >> 16);
	h[10] = (unsigned char)(body >> 8);
	h[11] = (unsigned char)body;
	h[15] = opaque;
	cr_assert_eq(hc_send(c, h, sizeof(h)), 0);
	cr_assert_eq(hc_send(c, "PLAIN", 5), 0);
	cr_assert_eq(hc_send(c, msg, n), 0);
}

/* The status of the next binary response, which must carry opaque. */
static unsigned int sasl_status(struct hconn *c, unsigned char opaque)
{
	unsigned char h[24];
	char body[256];
	size_t n;

	cr_assert_eq(hc_read(c, h, sizeof(h), H_TIMEOUT_MS), sizeof(h));
	cr_assert_eq(h[0], 0x81);
	cr_assert_eq(h[15], opaque);
	n = (size_t)h[8] << 24 | (size_t)h[9] << 16 | (size_t)h[10] << 8 |
	    h[11];
	cr_assert_leq(n, sizeof(body));
	cr_assert_eq(hc_read(c, body, n, H_TIMEOUT_MS), n);
	return (unsigned int)h[6] << 8 | h[7];
}

Test(ascii_auth_rhkvd, sasl_plain_checks_the_user_name)
{
	struct hconn *c = hc_open(sut.port);

	sasl_plain(c, "\0bob\0wonder", 11, 1); /* alice's password */
	cr_assert_eq(sasl_status(c, 1), 0x20);
	sasl_plain(c, "\0\0wonder", 8, 2); /* no user name */
	cr_assert_eq(sasl_status(c, 2), 0x20);
	sasl_plain(c, "\0alice\0wondeR", 13, 3);
	cr_assert_eq(sasl_status(c, 3), 0x20);
	sasl_plain(c, "bob\0alice\0wonder", 16, 4); /* authzid unused */
	cr_assert_eq(sasl_status(c, 4), 0);
	hc_close(&c);
	c = hc_open(sut.port);
	sasl_plain(c, "\0carol\0pa:ss", 12, 5);
	cr_assert_eq(sasl_status(c, 5), 0);
	hc_close(&c);
}

/* An AUTH frame of the msgpack protocol: [password] or [user, password]. */
static void auth_frame(struct hconn *c, uint64_t id, const char *user,
		       const char *pass)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t f;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	f = proto_bin_begin(&sb);
	proto_bin_pack_request_head(&pk, PROTO_OP_AUTH, id, user ? 2 : 1);
	if (user)
		msgpack_pack_str_with_body(&pk, user, strlen(user));
	msgpack_pack_str_with_body(&pk, pass, strlen(pass));
	proto_bin_end(&sb, f);
	cr_assert_eq(hc_send(c, sb.data, sb.size), 0);
	msgpack_sbuffer_destroy(&sb);
}

/* The status of the next msgpack reply, which must carry id. */
static uint32_t frame_status(struct hconn *c, uint64_t id)
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

Test(ascii_auth_rhkvd, msgpack_auth_takes_a_user)
{
	struct hconn *c = hc_open(sut.port);

	auth_frame(c, 1, NULL, "wonder"); /* a user list needs the name */
	cr_assert_eq(frame_status(c, 1), PROTO_ST_AUTH_REQUIRED);
	auth_frame(c, 2, "bob", "wonder");
	cr_assert_eq(frame_status(c, 2), PROTO_ST_AUTH_REQUIRED);
	auth_frame(c, 3, "alice", "wonder");
	cr_assert_eq(frame_status(c, 3), PROTO_ST_OK);
	hc_close(&c);
}

/* rhkv's own `auth` takes a user once a connection is in (before, only
 * memcached's handshake is read); a failure leaves it in. */
Test(ascii_auth_rhkvd, text_auth_with_a_user_after_the_handshake)
{
	struct hconn *c = hc_open(sut.port);
	struct hstats st;
	unsigned long long cmds, errors;

	RT(c, "set a 0 0 10\r\nbob wonder\r\n", FAILURE);
	RT(c, "set a 0 0 11\r\nbob builder\r\n", "STORED\r\n");
	RT(c, "auth alice wonder\r\n", "OK\r\n");
	RT(c, "auth alice builder\r\n", "CLIENT_ERROR auth failed\r\n");
	RT(c, "auth wonder\r\n", "CLIENT_ERROR auth failed\r\n");
	RT(c, "mn\r\n", "MN\r\n");
	/* Counted as memcached counts its handshakes: each one, and each
	 * failure. */
	cr_assert_eq(hc_stats(c, "", &st, H_TIMEOUT_MS), 0);
	cr_assert_eq(hstats_u64(&st, "auth_cmds", &cmds), 0);
	cr_assert_eq(hstats_u64(&st, "auth_errors", &errors), 0);
	cr_assert_eq(cmds, 5);
	cr_assert_eq(errors, 3);
	hc_close(&c);
}

/* Runs rhkvd with args (it must stop before listening); its exit status,
 * its stderr in err. */
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
		const char *argv[16] = { path, "-p", "1" };
		int i = 3;

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

/* A file others may read is refused at start, saying so; so is a line
 * that is not user:password (its number said, not its contents). */
Test(ascii_auth_rhkvd, files_refused_at_start)
{
	const char *args[] = { "-Y", users, NULL };
	const char *long_args[] = { "--auth-file=/nonexistent/users", NULL };
	char err[2048];

	cr_assert_eq(chmod(users, 0644), 0);
	cr_assert_eq(run_rhkvd(args, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "may be read or written by other "
				       "users (mode 0644)"),
			   "%s", err);
	cr_assert_not_null(strstr(err, users), "%s", err);
	cr_assert_eq(chmod(users, 0640), 0); /* a group may read it */
	write_users("alice:wonder\nmallory-s3cret\n");
	cr_assert_eq(run_rhkvd(args, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "line 2 is not user:password"), "%s",
			   err);
	cr_assert_null(strstr(err, "s3cret"), "%s", err);
	cr_assert_eq(run_rhkvd(long_args, err, sizeof(err)), 64, "%s", err);
	cr_assert_not_null(strstr(err, "cannot read the auth file "
				       "'/nonexistent/users'"),
			   "%s", err);
}
