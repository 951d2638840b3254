/*
 * The rhashtable stress scenarios of stress_rhashtable.h. Writers on
 * disjoint key ranges check every result against an exact model; readers
 * check a stable set; overlapping writers check what can be checked (a
 * found object is live and has the key); waves of tens of thousands of keys
 * make the table grow and shrink while another thread forces re-seeds.
 */
#include "stress_rhashtable.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rcu.h"
#include "common/rhashtable.h"
#include "common/rhashtable_internal.h"

#define OBJ_LIVE 0x600dcafeu
#define OBJ_DEAD 0xdeadbeefu

/* Key ranges, disjoint: the model of one range never sees another's keys. */
#define KEY_STABLE  (1ull << 40)
#define KEY_OVERLAP (2ull << 40)
#define KEY_ABSENT  (3ull << 40) /* never inserted */
#define KEY_FOREIGN (4ull << 40) /* replace with a wrong key */
#define KEY_WRITER  (8ull << 40) /* + writer index << 32 */
#define KEY_DESTROY (5ull << 40)
#define MAX_THREADS 64

struct stress_ctx;

struct sobj {
	uint64_t key;
	struct rhash_head node;
	uint32_t magic; /* OBJ_LIVE from alloc until free */
	uint32_t owner; /* thread that allocated it */
	struct stress_ctx *ctx;
	struct rcu_head rcu;
};

static const struct rhashtable_params churn_params = {
	.nelem_hint = 16,
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct sobj, key),
	.head_offset = offsetof(struct sobj, node),
	.automatic_shrinking = true,
};

static const struct rhashtable_params destroy_params = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct sobj, key),
	.head_offset = offsetof(struct sobj, node),
};

struct stress_ctx {
	struct rhashtable ht;
	const struct stress_opts *opts;
	struct stress_result *res;
	atomic_bool stop;
	atomic_bool failed;
	atomic_long live;	/* objects allocated and not freed */
	atomic_uint phase;	/* writers' wave: even fill, odd drain */
	atomic_uint arrived;	/* writers at the target of `phase` */
	atomic_ulong forced;	/* rht__force_reseed() calls */
	atomic_uint max_chain;	/* longest chain the reseeder saw */
	struct sobj **stable;	/* stable[i] has key KEY_STABLE + i */
	unsigned long freed_fn; /* free_fn calls during destroy */
};

/* ---- helpers ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 0);
	return *end ? dflt : v;
}

/* Records the first failure, prints every one, and stops all threads. */
static void stress_fail(struct stress_ctx *ctx, int line, const char *fmt, ...)
{
	char buf[sizeof(ctx->res->msg)];
	int n = snprintf(buf, sizeof(buf), "line %d: ", line);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "stress: FAIL (seed %#" PRIx64 "): %s\n",
		ctx->opts->seed, buf);
	/* Only the first writes msg; it is read after the threads joined. */
	if (!atomic_exchange(&ctx->failed, true))
		memcpy(ctx->res->msg, buf, sizeof(buf));
	atomic_store(&ctx->stop, true);
}

#define CHECK(ctx, cond, ...)                                      \
	do {                                                       \
		if (!(cond)) {                                     \
			stress_fail((ctx), __LINE__, __VA_ARGS__); \
			return false;                              \
		}                                                  \
	} while (0)

static bool stopped(struct stress_ctx *ctx)
{
	return atomic_load_explicit(&ctx->stop, memory_order_relaxed);
}

