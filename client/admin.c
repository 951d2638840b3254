/*
 * Server-wide calls with structured replies: version and stats.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct version {
	int rc;
	char *buf;
	size_t cap;
};

static int on_version(rhkv *c, void *ctx, size_t i, uint32_t status,
		      struct rhkv__rd *payload)
{
	struct version *v = ctx;
	const char *p;
	uint32_t n;

	(void)i;
	if (status != PROTO_ST_OK) {
		v->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__rd_bytes(payload, &p, &n))
		return RHKV_EPROTO;
	if (n >= v->cap) {
		v->rc = rhkv__fail(c, RHKV_ERANGE, "version of %u bytes", n);
		n = (uint32_t)v->cap - 1;
	}
	memcpy(v->buf, p, n);
	v->buf[n] = '\0';
	return 0;
}

int rhkv_version(rhkv *c, char *buf, size_t cap)
{
	struct rhkv__req r = { .op = PROTO_OP_VERSION };
	struct version v = { .buf = buf, .cap = cap };
	int rc;

	if (!c || !buf || !cap)
		return RHKV_EINVAL;
	buf[0] = '\0';
	rc = rhkv__call(c, &r, on_version, &v);
	return rc ? rc : v.rc;
}

struct stats {
	int rc;
	struct rhkv_stat *st;
	size_t n;
};

/* A stat's value: a string, or a number written in decimal. */
static bool stat_value(struct rhkv__rd *r, const char **p, uint32_t *n,
		       char *num, size_t cap)
{
	uint64_t u;

	if (rhkv__rd_bytes(r, p, n))
		return true;
	if (!rhkv__rd_uint(r, &u))
		return false;
	*n = (uint32_t)snprintf(num, cap, "%" PRIu64, u);
	*p = num;
	return true;
}

/* Two passes over the map: sizes, then one block holding the array and
 * every string. */
static int on_stats(rhkv *c, void *ctx, size_t i, uint32_t status,
		    struct rhkv__rd *payload)
{
	struct stats *s = ctx;
	struct rhkv__rd r;
	char num[24];
	const char *p;
	uint32_t m, n;
	size_t bytes;
	char *o;

	(void)i;
	if (status != PROTO_ST_OK) {
		s->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__rd_map(payload, &m))
		return RHKV_EPROTO;
	r = *payload;
	bytes = (size_t)m * sizeof(struct rhkv_stat);
	for (uint32_t k = 0; k < 2 * m; k++) {
		if (!stat_value(&r, &p, &n, num, sizeof(num)))
			return RHKV_EPROTO;
		bytes += (size_t)n + 1;
	}
	s->st = malloc(bytes ? bytes : 1);
	if (!s->st) {
		s->rc = rhkv__fail(c, RHKV_ENOMEM, "out of memory");
		*payload = r;
		return 0;
	}
	o = (char *)(s->st + m);
	for (uint32_t k = 0; k < 2 * m; k++) {
		stat_value(payload, &p, &n, num, sizeof(num));
		memcpy(o, p, n);
		o[n] = '\0';
		if (k % 2)
			s->st[k / 2].value = o;
		else
			s->st[k / 2].name = o;
		o += n + 1;
	}
	s->n = m;
	return 0;
}

int rhkv_stats(rhkv *c, const char *group, struct rhkv_stat **stats, size_t *n)
{
	struct rhkv__req r = { .op = PROTO_OP_STATS };
	struct stats s = { 0 };
	int rc;

	if (!c || !stats || !n)
		return RHKV_EINVAL;
	*stats = NULL;
	*n = 0;
	if (group && *group) {
		r.key = group;
		r.klen = strlen(group);
	}
	rc = rhkv__call(c, &r, on_stats, &s);
	if (rc == 0)
		rc = s.rc;
	if (rc) {
		free(s.st);
		return rc;
	}
	*stats = s.st;
	*n = s.n;
	return 0;
}

void rhkv_stats_free(struct rhkv_stat *stats, size_t n)
{
	(void)n; /* one block */
	free(stats);
}
