/*
 * bench-rhashtable: throughput of this project's rhashtable against
 * liburcu's cds_lfht and a chained table under one rwlock (see bench.h),
 * for lookups (all hits, random keys), inserts (into an empty table that
 * starts small and grows) and a 90/10 lookup/insert mix, at each thread
 * count and table size; then the lookup rate of one reader while the
 * rhashtable resizes (bench_resize.c). Prints absolute figures, ratios and
 * whether the project's targets are met.
 *
 * The machine is shared and noisy: every cell is measured in `rounds`
 * rounds, each running the three tables one after the other, and the table
 * shows the median of the rounds (the ratios: the median of the per-round
 * ratios, so that each ratio compares runs made close together in time).
 *
 * Run `bench-rhashtable --help` for the options. Not a test: it is built
 * with the project but never run by the test suite.
 */
#include "bench.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct run;

struct worker {
	_Alignas(64) pthread_t th;
	struct run *run;
	uint64_t seed;
	size_t lo, hi; /* objects this thread inserts */
	uint64_t ops, good, inserted;
	int64_t t0, t1;
	atomic_int done;
	_Atomic uint64_t progress; /* inserts so far, for the lfht watch */
};

struct run {
	enum bench_impl impl;
	enum bench_op op;
	int nthreads;
	uint32_t n; /* lookups draw keys 0..n-1 */
	void *tbl, *objs;
	_Alignas(64) atomic_int arrived;
	_Alignas(64) atomic_int stop;
	struct worker w[BENCH_MAX_THREADS];
};

/*
 * The measurement loops, compiled once per table so that its lookup and
 * insert are inlined. `good` counts lookups that found their key and
 * inserts that succeeded: it must equal `ops`.
 */
#define DEFINE_LOOPS(X)                                                        \
	static void X##_lookup_loop(struct worker *w)                          \
	{                                                                      \
		struct run *r = w->run;                                        \
		void *tbl = r->tbl;                                            \
		uint32_t n = r->n;                                             \
		uint64_t s = w->seed, ops = 0, good = 0;                       \
                                                                               \
		while (!atomic_load_explicit(&r->stop,                         \
					     memory_order_relaxed)) {          \
			for (int j = 0; j < 64; j++)                           \
				good += (uint64_t)X##_find(                    \
					tbl, key_of(rand_index(&s, n)));       \
			ops += 64;                                             \
		}                                                              \
		w->ops = ops;                                                  \
		w->good = good;                                                \
	}                                                                      \
                                                                               \
	static void X##_insert_loop(struct worker *w)                          \
	{                                                                      \
		void *tbl = w->run->tbl, *objs = w->run->objs;                 \
		uint64_t good = 0;                                             \
                                                                               \
		for (size_t i = w->lo; i < w->hi; i++) {                       \
			good += X##_insert(tbl, objs, i) == 0;                 \
			if ((i & 1023) == 0)                                   \
				atomic_store_explicit(&w->progress, i - w->lo, \
						      memory_order_relaxed);   \
		}                                                              \
		w->ops = w->hi - w->lo;                                        \
		w->good = good;                                                \
		w->inserted = w->hi - w->lo;                                   \
	}                                                                      \
                                                                               \
	static void X##_mix_loop(struct worker *w)                             \
	{                                                                      \
		struct run *r = w->run;                                        \
		void *tbl = r->tbl, *pool = r->objs;                           \
		uint32_t n = r->n;                                             \
		uint64_t s = w->seed, good = 0;                                \
		size_t i;                                                      \
                                                                               \
		for (i = w->lo; i < w->hi; i++) {                              \
			if ((i & 15) == 0 &&                                   \
			    atomic_load_explicit(&r->stop,                     \
						 memory_order_relaxed))        \
				break;                                         \
			for (int j = 0; j < 9; j++)                            \
				good += (uint64_t)X##_find(                    \
					tbl, key_of(rand_index(&s, n)));       \
			good += X##_insert(tbl, pool, i) == 0;                 \
		}                                                              \
		w->inserted = i - w->lo;                                       \
		w->ops = 10 * w->inserted;                                     \
		w->good = good;                                                \
	}

