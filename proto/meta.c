/*
 * The meta commands' parser (proto/meta.h). memcached reads a meta line in
 * two passes: a "preparse" that every meta command shares (each flag
 * letter at most once, numbers checked, unknown letters refused), then the
 * command's own checks. The order of those checks decides which error a
 * bad line gets and whether an ms data block is swallowed, so it is kept
 * here step for step.
 */
#include "proto/meta.h"

#include <string.h>

#include "proto/text_line.h"

#define ERR_FORMAT	"CLIENT_ERROR bad command line format"
#define ERR_TOKEN	"CLIENT_ERROR bad token in command line format"
#define ERR_DUPLICATE	"CLIENT_ERROR duplicate flag"
#define ERR_INVALID	"CLIENT_ERROR invalid flag"
#define ERR_INV_OR_DUP	"CLIENT_ERROR invalid or duplicate flag"
#define ERR_DECODE_KEY	"CLIENT_ERROR error decoding key"
#define ERR_M_LENGTH	"CLIENT_ERROR incorrect length for M token"
#define ERR_INITIAL	"CLIENT_ERROR invalid numeric initial value"
#define ERR_DELTA	"CLIENT_ERROR invalid numeric delta value"
#define ERR_OPAQUE	"CLIENT_ERROR opaque token too long"
#define ERR_MS_MODE	"CLIENT_ERROR invalid mode for ms M token"
#define ERR_MA_MODE	"CLIENT_ERROR invalid mode for ma M token"
#define ERR_MG_TOO_LONG "CLIENT_ERROR options flags are too long"
#define ERR_TOO_LONG	"CLIENT_ERROR options flags too long"
#define ERR_CHUNK	"CLIENT_ERROR bad data chunk"

/* ---- base64 ---- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of c; 64 for '=', -1 for bytes outside the alphabet. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return c == '=' ? 64 : -1;
}

/*
 * memcached's decoder, whose quirks decide which keys are valid: bytes
 * outside the alphabet are skipped, the alphabet bytes ('=' included) must
 * come in groups of four, and the first group with padding ends the key
 * (one or two '=' drop one or two bytes; more is invalid).
 */
size_t proto_base64_decode(const char *src, size_t n, char *dst)
{
	unsigned char block[4];
	size_t count = 0, out = 0, pad = 0;

	for (size_t i = 0; i < n; i++) {
		if (b64_value((unsigned char)src[i]) >= 0)
			count++;
	}
	if (count == 0 || count % 4 != 0)
		return 0;
	count = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)src[i]);

		if (v < 0)
			continue;
		if (v == 64) {
			pad++;
			v = 0;
		}
		block[count++] = (unsigned char)v;
		if (count < 4)
			continue;
		dst[out++] = (char)(block[0] << 2 | block[1] >> 4);
		dst[out++] = (char)(block[1] << 4 | block[2] >> 2);
		dst[out++] = (char)(block[2] << 6 | block[3]);
		count = 0;
		if (pad) {
			if (pad > 2)
				return 0;
			out -= pad;
			break;
		}
	}
	return out;
}

size_t proto_base64_encode(const char *src, size_t n, char *dst)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t out = 0, i = 0;

	for (; i + 3 <= n; i += 3) {
		dst[out++] = b64_alphabet[s[i] >> 2];
		dst[out++] = b64_alphabet[(s[i] & 3) << 4 | s[i + 1] >> 4];
		dst[out++] = b64_alphabet[(s[i + 1] & 15) << 2 | s[i + 2] >> 6];
		dst[out++] = b64_alphabet[s[i + 2] & 63];
	}
	if (i < n) {
		dst[out++] = b64_alphabet[s[i] >> 2];
		if (i + 1 < n) {
			dst[out++] =
				b64_alphabet[(s[i] & 3) << 4 | s[i + 1] >> 4];
			dst[out++] = b64_alphabet[(s[i + 1] & 15) << 2];
		} else {
			dst[out++] = b64_alphabet[(s[i] & 3) << 4];
			dst[out++] = '=';
		}
		dst[out++] = '=';
	}
	return out;
}

/* ---- the line ---- */

/* A meta line's tokens, as many as memcached looks at (more only count). */
struct meta_line {
	struct line l;
	uint32_t ntok;
	struct proto_span tok[PROTO_META_TOKENS_MAX + 1];
};

static void meta_split(struct meta_line *ml)
{
	struct proto_span tok;
	uint32_t pos = 0;

	ml->ntok = 0;
	while (token_next(ml->l.buf, &pos, ml->l.end, &tok)) {
		if (ml->ntok < PROTO_META_TOKENS_MAX + 1)
			ml->tok[ml->ntok] = tok;
		ml->ntok++;
	}
}

static enum proto_status refuse(struct proto_meta *m, const char *msg)
{
	m->error = msg;
	return PROTO_CLIENT_ERROR;
}

