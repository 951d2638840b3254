/*
 * memcached's UDP protocol (-U PORT): the frame header, replies cut into
 * datagrams of at most 1400 bytes, text and binary requests.
 *
 * udp: every case runs against the server under test and, when memcached
 * is on PATH, against memcached 1.6.18 started the same way (the
 * reference): each datagram's header and the joined payload compared with
 * what memcached sends (the expectations were recorded from it).
 *
 * udp_rhkvd (rhkvd only): where rhkvd's rule is its own (proto/TEXT.md,
 * UDP): nothing carries over from one datagram to the next, a line too
 * long is answered, hostile datagrams leave it serving, `stats conns`
 * lists the socket, many clients at once each get their own replies, and
 * the refusals at start.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define HEADER	 8
#define DGRAM	 1400 /* memcached's largest reply datagram */
#define MAX_DGRS 64

struct udp_srv {
	struct srv s;
	int udp_port;
};

static struct udp_srv sut, ref; /* ref.s.pid 0: no memcached */

/* A UDP port that was free a moment ago. */
static int free_udp_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Starts SERVER (NULL: the one under test) with -U on a free port; a few
 * tries, as another process may take the port between the pick and the
 * bind. */
static int start_udp(struct udp_srv *u, const char *server,
		     const char *const *more)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		char port[16];
		const char *extra[16] = { "-U", port };
		int n = 2, rc;

		u->udp_port = free_udp_port();
		snprintf(port, sizeof(port), "%d", u->udp_port);
		while (more && *more && n < 15)
			extra[n++] = *more++;
		extra[n] = NULL;
		rc = server ? srv_start_as(&u->s, server, extra)
			    : srv_start(&u->s, extra);
		if (rc == 0)
			return 0;
	}
	return -1;
}

static bool have_memcached(void)
{
	return system("command -v memcached >/dev/null 2>&1") == 0;
}

/* A report of a sanitizer rhkvd makes it exit non-zero: checked. */
static void stop_all(void)
{
	if (sut.s.pid) {
		int status = srv_stop(&sut.s);

		H_EXPECT_EXIT_OK(status, "the server after SIGTERM");
	}
	srv_stop(&ref.s);
}

/* A UDP client of u, connected (so only u's datagrams arrive). */
static int udp_client(const struct udp_srv *u)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)u->udp_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0, "socket: errno %d", errno);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "connect: errno %d", errno);
	return fd;
}

/* Sends payload with the frame header (id, sequence 0, COUNT, 0). */
static void udp_send(int fd, unsigned id, unsigned count, const void *p,
		     size_t n)
{
	char *d = malloc(HEADER + n);

	cr_assert_not_null(d);
	d[0] = (char)(id >> 8);
	d[1] = (char)id;
	d[2] = d[3] = 0;
	d[4] = (char)(count >> 8);
	d[5] = (char)count;
	d[6] = d[7] = 0;
	memcpy(d + HEADER, p, n);
	cr_assert_eq(send(fd, d, HEADER + n, 0), (ssize_t)(HEADER + n),
		     "send: errno %d", errno);
	free(d);
}

static unsigned be16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/*
 * Receives one reply message: datagrams until as many as their headers
 * count, each checked (the request's id, reserved 0, the same count, a
 * sequence number below it, seen once, at most DGRAM bytes). Their
 * payloads, joined in sequence order, go to *out. Returns the count of
 * datagrams, or 0 when none came within timeout_ms. With skip_others,
 * datagrams of other ids (replies to earlier requests) are passed over.
 */
