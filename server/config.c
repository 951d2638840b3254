/*
 * Command-line parsing for rhkvd. Flags keep memcached's letters and
 * meanings; bad usage prints a clear message and returns exit code 64.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: rhkvd [options]\n"
	"  -p, --port=PORT            TCP port (default 11311)\n"
	"  -l, --listen=ADDR          address to listen on; repeatable\n"
	"                             (default 127.0.0.1)\n"
	"  -s, --unix-socket=PATH     also listen on a unix socket\n"
	"  -a, --unix-mask=MASK       permissions of the unix socket, octal\n"
	"                             (default 0700)\n"
	"  -t, --threads=N            worker threads (default: cores)\n"
	"  -m, --memory-limit=MIB     memory for items, MiB (default 64)\n"
	"      --conn-memory=MIB      connection buffers, all together "
	"(default\n"
	"                             1/8 of -m)\n"
	"  -c, --conn-limit=N         simultaneous connections (default 1024)\n"
	"  -I, --max-item-size=SIZE   largest value, k/m suffixes (default "
	"1m)\n"
	"  -u, --user=USER            drop privileges to USER after binding\n"
	"  -U, --udp-port=0           accepted for compatibility; no UDP\n"
	"      --idle-timeout=SECS    close connections that complete no\n"
	"                             request for SECS (default 300; 0: off)\n"
	"      --stall-timeout=SECS   close connections whose output does not\n"
	"                             drain (default 30)\n"
	"      --output-limit=SIZE    pending output before reads pause\n"
	"                             (default 1m)\n"
	"      --auth-file=FILE       require clients to authenticate with "
	"the\n"
	"                             password on FILE's first line (also\n"
	"                             RHKV_AUTH_FILE)\n"
	"      --no-protected-mode    allow listening beyond loopback without\n"
	"                             a password\n"
	"      --metrics-port=PORT    serve Prometheus metrics over HTTP at\n"
	"                             /metrics (default 0: off)\n"
	"      --metrics-listen=ADDR  address for metrics (default 127.0.0.1)\n"
	"  -v, --verbose              more logging (-vv: debug)\n"
	"  -h, --help                 this help\n"
	"  -V, --version              print the version\n";

enum {
	OPT_IDLE = 256,
	OPT_STALL,
	OPT_OUTPUT,
	OPT_METRICS,
	OPT_METRICS_LISTEN,
	OPT_CONN_MEMORY,
	OPT_AUTH_FILE,
	OPT_NO_PROTECTED,
};

static const struct option options[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "listen", required_argument, NULL, 'l' },
	{ "unix-socket", required_argument, NULL, 's' },
	{ "unix-mask", required_argument, NULL, 'a' },
	{ "threads", required_argument, NULL, 't' },
	{ "memory-limit", required_argument, NULL, 'm' },
	{ "conn-limit", required_argument, NULL, 'c' },
	{ "conn-memory", required_argument, NULL, OPT_CONN_MEMORY },
	{ "auth-file", required_argument, NULL, OPT_AUTH_FILE },
	{ "no-protected-mode", no_argument, NULL, OPT_NO_PROTECTED },
	{ "max-item-size", required_argument, NULL, 'I' },
	{ "user", required_argument, NULL, 'u' },
	{ "udp-port", required_argument, NULL, 'U' },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "stall-timeout", required_argument, NULL, OPT_STALL },
	{ "output-limit", required_argument, NULL, OPT_OUTPUT },
	{ "metrics-port", required_argument, NULL, OPT_METRICS },
	{ "metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Parses an integer in [min, max]; base 0 allows octal for masks. */
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

static void defaults(struct config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(cfg, 0, sizeof(*cfg));
	cfg->port = 11311;
	cfg->unix_mask = 0700;
	cfg->threads = cores > 0 ? (int)cores : 4;
	cfg->memory_limit = 64ull << 20;
	cfg->conn_limit = 1024;
	cfg->max_item_size = 1 << 20;
	cfg->stall_timeout = 30;
	cfg->idle_timeout = 300;
	cfg->output_hwm = 1 << 20;
	cfg->metrics_listen = "127.0.0.1";
}

