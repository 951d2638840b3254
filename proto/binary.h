/*
 * The binary protocol's codec (proto/PROTOCOL.md), shared by rhkvd and
 * librhkv. Pure: bytes in, structs out; encoders append to a msgpack_sbuffer.
 *
 * A frame is a 4-byte big-endian body length, then the body: one msgpack
 * array. Requests are [op, id, args...], replies [id, status, payload].
 * Bodies are decoded in place with msgpack-c (the plain encodings of the
 * common requests are read directly, binary.c's direct path): keys, values
 * and strings in a decoded request or reply point into the body, which
 * must outlive them.
 *
 * Hostile input: the length is checked against the limit before anything
 * is buffered (proto_bin_frame_len); before msgpack-c sees a body, a
 * structural walk checks that no array or map claims more elements than
 * bytes remain and that nesting stays shallow, because msgpack-c allocates
 * a claimed element count up front (a 5-byte body could ask for gigabytes).
 */
#ifndef RHKV_PROTO_BINARY_H
#define RHKV_PROTO_BINARY_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_BIN_HEADER 4u
/* A frame body may exceed the item size limit by this much (key, fields). */
#define PROTO_BIN_SLACK 4096u
/* Deepest nesting a valid request or reply needs (reply payloads with
 * mget entries: [id, status, [[flags, value, cas], ...]] = 3; a meta
 * request's options map and a meta reply's map take 2). */
#define PROTO_BIN_MAX_DEPTH 4u
#define PROTO_BIN_KEY_MAX   250u

/* Operations (request element 0). Values are wire values: never reorder. */
enum proto_bin_op {
	PROTO_OP_GET = 1,  /* key -> [flags, value, cas] */
	PROTO_OP_GETS = 2, /* key -> [flags, value, cas] (same as GET) */
	PROTO_OP_MGET = 3, /* [keys] -> [nil | [flags, value, cas], ...] */
	PROTO_OP_SET = 4,  /* key, value, flags, exptime -> cas */
	PROTO_OP_ADD = 5,  /* as SET */
	PROTO_OP_REPLACE = 6,
	PROTO_OP_APPEND = 7, /* key, value -> cas (flags, exptime kept) */
	PROTO_OP_PREPEND = 8,
	PROTO_OP_CAS = 9,     /* key, value, flags, exptime, cas -> cas */
	PROTO_OP_DELETE = 10, /* key -> nil */
	PROTO_OP_INCR = 11,   /* key, delta -> new value */
	PROTO_OP_DECR = 12,
	PROTO_OP_TOUCH = 13,	 /* key, exptime -> nil */
	PROTO_OP_GAT = 14,	 /* key, exptime -> [flags, value, cas] */
	PROTO_OP_FLUSH_ALL = 15, /* delay -> nil */
	PROTO_OP_SCAN = 16,  /* cursor, count, match|nil -> [cursor, [keys]] */
	PROTO_OP_STATS = 17, /* group ("" general) -> {name: value} */
	PROTO_OP_VERSION = 18, /* -> version string */
	PROTO_OP_NOOP = 19,    /* -> nil (ping) */
	PROTO_OP_QUIT = 20,    /* -> nil, then the server closes */
	PROTO_OP_AUTH = 21,    /* [user,] password -> nil */
	/* memcached's meta commands: key[, value], options map -> result map
	 * (struct proto_bin_meta; PROTOCOL.md, "Meta operations"). */
	PROTO_OP_META_GET = 22,	    /* key[, {opts}] */
	PROTO_OP_META_SET = 23,	    /* key, value[, {opts}] */
	PROTO_OP_META_DELETE = 24,  /* key[, {opts}] */
	PROTO_OP_META_ARITH = 25,   /* key[, {opts}] */
	PROTO_OP_FLUSH_PREFIX = 26, /* prefix -> nil */
	PROTO_OP_MAX = 26,
};

