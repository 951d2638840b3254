/*
 * Helpers of librhkv's tests (util.h).
 */
#include "util.h"

#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int cl_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

pid_t cl_start_on(int port, const char *const *extra)
{
	const char *server = getenv(H_ENV_SERVER);
	const char *argv[32] = { server,      "-p", NULL, "-l",
				 "127.0.0.1", "-t", "2" };
	char portbuf[16];
	int n = 7;
	pid_t parent = getpid(), pid;

	snprintf(portbuf, sizeof(portbuf), "%d", port);
	argv[2] = portbuf;
	for (size_t i = 0; extra && extra[i] && n < 30; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execv(server, (char *const *)argv);
		_exit(127);
	}
	/* Generous: a sanitizer build on a loaded machine starts slowly. */
	for (long long end = h_now_ms() + 60000; h_now_ms() < end;) {
		struct hconn *c = hc_open(port);
		char line[128];
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;
		if (c) {
			long got =
				hc_send(c, "version\r\n", 9) == 0
					? hc_line(c, line, sizeof(line), 5000)
					: -1;

			hc_close(&c);
			if (got > 0 && h_pid_listens(pid, port))
				return pid;
			if (got > 0)
				break; /* another test's server on this port */
		}
		h_sleep_ms(10);
	}
	cl_stop(pid);
	return -1;
}

int cl_stop(pid_t pid)
{
	int st = -1;

	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	for (long long end = h_now_ms() + 30000; h_now_ms() < end;) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		h_sleep_ms(10);
	}
	fprintf(stderr, "cl_stop: pid %d ignored SIGTERM\n", (int)pid);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return st;
}

rhkv *cl_connect(int port, int io_timeout_ms)
{
	struct rhkv_options o;
	rhkv *c = NULL;
	int rc;

	rhkv_options_init(&o);
	o.io_timeout_ms = io_timeout_ms;
	rc = rhkv_connect(&c, "127.0.0.1", port, &o);
	cr_assert_eq(rc, 0, "connect: %s (%s)", rhkv_strerror(rc),
		     rhkv_errstr(c));
	return c;
}

long cl_stat(int port, const char *name)
{
	struct hconn *c = hc_open(port);
	char line[256], fmt[96];
	long n = -1;

	if (!c)
		return -1;
	snprintf(fmt, sizeof(fmt), "STAT %s %%ld", name);
	if (hc_send(c, "stats\r\n", 7) == 0)
		while (hc_line(c, line, sizeof(line), H_TIMEOUT_MS) > 0 &&
		       strncmp(line, "END", 3) != 0)
			sscanf(line, fmt, &n);
	hc_close(&c);
	return n;
}
