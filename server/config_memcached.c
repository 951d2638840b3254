/*
 * memcached 1.6.18's command line, for rhkvd: the -l syntax, the -o list
 * and the options that need more than a field of struct config. The
 * options that map one to one (-p, -m, -c, -t, -I, -e, -b, -d ...) are
 * plain rows of config.c's table, under memcached's letters and long names.
 *
 * Each memcached option does one of three things:
 *   - what memcached does, through rhkvd's own option (-o idle_timeout is
 *     --idle-timeout, -o ssl_chain_cert is --tls-cert, -Z makes the -p
 *     listeners TLS, -l notls:ADDR keeps one plain);
 *   - nothing, where it tunes a part rhkvd does not have (slab classes,
 *     LRU segments, the hash table's size, extstore's knobs): accepted,
 *     and main.c logs one line at start naming it and why;
 *   - refused at start (exit code 64), where going on would break what
 *     the operator asked for (-o ext_path, TLS 1.0), with a message
 *     that names what rhkvd offers instead.
 *
 * -o is parsed as memcached parses it, with getsubopt(3)'s rules: the list
 * is split at every comma (so no value can hold one: "ssl_ciphers=A,B"
 * makes "B" a key, an error), each piece is KEY or KEY=VALUE (the value
 * runs to the comma and may hold '='), an empty piece is an unknown key,
 * a trailing comma ends the list, and a value given to a key that takes
 * none is not looked at.
 */
#include "config_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- -l: [notls:]HOST[:PORT], or [IPV6]:PORT, lists split at , and ; */

/* One entry of -l into cfg (p is inside cfg->text). */
static int listen_entry(struct config *cfg, char *p)
{
	bool notls = false;
	char *host = p, *colon, *end;
	long port = 0;

	if (!strncmp(p, "notls:", 6)) {
		notls = true;
		host = p += 6;
	}
	if (!strncmp(p, "proto[", 6) || !strncmp(p, "tag[", 4))
		return config__usage("-l %s: per-listener protocols and tags "
				     "are not supported (use -B)",
				     p);
	if (*p == '[') {
		/* [IPv6]:PORT, as RFC 3986 writes it. */
		end = strchr(p, ']');
		if (!end)
			return config__usage("-l: invalid IPv6 address '%s'",
					     p);
		*end = '\0';
		host = p + 1;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (!colon && end[1])
			return config__usage("-l: invalid address '%s]%s'", p,
					     end + 1);
	} else {
		/* One colon: HOST:PORT; more: an IPv6 address alone. */
		colon = strchr(p, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL;
	}
	if (colon) {
		*colon = '\0';
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port < 1 ||
		    port > 65535)
			return config__usage("-l: invalid port number '%s'",
					     colon + 1);
	}
	if (!*host)
		return config__usage("-l: no address in '%s'", p);
	if (!strcmp(host, "*"))
		host = "0.0.0.0"; /* memcached's "any address" */
	for (int i = 0; i < cfg->nlisten; i++)
		if (!strcmp(cfg->listen[i], host) &&
		    cfg->listen_port[i] == (int)port &&
		    cfg->listen_notls[i] == notls)
			return 0; /* given twice: memcached binds it once */
	if (cfg->nlisten == CONFIG_MAX_LISTEN)
		return config__usage("invalid listen '%s': too many", host);
	cfg->listen[cfg->nlisten] = host;
	cfg->listen_port[cfg->nlisten] = (int)port;
	cfg->listen_notls[cfg->nlisten] = notls;
	cfg->nlisten++;
	return 0;
}

/* A copy of arg in cfg->text, which lives as long as cfg: what the
 * options point to once it is split. NULL when full. */
static char *keep(struct config *cfg, const char *arg)
{
	size_t n = strlen(arg) + 1;
	char *copy = cfg->text + cfg->text_used;

	if (n > sizeof(cfg->text) - cfg->text_used)
		return NULL;
	memcpy(copy, arg, n);
	cfg->text_used += n;
	return copy;
}

