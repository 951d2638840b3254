/*
 * Integration test harness: starts the server under test (rhkvd, or the
 * reference memcached) on a free 127.0.0.1 port and stops it by PID, and
 * gives the tests buffered, blocking TCP clients with deadlines and
 * byte-exact reply checks that print both sides escaped on a mismatch.
 */
#ifndef RHKV_TESTS_SERVER_HARNESS_H
#define RHKV_TESTS_SERVER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * RHKV_TEST_SERVER names the server: a path to rhkvd, or `memcached` (or
 * any path whose last component is `memcached`), each started with
 * memcached's command line:
 *   SERVER -u root -U 0 -p PORT -l 127.0.0.1 -t 2 EXTRA...
 * Unset, RHKV_TEST_SERVER_DEFAULT (what meson sets: the rhkvd it built)
 * applies, then `memcached`. EXTRA holds memcached-compatible flags; for
 * memcached an `-I SIZE` below 1m also gets `-o slab_chunk_max=SIZE/2`,
 * without which memcached 1.6 refuses to start.
 */
#define H_ENV_SERVER	     "RHKV_TEST_SERVER"
#define H_ENV_SERVER_DEFAULT "RHKV_TEST_SERVER_DEFAULT"
/*
 * RHKV_TEST_TLS=1 runs the same tests over TLS: an rhkvd also gets a TLS
 * listener (a throwaway self-signed certificate, made with the openssl
 * CLI), and hc_open() of its port connects there and does the handshake,
 * so every hc_* call speaks TLS. Raw sockets a test opens itself still
 * reach the plain port. memcached runs as without it.
 */
#define H_ENV_TLS "RHKV_TEST_TLS"

enum srv_kind {
	SRV_RHKVD,
	SRV_MEMCACHED,
};

struct srv {
	enum srv_kind kind;
	pid_t pid;	  /* 0 when not running */
	int port;	  /* 127.0.0.1 port it listens on */
	int tls_port;	  /* its TLS port under RHKV_TEST_TLS, else 0 */
	char version[80]; /* its reply to "version", "\r\n" included;
			     "" when it requires auth (-Y, --auth-file) */
};

/* Default deadline of one reply, in milliseconds: generous, as a sanitizer
 * daemon on a loaded machine may take seconds; a passing test never waits
 * it out. */
#define H_TIMEOUT_MS 20000
/* Size of a mismatch message (both sides escaped). */
#define H_MSG_CAP 4096

/* Whether hc_* connections speak TLS (RHKV_TEST_TLS, an rhkvd). */
bool h_tls(void);

/* The kind RHKV_TEST_SERVER names, without starting anything. */
enum srv_kind srv_kind_from_env(void);

/*
 * Starts the server with the NULL-terminated EXTRA flags (NULL: none) on a
 * free port, waits until it answers "version", and fills *s. The child dies
 * with the calling thread (PR_SET_PDEATHSIG), so a crashed test leaks no
 * server. Returns 0, or -1 with a message on stderr.
 */
int srv_start(struct srv *s, const char *const *extra);
/* As srv_start, for the server SERVER (a path to rhkvd, or `memcached`)
 * whatever RHKV_TEST_SERVER says: a reference server beside the one under
 * test. */
int srv_start_as(struct srv *s, const char *server, const char *const *extra);

/*
 * SIGTERM, then SIGKILL if it has not exited within 30 s (a sanitizer build
 * sealing a memory file on a loaded machine is slow); reaps it. Returns
 * its wait status (0: exited with status 0), or -1 if it was not running.
 * Safe to call twice.
 */
int srv_stop(struct srv *s);

/* Writes what wait status STATUS (srv_stop's) says into DST: "exited with
 * status 66", "killed by signal 6 (Aborted)", "was not running" (-1). */
char *h_wait_status(char *dst, size_t cap, int status);

/* A client connection with its own read buffer. */
struct hconn {
	int fd;
	void *tls; /* the OpenSSL connection (SSL *) in TLS mode, else NULL */
	size_t off, len; /* unread bytes are buf[off .. len) */
	char buf[16384];
};

/* Connects to 127.0.0.1:PORT (TCP_NODELAY), over TLS when PORT is a
 * server's under RHKV_TEST_TLS; NULL with errno on failure. */
