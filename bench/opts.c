/* opts: parsing of rhkv-bench's options with getopt_long, each value range
 * checked, then the checks that involve several options. */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char bench_usage[] =
	"usage: rhkv-bench [options]\n"
	"  --host H            server address (127.0.0.1)\n"
	"  --port P            server port (11311)\n"
	"  --threads N         load threads (1)\n"
	"  --conns N           connections per thread (10)\n"
	"  --pipeline N        requests in flight per connection, closed\n"
	"                      loop (1)\n"
	"  --protocol P        text (memcached's), meta (memcached's meta\n"
	"                      commands, mg and ms) or binary (rhkvd's\n"
	"                      msgpack frames) (text)\n"
	"  --rate N            open loop: N requests/s in all, latency from\n"
	"                      the scheduled time (default: closed loop)\n"
	"  --keys N            key space (100000)\n"
	"  --key-size N        key length in bytes (16)\n"
	"  --value-size N|A-B  value length, fixed or uniform in A..B (32)\n"
	"  --value-size lognormal:MEDIAN:MIN-MAX[:SIGMA]\n"
	"                      log-normal lengths with that median, clamped\n"
	"                      to MIN..MAX; SIGMA, of ln(length), 1.0 by\n"
	"                      default: lognormal:500:50-16384 gives 95% in\n"
	"                      70 B..3.5 KiB, a mean of about 820 B\n"
	"  --dist uniform|zipf:THETA  key distribution (uniform); zipf keeps\n"
	"                      an 8-byte table entry per key\n"
	"  --ratio SET:GET     request mix (1:9)\n"
	"  --duration S        seconds to run (10)\n"
	"  --requests N        stop after N requests instead\n"
	"  --prefill           set every key once before the run\n"
	"  --miss-set          set a key after a get misses it\n"
	"  --reconnect         a connection storm: each request on a new\n"
	"                      connection (connect, send, read the reply,\n"
	"                      close), latency from the connect, so ops/s\n"
	"                      is connections/s; --conns of them at once per\n"
	"                      thread; not with --pipeline or --rate\n"
	"  --ttl S             exptime of every set, in seconds (0: none)\n"
	"  --seed N            seed the random keys, mix and lengths (N >= 1;\n"
	"                      default: the clock), so that a run draws the\n"
	"                      same per thread again\n"
	"  --json FILE         write the results as JSON\n"
	"  --tls               connect with TLS; the server's certificate\n"
	"                      is not checked unless --tls-ca is given\n"
	"  --tls-ca FILE       verify the server against these CA "
	"certificates\n"
	"                      (PEM) and --host\n"
	"  --tls-cert FILE     client certificate (PEM), with --tls-key\n"
	"  --tls-key FILE      its private key (PEM)\n"
	"  --tls-resume        one full handshake before the run; every\n"
	"                      connection then resumes that session\n";

enum {
	O_HOST = 256,
	O_PORT,
	O_THREADS,
	O_CONNS,
	O_PIPELINE,
	O_PROTOCOL,
	O_RATE,
	O_KEYS,
	O_KEY_SIZE,
	O_VALUE_SIZE,
	O_DIST,
	O_RATIO,
	O_DURATION,
	O_REQUESTS,
	O_PREFILL,
	O_MISS_SET,
	O_RECONNECT,
	O_TTL,
	O_SEED,
	O_JSON,
	O_TLS,
	O_TLS_CA,
	O_TLS_CERT,
	O_TLS_KEY,
	O_TLS_RESUME,
	O_HELP,
};

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, O_HOST },
	{ "port", required_argument, NULL, O_PORT },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "conns", required_argument, NULL, O_CONNS },
	{ "pipeline", required_argument, NULL, O_PIPELINE },
	{ "protocol", required_argument, NULL, O_PROTOCOL },
	{ "rate", required_argument, NULL, O_RATE },
	{ "keys", required_argument, NULL, O_KEYS },
	{ "key-size", required_argument, NULL, O_KEY_SIZE },
	{ "value-size", required_argument, NULL, O_VALUE_SIZE },
	{ "dist", required_argument, NULL, O_DIST },
	{ "ratio", required_argument, NULL, O_RATIO },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "requests", required_argument, NULL, O_REQUESTS },
	{ "prefill", no_argument, NULL, O_PREFILL },
	{ "miss-set", no_argument, NULL, O_MISS_SET },
	{ "reconnect", no_argument, NULL, O_RECONNECT },
	{ "ttl", required_argument, NULL, O_TTL },
	{ "seed", required_argument, NULL, O_SEED },
	{ "json", required_argument, NULL, O_JSON },
	{ "tls", no_argument, NULL, O_TLS },
	{ "tls-ca", required_argument, NULL, O_TLS_CA },
	{ "tls-cert", required_argument, NULL, O_TLS_CERT },
	{ "tls-key", required_argument, NULL, O_TLS_KEY },
	{ "tls-resume", no_argument, NULL, O_TLS_RESUME },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

