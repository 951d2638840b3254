/*
 * Command-line parsing for rhkvd. Flags keep memcached's letters and
 * meanings; bad usage prints a clear message and returns exit code 64.
 *
 * Every option is written once, in options[] below: its names, the type of
 * its argument and its range, its default, its help, its error message,
 * where it lands in struct config and its name in `stats settings`.
 * --help, the defaults, getopt's tables, the parsing and config_each() are
 * all generated from that table. memcached 1.6.18's options are rows of it
 * too, under memcached's letters and long names; config_memcached.c holds
 * its -l syntax and -o list, and says what rhkvd does with each;
 * config_help.c prints --help.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "config_internal.h"

#define AT(field)                              \
	.off = offsetof(struct config, field), \
	.size = sizeof(((struct config *)0)->field)

static void threads_default(struct config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (!cfg->threads)
		cfg->threads = cores > 0 ? (int)cores : 4;
}

static void conn_memory_default(struct config *cfg)
{
	if (!cfg->conn_memory)
		cfg->conn_memory = cfg->memory_limit / 8;
}

static const char *show_protected_mode(const struct config *cfg)
{
	return cfg->no_protected_mode ? "no" : "yes";
}

/* memcached's name says the opposite of the flag's. */
static const char *show_flush_enabled(const struct config *cfg)
{
	return cfg->disable_flush_all ? "no" : "yes";
}

static void delimiter_default(struct config *cfg)
{
	if (!cfg->detail_delim)
		cfg->detail_delim = ':';
}

/*
 * OPTION(long name, short letter or 0, type, argument's name in --help or
 * NULL, help, then what applies of: .min/.max (RANGE), .def, .def_str,
 * .def_text, .env, where it lands (AT), .stat, the error message (BAD),
 * and the hooks .late, .show and .apply).
 */
#define OPTION(long_name, letter, kind, arg_name, help_text, ...)      \
	{                                                              \
		.name = (long_name), .flag = (letter), .type = (kind), \
		.arg = (arg_name), .help = (help_text), __VA_ARGS__    \
	}
#define RANGE(lo, hi)	 .min = (lo), .max = (hi)
#define BAD(what_, why_) .what = (what_), .why = (why_)

