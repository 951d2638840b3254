/*
 * Scanning: rhkv_scan() (one cursor step; the keys come back in one block
 * of pointers and NUL-terminated strings) and the iterator that hides the
 * cursor.
 */
#include "internal.h"

#include "proto/text.h"

#include <stdlib.h>
#include <string.h>

struct scan {
	int rc;
	uint64_t next;
	char **keys;
	size_t n;
};

static int on_scan(rhkv *c, void *ctx, size_t i, uint32_t status,
		   const msgpack_object *payload)
{
	struct scan *s = ctx;
	const msgpack_object *ks;
	const char *p;
	uint32_t m, n;
	size_t bytes;
	char *o;

	(void)i;
	if (status != PROTO_ST_OK) {
		s->rc = rhkv__status(c, status, payload);
		return 0;
	}
	if (!rhkv__pl_scan(payload, &s->next, &ks, &m))
		return RHKV_EPROTO;
	bytes = (size_t)m * sizeof(char *);
	for (uint32_t k = 0; k < m; k++) {
		if (!rhkv__pl_bytes(&ks[k], &p, &n))
			return RHKV_EPROTO;
		bytes += (size_t)n + 1;
	}
	if (m == 0)
		return 0;
	s->keys = malloc(bytes);
	if (!s->keys) {
		s->rc = rhkv__fail(c, RHKV_ENOMEM, "out of memory");
		return 0;
	}
	o = (char *)(s->keys + m);
	for (uint32_t k = 0; k < m; k++) {
		rhkv__pl_bytes(&ks[k], &p, &n);
		memcpy(o, p, n);
		o[n] = '\0';
		s->keys[k] = o;
		o += n + 1;
	}
	s->n = m;
	return 0;
}

static int pack_scan(rhkv *c, uint64_t id, uint64_t cursor, unsigned int count,
		     const char *match)
{
	size_t frame = proto_bin_begin(&c->sb);
	msgpack_packer *pk = &c->pk;
	int e = 0;

	if (frame == (size_t)-1)
		return RHKV_ENOMEM;
	proto_bin_pack_request_head(pk, PROTO_OP_SCAN, id, 3);
	e |= msgpack_pack_uint64(pk, cursor);
	e |= count ? msgpack_pack_uint32(pk, count) : msgpack_pack_nil(pk);
	if (match) {
		e |= msgpack_pack_str(pk, strlen(match));
		e |= msgpack_pack_str_body(pk, match, strlen(match));
	} else {
		e |= msgpack_pack_nil(pk);
	}
	if (e)
		return RHKV_ENOMEM;
	proto_bin_end(&c->sb, frame);
	return 0;
}

int rhkv_scan(rhkv *c, uint64_t cursor, unsigned int count, const char *match,
	      uint64_t *next, char ***keys, size_t *n)
{
	struct scan s = { 0 };
	uint64_t id;
	int rc;

	if (!c || !next || !keys || !n)
		return RHKV_EINVAL;
	*keys = NULL;
	*n = 0;
	if (count > PROTO_SCAN_COUNT_MAX)
		return rhkv__fail(c, RHKV_EINVAL, "count above %u",
				  PROTO_SCAN_COUNT_MAX);
	rc = rhkv__ensure(c);
	if (rc)
		return rc;
	msgpack_sbuffer_clear(&c->sb);
	id = c->next_id++;
	if (pack_scan(c, id, cursor, count, match))
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	rc = rhkv__exchange(c, c->sb.data, c->sb.size, id, 1, on_scan, &s);
	if (rc == 0)
		rc = s.rc;
	if (rc) {
		free(s.keys);
		return rc;
	}
	*next = s.next;
	*keys = s.keys;
	*n = s.n;
	return 0;
}

void rhkv_keys_free(char **keys, size_t n)
{
	(void)n; /* one block */
	free(keys);
}

struct rhkv_scan_iter {
	rhkv *c;
	char *match;
	unsigned int count;
	uint64_t cursor;
	bool started;
	char **keys;
	size_t n, i;
};

rhkv_scan_iter *rhkv_scan_begin(rhkv *c, const char *match, unsigned int count)
{
	rhkv_scan_iter *it;

	if (!c || count > PROTO_SCAN_COUNT_MAX)
		return NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->c = c;
	it->count = count;
	if (match && !(it->match = strdup(match))) {
		free(it);
		return NULL;
	}
	return it;
}

int rhkv_scan_next(rhkv_scan_iter *it, const char **key, size_t *klen)
{
	uint64_t next;
	int rc;

	if (!it || !key)
		return RHKV_EINVAL;
	while (it->i == it->n) {
		if (it->started && it->cursor == 0)
			return 0;
		rhkv_keys_free(it->keys, it->n);
		it->keys = NULL;
		it->n = it->i = 0;
		rc = rhkv_scan(it->c, it->cursor, it->count, it->match, &next,
			       &it->keys, &it->n);
		if (rc)
			return rc;
		it->started = true;
		it->cursor = next;
	}
	*key = it->keys[it->i++];
	if (klen)
		*klen = strlen(*key);
	return 1;
}

void rhkv_scan_end(rhkv_scan_iter *it)
{
	if (!it)
		return;
	rhkv_keys_free(it->keys, it->n);
	free(it->match);
	free(it);
}