/* A whole decimal number in [lo, hi], and *end at its end when end given. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
		     const char **end)
{
	char *e;
	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno != 0 || v < lo || v > hi)
		return -EINVAL;
	if (end != NULL)
		*end = e;
	else if (*e != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t v;
	int rc = parse_u64(s, lo, hi, &v, NULL);
	if (rc == 0)
		*out = (unsigned)v;
	return rc;
}

/*
 * lognormal:MEDIAN:MIN-MAX[:SIGMA]. Sigma 1.0 by default: with 500:50-16384
 * (the mixed sizes of a web cache, mostly small values and a few large
 * ones) 95% of the lengths fall in 70 B..3.5 KiB, about 1% is clamped to
 * 50 B and 0.03% to 16 KiB, and the mean is about 820 B.
 */
static int parse_lognormal(struct bench_opts *o, const char *s)
{
	uint64_t med, a, b;
	const char *e;
	double sigma = 1.0;
	if (parse_u64(s, 1, 1u << 20, &med, &e) != 0 || *e != ':')
		return -EINVAL;
	if (parse_u64(e + 1, 1, 1u << 20, &a, &e) != 0 || *e != '-')
		return -EINVAL;
	if (parse_u64(e + 1, a, 1u << 20, &b, &e) != 0)
		return -EINVAL;
	if (*e == ':') {
		char *end;
		if (e[1] == '\0')
			return -EINVAL;
		sigma = strtod(e + 1, &end);
		if (*end != '\0' || !(sigma > 0 && sigma <= 4))
			return -EINVAL;
	} else if (*e != '\0') {
		return -EINVAL;
	}
	if (med < a || med > b)
		return -EINVAL;
	o->value_min = (unsigned)a;
	o->value_max = (unsigned)b;
	o->value_median = (unsigned)med;
	o->value_sigma = sigma;
	return 0;
}

static int parse_value_size(struct bench_opts *o, const char *s)
{
	uint64_t a, b;
	const char *e;
	o->value_median = 0;
	if (strncmp(s, "lognormal:", 10) == 0)
		return parse_lognormal(o, s + 10);
	if (parse_u64(s, 1, 1u << 20, &a, &e) != 0)
		return -EINVAL;
	b = a;
	if (*e == '-') {
		if (parse_u64(e + 1, a, 1u << 20, &b, NULL) != 0)
			return -EINVAL;
	} else if (*e != '\0') {
		return -EINVAL;
	}
	o->value_min = (unsigned)a;
	o->value_max = (unsigned)b;
	return 0;
}

static int parse_dist(struct bench_opts *o, const char *s)
{
	if (strcmp(s, "uniform") == 0) {
		o->zipf_theta = -1;
		return 0;
	}
	if (strncmp(s, "zipf:", 5) != 0 || s[5] == '\0')
		return -EINVAL;
	char *e;
	double t = strtod(s + 5, &e);
	if (*e != '\0' || !(t >= 0 && t <= 5))
		return -EINVAL;
	o->zipf_theta = t;
	return 0;
}

static int parse_ratio(struct bench_opts *o, const char *s)
{
	uint64_t a, b;
	const char *e;
	if (parse_u64(s, 0, 1000000, &a, &e) != 0 || *e != ':')
		return -EINVAL;
	if (parse_u64(e + 1, 0, 1000000, &b, NULL) != 0 || a + b == 0)
		return -EINVAL;
	o->set_ratio = (unsigned)a;
	o->get_ratio = (unsigned)b;
	return 0;
}

static int parse_duration(struct bench_opts *o, const char *s)
{
	char *e;
	double d = strtod(s, &e);
	if (e == s || *e != '\0' || !(d > 0 && d <= 86400))
		return -EINVAL;
	o->duration = d;
	return 0;
}

/* A host or file name: anything but empty. */
static int parse_name(const char **out, const char *s)
{
	*out = s;
	return s[0] != '\0' ? 0 : -EINVAL;
}

static void set_defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->port = 11311;
	o->threads = 1;
	o->conns = 10;
	o->pipeline = 1;
	o->keys = 100000;
	o->key_size = 16;
	o->value_min = o->value_max = 32;
	o->zipf_theta = -1;
	o->set_ratio = 1;
	o->get_ratio = 9;
	o->duration = 10;
}

