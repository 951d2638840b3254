/*
 * rhkvd's options (server/config.c): the defaults, every option in its long
 * and short form, the ranges, `stats settings` (config_each) and the log
 * level of a verbosity. No server is started.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/config.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static struct config cfg;

static void quiet(void)
{
	/* Usage errors are expected here: keep their messages out of the
	 * test log. */
	cr_redirect_stderr();
	unsetenv("RHKV_AUTH_FILE");
	unsetenv("RHKV_NO_PROTECTED_MODE");
}

TestSuite(config, .init = quiet, .timeout = 30);

/* config_parse on the words of argv, after "rhkvd". */
static int parse(const char *const *words)
{
	char *argv[64] = { "rhkvd" };
	int argc = 1;

	while (*words && argc < 63)
		argv[argc++] = (char *)*words++;
	argv[argc] = NULL;
	return config_parse(&cfg, argc, argv);
}

#define PARSE(...) parse((const char *const[]){ __VA_ARGS__, NULL })

Test(config, defaults)
{
	cr_assert_eq(parse((const char *const[]){ NULL }), 0);
	cr_assert_eq(cfg.port, 11311);
	cr_assert_eq(cfg.nlisten, 1);
	cr_assert_str_eq(cfg.listen[0], "127.0.0.1");
	cr_assert_null(cfg.unix_socket);
	cr_assert_eq(cfg.unix_mask, 0700);
	cr_assert_geq(cfg.threads, 1);
	cr_assert_eq(cfg.memory_limit, 64ull << 20);
	cr_assert_eq(cfg.conn_memory, 8ull << 20, "not 1/8 of -m");
	cr_assert_eq(cfg.conn_limit, 1024);
	cr_assert_eq(cfg.max_item_size, 1u << 20);
	cr_assert_null(cfg.user);
	cr_assert_eq(cfg.idle_timeout, 300);
	cr_assert_eq(cfg.stall_timeout, 30);
	cr_assert_eq(cfg.output_hwm, 1u << 20);
	cr_assert_eq(cfg.metrics_port, 0);
	cr_assert_str_eq(cfg.metrics_listen, "127.0.0.1");
	cr_assert_null(cfg.auth_file);
	cr_assert_not(cfg.no_protected_mode);
	cr_assert_eq(cfg.verbose, 0);
}

Test(config, short_options)
{
	cr_assert_eq(PARSE("-p", "1234", "-l", "::1", "-l", "10.0.0.1", "-s",
			   "/tmp/s", "-a", "0755", "-t", "3", "-m", "100", "-c",
			   "50", "-I", "2m", "-u", "nobody", "-U", "0", "-vv"),
		     0);
	cr_assert_eq(cfg.port, 1234);
	cr_assert_eq(cfg.nlisten, 2);
	cr_assert_str_eq(cfg.listen[0], "::1");
	cr_assert_str_eq(cfg.listen[1], "10.0.0.1");
	cr_assert_str_eq(cfg.unix_socket, "/tmp/s");
	cr_assert_eq(cfg.unix_mask, 0755);
	cr_assert_eq(cfg.threads, 3);
	cr_assert_eq(cfg.memory_limit, 100ull << 20);
	cr_assert_eq(cfg.conn_memory, (100ull << 20) / 8);
	cr_assert_eq(cfg.conn_limit, 50);
	cr_assert_eq(cfg.max_item_size, 2u << 20);
	cr_assert_str_eq(cfg.user, "nobody");
	cr_assert_eq(cfg.verbose, 2);
}

Test(config, long_options)
{
	cr_assert_eq(PARSE("--port=99", "--listen", "127.0.0.2",
			   "--unix-socket=/tmp/u", "--unix-mask=700",
			   "--threads=7", "--memory-limit=8", "--conn-memory=3",
			   "--conn-limit=9", "--max-item-size=64k",
			   "--user=daemon", "--udp-port=0", "--idle-timeout=0",
			   "--stall-timeout=5", "--output-limit=512k",
			   "--auth-file=/tmp/pw", "--no-protected-mode",
			   "--metrics-port=9150", "--metrics-listen=::1",
			   "--verbose"),
		     0);
	cr_assert_eq(cfg.port, 99);
	cr_assert_eq(cfg.nlisten, 1);
	cr_assert_str_eq(cfg.listen[0], "127.0.0.2");
	cr_assert_str_eq(cfg.unix_socket, "/tmp/u");
	cr_assert_eq(cfg.unix_mask, 0700);
	cr_assert_eq(cfg.threads, 7);
	cr_assert_eq(cfg.memory_limit, 8ull << 20);
	cr_assert_eq(cfg.conn_memory, 3ull << 20);
	cr_assert_eq(cfg.conn_limit, 9);
	cr_assert_eq(cfg.max_item_size, 64u << 10);
	cr_assert_str_eq(cfg.user, "daemon");
	cr_assert_eq(cfg.idle_timeout, 0);
	cr_assert_eq(cfg.stall_timeout, 5);
	cr_assert_eq(cfg.output_hwm, 512u << 10);
	cr_assert_str_eq(cfg.auth_file, "/tmp/pw");
	cr_assert(cfg.no_protected_mode);
	cr_assert_eq(cfg.metrics_port, 9150);
	cr_assert_str_eq(cfg.metrics_listen, "::1");
	cr_assert_eq(cfg.verbose, 1);
}