/*
 * The shared preparse of flags tok[first..]: every letter once; numbers
 * checked. Returns NULL when the flags are good, else the error memcached
 * gives (later errors overwrite earlier ones, as in memcached, except a
 * duplicate or unknown letter, which stops at once).
 */
static const char *preparse(const struct meta_line *ml, uint32_t first,
			    struct proto_meta *m)
{
	const char *buf = ml->l.buf;
	const char *err = NULL;
	uint64_t seen[2] = { 0, 0 }; /* a bit per flag byte below 128 */
	bool bad = false;
	char key[PROTO_KEY_MAX];

	m->delta = 1;
	for (uint32_t i = first; i < ml->ntok; i++) {
		struct proto_span t = ml->tok[i];
		struct proto_span arg = { t.off + 1, t.len - 1 };
		unsigned char o = (unsigned char)buf[t.off];

		if (o >= 127 || (seen[o >> 6] >> (o & 63) & 1))
			return ERR_DUPLICATE;
		seen[o >> 6] |= (uint64_t)1 << (o & 63);
		m->flag[m->nflags++] = t;
		switch (o) {
		case 'b':
			m->base64 = true;
			if (proto_base64_decode(buf + m->key.off, m->key.len,
						key) == 0) {
				err = ERR_DECODE_KEY;
				bad = true;
			}
			break;
		case 'N':
			m->has_vivify = true;
			if (!parse_i32_wrap(buf, arg, &m->vivify_ttl)) {
				err = ERR_TOKEN;
				bad = true;
			}
			break;
		case 'T':
			m->has_ttl = true;
			m->ttl_after_vivify = m->has_vivify;
			m->ttl_before_recache = !m->has_recache;
			if (!parse_i32_wrap(buf, arg, &m->ttl)) {
				err = ERR_TOKEN;
				bad = true;
			}
			break;
		case 'R':
			m->has_recache = true;
			if (!parse_i32_wrap(buf, arg, &m->recache_ttl)) {
				err = ERR_TOKEN;
				bad = true;
			}
			break;
		case 'F': {
			/* memcached sets no message of its own for F, and
			 * keeps the low 32 bits. */
			uint64_t v = 0; /* what memcached keeps on a bad one */

			if (!parse_u64(buf, arg, &v))
				bad = true;
			m->client_flags = (uint32_t)v;
			break;
		}
		case 'C':
			m->has_cas = true;
			if (!parse_u64(buf, arg, &m->cas)) {
				err = ERR_TOKEN;
				bad = true;
			}
			break;
		case 'E':
			m->has_new_cas = true;
			if (!parse_u64(buf, arg, &m->new_cas)) {
				err = ERR_TOKEN;
				bad = true;
			}
			break;
		case 'M':
			if (t.len != 2) {
				err = ERR_M_LENGTH;
				bad = true;
			} else {
				m->mode = buf[arg.off];
			}
			break;
		case 'J':
			if (!parse_u64(buf, arg, &m->initial)) {
				err = ERR_INITIAL;
				bad = true;
			}
			break;
		case 'D':
			if (!parse_u64(buf, arg, &m->delta)) {
				err = ERR_DELTA;
				bad = true;
			}
			break;
		case 'c':
			m->ret |= PROTO_META_RET_CAS;
			break;
		case 'f':
			m->ret |= PROTO_META_RET_FLAGS;
			break;
		case 'h':
			m->ret |= PROTO_META_RET_HIT;
			break;
		case 'k':
			m->ret |= PROTO_META_RET_KEY;
			break;
		case 'l':
			m->ret |= PROTO_META_RET_LAST;
			break;
		case 's':
			m->ret |= PROTO_META_RET_SIZE;
			break;
		case 't':
			m->ret |= PROTO_META_RET_TTL;
			break;
		case 'v':
			m->ret |= PROTO_META_RET_VALUE;
			break;
		case 'u':
			m->no_bump = true;
			break;
		case 'q':
			m->quiet = true;
			break;
		case 'I':
			m->invalidate = true;
			break;
		case 'x':
			/* The current text's, for md alone (1.6.18 has none). */
			if (m->cmd != 'd')
				return ERR_INVALID;
			m->drop_value = true;
			break;
		case 'O': /* opaque, copied back; P, L: proxy hints */
		case 'P':
		case 'L':
			break;
		default:
			return ERR_INVALID;
		}
	}
	return bad ? (err ? err : ERR_FORMAT) : NULL;
}

/* The first O token over its limit, if any. */
static bool opaque_too_long(const struct proto_meta *m, const char *buf)
{
	for (uint32_t i = 0; i < m->nflags; i++) {
		if (buf[m->flag[i].off] == 'O' &&
		    m->flag[i].len > PROTO_META_OPAQUE_MAX)
			return true;
	}
	return false;
}

/* mf <prefix> takes b, k, q, O (and the proxy hints P, L) alone. */
static bool flush_flags_ok(const struct proto_meta *m, const char *buf)
{
	for (uint32_t i = 0; i < m->nflags; i++)
		if (!memchr("bkqOPL", buf[m->flag[i].off], 6))
			return false;
	return true;
}

