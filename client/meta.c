/*
 * The meta commands (rhkv.h): each call turns its options struct into the
 * meta op's options map (proto/binary.h: struct proto_bin_meta), makes one
 * exchange, and reads the reply's result map into the caller's variables.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* What a meta call brings back. */
struct meta_call {
	int rc;
	struct rhkv_meta *out;		/* meta get */
	struct proto_bin_meta_reply mr; /* the reply's map, value uncopied */
};

/* The statuses whose payload is a result map; others carry a message. */
static bool has_result_map(uint32_t status)
{
	return status == PROTO_ST_OK || status == PROTO_ST_NOT_FOUND ||
	       status == PROTO_ST_NOT_STORED || status == PROTO_ST_EXISTS;
}

static int on_meta(rhkv *c, void *ctx, size_t i, uint32_t status,
		   const msgpack_object *payload)
{
	struct meta_call *m = ctx;
	struct rhkv_meta *out = m->out;
	const struct proto_bin_meta_reply *mr = &m->mr;

	(void)i;
	if (!has_result_map(status)) {
		m->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!proto_bin_meta_reply_decode(payload, &m->mr))
		return RHKV_EPROTO;
	if (status != PROTO_ST_OK)
		m->rc = rhkv__status(c, status, payload);
	if (!out)
		return 0;
	/* The value's bytes live until the next decode: copied now. */
	out->value.flags = mr->flags;
	out->value.cas = mr->cas;
	out->ttl = mr->fields & PROTO_MR_TTL ? mr->ttl : -1;
	out->size = mr->size;
	out->last_access = mr->last_access;
	out->hit_before = mr->hit;
	out->won = !!(mr->fields & PROTO_MR_WON);
	out->stale = !!(mr->fields & PROTO_MR_STALE);
	out->won_by_other = !!(mr->fields & PROTO_MR_WONBY);
	if (mr->fields & PROTO_MR_VALUE) {
		out->value.data = malloc((size_t)mr->value.n + 1);
		if (!out->value.data) {
			m->rc = rhkv__fail(c, RHKV_ENOMEM, "out of memory");
			return 0;
		}
		memcpy(out->value.data, mr->value.p, mr->value.n);
		out->value.data[mr->value.n] = '\0';
		out->value.len = mr->value.n;
	}
	return 0;
}

/* One meta op on key: the call's result (rhkv_* code). */
static int meta_call(rhkv *c, struct rhkv__req *r, struct meta_call *m)
{
	int rc = rhkv__call(c, r, on_meta, m);

	return rc ? rc : m->rc;
}

int rhkv_meta_get(rhkv *c, const void *key, size_t klen,
		  const struct rhkv_mget_opts *o, struct rhkv_meta *out)
{
	static const struct rhkv_mget_opts none;
	struct proto_bin_meta opts = { 0 };
	struct rhkv__req r = { .op = PROTO_OP_META_GET,
			       .key = key,
			       .klen = klen };
	struct meta_call m = { .out = out };

	if (!out)
		return RHKV_EINVAL;
	memset(out, 0, sizeof(*out));
	out->ttl = -1;
	if (!c || !key)
		return RHKV_EINVAL;
	if (!o)
		o = &none;
	if (o->vivify_ttl < 0 || o->recache_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL,
				  "vivify_ttl, recache_ttl: not below 0");
	if (o->want_value)
		opts.opts |= PROTO_META_VALUE;
	if (o->no_bump)
		opts.opts |= PROTO_META_NOBUMP;
	if (o->touch) {
		opts.opts |= PROTO_META_TTL;
		opts.ttl = o->touch_ttl;
	}
	if (o->vivify_ttl) {
		opts.opts |= PROTO_META_VIVIFY;
		opts.vivify_ttl = o->vivify_ttl;
	}
	if (o->recache_ttl) {
		opts.opts |= PROTO_META_RECACHE;
		opts.recache_ttl = o->recache_ttl;
	}
	r.meta = &opts;
	return meta_call(c, &r, &m);
}

