/*
 * Shared by config.c (the option table and its parsing), config_help.c
 * (--help, from the table) and config_memcached.c (memcached's -l syntax,
 * its -o list, its options that need more than a field and its rules
 * between options): nothing outside these files includes it.
 */
#ifndef RHKV_SERVER_CONFIG_INTERNAL_H
#define RHKV_SERVER_CONFIG_INTERNAL_H

#include <stdio.h>

#include "config.h"

/* What an option's argument is, and how it is stored. */
enum opt_type {
	OPT_INT,     /* decimal in [min, max], into an int */
	OPT_OCTAL,   /* octal in [min, max], into an unsigned int */
	OPT_MIB,     /* decimal MiB in [min, max], stored in bytes */
	OPT_SIZE,    /* bytes with a k or m suffix, in [min, max] */
	OPT_STRING,  /* a const char *, kept as argv has it */
	OPT_LIST,    /* repeatable string: cfg->listen[] and cfg->nlisten */
	OPT_FLAG,    /* no argument: sets a bool */
	OPT_COUNT,   /* no argument, repeatable (-vv): counts into an int */
	OPT_HELP,    /* prints --help and stops */
	OPT_VERSION, /* prints the version and stops */
	OPT_CUSTOM,  /* .apply parses it (config_memcached.c) */
	OPT_IGNORED, /* memcached's, for what rhkvd lacks: noted (help says
		      * why); not noted when the argument is .def_str */
	OPT_REFUSED, /* memcached's, refused: the help says why */
};

struct opt {
	const char *name; /* long name */
	char flag;	  /* short letter; 0: long only */
	enum opt_type type;
	const char *arg;      /* its argument in --help; NULL: takes none */
	long long min, max;   /* range, in the argument's unit */
	long long def;	      /* default of a number, in the argument's unit */
	const char *def_str;  /* default of a string or list; NULL: none */
	const char *def_text; /* --help's default when computed (see late) */
	const char *env;      /* environment variable read when not given */
	const char *help;
	const char *what, *why; /* "invalid WHAT 'ARG': WHY" */
	const char *stat;	/* its name in `stats settings`; NULL: none */
	/* Where it lands in struct config; size 0: not kept. */
	size_t off, size;
	/* Special cases, where a type does not say it all: */
	void (*late)(struct config *cfg); /* computes a default after parsing */
	const char *(*show)(const struct config *cfg);	   /* its stats value */
	int (*apply)(struct config *cfg, const char *arg); /* OPT_CUSTOM */
};

/* --help: the table's options, then memcached's -o keys. */
void config__print_help(FILE *f, const struct opt *opts, size_t n);

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

/* memcached's options for what rhkvd lacks (a note) and those it refuses
 * (a usage error). */
int config__ignore_or_refuse(struct config *cfg, const struct opt *o,
			     const char *arg);

/* memcached's rules between options, after parsing: tcp_given, whether -p
 * or -l was on the command line; protocol_given, -B. */
int config__memcached_rules(struct config *cfg, bool tcp_given,
			    bool protocol_given);

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