DEFINE_LOOPS(rht)
DEFINE_LOOPS(lfht)
DEFINE_LOOPS(rwt)

static void (*const loops[NR_IMPLS][NR_OPS])(struct worker *) = {
	[IMPL_RHT] = { rht_lookup_loop, rht_insert_loop, rht_mix_loop },
	[IMPL_LFHT] = { lfht_lookup_loop, lfht_insert_loop, lfht_mix_loop },
	[IMPL_RWT] = { rwt_lookup_loop, rwt_insert_loop, rwt_mix_loop },
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;

	rhkv_rcu_register_thread();
	/* Start together: spin, but yield in case the CPUs are all busy. */
	atomic_fetch_add(&r->arrived, 1);
	for (int i = 0; atomic_load(&r->arrived) < r->nthreads; i++) {
		if (i < 1000)
			bench_relax();
		else
			sched_yield();
	}
	w->t0 = now_ns();
	loops[r->impl][r->op](w);
	w->t1 = now_ns();
	atomic_store(&w->done, 1);
	rhkv_rcu_unregister_thread();
	return NULL;
}

struct run_result {
	uint64_t ops;
	int64_t ns; /* first start to last end */
};

/*
 * Runs r->nthreads workers (w[i].lo/hi/seed set by the caller) until they
 * finish or, if limit_ns > 0, until limit_ns after they started.
 */
static struct run_result run_threads(struct run *r, int64_t limit_ns)
{
	struct run_result res = { 0, 0 };
	int64_t t0 = INT64_MAX, t1 = 0, deadline;

	atomic_store(&r->arrived, 0);
	atomic_store(&r->stop, 0);
	for (int t = 0; t < r->nthreads; t++) {
		r->w[t].run = r;
		atomic_store(&r->w[t].done, 0);
		atomic_store(&r->w[t].progress, 0);
		if (pthread_create(&r->w[t].th, NULL, worker_main, &r->w[t]))
			die("pthread_create failed");
	}
	if (limit_ns > 0) {
		while (atomic_load(&r->arrived) < r->nthreads)
			sleep_ns(20000);
		deadline = now_ns() + limit_ns;
		for (;;) {
			int64_t left = deadline - now_ns();
			int done = 0;

			for (int t = 0; t < r->nthreads; t++)
				done += atomic_load(&r->w[t].done);
			if (left <= 0 || done == r->nthreads)
				break;
			/* Lookups never end by themselves: one sleep. */
			sleep_ns(r->op == OP_LOOKUP || left < 2000000
					 ? left
					 : 2000000);
		}
		atomic_store(&r->stop, 1);
	} else if (r->impl == IMPL_LFHT) {
		/* Inserts into cds_lfht: watch for a stalled auto-resize. */
		struct lfht_watch lw;
		int done = 0;

		clockid_t cpu_clock[BENCH_MAX_THREADS];
		int64_t cpu_last[BENCH_MAX_THREADS] = { 0 };

		/* Fails if the thread has already exited: its CPU time then
		 * stays 0, which only delays the watch. */
		for (int t = 0; t < r->nthreads; t++)
			if (pthread_getcpuclockid(r->w[t].th, &cpu_clock[t]))
				cpu_clock[t] = CLOCK_THREAD_CPUTIME_ID;
		lfht_watch_init(&lw);
		while (done < r->nthreads) {
			uint64_t progress = 0;
			int64_t cpu = 0;

			sleep_ns(20000000);
			done = 0;
			for (int t = 0; t < r->nthreads; t++) {
				int64_t c =
					cpu_clock[t] == CLOCK_THREAD_CPUTIME_ID
						? 0
						: clock_ns(cpu_clock[t]);

				/* 0 once the thread is gone: keep the last */
				cpu_last[t] = c ? c : cpu_last[t];
				cpu += cpu_last[t];
				done += atomic_load(&r->w[t].done);
				progress += atomic_load_explicit(
					&r->w[t].progress,
					memory_order_relaxed);
			}
			lfht_watch(&lw, r->tbl, progress, cpu);
		}
	}
	for (int t = 0; t < r->nthreads; t++) {
		struct worker *w = &r->w[t];

		pthread_join(w->th, NULL);
		if (w->good != w->ops)
			die("%s %s: %" PRIu64 " of %" PRIu64
			    " operations failed (lookup miss or insert error)",
			    impl_name[r->impl], op_name[r->op],
			    w->ops - w->good, w->ops);
		res.ops += w->ops;
		t0 = w->t0 < t0 ? w->t0 : t0;
		t1 = w->t1 > t1 ? w->t1 : t1;
	}
	res.ns = t1 - t0;
	return res;
}

