/*
 * The memcached text protocol, as a pure codec: a restartable parser over a
 * byte buffer and a reply writer, with no sockets and no state between
 * calls, so that it can be tested on every prefix and fuzzed. The server
 * owns the buffer; a parsed request refers to it by offsets, never pointers.
 *
 * Replies and error strings are byte for byte those of memcached 1.6.
 */
#ifndef RHKV_PROTO_TEXT_H
#define RHKV_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_KEY_MAX  250  /* bytes, as memcached */
#define PROTO_LINE_MAX 2048 /* a command line, without its data block */
/* get/gets/gat/gats lines with many keys: their length limit is
 * proto_limits.max_get_line, never below PROTO_GET_LINE_MIN. */
#define PROTO_GET_LINE_MIN	 65536
#define PROTO_GET_LINE_DEFAULT	 (1024u * 1024u) /* max_get_line 0 */
#define PROTO_SCAN_COUNT_DEFAULT 10
#define PROTO_SCAN_COUNT_MAX	 1000
/* The largest <bytes> memcached accepts on a storage line (INT_MAX - 2). */
#define PROTO_BYTES_MAX 2147483645u
/* The item size limit used when proto_text_parse() is given no limits. */
#define PROTO_VALUE_MAX_DEFAULT (1024u * 1024u)

enum proto_cmd {
	PROTO_CMD_GET,
	PROTO_CMD_GETS,
	PROTO_CMD_GAT,
	PROTO_CMD_GATS,
	PROTO_CMD_SET,
	PROTO_CMD_ADD,
	PROTO_CMD_REPLACE,
	PROTO_CMD_APPEND,
	PROTO_CMD_PREPEND,
	PROTO_CMD_CAS,
	PROTO_CMD_DELETE,
	PROTO_CMD_INCR,
	PROTO_CMD_DECR,
	PROTO_CMD_TOUCH,
	PROTO_CMD_FLUSH_ALL,
	PROTO_CMD_VERSION,
	PROTO_CMD_VERBOSITY,
	PROTO_CMD_QUIT,
	PROTO_CMD_STATS,
	PROTO_CMD_SCAN,
	PROTO_CMD_CACHE_MEMLIMIT,
	PROTO_CMD_AUTH,
	PROTO_CMD_LRU_CRAWLER,
	PROTO_CMD_WATCH,
	PROTO_CMD_SHUTDOWN,
	PROTO_CMD_REFRESH_CERTS, /* [noreply]: reload the TLS certificate */
	PROTO_CMD_FLUSH_PREFIX,	 /* <prefix> [noreply]: key holds it */
	/* memcached's slab tuning: automove <level> [noreply], automove
	 * ratio <r>, reassign <src> <dst>; arg holds the sub-command */
	PROTO_CMD_SLABS,
};

/* What `watch` streams (req->flags): memcached's words for them. */
#define PROTO_WATCH_FETCHERS  1u /* item_get */
#define PROTO_WATCH_MUTATIONS 2u /* item_store */
#define PROTO_WATCH_EVICTIONS 4u /* eviction */

enum proto_status {
	/* A complete request; consume req->len bytes. */
	PROTO_OK,
	/* No complete request yet: call again with more bytes. */
	PROTO_NEED_MORE,
	/* Unknown command, or a known one with a wrong number of tokens:
	 * reply "ERROR\r\n", consume req->len bytes (the line only: a
	 * storage command's data block is then parsed as commands). Silent
	 * when req->noreply (only cache_memlimit's bad number and slabs
	 * automove set it). */
	PROTO_ERROR,
	/* Reply "CLIENT_ERROR <req->error>\r\n", consume req->len bytes:
	 * the line only, except "bad data chunk" (line, <bytes> + 2). */
	PROTO_CLIENT_ERROR,
	/*
	 * A storage command whose value exceeds the item size limit: reply
	 * "SERVER_ERROR object too large for cache\r\n", consume req->len
	 * bytes (the line) and then discard req->swallow more bytes (the
	 * value and its "\r\n", which may not have arrived yet). The key is
	 * parsed: a set of that key removes the old item, as memcached does.
	 */
	PROTO_TOO_LARGE,
	/* A request refused with a reply of its own: reply req->error as
	 * it is, with "\r\n" and no prefix, unless req->noreply; consume
	 * req->len bytes. (cache_memlimit's MEMLIMIT_... answers.) */
	PROTO_REFUSED,
	/* The line exceeds its limit: reply "CLIENT_ERROR line too long\r\n"
	 * and close the connection. */
	PROTO_LINE_TOO_LONG,
	/*
	 * An HTTP request line (an unknown command whose last token starts
	 * with "HTTP/", e.g. "GET / HTTP/1.1"): close the connection without
	 * a reply, as memcached does, so that a browser cannot smuggle
	 * commands in a request body. req->len is the line.
	 */
	PROTO_CLOSE,
	/* A meta command (a first token of "m" and one byte): parse it with
	 * proto_meta_parse() (proto/meta.h). */
	PROTO_META,
};

