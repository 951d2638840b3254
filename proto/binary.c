/*
 * The binary protocol codec: frame headers, a structural guard in front of
 * msgpack-c, request and reply decoding, and frame encoding. See binary.h
 * and PROTOCOL.md.
 */
#include "binary.h"

#include <string.h>

#include "text.h"

static const char *const op_names[PROTO_OP_MAX + 1] = {
	[PROTO_OP_GET] = "get",
	[PROTO_OP_GETS] = "gets",
	[PROTO_OP_MGET] = "mget",
	[PROTO_OP_SET] = "set",
	[PROTO_OP_ADD] = "add",
	[PROTO_OP_REPLACE] = "replace",
	[PROTO_OP_APPEND] = "append",
	[PROTO_OP_PREPEND] = "prepend",
	[PROTO_OP_CAS] = "cas",
	[PROTO_OP_DELETE] = "delete",
	[PROTO_OP_INCR] = "incr",
	[PROTO_OP_DECR] = "decr",
	[PROTO_OP_TOUCH] = "touch",
	[PROTO_OP_GAT] = "gat",
	[PROTO_OP_FLUSH_ALL] = "flush_all",
	[PROTO_OP_SCAN] = "scan",
	[PROTO_OP_STATS] = "stats",
	[PROTO_OP_VERSION] = "version",
	[PROTO_OP_NOOP] = "noop",
	[PROTO_OP_QUIT] = "quit",
	[PROTO_OP_AUTH] = "auth",
	[PROTO_OP_META_GET] = "meta_get",
	[PROTO_OP_META_SET] = "meta_set",
	[PROTO_OP_META_DELETE] = "meta_delete",
	[PROTO_OP_META_ARITH] = "meta_arith",
	[PROTO_OP_FLUSH_PREFIX] = "flush_prefix",
};

static const char *const status_names[PROTO_ST_MAX + 1] = {
	[PROTO_ST_OK] = "OK",
	[PROTO_ST_NOT_FOUND] = "NOT_FOUND",
	[PROTO_ST_NOT_STORED] = "NOT_STORED",
	[PROTO_ST_EXISTS] = "EXISTS",
	[PROTO_ST_TOO_LARGE] = "TOO_LARGE",
	[PROTO_ST_BAD_KEY] = "BAD_KEY",
	[PROTO_ST_NON_NUMERIC] = "NON_NUMERIC",
	[PROTO_ST_OUT_OF_MEMORY] = "OUT_OF_MEMORY",
	[PROTO_ST_BAD_REQUEST] = "BAD_REQUEST",
	[PROTO_ST_SERVER_ERROR] = "SERVER_ERROR",
	[PROTO_ST_AUTH_REQUIRED] = "AUTH_REQUIRED",
};

const char *proto_bin_op_name(uint32_t op)
{
	return op <= PROTO_OP_MAX && op_names[op] ? op_names[op] : "?";
}

