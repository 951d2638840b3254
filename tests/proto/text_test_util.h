/*
 * Helpers of the text-protocol tests (tests/proto/): parsing string literals,
 * comparing spans and whole requests, a seeded generator, and a composer of
 * random valid requests with the request they must parse into.
 */
#ifndef RHKV_TESTS_PROTO_TEXT_TEST_UTIL_H
#define RHKV_TESTS_PROTO_TEXT_TEST_UTIL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/text.h"

static const struct proto_limits test_lim = { .max_value = 1024 * 1024 };

/* Parses a string literal (embedded NULs included) with test_lim. */
#define PARSE(lit, req) \
	proto_text_parse((lit), sizeof(lit) - 1, &test_lim, (req))

static inline bool span_eq(const char *buf, struct proto_span s,
			   const char *want)
{
	size_t n = strlen(want);
	return s.len == n && memcmp(buf + s.off, want, n) == 0;
}

/* Field-by-field equality of two parsed requests (no padding compared). */
static inline bool req_equal(const struct proto_req *a,
			     const struct proto_req *b)
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

/* xorshift64*, seeded: every run draws the same requests. */
static inline uint64_t test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static inline uint32_t test_rand_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(test_rand(s) % n);
}

/* What a composed request must parse into, besides its offsets. */
struct test_expect {
	enum proto_cmd cmd;
	size_t len;
	bool noreply;
	char key[PROTO_KEY_MAX + 1];
	uint32_t nkeys;
	uint32_t flags;
	int64_t exptime;
	uint32_t nbytes;
	char value[512];
	uint64_t cas, delta, cursor;
	int64_t delay;
	uint32_t count;
};

/* A random valid key of 1..maxlen printable bytes (no space). */
static inline size_t test_rand_key(uint64_t *s, char *dst, size_t maxlen)
{
	size_t n = 1 + test_rand_below(s, (uint32_t)maxlen);
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)(0x21 + test_rand_below(s, 0x7f - 0x21));
	dst[n] = '\0';
	return n;
}

/* Appends a formatted string at buf + *len (cap bytes in all). */
#define TEST_APPEND(buf, len, cap, ...) \
	(*(len) +=                      \
	 (size_t)snprintf((buf) + *(len), (cap) - *(len), __VA_ARGS__))

/*
 * Composes one random valid request at buf + *len (cap >= *len + 4096) and
 * fills *e with what it must parse into.
 */
static inline void test_compose(uint64_t *s, char *buf, size_t *len, size_t cap,
				struct test_expect *e)
{
	static const char *const storage[] = { "set",	 "add",	    "replace",
					       "append", "prepend", "cas" };
	static const enum proto_cmd storage_cmd[] = {
		PROTO_CMD_SET,	  PROTO_CMD_ADD,     PROTO_CMD_REPLACE,
		PROTO_CMD_APPEND, PROTO_CMD_PREPEND, PROTO_CMD_CAS
	};
	size_t start = *len;
	uint32_t kind = test_rand_below(s, 8);

