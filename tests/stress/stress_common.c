/*
 * The helpers of stress_common.h (failure reporting, the objects' life
 * cycle) and the options of stress_rhashtable.h with their RHKV_STRESS_*
 * overrides.
 */
#include "stress_common.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	/* Generous: TSan on a loaded machine is slow; a stuck resize is not. */
	opts->stall_ms = 30000;
	opts->quiet = env_ulong("RHKV_STRESS_QUIET", 0) != 0;
	opts->verbose = env_ulong("RHKV_STRESS_VERBOSE", 0) != 0;
}

void stress_fail(struct stress_ctx *ctx, int line, const char *fmt, ...)
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

struct sobj *stress_obj_new(struct stress_ctx *ctx, uint64_t key,
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

void stress_obj_free(struct sobj *o)
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
	stress_obj_free(caa_container_of(head, struct sobj, rcu));
	/* Its count of live objects is read, and the context freed, after
	 * the scenario's rhkv_rcu_barrier(). */
	rhkv_rcu_callback_exit();
}

void stress_obj_retire(struct sobj *o)
{
	rhkv_rcu_call(&o->rcu, obj_free_rcu);
}

bool stress_obj_check(struct stress_ctx *ctx, const char *who, uint64_t key,
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

void stress_free_fn(void *ptr, void *arg)
{
	struct stress_ctx *ctx = arg;

	ctx->freed_fn++;
	stress_obj_free(ptr);
}