static const struct opt options[] = {
	OPTION("port", 'p', OPT_INT, "PORT",
	       "TCP port; 0: no plain TCP listener (then -s or --tls-port)",
	       RANGE(0, 65535), .def = 11311, AT(port), .stat = "tcpport",
	       BAD("port", "not in 0..65535")),
	OPTION("listen", 'l', OPT_LIST, "ADDR",
	       "address to listen on; repeatable", .def_str = "127.0.0.1",
	       .stat = "inter", BAD("listen", "too many")),
	OPTION("unix-socket", 's', OPT_STRING, "PATH",
	       "also listen on a unix socket", AT(unix_socket),
	       .stat = "domain_socket"),
	OPTION("unix-mask", 'a', OPT_OCTAL, "MASK",
	       "permissions of the unix socket, octal", RANGE(0, 0777),
	       .def = 0700, AT(unix_mask), .stat = "umask",
	       BAD("unix mask", "not octal")),
	OPTION("threads", 't', OPT_INT, "N", "worker threads", RANGE(1, 256),
	       .def_text = "cores", .late = threads_default, AT(threads),
	       .stat = "num_threads", BAD("threads", "not in 1..256")),
	OPTION("memory-limit", 'm', OPT_MIB, "MIB", "memory for items, MiB",
	       RANGE(1, 1 << 30), .def = 64, AT(memory_limit),
	       .stat = "maxbytes", BAD("memory limit", "not a number of MiB")),
	OPTION("memory-file", 'e', OPT_STRING, "PATH",
	       "keep the items in PATH (tmpfs) and come back with them after "
	       "a graceful stop (SIGTERM, SIGUSR1)",
	       AT(memory_file), .stat = "memory_file"),
	OPTION("conn-memory", 0, OPT_MIB, "MIB",
	       "connection buffers, all together, MiB", RANGE(1, 1 << 30),
	       .def_text = "1/8 of -m", .late = conn_memory_default,
	       AT(conn_memory), .stat = "conn_memory",
	       BAD("connection memory", "not a number of MiB")),
	OPTION("conn-limit", 'c', OPT_INT, "N", "simultaneous connections",
	       RANGE(1, 1 << 20), .def = 1024, AT(conn_limit),
	       .stat = "maxconns",
	       BAD("connection limit", "not in 1..1048576")),
	OPTION("reuseport", 0, OPT_FLAG, NULL,
	       "a TCP listening socket per worker thread (SO_REUSEPORT): the "
	       "kernel spreads connections, each worker accepts its own",
	       AT(reuseport), .stat = "reuseport"),
	OPTION("max-item-size", 'I', OPT_SIZE, "SIZE",
	       "largest value, k/m suffixes", RANGE(1024, 1 << 30),
	       .def = 1 << 20, AT(max_item_size), .stat = "item_size_max",
	       BAD("max item size", "not a size from 1k to 1024m")),
	OPTION("user", 'u', OPT_STRING, "USER",
	       "drop privileges to USER after binding", AT(user),
	       .stat = "user"),
	OPTION("udp-port", 'U', OPT_INT, "PORT",
	       "UDP port for memcached's UDP protocol, on each -l address; "
	       "0: none",
	       RANGE(0, 65535), .def = 0, AT(udp_port), .stat = "udpport",
	       BAD("UDP port", "not in 0..65535")),
	OPTION("idle-timeout", 0, OPT_INT, "SECS",
	       "close connections that complete no request for SECS; 0: off",
	       RANGE(0, 1 << 30), .def = 300, AT(idle_timeout),
	       .stat = "idle_timeout", BAD("idle timeout", "not seconds")),
	OPTION("stall-timeout", 0, OPT_INT, "SECS",
	       "close connections whose output does not drain for SECS",
	       RANGE(1, 1 << 30), .def = 30, AT(stall_timeout),
	       .stat = "stall_timeout", BAD("stall timeout", "not seconds")),
	OPTION("output-limit", 0, OPT_SIZE, "SIZE",
	       "pending output before reads pause", RANGE(1, 1 << 30),
	       .def = 1 << 20, AT(output_hwm), .stat = "output_limit",
	       BAD("output limit", "not a size")),
	/* memcached's -Y. auth.h reads the file; `stats settings` says
	 * whether one is set, as "auth", and names it as memcached does. */
	OPTION("auth-file", 'Y', OPT_STRING, "FILE",
	       "require clients to authenticate: FILE holds user:password "
	       "lines (memcached's form), or a password on its first line",
	       .env = "RHKV_AUTH_FILE", AT(auth_file)),
	OPTION("no-protected-mode", 0, OPT_FLAG, NULL,
	       "allow listening beyond loopback without a password",
	       .env = "RHKV_NO_PROTECTED_MODE", AT(no_protected_mode),
	       .stat = "protected_mode", .show = show_protected_mode),
	OPTION("metrics-port", 0, OPT_INT, "PORT",
	       "serve Prometheus metrics over HTTP at /metrics; 0: off",
	       RANGE(0, 65535), .def = 0, AT(metrics_port),
	       .stat = "metrics_port", BAD("metrics port", "not in 0..65535")),
	OPTION("metrics-listen", 0, OPT_STRING, "ADDR", "address for metrics",
	       .def_str = "127.0.0.1", AT(metrics_listen),
	       .stat = "metrics_listen"),
	OPTION("metrics-hotkey-names", 0, OPT_FLAG, NULL,
	       "show hot keys' names as labels on the metrics endpoint, "
	       "which has no password; off: ranks only",
	       AT(metrics_hotkey_names), .stat = "metrics_hotkey_names"),
	OPTION("hotkeys-sample", 0, OPT_INT, "N",
	       "stats hotkeys: sample one request in N on average; 1: every "
	       "request (exact counts); 0: hot-key tracking off",
	       RANGE(0, 1 << 20), .def = 64, AT(hotkeys_sample),
	       .stat = "hotkeys_sample",
	       BAD("hot-key sample", "not in 0..1048576")),
	OPTION("hotkeys-window", 0, OPT_INT, "SECS",
	       "stats hotkeys: rates over the last SECS to 2*SECS seconds",
	       RANGE(1, 86400), .def = 10, AT(hotkeys_window),
	       .stat = "hotkeys_window",
	       BAD("hot-key window", "not in 1..86400 seconds")),
	OPTION("enable-shutdown", 'A', OPT_FLAG, NULL,
	       "let the shutdown command stop the server, as SIGTERM does",
	       AT(enable_shutdown), .stat = "shutdown_command"),
	OPTION("disable-flush-all", 'F', OPT_FLAG, NULL, "refuse flush_all",
	       AT(disable_flush_all), .stat = "flush_enabled",
	       .show = show_flush_enabled),
	OPTION("max-prefix-flushes", 0, OPT_INT, "N",
	       "prefix flushes pending at once (each until the expiry sweep "
	       "has passed the table); more are refused",
	       RANGE(1, 1 << 20), .def = CACHE_PREFIX_FLUSHES_DEFAULT,
	       AT(max_prefix_flushes), .stat = "max_prefix_flushes",
	       BAD("max prefix flushes", "not in 1..1048576")),
	OPTION("tls-port", 0, OPT_INT, "PORT",
	       "also listen for TLS on PORT (needs --tls-cert, --tls-key); "
	       "0: off",
	       RANGE(0, 65535), .def = 0, AT(tls_port), .stat = "tls_port",
	       BAD("TLS port", "not in 0..65535")),
	OPTION("tls-cert", 0, OPT_STRING, "FILE",
	       "the server's certificate chain, PEM", AT(tls_cert),
	       .stat = "ssl_chain_cert"),
	OPTION("tls-key", 0, OPT_STRING, "FILE", "its private key, PEM",
	       AT(tls_key), .stat = "ssl_key"),
	OPTION("tls-ca", 0, OPT_STRING, "FILE",
	       "CA certificates that sign client certificates, PEM", AT(tls_ca),
	       .stat = "ssl_ca_cert"),
	OPTION("tls-verify", 0, OPT_STRING, "MODE",
	       "client certificates: none, optional or require",
	       .def_str = "none", AT(tls_verify), .stat = "ssl_verify_mode"),
	OPTION("tls-min-version", 0, OPT_STRING, "V",
	       "lowest TLS version accepted: 1.2 or 1.3", .def_str = "1.2",
	       AT(tls_min_version), .stat = "ssl_min_version"),
	OPTION("tls-ciphers", 0, OPT_STRING, "LIST",
	       "TLS 1.2 cipher list (OpenSSL's syntax)", AT(tls_ciphers),
	       .stat = "ssl_ciphers"),
	OPTION("tls-ciphersuites", 0, OPT_STRING, "LIST",
	       "TLS 1.3 cipher suites (OpenSSL's syntax)", AT(tls_ciphersuites),
	       .stat = "ssl_ciphersuites"),
	OPTION("tls-handshake-timeout", 0, OPT_INT, "SECS",
	       "close a TLS connection whose handshake takes longer",
	       RANGE(1, 3600), .def = 10, AT(tls_handshake_timeout),
	       .stat = "ssl_handshake_timeout",
	       BAD("TLS handshake timeout", "not in 1..3600 seconds")),
	OPTION("tls-ktls", 0, OPT_FLAG, NULL,
	       "let the kernel encrypt TLS records where it can (kTLS)",
	       AT(tls_ktls), .stat = "ssl_ktls"),
	OPTION("tls-session-cache", 0, OPT_FLAG, NULL,
	       "also keep TLS 1.2 sessions on the server, for clients that "
	       "resume without tickets (tickets work either way)",
	       AT(tls_session_cache), .stat = "ssl_session_cache"),
	/* memcached's options beyond rhkvd's own (config_memcached.c). */
	OPTION("enable-ssl", 'Z', OPT_FLAG, NULL,
	       "the -p listeners speak TLS, but those of -l notls:ADDR "
	       "(memcached's switch; --tls-port adds TLS listeners beside "
	       "plain ones instead)",
	       AT(tls_all)),
	OPTION("extended", 'o', OPT_CUSTOM, "LIST",
	       "memcached's comma-separated extended options: see below",
	       .apply = config__extended),
	OPTION("daemon", 'd', OPT_FLAG, NULL,
	       "run in the background; returns 0 once listening, or the "
	       "start's exit code",
	       AT(daemonize)),
	OPTION("pidfile", 'P', OPT_STRING, "FILE",
	       "write the process id to FILE once listening; removed at exit",
	       AT(pid_file)),
	OPTION("enable-coredumps", 'r', OPT_FLAG, NULL,
	       "raise the core file size limit to its maximum", AT(coredumps)),
	OPTION("lock-memory", 'k', OPT_FLAG, NULL,
	       "lock all memory in RAM (mlockall); a warning if refused",
	       AT(lock_memory)),
	OPTION("listen-backlog", 'b', OPT_INT, "N",
	       "connections the kernel queues for each listener",
	       RANGE(1, 1 << 20), .def = 1024, AT(backlog),
	       .stat = "tcp_backlog",
	       BAD("listen backlog", "not in 1..1048576")),
	OPTION("protocol", 'B', OPT_CUSTOM, "NAME",
	       "memcached's protocols a connection may speak: auto (text or "
	       "binary, by its first byte), ascii or binary; rhkv's msgpack "
	       "frames in any case",
	       .def_text = "auto", .apply = config__protocol),
	OPTION("enable-sasl", 'S', OPT_FLAG, NULL,
	       "binary protocol only, with SASL PLAIN against --auth-file",
	       AT(sasl)),
	OPTION("disable-dumping", 'X', OPT_FLAG, NULL,
	       "refuse stats cachedump and lru_crawler metadump",
	       AT(disable_dumping)),
	OPTION("disable-watch", 'W', OPT_FLAG, NULL, "refuse watch",
	       AT(disable_watch)),
	OPTION("prefix-delimiter", 'D', OPT_CUSTOM, "C",
	       "stats detail: count per key prefix up to C, from the start "
	       "(default ':', counting off until stats detail on)",
	       .late = delimiter_default, .apply = config__delimiter),
	OPTION("license", 'i', OPT_CUSTOM, NULL, "print the licenses",
	       .apply = config__license),
	/* memcached's, for parts rhkvd does not have: accepted, and main.c
	 * logs a line at start saying so. */
	OPTION("slab-growth-factor", 'f', OPT_IGNORED, "F",
	       "ignored: no slab classes (items of every size share "
	       "segments)"),
	OPTION("slab-min-size", 'n', OPT_IGNORED, "BYTES",
	       "ignored: no slab classes (items of every size share "
	       "segments)"),
	OPTION("enable-largepages", 'L', OPT_IGNORED, NULL,
	       "ignored: rhkvd does not preallocate -m (transparent huge "
	       "pages apply as the kernel is set)"),
	OPTION("max-reqs-per-event", 'R', OPT_IGNORED, "N",
	       "ignored: a connection yields when its output passes "
	       "--output-limit, not after a count of requests"),
	OPTION("disable-cas", 'C', OPT_IGNORED, NULL,
	       "ignored: every item keeps its CAS value"),
	OPTION("napi-ids", 'N', OPT_IGNORED, "N",
	       "ignored: connections go to the workers in turn (or by "
	       "--reuseport)"),
	OPTION("disable-evictions", 'M', OPT_FLAG, NULL,
	       "never evict a live item: when -m is full, a write is answered "
	       "SERVER_ERROR out of memory storing object",
	       AT(disable_evictions)),
	OPTION("verbose", 'v', OPT_COUNT, NULL, "more logging (-vv: debug)",
	       AT(verbose), .stat = "verbosity"),
	OPTION("help", 'h', OPT_HELP, NULL, "this help"),
	OPTION("version", 'V', OPT_VERSION, NULL, "print the version"),
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* getopt_long's code for options[i]: its letter, or a number past them. */
static int opt_code(size_t i)
{
	return options[i].flag ? options[i].flag : 256 + (int)i;
}

/* A number into its field: int, unsigned int, uint32_t, uint64_t or size_t
 * (tests/server/test_config.c checks every option). */
static void store_num(struct config *cfg, const struct opt *o, uint64_t v)
{
	char *field = (char *)cfg + o->off;

	if (o->size == sizeof(uint32_t)) {
		uint32_t v32 = (uint32_t)v;

		memcpy(field, &v32, sizeof(v32));
	} else if (o->size == sizeof(uint64_t)) {
		memcpy(field, &v, sizeof(v));
	}
}

static uint64_t load_num(const struct config *cfg, const struct opt *o)
{
	const char *field = (const char *)cfg + o->off;
	uint32_t v32;
	uint64_t v;

	if (o->size == sizeof(uint32_t)) {
		memcpy(&v32, field, sizeof(v32));
		return v32;
	}
	memcpy(&v, field, sizeof(v));
	return v;
}

static void store_str(struct config *cfg, const struct opt *o, const char *s)
{
	memcpy((char *)cfg + o->off, &s, sizeof(s));
}

static const char *load_str(const struct config *cfg, const struct opt *o)
{
	const char *s;

	memcpy(&s, (const char *)cfg + o->off, sizeof(s));
	return s;
}

/* Parses an integer in [min, max]; base 8 for masks. */
static bool parse_long(const char *s, long min, long max, int base, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, base);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* A size with an optional k or m suffix (binary units). */
static bool parse_size(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	errno = 0;
	if (*s == '-')
		return false;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	if (*end == 'k' || *end == 'K')
		mult = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024, end++;
	if (*end || v == 0 || v > max / mult)
		return false;
	*out = v * mult;
	return true;
}

static int bad(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "rhkvd: invalid %s '%s': %s\n", opt, arg, why);
	fprintf(stderr, "try 'rhkvd --help'\n");
	return CONFIG_EXIT_USAGE;
}