	memset(e, 0, sizeof(*e));
	test_rand_key(s, e->key, test_rand_below(s, 4) ? 16 : PROTO_KEY_MAX);
	e->noreply = test_rand_below(s, 3) == 0;
	const char *nr = e->noreply ? " noreply" : "";
	switch (kind) {
	case 0:
	case 1: { /* storage, binary value with "\r\n" inside now and then */
		uint32_t k = test_rand_below(s, 6);
		e->cmd = storage_cmd[k];
		e->flags = (uint32_t)test_rand(s);
		e->exptime = (int64_t)(test_rand(s) % 2000000) - 1000000;
		e->nbytes = test_rand_below(s, sizeof(e->value));
		for (uint32_t i = 0; i < e->nbytes; i++)
			e->value[i] = (char)test_rand(s);
		if (e->nbytes >= 2 && test_rand_below(s, 2))
			memcpy(e->value + e->nbytes / 2, "\r\n", 2);
		e->cas = test_rand(s);
		TEST_APPEND(
			buf, len, cap, "%s %s %" PRIu32 " %" PRId64 " %" PRIu32,
			storage[k], e->key, e->flags, e->exptime, e->nbytes);
		if (e->cmd == PROTO_CMD_CAS)
			TEST_APPEND(buf, len, cap, " %" PRIu64, e->cas);
		else
			e->cas = 0;
		TEST_APPEND(buf, len, cap, "%s\r\n", nr);
		memcpy(buf + *len, e->value, e->nbytes);
		*len += e->nbytes;
		memcpy(buf + *len, "\r\n", 2);
		*len += 2;
		break;
	}
	case 2: /* get/gets with 1..20 keys, the first one remembered */
		e->cmd = test_rand_below(s, 2) ? PROTO_CMD_GET : PROTO_CMD_GETS;
		e->noreply = false;
		e->nkeys = 1 + test_rand_below(s, 20);
		TEST_APPEND(buf, len, cap, "%s %s",
			    e->cmd == PROTO_CMD_GET ? "get" : "gets", e->key);
		for (uint32_t i = 1; i < e->nkeys; i++) {
			char k[PROTO_KEY_MAX + 1];
			test_rand_key(s, k, 40);
			TEST_APPEND(buf, len, cap, " %s", k);
		}
		TEST_APPEND(buf, len, cap, "\r\n");
		break;
	case 3: /* incr/decr */
		e->cmd =
			test_rand_below(s, 2) ? PROTO_CMD_INCR : PROTO_CMD_DECR;
		e->delta = test_rand(s);
		TEST_APPEND(buf, len, cap, "%s %s %" PRIu64 "%s\r\n",
			    e->cmd == PROTO_CMD_INCR ? "incr" : "decr", e->key,
			    e->delta, nr);
		break;
	case 4: { /* touch or gat: any 64-bit number, kept as its low 32 bits */
		int64_t sent = (int64_t)test_rand(s);

		e->exptime = (int32_t)(uint32_t)sent;
		if (test_rand_below(s, 2)) {
			e->cmd = PROTO_CMD_TOUCH;
			TEST_APPEND(buf, len, cap, "touch %s %" PRId64 "%s\r\n",
				    e->key, sent, nr);
		} else {
			e->cmd = PROTO_CMD_GATS;
			e->noreply = false;
			e->nkeys = 1;
			TEST_APPEND(buf, len, cap, "gats %" PRId64 " %s\r\n",
				    sent, e->key);
		}
		break;
	}
	case 5: /* delete, with the legacy "0" now and then */
		e->cmd = PROTO_CMD_DELETE;
		TEST_APPEND(buf, len, cap, "delete %s%s%s\r\n", e->key,
			    test_rand_below(s, 2) ? " 0" : "", nr);
		break;
	case 6: /* scan */
		e->cmd = PROTO_CMD_SCAN;
		e->noreply = false;
		e->cursor = test_rand(s);
		e->count = 1 + test_rand_below(s, PROTO_SCAN_COUNT_MAX);
		TEST_APPEND(buf, len, cap,
			    "scan %" PRIu64 " count %" PRIu32 "\r\n", e->cursor,
			    e->count);
		break;
	default: /* flush_all with a delay */
		e->cmd = PROTO_CMD_FLUSH_ALL;
		e->delay = (int64_t)test_rand_below(s, 100000);
		TEST_APPEND(buf, len, cap, "flush_all %" PRId64 "%s\r\n",
			    e->delay, nr);
		break;
	}
	e->len = *len - start;
}

/* Whether req, parsed from buf, is what test_compose() promised in *e. */
static inline bool test_matches(const char *buf, const struct proto_req *req,
				const struct test_expect *e)
{
	if (req->cmd != e->cmd || req->len != e->len ||
	    req->noreply != e->noreply)
		return false;
	if (e->cmd != PROTO_CMD_SCAN && e->cmd != PROTO_CMD_FLUSH_ALL &&
	    !span_eq(buf, req->key, e->key))
		return false;
	switch (e->cmd) {
	case PROTO_CMD_SET:
	case PROTO_CMD_ADD:
	case PROTO_CMD_REPLACE:
	case PROTO_CMD_APPEND:
	case PROTO_CMD_PREPEND:
	case PROTO_CMD_CAS:
		return req->flags == e->flags && req->exptime == e->exptime &&
		       req->nbytes == e->nbytes && req->cas == e->cas &&
		       req->value_off + e->nbytes + 2 == e->len &&
		       memcmp(buf + req->value_off, e->value, e->nbytes) == 0;
	case PROTO_CMD_GET:
	case PROTO_CMD_GETS:
	case PROTO_CMD_GATS: {
		uint32_t pos = req->key.off, n = 0;
		struct proto_span k;
		while (proto_text_next_key(buf, req, &pos, &k))
			n++;
		return n == e->nkeys &&
		       (e->cmd != PROTO_CMD_GATS || req->exptime == e->exptime);
	}
	case PROTO_CMD_INCR:
	case PROTO_CMD_DECR:
		return req->delta == e->delta;
	case PROTO_CMD_TOUCH:
		return req->exptime == e->exptime;
	case PROTO_CMD_SCAN:
		return req->cursor == e->cursor && req->count == e->count &&
		       !req->has_match;
	case PROTO_CMD_FLUSH_ALL:
		return req->delay == e->delay;
	default:
		return true;
	}
}

#endif