static uint64_t seed_of(int round, int impl, int t)
{
	return key_of(((uint64_t)round << 32) ^ ((uint64_t)impl << 16) ^
		      (uint64_t)t) |
	       1;
}

static void split(struct run *r, size_t lo, size_t hi)
{
	for (int t = 0; t < r->nthreads; t++) {
		r->w[t].lo = lo + (hi - lo) * (size_t)t / (size_t)r->nthreads;
		r->w[t].hi =
			lo + (hi - lo) * (size_t)(t + 1) / (size_t)r->nthreads;
	}
}

static struct run *new_run(enum bench_impl impl, enum bench_op op, int nthreads,
			   size_t n, int round)
{
	struct run *r = aligned_alloc(64, sizeof(*r));

	if (!r)
		die("out of memory");
	memset(r, 0, sizeof(*r));
	r->impl = impl;
	r->op = op;
	r->nthreads = nthreads;
	r->n = (uint32_t)n;
	for (int t = 0; t < nthreads; t++)
		r->w[t].seed = seed_of(round, impl, t);
	return r;
}

static int64_t cell_ns(void)
{
	return (int64_t)(opt.seconds * 1e9);
}

/*
 * Wall time after which a cell that repeats small runs (inserts, mix)
 * stops even if their timed part is short of `seconds`: at 1000 keys most
 * of the time goes into setting up and tearing down, and the timed part
 * is then made of thousands of runs anyway.
 */
static int64_t cap_ns(void)
{
	return 2 * cell_ns();
}

/*
 * Inserts objs[0..n) into fresh tables, again until `seconds` is spent.
 * With keep, the last table is not destroyed but returned there, to serve
 * the lookups (building a 10M table anew takes seconds); *kept_kicks then
 * says whether cds_lfht needed a forced resize while it was filled.
 */
static double insert_cell(enum bench_impl impl, int nthreads, size_t n,
			  void *objs, int round, void **keep, bool *kept_kicks)
{
	struct run *r = new_run(impl, OP_INSERT, nthreads, n, round);
	int64_t wall0 = now_ns(), timed = 0, destroy_ns = 0, td;
	int reps = 0;
	uint64_t ops = 0;

	r->objs = objs;
	split(r, 0, n);
	for (;;) {
		unsigned long kicks = lfht_kicks;
		struct run_result res;
		bool more;

		r->tbl = table_new(impl, 0);
		res = run_threads(r, 0);
		timed += res.ns;
		ops += res.ops;
		reps++;
		/* Decided once: the same answer for keep and the loop. */
		more = timed < cell_ns() && now_ns() - wall0 < cap_ns();
		if (!more && keep) {
			*keep = r->tbl;
			*kept_kicks = lfht_kicks != kicks;
			break;
		}
		/* Every insert succeeded (run_threads checks): no need to
		 * count, which takes cds_lfht a while. */
		td = now_ns();
		table_destroy(impl, r->tbl, objs, n);
		destroy_ns += now_ns() - td;
		if (!more)
			break;
	}
	if (opt.verbose)
		printf("    insert %s %d thr: %.2f s inserting, %.2f s "
		       "destroying, %.2f s in all, %d reps\n",
		       impl_name[impl], nthreads, (double)timed / 1e9,
		       (double)destroy_ns / 1e9,
		       (double)(now_ns() - wall0) / 1e9, reps);
	free(r);
	return (double)ops / (double)timed * 1e3;
}