const char *proto_bin_status_name(uint32_t status)
{
	return status <= PROTO_ST_MAX ? status_names[status] : "?";
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

enum proto_bin_frame proto_bin_frame_len(const char *buf, size_t n,
					 size_t limit, uint32_t *body_len)
{
	if (n < PROTO_BIN_HEADER)
		return PROTO_BIN_FRAME_NEED_MORE;
	*body_len = be32((const unsigned char *)buf);
	return *body_len > limit ? PROTO_BIN_FRAME_TOO_LARGE
				 : PROTO_BIN_FRAME_OK;
}

/* ---- the structural guard ---- */

/*
 * Sizes of one msgpack object's header at p (n bytes available): *head is
 * its header length, and either *data (bytes of payload after the header)
 * or *elems (objects that follow: array elements, map keys and values).
 * False when the type byte is invalid or the header is cut short.
 */
static bool object_head(const unsigned char *p, size_t n, size_t *head,
			size_t *data, uint64_t *elems)
{
	unsigned char b = p[0];

	*data = 0;
	*elems = 0;
	*head = 1;
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return true;
	if (b >= 0x80 && b <= 0x8f) {
		*elems = 2u * (b & 0x0fu);
		return true;
	}
	if (b >= 0x90 && b <= 0x9f) {
		*elems = b & 0x0fu;
		return true;
	}
	if (b >= 0xa0 && b <= 0xbf) {
		*data = b & 0x1fu;
		return true;
	}
	switch (b) {
	case 0xcc:
	case 0xd0:
		*data = 1;
		return true;
	case 0xcd:
	case 0xd1:
		*data = 2;
		return true;
	case 0xca:
	case 0xce:
	case 0xd2:
		*data = 4;
		return true;
	case 0xcb:
	case 0xcf:
	case 0xd3:
		*data = 8;
		return true;
	case 0xd4:
		*data = 2;
		return true; /* fixext: type + payload */
	case 0xd5:
		*data = 3;
		return true;
	case 0xd6:
		*data = 5;
		return true;
	case 0xd7:
		*data = 9;
		return true;
	case 0xd8:
		*data = 17;
		return true;
	case 0xc4:
	case 0xd9: /* bin8, str8 */
		if (n < 2)
			return false;
		*head = 2;
		*data = p[1];
		return true;
	case 0xc5:
	case 0xda:
		if (n < 3)
			return false;
		*head = 3;
		*data = be16(p + 1);
		return true;
	case 0xc6:
	case 0xdb:
		if (n < 5)
			return false;
		*head = 5;
		*data = be32(p + 1);
		return true;
	case 0xc7: /* ext8: length, type, payload */
		if (n < 2)
			return false;
		*head = 2;
		*data = 1u + p[1];
		return true;
	case 0xc8:
		if (n < 3)
			return false;
		*head = 3;
		*data = 1u + be16(p + 1);
		return true;
	case 0xc9:
		if (n < 5)
			return false;
		*head = 5;
		*data = 1u + (size_t)be32(p + 1);
		return true;
	case 0xdc:
	case 0xde:
		if (n < 3)
			return false;
		*head = 3;
		*elems = be16(p + 1) * (b == 0xde ? 2u : 1u);
		return true;
	case 0xdd:
	case 0xdf:
		if (n < 5)
			return false;
		*head = 5;
		*elems = (uint64_t)be32(p + 1) * (b == 0xdf ? 2u : 1u);
		return true;
	default: /* 0xc1: never used */
		return false;
	}
}

/*
 * Whether buf[0..n) is exactly one msgpack object whose containers never
 * claim more elements than bytes remain (every element takes one byte at
 * least) and never nest deeper than max_depth. msgpack-c would allocate a
 * claimed count before reading the elements.
 */
static bool shape_ok(const char *buf, size_t n, unsigned int max_depth)
{
	const unsigned char *p = (const unsigned char *)buf;
	uint64_t pending[PROTO_BIN_MAX_DEPTH + 2] = { 1 };
	unsigned int depth = 0;
	size_t off = 0;

	for (;;) {
		size_t head, data;
		uint64_t elems;

		while (pending[depth] == 0) {
			if (depth == 0)
				return off == n;
			depth--;
		}
		pending[depth]--;
		if (off >= n ||
		    !object_head(p + off, n - off, &head, &data, &elems))
			return false;
		off += head;
		if (data > n - off)
			return false;
		off += data;
		if (elems) {
			if (elems > n - off || depth + 1 > max_depth)
				return false;
			pending[++depth] = elems;
		}
	}
}

/* ---- decoding ---- */

/* A zone's first chunk: replies and requests of a few keys fit in it. */
#define DECODER_CHUNK 4096

void proto_bin_decoder_init(struct proto_bin_decoder *d)
{
	d->ready = msgpack_zone_init(&d->zone, DECODER_CHUNK);
}

void proto_bin_decoder_destroy(struct proto_bin_decoder *d)
{
	if (d->ready)
		msgpack_zone_destroy(&d->zone);
	d->ready = false;
}

/*
 * Unpacks body into d; NULL unless it is one well-shaped array. Uses the
 * zone API (msgpack_unpack into our zone): msgpack_unpack_next makes a new
 * zone for every body, two allocations per request.
 */
static const msgpack_object_array *unpack_array(struct proto_bin_decoder *d,
						const char *body, size_t n)
{
	size_t off = 0;

	if (!d->ready || !shape_ok(body, n, PROTO_BIN_MAX_DEPTH))
		return NULL;
	msgpack_zone_clear(&d->zone);
	if (msgpack_unpack(body, n, &off, &d->zone, &d->obj) !=
		    MSGPACK_UNPACK_SUCCESS ||
	    off != n || d->obj.type != MSGPACK_OBJECT_ARRAY)
		return NULL;
	return &d->obj.via.array;
}

static bool get_u64(const msgpack_object *o, uint64_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*v = o->via.u64;
	return true;
}

static bool get_i64(const msgpack_object *o, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    o->via.u64 <= INT64_MAX) {
		*v = (int64_t)o->via.u64;
		return true;
	}
	return false;
}

static bool get_bytes(const msgpack_object *o, struct proto_bin_bytes *b)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		b->p = o->via.str.ptr;
		b->n = o->via.str.size;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		b->p = o->via.bin.ptr;
		b->n = o->via.bin.size;
		return true;
	}
	return false;
}

bool proto_bin_key_ok(const char *p, size_t n)
{
	(void)p; /* every byte is a key byte: msgpack gives the length */
	return n >= 1 && n <= PROTO_BIN_KEY_MAX;
}

bool proto_bin_mget_key(const struct proto_bin_req *req, uint32_t i,
			struct proto_bin_bytes *key)
{
	return i < req->nkeys && get_bytes(&req->keys[i], key) &&
	       proto_bin_key_ok(key->p, key->n);
}

/* An optional argument: absent or nil. */
static const msgpack_object *opt(const msgpack_object_array *a, uint32_t i)
{
	if (i >= a->size || a->ptr[i].type == MSGPACK_OBJECT_NIL)
		return NULL;
	return &a->ptr[i];
}

