/*
 * Restarts under load. SIGTERM while four clients pipeline sets and gets
 * (two of them reading slowly, so replies back up in the server): every
 * reply the server sends arrives whole, each connection's byte stream ends
 * on a reply boundary (a reply is there in full or not at all), and the
 * server exits with status 0 within 2 s. SIGKILL under the same load, then
 * a new rhkvd on the same port at once (sockets of the old one in
 * TIME_WAIT): it starts and answers `version` within 2 s. The flags and the
 * shutdown contract are rhkvd's: the tests skip on memcached.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define RS_CLIENTS   4
#define RS_KEYS	     500   /* per client */
#define RS_MAX_OUT   2000  /* requests sent and not yet answered */
#define RS_MAX_BYTES 65536 /* request bytes queued before they are sent */
#define RS_LOAD_MS   1500
#define RS_EXIT_MS   2000 /* SIGTERM to exit; restart to `version` */
#define RS_EOF_MS    10000
#define RS_IDLE	     8 /* idle connections: closed by FIN, so TIME_WAIT */

static struct srv srv;
static pid_t pid2; /* the restarted server */
static struct hconn *c;

static void reap(pid_t *pid)
{
	int st;

	if (*pid <= 0)
		return;
	kill(*pid, SIGKILL);
	waitpid(*pid, &st, 0);
	*pid = 0;
}

static void teardown(void)
{
	hc_close(&c);
	reap(&pid2);
	if (srv.pid)
		H_EXPECT_EXIT_OK(srv_stop(&srv), "the server after SIGTERM");
}

TestSuite(restart, .fini = teardown, .timeout = 100);

/* A time limit for the server under test: MS, longer when sanitized. */
static long long limit_ms(long long ms, pid_t pid)
{
	enum h_san san = h_sanitizer(pid);

	if (san == H_SAN_THREAD)
		return 5 * ms;
	return H_SANITIZED_BUILD || san == H_SAN_ADDRESS ? 2 * ms : ms;
}

/* ---- a pipelining client that checks every reply byte ---- */

struct rs_client {
	int id, port;
	bool slow; /* reads 8 KiB every 2 ms until `draining` */
	pthread_t th;
	/* requests sent, oldest first: key index, negative for a get */
	int *q;
	size_t qhead, qlen, qcap;
	struct hbuf out; /* requests not yet sent */
	size_t out_off;
	char *in; /* reply bytes not yet matched */
	size_t in_len, in_cap;
	long sent, sets, gets, hits, bytes_in;
	bool eof, send_closed;
	int eof_errno;	/* 0: EOF; else how recv failed (ECONNRESET) */
	int send_errno; /* how send failed once the server closed */
	char msg[1024]; /* a failure; "" when none */
};

static atomic_bool draining; /* the server was signalled: read fast */
static atomic_bool rs_stop;  /* the test gives up */

static void rs_key(char *dst, size_t cap, int client, int k)
{
	snprintf(dst, cap, "r:%d:%d", client, k);
}

/* Key K's value: 100 .. 16,099 bytes of its name repeated. */
static size_t rs_len(int k)
{
	return 100 + (size_t)(((unsigned)k * 2654435761u) >> 8) % 16000;
}