/* Where a key lies in the parsed buffer. */
struct proto_span {
	uint32_t off;
	uint32_t len;
};

struct proto_req {
	enum proto_cmd cmd;
	size_t len; /* bytes of the request: line and data block */
	/* storage, delete, incr/decr, touch, flush_all, verbosity; also set
	 * with PROTO_CLIENT_ERROR and PROTO_TOO_LARGE, whose reply memcached
	 * then suppresses too. */
	bool noreply;
	struct proto_span key; /* first (or only) key */
	/* get/gets/gat/gats: all keys lie in [key.off, keys_end), separated
	 * by spaces; iterate with proto_text_next_key(). gat/gats may have
	 * no key at all ("gat 0": key.len == 0, memcached replies "END").
	 * A key over PROTO_KEY_MAX bytes makes the request
	 * PROTO_CLIENT_ERROR, with key and keys_end left on the keys before
	 * it (key.len == 0 when there are none): memcached fetches (and gat
	 * touches) those before it fails, and a caller may do the same. */
	uint32_t keys_end;
	uint32_t flags;	       /* storage; watch: PROTO_WATCH_* */
	int64_t exptime;       /* storage, touch, gat/gats (as sent) */
	uint32_t nbytes;       /* storage: value length */
	uint32_t value_off;    /* storage: value offset in the buffer */
	uint64_t cas;	       /* cas */
	uint64_t delta;	       /* incr/decr */
	int64_t delay;	       /* flush_all; 0 when absent */
	uint32_t verbosity;    /* verbosity */
	uint32_t memlimit;     /* cache_memlimit: MiB, 8..1000000000 */
	struct proto_span arg; /* stats: the sub-command ("" when none);
				  auth: the password (key: the user name,
				  len 0 when none); lru_crawler: the
				  sub-command (metadump, crawl);
				  shutdown: the rest of the line ("" when
				  none) */
	/* stats, lru_crawler: what follows the sub-command, from its next
	 * token to the end of the last one ("" when none), e.g. "on" in
	 * "stats detail on", "all" in "lru_crawler metadump all". */
	struct proto_span args;
	uint64_t cursor;	    /* scan */
	int32_t slab_src, slab_dst; /* slabs reassign: the classes */
	uint32_t count;		    /* scan: 1..PROTO_SCAN_COUNT_MAX */
	bool has_match;		    /* scan */
	struct proto_span match;    /* scan: the glob */
	const char *error;	    /* PROTO_CLIENT_ERROR: the message */
	uint64_t swallow;	    /* PROTO_TOO_LARGE: bytes to discard */
	/* PROTO_NEED_MORE of a storage command whose line is whole and
	 * valid: only its data block is missing. Every field is set as for
	 * PROTO_OK, len being the whole request's (line, data, "\r\n"), so
	 * a caller may receive the data block elsewhere. */
	bool data_pending;
	/* PROTO_NEED_MORE before the line's "\n": bytes searched for it (all
	 * of buf), for lim->no_newline of the next call; 0 otherwise. */
	uint32_t no_newline;
};

struct proto_limits {
	uint32_t max_value; /* item size limit (-I); a value of more bytes is
			       PROTO_TOO_LARGE */
	/* The most bytes a get/gets/gat/gats line holds before its "\n"; 0:
	 * PROTO_GET_LINE_DEFAULT; below PROTO_GET_LINE_MIN counts as that. */
	uint32_t max_get_line;
	/*
	 * A hint, 0 when none: the first no_newline bytes of the buffer are
	 * known to hold no "\n" (req->no_newline of an earlier call on the
	 * same request that returned PROTO_NEED_MORE). The search for the end
	 * of a long line then starts there, so that a line arriving in many
	 * pieces is searched once, not once per piece.
	 */
	uint32_t no_newline;
};

/*
 * Parses the first request in buf[0..n). Pure and restartable: with more
 * bytes appended, the same call parses further; no state is kept. Fills req
 * (offsets relative to buf) and returns a status above. Reads nothing past
 * buf[n - 1] and allocates nothing. lim may be NULL: the item size limit is
 * then PROTO_VALUE_MAX_DEFAULT and the get-line limit PROTO_GET_LINE_DEFAULT.
 *
 * A line ends at "\n", with or without "\r" before it, and holds at most
 * PROTO_LINE_MAX bytes before its "\n" (lim->max_get_line for a line that
 * starts with "get ", "gets ", "gat ", "gats " or "bget " after at most 100
 * spaces); a longer one is PROTO_LINE_TOO_LONG once one byte past its limit
 * is there. The line's bytes are searched for "\n" once in all when the caller
 * passes back the hint (lim->no_newline), and split into tokens once.
 * As in memcached, a NUL byte ends the line's content: what follows it,
 * up to the "\n", is ignored. A line splits into tokens at spaces only.
 */
