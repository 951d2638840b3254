/*
 * The fragmenting relay of relay.h: a listener and up to MAX_PAIRS
 * client/server socket pairs in one poll() loop; each direction keeps a
 * buffer of bytes read and not yet passed on.
 */
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PAIRS 64
#define BUF	  65536

struct dir {
	int from, to;
	char buf[BUF];
	size_t len;
};

struct relay {
	int lfd, port, server_port;
	size_t max_chunk;
	unsigned max_delay_us;
	unsigned seed;
	volatile bool stop;
	pthread_t thread;
	struct dir dirs[2 * MAX_PAIRS]; /* 2i: to the server, 2i+1: back */
	int ndirs;
};

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void close_pair(struct relay *r, int i)
{
	struct dir *d = &r->dirs[2 * i];

	if (d->from >= 0) {
		close(d->from);
		close(d->to);
	}
	d[0].from = d[0].to = d[1].from = d[1].to = -1;
	d[0].len = d[1].len = 0;
}

static void accept_one(struct relay *r)
{
	int cfd = accept(r->lfd, NULL, NULL), sfd;

	if (cfd < 0)
		return;
	sfd = dial(r->server_port);
	if (sfd < 0 || r->ndirs == 2 * MAX_PAIRS) {
		close(cfd);
		if (sfd >= 0)
			close(sfd);
		return;
	}
	r->dirs[r->ndirs++] = (struct dir){ .from = cfd, .to = sfd };
	r->dirs[r->ndirs++] = (struct dir){ .from = sfd, .to = cfd };
}

/* Passes one piece of d's buffer on: 1 done, 0 the receiver is full
 * (never wait on it: it may be waiting on us), -1 the pair is gone. */
static int pass(struct relay *r, struct dir *d)
{
	size_t n = 1 + (size_t)rand_r(&r->seed) % r->max_chunk;
	ssize_t w;

	if (n > d->len)
		n = d->len;
	if (r->max_delay_us)
		usleep((unsigned)rand_r(&r->seed) % (r->max_delay_us + 1));
	w = send(d->to, d->buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (w <= 0)
		return -1;
	memmove(d->buf, d->buf + w, d->len - (size_t)w);
	d->len -= (size_t)w;
	return 1;
}

static void *run(void *arg)
{
	struct relay *r = arg;

	while (!r->stop) {
		struct pollfd pfd[1 + 2 * MAX_PAIRS];
		int n = 1, held = 0;

		pfd[0] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (int i = 0; i < r->ndirs; i++) {
			struct dir *d = &r->dirs[i];

			/* read only when there is room; write what is held */
			held |= d->len > 0;
			pfd[n++] = (struct pollfd){
				.fd = d->from,
				.events = d->len < BUF ? POLLIN : 0,
			};
		}
		if (poll(pfd, (nfds_t)n, held ? 0 : 10) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN)
			accept_one(r);
		for (int i = 0; i < r->ndirs && i + 1 < n; i++) {
			struct dir *d = &r->dirs[i];
			ssize_t got;

			if (d->from < 0)
				continue;
			if (pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
				got = recv(d->from, d->buf + d->len,
					   BUF - d->len, MSG_DONTWAIT);
				if (got == 0 || (got < 0 && errno != EAGAIN)) {
					close_pair(r, i / 2);
					continue;
				}
				if (got > 0)
					d->len += (size_t)got;
			}
			/* one piece per direction per round: neither waits
			 * for the other to drain */
			if (d->len && pass(r, d) < 0)
				close_pair(r, i / 2);
		}
	}
	return NULL;
}

struct relay *relay_start(int server_port, size_t max_chunk,
			  unsigned max_delay_us, unsigned seed)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	struct relay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->server_port = server_port;
	r->max_chunk = max_chunk ? max_chunk : 1;
	r->max_delay_us = max_delay_us;
	r->seed = seed;
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(r->lfd, 64) ||
	    getsockname(r->lfd, (struct sockaddr *)&sa, &len) ||
	    pthread_create(&r->thread, NULL, run, r)) {
		if (r->lfd >= 0)
			close(r->lfd);
		free(r);
		return NULL;
	}
	r->port = ntohs(sa.sin_port);
	return r;
}

int relay_port(const struct relay *r)
{
	return r->port;
}

void relay_stop(struct relay *r)
{
	if (!r)
		return;
	r->stop = true;
	pthread_join(r->thread, NULL);
	for (int i = 0; i < r->ndirs / 2; i++)
		close_pair(r, i);
	close(r->lfd);
	free(r);
}
