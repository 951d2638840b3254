/*
 * libFuzzer target for common/rhashtable: the input is a program of
 * operations on one table (int keys 0..1023), checked against a model that
 * holds each key's current object. The table's resize worker runs
 * concurrently with the operations, so every result must hold whatever it
 * is doing.
 *
 * Byte 0 picks the table: nelem_hint (bits 0-1), max_size (bits 2-3),
 * min_size (bit 4). Then each operation is an opcode byte followed by its
 * argument bytes (missing bytes read as 0). At most MAX_OPS operations run.
 *
 * Removed objects are freed after a grace period (see graveyard_flush).
 *
 * Walks and scans come in two forms: a full one in one operation (no
 * mutation meanwhile: it must report exactly the model, each key at least
 * once), and a stepped one, advanced by later operations with mutations in
 * between (every key present for the whole walk or scan must be reported,
 * and only keys that were present at some time during it).
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"

#define NKEYS	1024
#define KEYMASK 1023
#define MAX_OPS 4096
#define MAGIC	0x6f626a21u
#define DEAD	0xdeadbeefu

struct fobj {
	int key;
	uint32_t magic;
	struct rhash_head node;
	struct fobj *grave_next; /* in the graveyard */
};

static const struct rhashtable_params base_params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct fobj, key),
	.head_offset = offsetof(struct fobj, node),
	.automatic_shrinking = true,
};

/* The inline *_fast functions want constant params: only sizes vary. */
#define P base_params

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr,                                   \
				"fuzz_rhashtable: %s:%d: %s: ", __FILE__, \
				__LINE__, #cond);                         \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			abort();                                          \
		}                                                         \
	} while (0)

struct model {
	struct fobj *obj[NKEYS]; /* current object of each key, or NULL */
	unsigned long count;
};

/* A stepped scan or walk: the keys present throughout, and those present
 * at some time since it began. */
struct span {
	bool active;
	bool weak; /* a mutation may make a stepped walk skip (see WALKING) */
	uint8_t throughout[NKEYS];
	uint8_t ever[NKEYS];
	uint8_t seen[NKEYS];
};

struct state {
	struct rhashtable ht;
	struct model m;
	struct span scan, walk;
	uint64_t cursor;
	struct rhashtable_iter iter;
};

static struct fobj *obj_new(int key)
{
	struct fobj *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->key = key;
	o->magic = MAGIC;
	return o;
}

static void obj_free_now(struct fobj *o)
{
	o->magic = DEAD;
	free(o);
}

/*
 * Removed and replaced objects wait in a graveyard for a grace period
 * (rhkv_rcu_synchronize), then are freed, every GRAVE_MAX of them and at
 * the end of each input. Not rhkv_rcu_call(): its frees land in a later
 * input, and libFuzzer then runs a leak check (milliseconds) on every input
 * whose mallocs and frees do not balance; rhkv_rcu_barrier() per input
 * costs as much (the call_rcu thread polls every 10 ms).
 */
#define GRAVE_MAX 128

static struct fobj *graveyard;
static unsigned int graves;

static void graveyard_flush(void)
{
	if (!graveyard)
		return;
	rhkv_rcu_synchronize();
	while (graveyard) {
		struct fobj *o = graveyard;

		graveyard = o->grave_next;
		obj_free_now(o);
	}
	graves = 0;
}

/* Frees an object that was in the table, after a grace period. */
static void obj_retire(struct fobj *o)
{
	o->grave_next = graveyard;
	graveyard = o;
	if (++graves >= GRAVE_MAX)
		graveyard_flush();
}

static void free_fn(void *ptr, void *arg)
{
	struct fobj *o = ptr;
	unsigned long *n = arg;

	CHECK(o->magic == MAGIC, "destroy frees a dead object");
	(*n)++;
	obj_free_now(o);
}

/* Records that key's presence changed: spans lose it from "throughout". */
static void spans_note(struct state *s, int key, bool present, bool removal)
{
	struct span *sp[2] = { &s->scan, &s->walk };

	for (int i = 0; i < 2; i++) {
		if (!sp[i]->active)
			continue;
		if (present)
			sp[i]->ever[key] = 1;
		else
			sp[i]->throughout[key] = 0;
		if (removal)
			sp[i]->weak = true;
	}
}

static void span_begin(struct state *s, struct span *sp)
{
	sp->active = true;
	sp->weak = false;
	for (int k = 0; k < NKEYS; k++) {
		sp->throughout[k] = s->m.obj[k] != NULL;
		sp->ever[k] = s->m.obj[k] != NULL;
		sp->seen[k] = 0;
	}
}

/* A reported object of a stepped walk or scan. */
static void span_report(struct span *sp, struct fobj *o, const char *what)
{
	CHECK(o->magic == MAGIC, "%s reports a dead object", what);
	CHECK(o->key >= 0 && o->key < NKEYS, "%s reports key %d", what, o->key);
	CHECK(sp->ever[o->key], "%s reports key %d, never present during it",
	      what, o->key);
	sp->seen[o->key] = 1;
}

