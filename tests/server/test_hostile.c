/*
 * Hostile clients: slowloris connections that never finish a request, absurd
 * sizes, a client that pipelines a million gets and never reads, random
 * garbage on both protocols, a connection storm and over-limit bursts, and
 * clients that reset or half-close with replies in flight. In every test a
 * second, well-behaved client keeps getting its set/get round trips served,
 * the server stays up, its memory (VmRSS, outside sanitizers) stays bounded
 * and its connections and descriptors go back to where they were. The
 * timeouts, the output limit and the memory bounds are rhkvd's: those tests
 * skip on memcached.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MIB	 (1024ull * 1024ull)
#define MAX_RAW	 640
#define BIG_LEN	 (100 * 1024)
#define HUGE_LEN 1000000 /* "1 MiB": fits under the default -I 1m */

/* What a test allocates lives here, freed by teardown even when an
 * assertion ends the test early. */
static struct srv srv;
static struct hconn *c, *good;
static struct hconn *conns[128];
static int raw[MAX_RAW];
static int nraw;
static struct hbuf breq;
static char *garbage;

static void teardown(void)
{
	int status;

	for (int i = 0; i < nraw; i++)
		if (raw[i] >= 0)
			close(raw[i]);
	nraw = 0;
	for (size_t i = 0; i < sizeof(conns) / sizeof(conns[0]); i++)
		hc_close(&conns[i]);
	hc_close(&c);
	hc_close(&good);
	hbuf_free(&breq);
	free(garbage);
	garbage = NULL;
	if (!srv.pid)
		return;
	status = srv_stop(&srv);
	H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
}

/* One timeout for every test of a runner: criterion 2.4.1 leaks (LSan)
 * when they differ. */
TestSuite(hostile, .fini = teardown, .timeout = 300);

static void start(const char *const *extra)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("the idle and stall timeouts, the output limit, "
			     "the error lines and the memory bounds are "
			     "rhkvd's; the server under test is memcached "
			     "(RHKV_TEST_SERVER)");
	cr_assert_eq(srv_start(&srv, extra), 0, "the server did not start");
}

/* ---- the server process ---- */

static bool check_rss(void)
{
	return !H_SANITIZED_BUILD && h_sanitizer(srv.pid) == H_SAN_NONE;
}

/* MS in a normal build, more under a sanitizer. */
static long long wait_ms(long long ms)
{
	enum h_san san = h_sanitizer(srv.pid);

	if (san == H_SAN_THREAD)
		return 4 * ms;
	return H_SANITIZED_BUILD || san == H_SAN_ADDRESS ? 2 * ms : ms;
}

/* Entries in /proc/PID/fd: the server's open descriptors. */
static int server_fds(void)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)srv.pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The fd count once it has not changed for 300 ms (connections the
 * harness or a test closed are gone). */
static int settled_fds(void)
{
	int last = server_fds(), same = 0;

	for (int i = 0; i < 50 && same < 3; i++) {
		h_sleep_ms(100);
		int n = server_fds();

		same = n == last ? same + 1 : 0;
		last = n;
	}
	return last;
}

/* Waits up to MS for the fd count to fall to at most WANT; returns it. */
static int fds_down_to(int want, long long ms)
{
	long long end = h_now_ms() + ms;
	int n;

	while ((n = server_fds()) > want && h_now_ms() < end)
		h_sleep_ms(50);
	return n;
}

/* The server process has not exited. */
static bool server_alive(void)
{
	int st;

	return srv.pid && waitpid(srv.pid, &st, WNOHANG) == 0;
}

/* ---- clients ---- */

/* A connected blocking socket without the harness's buffer; kept in raw[]
 * for teardown. -1 with errno on failure. */
static int raw_open_buf(int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)srv.port) };
	int fd, one = 1;

	if (nraw >= MAX_RAW) {
		errno = EMFILE;
		return -1;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	raw[nraw++] = fd;
	return fd;
}

static int raw_open(void)
{
	return raw_open_buf(0);
}

