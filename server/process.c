/*
 * The process options of memcached's command line (process.h): -d, -P,
 * -r, -k.
 */
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child's end of the pipe to the waiting parent; -1: not a daemon. */
static int ready_fd = -1;

/* The parent of -d: waits for the child's byte or its exit. */
static _Noreturn void wait_for_child(pid_t child, int fd)
{
	char byte;
	ssize_t n;
	int status;

	do
		n = read(fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	/* The pipe closed without the byte: the child exited. */
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

int process_daemonize(void)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		errno = e;
		return -1;
	}
	if (pid > 0) {
		close(fds[1]);
		wait_for_child(pid, fds[0]);
	}
	close(fds[0]);
	ready_fd = fds[1];
	/* Its own session: no terminal, no signal from the shell's. */
	setsid();
	return 0;
}

void process_ready(bool keep_stderr, bool stay_in_dir)
{
	int null;

	if (ready_fd < 0)
		return;
	if (!stay_in_dir && chdir("/"))
		(void)0; /* / is always there; nothing else to try */
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		if (!keep_stderr)
			dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	/* Last: the parent exits 0 on this byte. */
	if (write(ready_fd, "R", 1) != 1)
		(void)0; /* the parent is gone: nobody to tell */
	close(ready_fd);
	ready_fd = -1;
}

int process_enable_coredumps(void)
{
	struct rlimit r;

	/* Unlimited first; else as high as the hard limit allows. */
	r.rlim_cur = r.rlim_max = RLIM_INFINITY;
	if (setrlimit(RLIMIT_CORE, &r) && !getrlimit(RLIMIT_CORE, &r)) {
		r.rlim_cur = r.rlim_max;
		(void)setrlimit(RLIMIT_CORE, &r);
	}
	if (getrlimit(RLIMIT_CORE, &r))
		return -1;
	if (r.rlim_cur == 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

int process_lock_memory(void)
{
	/* On fault: the cache reserves its address space at start (far more
	 * than -m), and locking it whole would fill RAM with it; pages are
	 * locked as they come into use, which is what memcached's -k locks. */
	return mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
}

int process_write_pid(const char *path)
{
	char tmp[4096];
	FILE *f;
	int e;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) || rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}
