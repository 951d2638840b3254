/* rhkv-bench's argument errors: each bad command line exits 64 (EX_USAGE)
 * with a message, run as a subprocess (RHKV_BENCH names the binary);
 * --help exits 0. Also the pure parser of bench/opts on good input. */
#include "opts.h"
#include "proc.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static int run_bench(const char *a, const char *b)
{
	const char *bin = getenv("RHKV_BENCH");
	cr_assert_not_null(bin, "RHKV_BENCH is not set");
	char *argv[] = { (char *)bin, (char *)a, (char *)b, NULL };
	return proc_run(argv, 1);
}

Test(args, bad_arguments_exit_64, .timeout = 60)
{
	static const char *const bad[][2] = {
		{ "--port", "0" },
		{ "--port", "70000" },
		{ "--port", "abc" },
		{ "--threads", "0" },
		{ "--conns", "-1" },
		{ "--pipeline", "0" },
		{ "--protocol", "udp" },
		{ "--rate", "0" },
		{ "--keys", "0" },
		{ "--value-size", "0" },
		{ "--value-size", "100-10" },
		{ "--value-size", "10-" },
		{ "--value-size", "lognormal" },
		{ "--value-size", "lognormal:500" },
		{ "--value-size", "lognormal:500:50" },
		{ "--value-size", "lognormal:500:50-" },
		{ "--value-size", "lognormal:40:50-16384" },	/* below MIN */
		{ "--value-size", "lognormal:500:50-400" },	/* above MAX */
		{ "--value-size", "lognormal:500:600-50" },	/* MAX < MIN */
		{ "--value-size", "lognormal:500:0-16384" },	/* MIN 0 */
		{ "--value-size", "lognormal:500:50-2000000" }, /* > 1 MiB */
		{ "--value-size", "lognormal:500:50-16384:" },
		{ "--value-size", "lognormal:500:50-16384:0" },
		{ "--value-size", "lognormal:500:50-16384:5" },
		{ "--value-size", "lognormal:500:50-16384:x" },
		{ "--value-size", "lognormal:500:50-16384x" },
		{ "--value-size", "normal:500:50-16384" },
		{ "--seed", "0" },
		{ "--seed", "-1" },
		{ "--seed", "1x" },
		{ "--key-size", "0" },
		{ "--key-size", "251" },
		{ "--dist", "pareto" },
		{ "--dist", "zipf:" },
		{ "--dist", "zipf:x" },
		{ "--ratio", "1" },
		{ "--ratio", "0:0" },
		{ "--duration", "0" },
		{ "--duration", "1s" },
		{ "--requests", "0" },
		{ "--no-such-option", NULL },
		{ "stray", NULL },
		{ "--port", NULL },
		{ "--tls-ca", NULL },
		{ "--tls-ca", "ca.pem" },  /* without --tls */
		{ "--tls-resume", NULL },  /* without --tls */
		{ "--tls-cert", "c.pem" }, /* without --tls, --tls-key */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(run_bench(bad[i][0], bad[i][1]), 64,
			     "%s %s did not exit 64", bad[i][0],
			     bad[i][1] ? bad[i][1] : "");
	cr_expect_eq(run_bench("--help", NULL), 0);
}

static int parse(struct bench_opts *o, char *err, int argc, char **argv)
{
	return bench_opts_parse(o, argc, argv, err, 256);
}

Test(args, parser_accepts_a_full_line, .timeout = 10)
{
	char *argv[] = {
		"rhkv-bench", "--host",	      "localhost",   "--port",
		"1234",	      "--threads",    "2",	     "--conns",
		"25",	      "--pipeline",   "16",	     "--protocol",
		"text",	      "--keys",	      "1000",	     "--key-size",
		"12",	      "--value-size", "10-20",	     "--dist",
		"zipf:0.99",  "--ratio",      "1:9",	     "--requests",
		"500",	      "--prefill",    "--miss-set",  "--ttl",
		"60",	      "--json",	      "/tmp/x.json", NULL
	};
	struct bench_opts o;
	char err[256];
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cr_assert_eq(parse(&o, err, argc, argv), 0, "%s", err);
	cr_assert_str_eq(o.host, "localhost");
	cr_assert_eq(o.port, 1234);
	cr_assert_eq(o.threads, 2);
	cr_assert_eq(o.conns, 25);
	cr_assert_eq(o.pipeline, 16);
	cr_assert_eq(o.keys, 1000);
	cr_assert_eq(o.key_size, 12);
	cr_assert_eq(o.value_min, 10);
	cr_assert_eq(o.value_max, 20);
	cr_assert(fabs((o.zipf_theta) - (0.99)) <= 1e-12);
	cr_assert_eq(o.set_ratio, 1);
	cr_assert_eq(o.get_ratio, 9);
	cr_assert_eq(o.requests, 500);
	cr_assert(o.prefill && o.miss_set);
	cr_assert_eq(o.ttl, 60);
	cr_assert_eq(o.protocol, BENCH_PROTO_TEXT);
	cr_assert_str_eq(o.json_path, "/tmp/x.json");
}

Test(args, ttl_beyond_thirty_days_is_refused, .timeout = 10)
{
	/* The server would read it as a unix time, long past. */
	char *argv[] = { "rhkv-bench", "--ttl", "2592001", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 3, argv), -22);
	cr_assert_neq(err[0], '\0');
}