static void span_end(struct span *sp, const char *what, bool complete)
{
	sp->active = false;
	if (!complete)
		return;
	for (int k = 0; k < NKEYS; k++)
		CHECK(!sp->throughout[k] || sp->seen[k],
		      "%s missed key %d, present throughout", what, k);
}

/* Checks a full (non-stepped) report against the model. */
static void full_report(struct state *s, uint8_t *seen, struct fobj *o,
			const char *what)
{
	CHECK(o->magic == MAGIC, "%s reports a dead object", what);
	CHECK(o->key >= 0 && o->key < NKEYS, "%s reports key %d", what, o->key);
	CHECK(s->m.obj[o->key] == o, "%s reports key %d: %p, model has %p",
	      what, o->key, (void *)o, (void *)s->m.obj[o->key]);
	seen[o->key] = 1;
}

static void full_check(struct state *s, const uint8_t *seen, const char *what)
{
	for (int k = 0; k < NKEYS; k++)
		CHECK(!s->m.obj[k] || seen[k], "%s missed key %d", what, k);
}

static void check_nelems(struct state *s)
{
	unsigned long n = rhashtable_nelems(&s->ht);

	CHECK(n == s->m.count, "nelems %lu, model %lu", n, s->m.count);
}

/* Expected result of an insert of an absent key. */
static int insert_expect(struct state *s)
{
	return s->ht.max_elems && s->m.count >= s->ht.max_elems ? -E2BIG : 0;
}

static void inserted(struct state *s, int key, struct fobj *o)
{
	s->m.obj[key] = o;
	s->m.count++;
	spans_note(s, key, true, false);
}

/* kind 0: lookup_insert_fast, 1: lookup_get_insert_fast, 2: *_key forms
 * (by turns), 3: insert_fast (only when absent: it does not check). */
static void op_insert(struct state *s, int key, int kind)
{
	struct fobj *cur = s->m.obj[key];
	struct fobj *o;
	int expect = cur ? -EEXIST : insert_expect(s);

	if (kind == 3 && cur)
		return;
	o = obj_new(key);
	switch (kind) {
	case 0: {
		int r = rhashtable_lookup_insert_fast(&s->ht, &o->node, P);

		CHECK(r == expect, "lookup_insert key %d: %d, expected %d", key,
		      r, expect);
		break;
	}
	case 1: {
		void *r =
			rhashtable_lookup_get_insert_fast(&s->ht, &o->node, P);

		if (cur)
			CHECK(r == cur, "lookup_get_insert key %d: %p, not %p",
			      key, r, (void *)cur);
		else if (expect)
			CHECK(r == ERR_PTR(expect),
			      "lookup_get_insert key %d: %p, expected %d", key,
			      r, expect);
		else
			CHECK(r == NULL, "lookup_get_insert key %d: %p", key,
			      r);
		break;
	}
	case 2: {
		int k = key;

		if (key & 1) {
			int r = rhashtable_lookup_insert_key(&s->ht, &k,
							     &o->node, P);

			CHECK(r == expect,
			      "lookup_insert_key key %d: %d, expected %d", key,
			      r, expect);
		} else {
			void *r = rhashtable_lookup_get_insert_key(&s->ht, &k,
								   &o->node, P);

			if (cur)
				CHECK(r == cur, "get_insert_key %d: %p", key,
				      r);
			else if (expect)
				CHECK(r == ERR_PTR(expect),
				      "get_insert_key %d: %p", key, r);
			else
				CHECK(r == NULL, "get_insert_key %d: %p", key,
				      r);
		}
		break;
	}
	default: {
		int r = rhashtable_insert_fast(&s->ht, &o->node, P);

		CHECK(r == expect, "insert_fast key %d: %d, expected %d", key,
		      r, expect);
		break;
	}
	}
	if (cur || expect)
		obj_free_now(o); /* never in the table */
	else
		inserted(s, key, o);
}

static void op_remove(struct state *s, int key)
{
	struct fobj *cur = s->m.obj[key];

	if (cur) {
		int r = rhashtable_remove_fast(&s->ht, &cur->node, P);

		CHECK(r == 0, "remove key %d: %d", key, r);
		s->m.obj[key] = NULL;
		s->m.count--;
		spans_note(s, key, false, true);
		obj_retire(cur);
	} else {
		struct fobj dummy = { .key = key, .magic = MAGIC };
		int r = rhashtable_remove_fast(&s->ht, &dummy.node, P);

		CHECK(r == -ENOENT, "remove absent key %d: %d", key, r);
	}
}