int config__usage(const char *fmt, ...)
{
	va_list ap;

	fputs("rhkvd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\ntry 'rhkvd --help'\n", stderr);
	return CONFIG_EXIT_USAGE;
}

static void defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tls_wbuf_size = 16 * 1024; /* memcached's ssl_wbuf_size */
	for (size_t i = 0; i < NOPTIONS; i++) {
		const struct opt *o = &options[i];
		const char *env = o->env ? getenv(o->env) : NULL;

		if (!o->size)
			continue;
		switch (o->type) {
		case OPT_INT:
		case OPT_OCTAL:
		case OPT_SIZE:
			store_num(cfg, o, (uint64_t)o->def);
			break;
		case OPT_MIB:
			store_num(cfg, o, (uint64_t)o->def << 20);
			break;
		case OPT_STRING:
			store_str(cfg, o, env && *env ? env : o->def_str);
			break;
		case OPT_FLAG:
			/* As the Docker image reads it: 1, yes or true. */
			*(bool *)((char *)cfg + o->off) =
				env &&
				(!strcmp(env, "1") || !strcmp(env, "yes") ||
				 !strcmp(env, "true"));
			break;
		default: /* lists, flags and counts start empty */
			break;
		}
	}
}

/* Parses arg for o into cfg: 0, 1 after printing the help or the version,
 * or CONFIG_EXIT_USAGE after saying why. */
