/*
 * A protocol front end: what the connection's batch loop (conn.c) needs
 * from a protocol, and nothing else. A decoder turns input bytes into a
 * struct request; reply operations turn the executor's answers into bytes
 * in the connection's output. Three front ends exist: memcached's text
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

#include "request.h"

struct conn;
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

/* How a meta request ended (memcached's two-letter codes). */
enum meta_code {
	META_HD, /* done: stored, deleted, found (no value asked) */
	META_VA, /* found, with a value (mg v, ma v) */
	META_EN, /* mg: a miss */
	META_NS, /* not stored */
	META_EX, /* the cas differs */
	META_NF, /* not found */
	META_ME, /* me: the debug line */
};

/*
 * What the executor found out for a meta reply. Item fields are valid
 * when have_item (mg's ttl, ttl_before and last_access only when the
 * request asked for them: META_RET_TTL, META_RET_LAST); it (mg, me) is
 * live inside the executor's RCU read-side section, which the reply
 * operation runs in.
 */
struct meta_result {
	enum meta_code code;
	bool have_item;
	struct item *it;    /* mg v: the value's item (else NULL) */
	const char *value;  /* ma v: the number, as digits */
	uint32_t value_len; /* mg v, ma v */
	uint64_t cas;
	uint32_t flags;
	int64_t ttl;	    /* seconds left, -1: none */
	int64_t ttl_before; /* the same before this request changed it */
	/* What a T and (on an item this request created) an N give, for a
	 * `t` answered where it stands among the flags, as memcached does:
	 * `mg k N30 t T60` on a miss answers t30 and keeps 60. */
	int64_t ttl_set, ttl_vivify;
	bool created;	      /* mg N, ma N: this request made the item */
	uint32_t size;	      /* value bytes */
	uint32_t last_access; /* seconds since, before this request */
	bool hit_before;      /* fetched before this request */
	bool key_binary;      /* stored with a base64 key (k answers b) */
	bool won, stale, already_won; /* W, X, Z */
};

/*
 * The reply operations. The executor calls, per request, either one
 * status / stored / number / version, or one of the sequences
 *   values_begin, (value | miss)*, values_end     (gets)
 *   key*, keys_end                                 (scan)
 *   stats_begin, entries into the sink, stats_end  (stats)
 *   dump_line*, dump_end                           (lru_crawler metadump)
 */
struct reply_ops {
	/* msg, when not NULL, replaces the status's own text. */
	void (*status)(struct conn *c, const struct request *r,
		       enum reply_status st, const char *msg);
	void (*stored)(struct conn *c, const struct request *r, uint64_t cas);
	/* incr/decr: the new value and the item's cas. */
	void (*number)(struct conn *c, const struct request *r, uint64_t v,
		       uint64_t cas);
	void (*version)(struct conn *c, const struct request *r, const char *s);
	void (*values_begin)(struct conn *c, const struct request *r);
	/* A live item, inside the RCU read-side section. */
	void (*value)(struct conn *c, const struct request *r, struct item *it);
	void (*miss)(struct conn *c, const struct request *r);
	void (*values_end)(struct conn *c, const struct request *r);
	void (*key)(struct conn *c, const struct request *r, const char *key,
		    size_t n);
	void (*keys_end)(struct conn *c, const struct request *r,
			 uint64_t cursor);
	/* The sink the group's entries go to; stats_end says whether the
	 * group existed (nothing was emitted when it did not). */
	const struct stats_sink *(*stats_begin)(struct conn *c,
						const struct request *r);
	void (*stats_end)(struct conn *c, const struct request *r, bool ok);
	/* A line of a dump, its line end included; then the end marker.
	 * NULL in the binary protocol, which has no request that dumps. */
	void (*dump_line)(struct conn *c, const struct request *r,
			  const char *line, size_t n);
	void (*dump_end)(struct conn *c, const struct request *r);
	/* A meta request's outcome. Quiet mode's suppression is the
	 * protocol's to apply (the executor always calls this). */
	void (*meta)(struct conn *c, const struct request *r,
		     const struct meta_result *m);
};

struct protocol {
	const char *name;
	/* Per-connection state (c->pstate); 0, or -1 out of memory. */
	int (*open)(struct conn *c);
	void (*close)(struct conn *c);
	/*
	 * Decodes the first request in buf[0..n) into r. slot is 0 or 1: the
	 * batch loop decodes one request ahead, so a decoder that keeps state
	 * per request keeps two. Limits (the item size, the pre-auth limit)
	 * come from the connection as it is now: decided per request.
	 */
	enum decode_status (*decode)(struct conn *c, const char *buf, size_t n,
				     unsigned int slot, struct request *r);
	/* Moves replies staged by the encoder into c->out (NULL: none are). */
	void (*flush)(struct conn *c);
	/* Bytes staged and not yet in c->out (NULL: none are). */
	size_t (*staged)(const struct conn *c);
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

/* Values up to this size are copied into the output inside the read-side
 * section; larger ones (large items: cache.h) are referenced, pinned by
 * the item's refcount. */
#define REPLY_COPY_MAX 16384

/*
 * Appends n bytes of a live item at p (inside it) to the connection's
 * output: copied when small, else by reference, pinning the item until
 * the bytes have been written. When the reference cannot be queued the
 * bytes are copied; when that fails too the connection is marked broken
 * (it closes without sending anything more) and false is returned.
 */
bool conn_add_item_bytes(struct conn *c, struct item *it, const char *p,
			 size_t n);

/* Appends bytes to the output; a failure marks the connection broken. */
void conn_add(struct conn *c, const void *p, size_t n);

#endif
