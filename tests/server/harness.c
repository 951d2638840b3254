/*
 * Integration test harness (see harness.h): server processes started with
 * fork/exec on a free loopback port and stopped by PID, and blocking client
 * connections whose every read has a deadline.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

/* ---- TLS mode (RHKV_TEST_TLS) ---- */

/* Servers started in TLS mode: plain port -> TLS port. */
#define TLS_SERVERS 16
static struct {
	int port, tls_port;
} tls_ports[TLS_SERVERS];
static char tls_dir[64]; /* the throwaway certificate's folder */
static char tls_cert[96], tls_key[96];

static bool tls_mode(enum srv_kind kind)
{
	const char *v = getenv(H_ENV_TLS);

	return kind == SRV_RHKVD && v && *v && strcmp(v, "0") != 0;
}

bool h_tls(void)
{
	return tls_mode(srv_kind_from_env());
}

static void tls_cleanup(void)
{
	unlink(tls_cert);
	unlink(tls_key);
	rmdir(tls_dir);
}

/* A self-signed certificate for this process's servers, made once. */
static int tls_certificate(void)
{
	char cmd[512];

	if (tls_dir[0])
		return 0;
	strcpy(tls_dir, "/tmp/rhkv-tls-XXXXXX");
	if (!mkdtemp(tls_dir)) {
		tls_dir[0] = '\0';
		return -1;
	}
	snprintf(tls_cert, sizeof(tls_cert), "%s/cert.pem", tls_dir);
	snprintf(tls_key, sizeof(tls_key), "%s/key.pem", tls_dir);
	atexit(tls_cleanup);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt "
		 "ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost "
		 "-keyout %s -out %s >/dev/null 2>&1",
		 tls_key, tls_cert);
	if (system(cmd) != 0) {
		fprintf(stderr, "harness: openssl could not make a "
				"certificate\n");
		return -1;
	}
	return 0;
}

static int tls_port_of(int port)
{
	for (int i = 0; i < TLS_SERVERS; i++)
		if (tls_ports[i].port == port)
			return tls_ports[i].tls_port;
	return 0;
}

static void tls_remember(int port, int tls_port)
{
	for (int i = 0; i < TLS_SERVERS; i++)
		if (!tls_ports[i].port || tls_ports[i].port == port) {
			tls_ports[i].port = port;
			tls_ports[i].tls_port = tls_port;
			return;
		}
}

/* The client side of a handshake on fd; NULL on failure. No certificate
 * check: what is tested here is the server's behaviour, not trust. */
static SSL *tls_connect(int fd)
{
	static SSL_CTX *ctx;
	SSL *ssl;

	if (!ctx) {
		/* OpenSSL writes with write(), not send(MSG_NOSIGNAL): a
		 * test that shuts down its side must not die of SIGPIPE. */
		signal(SIGPIPE, SIG_IGN);
		ctx = SSL_CTX_new(TLS_client_method());
		if (!ctx)
			return NULL;
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
	}
	ssl = SSL_new(ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Adds the inode of every socket in /proc/net/tcp* listening on PORT. */
static size_t listening_inodes(const char *table, int port,
			       unsigned long *inodes, size_t n, size_t cap)
{
	FILE *f = fopen(table, "r");
	char line[512];

	if (!f)
		return n;
	while (n < cap && fgets(line, sizeof(line), f)) {
		unsigned local_port, state;
		unsigned long inode;

		/* sl local:port remote:port st queues tr:when retrnsmt uid
		 * timeout inode */
		if (sscanf(line,
			   " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x"
			   " %*x:%*x %*x:%*x %*x %*u %*u %lu",
			   &local_port, &state, &inode) == 3 &&
		    (int)local_port == port && state == 0x0A /* LISTEN */)
			inodes[n++] = inode;
	}
	fclose(f);
	return n;
}

bool h_pid_listens(pid_t pid, int port)
{
	unsigned long inodes[16];
	size_t n = 0;
	char path[64];
	struct dirent *e;
	DIR *fds;
	bool found = false;

	n = listening_inodes("/proc/net/tcp", port, inodes, n, 16);
	n = listening_inodes("/proc/net/tcp6", port, inodes, n, 16);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	fds = opendir(path);
	if (!fds)
		return false;
	while (!found && (e = readdir(fds))) {
		char link[64];
		unsigned long inode;
		ssize_t len = readlinkat(dirfd(fds), e->d_name, link,
					 sizeof(link) - 1);

		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &inode) != 1)
			continue;
		for (size_t i = 0; i < n; i++)
			found |= inodes[i] == inode;
	}
	closedir(fds);
	return found;
}

