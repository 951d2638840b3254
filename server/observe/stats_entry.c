/*
 * What every stats group writes with (stats_internal.h): one entry into a
 * sink, and the parse of a group's numeric arguments.
 */
#include <stdint.h>

#include "stats_internal.h"

void stats__put_u(const struct stats_sink *k, enum stats_kind kind,
		  const char *name, const char *help, uint64_t v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = kind, .u = v
	};

	k->emit(k->arg, &e);
}

void stats__put_text(const struct stats_sink *k, const char *name,
		     const char *help, const char *v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = STATS_TEXT, .s = v
	};

	k->emit(k->arg, &e);
}

void stats__put_real(const struct stats_sink *k, const char *name,
		     const char *help, double v)
{
	const struct stats_entry e = {
		.name = name, .help = help, .kind = STATS_REAL, .r = v
	};

	k->emit(k->arg, &e);
}

bool stats__arg_u64(const char *p, size_t n, size_t *pos, uint64_t *v)
{
	size_t i = *pos, start;

	while (i < n && p[i] == ' ')
		i++;
	start = i;
	*v = 0;
	while (i < n && p[i] >= '0' && p[i] <= '9') {
		if (*v > (UINT64_MAX - 9) / 10)
			return false;
		*v = *v * 10 + (uint64_t)(p[i++] - '0');
	}
	if (i == start || (i < n && p[i] != ' '))
		return false;
	*pos = i;
	return true;
}
