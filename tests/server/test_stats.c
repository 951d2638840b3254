/*
 * stats_emit (server/observe/stats.h) on a server with no socket: unknown groups
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

static bool emit_args(const char *group, const char *args, struct seen *s)
{
	const struct stats_sink sink = { record, s };
	const struct stats_query q = { group, strlen(group), args, strlen(args),
				       NULL };

	s->n = 0;
	return stats_emit(&srv.obs, &q, &sink);
}

static bool emit(const char *group, struct seen *s)
{
	return emit_args(group, "", s);
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
	static const char *const groups[] = { "",	"settings", "table",
					      "memory", "latency",  "items",
					      "slabs",	"sizes" };
	struct cache_key k = { "k", 1 };
	struct seen s;

	/* An item, so that `stats items` has some. */
	cr_assert_eq(
		cache_store(srv.cache, 0, CACHE_SET, k, 0, 0, "v", 1, 0, NULL),
		CACHE_STORED);
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

/* The lines of a group that has them (cachedump, detail dump). */
struct lines {
	int n;
	char line[8][128];
	char name[8][64];
};

static void record_line(void *arg, const struct stats_entry *e)
{
	struct lines *l = arg;

	cr_assert_lt(l->n, 8);
	cr_assert_not_null(e->line, "%s has no line", e->name);
	snprintf(l->line[l->n], sizeof(l->line[0]), "%s", e->line);
	snprintf(l->name[l->n], sizeof(l->name[0]), "%s", e->name);
	l->n++;
}

static int dump(const char *group, const char *args, struct lines *l)
{
	const struct stats_sink sink = { record_line, l };
	const struct stats_query q = { group, strlen(group), args, strlen(args),
				       NULL };

	l->n = 0;
	cr_assert_null(stats_args_error(&q), "%s %s", group, args);
	cr_assert(stats_emit(&srv.obs, &q, &sink));
	return l->n;
}

Test(stats, args_are_checked_as_memcached_does)
{
	static const struct {
		const char *group, *args, *error;
	} cases[] = {
		{ "detail", "", "usage: stats detail on|off|dump" },
		{ "detail", "x", "usage: stats detail on|off|dump" },
		{ "detail", "dump", NULL },
		{ "cachedump", "", "bad command line" },
		{ "cachedump", "1", "bad command line" },
		{ "cachedump", "1 x", "bad command line" },
		{ "cachedump", "-1 0", "bad command line" },
		{ "cachedump", "1 0", NULL },
		{ "cachedump", "7 10", NULL },
		{ "items", "whatever", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct stats_query q = { cases[i].group,
					       strlen(cases[i].group),
					       cases[i].args,
					       strlen(cases[i].args), NULL };
		const char *e = stats_args_error(&q);

		if (cases[i].error)
			cr_expect_str_eq(e ? e : "(none)", cases[i].error,
					 "%s %s", cases[i].group,
					 cases[i].args);
		else
			cr_expect_null(e, "%s %s: %s", cases[i].group,
				       cases[i].args, e);
	}
}

static void store(const char *k, const char *v, int64_t exptime)
{
	struct cache_key key = { k, strlen(k) };

	cr_assert_eq(cache_store(srv.cache, 0, CACHE_SET, key, 0, exptime, v,
				 (uint32_t)strlen(v), 0, NULL),
		     CACHE_STORED);
}

Test(stats, cachedump_lists_live_items_up_to_the_limit)
{
	struct lines l;

	cr_assert_eq(dump("cachedump", "1 0", &l), 0);
	store("a", "xyz", 0);
	store("b", "", 2000000000);
	cr_assert_eq(dump("cachedump", "1 0", &l), 2);
	for (int i = 0; i < 2; i++)
		cr_assert(!strcmp(l.line[i], "ITEM a [3 b; 0 s]") ||
				  !strcmp(l.line[i],
					  "ITEM b [0 b; 2000000000 s]"),
			  "%s", l.line[i]);
	cr_assert_eq(dump("cachedump", "1 1", &l), 1);
	cr_assert_eq(dump("cachedump", "2 0", &l), 0);
}

Test(stats, detail_counts_per_prefix_only_while_on)
{
	struct lines l;

	cr_assert_eq(dump("detail", "dump", &l), 0);
	stats_detail_record(&srv.obs, "a:1", 3, DETAIL_GET, true);
	cr_assert_eq(dump("detail", "dump", &l), 0, "off: not counted");
	stats_detail_enable(&srv.obs, true);
	stats_detail_record(&srv.obs, "a:1", 3, DETAIL_GET, true);
	stats_detail_record(&srv.obs, "a:2", 3, DETAIL_GET, false);
	stats_detail_record(&srv.obs, "a:", 2, DETAIL_SET, false);
	stats_detail_record(&srv.obs, "b::c", 4, DETAIL_DEL, false);
	stats_detail_record(&srv.obs, "nodelim", 7, DETAIL_SET, false);
	stats_detail_record(&srv.obs, ":x", 2, DETAIL_SET, false);
	cr_assert_eq(dump("detail", "dump", &l), 3);
	cr_assert_str_eq(l.line[0], "PREFIX a get 2 hit 1 set 1 del 0");
	cr_assert_str_eq(l.name[0], "a");
	cr_assert_str_eq(l.line[1], "PREFIX b get 0 hit 0 set 0 del 1");
	cr_assert_str_eq(l.line[2], "PREFIX  get 0 hit 0 set 1 del 0");
	stats_detail_enable(&srv.obs, false);
	stats_detail_record(&srv.obs, "a:1", 3, DETAIL_GET, true);
	cr_assert_eq(dump("detail", "dump", &l), 3);
	cr_assert_str_eq(l.line[0], "PREFIX a get 2 hit 1 set 1 del 0");
}

static void count_entry(void *arg, const struct stats_entry *e)
{
	(void)e;
	(*(int *)arg)++;
}

Test(stats, detail_is_bounded)
{
	int n = 0;
	const struct stats_query q = { "detail", 6, "dump", 4, NULL };
	const struct stats_sink sink = { count_entry, &n };
	char key[32];

	stats_detail_enable(&srv.obs, true);
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "p%d:k", i);

		stats_detail_record(&srv.obs, key, (size_t)n, DETAIL_SET,
				    false);
	}
	cr_assert(stats_emit(&srv.obs, &q, &sink));
	cr_assert_eq(n, 1024, "%d prefixes kept", n);
}