long long h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

bool h_soak(void)
{
	const char *env = getenv("RHKV_TEST_SOAK");

	return env && *env && strcmp(env, "0") != 0;
}

long long h_soak_ms(long long ci_ms, long long soak_ms)
{
	return h_soak() ? soak_ms : ci_ms;
}

static const char *server_from_env(void)
{
	const char *v = getenv(H_ENV_SERVER);

	if (!v || !*v)
		v = getenv(H_ENV_SERVER_DEFAULT);
	return v && *v ? v : "memcached";
}

/* The kind of server the path (or name) v runs. */
static enum srv_kind kind_of(const char *v)
{
	const char *base = strrchr(v, '/');

	base = base ? base + 1 : v;
	return strcmp(base, "memcached") == 0 ? SRV_MEMCACHED : SRV_RHKVD;
}

enum srv_kind srv_kind_from_env(void)
{
	return kind_of(server_from_env());
}

/* A port that was free a moment ago (bind to port 0, read it back). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -1;

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* "1k", "2m", "4096" in bytes; 0 if unparsable. */
static unsigned long parse_size(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end == 'k' || *end == 'K')
		v *= 1024;
	else if (*end == 'm' || *end == 'M')
		v *= 1024 * 1024;
	return v;
}

/* Fills ARGV (static strings and the two buffers) for one start. */
static int build_argv(const char **argv, const char *server, enum srv_kind kind,
		      const char *const *extra, char *portbuf, char *chunkbuf,
		      const char *tlsportbuf)
{
	int n = 0;

	argv[n++] = server;
	/* memcached's words, which rhkvd takes too: memcached refuses to run
	 * as root without -u. */
	argv[n++] = "-u";
	argv[n++] = "root";
	argv[n++] = "-U";
	argv[n++] = "0";
	argv[n++] = "-p";
	argv[n++] = portbuf;
	argv[n++] = "-l";
	argv[n++] = "127.0.0.1";
	argv[n++] = "-t";
	argv[n++] = "2";
	if (tlsportbuf) {
		argv[n++] = "--tls-port";
		argv[n++] = tlsportbuf;
		argv[n++] = "--tls-cert";
		argv[n++] = tls_cert;
		argv[n++] = "--tls-key";
		argv[n++] = tls_key;
	}
	for (size_t i = 0; extra && extra[i]; i++) {
		if (n >= MAX_ARGS - 3)
			return -1;
		argv[n++] = extra[i];
		if (kind == SRV_MEMCACHED && strcmp(extra[i], "-I") == 0 &&
		    extra[i + 1]) {
			unsigned long sz = parse_size(extra[i + 1]);

			if (sz && sz < 1024 * 1024) {
				snprintf(chunkbuf, 48, "slab_chunk_max=%lu",
					 sz / 2);
				argv[n++] = extra[++i];
				argv[n++] = "-o";
				argv[n++] = chunkbuf;
			}
		}
	}
	argv[n] = NULL;
	return 0;
}

/* In the child: die with the parent, drop inherited descriptors, exec. */
static void exec_child(const char **argv, pid_t parent)
{
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	/* criterion's pipes must not stay open in the server */
	syscall(SYS_close_range, 3U, ~0U, 0U);
	execvp(argv[0], (char *const *)argv);
	static const char msg[] = "harness: cannot execute the server\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(126);
	_exit(127);
}

/* Waits until S answers "version" or exits; 0, or -1 (child reaped). The
 * deadline is generous: a sanitizer build on a loaded machine starts slowly,
 * and a ready server ends the wait at once. */