/* The fewest and most arguments (after op and id) each op takes. */
static const struct {
	uint8_t min, max;
} arity[PROTO_OP_MAX + 1] = {
	[PROTO_OP_GET] = { 1, 1 },	  [PROTO_OP_GETS] = { 1, 1 },
	[PROTO_OP_MGET] = { 1, 1 },	  [PROTO_OP_SET] = { 2, 4 },
	[PROTO_OP_ADD] = { 2, 4 },	  [PROTO_OP_REPLACE] = { 2, 4 },
	[PROTO_OP_APPEND] = { 2, 2 },	  [PROTO_OP_PREPEND] = { 2, 2 },
	[PROTO_OP_CAS] = { 5, 5 },	  [PROTO_OP_DELETE] = { 1, 1 },
	[PROTO_OP_INCR] = { 2, 2 },	  [PROTO_OP_DECR] = { 2, 2 },
	[PROTO_OP_TOUCH] = { 2, 2 },	  [PROTO_OP_GAT] = { 2, 2 },
	[PROTO_OP_FLUSH_ALL] = { 0, 1 },  [PROTO_OP_SCAN] = { 1, 3 },
	[PROTO_OP_STATS] = { 0, 1 },	  [PROTO_OP_VERSION] = { 0, 0 },
	[PROTO_OP_NOOP] = { 0, 0 },	  [PROTO_OP_QUIT] = { 0, 0 },
	[PROTO_OP_AUTH] = { 1, 2 },	  [PROTO_OP_META_GET] = { 1, 2 },
	[PROTO_OP_META_SET] = { 2, 3 },	  [PROTO_OP_META_DELETE] = { 1, 2 },
	[PROTO_OP_META_ARITH] = { 1, 2 }, [PROTO_OP_FLUSH_PREFIX] = { 1, 1 },
};

static bool has_key(uint32_t op)
{
	return op != PROTO_OP_MGET && op != PROTO_OP_FLUSH_ALL &&
	       op != PROTO_OP_SCAN && op != PROTO_OP_STATS &&
	       op != PROTO_OP_VERSION && op != PROTO_OP_NOOP &&
	       op != PROTO_OP_QUIT && op != PROTO_OP_AUTH;
}

#define REJECT(st, msg)                  \
	do {                             \
		*status = (st);          \
		*error = (msg);          \
		return PROTO_BIN_REJECT; \
	} while (0)

/* ---- meta options ---- */

/* Which meta ops take an option: bit (op - PROTO_OP_META_GET). */
#define MG (1u << 0)
#define MS (1u << 1)
#define MD (1u << 2)
#define MA (1u << 3)

enum opt_type { OT_BOOL, OT_INT, OT_UINT, OT_U32, OT_MODE };

static const struct meta_opt {
	const char *name;
	uint32_t bit;
	enum opt_type type;
	uint32_t ops;
	const char *bad; /* the reject message of a wrong value */
} meta_opts[] = {
	{ "v", PROTO_META_VALUE, OT_BOOL, MG | MA, "v: not a boolean" },
	{ "ttl", PROTO_META_TTL, OT_INT, MG | MS | MD | MA,
	  "ttl: not an integer" },
	{ "vivify", PROTO_META_VIVIFY, OT_INT, MG | MS | MA,
	  "vivify: not an integer" },
	{ "recache", PROTO_META_RECACHE, OT_INT, MG,
	  "recache: not an integer" },
	{ "nobump", PROTO_META_NOBUMP, OT_BOOL, MG, "nobump: not a boolean" },
	{ "cas", PROTO_META_CAS, OT_UINT, MS | MD | MA,
	  "cas: not an unsigned integer" },
	{ "newcas", PROTO_META_NEW_CAS, OT_UINT, MG | MS | MD | MA,
	  "newcas: not an unsigned integer" },
	{ "mode", PROTO_META_MODE, OT_MODE, MS | MA,
	  "mode: not one of S E A P R (set) or I D + - (arithmetic)" },
	{ "flags", PROTO_META_FLAGS, OT_U32, MS,
	  "flags: not a 32-bit unsigned integer" },
	{ "invalidate", PROTO_META_INVALIDATE, OT_BOOL, MS | MD,
	  "invalidate: not a boolean" },
	{ "delta", PROTO_META_DELTA, OT_UINT, MA,
	  "delta: not an unsigned integer" },
	{ "initial", PROTO_META_INITIAL, OT_UINT, MA,
	  "initial: not an unsigned integer" },
};

#define N_META_OPTS (sizeof(meta_opts) / sizeof(meta_opts[0]))

static const struct meta_opt *meta_opt_find(const char *p, uint32_t n)
{
	for (size_t i = 0; i < N_META_OPTS; i++)
		if (strlen(meta_opts[i].name) == n &&
		    memcmp(meta_opts[i].name, p, n) == 0)
			return &meta_opts[i];
	return NULL;
}

