/*
 * rhkvd --help, generated from the option table (config.c): each option
 * with its argument, its help, its default and its environment variable,
 * then memcached's -o keys (config_memcached.c).
 */
#include "config_internal.h"

#include <string.h>

/* A number of bytes as --help writes it: with a k or m suffix if whole. */
static void format_size(char *buf, size_t len, unsigned long long v)
{
	if (v && v % (1 << 20) == 0)
		snprintf(buf, len, "%llum", v >> 20);
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%lluk", v >> 10);
	else
		snprintf(buf, len, "%llu", v);
}

/* The default --help shows, or "" when there is none to show. */
static void default_text(const struct opt *o, char *buf, size_t len)
{
	buf[0] = '\0';
	if (o->def_text) {
		snprintf(buf, len, "%s", o->def_text);
		return;
	}
	if (!o->size && o->type != OPT_LIST)
		return; /* not kept: nothing to default */
	switch (o->type) {
	case OPT_INT:
	case OPT_MIB:
		snprintf(buf, len, "%lld", o->def);
		break;
	case OPT_OCTAL:
		snprintf(buf, len, "0%llo", (unsigned long long)o->def);
		break;
	case OPT_SIZE:
		format_size(buf, len, (unsigned long long)o->def);
		break;
	case OPT_STRING:
	case OPT_LIST:
		if (o->def_str)
			snprintf(buf, len, "%s", o->def_str);
		break;
	default:
		break;
	}
}

#define HELP_COLUMN 29
#define HELP_WIDTH  76

/* Writes text from column HELP_COLUMN on, wrapped at word boundaries. */
static void print_wrapped(FILE *f, int col, const char *text)
{
	while (*text) {
		size_t word = strcspn(text, " ");

		if (col > HELP_COLUMN && col + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COLUMN, "");
			col = HELP_COLUMN;
		} else if (col > HELP_COLUMN) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)word, text);
		col += (int)word;
		text += word;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

void config__help_line(FILE *f, const char *left, const char *text)
{
	int col = fprintf(f, "  %s", left);

	if (col > HELP_COLUMN - 2) {
		fputc('\n', f);
		col = 0;
	}
	fprintf(f, "%*s", HELP_COLUMN - col, "");
	print_wrapped(f, HELP_COLUMN, text);
}

void config__print_help(FILE *f, const struct opt *opts, size_t n)
{
	fputs("usage: rhkvd [options]\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct opt *o = &opts[i];
		char def[64], text[512];
		int col, n;

		if (o->flag)
			col = fprintf(f, "  -%c, --%s", o->flag, o->name);
		else
			col = fprintf(f, "      --%s", o->name);
		if (o->arg)
			col += fprintf(f, "=%s", o->arg);
		if (col > HELP_COLUMN - 2) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%*s", HELP_COLUMN - col, "");
		default_text(o, def, sizeof(def));
		n = snprintf(text, sizeof(text), "%s", o->help);
		if (*def && n >= 0 && (size_t)n < sizeof(text))
			n += snprintf(text + n, sizeof(text) - (size_t)n,
				      " (default %s)", def);
		if (o->env && n >= 0 && (size_t)n < sizeof(text))
			snprintf(text + n, sizeof(text) - (size_t)n,
				 " (also %s)", o->env);
		print_wrapped(f, HELP_COLUMN, text);
	}
	config__print_extended(f);
}
