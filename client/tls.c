/*
 * TLS under a handle's connection (OpenSSL 3): the context made from the
 * handle's options at its first connect, the handshake of each connect
 * (in steps: conn.c's connect state machine runs them as the socket
 * allows), and reads and writes on the non-blocking socket that the
 * engine of io.c polls. OpenSSL reaches the socket through a BIO of ours that
 * sends with MSG_NOSIGNAL: its own socket BIO uses write(), which would
 * raise SIGPIPE in the caller's process when the server has gone.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the socket BIO: recv() and send(MSG_NOSIGNAL) on the fd ---- */

static int bio_fd(BIO *b)
{
	return (int)(intptr_t)BIO_get_data(b);
}

static int bio_write(BIO *b, const char *buf, size_t len, size_t *done)
{
	ssize_t n;

	BIO_clear_retry_flags(b);
	do
		n = send(bio_fd(b), buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			BIO_set_retry_write(b);
		return 0;
	}
	*done = (size_t)n;
	return 1;
}

static int bio_read(BIO *b, char *buf, size_t cap, size_t *done)
{
	ssize_t n;

	BIO_clear_retry_flags(b);
	do
		n = recv(bio_fd(b), buf, cap, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			BIO_set_retry_read(b);
		return 0;
	}
	if (n == 0)
		errno = 0; /* the peer closed: SSL_ERROR_SYSCALL, errno 0 */
	*done = (size_t)n;
	return n > 0;
}

/* Flushing has nothing to do (writes go straight to the socket); the other
 * controls OpenSSL may send (ktls and the like) are not supported. */
static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH;
}

static BIO_METHOD *bio_meth;
static CRYPTO_ONCE bio_once = CRYPTO_ONCE_STATIC_INIT;

/* Made once per process and never freed: it is one small struct. */
static void bio_make(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
				     "rhkv socket");

	if (m && BIO_meth_set_write_ex(m, bio_write) &&
	    BIO_meth_set_read_ex(m, bio_read) && BIO_meth_set_ctrl(m, bio_ctrl))
		bio_meth = m;
	else
		BIO_meth_free(m);
}

/* A BIO on fd (which it does not close), or NULL. */
static BIO *bio_new(int fd)
{
	BIO *b;

	if (!CRYPTO_THREAD_run_once(&bio_once, bio_make) || !bio_meth)
		return NULL;
	b = BIO_new(bio_meth);
	if (b) {
		BIO_set_data(b, (void *)(intptr_t)fd);
		BIO_set_init(b, 1);
	}
	return b;
}

/* ---- the context, the handshake, reads and writes ---- */

/* Why OpenSSL's last call on this thread failed (its error queue, which is
 * then emptied), or `none` when it said nothing. */
static const char *ossl_why(char *buf, size_t cap, const char *none)
{
	unsigned long e, last = 0, sys = 0;
	const char *r;

	while ((e = ERR_get_error()) != 0) {
		last = e;
		if (ERR_SYSTEM_ERROR(e))
			sys = e;
	}
	r = last ? ERR_reason_error_string(last) : NULL;
	/* a file that does not open: its errno says more than the "system
	 * lib" that the layers above it add */
	if (sys)
		snprintf(buf, cap, "%s", strerror(ERR_GET_REASON(sys)));
	else if (r)
		snprintf(buf, cap, "%s", r);
	else if (last)
		ERR_error_string_n(last, buf, cap);
	else
		snprintf(buf, cap, "%s", none);
	return buf;
}

int rhkv__tls_ctx(rhkv *c)
{
	const struct rhkv_options *o = &c->opt;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	const char *what = NULL;
	char why[200];

	if (!ctx)
		return rhkv__fail(c, RHKV_ENOMEM, "TLS: %s",
				  ossl_why(why, sizeof(why), "out of memory"));
	/* replies are framed, so a close without close_notify cannot cut
	 * one short unseen: it reads as the end of the connection (ECONN),
	 * as over TCP, instead of as a TLS failure */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION))
		what = "TLS 1.2";
	SSL_CTX_set_verify(
		ctx, o->tls_insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	if (!what && !o->tls_insecure &&
	    !(o->tls_ca_file
		      ? SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, NULL)
		      : SSL_CTX_set_default_verify_paths(ctx)))
		what = o->tls_ca_file ? o->tls_ca_file : "the system's CAs";
	if (!what && o->tls_cert_file &&
	    !SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file))
		what = o->tls_cert_file;
	if (!what && o->tls_cert_file &&
	    (!SSL_CTX_use_PrivateKey_file(
		     ctx, o->tls_key_file ? o->tls_key_file : o->tls_cert_file,
		     SSL_FILETYPE_PEM) ||
	     !SSL_CTX_check_private_key(ctx)))
		what = o->tls_key_file ? o->tls_key_file : o->tls_cert_file;
	if (what) {
		SSL_CTX_free(ctx);
		return rhkv__fail(c, RHKV_ETLS, "TLS: %s: %s", what,
				  ossl_why(why, sizeof(why), "failed"));
	}
	c->tls_ctx = ctx;
	return 0;
}

