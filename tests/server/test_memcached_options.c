/*
 * memcached 1.6.18's command line through rhkvd's option parser: one row
 * per option of `memcached -h` (each short option, under its long name
 * too, and every -o key, those memcached's source has beyond its help
 * included), with what rhkvd does with it:
 *   APPLIED  parsed, no line logged, and the setting is what memcached's
 *            would be (`stats settings` through config_each, or the field
 *            main.c acts on);
 *   IGNORED  parsed, and exactly one line logged at start, naming it;
 *   REFUSED  exit code 64 and a message naming it;
 *   STOPS    prints and exits 0 (-h, -V, -i).
 * When /usr/bin/memcached is there, its -h is read too, and an option it
 * lists that this table lacks fails the test. What each row does at run
 * time (listeners, replies, the log) is test_memcached_cmdline.sh's.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"

enum outcome { APPLIED, IGNORED, REFUSED, STOPS };

struct row {
	const char *words[8]; /* after "rhkvd" */
	enum outcome outcome;
	const char *longname; /* memcached's long name for words[0] */
	/* APPLIED: a `stats settings` name and its value, or check. */
	const char *stat, *value;
	bool (*check)(const struct config *cfg);
	/* IGNORED: in the logged line; REFUSED: in the message. */
	const char *says;
};

static struct config cfg;
static char pwfile[64];

static bool sock_only(const struct config *c)
{
	return c->port == 0 && c->unix_socket;
}
static bool daemonize(const struct config *c)
{
	return c->daemonize;
}
static bool coredumps(const struct config *c)
{
	return c->coredumps;
}
static bool locks(const struct config *c)
{
	return c->lock_memory;
}
static bool pid_file(const struct config *c)
{
	return c->pid_file && !strcmp(c->pid_file, "/tmp/mc.pid");
}
static bool delimiter(const struct config *c)
{
	return c->detail_delim == '/' && c->detail_at_start;
}
static bool watch_off(const struct config *c)
{
	return c->disable_watch;
}
static bool auth_named(const struct config *c)
{
	return config_has_auth(c) && strcmp(c->auth_file, pwfile) == 0;
}
static bool sasl(const struct config *c)
{
	return c->sasl && c->protocol == CONFIG_PROTO_BINARY;
}
static bool notls(const struct config *c)
{
	return c->tls_all && c->nlisten == 2 && c->listen_notls[0] &&
	       c->listen_port[0] == 7000 && !c->listen_notls[1] &&
	       !c->listen_port[1] && !strcmp(c->listen[1], "::1");
}
static bool listen_list(const struct config *c)
{
	return c->nlisten == 3 && c->listen_port[0] == 5000 &&
	       !strcmp(c->listen[1], "::1") && c->listen_port[1] == 6000 &&
	       !strcmp(c->listen[2], "0.0.0.0") && !c->listen_port[2];
}
static bool sweep_off(const struct config *c)
{
	return c->sweep_off;
}
static bool sweep_on(const struct config *c)
{
	return !c->sweep_off;
}
static bool mark5(const struct config *c)
{
	return c->sock_mark == 5;
}
static bool ktls(const struct config *c)
{
	return c->tls_ktls;
}
static bool verify_require(const struct config *c)
{
	return !strcmp(c->tls_verify, "require");
}
static bool verify_optional(const struct config *c)
{
	return !strcmp(c->tls_verify, "optional");
}
static bool min_13(const struct config *c)
{
	return !strcmp(c->tls_min_version, "1.3");
}
static bool min_12(const struct config *c)
{
	return !strcmp(c->tls_min_version, "1.2");
}
static bool wbuf_64k(const struct config *c)
{
	return c->tls_wbuf_size == 65536;
}
static bool cert_with_equals(const struct config *c)
{
	return !strcmp(c->tls_cert, "/x=y");
}

#define TLS "ssl_chain_cert=/c,ssl_key=/k"
#define IGN(k, v)                                                  \
	{                                                          \
		{ "-o", k v }, IGNORED, .says = "-o " k " ignored" \
	}