/* Reply statuses (reply element 1). Wire values: never reorder. */
enum proto_bin_status {
	PROTO_ST_OK = 0,
	PROTO_ST_NOT_FOUND = 1,
	PROTO_ST_NOT_STORED = 2,
	PROTO_ST_EXISTS = 3,	    /* cas mismatch */
	PROTO_ST_TOO_LARGE = 4,	    /* value above the item size limit */
	PROTO_ST_BAD_KEY = 5,	    /* empty or > 250 bytes */
	PROTO_ST_NON_NUMERIC = 6,   /* incr/decr of a non-number */
	PROTO_ST_OUT_OF_MEMORY = 7, /* the item cannot fit in the cache */
	PROTO_ST_BAD_REQUEST = 8,   /* malformed request; payload: why */
	PROTO_ST_SERVER_ERROR = 9,  /* payload: why */
	PROTO_ST_AUTH_REQUIRED = 10,
	PROTO_ST_MAX = 10,
};

/*
 * A meta request's options map: string keys, each allowed in some of the
 * four meta ops (PROTOCOL.md has the table). Which ones were given is in
 * opts; a boolean option given as false counts as absent. Any other key,
 * a key twice, a value of the wrong type or an option the op does not take
 * is a BAD_REQUEST: options that change what a write does must never be
 * ignored.
 */
enum proto_bin_meta_opt {
	PROTO_META_VALUE = 1u << 0,   /* "v": true: the value comes back */
	PROTO_META_TTL = 1u << 1,     /* "ttl": exptime (touch, store) */
	PROTO_META_VIVIFY = 1u << 2,  /* "vivify": exptime of a created item */
	PROTO_META_RECACHE = 1u << 3, /* "recache": win below this TTL */
	PROTO_META_NOBUMP = 1u << 4,  /* "nobump": true: not an access */
	PROTO_META_CAS = 1u << 5,     /* "cas": compare */
	PROTO_META_NEW_CAS = 1u << 6, /* "newcas": the written item's cas */
	PROTO_META_MODE = 1u << 7,    /* "mode": one letter */
	PROTO_META_FLAGS = 1u << 8,   /* "flags": 32-bit client flags */
	PROTO_META_INVALIDATE = 1u << 9, /* "invalidate": true: mark stale */
	PROTO_META_DELTA = 1u << 10,	 /* "delta": arithmetic's operand */
	PROTO_META_INITIAL = 1u << 11,	 /* "initial": a created counter */
};

/* At most this many entries in an options map (each key once). */
#define PROTO_BIN_META_OPTS_MAX 12u

struct proto_bin_meta {
	uint32_t opts; /* PROTO_META_* given */
	/* "mode", upper case: set S (default) E A P R; arithmetic I (incr,
	 * default) D; "+" and "-" arrive as I and D. 0 when not given. */
	char mode;
	uint32_t flags;
	int64_t ttl, vivify_ttl, recache_ttl;
	uint64_t cas, new_cas;
	uint64_t delta; /* 1 unless given */
	uint64_t initial;
};

/* Name of an op or status ("?" when unknown), for messages. */
const char *proto_bin_op_name(uint32_t op);
const char *proto_bin_status_name(uint32_t status);

/* Largest body a peer with item size limit max_value may send. */
static inline size_t proto_bin_body_limit(uint32_t max_value)
{
	return (size_t)max_value + PROTO_BIN_SLACK;
}

enum proto_bin_frame {
	PROTO_BIN_FRAME_OK,	   /* *body_len set; the body may not be here */
	PROTO_BIN_FRAME_NEED_MORE, /* fewer than 4 bytes */
	PROTO_BIN_FRAME_TOO_LARGE, /* *body_len > limit: close, buffer nothing */
};

/* Reads the 4-byte header at buf. */
enum proto_bin_frame proto_bin_frame_len(const char *buf, size_t n,
					 size_t limit, uint32_t *body_len);

struct proto_bin_bytes {
	const char *p;
	uint32_t n;
};