int config_parse(struct config *cfg, int argc, char **argv)
{
	uint64_t size;
	long v;
	int opt;

	defaults(cfg);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:l:s:a:t:m:c:I:u:U:vhV",
				  options, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (!parse_long(optarg, 0, 65535, 10, &v))
				return bad("port", optarg, "not in 0..65535");
			cfg->port = (int)v;
			break;
		case 'l':
			if (cfg->nlisten == CONFIG_MAX_LISTEN)
				return bad("listen", optarg, "too many");
			cfg->listen[cfg->nlisten++] = optarg;
			break;
		case 's':
			cfg->unix_socket = optarg;
			break;
		case 'a':
			if (!parse_long(optarg, 0, 0777, 8, &v))
				return bad("unix mask", optarg, "not octal");
			cfg->unix_mask = (unsigned int)v;
			break;
		case 't':
			if (!parse_long(optarg, 1, 256, 10, &v))
				return bad("threads", optarg, "not in 1..256");
			cfg->threads = (int)v;
			break;
		case 'm':
			if (!parse_long(optarg, 1, 1L << 30, 10, &v))
				return bad("memory limit", optarg,
					   "not a number of MiB");
			cfg->memory_limit = (uint64_t)v << 20;
			break;
		case OPT_AUTH_FILE:
			cfg->auth_file = optarg;
			break;
		case OPT_NO_PROTECTED:
			cfg->no_protected_mode = true;
			break;
		case OPT_CONN_MEMORY:
			if (!parse_long(optarg, 1, 1L << 30, 10, &v))
				return bad("connection memory", optarg,
					   "not a number of MiB");
			cfg->conn_memory = (uint64_t)v << 20;
			break;
		case 'c':
			if (!parse_long(optarg, 1, 1 << 20, 10, &v))
				return bad("connection limit", optarg,
					   "not in 1..1048576");
			cfg->conn_limit = (int)v;
			break;
		case 'I':
			if (!parse_size(optarg, 1ull << 30, &size) ||
			    size < 1024)
				return bad("max item size", optarg,
					   "not a size from 1k to 1024m");
			cfg->max_item_size = (uint32_t)size;
			break;
		case 'u':
			cfg->user = optarg;
			break;
		case 'U':
			if (!parse_long(optarg, 0, 0, 10, &v))
				return bad("UDP port", optarg,
					   "UDP is never served; only 0");
			break;
		case OPT_IDLE:
			if (!parse_long(optarg, 0, 1L << 30, 10, &v))
				return bad("idle timeout", optarg,
					   "not seconds");
			cfg->idle_timeout = (int)v;
			break;
		case OPT_STALL:
			if (!parse_long(optarg, 1, 1L << 30, 10, &v))
				return bad("stall timeout", optarg,
					   "not seconds");
			cfg->stall_timeout = (int)v;
			break;
		case OPT_OUTPUT:
			if (!parse_size(optarg, 1ull << 30, &size))
				return bad("output limit", optarg,
					   "not a size");
			cfg->output_hwm = (size_t)size;
			break;
		case OPT_METRICS:
			if (!parse_long(optarg, 0, 65535, 10, &v))
				return bad("metrics port", optarg,
					   "not in 0..65535");
			cfg->metrics_port = (int)v;
			break;
		case OPT_METRICS_LISTEN:
			cfg->metrics_listen = optarg;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case 'V':
			printf("rhkvd %s\n", RHKV_VERSION);
			return 1;
		case ':':
			fprintf(stderr, "rhkvd: option '%s' needs a value\n",
				argv[optind - 1]);
			return CONFIG_EXIT_USAGE;
		default:
			fprintf(stderr, "rhkvd: unknown option '%s'\n",
				argv[optind - 1]);
			fprintf(stderr, "try 'rhkvd --help'\n");
			return CONFIG_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rhkvd: unexpected argument '%s'\n",
			argv[optind]);
		return CONFIG_EXIT_USAGE;
	}
	if (cfg->nlisten == 0)
		cfg->listen[cfg->nlisten++] = "127.0.0.1";
	if (!cfg->conn_memory)
		cfg->conn_memory = cfg->memory_limit / 8;
	return 0;
}