static void rs_fail(struct rs_client *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rs_fail(struct rs_client *cl, const char *fmt, ...)
{
	va_list ap;

	if (cl->msg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(cl->msg, sizeof(cl->msg), fmt, ap);
	va_end(ap);
}

static void rs_queue(struct rs_client *cl, uint64_t *rng)
{
	char key[32];
	int k = (int)(*rng % RS_KEYS);

	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	if (cl->qlen == cl->qcap)
		return;
	rs_key(key, sizeof(key), cl->id, k);
	if ((*rng >> 33) % 2) {
		size_t len = rs_len(k), kl = strlen(key);

		hbuf_printf(&cl->out, "set %s 0 0 %zu\r\n", key, len);
		for (size_t i = 0; i < len; i += kl)
			hbuf_add(&cl->out, key, len - i < kl ? len - i : kl);
		hbuf_add(&cl->out, "\r\n", 2);
	} else {
		hbuf_printf(&cl->out, "get %s\r\n", key);
		k = -1 - k;
	}
	cl->q[(cl->qhead + cl->qlen++) % cl->qcap] = k;
	cl->sent++;
}

/*
 * Matches whole replies at the front of cl->in against the oldest
 * requests. Returns false on a wrong byte (cl->msg says which).
 */
static bool rs_match(struct rs_client *cl)
{
	size_t off = 0;

	while (cl->qlen) {
		int k = cl->q[cl->qhead];
		const char *p = cl->in + off;
		size_t have = cl->in_len - off, need;
		char key[32], head[64];

		if (k >= 0) {
			static const char stored[] = "STORED\r\n";

			need = sizeof(stored) - 1;
			if (memcmp(p, stored, have < need ? have : need)) {
				rs_fail(cl, "reply %ld to set r:%d:%d: %.*s",
					cl->sets + cl->gets + 1, cl->id, k,
					(int)(have < 40 ? have : 40), p);
				return false;
			}
			if (have < need)
				break;
			cl->sets++;
		} else {
			static const char end[] = "END\r\n";

			rs_key(key, sizeof(key), cl->id, -1 - k);
			size_t len = rs_len(-1 - k);
			int hl = snprintf(head, sizeof(head),
					  "VALUE %s 0 %zu\r\n", key, len);

			if (have && p[0] == 'E') {
				need = sizeof(end) - 1;
				if (memcmp(p, end, have < need ? have : need)) {
					rs_fail(cl, "reply to get %s: %.*s",
						key,
						(int)(have < 40 ? have : 40),
						p);
					return false;
				}
				if (have < need)
					break;
			} else {
				size_t kl = strlen(key);
				size_t cmp =
					have < (size_t)hl ? have : (size_t)hl;

				if (memcmp(p, head, cmp)) {
					rs_fail(cl, "reply to get %s: %.*s",
						key,
						(int)(have < 60 ? have : 60),
						p);
					return false;
				}
				need = (size_t)hl + len + 7;
				for (size_t i = (size_t)hl;
				     i < have && i < need; i++) {
					size_t j = i - (size_t)hl;
					char want =
						j < len ? key[j % kl]
							: "\r\nEND\r\n"[j -
									len];

					if (p[i] != want) {
						rs_fail(cl,
							"get %s: byte %zu of "
							"%zu is '%c', not "
							"'%c'",
							key, i, need, p[i],
							want);
						return false;
					}
				}
				if (have < need)
					break;
				cl->hits++;
			}
			cl->gets++;
		}
		off += need;
		cl->qhead = (cl->qhead + 1) % cl->qcap;
		cl->qlen--;
	}
	memmove(cl->in, cl->in + off, cl->in_len - off);
	cl->in_len -= off;
	return true;
}

static void *rs_client_main(void *arg)
{
	struct rs_client *cl = arg;
	struct hconn *conn = hc_open(cl->port);
	uint64_t rng = 0x2545F4914F6CDD1Dull * (uint64_t)(cl->id + 1);
	long long deadline = 0;

	if (!conn) {
		rs_fail(cl, "client %d: connect: errno %d", cl->id, errno);
		return NULL;
	}
	while (!cl->eof && !atomic_load(&rs_stop)) {
		bool drain = atomic_load(&draining);

		if (drain && !deadline)
			deadline = h_now_ms() + RS_EOF_MS;
		if (deadline && h_now_ms() > deadline) {
			rs_fail(cl,
				"client %d: no EOF %d ms after SIGTERM "
				"(%zu requests unanswered)",
				cl->id, RS_EOF_MS, cl->qlen);
			break;
		}
		/* Keep the pipeline full until the server closes. */
		while (!cl->send_closed &&
		       cl->out.len - cl->out_off < RS_MAX_BYTES &&
		       cl->qlen < (size_t)RS_MAX_OUT)
			rs_queue(cl, &rng);

		struct pollfd pfd = { .fd = conn->fd, .events = POLLIN };

		if (!cl->send_closed && cl->out.len > cl->out_off)
			pfd.events |= POLLOUT;
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR) {
			rs_fail(cl, "client %d: poll: errno %d", cl->id, errno);
			break;
		}
		if (pfd.revents & POLLOUT) {
			ssize_t w = send(conn->fd, cl->out.p + cl->out_off,
					 cl->out.len - cl->out_off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0) {
				cl->out_off += (size_t)w;
				if (cl->out_off == cl->out.len)
					cl->out.len = cl->out_off = 0;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				/* The server closed: read what it sent. */
				cl->send_closed = true;
				cl->send_errno = errno;
			}
		}
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (cl->slow && !drain)
			h_sleep_ms(2);
		size_t room = cl->slow && !drain ? 8192 : 262144;

		if (cl->in_cap - cl->in_len < room) {
			cl->in_cap = cl->in_len + room;
			cl->in = realloc(cl->in, cl->in_cap);
			if (!cl->in)
				abort();
		}
		ssize_t r =
			recv(conn->fd, cl->in + cl->in_len, room, MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			/* EOF, or a reset: closed either way */
			cl->eof = true;
			cl->eof_errno = r < 0 ? errno : 0;
			break;
		}
		cl->in_len += (size_t)r;
		cl->bytes_in += r;
		if (!rs_match(cl))
			break;
	}
	hc_close(&conn);
	return NULL;
}

static void clients_start(struct rs_client *cl, int port)
{
	atomic_store(&draining, false);
	atomic_store(&rs_stop, false);
	for (int i = 0; i < RS_CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].id = i;
		cl[i].port = port;
		cl[i].slow = i < 2;
		cl[i].qcap = RS_MAX_OUT;
		cl[i].q = calloc(RS_MAX_OUT, sizeof(int));
		cr_assert_not_null(cl[i].q);
		cr_assert_eq(
			pthread_create(&cl[i].th, NULL, rs_client_main, &cl[i]),
			0);
	}
}