Test(args, key_size_too_short_for_keys, .timeout = 10)
{
	char *argv[] = { "rhkv-bench", "--keys", "100000",
			 "--key-size", "5",	 NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 5, argv), -22);
	cr_assert_neq(err[0], '\0');
}

Test(args, protocols, .timeout = 10)
{
	static const char *const names[] = { "text", "binary", "meta" };
	static const enum bench_protocol want[] = { BENCH_PROTO_TEXT,
						    BENCH_PROTO_BINARY,
						    BENCH_PROTO_META };
	for (unsigned i = 0; i < 3; i++) {
		char *argv[] = { "rhkv-bench", "--protocol", (char *)names[i],
				 NULL };
		struct bench_opts o;
		char err[256];
		cr_assert_eq(parse(&o, err, 3, argv), 0, "%s", err);
		cr_assert_eq(o.protocol, want[i], "--protocol %s", names[i]);
	}
}

Test(args, tls_off_by_default, .timeout = 10)
{
	char *argv[] = { "rhkv-bench", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 1, argv), 0, "%s", err);
	cr_assert(!o.tls && !o.tls_resume);
	cr_assert_null(o.tls_ca);
	cr_assert_null(o.tls_cert);
	cr_assert_null(o.tls_key);
}

Test(args, tls_options, .timeout = 10)
{
	char *argv[] = { "rhkv-bench",	 "--tls", "--tls-ca",  "ca.pem",
			 "--tls-cert",	 "c.pem", "--tls-key", "k.pem",
			 "--tls-resume", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 9, argv), 0, "%s", err);
	cr_assert(o.tls && o.tls_resume);
	cr_assert_str_eq(o.tls_ca, "ca.pem");
	cr_assert_str_eq(o.tls_cert, "c.pem");
	cr_assert_str_eq(o.tls_key, "k.pem");
}

Test(args, tls_certificate_needs_its_key, .timeout = 10)
{
	char *cert[] = { "rhkv-bench", "--tls", "--tls-cert", "c.pem", NULL };
	char *key[] = { "rhkv-bench", "--tls", "--tls-key", "k.pem", NULL };
	char *empty[] = { "rhkv-bench", "--tls", "--tls-ca", "", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 4, cert), -22);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(parse(&o, err, 4, key), -22);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(parse(&o, err, 4, empty), -22);
}

Test(args, value_size_forms, .timeout = 10)
{
	static const struct {
		const char *arg;
		unsigned min, max, median;
		double sigma;
	} ok[] = {
		{ "100", 100, 100, 0, 0 },
		{ "32-100", 32, 100, 0, 0 },
		{ "lognormal:500:50-16384", 50, 16384, 500, 1.0 },
		{ "lognormal:500:50-16384:1.5", 50, 16384, 500, 1.5 },
		{ "lognormal:50:50-50", 50, 50, 50, 1.0 },
		{ "lognormal:1048576:1-1048576:0.25", 1, 1048576, 1048576,
		  0.25 },
	};
	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *argv[] = { "rhkv-bench", "--value-size",
				 (char *)ok[i].arg, NULL };
		struct bench_opts o;
		char err[256];
		cr_assert_eq(parse(&o, err, 3, argv), 0, "%s: %s", ok[i].arg,
			     err);
		cr_expect_eq(o.value_min, ok[i].min, "%s", ok[i].arg);
		cr_expect_eq(o.value_max, ok[i].max, "%s", ok[i].arg);
		cr_expect_eq(o.value_median, ok[i].median, "%s", ok[i].arg);
		if (ok[i].median != 0)
			cr_expect(fabs(o.value_sigma - ok[i].sigma) <= 1e-12,
				  "%s", ok[i].arg);
	}
}

Test(args, a_later_value_size_replaces_a_lognormal_one, .timeout = 10)
{
	char *argv[] = {
		"rhkv-bench",	"--value-size", "lognormal:500:50-16384",
		"--value-size", "64",		NULL
	};
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 5, argv), 0, "%s", err);
	cr_assert_eq(o.value_median, 0);
	cr_assert_eq(o.value_min, 64);
	cr_assert_eq(o.value_max, 64);
}

Test(args, key_size_and_seed, .timeout = 10)
{
	char *argv[] = { "rhkv-bench", "--keys", "1000000", "--key-size",
			 "10",	       "--seed", "42",	    NULL };
	char *dflt[] = { "rhkv-bench", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 7, argv), 0, "%s", err);
	cr_assert_eq(o.key_size, 10);
	cr_assert_eq(o.seed, 42);
	cr_assert_eq(parse(&o, err, 1, dflt), 0, "%s", err);
	cr_assert_eq(o.seed, 0, "no --seed: seeded from the clock");
	cr_assert_eq(o.key_size, 16);
}

Test(args, reconnect_takes_neither_pipeline_nor_rate, .timeout = 10)
{
	char *plain[] = { "rhkv-bench", "--reconnect", NULL };
	char *piped[] = { "rhkv-bench", "--reconnect", "--pipeline", "2",
			  NULL };
	char *rated[] = { "rhkv-bench", "--rate", "100", "--reconnect", NULL };
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, 2, plain), 0, "%s", err);
	cr_assert(o.reconnect);
	cr_assert_eq(parse(&o, err, 4, piped), -22);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(parse(&o, err, 4, rated), -22);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(parse(&o, err, 1, plain), 0, "%s", err);
	cr_assert(!o.reconnect);
}