/* xorshift64*, seeded through splitmix64 so that seed + i differ well. */
static uint64_t rng_init(uint64_t seed, unsigned int idx)
{
	uint64_t z = seed + idx * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static unsigned int rng_below(uint64_t *s, unsigned int n)
{
	return (unsigned int)(((rng_next(s) >> 32) * n) >> 32);
}

/* ---- objects ---- */

static struct sobj *obj_new(struct stress_ctx *ctx, uint64_t key,
			    uint32_t owner)
{
	struct sobj *o = calloc(1, sizeof(*o));

	if (!o) {
		fprintf(stderr, "stress: out of memory\n");
		abort();
	}
	o->key = key;
	o->magic = OBJ_LIVE;
	o->owner = owner;
	o->ctx = ctx;
	atomic_fetch_add_explicit(&ctx->live, 1, memory_order_relaxed);
	return o;
}

/* Frees now: the object was never in the table, or no reader remains. */
static void obj_free(struct sobj *o)
{
	struct stress_ctx *ctx = o->ctx;

	if (o->magic != OBJ_LIVE) {
		/* Leak it rather than free it twice. */
		stress_fail(ctx, __LINE__,
			    "object %p (key %#" PRIx64
			    ") freed twice (magic %#x)",
			    (void *)o, o->key, o->magic);
		return;
	}
	o->magic = OBJ_DEAD;
	atomic_fetch_sub_explicit(&ctx->live, 1, memory_order_relaxed);
	free(o);
}

static void obj_free_rcu(struct rcu_head *head)
{
	rhkv_rcu_callback_enter();
	obj_free(caa_container_of(head, struct sobj, rcu));
}

/* Frees an object unlinked from the table after a grace period. */
static void obj_retire(struct sobj *o)
{
	rhkv_rcu_call(&o->rcu, obj_free_rcu);
}

/*
 * Checks a lookup result, inside the read-side section that found it: the
 * exact object `want` when exact, else any live object with the key (or
 * none). Returns false after recording a failure.
 */
static bool obj_check(struct stress_ctx *ctx, const char *who, uint64_t key,
		      const struct sobj *got, const struct sobj *want,
		      bool exact)
{
	CHECK(ctx, !exact || got == want,
	      "%s: lookup(%#" PRIx64 ") found %p, expected %p", who, key,
	      (const void *)got, (const void *)want);
	if (!got)
		return true;
	CHECK(ctx, got->magic == OBJ_LIVE,
	      "%s: lookup(%#" PRIx64 ") found freed object %p (magic %#x, "
	      "made by thread %u)",
	      who, key, (const void *)got, got->magic, got->owner);
	CHECK(ctx, got->key == key,
	      "%s: lookup(%#" PRIx64 ") found %p with key %#" PRIx64
	      " (made by thread %u)",
	      who, key, (const void *)got, got->key, got->owner);
	return true;
}

/* Looks key up under the read lock and checks the result as obj_check. */
static bool lookup_check(struct stress_ctx *ctx, const char *who, uint64_t key,
			 const struct sobj *want, bool exact)
{
	struct sobj *got;
	bool ok;

	rhkv_rcu_read_lock();
	got = rhashtable_lookup(&ctx->ht, &key, churn_params);
	ok = obj_check(ctx, who, key, got, want, exact);
	rhkv_rcu_read_unlock();
	return ok;
}

/* ---- writers on disjoint ranges, with an exact model ---- */

enum op { OP_INSERT, OP_REMOVE, OP_REPLACE };

struct writer {
	struct stress_ctx *ctx;
	pthread_t tid;
	unsigned int idx; /* thread index: seed + idx */
	uint64_t base;	  /* keys base .. base + n - 1 */
	unsigned int n;
	struct sobj **model; /* the object of each key, or NULL */
	unsigned int present;
	unsigned int phase; /* the wave phase last seen */
	bool arrived;	    /* reached the target of `phase` */
	uint64_t rng;
	unsigned long ops, lookups;
};

/* Own key i must be exactly the model's, through both lookups. */
static bool writer_check(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *got;

	if (!lookup_check(ctx, "writer", key, w->model[i], true))
		return false;
	got = rhashtable_lookup_fast(&ctx->ht, &key, churn_params);
	CHECK(ctx, got == w->model[i],
	      "writer %u: lookup_fast(%#" PRIx64 ") = %p, model %p", w->idx,
	      key, (void *)got, (void *)w->model[i]);
	w->lookups += 2;
	return true;
}

static bool writer_check_all(struct writer *w)
{
	for (unsigned int i = 0; i < w->n; i++)
		if (!writer_check(w, i))
			return false;
	return true;
}

static bool writer_insert(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *cur = w->model[i], *o = obj_new(ctx, key, w->idx);
	int want = cur ? -EEXIST : 0, err;
	void *ret;

	switch (rng_below(&w->rng, 4)) {
	case 0:
		err = rhashtable_lookup_insert_fast(&ctx->ht, &o->node,
						    churn_params);
		break;
	case 1:
		ret = rhashtable_lookup_get_insert_fast(&ctx->ht, &o->node,
							churn_params);
		CHECK(ctx, ret == cur,
		      "writer %u: lookup_get_insert(%#" PRIx64
		      ") = %p, model %p",
		      w->idx, key, ret, (void *)cur);
		err = want;
		break;
	case 2:
		err = rhashtable_lookup_insert_key(&ctx->ht, &key, &o->node,
						   churn_params);
		break;
	default:
		if (cur) {
			ret = rhashtable_lookup_get_insert_key(
				&ctx->ht, &key, &o->node, churn_params);
			CHECK(ctx, ret == cur,
			      "writer %u: lookup_get_insert_key(%#" PRIx64
			      ") = %p, model %p",
			      w->idx, key, ret, (void *)cur);
			err = want;
		} else {
			err = rhashtable_insert_fast(&ctx->ht, &o->node,
						     churn_params);
		}
		break;
	}
	CHECK(ctx, err == want, "writer %u: insert(%#" PRIx64 ") = %d, not %d",
	      w->idx, key, err, want);
	if (err) {
		obj_free(o); /* never linked */
		return true;
	}
	w->model[i] = o;
	w->present++;
	return true;
}

static bool writer_remove(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *cur = w->model[i];
	int err;

	if (!cur || !rng_below(&w->rng, 8)) {
		/* An object with the key that is not in the table. */
		struct sobj *dummy = obj_new(ctx, key, w->idx);

		err = rhashtable_remove_fast(&ctx->ht, &dummy->node,
					     churn_params);
		obj_free(dummy);
		CHECK(ctx, err == -ENOENT,
		      "writer %u: remove(%#" PRIx64 ", not in table) = %d",
		      w->idx, key, err);
		return true;
	}
	err = rhashtable_remove_fast(&ctx->ht, &cur->node, churn_params);
	CHECK(ctx, !err, "writer %u: remove(%#" PRIx64 ") = %d", w->idx, key,
	      err);
	w->model[i] = NULL;
	w->present--;
	obj_retire(cur);
	return true;
}

static bool writer_replace(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *cur = w->model[i], *o = obj_new(ctx, key, w->idx);
	int err;

	if (!cur) {
		struct sobj *dummy = obj_new(ctx, key, w->idx);

		err = rhashtable_replace_fast(&ctx->ht, &dummy->node, &o->node,
					      churn_params);
		obj_free(dummy);
		obj_free(o);
		CHECK(ctx, err == -ENOENT,
		      "writer %u: replace(%#" PRIx64 ", not in table) = %d",
		      w->idx, key, err);
		return true;
	}
	if (!rng_below(&w->rng, 16)) {
		/* A new object with another key: refused, cur stays. */
		o->key = KEY_FOREIGN + key;
		err = rhashtable_replace_fast(&ctx->ht, &cur->node, &o->node,
					      churn_params);
		if (!err) {
			/* The 32-bit hashes collided (p = 2^-32): undo. */
			err = rhashtable_remove_fast(&ctx->ht, &o->node,
						     churn_params);
			CHECK(ctx, !err, "writer %u: undo remove = %d", w->idx,
			      err);
			obj_retire(o);
			obj_retire(cur);
			w->model[i] = NULL;
			w->present--;
			return true;
		}
		obj_free(o);
		CHECK(ctx, err == -EINVAL,
		      "writer %u: replace(%#" PRIx64 ") with another key = %d",
		      w->idx, key, err);
		return true;
	}
	err = rhashtable_replace_fast(&ctx->ht, &cur->node, &o->node,
				      churn_params);
	CHECK(ctx, !err, "writer %u: replace(%#" PRIx64 ") = %d", w->idx, key,
	      err);
	w->model[i] = o;
	obj_retire(cur);
	return true;
}

/* The first key from i on (wrapping) that is present, or absent. */
static unsigned int writer_scan(const struct writer *w, unsigned int i,
				bool present)
{
	for (unsigned int k = 0; k < w->n; k++) {
		unsigned int j = (i + k) % w->n;

		if (!!w->model[j] == present)
			return j;
	}
	return i;
}

/*
 * The writers fill their ranges to 80% together, then drain them to 3%
 * together, so that the whole table swings by tens of thousands of keys. A
 * writer at the target of the current phase only replaces and probes (the
 * count does not move) until the last one arrives and starts the next phase.
 */
static bool writer_wave(struct writer *w, bool *draining)
{
	struct stress_ctx *ctx = w->ctx;
	unsigned int phase =
		atomic_load_explicit(&ctx->phase, memory_order_acquire);

	if (phase != w->phase) {
		w->phase = phase;
		w->arrived = false;
	}
	*draining = phase & 1;
	if (w->arrived || (*draining ? w->present > w->n / 100 * 3
				     : w->present < w->n / 10 * 8))
		return true;
	w->arrived = true;
	if (!writer_check_all(w))
		return false;
	/* acq_rel: the last arriver's reset comes after every arrival. */
	if (atomic_fetch_add_explicit(&ctx->arrived, 1, memory_order_acq_rel) +
		    1 ==
	    ctx->opts->writers) {
		atomic_store_explicit(&ctx->arrived, 0, memory_order_relaxed);
		/* release: pairs with the acquire above; orders the reset. */
		atomic_store_explicit(&ctx->phase, phase + 1,
				      memory_order_release);
	}
	return true;
}

static bool writer_step(struct writer *w)
{
	unsigned int i = rng_below(&w->rng, w->n);
	unsigned int r = rng_below(&w->rng, 100);
	bool scan = rng_below(&w->rng, 8) != 0, draining, ok;
	enum op op;

	if (!writer_wave(w, &draining))
		return false;
	if (w->arrived)
		op = r < 75 ? OP_REPLACE : OP_INSERT; /* inserts: -EEXIST */
	else if (r < 75)
		op = draining ? OP_REMOVE : OP_INSERT;
	else if (r < 87)
		op = OP_REPLACE;
	else
		op = draining ? OP_INSERT : OP_REMOVE;
	if (scan || w->arrived)
		i = writer_scan(w, i, op != OP_INSERT || w->arrived);
	if (w->arrived && !w->model[i]) {
		/* Empty range: nothing to do that keeps the count. */
		sched_yield();
		return true;
	}
	switch (op) {
	case OP_INSERT:
		ok = writer_insert(w, i);
		break;
	case OP_REMOVE:
		ok = writer_remove(w, i);
		break;
	default:
		ok = writer_replace(w, i);
		break;
	}
	w->ops++;
	if (w->arrived)
		sched_yield(); /* let the writers still on their way run */
	return ok && writer_check(w, i) &&
	       writer_check(w, rng_below(&w->rng, w->n));
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	rhkv_rcu_register_thread();
	while (!stopped(w->ctx) && writer_step(w))
		;
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- readers of the stable set ---- */

/* A reader of the stable set, or a writer on the shared range. */
struct reader {
	struct stress_ctx *ctx;
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long ops, lookups;
};

static bool reader_step(struct reader *r)
{
	struct stress_ctx *ctx = r->ctx;
	const struct stress_opts *o = ctx->opts;
	unsigned int i;
	uint64_t key;
	void *got;

	for (int k = 0; k < 64; k++) {
		i = rng_below(&r->rng, o->stable_keys);
		if (!lookup_check(ctx, "reader", KEY_STABLE + i, ctx->stable[i],
				  true))
			return false;
	}
	i = rng_below(&r->rng, o->stable_keys);
	key = KEY_STABLE + i;
	got = rhashtable_lookup_fast(&ctx->ht, &key, churn_params);
	CHECK(ctx, got == ctx->stable[i],
	      "reader: lookup_fast(%#" PRIx64 ") = %p, expected %p", key, got,
	      (void *)ctx->stable[i]);
	/* Keys the writers churn: anything found must be live and match. */
	if (o->writers) {
		unsigned int wi = rng_below(&r->rng, o->writers);

		key = KEY_WRITER + ((uint64_t)wi << 32) +
		      rng_below(&r->rng, o->writer_keys);
		if (!lookup_check(ctx, "reader", key, NULL, false))
			return false;
	}
	key = KEY_OVERLAP + rng_below(&r->rng, o->overlap_keys);
	if (!lookup_check(ctx, "reader", key, NULL, false))
		return false;
	key = KEY_ABSENT + rng_below(&r->rng, 1u << 20);
	got = rhashtable_lookup_fast(&ctx->ht, &key, churn_params);
	CHECK(ctx, !got, "reader: never inserted key %#" PRIx64 " found: %p",
	      key, got);
	r->lookups += 68;
	return true;
}

/* Every stable key, a batch per read-side section. */
static bool reader_sweep(struct reader *r)
{
	struct stress_ctx *ctx = r->ctx;
	unsigned int n = ctx->opts->stable_keys;
	bool ok = true;

	for (unsigned int i = 0; ok && i < n; i += 128) {
		rhkv_rcu_read_lock();
		for (unsigned int j = i; ok && j < i + 128 && j < n; j++) {
			uint64_t key = KEY_STABLE + j;

			ok = obj_check(
				ctx, "sweep", key,
				rhashtable_lookup(&ctx->ht, &key, churn_params),
				ctx->stable[j], true);
		}
		rhkv_rcu_read_unlock();
	}
	r->lookups += n;
	return ok;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	rhkv_rcu_register_thread();
	for (unsigned long n = 0; !stopped(r->ctx); n++)
		if (!reader_step(r) || (!(n % 64) && !reader_sweep(r)))
			break;
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- writers sharing one range ---- */

static bool overlap_insert(struct reader *v, uint64_t key)
{
	struct stress_ctx *ctx = v->ctx;
	struct sobj *o = obj_new(ctx, key, v->idx);
	void *ret;
	bool ok = true;
	int err;

	if (rng_below(&v->rng, 2)) {
		err = rhashtable_lookup_insert_fast(&ctx->ht, &o->node,
						    churn_params);
		CHECK(ctx, err == 0 || err == -EEXIST,
		      "overlap: insert(%#" PRIx64 ") = %d", key, err);
	} else {
		/* The object returned is only safe inside our section. */
		rhkv_rcu_read_lock();
		ret = rhashtable_lookup_get_insert_fast(&ctx->ht, &o->node,
							churn_params);
		ok = !IS_ERR(ret) && ret != o;
		if (!ok)
			stress_fail(ctx, __LINE__,
				    "overlap: lookup_get_insert(%#" PRIx64
				    ") = %p",
				    key, ret);
		else
			ok = obj_check(ctx, "overlap", key, ret, NULL, false);
		rhkv_rcu_read_unlock();
		if (!ok)
			return false; /* o may be linked: leak it */
		err = ret ? -EEXIST : 0;
	}
	if (err)
		obj_free(o); /* never linked */
	return ok;
}

/* Removes (or replaces) whatever object holds key, racing the other one. */
static bool overlap_unlink(struct reader *v, uint64_t key, bool replace)
{
	struct stress_ctx *ctx = v->ctx;
	struct sobj *got, *o = replace ? obj_new(ctx, key, v->idx) : NULL;
	bool ok;
	int err = -ENOENT;

	rhkv_rcu_read_lock();
	got = rhashtable_lookup(&ctx->ht, &key, churn_params);
	ok = obj_check(ctx, "overlap", key, got, NULL, false);
	if (ok && got && replace)
		err = rhashtable_replace_fast(&ctx->ht, &got->node, &o->node,
					      churn_params);
	else if (ok && got)
		err = rhashtable_remove_fast(&ctx->ht, &got->node,
					     churn_params);
	rhkv_rcu_read_unlock();
	if (o && err)
		obj_free(o); /* not linked */
	if (!ok)
		return false;
	/* -ENOENT: the other thread unlinked it first. */
	CHECK(ctx, !err || err == -ENOENT, "overlap: %s(%#" PRIx64 ") = %d",
	      replace ? "replace" : "remove", key, err);
	if (!err)
		obj_retire(got); /* we unlinked it: only we free it */
	return true;
}

static void *overlap_main(void *arg)
{
	struct reader *v = arg;
	struct stress_ctx *ctx = v->ctx;
	bool ok = true;

	rhkv_rcu_register_thread();
	while (ok && !stopped(ctx)) {
		uint64_t key = KEY_OVERLAP +
			       rng_below(&v->rng, ctx->opts->overlap_keys);

		switch (rng_below(&v->rng, 4)) {
		case 0:
			ok = overlap_insert(v, key);
			break;
		case 1:
			ok = overlap_unlink(v, key, false);
			break;
		case 2:
			ok = overlap_unlink(v, key, true);
			break;
		default:
			ok = lookup_check(ctx, "overlap", key, NULL, false);
			break;
		}
		v->ops++;
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- the re-seeder: forced re-seeds and introspection, concurrently ---- */

static bool reseeder_check(struct stress_ctx *ctx, struct rhashtable_stats *st)
{
	const struct stress_opts *o = ctx->opts;
	unsigned long most = (unsigned long)o->writers * o->writer_keys +
			     o->stable_keys + o->overlap_keys;

	rhashtable_get_stats(&ctx->ht, st);
	CHECK(ctx, st->nelems <= most, "nelems %lu > %lu keys", st->nelems,
	      most);
	CHECK(ctx, !st->alloc_failures, "%lu resizes failed to allocate",
	      st->alloc_failures);
	return true;
}

/* Whether a grow or a shrink is due: above 75% or below 30% load. */
static bool resize_due(const struct rhashtable_stats *st)
{
	return st->nelems > st->size / 4 * 3 ||
	       (st->nelems < st->size * 3ul / 10 && st->size > RHT_MIN_SIZE);
}

/*
 * Forces a re-seed reseed_ms after the previous one completed, when no
 * resize runs or is due: a resize due together with a re-seed does both at
 * once and counts only as a re-seed, so re-seeding whenever the clock says
 * would hide the grows and shrinks where resizes are slow (sanitizers).
 * Each time, also walks every chain (rht__max_chain) while the others churn.
 */
static void *reseeder_main(void *arg)
{
	struct stress_ctx *ctx = arg;
	unsigned int period = ctx->opts->reseed_ms;
	int64_t next = now_ms() + period;
	unsigned long before = 0;
	struct rhashtable_stats st;
	bool waiting = false;

	rhkv_rcu_register_thread();
	while (!stopped(ctx)) {
		unsigned int chain;

		sleep_ms(5);
		if (!reseeder_check(ctx, &st))
			break;
		if (waiting && st.reseeds > before) {
			waiting = false;
			next = now_ms() + period;
		}
		if (waiting || !period || now_ms() < next || st.resizing ||
		    resize_due(&st))
			continue;
		before = st.reseeds;
		waiting = true;
		rht__force_reseed(&ctx->ht);
		atomic_fetch_add(&ctx->forced, 1);
		chain = rht__max_chain(&ctx->ht);
		if (chain > atomic_load(&ctx->max_chain))
			atomic_store(&ctx->max_chain, chain);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- the churn scenario ---- */

struct churn {
	struct stress_ctx ctx;
	struct writer w[MAX_THREADS];
	struct reader r[MAX_THREADS]; /* readers of the stable set */
	struct reader v[MAX_THREADS]; /* overlapping writers */
	pthread_t reseeder;
};

static void free_fn(void *ptr, void *arg)
{
	struct stress_ctx *ctx = arg;

	ctx->freed_fn++;
	obj_free(ptr);
}

static bool churn_setup(struct churn *c)
{
	struct stress_ctx *ctx = &c->ctx;
	const struct stress_opts *o = ctx->opts;
	int err = rhashtable_init(&ctx->ht, &churn_params);

	CHECK(ctx, !err, "rhashtable_init = %d", err);
	ctx->stable = calloc(o->stable_keys, sizeof(*ctx->stable));
	CHECK(ctx, ctx->stable, "out of memory");
	for (unsigned int i = 0; i < o->stable_keys; i++) {
		ctx->stable[i] = obj_new(ctx, KEY_STABLE + i, 0);
		err = rhashtable_insert_fast(&ctx->ht, &ctx->stable[i]->node,
					     churn_params);
		CHECK(ctx, !err, "insert of stable key %u = %d", i, err);
	}
	for (unsigned int i = 0; i < o->writers; i++) {
		struct writer *w = &c->w[i];

		w->ctx = ctx;
		w->idx = i;
		w->base = KEY_WRITER + ((uint64_t)i << 32);
		w->n = o->writer_keys;
		w->model = calloc(w->n, sizeof(*w->model));
		w->rng = rng_init(o->seed, w->idx);
		CHECK(ctx, w->model, "out of memory");
	}
	for (unsigned int i = 0; i < o->readers + o->overlappers; i++) {
		struct reader *r =
			i < o->readers ? &c->r[i] : &c->v[i - o->readers];

		r->ctx = ctx;
		r->idx = o->writers + i;
		r->rng = rng_init(o->seed, r->idx);
	}
	return true;
}

static void churn_start(struct churn *c)
{
	const struct stress_opts *o = c->ctx.opts;

	for (unsigned int i = 0; i < o->writers; i++)
		pthread_create(&c->w[i].tid, NULL, writer_main, &c->w[i]);
	for (unsigned int i = 0; i < o->readers; i++)
		pthread_create(&c->r[i].tid, NULL, reader_main, &c->r[i]);
	for (unsigned int i = 0; i < o->overlappers; i++)
		pthread_create(&c->v[i].tid, NULL, overlap_main, &c->v[i]);
	pthread_create(&c->reseeder, NULL, reseeder_main, &c->ctx);
}

static void churn_join(struct churn *c)
{
	const struct stress_opts *o = c->ctx.opts;
	struct stress_result *res = c->ctx.res;

	atomic_store(&c->ctx.stop, true);
	for (unsigned int i = 0; i < o->writers; i++) {
		pthread_join(c->w[i].tid, NULL);
		res->ops += c->w[i].ops;
		res->lookups += c->w[i].lookups;
	}
	for (unsigned int i = 0; i < o->readers; i++) {
		pthread_join(c->r[i].tid, NULL);
		res->lookups += c->r[i].lookups;
	}
	for (unsigned int i = 0; i < o->overlappers; i++) {
		pthread_join(c->v[i].tid, NULL);
		res->ops += c->v[i].ops;
	}
	pthread_join(c->reseeder, NULL);
}

/* Where the resize in flight is: its table and buckets moved (0 if none). */
struct resize_pos {
	const void *tbl;
	unsigned int size, moved;
	bool resizing;
};

static struct resize_pos resize_pos(struct stress_ctx *ctx)
{
	struct resize_pos pos;
	struct bucket_table *tbl;

	rhkv_rcu_read_lock();
	tbl = rht__first_table(&ctx->ht);
	pos.tbl = tbl;
	pos.size = tbl->size;
	pos.moved = atomic_load(&tbl->rehash);
	pos.resizing = rht__future(tbl) != NULL;
	rhkv_rcu_read_unlock();
	return pos;
}

static void progress(struct stress_ctx *ctx, int64_t elapsed,
		     struct resize_pos pos)
{
	struct rhashtable_stats st;

	rhashtable_get_stats(&ctx->ht, &st);
	printf("churn: %6" PRId64 " ms: phase %u, %lu entries, %u buckets, "
	       "%s %u/%u, %lu grows, %lu shrinks, %lu re-seeds (%lu forced)\n",
	       elapsed, atomic_load(&ctx->phase), st.nelems, st.size,
	       pos.resizing ? "resizing" : "idle", pos.moved, pos.size,
	       st.grows, st.shrinks, st.reseeds, atomic_load(&ctx->forced));
}

/*
 * Runs for duration_ms, then on until the minimum resizes were seen (a slow
 * sanitizer build may need longer), up to max_ms. A resize that moves no
 * bucket for stall_ms is a failure.
 */
static bool churn_wait(struct churn *c, int64_t start)
{
	struct stress_ctx *ctx = &c->ctx;
	const struct stress_opts *o = ctx->opts;
	struct resize_pos last = { 0 }, pos;
	int64_t elapsed, last_move = start, last_print = start;
	struct rhashtable_stats st;

	for (;;) {
		sleep_ms(10);
		if (stopped(ctx))
			return false;
		elapsed = now_ms() - start;
		pos = resize_pos(ctx);
		if (!pos.resizing || pos.tbl != last.tbl ||
		    pos.moved != last.moved)
			last_move = now_ms();
		last = pos;
		CHECK(ctx, !o->stall_ms || now_ms() - last_move < o->stall_ms,
		      "resize stalled: %u of %u buckets moved, none for "
		      "%" PRId64 " ms",
		      pos.moved, pos.size, now_ms() - last_move);
		if (o->verbose && now_ms() - last_print >= 1000) {
			last_print = now_ms();
			progress(ctx, elapsed, pos);
		}
		if (elapsed < o->duration_ms)
			continue;
		rhashtable_get_stats(&ctx->ht, &st);
		if (st.grows >= o->min_grows && st.shrinks >= o->min_shrinks &&
		    st.reseeds >= o->min_reseeds)
			return true;
		CHECK(ctx, elapsed < o->max_ms,
		      "after %" PRId64 " ms only %lu grows (want %lu), %lu "
		      "shrinks (want %lu), %lu reseeds (want %lu)",
		      elapsed, st.grows, o->min_grows, st.shrinks,
		      o->min_shrinks, st.reseeds, o->min_reseeds);
	}
}

/* With every thread joined: the table must hold exactly the models. */
static bool churn_verify(struct churn *c)
{
	struct stress_ctx *ctx = &c->ctx;
	const struct stress_opts *o = ctx->opts;
	unsigned long want = o->stable_keys, n;

	for (unsigned int i = 0; i < o->stable_keys; i++)
		if (!lookup_check(ctx, "final", KEY_STABLE + i, ctx->stable[i],
				  true))
			return false;
	for (unsigned int i = 0; i < o->writers; i++) {
		if (!writer_check_all(&c->w[i]))
			return false;
		want += c->w[i].present;
	}
	for (unsigned int i = 0; i < o->overlap_keys; i++) {
		uint64_t key = KEY_OVERLAP + i;

		if (!lookup_check(ctx, "final", key, NULL, false))
			return false;
		want += !!rhashtable_lookup_fast(&ctx->ht, &key, churn_params);
	}
	n = rhashtable_nelems(&ctx->ht);
	CHECK(ctx, n == want, "nelems %lu, but the models hold %lu", n, want);
	ctx->res->nelems = want;
	return true;
}

/* After a failure, only frees what can be freed safely. */
static bool churn_teardown(struct churn *c, bool verified)
{
	struct stress_ctx *ctx = &c->ctx;
	unsigned long want = ctx->res->nelems;
	long live;

	rhkv_rcu_barrier(); /* every retired object is freed now */
	live = atomic_load(&ctx->live);
	if (verified)
		CHECK(ctx, live >= 0 && (unsigned long)live == want,
		      "%ld objects alive after rcu_barrier, %lu in the table",
		      live, want);
	rhashtable_free_and_destroy(&ctx->ht, free_fn, ctx);
	for (unsigned int i = 0; i < ctx->opts->writers; i++)
		free(c->w[i].model);
	free(ctx->stable);
	if (!verified)
		return false;
	CHECK(ctx, ctx->freed_fn == want,
	      "free_fn called %lu times for %lu objects", ctx->freed_fn, want);
	live = atomic_load(&ctx->live);
	CHECK(ctx, !live, "%ld objects leaked", live);
	return true;
}

static bool churn_opts_ok(struct stress_ctx *ctx, const struct stress_opts *o)
{
	CHECK(ctx,
	      o->writers <= MAX_THREADS && o->readers <= MAX_THREADS &&
		      o->overlappers <= MAX_THREADS,
	      "at most %d threads of each kind", MAX_THREADS);
	CHECK(ctx,
	      o->stable_keys && o->overlap_keys &&
		      (!o->writers || o->writer_keys),
	      "empty key range");
	CHECK(ctx, o->writer_keys < (1u << 31), "writer_keys too large");
	return true;
}

int stress_churn(const struct stress_opts *opts, struct stress_result *res)
{
	struct churn *c = calloc(1, sizeof(*c));
	struct rhashtable_stats st;
	struct stress_ctx *ctx;
	bool ok, verified = false;
	int64_t start;

	memset(res, 0, sizeof(*res));
	if (!c) {
		snprintf(res->msg, sizeof(res->msg), "out of memory");
		return -1;
	}
	ctx = &c->ctx;
	ctx->opts = opts;
	ctx->res = res;
	rhkv_rcu_register_thread();
	if (!opts->quiet)
		printf("churn: seed %#" PRIx64 " (thread i: seed + i): "
		       "writers 0-%u x %u keys, readers %u-%u, overlapping "
		       "writers %u-%u on %u keys, %u stable keys, re-seed "
		       "every %u ms, %u ms\n",
		       opts->seed, opts->writers - 1, opts->writer_keys,
		       opts->writers, opts->writers + opts->readers - 1,
		       opts->writers + opts->readers,
		       opts->writers + opts->readers + opts->overlappers - 1,
		       opts->overlap_keys, opts->stable_keys, opts->reseed_ms,
		       opts->duration_ms);
	if (!churn_opts_ok(ctx, opts) || !churn_setup(c)) {
		rhkv_rcu_unregister_thread();
		free(c);
		return -1;
	}
	start = now_ms();
	churn_start(c);
	ok = churn_wait(c, start);
	churn_join(c);
	res->elapsed_ms = (unsigned int)(now_ms() - start);
	rhashtable_get_stats(&ctx->ht, &st);
	res->grows = st.grows;
	res->shrinks = st.shrinks;
	res->reseeds = st.reseeds;
	res->waves = atomic_load(&ctx->phase) / 2;
	verified = ok && churn_verify(c);
	ok = churn_teardown(c, verified);
	if (!opts->quiet)
		printf("churn: %s in %u ms: %lu writer ops, %lu lookups, %lu "
		       "waves, %lu grows, %lu shrinks, %lu re-seeds (%lu "
		       "forced), longest chain %u, %lu entries at the end, "
		       "last size %u\n",
		       ok ? "passed" : "FAILED", res->elapsed_ms, res->ops,
		       res->lookups, res->waves, res->grows, res->shrinks,
		       res->reseeds, atomic_load(&ctx->forced),
		       atomic_load(&ctx->max_chain), res->nelems, st.size);
	rhkv_rcu_unregister_thread();
	free(c);
	return ok ? 0 : -1;
}

/* ---- free_and_destroy while a resize is in flight ---- */

static unsigned int settled_size(unsigned long n)
{
	unsigned int size = RHT_DEFAULT_SIZE;

	while (n > size / 4 * 3)
		size <<= 1;
	return size;
}

static bool destroy_insert(struct stress_ctx *ctx, unsigned long i)
{
	struct sobj *o = obj_new(ctx, KEY_DESTROY + i, 0);
	int err = rhashtable_insert_fast(&ctx->ht, &o->node, destroy_params);

	CHECK(ctx, !err, "destroy: insert %lu = %d", i, err);
	return true;
}

static void *destroyer_main(void *arg)
{
	struct stress_ctx *ctx = arg;

	rhkv_rcu_register_thread();
	rhashtable_free_and_destroy(&ctx->ht, free_fn, ctx);
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* Starts a resize: a re-seed (even reps) or a grow (odd reps). */
static bool destroy_start_resize(struct stress_ctx *ctx, unsigned int rep,
				 unsigned long *inserted)
{
	unsigned long n = *inserted;
	int64_t deadline = now_ms() + 10000;

	if (rep & 1) {
		/* Past 75% load: an insert that checks kicks the worker. */
		while (!rht__resizing(&ctx->ht)) {
			CHECK(ctx, *inserted < 2 * n,
			      "destroy: no grow after %lu entries", *inserted);
			if (!destroy_insert(ctx, (*inserted)++))
				return false;
		}
		return true;
	}
	rht__force_reseed(&ctx->ht);
	while (!rht__resizing(&ctx->ht)) {
		CHECK(ctx, now_ms() < deadline,
		      "destroy: forced re-seed did not start in 10 s");
		sched_yield();
	}
	return true;
}

static bool destroy_once(struct stress_ctx *ctx, unsigned int rep)
{
	const struct stress_opts *o = ctx->opts;
	unsigned int size = settled_size(o->destroy_nelems), moved, from;
	uint64_t rng = rng_init(o->seed, rep);
	unsigned long inserted = 0;
	unsigned int target;
	int64_t deadline = now_ms() + 30000;
	struct bucket_table *tbl;
	bool in_flight;
	int err = rhashtable_init(&ctx->ht, &destroy_params);

	CHECK(ctx, !err, "destroy: rhashtable_init = %d", err);
	ctx->freed_fn = 0;
	for (; inserted < o->destroy_nelems; inserted++)
		if (!destroy_insert(ctx, inserted))
			return false;
	while (rht__resizing(&ctx->ht) || rhashtable_size(&ctx->ht) != size) {
		CHECK(ctx, now_ms() < deadline,
		      "destroy: %lu entries never settled in %u buckets (%u)",
		      inserted, size, rhashtable_size(&ctx->ht));
		sleep_ms(1);
	}
	if (!destroy_start_resize(ctx, rep, &inserted))
		return false;
	/* Lets the worker move a random part of the buckets first. */
	target = rep ? rng_below(&rng, size - size / 16) : 0;
	do {
		rhkv_rcu_read_lock();
		tbl = rht__first_table(&ctx->ht);
		from = tbl->size;
		moved = atomic_load(&tbl->rehash);
		in_flight = rht__future(tbl) != NULL;
		rhkv_rcu_read_unlock();
	} while (in_flight && moved < target);
	if (rep & 2) {
		pthread_t tid;

		pthread_create(&tid, NULL, destroyer_main, ctx);
		pthread_join(tid, NULL);
	} else {
		rhashtable_free_and_destroy(&ctx->ht, free_fn, ctx);
	}
	if (!o->quiet)
		printf("destroy %u: %s, %lu entries, resize %s (%u of %u "
		       "buckets moved when destroy began), from %s thread\n",
		       rep, rep & 1 ? "grow" : "re-seed", inserted,
		       in_flight ? "in flight" : "done", moved, from,
		       rep & 2 ? "another" : "the same");
	ctx->res->caught += in_flight;
	CHECK(ctx, ctx->freed_fn == inserted,
	      "destroy %u: free_fn called %lu times for %lu objects", rep,
	      ctx->freed_fn, inserted);
	CHECK(ctx, !atomic_load(&ctx->live), "destroy %u: %ld objects leaked",
	      rep, atomic_load(&ctx->live));
	return true;
}

int stress_destroy_resizing(const struct stress_opts *opts,
			    struct stress_result *res)
{
	struct stress_ctx ctx = { .opts = opts, .res = res };
	int64_t start = now_ms();
	unsigned int rep;
	bool ok = true;

	memset(res, 0, sizeof(*res));
	rhkv_rcu_register_thread();
	if (!opts->quiet)
		printf("destroy: seed %#" PRIx64 ", %u entries, at least %u "
		       "times\n",
		       opts->seed, opts->destroy_nelems, opts->destroy_reps);
	for (rep = 0; ok && rep < 64 &&
		      (rep < opts->destroy_reps ||
		       now_ms() - start < (int64_t)opts->duration_ms);
	     rep++)
		ok = destroy_once(&ctx, rep);
	res->elapsed_ms = (unsigned int)(now_ms() - start);
	if (ok && !res->caught) {
		stress_fail(&ctx, __LINE__,
			    "no destroy hit a resize in flight in %u tries",
			    rep);
		ok = false;
	}
	if (!opts->quiet)
		printf("destroy: %s in %u ms, %u of %u destroys during a "
		       "resize\n",
		       ok ? "passed" : "FAILED", res->elapsed_ms, res->caught,
		       rep);
	rhkv_rcu_unregister_thread();
	return ok ? 0 : -1;
}

void stress_opts_init(struct stress_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->duration_ms = (unsigned int)env_ulong("RHKV_STRESS_MS", 2500);
	opts->max_ms = opts->duration_ms > 60000 ? opts->duration_ms : 60000;
	opts->seed = env_ulong("RHKV_STRESS_SEED", 0x5eed2024);
	opts->writers = 3;
	opts->readers = 2;
	opts->overlappers = 2;
	opts->writer_keys = 20000;
	opts->stable_keys = 2000;
	opts->overlap_keys = 1024;
	opts->reseed_ms = 150;
	opts->min_grows = 3;
	opts->min_shrinks = 3;
	opts->min_reseeds = 2;
	opts->destroy_reps =
		(unsigned int)env_ulong("RHKV_STRESS_DESTROY_REPS", 4);
	/* Just under 75% of 2^18 buckets; 2^16 under TSan, 20 times slower. */
#ifdef RHKV_TSAN
	opts->destroy_nelems = 49000;
#else
	opts->destroy_nelems = 196000;
#endif
	opts->destroy_nelems = (unsigned int)env_ulong("RHKV_STRESS_DESTROY_N",
						       opts->destroy_nelems);
	opts->stall_ms = 10000;
	opts->quiet = env_ulong("RHKV_STRESS_QUIET", 0) != 0;
	opts->verbose = env_ulong("RHKV_STRESS_VERBOSE", 0) != 0;
}
