/*
 * The reply operations: how an executor answers a request. Each front end
 * (server/protocol/) implements them for its protocol, and the session
 * (session.h) holds the set of the protocol its connection speaks, so the
 * executor answers without knowing which protocol that is. They write
 * into the session's output.
 *
 * Everything here runs on the session's worker thread.
 */
#ifndef RHKV_SERVER_REPLY_H
#define RHKV_SERVER_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

struct item;
struct session;
struct stats_sink;

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
	void (*status)(struct session *c, const struct request *r,
		       enum reply_status st, const char *msg);
	void (*stored)(struct session *c, const struct request *r,
		       uint64_t cas);
	/* incr/decr: the new value and the item's cas. */
	void (*number)(struct session *c, const struct request *r, uint64_t v,
		       uint64_t cas);
	void (*version)(struct session *c, const struct request *r,
			const char *s);
	void (*values_begin)(struct session *c, const struct request *r);
	/* A live item, inside the RCU read-side section. */
	void (*value)(struct session *c, const struct request *r,
		      struct item *it);
	void (*miss)(struct session *c, const struct request *r);
	void (*values_end)(struct session *c, const struct request *r);
	void (*key)(struct session *c, const struct request *r, const char *key,
		    size_t n);
	void (*keys_end)(struct session *c, const struct request *r,
			 uint64_t cursor);
	/* The sink the group's entries go to; stats_end says whether the
	 * group existed (nothing was emitted when it did not). */
	const struct stats_sink *(*stats_begin)(struct session *c,
						const struct request *r);
	void (*stats_end)(struct session *c, const struct request *r, bool ok);
	/* A line of a dump, its line end included; then the end marker.
	 * NULL in the binary protocol, which has no request that dumps. */
	void (*dump_line)(struct session *c, const struct request *r,
			  const char *line, size_t n);
	void (*dump_end)(struct session *c, const struct request *r);
	/* A meta request's outcome. Quiet mode's suppression is the
	 * protocol's to apply (the executor always calls this). */
	void (*meta)(struct session *c, const struct request *r,
		     const struct meta_result *m);
};

#endif