/* me <key> [b]: only a "b" right after the key is looked at. */
static enum proto_status parse_debug(const struct meta_line *ml,
				     struct proto_meta *m)
{
	char key[PROTO_KEY_MAX];

	if (ml->ntok < 2 || ml->tok[1].len > PROTO_KEY_MAX)
		return refuse(m, ERR_FORMAT);
	m->key = ml->tok[1];
	if (ml->ntok >= 3 && span_is(ml->l.buf, ml->tok[2], "b")) {
		m->base64 = true;
		if (proto_base64_decode(ml->l.buf + m->key.off, m->key.len,
					key) == 0)
			return refuse(m, ERR_FORMAT);
	}
	return PROTO_OK;
}

/* ms <key> <datalen> <flags>* and its data block. */
static enum proto_status parse_set(const struct meta_line *ml, size_t n,
				   const struct proto_limits *lim,
				   struct proto_meta *m)
{
	uint32_t max = lim != NULL ? lim->max_value : PROTO_VALUE_MAX_DEFAULT;
	const char *buf = ml->l.buf;
	const char *err;
	int64_t bytes;
	size_t need;

	if (ml->ntok == 2)
		return refuse(m, ERR_FORMAT);
	if (ml->ntok > PROTO_META_TOKENS_MAX)
		return refuse(m, ERR_TOO_LONG);
	/* Read into 32 bits as memcached does: 4294967297 is 1. */
	if (!parse_i32_wrap(buf, ml->tok[2], &bytes) || bytes < 0 ||
	    bytes > (int64_t)PROTO_BYTES_MAX)
		return refuse(m, ERR_FORMAT);
	m->nbytes = (uint32_t)bytes;
	m->value_off = ml->l.total;
	/* From here on a refusal swallows the data block. */
	m->swallow = (uint64_t)m->nbytes + 2;
	err = preparse(ml, 3, m);
	if (err)
		return refuse(m, err);
	/* An invalid mode wins over a long opaque, as in memcached. */
	if (m->mode && !memchr("EAPRS", m->mode, 5))
		return refuse(m, ERR_MS_MODE);
	if (opaque_too_long(m, buf))
		return refuse(m, ERR_OPAQUE);
	if (m->nbytes > max)
		return PROTO_TOO_LARGE;
	m->swallow = 0;
	need = (size_t)ml->l.total + m->nbytes + 2;
	m->len = need;
	if (n < need) {
		m->data_pending = true;
		return PROTO_NEED_MORE;
	}
	if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
		return refuse(m, ERR_CHUNK);
	return PROTO_OK;
}

enum proto_status proto_meta_parse(const char *buf, size_t n,
				   const struct proto_limits *lim,
				   struct proto_meta *m)
{
	struct meta_line ml;
	enum proto_status st;
	const char *err;

	memset(m, 0, sizeof(*m));
	st = line_find(buf, n, lim, &ml.l, &m->no_newline);
	if (st != PROTO_OK)
		return st;
	m->len = ml.l.total;
	meta_split(&ml);
	if (ml.ntok == 0 || ml.tok[0].len != 2 || buf[ml.tok[0].off] != 'm')
		return PROTO_ERROR;
	m->cmd = buf[ml.tok[0].off + 1];
	switch (m->cmd) {
	case 'n':
		return PROTO_OK;
	case 'e':
		return parse_debug(&ml, m);
	case 'g':
	case 's':
	case 'd':
	case 'a':
	case 'f':
		break;
	default:
		return PROTO_ERROR;
	}
	if (ml.ntok < 2)
		return PROTO_ERROR;
	m->key = ml.tok[1];
	if (m->key.len > PROTO_KEY_MAX)
		return refuse(m, ERR_FORMAT);
	if (m->cmd == 's')
		return parse_set(&ml, n, lim, m);
	if (ml.ntok > PROTO_META_TOKENS_MAX)
		return refuse(m,
			      m->cmd == 'g' ? ERR_MG_TOO_LONG : ERR_TOO_LONG);
	err = preparse(&ml, 2, m);
	if (err)
		return refuse(m, m->cmd == 'g' ? err : ERR_INV_OR_DUP);
	if (m->cmd == 'a' && m->mode && !memchr("I+D-", m->mode, 4))
		return refuse(m, ERR_MA_MODE);
	if (m->cmd == 'f' && !flush_flags_ok(m, buf))
		return refuse(m, ERR_INV_OR_DUP);
	/* memcached checks an opaque while it writes the reply: mg and ma
	 * have run by then (a vivify, an increment), md has not (nor mf). */
	if (opaque_too_long(m, buf)) {
		if (m->cmd == 'd' || m->cmd == 'f')
			return refuse(m, ERR_OPAQUE);
		m->opaque_too_long = true;
	}
	return PROTO_OK;
}
