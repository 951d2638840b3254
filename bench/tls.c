/* tls: the client context of --tls. Verification is off unless --tls-ca
 * names CAs: a benchmark usually meets a throwaway self-signed
 * certificate. --tls-resume makes one full handshake here, before the
 * workers start, so that every connection of the run, opened all at once,
 * has a session to resume. */
#include "tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void tls_error(const char *what)
{
	char buf[256];
	unsigned long e = ERR_get_error();
	ERR_error_string_n(e, buf, sizeof(buf));
	fprintf(stderr, "rhkv-bench: %s: %s\n", what, e != 0 ? buf : "failed");
	ERR_clear_error();
}

/* The client keeps the first session the server hands it; TLS 1.3 hands
 * one over only after the handshake, in a ticket, hence a callback. */
static int keep_session(SSL *ssl, SSL_SESSION *sess)
{
	struct bench_run *r = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	if (r->tls_session != NULL || !SSL_SESSION_is_resumable(sess))
		return 0;
	r->tls_session = sess;
	return 1; /* the reference is ours */
}

/* One blocking connection and handshake to the server; then, until a
 * session comes (TLS 1.3 tickets follow the handshake), reads what the
 * server sends for up to a second. */
static int prime_session(struct bench_run *r)
{
	int fd = socket(r->addr.ss_family, SOCK_STREAM, 0);
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&r->addr, r->addrlen) != 0) {
		perror("rhkv-bench: --tls-resume: connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = -1;
	SSL *ssl = bench_tls_new(r);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
		tls_error("--tls-resume: handshake");
		goto out;
	}
	/* Non-blocking now: SSL_read must return once the ticket records
	 * are read, not wait for application data that never comes. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	char byte;
	for (int i = 0; i < 10 && r->tls_session == NULL; i++) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (SSL_pending(ssl) == 0 && poll(&p, 1, 100) <= 0)
			continue;
		/* Nothing is asked, so any application data is an error. */
		int n = SSL_read(ssl, &byte, 1), e = SSL_get_error(ssl, n);
		if (n <= 0 && e == SSL_ERROR_SSL) {
			/* e.g. the server wants a client certificate */
			tls_error("--tls-resume: handshake");
			goto out;
		}
		if (n > 0 || e != SSL_ERROR_WANT_READ)
			break;
	}
	if (r->tls_session == NULL)
		fprintf(stderr, "rhkv-bench: --tls-resume: the server "
				"offered no session to resume\n");
	else
		rc = 0;
	SSL_shutdown(ssl);
out:
	SSL_free(ssl);
	close(fd);
	return rc;
}

int bench_tls_init(struct bench_run *r)
{
	const struct bench_opts *o = r->o;
	r->tls = SSL_CTX_new(TLS_client_method());
	if (r->tls == NULL) {
		tls_error("SSL_CTX_new");
		return -1;
	}
	SSL_CTX_set_app_data(r->tls, r);
	if (o->tls_ca != NULL) {
		if (SSL_CTX_load_verify_locations(r->tls, o->tls_ca, NULL) !=
		    1) {
			tls_error(o->tls_ca);
			return -1;
		}
		SSL_CTX_set_verify(r->tls, SSL_VERIFY_PEER, NULL);
	}
	if (o->tls_cert != NULL &&
	    (SSL_CTX_use_certificate_chain_file(r->tls, o->tls_cert) != 1 ||
	     SSL_CTX_use_PrivateKey_file(r->tls, o->tls_key,
					 SSL_FILETYPE_PEM) != 1 ||
	     SSL_CTX_check_private_key(r->tls) != 1)) {
		tls_error(o->tls_cert);
		return -1;
	}
	if (!o->tls_resume)
		return 0;
	SSL_CTX_set_session_cache_mode(
		r->tls, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
	SSL_CTX_sess_set_new_cb(r->tls, keep_session);
	int rc = prime_session(r);
	/* The workers' connections reuse the primed session and leave
	 * r->tls_session alone: no callback runs on their threads. */
	SSL_CTX_set_session_cache_mode(r->tls, SSL_SESS_CACHE_OFF);
	SSL_CTX_sess_set_new_cb(r->tls, NULL);
	return rc;
}

void bench_tls_free(struct bench_run *r)
{
	if (r->tls_session != NULL)
		SSL_SESSION_free(r->tls_session);
	if (r->tls != NULL)
		SSL_CTX_free(r->tls);
	r->tls_session = NULL;
	r->tls = NULL;
}

SSL *bench_tls_new(struct bench_run *r)
{
	const char *host = r->o->host;
	unsigned char ip[sizeof(struct in6_addr)];
	int is_ip = inet_pton(AF_INET, host, ip) == 1 ||
		    inet_pton(AF_INET6, host, ip) == 1;
	SSL *ssl = SSL_new(r->tls);
	if (ssl == NULL)
		return NULL;
	/* SNI carries names only, never an address (RFC 6066). */
	if (!is_ip)
		SSL_set_tlsext_host_name(ssl, host);
	if (r->o->tls_ca != NULL &&
	    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
		   : SSL_set1_host(ssl, host)) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	if (r->tls_session != NULL)
		SSL_set_session(ssl, r->tls_session);
	return ssl;
}
