/*
 * fixed-reply: the loopback ceiling for tests/bench/compare.
 *
 * A tiny epoll server speaking just enough of the memcached text protocol
 * for rhkv-bench: every "set" is answered STORED (its data block is read
 * and discarded), every "get k1 k2 ..." with one fixed VALUE of -s bytes
 * per key and END. Nothing is stored. Replies to everything parsed from one
 * read are sent with one write. Each of the -t threads has its own epoll
 * instance and its own SO_REUSEPORT listener. Anything else is ERROR.
 *
 * usage: fixed-reply [-p PORT] [-l ADDR] [-t THREADS] [-s VALUE_SIZE]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF_SIZE  (64 * 1024)
#define MAX_EVENTS 64

struct conn {
	int fd;
	char *rbuf;
	size_t rlen;
	size_t skip; /* data-block bytes (with CRLF) still to discard */
	char *wbuf;
	size_t wlen, woff, wcap;
	int want_out;
};

static const char *listen_addr = "127.0.0.1";
static int port = 11411;
static size_t value_size = 32;
static char *value; /* value_size bytes followed by "\r\nEND\r\n" */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void out_append(struct conn *c, const void *p, size_t n)
{
	if (c->wlen + n > c->wcap) {
		size_t cap = c->wcap ? c->wcap : 4096;
		while (cap < c->wlen + n)
			cap *= 2;
		c->wbuf = realloc(c->wbuf, cap);
		if (!c->wbuf)
			die("realloc");
		c->wcap = cap;
	}
	memcpy(c->wbuf + c->wlen, p, n);
	c->wlen += n;
}

static void reply_get(struct conn *c, char *args, char *end)
{
	char hdr[300];
	char *p = args;

	for (;;) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			break;
		char *k = p;
		while (p < end && *p != ' ')
			p++;
		size_t klen = (size_t)(p - k);
		if (klen > 250)
			klen = 250;
		int n = snprintf(hdr, sizeof(hdr), "VALUE %.*s 0 %zu\r\n",
				 (int)klen, k, value_size);
		out_append(c, hdr, (size_t)n);
		out_append(c, value, value_size + 2);
	}
	out_append(c, "END\r\n", 5);
}

/* Parses what is buffered; returns -1 to close the connection. */
static int process(struct conn *c)
{
	size_t off = 0;

	while (off < c->rlen) {
		if (c->skip) {
			size_t n = c->rlen - off;
			if (n > c->skip)
				n = c->skip;
			c->skip -= n;
			off += n;
			continue;
		}
		char *line = c->rbuf + off;
		char *nl = memchr(line, '\n', c->rlen - off);
		if (!nl) {
			if (c->rlen - off >= RBUF_SIZE / 2)
				return -1; /* absurdly long line */
			break;
		}
		off = (size_t)(nl - c->rbuf) + 1;
		char *end = nl;
		if (end > line && end[-1] == '\r')
			end--;
		size_t len = (size_t)(end - line);
		if (len >= 4 && memcmp(line, "get ", 4) == 0) {
			reply_get(c, line + 4, end);
		} else if (len >= 5 && memcmp(line, "gets ", 5) == 0) {
			reply_get(c, line + 5, end);
		} else if (len >= 4 && memcmp(line, "set ", 4) == 0) {
			/* set <key> <flags> <exptime> <bytes> [noreply] */
			char tmp[512];
			char key[256];
			unsigned long flags, bytes;
			long exptime;
			char nr[16] = "";
			if (len >= sizeof(tmp))
				return -1;
			memcpy(tmp, line, len);
			tmp[len] = '\0';
			if (sscanf(tmp, "set %250s %lu %ld %lu %15s", key,
				   &flags, &exptime, &bytes, nr) < 4) {
				out_append(c, "CLIENT_ERROR bad command\r\n",
					   26);
				continue;
			}
			c->skip = bytes + 2;
			if (strcmp(nr, "noreply") != 0)
				out_append(c, "STORED\r\n", 8);
		} else if (len == 4 && memcmp(line, "quit", 4) == 0) {
			return -1;
		} else if (len == 7 && memcmp(line, "version", 7) == 0) {
			out_append(c, "VERSION fixed-reply\r\n", 21);
		} else if (len > 0) {
			out_append(c, "ERROR\r\n", 7);
		}
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
	return 0;
}

/* Returns -1 on a write error, else 0 (pending output may remain). */
static int flush_out(struct conn *c)
{
	while (c->woff < c->wlen) {
		ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -1;
		}
		c->woff += (size_t)n;
	}
	c->wlen = c->woff = 0;
	return 0;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c->rbuf);
	free(c->wbuf);
	free(c);
}

static void set_events(int ep, struct conn *c, int want_out)
{
	if (c->want_out == want_out)
		return;
	struct epoll_event ev = { .events = want_out ? EPOLLOUT : EPOLLIN,
				  .data.ptr = c };
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		die("epoll_ctl");
	c->want_out = want_out;
}

/* Handles readiness of a client; returns -1 once it is closed. */
static int conn_event(int ep, struct conn *c)
{
	if (c->want_out) {
		if (flush_out(c) < 0)
			return -1;
		if (c->woff < c->wlen)
			return 0;
		set_events(ep, c, 0);
	}
	ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
	if (n == 0)
		return -1;
	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	c->rlen += (size_t)n;
	int rc = process(c);
	if (flush_out(c) < 0)
		return -1;
	if (c->woff < c->wlen)
		set_events(ep, c, 1); /* stop reading until drained */
	return rc;
}

static void *worker(void *arg)
{
	(void)arg;
	int one = 1;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		die("SO_REUSEPORT");
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, listen_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "fixed-reply: bad address %s\n", listen_addr);
		exit(64);
	}
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 1024) < 0)
		die("listen");

	int ep = epoll_create1(0);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("epoll_ctl");

	struct epoll_event evs[MAX_EVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c) {
				if (conn_event(ep, c) < 0)
					conn_close(c);
				continue;
			}
			int fd;
			while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >=
			       0) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				c = calloc(1, sizeof(*c));
				if (!c || !(c->rbuf = malloc(RBUF_SIZE)))
					die("malloc");
				c->fd = fd;
				struct epoll_event cev = { .events = EPOLLIN,
							   .data.ptr = c };
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) < 0)
					die("epoll_ctl");
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	int o;

	while ((o = getopt(argc, argv, "p:l:t:s:h")) != -1) {
		switch (o) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'l':
			listen_addr = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 's':
			value_size = strtoul(optarg, NULL, 10);
			break;
		case 'h':
			printf("usage: fixed-reply [-p PORT] [-l ADDR] "
			       "[-t THREADS] [-s VALUE_SIZE]\n");
			return 0;
		default:
			return 64;
		}
	}
	if (port <= 0 || port > 65535 || threads < 1 || threads > 256 ||
	    value_size > (1u << 20)) {
		fprintf(stderr, "fixed-reply: bad arguments\n");
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	value = malloc(value_size + 2);
	if (!value)
		die("malloc");
	memset(value, 'x', value_size);
	memcpy(value + value_size, "\r\n", 2);

	pthread_t tid[256];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, NULL) != 0)
			die("pthread_create");
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	return 0;
}