/* The password: the file's first line, without its line end. */
static int load_password(struct config *cfg)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(cfg->auth_file, "r");

	if (!f) {
		fprintf(stderr, "rhkvd: cannot read the auth file '%s': %s\n",
			cfg->auth_file, strerror(errno));
		return CONFIG_EXIT_USAGE;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	n = strcspn(buf, "\r\n");
	if (n == 0) {
		fprintf(stderr,
			"rhkvd: the auth file '%s' has no password on "
			"its first line\n",
			cfg->auth_file);
		return CONFIG_EXIT_USAGE;
	}
	if (memchr(buf, ' ', n)) {
		fprintf(stderr,
			"rhkvd: the password in '%s' has a space, which "
			"the text protocol's auth cannot send\n",
			cfg->auth_file);
		return CONFIG_EXIT_USAGE;
	}
	cfg->password = malloc(n + 1);
	if (!cfg->password)
		return CONFIG_EXIT_USAGE;
	memcpy(cfg->password, buf, n + 1);
	cfg->password[n] = '\0';
	cfg->password_len = n;
	memset(buf, 0, sizeof(buf));
	return 0;
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

int config_check_access(struct config *cfg)
{
	int rc;

	if (!cfg->auth_file)
		cfg->auth_file = getenv("RHKV_AUTH_FILE");
	if (cfg->auth_file && *cfg->auth_file && (rc = load_password(cfg)) != 0)
		return rc;
	if (cfg->password || cfg->no_protected_mode)
		return 0;
	for (int i = 0; i < cfg->nlisten; i++) {
		if (is_loopback(cfg->listen[i]))
			continue;
		fprintf(stderr,
			"rhkvd: refusing to listen on %s, which is not a "
			"loopback address, without a password (protected "
			"mode).\n"
			"  Set one: --auth-file FILE (or RHKV_AUTH_FILE=FILE), "
			"the password on its first line;\n"
			"  or, on a network you trust, opt out with "
			"--no-protected-mode.\n",
			cfg->listen[i]);
		return CONFIG_EXIT_USAGE;
	}
	return 0;
}

bool config_password_ok(const struct config *cfg, const char *given, size_t len)
{
	volatile unsigned char diff = (unsigned char)(len != cfg->password_len);

	/* Every byte of the password is compared whatever the input: the
	 * time tells neither where a guess goes wrong nor its length. */
	for (size_t i = 0; i < cfg->password_len; i++)
		diff |= (unsigned char)(cfg->password[i] ^
					(i < len ? given[i] : 0));
	return cfg->password && diff == 0;
}

void config_each(const struct config *cfg,
		 void (*fn)(const char *name, const char *value, void *arg),
		 void *arg)
{
	char buf[64];
	char listen[256] = "";

	for (int i = 0; i < cfg->nlisten; i++) {
		if (i)
			strncat(listen, ",",
				sizeof(listen) - strlen(listen) - 1);
		strncat(listen, cfg->listen[i],
			sizeof(listen) - strlen(listen) - 1);
	}
#define NUM(name, fmt, val)                           \
	do {                                          \
		snprintf(buf, sizeof(buf), fmt, val); \
		fn(name, buf, arg);                   \
	} while (0)
	NUM("maxbytes", "%" PRIu64, cfg->memory_limit);
	NUM("maxconns", "%d", cfg->conn_limit);
	NUM("conn_memory", "%" PRIu64, cfg->conn_memory);
	NUM("tcpport", "%d", cfg->port);
	NUM("udpport", "%d", 0);
	fn("inter", listen, arg);
	NUM("verbosity", "%d", cfg->verbose);
	fn("domain_socket", cfg->unix_socket ? cfg->unix_socket : "NULL", arg);
	NUM("umask", "%o", cfg->unix_mask);
	NUM("num_threads", "%d", cfg->threads);
	NUM("item_size_max", "%u", cfg->max_item_size);
	NUM("idle_timeout", "%d", cfg->idle_timeout);
	NUM("stall_timeout", "%d", cfg->stall_timeout);
	NUM("output_limit", "%zu", cfg->output_hwm);
	NUM("metrics_port", "%d", cfg->metrics_port);
	fn("metrics_listen", cfg->metrics_listen, arg);
	fn("auth", cfg->password ? "yes" : "no", arg);
	fn("protected_mode", cfg->no_protected_mode ? "no" : "yes", arg);
	fn("user", cfg->user ? cfg->user : "NULL", arg);
	fn("cas_enabled", "yes", arg);
#undef NUM
}
