/*
 * The protocol-neutral middle of the request path. Every decoder (text,
 * msgpack, memcached binary) fills one struct request; one executor
 * (cmd.c) runs it against the cache, counts it and picks its latency
 * class; it answers through the reply operations of the connection's
 * protocol (protocol.h). A new command is one executor case plus its
 * encodings; a new protocol is a decoder plus a set of reply operations.
 *
 * A request points into the connection's input buffer (keys, values): it
 * is valid until the batch loop consumes its bytes. A large value may
 * instead be in an item of its own (landed).
 */
#ifndef RHKV_SERVER_REQUEST_H
#define RHKV_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cache.h"

enum req_cmd {
	REQ_GET, /* one key or many (req_keys) */
	REQ_GETS,
	REQ_GAT,
	REQ_GATS,
	REQ_SET,
	REQ_ADD,
	REQ_REPLACE,
	REQ_APPEND,
	REQ_PREPEND,
	REQ_CAS,
	REQ_DELETE,
	REQ_INCR,
	REQ_DECR,
	REQ_TOUCH,
	REQ_FLUSH_ALL,
	REQ_VERSION,
	REQ_VERBOSITY,
	REQ_QUIT,
	REQ_STATS,
	REQ_SCAN,
	REQ_CACHE_MEMLIMIT,
	REQ_AUTH, /* user (may be none) and arg, the password */
	/* text only, before auth with a user list: memcached's handshake,
	 * a set whose data is `user password`: STORED, or CLIENT_ERROR
	 * authentication failure */
	REQ_AUTH_SET,
	REQ_SHUTDOWN,	/* arg: the mode ("" or "graceful": both stop alike) */
	REQ_AUTH_MECHS, /* which auth mechanisms: OK, or no password */
	REQ_NOOP,
	REQ_LRU_CRAWLER,   /* text only: metadump, crawl */
	REQ_WATCH,	   /* text only */
	REQ_REFRESH_CERTS, /* text only: reload the TLS certificate */
	REQ_FLUSH_PREFIX,  /* key: the prefix (cache_flush_prefix) */
	REQ_SLABS,	   /* text only: slabs automove|reassign, no-ops */
	/* memcached's meta commands (r->meta says how): get, set, delete,
	 * arithmetic, and the item's debug line. The text protocol spells
	 * them mg, ms, md, ma, me; rhkv's msgpack protocol has its own ops. */
	REQ_MGET,
	REQ_MSET,
	REQ_MDELETE,
	REQ_MARITH,
	REQ_MDEBUG,
	REQ_MNOOP,	   /* mn: "MN", the end of a quiet pipeline */
	REQ_MFLUSH_PREFIX, /* mf: flush_prefix with meta's flags and "HD" */
	REQ_NCMDS	   /* how many */
};

/*
 * What a reply says, whatever the protocol spells it as. Each protocol
 * maps every status to its own words (text: "STORED", "CLIENT_ERROR ...";
 * binary: a status code and a message).
 */
enum reply_status {
	REPLY_NONE, /* nothing to say (a decoder's close without a reply) */
	REPLY_OK,
	REPLY_STORED,
	REPLY_NOT_STORED,
	REPLY_EXISTS,
	REPLY_NOT_FOUND,
	REPLY_DELETED,
	REPLY_TOUCHED,
	REPLY_RESET,
	REPLY_BYE, /* quit: the connection closes after it */
	/* Errors. msg, where given, replaces the status's own text. */
	REPLY_ERROR,	    /* unknown command (text "ERROR") */
	REPLY_CLIENT_ERROR, /* malformed request; msg says why */
	REPLY_BAD_KEY,
	REPLY_TOO_LARGE,   /* value above the item size limit */
	REPLY_NO_MEMORY,   /* the item cannot fit in the cache */
	REPLY_NON_NUMERIC, /* incr/decr of a non-number */
	REPLY_LINE_TOO_LONG,
	REPLY_SERVER_ERROR, /* msg says why */
	REPLY_AUTH_REQUIRED,
	REPLY_AUTH_FAILED,
	REPLY_NO_PASSWORD,
	REPLY_UNKNOWN_GROUP, /* stats of an unknown group */
};

/* What a meta request asks to have returned (struct req_meta.ret). */
enum meta_ret {
	META_RET_CAS = 1u << 0,	  /* c */
	META_RET_FLAGS = 1u << 1, /* f */
	META_RET_HIT = 1u << 2,	  /* h: fetched before this request */
	META_RET_KEY = 1u << 3,	  /* k */
	META_RET_LAST = 1u << 4,  /* l: seconds since the last access */
	META_RET_SIZE = 1u << 5,  /* s */
	META_RET_TTL = 1u << 6,	  /* t: remaining, -1 for none */
	META_RET_VALUE = 1u << 7, /* v */
};

/*
 * A meta request's options, protocol-neutral: the text decoder fills them
 * from mg/ms/md/ma flags, the msgpack decoder from its map. Storage's
 * client flags, the cas to compare, the delta and the initial value of an
 * arithmetic request are in struct request (flags, cas, delta, initial).
 */