/* Closes a raw[] socket (by index), with an RST when RESET. */
static void raw_close(int i, bool reset)
{
	if (raw[i] < 0)
		return;
	if (reset) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(raw[i], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(raw[i]);
	raw[i] = -1;
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/*
 * The well-behaved client: on a fresh connection, stores a value under a
 * key of its own and reads it back. Returns true when both replies came
 * within MS; else false with the reason in MSG.
 */
static bool good_round_trip(int ms, char *msg, size_t cap)
{
	static unsigned seq;
	char req[128], rep[128];
	struct hconn *g = hc_open(srv.port);
	bool ok;
	int n;

	if (!g) {
		snprintf(msg, cap, "connect: errno %d", errno);
		return false;
	}
	seq++;
	n = snprintf(req, sizeof(req),
		     "set good%u 0 0 6\r\nv%05u\r\nget good%u\r\n", seq,
		     seq % 100000, seq);
	ok = hc_send(g, req, (size_t)n) == 0;
	n = snprintf(rep, sizeof(rep),
		     "STORED\r\nVALUE good%u 0 6\r\nv%05u\r\nEND\r\n", seq,
		     seq % 100000);
	if (!ok)
		snprintf(msg, cap, "send: errno %d", errno);
	else
		ok = hc_expect(g, rep, (size_t)n, ms, msg, cap);
	hc_close(&g);
	return ok;
}

#define GOOD_RT(what)                                                       \
	do {                                                                \
		char m_[H_MSG_CAP];                                         \
		cr_assert(good_round_trip(H_TIMEOUT_MS, m_, sizeof(m_)),    \
			  "%s: the good client was not served: %s", (what), \
			  m_);                                              \
	} while (0)

/* A stat of `stats`, read on a fresh connection. */
static long long stat_value(const char *name)
{
	struct hconn *s = hc_open(srv.port);
	char line[256], want[64];
	long long v = -1;

	cr_assert_not_null(s, "connect: errno %d", errno);
	cr_assert_eq(hc_send(s, "stats\r\n", 7), 0);
	snprintf(want, sizeof(want), "STAT %s ", name);
	for (;;) {
		long n = hc_line(s, line, sizeof(line), H_TIMEOUT_MS);

		if (n <= 0 || !strcmp(line, "END\r\n"))
			break;
		if (!strncmp(line, want, strlen(want)))
			v = strtoll(line + strlen(want), NULL, 10);
	}
	hc_close(&s);
	cr_assert_geq(v, 0, "no stat %s", name);
	return v;
}

/* Stores N bytes of FILL under KEY. */
static void store(const char *key, size_t n, char fill)
{
	struct hconn *s = hc_open(srv.port);
	char line[128];

	cr_assert_not_null(s);
	breq.len = 0;
	hbuf_printf(&breq, "set %s 0 0 %zu\r\n", key, n);
	for (size_t i = 0; i < n; i++)
		hbuf_add(&breq, &fill, 1);
	hbuf_add(&breq, "\r\n", 2);
	cr_assert_eq(hc_send(s, breq.p, breq.len), 0);
	cr_assert_gt(hc_line(s, line, sizeof(line), H_TIMEOUT_MS), 0);
	cr_assert_str_eq(line, "STORED\r\n", "storing %s", key);
	hc_close(&s);
	breq.len = 0;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static void fill_random(char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t r = rng_next(&seed);

		memcpy(p + i, &r, n - i < 8 ? n - i : 8);
	}
}

/* ---- 1. slowloris ---- */

#define SLOW_N	     500
#define SLOW_IDLE_S  2
#define SLOW_GRACE_S 3

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * 500 connections each send one byte per second of "get slowloris...\r\n",
 * never completing it. The issue: "idle" means no complete request, so
 * --idle-timeout 2 closes them within idle + 3 s although bytes keep
 * trickling in, the good client is served all along, and curr_connections
 * returns to its baseline.
 */
Test(hostile, slowloris_connections_are_closed_by_the_idle_timeout)
{
	/* memcached's spelling of --idle-timeout 2. */
	static const char *const extra[] = { "-c", "1024", "-o",
					     "idle_timeout=2", NULL };
	static const char req[] = "get slowloris_never_completes\r\n";
	bool closed[SLOW_N] = { false };
	int nclosed = 0, replies = 0, good_fail = 0, rounds = 0;
	long long base, t0, deadline, worst_rt = 0;
	char msg[H_MSG_CAP] = "";

	raise_nofile(4096);
	start(extra);
	h_sleep_ms(300); /* the harness's readiness check is gone */
	base = stat_value("curr_connections");
	for (int i = 0; i < SLOW_N; i++) {
		int fd = raw_open();

		cr_assert_geq(fd, 0, "slow connection %d: errno %d", i, errno);
		set_nonblock(fd);
	}
	t0 = h_now_ms();
	deadline = t0 + wait_ms((SLOW_IDLE_S + SLOW_GRACE_S) * 1000);
	/* one byte a second on each; never the whole line */
	for (int sec = 0; h_now_ms() < deadline && nclosed < SLOW_N; sec++) {
		for (int i = 0; i < SLOW_N; i++) {
			char b[256];
			ssize_t n;

			if (closed[i])
				continue;
			n = send(raw[i], &req[sec % (sizeof(req) - 3)], 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN) {
				closed[i] = true;
				nclosed++;
				continue;
			}
			n = recv(raw[i], b, sizeof(b), MSG_DONTWAIT);
			if (n > 0)
				replies++; /* a reply to half a request */
			if (n == 0 || (n < 0 && errno != EAGAIN)) {
				closed[i] = true;
				nclosed++;
			}
		}
		/* the good client, four times a second until the next byte */
		long long next = t0 + (sec + 1) * 1000LL;

		do {
			long long a = h_now_ms();

			rounds++;
			if (!good_round_trip((int)wait_ms(2000), msg,
					     sizeof(msg)))
				good_fail++;
			if (h_now_ms() - a > worst_rt)
				worst_rt = h_now_ms() - a;
			h_sleep_ms(250);
		} while (h_now_ms() < next);
	}
	/* a last look for closes (EOF or reset) */
	for (int i = 0; i < SLOW_N; i++) {
		char b[256];

		if (closed[i])
			continue;
		ssize_t n = recv(raw[i], b, sizeof(b), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			closed[i] = true;
			nclosed++;
		}
	}
	fprintf(stderr,
		"slowloris: %d of %d connections closed by the server within "
		"%lld ms; good client: %d round trips, %d failed, worst %lld "
		"ms\n",
		nclosed, SLOW_N, h_now_ms() - t0, rounds, good_fail, worst_rt);
	cr_expect_eq(good_fail, 0,
		     "the good client failed %d of %d round trips: %s",
		     good_fail, rounds, msg);
	cr_expect_eq(replies, 0, "%d replies to incomplete requests", replies);
	cr_expect_geq(nclosed, SLOW_N * 9 / 10,
		      "--idle-timeout %d: only %d of %d connections that "
		      "trickle one byte a second of a request they never "
		      "complete were closed within %d s",
		      SLOW_IDLE_S, nclosed, SLOW_N, SLOW_IDLE_S + SLOW_GRACE_S);

	/* our side closes the rest: curr_connections back to baseline */
	for (int i = 0; i < SLOW_N; i++)
		raw_close(i, false);
	long long end = h_now_ms() + wait_ms(30000), cur;

	while ((cur = stat_value("curr_connections")) > base &&
	       h_now_ms() < end)
		h_sleep_ms(100);
	cr_assert_leq(cur, base, "curr_connections %lld, baseline %lld", cur,
		      base);
	GOOD_RT("after the slowloris");
}

/* ---- 2. absurd sizes ---- */

/* Sends REQ on a fresh connection and reads one line within MS: it must
 * start with one of the error prefixes. */
static void expect_error_line(const char *what, const void *req, size_t n,
			      int ms, const char *exact)
{
	char line[256], esc[400];
	long long t0 = h_now_ms();
	struct hconn *e = hc_open(srv.port);

	cr_assert_not_null(e);
	/* the peer may stop reading (and reset) part way: no assertion */
	(void)hc_send(e, req, n);
	long len = hc_line(e, line, sizeof(line), ms);

	cr_assert_gt(len, 0, "%s: no error line within %d ms", what, ms);
	h_escape(esc, sizeof(esc), line, (size_t)len);
	if (exact)
		cr_assert_str_eq(line, exact, "%s: got \"%s\"", what, esc);
	else
		cr_assert(!strncmp(line, "CLIENT_ERROR ", 13) ||
				  !strncmp(line, "SERVER_ERROR ", 13),
			  "%s: got \"%s\"", what, esc);
	fprintf(stderr, "absurd sizes: %s -> \"%s\" in %lld ms\n", what, esc,
		h_now_ms() - t0);
	hc_close(&e);
}

Test(hostile, absurd_sizes_are_refused_at_once_without_allocating)
{
	static const char *const extra[] = { "-I", "1m", NULL };
	unsigned long long rss0, rss1;
	char line[256];

	start(extra);
	GOOD_RT("before");
	rss0 = h_rss(srv.pid);
	expect_error_line("set k 0 0 4294967295", "set k 0 0 4294967295\r\n",
			  22, 1000, NULL);
	expect_error_line("set k 0 0 -1", "set k 0 0 -1\r\n", 14, 1000, NULL);
	expect_error_line("set k 0 0 99999999999999999999",
			  "set k 0 0 99999999999999999999\r\n", 32, 1000, NULL);
	GOOD_RT("after the bad lengths");

	/* a get line of 10,000 keys, about 110 KB: served, as memcached
	 * serves it; one of 100,000 keys, 1.3 MB, is past -I 1m */
	breq.len = 0;
	hbuf_printf(&breq, "get");
	for (int i = 0; i < 10000; i++)
		hbuf_printf(&breq, " absurd_%05d", i);
	hbuf_printf(&breq, "\r\n");
	expect_error_line("get with 10,000 keys", breq.p, breq.len, 2000,
			  "END\r\n");
	breq.len = 0;
	hbuf_printf(&breq, "get");
	for (int i = 0; i < 100000; i++)
		hbuf_printf(&breq, " absurd_%05d", i);
	hbuf_printf(&breq, "\r\n");
	expect_error_line("get with 100,000 keys", breq.p, breq.len, 2000,
			  NULL);
	breq.len = 0;
	GOOD_RT("after the long gets");

	/* a 2 MiB value under -I 1m: refused before its data is sent; the
	 * data is skipped and the connection goes on */
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	SEND(c, "set k 0 0 2097152\r\n");
	cr_assert_gt(hc_line(c, line, sizeof(line), 1000), 0,
		     "no reply to a 2 MiB set within 1 s (before its data)");
	cr_assert_str_eq(line, "SERVER_ERROR object too large for cache\r\n");
	garbage = malloc(2 * MIB);
	cr_assert_not_null(garbage);
	memset(garbage, 'z', 2 * MIB);
	SEND_N(c, garbage, 2 * MIB);
	RT(c, "\r\nget k\r\n", "END\r\n");
	SYNC(c, &srv);
	GOOD_RT("after the 2 MiB value");

	rss1 = h_rss(srv.pid);
	fprintf(stderr, "absurd sizes: RSS %.1f MiB -> %.1f MiB\n",
		rss0 / (double)MIB, rss1 / (double)MIB);
	if (check_rss())
		cr_assert_lt(rss1, rss0 + 4 * MIB,
			     "RSS grew from %llu to %llu bytes", rss0, rss1);
	cr_assert(server_alive());
}

/* ---- 3. a million pipelined gets, never read ---- */

#define PIPE_REQS 1000000
#define GET_BIG	  "get big\r\n"

struct pipe_sender {
	int fd;
	atomic_bool stop;
	unsigned long long sent; /* bytes */
	long long last_progress; /* ms */
	long long stopped_at;	 /* ms */
	int err;		 /* errno that ended it, 0: stalled or done */
	bool done;		 /* all requests sent */
};

static void *pipe_send(void *arg)
{
	struct pipe_sender *p = arg;
	const size_t unit = sizeof(GET_BIG) - 1;
	const unsigned long long total = (unsigned long long)PIPE_REQS * unit;
	char buf[65536 + 16];
	size_t blen = sizeof(buf) / unit * unit;

	for (size_t i = 0; i + unit <= sizeof(buf); i += unit)
		memcpy(buf + i, GET_BIG, unit);
	p->last_progress = h_now_ms();
	while (!atomic_load(&p->stop) && p->sent < total) {
		size_t off = p->sent % unit;
		size_t n = blen - unit;

		if (n > total - p->sent)
			n = (size_t)(total - p->sent);
		ssize_t k = send(p->fd, buf + off, n, MSG_NOSIGNAL);

		if (k > 0) {
			p->sent += (size_t)k;
			p->last_progress = h_now_ms();
			continue;
		}
		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* the send buffer is full: the server stopped reading */
			if (h_now_ms() - p->last_progress >= 1000)
				break;
			continue;
		}
		p->err = k < 0 ? errno : EPIPE;
		break;
	}
	p->done = p->sent >= total;
	p->stopped_at = h_now_ms();
	return NULL;
}

Test(hostile, pipelined_gets_never_read_are_cut_off_by_the_stall_timeout)
{
	static const char *const extra[] = { "--stall-timeout", "2", NULL };
	struct pipe_sender ps = { .fd = -1 };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	unsigned long long rss0, rss_max = 0;
	long long hits0, read0, t_closed = -1, deadline;
	int good_fail = 0, rounds = 0, samples = 0;
	bool closed = false;
	char msg[H_MSG_CAP] = "";
	pthread_t th;

	start(extra);
	store("big", BIG_LEN, 'B');
	rss0 = h_rss(srv.pid);
	hits0 = stat_value("get_hits");
	read0 = stat_value("bytes_read");
	ps.fd = raw_open();
	cr_assert_geq(ps.fd, 0);
	setsockopt(ps.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	cr_assert_eq(pthread_create(&th, NULL, pipe_send, &ps), 0);

	/* 30 s at most; once the sender has stopped, stall + 3 s */
	deadline = h_now_ms() + 30000;
	for (;;) {
		long long now = h_now_ms();
		struct pollfd pf = { .fd = ps.fd, .events = POLLRDHUP };

		if (ps.stopped_at &&
		    now > ps.stopped_at + wait_ms((2 + 3) * 1000))
			break;
		if (now > deadline)
			break;
		if (check_rss()) {
			unsigned long long r = h_rss(srv.pid);

			rss_max = r > rss_max ? r : rss_max;
			samples++;
		}
		rounds++;
		if (!good_round_trip((int)wait_ms(2000), msg, sizeof(msg)))
			good_fail++;
		if (poll(&pf, 1, 0) == 1 &&
		    (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			closed = true;
			t_closed = h_now_ms();
			break;
		}
		h_sleep_ms(250);
	}
	atomic_store(&ps.stop, true);
	pthread_join(th, NULL);

	long long hits = stat_value("get_hits") - hits0 - rounds;
	long long rd = stat_value("bytes_read") - read0;

	fprintf(stderr,
		"pipelined gets: sent %llu of %llu bytes (%s), server read "
		"%lld bytes and served %lld gets of the 100 KiB value; "
		"closed %s (%lld ms after the sender stopped); RSS start "
		"%.1f MiB, max %.1f MiB over %d samples; good client %d "
		"round trips, %d failed\n",
		ps.sent, (unsigned long long)PIPE_REQS * 9,
		ps.done	 ? "all"
		: ps.err ? strerror(ps.err)
			 : "send buffer full",
		rd, hits, closed ? "yes" : "NO",
		closed ? t_closed - ps.stopped_at : -1LL, rss0 / (double)MIB,
		rss_max / (double)MIB, samples, rounds, good_fail);
	cr_expect_eq(good_fail, 0, "the good client failed %d of %d: %s",
		     good_fail, rounds, msg);
	cr_expect(closed,
		  "--stall-timeout 2: a connection that never reads its "
		  "replies was not closed within %lld ms of its sender "
		  "stopping",
		  wait_ms(5000));
	cr_expect_lt(hits, 2000,
		     "the server executed %lld of the gets it was never let "
		     "to answer: it did not stop reading at the output limit",
		     hits);
	if (check_rss())
		cr_expect_lt(rss_max, rss0 + 200 * MIB,
			     "RSS reached %llu bytes from %llu", rss_max, rss0);
	cr_assert(server_alive());
	GOOD_RT("after the pipelining client");
}

/* ---- 4. garbage ---- */

struct blast_result {
	size_t sent, got;
	bool closed;
	char head[128]; /* the first reply bytes */
	size_t headlen;
	unsigned long long rss_max;
};

/*
 * Sends N bytes on a fresh connection while reading whatever comes back,
 * until everything is sent and 500 ms pass without a reply, the server
 * closes, or TIMEOUT_MS pass. Samples the RSS.
 */
static void blast(const char *data, size_t n, long long timeout_ms,
		  struct blast_result *r)
{
	long long end = h_now_ms() + timeout_ms, quiet = 0, sample = 0;
	int fd = raw_open();
	char buf[65536];

	memset(r, 0, sizeof(*r));
	cr_assert_geq(fd, 0);
	set_nonblock(fd);
	while (h_now_ms() < end && !r->closed) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (r->sent < n)
			pf.events |= POLLOUT;
		else if (!quiet)
			quiet = h_now_ms() + 500;
		else if (h_now_ms() > quiet)
			break;
		if (h_now_ms() >= sample && check_rss()) {
			unsigned long long rss = h_rss(srv.pid);

			r->rss_max = rss > r->rss_max ? rss : r->rss_max;
			sample = h_now_ms() + 100;
		}
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = recv(fd, buf, sizeof(buf), 0);

			if (k > 0) {
				size_t h = sizeof(r->head) - r->headlen;

				h = (size_t)k < h ? (size_t)k : h;
				memcpy(r->head + r->headlen, buf, h);
				r->headlen += h;
				r->got += (size_t)k;
				quiet = 0;
			} else if (k == 0 || errno != EAGAIN) {
				r->closed = true;
			}
		}
		if ((pf.revents & POLLOUT) && r->sent < n) {
			size_t k = n - r->sent < 262144 ? n - r->sent : 262144;
			ssize_t w = send(fd, data + r->sent, k, MSG_NOSIGNAL);

			if (w > 0)
				r->sent += (size_t)w;
			else if (w < 0 && errno != EAGAIN)
				r->closed = true;
		}
	}
	raw_close(nraw - 1, false);
}

/* The reply to garbage: the server closed, or said ERROR/CLIENT_ERROR/
 * SERVER_ERROR (text) first. */
static void check_blast(const char *what, const struct blast_result *r,
			bool text, unsigned long long rss0)
{
	char esc[400];

	h_escape(esc, sizeof(esc), r->head, r->headlen);
	fprintf(stderr,
		"garbage: %s: sent %zu bytes, got %zu, %s, replies start "
		"\"%.120s\", RSS max %.1f MiB (start %.1f)\n",
		what, r->sent, r->got, r->closed ? "closed" : "open", esc,
		r->rss_max / (double)MIB, rss0 / (double)MIB);
	cr_assert(r->closed || r->got > 0, "%s: neither an error nor a close",
		  what);
	if (text && r->headlen)
		cr_assert(!strncmp(r->head, "ERROR", 5) ||
				  !strncmp(r->head, "CLIENT_ERROR", 12) ||
				  !strncmp(r->head, "SERVER_ERROR", 12),
			  "%s: replies start \"%s\"", what, esc);
	cr_assert(server_alive(), "%s: the server died", what);
	if (check_rss())
		cr_assert_lt(r->rss_max, rss0 + 64 * MIB,
			     "%s: RSS reached %llu bytes from %llu", what,
			     r->rss_max, rss0);
	c = hc_open(srv.port);
	cr_assert_not_null(c, "%s: connect after: errno %d", what, errno);
	SYNC(c, &srv);
	hc_close(&c);
	GOOD_RT(what);
}

#define GARBAGE_LEN (16 * MIB)

Test(hostile, garbage_gets_an_error_or_a_close_never_a_crash)
{
	struct blast_result r;
	unsigned long long rss0;
	char line[256];

	start(NULL);
	rss0 = h_rss(srv.pid);
	garbage = malloc(GARBAGE_LEN);
	cr_assert_not_null(garbage);

	/* random bytes on a text connection */
	fill_random(garbage, GARBAGE_LEN, 0x5eed1234abcdull);
	if (!garbage[0])
		garbage[0] = 'g';
	blast(garbage, GARBAGE_LEN, wait_ms(30000), &r);
	check_blast("16 MiB of random text", &r, true, rss0);

	/* random bytes on a binary connection */
	fill_random(garbage, GARBAGE_LEN, 0xb1a5b1a5ull);
	garbage[0] = 0;
	blast(garbage, GARBAGE_LEN, wait_ms(30000), &r);
	check_blast("16 MiB of random binary", &r, false, rss0);
	cr_assert(r.closed, "random binary: the connection stayed open");

	/* a binary frame that claims 1 MiB and holds random bytes */
	garbage[0] = 0;
	garbage[1] = 0x10;
	garbage[2] = 0;
	garbage[3] = 0;
	blast(garbage, GARBAGE_LEN, wait_ms(30000), &r);
	check_blast("a 1 MiB binary frame of random bytes", &r, false, rss0);
	cr_assert(r.closed, "random 1 MiB frame: the connection stayed open");

	/* NUL bytes inside command lines: a NUL ends the line's content, as
	 * in memcached ("get a\0b" asks for "a") */
	static const struct {
		const char *req;
		size_t n;
		const char *reply;
	} nul[] = {
		{ "get a\0b\r\n", 9, "END\r\n" },
		{ "ver\0sion\r\n", 10, "ERROR\r\n" },
		{ "set a\0b 0 0 1\r\n", 15, "ERROR\r\n" },
		{ "delete \0\r\n", 10, "ERROR\r\n" },
	};
	for (size_t i = 0; i < sizeof(nul) / sizeof(nul[0]); i++) {
		char esc[128];

		h_escape(esc, sizeof(esc), nul[i].req, nul[i].n);
		c = hc_open(srv.port);
		cr_assert_not_null(c);
		SEND_N(c, nul[i].req, nul[i].n);
		long len = hc_line(c, line, sizeof(line), H_TIMEOUT_MS);

		if (len > 0) {
			cr_assert_str_eq(line, nul[i].reply, "\"%s\": reply %s",
					 esc, line);
			fprintf(stderr, "garbage: \"%s\" -> %s", esc, line);
			/* still usable, or closed */
			(void)hc_send(c, "\r\nversion\r\n", 11);
			len = hc_line(c, line, sizeof(line), H_TIMEOUT_MS);
			while (len > 0 && strcmp(line, srv.version))
				len = hc_line(c, line, sizeof(line),
					      H_TIMEOUT_MS);
			cr_assert(len > 0 || hc_closed(c, 0) == 1,
				  "\"%s\": neither usable nor closed", esc);
		} else {
			cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
				     "\"%s\": no reply and no close", esc);
		}
		hc_close(&c);
	}

	/* a long line without a newline, plain and as a get */
	memset(garbage, 'x', MIB);
	blast(garbage, MIB, wait_ms(10000), &r);
	check_blast("a 1 MiB line", &r, true, rss0);
	cr_assert(r.closed, "a 1 MiB line: the connection stayed open");
	/* a get line may be as long as -I (1 MiB here): 2 MiB is past it */
	memset(garbage, 'x', 2 * MIB);
	memcpy(garbage, "get ", 4);
	blast(garbage, 2 * MIB, wait_ms(10000), &r);
	check_blast("a 2 MiB get line", &r, true, rss0);
	cr_assert(r.closed, "a 2 MiB get line: the connection stayed open");
}

