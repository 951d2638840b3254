/*
 * One blocking function per key operation: encode into the handle's
 * buffer, one exchange, the reply's payload into the caller's variables.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* What a single call brings back. */
struct one {
	int rc;
	uint64_t number;	/* cas of a store, value of incr/decr */
	struct rhkv_value *val; /* get, gat: allocated */
	void *buf;		/* get_into: the caller's buffer */
	size_t cap, *len;	/* get_into */
	uint32_t *flags;	/* get_into */
	uint64_t *cas;		/* get_into */
};

static int on_value(rhkv *c, void *ctx, size_t i, uint32_t status,
		    const msgpack_object *payload)
{
	struct one *o = ctx;
	const char *v;
	uint32_t flags, n;
	uint64_t cas;

	(void)i;
	if (status != PROTO_ST_OK) {
		o->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__pl_value(payload, &flags, &v, &n, &cas))
		return RHKV_EPROTO;
	if (o->val) {
		o->val->data = malloc((size_t)n + 1);
		if (!o->val->data) {
			o->rc = rhkv__fail(c, RHKV_ENOMEM, "out of memory");
			return 0;
		}
		memcpy(o->val->data, v, n);
		o->val->data[n] = '\0';
		o->val->len = n;
		o->val->flags = flags;
		o->val->cas = cas;
		return 0;
	}
	*o->len = n;
	if (o->flags)
		*o->flags = flags;
	if (o->cas)
		*o->cas = cas;
	if (n > o->cap)
		o->rc = rhkv__fail(c, RHKV_ERANGE, "value of %u bytes", n);
	else
		memcpy(o->buf, v, n);
	return 0;
}

/* OK payload: an unsigned number (cas, incr). */
static int on_number(rhkv *c, void *ctx, size_t i, uint32_t status,
		     const msgpack_object *payload)
{
	struct one *o = ctx;

	(void)i;
	if (status != PROTO_ST_OK)
		o->rc = rhkv__status(c, status, payload);
	else if (!rhkv__pl_uint(payload, &o->number))
		return RHKV_EPROTO;
	return 0;
}

/* OK payload: nil (anything is accepted). */
static int on_nil(rhkv *c, void *ctx, size_t i, uint32_t status,
		  const msgpack_object *payload)
{
	struct one *o = ctx;

	(void)i;
	if (status != PROTO_ST_OK)
		o->rc = rhkv__status(c, status, payload);
	return 0;
}

static int get_like(rhkv *c, uint32_t op, const void *key, size_t klen,
		    int64_t exptime, struct one *o)
{
	struct rhkv__req r = {
		.op = op, .key = key, .klen = klen, .exptime = exptime
	};
	int rc;

	if (!c || !key)
		return RHKV_EINVAL;
	rc = rhkv__call(c, &r, on_value, o);
	return rc ? rc : o->rc;
}

int rhkv_get(rhkv *c, const void *key, size_t klen, struct rhkv_value *out)
{
	struct one o = { .val = out };

	if (!out)
		return RHKV_EINVAL;
	out->data = NULL;
	out->len = 0;
	return get_like(c, PROTO_OP_GET, key, klen, 0, &o);
}

int rhkv_get_into(rhkv *c, const void *key, size_t klen, void *buf, size_t cap,
		  size_t *len, uint32_t *flags, uint64_t *cas)
{
	struct one o = {
		.buf = buf, .cap = cap, .len = len, .flags = flags, .cas = cas
	};

	if (!len || (!buf && cap))
		return RHKV_EINVAL;
	*len = 0;
	return get_like(c, PROTO_OP_GET, key, klen, 0, &o);
}

int rhkv_gat(rhkv *c, const void *key, size_t klen, int64_t exptime,
	     struct rhkv_value *out)
{
	struct one o = { .val = out };

	if (!out)
		return RHKV_EINVAL;
	out->data = NULL;
	out->len = 0;
	return get_like(c, PROTO_OP_GAT, key, klen, exptime, &o);
}

void rhkv_value_free(struct rhkv_value *v)
{
	if (!v)
		return;
	free(v->data);
	v->data = NULL;
	v->len = 0;
}

static int store(rhkv *c, struct rhkv__req *r, uint64_t *cas_out)
{
	struct one o = { 0 };
	int rc;

	if (!c || !r->key || (!r->val && r->vlen))
		return RHKV_EINVAL;
	if (!rhkv__key_ok(c, r->klen, r->key))
		return rhkv__fail(c, RHKV_EBADKEY, "bad key");
	rc = rhkv__check_size(c, r->vlen);
	if (rc == 0)
		rc = rhkv__call(c, r, on_number, &o);
	if (rc == 0)
		rc = o.rc;
	if (rc == 0 && cas_out)
		*cas_out = o.number;
	return rc;
}

