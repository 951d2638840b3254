/*
 * Handles and connections. A connect is a small state machine that never
 * blocks (CLOSED -> CONNECTING -> HANDSHAKE with TLS -> READY): event
 * loops step it from their socket events, a blocking call polls it to the
 * end within the connect timeout (rhkv__ensure). Each address of the host
 * is tried in turn; TCP_NODELAY and keepalive are set; AUTH, when a
 * password is set, is queued as the connection's first command. After a
 * lost connection the next command connects again.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void rhkv_options_init(struct rhkv_options *o)
{
	o->connect_timeout_ms = 1000;
	o->io_timeout_ms = 1000;
	o->nodelay = 1;
	o->password = NULL;
	o->tls = 0;
	o->tls_ca_file = NULL;
	o->tls_cert_file = NULL;
	o->tls_key_file = NULL;
	o->tls_server_name = NULL;
	o->tls_insecure = 0;
	o->keepalive_s = 15;
	o->key_prefix = NULL;
	o->send_budget = 0;
	o->down_ms = 0;
	o->user = NULL;
}

/* The strings of struct rhkv_options, for copying and freeing them all. */
#define OPT_STRINGS(o)                                                  \
	{                                                               \
		&(o)->password, &(o)->tls_ca_file, &(o)->tls_cert_file, \
			&(o)->tls_key_file, &(o)->tls_server_name,      \
			&(o)->key_prefix, &(o)->user                    \
	}

int rhkv__options_copy(struct rhkv_options *dst, const struct rhkv_options *src)
{
	const char **s[] = OPT_STRINGS(dst);
	int rc = 0;

	*dst = *src;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (*s[i] && !(*s[i] = strdup(*s[i])))
			rc = RHKV_ENOMEM;
	return rc;
}

void rhkv__options_free(struct rhkv_options *o)
{
	const char **s[] = OPT_STRINGS(o);

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		free((char *)*s[i]);
		*s[i] = NULL;
	}
}

/* Options of a connected socket: TCP_NODELAY, keepalive; blocking with
 * the I/O timeout on recv() for plain TCP (io.c waits in recv()); for TLS
 * it stays non-blocking: OpenSSL's reads may also write, and its writes
 * read, so io.c polls for what each asks. 0 or an errno value. */
static int setup_fd(rhkv *c, int fd, bool tcp)
{
	int one = 1, fl = fcntl(fd, F_GETFL);

	if (tcp && c->opt.nodelay &&
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return errno;
	if (tcp && c->opt.keepalive_s > 0) {
		int idle = c->opt.keepalive_s;
		int intvl = idle / 3 ? idle / 3 : 1, cnt = 3;

		if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one,
			       sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
			       sizeof(idle)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
			       sizeof(intvl)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt,
			       sizeof(cnt)) < 0)
			return errno;
	}
	if (c->opt.tls)
		return 0;
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return errno;
	return rhkv__set_rcvtimeo(c, fd);
}

int rhkv__set_rcvtimeo(rhkv *c, int fd)
{
	struct timeval tv = {
		.tv_sec = c->opt.io_timeout_ms / 1000,
		.tv_usec = (c->opt.io_timeout_ms % 1000) * 1000,
	};

	if (c->opt.tls || fd < 0)
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0
		       ? errno
		       : 0;
}

/* Starts a non-blocking connect to the next address left: 0 (c->fd set,
 * in progress or done), or an errno value when none is left to try. */
static int try_next(rhkv *c, int *err)
{
	while (c->ai_next) {
		struct addrinfo *ai = c->ai_next;
		int fd = socket(ai->ai_family,
				SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		c->ai_next = ai->ai_next;
		if (fd < 0) {
			*err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    errno == EINPROGRESS || errno == EAGAIN) {
			c->fd = fd;
			c->state = RHKV__CONNECTING;
			return 0;
		}
		*err = errno;
		close(fd);
	}
	return *err ? *err : ECONNREFUSED;
}

/* The addresses to try: the unix socket's, or getaddrinfo()'s. */
static int resolve(rhkv *c)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	char port[16];
	int r;

	if (c->host[0] == '/') {
		size_t n = strlen(c->host);
		struct addrinfo *ai;
		struct sockaddr_un *sa;

		if (n >= sizeof(sa->sun_path))
			return rhkv__fail(c, RHKV_EINVAL,
					  "socket path too long");
		ai = calloc(1, sizeof(*ai) + sizeof(*sa));
		if (!ai)
			return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
		sa = (struct sockaddr_un *)(ai + 1);
		sa->sun_family = AF_UNIX;
		memcpy(sa->sun_path, c->host, n + 1);
		ai->ai_family = AF_UNIX;
		ai->ai_addr = (struct sockaddr *)sa;
		ai->ai_addrlen = sizeof(*sa);
		c->ai_list = ai;
		c->ai_unix = true;
	} else {
		snprintf(port, sizeof(port), "%d", c->port);
		r = getaddrinfo(c->host, port, &hints, &c->ai_list);
		if (r != 0) {
			c->ai_list = NULL;
			return rhkv__fail(c, RHKV_ECONN, "resolve %s: %s",
					  c->host, gai_strerror(r));
		}
		c->ai_unix = false;
	}
	c->ai_next = c->ai_list;
	return 0;
}