static const struct row rows[] = {
	/* memcached -h, in its order. */
	{ { "-p", "5555" }, APPLIED, "port", "tcpport", "5555", .check = NULL },
	{ { "-U", "0" }, APPLIED, "udp-port", "udpport", "0", .check = NULL },
	{ { "-U", "4444" },
	  APPLIED,
	  "udp-port",
	  "udpport",
	  "4444",
	  .check = NULL },
	{ { "-s", "/tmp/mc.sock" },
	  APPLIED,
	  "unix-socket",
	  "domain_socket",
	  "/tmp/mc.sock",
	  .check = sock_only },
	{ { "-a", "0770" },
	  APPLIED,
	  "unix-mask",
	  "umask",
	  "770",
	  .check = NULL },
	{ { "-A" },
	  APPLIED,
	  "enable-shutdown",
	  "shutdown_command",
	  "yes",
	  .check = NULL },
	{ { "-l", "127.0.0.2" },
	  APPLIED,
	  "listen",
	  "inter",
	  "127.0.0.2",
	  .check = NULL },
	{ { "-l", "127.0.0.1:5000,[::1]:6000;*", "--no-protected-mode" },
	  APPLIED,
	  "listen",
	  "inter",
	  "127.0.0.1:5000,[::1]:6000,0.0.0.0",
	  .check = listen_list },
	{ { "-Z", "-o", TLS, "-l", "notls:127.0.0.1:7000", "-l", "::1" },
	  APPLIED,
	  "enable-ssl",
	  "ssl_enabled",
	  "yes",
	  .check = notls },
	{ { "-l", "notls:127.0.0.1:7000" }, REFUSED, .says = "notls" },
	/* Protected mode, listener by listener: beyond loopback a plain
	 * one needs a password, a TLS one too but for required client
	 * certificates. */
	{ { "-Z", "-o", TLS ",ssl_ca_cert=/ca,ssl_verify_mode=2", "-l",
	    "0.0.0.0" },
	  APPLIED,
	  .stat = "ssl_enabled",
	  "yes" },
	{ { "-Z", "-o", TLS, "-l", "0.0.0.0" },
	  REFUSED,
	  .says = "protected mode" },
	{ { "-Z", "-o", TLS ",ssl_ca_cert=/ca,ssl_verify_mode=2", "-l",
	    "notls:0.0.0.0:7000,127.0.0.1" },
	  REFUSED,
	  .says = "refusing to listen on 0.0.0.0" },
	{ { "-d" }, APPLIED, "daemon", .check = daemonize },
	{ { "-r" }, APPLIED, "enable-coredumps", .check = coredumps },
	{ { "-u", "root" }, APPLIED, "user", "user", "root", .check = NULL },
	{ { "-m", "100" },
	  APPLIED,
	  "memory-limit",
	  "maxbytes",
	  "104857600",
	  .check = NULL },
	{ { "-M" },
	  APPLIED,
	  "disable-evictions",
	  "evictions",
	  "off",
	  .check = NULL },
	{ { "-c", "50" },
	  APPLIED,
	  "conn-limit",
	  "maxconns",
	  "50",
	  .check = NULL },
	{ { "-c", "0" }, REFUSED, "conn-limit", .says = "connection limit" },
	{ { "-k" }, APPLIED, "lock-memory", .check = locks },
	{ { "-v" }, APPLIED, "verbose", "verbosity", "1", .check = NULL },
	{ { "-vv" }, APPLIED, NULL, "verbosity", "2", .check = NULL },
	{ { "-vvv" }, APPLIED, NULL, "verbosity", "3", .check = NULL },
	{ { "-h" }, STOPS, "help", .check = NULL },
	{ { "-i" }, STOPS, "license", .check = NULL },
	{ { "-V" }, STOPS, "version", .check = NULL },
	{ { "-P", "/tmp/mc.pid" }, APPLIED, "pidfile", .check = pid_file },
	{ { "-f", "1.25" }, IGNORED, "slab-growth-factor", .says = "-f 1.25" },
	{ { "-n", "48" }, IGNORED, "slab-min-size", .says = "-n 48" },
	{ { "-L" }, IGNORED, "enable-largepages", .says = "-L" },
	{ { "-D", "/" }, APPLIED, .check = delimiter },
	{ { "-t", "3" },
	  APPLIED,
	  "threads",
	  "num_threads",
	  "3",
	  .check = NULL },
	{ { "-t", "0" }, REFUSED, "threads", .says = "threads" },
	{ { "-R", "20" }, IGNORED, "max-reqs-per-event", .says = "-R 20" },
	{ { "-C" }, IGNORED, "disable-cas", .says = "-C" },
	{ { "-b", "8675" },
	  APPLIED,
	  "listen-backlog",
	  "tcp_backlog",
	  "8675",
	  .check = NULL },
	{ { "-B", "auto" },
	  APPLIED,
	  "protocol",
	  "binding_protocol",
	  "auto-negotiate",
	  .check = NULL },
	{ { "-B", "ascii" },
	  APPLIED,
	  "protocol",
	  "binding_protocol",
	  "ascii",
	  .check = NULL },
	{ { "-B", "binary" },
	  APPLIED,
	  "protocol",
	  "binding_protocol",
	  "binary",
	  .check = NULL },
	{ { "-B", "http" }, REFUSED, "protocol", .says = "http" },
	{ { "-I", "2m" },
	  APPLIED,
	  "max-item-size",
	  "item_size_max",
	  "2097152",
	  .check = NULL },
	{ { "-S", "--auth-file", pwfile },
	  APPLIED,
	  "enable-sasl",
	  "binding_protocol",
	  "binary",
	  .check = sasl },
	{ { "-S" }, REFUSED, "enable-sasl", .says = "--auth-file" },
	{ { "-S", "-B", "auto", "--auth-file", pwfile },
	  REFUSED,
	  .says = "SASL" },
	{ { "-F" },
	  APPLIED,
	  "disable-flush-all",
	  "flush_enabled",
	  "no",
	  .check = NULL },
	{ { "-X" },
	  APPLIED,
	  "disable-dumping",
	  "dump_enabled",
	  "no",
	  .check = NULL },
	{ { "-W" }, APPLIED, "disable-watch", .check = watch_off },
	{ { "-Y", pwfile }, APPLIED, "auth-file", .check = auth_named },
	{ { "-e", "/dev/shm/mc" },
	  APPLIED,
	  "memory-file",
	  "memory_file",
	  "/dev/shm/mc",
	  .check = NULL },
	{ { "-o", "idle_timeout=9" },
	  APPLIED,
	  "extended",
	  "idle_timeout",
	  "9",
	  .check = NULL },
	{ { "-N", "2" }, IGNORED, "napi-ids", .says = "-N 2" },
	/* -o, memcached -h's keys in its order, then its source's others. */
	{ { "-o", "maxconns_fast" },
	  APPLIED,
	  "extended",
	  "maxconns_fast",
	  "yes",
	  .check = NULL },
	IGN("no_maxconns_fast", ""),
	IGN("hashpower", "=20"),
	IGN("tail_repair_time", "=10"),
	IGN("hash_algorithm", "=murmur3"),
	{ { "-o", "lru_crawler" }, APPLIED, .check = sweep_on },
	{ { "-o", "no_lru_crawler" }, APPLIED, .check = sweep_off },
	IGN("lru_crawler_sleep", "=100"),
	IGN("lru_crawler_tocrawl", "=0"),
	{ { "-o", "read_buf_mem_limit=5" },
	  APPLIED,
	  .stat = "conn_memory",
	  "5242880" },
	{ { "-o", "read_buf_mem_limit=0" },
	  IGNORED,
	  .says = "read_buf_mem_limit=0" },
	IGN("no_lru_maintainer", ""),
	IGN("lru_maintainer", ""),
	IGN("hot_lru_pct", "=20"),
	IGN("warm_lru_pct", "=40"),
	IGN("hot_max_factor", "=0.20"),
	IGN("warm_max_factor", "=2.00"),
	IGN("temporary_ttl", "=61"),
	{ { "-o", "idle_timeout=0" }, APPLIED, .stat = "idle_timeout", "0" },
	IGN("slab_chunk_max", "=512"),
	IGN("watcher_logbuf_size", "=256"),
	IGN("worker_logbuf_size", "=64"),
	IGN("track_sizes", ""),
	IGN("no_hashexpand", ""),
	{ { "-o", "modern" }, APPLIED, .check = NULL },
	{ { "-o", "no_modern" },
	  IGNORED,
	  .check = sweep_off,
	  .says = "-o no_modern: the expiry sweep starts paused" },
	{ { "-o", "no_modern,lru_crawler" },
	  IGNORED,
	  .check = sweep_on,
	  .says = "-o no_modern" },
	{ { "-o", "sock_cookie_id=5" }, APPLIED, .check = mark5 },
	{ { "-o", "ext_path=/tmp/mc-ext:1G" }, REFUSED, .says = "flash tier" },
	IGN("ext_page_size", "=64"),
	IGN("ext_wbuf_size", "=4"),
	IGN("ext_threads", "=1"),
	IGN("ext_io_depth", "=1"),
	IGN("ext_item_size", "=512"),
	IGN("ext_item_age", "=10"),
	IGN("ext_low_ttl", "=0"),
	IGN("ext_drop_unread", ""),
	IGN("ext_recache_rate", "=2000"),
	IGN("ext_compact_under", "=4"),
	IGN("ext_drop_under", "=4"),
	IGN("ext_max_frag", "=0.80"),
	IGN("ext_max_sleep", "=1000000"),
	IGN("slab_automove_freeratio", "=0.010"),
	{ { "-o", "ssl_chain_cert=/c" },
	  APPLIED,
	  .stat = "ssl_chain_cert",
	  "/c" },
	{ { "-o", "ssl_key=/k" }, APPLIED, .stat = "ssl_key", "/k" },
	{ { "-o", "ssl_keyformat=1" }, APPLIED, .check = NULL },
	{ { "-o", "ssl_keyformat=2" }, REFUSED, .says = "PEM" },
	{ { "-o", "ssl_verify_mode=1" }, APPLIED, .check = verify_optional },
	{ { "-o", "ssl_verify_mode=3" }, APPLIED, .check = verify_require },
	{ { "-o", "ssl_verify_mode=4" }, REFUSED, .says = "ssl_verify_mode" },
	{ { "-o", "ssl_ciphers=HIGH:!aNULL" },
	  APPLIED,
	  .stat = "ssl_ciphers",
	  "HIGH:!aNULL" },
	{ { "-o", "ssl_ca_cert=/ca" }, APPLIED, .stat = "ssl_ca_cert", "/ca" },
	{ { "-o", "ssl_wbuf_size=64" },
	  IGNORED,
	  .stat = "ssl_wbuf_size",
	  "65536",
	  .check = wbuf_64k,
	  .says = "ssl_wbuf_size" },
	{ { "-o", "ssl_session_cache" },
	  APPLIED,
	  .stat = "ssl_session_cache",
	  "yes" },
	{ { "-o", "ssl_kernel_tls" }, APPLIED, .check = ktls },
	{ { "-o", "ssl_min_version=3" }, APPLIED, .check = min_13 },
	{ { "-o", "ssl_min_version=2" }, APPLIED, .check = min_12 },
	{ { "-o", "ssl_min_version=1" }, REFUSED, .says = "TLS 1.2 and 1.3" },
	IGN("slab_reassign", ""),
	IGN("no_slab_reassign", ""),
	IGN("slab_automove", "=1"),
	IGN("slab_automove", ""),
	IGN("no_slab_automove", ""),
	IGN("slab_automove_ratio", "=0.8"),
	IGN("slab_automove_window", "=30"),
	IGN("slab_sizes", "=100-200-300"),
	IGN("no_chunked_items", ""),
	IGN("inline_ascii_resp", ""),
	IGN("no_inline_ascii_resp", ""),
	IGN("resp_obj_mem_limit", ""),
	IGN("drop_privileges", ""),
	IGN("no_drop_privileges", ""),
	IGN("relaxed_privileges", ""),
	{ { "-o", "proxy_config=/p.lua" }, REFUSED, .says = "proxy" },
	{ { "-o", "proxy_uring" }, REFUSED, .says = "proxy" },
	/* -o's list, split as getsubopt(3) splits it. */
	{ { "-o", "idle_timeout=5," }, APPLIED, .stat = "idle_timeout", "5" },
	{ { "-o", "idle_timeout=6,modern=1,maxconns_fast" },
	  APPLIED,
	  .stat = "idle_timeout",
	  "6" },
	{ { "-o", "ssl_chain_cert=/x=y" }, APPLIED, .check = cert_with_equals },
	{ { "-o", "ssl_ciphers=A,B" }, REFUSED, .says = "\"B\"" },
	{ { "-o", ",modern" }, REFUSED, .says = "\"\"" },
	{ { "-o", "idle_timeout=1,,modern" }, REFUSED, .says = "\"\"" },
	{ { "-o", "hashpower" }, REFUSED, .says = "hashpower" },
	{ { "-o", "bogus" }, REFUSED, .says = "\"bogus\"" },
	/* Each -o on its own: memcached takes them all; a value outlives
	 * the parsing of the next one. */
	{ { "-o", "ssl_chain_cert=/c", "-o", "ssl_ca_cert=/a/longer/path" },
	  APPLIED,
	  .stat = "ssl_chain_cert",
	  "/c" },
	{ { "-o", "hashpower=20", "-o", "idle_timeout=8" },
	  IGNORED,
	  .stat = "idle_timeout",
	  "8",
	  .says = "hashpower" },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

struct found {
	const char *name;
	char value[512];
};

static void find_setting(const char *name, const char *value, void *arg)
{
	struct found *f = arg;

	if (!strcmp(name, f->name))
		snprintf(f->value, sizeof(f->value), "%s", value);
}

/* config_parse (then config_check_access) on words, stderr and stdout
 * into err. */
static int run(const char *const *words, char *err, size_t len)
{
	char *argv[16] = { "rhkvd" };
	int argc = 1, rc, saved_err = dup(2), saved_out = dup(1);
	FILE *f = tmpfile();
	size_t n;

	while (argc < 15 && words[argc - 1])
		argv[argc] = (char *)words[argc - 1], argc++;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	dup2(fileno(f), 2);
	dup2(fileno(f), 1);
	rc = config_parse(&cfg, argc, argv);
	if (rc == 0)
		rc = config_check_access(&cfg);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_err, 2);
	dup2(saved_out, 1);
	close(saved_err);
	close(saved_out);
	rewind(f);
	n = fread(err, 1, len - 1, f);
	err[n] = '\0';
	fclose(f);
	return rc;
}