/* A mode letter for op, upper case; 0 when op does not take it. */
static char meta_mode(uint32_t op, const msgpack_object *o)
{
	struct proto_bin_bytes b;
	char ch;

	if (!get_bytes(o, &b) || b.n != 1)
		return 0;
	ch = b.p[0];
	if (ch >= 'a' && ch <= 'z')
		ch = (char)(ch - 'a' + 'A');
	if (op == PROTO_OP_META_SET)
		return ch && strchr("SEAPR", ch) ? ch : 0;
	if (ch == '+')
		return 'I';
	if (ch == '-')
		return 'D';
	return ch == 'I' || ch == 'D' ? ch : 0;
}

/* One option's value into m; false when it has the wrong type. */
static bool meta_opt_value(uint32_t op, const struct meta_opt *d,
			   const msgpack_object *o, struct proto_bin_meta *m)
{
	uint64_t u = 0;
	int64_t i = 0;

	switch (d->type) {
	case OT_BOOL:
		if (o->type != MSGPACK_OBJECT_BOOLEAN)
			return false;
		if (o->via.boolean)
			m->opts |= d->bit;
		return true;
	case OT_INT:
		if (!get_i64(o, &i))
			return false;
		break;
	case OT_UINT:
		if (!get_u64(o, &u))
			return false;
		break;
	case OT_U32:
		if (!get_u64(o, &u) || u > UINT32_MAX)
			return false;
		break;
	case OT_MODE:
		m->mode = meta_mode(op, o);
		if (!m->mode)
			return false;
		break;
	}
	m->opts |= d->bit;
	switch (d->bit) {
	case PROTO_META_TTL:
		m->ttl = i;
		break;
	case PROTO_META_VIVIFY:
		m->vivify_ttl = i;
		break;
	case PROTO_META_RECACHE:
		m->recache_ttl = i;
		break;
	case PROTO_META_CAS:
		m->cas = u;
		break;
	case PROTO_META_NEW_CAS:
		m->new_cas = u;
		break;
	case PROTO_META_FLAGS:
		m->flags = (uint32_t)u;
		break;
	case PROTO_META_DELTA:
		m->delta = u;
		break;
	case PROTO_META_INITIAL:
		m->initial = u;
		break;
	default:
		break;
	}
	return true;
}

/* A meta op's options map (o NULL: none given). Strict: see binary.h. The
 * map's size is bounded by the shape check (bytes present) and here. */
static enum proto_bin_result meta_options(uint32_t op, const msgpack_object *o,
					  struct proto_bin_meta *m,
					  uint32_t *status, const char **error)
{
	uint32_t seen = 0, opmask = 1u << (op - PROTO_OP_META_GET);

	m->delta = 1;
	if (!o)
		return PROTO_BIN_OK;
	if (o->type != MSGPACK_OBJECT_MAP)
		REJECT(PROTO_ST_BAD_REQUEST, "options: not a map");
	if (o->via.map.size > PROTO_BIN_META_OPTS_MAX)
		REJECT(PROTO_ST_BAD_REQUEST, "options: too many");
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		const struct meta_opt *d;
		struct proto_bin_bytes k;

		if (!get_bytes(&kv->key, &k))
			REJECT(PROTO_ST_BAD_REQUEST,
			       "option: key not a string");
		d = meta_opt_find(k.p, k.n);
		if (!d)
			REJECT(PROTO_ST_BAD_REQUEST, "option: unknown");
		if (!(d->ops & opmask))
			REJECT(PROTO_ST_BAD_REQUEST,
			       "option: not taken by this op");
		if (seen & d->bit)
			REJECT(PROTO_ST_BAD_REQUEST, "option: given twice");
		seen |= d->bit;
		if (!meta_opt_value(op, d, &kv->val, m))
			REJECT(PROTO_ST_BAD_REQUEST, d->bad);
	}
	return PROTO_BIN_OK;
}