static int wait_ready(struct srv *s)
{
	long long deadline = h_now_ms() + 60000;
	int status;

	while (h_now_ms() < deadline) {
		struct hconn *c;

		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1;
		}
		c = hc_open(s->port);
		if (!c) {
			h_sleep_ms(10);
			continue;
		}
		long n = -1;

		if (hc_send(c, "version\r\n", 9) == 0)
			n = hc_line(c, s->version, sizeof(s->version), 5000);
		hc_close(&c);
		if (n > 0 &&
		    (!h_pid_listens(s->pid, s->port) ||
		     (s->tls_port && !h_pid_listens(s->pid, s->tls_port)))) {
			fprintf(stderr,
				"harness: another server answers on port %d\n",
				s->port);
			break;
		}
		if (n > 8 && strncmp(s->version, "VERSION ", 8) == 0)
			return 0;
		/* Started with a password, or a user list (memcached's -Y):
		 * up, but it answers nothing yet. */
		if (n > 0 && (strstr(s->version, "authentication required") ||
			      strstr(s->version, "unauthenticated"))) {
			s->version[0] = '\0';
			return 0;
		}
		fprintf(stderr, "harness: bad reply to version on port %d\n",
			s->port);
		break;
	}
	srv_stop(s);
	return -1;
}

int srv_start(struct srv *s, const char *const *extra)
{
	return srv_start_as(s, server_from_env(), extra);
}

int srv_start_as(struct srv *s, const char *server, const char *const *extra)
{
	const char *argv[MAX_ARGS];
	char portbuf[16], chunkbuf[48], tlsportbuf[16];
	bool tls;

	memset(s, 0, sizeof(*s));
	s->kind = kind_of(server);
	tls = tls_mode(s->kind);
	if (tls && tls_certificate())
		return -1;
	for (int attempt = 0; attempt < 5; attempt++) {
		pid_t parent = getpid();

		s->port = free_port();
		if (s->port < 0)
			continue;
		snprintf(portbuf, sizeof(portbuf), "%d", s->port);
		s->tls_port = tls ? free_port() : 0;
		snprintf(tlsportbuf, sizeof(tlsportbuf), "%d", s->tls_port);
		if (build_argv(argv, server, s->kind, extra, portbuf, chunkbuf,
			       tls ? tlsportbuf : NULL) < 0) {
			fprintf(stderr, "harness: too many server flags\n");
			return -1;
		}
		fflush(NULL);
		s->pid = fork();
		if (s->pid < 0) {
			s->pid = 0;
			perror("harness: fork");
			return -1;
		}
		if (s->pid == 0)
			exec_child(argv, parent);
		if (tls)
			tls_remember(s->port, s->tls_port);
		if (wait_ready(s) == 0)
			return 0;
		fprintf(stderr,
			"harness: %s did not start on port %d (try %d)\n",
			argv[0], s->port, attempt + 1);
	}
	return -1;
}

int srv_stop(struct srv *s)
{
	int status = -1;
	long long deadline;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	deadline = h_now_ms() + 30000;
	while (waitpid(s->pid, &status, WNOHANG) == 0) {
		if (h_now_ms() > deadline) {
			fprintf(stderr, "harness: pid %d ignored SIGTERM\n",
				(int)s->pid);
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &status, 0);
			break;
		}
		h_sleep_ms(5);
	}
	s->pid = 0;
	return status;
}

char *h_wait_status(char *dst, size_t cap, int status)
{
	if (status == -1)
		snprintf(dst, cap, "was not running");
	else if (WIFEXITED(status))
		snprintf(dst, cap, "exited with status %d",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(dst, cap, "killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(dst, cap, "wait status %#x", (unsigned)status);
	return dst;
}

struct hconn *hc_open(int port)
{
	int tls_port = tls_port_of(port);
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)(tls_port ? tls_port : port))
	};
	struct hconn *c;
	SSL *ssl = NULL;
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return NULL;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (tls_port && !(ssl = tls_connect(fd))) {
		close(fd);
		errno = ECONNREFUSED;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->tls = ssl;
	return c;
}