static void words_text(const struct row *r, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; r->words[i]; i++) {
		strncat(buf, r->words[i], len - strlen(buf) - 1);
		strncat(buf, " ", len - strlen(buf) - 1);
	}
}

static void check_row(const struct row *r, const char *const *words)
{
	char err[4096], what[256];
	int rc = run(words, err, sizeof(err));

	words_text(r, what, sizeof(what));
	switch (r->outcome) {
	case APPLIED:
	case IGNORED:
		cr_expect_eq(rc, 0, "%s: exit code %d, %s", what, rc, err);
		if (rc)
			return;
		if (r->outcome == APPLIED)
			cr_expect_eq(cfg.nnotes, 0, "%s: logs '%s'", what,
				     cfg.notes[0]);
		else
			cr_expect(cfg.nnotes == 1 &&
					  strstr(cfg.notes[0], r->says),
				  "%s: %d lines logged, the first '%s', not "
				  "one with '%s'",
				  what, cfg.nnotes, cfg.notes[0], r->says);
		if (r->stat) {
			struct found f = { r->stat, "(none)" };

			config_each(&cfg, find_setting, &f);
			cr_expect_str_eq(f.value, r->value, "%s: %s is %s",
					 what, r->stat, f.value);
		}
		if (r->check)
			cr_expect(r->check(&cfg), "%s: not applied", what);
		break;
	case REFUSED:
		cr_expect_eq(rc, CONFIG_EXIT_USAGE, "%s: exit code %d", what,
			     rc);
		cr_expect(strstr(err, r->says) != NULL,
			  "%s: the message '%s' lacks '%s'", what, err,
			  r->says);
		break;
	case STOPS:
		cr_expect_eq(rc, 1, "%s: %d, not a stop", what, rc);
		cr_expect(strlen(err) > 10, "%s: printed nothing", what);
		break;
	}
}