/* The arguments of req->op from a[2..]; op, id and arity are checked. */
static enum proto_bin_result args(const msgpack_object_array *a,
				  uint32_t max_value, struct proto_bin_req *r,
				  uint32_t *status, const char **error)
{
	const msgpack_object *o;
	uint64_t u;

	if (has_key(r->op)) {
		if (!get_bytes(&a->ptr[2], &r->key))
			REJECT(PROTO_ST_BAD_REQUEST, "key: not str or bin");
		if (!proto_bin_key_ok(r->key.p, r->key.n))
			REJECT(PROTO_ST_BAD_KEY, "bad key");
	}
	switch (r->op) {
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
	case PROTO_OP_CAS:
		if (!get_bytes(&a->ptr[3], &r->value))
			REJECT(PROTO_ST_BAD_REQUEST, "value: not bin or str");
		if (r->value.n > max_value)
			REJECT(PROTO_ST_TOO_LARGE,
			       "object too large for cache");
		if ((o = opt(a, 4))) {
			if (!get_u64(o, &u) || u > UINT32_MAX)
				REJECT(PROTO_ST_BAD_REQUEST,
				       "flags: not a 32-bit unsigned integer");
			r->flags = (uint32_t)u;
		}
		if ((o = opt(a, 5)) && !get_i64(o, &r->exptime))
			REJECT(PROTO_ST_BAD_REQUEST, "exptime: not an integer");
		if (r->op == PROTO_OP_CAS && !get_u64(&a->ptr[6], &r->cas))
			REJECT(PROTO_ST_BAD_REQUEST,
			       "cas: not an unsigned integer");
		break;
	case PROTO_OP_INCR:
	case PROTO_OP_DECR:
		if (!get_u64(&a->ptr[3], &r->delta))
			REJECT(PROTO_ST_BAD_REQUEST,
			       "delta: not an unsigned integer");
		break;
	case PROTO_OP_TOUCH:
	case PROTO_OP_GAT:
		if (!get_i64(&a->ptr[3], &r->exptime))
			REJECT(PROTO_ST_BAD_REQUEST, "exptime: not an integer");
		break;
	case PROTO_OP_MGET:
		if (a->ptr[2].type != MSGPACK_OBJECT_ARRAY)
			REJECT(PROTO_ST_BAD_REQUEST, "keys: not an array");
		r->keys = a->ptr[2].via.array.ptr;
		r->nkeys = a->ptr[2].via.array.size;
		break;
	case PROTO_OP_FLUSH_ALL:
		if ((o = opt(a, 2)) && !get_i64(o, &r->delay))
			REJECT(PROTO_ST_BAD_REQUEST, "delay: not an integer");
		break;
	case PROTO_OP_SCAN:
		if (!get_u64(&a->ptr[2], &r->cursor))
			REJECT(PROTO_ST_BAD_REQUEST,
			       "cursor: not an unsigned integer");
		r->count = PROTO_SCAN_COUNT_DEFAULT;
		if ((o = opt(a, 3))) {
			if (!get_u64(o, &u) || u < 1 ||
			    u > PROTO_SCAN_COUNT_MAX)
				REJECT(PROTO_ST_BAD_REQUEST,
				       "count: not in 1..1000");
			r->count = (uint32_t)u;
		}
		if ((o = opt(a, 4))) {
			if (!get_bytes(o, &r->match))
				REJECT(PROTO_ST_BAD_REQUEST,
				       "match: not str or bin");
			r->has_match = true;
		}
		break;
	case PROTO_OP_STATS:
		if ((o = opt(a, 2)) && !get_bytes(o, &r->text))
			REJECT(PROTO_ST_BAD_REQUEST, "group: not a string");
		break;
	case PROTO_OP_AUTH: /* [password] or [user, password] */
		if (!get_bytes(&a->ptr[a->size - 1], &r->text))
			REJECT(PROTO_ST_BAD_REQUEST, "password: not a string");
		if (a->size == 4 && !get_bytes(&a->ptr[2], &r->user))
			REJECT(PROTO_ST_BAD_REQUEST, "user: not a string");
		break;
	case PROTO_OP_META_SET:
		if (!get_bytes(&a->ptr[3], &r->value))
			REJECT(PROTO_ST_BAD_REQUEST, "value: not bin or str");
		/* The options first: a too large value is answered TOO_LARGE
		 * only for a request that is otherwise well formed. */
		if (meta_options(r->op, opt(a, 4), &r->meta, status, error))
			return PROTO_BIN_REJECT;
		if (r->value.n > max_value)
			REJECT(PROTO_ST_TOO_LARGE,
			       "object too large for cache");
		break;
	case PROTO_OP_META_GET:
	case PROTO_OP_META_DELETE:
	case PROTO_OP_META_ARITH:
		return meta_options(r->op, opt(a, 3), &r->meta, status, error);
	default:
		break;
	}
	return PROTO_BIN_OK;
}

/* ---- the direct path ---- */

/*
 * A load is made of GETs and SETs, each a flat array of a few scalars: for
 * them the shape walk, msgpack-c's object tree and its zone cost more than
 * the request's lookup. decode_direct reads the plain encodings of the key
 * ops (GET, GETS, DELETE) and of the stores but CAS straight from the
 * bytes. It takes only what the general path would decode as PROTO_BIN_OK,
 * into the same struct; anything else (another op, a form it does not
 * read, anything the general path would reject or refuse) makes it return
 * false, and the general path decides.
 */
struct reader {
	const unsigned char *p, *end;
};

/* An unsigned format (positive fixint, uint 8..64): a positive integer
 * to msgpack-c. */
static bool read_uint(struct reader *r, uint64_t *v)
{
	const unsigned char *p = r->p;
	size_t left = (size_t)(r->end - p), len;

	if (!left)
		return false;
	if (p[0] <= 0x7f) {
		*v = p[0];
		r->p++;
		return true;
	}
	switch (p[0]) {
	case 0xcc:
		len = 1;
		break;
	case 0xcd:
		len = 2;
		break;
	case 0xce:
		len = 4;
		break;
	case 0xcf:
		len = 8;
		break;
	default:
		return false;
	}
	if (left < 1 + len)
		return false;
	*v = 0;
	for (size_t i = 1; i <= len; i++)
		*v = *v << 8 | p[i];
	r->p += 1 + len;
	return true;
}

