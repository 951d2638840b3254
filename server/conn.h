/*
 * One client connection: its input buffer, output buffer, and lifecycle,
 * owned by one worker thread. Requests in the input are executed in one
 * pass and their replies written with one write; partial requests wait.
 */
#ifndef RHKV_SERVER_CONN_H
#define RHKV_SERVER_CONN_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/binary.h"

struct worker;

enum conn_proto {
	CONN_UNKNOWN, /* until the first byte */
	CONN_TEXT,
	CONN_BINARY,
};

/* A binary connection's reply buffer and decoders (two: one frame is
 * decoded ahead of the one executing), reused from frame to frame. */
struct conn_binary {
	msgpack_sbuffer sb;
	struct proto_bin_decoder dec[2];
};

struct conn {
	struct worker *w;
	int fd;
	struct event *rev, *wev;
	char *rbuf;
	size_t rlen, rcap;
	struct evbuffer *out;
	enum conn_proto proto;
	struct conn_binary *bin; /* CONN_BINARY only */
	uint64_t swallow;	 /* bytes of a too-large value to discard */
	bool close_when_done;	 /* quit, line too long, shutdown */
	bool read_paused;	 /* backpressure */
	bool lingering;		 /* replies all sent, waiting for the EOF */
	int64_t linger_since;	 /* seconds */
	bool peer_eof;		 /* read 0: answer what is here, then close */
	bool authed;		 /* no password set, or auth succeeded */
	int64_t last_active;	 /* seconds: last byte read or written */
	int64_t stalled_since;	 /* seconds: output pending, none written */
	size_t accounted;	 /* buffer bytes counted in srv->conn_bytes */
	/* The in-memory transport (fd -1, no events): input is taken from
	 * mem_in, output moved to mem_out (the feeder's buffer, set only
	 * during conn_memory_feed). For tests and fuzzing. */
	struct evbuffer *mem_in, *mem_out;
	bool mem_eof; /* the peer closed its side */
	struct conn *prev, *next;
};

/* Takes over fd; NULL (fd closed) when out of memory. */
struct conn *conn_new(struct worker *w, int fd);
/*
 * A connection over the in-memory transport: the whole state machine
 * (parsing, both protocols, auth, limits, backpressure) without a socket.
 * conn_memory_feed() gives it bytes as if they had been read, runs it,
 * and moves its replies to `replies`; it returns false once the
 * connection has closed (it is then freed). A NULL or empty feed with
 * eof set is the peer closing its side.
 */
struct conn *conn_new_memory(struct worker *w);
bool conn_memory_feed(struct conn *c, const void *p, size_t n, bool eof,
		      struct evbuffer *replies);

/* Closes now, dropping pending output. */
void conn_close(struct conn *c);
/* Stops reading; closes once the pending output is written. */
void conn_shutdown(struct conn *c);
/* Once a second: idle and stall timeouts. */
void conn_tick(struct conn *c, int64_t now);

/* Executes one parsed request (cmd.c); replies go to c->out. */
struct proto_req;
void cmd_execute(struct conn *c, const char *buf, const struct proto_req *req);

/* Before auth, requests are held to this (Redis does the same before
 * login): a frame body, a value, and the input buffer. */
#define CONN_PREAUTH_LIMIT 4096

/* Executes the complete binary frames in buf[0..n) (cmd_binary.c);
 * returns the bytes used. */
size_t cmd_binary_process(struct conn *c, const char *buf, size_t n);

/* Which latency histogram (latency.h) a request's time goes to. */
unsigned int cmd_latency_class(const struct proto_req *req);

#endif
