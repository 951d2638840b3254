/*
 * The executor's meta commands (cmd_meta.c), for cmd.c's command table:
 * memcached's mg, ms, md, ma, me and mn, from whichever protocol.
 */
#ifndef RHKV_SERVER_CMD_META_H
#define RHKV_SERVER_CMD_META_H

#include "request.h"

struct conn;

void cmd_mget(struct conn *c, const struct request *r);
void cmd_mset(struct conn *c, const struct request *r);
void cmd_mdelete(struct conn *c, const struct request *r);
void cmd_marith(struct conn *c, const struct request *r);
void cmd_mdebug(struct conn *c, const struct request *r);
void cmd_mnoop(struct conn *c, const struct request *r);

#endif