/* What get_i64 takes, in the forms read here: an unsigned format up to
 * INT64_MAX or a negative fixint. */
static bool read_int(struct reader *r, int64_t *v)
{
	uint64_t u;

	if (r->p < r->end && *r->p >= 0xe0) {
		*v = (int8_t)*r->p++;
		return true;
	}
	if (!read_uint(r, &u) || u > INT64_MAX)
		return false;
	*v = (int64_t)u;
	return true;
}

/* A str or bin, its bytes inside the body. */
static bool read_bytes(struct reader *r, struct proto_bin_bytes *b)
{
	const unsigned char *p = r->p;
	size_t left = (size_t)(r->end - p), head, n;

	if (!left)
		return false;
	if (p[0] >= 0xa0 && p[0] <= 0xbf) {
		head = 1;
		n = p[0] & 0x1fu;
	} else if ((p[0] == 0xc4 || p[0] == 0xd9) && left >= 2) {
		head = 2;
		n = p[1];
	} else if ((p[0] == 0xc5 || p[0] == 0xda) && left >= 3) {
		head = 3;
		n = be16(p + 1);
	} else if ((p[0] == 0xc6 || p[0] == 0xdb) && left >= 5) {
		head = 5;
		n = be32(p + 1);
	} else {
		return false;
	}
	if (n > left - head)
		return false;
	b->p = (const char *)p + head;
	b->n = (uint32_t)n;
	r->p += head + n;
	return true;
}

/* An optional argument given as nil: skipped, it is absent. */
static bool read_nil(struct reader *r)
{
	if (r->p < r->end && *r->p == 0xc0) {
		r->p++;
		return true;
	}
	return false;
}

static bool decode_direct(const char *body, size_t n, uint32_t max_value,
			  struct proto_bin_req *req)
{
	struct reader r = { (const unsigned char *)body,
			    (const unsigned char *)body + n };
	uint64_t op, id, u;
	uint32_t nargs;

	/* A fixarray of op, id and one to four arguments. */
	if (n < 4 || r.p[0] < 0x93 || r.p[0] > 0x96)
		return false;
	nargs = (r.p[0] & 0x0fu) - 2;
	r.p++;
	if (!read_uint(&r, &op) || !read_uint(&r, &id))
		return false;
	switch (op) {
	case PROTO_OP_GET:
	case PROTO_OP_GETS:
	case PROTO_OP_DELETE:
	case PROTO_OP_SET:
	case PROTO_OP_ADD:
	case PROTO_OP_REPLACE:
	case PROTO_OP_APPEND:
	case PROTO_OP_PREPEND:
		break;
	default:
		return false;
	}
	if (nargs < arity[op].min || nargs > arity[op].max)
		return false;
	memset(req, 0, sizeof(*req));
	req->op = (uint32_t)op;
	req->id = id;
	if (!read_bytes(&r, &req->key) ||
	    !proto_bin_key_ok(req->key.p, req->key.n))
		return false;
	if (nargs >= 2 &&
	    (!read_bytes(&r, &req->value) || req->value.n > max_value))
		return false;
	if (nargs >= 3 && !read_nil(&r)) {
		if (!read_uint(&r, &u) || u > UINT32_MAX)
			return false;
		req->flags = (uint32_t)u;
	}
	if (nargs >= 4 && !read_nil(&r) && !read_int(&r, &req->exptime))
		return false;
	return r.p == r.end;
}

enum proto_bin_result proto_bin_decode_request(struct proto_bin_decoder *d,
					       const char *body, size_t n,
					       uint32_t max_value,
					       struct proto_bin_req *req,
					       uint32_t *status,
					       const char **error)
{
	const msgpack_object_array *a;
	uint64_t op;
	uint32_t nargs;

	if (decode_direct(body, n, max_value, req))
		return PROTO_BIN_OK;
	a = unpack_array(d, body, n);
	memset(req, 0, sizeof(*req));
	if (!a || a->size < 2 || !get_u64(&a->ptr[0], &op) ||
	    !get_u64(&a->ptr[1], &req->id))
		return PROTO_BIN_FATAL;
	if (op == 0 || op > PROTO_OP_MAX)
		REJECT(PROTO_ST_BAD_REQUEST, "unknown op");
	req->op = (uint32_t)op;
	nargs = a->size - 2;
	if (nargs < arity[op].min || nargs > arity[op].max)
		REJECT(PROTO_ST_BAD_REQUEST, "wrong number of arguments");
	return args(a, max_value, req, status, error);
}

enum proto_bin_result proto_bin_decode_reply(struct proto_bin_decoder *d,
					     const char *body, size_t n,
					     struct proto_bin_reply *reply)
{
	const msgpack_object_array *a = unpack_array(d, body, n);
	uint64_t status;