/* ---- 5. connection storm ---- */

#define STORM_MS    4000 /* 10 s with RHKV_TEST_SOAK=1 */
#define STORM_SOAK  10000
#define STORM_MAX   100000
#define STORM_LIMIT 50
#define STORM_BURST 80

static atomic_long storm_connects, storm_failures;
static atomic_bool storm_stop;

static void *storm(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)srv.port) };

	(void)arg;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	while (!atomic_load(&storm_stop)) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			atomic_fetch_add(&storm_failures, 1);
			h_sleep_ms(1);
			continue;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			if (atomic_fetch_add(&storm_connects, 1) + 1 >=
			    STORM_MAX)
				atomic_store(&storm_stop, true);
		} else {
			/* out of ephemeral ports, or the backlog is full */
			atomic_fetch_add(&storm_failures, 1);
			h_sleep_ms(1);
		}
		close(fd);
	}
	return NULL;
}

Test(hostile, connection_storm_and_a_burst_over_the_limit)
{
	static const char *const extra[] = { "-c", "50", NULL };
	pthread_t th[2];
	long long t0, ms;
	int base, after, accepted = 0, refused = 0;
	char line[128];

	start(extra);
	base = settled_fds();
	cr_assert_gt(base, 0);
	/* the good client connects first: the limit does not refuse it */
	good = hc_open(srv.port);
	cr_assert_not_null(good);
	SYNC(good, &srv);
	int good_fail = 0, rounds = 0;
	char msg[H_MSG_CAP] = "";

	atomic_store(&storm_connects, 0);
	atomic_store(&storm_failures, 0);
	atomic_store(&storm_stop, false);
	t0 = h_now_ms();
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, storm, NULL), 0);
	while (!atomic_load(&storm_stop) &&
	       h_now_ms() - t0 < h_soak_ms(STORM_MS, STORM_SOAK)) {
		static const char rt[] = "set storm 0 0 2\r\nok\r\n"
					 "get storm\r\n";
		static const char want[] = "STORED\r\nVALUE storm 0 2\r\n"
					   "ok\r\nEND\r\n";

		rounds++;
		if (hc_send(good, rt, sizeof(rt) - 1) ||
		    !hc_expect(good, want, sizeof(want) - 1, (int)wait_ms(2000),
			       msg, sizeof(msg)))
			good_fail++;
		h_sleep_ms(250);
	}
	atomic_store(&storm_stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ms = h_now_ms() - t0;
	fprintf(stderr,
		"connection storm: %ld connect+close cycles in %lld ms from 2 "
		"threads: %.0f per second (%ld failed connects)\n",
		atomic_load(&storm_connects), ms,
		atomic_load(&storm_connects) * 1000.0 / (double)ms,
		atomic_load(&storm_failures));
	cr_assert(server_alive(), "the server died in the storm");
	cr_assert_eq(good_fail, 0,
		     "the good client failed %d of %d round trips in the "
		     "storm: %s",
		     good_fail, rounds, msg);
	/* connections the storm left queued count against -c until the
	 * server has seen them close */
	after = fds_down_to(base + 3, wait_ms(30000));
	cr_assert_leq(after, base + 3,
		      "after the storm the server holds %d descriptors, %d "
		      "before (and one good client)",
		      after, base);
	/* Storm connections still in the listen queue take a slot each
	 * when accepted, until the server reads their close: the refusal
	 * is right until the queue has drained, not after. */
	{
		char m_[H_MSG_CAP];
		long long end = h_now_ms() + wait_ms(30000);
		bool ok;

		while (!(ok = good_round_trip(H_TIMEOUT_MS, m_, sizeof(m_))) &&
		       strstr(m_, "Too many open connections") &&
		       h_now_ms() < end)
			h_sleep_ms(50);
		cr_assert(ok,
			  "after the storm: the good client was not "
			  "served: %s",
			  m_);
	}

	/* Over TLS a connection past -c gets the plain-text refusal where
	 * its handshake expects a ServerHello: it fails to connect, which
	 * is the refusal there; the burst below is the plain protocol's. */
	if (h_tls())
		return;
	/* 80 at once against -c 50, the good client still held */
	for (int i = 0; i < STORM_BURST; i++) {
		conns[i] = hc_open(srv.port);
		cr_assert_not_null(conns[i], "connect %d: errno %d", i, errno);
	}
	for (int i = 0; i < STORM_BURST; i++)
		(void)hc_send(conns[i], "version\r\n", 9); /* may race */
	for (int i = 0; i < STORM_BURST; i++) {
		cr_assert_gt(
			hc_line(conns[i], line, sizeof(line), H_TIMEOUT_MS), 0,
			"burst connection %d: no reply", i);
		if (!strcmp(line, srv.version)) {
			accepted++;
			continue;
		}
		cr_assert_str_eq(line, "ERROR Too many open connections\r\n",
				 "burst connection %d", i);
		cr_assert_eq(hc_closed(conns[i], H_TIMEOUT_MS), 1,
			     "refused connection %d was not closed", i);
		refused++;
		hc_close(&conns[i]);
	}
	fprintf(stderr, "burst: %d accepted, %d refused (-c %d, 1 held)\n",
		accepted, refused, STORM_LIMIT);
	cr_assert_leq(accepted, STORM_LIMIT - 1);
	cr_assert_eq(accepted + refused, STORM_BURST);
	/* the good client is still served, and so are the accepted ones */
	RT(good, "set good 0 0 2\r\nok\r\n", "STORED\r\n");
	RT(good, "get good\r\n", "VALUE good 0 2\r\nok\r\nEND\r\n");
	for (int i = 0; i < STORM_BURST; i++)
		if (conns[i])
			SYNC(conns[i], &srv);

	for (int i = 0; i < STORM_BURST; i++)
		hc_close(&conns[i]);
	hc_close(&good);
	after = fds_down_to(base + 2, wait_ms(30000));
	cr_assert_leq(after, base + 2,
		      "after closing all, the server holds %d descriptors, "
		      "%d before the storm",
		      after, base);
	GOOD_RT("after the burst");
}