static double lookup_cell(enum bench_impl impl, int nthreads, size_t n,
			  void *tbl, int round)
{
	struct run *r = new_run(impl, OP_LOOKUP, nthreads, n, round);
	struct run_result res;

	r->tbl = tbl;
	res = run_threads(r, cell_ns());
	free(r);
	return (double)res.ops / (double)res.ns * 1e3;
}

/* Objects of the mix's inserts: keys n..n+mix_pool(n)-1. */
static size_t mix_pool(size_t n)
{
	return n / 10 > 1000 ? n / 10 : 1000;
}

/*
 * 9 lookups (keys 0..n-1) then 1 insert (a new key), in epochs: each epoch
 * inserts at most mix_pool(n) keys (10% of the table), after which the
 * epoch's inserts are removed (untimed) and the next epoch starts, until
 * `seconds` is spent. The table holds between n and 1.1 n keys (at least
 * n + 1000).
 */
static double mix_cell(enum bench_impl impl, int nthreads, size_t n, void *tbl,
		       void *pool, int round)
{
	struct run *r = new_run(impl, OP_MIX, nthreads, n, round);
	int64_t wall0 = now_ns(), timed = 0;
	uint64_t ops = 0;
	size_t e = mix_pool(n);

	r->tbl = tbl;
	r->objs = pool;
	split(r, 0, e);
	do {
		struct run_result res = run_threads(r, cell_ns() - timed);

		timed += res.ns;
		ops += res.ops;
		for (int t = 0; t < nthreads; t++) {
			struct worker *w = &r->w[t];

			table_remove(impl, tbl, pool, w->lo,
				     w->lo + w->inserted);
		}
		/* The removed objects are inserted again next epoch. */
		rhkv_rcu_synchronize();
		for (int t = 0; t < nthreads; t++)
			r->w[t].seed = key_of(r->w[t].seed);
	} while (timed < cell_ns() && now_ns() - wall0 < cap_ns());
	free(r);
	return (double)ops / (double)timed * 1e3;
}

/* ---- results ---- */

struct row {
	size_t n;
	int threads;
	enum bench_op op;
	double mops[BENCH_MAX_ROUNDS][NR_IMPLS];
	double med[NR_IMPLS];
	double ratio_lfht, ratio_rwt;
	unsigned long kicks; /* lfht_watch() forced resizes in its cells */
};

static struct row *rows;
static int nr_rows;

static double median(double *v, int n)
{
	double s[BENCH_MAX_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*s));
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
			double x = s[j];

			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void print_header(void)
{
	printf("\n(* after a cds_lfht figure: its auto-resize stalled in that "
	       "row and the bench forced a resize, see the end)\n");
	printf("%-9s %3s %-9s %11s %11s %11s %9s %10s\n", "size", "thr", "op",
	       "rht Mops/s", "lfht Mops/s", "rwl Mops/s", "rht/lfht",
	       "rht/rwlock");
	printf("%-9s %3s %-9s %11s %11s %11s %9s %10s\n", "---------", "---",
	       "---------", "----------", "-----------", "----------",
	       "--------", "----------");
}

static void finish_row(struct row *w)
{
	double a[BENCH_MAX_ROUNDS], b[BENCH_MAX_ROUNDS];

	for (int i = 0; i < NR_IMPLS; i++) {
		double v[BENCH_MAX_ROUNDS];

		for (int k = 0; k < opt.rounds; k++)
			v[k] = w->mops[k][i];
		w->med[i] = median(v, opt.rounds);
	}
	for (int k = 0; k < opt.rounds; k++) {
		a[k] = w->mops[k][IMPL_RHT] / w->mops[k][IMPL_LFHT];
		b[k] = w->mops[k][IMPL_RHT] / w->mops[k][IMPL_RWT];
	}
	w->ratio_lfht = median(a, opt.rounds);
	w->ratio_rwt = median(b, opt.rounds);
	printf("%-9zu %3d %-9s %11.2f %10.2f%c %11.2f %8.2fx %9.2fx\n", w->n,
	       w->threads, op_name[w->op], w->med[IMPL_RHT], w->med[IMPL_LFHT],
	       w->kicks ? '*' : ' ', w->med[IMPL_RWT], w->ratio_lfht,
	       w->ratio_rwt);
	if (opt.verbose)
		for (int k = 0; k < opt.rounds; k++)
			printf("%-9s %3s   round %d %11.2f %11.2f %11.2f\n", "",
			       "", k + 1, w->mops[k][IMPL_RHT],
			       w->mops[k][IMPL_LFHT], w->mops[k][IMPL_RWT]);
	fflush(stdout);
}

