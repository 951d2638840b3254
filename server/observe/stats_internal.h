/*
 * Shared inside the statistics module: the entry writers and the argument
 * parse every group uses (stats_entry.c), and the groups stats_emit()
 * (stats.c) dispatches to in other files (stats_dump.c, stats_hotkeys.c).
 * The groups call nothing of stats.c or of each other.
 */
#ifndef RHKV_SERVER_STATS_INTERNAL_H
#define RHKV_SERVER_STATS_INTERNAL_H

#include "stats.h"

struct observe;

/* The one item class rhkvd shows (`stats items`, `slabs`, `cachedump`):
 * every item is in it (docs/stats.md says why). */
#define STATS_ITEM_CLASS 1

/* Emits one entry of a number (kind COUNTER or GAUGE) or a string. */
void stats__put_u(const struct stats_sink *k, enum stats_kind kind,
		  const char *name, const char *help, uint64_t v);
void stats__put_text(const struct stats_sink *k, const char *name,
		     const char *help, const char *v);
void stats__put_real(const struct stats_sink *k, const char *name,
		     const char *help, double v);

/* Parses a whole decimal token of p[0..n) at *pos (spaces before it
 * skipped) into *v and moves *pos past it; false if none or bad. */
bool stats__arg_u64(const char *p, size_t n, size_t *pos, uint64_t *v);

/* `stats conns` and `stats cachedump <class> <limit>` (stats_dump.c). */
void stats__conns(struct observe *obs, const struct stats_query *q,
		  const struct stats_sink *k);
void stats__cachedump(struct observe *obs, const struct stats_query *q,
		      const struct stats_sink *k);

/* `stats hotkeys [n]` (stats_hotkeys.c), and why its n is wrong or NULL. */
void stats__hotkeys(struct observe *obs, const struct stats_query *q,
		    const struct stats_sink *k);
const char *stats__hotkeys_args_error(const struct stats_query *q);

#endif