static void op_replace(struct state *s, int key)
{
	struct fobj *cur = s->m.obj[key];
	struct fobj *o = obj_new(key);

	if (cur) {
		int r = rhashtable_replace_fast(&s->ht, &cur->node, &o->node,
						P);

		CHECK(r == 0, "replace key %d: %d", key, r);
		s->m.obj[key] = o;
		/* The key stays, but the object that had it is gone. */
		spans_note(s, key, false, true);
		spans_note(s, key, true, false);
		obj_retire(cur);
	} else {
		struct fobj dummy = { .key = key, .magic = MAGIC };
		int r = rhashtable_replace_fast(&s->ht, &dummy.node, &o->node,
						P);

		CHECK(r == -ENOENT, "replace absent key %d: %d", key, r);
		obj_free_now(o);
	}
	/* A different key never hashes the same as often as to matter;
	 * when it does not, replace must refuse it. */
	if (s->m.obj[key] && s->m.obj[(key + 1) & KEYMASK] == NULL) {
		struct fobj *other = obj_new((key + 1) & KEYMASK);
		int r = rhashtable_replace_fast(&s->ht, &s->m.obj[key]->node,
						&other->node, P);

		CHECK(r == -EINVAL || r == 0, "replace with another key: %d",
		      r);
		if (r == 0) {
			/* Same hash: now other is in the table in place of
			 * key's object; undo to keep the model simple. */
			r = rhashtable_replace_fast(&s->ht, &other->node,
						    &s->m.obj[key]->node, P);
			CHECK(r == 0, "undo replace: %d", r);
			obj_retire(other);
		} else {
			obj_free_now(other);
		}
	}
}

static void op_lookup(struct state *s, int key)
{
	void *r;

	rhkv_rcu_read_lock();
	r = rhashtable_lookup(&s->ht, &key, P);
	CHECK(r == s->m.obj[key], "lookup key %d: %p, model %p", key, r,
	      (void *)s->m.obj[key]);
	rhkv_rcu_read_unlock();
}

/* A walk with no mutation; walk_stop/start every `every` objects. */
static void op_walk_full(struct state *s, unsigned int every)
{
	struct rhashtable_iter it;
	static uint8_t seen[NKEYS];
	unsigned int n = 0, again = 0;
	void *o;

	memset(seen, 0, sizeof(seen));
	rhashtable_walk_enter(&s->ht, &it);
	rhashtable_walk_start(&it);
	for (;;) {
		o = rhashtable_walk_next(&it);
		if (!o)
			break;
		if (IS_ERR(o)) {
			CHECK(PTR_ERR(o) == -EAGAIN, "walk_next: %ld",
			      PTR_ERR(o));
			CHECK(++again < 10000, "walk: endless -EAGAIN");
			continue;
		}
		full_report(s, seen, o, "walk");
		if (every && ++n % every == 0) {
			rhashtable_walk_stop(&it);
			if (n % (every * 4) == 0)
				sched_yield();
			rhashtable_walk_start(&it);
		}
		CHECK(n < 1000000, "walk does not end");
	}
	rhashtable_walk_stop(&it);
	rhashtable_walk_exit(&it);
	full_check(s, seen, "walk");
}

struct scan_arg {
	struct state *s;
	uint8_t *seen;
	struct span *span;
};

static void scan_full_fn(void *obj, void *arg)
{
	struct scan_arg *a = arg;

	full_report(a->s, a->seen, obj, "scan");
}

static void scan_step_fn(void *obj, void *arg)
{
	struct scan_arg *a = arg;

	span_report(a->span, obj, "stepped scan");
}

static void op_scan_full(struct state *s, unsigned int count)
{
	static uint8_t seen[NKEYS];
	struct scan_arg a = { .s = s, .seen = seen };
	uint64_t c = 0;
	unsigned long calls = 0;

	memset(seen, 0, sizeof(seen));
	do {
		c = rhashtable_scan(&s->ht, c, count, scan_full_fn, &a, NULL);
		CHECK(++calls < 10000000, "scan does not end");
		if (calls % 4096 == 0)
			sched_yield(); /* a re-seed in flight */
	} while (c);
	full_check(s, seen, "scan");
}

/* Advances the stepped scan by up to `calls` calls. */
static void op_scan_step(struct state *s, unsigned int count,
			 unsigned int calls)
{
	struct scan_arg a = { .s = s, .span = &s->scan };

	if (!s->scan.active) {
		span_begin(s, &s->scan);
		s->cursor = 0;
	}
	for (unsigned int i = 0; i < calls; i++) {
		s->cursor = rhashtable_scan(&s->ht, s->cursor, count,
					    scan_step_fn, &a, NULL);
		if (!s->cursor) {
			span_end(&s->scan, "stepped scan", true);
			return;
		}
	}
}

