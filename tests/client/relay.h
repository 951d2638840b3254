/*
 * A TCP relay for the client's tests: it listens on a port of its own and
 * passes bytes between each client and the server behind it, in pieces
 * of 1..max_chunk bytes with a pause of up to max_delay_us between
 * pieces, so that a client meets replies (and the server requests) cut at
 * every possible place and arriving slowly. One thread, every connection
 * in one poll() loop.
 */
#ifndef RHKV_TESTS_CLIENT_RELAY_H
#define RHKV_TESTS_CLIENT_RELAY_H

#include <stddef.h>

struct relay;

/* Starts a relay to 127.0.0.1:server_port; NULL on failure. seed: its
 * random cuts. */
struct relay *relay_start(int server_port, size_t max_chunk,
			  unsigned max_delay_us, unsigned seed);
int relay_port(const struct relay *r);
/* Stops the thread, closes every connection, frees r. */
void relay_stop(struct relay *r);

#endif
