/* proc: the process and port helpers of proc.h, with fork/execvp and plain
 * sockets. */
#include "proc.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t proc_start(char *const argv[], int quiet)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	if (quiet) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
	}
	execvp(argv[0], argv);
	_exit(127);
}

int proc_wait(pid_t pid)
{
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

int proc_run(char *const argv[], int quiet)
{
	return proc_wait(proc_start(argv, quiet));
}

static void loopback(struct sockaddr_in *sa, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)port);
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int proc_free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	loopback(&sa, 0);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return ntohs(sa.sin_port);
}

int proc_wait_port(int port, int timeout_ms)
{
	struct sockaddr_in sa;
	loopback(&sa, port);
	for (int waited = 0; waited < timeout_ms; waited += 20) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		int ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return 0;
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	return -1;
}
