/*
 * libFuzzer target of the text-protocol parser (proto/text.h) and its meta
 * commands (proto/meta.h): parses the input as a connection would, request
 * after request, discarding what a too-large value or a refused meta set
 * swallows; checks every answer's invariants, that it depends only on the
 * bytes it consumed, runs the glob of every scan it meets, and round-trips
 * every base64 key through the decoder and encoder; and reads the same
 * bytes as memcached's ASCII auth handshake would (proto/text_auth.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/meta.h"
#include "proto/text.h"
#include "proto/text_auth.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

/* Small, so that too-large values are common. */
static const struct proto_limits lim = { .max_value = 100,
					 .max_get_line = PROTO_GET_LINE_MIN };

static const char *const messages[] = {
	"bad command line format",
	"bad command line format.  Usage: delete <key> [noreply]",
	"invalid numeric delta argument",
	"invalid exptime argument",
	"bad data chunk",
	"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m",
	"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes",
};

static bool same_req(const struct proto_req *a, const struct proto_req *b)
{
	return a->cmd == b->cmd && a->len == b->len &&
	       a->noreply == b->noreply && a->key.off == b->key.off &&
	       a->key.len == b->key.len && a->keys_end == b->keys_end &&
	       a->flags == b->flags && a->exptime == b->exptime &&
	       a->nbytes == b->nbytes && a->value_off == b->value_off &&
	       a->cas == b->cas && a->delta == b->delta &&
	       a->delay == b->delay && a->verbosity == b->verbosity &&
	       a->arg.off == b->arg.off && a->arg.len == b->arg.len &&
	       a->args.off == b->args.off && a->args.len == b->args.len &&
	       a->cursor == b->cursor && a->count == b->count &&
	       a->has_match == b->has_match && a->match.off == b->match.off &&
	       a->match.len == b->match.len && a->error == b->error &&
	       a->swallow == b->swallow;
}

static bool span_within(struct proto_span s, size_t len)
{
	return (size_t)s.off + s.len <= len;
}

static void check_key(const char *buf, struct proto_span k, size_t len)
{
	char hdr[PROTO_VALUE_HEADER_MAX], want[PROTO_VALUE_HEADER_MAX + 1];
	size_t n;
	int w;

	CHECK(span_within(k, len));
	CHECK(k.len >= 1 && k.len <= PROTO_KEY_MAX);
	for (uint32_t i = 0; i < k.len; i++) {
		unsigned char c = (unsigned char)buf[k.off + i];
		CHECK(c != ' ' && c != '\n' && c != '\0');
	}
	n = proto_text_value_header(hdr, buf + k.off, k.len, k.len * 7u, k.off,
				    true, (uint64_t)k.off << 40);
	w = snprintf(want, sizeof(want), "VALUE %.*s %u %u %llu\r\n",
		     (int)k.len, buf + k.off, k.len * 7u, k.off,
		     (unsigned long long)k.off << 40);
	CHECK(w > 0 && (size_t)w == n && memcmp(hdr, want, n) == 0);
}

static bool is_storage(enum proto_cmd c)
{
	return c == PROTO_CMD_SET || c == PROTO_CMD_ADD ||
	       c == PROTO_CMD_REPLACE || c == PROTO_CMD_APPEND ||
	       c == PROTO_CMD_PREPEND || c == PROTO_CMD_CAS;
}