struct req_meta {
	uint32_t ret;	  /* META_RET_* */
	bool quiet;	  /* q: no nominal reply (HD, mg's EN) */
	bool no_bump;	  /* u: a get that counts as no access */
	bool invalidate;  /* I: md marks stale; ms with C may store stale */
	bool key_binary;  /* b: the key was sent base64-encoded */
	bool has_cas;	  /* C: compare r->cas */
	bool has_new_cas; /* E: the written item's cas is new_cas */
	bool has_ttl;	  /* T: set the item's exptime to ttl */
	bool has_vivify;  /* N: create on a miss, with vivify_ttl */
	bool has_recache; /* R: win the recache below recache_ttl left */
	bool ttl_last;	  /* ma: T came after N (the later one applies) */
	bool ttl_before_recache; /* mg: T came before R (R sees its TTL) */
	bool drop_value;	 /* md x: keep the item, empty its value */
	/* The reply will be an error whatever happens (text: an opaque too
	 * long, which memcached finds only as it writes the reply): the
	 * request runs, but hands out no recache win. */
	bool no_win;
	char mode; /* M: ms E A P R S, ma I + D - (0: default) */
	uint64_t new_cas;
	int64_t ttl, vivify_ttl, recache_ttl; /* protocol exptimes */
};

struct request;

/* The keys of a get, as its decoder stores them: next() gives the key at
 * *pos and advances it; false after the last. A key of length 0 is one
 * the decoder found invalid (it is answered as a miss). */
struct req_keys {
	bool (*next)(const struct request *r, uint32_t *pos,
		     struct cache_key *key);
	uint32_t first; /* *pos to start from */
	uint32_t count; /* how many (0: unknown until iterated) */
};

struct request {
	enum req_cmd cmd;
	size_t len;	      /* input bytes the request takes */
	bool noreply;	      /* text: no reply, errors included */
	struct cache_key key; /* the only or first key; {NULL, 0}: none */
	struct req_keys keys; /* get/gets/gat/gats */
	/* get/gets/gat/gats: a key over 250 bytes followed these keys; as
	 * memcached, they are fetched (and touched) for their side effects
	 * alone, and the reply is the bad key's CLIENT_ERROR (text only). */
	bool bad_key_follows;
	const char *value; /* storage */
	uint32_t nbytes;
	uint32_t flags;	 /* storage; watch: PROTO_WATCH_* */
	int64_t exptime; /* as sent: relative, absolute or negative */
	uint64_t cas;
	uint64_t delta; /* incr/decr */
	/* incr/decr of a missing key: store initial (with exptime) when
	 * create is set, else answer NOT_FOUND. cas, when not 0, must match. */
	bool create;
	uint64_t initial;
	int64_t delay;		     /* flush_all */
	uint32_t verbosity;	     /* verbosity */
	uint32_t memlimit;	     /* cache_memlimit, MiB */
	uint64_t cursor;	     /* scan */
	uint32_t count;		     /* scan */
	int32_t slab_src, slab_dst;  /* slabs reassign */
	struct cache_key match;	     /* scan: a glob, {NULL, 0} for none */
	struct cache_key arg;	     /* stats: the group; auth: the password;
				   lru_crawler, slabs: the subcommand */
	struct cache_key user;	     /* auth: the user name; p NULL: none */
	struct cache_key args;	     /* stats, lru_crawler: what follows arg */
	const struct req_meta *meta; /* REQ_M*: the decoder's */
	/* A decoder's refusal (DECODE_REJECT, DECODE_CLOSE): what to say. */
	enum reply_status status;
	const char *message;
	uint64_t swallow; /* DECODE_TOO_LARGE: bytes of value to discard */
	/* DECODE_NEED_VALUE: the bytes that end the value ("\r\n"), or
	 * NULL when none do. */
	const char *value_end;
	/* Storage: where the item holding the value is when the batch loop
	 * received it straight into one (cache_write's landed); NULL from
	 * every decoder. */
	struct item **landed;
	/* The decoder's own fields, for its key iterator and its replies. */
	union {
		struct {
			const char *buf; /* the input the offsets are in */
			uint32_t keys_end;
		} text;
		struct {
			uint64_t id;
			uint32_t op;
			const void *keys; /* mget: msgpack objects */
		} bin;
		struct {
			uint32_t opaque;
			uint8_t op; /* as sent: quiet and key variants */
		} mcbin;
	} p;
};

/* A binary protocol's stats group with its arguments in one string
 * ("cachedump 1 0"): the group stays in arg, what follows its first space
 * goes to args. */
static inline void req_stats_split(struct request *r)
{
	const char *sp = r->arg.n ? memchr(r->arg.p, ' ', r->arg.n) : NULL;

	if (!sp)
		return;
	r->args = (struct cache_key){ sp + 1,
				      r->arg.n - (size_t)(sp + 1 - r->arg.p) };
	r->arg.n = (size_t)(sp - r->arg.p);
}

struct session;

/* memcached's reply to flush_all under -F (--disable-flush-all), and
 * rhkvd's to a prefix flush then. */
#define CMD_FLUSH_ALL_REFUSED	 "flush_all not allowed"
#define CMD_FLUSH_PREFIX_REFUSED "flush_prefix not allowed"

/* Runs a decoded request: the cache call, its statistics and its reply. */
void cmd_execute(struct session *c, const struct request *r);

/* A storage request whose value is over the limit: refuses it and, for a
 * set by an authenticated client, drops the old value (memcached does, so
 * that a failed set never leaves a stale value behind). */
void cmd_too_large(struct session *c, const struct request *r);

/* Goes on with a dump in progress (c->dumping) until the output reaches
 * --output-limit or the dump ends (then c->dumping is false). */
void cmd_continue(struct session *c);

/* Which latency histogram (latency.h) a request's time goes to. */
unsigned int cmd_latency_class(const struct request *r);

#endif