static void make_password_file(void)
{
	FILE *f;

	snprintf(pwfile, sizeof(pwfile), "/tmp/rhkv-mcopt-%d", (int)getpid());
	f = fopen(pwfile, "w");
	cr_assert(f);
	fputs("secret\n", f);
	fclose(f);
	unsetenv("RHKV_AUTH_FILE");
	unsetenv("RHKV_NO_PROTECTED_MODE");
}

static void remove_password_file(void)
{
	unlink(pwfile);
}

TestSuite(memcached_options, .init = make_password_file,
	  .fini = remove_password_file, .timeout = 30);

/* Each row as written, and its first word under memcached's long name. */
Test(memcached_options, every_row)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		const char *words[8];
		char longopt[64];

		check_row(r, r->words);
		if (!r->longname)
			continue;
		memcpy(words, r->words, sizeof(words));
		snprintf(longopt, sizeof(longopt), "--%s", r->longname);
		words[0] = longopt;
		if (r->words[0][1] == 'v' && r->words[0][2])
			continue; /* -vv has no long spelling */
		check_row(r, words);
	}
}

/* memcached's t/ files listen on 0.0.0.0 (stats-conns.t: -l 0.0.0.0)
 * with no password: RHKV_NO_PROTECTED_MODE=1, as the Docker image reads
 * it, lets that command line run unchanged. */
