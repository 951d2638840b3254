/*
 * memcached's binary protocol codec (mcbin.h). The checks run in the order
 * memcached 1.6.18 answers them: the magic, the body length, extras and
 * key against the body, the opcode, the key's length, then the opcode's
 * layout.
 */
#include "mcbin.h"

#include <string.h>

uint32_t mcbin_load32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 |
	       (uint32_t)u[2] << 8 | (uint32_t)u[3];
}

uint64_t mcbin_load64(const char *p)
{
	return (uint64_t)mcbin_load32(p) << 32 | mcbin_load32(p + 4);
}

void mcbin_store32(char *p, uint32_t v)
{
	unsigned char *u = (unsigned char *)p;

	u[0] = (unsigned char)(v >> 24);
	u[1] = (unsigned char)(v >> 16);
	u[2] = (unsigned char)(v >> 8);
	u[3] = (unsigned char)v;
}

void mcbin_store64(char *p, uint64_t v)
{
	mcbin_store32(p, (uint32_t)(v >> 32));
	mcbin_store32(p + 4, (uint32_t)v);
}

static uint16_t load16(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint16_t)(u[0] << 8 | u[1]);
}

static void store16(char *p, uint16_t v)
{
	p[0] = (char)(v >> 8);
	p[1] = (char)v;
}

void mcbin_header_read(const char *buf, struct mcbin_header *h)
{
	h->magic = (uint8_t)buf[0];
	h->opcode = (uint8_t)buf[1];
	h->keylen = load16(buf + 2);
	h->extlen = (uint8_t)buf[4];
	h->datatype = (uint8_t)buf[5];
	h->vbucket = load16(buf + 6);
	h->bodylen = mcbin_load32(buf + 8);
	h->opaque = mcbin_load32(buf + 12);
	h->cas = mcbin_load64(buf + 16);
}

void mcbin_header_write(char out[MCBIN_HEADER], const struct mcbin_header *h)
{
	out[0] = (char)h->magic;
	out[1] = (char)h->opcode;
	store16(out + 2, h->keylen);
	out[4] = (char)h->extlen;
	out[5] = (char)h->datatype;
	store16(out + 6, h->vbucket);
	mcbin_store32(out + 8, h->bodylen);
	mcbin_store32(out + 12, h->opaque);
	mcbin_store64(out + 16, h->cas);
}

void mcbin_frame_header(char out[MCBIN_HEADER], uint8_t magic, uint8_t opcode,
			uint16_t status, uint8_t extlen, uint16_t keylen,
			uint32_t nvalue, uint32_t opaque, uint64_t cas)
{
	struct mcbin_header h = {
		.magic = magic,
		.opcode = opcode,
		.keylen = keylen,
		.extlen = extlen,
		.vbucket = status,
		.bodylen = (uint32_t)extlen + keylen + nvalue,
		.opaque = opaque,
		.cas = cas,
	};

	mcbin_header_write(out, &h);
}

/* Each known opcode: extras, key, value, quiet, base opcode. */
#define L(ext, opt, key, val, q, base)                                    \
	{                                                                 \
		true, ext, opt, MCBIN_##key, MCBIN_##val, q, MCBIN_##base \
	}

static const struct mcbin_layout layouts[MCBIN_OP_MAX + 1] = {
	[MCBIN_GET] = L(0, false, MUST, NO, false, GET),
	[MCBIN_GETQ] = L(0, false, MUST, NO, true, GET),
	[MCBIN_GETK] = L(0, false, MUST, NO, false, GETK),
	[MCBIN_GETKQ] = L(0, false, MUST, NO, true, GETK),
	[MCBIN_SET] = L(8, false, MUST, MAY, false, SET),
	[MCBIN_SETQ] = L(8, false, MUST, MAY, true, SET),
	[MCBIN_ADD] = L(8, false, MUST, MAY, false, ADD),
	[MCBIN_ADDQ] = L(8, false, MUST, MAY, true, ADD),
	[MCBIN_REPLACE] = L(8, false, MUST, MAY, false, REPLACE),
	[MCBIN_REPLACEQ] = L(8, false, MUST, MAY, true, REPLACE),
	[MCBIN_DELETE] = L(0, false, MUST, NO, false, DELETE),
	[MCBIN_DELETEQ] = L(0, false, MUST, NO, true, DELETE),
	[MCBIN_INCREMENT] = L(20, false, MUST, NO, false, INCREMENT),
	[MCBIN_INCREMENTQ] = L(20, false, MUST, NO, true, INCREMENT),
	[MCBIN_DECREMENT] = L(20, false, MUST, NO, false, DECREMENT),
	[MCBIN_DECREMENTQ] = L(20, false, MUST, NO, true, DECREMENT),
	[MCBIN_QUIT] = L(0, false, NO, NO, false, QUIT),
	[MCBIN_QUITQ] = L(0, false, NO, NO, true, QUIT),
	[MCBIN_FLUSH] = L(4, true, NO, NO, false, FLUSH),
	[MCBIN_FLUSHQ] = L(4, true, NO, NO, true, FLUSH),
	[MCBIN_NOOP] = L(0, false, NO, NO, false, NOOP),
	[MCBIN_VERSION] = L(0, false, NO, NO, false, VERSION),
	[MCBIN_APPEND] = L(0, false, MUST, MAY, false, APPEND),
	[MCBIN_APPENDQ] = L(0, false, MUST, MAY, true, APPEND),
	[MCBIN_PREPEND] = L(0, false, MUST, MAY, false, PREPEND),
	[MCBIN_PREPENDQ] = L(0, false, MUST, MAY, true, PREPEND),
	[MCBIN_STAT] = L(0, false, MAY, NO, false, STAT),
	[MCBIN_VERBOSITY] = L(4, false, NO, NO, false, VERBOSITY),
	[MCBIN_TOUCH] = L(4, false, MUST, NO, false, TOUCH),
	[MCBIN_GAT] = L(4, false, MUST, NO, false, GAT),
	[MCBIN_GATQ] = L(4, false, MUST, NO, true, GAT),
	[MCBIN_GATK] = L(4, false, MUST, NO, false, GATK),
	[MCBIN_GATKQ] = L(4, false, MUST, NO, true, GATK),
	[MCBIN_SASL_LIST_MECHS] = L(0, false, NO, NO, false, SASL_LIST_MECHS),
	[MCBIN_SASL_AUTH] = L(0, false, MUST, MAY, false, SASL_AUTH),
	[MCBIN_SASL_STEP] = L(0, false, MUST, MAY, false, SASL_STEP),
};

