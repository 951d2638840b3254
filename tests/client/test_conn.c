/*
 * Connections: the I/O timeout against a peer that never answers, a lost
 * server (RHKV_ECONN), the lazy reconnect once a server is back on the
 * same port, and connection failures.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

static struct srv srv;
static pid_t pid;
static rhkv *c;
static int lfd = -1;

static void teardown(void)
{
	rhkv_close(c);
	c = NULL;
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
	if (pid > 0)
		H_EXPECT_EXIT_OK(cl_stop(pid), "rhkvd after SIGTERM");
	pid = 0;
	if (lfd >= 0)
		close(lfd);
	lfd = -1;
}

TestSuite(conn, .fini = teardown, .timeout = 60);

/* A listening socket that accepts (the kernel does) and never answers. */
static int silent_listener(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 16), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

Test(conn, io_timeout)
{
	int port = silent_listener();
	struct rhkv_value v;
	long long t0, dt;
	int rc;

	c = cl_connect(port, 300);
	t0 = h_now_ms();
	rc = rhkv_get(c, "k", 1, &v);
	dt = h_now_ms() - t0;
	cr_assert_eq(rc, RHKV_ETIMEDOUT, "%s (%s)", rhkv_strerror(rc),
		     rhkv_errstr(c));
	cr_assert_geq(dt, 300, "timed out after %lld ms", dt);
	cr_assert_leq(dt, 1300, "timed out after %lld ms", dt);
	/* the next call connects again and times out again */
	t0 = h_now_ms();
	rc = rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL);
	dt = h_now_ms() - t0;
	cr_assert_eq(rc, RHKV_ETIMEDOUT);
	cr_assert_geq(dt, 300, "timed out after %lld ms", dt);
	cr_assert_leq(dt, 1300, "timed out after %lld ms", dt);
}

Test(conn, lost_server)
{
	struct rhkv_value v;
	int rc;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	c = cl_connect(srv.port, 2000);
	cr_assert_eq(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL), 0);
	H_EXPECT_EXIT_OK(srv_stop(&srv), "rhkvd after SIGTERM");
	rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_ECONN, "%s (%s)", rhkv_strerror(rc),
		     rhkv_errstr(c));
	cr_assert_str_neq(rhkv_errstr(c), "");
	/* nobody listens: connecting again fails the same way */
	rc = rhkv_ping(c);
	cr_assert_eq(rc, RHKV_ECONN, "%s (%s)", rhkv_strerror(rc),
		     rhkv_errstr(c));
}

Test(conn, reconnects_after_restart)
{
	int port = cl_free_port();
	struct rhkv_value v;
	int rc;

	pid = cl_start_on(port, NULL);
	cr_assert_gt(pid, 0, "rhkvd did not start on port %d", port);
	c = cl_connect(port, 2000);
	cr_assert_eq(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL), 0);
	H_EXPECT_EXIT_OK(cl_stop(pid), "rhkvd after SIGTERM");
	pid = 0;
	rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_ECONN, "%s (%s)", rhkv_strerror(rc),
		     rhkv_errstr(c));
	pid = cl_start_on(port, NULL);
	cr_assert_gt(pid, 0, "rhkvd did not start again on port %d", port);
	rc = rhkv_set(c, "k", 1, "again", 5, 0, 0, NULL);
	cr_assert_eq(rc, 0, "%s (%s)", rhkv_strerror(rc), rhkv_errstr(c));
	cr_assert_eq(rhkv_get(c, "k", 1, &v), 0);
	cr_assert_str_eq(v.data, "again");
	rhkv_value_free(&v);
}