static void check_ok(const char *buf, const struct proto_req *r)
{
	struct proto_span k;
	uint32_t pos, nkeys = 0;

	switch (r->cmd) {
	case PROTO_CMD_GET:
	case PROTO_CMD_GETS:
	case PROTO_CMD_GAT:
	case PROTO_CMD_GATS:
		CHECK(r->keys_end <= r->len && r->key.off <= r->keys_end);
		pos = r->key.off;
		while (proto_text_next_key(buf, r, &pos, &k)) {
			CHECK(k.off >= r->key.off &&
			      k.off + k.len <= r->keys_end);
			if (nkeys++ == 0)
				CHECK(k.off == r->key.off &&
				      k.len == r->key.len);
			check_key(buf, k, r->len);
		}
		CHECK(nkeys > 0 || r->cmd == PROTO_CMD_GAT ||
		      r->cmd == PROTO_CMD_GATS);
		CHECK(nkeys > 0 || r->key.len == 0);
		break;
	case PROTO_CMD_SET:
	case PROTO_CMD_ADD:
	case PROTO_CMD_REPLACE:
	case PROTO_CMD_APPEND:
	case PROTO_CMD_PREPEND:
	case PROTO_CMD_CAS:
		check_key(buf, r->key, r->value_off);
		CHECK(r->nbytes <= lim.max_value);
		CHECK((size_t)r->value_off + r->nbytes + 2 == r->len);
		CHECK(buf[r->len - 2] == '\r' && buf[r->len - 1] == '\n');
		CHECK(buf[r->value_off - 1] == '\n');
		break;
	case PROTO_CMD_DELETE:
	case PROTO_CMD_INCR:
	case PROTO_CMD_DECR:
	case PROTO_CMD_TOUCH:
		check_key(buf, r->key, r->len);
		break;
	case PROTO_CMD_STATS:
		CHECK(span_within(r->arg, r->len));
		CHECK(span_within(r->args, r->len));
		break;
	case PROTO_CMD_SCAN:
		CHECK(r->count >= 1 && r->count <= PROTO_SCAN_COUNT_MAX);
		if (r->has_match) {
			size_t rest = r->len < 512 ? r->len : 512;
			CHECK(span_within(r->match, r->len) &&
			      r->match.len > 0);
			(void)proto_glob_match(buf + r->match.off, r->match.len,
					       buf, rest);
			(void)proto_glob_match(buf + r->match.off, r->match.len,
					       buf + r->match.off,
					       r->match.len);
		}
		break;
	default:
		break;
	}
}

/* Invariants of one answer on buf[0..n); the answer must not change when
 * only the bytes it consumed are given, and one byte less is NEED_MORE. */
static void check(const char *buf, size_t n, enum proto_status st,
		  const struct proto_req *r)
{
	struct proto_req again;
	bool known = false;
	char *exact;

	if (st == PROTO_NEED_MORE) {
		if (memchr(buf, '\n', n) == NULL)
			CHECK(n <= PROTO_GET_LINE_MIN && r->no_newline == n);
		else
			CHECK(r->no_newline == 0);
		return;
	}
	if (st == PROTO_LINE_TOO_LONG) {
		CHECK(n > PROTO_LINE_MAX);
		return;
	}
	CHECK(r->len > 0 && r->len <= n);
	CHECK(memchr(buf, '\n', r->len) != NULL);
	CHECK((st == PROTO_CLIENT_ERROR || st == PROTO_REFUSED) ==
	      (r->error != NULL));
	for (size_t i = 0; r->error && i < sizeof(messages) / sizeof(*messages);
	     i++)
		known = known || strcmp(r->error, messages[i]) == 0;
	CHECK(r->error == NULL || known);
	if (st == PROTO_TOO_LARGE) {
		CHECK(is_storage(r->cmd) && r->nbytes > lim.max_value);
		CHECK(r->swallow == (uint64_t)r->nbytes + 2);
		CHECK(r->value_off == r->len);
		check_key(buf, r->key, r->len);
	} else {
		CHECK(r->swallow == 0);
	}
	if (st == PROTO_OK)
		check_ok(buf, r);
	/* An exact copy, so that ASan sees any read past r->len. */
	exact = malloc(r->len);
	CHECK(exact != NULL);
	memcpy(exact, buf, r->len);
	CHECK(proto_text_parse(exact, r->len, &lim, &again) == st);
	CHECK(same_req(r, &again));
	CHECK(proto_text_parse(exact, r->len - 1, &lim, &again) ==
	      PROTO_NEED_MORE);
	free(exact);
}

static bool same_meta(const struct proto_meta *a, const struct proto_meta *b)
{
	return a->cmd == b->cmd && a->len == b->len &&
	       a->key.off == b->key.off && a->key.len == b->key.len &&
	       a->nflags == b->nflags && a->ret == b->ret &&
	       a->base64 == b->base64 && a->quiet == b->quiet &&
	       a->mode == b->mode && a->client_flags == b->client_flags &&
	       a->cas == b->cas && a->new_cas == b->new_cas &&
	       a->delta == b->delta && a->initial == b->initial &&
	       a->ttl == b->ttl && a->vivify_ttl == b->vivify_ttl &&
	       a->recache_ttl == b->recache_ttl && a->nbytes == b->nbytes &&
	       a->value_off == b->value_off && a->error == b->error &&
	       a->swallow == b->swallow;
}