#undef L

struct mcbin_layout mcbin_layout(uint8_t opcode)
{
	if (opcode > MCBIN_OP_MAX)
		return (struct mcbin_layout){ .known = false };
	return layouts[opcode];
}

static bool fits(enum mcbin_need need, uint32_t n)
{
	return need == MCBIN_MAY || (need == MCBIN_MUST) == (n > 0);
}

static bool layout_ok(const struct mcbin_layout *l,
		      const struct mcbin_header *h, uint32_t nvalue)
{
	bool ext = h->extlen == l->extlen || (l->extras_opt && !h->extlen);

	return ext && fits(l->key, h->keylen) && fits(l->value, nvalue);
}

/* The extras, by the opcode's base. */
static void decode_extras(const char *e, struct mcbin_req *q)
{
	switch (q->lay.base) {
	case MCBIN_SET:
	case MCBIN_ADD:
	case MCBIN_REPLACE:
		q->flags = mcbin_load32(e);
		q->exptime = mcbin_load32(e + 4);
		return;
	case MCBIN_INCREMENT:
	case MCBIN_DECREMENT:
		q->delta = mcbin_load64(e);
		q->initial = mcbin_load64(e + 8);
		q->exptime = mcbin_load32(e + 16);
		return;
	case MCBIN_TOUCH:
	case MCBIN_GAT:
	case MCBIN_GATK:
	case MCBIN_FLUSH:
		if (q->h.extlen == 4)
			q->exptime = mcbin_load32(e);
		return;
	case MCBIN_VERBOSITY:
		q->verbosity = mcbin_load32(e);
		return;
	default:
		return;
	}
}

static bool is_storage(uint8_t base)
{
	return base == MCBIN_SET || base == MCBIN_ADD ||
	       base == MCBIN_REPLACE || base == MCBIN_APPEND ||
	       base == MCBIN_PREPEND;
}

enum mcbin_result mcbin_parse(const char *buf, size_t n, uint32_t body_max,
			      uint32_t value_max, struct mcbin_req *q)
{
	uint32_t head, nvalue;

	memset(q, 0, sizeof(*q));
	if (n < 1)
		return MCBIN_NEED_MORE;
	if ((uint8_t)buf[0] != MCBIN_MAGIC_REQ)
		return MCBIN_CLOSE;
	if (n < MCBIN_HEADER)
		return MCBIN_NEED_MORE;
	mcbin_header_read(buf, &q->h);
	if (q->h.bodylen > body_max)
		return MCBIN_CLOSE;
	head = (uint32_t)q->h.extlen + q->h.keylen;
	if (head > q->h.bodylen)
		return MCBIN_BAD_LENGTHS;
	nvalue = q->h.bodylen - head;
	q->lay = mcbin_layout(q->h.opcode);
	q->len = MCBIN_HEADER + (size_t)q->h.bodylen;
	if (!q->lay.known)
		return n < q->len ? MCBIN_NEED_MORE : MCBIN_UNKNOWN;
	if (q->h.keylen > MCBIN_KEY_MAX || !layout_ok(&q->lay, &q->h, nvalue))
		return MCBIN_INVALID;
	if (is_storage(q->lay.base) && nvalue > value_max) {
		q->len = MCBIN_HEADER + (size_t)head;
		q->swallow = nvalue;
	}
	if (n < q->len && !(is_storage(q->lay.base) && !q->swallow &&
			    n >= MCBIN_HEADER + (size_t)head))
		return MCBIN_NEED_MORE;
	decode_extras(buf + MCBIN_HEADER, q);
	q->key = buf + MCBIN_HEADER + q->h.extlen;
	q->value = q->key + q->h.keylen;
	q->nvalue = q->swallow ? 0 : nvalue;
	if (n < q->len) {
		q->data_pending = true; /* a storage request's value only */
		return MCBIN_NEED_MORE;
	}
	return q->swallow ? MCBIN_TOO_LARGE : MCBIN_OK;
}

const char *mcbin_status_text(uint16_t status)
{
	switch (status) {
	case MCBIN_ST_OK:
		return "";
	case MCBIN_ST_NOT_FOUND:
		return "Not found";
	case MCBIN_ST_EXISTS:
		return "Data exists for key.";
	case MCBIN_ST_TOO_LARGE:
		return "Too large.";
	case MCBIN_ST_INVALID:
		return "Invalid arguments";
	case MCBIN_ST_NOT_STORED:
		return "Not stored.";
	case MCBIN_ST_NON_NUMERIC:
		return "Non-numeric server-side value for incr or decr";
	case MCBIN_ST_AUTH_ERROR:
		return "Auth failure.";
	case MCBIN_ST_UNKNOWN_COMMAND:
		return "Unknown command";
	case MCBIN_ST_NO_MEMORY:
		return "Out of memory";
	default:
		return "UNHANDLED ERROR";
	}
}