Test(conn, connect_failures)
{
	int port = cl_free_port();
	struct rhkv_options o;
	int rc;

	rc = rhkv_connect(&c, "127.0.0.1", port, NULL);
	cr_assert_eq(rc, RHKV_ECONN);
	cr_assert_not_null(c);
	cr_assert_str_neq(rhkv_errstr(c), "");
	rhkv_close(c);
	c = NULL;
	rc = rhkv_connect(&c, "no-such-host.invalid", 1, NULL);
	cr_assert_eq(rc, RHKV_ECONN);
	rhkv_close(c);
	c = NULL;
	rc = rhkv_connect(&c, "/nonexistent/rhkv.sock", 0, NULL);
	cr_assert_eq(rc, RHKV_ECONN);
	rhkv_close(c);
	c = NULL;
	rhkv_options_init(&o);
	o.io_timeout_ms = -1;
	cr_assert_eq(rhkv_connect(&c, "127.0.0.1", 1, &o), RHKV_EINVAL);
	cr_assert_eq(rhkv_ping(c), RHKV_EINVAL);
	cr_assert_str_eq(rhkv_strerror(RHKV_ENOTFOUND), "not found");
}

/* A server with a password: the option authenticates each (re)connection;
 * without it, or with a wrong one, calls fail with RHKV_EAUTH. */
Test(conn, password)
{
	char path[] = "/tmp/rhkv-pw-XXXXXX";
	int fd = mkstemp(path);
	const char *extra[] = { "--auth-file", path, NULL };
	struct rhkv_options o;
	struct rhkv_value v;
	int rc;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "letmein\n", 8), 8);
	close(fd);
	cr_assert_eq(srv_start(&srv, extra), 0);
	unlink(path);

	rhkv_options_init(&o);
	o.password = "letmein";
	cr_assert_eq(rhkv_connect(&c, "127.0.0.1", srv.port, &o), 0, "%s",
		     rhkv_errstr(c));
	cr_assert_eq(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL), 0, "%s",
		     rhkv_errstr(c));
	cr_assert_eq(rhkv_get(c, "k", 1, &v), 0);
	rhkv_value_free(&v);
	rhkv_close(c);
	c = NULL;

	rhkv_options_init(&o);
	rc = rhkv_connect(&c, "127.0.0.1", srv.port, &o);
	if (rc == 0)
		rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_EAUTH, "no password: %s", rhkv_strerror(rc));
	rhkv_close(c);
	c = NULL;

	o.password = "wrong";
	rc = rhkv_connect(&c, "127.0.0.1", srv.port, &o);
	if (rc == 0)
		rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_EAUTH, "wrong password: %s", rhkv_strerror(rc));
}

/* A server with a user list (-Y, user:password lines): the user option
 * goes with the password in AUTH, and both must match (the option is
 * copied: it outlives the caller's string). */
Test(conn, user_and_password)
{
	char path[] = "/tmp/rhkv-users-XXXXXX";
	int fd = mkstemp(path);
	const char *extra[] = { "-Y", path, NULL };
	struct rhkv_options o;
	struct rhkv_value v;
	char user[] = "alice";
	int rc;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "bob:builder\nalice:wonder\n", 25), 25);
	close(fd);
	cr_assert_eq(srv_start(&srv, extra), 0);
	unlink(path);

	rhkv_options_init(&o);
	cr_assert_null(o.user);
	o.user = user;
	o.password = "wonder";
	cr_assert_eq(rhkv_connect(&c, "127.0.0.1", srv.port, &o), 0, "%s",
		     rhkv_errstr(c));
	memcpy(user, "zzzzz", 5);
	cr_assert_eq(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL), 0, "%s",
		     rhkv_errstr(c));
	cr_assert_eq(rhkv_get(c, "k", 1, &v), 0);
	rhkv_value_free(&v);
	rhkv_close(c);
	c = NULL;

	o.user = "bob"; /* alice's password */
	rc = rhkv_connect(&c, "127.0.0.1", srv.port, &o);
	if (rc == 0)
		rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_EAUTH, "bob: %s", rhkv_strerror(rc));
	rhkv_close(c);
	c = NULL;

	o.user = NULL; /* the password alone names no user */
	rc = rhkv_connect(&c, "127.0.0.1", srv.port, &o);
	if (rc == 0)
		rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_EAUTH, "no user: %s", rhkv_strerror(rc));
}