static int parse_one(struct config *cfg, const struct opt *o, const char *arg)
{
	uint64_t size;
	long v;

	switch (o->type) {
	case OPT_INT:
	case OPT_OCTAL:
	case OPT_MIB:
		if (!parse_long(arg, (long)o->min, (long)o->max,
				o->type == OPT_OCTAL ? 8 : 10, &v))
			return bad(o->what, arg, o->why);
		if (o->size)
			store_num(cfg, o,
				  (uint64_t)v << (o->type == OPT_MIB ? 20 : 0));
		return 0;
	case OPT_SIZE:
		if (!parse_size(arg, (uint64_t)o->max, &size) ||
		    size < (uint64_t)o->min)
			return bad(o->what, arg, o->why);
		store_num(cfg, o, size);
		return 0;
	case OPT_STRING:
		store_str(cfg, o, arg);
		return 0;
	case OPT_LIST:
		return config__listen(cfg, arg);
	case OPT_FLAG:
		*(bool *)((char *)cfg + o->off) = true;
		return 0;
	case OPT_COUNT:
		++*(int *)((char *)cfg + o->off);
		return 0;
	case OPT_HELP:
		config__print_help(stdout, options, NOPTIONS);
		return 1;
	case OPT_VERSION:
		printf("rhkvd %s\n", RHKV_VERSION);
		return 1;
	case OPT_CUSTOM:
		return o->apply(cfg, arg);
	case OPT_IGNORED:
	case OPT_REFUSED:
		return config__ignore_or_refuse(cfg, o, arg);
	}
	return 0;
}

