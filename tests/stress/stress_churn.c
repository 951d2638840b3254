/*
 * The churn scenario of stress_rhashtable.h: starts the workers of
 * stress_churn_workers.c and a re-seeder that forces re-seeds, watches
 * that every resize makes progress, then checks the table against the
 * writers' models and frees it with free_and_destroy.
 */
#include "stress_churn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rhashtable_internal.h"

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

static bool churn_setup(struct churn *c)
{
	struct stress_ctx *ctx = &c->ctx;
	const struct stress_opts *o = ctx->opts;
	int err = rhashtable_init(&ctx->ht, &churn_params);

	CHECK(ctx, !err, "rhashtable_init = %d", err);
	ctx->stable = calloc(o->stable_keys, sizeof(*ctx->stable));
	CHECK(ctx, ctx->stable, "out of memory");
	for (unsigned int i = 0; i < o->stable_keys; i++) {
		ctx->stable[i] = stress_obj_new(ctx, KEY_STABLE + i, 0);
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
		pthread_create(&c->w[i].tid, NULL, churn_writer_main, &c->w[i]);
	for (unsigned int i = 0; i < o->readers; i++)
		pthread_create(&c->r[i].tid, NULL, churn_reader_main, &c->r[i]);
	for (unsigned int i = 0; i < o->overlappers; i++)
		pthread_create(&c->v[i].tid, NULL, churn_overlap_main,
			       &c->v[i]);
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

/* Where the resize in flight is: its table and buckets moved (0 if none),
 * as the worker publishes it, a stride at a time (RHT_MOVED_STRIDE). */
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
	pos.moved = atomic_load(&tbl->moved);
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
 * sanitizer build may need longer), up to max_ms. A resize that publishes
 * no progress (a stride of buckets moved) for stall_ms is a failure.
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
		if (!churn_lookup_check(ctx, "final", KEY_STABLE + i,
					ctx->stable[i], true))
			return false;
	for (unsigned int i = 0; i < o->writers; i++) {
		if (!churn_writer_check_all(&c->w[i]))
			return false;
		want += c->w[i].present;
	}
	for (unsigned int i = 0; i < o->overlap_keys; i++) {
		uint64_t key = KEY_OVERLAP + i;

		if (!churn_lookup_check(ctx, "final", key, NULL, false))
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
	rhashtable_free_and_destroy(&ctx->ht, stress_free_fn, ctx);
	for (unsigned int i = 0; i < ctx->opts->writers; i++)
		free(c->w[i].model);
	free(ctx->stable);
	if (!verified)
		return false;
	CHECK(ctx, ctx->freed_fn == want,
	      "stress_free_fn called %lu times for %lu objects", ctx->freed_fn,
	      want);
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