void hc_close(struct hconn **c)
{
	if (!*c)
		return;
	SSL_free((*c)->tls);
	close((*c)->fd);
	free(*c);
	*c = NULL;
}

int hc_send(struct hconn *c, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w;

		if (c->tls) {
			size_t done = 0;

			if (SSL_write_ex(c->tls, b, n, &done) != 1)
				return -1;
			b += done;
			n -= done;
			continue;
		}
		w = send(c->fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int hc_sendf(struct hconn *c, const char *fmt, ...)
{
	static _Thread_local char buf[65536];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		errno = EMSGSIZE;
		return -1;
	}
	return hc_send(c, buf, (size_t)n);
}

int hc_send_split(struct hconn *c, const void *p, size_t n, size_t chunk,
		  unsigned delay_us)
{
	const char *b = p;

	while (n > 0) {
		size_t k = n < chunk ? n : chunk;
		struct timespec ts = { 0, (long)delay_us * 1000 };

		if (hc_send(c, b, k) < 0)
			return -1;
		b += k;
		n -= k;
		if (delay_us)
			nanosleep(&ts, NULL);
	}
	return 0;
}

/* Refills the buffer: 1 bytes came, 0 closed, -1 deadline passed. */
static int fill(struct hconn *c, long long deadline)
{
	if (c->off == c->len)
		c->off = c->len = 0;
	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		long long left = deadline - h_now_ms();
		int r;

		if (left < 0)
			left = 0;
		/* Bytes OpenSSL already decrypted raise no poll event. */
		r = c->tls && SSL_pending(c->tls) > 0
			    ? 1
			    : poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -1;
		if (c->tls) {
			size_t done = 0;

			if (SSL_read_ex(c->tls, c->buf + c->len,
					sizeof(c->buf) - c->len, &done) != 1)
				return 0; /* closed, or broken */
			c->len += done;
			return 1;
		}
		ssize_t got = recv(c->fd, c->buf + c->len,
				   sizeof(c->buf) - c->len, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return 0; /* EOF, or reset: closed either way */
		c->len += (size_t)got;
		return 1;
	}
}

size_t hc_read(struct hconn *c, void *dst, size_t n, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	char *d = dst;
	size_t done = 0;

	while (done < n) {
		if (c->off == c->len && fill(c, deadline) != 1)
			break;
		size_t k = c->len - c->off;

		if (k > n - done)
			k = n - done;
		memcpy(d + done, c->buf + c->off, k);
		c->off += k;
		done += k;
	}
	return done;
}

long hc_line(struct hconn *c, char *dst, size_t cap, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	size_t done = 0;

	for (;;) {
		if (c->off == c->len && fill(c, deadline) != 1)
			return -1;
		while (c->off < c->len) {
			char ch = c->buf[c->off++];

			if (done + 1 >= cap)
				return -1;
			dst[done++] = ch;
			if (ch == '\n') {
				dst[done] = '\0';
				return (long)done;
			}
		}
	}
}

int hc_closed(struct hconn *c, int timeout_ms)
{
	if (c->off < c->len)
		return -1;
	switch (fill(c, h_now_ms() + timeout_ms)) {
	case 0:
		return 1;
	case 1:
		return -1;
	default:
		return 0;
	}
}

bool hc_expect(struct hconn *c, const void *exp, size_t n, int timeout_ms,
	       char *msg, size_t cap)
{
	long long deadline = h_now_ms() + timeout_ms;
	const char *e = exp;
	char *got = malloc(n + 256);
	size_t done = 0;
	int fill_rc = 1; /* 0: the server closed; -1: timed out */

	while (done < n) {
		if (c->off == c->len && (fill_rc = fill(c, deadline)) != 1)
			break;
		got[done] = c->buf[c->off++];
		done++;
		if (got[done - 1] != e[done - 1])
			break;
	}
	bool ok = done == n && memcmp(got, e, n) == 0;

	if (!ok) {
		/* the first differing (or missing) byte, with some context */
		size_t diff = fill_rc == 1 ? done - 1 : done;
		size_t from = diff > 100 ? diff - 60 : 0;
		char *a = malloc(cap), *b = malloc(cap);

		if (fill_rc == 1)
			done += hc_read(c, got + done, 255, 100);
		size_t na = n - from, nb = done - from;

		if (na > diff - from + 200)
			na = diff - from + 200;
		if (nb > diff - from + 200)
			nb = diff - from + 200;
		h_escape(a, cap / 3, e + from, na);
		h_escape(b, cap / 3, got + from, nb);
		snprintf(msg, cap,
			 "reply mismatch at byte %zu of %zu%s\n"
			 "  expected %s\"%s\"\n  got      %s\"%s\"",
			 diff, n,
			 fill_rc == 0	 ? " (the server closed)"
			 : fill_rc == -1 ? " (timed out)"
					 : "",
			 from ? "..." : "", a, from ? "..." : "", b);
		free(a);
		free(b);
	}
	free(got);
	return ok;
}

char *h_escape(char *dst, size_t cap, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char tmp[8];
		unsigned char ch = s[i];

		if (ch == '\r')
			strcpy(tmp, "\\r");
		else if (ch == '\n')
			strcpy(tmp, "\\n");
		else if (ch == '\t')
			strcpy(tmp, "\\t");
		else if (ch == '\\' || ch == '"')
			snprintf(tmp, sizeof(tmp), "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
		else
			snprintf(tmp, sizeof(tmp), "%c", ch);
		if (o + strlen(tmp) + 4 >= cap) {
			strcpy(dst + o, "...");
			return dst;
		}
		strcpy(dst + o, tmp);
		o += strlen(tmp);
	}
	dst[o] = '\0';
	return dst;
}

void hbuf_add(struct hbuf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void hbuf_printf(struct hbuf *b, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		abort();
	hbuf_add(b, tmp, (size_t)n);
}

void hbuf_free(struct hbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int hc_value(struct hconn *c, struct hvalue *v, int timeout_ms)
{
	char tail[2];
	int used = 0;

	memset(v->line, 0, sizeof(v->line));
	v->cas = 0;
	if (hc_line(c, v->line, sizeof(v->line), timeout_ms) < 0)
		return -1;
	if (strcmp(v->line, "END\r\n") == 0)
		return 0;
	int n = sscanf(v->line, "VALUE %255s %lu %zu %llu%n", v->key, &v->flags,
		       &v->len, &v->cas, &used);

	if (n < 3 || v->len > sizeof(v->val))
		return -1;
	if (hc_read(c, v->val, v->len, timeout_ms) != v->len ||
	    hc_read(c, tail, 2, timeout_ms) != 2 || memcmp(tail, "\r\n", 2))
		return -1;
	return 1;
}

enum h_san h_sanitizer(pid_t pid)
{
	char path[64], line[512];
	enum h_san found = H_SAN_NONE;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return H_SAN_NONE;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "libtsan")	  ? H_SAN_THREAD
			: strstr(line, "libasan") ? H_SAN_ADDRESS
						  : H_SAN_NONE;
	fclose(f);
	return found;
}

unsigned long long h_rss(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "VmRSS: %llu kB", &kb) == 1;
	fclose(f);
	return kb * 1024;
}

int hc_stats(struct hconn *c, const char *group, struct hstats *s,
	     int timeout_ms)
{
	char line[256];

	if (hc_sendf(c, "stats%s%s\r\n", *group ? " " : "", group))
		return -1;
	s->n = 0;
	for (;;) {
		if (hc_line(c, line, sizeof(line), timeout_ms) <= 0)
			return -1;
		if (!strcmp(line, "END\r\n"))
			return 0;
		if (s->n == H_STATS_MAX ||
		    sscanf(line, "STAT %47s %79s", s->name[s->n],
			   s->value[s->n]) != 2)
			return -1;
		s->n++;
	}
}

const char *hstats_get(const struct hstats *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return s->value[i];
	return NULL;
}

int hstats_u64(const struct hstats *s, const char *name, unsigned long long *v)
{
	const char *p = hstats_get(s, name);
	char *end;

	if (!p)
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return errno || end == p || *end ? -1 : 0;
}
