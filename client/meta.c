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

bool rhkv__meta_has_result(uint32_t status)
{
	return status == PROTO_ST_OK || status == PROTO_ST_NOT_FOUND ||
	       status == PROTO_ST_NOT_STORED || status == PROTO_ST_EXISTS;
}

void rhkv__meta_fill(const struct proto_bin_meta_reply *mr,
		     struct rhkv_meta *out)
{
	memset(out, 0, sizeof(*out));
	out->value.flags = mr->flags;
	out->value.cas = mr->cas;
	out->ttl = mr->fields & PROTO_MR_TTL ? mr->ttl : -1;
	out->size = mr->size;
	out->last_access = mr->last_access;
	out->hit_before = mr->hit;
	out->won = !!(mr->fields & PROTO_MR_WON);
	out->stale = !!(mr->fields & PROTO_MR_STALE);
	out->won_by_other = !!(mr->fields & PROTO_MR_WONBY);
}

static int on_meta(rhkv *c, void *ctx, size_t i, uint32_t status,
		   const msgpack_object *payload)
{
	struct meta_call *m = ctx;
	struct rhkv_meta *out = m->out;
	const struct proto_bin_meta_reply *mr = &m->mr;

	(void)i;
	if (!rhkv__meta_has_result(status)) {
		m->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!proto_bin_meta_reply_decode(payload, &m->mr))
		return RHKV_EPROTO;
	if (status != PROTO_ST_OK)
		m->rc = rhkv__status(c, status, payload);
	if (!out)
		return 0;
	rhkv__meta_fill(mr, out);
	/* The value's bytes live until the next decode: copied now. */
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

/* Sets option bit of m to v when given. */
static void opt_u64(struct proto_bin_meta *m, uint32_t bit, uint64_t *f,
		    uint64_t v, bool given)
{
	if (given) {
		m->opts |= bit;
		*f = v;
	}
}

static void opt_i64(struct proto_bin_meta *m, uint32_t bit, int64_t *f,
		    int64_t v, bool given)
{
	if (given) {
		m->opts |= bit;
		*f = v;
	}
}

static void opt_flag(struct proto_bin_meta *m, uint32_t bit, bool given)
{
	if (given)
		m->opts |= bit;
}

static int mget_opts(rhkv *c, const struct rhkv_mget_opts *o,
		     struct proto_bin_meta *opts)
{
	static const struct rhkv_mget_opts none;

	if (!o)
		o = &none;
	if (o->vivify_ttl < 0 || o->recache_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL,
				  "vivify_ttl, recache_ttl: not below 0");
	opt_flag(opts, PROTO_META_VALUE, o->want_value);
	opt_flag(opts, PROTO_META_NOBUMP, o->no_bump);
	opt_i64(opts, PROTO_META_TTL, &opts->ttl, o->touch_ttl, o->touch);
	opt_i64(opts, PROTO_META_VIVIFY, &opts->vivify_ttl, o->vivify_ttl,
		o->vivify_ttl);
	opt_i64(opts, PROTO_META_RECACHE, &opts->recache_ttl, o->recache_ttl,
		o->recache_ttl);
	return 0;
}

static int mset_opts(rhkv *c, const struct rhkv_mset_opts *o,
		     struct proto_bin_meta *opts)
{
	static const struct rhkv_mset_opts none;

	if (!o)
		o = &none;
	if (o->mode && !strchr("SEAPR", o->mode))
		return rhkv__fail(c, RHKV_EINVAL, "mode: not one of S E A P R");
	if (o->vivify_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL, "vivify_ttl: below 0");
	opts->mode = o->mode;
	opt_flag(opts, PROTO_META_MODE, o->mode);
	opts->flags = o->flags;
	opt_flag(opts, PROTO_META_FLAGS, o->flags);
	opt_i64(opts, PROTO_META_TTL, &opts->ttl, o->ttl, o->ttl);
	opt_u64(opts, PROTO_META_CAS, &opts->cas, o->cas, o->cas);
	opt_u64(opts, PROTO_META_NEW_CAS, &opts->new_cas, o->new_cas,
		o->new_cas);
	opt_flag(opts, PROTO_META_INVALIDATE, o->invalidate);
	opt_i64(opts, PROTO_META_VIVIFY, &opts->vivify_ttl, o->vivify_ttl,
		o->vivify_ttl);
	return 0;
}

static int mdelete_opts(const struct rhkv_mdelete_opts *o,
			struct proto_bin_meta *opts)
{
	static const struct rhkv_mdelete_opts none;

	if (!o)
		o = &none;
	opt_flag(opts, PROTO_META_INVALIDATE, o->invalidate);
	opt_u64(opts, PROTO_META_CAS, &opts->cas, o->cas, o->cas);
	opt_i64(opts, PROTO_META_TTL, &opts->ttl, o->ttl, o->ttl);
	opt_u64(opts, PROTO_META_NEW_CAS, &opts->new_cas, o->new_cas,
		o->new_cas);
	return 0;
}

static int marith_opts(rhkv *c, const struct rhkv_marith_opts *o,
		       uint64_t delta, struct proto_bin_meta *opts)
{
	static const struct rhkv_marith_opts none;

	if (!o)
		o = &none;
	if (o->vivify_ttl < 0)
		return rhkv__fail(c, RHKV_EINVAL, "vivify_ttl: below 0");
	opts->opts = PROTO_META_VALUE | PROTO_META_DELTA;
	opts->delta = delta;
	opts->mode = o->decr ? 'D' : 0;
	opt_flag(opts, PROTO_META_MODE, o->decr);
	opt_u64(opts, PROTO_META_CAS, &opts->cas, o->cas, o->cas);
	opt_i64(opts, PROTO_META_VIVIFY, &opts->vivify_ttl, o->vivify_ttl,
		o->vivify_ttl);
	opt_u64(opts, PROTO_META_INITIAL, &opts->initial, o->initial,
		o->vivify_ttl);
	opt_i64(opts, PROTO_META_TTL, &opts->ttl, o->touch_ttl, o->touch);
	opt_u64(opts, PROTO_META_NEW_CAS, &opts->new_cas, o->new_cas,
		o->new_cas);
	return 0;
}

int rhkv__meta_opts(rhkv *c, const struct rhkv_cmd *cmd,
		    struct proto_bin_meta *opts)
{
	memset(opts, 0, sizeof(*opts));
	switch (cmd->op) {
	case RHKV_OP_META_GET:
		return mget_opts(c, cmd->mget, opts);
	case RHKV_OP_META_SET:
		return mset_opts(c, cmd->mset, opts);
	case RHKV_OP_META_DELETE:
		return mdelete_opts(cmd->mdelete, opts);
	case RHKV_OP_META_ARITH:
		return marith_opts(c, cmd->marith, cmd->delta, opts);
	default:
		return rhkv__fail(c, RHKV_EINVAL, "not a meta op");
	}
}

/* One meta op: the call's result (rhkv_* code). */
static int meta_call(rhkv *c, const struct rhkv_cmd *cmd, struct meta_call *m)
{
	struct proto_bin_meta opts;
	struct rhkv__req r;
	int rc = rhkv__cmd_req(c, cmd, &r, &opts);

	if (rc == 0)
		rc = rhkv__call(c, &r, on_meta, m);
	return rc ? rc : m->rc;
}

int rhkv_meta_get(rhkv *c, const void *key, size_t klen,
		  const struct rhkv_mget_opts *o, struct rhkv_meta *out)
{
	struct rhkv_cmd cmd = {
		.op = RHKV_OP_META_GET, .key = key, .klen = klen, .mget = o
	};
	struct meta_call m = { .out = out };

	if (!out)
		return RHKV_EINVAL;
	memset(out, 0, sizeof(*out));
	out->ttl = -1;
	if (!c || !key)
		return RHKV_EINVAL;
	return meta_call(c, &cmd, &m);
}

int rhkv_meta_set(rhkv *c, const void *key, size_t klen, const void *val,
		  size_t vlen, const struct rhkv_mset_opts *o,
		  uint64_t *cas_out)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_META_SET,
				.key = key,
				.klen = klen,
				.val = val,
				.vlen = vlen,
				.mset = o };
	struct meta_call m = { 0 };
	int rc;

	if (!c || !key || (!val && vlen))
		return RHKV_EINVAL;
	rc = rhkv__check_size(c, vlen);
	if (rc == 0)
		rc = meta_call(c, &cmd, &m);
	if (rc == 0 && cas_out)
		*cas_out = m.mr.cas;
	return rc;
}

int rhkv_meta_delete(rhkv *c, const void *key, size_t klen,
		     const struct rhkv_mdelete_opts *o)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_META_DELETE,
				.key = key,
				.klen = klen,
				.mdelete = o };
	struct meta_call m = { 0 };

	if (!c || !key)
		return RHKV_EINVAL;
	return meta_call(c, &cmd, &m);
}

int rhkv_meta_arith(rhkv *c, const void *key, size_t klen, uint64_t delta,
		    const struct rhkv_marith_opts *o, uint64_t *value,
		    uint64_t *cas_out)
{
	struct rhkv_cmd cmd = { .op = RHKV_OP_META_ARITH,
				.key = key,
				.klen = klen,
				.delta = delta,
				.marith = o };
	struct meta_call m = { 0 };
	int rc;

	if (!c || !key)
		return RHKV_EINVAL;
	rc = meta_call(c, &cmd, &m);
	if (rc == 0 && !(m.mr.fields & PROTO_MR_NUMBER))
		return rhkv__drop(c, RHKV_EPROTO,
				  "meta arithmetic: no number in the reply");
	if (rc == 0 && value)
		*value = m.mr.number;
	if (rc == 0 && cas_out)
		*cas_out = m.mr.cas;
	return rc;
}
