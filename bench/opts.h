/* opts: the command line of rhkv-bench, parsed into struct bench_opts.
 * Pure: no I/O and no exit(); a bad argument gives -EINVAL and a message
 * in the caller's buffer (main prints it and exits 64, EX_USAGE). */
#ifndef RHKV_BENCH_OPTS_H
#define RHKV_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>

/* The wire protocol of --protocol. */
enum bench_protocol {
	BENCH_PROTO_TEXT,   /* memcached's text commands: get, set */
	BENCH_PROTO_BINARY, /* rhkvd's msgpack frames */
	BENCH_PROTO_META,   /* memcached's meta commands: mg, ms */
};

struct bench_opts {
	const char *host;
	const char *json_path; /* NULL: no JSON report */
	unsigned port;
	enum bench_protocol protocol;
	unsigned threads;
	unsigned conns;	   /* per thread */
	unsigned pipeline; /* requests in flight per connection */
	uint64_t rate;	   /* requests/s in all; 0: closed loop */
	uint64_t keys;
	unsigned key_size;
	unsigned value_min, value_max;
	/* --value-size lognormal:...: sizes drawn log-normal with this
	 * median (0: fixed or uniform in value_min..value_max instead) and
	 * sigma (of the size's natural log), clamped to value_min..value_max. */
	unsigned value_median;
	double value_sigma;
	double zipf_theta; /* < 0: uniform */
	unsigned set_ratio, get_ratio;
	double duration;   /* seconds; used when requests == 0 */
	uint64_t requests; /* 0: run for duration */
	int prefill;
	int miss_set;
	/* --reconnect: every request on a new connection (connect, send,
	 * read the reply, close), its latency from the connect. */
	int reconnect;
	uint64_t ttl;  /* exptime of every set, seconds (0: none) */
	uint64_t seed; /* --seed: the workers' random streams; 0: the clock */
	int tls;       /* connect with TLS */
	int tls_resume;
	const char *tls_ca;   /* NULL: the server's certificate unchecked */
	const char *tls_cert; /* client certificate, with tls_key */
	const char *tls_key;
	int help;
};

/* 0, or -EINVAL with a message in err. Resets getopt (optind). */
int bench_opts_parse(struct bench_opts *o, int argc, char **argv, char *err,
		     size_t errlen);
extern const char bench_usage[];

#endif
