/*
 * The server's TLS context (tls.h): built from the --tls-* options, and
 * rebuilt on reload.
 */
#include "tls.h"

#include <openssl/err.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "config.h"

/* Session ticket keys: OpenSSL's name, AES and HMAC keys (80 bytes). */
#define TICKET_KEYS_LEN 80

/* Why the last OpenSSL call failed, after what we were doing. */
static const char *why(char *buf, size_t n, const char *doing, const char *file)
{
	unsigned long e = ERR_get_error();
	char reason[256] = "unknown error";

	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	snprintf(buf, n, "%s %s: %s", doing, file ? file : "", reason);
	return buf;
}

int tls_verify_flags(const struct config *cfg)
{
	if (strcmp(cfg->tls_verify, "require") == 0)
		return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	if (strcmp(cfg->tls_verify, "optional") == 0)
		return SSL_VERIFY_PEER;
	return SSL_VERIFY_NONE;
}

/* A context from cfg's files; NULL with *err set (into buf). */
static SSL_CTX *build(const struct config *cfg, char *buf, size_t n,
		      const char **err)
{
	static const unsigned char sid_ctx[] = "rhkvd";
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	/* A peer that closes without close_notify ends the stream like one
	 * that sends it: requests are self-delimiting, a cut one is not
	 * executed. */
	uint64_t opts = SSL_OP_NO_RENEGOTIATION |
			SSL_OP_CIPHER_SERVER_PREFERENCE |
			SSL_OP_IGNORE_UNEXPECTED_EOF;

	if (!ctx) {
		*err = why(buf, n, "creating the TLS context", NULL);
		return NULL;
	}
	if (cfg->tls_ktls)
		opts |= SSL_OP_ENABLE_KTLS;
	SSL_CTX_set_options(ctx, opts);
	/* Writes take what fits and may move between calls (the output
	 * buffer is pulled up anew); idle connections give their buffers
	 * back. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_min_proto_version(
		ctx, strcmp(cfg->tls_min_version, "1.3") == 0 ? TLS1_3_VERSION
							      : TLS1_2_VERSION);
	if (cfg->tls_ciphers && !SSL_CTX_set_cipher_list(ctx, cfg->tls_ciphers))
		*err = why(buf, n, "setting the TLS 1.2 ciphers",
			   cfg->tls_ciphers);
	else if (cfg->tls_ciphersuites &&
		 !SSL_CTX_set_ciphersuites(ctx, cfg->tls_ciphersuites))
		*err = why(buf, n, "setting the TLS 1.3 cipher suites",
			   cfg->tls_ciphersuites);
	else if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1)
		*err = why(buf, n, "loading the certificate chain",
			   cfg->tls_cert);
	else if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key,
					     SSL_FILETYPE_PEM) != 1)
		*err = why(buf, n, "loading the private key", cfg->tls_key);
	else if (SSL_CTX_check_private_key(ctx) != 1)
		*err = why(buf, n, "matching the key to the certificate",
			   cfg->tls_key);
	else if (cfg->tls_ca &&
		 SSL_CTX_load_verify_locations(ctx, cfg->tls_ca, NULL) != 1)
		*err = why(buf, n, "loading the CA certificates", cfg->tls_ca);
	else
		*err = NULL;
	if (*err) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (cfg->tls_ca) {
		STACK_OF(X509_NAME) *names =
			SSL_load_client_CA_file(cfg->tls_ca);

		if (!names) {
			*err = why(buf, n, "reading CA names from",
				   cfg->tls_ca);
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
	}
	SSL_CTX_set_verify(ctx, tls_verify_flags(cfg), NULL);
	/* Resumption: TLS 1.3 and 1.2 tickets (stateless), and with
	 * --tls-session-cache a cache on the server for 1.2 clients without
	 * tickets (off by default, as memcached's ssl_session_cache: it holds
	 * state per client); the id context makes resumption work with client
	 * certificates too. */
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
	SSL_CTX_set_session_cache_mode(ctx, cfg->tls_session_cache
						    ? SSL_SESS_CACHE_SERVER
						    : SSL_SESS_CACHE_OFF);
	return ctx;
}

struct tls *tls_create(const struct config *cfg)
{
	struct tls *t = calloc(1, sizeof(*t));
	char buf[512];
	const char *err;

	if (!t)
		return NULL;
	t->ctx = build(cfg, buf, sizeof(buf), &err);
	if (!t->ctx) {
		log_error("TLS: %s", err);
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	atomic_store(&t->refreshed, clock_now_s());
	return t;
}

void tls_destroy(struct tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

SSL_CTX *tls_ctx_get(struct tls *t)
{
	SSL_CTX *ctx;

	pthread_mutex_lock(&t->lock);
	ctx = t->ctx;
	SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&t->lock);
	return ctx;
}

const char *tls_reload(struct tls *t, const struct config *cfg)
{
	static _Thread_local char buf[512];
	unsigned char keys[TICKET_KEYS_LEN];
	const char *err;
	SSL_CTX *ctx = build(cfg, buf, sizeof(buf), &err), *old;

	if (!ctx) {
		log_warn("TLS: reload refused, the old certificate stays: %s",
			 err);
		return err;
	}
	pthread_mutex_lock(&t->lock);
	old = t->ctx;
	/* Tickets issued before the reload still resume. */
	if (SSL_CTX_get_tlsext_ticket_keys(old, keys, sizeof(keys)) == 1)
		SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof(keys));
	OPENSSL_cleanse(keys, sizeof(keys));
	t->ctx = ctx;
	pthread_mutex_unlock(&t->lock);
	SSL_CTX_free(old);
	atomic_store(&t->refreshed, clock_now_s());
	log_info("TLS: certificate reloaded from %s", cfg->tls_cert);
	return NULL;
}