struct hconn *hc_open(int port);
/* Closes and frees *c, sets *c = NULL; NULL is fine. */
void hc_close(struct hconn **c);

/* Sends all N bytes (MSG_NOSIGNAL). 0, or -1 with errno. */
int hc_send(struct hconn *c, const void *p, size_t n);
/* Formats (at most 64 KiB) and sends. 0, or -1 with errno. */
int hc_sendf(struct hconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sends in writes of at most CHUNK bytes, sleeping DELAY_US after each. */
int hc_send_split(struct hconn *c, const void *p, size_t n, size_t chunk,
		  unsigned delay_us);

/*
 * Reads exactly N bytes unless the peer closes or TIMEOUT_MS pass first.
 * Returns the count read (a reset counts as a close).
 */
size_t hc_read(struct hconn *c, void *dst, size_t n, int timeout_ms);
/*
 * Reads one line, "\n" included, NUL-terminated. Returns its length, or -1
 * on close, timeout, or a line longer than CAP - 1.
 */
long hc_line(struct hconn *c, char *dst, size_t cap, int timeout_ms);
/* 1: the peer closed (EOF or reset) within TIMEOUT_MS; 0: still open and
 * silent; -1: bytes arrived instead (they stay buffered). */
int hc_closed(struct hconn *c, int timeout_ms);

/*
 * Reads len(EXP) bytes and compares. On a mismatch (or short read) writes
 * "expected ... got ..." with both sides escaped into MSG and returns false;
 * it stops waiting at the first differing byte.
 */
bool hc_expect(struct hconn *c, const void *exp, size_t n, int timeout_ms,
	       char *msg, size_t cap);

/* One item of a get/gets/gat/gats reply. */
struct hvalue {
	char key[256];
	unsigned long flags;
	unsigned long long cas; /* 0 when the line has none */
	size_t len;		/* value length; the value is in val */
	char val[65536];
	char line[512]; /* the header line as received, for messages */
};

/*
 * Reads "VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n" into *V and
 * returns 1, or reads "END\r\n" and returns 0; -1 on anything else (the line
 * is in v->line).
 */
int hc_value(struct hconn *c, struct hvalue *v, int timeout_ms);

/* Writes SRC as a C string literal body ("\r\n", "\x01") into DST,
 * truncating with "..." past CAP; returns DST. */
char *h_escape(char *dst, size_t cap, const void *src, size_t n);

/* A growable byte buffer for building large requests. */
struct hbuf {
	char *p;
	size_t len, cap;
};

void hbuf_add(struct hbuf *b, const void *p, size_t n);
void hbuf_printf(struct hbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hbuf_free(struct hbuf *b);

/*
 * The sanitizer a process runs under, from /proc/PID/maps (a TSan or ASan
 * rhkvd may run under a normal test build): its RSS then means nothing and
 * its background work is slower. H_SANITIZED_BUILD: the test itself.
 */
enum h_san { H_SAN_NONE, H_SAN_ADDRESS, H_SAN_THREAD };
enum h_san h_sanitizer(pid_t pid);
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
	__has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define H_SANITIZED_BUILD 1
#else
#define H_SANITIZED_BUILD 0
#endif

/* VmRSS of a process in bytes; 0 when it cannot be read. */
unsigned long long h_rss(pid_t pid);

/* A `stats [group]` reply: its "STAT name value" lines. */
#define H_STATS_MAX 160
struct hstats {
	int n;
	char name[H_STATS_MAX][48];
	char value[H_STATS_MAX][80];
};

/* Sends "stats[ GROUP]" and reads every STAT line until END. 0, or -1 on
 * a timeout, a line that is not a STAT line, or too many lines. */
int hc_stats(struct hconn *c, const char *group, struct hstats *s,
	     int timeout_ms);
/* The value of NAME, or NULL when the reply has no such line. */
const char *hstats_get(const struct hstats *s, const char *name);
/* NAME's value as an unsigned number: 0, or -1 (missing, not a number). */
int hstats_u64(const struct hstats *s, const char *name, unsigned long long *v);

/*
 * Whether process PID holds a TCP socket listening on PORT. A port picked
 * free can be picked by a parallel test too; then a readiness probe may be
 * answered by that test's server while ours failed to bind, and only this
 * says the server answering is the one we started.
 */
bool h_pid_listens(pid_t pid, int port);

/* Monotonic milliseconds. */
long long h_now_ms(void);
/* Sleeps MS milliseconds. */
void h_sleep_ms(long ms);

/* Whether RHKV_TEST_SOAK asks for the long runs (set, not "" or "0"):
 * tests that run for a fixed time run SOAK_MS then, CI_MS otherwise
 * (h_soak_ms). README.md in this folder lists them. */
bool h_soak(void);
long long h_soak_ms(long long ci_ms, long long soak_ms);

/*
 * Criterion helpers (expand only where criterion is included). EXPECT
 * compares the next bytes with a literal; SEND sends a literal; RT does
 * both (one round trip); SYNC checks that nothing unexpected is pending by
 * a "version" round trip.
 */
#define EXPECT_N(c, buf, n)                                            \
	do {                                                           \
		char m_[H_MSG_CAP];                                    \
		cr_assert(hc_expect((c), (buf), (n), H_TIMEOUT_MS, m_, \
				    sizeof(m_)),                       \
			  "%s", m_);                                   \
	} while (0)
#define EXPECT(c, lit) EXPECT_N((c), (lit), sizeof(lit) - 1)
#define SEND_N(c, buf, n) \
	cr_assert(hc_send((c), (buf), (n)) == 0, "send: errno %d", errno)
#define SEND(c, lit) SEND_N((c), (lit), sizeof(lit) - 1)
#define RT(c, req, rep)           \
	do {                      \
		SEND((c), req);   \
		EXPECT((c), rep); \
	} while (0)
/*
 * Starts rhkvd with the flags EXTRA into *S and connects *CONN to it, or
 * skips the test, saying WHAT it needs of rhkvd's, when the server under
 * test is memcached.
 */
#define START_RHKVD(s, extra, conn, what)                                    \
	do {                                                                 \
		if (srv_kind_from_env() == SRV_MEMCACHED)                    \
			cr_skip_test("%s are rhkvd's; the server under "     \
				     "test is memcached (RHKV_TEST_SERVER)", \
				     (what));                                \
		cr_assert_eq(srv_start((s), (extra)), 0,                     \
			     "the server did not start");                    \
		*(conn) = hc_open((s)->port);                                \
		cr_assert_not_null(*(conn), "connect: errno %d", errno);     \
	} while (0)
/*
 * Expects the wait status STATUS of a server that was told to stop
 * (srv_stop, cl_stop) to be a clean exit, 0; WHAT names that server in the
 * message. Works in .fini too, where a failed expectation alone does not
 * count: criterion 2.4.1 has already counted the test as passed. Its runner
 * does exit non-zero when a worker logged an error, whatever the phase, so
 * this logs one as well: a server that crashed at shutdown, or exited
 * non-zero because ASan or TSan reported, fails the run.
 */
#define H_EXPECT_EXIT_OK(status, what)                                     \
	do {                                                               \
		int st_ = (status);                                        \
		char w_[96];                                               \
		if (st_ != 0)                                              \
			cr_log_error("%s::%s: %s: %s",                     \
				     criterion_current_suite->name,        \
				     criterion_current_test->name, (what), \
				     h_wait_status(w_, sizeof(w_), st_));  \
		cr_expect_eq(st_, 0, "%s: %s", (what),                     \
			     h_wait_status(w_, sizeof(w_), st_));          \
	} while (0)
/* A suite's .fini: closes *CONN and stops the server *S (if started),
 * which must exit 0 (a sanitizer's report makes it exit otherwise). */
#define STOP_RHKVD(s, conn)                                                \
	do {                                                               \
		if (!(s)->pid)                                             \
			break;                                             \
		hc_close(conn);                                            \
		H_EXPECT_EXIT_OK(srv_stop(s), "the server after SIGTERM"); \
	} while (0)
#define SYNC(c, s)                                                 \
	do {                                                       \
		SEND((c), "version\r\n");                          \
		EXPECT_N((c), (s)->version, strlen((s)->version)); \
	} while (0)

#endif /* RHKV_TESTS_SERVER_HARNESS_H */