int config__set(struct config *cfg, const char *name, const char *value)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (!strcmp(options[i].name, name))
			return parse_one(cfg, &options[i], value);
	return config__usage("no option --%s", name);
}

/* Whether code's option was on the command line (seen: by option). */
static bool given(const bool *seen, int code)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (opt_code(i) == code)
			return seen[i];
	return false;
}

/* What no single option says: rules across options. */
static int check_combination(const struct config *cfg)
{
	bool own_port = false;

	for (int i = 0; i < cfg->nlisten; i++)
		own_port |= cfg->listen_port[i] != 0;
	if (cfg->port == 0 && !own_port && !cfg->unix_socket &&
	    !cfg->tls_port && !cfg->udp_port) {
		fprintf(stderr, "rhkvd: -p 0 turns TCP off and neither a unix "
				"socket (-s PATH), --tls-port nor -U is given: "
				"nothing to listen on\n");
		return CONFIG_EXIT_USAGE;
	}
	/* memcached's rule and words (1.6.18, exit code 64 too). */
	if (cfg->max_item_size > cfg->memory_limit / 2) {
		fprintf(stderr,
			"rhkvd: cannot set item size limit higher than 1/2 "
			"of memory max (-I %" PRIu32 " bytes, -m %" PRIu64
			" MiB)\n",
			cfg->max_item_size, cfg->memory_limit >> 20);
		return CONFIG_EXIT_USAGE;
	}
	return 0;
}