Test(memcached_options, protected_mode_off_from_the_environment)
{
	static const char *const words[] = { "-l", "0.0.0.0", NULL };
	char err[4096];

	cr_expect_eq(run(words, err, sizeof(err)), CONFIG_EXIT_USAGE);
	setenv("RHKV_NO_PROTECTED_MODE", "1", 1);
	cr_expect_eq(run(words, err, sizeof(err)), 0, "%s", err);
	setenv("RHKV_NO_PROTECTED_MODE", "0", 1);
	cr_expect_eq(run(words, err, sizeof(err)), CONFIG_EXIT_USAGE);
	unsetenv("RHKV_NO_PROTECTED_MODE");
}

/* Whether the table has a row for memcached's option: "-p", "--port" or
 * "-o key". */
static bool covered(const char *opt)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		char spec[80];

		if (!strcmp(r->words[0], opt))
			return true;
		if (r->longname) {
			snprintf(spec, sizeof(spec), "--%s", r->longname);
			if (!strcmp(spec, opt))
				return true;
		}
		if (!strcmp(r->words[0], "-o")) {
			size_t n = strcspn(r->words[1], "=,");

			snprintf(spec, sizeof(spec), "-o %.*s", (int)n,
				 r->words[1]);
			if (!strcmp(spec, opt))
				return true;
		}
	}
	return false;
}

