/*
 * Frames on the wire: requests encoded with the codec's frame helpers
 * (proto/binary.h), and replies read with a cursor that allocates nothing
 * and checks every length against the bytes present, so that a get costs
 * no allocation but its value's (msgpack-c's unpacker makes a zone for
 * every body).
 */
#include "internal.h"

#include <string.h>

/* ---- reading ---- */

static size_t left(const struct rhkv__rd *r)
{
	return (size_t)(r->end - r->p);
}

static uint64_t be(const unsigned char *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A header with an n-byte big-endian length after the type byte. */
static bool sized(struct rhkv__rd *r, unsigned int n, uint64_t *len)
{
	if (left(r) < 1 + n)
		return false;
	*len = be(r->p + 1, n);
	r->p += 1 + n;
	return true;
}

static bool container(struct rhkv__rd *r, unsigned char fix, unsigned char b16,
		      uint32_t *n)
{
	uint64_t len;
	unsigned char b;

	if (left(r) < 1)
		return false;
	b = r->p[0];
	if ((b & 0xf0) == fix) {
		*n = b & 0x0f;
		r->p++;
	} else if (b == b16 && sized(r, 2, &len)) {
		*n = (uint32_t)len;
	} else if (b == b16 + 1 && sized(r, 4, &len)) {
		*n = (uint32_t)len;
	} else {
		return false;
	}
	/* every element takes a byte at least */
	return *n <= left(r);
}

bool rhkv__rd_array(struct rhkv__rd *r, uint32_t *n)
{
	return container(r, 0x90, 0xdc, n);
}

bool rhkv__rd_map(struct rhkv__rd *r, uint32_t *n)
{
	return container(r, 0x80, 0xde, n);
}

bool rhkv__rd_uint(struct rhkv__rd *r, uint64_t *v)
{
	static const unsigned char width[4] = { 1, 2, 4, 8 };
	unsigned char b;

	if (left(r) < 1)
		return false;
	b = r->p[0];
	if (b <= 0x7f) {
		*v = b;
		r->p++;
		return true;
	}
	if (b >= 0xcc && b <= 0xcf)
		return sized(r, width[b - 0xcc], v);
	if (b >= 0xd0 && b <= 0xd3) { /* a signed one, if not negative */
		unsigned int n = width[b - 0xd0];

		if (left(r) < 1 + n || (r->p[1] & 0x80))
			return false;
		return sized(r, n, v);
	}
	return false;
}

bool rhkv__rd_bytes(struct rhkv__rd *r, const char **p, uint32_t *n)
{
	struct rhkv__rd save = *r;
	uint64_t len;
	unsigned char b;

	if (left(r) < 1)
		return false;
	b = r->p[0];
	if (b >= 0xa0 && b <= 0xbf) {
		len = b & 0x1f;
		r->p++;
	} else if (!((b == 0xc4 || b == 0xd9) && sized(r, 1, &len)) &&
		   !((b == 0xc5 || b == 0xda) && sized(r, 2, &len)) &&
		   !((b == 0xc6 || b == 0xdb) && sized(r, 4, &len))) {
		*r = save;
		return false;
	}
	if (len > left(r)) {
		*r = save;
		return false;
	}
	*p = (const char *)r->p;
	*n = (uint32_t)len;
	r->p += len;
	return true;
}

bool rhkv__rd_nil(struct rhkv__rd *r)
{
	if (left(r) < 1 || r->p[0] != 0xc0)
		return false;
	r->p++;
	return true;
}

/* Bytes of payload after the header of scalar type b; -1: not a scalar
 * with a fixed size. */
static int fixed_size(unsigned char b)
{
	if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3))
		return 0;
	switch (b) {
	case 0xcc:
	case 0xd0:
		return 1;
	case 0xcd:
	case 0xd1:
		return 2;
	case 0xca:
	case 0xce:
	case 0xd2:
		return 4;
	case 0xcb:
	case 0xcf:
	case 0xd3:
		return 8;
	case 0xd4:
		return 2;
	case 0xd5:
		return 3;
	case 0xd6:
		return 5;
	case 0xd7:
		return 9;
	case 0xd8:
		return 17;
	default:
		return -1;
	}
}