/* ---- 6. resets and half-closes ---- */

/* Reads the whole reply to one "get KEY" of N bytes of FILL. */
static void expect_value(struct hconn *conn, const char *key, size_t n,
			 char fill, int ms, int nth)
{
	char line[256], want[256];
	char *v = malloc(n + 2);

	cr_assert_not_null(v);
	snprintf(want, sizeof(want), "VALUE %s 0 %zu\r\n", key, n);
	cr_assert_gt(hc_line(conn, line, sizeof(line), ms), 0,
		     "reply %d: no VALUE line for %s (connection closed "
		     "or silent)",
		     nth, key);
	cr_assert_str_eq(line, want);
	size_t got = hc_read(conn, v, n + 2, ms);

	bool ok = got == n + 2 && v[n] == '\r' && v[n + 1] == '\n';

	for (size_t i = 0; ok && i < n; i++)
		ok = v[i] == fill;
	free(v);
	cr_assert(ok,
		  "reply %d: %s: %zu of %zu value bytes arrived (or wrong "
		  "ones)",
		  nth, key, got, n + 2);
}

Test(hostile, resets_and_half_closes_with_replies_in_flight)
{
	int base, after, fd;
	char buf[65536];

	start(NULL);
	store("big", BIG_LEN, 'B');
	store("huge", HUGE_LEN, 'H');
	base = settled_fds();

	/* get big, then an RST before reading: twenty times */
	for (int i = 0; i < 20; i++) {
		fd = raw_open();
		cr_assert_geq(fd, 0);
		cr_assert_eq(send(fd, "get big\r\n", 9, MSG_NOSIGNAL), 9);
		if (i % 2)
			h_sleep_ms(5); /* the reply is under way */
		raw_close(nraw - 1, true);
	}
	nraw = 0;
	GOOD_RT("after resets before the reply");

	/* a request, then shutdown(SHUT_WR): the full reply, then a close */
	c = hc_open(srv.port);
	cr_assert_not_null(c);
	SEND(c, "get big\r\n");
	cr_assert_eq(shutdown(c->fd, SHUT_WR), 0);
	expect_value(c, "big", BIG_LEN, 'B', H_TIMEOUT_MS, 1);
	EXPECT(c, "END\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
		     "half-closed: not closed after the reply");
	hc_close(&c);

	/* 20 pipelined gets of a 1 MB value; 100 KB read, then an RST */
	fd = raw_open();
	cr_assert_geq(fd, 0);
	breq.len = 0;
	for (int i = 0; i < 20; i++)
		hbuf_printf(&breq, "get huge\r\n");
	cr_assert_eq(send(fd, breq.p, breq.len, MSG_NOSIGNAL),
		     (ssize_t)breq.len);
	breq.len = 0;
	size_t got = 0;

	while (got < 100000) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		cr_assert_eq(poll(&pf, 1, H_TIMEOUT_MS), 1,
			     "the 1 MB replies stopped after %zu bytes", got);
		ssize_t k = recv(fd, buf, sizeof(buf), 0);

		cr_assert_gt(k, 0, "closed after %zu bytes", got);
		got += (size_t)k;
	}
	raw_close(nraw - 1, true);
	nraw = 0;

	cr_assert(server_alive(), "the server died");
	GOOD_RT("after a reset in the middle of a reply stream");
	after = fds_down_to(base, wait_ms(30000));
	cr_assert_leq(after, base,
		      "the server holds %d descriptors, %d before the resets",
		      after, base);
}