static unsigned udp_reply_of(int fd, unsigned id, struct hbuf *out,
			     int timeout_ms, bool skip_others)
{
	static unsigned char part[MAX_DGRS][DGRAM];
	size_t part_len[MAX_DGRS] = { 0 };
	bool seen[MAX_DGRS] = { false };
	unsigned count = 0, got = 0;

	while (!count || got < count) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		unsigned char d[65536];
		ssize_t n;
		unsigned seq;

		if (poll(&p, 1, timeout_ms) != 1) {
			cr_assert_eq(got, 0, "%u of %u datagrams came", got,
				     count);
			return 0;
		}
		n = recv(fd, d, sizeof(d), 0);
		cr_assert_geq(n, HEADER, "a datagram of %zd bytes", n);
		cr_assert_leq(n, DGRAM, "a datagram of %zd bytes", n);
		if (skip_others && be16(d) != id)
			continue;
		cr_assert_eq(be16(d), id, "reply id %u to request %u", be16(d),
			     id);
		cr_assert_eq(be16(d + 6), 0, "reserved field not 0");
		seq = be16(d + 2);
		if (!count) {
			count = be16(d + 4);
			cr_assert(count > 0 && count <= MAX_DGRS,
				  "a count of %u datagrams", count);
		}
		cr_assert_eq(be16(d + 4), count, "the count changed");
		cr_assert_lt(seq, count, "sequence %u of %u", seq, count);
		cr_assert_not(seen[seq], "sequence %u twice", seq);
		seen[seq] = true;
		memcpy(part[seq], d + HEADER, (size_t)n - HEADER);
		part_len[seq] = (size_t)n - HEADER;
		got++;
	}
	for (unsigned i = 0; i < count; i++)
		hbuf_add(out, part[i], part_len[i]);
	return count;
}

static unsigned udp_reply(int fd, unsigned id, struct hbuf *out, int timeout_ms)
{
	return udp_reply_of(fd, id, out, timeout_ms, false);
}

/* Reads a one-datagram message and expects exactly EXP in it. */
static void expect_message(int fd, unsigned id, const char *exp,
			   const char *who)
{
	struct hbuf b = { 0 };
	char got[512], want[512];

	cr_assert_eq(udp_reply(fd, id, &b, H_TIMEOUT_MS), 1,
		     "%s: no single-datagram reply", who);
	cr_assert(b.len == strlen(exp) && !memcmp(b.p, exp, b.len),
		  "%s: expected \"%s\", got \"%s\"", who,
		  h_escape(want, sizeof(want), exp, strlen(exp)),
		  h_escape(got, sizeof(got), b.p, b.len));
	hbuf_free(&b);
}

/* Sends a request and expects exactly EXP back. */
static void expect_reply(int fd, unsigned id, const char *req, const char *exp,
			 const char *who)
{
	udp_send(fd, id, 1, req, strlen(req));
	expect_message(fd, id, exp, who);
}

/* Sets KEY to VAL over TCP. */
static void tcp_set(const struct udp_srv *u, const char *key, const char *val)
{
	struct hconn *c = hc_open(u->s.port);
	char msg[H_MSG_CAP];

	cr_assert_not_null(c);
	hc_sendf(c, "set %s 0 0 %zu\r\n%s\r\n", key, strlen(val), val);
	cr_assert(hc_expect(c, "STORED\r\n", 8, H_TIMEOUT_MS, msg, sizeof(msg)),
		  "%s", msg);
	hc_close(&c);
}

/* A binary request header (memcached's binary protocol). */
static size_t bin_req(unsigned char *d, unsigned op, const char *key,
		      const void *extras, size_t elen, const char *val)
{
	size_t klen = strlen(key), vlen = val ? strlen(val) : 0;
	uint32_t body = htonl((uint32_t)(elen + klen + vlen));

	memset(d, 0, 24);
	d[0] = 0x80;
	d[1] = (unsigned char)op;
	d[2] = (unsigned char)(klen >> 8);
	d[3] = (unsigned char)klen;
	d[4] = (unsigned char)elen;
	memcpy(d + 8, &body, 4);
	if (elen)
		memcpy(d + 24, extras, elen);
	memcpy(d + 24 + elen, key, klen);
	if (vlen)
		memcpy(d + 24 + elen + klen, val, vlen);
	return 24 + elen + klen + vlen;
}