/* A meta request: its invariants, and that only its bytes decide it. */
static void check_meta(const char *buf, size_t n, enum proto_status st,
		       const struct proto_meta *m)
{
	char key[PROTO_KEY_MAX], b64[PROTO_KEY_MAX + 4];
	struct proto_meta again;
	char *exact;

	if (st == PROTO_NEED_MORE || st == PROTO_LINE_TOO_LONG)
		return;
	CHECK(m->len > 0 && m->len <= n);
	CHECK((st == PROTO_CLIENT_ERROR) == (m->error != NULL));
	CHECK(m->error == NULL || strncmp(m->error, "CLIENT_ERROR ", 13) == 0);
	CHECK(m->nflags <= PROTO_META_FLAGS_MAX);
	for (uint32_t i = 0; i < m->nflags; i++)
		CHECK(span_within(m->flag[i], m->len));
	if (st == PROTO_OK && m->cmd != 'n') {
		CHECK(span_within(m->key, m->len));
		CHECK(m->key.len >= 1 && m->key.len <= PROTO_KEY_MAX);
	}
	if (st == PROTO_OK && m->cmd == 's') {
		CHECK(m->nbytes <= lim.max_value);
		CHECK((size_t)m->value_off + m->nbytes + 2 == m->len);
	}
	if (st == PROTO_TOO_LARGE)
		CHECK(m->nbytes > lim.max_value &&
		      m->swallow == (uint64_t)m->nbytes + 2);
	if (st == PROTO_OK && m->base64) {
		size_t k =
			proto_base64_decode(buf + m->key.off, m->key.len, key);
		size_t e;

		CHECK(k > 0 && k <= PROTO_META_BINKEY_MAX);
		e = proto_base64_encode(key, k, b64);
		CHECK(e <= sizeof(b64) &&
		      proto_base64_decode(b64, e, b64) == k &&
		      memcmp(b64, key, k) == 0);
	}
	exact = malloc(m->len);
	CHECK(exact != NULL);
	memcpy(exact, buf, m->len);
	CHECK(proto_meta_parse(exact, m->len, &lim, &again) == st);
	CHECK(same_meta(m, &again));
	CHECK(proto_meta_parse(exact, m->len - 1, &lim, &again) ==
	      PROTO_NEED_MORE);
	free(exact);
}

/* memcached's ASCII auth handshake (proto/text_auth.h) over the same
 * bytes, request after request as before auth: each answer lies within
 * the bytes, is the same on exactly the bytes it took (at least two: a
 * lone "\n" waits for a second byte, as in memcached), and names user and
 * password inside them. */
static void check_handshakes(const char *buf, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct proto_text_auth a, again;
		enum proto_text_auth_status st;

		st = proto_text_auth_parse(buf + off, size - off, &a);
		if (st == PROTO_TEXT_AUTH_NEED_MORE ||
		    st == PROTO_TEXT_AUTH_CLOSE)
			break;
		CHECK(a.len > 0 && a.len <= size - off);
		if (a.len >= 2) {
			CHECK(proto_text_auth_parse(buf + off, a.len, &again) ==
			      st);
			CHECK(again.len == a.len && again.error == a.error);
		}
		if (st == PROTO_TEXT_AUTH_CREDENTIALS) {
			CHECK(a.user.len && a.pass.len);
			CHECK(a.user.off + a.user.len <= a.len);
			CHECK(a.pass.off + a.pass.len <= a.len);
			CHECK(!memchr(buf + off + a.user.off, ' ', a.user.len));
			CHECK(!memchr(buf + off + a.pass.off, ' ', a.pass.len));
		} else {
			CHECK(a.error);
		}
		off += a.len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0;
	uint64_t swallow = 0;

	check_handshakes(buf, size);

	while (off < size) {
		struct proto_req req;
		enum proto_status st;

		if (swallow > 0) {
			size_t drop = swallow < size - off ? (size_t)swallow
							   : size - off;
			off += drop;
			swallow -= drop;
			continue;
		}
		st = proto_text_parse(buf + off, size - off, &lim, &req);
		check(buf + off, size - off, st, &req);
		if (st == PROTO_META) {
			struct proto_meta m;

			st = proto_meta_parse(buf + off, size - off, &lim, &m);
			check_meta(buf + off, size - off, st, &m);
			if (st == PROTO_NEED_MORE || st == PROTO_LINE_TOO_LONG)
				break;
			swallow = m.swallow;
			off += m.len;
			continue;
		}
		if (st == PROTO_NEED_MORE || st == PROTO_LINE_TOO_LONG ||
		    st == PROTO_CLOSE)
			break;
		if (st == PROTO_OK && req.cmd == PROTO_CMD_QUIT)
			break;
		if (st == PROTO_TOO_LARGE)
			swallow = req.swallow;
		off += req.len;
	}
	return 0;
}