/* Makes c->ssl on c->fd and sets the name that the server's certificate
 * must carry: an IP address is matched with the certificate's IP
 * addresses and not sent as SNI, which RFC 6066 keeps for host names. */
static int tls_new(rhkv *c, const char *name)
{
	unsigned char ip[16];
	BIO *b;

	c->ssl = SSL_new(c->tls_ctx);
	b = bio_new(c->fd);
	if (!c->ssl || !b) {
		BIO_free(b);
		return rhkv__drop(c, RHKV_ENOMEM, "out of memory");
	}
	SSL_set_bio(c->ssl, b, b);
	if (!name)
		return 0;
	if (inet_pton(AF_INET, name, ip) == 1 ||
	    inet_pton(AF_INET6, name, ip) == 1) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), name))
			return 0;
	} else {
		SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set_tlsext_host_name(c->ssl, name) &&
		    SSL_set1_host(c->ssl, name))
			return 0;
	}
	return rhkv__drop(c, RHKV_EINVAL, "TLS: bad server name %s", name);
}

int rhkv__tls_begin(rhkv *c)
{
	const char *name = c->opt.tls_server_name;

	if (!name && c->host[0] != '/')
		name = c->host;
	c->ssl_rwant = POLLIN;
	c->ssl_wwant = POLLOUT;
	return tls_new(c, name);
}

int rhkv__tls_step(rhkv *c)
{
	const char *name = c->opt.tls_server_name;
	char why[200];
	int r, e, err;
	long v;

	if (!name && c->host[0] != '/')
		name = c->host;
	ERR_clear_error();
	r = SSL_connect(c->ssl);
	if (r == 1) {
		c->ssl_wwant = POLLOUT;
		return 0;
	}
	err = errno;
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		/* the handshake's wait is kept where the engine looks for a
		 * blocked write's */
		c->ssl_wwant = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 1;
	}
	v = SSL_get_verify_result(c->ssl);
	if (e == SSL_ERROR_SSL && v != X509_V_OK) {
		ERR_clear_error();
		return rhkv__drop(c, RHKV_ETLS,
				  "TLS: the certificate of %s did not "
				  "verify: %s",
				  name ? name : c->host,
				  X509_verify_cert_error_string(v));
	}
	if (e == SSL_ERROR_SSL)
		return rhkv__drop(c, RHKV_ETLS,
				  "TLS handshake with %s failed: %s", c->host,
				  ossl_why(why, sizeof(why), "failed"));
	return rhkv__drop(c, RHKV_ECONN, "TLS handshake with %s: %s", c->host,
			  e == SSL_ERROR_SYSCALL && err
				  ? strerror(err)
				  : "the server closed the connection");
}

/* After a read or write that moved nothing: 0 with *want the event to wait
 * for, or the failure (the connection dropped). */
static int tls_io_failed(rhkv *c, const char *op, short *want)
{
	int err = errno; /* before OpenSSL's calls below can change it */
	int e = SSL_get_error(c->ssl, 0);
	char why[200];

	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want = POLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*want = POLLOUT;
		return 0;
	case SSL_ERROR_SSL:
		return rhkv__drop(c, RHKV_ETLS, "TLS %s: %s", op,
				  ossl_why(why, sizeof(why), "failed"));
	case SSL_ERROR_SYSCALL:
		if (err)
			return rhkv__drop(c, RHKV_ECONN, "%s: %s", op,
					  strerror(err));
		break; /* errno 0: an end of file */
	default:
		break;
	}
	ERR_clear_error();
	return rhkv__drop(c, RHKV_ECONN, "the server closed the connection");
}

int rhkv__tls_read(rhkv *c, void *buf, size_t cap, size_t *got, short *want)
{
	ERR_clear_error();
	if (SSL_read_ex(c->ssl, buf, cap, got))
		return 0;
	*got = 0;
	return tls_io_failed(c, "recv", want);
}

int rhkv__tls_write(rhkv *c, const void *buf, size_t len, size_t *put,
		    short *want)
{
	ERR_clear_error();
	if (SSL_write_ex(c->ssl, buf, len, put))
		return 0;
	*put = 0;
	return tls_io_failed(c, "send", want);
}

bool rhkv__tls_pending(const rhkv *c)
{
	return c->ssl && SSL_pending(c->ssl) > 0;
}

void rhkv__tls_end(rhkv *c, bool notify)
{
	if (!c->ssl)
		return;
	if (notify) {
		/* one close_notify, without waiting for the server's */
		ERR_clear_error();
		SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	SSL_free(c->ssl);
	c->ssl = NULL;
}
