/*
 * stats_emit (server/stats.h) on a server with no socket: unknown groups
 * emit nothing; the general group emits every THREAD_STATS counter once,
 * with its kind and help text; every entry of every group has a name seen
 * once and, but for `stats settings`, a one-line help. (That the binary
 * protocol's STATS map holds the text lines is checked over the wire, in
 * test_binary_protocol.c.)
 */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <string.h>

#include "socketless.h"

static struct server srv;
static struct worker w;

static void setup(void)
{
	socketless_start(&srv, &w);
}

static void teardown(void)
{
	socketless_stop(&srv, &w);
}

TestSuite(stats, .init = setup, .fini = teardown, .timeout = 30);

/* What a sink was given: names, kinds and help texts, copied. */
#define MAX_ENTRIES 200
struct seen {
	int n;
	char name[MAX_ENTRIES][48];
	enum stats_kind kind[MAX_ENTRIES];
	const char *help[MAX_ENTRIES];
};

static void record(void *arg, const struct stats_entry *e)
{
	struct seen *s = arg;

	cr_assert_lt(s->n, MAX_ENTRIES);
	cr_assert_lt(strlen(e->name), sizeof(s->name[0]), "%s", e->name);
	strcpy(s->name[s->n], e->name);
	s->kind[s->n] = e->kind;
	s->help[s->n] = e->help;
	s->n++;
}

static bool emit(const char *group, struct seen *s)
{
	const struct stats_sink sink = { record, s };

	s->n = 0;
	return stats_emit(&srv, group, strlen(group), &sink);
}

static int times_seen(const struct seen *s, const char *name)
{
	int k = 0;

	for (int i = 0; i < s->n; i++)
		k += !strcmp(s->name[i], name);
	return k;
}

Test(stats, unknown_groups_emit_nothing)
{
	static const char *const bad[] = { "reset",	"bogus", "setting",
					   "settingsx", "Table", " " };
	struct seen s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert(!emit(bad[i], &s), "group \"%s\"", bad[i]);
		cr_assert_eq(s.n, 0, "group \"%s\": %d entries", bad[i], s.n);
	}
}

static void check_once(const struct seen *s, const char *name,
		       enum stats_kind kind, const char *help)
{
	int i = 0;

	cr_assert_eq(times_seen(s, name), 1, "%s", name);
	while (strcmp(s->name[i], name))
		i++;
	cr_assert_eq(s->kind[i], kind, "%s: kind %d", name, s->kind[i]);
	cr_assert_str_eq(s->help[i], help);
}

Test(stats, general_group_emits_every_thread_counter_once)
{
	struct seen s;

	cr_assert(emit("", &s));
#define CHECK_ONCE(n, type, h) check_once(&s, #n, STATS_##type, h);
	THREAD_STATS(CHECK_ONCE)
#undef CHECK_ONCE
}

Test(stats, every_entry_has_one_name_and_a_help_line)
{
	static const char *const groups[] = { "", "settings", "table", "memory",
					      "latency" };
	struct seen s;

	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		cr_assert(emit(groups[g], &s), "group \"%s\"", groups[g]);
		cr_assert_gt(s.n, 0, "group \"%s\"", groups[g]);
		for (int i = 0; i < s.n; i++) {
			const char *help = s.help[i];

			cr_assert_eq(times_seen(&s, s.name[i]), 1, "%s: %s",
				     groups[g], s.name[i]);
			cr_assert(s.kind[i] <= STATS_REAL, "%s", s.name[i]);
			cr_assert_eq(strcspn(s.name[i], " \r\n"),
				     strlen(s.name[i]), "%s", s.name[i]);
			if (g == 1) {
				cr_assert_eq(s.kind[i], STATS_TEXT);
				continue;
			}
			cr_assert(help && *help, "%s: %s has no help",
				  groups[g], s.name[i]);
			cr_assert_eq(strcspn(help, "\\\n"), strlen(help),
				     "%s: %s", s.name[i], help);
		}
	}
}

Test(stats, values_as_the_text_protocol_shows_them)
{
	char buf[STATS_VALUE_MAX];
	struct stats_entry e = { .name = "x", .kind = STATS_COUNTER };

	e.u = UINT64_MAX;
	cr_assert_str_eq(stats_entry_value(&e, buf), "18446744073709551615");
	e.kind = STATS_SECONDS;
	e.sec = 3;
	e.usec = 5;
	cr_assert_str_eq(stats_entry_value(&e, buf), "3.000005");
	e.kind = STATS_REAL;
	e.r = 2.0 / 3;
	cr_assert_str_eq(stats_entry_value(&e, buf), "0.667");
	e.r = -1.7976931348623157e308; /* the longest */
	cr_assert_eq(strlen(stats_entry_value(&e, buf)), 314);
	e.kind = STATS_TEXT;
	e.s = "some words";
	cr_assert_eq(stats_entry_value(&e, buf), e.s);
}
