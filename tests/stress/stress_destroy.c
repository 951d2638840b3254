/*
 * The destroy scenario of stress_rhashtable.h: rhashtable_free_and_destroy
 * of a large table while a grow or a forced re-seed is in flight, from the
 * same thread or another, must free every object exactly once.
 */
#include "stress_common.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/rhashtable_internal.h"

static const struct rhashtable_params destroy_params = {
	.key_len = sizeof(uint64_t),
	.key_offset = offsetof(struct sobj, key),
	.head_offset = offsetof(struct sobj, node),
};

static unsigned int settled_size(unsigned long n)
{
	unsigned int size = RHT_DEFAULT_SIZE;

	while (n > size / 4 * 3)
		size <<= 1;
	return size;
}

static bool destroy_insert(struct stress_ctx *ctx, unsigned long i)
{
	struct sobj *o = stress_obj_new(ctx, KEY_DESTROY + i, 0);
	int err = rhashtable_insert_fast(&ctx->ht, &o->node, destroy_params);

	CHECK(ctx, !err, "destroy: insert %lu = %d", i, err);
	return true;
}

static void *destroyer_main(void *arg)
{
	struct stress_ctx *ctx = arg;

	rhkv_rcu_register_thread();
	rhashtable_free_and_destroy(&ctx->ht, stress_free_fn, ctx);
	rhkv_rcu_unregister_thread();
	return NULL;
}

/* Starts a resize: a re-seed (even reps) or a grow (odd reps). */
static bool destroy_start_resize(struct stress_ctx *ctx, unsigned int rep,
				 unsigned long *inserted)
{
	unsigned long n = *inserted;
	int64_t deadline = now_ms() + 30000;

	if (rep & 1) {
		/* Past 75% load: an insert that checks kicks the worker. On a
		 * loaded machine the worker may not run for a while: past 2n
		 * entries, stop inserting and wait for it (bounded). */
		while (!rht__resizing(&ctx->ht)) {
			CHECK(ctx, now_ms() < deadline,
			      "destroy: no grow in 30 s (%lu entries)",
			      *inserted);
			if (*inserted >= 2 * n) {
				usleep(1000);
				continue;
			}
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
		moved = atomic_load(&tbl->moved);
		in_flight = rht__future(tbl) != NULL;
		rhkv_rcu_read_unlock();
	} while (in_flight && moved < target);
	if (rep & 2) {
		pthread_t tid;

		pthread_create(&tid, NULL, destroyer_main, ctx);
		pthread_join(tid, NULL);
	} else {
		rhashtable_free_and_destroy(&ctx->ht, stress_free_fn, ctx);
	}
	if (!o->quiet)
		printf("destroy %u: %s, %lu entries, resize %s (%u of %u "
		       "buckets moved when destroy began), from %s thread\n",
		       rep, rep & 1 ? "grow" : "re-seed", inserted,
		       in_flight ? "in flight" : "done", moved, from,
		       rep & 2 ? "another" : "the same");
	ctx->res->caught += in_flight;
	CHECK(ctx, ctx->freed_fn == inserted,
	      "destroy %u: stress_free_fn called %lu times for %lu objects",
	      rep, ctx->freed_fn, inserted);
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