static void clients_join(struct rs_client *cl)
{
	for (int i = 0; i < RS_CLIENTS; i++)
		pthread_join(cl[i].th, NULL);
}

static void clients_free(struct rs_client *cl)
{
	for (int i = 0; i < RS_CLIENTS; i++) {
		free(cl[i].q);
		free(cl[i].in);
		hbuf_free(&cl[i].out);
	}
}

static void load(struct rs_client *cl)
{
	long long until = h_now_ms() + limit_ms(RS_LOAD_MS, srv.pid);

	while (h_now_ms() < until) {
		h_sleep_ms(50);
		for (int i = 0; i < RS_CLIENTS; i++)
			if (cl[i].msg[0] || cl[i].eof)
				return; /* reported after the join */
	}
}

static void skip_on_memcached(void)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("rhkvd's shutdown and flags; the server under "
			     "test is memcached (RHKV_TEST_SERVER)");
}

/* ---- (a) SIGTERM under load ---- */

Test(restart, sigterm_under_load_loses_no_reply)
{
	static struct rs_client cl[RS_CLIENTS];
	int status = -1;

	skip_on_memcached();
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	pid_t pid = srv.pid;
	long long exit_limit = limit_ms(RS_EXIT_MS, pid);

	clients_start(cl, srv.port);
	load(cl);

	long long t0 = h_now_ms();

	cr_assert_eq(kill(pid, SIGTERM), 0);
	atomic_store(&draining, true);
	bool exited = false;

	while (h_now_ms() - t0 < 10000) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			exited = true;
			break;
		}
		h_sleep_ms(5);
	}
	long long took = h_now_ms() - t0;

	if (!exited) {
		atomic_store(&rs_stop, true);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	srv.pid = 0;
	clients_join(cl);

	long sent = 0, answered = 0, hits = 0, bytes = 0;

	for (int i = 0; i < RS_CLIENTS; i++) {
		sent += cl[i].sent;
		answered += cl[i].sets + cl[i].gets;
		hits += cl[i].hits;
		bytes += cl[i].bytes_in;
		cr_log_info(
			"client %d%s: %ld requests sent, %ld answered "
			"(%ld sets, %ld gets, %ld hits), %ld bytes, %zu "
			"unanswered, %zu bytes of a partial reply at %s "
			"(send: %s)",
			i, cl[i].slow ? " (slow reader)" : "", cl[i].sent,
			cl[i].sets + cl[i].gets, cl[i].sets, cl[i].gets,
			cl[i].hits, cl[i].bytes_in, cl[i].qlen, cl[i].in_len,
			cl[i].eof_errno ? strerror(cl[i].eof_errno) : "EOF",
			cl[i].send_errno ? strerror(cl[i].send_errno) : "ok");
	}
	cr_log_info("sigterm: exit after %lld ms (status %#x); %ld requests "
		    "sent, %ld answered, %ld hits, %ld reply bytes",
		    took, status, sent, answered, hits, bytes);
	cr_assert(exited, "the server did not exit within 10 s of SIGTERM");
	for (int i = 0; i < RS_CLIENTS; i++) {
		cr_assert(!cl[i].msg[0], "client %d: %s", i, cl[i].msg);
		cr_assert(cl[i].eof, "client %d saw no EOF", i);
		cr_assert_eq(
			cl[i].in_len, 0,
			"client %d: the stream ended (%s; send: %s) inside a "
			"reply: %zu bytes of the reply to request %ld (a %s), "
			"%zu requests unanswered",
			i, cl[i].eof_errno ? strerror(cl[i].eof_errno) : "EOF",
			cl[i].send_errno ? strerror(cl[i].send_errno) : "ok",
			cl[i].in_len, cl[i].sets + cl[i].gets + 1,
			cl[i].q[cl[i].qhead] >= 0 ? "set" : "get", cl[i].qlen);
		cr_assert_gt(cl[i].sets + cl[i].gets, 0,
			     "client %d: no reply before SIGTERM", i);
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "wait status %#x after SIGTERM", status);
	cr_assert_leq(took, exit_limit,
		      "exit %lld ms after SIGTERM (limit %lld)", took,
		      exit_limit);
	clients_free(cl);
}