int rhkv_meta_set(rhkv *c, const void *key, size_t klen, const void *val,
		  size_t vlen, const struct rhkv_mset_opts *o,
		  uint64_t *cas_out)
{
	static const struct rhkv_mset_opts none;
	struct proto_bin_meta opts = { 0 };
	struct rhkv__req r = { .op = PROTO_OP_META_SET,
			       .key = key,
			       .klen = klen,
			       .val = val,
			       .vlen = vlen,
			       .meta = &opts };
	struct meta_call m = { 0 };
	int rc;

	if (!c || !key || (!val && vlen))
		return RHKV_EINVAL;
	if (!o)
		o = &none;
	if (o->mode && !strchr("SEAPR", o->mode))
		return rhkv__fail(c, RHKV_EINVAL, "mode: not one of S E A P R");
	if (o->vivify_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL, "vivify_ttl: below 0");
	if (!proto_bin_key_ok(key, klen))
		return rhkv__fail(c, RHKV_EBADKEY, "bad key");
	if (o->mode) {
		opts.opts |= PROTO_META_MODE;
		opts.mode = o->mode;
	}
	if (o->flags) {
		opts.opts |= PROTO_META_FLAGS;
		opts.flags = o->flags;
	}
	if (o->ttl) {
		opts.opts |= PROTO_META_TTL;
		opts.ttl = o->ttl;
	}
	if (o->cas) {
		opts.opts |= PROTO_META_CAS;
		opts.cas = o->cas;
	}
	if (o->new_cas) {
		opts.opts |= PROTO_META_NEW_CAS;
		opts.new_cas = o->new_cas;
	}
	if (o->invalidate)
		opts.opts |= PROTO_META_INVALIDATE;
	if (o->vivify_ttl) {
		opts.opts |= PROTO_META_VIVIFY;
		opts.vivify_ttl = o->vivify_ttl;
	}
	rc = rhkv__check_size(c, vlen);
	if (rc == 0)
		rc = meta_call(c, &r, &m);
	if (rc == 0 && cas_out)
		*cas_out = m.mr.cas;
	return rc;
}

int rhkv_meta_delete(rhkv *c, const void *key, size_t klen,
		     const struct rhkv_mdelete_opts *o)
{
	static const struct rhkv_mdelete_opts none;
	struct proto_bin_meta opts = { 0 };
	struct rhkv__req r = { .op = PROTO_OP_META_DELETE,
			       .key = key,
			       .klen = klen,
			       .meta = &opts };
	struct meta_call m = { 0 };

	if (!c || !key)
		return RHKV_EINVAL;
	if (!o)
		o = &none;
	if (o->invalidate)
		opts.opts |= PROTO_META_INVALIDATE;
	if (o->cas) {
		opts.opts |= PROTO_META_CAS;
		opts.cas = o->cas;
	}
	if (o->ttl) {
		opts.opts |= PROTO_META_TTL;
		opts.ttl = o->ttl;
	}
	if (o->new_cas) {
		opts.opts |= PROTO_META_NEW_CAS;
		opts.new_cas = o->new_cas;
	}
	return meta_call(c, &r, &m);
}

int rhkv_meta_arith(rhkv *c, const void *key, size_t klen, uint64_t delta,
		    const struct rhkv_marith_opts *o, uint64_t *value,
		    uint64_t *cas_out)
{
	static const struct rhkv_marith_opts none;
	struct proto_bin_meta opts = {
		.opts = PROTO_META_VALUE | PROTO_META_DELTA, .delta = delta
	};
	struct rhkv__req r = { .op = PROTO_OP_META_ARITH,
			       .key = key,
			       .klen = klen,
			       .meta = &opts };
	struct meta_call m = { 0 };
	int rc;

	if (!c || !key)
		return RHKV_EINVAL;
	if (!o)
		o = &none;
	if (o->vivify_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL, "vivify_ttl: below 0");
	if (o->decr) {
		opts.opts |= PROTO_META_MODE;
		opts.mode = 'D';
	}
	if (o->cas) {
		opts.opts |= PROTO_META_CAS;
		opts.cas = o->cas;
	}
	if (o->vivify_ttl) {
		opts.opts |= PROTO_META_VIVIFY | PROTO_META_INITIAL;
		opts.vivify_ttl = o->vivify_ttl;
		opts.initial = o->initial;
	}
	if (o->touch) {
		opts.opts |= PROTO_META_TTL;
		opts.ttl = o->touch_ttl;
	}
	rc = meta_call(c, &r, &m);
	if (rc == 0 && !(m.mr.fields & PROTO_MR_NUMBER))
		return rhkv__drop(c, RHKV_EPROTO,
				  "meta arithmetic: no number in the reply");
	if (rc == 0 && value)
		*value = m.mr.number;
	if (rc == 0 && cas_out)
		*cas_out = m.mr.cas;
	return rc;
}