enum proto_status proto_text_parse(const char *buf, size_t n,
				   const struct proto_limits *lim,
				   struct proto_req *req);

/*
 * The key rule, memcached 1.6.18's: a key is 1..PROTO_KEY_MAX bytes, any
 * bytes but ' ', '\n' and NUL. Control bytes (\t, \r, 0x01-0x1f, 0x7f)
 * and bytes 0x80-0xff are key bytes like any other. A key of more bytes is
 * refused with "CLIENT_ERROR bad command line format". In the text
 * protocol the other three cannot occur inside a key: a space splits
 * tokens, "\n" ends the line and NUL ends its content. A key may end in
 * "\r" ("get k\r\r\n" asks for "k\r": only the "\r" right before the
 * "\n" belongs to the line end). Whatever prints a text key (VALUE, KEY
 * lines) prints its bytes as they are: a reader that splits at "\n" and
 * strips one "\r" gets the key back. The msgpack protocol takes any bytes
 * (proto_bin_key_ok), so every text key is a msgpack key but not the
 * other way round: text replies spell the others in base64
 * (proto_text_key). Inline: the client library links the msgpack codec
 * without the text parser.
 */
static inline bool proto_key_ok(const char *p, size_t n)
{
	if (n == 0 || n > PROTO_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == ' ' || p[i] == '\n' || p[i] == '\0')
			return false;
	}
	return true;
}

/*
 * Next key of a multi-key request: *pos starts at req->key.off; returns false
 * after the last key.
 */
bool proto_text_next_key(const char *buf, const struct proto_req *req,
			 uint32_t *pos, struct proto_span *key);
/* The same, given only req->keys_end (for a caller that keeps no
 * proto_req). */
bool proto_text_next_key_before(const char *buf, uint32_t keys_end,
				uint32_t *pos, struct proto_span *key);

/*
 * Writes "VALUE <key> <flags> <bytes>[ <cas>]\r\n" into dst (at least
 * PROTO_VALUE_HEADER_MAX bytes) and returns its length; writes nothing and
 * returns 0 when key_len exceeds PROTO_KEY_MAX. No terminating NUL.
 */
#define PROTO_VALUE_HEADER_MAX \
	(6 + PROTO_KEY_MAX + 1 + 10 + 1 + 10 + 1 + 20 + 2)
size_t proto_text_value_header(char *dst, const char *key, size_t key_len,
			       uint32_t flags, uint32_t nbytes, bool with_cas,
			       uint64_t cas);

/*
 * Matches a scan glob: `*`, `?`, `[...]` (with ranges and `!`/`^`), `\`.
 * Bytes compare as unsigned; `]` right after `[` (or `[!`, `[^`) is a
 * member, `-` first or last is a member, a reversed range (`[z-a]`) means
 * the same as `[a-z]`, and a `[` without its `]` matches a literal `[`.
 * Iterative, O(plen * n) at worst, whatever the pattern.
 */
bool proto_glob_match(const char *pat, size_t plen, const char *s, size_t n);

/*
 * A key as a text reply prints it. A text key (proto_key_ok) comes out as
 * it is; any other key, which only the msgpack protocol can store (it
 * takes any byte), comes out in base64 with *b64 set, and the caller
 * writes memcached's " b" token after it, as memcached does for binary
 * keys: a raw space, "\n" or NUL would split or end the line. binary
 * asks for base64 whatever the bytes (a key that a meta command sent in
 * base64 is answered in base64). dst holds PROTO_TEXT_KEY_MAX bytes;
 * returns the length written (no NUL); n is at most PROTO_KEY_MAX.
 */
#define PROTO_TEXT_KEY_MAX ((PROTO_KEY_MAX + 2) / 3 * 4)
size_t proto_text_key(char *dst, const char *key, size_t n, bool binary,
		      bool *b64);

/*
 * Writes n bytes of src into dst (at least 3 * n bytes) as memcached's
 * `lru_crawler metadump` shows keys: letters, digits and "-._~" as they
 * are, every other byte as %XX (upper-case hex). Returns the length.
 */
size_t proto_text_uri_encode(char *dst, const char *src, size_t n);

/* One item of `lru_crawler metadump`, as memcached writes it. */
struct proto_metadump_item {
	const char *key;
	size_t nkey; /* at most PROTO_KEY_MAX */
	int64_t exp; /* unix seconds; -1: never */
	int64_t la;  /* last access, unix seconds */
	uint64_t cas;
	bool fetched;	  /* read since it was stored */
	unsigned int cls; /* item class */
	uint64_t size;	  /* bytes of the item */
};

/* "key=<uri-encoded> exp=.. la=.. cas=.. fetch=yes|no cls=.. size=..\n"
 * into dst (at least PROTO_METADUMP_LINE_MAX bytes); returns the length
 * (no terminating NUL). */
#define PROTO_METADUMP_LINE_MAX (3 * PROTO_KEY_MAX + 160)
size_t proto_text_metadump_line(char *dst,
				const struct proto_metadump_item *it);

#endif