int config__listen(struct config *cfg, const char *arg)
{
	char *copy = keep(cfg, arg), *save = NULL;
	int rc = 0;

	if (!copy)
		return config__usage("invalid listen '%s': too long", arg);
	for (char *p = strtok_r(copy, ",;", &save); p && !rc;
	     p = strtok_r(NULL, ",;", &save))
		rc = listen_entry(cfg, p);
	return rc;
}

void config__listen_text(const struct config *cfg, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < cfg->nlisten && at < len; i++) {
		const char *h = cfg->listen[i];
		bool v6 = strchr(h, ':') != NULL;
		int n;

		if (cfg->listen_port[i])
			n = snprintf(buf + at, len - at, "%s%s%s%s%s:%d",
				     i ? "," : "",
				     cfg->listen_notls[i] ? "notls:" : "",
				     v6 ? "[" : "", h, v6 ? "]" : "",
				     cfg->listen_port[i]);
		else
			n = snprintf(buf + at, len - at, "%s%s%s", i ? "," : "",
				     cfg->listen_notls[i] ? "notls:" : "", h);
		if (n < 0)
			break;
		at += (size_t)n;
	}
}

/* ---- notes, and the rules between options ---- */

void config__note(struct config *cfg, const char *fmt, ...)
{
	char line[CONFIG_NOTE_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (int i = 0; i < cfg->nnotes; i++)
		if (!strcmp(cfg->notes[i], line))
			return;
	if (cfg->nnotes == CONFIG_MAX_NOTES)
		snprintf(line, sizeof(line), "and more options ignored");
	else
		cfg->nnotes++;
	memcpy(cfg->notes[cfg->nnotes - 1], line, sizeof(line));
}

/* memcached's options for what rhkvd lacks, and those it refuses. */
int config__ignore_or_refuse(struct config *cfg, const struct opt *o,
			     const char *arg)
{
	if (o->type == OPT_REFUSED)
		return config__usage("-%c (--%s) %s", o->flag, o->name,
				     o->help);
	if (arg && o->def_str && !strcmp(arg, o->def_str))
		return 0; /* the value that asks for nothing */
	config__note(cfg, "-%c%s%s (--%s) %s", o->flag, arg ? " " : "",
		     arg ? arg : "", o->name, o->help);
	return 0;
}

/* memcached's rules between options, where rhkvd's defaults differ. */
int config__memcached_rules(struct config *cfg, bool tcp_given,
			    bool protocol_given)
{
	/* -s alone: the unix socket only ("disables network support", UDP
	 * too); with -p, -l or --tls-port rhkvd listens on both. */
	if (cfg->unix_socket && !tcp_given && !cfg->tls_port) {
		cfg->port = 0;
		cfg->udp_port = 0;
	}
	/* -S: SASL, which only memcached's binary protocol carries. */
	if (cfg->sasl) {
		if (protocol_given && cfg->protocol != CONFIG_PROTO_BINARY)
			return config__usage("you cannot allow the ASCII "
					     "protocol while using SASL (-S "
					     "takes -B binary)");
		cfg->protocol = CONFIG_PROTO_BINARY;
	}
	for (int i = 0; i < cfg->nlisten; i++)
		if (cfg->listen_notls[i] && !cfg->tls_all)
			return config__usage("-l notls:%s: 'notls' is valid "
					     "only when TLS is enabled (-Z)",
					     cfg->listen[i]);
	return 0;
}

/* ---- options with more than a field ---- */

int config__protocol(struct config *cfg, const char *arg)
{
	if (!strcmp(arg, "auto"))
		cfg->protocol = CONFIG_PROTO_AUTO;
	else if (!strcmp(arg, "ascii"))
		cfg->protocol = CONFIG_PROTO_ASCII;
	else if (!strcmp(arg, "binary"))
		cfg->protocol = CONFIG_PROTO_BINARY;
	else
		return config__usage("invalid value for binding protocol: %s "
				     "-- should be one of auto, binary, or "
				     "ascii",
				     arg);
	return 0;
}

const char *config__protocol_name(const struct config *cfg)
{
	static const char *const names[] = {
		[CONFIG_PROTO_AUTO] = "auto-negotiate",
		[CONFIG_PROTO_ASCII] = "ascii",
		[CONFIG_PROTO_BINARY] = "binary",
	};

	return names[cfg->protocol];
}

/* -D C: stats detail counts per prefix up to C, from the start. */
int config__delimiter(struct config *cfg, const char *arg)
{
	if (!arg[0])
		return config__usage("-D: no delimiter specified");
	cfg->detail_delim = arg[0];
	cfg->detail_at_start = true;
	return 0;
}

int config__license(struct config *cfg, const char *arg)
{
	(void)cfg;
	(void)arg;
	printf("rhkvd %s is distributed under the MIT license.\n"
	       "It links libevent (3-clause BSD), liburcu (LGPL-2.1+), "
	       "msgpack-c (Boost 1.0)\nand OpenSSL 3 (Apache 2.0), each "
	       "under its own license.\n",
	       RHKV_VERSION);
	return 1;
}

/* ---- -o ---- */

enum sub_value { SUB_NONE, SUB_NEEDS, SUB_MAY };

enum sub_do {
	SUB_SET,    /* value into rhkvd's option .to */
	SUB_HOOK,   /* .hook does it */
	SUB_SAME,   /* what rhkvd always does: nothing to do, nothing said */
	SUB_IGNORE, /* accepted, one line logged at start */
	SUB_REFUSE, /* a usage error */
};

struct subopt {
	const char *key;
	enum sub_value value;
	enum sub_do what;
	const char *arg; /* the value's name in --help */
	/* SUB_SET: rhkvd's long option; SUB_HOOK: the help's "as"; else
	 * why (SUB_IGNORE, SUB_SAME) or the message (SUB_REFUSE). */
	const char *to;
	int (*hook)(struct config *cfg, const char *value);
	/* --help prints the key once per group: set on a group's first row,
	 * which the following rows up to the next label share. */
	const char *label;
	const char *help; /* --help's text for the group, when not .to */
};

/* The crawler's switches: rhkvd's expiry sweep starts paused, as after
 * `lru_crawler disable` (items that expire are then reclaimed when met or
 * evicted, as memcached's are without its crawler). */
static int lru_crawler(struct config *cfg, const char *v)
{
	(void)v;
	cfg->sweep_off = false;
	return 0;
}

static int no_lru_crawler(struct config *cfg, const char *v)
{
	(void)v;
	cfg->sweep_off = true;
	return 0;
}

/* no_modern: memcached 1.4's defaults, of which rhkvd has the crawler's
 * (off) alone. */
static int no_modern(struct config *cfg, const char *v)
{
	cfg->sweep_off = true;
	config__note(cfg, "-o no_modern: the expiry sweep starts paused "
			  "(lru_crawler enable starts it); memcached 1.4's "
			  "slab and LRU defaults ignored, rhkvd has neither");
	(void)v;
	return 0;
}

/* read_buf_mem_limit=MB, 0 unlimited: --conn-memory, whose cap is never
 * off (0 leaves its default). */
static int read_buf_mem_limit(struct config *cfg, const char *v)
{
	if (!strcmp(v, "0")) {
		config__note(cfg, "-o read_buf_mem_limit=0 (unlimited): "
				  "connection buffers stay capped by "
				  "--conn-memory (default 1/8 of -m)");
		return 0;
	}
	return config__set(cfg, "conn-memory", v);
}

/* ssl_verify_mode: 0 none, 1 request, 2 require, 3 once (require; rhkvd
 * never renegotiates, so "once" is the same). */
static int ssl_verify_mode(struct config *cfg, const char *v)
{
	static const char *const modes[] = { "none", "optional", "require",
					     "require" };

	if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
		return config__usage("invalid ssl_verify_mode '%s': 0 (none), "
				     "1 (request), 2 (require) or 3 (once)",
				     v);
	return config__set(cfg, "tls-verify", modes[v[0] - '0']);
}

/* ssl_min_version: 0 TLS 1.0, 1 TLS 1.1, 2 TLS 1.2, 3 TLS 1.3. */
static int ssl_min_version(struct config *cfg, const char *v)
{
	if (!strcmp(v, "2") || !strcmp(v, "3"))
		return config__set(cfg, "tls-min-version",
				   v[0] == '2' ? "1.2" : "1.3");
	if (!strcmp(v, "0") || !strcmp(v, "1"))
		return config__usage("ssl_min_version=%s refused: rhkvd "
				     "speaks TLS 1.2 and 1.3 only "
				     "(ssl_min_version=2 or 3, "
				     "--tls-min-version 1.2 or 1.3)",
				     v);
	return config__usage("invalid ssl_min_version '%s': 0 to 3", v);
}

/* ssl_keyformat: OpenSSL's SSL_FILETYPE_PEM is 1, memcached's default. */
static int ssl_keyformat(struct config *cfg, const char *v)
{
	(void)cfg;
	if (strcmp(v, "1") != 0)
		return config__usage("ssl_keyformat=%s refused: rhkvd reads "
				     "PEM keys only (1); convert the key "
				     "with openssl pkey -out key.pem",
				     v);
	return 0;
}

/* ssl_wbuf_size=KiB: shown by `stats settings`; rhkvd's TLS writes go
 * through the connection's output buffer, which --output-limit bounds. */
static int ssl_wbuf_size(struct config *cfg, const char *v)
{
	char *end;
	unsigned long kib;

	errno = 0;
	kib = strtoul(v, &end, 10);
	if (errno || end == v || *end || kib > UINT32_MAX / 1024)
		return config__usage("could not parse argument to "
				     "ssl_wbuf_size '%s'",
				     v);
	cfg->tls_wbuf_size = (uint32_t)(kib * 1024);
	config__note(cfg, "-o ssl_wbuf_size ignored: TLS records are "
			  "written from the connection's output buffer "
			  "(--output-limit)");
	return 0;
}

/* sock_cookie_id=N: SO_MARK on the listening sockets, as memcached sets
 * it on Linux (a value it cannot parse leaves the mark off). */
static int sock_cookie_id(struct config *cfg, const char *v)
{
	char *end;
	unsigned long id;

	if (!v)
		return 0;
	errno = 0;
	id = strtoul(v, &end, 10);
	if (!errno && end != v && !*end && id <= UINT32_MAX)
		cfg->sock_mark = (uint32_t)id;
	return 0;
}

#define SUB(k, v, w, a, t, ...)                                               \
	{                                                                     \
		.key = (k), .value = (v), .what = (w), .arg = (a), .to = (t), \
		__VA_ARGS__                                                   \
	}

#define SLABS "ignored: no slab classes (items of every size share segments)"
#define LRU                                                           \
	"ignored: no LRU segments (rhkvd evicts with SIEVE; expired " \
	"items go to a background sweep)"
#define EXT                                                            \
	"ignored: extstore's tuning, and no ext_path (the flash tier " \
	"is not built yet)"

static const struct subopt subopts[] = {
	SUB("maxconns_fast", SUB_NONE, SUB_SAME, NULL,
	    "rhkvd's way: past -c a connection gets an error and is closed",
	    .label = "maxconns_fast"),
	SUB("no_maxconns_fast", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: past -c rhkvd always answers an error and closes",
	    .label = "no_maxconns_fast"),
	SUB("hashpower", SUB_NEEDS, SUB_IGNORE, "N",
	    "ignored: the hash table resizes itself", .label = "hashpower=N"),
	SUB("no_hashexpand", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: the hash table always resizes itself",
	    .label = "no_hashexpand"),
	SUB("tail_repair_time", SUB_NEEDS, SUB_IGNORE, "SECS",
	    "ignored: no LRU tail to repair", .label = "tail_repair_time=SECS"),
	SUB("hash_algorithm", SUB_NEEDS, SUB_IGNORE, "NAME",
	    "ignored: the hash table hashes with SipHash-1-3",
	    .label = "hash_algorithm=NAME"),
	SUB("lru_crawler", SUB_NONE, SUB_HOOK, NULL,
	    "the expiry sweep runs (the default)", .hook = lru_crawler,
	    .label = "lru_crawler"),
	SUB("no_lru_crawler", SUB_NONE, SUB_HOOK, NULL,
	    "the expiry sweep starts paused, as after lru_crawler disable",
	    .hook = no_lru_crawler, .label = "no_lru_crawler"),
	SUB("lru_crawler_sleep", SUB_NEEDS, SUB_IGNORE, "US",
	    "ignored: the expiry sweep paces itself",
	    .label = "lru_crawler_sleep, lru_crawler_tocrawl"),
	SUB("lru_crawler_tocrawl", SUB_NEEDS, SUB_IGNORE, "N",
	    "ignored: the expiry sweep paces itself"),
	SUB("read_buf_mem_limit", SUB_NEEDS, SUB_HOOK, "MIB",
	    "as --conn-memory (0, unlimited: its default)",
	    .hook = read_buf_mem_limit, .label = "read_buf_mem_limit=MIB"),
	SUB("lru_maintainer", SUB_NONE, SUB_IGNORE, NULL, LRU,
	    .label = "[no_]lru_maintainer, hot_*, warm_*, temporary_ttl"),
	SUB("no_lru_maintainer", SUB_NONE, SUB_IGNORE, NULL, LRU),
	SUB("hot_lru_pct", SUB_NEEDS, SUB_IGNORE, "PCT", LRU),
	SUB("warm_lru_pct", SUB_NEEDS, SUB_IGNORE, "PCT", LRU),
	SUB("hot_max_factor", SUB_NEEDS, SUB_IGNORE, "F", LRU),
	SUB("warm_max_factor", SUB_NEEDS, SUB_IGNORE, "F", LRU),
	SUB("temporary_ttl", SUB_NEEDS, SUB_IGNORE, "SECS", LRU),
	SUB("idle_timeout", SUB_NEEDS, SUB_SET, "SECS", "idle-timeout",
	    .label = "idle_timeout=SECS"),
	SUB("slab_chunk_max", SUB_NEEDS, SUB_IGNORE, "KIB", SLABS,
	    .label = "slab_*, [no_]slab_reassign, [no_]slab_automove, "
		     "no_chunked_items"),
	SUB("slab_sizes", SUB_NEEDS, SUB_IGNORE, "LIST", SLABS),
	SUB("slab_reassign", SUB_NONE, SUB_IGNORE, NULL, SLABS),
	SUB("no_slab_reassign", SUB_NONE, SUB_IGNORE, NULL, SLABS),
	SUB("slab_automove", SUB_MAY, SUB_IGNORE, "N", SLABS),
	SUB("no_slab_automove", SUB_NONE, SUB_IGNORE, NULL, SLABS),
	SUB("slab_automove_ratio", SUB_NEEDS, SUB_IGNORE, "F", SLABS),
	SUB("slab_automove_window", SUB_NEEDS, SUB_IGNORE, "N", SLABS),
	SUB("slab_automove_freeratio", SUB_NEEDS, SUB_IGNORE, "F", SLABS),
	SUB("no_chunked_items", SUB_NONE, SUB_IGNORE, NULL, SLABS),
	SUB("watcher_logbuf_size", SUB_NEEDS, SUB_IGNORE, "KIB",
	    "ignored: each watcher has a buffer of fixed size",
	    .label = "watcher_logbuf_size, worker_logbuf_size"),
	SUB("worker_logbuf_size", SUB_NEEDS, SUB_IGNORE, "KIB",
	    "ignored: workers write watch lines into the watchers' buffers"),
	SUB("track_sizes", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: stats sizes always answers (one class)",
	    .label = "track_sizes"),
	SUB("inline_ascii_resp", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: obsolete in memcached too",
	    .label = "[no_]inline_ascii_resp, resp_obj_mem_limit"),
	SUB("no_inline_ascii_resp", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: obsolete in memcached too"),
	SUB("resp_obj_mem_limit", SUB_MAY, SUB_IGNORE, NULL,
	    "ignored: obsolete in memcached too (read_buf_mem_limit)"),
	SUB("modern", SUB_NONE, SUB_SAME, NULL,
	    "rhkvd's way: memcached's modern defaults add nothing",
	    .label = "modern"),
	SUB("no_modern", SUB_NONE, SUB_HOOK, NULL,
	    "as no_lru_crawler; memcached 1.4's slab and LRU defaults "
	    "ignored (logged)",
	    .hook = no_modern, .label = "no_modern"),
	SUB("sock_cookie_id", SUB_MAY, SUB_HOOK, "N",
	    "SO_MARK of the listening sockets (needs CAP_NET_ADMIN)",
	    .hook = sock_cookie_id, .label = "sock_cookie_id=N"),
	/* memcached's seccomp sandbox; relaxed_privileges is its test
	 * builds' switch, which memcached's own t/ files pass. */
	SUB("drop_privileges", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: no seccomp sandbox (-u drops root)",
	    .label = "[no_]drop_privileges, relaxed_privileges"),
	SUB("no_drop_privileges", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: no seccomp sandbox (-u drops root)"),
	SUB("relaxed_privileges", SUB_NONE, SUB_IGNORE, NULL,
	    "ignored: no seccomp sandbox to relax"),
	SUB("ext_path", SUB_NEEDS, SUB_REFUSE, "FILE:SIZE",
	    "-o ext_path refused: the flash tier (extstore) is not built yet; "
	    "without ext_path the items stay in memory (-m), or in "
	    "--memory-file across restarts",
	    /* Written so that --help does not name ext_path: memcached's
	   * t/ files take a help that does for extstore built in. */
	    .label = "ext_*",
	    .help = "the flash tier (extstore): its path is refused (not "
		    "built yet), its tuning ignored"),
	SUB("ext_page_size", SUB_NEEDS, SUB_IGNORE, "MIB", EXT),
	SUB("ext_wbuf_size", SUB_NEEDS, SUB_IGNORE, "MIB", EXT),
	SUB("ext_threads", SUB_NEEDS, SUB_IGNORE, "N", EXT),
	SUB("ext_io_depth", SUB_NEEDS, SUB_IGNORE, "N", EXT),
	SUB("ext_item_size", SUB_NEEDS, SUB_IGNORE, "BYTES", EXT),
	SUB("ext_item_age", SUB_NEEDS, SUB_IGNORE, "SECS", EXT),
	SUB("ext_low_ttl", SUB_NEEDS, SUB_IGNORE, "SECS", EXT),
	SUB("ext_recache_rate", SUB_NEEDS, SUB_IGNORE, "N", EXT),
	SUB("ext_compact_under", SUB_NEEDS, SUB_IGNORE, "N", EXT),
	SUB("ext_drop_under", SUB_NEEDS, SUB_IGNORE, "N", EXT),
	SUB("ext_max_frag", SUB_NEEDS, SUB_IGNORE, "F", EXT),
	SUB("ext_max_sleep", SUB_NEEDS, SUB_IGNORE, "US", EXT),
	SUB("ext_drop_unread", SUB_NONE, SUB_IGNORE, NULL, EXT),
	SUB("ssl_chain_cert", SUB_NEEDS, SUB_SET, "FILE", "tls-cert",
	    .label = "ssl_chain_cert=FILE"),
	SUB("ssl_key", SUB_NEEDS, SUB_SET, "FILE", "tls-key",
	    .label = "ssl_key=FILE"),
	SUB("ssl_keyformat", SUB_NEEDS, SUB_HOOK, "1",
	    "PEM (1) only; others refused", .hook = ssl_keyformat,
	    .label = "ssl_keyformat=1"),
	SUB("ssl_verify_mode", SUB_NEEDS, SUB_HOOK, "N",
	    "--tls-verify: 0 none, 1 optional, 2 and 3 require",
	    .hook = ssl_verify_mode, .label = "ssl_verify_mode=N"),
	SUB("ssl_ciphers", SUB_NEEDS, SUB_SET, "LIST", "tls-ciphers",
	    .label = "ssl_ciphers=LIST"),
	SUB("ssl_ca_cert", SUB_NEEDS, SUB_SET, "FILE", "tls-ca",
	    .label = "ssl_ca_cert=FILE"),
	SUB("ssl_wbuf_size", SUB_NEEDS, SUB_HOOK, "KIB",
	    "ignored (shown in stats settings): TLS writes use the output "
	    "buffer",
	    .hook = ssl_wbuf_size, .label = "ssl_wbuf_size=KIB"),
	SUB("ssl_session_cache", SUB_NONE, SUB_SET, NULL, "tls-session-cache",
	    .label = "ssl_session_cache"),
	SUB("ssl_kernel_tls", SUB_NONE, SUB_SET, NULL, "tls-ktls",
	    .label = "ssl_kernel_tls"),
	SUB("ssl_min_version", SUB_NEEDS, SUB_HOOK, "N",
	    "--tls-min-version: 2 is 1.2, 3 is 1.3; 0 and 1 (TLS 1.0, 1.1) "
	    "refused",
	    .hook = ssl_min_version, .label = "ssl_min_version=N"),
	SUB("proxy_config", SUB_NEEDS, SUB_REFUSE, "FILE",
	    "-o proxy_config refused: rhkvd has no proxy mode (librhkv and "
	    "rhkv-cli spread keys over servers with ketama)",
	    .label = "proxy_*"),
	SUB("proxy_uring", SUB_NONE, SUB_REFUSE, NULL,
	    "-o proxy_uring refused: rhkvd has no proxy mode"),
};

#define NSUBOPTS (sizeof(subopts) / sizeof(subopts[0]))

static const struct subopt *find_subopt(const char *key, size_t n)
{
	for (size_t i = 0; i < NSUBOPTS; i++)
		if (strlen(subopts[i].key) == n &&
		    !memcmp(subopts[i].key, key, n))
			return &subopts[i];
	return NULL;
}

/* One KEY or KEY=VALUE of -o (piece is NUL-terminated, in cfg->text). */
static int extended_one(struct config *cfg, char *piece)
{
	char *eq = strchr(piece, '=');
	const char *value = NULL;
	const struct subopt *s;

	if (eq) {
		*eq = '\0';
		value = eq + 1;
	}
	s = find_subopt(piece, strlen(piece));
	if (!s)
		return config__usage("illegal suboption \"%s%s%s\" in -o",
				     piece, eq ? "=" : "", eq ? value : "");
	if (s->value == SUB_NEEDS && !value)
		return config__usage("-o %s needs a value (%s=%s)", s->key,
				     s->key, s->arg);
	switch (s->what) {
	case SUB_SET:
		return config__set(cfg, s->to,
				   s->value == SUB_NONE ? NULL : value);
	case SUB_HOOK:
		return s->hook(cfg, value);
	case SUB_SAME:
		return 0;
	case SUB_IGNORE:
		config__note(cfg, "-o %s %s", s->key, s->to);
		return 0;
	case SUB_REFUSE:
		return config__usage("%s", s->to);
	}
	return 0;
}

int config__extended(struct config *cfg, const char *arg)
{
	char *p = keep(cfg, arg);

	if (!p)
		return config__usage("-o %.40s...: too long", arg);
	/* Split at every comma, as getsubopt(3) does; the list ends at
	 * the string's end, so "a,", but not ",a", is "a" alone. */
	while (*p) {
		char *comma = strchr(p, ',');
		int rc;

		if (comma)
			*comma = '\0';
		if ((rc = extended_one(cfg, p)) != 0)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

void config__print_extended(FILE *f)
{
	char text[400];

	fputs("memcached's -o keys, comma-separated, KEY or KEY=VALUE (no "
	      "value may hold\na comma):\n",
	      f);
	for (size_t i = 0; i < NSUBOPTS; i++) {
		const struct subopt *s = &subopts[i];

		if (!s->label)
			continue;
		if (s->help) {
			config__help_line(f, s->label, s->help);
			continue;
		}
		switch (s->what) {
		case SUB_SET:
			snprintf(text, sizeof(text), "as --%s", s->to);
			break;
		case SUB_HOOK:
			snprintf(text, sizeof(text), "%s", s->to);
			break;
		case SUB_REFUSE:
			/* The message without its "-o key refused: ". */
			snprintf(text, sizeof(text), "refused: %s",
				 strstr(s->to, "refused: ") + 9);
			break;

		default:
			snprintf(text, sizeof(text), "%s", s->to);
			break;
		}
		config__help_line(f, s->label, text);
	}
}
