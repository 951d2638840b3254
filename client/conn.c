/*
 * Handles and connections: rhkv_connect() makes the handle and connects
 * (a non-blocking connect bounded by the connect timeout, TCP_NODELAY, a
 * unix socket when the host starts with '/', the TLS handshake when
 * asked for (tls.c), AUTH when a password is set); after a lost connection
 * the next call connects again (rhkv__ensure).
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
}

/* The strings of struct rhkv_options, for copying and freeing them all. */
#define OPT_STRINGS(o)                                                  \
	{                                                               \
		&(o)->password, &(o)->tls_ca_file, &(o)->tls_cert_file, \
			&(o)->tls_key_file, &(o)->tls_server_name       \
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

/* Connects fd to sa within the connect timeout; 0 or an errno value. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len,
		      int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t elen = sizeof(int);
	int err = 0, r;

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN)
		return errno;
	do
		r = poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return ETIMEDOUT;
	if (r < 0)
		return errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		return errno;
	return err;
}

/* Makes the connected socket blocking, with the I/O timeout on recv();
 * for TLS it stays non-blocking: OpenSSL's reads may also write, and its
 * writes read, so io.c polls for what each asks. */
static int setup_fd(rhkv *c, int fd, bool tcp)
{
	int one = 1;
	int fl = fcntl(fd, F_GETFL);

	if (tcp && c->opt.nodelay &&
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return errno;
	if (c->opt.tls)
		return 0;
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return errno;
	if (c->opt.io_timeout_ms > 0) {
		struct timeval tv = {
			.tv_sec = c->opt.io_timeout_ms / 1000,
			.tv_usec = (c->opt.io_timeout_ms % 1000) * 1000,
		};

		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) <
		    0)
			return errno;
	}
	return 0;
}

/* One attempt at one address: the socket, or -1 with *err set. */
static int try_addr(rhkv *c, int family, const struct sockaddr *sa,
		    socklen_t len, int *err)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0) {
		*err = errno;
		return -1;
	}
	*err = connect_fd(fd, sa, len, c->opt.connect_timeout_ms);
	if (*err == 0)
		*err = setup_fd(c, fd, family != AF_UNIX);
	if (*err) {
		close(fd);
		return -1;
	}
	return fd;
}

static int open_unix(rhkv *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(c->host);
	int err;

	if (n >= sizeof(sa.sun_path))
		return rhkv__fail(c, RHKV_EINVAL, "socket path too long");
	memcpy(sa.sun_path, c->host, n + 1);
	c->fd = try_addr(c, AF_UNIX, (struct sockaddr *)&sa, sizeof(sa), &err);
	if (c->fd < 0)
		return rhkv__fail(c, RHKV_ECONN, "connect to %s: %s", c->host,
				  strerror(err));
	return 0;
}

static int open_tcp(rhkv *c)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char port[16];
	int err = 0, r;

	snprintf(port, sizeof(port), "%d", c->port);
	r = getaddrinfo(c->host, port, &hints, &res);
	if (r != 0)
		return rhkv__fail(c, RHKV_ECONN, "resolve %s: %s", c->host,
				  gai_strerror(r));
	for (ai = res; ai && c->fd < 0; ai = ai->ai_next)
		c->fd = try_addr(c, ai->ai_family, ai->ai_addr, ai->ai_addrlen,
				 &err);
	freeaddrinfo(res);
	if (c->fd < 0)
		return rhkv__fail(c, RHKV_ECONN, "connect to %s:%d: %s",
				  c->host, c->port, strerror(err));
	return 0;
}

static int on_auth(rhkv *c, void *ctx, size_t i, uint32_t status,
		   const msgpack_object *payload)
{
	(void)i;
	*(int *)ctx =
		status == PROTO_ST_OK ? 0 : rhkv__status(c, status, payload);
	return 0;
}

static int authenticate(rhkv *c)
{
	struct rhkv__req r = { .op = PROTO_OP_AUTH,
			       .key = c->opt.password,
			       .klen = strlen(c->opt.password) };
	int result = 0;
	int rc = 0;

	msgpack_sbuffer_clear(&c->sb);
	if (rhkv__encode(&c->sb, &c->pk, c->next_id, &r))
		return rhkv__drop(c, RHKV_ENOMEM, "out of memory");
	rc = rhkv__exchange(c, c->sb.data, c->sb.size, c->next_id++, 1, on_auth,
			    &result);
	if (rc)
		return rc;
	if (result)
		return rhkv__drop(c, RHKV_EAUTH, "authentication refused: %s",
				  c->err);
	return 0;
}

int rhkv__ensure(rhkv *c)
{
	int rc;

	if (c->fd >= 0)
		return 0;
	if (!c->host || !*c->host || !c->rbuf)
		return rhkv__fail(c, RHKV_EINVAL, "the handle was not made");
	c->roff = c->rlen = 0;
	c->item_max = 0;
	if (c->opt.tls && !c->tls_ctx) {
		rc = rhkv__tls_ctx(c);
		if (rc)
			return rc;
	}
	rc = c->host[0] == '/' ? open_unix(c) : open_tcp(c);
	if (rc == 0 && c->opt.tls)
		rc = rhkv__tls_start(c);
	if (rc == 0 && c->opt.password)
		rc = authenticate(c);
	return rc;
}

void rhkv__disconnect(rhkv *c)
{
	rhkv__tls_end(c, false);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->roff = c->rlen = 0;
	c->item_max = 0;
}

int rhkv_connect(rhkv **out, const char *host, int port,
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
	msgpack_sbuffer_init(&c->sb);
	msgpack_packer_init(&c->pk, &c->sb, msgpack_sbuffer_write);
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
	if (!host || !*host || port < 0 || port > 65535 ||
	    c->opt.connect_timeout_ms < 0 || c->opt.io_timeout_ms < 0)
		why = "bad host, port or timeout";
	/* a unix socket has no name to check the certificate against */
	else if (c->opt.tls && host[0] == '/' && !c->opt.tls_server_name &&
		 !c->opt.tls_insecure)
		why = "TLS over a unix socket needs tls_server_name";
	if (why) {
		free(c->host);
		c->host = NULL; /* every call then fails with EINVAL */
		return rhkv__fail(c, RHKV_EINVAL, "%s", why);
	}
	return rhkv__ensure(c);
}

void rhkv_close(rhkv *c)
{
	if (!c)
		return;
	rhkv__tls_end(c, c->fd >= 0);
	rhkv__disconnect(c);
	SSL_CTX_free(c->tls_ctx);
	msgpack_sbuffer_destroy(&c->sb);
	proto_bin_decoder_destroy(&c->dec);
	free(c->rbuf);
	free(c->host);
	rhkv__options_free(&c->opt);
	free(c);
}