/* memcached's -h, where installed: every option it lists has a row. Its
 * lines are "-p, --port=<num> ...", "-W  --disable-watch", "-D <char>",
 * "-vv", and "   - key: ..." for -o. */
Test(memcached_options, memcached_help_is_covered)
{
	FILE *p;
	char line[512], opt[96];
	int seen = 0, missing = 0;

	if (access("/usr/bin/memcached", X_OK))
		cr_skip_test("no /usr/bin/memcached to read -h from");
	p = popen("/usr/bin/memcached -h", "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		char a[64] = "", b[64] = "";

		opt[0] = '\0';
		if (!strncmp(line, "   - ", 5) &&
		    sscanf(line + 5, "%63[a-z_0-9]:", a) == 1) {
			snprintf(opt, sizeof(opt), "-o %s", a);
		} else if (line[0] == '-' && line[1] != '-') {
			/* "-x" alone, or "-x, --long" / "-x  --long". */
			sscanf(line, "%63[-a-zA-Z]%*[, ]--%63[a-z_-]", a, b);
			snprintf(opt, sizeof(opt), "%s", a);
			if (b[0] && !covered(opt)) {
				missing++;
				cr_log_error("memcached -h lists %s, the table "
					     "has no row for it",
					     opt);
			}
			if (b[0]) {
				/* "--napi_ids" in the help is "napi-ids". */
				for (char *c = b; *c; c++)
					*c = *c == '_' ? '-' : *c;
				snprintf(opt, sizeof(opt), "--%s", b);
			}
		}
		if (!opt[0])
			continue;
		seen++;
		if (!covered(opt)) {
			missing++;
			cr_log_error("memcached -h lists %s, the table has no "
				     "row for it",
				     opt);
		}
	}
	pclose(p);
	cr_expect_gt(seen, 80, "only %d options read from memcached -h", seen);
	cr_expect_eq(missing, 0, "%d options of memcached -h not covered",
		     missing);
}