/* What every server of memcached's UDP protocol does. */
static void common_cases(struct udp_srv *u, const char *who)
{
	int fd = udp_client(u);
	struct hbuf b = { 0 }, big = { 0 }, exp = { 0 };
	unsigned char d[512];
	size_t n;

	tcp_set(u, "foo", "fooval");
	/* The id comes back, whatever it is. */
	for (unsigned id = 161; id < 164; id++)
		expect_reply(fd, id, "get foo\r\n",
			     "VALUE foo 0 6\r\nfooval\r\nEND\r\n", who);
	expect_reply(fd, 65535, "get foo\r\n",
		     "VALUE foo 0 6\r\nfooval\r\nEND\r\n", who);

	/* 20,000 bytes of value: 15 datagrams, 1392 bytes of payload each
	 * but the last. */
	for (int i = 0; i < 20000; i++)
		hbuf_add(&big, &"CDEFGHIJKLMNOPQRSTUVWXYZ"[i % 24], 1);
	hbuf_add(&big, "", 1);
	tcp_set(u, "bigvalue", big.p);
	udp_send(fd, 53, 1, "get bigvalue\r\n", 14);
	cr_assert_eq(udp_reply(fd, 53, &b, H_TIMEOUT_MS), 15,
		     "%s: not 15 datagrams", who);
	hbuf_printf(&exp, "VALUE bigvalue 0 20000\r\n");
	hbuf_add(&exp, big.p, 20000);
	hbuf_add(&exp, "\r\nEND\r\n", 7);
	cr_assert(b.len == exp.len && !memcmp(b.p, exp.p, b.len),
		  "%s: the big value came back wrong (%zu bytes of %zu)", who,
		  b.len, exp.len);
	hbuf_free(&b);

	/* Storage over UDP; several requests in a datagram: a message each,
	 * all with its id, and none for noreply. */
	expect_reply(fd, 45, "set aval 0 0 1\r\n1\r\n", "STORED\r\n", who);
	udp_send(fd, 46, 1,
		 "set n 0 0 1 noreply\r\nx\r\nincr aval 4\r\nget n\r\n"
		 "delete aval\r\nget aval\r\n",
		 67);
	expect_message(fd, 46, "5\r\n", who);
	expect_message(fd, 46, "VALUE n 0 1\r\nx\r\nEND\r\n", who);
	expect_message(fd, 46, "DELETED\r\n", who);
	expect_message(fd, 46, "END\r\n", who);

	/* Binary: a set, then a get of its value. */
	{
		static const unsigned char set_extras[8] = { 0 };

		n = bin_req(d, 0x01, "bkey", set_extras, 8, "abcd");
		udp_send(fd, 48, 1, d, n);
		cr_assert_eq(udp_reply(fd, 48, &b, H_TIMEOUT_MS), 1);
		cr_assert_eq(b.len, 24, "%s: binary set reply", who);
		cr_assert_eq((unsigned char)b.p[0], 0x81);
		cr_assert_eq(be16((unsigned char *)b.p + 6), 0,
			     "%s: binary set status", who);
		hbuf_free(&b);
		n = bin_req(d, 0x00, "bkey", NULL, 0, NULL);
		udp_send(fd, 49, 1, d, n);
		cr_assert_eq(udp_reply(fd, 49, &b, H_TIMEOUT_MS), 1);
		cr_assert_eq(b.len, 24 + 4 + 4, "%s: binary get reply", who);
		cr_assert_eq(be16((unsigned char *)b.p + 6), 0);
		cr_assert(!memcmp(b.p + 28, "abcd", 4));
		hbuf_free(&b);
	}

	/* Dropped unanswered: a datagram shorter than the header, one that
	 * says it is one of two, a count of 0, a request without its end.
	 * The next request's reply is the next datagram to arrive. */
	cr_assert_eq(send(fd, "abc", 3, 0), 3);
	udp_send(fd, 60, 2, "get foo\r\n", 9);
	udp_send(fd, 61, 0, "get foo\r\n", 9);
	udp_send(fd, 62, 1, "get foo", 7);
	expect_reply(fd, 63, "get foo\r\n",
		     "VALUE foo 0 6\r\nfooval\r\nEND\r\n", who);
	close(fd);
	hbuf_free(&big);
	hbuf_free(&exp);
}

