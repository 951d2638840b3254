/* reply: pure, restartable parsers of one reply (memcached's text protocol
 * or meta commands, or rhkvd's binary frames) to a single-key get or a set.
 * They keep no state: call one again on the whole buffer once more bytes
 * came; it reports how many bytes the reply took. No I/O and no
 * allocation, so they can be tested on every prefix. */
#ifndef RHKV_BENCH_REPLY_H
#define RHKV_BENCH_REPLY_H

#include <stddef.h>

enum bench_reply {
	BENCH_REPLY_NEED_MORE = 0, /* incomplete: read more, call again */
	BENCH_REPLY_HIT,	   /* VALUE ... END (meta: VA ...) */
	BENCH_REPLY_MISS,	   /* END alone (meta: EN) */
	BENCH_REPLY_STORED,	   /* STORED (meta: HD) */
	BENCH_REPLY_ERROR,   /* a whole reply, but an error or unexpected */
	BENCH_REPLY_INVALID, /* unparseable: the stream is lost */
};

/* The longest line the parser waits for before giving up. */
#define BENCH_REPLY_MAX_LINE 2048

/* Parses the reply at buf[0..len) to a get (is_get) or a set. On any
 * result but NEED_MORE and INVALID, *used is the length of the reply. */
enum bench_reply bench_reply_parse(const char *buf, size_t len, int is_get,
				   size_t *used);

/*
 * The same for a meta-command reply, to "mg <key> v f" (is_get) or to
 * "ms <key> <bytes> ...": HIT for VA and its data, MISS for EN, STORED for
 * HD, ERROR for NS, EX, NF and error lines. Return flags after the status
 * code are skipped. There is no multi-key mg: one reply a command.
 */
enum bench_reply bench_reply_parse_meta(const char *buf, size_t len, int is_get,
					size_t *used);

/*
 * The same for a binary-protocol reply frame ([id, status, payload] after
 * a 4-byte length): HIT or STORED for status OK, MISS for NOT_FOUND to a
 * get, ERROR for other statuses. Reads the frame length and the status
 * only: the load generator need not decode values.
 */
enum bench_reply bench_reply_parse_binary(const char *buf, size_t len,
					  int is_get, size_t *used);

#endif