int config_parse(struct config *cfg, int argc, char **argv)
{
	struct option longopts[NOPTIONS + 1];
	char shortopts[2 + 2 * NOPTIONS] = ":";
	bool seen[NOPTIONS] = { false };
	size_t n = 1;
	int code, rc;

	for (size_t i = 0; i < NOPTIONS; i++) {
		bool has_arg = options[i].arg != NULL;

		longopts[i] = (struct option){
			.name = options[i].name,
			.has_arg = has_arg ? required_argument : no_argument,
			.val = opt_code(i),
		};
		/* memcached's --verbose takes a value, which it ignores. */
		if (options[i].type == OPT_COUNT)
			longopts[i].has_arg = optional_argument;
		if (options[i].flag) {
			shortopts[n++] = options[i].flag;
			if (has_arg)
				shortopts[n++] = ':';
		}
	}
	longopts[NOPTIONS] = (struct option){ 0 };
	shortopts[n] = '\0';

	defaults(cfg);
	optind = 1;
	opterr = 0;
	while ((code = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
	       -1) {
		size_t i = 0;

		if (code == ':') {
			fprintf(stderr, "rhkvd: option '%s' needs a value\n",
				argv[optind - 1]);
			return CONFIG_EXIT_USAGE;
		}
		while (i < NOPTIONS && opt_code(i) != code)
			i++;
		if (i == NOPTIONS) {
			fprintf(stderr, "rhkvd: unknown option '%s'\n",
				argv[optind - 1]);
			fprintf(stderr, "try 'rhkvd --help'\n");
			return CONFIG_EXIT_USAGE;
		}
		seen[i] = true;
		rc = parse_one(cfg, &options[i], optarg);
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "rhkvd: unexpected argument '%s'\n",
			argv[optind]);
		return CONFIG_EXIT_USAGE;
	}
	for (size_t i = 0; i < NOPTIONS; i++) {
		if (options[i].type == OPT_LIST && !cfg->nlisten)
			cfg->listen[cfg->nlisten++] = options[i].def_str;
		if (options[i].late)
			options[i].late(cfg);
	}
	rc = config__memcached_rules(cfg, given(seen, 'p') || given(seen, 'l'),
				     given(seen, 'B'));
	return rc ? rc : check_combination(cfg);
}