	if (!a || a->size != 3 || !get_u64(&a->ptr[0], &reply->id) ||
	    !get_u64(&a->ptr[1], &status) || status > UINT32_MAX)
		return PROTO_BIN_FATAL;
	reply->status = (uint32_t)status;
	reply->payload = a->ptr[2];
	return PROTO_BIN_OK;
}

/* The entries of a meta reply's map, in the order they are packed. */
static const struct {
	const char *name;
	uint32_t field;
} reply_keys[] = {
	{ "flags", PROTO_MR_FLAGS }, { "cas", PROTO_MR_CAS },
	{ "ttl", PROTO_MR_TTL },     { "size", PROTO_MR_SIZE },
	{ "la", PROTO_MR_LA },	     { "hit", PROTO_MR_HIT },
	{ "won", PROTO_MR_WON },     { "stale", PROTO_MR_STALE },
	{ "wonby", PROTO_MR_WONBY }, { "value", PROTO_MR_VALUE },
};

#define N_REPLY_KEYS (sizeof(reply_keys) / sizeof(reply_keys[0]))

static bool get_u32(const msgpack_object *o, uint32_t *v)
{
	uint64_t u;

	if (!get_u64(o, &u) || u > UINT32_MAX)
		return false;
	*v = (uint32_t)u;
	return true;
}

/* One known entry of a meta reply into m. */
static bool meta_reply_entry(uint32_t field, const msgpack_object *o,
			     struct proto_bin_meta_reply *m)
{
	bool ok = true;

	switch (field) {
	case PROTO_MR_FLAGS:
		ok = get_u32(o, &m->flags);
		break;
	case PROTO_MR_CAS:
		ok = get_u64(o, &m->cas);
		break;
	case PROTO_MR_TTL:
		ok = get_i64(o, &m->ttl);
		break;
	case PROTO_MR_SIZE:
		ok = get_u32(o, &m->size);
		break;
	case PROTO_MR_LA:
		ok = get_u32(o, &m->last_access);
		break;
	case PROTO_MR_VALUE:
		if (get_u64(o, &m->number)) {
			m->fields |= PROTO_MR_NUMBER;
			return true;
		}
		ok = get_bytes(o, &m->value);
		break;
	default: /* the booleans */
		if (o->type != MSGPACK_OBJECT_BOOLEAN)
			return false;
		if (field == PROTO_MR_HIT)
			m->hit = o->via.boolean;
		else if (!o->via.boolean)
			return true; /* false: as if absent */
		break;
	}
	if (ok)
		m->fields |= field;
	return ok;
}

bool proto_bin_meta_reply_decode(const msgpack_object *o,
				 struct proto_bin_meta_reply *m)
{
	memset(m, 0, sizeof(*m));
	if (o->type == MSGPACK_OBJECT_NIL)
		return true;
	if (o->type != MSGPACK_OBJECT_MAP)
		return false;
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		struct proto_bin_bytes k;
		uint32_t field = 0;

		if (!get_bytes(&kv->key, &k))
			return false;
		for (size_t j = 0; j < N_REPLY_KEYS && !field; j++)
			if (strlen(reply_keys[j].name) == k.n &&
			    memcmp(reply_keys[j].name, k.p, k.n) == 0)
				field = reply_keys[j].field;
		if (field && !meta_reply_entry(field, &kv->val, m))
			return false;
	}
	return true;
}

/* ---- encoding ---- */

size_t proto_bin_begin(msgpack_sbuffer *sb)
{
	static const char zero[PROTO_BIN_HEADER];
	size_t at = sb->size;

	if (msgpack_sbuffer_write(sb, zero, sizeof(zero)))
		return (size_t)-1;
	return at;
}

void proto_bin_end(msgpack_sbuffer *sb, size_t frame)
{
	uint32_t len = (uint32_t)(sb->size - frame - PROTO_BIN_HEADER);
	unsigned char *p = (unsigned char *)sb->data + frame;

	p[0] = (unsigned char)(len >> 24);
	p[1] = (unsigned char)(len >> 16);
	p[2] = (unsigned char)(len >> 8);
	p[3] = (unsigned char)len;
}

size_t proto_bin_put_uint(unsigned char *p, uint64_t v)
{
	size_t len;

	if (v <= 0x7f) {
		p[0] = (unsigned char)v;
		return 1;
	}
	if (v <= UINT8_MAX) {
		p[0] = 0xcc;
		len = 1;
	} else if (v <= UINT16_MAX) {
		p[0] = 0xcd;
		len = 2;
	} else if (v <= UINT32_MAX) {
		p[0] = 0xce;
		len = 4;
	} else {
		p[0] = 0xcf;
		len = 8;
	}
	for (size_t i = len; i >= 1; i--, v >>= 8)
		p[i] = (unsigned char)v;
	return 1 + len;
}