/*
 * A client with a small receive buffer sends its requests, shuts down its
 * write side and reads slowly: the server sees the EOF while most of the
 * replies are still in its output buffer, and must still send them all
 * before it closes. One get of 100 KiB (under the output limit), then five
 * pipelined gets of 1 MB (past it).
 */
static struct hconn *small_window_client(void)
{
	int fd = raw_open_buf(4096);
	struct hconn *h;

	cr_assert_geq(fd, 0, "connect: errno %d", errno);
	nraw--; /* the hconn owns it now */
	h = calloc(1, sizeof(*h));
	cr_assert_not_null(h);
	h->fd = fd;
	return h;
}

Test(hostile, half_close_with_a_reply_pending_gets_all_of_it)
{
	start(NULL);
	store("big", BIG_LEN, 'B');

	c = small_window_client();
	SEND(c, "get big\r\n");
	cr_assert_eq(shutdown(c->fd, SHUT_WR), 0);
	h_sleep_ms(300); /* the EOF arrives while the reply is pending */
	expect_value(c, "big", BIG_LEN, 'B', H_TIMEOUT_MS, 1);
	EXPECT(c, "END\r\n");
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
		     "half-closed: not closed after the reply");
	hc_close(&c);
	GOOD_RT("after the half-close");
}

Test(hostile, half_close_with_pipelined_replies_past_the_output_limit)
{
	start(NULL);
	store("huge", HUGE_LEN, 'H');
	c = small_window_client();
	SEND(c, "get huge\r\nget huge\r\nget huge\r\nget huge\r\n"
		"get huge\r\n");
	cr_assert_eq(shutdown(c->fd, SHUT_WR), 0);
	h_sleep_ms(300);
	for (int i = 0; i < 5; i++) {
		expect_value(c, "huge", HUGE_LEN, 'H', H_TIMEOUT_MS, i + 1);
		EXPECT(c, "END\r\n");
	}
	cr_assert_eq(hc_closed(c, H_TIMEOUT_MS), 1,
		     "half-closed: not closed after the replies");
	GOOD_RT("after the half-close");
}

/* The tests share timing-sensitive bounds on a small machine: one at a
 * time unless --jobs says otherwise. */
int main(int argc, char *argv[])
{
	struct criterion_test_set *tests = criterion_initialize();
	int result = 0;

	criterion_options.jobs = 1;
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}