static bool is_loopback(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcmp(addr, "localhost"))
		return true;
	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, addr, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

bool config_tls_enabled(const struct config *cfg)
{
	return cfg->tls_port || cfg->tls_all;
}

/* The TLS options make sense together (tls.c loads the files). */
static int check_tls(const struct config *cfg)
{
	const char *why = NULL;

	if (!config_tls_enabled(cfg))
		return 0;
	if (!cfg->tls_cert || !cfg->tls_key)
		why = cfg->tls_port
			      ? "--tls-port needs --tls-cert and --tls-key"
			      : "-Z needs a certificate and its key: "
				"-o ssl_chain_cert=FILE,ssl_key=FILE "
				"(--tls-cert, --tls-key)";
	else if (strcmp(cfg->tls_verify, "none") &&
		 strcmp(cfg->tls_verify, "optional") &&
		 strcmp(cfg->tls_verify, "require"))
		why = "--tls-verify is none, optional or require";
	else if (strcmp(cfg->tls_verify, "none") && !cfg->tls_ca)
		why = "--tls-verify optional or require needs --tls-ca";
	else if (strcmp(cfg->tls_min_version, "1.2") &&
		 strcmp(cfg->tls_min_version, "1.3"))
		why = "--tls-min-version is 1.2 or 1.3";
	else if (cfg->port && cfg->port == cfg->tls_port)
		why = "--tls-port must differ from --port";
	if (!why)
		return 0;
	fprintf(stderr, "rhkvd: %s\n", why);
	return CONFIG_EXIT_USAGE;
}

/* Whether a non-loopback listener of this kind may run without a
 * password: never for plain TCP; for TLS when every client must present a
 * certificate that the configured CA signed. */
static bool tls_guards_access(const struct config *cfg)
{
	return config_tls_enabled(cfg) && cfg->tls_ca &&
	       strcmp(cfg->tls_verify, "require") == 0;
}

/* Whether -l's entry i has a plain TCP listener, and a TLS one (main.c
 * starts them alike). */
static bool listens_plain(const struct config *cfg, int i)
{
	int port = cfg->listen_port[i] ? cfg->listen_port[i] : cfg->port;

	return port && (!cfg->tls_all || cfg->listen_notls[i]);
}

static bool listens_tls(const struct config *cfg, int i)
{
	int port = cfg->listen_port[i] ? cfg->listen_port[i] : cfg->port;

	return (port && cfg->tls_all && !cfg->listen_notls[i]) ||
	       (cfg->tls_port && !cfg->listen_port[i]);
}

int config_check_access(struct config *cfg)
{
	int rc;

	if ((rc = check_tls(cfg)) != 0)
		return rc;
	if (cfg->sasl && !config_has_auth(cfg))
		return config__usage(
			"-S checks SASL PLAIN against a user list: "
			"--auth-file FILE");
	/* memcached's rule too: a datagram has no connection to
	 * authenticate, so UDP would either refuse every request or let
	 * one client's authentication serve others. */
	if (cfg->udp_port && config_has_auth(cfg))
		return config__usage(
			"-U %d: UDP cannot be used with authentication "
			"(-Y/--auth-file): a datagram has no connection to "
			"authenticate (-U 0 turns UDP off)",
			cfg->udp_port);
	if (config_has_auth(cfg) || cfg->no_protected_mode)
		return 0;
	/* UDP answers anyone, and can be made to answer forged senders. */
	for (int i = 0; cfg->udp_port && i < cfg->nlisten; i++)
		if (!is_loopback(cfg->listen[i]))
			return config__usage(
				"refusing UDP (-U %d) on %s, which is not a "
				"loopback address (protected mode): UDP cannot "
				"authenticate, and answers forged senders; on "
				"a network you trust, opt out with "
				"--no-protected-mode",
				cfg->udp_port, cfg->listen[i]);
	/* Each address: a plain listener needs a password beyond loopback;
	 * a TLS one needs none when it requires client certificates. */
	for (int i = 0; i < cfg->nlisten; i++) {
		if (is_loopback(cfg->listen[i]) ||
		    (!listens_plain(cfg, i) &&
		     (!listens_tls(cfg, i) || tls_guards_access(cfg))))
			continue;
		fprintf(stderr,
			"rhkvd: refusing to listen on %s, which is not a "
			"loopback address, without a password (protected "
			"mode).\n"
			"  Set one: -Y/--auth-file FILE (or "
			"RHKV_AUTH_FILE=FILE), "
			"user:password lines or a password;\n"
			"  or serve it over TLS alone (-p 0 --tls-port) with "
			"--tls-verify require and --tls-ca;\n"
			"  or, on a network you trust, opt out with "
			"--no-protected-mode.\n",
			cfg->listen[i]);
		return CONFIG_EXIT_USAGE;
	}
	return 0;
}