static void free_addrs(rhkv *c)
{
	if (c->ai_list && c->ai_unix)
		free(c->ai_list);
	else if (c->ai_list)
		freeaddrinfo(c->ai_list);
	c->ai_list = c->ai_next = NULL;
}

static int connect_failed(rhkv *c, int err)
{
	free_addrs(c);
	if (c->host[0] == '/')
		return rhkv__drop(c, RHKV_ECONN, "connect to %s: %s", c->host,
				  strerror(err));
	return rhkv__drop(c, RHKV_ECONN, "connect to %s:%d: %s", c->host,
			  c->port, strerror(err));
}

static int on_auth(rhkv *c, void *ctx, size_t i, uint32_t status,
		   const msgpack_object *payload)
{
	(void)ctx;
	(void)i;
	if (status == PROTO_ST_OK)
		return 0;
	rhkv__status(c, status, payload);
	/* the commands behind it fail with the reason, and a blocking
	 * connect that waits for this reply learns it (rhkv__ensure) */
	c->drop_err = RHKV_EAUTH;
	return rhkv__drop(c, RHKV_EAUTH, "authentication refused: %s", c->err);
}

/* The connection is up (TLS included). */
static int ready(rhkv *c)
{
	free_addrs(c);
	c->state = RHKV__READY;
	c->connect_deadline = 0;
	c->progress_ms = rhkv__now_ms();
	return 0;
}

int rhkv__connect_start(rhkv *c)
{
	int rc, err = 0;

	if (c->state != RHKV__CLOSED)
		return 0;
	if (!c->host || !*c->host || !c->rbuf)
		return rhkv__fail(c, RHKV_EINVAL, "the handle was not made");
	if (c->closing)
		return rhkv__fail(c, RHKV_ECONN, "the handle was closed");
	rhkv__settle(c);
	if (c->down_until && rhkv__now_ms() < c->down_until)
		return rhkv__fail(c, RHKV_ECONN,
				  "the server failed less than %d ms ago",
				  c->opt.down_ms);
	c->down_until = 0;
	c->roff = c->rlen = 0;
	c->item_max = 0;
	if (c->opt.tls && !c->tls_ctx) {
		rc = rhkv__tls_ctx(c);
		if (rc)
			return rc;
	}
	rc = resolve(c);
	if (rc)
		return rc;
	c->connect_deadline =
		c->opt.connect_timeout_ms > 0
			? rhkv__now_ms() + c->opt.connect_timeout_ms
			: 0;
	err = try_next(c, &err);
	if (err) {
		rc = connect_failed(c, err);
		rhkv__settle(c);
		return rc;
	}
	/* AUTH is the connection's first command: those queued after it
	 * fail with RHKV_EAUTH when it is refused */
	if (c->opt.password) {
		/* [password], or [user, password] */
		struct rhkv__req r = { .op = PROTO_OP_AUTH,
				       .key = c->opt.password,
				       .klen = strlen(c->opt.password) };

		if (c->opt.user) {
			r.key = c->opt.user;
			r.klen = strlen(c->opt.user);
			r.val = c->opt.password;
			r.vlen = strlen(c->opt.password);
		}

		if (rhkv__queue(c, &r,
				&(struct rhkv__pending){ .fn = on_auth }) ==
		    0) {
			c->auth_seq = c->seq;
		} else {
			rc = rhkv__drop(c, RHKV_ENOMEM, "out of memory");
			rhkv__settle(c);
			return rc;
		}
	}
	rhkv__notify(c);
	return 0;
}

