/*
 * rhkv-cli: the command-line client of rhkvd, on librhkv's public API.
 *
 *   rhkv-cli [-h host] [-p port] [--timeout ms] [--raw] [--pattern GLOB]
 *            [--tls [--cacert FILE] [--cert FILE --key FILE]
 *             [--servername NAME] [--insecure]] [command args...]
 *   rhkv-cli [options] --stat [--interval S] [--count N] [HOST:PORT...]
 *
 * With a command: runs it once and exits 0, or 1 after an error (on
 * stderr), or 64 for a usage error. Without one: an interactive prompt
 * (libedit line editing, history in ~/.rhkv_history) when stdin is a
 * terminal, else one command per line from stdin without a prompt (exit 1
 * if any of them failed). Human output is redis-cli's style ("value",
 * (nil), (integer) 5, (error) CODE: message); --raw prints values as their
 * bytes, misses as empty lines and numbers bare. --stat watches one server
 * (or each one named) with a line a second (cli_stat.h).
 */
#include "rhkv.h"
#include "cli_code.h"
#include "cli_stat.h"
#include "cli_tok.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef RHKV_CLI_LIBEDIT
#include <editline/readline.h>
#endif

#define EX_OK_	  0
#define EX_FAIL	  1
#define EX_USAGE_ 64 /* sysexits.h's EX_USAGE */

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 11311
#define HISTORY_FILE ".rhkv_history"
#define HISTORY_MAX  1000
#define SCAN_COUNT   100

struct cli {
	rhkv *c;
	const char *host;
	int port;
	struct rhkv_options o;
	int raw;
	const char *pattern; /* --pattern: scan's default glob */
	int quit;	     /* quit/exit seen */
};

struct cmd {
	const char *name;
	int min, max; /* argument counts; max -1: any */
	const char *args;
	const char *help;
	int (*fn)(struct cli *cl, const struct cmd *d, int argc,
		  struct cli_word *argv);
};

static int do_help(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv);
static const struct cmd *find_cmd(const char *name);

/* ---- output ---- */

/* Prints "(error) CODE: message" on stderr; returns EX_FAIL. */
static int fail(struct cli *cl, int err)
{
	const char *msg = cl->c ? rhkv_errstr(cl->c) : "";

	/* The handle's words, unless they only repeat the code's name. */
	if (!msg || !*msg || !strcasecmp(msg, cli_code_name(err)))
		msg = rhkv_strerror(err);
	fflush(stdout);
	fprintf(stderr, "(error) %s: %s\n", cli_code_name(err), msg);
	return EX_FAIL;
}

/* A usage error of a command: "(error) usage: ..." on stderr. */
static int usage_err(const struct cmd *d, const char *why)
{
	fflush(stdout);
	if (why)
		fprintf(stderr, "(error) %s\n", why);
	fprintf(stderr, "(error) usage: %s%s%s\n", d->name, *d->args ? " " : "",
		d->args);
	return EX_USAGE_;
}

/* A value: "bytes" escaped, or the raw bytes, then a newline. */
static void put_value(struct cli *cl, const void *p, size_t len)
{
	if (cl->raw)
		fwrite(p, 1, len, stdout);
	else
		cli_quote(stdout, p, len);
	putchar('\n');
}

static void put_nil(struct cli *cl)
{
	puts(cl->raw ? "" : "(nil)");
}

static void put_cas(struct cli *cl, const char *what, uint64_t cas)
{
	if (cl->raw)
		printf("%" PRIu64 "\n", cas);
	else
		printf("%s cas %" PRIu64 "\n", what, cas);
}

static void put_ok(void)
{
	puts("OK");
}

/* ---- arguments ---- */