/* Advances the stepped walk by up to n objects, in one start..stop. */
static void op_walk_step(struct state *s, unsigned int n)
{
	void *o;

	if (!s->walk.active) {
		span_begin(s, &s->walk);
		rhashtable_walk_enter(&s->ht, &s->iter);
	}
	rhashtable_walk_start(&s->iter);
	for (unsigned int i = 0; i < n;) {
		o = rhashtable_walk_next(&s->iter);
		if (!o) {
			rhashtable_walk_stop(&s->iter);
			rhashtable_walk_exit(&s->iter);
			/* A remove or replace while stopped may make the walk
			 * skip objects (see WALKING): check only if none. */
			span_end(&s->walk, "stepped walk", !s->walk.weak);
			return;
		}
		if (IS_ERR(o)) {
			CHECK(PTR_ERR(o) == -EAGAIN, "walk_next: %ld",
			      PTR_ERR(o));
			continue;
		}
		span_report(&s->walk, o, "stepped walk");
		i++;
	}
	rhashtable_walk_stop(&s->iter);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits (bounded) until no resize is in flight. */
static void op_wait(struct state *s)
{
	int64_t start = now_ns();

	while (rht__resizing(&s->ht)) {
		CHECK(now_ns() - start < 10LL * 1000000000,
		      "resize still in flight after 10 s");
		sched_yield();
	}
	check_nelems(s);
}

static void range_insert(struct state *s, int key, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		op_insert(s, (key + (int)i) & KEYMASK, (int)(i & 3));
}

static void range_remove(struct state *s, int key, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		op_remove(s, (key + (int)i) & KEYMASK);
}

/* Two bytes (missing ones read as 0), big-endian, as a key. */
static int read_key(const uint8_t *data, size_t size, size_t *i)
{
	int key = 0;

	for (int j = 0; j < 2; j++)
		key = key << 8 | (*i < size ? data[(*i)++] : 0);
	return key & KEYMASK;
}

static bool rcu_registered;

static const unsigned int hints[4] = { 0, 4, 16, 100 };
static const unsigned int max_sizes[4] = { 0, 0, 16, 128 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct state s;
	struct rhashtable_params p = base_params;
	size_t i = 1;
	unsigned long freed = 0;

	if (!rcu_registered) {
		rhkv_rcu_register_thread();
		rcu_registered = true;
	}
	if (size < 1)
		return 0;
	memset(&s, 0, sizeof(s));
	p.nelem_hint = hints[data[0] & 3];
	p.max_size = max_sizes[(data[0] >> 2) & 3];
	p.min_size = data[0] & 16 ? 16 : 0;
	CHECK(rhashtable_init(&s.ht, &p) == 0, "init");

#define ARG() (i < size ? data[i++] : 0)
	for (int ops = 0; i < size && ops < MAX_OPS; ops++) {
		uint8_t op = data[i++];
		int key;

		switch (op % 16) {
		case 0:
		case 1:
		case 2:
		case 3:
			key = read_key(data, size, &i);
			op_insert(&s, key, op % 16);
			break;
		case 4:
			key = read_key(data, size, &i);
			op_remove(&s, key);
			break;
		case 5:
			key = read_key(data, size, &i);
			op_replace(&s, key);
			break;
		case 6:
			key = read_key(data, size, &i);
			op_lookup(&s, key);
			break;
		case 7:
			op_walk_full(&s, ARG() & 31);
			break;
		case 8:
			op_scan_full(&s, ARG() & 15);
			break;
		case 9:
			rht__force_reseed(&s.ht);
			break;
		case 10:
			op_wait(&s);
			break;
		case 11: {
			unsigned int n = ARG();

			key = read_key(data, size, &i);
			range_insert(&s, key, n + 1);
			break;
		}
		case 12: {
			unsigned int n = ARG();

			key = read_key(data, size, &i);
			range_remove(&s, key, n + 1);
			break;
		}
		case 13: {
			uint8_t a = ARG();

			op_scan_step(&s, a & 15, (a >> 4) + 1);
			break;
		}
		case 14:
			op_walk_step(&s, ARG() & 63);
			break;
		default:
			/* Every key of a range, replaced: replace chains. */
			key = read_key(data, size, &i);
			for (int j = 0; j < 8; j++)
				op_replace(&s, (key + j) & KEYMASK);
			break;
		}
		if (op & 0x80)
			check_nelems(&s);
	}
#undef ARG
	check_nelems(&s);
	/* Finish what is in progress, checking it. */
	while (s.scan.active)
		op_scan_step(&s, 16, 64);
	if (s.walk.active)
		op_walk_step(&s, ~0u);
	op_walk_full(&s, 0);
	op_scan_full(&s, 8);

	rhashtable_free_and_destroy(&s.ht, free_fn, &freed);
	CHECK(freed == s.m.count, "destroy freed %lu objects, model %lu", freed,
	      s.m.count);
	graveyard_flush();
	return 0;
}