TestSuite(udp, .fini = stop_all, .timeout = 120);

Test(udp, memcacheds_udp_protocol)
{
	cr_assert_eq(start_udp(&sut, NULL, NULL), 0,
		     "the server did not start");
	common_cases(&sut, "server under test");
	if (sut.s.kind == SRV_MEMCACHED || !have_memcached())
		return;
	cr_assert_eq(start_udp(&ref, "memcached", NULL), 0,
		     "memcached did not start");
	common_cases(&ref, "memcached");
}

TestSuite(udp_rhkvd, .fini = stop_all, .timeout = 120);

static void start_rhkvd(const char *const *more)
{
	if (srv_kind_from_env() == SRV_MEMCACHED)
		cr_skip_test("rhkvd's own rules");
	cr_assert_eq(start_udp(&sut, NULL, more), 0,
		     "the server did not start");
}

/* Each datagram stands alone: a storage command cut before its value is
 * dropped, and the next datagram's bytes are requests of their own, not
 * that value (memcached takes them as the value). A session left inside
 * a binary request does not take the next datagram as its rest either. */
Test(udp_rhkvd, nothing_carries_over)
{
	unsigned char d[64];
	size_t n;
	int fd;

	start_rhkvd(NULL);
	fd = udp_client(&sut);
	udp_send(fd, 1, 1, "set cut 0 0 5\r\n", 15);
	expect_reply(fd, 2, "hello\r\n", "ERROR\r\n", "second datagram");
	expect_reply(fd, 3, "get cut\r\n", "END\r\n", "the cut set");
	/* The text session then a binary datagram, then text again. */
	n = bin_req(d, 0x00, "cut", NULL, 0, NULL);
	udp_send(fd, 4, 1, d, 10); /* a binary header cut short */
	udp_send(fd, 5, 1, d, n);
	{
		struct hbuf b = { 0 };

		cr_assert_eq(udp_reply(fd, 5, &b, H_TIMEOUT_MS), 1);
		cr_assert_eq((unsigned char)b.p[0], 0x81, "not binary");
		cr_assert_eq(be16((unsigned char *)b.p + 6), 1,
			     "binary get of a missing key: status 1");
		hbuf_free(&b);
	}
	expect_reply(fd, 6, "get cut\r\n", "END\r\n", "text after binary");
	close(fd);
}

/* Sends "version" with id and expects "VERSION ..." back, passing over
 * replies to earlier requests. */
static void expect_version(int fd, unsigned id, const char *who)
{
	struct hbuf b = { 0 };

	udp_send(fd, id, 1, "version\r\n", 9);
	cr_assert_eq(udp_reply_of(fd, id, &b, H_TIMEOUT_MS, true), 1,
		     "%s: no reply to version", who);
	cr_assert(b.len > 10 && !memcmp(b.p, "VERSION ", 8),
		  "%s: not a version line", who);
	hbuf_free(&b);
}

/* Hostile datagrams: each gets its error or nothing, and the next
 * request is served. */