static int parse_u64(const struct cli_word *w, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (w->len == 0 || w->len != strlen(w->p) || w->p[0] == '-' ||
	    w->p[0] == '+' || w->p[0] == ' ')
		return -1;
	errno = 0;
	v = strtoull(w->p, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_i64(const struct cli_word *w, int64_t *out)
{
	char *end;
	long long v;

	if (w->len == 0 || w->len != strlen(w->p) || w->p[0] == ' ' ||
	    w->p[0] == '+')
		return -1;
	errno = 0;
	v = strtoll(w->p, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* ---- connection ---- */

static void print_target(FILE *f, const struct cli *cl)
{
	if (cl->host[0] == '/')
		fprintf(f, "%s", cl->host);
	else
		fprintf(f, "%s:%d", cl->host, cl->port);
}

/* Connects when there is no handle yet. 0, or EX_FAIL after a message. */
static int ensure_conn(struct cli *cl)
{
	int err;

	if (cl->c)
		return 0;
	err = rhkv_connect(&cl->c, cl->host, cl->port, &cl->o);
	if (err == 0)
		return 0;
	fflush(stdout);
	fprintf(stderr, "(error) %s: cannot connect to ", cli_code_name(err));
	print_target(stderr, cl);
	fprintf(stderr, ": %s\n",
		cl->c && *rhkv_errstr(cl->c) ? rhkv_errstr(cl->c)
					     : rhkv_strerror(err));
	rhkv_close(cl->c);
	cl->c = NULL;
	return EX_FAIL;
}

/* ---- commands ---- */

static int do_get(struct cli *cl, const struct cmd *d, int argc,
		  struct cli_word *argv)
{
	struct rhkv_value v;
	int64_t exptime = 0;
	int gat = !strcmp(d->name, "gat"), gets = !strcmp(d->name, "gets");
	int err;

	(void)argc;
	if (gat && parse_i64(&argv[1], &exptime))
		return usage_err(d, "EXPTIME must be an integer");
	if (ensure_conn(cl))
		return EX_FAIL;
	if (gat)
		err = rhkv_gat(cl->c, argv[0].p, argv[0].len, exptime, &v);
	else
		err = rhkv_get(cl->c, argv[0].p, argv[0].len, &v);
	if (err == RHKV_ENOTFOUND) {
		put_nil(cl);
		return 0;
	}
	if (err)
		return fail(cl, err);
	if (gets && cl->raw) {
		put_value(cl, v.data, v.len);
		printf("%" PRIu32 "\n%" PRIu64 "\n", v.flags, v.cas);
	} else if (gets) {
		cli_quote(stdout, v.data, v.len);
		printf(" (flags %" PRIu32 ", cas %" PRIu64 ")\n", v.flags,
		       v.cas);
	} else {
		put_value(cl, v.data, v.len);
	}
	rhkv_value_free(&v);
	return 0;
}

typedef int (*store_fn)(rhkv *, const void *, size_t, const void *, size_t,
			uint32_t, int64_t, uint64_t *);

static int do_store(struct cli *cl, const struct cmd *d, int argc,
		    struct cli_word *argv)
{
	const char *n = d->name;
	int is_cas = !strcmp(n, "cas");
	int first_opt = is_cas ? 3 : 2; /* index of FLAGS */
	uint64_t cas = 0, cas_out = 0, flags = 0;
	int64_t exptime = 0;
	int err;

	if (is_cas && parse_u64(&argv[2], UINT64_MAX, &cas))
		return usage_err(d, "CAS must be an unsigned integer");
	if (argc > first_opt && parse_u64(&argv[first_opt], UINT32_MAX, &flags))
		return usage_err(d, "FLAGS must be a 32-bit unsigned integer");
	if (argc > first_opt + 1 && parse_i64(&argv[first_opt + 1], &exptime))
		return usage_err(d, "EXPTIME must be an integer");
	if (ensure_conn(cl))
		return EX_FAIL;
	if (is_cas) {
		err = rhkv_cas(cl->c, argv[0].p, argv[0].len, argv[1].p,
			       argv[1].len, (uint32_t)flags, exptime, cas,
			       &cas_out);
	} else if (!strcmp(n, "append")) {
		err = rhkv_append(cl->c, argv[0].p, argv[0].len, argv[1].p,
				  argv[1].len, &cas_out);
	} else if (!strcmp(n, "prepend")) {
		err = rhkv_prepend(cl->c, argv[0].p, argv[0].len, argv[1].p,
				   argv[1].len, &cas_out);
	} else {
		store_fn fn = !strcmp(n, "set")	  ? rhkv_set
			      : !strcmp(n, "add") ? rhkv_add
						  : rhkv_replace;

		err = fn(cl->c, argv[0].p, argv[0].len, argv[1].p, argv[1].len,
			 (uint32_t)flags, exptime, &cas_out);
	}
	if (err)
		return fail(cl, err);
	put_cas(cl, "STORED", cas_out);
	return 0;
}

static int do_delete(struct cli *cl, const struct cmd *d, int argc,
		     struct cli_word *argv)
{
	int err;

	(void)d;
	(void)argc;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_delete(cl->c, argv[0].p, argv[0].len);
	if (err)
		return fail(cl, err);
	put_ok();
	return 0;
}

static int do_incr(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	uint64_t delta, val = 0;
	int err;

	(void)argc;
	if (parse_u64(&argv[1], UINT64_MAX, &delta))
		return usage_err(d, "DELTA must be an unsigned integer");
	if (ensure_conn(cl))
		return EX_FAIL;
	if (!strcmp(d->name, "incr"))
		err = rhkv_incr(cl->c, argv[0].p, argv[0].len, delta, &val);
	else
		err = rhkv_decr(cl->c, argv[0].p, argv[0].len, delta, &val);
	if (err)
		return fail(cl, err);
	printf(cl->raw ? "%" PRIu64 "\n" : "(integer) %" PRIu64 "\n", val);
	return 0;
}

static int do_touch(struct cli *cl, const struct cmd *d, int argc,
		    struct cli_word *argv)
{
	int64_t exptime;
	int err;

	(void)argc;
	if (parse_i64(&argv[1], &exptime))
		return usage_err(d, "EXPTIME must be an integer");
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_touch(cl->c, argv[0].p, argv[0].len, exptime);
	if (err)
		return fail(cl, err);
	put_ok();
	return 0;
}

static int do_mget(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	const char **keys;
	size_t *klens;
	struct rhkv_value *vals;
	int *status;
	int err, rc = 0;

	(void)d;
	if (ensure_conn(cl))
		return EX_FAIL;
	keys = calloc((size_t)argc, sizeof(*keys));
	klens = calloc((size_t)argc, sizeof(*klens));
	vals = calloc((size_t)argc, sizeof(*vals));
	status = calloc((size_t)argc, sizeof(*status));
	if (!keys || !klens || !vals || !status) {
		rc = fail(cl, RHKV_ENOMEM);
		goto out;
	}
	for (int i = 0; i < argc; i++) {
		keys[i] = argv[i].p;
		klens[i] = argv[i].len;
	}
	err = rhkv_mget(cl->c, (size_t)argc, keys, klens, vals, status);
	if (err) {
		rc = fail(cl, err);
		goto out;
	}
	for (int i = 0; i < argc; i++) {
		if (!cl->raw)
			printf("%d) ", i + 1);
		if (vals[i].data)
			put_value(cl, vals[i].data, vals[i].len);
		else
			put_nil(cl);
		rhkv_value_free(&vals[i]);
	}
out:
	free(keys);
	free(klens);
	free(vals);
	free(status);
	return rc;
}

/* ---- meta commands: options as NAME=VALUE words, or bare NAME ---- */

/* One option of a meta command, and where its value goes. */
struct mopt {
	const char *name;
	int *set;    /* set to 1 when given (alone: a bare word) */
	uint64_t *u; /* NAME=unsigned, up to max */
	uint64_t max;
	int64_t *i; /* NAME=integer */
	char *ch;   /* NAME=one of letters */
	const char *letters;
};

/* An option word the command does not take, or a bad value. */
static int bad_opt(const struct cmd *d, const struct cli_word *w)
{
	char why[128];

	snprintf(why, sizeof(why), "bad option '%.80s'", w->p);
	return usage_err(d, why);
}

/* One word against the option o: 1 (taken), 0 (not o), -1 (o's value is
 * bad). */
static int take_opt(const struct mopt *o, const struct cli_word *w)
{
	size_t n = strlen(o->name);
	int takes_value = o->u || o->i || o->ch;
	struct cli_word v;

	if (w->len < n || memcmp(w->p, o->name, n) != 0)
		return 0;
	if (w->len > n && w->p[n] != '=')
		return 0; /* another option that starts alike */
	if ((w->len == n) == takes_value)
		return -1; /* a value missing, or one too many */
	if (takes_value) {
		v.p = w->p + n + 1;
		v.len = w->len - n - 1;
		if ((o->u && parse_u64(&v, o->max, o->u)) ||
		    (o->i && parse_i64(&v, o->i)) ||
		    (o->ch &&
		     (v.len != 1 || !v.p[0] || !strchr(o->letters, v.p[0]))))
			return -1;
		if (o->ch)
			*o->ch = v.p[0];
	}
	if (o->set)
		*o->set = 1;
	return 1;
}

/* Every word of argv[0..argc) through the options (ending with a NULL
 * name): 0, or EX_USAGE_ after saying which word is bad. */
static int parse_opts(const struct cmd *d, int argc, struct cli_word *argv,
		      const struct mopt *opts)
{
	for (int i = 0; i < argc; i++) {
		int r = 0;

		for (const struct mopt *o = opts; o->name && !r; o++)
			r = take_opt(o, &argv[i]);
		if (r != 1)
			return bad_opt(d, &argv[i]);
	}
	return 0;
}

/* The line after a meta get's value: what the server knows. */
static void put_meta(struct cli *cl, const struct rhkv_meta *m, int hit)
{
	const char *sep = cl->raw ? " " : ", ";

	if (hit) {
		printf(cl->raw ? "flags=%" PRIu32 " cas=%" PRIu64
				 " ttl=%" PRId64 " size=%" PRIu32 " la=%" PRIu32
				 " hit=%d"
			       : "(flags %" PRIu32 ", cas %" PRIu64
				 ", ttl %" PRId64 ", size %" PRIu32
				 ", la %" PRIu32 ", hit %d",
		       m->value.flags, m->value.cas, m->ttl, m->size,
		       m->last_access, m->hit_before);
	} else {
		printf(cl->raw ? "miss" : "(miss");
	}
	if (m->won)
		printf("%swon", sep);
	if (m->stale)
		printf("%sstale", sep);
	if (m->won_by_other)
		printf("%swonby", sep);
	puts(cl->raw ? "" : ")");
}

static int do_mg(struct cli *cl, const struct cmd *d, int argc,
		 struct cli_word *argv)
{
	struct rhkv_mget_opts o = { 0 };
	const struct mopt opts[] = {
		{ .name = "v", .set = &o.want_value },
		{ .name = "nobump", .set = &o.no_bump },
		{ .name = "ttl", .set = &o.touch, .i = &o.touch_ttl },
		{ .name = "vivify", .i = &o.vivify_ttl },
		{ .name = "recache", .i = &o.recache_ttl },
		{ 0 },
	};
	struct rhkv_meta m;
	int err;

	if (parse_opts(d, argc - 1, argv + 1, opts))
		return EX_USAGE_;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_meta_get(cl->c, argv[0].p, argv[0].len, &o, &m);
	if (err && err != RHKV_ENOTFOUND)
		return fail(cl, err);
	if (m.value.data) {
		if (cl->raw) {
			put_value(cl, m.value.data, m.value.len);
		} else {
			cli_quote(stdout, m.value.data, m.value.len);
			putchar(' ');
		}
	} else if (err) {
		put_nil(cl);
	}
	if (!err || m.won || m.stale || m.won_by_other)
		put_meta(cl, &m, !err);
	rhkv_value_free(&m.value);
	return 0;
}

static int do_ms(struct cli *cl, const struct cmd *d, int argc,
		 struct cli_word *argv)
{
	struct rhkv_mset_opts o = { 0 };
	uint64_t flags = 0, cas_out = 0;
	const struct mopt opts[] = {
		{ .name = "mode", .ch = &o.mode, .letters = "SEAPR" },
		{ .name = "flags", .u = &flags, .max = UINT32_MAX },
		{ .name = "ttl", .i = &o.ttl },
		{ .name = "vivify", .i = &o.vivify_ttl },
		{ .name = "cas", .u = &o.cas, .max = UINT64_MAX },
		{ .name = "newcas", .u = &o.new_cas, .max = UINT64_MAX },
		{ .name = "invalidate", .set = &o.invalidate },
		{ 0 },
	};
	int err;

	if (parse_opts(d, argc - 2, argv + 2, opts))
		return EX_USAGE_;
	o.flags = (uint32_t)flags;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_meta_set(cl->c, argv[0].p, argv[0].len, argv[1].p,
			    argv[1].len, &o, &cas_out);
	if (err)
		return fail(cl, err);
	put_cas(cl, "STORED", cas_out);
	return 0;
}

static int do_md(struct cli *cl, const struct cmd *d, int argc,
		 struct cli_word *argv)
{
	struct rhkv_mdelete_opts o = { 0 };
	const struct mopt opts[] = {
		{ .name = "invalidate", .set = &o.invalidate },
		{ .name = "cas", .u = &o.cas, .max = UINT64_MAX },
		{ .name = "ttl", .i = &o.ttl },
		{ .name = "newcas", .u = &o.new_cas, .max = UINT64_MAX },
		{ 0 },
	};
	int err;

	if (parse_opts(d, argc - 1, argv + 1, opts))
		return EX_USAGE_;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_meta_delete(cl->c, argv[0].p, argv[0].len, &o);
	if (err)
		return fail(cl, err);
	put_ok();
	return 0;
}

static int do_ma(struct cli *cl, const struct cmd *d, int argc,
		 struct cli_word *argv)
{
	struct rhkv_marith_opts o = { 0 };
	uint64_t delta = 1, val = 0;
	char mode = 'I';
	const struct mopt opts[] = {
		{ .name = "mode", .ch = &mode, .letters = "ID+-" },
		{ .name = "delta", .u = &delta, .max = UINT64_MAX },
		{ .name = "initial", .u = &o.initial, .max = UINT64_MAX },
		{ .name = "vivify", .i = &o.vivify_ttl },
		{ .name = "ttl", .set = &o.touch, .i = &o.touch_ttl },
		{ .name = "cas", .u = &o.cas, .max = UINT64_MAX },
		{ .name = "newcas", .u = &o.new_cas, .max = UINT64_MAX },
		{ 0 },
	};
	int err;

	if (parse_opts(d, argc - 1, argv + 1, opts))
		return EX_USAGE_;
	o.decr = mode == 'D' || mode == '-';
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_meta_arith(cl->c, argv[0].p, argv[0].len, delta, &o, &val,
			      NULL);
	if (err)
		return fail(cl, err);
	printf(cl->raw ? "%" PRIu64 "\n" : "(integer) %" PRIu64 "\n", val);
	return 0;
}

static int do_flush(struct cli *cl, const struct cmd *d, int argc,
		    struct cli_word *argv)
{
	int64_t delay = 0;
	int err;

	if (argc > 0 && (parse_i64(&argv[0], &delay) || delay < 0))
		return usage_err(d, "DELAY must be an unsigned integer");
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_flush_all(cl->c, delay);
	if (err)
		return fail(cl, err);
	put_ok();
	return 0;
}

static int do_flush_prefix(struct cli *cl, const struct cmd *d, int argc,
			   struct cli_word *argv)
{
	int err;

	(void)d;
	(void)argc;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_flush_prefix(cl->c, argv[0].p, argv[0].len);
	if (err)
		return fail(cl, err);
	put_ok();
	return 0;
}

static int do_scan(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	const char *pattern = cl->pattern;
	rhkv_scan_iter *it;
	const char *key;
	size_t klen, n = 0;
	int err;

	if (argc == 1 || (argc == 2 && strcmp(argv[0].p, "--pattern")))
		return usage_err(d, NULL);
	if (argc == 2)
		pattern = argv[1].p;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_scan_open(cl->c, pattern, SCAN_COUNT, &it);
	if (err)
		return fail(cl, err);
	/* A key is one line whatever its bytes: quoted and escaped, or in
	 * --raw mode bare when it reads back as one word. */
	while ((err = rhkv_scan_next(it, &key, &klen)) == 1) {
		if (cl->raw)
			cli_put_key(stdout, key, klen);
		else
			cli_quote(stdout, key, klen);
		putchar('\n');
		n++;
	}
	rhkv_scan_end(it);
	if (err < 0)
		return fail(cl, err);
	if (n == 0 && !cl->raw)
		puts("(empty)");
	return 0;
}

static int do_stats(struct cli *cl, const struct cmd *d, int argc,
		    struct cli_word *argv)
{
	struct rhkv_stat *st = NULL;
	size_t n = 0;
	int err;

	(void)d;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_stats(cl->c, argc ? argv[0].p : NULL, &st, &n);
	if (err)
		return fail(cl, err);
	for (size_t i = 0; i < n; i++)
		printf(cl->raw ? "%s %s\n" : "%s: %s\n", st[i].name,
		       st[i].value);
	rhkv_stats_free(st, n);
	return 0;
}

/* hotkeys [N]: per class, "N. KEY RPS/s SHARE% COUNT (exact|±ERR)"; raw:
 * "CLASS RANK RPS SHARE COUNT ERR exact|approx KEY" (the key bare when
 * it reads back as one word, else quoted). */
static int do_hotkeys(struct cli *cl, const struct cmd *d, int argc,
		      struct cli_word *argv)
{
	static const char *const cls[2] = { "read", "write" };
	struct rhkv_hotkeys *h = NULL;
	uint64_t n = 10;
	int err;

	if (argc && (parse_u64(&argv[0], 100, &n) || n == 0))
		return usage_err(d, "N: a number from 1 to 100");
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_hotkeys(cl->c, (unsigned int)n, &h);
	if (err)
		return fail(cl, err);
	if (!h->sample && !cl->raw)
		puts("(hot-key tracking is off: --hotkeys-sample 0)");
	for (int c = 0; c < 2 && h->sample; c++) {
		if (!cl->raw)
			printf("%ss: %" PRIu64
			       " in %.1f s, sampled 1 in %" PRIu32
			       ", a key not listed at most %" PRIu64 "\n",
			       cls[c], h->requests[c], h->seconds, h->sample,
			       h->bound[c]);
		for (size_t i = 0; i < h->n[c]; i++) {
			const struct rhkv_hotkey *k = &h->top[c][i];

			if (cl->raw)
				printf("%s %zu %.3f %.6f %" PRIu64 " %" PRIu64
				       " %s ",
				       cls[c], i + 1, k->rps, k->share,
				       k->count, k->err,
				       k->exact ? "exact" : "approx");
			else
				printf("%3zu. ", i + 1);
			cli_put_key(stdout, k->key, k->klen);
			if (cl->raw)
				;
			else if (k->exact)
				printf(" %.1f/s %.2f%% %" PRIu64 " exact",
				       k->rps, 100 * k->share, k->count);
			else
				printf(" %.1f/s %.2f%% %" PRIu64 " ±%" PRIu64,
				       k->rps, 100 * k->share, k->count,
				       k->err);
			putchar('\n');
		}
	}
	rhkv_hotkeys_free(h);
	return 0;
}

static int do_version(struct cli *cl, const struct cmd *d, int argc,
		      struct cli_word *argv)
{
	char buf[256];
	int err;

	(void)d;
	(void)argc;
	(void)argv;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_version(cl->c, buf, sizeof(buf));
	if (err)
		return fail(cl, err);
	puts(buf);
	return 0;
}

static int do_ping(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	int err;

	(void)d;
	(void)argc;
	(void)argv;
	if (ensure_conn(cl))
		return EX_FAIL;
	err = rhkv_ping(cl->c);
	if (err)
		return fail(cl, err);
	puts("PONG");
	return 0;
}

static int do_quit(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	(void)d;
	(void)argc;
	(void)argv;
	cl->quit = 1;
	return 0;
}

static const struct cmd cmds[] = {
	{ "get", 1, 1, "KEY", "the value, or (nil)", do_get },
	{ "gets", 1, 1, "KEY", "the value with its flags and cas", do_get },
	{ "gat", 2, 2, "KEY EXPTIME", "get and set the expiry", do_get },
	{ "set", 2, 4, "KEY VALUE [FLAGS [EXPTIME]]", "store", do_store },
	{ "add", 2, 4, "KEY VALUE [FLAGS [EXPTIME]]", "store if absent",
	  do_store },
	{ "replace", 2, 4, "KEY VALUE [FLAGS [EXPTIME]]", "store if present",
	  do_store },
	{ "append", 2, 2, "KEY VALUE", "add bytes after the value", do_store },
	{ "prepend", 2, 2, "KEY VALUE", "add bytes before the value",
	  do_store },
	{ "cas", 3, 5, "KEY VALUE CAS [FLAGS [EXPTIME]]",
	  "store if the cas is unchanged", do_store },
	{ "delete", 1, 1, "KEY", "remove the key", do_delete },
	{ "incr", 2, 2, "KEY DELTA", "add to a number", do_incr },
	{ "decr", 2, 2, "KEY DELTA", "subtract (not below 0)", do_incr },
	{ "touch", 2, 2, "KEY EXPTIME", "set the expiry", do_touch },
	{ "mget", 1, -1, "KEY...", "several values in one round trip",
	  do_mget },
	{ "mg", 1, 6, "KEY [v] [nobump] [ttl=T] [vivify=T] [recache=T]",
	  "meta get: what the server knows (v: and the value)", do_mg },
	{ "ms", 2, 9, "KEY VALUE [mode=M] [NAME=N]... [invalidate]",
	  "meta set; M: S E A P R; NAME: flags ttl cas newcas vivify", do_ms },
	{ "md", 1, 5, "KEY [invalidate] [cas=C] [ttl=T] [newcas=C]",
	  "meta delete (invalidate: keep it, stale)", do_md },
	{ "ma", 1, 8, "KEY [mode=M] [NAME=N]...",
	  "meta arithmetic; M: I D + -; NAME: delta initial vivify ttl cas "
	  "newcas",
	  do_ma },
	{ "flush_all", 0, 1, "[DELAY]", "invalidate every item", do_flush },
	{ "flush_prefix", 1, 1, "PREFIX",
	  "invalidate every item whose key starts with PREFIX",
	  do_flush_prefix },
	{ "scan", 0, 2, "[--pattern GLOB]", "every key (matching GLOB)",
	  do_scan },
	{ "stats", 0, 1, "[GROUP]",
	  "statistics (settings, table, latency, memory, hotkeys)", do_stats },
	{ "hotkeys", 0, 1, "[N]", "the N hottest keys, reads and writes",
	  do_hotkeys },
	{ "version", 0, 0, "", "the server's version", do_version },
	{ "ping", 0, 0, "", "check the server answers", do_ping },
	{ "help", 0, 1, "[COMMAND]", "this list", do_help },
	{ "quit", 0, 0, "", "leave (also exit, or EOF)", do_quit },
	{ "exit", 0, 0, "", "leave", do_quit },
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static const struct cmd *find_cmd(const char *name)
{
	for (const struct cmd *d = cmds; d->name; d++) {
		if (!strcasecmp(d->name, name))
			return d;
	}
	return NULL;
}

static int do_help(struct cli *cl, const struct cmd *d, int argc,
		   struct cli_word *argv)
{
	(void)cl;
	(void)d;
	if (argc == 1) {
		const struct cmd *h = find_cmd(argv[0].p);

		if (!h) {
			fflush(stdout);
			fprintf(stderr, "(error) unknown command '%s'\n",
				argv[0].p);
			return EX_USAGE_;
		}
		printf("%s %s\n    %s\n", h->name, h->args, h->help);
		return 0;
	}
	puts("Commands (names are case-insensitive):");
	for (const struct cmd *h = cmds; h->name; h++) {
		char head[64];

		snprintf(head, sizeof(head), "%s %s", h->name, h->args);
		printf("  %-40s %s\n", head, h->help);
	}
	puts("\n"
	     "At the prompt and on stdin, words split at spaces; a "
	     "double-quoted\n"
	     "part keeps spaces; quoted or not, a word takes the escapes "
	     "\\\" \\\\\n"
	     "\\n \\r \\t \\0 and \\xNN (keys may hold any byte).\n"
	     "Words given as arguments on the command line are taken as they "
	     "are\n"
	     "(no quoting or escapes). EXPTIME: 0 never, up to 30 days "
	     "relative\n"
	     "seconds, else a unix time.");
	return 0;
}

/* Runs one command: 0, EX_FAIL or EX_USAGE_. */
static int run(struct cli *cl, int argc, struct cli_word *argv)
{
	const struct cmd *d = find_cmd(argv[0].p);
	int rc;

	if (!d) {
		fflush(stdout);
		fprintf(stderr, "(error) unknown command '%s' (try 'help')\n",
			argv[0].p);
		return EX_USAGE_;
	}
	argc--;
	argv++;
	if (argc < d->min || (d->max >= 0 && argc > d->max))
		return usage_err(d, "wrong number of arguments");
	rc = d->fn(cl, d, argc, argv);
	fflush(stdout);
	return rc;
}

static int run_line(struct cli *cl, const char *line)
{
	struct cli_words w;
	const char *err;
	int rc = 0;

	if (cli_tokenize(line, &w, &err)) {
		fflush(stdout);
		fprintf(stderr, "(error) %s\n", err);
		rc = EX_USAGE_;
	} else if (w.n > 0 && w.v[0].p[0] != '#') {
		rc = run(cl, (int)w.n, w.v);
	}
	cli_words_free(&w);
	return rc;
}

/* ---- modes ---- */

/* stdin not a terminal: a command per line, no prompt. */
static int run_stdin(struct cli *cl)
{
	char *line = NULL;
	size_t cap = 0;
	int failed = 0;

	while (!cl->quit && getline(&line, &cap, stdin) >= 0) {
		if (run_line(cl, line))
			failed = 1;
	}
	free(line);
	return failed ? EX_FAIL : 0;
}

static char *history_path(void)
{
	const char *home = getenv("HOME");
	char *p;

	if (!home || !*home)
		return NULL;
	if (asprintf(&p, "%s/%s", home, HISTORY_FILE) < 0)
		return NULL;
	return p;
}

static int run_interactive(struct cli *cl)
{
	char prompt[PATH_MAX + 32];
	char *hist = history_path();

	if (cl->host[0] == '/')
		snprintf(prompt, sizeof(prompt), "rhkv %s> ", cl->host);
	else
		snprintf(prompt, sizeof(prompt), "rhkv %s:%d> ", cl->host,
			 cl->port);
#ifdef RHKV_CLI_LIBEDIT
	using_history();
	stifle_history(HISTORY_MAX);
	if (hist)
		read_history(hist);
#endif
	while (!cl->quit) {
		char *line;

#ifdef RHKV_CLI_LIBEDIT
		line = readline(prompt);
		if (!line) {
			putchar('\n');
			break;
		}
		if (line[strspn(line, " \t")])
			add_history(line);
#else
		size_t cap = 0;

		fputs(prompt, stdout);
		fflush(stdout);
		line = NULL;
		if (getline(&line, &cap, stdin) < 0) {
			free(line);
			putchar('\n');
			break;
		}
#endif
		run_line(cl, line);
		free(line);
	}
#ifdef RHKV_CLI_LIBEDIT
	if (hist)
		write_history(hist);
#endif
	free(hist);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rhkv-cli [-h host] [-p port] [--timeout ms] [--raw]\n"
		"                [--pattern GLOB] [--tls [TLS options]] "
		"[command args...]\n"
		"\n"
		"  -h, --host HOST     server address or name (default %s);\n"
		"                      a path starting with / is a unix "
		"socket\n"
		"  -p, --port PORT     TCP port (default %d)\n"
		"  -t, --timeout MS    connect and per-call timeout (default "
		"1000; 0: none)\n"
		"  -r, --raw           values as raw bytes, numbers bare, no "
		"decoration\n"
		"      --pattern GLOB  default glob for scan\n"
		"      --auth-file F   authenticate with the password, or "
		"user:password,\n"
		"                      on F's first line (default: "
		"$RHKV_AUTH_FILE, if set)\n"
		"      --tls           connect with TLS; the server's "
		"certificate\n"
		"                      must verify. With --tls only:\n"
		"      --cacert FILE   trust the CAs in FILE (default: the "
		"system's)\n"
		"      --cert FILE     client certificate (chain), for servers "
		"that ask\n"
		"      --key FILE      its private key (default: in --cert's "
		"FILE)\n"
		"      --servername N  the name to verify and send as SNI "
		"(default:\n"
		"                      the host, when it is a name)\n"
		"      --insecure      accept any server certificate (testing "
		"only)\n"
		"      --stat          a line every interval: items, memory "
		"used and\n"
		"                      limit, connections, ops/s, hit ratio, "
		"evictions;\n"
		"                      of -h/-p's server, or of each "
		"HOST:PORT (or\n"
		"                      /PATH) given instead of a command\n"
		"      --interval S    --stat's interval in seconds (default "
		"1; 0.01 up)\n"
		"      --count N       --stat: stop after N intervals "
		"(default: never)\n"
		"      --help          this text\n"
		"      --version       rhkv-cli's version\n"
		"\n"
		"With a command, runs it and exits 0 (a miss is a result), 1 "
		"on "
		"an\n"
		"error, 64 on a usage error. Without one, reads commands at a "
		"prompt\n"
		"(or line by line when stdin is not a terminal). 'rhkv-cli "
		"help' "
		"lists\n"
		"the commands.\n",
		DEFAULT_HOST, DEFAULT_PORT);
}

/* The password on path's first line (a file, so that it never shows in
 * the process list), or user:password there (the first line of rhkvd's
 * user list): the user name then goes in *user. NULL after printing
 * why. */
static char *read_password(const char *path, const char **user)
{
	char *colon;
	static char pw[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f) {
		fprintf(stderr, "rhkv-cli: cannot read '%s': %s\n", path,
			strerror(errno));
		return NULL;
	}
	n = fread(pw, 1, sizeof(pw) - 1, f);
	fclose(f);
	pw[n] = '\0';
	pw[strcspn(pw, "\r\n")] = '\0';
	if ((colon = strchr(pw, ':')) && colon > pw && colon[1]) {
		*colon = '\0';
		*user = pw;
		return colon + 1;
	}
	if (!*pw || colon) {
		fprintf(stderr,
			"rhkv-cli: no password on the first line of "
			"'%s'\n",
			path);
		return NULL;
	}
	return pw;
}

static int parse_int_opt(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --interval: seconds, 0.01 to a day. */
static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.01 && v <= 86400))
		return -1;
	*out = v;
	return 0;
}

/* --stat over the servers named in words (none: -h/-p's server). */
static int run_stat(struct cli *cl, int nwords, char **words, double interval,
		    unsigned long count)
{
	size_t n = nwords ? (size_t)nwords : 1;
	struct cli_stat_server *sv = calloc(n, sizeof(*sv));
	int rc = EX_FAIL;

	if (!sv) {
		fprintf(stderr, "rhkv-cli: out of memory\n");
		return EX_FAIL;
	}
	if (!nwords) {
		sv[0].host = strdup(cl->host);
		sv[0].port = cl->port;
		if (!sv[0].host) {
			fprintf(stderr, "rhkv-cli: out of memory\n");
			goto out;
		}
	}
	for (int i = 0; i < nwords; i++) {
		if (cli_stat_parse_server(words[i], cl->port, &sv[i])) {
			fprintf(stderr,
				"rhkv-cli: --stat: bad server '%s' (HOST:PORT, "
				"HOST, [IPV6]:PORT or /PATH)\n",
				words[i]);
			rc = EX_USAGE_;
			goto out;
		}
	}
	rc = cli_stat_run(sv, n, &cl->o, interval, count, stdout) ? EX_FAIL : 0;
out:
	for (size_t i = 0; i < n; i++)
		free(sv[i].host);
	free(sv);
	return rc;
}

int main(int argc, char **argv)
{
	enum {
		OPT_PATTERN = 256,
		OPT_HELP,
		OPT_VERSION,
		OPT_AUTH_FILE,
		OPT_TLS,
		OPT_CACERT,
		OPT_CERT,
		OPT_KEY,
		OPT_SERVERNAME,
		OPT_INSECURE,
		OPT_STAT,
		OPT_INTERVAL,
		OPT_COUNT,
	};
	static const struct option longopts[] = {
		{ "host", required_argument, NULL, 'h' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "raw", no_argument, NULL, 'r' },
		{ "pattern", required_argument, NULL, OPT_PATTERN },
		{ "auth-file", required_argument, NULL, OPT_AUTH_FILE },
		{ "tls", no_argument, NULL, OPT_TLS },
		{ "cacert", required_argument, NULL, OPT_CACERT },
		{ "cert", required_argument, NULL, OPT_CERT },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "servername", required_argument, NULL, OPT_SERVERNAME },
		{ "insecure", no_argument, NULL, OPT_INSECURE },
		{ "stat", no_argument, NULL, OPT_STAT },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct cli cl = { .host = DEFAULT_HOST, .port = DEFAULT_PORT };
	const char *auth_file = getenv("RHKV_AUTH_FILE");
	const char *tls_opt = NULL; /* a TLS option given, for its check */
	/* where --cacert, --cert, --key and --servername go, in that order */
	const char **tls_str[] = { &cl.o.tls_ca_file, &cl.o.tls_cert_file,
				   &cl.o.tls_key_file, &cl.o.tls_server_name };
	const char *stat_opt = NULL; /* --interval or --count, for its check */
	int opt, rc, li = 0, stat = 0;
	double interval = 1;
	unsigned long count = 0;
	long v;

	rhkv_options_init(&cl.o);
	/* '+': options end at the command, whose words may start with '-'. */
	while ((opt = getopt_long(argc, argv, "+h:p:t:r", longopts, &li)) !=
	       -1) {
		switch (opt) {
		case 'h':
			if (!*optarg) {
				fprintf(stderr, "rhkv-cli: empty host\n");
				return EX_USAGE_;
			}
			cl.host = optarg;
			break;
		case 'p':
			if (parse_int_opt(optarg, 1, 65535, &v)) {
				fprintf(stderr, "rhkv-cli: bad port '%s'\n",
					optarg);
				return EX_USAGE_;
			}
			cl.port = (int)v;
			break;
		case 't':
			if (parse_int_opt(optarg, 0, INT_MAX, &v)) {
				fprintf(stderr, "rhkv-cli: bad timeout '%s'\n",
					optarg);
				return EX_USAGE_;
			}
			cl.o.connect_timeout_ms = (int)v;
			cl.o.io_timeout_ms = (int)v;
			break;
		case 'r':
			cl.raw = 1;
			break;
		case OPT_AUTH_FILE:
			auth_file = optarg;
			break;
		case OPT_PATTERN:
			cl.pattern = optarg;
			break;
		case OPT_TLS:
			cl.o.tls = 1;
			break;
		case OPT_CACERT:
		case OPT_CERT:
		case OPT_KEY:
		case OPT_SERVERNAME:
			*tls_str[opt - OPT_CACERT] = optarg;
			tls_opt = longopts[li].name;
			break;
		case OPT_INSECURE:
			cl.o.tls_insecure = 1;
			tls_opt = longopts[li].name;
			break;
		case OPT_STAT:
			stat = 1;
			break;
		case OPT_INTERVAL:
			if (parse_interval(optarg, &interval)) {
				fprintf(stderr,
					"rhkv-cli: bad interval '%s' (seconds, "
					"0.01 to 86400)\n",
					optarg);
				return EX_USAGE_;
			}
			stat_opt = longopts[li].name;
			break;
		case OPT_COUNT:
			if (parse_int_opt(optarg, 1, LONG_MAX, &v)) {
				fprintf(stderr, "rhkv-cli: bad count '%s'\n",
					optarg);
				return EX_USAGE_;
			}
			count = (unsigned long)v;
			stat_opt = longopts[li].name;
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("rhkv-cli %d.%d\n", RHKV_VERSION_MAJOR,
			       RHKV_VERSION_MINOR);
			return 0;
		default:
			usage(stderr);
			return EX_USAGE_;
		}
	}
	/* without --tls they would silently do nothing: plain TCP */
	if (tls_opt && !cl.o.tls) {
		fprintf(stderr, "rhkv-cli: --%s needs --tls\n", tls_opt);
		return EX_USAGE_;
	}
	if (cl.o.tls_key_file && !cl.o.tls_cert_file) {
		fprintf(stderr, "rhkv-cli: --key needs --cert\n");
		return EX_USAGE_;
	}
	if (stat_opt && !stat) {
		fprintf(stderr, "rhkv-cli: --%s needs --stat\n", stat_opt);
		return EX_USAGE_;
	}
	if (auth_file && *auth_file &&
	    !(cl.o.password = read_password(auth_file, &cl.o.user)))
		return EX_USAGE_;
	if (stat)
		return run_stat(&cl, argc - optind, argv + optind, interval,
				count);

	if (optind < argc) {
		int n = argc - optind;
		struct cli_word *w = calloc((size_t)n, sizeof(*w));

		if (!w) {
			fprintf(stderr, "rhkv-cli: out of memory\n");
			return EX_FAIL;
		}
		for (int i = 0; i < n; i++) {
			w[i].p = argv[optind + i];
			w[i].len = strlen(w[i].p);
		}
		rc = run(&cl, n, w);
		free(w);
	} else if (isatty(STDIN_FILENO)) {
		rc = run_interactive(&cl);
	} else {
		rc = run_stdin(&cl);
	}
	if (cl.c)
		rhkv_close(cl.c);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "rhkv-cli: write error: %s\n", strerror(errno));
		return EX_FAIL;
	}
	return rc;
}
