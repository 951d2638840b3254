/*
 * A protocol front end: what the connection's batch loop (net/conn.c)
 * needs from a protocol, and nothing else. A decoder turns input bytes
 * into a struct request; reply operations (declared in exec/reply.h, so
 * that the executor calls them without this header) turn the executor's
 * answers into bytes in the session's output (exec/session.h): a front
 * end sees a session, never the connection. Three front ends exist: memcached's text
 * protocol (proto_text.c), rhkv's msgpack protocol (proto_binary.c) and
 * memcached's binary protocol (proto_mcbin.c); the first byte a client
 * sends chooses one.
 *
 * Everything here runs on the connection's worker thread.
 */
#ifndef RHKV_SERVER_PROTOCOL_H
#define RHKV_SERVER_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "request.h"

struct session;
struct item;
struct stats_sink;

enum decode_status {
	DECODE_OK,	  /* a request: execute it, consume r->len */
	DECODE_NEED_MORE, /* no complete request yet */
	/* A request refused as malformed: reply r->status (r->message),
	 * consume r->len, then discard r->swallow bytes (a meta set's data
	 * block; every decoder sets it, mostly to 0); the connection goes
	 * on. */
	DECODE_REJECT,
	/* A storage request over the item size limit (r->cmd, r->key set):
	 * cmd_too_large(), consume r->len, then discard r->swallow bytes. */
	DECODE_TOO_LARGE,
	/* The connection cannot go on: reply r->status unless REPLY_NONE,
	 * then close once the output is written. */
	DECODE_CLOSE,
	/*
	 * A storage request whose header is whole and valid and whose value,
	 * above ITEM_SEG_VALUE_MAX, has not all arrived (decoders say so only
	 * once the connection has authenticated). r is filled as for
	 * DECODE_OK but r->value points at the part that is here and r->len
	 * is the whole request's length; r->value_end names the bytes that
	 * must follow the value (NULL: none) and r->status, r->message the
	 * refusal when others do. The batch loop receives the value straight
	 * into its item (conn.c) and then runs the request.
	 */
	DECODE_NEED_VALUE,
};

struct protocol {
	const char *name;
	/* Per-connection state (c->pstate); 0, or -1 out of memory. */
	int (*open)(struct session *c);
	void (*close)(struct session *c);
	/*
	 * Decodes the first request in buf[0..n) into r. slot is 0 or 1: the
	 * batch loop decodes one request ahead, so a decoder that keeps state
	 * per request keeps two. Limits (the item size, the pre-auth limit)
	 * come from the connection as it is now: decided per request.
	 */
	enum decode_status (*decode)(struct session *c, const char *buf,
				     size_t n, unsigned int slot,
				     struct request *r);
	/* Moves replies staged by the encoder into the session's output
	 * (NULL: none are). */
	void (*flush)(struct session *c);
	/* Bytes staged and not yet in the output (NULL: none are). */
	size_t (*staged)(const struct session *c);
	struct reply_ops reply;
};

extern const struct protocol protocol_text;
extern const struct protocol protocol_binary;
extern const struct protocol protocol_mcbin;

/*
 * The text protocol's longest get/gets/gat/gats line, "\n" excluded: the
 * item size limit (-I, 1 MiB by default), at least PROTO_GET_LINE_MIN
 * (64 KiB). memcached sets no limit; a longer line is answered
 * "CLIENT_ERROR line too long" and the connection closes.
 */
struct config;
size_t text_get_line_max(const struct config *cfg);

/* Before auth, requests are held to this (Redis does the same before
 * login): a frame body, a value, and half the input buffer. */
#define CONN_PREAUTH_LIMIT 4096

#endif
