/*
 * The worker threads of the churn scenario: writers on disjoint key ranges
 * check every result against an exact model, readers check a stable set,
 * and overlapping writers check what can be checked (a found object is live
 * and has the key), while waves of keys make the table grow and shrink.
 */
#include "stress_churn.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>

bool churn_lookup_check(struct stress_ctx *ctx, const char *who, uint64_t key,
			const struct sobj *want, bool exact)
{
	struct sobj *got;
	bool ok;

	rhkv_rcu_read_lock();
	got = rhashtable_lookup(&ctx->ht, &key, churn_params);
	ok = stress_obj_check(ctx, who, key, got, want, exact);
	rhkv_rcu_read_unlock();
	return ok;
}

/* ---- writers on disjoint ranges, with an exact model ---- */

enum op { OP_INSERT, OP_REMOVE, OP_REPLACE };

/* Own key i must be exactly the model's, through both lookups. */
static bool writer_check(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *got;

	if (!churn_lookup_check(ctx, "writer", key, w->model[i], true))
		return false;
	got = rhashtable_lookup_fast(&ctx->ht, &key, churn_params);
	CHECK(ctx, got == w->model[i],
	      "writer %u: lookup_fast(%#" PRIx64 ") = %p, model %p", w->idx,
	      key, (void *)got, (void *)w->model[i]);
	w->lookups += 2;
	return true;
}

bool churn_writer_check_all(struct writer *w)
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
	struct sobj *cur = w->model[i], *o = stress_obj_new(ctx, key, w->idx);
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
		stress_obj_free(o); /* never linked */
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
		struct sobj *dummy = stress_obj_new(ctx, key, w->idx);

		err = rhashtable_remove_fast(&ctx->ht, &dummy->node,
					     churn_params);
		stress_obj_free(dummy);
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
	stress_obj_retire(cur);
	return true;
}

static bool writer_replace(struct writer *w, unsigned int i)
{
	struct stress_ctx *ctx = w->ctx;
	uint64_t key = w->base + i;
	struct sobj *cur = w->model[i], *o = stress_obj_new(ctx, key, w->idx);
	int err;

	if (!cur) {
		struct sobj *dummy = stress_obj_new(ctx, key, w->idx);

		err = rhashtable_replace_fast(&ctx->ht, &dummy->node, &o->node,
					      churn_params);
		stress_obj_free(dummy);
		stress_obj_free(o);
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
			stress_obj_retire(o);
			stress_obj_retire(cur);
			w->model[i] = NULL;
			w->present--;
			return true;
		}
		stress_obj_free(o);
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
	stress_obj_retire(cur);
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
	if (!churn_writer_check_all(w))
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

void *churn_writer_main(void *arg)
{
	struct writer *w = arg;

	rhkv_rcu_register_thread();
	while (!stopped(w->ctx) && writer_step(w))
		;
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* ---- readers of the stable set ---- */

static bool reader_step(struct reader *r)
{
	struct stress_ctx *ctx = r->ctx;
	const struct stress_opts *o = ctx->opts;
	unsigned int i;
	uint64_t key;
	void *got;

	for (int k = 0; k < 64; k++) {
		i = rng_below(&r->rng, o->stable_keys);
		if (!churn_lookup_check(ctx, "reader", KEY_STABLE + i,
					ctx->stable[i], true))
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
		if (!churn_lookup_check(ctx, "reader", key, NULL, false))
			return false;
	}
	key = KEY_OVERLAP + rng_below(&r->rng, o->overlap_keys);
	if (!churn_lookup_check(ctx, "reader", key, NULL, false))
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

			ok = stress_obj_check(
				ctx, "sweep", key,
				rhashtable_lookup(&ctx->ht, &key, churn_params),
				ctx->stable[j], true);
		}
		rhkv_rcu_read_unlock();
	}
	r->lookups += n;
	return ok;
}

void *churn_reader_main(void *arg)
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
	struct sobj *o = stress_obj_new(ctx, key, v->idx);
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
			ok = stress_obj_check(ctx, "overlap", key, ret, NULL,
					      false);
		rhkv_rcu_read_unlock();
		if (!ok)
			return false; /* o may be linked: leak it */
		err = ret ? -EEXIST : 0;
	}
	if (err)
		stress_obj_free(o); /* never linked */
	return ok;
}

/* Removes (or replaces) whatever object holds key, racing the other one. */
static bool overlap_unlink(struct reader *v, uint64_t key, bool replace)
{
	struct stress_ctx *ctx = v->ctx;
	struct sobj *got,
		*o = replace ? stress_obj_new(ctx, key, v->idx) : NULL;
	bool ok;
	int err = -ENOENT;

	rhkv_rcu_read_lock();
	got = rhashtable_lookup(&ctx->ht, &key, churn_params);
	ok = stress_obj_check(ctx, "overlap", key, got, NULL, false);
	if (ok && got && replace)
		err = rhashtable_replace_fast(&ctx->ht, &got->node, &o->node,
					      churn_params);
	else if (ok && got)
		err = rhashtable_remove_fast(&ctx->ht, &got->node,
					     churn_params);
	rhkv_rcu_read_unlock();
	if (o && err)
		stress_obj_free(o); /* not linked */
	if (!ok)
		return false;
	/* -ENOENT: the other thread unlinked it first. */
	CHECK(ctx, !err || err == -ENOENT, "overlap: %s(%#" PRIx64 ") = %d",
	      replace ? "replace" : "remove", key, err);
	if (!err)
		stress_obj_retire(got); /* we unlinked it: only we free it */
	return true;
}

void *churn_overlap_main(void *arg)
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
			ok = churn_lookup_check(ctx, "overlap", key, NULL,
						false);
			break;
		}
		v->ops++;
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}
