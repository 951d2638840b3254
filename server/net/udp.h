/*
 * memcached's UDP protocol (-U PORT), for the clients and tools that still
 * use it. Each datagram carries an 8-byte frame header (request id,
 * sequence number, datagram count, reserved: 16-bit big-endian each)
 * before requests in any of memcached's protocols; a request must fit in
 * one datagram (one that says it is one of several is dropped, as
 * memcached 1.6 drops it). Each request's replies go back to the sender as
 * a message: datagrams of at most UDP_DATAGRAM_MAX bytes, each with the
 * datagram's request id, a sequence number and their count (several
 * requests in a datagram: several messages with its id, as memcached).
 *
 * Each datagram is served as if on a connection of its own: what it holds
 * runs through the same batch loop, protocols and limits as a TCP
 * connection's bytes, and nothing carries over to the next datagram (a
 * request cut off at the datagram's end is dropped unanswered). To spare
 * a connection per datagram, one connection (a session) per UDP socket is
 * reused while it is left between requests. UDP is refused with
 * authentication (config.c): a datagram has no connection to
 * authenticate.
 *
 * Each UDP socket (one per -l address) is served by one worker, chosen
 * round-robin: UDP is for occasional lossy traffic (memcached turned it off
 * by default in 1.5.6), not for throughput. The socket belongs to the
 * server (main.c opens and closes it); everything else here runs on the
 * serving worker's thread.
 */
#ifndef RHKV_SERVER_UDP_H
#define RHKV_SERVER_UDP_H

/* The frame header, and the largest datagram a reply is cut into:
 * memcached's size, under any Ethernet path's MTU. */
#define UDP_HEADER_SIZE	 8
#define UDP_DATAGRAM_MAX 1400

struct udp_port;
struct worker;

/* Starts serving the UDP sockets that fall to w; 0, or -1 when out of
 * memory. */
int udp_worker_init(struct worker *w);
/* Stops serving them (the worker is stopping): nothing more is read. */
void udp_worker_stop(struct worker *w);
/* Frees what udp_worker_init made, after the worker's connections are
 * closed. */
void udp_worker_free(struct worker *w);

#endif
