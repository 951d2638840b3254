/*
 * The binary protocol's codec (proto/PROTOCOL.md), shared by rhkvd and
 * librhkv. Pure: bytes in, structs out; encoders append to a msgpack_sbuffer.
 *
 * A frame is a 4-byte big-endian body length, then the body: one msgpack
 * array. Requests are [op, id, args...], replies [id, status, payload].
 * Bodies are decoded in place with msgpack-c: keys, values and strings in
 * a decoded request or reply point into the body, which must outlive them.
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
 * mget entries: [id, status, [[flags, value, cas], ...]] = 3). */
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
	PROTO_OP_AUTH = 21,    /* password -> nil (reserved) */
	PROTO_OP_MAX = 21,
};

/* Reply statuses (reply element 1). Wire values: never reorder. */
enum proto_bin_status {
	PROTO_ST_OK = 0,
	PROTO_ST_NOT_FOUND = 1,
	PROTO_ST_NOT_STORED = 2,
	PROTO_ST_EXISTS = 3,	    /* cas mismatch */
	PROTO_ST_TOO_LARGE = 4,	    /* value above the item size limit */
	PROTO_ST_BAD_KEY = 5,	    /* empty, > 250 bytes, space, \n or NUL */
	PROTO_ST_NON_NUMERIC = 6,   /* incr/decr of a non-number */
	PROTO_ST_OUT_OF_MEMORY = 7, /* the item cannot fit in the cache */
	PROTO_ST_BAD_REQUEST = 8,   /* malformed request; payload: why */
	PROTO_ST_SERVER_ERROR = 9,  /* payload: why */
	PROTO_ST_AUTH_REQUIRED = 10,
	PROTO_ST_MAX = 10,
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
	const msgpack_object *keys;   /* mget: nkeys str/bin objects */
	uint32_t nkeys;
};

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

/* Whether bytes are a valid key: the text protocol's rule (proto_key_ok
 * in text.h: 1..250 bytes, none of them ' ', '\n' or NUL), so both
 * protocols share keys. */
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
/* Packs the head of a request: an array of 2 + nargs, op, id; the caller
 * packs the nargs arguments. */
void proto_bin_pack_request_head(msgpack_packer *pk, uint32_t op, uint64_t id,
				 uint32_t nargs);

#endif
