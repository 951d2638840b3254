/*
 * rhkv-cli --stat: a line per server every interval, as redis-cli --stat
 * prints one: items, memory used (what -m bounds) and its limit, open
 * connections, operations per second, the hit ratio of the gets and the
 * evictions, over rhkv's own protocol (the general and memory stats
 * groups). The rates cover the time since the server's previous line.
 */
#ifndef RHKV_CLI_STAT_H
#define RHKV_CLI_STAT_H

#include <stddef.h>
#include <stdio.h>

#include "rhkv.h"

/* One server to watch: a TCP host and port, or a unix socket path (a host
 * starting with '/'; port unused). */
struct cli_stat_server {
	char *host; /* owned */
	int port;
};

/*
 * Parses word (HOST:PORT, [IPV6]:PORT, HOST, or /PATH) into *sv, the port
 * default_port when the word names none. 0, or -1 for a malformed word
 * (an empty host, a port that is not 1 to 65535) or no memory.
 */
int cli_stat_parse_server(const char *word, int default_port,
			  struct cli_stat_server *sv);

/*
 * Watches the n servers: every interval seconds, a line per server (the
 * server's name first when n > 1), the header before the first line and
 * again every 20 lines; count lines per server, or until killed when
 * count is 0. A server that cannot be read gets a "(error) CODE: ..." line
 * and is tried again at the next interval. Returns 0, or 1 when any
 * server could not be read at some interval.
 */
int cli_stat_run(const struct cli_stat_server *sv, size_t n,
		 const struct rhkv_options *o, double interval,
		 unsigned long count, FILE *out);

#endif