static bool skip(struct rhkv__rd *r, unsigned int depth)
{
	const char *p;
	uint32_t n;
	uint64_t len;
	int fs;

	if (left(r) < 1 || depth > PROTO_BIN_MAX_DEPTH)
		return false;
	fs = fixed_size(r->p[0]);
	if (fs >= 0) {
		if (left(r) < 1 + (size_t)fs || r->p[0] == 0xc1)
			return false;
		r->p += 1 + fs;
		return true;
	}
	if (rhkv__rd_bytes(r, &p, &n))
		return true;
	if (rhkv__rd_array(r, &n)) {
		while (n--)
			if (!skip(r, depth + 1))
				return false;
		return true;
	}
	if (rhkv__rd_map(r, &n)) {
		for (uint64_t i = 0; i < 2ull * n; i++)
			if (!skip(r, depth + 1))
				return false;
		return true;
	}
	/* ext 8/16/32: length, type, data */
	unsigned char b = r->p[0];

	if (b >= 0xc7 && b <= 0xc9 && sized(r, 1u << (b - 0xc7), &len) &&
	    len + 1 <= left(r)) {
		r->p += len + 1;
		return true;
	}
	return false;
}

bool rhkv__rd_skip(struct rhkv__rd *r)
{
	return skip(r, 1);
}

bool rhkv__rd_value(struct rhkv__rd *r, uint32_t *flags, const char **val,
		    uint32_t *len, uint64_t *cas)
{
	uint32_t n;
	uint64_t f;

	if (!rhkv__rd_array(r, &n) || n != 3 || !rhkv__rd_uint(r, &f) ||
	    f > UINT32_MAX || !rhkv__rd_bytes(r, val, len) ||
	    !rhkv__rd_uint(r, cas))
		return false;
	*flags = (uint32_t)f;
	return true;
}

/* ---- encoding ---- */

static uint32_t nargs(uint32_t op, const struct rhkv__req *r)
{
	switch (op) {
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
		return 4;
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
	case PROTO_OP_INCR:
	case PROTO_OP_DECR:
	case PROTO_OP_TOUCH:
	case PROTO_OP_GAT:
		return 2;
	case PROTO_OP_CAS:
		return 5;
	case PROTO_OP_VERSION:
	case PROTO_OP_NOOP:
	case PROTO_OP_QUIT:
		return 0;
	case PROTO_OP_STATS:
		return r->key ? 1 : 0;
	default: /* get, gets, delete, flush_all, auth */
		return 1;
	}
}

static int pack(msgpack_packer *pk, uint64_t id, const struct rhkv__req *r)
{
	uint32_t op = r->op;
	int e = 0;

	proto_bin_pack_request_head(pk, op, id, nargs(op, r));
	if (op == PROTO_OP_FLUSH_ALL)
		return msgpack_pack_int64(pk, r->exptime);
	if (nargs(op, r) == 0)
		return 0;
	e |= msgpack_pack_str(pk, r->klen);
	e |= msgpack_pack_str_body(pk, r->key, r->klen);
	switch (op) {
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
	case PROTO_OP_CAS:
		e |= msgpack_pack_bin(pk, r->vlen);
		e |= msgpack_pack_bin_body(pk, r->val, r->vlen);
		if (op == PROTO_OP_APPEND || op == PROTO_OP_PREPEND)
			break;
		e |= msgpack_pack_uint32(pk, r->flags);
		e |= msgpack_pack_int64(pk, r->exptime);
		if (op == PROTO_OP_CAS)
			e |= msgpack_pack_uint64(pk, r->cas);
		break;
	case PROTO_OP_INCR:
	case PROTO_OP_DECR:
		e |= msgpack_pack_uint64(pk, r->delta);
		break;
	case PROTO_OP_TOUCH:
	case PROTO_OP_GAT:
		e |= msgpack_pack_int64(pk, r->exptime);
		break;
	default:
		break;
	}
	return e;
}

int rhkv__encode(msgpack_sbuffer *sb, msgpack_packer *pk, uint64_t id,
		 const struct rhkv__req *r)
{
	size_t was = sb->size;
	size_t frame = proto_bin_begin(sb);

	if (frame == (size_t)-1 || pack(pk, id, r) != 0) {
		sb->size = was;
		return RHKV_ENOMEM;
	}
	proto_bin_end(sb, frame);
	return 0;
}