Test(udp_rhkvd, hostile_datagrams)
{
	static char junk[65001]; /* a line of 65,000 bytes, then NUL */
	unsigned char d[64];
	int fd;

	start_rhkvd(NULL);
	fd = udp_client(&sut);
	memset(junk, 'a', sizeof(junk) - 1);
	expect_reply(fd, 1, junk, "CLIENT_ERROR line too long\r\n",
		     "a 65,000-byte line");
	/* A binary header saying its body is 4 GiB. */
	memset(d, 0xff, sizeof(d));
	d[0] = 0x80;
	d[1] = 0x01;
	udp_send(fd, 2, 1, d, sizeof(d));
	expect_version(fd, 3, "after a binary header of a 4 GiB body");
	/* msgpack: a frame cut short, then one saying it is 4 GiB. */
	udp_send(fd, 4, 1, "\0\0\0", 3);
	udp_send(fd, 5, 1, "\0\xff\xff\xff\xff\x01", 6);
	expect_version(fd, 6, "after msgpack frames");
	/* A 'quit' ends the session; the next datagram gets a new one. */
	udp_send(fd, 7, 1, "quit\r\n", 6);
	expect_version(fd, 8, "after quit");
	close(fd);
}

/* Clients at once, each with its own socket: every reply reaches the
 * client that asked, with its id. */
Test(udp_rhkvd, clients_get_their_own_replies)
{
	enum { CLIENTS = 8, ROUNDS = 40 };
	int fd[CLIENTS];

	start_rhkvd((const char *const[]){ "-t", "4", NULL });
	for (int i = 0; i < CLIENTS; i++) {
		char key[32], val[32];

		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), "value-%d", i);
		tcp_set(&sut, key, val);
		fd[i] = udp_client(&sut);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < CLIENTS; i++) {
			char req[32];
			int n = snprintf(req, sizeof(req), "get k%d\r\n", i);

			udp_send(fd[i], (unsigned)(r * CLIENTS + i), 1, req,
				 (size_t)n);
		}
		for (int i = 0; i < CLIENTS; i++) {
			struct hbuf b = { 0 }, exp = { 0 };

			cr_assert_eq(udp_reply(fd[i],
					       (unsigned)(r * CLIENTS + i), &b,
					       H_TIMEOUT_MS),
				     1);
			hbuf_printf(&exp,
				    "VALUE k%d 0 %d\r\nvalue-%d\r\nEND\r\n", i,
				    i < 10 ? 7 : 8, i);
			cr_assert(b.len == exp.len &&
					  !memcmp(b.p, exp.p, b.len),
				  "client %d got another's reply", i);
			hbuf_free(&b);
			hbuf_free(&exp);
		}
	}
	for (int i = 0; i < CLIENTS; i++)
		close(fd[i]);
}

/* `stats conns` lists a UDP socket per -l address, as memcached names
 * them, and `stats settings` the port. */
Test(udp_rhkvd, stats_list_the_sockets)
{
	struct hconn *c;
	struct hstats st;
	char want[64];
	int found = 0;

	start_rhkvd((const char *const[]){ "-l", "127.0.0.2", NULL });
	c = hc_open(sut.s.port);
	cr_assert_not_null(c);
	cr_assert_eq(hc_stats(c, "conns", &st, H_TIMEOUT_MS), 0);
	for (int i = 0; i < st.n; i++) {
		const char *name = strchr(st.name[i], ':');
		int fd = atoi(st.name[i]);
		char state[48];

		if (!name || strcmp(name, ":addr") ||
		    strncmp(st.value[i], "udp:127.0.0.", 12))
			continue;
		snprintf(want, sizeof(want), ":%d", sut.udp_port);
		cr_assert(strstr(st.value[i], want), "%s", st.value[i]);
		snprintf(state, sizeof(state), "%d:state", fd);
		cr_assert_str_eq(hstats_get(&st, state), "conn_read");
		found++;
	}
	cr_assert_eq(found, 2, "UDP sockets listed: %d", found);
	cr_assert_eq(hc_stats(c, "settings", &st, H_TIMEOUT_MS), 0);
	snprintf(want, sizeof(want), "%d", sut.udp_port);
	cr_assert_str_eq(hstats_get(&st, "udpport"), want);
	hc_close(&c);
	/* The second address serves UDP too. */
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(
						  (uint16_t)sut.udp_port) };
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
		cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)),
			     0);
		expect_version(fd, 9, "127.0.0.2");
		close(fd);
	}
}