/* TCP keepalive is on by default with the documented timings, and off
 * when asked. */
Test(conn, keepalive)
{
	struct rhkv_options o;
	int on = 0, idle = 0, intvl = 0, cnt = 0;
	socklen_t len = sizeof(int);

	cr_assert_eq(srv_start(&srv, NULL), 0);
	c = cl_connect(srv.port, 1000);
	cr_assert_eq(
		getsockopt(rhkv_fd(c), SOL_SOCKET, SO_KEEPALIVE, &on, &len), 0);
	getsockopt(rhkv_fd(c), IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len);
	getsockopt(rhkv_fd(c), IPPROTO_TCP, TCP_KEEPINTVL, &intvl, &len);
	getsockopt(rhkv_fd(c), IPPROTO_TCP, TCP_KEEPCNT, &cnt, &len);
	cr_assert_eq(on, 1);
	cr_assert_eq(idle, 15);
	cr_assert_eq(intvl, 5);
	cr_assert_eq(cnt, 3);
	rhkv_close(c);
	rhkv_options_init(&o);
	o.keepalive_s = 0;
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	getsockopt(rhkv_fd(c), SOL_SOCKET, SO_KEEPALIVE, &on, &len);
	cr_assert_eq(on, 0);
}

/* A key prefix puts the handle's keys in a namespace of their own: the
 * same names through another prefix, or none, are other keys; the prefix
 * counts towards the key length limit. */
Test(conn, key_prefix)
{
	struct rhkv_options o;
	struct rhkv_value v;
	char key[251];
	rhkv *plain;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	rhkv_options_init(&o);
	o.key_prefix = "app1:";
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	OK(rhkv_set(c, "k", 1, "one", 3, 0, 0, NULL));
	plain = cl_connect(srv.port, 1000);
	cr_assert_eq(rhkv_get(plain, "k", 1, &v), RHKV_ENOTFOUND);
	cr_assert_eq(rhkv_get(plain, "app1:k", 6, &v), 0);
	cr_assert_str_eq(v.data, "one");
	rhkv_value_free(&v);
	OK(rhkv_get(c, "k", 1, &v));
	rhkv_value_free(&v);
	/* mget encodes its keys itself: the prefix goes there too */
	const char *mk[] = { "k", "missing" };
	size_t ml[] = { 1, 7 };
	struct rhkv_value mv[2];
	int ms[2];
	OK(rhkv_mget(c, 2, mk, ml, mv, ms));
	cr_assert_eq(ms[0], 0);
	cr_assert_str_eq(mv[0].data, "one");
	cr_assert_eq(ms[1], RHKV_ENOTFOUND);
	rhkv_value_free(&mv[0]);
	/* pipelines and the non-blocking core go through the same encoder */
	rhkv_pipeline *p = rhkv_pipeline_new(c);
	cr_assert_eq(rhkv_pipeline_incr(p, "n", 1, 1), 0);
	OK(rhkv_set(plain, "app1:n", 6, "41", 2, 0, 0, NULL));
	OK(rhkv_pipeline_exec(p));
	cr_assert_eq(rhkv_pipeline_number(p, 0), 42);
	rhkv_pipeline_free(p);
	memset(key, 'k', sizeof(key));
	ERR(rhkv_set(c, key, 250 - 5, "x", 1, 0, 0, NULL), 0);
	ERR(rhkv_set(c, key, 250 - 4, "x", 1, 0, 0, NULL), RHKV_EBADKEY);
	rhkv_close(plain);
	rhkv_close(c);
	/* a prefix that cannot be part of a key is refused at once */
	o.key_prefix = "";
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	rhkv_close(c);
	memset(key, 'p', 250);
	key[250] = '\0';
	o.key_prefix = key;
	cr_assert_eq(rhkv_connect(&c, "127.0.0.1", srv.port, &o), RHKV_EINVAL);
}