size_t proto_bin_put_bin_head(unsigned char *p, uint32_t n)
{
	if (n <= UINT8_MAX) {
		p[0] = 0xc4;
		p[1] = (unsigned char)n;
		return 2;
	}
	if (n <= UINT16_MAX) {
		p[0] = 0xc5;
		p[1] = (unsigned char)(n >> 8);
		p[2] = (unsigned char)n;
		return 3;
	}
	p[0] = 0xc6;
	p[1] = (unsigned char)(n >> 24);
	p[2] = (unsigned char)(n >> 16);
	p[3] = (unsigned char)(n >> 8);
	p[4] = (unsigned char)n;
	return 5;
}

size_t proto_bin_put_reply_head(unsigned char *p, uint64_t id, uint32_t status)
{
	size_t n = 1;

	p[0] = 0x93;
	n += proto_bin_put_uint(p + n, id);
	n += proto_bin_put_uint(p + n, status);
	return n;
}

void proto_bin_pack_reply_head(msgpack_packer *pk, uint64_t id, uint32_t status)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, id);
	msgpack_pack_uint32(pk, status);
}

void proto_bin_pack_request_head(msgpack_packer *pk, uint32_t op, uint64_t id,
				 uint32_t nargs)
{
	msgpack_pack_array(pk, 2 + nargs);
	msgpack_pack_uint32(pk, op);
	msgpack_pack_uint64(pk, id);
}

static int pack_cstr(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

int proto_bin_pack_meta_opts(msgpack_packer *pk, const struct proto_bin_meta *m)
{
	uint32_t n = 0;
	int e;

	for (size_t i = 0; i < N_META_OPTS; i++)
		n += !!(m->opts & meta_opts[i].bit);
	e = msgpack_pack_map(pk, n);
	for (size_t i = 0; i < N_META_OPTS; i++) {
		const struct meta_opt *d = &meta_opts[i];

		if (!(m->opts & d->bit))
			continue;
		e |= pack_cstr(pk, d->name);
		switch (d->bit) {
		case PROTO_META_TTL:
			e |= msgpack_pack_int64(pk, m->ttl);
			break;
		case PROTO_META_VIVIFY:
			e |= msgpack_pack_int64(pk, m->vivify_ttl);
			break;
		case PROTO_META_RECACHE:
			e |= msgpack_pack_int64(pk, m->recache_ttl);
			break;
		case PROTO_META_CAS:
			e |= msgpack_pack_uint64(pk, m->cas);
			break;
		case PROTO_META_NEW_CAS:
			e |= msgpack_pack_uint64(pk, m->new_cas);
			break;
		case PROTO_META_FLAGS:
			e |= msgpack_pack_uint32(pk, m->flags);
			break;
		case PROTO_META_DELTA:
			e |= msgpack_pack_uint64(pk, m->delta);
			break;
		case PROTO_META_INITIAL:
			e |= msgpack_pack_uint64(pk, m->initial);
			break;
		case PROTO_META_MODE:
			e |= msgpack_pack_str(pk, 1);
			e |= msgpack_pack_str_body(pk, &m->mode, 1);
			break;
		default: /* the booleans */
			e |= msgpack_pack_true(pk);
			break;
		}
	}
	return e;
}

int proto_bin_pack_meta_reply(msgpack_packer *pk,
			      const struct proto_bin_meta_reply *m,
			      bool value_body)
{
	uint32_t fields = m->fields, n = 0;
	int e;

	if (fields & PROTO_MR_NUMBER) /* "value", packed as the number */
		fields |= PROTO_MR_VALUE;
	for (size_t i = 0; i < N_REPLY_KEYS; i++)
		n += !!(fields & reply_keys[i].field);
	e = msgpack_pack_map(pk, n);
	for (size_t i = 0; i < N_REPLY_KEYS; i++) {
		uint32_t f = reply_keys[i].field;

		if (!(fields & f))
			continue;
		e |= pack_cstr(pk, reply_keys[i].name);
		switch (f) {
		case PROTO_MR_FLAGS:
			e |= msgpack_pack_uint32(pk, m->flags);
			break;
		case PROTO_MR_CAS:
			e |= msgpack_pack_uint64(pk, m->cas);
			break;
		case PROTO_MR_TTL:
			e |= msgpack_pack_int64(pk, m->ttl);
			break;
		case PROTO_MR_SIZE:
			e |= msgpack_pack_uint32(pk, m->size);
			break;
		case PROTO_MR_LA:
			e |= msgpack_pack_uint32(pk, m->last_access);
			break;
		case PROTO_MR_HIT:
			e |= m->hit ? msgpack_pack_true(pk)
				    : msgpack_pack_false(pk);
			break;
		case PROTO_MR_VALUE:
			if (m->fields & PROTO_MR_NUMBER) {
				e |= msgpack_pack_uint64(pk, m->number);
				break;
			}
			e |= msgpack_pack_bin(pk, m->value.n);
			if (value_body)
				e |= msgpack_pack_bin_body(pk, m->value.p,
							   m->value.n);
			break;
		default: /* won, stale, wonby: present only when true */
			e |= msgpack_pack_true(pk);
			break;
		}
	}
	return e;
}