bool config_has_auth(const struct config *cfg)
{
	return cfg->auth_file && *cfg->auth_file;
}

enum log_level config_log_level(int verbosity)
{
	if (verbosity >= 2)
		return LOG_DEBUG;
	return verbosity == 1 ? LOG_INFO : LOG_WARN;
}

/* What `stats settings` shows for o: a constant string, or buf. */
static const char *setting(const struct config *cfg, const struct opt *o,
			   char *buf, size_t len)
{
	const char *field = (const char *)cfg + o->off;
	const char *str;

	if (o->show)
		return o->show(cfg);
	if (!o->size && o->type != OPT_LIST) {
		snprintf(buf, len, "%lld", o->def); /* not kept */
		return buf;
	}
	switch (o->type) {
	case OPT_OCTAL:
		snprintf(buf, len, "%" PRIo64, load_num(cfg, o));
		return buf;
	case OPT_COUNT:
		snprintf(buf, len, "%d", *(const int *)field);
		return buf;
	case OPT_STRING:
		str = load_str(cfg, o);
		return str ? str : "NULL";
	case OPT_LIST:
		config__listen_text(cfg, buf, len);
		return buf;
	case OPT_FLAG:
		return *(const bool *)field ? "yes" : "no";
	default:
		snprintf(buf, len, "%" PRIu64, load_num(cfg, o));
		return buf;
	}
}

void config_each(const struct config *cfg,
		 void (*fn)(const char *name, const char *value, void *arg),
		 void *arg)
{
	char buf[256];

	for (size_t i = 0; i < NOPTIONS; i++)
		if (options[i].stat)
			fn(options[i].stat,
			   setting(cfg, &options[i], buf, sizeof(buf)), arg);
	/* Settings no option sets, under memcached's names where it has them
	 * (docs/stats.md says which of its settings are left out, and why). */
	fn("auth", config_has_auth(cfg) ? "yes" : "no", arg);
	fn("auth_enabled_ascii", config_has_auth(cfg) ? cfg->auth_file : "no",
	   arg);
	fn("auth_enabled_sasl", config_has_auth(cfg) ? "yes" : "no", arg);
	fn("cas_enabled", "yes", arg);
	fn("evictions", cfg->disable_evictions ? "off" : "on", arg);
	fn("maxconns_fast", "yes", arg);
	fn("binding_protocol", config__protocol_name(cfg), arg);
	fn("dump_enabled", cfg->disable_dumping ? "no" : "yes", arg);
	fn("hash_algorithm", "siphash13", arg);
	fn("lru_crawler", "yes", arg);
	fn("lru_segmented", "no", arg);
	fn("temp_lru", "no", arg);
	fn("track_sizes", "no", arg);
	fn("ssl_enabled", config_tls_enabled(cfg) ? "yes" : "no", arg);
	snprintf(buf, sizeof(buf), "%" PRIu32, cfg->tls_wbuf_size);
	fn("ssl_wbuf_size", buf, arg);
}