/* ---- (b) SIGKILL under load, then a restart on the same port ---- */

static const char *server_path(void)
{
	const char *v = getenv(H_ENV_SERVER);

	if (!v || !*v)
		v = getenv(H_ENV_SERVER_DEFAULT);
	return v;
}

/* Starts `SERVER -p PORT -l 127.0.0.1 -t 2` (as tests/client/util.c's
 * cl_start_on); returns its pid, or -1. */
static pid_t start_on(int port)
{
	const char *argv[] = { server_path(), "-p", NULL, "-l",
			       "127.0.0.1",   "-t", "2",  NULL };
	char portbuf[16];
	pid_t parent = getpid(), pid;

	snprintf(portbuf, sizeof(portbuf), "%d", port);
	argv[2] = portbuf;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Sockets on local port PORT in /proc/net/tcp by state (06 TIME_WAIT). */
static int count_state(int port, unsigned int state)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/net/tcp", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int lport, st;

		if (sscanf(line, " %*d: %*x:%x %*x:%*x %x", &lport, &st) == 2 &&
		    (int)lport == port && st == state)
			n++;
	}
	fclose(f);
	return n;
}

Test(restart, sigkill_then_restart_on_the_same_port)
{
	static struct rs_client cl[RS_CLIENTS];
	char line[128];
	int status;

	skip_on_memcached();
	cr_assert_eq(srv_start(&srv, NULL), 0, "the server did not start");
	int port = srv.port;
	long long up_limit = limit_ms(RS_EXIT_MS, srv.pid);

	static struct hconn *idle[RS_IDLE];

	for (int i = 0; i < RS_IDLE; i++) {
		idle[i] = hc_open(port);
		cr_assert_not_null(idle[i], "connect: errno %d", errno);
		SYNC(idle[i], &srv);
	}
	clients_start(cl, port);
	load(cl);
	cr_assert_eq(kill(srv.pid, SIGKILL), 0);
	cr_assert_eq(waitpid(srv.pid, &status, 0), srv.pid);
	srv.pid = 0;
	atomic_store(&draining, true);
	clients_join(cl);
	/* The kernel closed the killed server's side of the idle ones with
	 * a FIN; closing ours leaves the server's side in TIME_WAIT. */
	for (int i = 0; i < RS_IDLE; i++) {
		int closed = hc_closed(idle[i], 5000);

		hc_close(&idle[i]);
		cr_assert_eq(closed, 1, "idle connection %d: no EOF", i);
	}

	long answered = 0;

	for (int i = 0; i < RS_CLIENTS; i++) {
		/* A partial last reply is fine after SIGKILL; a wrong byte
		 * is not. */
		cr_assert(!cl[i].msg[0], "client %d: %s", i, cl[i].msg);
		cr_assert(cl[i].eof, "client %d saw no EOF", i);
		answered += cl[i].sets + cl[i].gets;
	}
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "wait status %#x", status);
	int time_wait = count_state(port, 0x06);
	int other = count_state(port, 0x01) + count_state(port, 0x08) +
		    count_state(port, 0x04) + count_state(port, 0x05);

	long long t0 = h_now_ms();

	pid2 = start_on(port);
	cr_assert_gt(pid2, 0, "fork: errno %d", errno);
	bool up = false;

	while (!up && h_now_ms() - t0 < 10000) {
		struct hconn *v;

		if (waitpid(pid2, &status, WNOHANG) == pid2) {
			pid2 = 0;
			cr_assert_fail("the new server exited at once (wait "
				       "status %#x): port %d not reusable "
				       "with %d sockets in TIME_WAIT?",
				       status, port, time_wait);
		}
		v = hc_open(port);
		if (v) {
			up = hc_send(v, "version\r\n", 9) == 0 &&
			     hc_line(v, line, sizeof(line), 5000) > 8 &&
			     !strncmp(line, "VERSION ", 8);
			hc_close(&v);
		}
		if (!up)
			h_sleep_ms(5);
	}
	long long took = h_now_ms() - t0;

	cr_log_info("sigkill: %ld replies before the kill; %d sockets in "
		    "TIME_WAIT and %d closing on port %d; the new server "
		    "answered version after %lld ms",
		    answered, time_wait, other, port, took);
	cr_assert_gt(time_wait, 0, "no socket on port %d in TIME_WAIT", port);
	cr_assert(up, "the new server did not answer version within 10 s");
	cr_assert_leq(took, up_limit,
		      "the new server answered version after %lld ms "
		      "(limit %lld)",
		      took, up_limit);

	/* It serves, and stops cleanly. */
	c = hc_open(port);
	cr_assert_not_null(c, "connect: errno %d", errno);
	RT(c, "set after 0 0 4\r\nkill\r\n", "STORED\r\n");
	RT(c, "get after\r\n", "VALUE after 0 4\r\nkill\r\nEND\r\n");
	hc_close(&c);
	kill(pid2, SIGTERM);
	long long d = h_now_ms() + 10000;
	pid_t r;

	while ((r = waitpid(pid2, &status, WNOHANG)) == 0 && h_now_ms() < d)
		h_sleep_ms(5);
	cr_assert_eq(r, pid2, "the new server ignored SIGTERM");
	pid2 = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "wait status %#x after SIGTERM", status);
	clients_free(cl);
}
