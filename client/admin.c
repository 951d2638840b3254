/*
 * Server-wide calls with structured replies: version and stats.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct version {
	int rc;
	char *buf;
	size_t cap;
};

static int on_version(rhkv *c, void *ctx, size_t i, uint32_t status,
		      const msgpack_object *payload)
{
	struct version *v = ctx;
	const char *p;
	uint32_t n;

	(void)i;
	if (status != PROTO_ST_OK) {
		v->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__pl_bytes(payload, &p, &n))
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

/* The k-th string of a stats map: even k a name, odd k its value. */
static bool stat_at(const msgpack_object_map *m, uint32_t k, const char **p,
		    uint32_t *n, char *num, size_t cap)
{
	const msgpack_object_kv *kv = &m->ptr[k / 2];

	return rhkv__pl_stat(k % 2 ? &kv->val : &kv->key, p, n, num, cap);
}

/* Two passes over the map: sizes, then one block holding the array and
 * every string. */
static int on_stats(rhkv *c, void *ctx, size_t i, uint32_t status,
		    const msgpack_object *payload)
{
	struct stats *s = ctx;
	const msgpack_object_map *map;
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
	if (payload->type != MSGPACK_OBJECT_MAP)
		return RHKV_EPROTO;
	map = &payload->via.map;
	m = map->size;
	bytes = (size_t)m * sizeof(struct rhkv_stat);
	for (uint32_t k = 0; k < 2 * m; k++) {
		if (!stat_at(map, k, &p, &n, num, sizeof(num)))
			return RHKV_EPROTO;
		bytes += (size_t)n + 1;
	}
	s->st = malloc(bytes ? bytes : 1);
	if (!s->st) {
		s->rc = rhkv__fail(c, RHKV_ENOMEM, "out of memory");
		return 0;
	}
	o = (char *)(s->st + m);
	for (uint32_t k = 0; k < 2 * m; k++) {
		stat_at(map, k, &p, &n, num, sizeof(num));
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
