/*
 * The server's item size limit (-I). A frame longer than the limit (plus
 * a little) makes the server close the connection, so a value above the
 * default limit (1 MiB) goes out only once the limit is known. A blocking
 * call asks for it with `stats settings` and waits (rhkv__check_size).
 * rhkv_send() cannot wait: it queues the same request, and every frame
 * queued after it waits in the handle's held buffer until its reply; then
 * the held frames join the output in order, each value above the limit
 * swapped for a NOOP with the same id, whose reply fails that command
 * with RHKV_ETOOLARGE. Replies stay in request order, the FIFO of pending
 * records untouched; the cost is one round trip per connection, paid only
 * by a connection that sends such a value.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* item_size_max in a stats map; UINT64_MAX when absent (let the server
 * judge, as a blocking call does). */
static uint64_t limit_of(const msgpack_object *payload)
{
	const msgpack_object_map *m = &payload->via.map;
	char num[24], val[24];

	for (uint32_t k = 0; k < m->size; k++) {
		const char *p;
		uint32_t n;

		if (!rhkv__pl_stat(&m->ptr[k].key, &p, &n, num, sizeof(num)) ||
		    n != strlen("item_size_max") ||
		    memcmp(p, "item_size_max", n) != 0)
			continue;
		if (!rhkv__pl_stat(&m->ptr[k].val, &p, &n, num, sizeof(num)) ||
		    n == 0 || n >= sizeof(val))
			break;
		memcpy(val, p, n);
		val[n] = '\0';
		return strtoull(val, NULL, 10);
	}
	return UINT64_MAX;
}

int rhkv__check_size(rhkv *c, size_t vlen)
{
	struct rhkv_stat *st;
	size_t n;
	int rc;

	if (vlen <= RHKV__ITEM_DEFAULT)
		return 0;
	if (!c->item_max) {
		rc = rhkv_stats(c, "settings", &st, &n);
		if (rc)
			return rc; /* c may be gone: closed from a callback */
		c->item_max = UINT64_MAX; /* unknown: let the server judge */
		for (size_t i = 0; i < n; i++)
			if (strcmp(st[i].name, "item_size_max") == 0)
				c->item_max = strtoull(st[i].value, NULL, 10);
		rhkv_stats_free(st, n);
	}
	if (vlen > c->item_max)
		return rhkv__fail(c, RHKV_ETOOLARGE,
				  "value of %zu bytes above the server's "
				  "limit of %llu",
				  vlen, (unsigned long long)c->item_max);
	return 0;
}

/* Appends held[from .. to) to the output. */
static int move_out(rhkv *c, size_t from, size_t to)
{
	if (to <= from)
		return 0;
	return msgpack_sbuffer_write(&c->out, c->held.data + from, to - from)
		       ? RHKV_ENOMEM
		       : 0;
}

/* The limit is known: the held frames go out, those above it as NOOPs. */
static int release(rhkv *c)
{
	struct rhkv__req noop = { .op = PROTO_OP_NOOP };
	size_t at = 0;
	int rc = 0;

	c->holding = false;
	for (size_t i = 0; i < c->nbigs && rc == 0; i++) {
		const struct rhkv__big *b = &c->bigs[i];
		struct rhkv__pending *p;

		if (b->vlen <= c->item_max)
			continue; /* it goes out with the frames around it */
		rc = move_out(c, at, b->off);
		if (rc == 0)
			rc = rhkv__encode(c, &c->out, &c->opk, b->id, &noop);
		at = b->off + b->len;
		p = rhkv__pending_find(c, b->id);
		if (p)
			p->fail = rhkv__fail(c, RHKV_ETOOLARGE,
					     "value of %zu bytes above the "
					     "server's limit of %llu",
					     b->vlen,
					     (unsigned long long)c->item_max);
	}
	if (rc == 0)
		rc = move_out(c, at, c->held.size);
	msgpack_sbuffer_clear(&c->held);
	c->nbigs = 0;
	if (rc)
		return rhkv__drop(c, RHKV_ENOMEM, "out of memory");
	return 0;
}

static int on_limit(rhkv *c, void *ctx, size_t i, uint32_t status,
		    const msgpack_object *payload)
{
	(void)ctx;
	(void)i;
	if (status == PROTO_ST_OK && payload->type != MSGPACK_OBJECT_MAP)
		return RHKV_EPROTO;
	/* a server that will not tell keeps the default: nothing above it
	 * is sent */
	c->item_max =
		status == PROTO_ST_OK ? limit_of(payload) : RHKV__ITEM_DEFAULT;
	if (c->item_max == 0)
		c->item_max = RHKV__ITEM_DEFAULT;
	return release(c);
}

int rhkv__limit_prepare(rhkv *c, size_t vlen)
{
	struct rhkv__req r = { .op = PROTO_OP_STATS,
			       .key = "settings",
			       .klen = strlen("settings") };
	int rc;

	if (vlen <= RHKV__ITEM_DEFAULT)
		return 0;
	if (c->item_max && !c->holding) {
		if (vlen <= c->item_max)
			return 0;
		return rhkv__fail(c, RHKV_ETOOLARGE,
				  "value of %zu bytes above the server's "
				  "limit of %llu",
				  vlen, (unsigned long long)c->item_max);
	}
	if (c->nbigs == c->bigs_cap) {
		size_t cap = c->bigs_cap ? 2 * c->bigs_cap : 4;
		struct rhkv__big *b = realloc(c->bigs, cap * sizeof(*b));

		if (!b)
			return rhkv__fail(c, RHKV_ENOMEM, "out of memory");
		c->bigs = b;
		c->bigs_cap = cap;
	}
	if (c->holding)
		return 0;
	rc = rhkv__queue(c, &r, &(struct rhkv__pending){ .fn = on_limit });
	if (rc)
		return rhkv__fail(c, rc, "%s", rhkv_strerror(rc));
	c->holding = true;
	return 0;
}

void rhkv__limit_track(rhkv *c, size_t off, size_t vlen)
{
	if (vlen <= RHKV__ITEM_DEFAULT)
		return;
	c->bigs[c->nbigs++] = (struct rhkv__big){ .id = c->next_id - 1,
						  .off = off,
						  .len = c->held.size - off,
						  .vlen = vlen };
}

void rhkv__limit_reset(rhkv *c)
{
	c->holding = false;
	msgpack_sbuffer_clear(&c->held);
	c->nbigs = 0;
}
