/*
 * memcached's binary protocol: a pure codec (no sockets). A request is a
 * 24-byte header, then extras, key and value, their lengths given by the
 * header. mcbin_parse() checks a request's header before any of its body
 * is needed (magic, body length, the opcode's layout) and decodes the
 * extras; mcbin_header_write() writes a response header. What is supported
 * and how it maps onto rhkvd: proto/MCBIN.md.
 */
#ifndef RHKV_PROTO_MCBIN_H
#define RHKV_PROTO_MCBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCBIN_HEADER	 24
#define MCBIN_MAGIC_REQ	 0x80
#define MCBIN_MAGIC_RES	 0x81
#define MCBIN_KEY_MAX	 250
#define MCBIN_EXTRAS_MAX 20 /* incr/decr: delta, initial, expiration */
/* A SET's body beyond its value: its extras and the longest key. */
#define MCBIN_BODY_SLACK (8 + MCBIN_KEY_MAX)

enum mcbin_op {
	MCBIN_GET = 0x00,
	MCBIN_SET = 0x01,
	MCBIN_ADD = 0x02,
	MCBIN_REPLACE = 0x03,
	MCBIN_DELETE = 0x04,
	MCBIN_INCREMENT = 0x05,
	MCBIN_DECREMENT = 0x06,
	MCBIN_QUIT = 0x07,
	MCBIN_FLUSH = 0x08,
	MCBIN_GETQ = 0x09,
	MCBIN_NOOP = 0x0a,
	MCBIN_VERSION = 0x0b,
	MCBIN_GETK = 0x0c,
	MCBIN_GETKQ = 0x0d,
	MCBIN_APPEND = 0x0e,
	MCBIN_PREPEND = 0x0f,
	MCBIN_STAT = 0x10,
	MCBIN_SETQ = 0x11,
	MCBIN_ADDQ = 0x12,
	MCBIN_REPLACEQ = 0x13,
	MCBIN_DELETEQ = 0x14,
	MCBIN_INCREMENTQ = 0x15,
	MCBIN_DECREMENTQ = 0x16,
	MCBIN_QUITQ = 0x17,
	MCBIN_FLUSHQ = 0x18,
	MCBIN_APPENDQ = 0x19,
	MCBIN_PREPENDQ = 0x1a,
	MCBIN_VERBOSITY = 0x1b,
	MCBIN_TOUCH = 0x1c,
	MCBIN_GAT = 0x1d,
	MCBIN_GATQ = 0x1e,
	MCBIN_SASL_LIST_MECHS = 0x20,
	MCBIN_SASL_AUTH = 0x21,
	MCBIN_SASL_STEP = 0x22,
	MCBIN_GATK = 0x23,
	MCBIN_GATKQ = 0x24,
	MCBIN_OP_MAX = 0x24
};

enum mcbin_status {
	MCBIN_ST_OK = 0x00,
	MCBIN_ST_NOT_FOUND = 0x01,
	MCBIN_ST_EXISTS = 0x02,
	MCBIN_ST_TOO_LARGE = 0x03,
	MCBIN_ST_INVALID = 0x04,
	MCBIN_ST_NOT_STORED = 0x05,
	MCBIN_ST_NON_NUMERIC = 0x06,
	MCBIN_ST_AUTH_ERROR = 0x20,
	MCBIN_ST_UNKNOWN_COMMAND = 0x81,
	MCBIN_ST_NO_MEMORY = 0x82,
};

/* A header, request or response: vbucket is the status in a response. */
struct mcbin_header {
	uint8_t magic;
	uint8_t opcode;
	uint16_t keylen;
	uint8_t extlen;
	uint8_t datatype;
	uint16_t vbucket;
	uint32_t bodylen;
	uint32_t opaque;
	uint64_t cas;
};

/* What an opcode's request holds. */
enum mcbin_need { MCBIN_NO, MCBIN_MAY, MCBIN_MUST };

struct mcbin_layout {
	bool known;
	uint8_t extlen;	 /* the extras it needs */
	bool extras_opt; /* extras may also be absent (FLUSH) */
	enum mcbin_need key;
	enum mcbin_need value;
	bool quiet;   /* no response on success (GETQ: none on a miss) */
	uint8_t base; /* the opcode it is a quiet variant of, or itself */
};

/* The layout of an opcode (.known false for an unknown one). */
struct mcbin_layout mcbin_layout(uint8_t opcode);

struct mcbin_req {
	struct mcbin_header h;
	size_t len;	  /* bytes taken: header, extras, key, value */
	uint64_t swallow; /* MCBIN_TOO_LARGE: value bytes to discard */
	const char *key;  /* h.keylen bytes */
	const char *value;
	uint32_t nvalue;
	/* The extras, decoded by opcode (0 where it has none). */
	uint32_t flags;	  /* SET, ADD, REPLACE */
	uint32_t exptime; /* storage, incr/decr, TOUCH, GAT, FLUSH */
	uint64_t delta;	  /* incr/decr */
	uint64_t initial; /* incr/decr */
	uint32_t verbosity;
	struct mcbin_layout lay;
	/* MCBIN_NEED_MORE of a storage request whose header, extras and key
	 * are here and valid: only value bytes are missing (q is filled as
	 * for MCBIN_OK, value pointing at the part that is here). */
	bool data_pending;
};

enum mcbin_result {
	MCBIN_NEED_MORE,
	MCBIN_OK, /* a request: q->len bytes */
	/* An unknown opcode: answer "unknown command", consume q->len. */
	MCBIN_UNKNOWN,
	/* A storage request whose value is over value_max: q->len covers
	 * header, extras and key; q->swallow value bytes follow. */
	MCBIN_TOO_LARGE,
	/* Extras, key or value not as the opcode wants, or a key over
	 * MCBIN_KEY_MAX: answer "invalid arguments", then close. */
	MCBIN_INVALID,
	/* Extras and key longer than the body: answer "unknown command",
	 * then close (as memcached does). */
	MCBIN_BAD_LENGTHS,
	/* Not a request (magic), or a body over body_max: close, no word. */
	MCBIN_CLOSE,
};

/* Parses the header at buf (big-endian fields); n >= MCBIN_HEADER. */
void mcbin_header_read(const char *buf, struct mcbin_header *h);

/* Writes h (status in h->vbucket) as 24 bytes at out. */
void mcbin_header_write(char out[MCBIN_HEADER], const struct mcbin_header *h);

/* Writes the header of a request (MCBIN_MAGIC_REQ, vbucket 0) or of a
 * response (MCBIN_MAGIC_RES, status) whose body is extras, key and value
 * of these lengths. */
void mcbin_frame_header(char out[MCBIN_HEADER], uint8_t magic, uint8_t opcode,
			uint16_t status, uint8_t extlen, uint16_t keylen,
			uint32_t nvalue, uint32_t opaque, uint64_t cas);

/*
 * Parses the first request in buf[0..n). body_max bounds the body (the
 * frame is refused before anything of it is needed), value_max a storage
 * request's value. For every result but MCBIN_NEED_MORE and MCBIN_CLOSE,
 * q->h is the request's header (its opcode and opaque go in the reply).
 */
enum mcbin_result mcbin_parse(const char *buf, size_t n, uint32_t body_max,
			      uint32_t value_max, struct mcbin_req *q);

/* The text a response carries for an error status ("Not found", ...). */
const char *mcbin_status_text(uint16_t status);

/* Big-endian loads and stores. */
uint32_t mcbin_load32(const char *p);
uint64_t mcbin_load64(const char *p);
void mcbin_store32(char *p, uint32_t v);
void mcbin_store64(char *p, uint64_t v);

#endif