int rhkv__connect_step(rhkv *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
	socklen_t elen = sizeof(int);
	int err = 0, rc;

	if (c->state == RHKV__CONNECTING) {
		/* only a writable (or failed) socket has finished */
		if (poll(&pfd, 1, 0) <= 0)
			return 0;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			err = errno;
		if (err == 0)
			err = setup_fd(c, c->fd, !c->ai_unix);
		if (err) {
			/* the next address, if any */
			close(c->fd);
			c->fd = -1;
			c->state = RHKV__CLOSED;
			err = try_next(c, &err);
			if (err)
				return connect_failed(c, err);
			return 0;
		}
		if (!c->opt.tls)
			return ready(c);
		c->state = RHKV__HANDSHAKE;
		rc = rhkv__tls_begin(c);
		if (rc)
			return rc;
	}
	if (c->state == RHKV__HANDSHAKE) {
		rc = rhkv__tls_step(c);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return ready(c);
	}
	return 0;
}

static int ensure(rhkv *c)
{
	int rc = 0;

	rhkv__settle(c);
	if (c->state == RHKV__CLOSED)
		rc = rhkv__connect_start(c);
	/* the server's answer to AUTH decides whether the connect worked */
	if (rc == 0 && c->opt.password && c->done_seq < c->auth_seq) {
		rc = rhkv__wait(c, c->auth_seq);
		if (rc == 0 && c->state == RHKV__CLOSED)
			rc = c->drop_err ? c->drop_err : RHKV_ECONN;
	}
	while (rc == 0 && c->state != RHKV__READY) {
		struct pollfd pfd = { .fd = c->fd,
				      .events = rhkv__wants(c) == RHKV_WANT_READ
							? POLLIN
							: POLLOUT };
		long long left = rhkv__deadline_left(c, rhkv__now_ms());
		int r = left == 0 ? 0
				  : poll(&pfd, 1,
					 left < 0 ? -1
						  : (int)(left > INT32_MAX
								  ? INT32_MAX
								  : left));

		if (r < 0 && errno != EINTR)
			rc = rhkv__drop(c, RHKV_ECONN, "poll: %s",
					strerror(errno));
		else if (r == 0)
			rc = rhkv__expire(c, rhkv__now_ms());
		else if (r > 0)
			rc = rhkv__connect_step(c);
	}
	if (rc)
		rhkv__settle(c);
	return rc;
}

int rhkv__ensure(rhkv *c)
{
	rhkv__enter(c);
	return rhkv__leave(c, ensure(c));
}

void rhkv__disconnect(rhkv *c)
{
	/* the loop lets go of the socket before it is closed (and its
	 * number perhaps reused) */
	if (c->hooks.update && c->told_fd >= 0) {
		c->told_fd = -1;
		c->told_wants = 0;
		c->hooks.update(c->hooks.data, -1, 0);
	}
	rhkv__tls_end(c, false);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = RHKV__CLOSED;
	free_addrs(c);
	c->connect_deadline = 0;
	c->roff = c->rlen = 0;
	c->out_off = 0;
	msgpack_sbuffer_clear(&c->out);
	rhkv__limit_reset(c);
	c->item_max = 0;
	rhkv__notify(c);
}

int rhkv_set_timeouts(rhkv *c, int connect_timeout_ms, int io_timeout_ms)
{
	if (!c)
		return RHKV_EINVAL;
	if (connect_timeout_ms >= 0) {
		if (c->connect_deadline)
			c->connect_deadline +=
				connect_timeout_ms - c->opt.connect_timeout_ms;
		c->opt.connect_timeout_ms = connect_timeout_ms;
	}
	if (io_timeout_ms >= 0) {
		c->opt.io_timeout_ms = io_timeout_ms;
		if (c->state == RHKV__READY && rhkv__set_rcvtimeo(c, c->fd))
			return rhkv__drop(c, RHKV_ECONN, "setsockopt: %s",
					  strerror(errno));
	}
	rhkv__notify(c);
	return 0;
}

/* Makes the handle: *out is set even on failure when the handle itself
 * could be made (then every call fails with EINVAL and errstr says why). */