int rhkv_set(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t *cas_out)
{
	struct rhkv__req r = { PROTO_OP_SET, key,     klen, val, vlen,
			       flags,	     exptime, 0,    0,	 NULL };

	return store(c, &r, cas_out);
}

int rhkv_add(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t *cas_out)
{
	struct rhkv__req r = { PROTO_OP_ADD, key,     klen, val, vlen,
			       flags,	     exptime, 0,    0,	 NULL };

	return store(c, &r, cas_out);
}

int rhkv_replace(rhkv *c, const void *key, size_t klen, const void *val,
		 size_t vlen, uint32_t flags, int64_t exptime,
		 uint64_t *cas_out)
{
	struct rhkv__req r = { PROTO_OP_REPLACE, key, klen, val, vlen, flags,
			       exptime,		 0,   0,    NULL };

	return store(c, &r, cas_out);
}

int rhkv_append(rhkv *c, const void *key, size_t klen, const void *val,
		size_t vlen, uint64_t *cas_out)
{
	struct rhkv__req r = {
		PROTO_OP_APPEND, key, klen, val, vlen, 0, 0, 0, 0, NULL
	};

	return store(c, &r, cas_out);
}

int rhkv_prepend(rhkv *c, const void *key, size_t klen, const void *val,
		 size_t vlen, uint64_t *cas_out)
{
	struct rhkv__req r = {
		PROTO_OP_PREPEND, key, klen, val, vlen, 0, 0, 0, 0, NULL
	};

	return store(c, &r, cas_out);
}

int rhkv_cas(rhkv *c, const void *key, size_t klen, const void *val,
	     size_t vlen, uint32_t flags, int64_t exptime, uint64_t cas,
	     uint64_t *cas_out)
{
	struct rhkv__req r = { PROTO_OP_CAS, key,     klen, val, vlen,
			       flags,	     exptime, cas,  0,	 NULL };

	return store(c, &r, cas_out);
}

/* delete, touch, incr, decr: a key, a nil or number payload. */
static int keyed(rhkv *c, struct rhkv__req *r, rhkv__reply_fn fn,
		 uint64_t *number)
{
	struct one o = { 0 };
	int rc;

	if (!c || !r->key)
		return RHKV_EINVAL;
	rc = rhkv__call(c, r, fn, &o);
	if (rc == 0)
		rc = o.rc;
	if (rc == 0 && number)
		*number = o.number;
	return rc;
}

int rhkv_delete(rhkv *c, const void *key, size_t klen)
{
	struct rhkv__req r = { .op = PROTO_OP_DELETE,
			       .key = key,
			       .klen = klen };

	return keyed(c, &r, on_nil, NULL);
}

int rhkv_incr(rhkv *c, const void *key, size_t klen, uint64_t delta,
	      uint64_t *value)
{
	struct rhkv__req r = {
		.op = PROTO_OP_INCR, .key = key, .klen = klen, .delta = delta
	};

	return keyed(c, &r, on_number, value);
}

int rhkv_decr(rhkv *c, const void *key, size_t klen, uint64_t delta,
	      uint64_t *value)
{
	struct rhkv__req r = {
		.op = PROTO_OP_DECR, .key = key, .klen = klen, .delta = delta
	};

	return keyed(c, &r, on_number, value);
}

int rhkv_touch(rhkv *c, const void *key, size_t klen, int64_t exptime)
{
	struct rhkv__req r = { .op = PROTO_OP_TOUCH,
			       .key = key,
			       .klen = klen,
			       .exptime = exptime };

	return keyed(c, &r, on_nil, NULL);
}

/* ---- without a key ---- */

static int simple(rhkv *c, struct rhkv__req *r)
{
	struct one o = { 0 };
	int rc;

	if (!c)
		return RHKV_EINVAL;
	rc = rhkv__call(c, r, on_nil, &o);
	return rc ? rc : o.rc;
}

int rhkv_flush_all(rhkv *c, int64_t delay)
{
	struct rhkv__req r = { .op = PROTO_OP_FLUSH_ALL, .exptime = delay };

	return simple(c, &r);
}

int rhkv_flush_prefix(rhkv *c, const void *prefix, size_t plen)
{
	struct rhkv__req r = { .op = PROTO_OP_FLUSH_PREFIX,
			       .key = prefix,
			       .klen = plen };

	return keyed(c, &r, on_nil, NULL);
}

int rhkv_ping(rhkv *c)
{
	struct rhkv__req r = { .op = PROTO_OP_NOOP };

	return simple(c, &r);
}

int rhkv_quit(rhkv *c)
{
	struct rhkv__req r = { .op = PROTO_OP_QUIT };
	int rc = simple(c, &r);

	if (c) /* the server closes: so do we */
		rhkv__disconnect(c);
	return rc;
}
