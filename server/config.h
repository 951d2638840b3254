/*
 * rhkvd's options: defaults, command-line parsing (memcached-compatible
 * where the meaning is the same), and listing for `stats settings`, all
 * from one table of options in config.c.
 */
#ifndef RHKV_SERVER_CONFIG_H
#define RHKV_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
/* RHKV_VERSION_RHKV: meson's project version, generated at configure time
 * (configure_file in the top meson.build, into the build folder). */
#include "rhkv_version.h"

#define CONFIG_MAX_LISTEN 16
/* Room for the -l and -o values, copied to be split at their separators. */
#define CONFIG_TEXT 4096
/* Lines logged at start, one per option accepted and ignored. */
#define CONFIG_MAX_NOTES 24
#define CONFIG_NOTE_LEN	 200
/* The memcached version whose protocol rhkvd speaks. */
#define RHKV_PROTOCOL_LEVEL "1.6.18"
/* The version `version` and `stats` report: memcached's protocol level
 * first, as clients and checkers parse it, then ours. */
#define RHKV_VERSION RHKV_PROTOCOL_LEVEL "-rhkv-" RHKV_VERSION_RHKV

/* -B: which of memcached's protocols a connection may speak. */
enum config_protocol {
	CONFIG_PROTO_AUTO,   /* text or binary, by the first byte */
	CONFIG_PROTO_ASCII,  /* text only */
	CONFIG_PROTO_BINARY, /* memcached's binary protocol only */
};

struct config {
	int port;
	int udp_port; /* -U: memcached's UDP protocol (udp.h); 0: none */
	/* -l, memcached's syntax ([notls:]HOST[:PORT], lists split at ',' and
	 * ';'): per entry the host, its own port (0: -p's) and notls:. */
	const char *listen[CONFIG_MAX_LISTEN];
	int listen_port[CONFIG_MAX_LISTEN];
	bool listen_notls[CONFIG_MAX_LISTEN];
	int nlisten;
	char text[CONFIG_TEXT]; /* -l's and -o's values, split in place */
	size_t text_used;
	const char *unix_socket;
	unsigned int unix_mask;
	int threads;
	uint64_t memory_limit;	 /* bytes */
	const char *memory_file; /* the arena's file (warm restart), or NULL */
	uint64_t conn_memory; /* bytes for connection buffers, all together */
	int conn_limit;
	bool reuseport; /* a listening socket per worker (SO_REUSEPORT) */
	uint32_t max_item_size;
	int verbose;
	const char *user;
	int idle_timeout;  /* seconds, 0: off */
	int stall_timeout; /* seconds */
	size_t output_hwm; /* bytes of pending output before reads pause */
	int metrics_port;  /* Prometheus endpoint, 0: off */
	const char *metrics_listen;
	const char *auth_file;	/* -Y, --auth-file or RHKV_AUTH_FILE (auth.h) */
	bool no_protected_mode; /* may listen beyond loopback without one */
	bool enable_shutdown;	/* -A: the shutdown command stops the server */
	bool disable_flush_all; /* -F: flush_all is refused */
	int max_prefix_flushes; /* tombstones active at once */
	/* TLS (tls.h): a listener on tls_port beside the plain one. */
	int tls_port;		      /* 0: none */
	const char *tls_cert;	      /* chain, PEM */
	const char *tls_key;	      /* PEM */
	const char *tls_ca;	      /* CAs for client certificates */
	const char *tls_verify;	      /* none, optional, require */
	const char *tls_min_version;  /* 1.2, 1.3 */
	const char *tls_ciphers;      /* TLS 1.2 cipher list */
	const char *tls_ciphersuites; /* TLS 1.3 suites */
	int tls_handshake_timeout;    /* seconds */
	bool tls_ktls;		      /* kernel TLS offload */
	bool tls_session_cache;	      /* a server-side TLS 1.2 session cache */
	bool tls_all; /* -Z: the -p listeners speak TLS (but notls: ones) */
	uint32_t tls_wbuf_size; /* -o ssl_wbuf_size, shown; no effect */
	/* memcached's process and listener options. */
	bool daemonize;		/* -d */
	const char *pid_file;	/* -P */
	bool coredumps;		/* -r: raise the core file limit */
	bool lock_memory;	/* -k: mlockall */
	int backlog;		/* -b: listen(2)'s backlog */
	uint32_t sock_mark;	/* -o sock_cookie_id: SO_MARK of listeners */
	int protocol;		/* -B: enum config_protocol */
	bool sasl;		/* -S: SASL required, binary protocol */
	bool disable_dumping;	/* -X: stats cachedump, lru_crawler metadump */
	bool disable_evictions; /* -M: out of memory rather than evict */
	bool disable_watch;	/* -W: the watch command */
	bool sweep_off; /* -o no_lru_crawler: the expiry sweep starts paused */
	char detail_delim;    /* -D: stats detail's prefix delimiter (and on) */
	bool detail_at_start; /* -D given: stats detail counts from start */
	/* What was accepted and ignored: main.c logs each line at start. */
	char notes[CONFIG_MAX_NOTES][CONFIG_NOTE_LEN];
	int nnotes;
	/* `stats hotkeys`: one request in hotkeys_sample is sampled (0:
	 * tracking off), counts cover hotkeys_window to twice that seconds;
	 * the metrics endpoint names the keys only with metrics_hotkey_names. */
	uint32_t hotkeys_sample;
	int hotkeys_window;
	bool metrics_hotkey_names;
};

/* Exit code for bad usage (EX_USAGE). */
#define CONFIG_EXIT_USAGE 64

/*
 * Fills cfg from argv. Returns 0 to run, 1 when the program should exit
 * successfully (help, version printed), or CONFIG_EXIT_USAGE after
 * printing why to stderr.
 */
int config_parse(struct config *cfg, int argc, char **argv);

/*
 * Checks the TLS options and applies protected mode: listening on a
 * non-loopback address without an auth file is refused unless
 * --no-protected-mode. 0, or CONFIG_EXIT_USAGE after printing why. The
 * auth file itself is read by auth_open() (auth.h).
 */
int config_check_access(struct config *cfg);

/* Whether clients must authenticate (an auth file is named). */
bool config_has_auth(const struct config *cfg);

/* Whether a TLS context is needed: --tls-port or -Z. */
bool config_tls_enabled(const struct config *cfg);

/* The log level for a verbosity (-v counts, or the `verbosity` command):
 * 0 warnings and errors, 1 also information, 2 and more also debugging. */
enum log_level config_log_level(int verbosity);

/* Calls fn(name, value) for each setting, for `stats settings`. */
void config_each(const struct config *cfg,
		 void (*fn)(const char *name, const char *value, void *arg),
		 void *arg);

#endif