/* Each range bound is accepted and the value past it is a usage error
 * (with a unix socket, 4 GiB of memory and 1k items, so that no rule
 * across options gets in the way). */
Test(config, ranges)
{
	static const struct {
		const char *opt, *ok, *bad;
	} cases[] = {
		{ "-p", "65535", "65536" },
		{ "-p", "0", "-1" },
		{ "-a", "0777", "1000" },
		{ "-a", "0", "8" },
		{ "-t", "256", "257" },
		{ "-t", "1", "0" },
		{ "-m", "1073741824", "1073741825" },
		{ "-m", "1", "0" },
		{ "--conn-memory", "1", "0" },
		{ "-c", "1048576", "1048577" },
		{ "-c", "1", "0" },
		{ "-I", "1024m", "1025m" },
		{ "-I", "1k", "1023" },
		{ "--idle-timeout", "0", "-1" },
		{ "--idle-timeout", "1073741824", "1073741825" },
		{ "--stall-timeout", "1", "0" },
		{ "--output-limit", "1", "0" },
		{ "--output-limit", "1024m", "1025m" },
		{ "--metrics-port", "65535", "65536" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(PARSE("-s", "/tmp/s", "-m", "4096", "-I", "1k",
				   cases[i].opt, cases[i].ok),
			     0, "%s %s", cases[i].opt, cases[i].ok);
		cr_assert_eq(PARSE("-s", "/tmp/s", "-m", "4096", "-I", "1k",
				   cases[i].opt, cases[i].bad),
			     CONFIG_EXIT_USAGE, "%s %s", cases[i].opt,
			     cases[i].bad);
	}
}

/* Rules across options: -p 0 needs a unix socket; -I at most half of -m
 * (memcached 1.6.18's rule: "Cannot set item size limit higher than 1/2
 * of memory max.", exit code 64). */
Test(config, combinations)
{
	cr_assert_eq(PARSE("-p", "0"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-p", "0", "-s", "/tmp/s"), 0);
	cr_assert_eq(cfg.port, 0);
	cr_assert_eq(PARSE("-m", "64", "-I", "32m"), 0);
	cr_assert_eq(PARSE("-m", "64", "-I", "33m"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-m", "2", "-I", "1m"), 0);
	cr_assert_eq(PARSE("-m", "2", "-I", "4m"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-m", "1"), CONFIG_EXIT_USAGE); /* -I 1m */
	cr_assert_eq(PARSE("-m", "1", "-I", "512k"), 0);
	/* protected mode looks at TCP addresses only when TCP is on */
	cr_assert_eq(PARSE("-l", "0.0.0.0"), 0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-p", "0", "-s", "/tmp/s", "-l", "0.0.0.0"), 0);
	cr_assert_eq(config_check_access(&cfg), 0);
}

/* The TLS options go together, and protected mode lets a non-loopback
 * TLS listener run without a password only when it requires client
 * certificates from a configured CA, and no plain listener shares it. */
Test(config, tls_options_and_protected_mode)
{
	cr_assert_eq(PARSE("--tls-port", "7"), 0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("--tls-port", "7", "--tls-cert", "c", "--tls-key",
			   "k", "--tls-verify", "maybe"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("--tls-port", "7", "--tls-cert", "c", "--tls-key",
			   "k", "--tls-verify", "require"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE); /* CA */
	cr_assert_eq(PARSE("--tls-port", "7", "--tls-cert", "c", "--tls-key",
			   "k", "--tls-min-version", "1.1"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-p", "7", "--tls-port", "7", "--tls-cert", "c",
			   "--tls-key", "k"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("--tls-port", "7", "--tls-cert", "c", "--tls-key",
			   "k", "--tls-min-version", "1.3"),
		     0);
	cr_assert_eq(config_check_access(&cfg), 0);
	cr_assert_str_eq(cfg.tls_verify, "none");
	cr_assert_eq(cfg.tls_handshake_timeout, 10);
	/* Beyond loopback: TLS alone, client certificates required. */
	cr_assert_eq(PARSE("-l", "0.0.0.0", "-p", "0", "--tls-port", "7",
			   "--tls-cert", "c", "--tls-key", "k", "--tls-ca", "a",
			   "--tls-verify", "require"),
		     0);
	cr_assert_eq(config_check_access(&cfg), 0);
	cr_assert_eq(PARSE("-l", "0.0.0.0", "--tls-port", "7", "--tls-cert",
			   "c", "--tls-key", "k", "--tls-ca", "a",
			   "--tls-verify", "require"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE); /* -p */
	cr_assert_eq(PARSE("-l", "0.0.0.0", "-p", "0", "--tls-port", "7",
			   "--tls-cert", "c", "--tls-key", "k", "--tls-ca", "a",
			   "--tls-verify", "optional"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
}

/* -U: UDP alone is something to listen on; -s alone turns it off with
 * TCP; never with an auth file (memcached's rule); beyond loopback only
 * with --no-protected-mode, even where TLS guards the TCP side. */
Test(config, udp_rules)
{
	cr_assert_eq(PARSE("-p", "0", "-U", "7"), 0);
	cr_assert_eq(cfg.udp_port, 7);
	cr_assert_eq(config_check_access(&cfg), 0);
	cr_assert_eq(PARSE("-s", "/tmp/s", "-U", "7"), 0);
	cr_assert_eq(cfg.udp_port, 0);
	cr_assert_eq(PARSE("-s", "/tmp/s", "-p", "5", "-U", "7"), 0);
	cr_assert_eq(cfg.udp_port, 7);
	cr_assert_eq(PARSE("-U", "65536"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-U", "7", "-Y", "/tmp/users"), 0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-U", "0", "-Y", "/tmp/users"), 0);
	cr_assert_eq(config_check_access(&cfg), 0);
	cr_assert_eq(PARSE("-l", "0.0.0.0", "-p", "0", "-U", "7"), 0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-l", "0.0.0.0", "-p", "0", "--tls-port", "7",
			   "--tls-cert", "c", "--tls-key", "k", "--tls-ca", "a",
			   "--tls-verify", "require", "-U", "8"),
		     0);
	cr_assert_eq(config_check_access(&cfg), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-l", "0.0.0.0", "-U", "7", "--no-protected-mode"),
		     0);
	cr_assert_eq(config_check_access(&cfg), 0);
}

/* memcached's -A and -F. */
Test(config, shutdown_and_flush_all_flags)
{
	cr_assert_eq(PARSE(""), CONFIG_EXIT_USAGE); /* an argument */
	cr_assert_eq(parse((const char *const[]){ NULL }), 0);
	cr_assert_not(cfg.enable_shutdown);
	cr_assert_not(cfg.disable_flush_all);
	cr_assert_eq(PARSE("-A", "-F"), 0);
	cr_assert(cfg.enable_shutdown);
	cr_assert(cfg.disable_flush_all);
	cr_assert_eq(PARSE("--enable-shutdown", "--disable-flush-all"), 0);
	cr_assert(cfg.enable_shutdown);
	cr_assert(cfg.disable_flush_all);
}

Test(config, bad_usage)
{
	cr_assert_eq(PARSE("-p"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("--bogus"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-j"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("extra"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("--no-protected-mode=1"), CONFIG_EXIT_USAGE);
	cr_assert_eq(PARSE("-l", "a", "-l", "b", "-l", "c", "-l", "d", "-l",
			   "e", "-l", "f", "-l", "g", "-l", "h", "-l", "i",
			   "-l", "j", "-l", "k", "-l", "l", "-l", "m", "-l",
			   "n", "-l", "o", "-l", "p", "-l", "q"),
		     CONFIG_EXIT_USAGE, "a 17th -l");
}

Test(config, help_and_version_stop, .init = cr_redirect_stdout)
{
	unsetenv("RHKV_AUTH_FILE");
	cr_assert_eq(PARSE("-h"), 1);
	cr_assert_eq(PARSE("--help"), 1);
	cr_assert_eq(PARSE("-V"), 1);
	cr_assert_eq(PARSE("--version"), 1);
	fflush(stdout);
}

Test(config, version_has_the_protocol_level_first)
{
	cr_assert_eq(strncmp(RHKV_VERSION, "1.6.18-rhkv-", 12), 0, "%s",
		     RHKV_VERSION);
	cr_assert_gt(strlen(RHKV_VERSION), 12);
}

/* RHKV_AUTH_FILE names the file when --auth-file is not given. */
Test(config, auth_file_from_the_environment)
{
	setenv("RHKV_AUTH_FILE", "/tmp/env-pw", 1);
	cr_assert_eq(parse((const char *const[]){ NULL }), 0);
	cr_assert_str_eq(cfg.auth_file, "/tmp/env-pw");
	cr_assert_eq(PARSE("--auth-file", "/tmp/opt-pw"), 0);
	cr_assert_str_eq(cfg.auth_file, "/tmp/opt-pw");
	setenv("RHKV_AUTH_FILE", "", 1);
	cr_assert_eq(parse((const char *const[]){ NULL }), 0);
	cr_assert_null(cfg.auth_file);
	unsetenv("RHKV_AUTH_FILE");
}

struct settings {
	char text[2048];
};

static void collect(const char *name, const char *value, void *arg)
{
	struct settings *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s=%s\n", name, value);
}

/* The names `stats settings` has always printed, which clients read. */
Test(config, stats_settings)
{
	struct settings s = { "" };

	cr_assert_eq(PARSE("-p", "5", "-l", "127.0.0.1", "-l", "::1", "-s",
			   "/tmp/s", "-a", "0750", "-t", "3", "-m", "100", "-c",
			   "50", "-I", "2m", "--idle-timeout", "0",
			   "--stall-timeout", "5", "--output-limit", "64k",
			   "--no-protected-mode", "--metrics-port", "9",
			   "--metrics-listen", "127.0.0.2", "-vv",
			   "--conn-memory", "3"),
		     0);
	config_each(&cfg, collect, &s);
	cr_assert_str_eq(s.text, "tcpport=5\n"
				 "inter=127.0.0.1,::1\n"
				 "domain_socket=/tmp/s\n"
				 "umask=750\n"
				 "num_threads=3\n"
				 "maxbytes=104857600\n"
				 "memory_file=NULL\n"
				 "conn_memory=3145728\n"
				 "maxconns=50\n"
				 "reuseport=no\n"
				 "item_size_max=2097152\n"
				 "user=NULL\n"
				 "udpport=0\n"
				 "idle_timeout=0\n"
				 "stall_timeout=5\n"
				 "output_limit=65536\n"
				 "protected_mode=no\n"
				 "metrics_port=9\n"
				 "metrics_listen=127.0.0.2\n"
				 "metrics_hotkey_names=no\n"
				 "hotkeys_sample=64\n"
				 "hotkeys_window=10\n"
				 "shutdown_command=no\n"
				 "flush_enabled=yes\n"
				 "max_prefix_flushes=1024\n"
				 "tls_port=0\n"
				 "ssl_chain_cert=NULL\n"
				 "ssl_key=NULL\n"
				 "ssl_ca_cert=NULL\n"
				 "ssl_verify_mode=none\n"
				 "ssl_min_version=1.2\n"
				 "ssl_ciphers=NULL\n"
				 "ssl_ciphersuites=NULL\n"
				 "ssl_handshake_timeout=10\n"
				 "ssl_ktls=no\n"
				 "ssl_session_cache=no\n"
				 "tcp_backlog=1024\n"
				 "verbosity=2\n"
				 "auth=no\n"
				 "auth_enabled_ascii=no\n"
				 "auth_enabled_sasl=no\n"
				 "cas_enabled=yes\n"
				 "evictions=on\n"
				 "maxconns_fast=yes\n"
				 "binding_protocol=auto-negotiate\n"
				 "dump_enabled=yes\n"
				 "hash_algorithm=siphash13\n"
				 "lru_crawler=yes\n"
				 "lru_segmented=no\n"
				 "temp_lru=no\n"
				 "track_sizes=no\n"
				 "ssl_enabled=no\n"
				 "ssl_wbuf_size=16384\n");
}

Test(config, log_level_of_a_verbosity)
{
	cr_assert_eq(config_log_level(-1), LOG_WARN);
	cr_assert_eq(config_log_level(0), LOG_WARN);
	cr_assert_eq(config_log_level(1), LOG_INFO);
	cr_assert_eq(config_log_level(2), LOG_DEBUG);
	cr_assert_eq(config_log_level(9), LOG_DEBUG);
	log_set_level(LOG_DEBUG);
	cr_assert_eq(log_get_level(), LOG_DEBUG);
	log_set_level(config_log_level(0));
	cr_assert_eq(log_get_level(), LOG_WARN);
}
