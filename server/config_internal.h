/*
 * Shared by config.c (the option table, parsing, --help) and
 * config_memcached.c (memcached's -l syntax, its -o list and its other
 * options that need more than a field): nothing outside these two files
 * includes it.
 */
#ifndef RHKV_SERVER_CONFIG_INTERNAL_H
#define RHKV_SERVER_CONFIG_INTERNAL_H

#include <stdio.h>

#include "config.h"

/* Parses value for rhkvd's option --name, as if given on the command
 * line: 0, or CONFIG_EXIT_USAGE after printing why. */
int config__set(struct config *cfg, const char *name, const char *value);

/* Prints "rhkvd: MESSAGE" and the hint to --help; CONFIG_EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) int config__usage(const char *fmt, ...);

/* Records a line for main.c to log at start (an option accepted and
 * ignored); the same text twice is kept once. */
__attribute__((format(printf, 2, 3))) void config__note(struct config *cfg,
							const char *fmt, ...);

/* --help's layout: left in the option column, text wrapped beside it. */
void config__help_line(FILE *f, const char *left, const char *text);

/* The option hooks of config_memcached.c (struct opt's .apply): 0, 1 to
 * stop successfully (after printing), or CONFIG_EXIT_USAGE. */
int config__listen(struct config *cfg, const char *arg);
int config__extended(struct config *cfg, const char *arg);
int config__protocol(struct config *cfg, const char *arg);
int config__delimiter(struct config *cfg, const char *arg);
int config__license(struct config *cfg, const char *arg);

/* `stats settings`'s spelling of -B. */
const char *config__protocol_name(const struct config *cfg);

/* The entries of -l as `stats settings` shows them ("inter"). */
void config__listen_text(const struct config *cfg, char *buf, size_t len);

/* --help's list of -o keys. */
void config__print_extended(FILE *f);

#endif
