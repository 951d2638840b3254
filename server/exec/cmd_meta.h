/*
 * The executor's meta commands (cmd_meta.c), for cmd.c's command table:
 * memcached's mg, ms, md, ma, me and mn, from whichever protocol; and what
 * cmd.c shares with them.
 */
#ifndef RHKV_SERVER_CMD_META_H
#define RHKV_SERVER_CMD_META_H

#include "request.h"

struct session;

void cmd_mget(struct session *c, const struct request *r);
void cmd_mset(struct session *c, const struct request *r);
void cmd_mdelete(struct session *c, const struct request *r);
void cmd_marith(struct session *c, const struct request *r);
void cmd_mdebug(struct session *c, const struct request *r);
void cmd_mnoop(struct session *c, const struct request *r);

/* `watch mutations` for a store of either kind (cmd.c): mode, the status
 * word (cmd_store_word of its result, or "too_large"), the absolute
 * exptime and the value's length. */
const char *cmd_store_word(enum cache_result res);
void cmd_watch_store(struct session *c, struct cache_key key,
		     enum cache_store_mode mode, const char *status,
		     int64_t exptime, uint32_t nbytes);

#endif