struct proto_bin_req {
	uint32_t op;
	uint64_t id;
	struct proto_bin_bytes key;   /* every op with a key */
	struct proto_bin_bytes value; /* storage ops */
	uint32_t flags;		      /* set, add, replace, cas */
	int64_t exptime;	      /* set..., touch, gat (as the text one) */
	uint64_t cas;		      /* cas */
	uint64_t delta;		      /* incr, decr */
	int64_t delay;		      /* flush_all */
	uint64_t cursor;	      /* scan */
	uint32_t count;		      /* scan: 1..PROTO_SCAN_COUNT_MAX */
	bool has_match;		      /* scan */
	struct proto_bin_bytes match; /* scan: the glob */
	struct proto_bin_bytes text;  /* stats: group; auth: password */
	struct proto_bin_bytes user;  /* auth: the user name; p NULL: none */
	const msgpack_object *keys;   /* mget: nkeys str/bin objects */
	uint32_t nkeys;
	struct proto_bin_meta meta; /* meta ops */
};

/* Whether op is one of the four meta ops. */
static inline bool proto_bin_op_is_meta(uint32_t op)
{
	return op >= PROTO_OP_META_GET && op <= PROTO_OP_META_ARITH;
}

enum proto_bin_result {
	PROTO_BIN_OK,
	/* The id is known: answer [id, status, error]; the connection goes on
	 * (status BAD_REQUEST, BAD_KEY or TOO_LARGE). */
	PROTO_BIN_REJECT,
	/* Not even an id: close the connection. */
	PROTO_BIN_FATAL,
};

/* Holds what msgpack-c allocates for one decoded body: a zone cleared
 * (not freed) between decodes, so a steady stream of small bodies
 * allocates nothing; freed by _destroy. */
struct proto_bin_decoder {
	msgpack_zone zone;
	msgpack_object obj;
	bool ready; /* zone initialised */
};

void proto_bin_decoder_init(struct proto_bin_decoder *d);
void proto_bin_decoder_destroy(struct proto_bin_decoder *d);

/*
 * Decodes one request body of n bytes (the frame's length). max_value is
 * the item size limit (a larger value: REJECT with PROTO_ST_TOO_LARGE).
 * On REJECT, *status and *error say what to answer (req->id is set).
 * Pointers in req stay valid until the next decode with d and while body
 * is unchanged.
 */
enum proto_bin_result proto_bin_decode_request(struct proto_bin_decoder *d,
					       const char *body, size_t n,
					       uint32_t max_value,
					       struct proto_bin_req *req,
					       uint32_t *status,
					       const char **error);

/* A key of an mget, or false when the object is not a valid key. */
bool proto_bin_mget_key(const struct proto_bin_req *req, uint32_t i,
			struct proto_bin_bytes *key);

/* Whether bytes are a valid key: 1..250 bytes, any of them (space, '\n'
 * and NUL too: a msgpack str or bin carries its length, so no byte needs
 * to end a key). The text protocol's rule (proto_key_ok in text.h) is
 * narrower; its replies spell the other keys in base64 (proto_text_key). */
bool proto_bin_key_ok(const char *p, size_t n);

struct proto_bin_reply {
	uint64_t id;
	uint32_t status;
	msgpack_object payload; /* points into the body */
};

/* Decodes one reply body (the client side). FATAL on anything malformed. */
enum proto_bin_result proto_bin_decode_reply(struct proto_bin_decoder *d,
					     const char *body, size_t n,
					     struct proto_bin_reply *reply);

/*
 * A meta reply's payload: a map of what the server knows (PROTOCOL.md).
 * fields says which entries are present; booleans won, stale and wonby
 * are sent only when true. "value" is bin for a meta get and an unsigned
 * integer for meta arithmetic.
 */
