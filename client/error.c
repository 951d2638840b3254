/*
 * Error codes and messages: rhkv_strerror(), the handle's last failure in
 * words, and the mapping of the protocol's statuses to RHKV_E* codes.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

const char *rhkv_strerror(int err)
{
	switch (err) {
	case RHKV_OK:
		return "success";
	case RHKV_ENOTFOUND:
		return "not found";
	case RHKV_ENOTSTORED:
		return "not stored";
	case RHKV_EEXISTS:
		return "the item changed (cas)";
	case RHKV_ETOOLARGE:
		return "value too large";
	case RHKV_EBADKEY:
		return "bad key";
	case RHKV_ETIMEDOUT:
		return "timed out";
	case RHKV_ECONN:
		return "connection failed or lost";
	case RHKV_ESERVER:
		return "server error";
	case RHKV_EPROTO:
		return "protocol error";
	case RHKV_ENONNUMERIC:
		return "value is not a number";
	case RHKV_ENOMEM:
		return "out of memory";
	case RHKV_EINVAL:
		return "invalid argument";
	case RHKV_ERANGE:
		return "buffer too small";
	case RHKV_EAUTH:
		return "authentication failed";
	case RHKV_ETLS:
		return "TLS failed";
	default:
		return "unknown error";
	}
}

const char *rhkv_errstr(const rhkv *c)
{
	return c ? c->err : "out of memory";
}

static void vrecord(rhkv *c, int err, const char *fmt, va_list ap)
{
	int n = vsnprintf(c->err, sizeof(c->err), fmt, ap);

	if (n < 0)
		snprintf(c->err, sizeof(c->err), "%s", rhkv_strerror(err));
}

int rhkv__fail(rhkv *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(c, err, fmt, ap);
	va_end(ap);
	return err;
}

int rhkv__drop(rhkv *c, int err, const char *fmt, ...)
{
	va_list ap;

	/* the first error is the one its commands fail with */
	if (!c->drop_err && c->pq_len)
		c->drop_err = err;
	if (c->opt.down_ms > 0 && (err == RHKV_ETIMEDOUT || err == RHKV_ECONN))
		c->down_until = rhkv__now_ms() + c->opt.down_ms;
	rhkv__disconnect(c);
	va_start(ap, fmt);
	vrecord(c, err, fmt, ap);
	va_end(ap);
	return err;
}

static int status_code(uint32_t status)
{
	switch (status) {
	case PROTO_ST_OK:
		return RHKV_OK;
	case PROTO_ST_NOT_FOUND:
		return RHKV_ENOTFOUND;
	case PROTO_ST_NOT_STORED:
		return RHKV_ENOTSTORED;
	case PROTO_ST_EXISTS:
		return RHKV_EEXISTS;
	case PROTO_ST_TOO_LARGE:
		return RHKV_ETOOLARGE;
	case PROTO_ST_BAD_KEY:
		return RHKV_EBADKEY;
	case PROTO_ST_NON_NUMERIC:
		return RHKV_ENONNUMERIC;
	case PROTO_ST_OUT_OF_MEMORY:
	case PROTO_ST_SERVER_ERROR:
		return RHKV_ESERVER;
	case PROTO_ST_AUTH_REQUIRED:
		return RHKV_EAUTH;
	case PROTO_ST_BAD_REQUEST:
	default:
		return RHKV_EPROTO;
	}
}

int rhkv__status(rhkv *c, uint32_t status, const msgpack_object *payload)
{
	int err = status_code(status);
	const char *msg;
	uint32_t n;

	if (rhkv__pl_bytes(payload, &msg, &n))
		return rhkv__fail(c, err, "%s: %.*s",
				  proto_bin_status_name(status), (int)n, msg);
	return rhkv__fail(c, err, "%s", proto_bin_status_name(status));
}
