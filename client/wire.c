/*
 * Frames on the wire: requests encoded with the codec's frame helpers, and
 * the payloads of replies read from the objects the codec decoded
 * (proto/binary.h: proto_bin_decode_reply, into the handle's decoder, whose
 * zone is cleared rather than freed between bodies, so a get costs no
 * allocation but its value's). The helpers below check the shapes the ops
 * expect; what they hand out points into the reply's body and stays valid
 * only until the next decode, so callers copy what they keep.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- reading payloads ---- */

bool rhkv__pl_uint(const msgpack_object *o, uint64_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*v = o->via.u64;
	return true;
}

bool rhkv__pl_bytes(const msgpack_object *o, const char **p, uint32_t *n)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		*p = o->via.str.ptr;
		*n = o->via.str.size;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		*p = o->via.bin.ptr;
		*n = o->via.bin.size;
		return true;
	}
	return false;
}

bool rhkv__pl_value(const msgpack_object *o, uint32_t *flags, const char **val,
		    uint32_t *len, uint64_t *cas)
{
	const msgpack_object *a;
	uint64_t f;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
		return false;
	a = o->via.array.ptr;
	if (!rhkv__pl_uint(&a[0], &f) || f > UINT32_MAX ||
	    !rhkv__pl_bytes(&a[1], val, len) || !rhkv__pl_uint(&a[2], cas))
		return false;
	*flags = (uint32_t)f;
	return true;
}

bool rhkv__pl_stat(const msgpack_object *o, const char **p, uint32_t *n,
		   char *num, size_t cap)
{
	uint64_t u;

	if (rhkv__pl_bytes(o, p, n))
		return true;
	if (!rhkv__pl_uint(o, &u))
		return false;
	*n = (uint32_t)snprintf(num, cap, "%" PRIu64, u);
	*p = num;
	return true;
}

bool rhkv__pl_scan(const msgpack_object *o, uint64_t *cursor,
		   const msgpack_object **keys, uint32_t *n)
{
	const msgpack_object *a;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
		return false;
	a = o->via.array.ptr;
	if (!rhkv__pl_uint(&a[0], cursor) || a[1].type != MSGPACK_OBJECT_ARRAY)
		return false;
	*keys = a[1].via.array.ptr;
	*n = a[1].via.array.size;
	return true;
}

bool rhkv__pl_result(uint32_t op, const msgpack_object *o,
		     struct rhkv_result *r)
{
	uint32_t n;

	switch (op) {
	case PROTO_OP_GET:
	case PROTO_OP_GETS:
	case PROTO_OP_GAT:
		if (!rhkv__pl_value(o, &r->flags, &r->data, &n, &r->cas))
			return false;
		if (!r->data) /* msgpack's empty bin: a hit all the same */
			r->data = "";
		r->len = n;
		return true;
	case PROTO_OP_DELETE:
	case PROTO_OP_TOUCH:
	case PROTO_OP_FLUSH_ALL:
	case PROTO_OP_FLUSH_PREFIX:
	case PROTO_OP_NOOP:
		return true; /* nil: anything is accepted */
	default:	     /* stores and arithmetic: a number */
		return rhkv__pl_uint(o, &r->number);
	}
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
	case PROTO_OP_AUTH: /* [password] or [user, password] */
		return r->val ? 2 : 1;
	case PROTO_OP_META_SET: /* key, value, options */
		return 3;
	case PROTO_OP_META_GET:
	case PROTO_OP_META_DELETE:
	case PROTO_OP_META_ARITH: /* key, options */
		return 2;
	default: /* get, gets, delete, flush_all, flush_prefix, auth */
		return 1;
	}
}

/* The ops whose key argument is a cache key (the prefix goes in front). */
static bool has_cache_key(uint32_t op)
{
	return op != PROTO_OP_STATS && op != PROTO_OP_AUTH &&
	       op != PROTO_OP_FLUSH_ALL;
}

bool rhkv__key_ok(const rhkv *c, size_t klen, const void *key)
{
	return klen && klen <= PROTO_BIN_KEY_MAX - c->prefix_len &&
	       proto_bin_key_ok(key, klen);
}

bool rhkv__req_key_ok(const rhkv *c, const struct rhkv__req *r)
{
	if (nargs(r->op, r) == 0 || !has_cache_key(r->op))
		return true;
	return r->key && rhkv__key_ok(c, r->klen, r->key);
}

static int pack(const rhkv *c, msgpack_packer *pk, uint64_t id,
		const struct rhkv__req *r)
{
	size_t plen = has_cache_key(r->op) ? c->prefix_len : 0;
	uint32_t op = r->op;
	int e = 0;

	proto_bin_pack_request_head(pk, op, id, nargs(op, r));
	if (op == PROTO_OP_FLUSH_ALL)
		return msgpack_pack_int64(pk, r->exptime);
	if (nargs(op, r) == 0)
		return 0;
	e |= msgpack_pack_str(pk, plen + r->klen);
	if (plen)
		e |= msgpack_pack_str_body(pk, c->opt.key_prefix, plen);
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
	case PROTO_OP_META_SET:
		e |= msgpack_pack_bin(pk, r->vlen);
		e |= msgpack_pack_bin_body(pk, r->val, r->vlen);
		e |= proto_bin_pack_meta_opts(pk, r->meta);
		break;
	case PROTO_OP_META_GET:
	case PROTO_OP_META_DELETE:
	case PROTO_OP_META_ARITH:
		e |= proto_bin_pack_meta_opts(pk, r->meta);
		break;
	case PROTO_OP_AUTH:
		if (r->val) {
			e |= msgpack_pack_str(pk, r->vlen);
			e |= msgpack_pack_str_body(pk, r->val, r->vlen);
		}
		break;
	default:
		break;
	}
	return e;
}

int rhkv__encode(const rhkv *c, msgpack_sbuffer *sb, msgpack_packer *pk,
		 uint64_t id, const struct rhkv__req *r)
{
	size_t was = sb->size;
	size_t frame;

	if (!rhkv__req_key_ok(c, r))
		return RHKV_EBADKEY;
	frame = proto_bin_begin(sb);
	if (frame == (size_t)-1 || pack(c, pk, id, r) != 0) {
		sb->size = was;
		return RHKV_ENOMEM;
	}
	proto_bin_end(sb, frame);
	return 0;
}