static int make(rhkv **out, const char *host, int port,
		const struct rhkv_options *o)
{
	const char *why = NULL;
	rhkv *c;
	int rc = 0;

	if (!out)
		return RHKV_EINVAL;
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RHKV_ENOMEM;
	c->fd = -1;
	c->next_id = 1;
	c->told_fd = -1;
	c->told_end = -1;
	msgpack_sbuffer_init(&c->sb);
	msgpack_packer_init(&c->pk, &c->sb, msgpack_sbuffer_write);
	msgpack_sbuffer_init(&c->out);
	msgpack_packer_init(&c->opk, &c->out, msgpack_sbuffer_write);
	msgpack_sbuffer_init(&c->held);
	msgpack_packer_init(&c->hpk, &c->held, msgpack_sbuffer_write);
	proto_bin_decoder_init(&c->dec);
	*out = c;
	if (o)
		rc = rhkv__options_copy(&c->opt, o);
	else
		rhkv_options_init(&c->opt);
	c->port = port;
	c->host = host ? strdup(host) : NULL;
	c->rbuf = malloc(RHKV__RBUF_INIT);
	c->rcap = RHKV__RBUF_INIT;
	if (rc || !c->rbuf || !c->dec.ready || (host && !c->host)) {
		/* a CA file or password not copied must not connect without */
		free(c->host);
		c->host = NULL; /* every call then fails with EINVAL */
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	}
	c->prefix_len = c->opt.key_prefix ? strlen(c->opt.key_prefix) : 0;
	if (!host || !*host || port < 0 || port > 65535 ||
	    c->opt.connect_timeout_ms < 0 || c->opt.io_timeout_ms < 0 ||
	    c->opt.keepalive_s < 0 || c->opt.down_ms < 0)
		why = "bad host, port, timeout or keepalive";
	/* a unix socket has no name to check the certificate against */
	else if (c->opt.tls && host[0] == '/' && !c->opt.tls_server_name &&
		 !c->opt.tls_insecure)
		why = "TLS over a unix socket needs tls_server_name";
	else if (c->prefix_len &&
		 (c->prefix_len >= PROTO_BIN_KEY_MAX ||
		  !proto_bin_key_ok(c->opt.key_prefix, c->prefix_len)))
		why = "key_prefix is not a valid key shorter than 250 bytes";
	if (why) {
		free(c->host);
		c->host = NULL; /* every call then fails with EINVAL */
		return rhkv__fail(c, RHKV_EINVAL, "%s", why);
	}
	return 0;
}

int rhkv_connect(rhkv **out, const char *host, int port,
		 const struct rhkv_options *o)
{
	int rc = make(out, host, port, o);

	return rc ? rc : rhkv__ensure(*out);
}

int rhkv_new(rhkv **out, const char *host, int port,
	     const struct rhkv_options *o)
{
	int rc = make(out, host, port, o);

	if (rc && out) {
		rhkv_close(*out);
		*out = NULL;
	}
	return rc;
}

void rhkv__close_now(rhkv *c)
{
	struct rhkv_event_hooks none = { 0 };

	c->closing = true; /* callbacks run below cannot start anything */
	rhkv__tls_end(c, c->fd >= 0);
	if (c->pq_len)
		rhkv__drop(c, RHKV_ECONN, "the handle was closed");
	else
		rhkv__disconnect(c);
	rhkv__settle(c);
	rhkv_set_event_hooks(c, &none);
	SSL_CTX_free(c->tls_ctx);
	msgpack_sbuffer_destroy(&c->sb);
	msgpack_sbuffer_destroy(&c->out);
	msgpack_sbuffer_destroy(&c->held);
	proto_bin_decoder_destroy(&c->dec);
	free(c->bigs);
	free(c->pq);
	free(c->rbuf);
	free(c->host);
	rhkv__options_free(&c->opt);
	free(c);
}

/*
 * From a callback (or while any library call that runs c's callbacks is
 * on the stack) c cannot be freed: the code that called the callback goes
 * on using it. The close is then done in two halves, as hiredis does:
 * now, the connection is closed and c refuses new work (its commands
 * still waiting fail with RHKV_ECONN, each callback called once, at the
 * next safe point); when the outermost such call returns (rhkv__leave),
 * c is freed.
 */
void rhkv_close(rhkv *c)
{
	if (!c || c->closing)
		return;
	if (!c->in_callback && !c->entered) {
		rhkv__close_now(c);
		return;
	}
	c->closing = true;
	rhkv__tls_end(c, c->fd >= 0);
	if (c->pq_len)
		rhkv__drop(c, RHKV_ECONN, "the handle was closed");
	else
		rhkv__disconnect(c);
}

int rhkv__leave(rhkv *c, int rc)
{
	if (--c->entered > 0 || !c->closing || c->in_callback)
		return rc;
	rhkv__close_now(c);
	return rc ? rc : RHKV_ECONN;
}
