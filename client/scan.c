/*
 * Scanning: rhkv_scan() and rhkv_scan_keys() (one cursor step; the keys
 * come back in one block: pointers, lengths, then NUL-terminated bytes,
 * which may hold NULs of their own) and the iterator that hides the
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
	size_t *klens; /* inside the keys' block, after the pointers */
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
	/* sizeof(char *) keeps the lengths after the pointers aligned */
	bytes = (size_t)m * (sizeof(char *) + sizeof(size_t));
	for (uint32_t k = 0; k < m; k++) {
		/* the match made every key start with the handle's prefix */
		if (!rhkv__pl_bytes(&ks[k], &p, &n) || n < c->prefix_len)
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
	s->klens = (size_t *)(s->keys + m);
	o = (char *)(s->klens + m);
	for (uint32_t k = 0; k < m; k++) {
		rhkv__pl_bytes(&ks[k], &p, &n);
		p += c->prefix_len; /* callers name keys without it */
		n -= (uint32_t)c->prefix_len;
		memcpy(o, p, n);
		o[n] = '\0';
		s->keys[k] = o;
		s->klens[k] = n;
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
	e |= msgpack_pack_uint32(pk, count);
	if (c->prefix_len) {
		/* the handle's namespace: its prefix, literal, then the match */
		const char *prefix = c->opt.key_prefix;
		const char *rest = match ? match : "*";
		size_t len = strlen(rest);

		for (size_t i = 0; i < c->prefix_len; i++)
			len += 1 + (strchr("*?[]\\", prefix[i]) != NULL);
		e |= msgpack_pack_str(pk, len);
		for (size_t i = 0; i < c->prefix_len; i++) {
			if (strchr("*?[]\\", prefix[i]))
				e |= msgpack_pack_str_body(pk, "\\", 1);
			e |= msgpack_pack_str_body(pk, &prefix[i], 1);
		}
		e |= msgpack_pack_str_body(pk, rest, strlen(rest));
	} else if (match) {
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

/* The server refuses a count outside 1..PROTO_SCAN_COUNT_MAX (BAD_REQUEST);
 * refused here with a reason, before a round trip. */
static int check_count(rhkv *c, unsigned int count)
{
	if (count < 1 || count > PROTO_SCAN_COUNT_MAX)
		return rhkv__fail(c, RHKV_EINVAL, "scan count %u not in 1..%u",
				  count, PROTO_SCAN_COUNT_MAX);
	return 0;
}

int rhkv_scan_keys(rhkv *c, uint64_t cursor, unsigned int count,
		   const char *match, uint64_t *next, char ***keys,
		   size_t **klens, size_t *n)
{
	struct scan s = { 0 };
	uint64_t id;
	int rc;

	if (!c || !next || !keys || !n)
		return RHKV_EINVAL;
	*keys = NULL;
	if (klens)
		*klens = NULL;
	*n = 0;
	rc = check_count(c, count);
	if (rc)
		return rc;
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
	if (klens)
		*klens = s.klens;
	*n = s.n;
	return 0;
}

int rhkv_scan(rhkv *c, uint64_t cursor, unsigned int count, const char *match,
	      uint64_t *next, char ***keys, size_t *n)
{
	return rhkv_scan_keys(c, cursor, count, match, next, keys, NULL, n);
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
	size_t *klens;
	size_t n, i;
};

int rhkv_scan_open(rhkv *c, const char *match, unsigned int count,
		   rhkv_scan_iter **out)
{
	rhkv_scan_iter *it;
	int rc;

	if (!out)
		return c ? rhkv__fail(c, RHKV_EINVAL, "no iterator pointer")
			 : RHKV_EINVAL;
	*out = NULL;
	if (!c)
		return RHKV_EINVAL;
	rc = check_count(c, count);
	if (rc)
		return rc;
	it = calloc(1, sizeof(*it));
	if (!it)
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	it->c = c;
	it->count = count;
	if (match && !(it->match = strdup(match))) {
		free(it);
		return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
	}
	rhkv__enter(c); /* as a pipeline does: freed by rhkv_scan_end() */
	*out = it;
	return 0;
}

rhkv_scan_iter *rhkv_scan_begin(rhkv *c, const char *match, unsigned int count)
{
	rhkv_scan_iter *it;

	return rhkv_scan_open(c, match, count, &it) ? NULL : it;
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
		it->klens = NULL;
		it->n = it->i = 0;
		rc = rhkv_scan_keys(it->c, it->cursor, it->count, it->match,
				    &next, &it->keys, &it->klens, &it->n);
		if (rc)
			return rc;
		it->started = true;
		it->cursor = next;
	}
	if (klen)
		*klen = it->klens[it->i];
	*key = it->keys[it->i++];
	return 1;
}

void rhkv_scan_end(rhkv_scan_iter *it)
{
	rhkv *c;

	if (!it)
		return;
	c = it->c;
	rhkv_keys_free(it->keys, it->n);
	free(it->match);
	free(it);
	rhkv__leave(c, 0);
}
