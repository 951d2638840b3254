/*
 * memcached's meta commands (mg, ms, md, ma, me, mn) as a pure codec: a
 * restartable parser of one meta request over a byte buffer, in the style
 * of proto/text.h (offsets into the buffer, nothing allocated, nothing kept
 * between calls), and base64 for binary keys. Which flags each command
 * takes, what each refusal says and which refusals swallow an ms data
 * block follow memcached 1.6.18; proto/META.md lists them and what the
 * current memcached text adds.
 */
#ifndef RHKV_PROTO_META_H
#define RHKV_PROTO_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/text.h"

/* A meta line's tokens, its command included: memcached refuses more with
 * "options flags (are) too long". */
#define PROTO_META_TOKENS_MAX 19
#define PROTO_META_FLAGS_MAX  (PROTO_META_TOKENS_MAX - 2)
#define PROTO_META_OPAQUE_MAX 32 /* an O token, its letter included */
/* The longest key a base64 key of PROTO_KEY_MAX characters decodes to. */
#define PROTO_META_BINKEY_MAX (PROTO_KEY_MAX / 4 * 3)

/* What a meta request asks to have returned (struct proto_meta.ret). */
#define PROTO_META_RET_CAS   (1u << 0) /* c */
#define PROTO_META_RET_FLAGS (1u << 1) /* f */
#define PROTO_META_RET_HIT   (1u << 2) /* h */
#define PROTO_META_RET_KEY   (1u << 3) /* k */
#define PROTO_META_RET_LAST  (1u << 4) /* l */
#define PROTO_META_RET_SIZE  (1u << 5) /* s */
#define PROTO_META_RET_TTL   (1u << 6) /* t */
#define PROTO_META_RET_VALUE (1u << 7) /* v */

struct proto_meta {
	char cmd;   /* 'g' 's' 'd' 'a' 'e' 'n' */
	size_t len; /* bytes of the request: line, and ms's data block */
	struct proto_span key; /* as sent (base64 when base64) */
	/* The flag tokens, in the order sent (the reply follows it). */
	uint32_t nflags;
	struct proto_span flag[PROTO_META_FLAGS_MAX];
	uint32_t ret; /* PROTO_META_RET_* */
	bool base64, quiet, no_bump, invalidate, drop_value;
	bool has_cas, has_new_cas, has_ttl, has_vivify, has_recache;
	bool ttl_after_vivify;		      /* T came after N */
	bool ttl_before_recache;	      /* T came before R */
	char mode;			      /* M's letter, 0 when none */
	uint32_t client_flags;		      /* F */
	uint64_t cas, new_cas;		      /* C, E */
	uint64_t delta, initial;	      /* D (default 1), J */
	int64_t ttl, vivify_ttl, recache_ttl; /* T, N, R (as sent) */
	uint32_t nbytes;		      /* ms: the data block's length */
	uint32_t value_off; /* ms: where the data block starts */
	/* mg, ma: an O token over PROTO_META_OPAQUE_MAX. The request runs,
	 * and its reply is "CLIENT_ERROR opaque token too long" instead, as
	 * memcached checks the opaque only as it writes the reply. */
	bool opaque_too_long;
	const char *error;   /* PROTO_CLIENT_ERROR: the whole line */
	uint64_t swallow;    /* ms refused: data bytes to discard */
	bool data_pending;   /* ms: as proto_req's */
	uint32_t no_newline; /* as proto_req's */
};

/*
 * Parses the meta request at the start of buf[0..n): its first token is
 * two bytes, "m" and a letter (proto_text_parse answers PROTO_META for
 * such a line). Returns:
 * - PROTO_OK: m filled; consume m->len bytes.
 * - PROTO_NEED_MORE: no whole line yet, or ms's data block is not all here
 *   (m->data_pending: the line is whole and valid, m filled as for
 *   PROTO_OK).
 * - PROTO_ERROR: "ERROR" (an unknown meta letter, no key).
 * - PROTO_CLIENT_ERROR: reply m->error (with "\r\n"; it carries its
 *   CLIENT_ERROR prefix), consume m->len bytes, then for an ms discard
 *   m->swallow more bytes (its data block and "\r\n", as memcached does).
 * - PROTO_TOO_LARGE: an ms whose data is over lim->max_value: reply
 *   "SERVER_ERROR object too large for cache", consume m->len, discard
 *   m->swallow; m->key is parsed (the old item goes, as memcached does).
 * - PROTO_LINE_TOO_LONG: as proto_text_parse.
 * The base64 key is checked, not decoded: proto_meta_key() decodes it.
 */
enum proto_status proto_meta_parse(const char *buf, size_t n,
				   const struct proto_limits *lim,
				   struct proto_meta *m);

/* Decodes base64 src[0..n) (standard alphabet, '=' padding required)
 * into dst (at least n / 4 * 3 bytes); returns the length, 0 when src is
 * not base64 or decodes to nothing. */
size_t proto_base64_decode(const char *src, size_t n, char *dst);
/* Encodes src[0..n) into dst (at least (n + 2) / 3 * 4 bytes); returns
 * the length. */
size_t proto_base64_encode(const char *src, size_t n, char *dst);

#endif
