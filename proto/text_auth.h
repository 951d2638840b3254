/*
 * memcached's ASCII authentication handshake (its -Y option), as a pure
 * parser. Until a text connection authenticates, memcached reads only one
 * request: `set <key> <flags> <exptime> <bytes>` whose data block is
 * `user password`. Every other line is answered CLIENT_ERROR
 * unauthenticated; the key, flags and exptime are never looked at, the
 * data is not stored, and noreply is ignored.
 *
 * The parser reproduces memcached 1.6.18's reading of those bytes: its
 * tokenizer (spaces separate tokens, runs of them count as one, the
 * line's "\r" stays in its last token, a NUL byte ends the line), its
 * strtoul on <bytes> (signs, leading white space, the value cut to 32
 * bits) and its checks, in its order. It keeps no state: a caller gives
 * it the same bytes again, with more appended, after TEXT_AUTH_NEED_MORE.
 */
#ifndef RHKV_PROTO_TEXT_AUTH_H
#define RHKV_PROTO_TEXT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/text.h"

/* Bytes without a "\n" after which memcached closes the connection. */
#define PROTO_TEXT_AUTH_LINE_MAX 2048

enum proto_text_auth_status {
	/* Not enough bytes to decide: a line without its "\n" (at most
	 * PROTO_TEXT_AUTH_LINE_MAX bytes of it), or the set's data block. */
	PROTO_TEXT_AUTH_NEED_MORE,
	/* More than PROTO_TEXT_AUTH_LINE_MAX bytes and no "\n": close the
	 * connection without a reply. */
	PROTO_TEXT_AUTH_CLOSE,
	/* Answer `CLIENT_ERROR <error>` and drop len bytes. */
	PROTO_TEXT_AUTH_REFUSED,
	/* A handshake: check user and password, answer STORED (and the
	 * connection is authenticated) or CLIENT_ERROR authentication
	 * failure, and drop len bytes. */
	PROTO_TEXT_AUTH_CREDENTIALS,
};

struct proto_text_auth {
	size_t len;		/* bytes the request takes: line and data */
	const char *error;	/* PROTO_TEXT_AUTH_REFUSED: the message */
	struct proto_span user; /* PROTO_TEXT_AUTH_CREDENTIALS: offsets in */
	struct proto_span pass; /* buf; neither holds a space nor a NUL */
};

/* memcached's words for the handshake's replies. */
#define PROTO_TEXT_AUTH_UNAUTHENTICATED "unauthenticated"
#define PROTO_TEXT_AUTH_BAD_FORMAT	"bad authentication token format"
#define PROTO_TEXT_AUTH_BAD_END		"bad command line termination"
#define PROTO_TEXT_AUTH_FAILURE		"authentication failure"

/* Reads the request at the start of buf[0..n). */
enum proto_text_auth_status proto_text_auth_parse(const char *buf, size_t n,
						  struct proto_text_auth *out);

#endif