/* One option's value; 0 or -EINVAL. */
static int parse_one(struct bench_opts *o, int c, const char *a)
{
	switch (c) {
	case O_HOST:
		return parse_name(&o->host, a);
	case O_PORT:
		return parse_uint(a, 1, 65535, &o->port);
	case O_THREADS:
		return parse_uint(a, 1, 256, &o->threads);
	case O_CONNS:
		return parse_uint(a, 1, 10000, &o->conns);
	case O_PIPELINE:
		return parse_uint(a, 1, 4096, &o->pipeline);
	case O_PROTOCOL:
		if (strcmp(a, "text") == 0)
			o->protocol = BENCH_PROTO_TEXT;
		else if (strcmp(a, "binary") == 0)
			o->protocol = BENCH_PROTO_BINARY;
		else if (strcmp(a, "meta") == 0)
			o->protocol = BENCH_PROTO_META;
		else
			return -EINVAL;
		return 0;
	case O_RATE:
		return parse_u64(a, 1, 100000000, &o->rate, NULL);
	case O_KEYS:
		return parse_u64(a, 1, 1ull << 32, &o->keys, NULL);
	case O_KEY_SIZE:
		return parse_uint(a, 1, 250, &o->key_size);
	case O_VALUE_SIZE:
		return parse_value_size(o, a);
	case O_DIST:
		return parse_dist(o, a);
	case O_RATIO:
		return parse_ratio(o, a);
	case O_DURATION:
		return parse_duration(o, a);
	case O_REQUESTS:
		return parse_u64(a, 1, UINT64_MAX / 2, &o->requests, NULL);
	case O_TTL:
		/* memcached reads more than 30 days as a unix time. */
		return parse_u64(a, 0, 60 * 60 * 24 * 30, &o->ttl, NULL);
	case O_SEED:
		return parse_u64(a, 1, UINT64_MAX, &o->seed, NULL);
	case O_JSON:
		return parse_name(&o->json_path, a);
	case O_TLS_CA:
		return parse_name(&o->tls_ca, a);
	case O_TLS_CERT:
		return parse_name(&o->tls_cert, a);
	case O_TLS_KEY:
		return parse_name(&o->tls_key, a);
	default:
		return -EINVAL;
	}
}

static int check_all(const struct bench_opts *o, char *err, size_t errlen)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, o->keys - 1);
	if ((unsigned)n + 1 > o->key_size) {
		snprintf(err, errlen,
			 "--key-size %u is too short for %" PRIu64
			 " keys (needs %d)",
			 o->key_size, o->keys, n + 1);
		return -EINVAL;
	}
	/* A TLS setting without --tls would silently measure plain TCP. */
	if (!o->tls && (o->tls_ca != NULL || o->tls_cert != NULL ||
			o->tls_key != NULL || o->tls_resume)) {
		snprintf(err, errlen,
			 "--tls-ca, --tls-cert, --tls-key and "
			 "--tls-resume need --tls");
		return -EINVAL;
	}
	/* One request per connection: a second one in flight, or a
	 * schedule, would say nothing about the connection's cost. */
	if (o->reconnect && (o->pipeline > 1 || o->rate != 0)) {
		snprintf(err, errlen,
			 "--reconnect takes neither --pipeline "
			 "nor --rate");
		return -EINVAL;
	}
	if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	return 0;
}

int bench_opts_parse(struct bench_opts *o, int argc, char **argv, char *err,
		     size_t errlen)
{
	set_defaults(o);
	err[0] = '\0';
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = 0;
		int c = getopt_long(argc, argv, "", long_opts, &idx);
		if (c == -1)
			break;
		if (c == O_HELP) {
			o->help = 1;
			return 0;
		}
		if (c == O_PREFILL) {
			o->prefill = 1;
			continue;
		}
		if (c == O_MISS_SET || c == O_RECONNECT) {
			*(c == O_MISS_SET ? &o->miss_set : &o->reconnect) = 1;
			continue;
		}
		if (c == O_TLS || c == O_TLS_RESUME) {
			*(c == O_TLS ? &o->tls : &o->tls_resume) = 1;
			continue;
		}
		if (c == '?' || c == ':') {
			snprintf(err, errlen,
				 "unknown option or missing value: %s",
				 argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(o, c, optarg) != 0) {
			snprintf(err, errlen, "invalid value for --%s: '%s'",
				 long_opts[idx].name, optarg);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument: %s", argv[optind]);
		return -EINVAL;
	}
	return check_all(o, err, errlen);
}