/* errstr tells the last failure, and nothing once a later call worked. */
Test(conn, errstr_follows_the_last_call)
{
	struct rhkv_value v;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	c = cl_connect(srv.port, 1000);
	ERR(rhkv_get(c, "missing", 7, &v), RHKV_ENOTFOUND);
	cr_assert_neq(rhkv_errstr(c)[0], '\0');
	OK(rhkv_set(c, "k", 1, "v", 1, 0, 0, NULL));
	cr_assert_str_eq(rhkv_errstr(c), "");
	OK(rhkv_ping(c));
	cr_assert_str_eq(rhkv_errstr(c), "");
}

/* A scan through a prefixed handle sees its namespace only, keys named
 * without the prefix (glob characters in the prefix are literal). */
Test(conn, key_prefix_scan)
{
	struct rhkv_options o;
	const char *key;
	size_t klen;
	rhkv_scan_iter *it;
	rhkv *plain;
	int n = 0, rc;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	plain = cl_connect(srv.port, 1000);
	OK(rhkv_set(plain, "a*:x", 4, "1", 1, 0, 0, NULL));
	OK(rhkv_set(plain, "ab:y", 4, "1", 1, 0, 0, NULL));
	OK(rhkv_set(plain, "a*:zz", 5, "1", 1, 0, 0, NULL));
	rhkv_options_init(&o);
	o.key_prefix = "a*:";
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	OK(rhkv_scan_open(c, NULL, 100, &it));
	while ((rc = rhkv_scan_next(it, &key, &klen)) == 1) {
		cr_assert(klen == 1 ? memcmp(key, "x", 1) == 0
				    : klen == 2 && memcmp(key, "zz", 2) == 0,
			  "%.*s", (int)klen, key);
		n++;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(n, 2);
	rhkv_scan_end(it);
	OK(rhkv_scan_open(c, "z*", 100, &it));
	cr_assert_eq(rhkv_scan_next(it, &key, &klen), 1);
	cr_assert_eq(klen, 2);
	cr_assert_eq(rhkv_scan_next(it, &key, &klen), 0);
	rhkv_scan_end(it);
	rhkv_close(plain);
}

/* down_ms: after a timeout, calls fail at once instead of each waiting
 * for the hung server; once the time has passed they try again. */
Test(conn, down_ms_fails_fast_after_a_timeout)
{
	struct rhkv_options o;
	struct rhkv_value v;
	long long t0, took;
	int st;

	cr_assert_eq(srv_start(&srv, NULL), 0);
	rhkv_options_init(&o);
	/* A call that waits takes io_timeout_ms; one that fails fast, far
	 * less even on a loaded machine. down_ms is long enough for the
	 * twenty fast failures there. */
	o.io_timeout_ms = 500;
	o.down_ms = 2000;
	OK(rhkv_connect(&c, "127.0.0.1", srv.port, &o));
	cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
	/* stopped for sure (kill returns before every thread has) */
	cr_assert_eq(waitpid(srv.pid, &st, WUNTRACED), srv.pid);
	ERR(rhkv_get(c, "k", 1, &v), RHKV_ETIMEDOUT);
	for (int i = 0; i < 20; i++) {
		t0 = h_now_ms();
		ERR(rhkv_get(c, "k", 1, &v), RHKV_ECONN);
		took = h_now_ms() - t0;
		cr_assert_lt(took, 400, "waited %lld ms", took);
	}
	cr_assert_eq(kill(srv.pid, SIGCONT), 0);
	/* Until down_ms has passed: then it tries, and the server answers. */
	int rc = RHKV_ECONN;

	for (long long end = h_now_ms() + 30000;
	     rc == RHKV_ECONN && h_now_ms() < end; h_sleep_ms(50))
		rc = rhkv_get(c, "k", 1, &v);
	cr_assert_eq(rc, RHKV_ENOTFOUND, "%s", rhkv_strerror(rc));
}