/*
 * Measures one op at every thread count. For OP_INSERT with tbls, the
 * tables of the very last round are kept there (see insert_cell).
 */
static void run_op(enum bench_op op, size_t n, void *tbls[], void *objs[],
		   bool kept_kicks[])
{
	for (int ti = 0; ti < opt.nr_threads; ti++) {
		int nt = opt.threads[ti];
		struct row *w = &rows[nr_rows++];
		unsigned long kicks = lfht_kicks;

		w->n = n;
		w->threads = nt;
		w->op = op;
		for (int k = 0; k < opt.rounds; k++)
			for (int i = 0; i < NR_IMPLS; i++) {
				double m;

				bool last = ti == opt.nr_threads - 1 &&
					    k == opt.rounds - 1;

				if (op == OP_INSERT)
					m = insert_cell(i, nt, n, objs[i], k,
							tbls && last ? &tbls[i]
								     : NULL,
							&kept_kicks[i]);
				else if (op == OP_LOOKUP)
					m = lookup_cell(i, nt, n, tbls[i], k);
				else
					m = mix_cell(i, nt, n, tbls[i], objs[i],
						     k);
				w->mops[k][i] = m;
			}
		w->kicks = lfht_kicks - kicks;
		finish_row(w);
	}
}

static void run_size(size_t n)
{
	void *objs[NR_IMPLS], *tbls[NR_IMPLS], *pools[NR_IMPLS];
	bool need = opt.ops[OP_LOOKUP] || opt.ops[OP_MIX];
	bool kicked[NR_IMPLS] = { false };
	int64_t t0 = now_ns();

	for (int i = 0; i < NR_IMPLS; i++) {
		objs[i] = xcalloc(n, impl_obj_size[i]);
		objs_init(i, objs[i], 0, n);
	}
	/* The lookups use the tables of the last insert round, if any. */
	if (opt.ops[OP_INSERT])
		run_op(OP_INSERT, n, need ? tbls : NULL, objs, kicked);
	if (need) {
		for (int i = 0; i < NR_IMPLS; i++) {
			int64_t tb = now_ns();
			unsigned long kicks = lfht_kicks;

			if (!opt.ops[OP_INSERT]) {
				tbls[i] = table_new(i, 0);
				table_fill(i, tbls[i], objs[i], 0, n);
				kicked[i] = lfht_kicks != kicks;
			}
			if (kicked[i])
				printf("  (cds_lfht's table of %zu keys for "
				       "the lookups needed a forced resize)\n",
				       n);
			table_settle(i, tbls[i], n);
			/* (Counting takes cds_lfht seconds at 10M keys, and
			 * every insert was checked.) */
			if (i != IMPL_LFHT && table_count(i, tbls[i]) != n)
				die("%s holds %zu objects, not %zu",
				    impl_name[i], table_count(i, tbls[i]), n);
			if (opt.verbose)
				printf("    %s: table of %zu keys ready in "
				       "%.2f s\n",
				       impl_name[i], n,
				       (double)(now_ns() - tb) / 1e9);
		}
		/* Lookups first: the mix may leave a larger bucket array. */
		if (opt.ops[OP_LOOKUP])
			run_op(OP_LOOKUP, n, tbls, objs, kicked);
		if (opt.ops[OP_MIX]) {
			for (int i = 0; i < NR_IMPLS; i++) {
				pools[i] =
					xcalloc(mix_pool(n), impl_obj_size[i]);
				objs_init(i, pools[i], n, mix_pool(n));
			}
			run_op(OP_MIX, n, tbls, pools, kicked);
			for (int i = 0; i < NR_IMPLS; i++)
				free(pools[i]);
		}
		for (int i = 0; i < NR_IMPLS; i++)
			table_destroy(i, tbls[i], objs[i], n);
	}
	for (int i = 0; i < NR_IMPLS; i++)
		free(objs[i]);
	if (opt.verbose)
		printf("  (size %zu: %.1f s)\n", n,
		       (double)(now_ns() - t0) / 1e9);
}