enum proto_bin_meta_field {
	PROTO_MR_FLAGS = 1u << 0,   /* "flags" */
	PROTO_MR_CAS = 1u << 1,	    /* "cas" */
	PROTO_MR_TTL = 1u << 2,	    /* "ttl": seconds left, -1 none */
	PROTO_MR_SIZE = 1u << 3,    /* "size": value bytes */
	PROTO_MR_LA = 1u << 4,	    /* "la": seconds since the last access */
	PROTO_MR_HIT = 1u << 5,	    /* "hit": fetched before this request */
	PROTO_MR_WON = 1u << 6,	    /* "won": this client recomputes */
	PROTO_MR_STALE = 1u << 7,   /* "stale": the item was invalidated */
	PROTO_MR_WONBY = 1u << 8,   /* "wonby": another client won already */
	PROTO_MR_VALUE = 1u << 9,   /* "value": bin (meta get) */
	PROTO_MR_NUMBER = 1u << 10, /* "value": uint (meta arithmetic) */
};

struct proto_bin_meta_reply {
	uint32_t fields; /* PROTO_MR_* present */
	uint32_t flags;
	uint64_t cas;
	int64_t ttl;
	uint32_t size;
	uint32_t last_access;
	bool hit;
	struct proto_bin_bytes value;
	uint64_t number;
};

/*
 * Reads a meta reply's payload (nil reads as an empty map). Keys it does
 * not know are skipped, so that a server may add entries; a known key
 * with a value of the wrong type is false (a broken reply).
 */
bool proto_bin_meta_reply_decode(const msgpack_object *o,
				 struct proto_bin_meta_reply *m);

/* ---- encoding: frames appended to a msgpack_sbuffer ---- */

/*
 * proto_bin_begin() reserves a frame's 4-byte header in sb and returns its
 * offset; pack the body (one array) with a packer writing to sb, then
 * proto_bin_end() writes the length. Returns (size_t)-1 out of memory.
 */
size_t proto_bin_begin(msgpack_sbuffer *sb);
void proto_bin_end(msgpack_sbuffer *sb, size_t frame);

/* Packs the head of a reply: a 3-array, id, status; the caller packs the
 * payload (one object; nil when none). */
void proto_bin_pack_reply_head(msgpack_packer *pk, uint64_t id,
			       uint32_t status);
/*
 * The same bytes as msgpack-c's packer, written at p by the caller that
 * has reserved room: no packer callback and no copy per field, for the
 * server's replies to the common requests. Each returns the bytes
 * written. An unsigned integer in its shortest form (at most
 * PROTO_BIN_UINT_MAX bytes); a bin's header (at most 5); a reply's head,
 * the 3-array, id and status (at most PROTO_BIN_REPLY_HEAD_MAX).
 */
#define PROTO_BIN_UINT_MAX	 9u
#define PROTO_BIN_REPLY_HEAD_MAX (1u + 2u * PROTO_BIN_UINT_MAX)
size_t proto_bin_put_uint(unsigned char *p, uint64_t v);
size_t proto_bin_put_bin_head(unsigned char *p, uint32_t n);
size_t proto_bin_put_reply_head(unsigned char *p, uint64_t id, uint32_t status);

/* Packs the head of a request: an array of 2 + nargs, op, id; the caller
 * packs the nargs arguments. */
void proto_bin_pack_request_head(msgpack_packer *pk, uint32_t op, uint64_t id,
				 uint32_t nargs);

/* Packs a meta request's options map: the options in m->opts (booleans as
 * true). The packer's error, or 0. */
int proto_bin_pack_meta_opts(msgpack_packer *pk,
			     const struct proto_bin_meta *m);

/*
 * Packs a meta reply's map. "value" comes last; with PROTO_MR_VALUE and
 * value_body false only its bin header is packed, and the caller appends
 * m->value.n bytes of value after it (the server sends large values by
 * reference). The packer's error, or 0.
 */
int proto_bin_pack_meta_reply(msgpack_packer *pk,
			      const struct proto_bin_meta_reply *m,
			      bool value_body);

#endif
