/* A session's output (session.h). */
#include "session.h"

#include <event2/buffer.h>

#include "cache.h"
#include "common/log.h"

void session_add(struct session *c, const void *p, size_t n)
{
	if (!c->broken && evbuffer_add(c->out, p, n))
		c->broken = true;
}

/* Segment items are copied: only large items can be referenced. */
_Static_assert(REPLY_COPY_MAX >= ITEM_SEG_VALUE_MAX,
	       "a segment item's value would be sent by reference");

static void unpin_item(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	item_put(arg);
}

bool session_add_item_bytes(struct session *c, struct item *it, const char *p,
			    size_t n)
{
	if (c->broken)
		return false;
	if (n > REPLY_COPY_MAX) {
		item_get(it); /* dropped when the bytes have left the buffer */
		if (!evbuffer_add_reference(c->out, p, n, unpin_item, it))
			return true;
		item_put(it); /* not queued: the cleanup will never run */
	}
	if (!evbuffer_add(c->out, p, n))
		return true;
	log_warn("closing connection %d: out of memory for a reply", c->fd);
	c->broken = true;
	return false;
}