/* The project's lookup targets: 1.5x cds_lfht at >= 10M keys, else 1x. */
static bool check_targets(void)
{
	bool all = true;

	printf("\nTargets: rhashtable lookups >= 1.5x cds_lfht at 10M keys, "
	       ">= 1.0x at other sizes\n");
	for (int k = 0; k < nr_rows; k++) {
		struct row *w = &rows[k];
		double target = w->n >= 10000000 ? 1.5 : 1.0;
		bool met = w->ratio_lfht >= target;

		if (w->op != OP_LOOKUP)
			continue;
		printf("  lookup %9zu keys %2d thr: %5.2fx vs >= %.1fx  %s\n",
		       w->n, w->threads, w->ratio_lfht, target,
		       met ? "MET" : "MISSED");
		all &= met;
	}
	return all;
}

/* Exported by liburcu-memb; 0 means every read lock is a full fence. */
extern int urcu_memb_has_sys_membarrier;

int main(int argc, char **argv)
{
	int64_t t0 = now_ns();
	bool targets = true, resize_met = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_opts(argc, argv);
	rhkv_rcu_register_thread();

	printf("bench-rhashtable: %ld CPUs online, urcu-memb membarrier %s, "
	       "object sizes rht %zu / lfht %zu / rwlock %zu bytes\n",
	       sysconf(_SC_NPROCESSORS_ONLN),
	       urcu_memb_has_sys_membarrier ? "yes" : "no (fences)",
	       sizeof(struct robj), sizeof(struct lobj), sizeof(struct wobj));
	printf("%.2f s per measurement, %d rounds (median), hash SipHash-1-3 "
	       "for all three\n",
	       opt.seconds, opt.rounds);
	printf("insert: into an empty table (64 buckets) until it holds "
	       "`size` keys, again and again; lookup: all hits, random keys, "
	       "in the last insert round's tables; mix: 9 lookups + 1 insert "
	       "of a new key, the table growing by at most 10%% (then "
	       "trimmed back)\n");

	rows = xcalloc((size_t)opt.nr_sizes * NR_OPS * (size_t)opt.nr_threads,
		       sizeof(*rows));
	if (opt.ops[OP_LOOKUP] || opt.ops[OP_INSERT] || opt.ops[OP_MIX]) {
		print_header();
		for (int k = 0; k < opt.nr_sizes; k++)
			run_size(opt.sizes[k]);
		if (opt.ops[OP_LOOKUP])
			targets = check_targets();
	}
	if (opt.resize)
		resize_met = run_resize_tests();

	printf("\nlookup targets: %s; resize target: %s\n",
	       !opt.ops[OP_LOOKUP] ? "not measured"
	       : targets	   ? "all met"
				   : "MISSED",
	       !opt.resize  ? "not measured"
	       : resize_met ? "met"
			    : "MISSED");
	if (lfht_kicks)
		printf("WARNING: cds_lfht's auto-resize stalled %lu times "
		       "(the table stopped growing, see lfht_watch in "
		       "bench.h); the bench forced a resize each time. The "
		       "cds_lfht figures marked * are lower than they should "
		       "be.\n",
		       lfht_kicks);
	printf("total time %.1f s\n", (double)(now_ns() - t0) / 1e9);
	free(rows);
	rhkv_rcu_unregister_thread();
	return 0;
}
