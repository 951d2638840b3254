/*
 * bench-rhashtable: creating, filling, emptying and freeing the three tables
 * (the untimed parts), plus small helpers shared by the benchmark files.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const impl_name[NR_IMPLS] = { "rhashtable", "cds_lfht", "rwlock" };
const size_t impl_obj_size[NR_IMPLS] = { sizeof(struct robj),
					 sizeof(struct lobj),
					 sizeof(struct wobj) };

void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "bench-rhashtable: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000LL,
			       .tv_nsec = ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int lfht_match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct lobj, node)->key ==
	       *(const uint64_t *)key;
}

void rwt_grow(struct rwt *t)
{
	size_t size = (t->mask + 1) * 2;
	struct wobj **b = xcalloc(size, sizeof(*b));

	for (size_t i = 0; i <= t->mask; i++) {
		struct wobj *o = t->buckets[i], *next;

		for (; o; o = next) {
			struct wobj **dst = &b[bench_hash(o->key) & (size - 1)];

			next = o->next;
			o->next = *dst;
			*dst = o;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->mask = size - 1;
}

void objs_init(enum bench_impl impl, void *objs, size_t first, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_of(first + i);

		switch (impl) {
		case IMPL_RHT:
			((struct robj *)objs)[i].key = k;
			break;
		case IMPL_LFHT:
			((struct lobj *)objs)[i].key = k;
			break;
		default:
			((struct wobj *)objs)[i].key = k;
			break;
		}
	}
}

void *table_new(enum bench_impl impl, unsigned int nelem_hint)
{
	switch (impl) {
	case IMPL_RHT: {
		struct rhashtable *ht = xcalloc(1, sizeof(*ht));
		struct rhashtable_params p = rht_params;
		int err;

		p.nelem_hint = nelem_hint;
		err = rhashtable_init(ht, &p);
		if (err)
			die("rhashtable_init: %s", strerror(-err));
		return ht;
	}
	case IMPL_LFHT: {
		/* Small at first, like the others: it grows as it fills. */
		struct cds_lfht *ht = cds_lfht_new_flavor(
			RHT_DEFAULT_SIZE, 1, 0,
			CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
			&urcu_memb_flavor, NULL);

		if (!ht)
			die("cds_lfht_new_flavor failed");
		return ht;
	}
	default: {
		struct rwt *t = xcalloc(1, sizeof(*t));

		if (pthread_rwlock_init(&t->lock, NULL))
			die("pthread_rwlock_init failed");
		t->mask = RHT_DEFAULT_SIZE - 1;
		t->buckets = xcalloc(RHT_DEFAULT_SIZE, sizeof(*t->buckets));
		return t;
	}
	}
}

unsigned long lfht_kicks;

int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void lfht_watch_init(struct lfht_watch *lw)
{
	memset(lw, 0, sizeof(*lw));
	lw->t = now_ns();
}

void lfht_watch(struct lfht_watch *lw, void *tbl, uint64_t progress,
		int64_t cpu)
{
	int64_t t = now_ns();
	double rate;
	unsigned long size = 1;

	if (t - lw->t < 100000000)
		return;
	/* Per CPU second of the inserters: while cds_lfht's own resize
	 * threads take the CPUs, the inserters slow down but get less CPU
	 * too; a stalled table makes every insert longer. */
	if (cpu - lw->cpu >= 20000000) {
		rate = (double)(progress - lw->progress) /
		       (double)(cpu - lw->cpu) * 1e9;
		lw->best = rate > lw->best ? rate : lw->best;
		lw->strikes = rate < lw->best / 8 ? lw->strikes + 1 : 0;
		if (lw->strikes >= 3 && progress >= 16384) {
			/* At least the size its count-based resize picks. */
			while (size * 2 <= progress)
				size *= 2;
			fprintf(stderr,
				"bench-rhashtable: cds_lfht inserts slowed "
				"from %.0f to %.0f per CPU second at %llu: "
				"resize stalled? forcing %lu buckets\n",
				lw->best, rate, (unsigned long long)progress,
				size);
			cds_lfht_resize(tbl, size);
			lfht_kicks++;
			lw->best = 0;
			lw->strikes = 0;
		}
	}
	lw->t = now_ns();
	lw->progress = progress;
	lw->cpu = cpu;
}

void table_fill(enum bench_impl impl, void *tbl, void *objs, size_t lo,
		size_t hi)
{
	struct lfht_watch lw;

	lfht_watch_init(&lw);
	lw.cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = lo; i < hi; i++) {
		int err = impl == IMPL_RHT    ? rht_insert(tbl, objs, i)
			  : impl == IMPL_LFHT ? lfht_insert(tbl, objs, i)
					      : rwt_insert(tbl, objs, i);

		if (err)
			die("%s: insert of key %zu failed: %d", impl_name[impl],
			    i, err);
		if (impl == IMPL_LFHT && (i & 4095) == 0)
			lfht_watch(&lw, tbl, i - lo,
				   clock_ns(CLOCK_THREAD_CPUTIME_ID));
	}
}

void table_remove(enum bench_impl impl, void *tbl, void *objs, size_t lo,
		  size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		int err = 0;

		if (impl == IMPL_RHT) {
			struct robj *o = (struct robj *)objs + i;

			err = rhashtable_remove_fast(tbl, &o->node, rht_params);
		} else if (impl == IMPL_LFHT) {
			struct lobj *o = (struct lobj *)objs + i;

			urcu_memb_read_lock();
			err = cds_lfht_del(tbl, &o->node);
			urcu_memb_read_unlock();
		} else {
			struct rwt *t = tbl;
			struct wobj *o = (struct wobj *)objs + i, **pp;

			pthread_rwlock_wrlock(&t->lock);
			pp = &t->buckets[bench_hash(o->key) & t->mask];
			while (*pp && *pp != o)
				pp = &(*pp)->next;
			if (*pp) {
				*pp = o->next;
				t->nelems--;
			} else {
				err = -ENOENT;
			}
			pthread_rwlock_unlock(&t->lock);
		}
		if (err)
			die("%s: remove of key %zu failed: %d", impl_name[impl],
			    i, err);
	}
}

size_t table_count(enum bench_impl impl, void *tbl)
{
	if (impl == IMPL_RHT)
		return rhashtable_nelems(tbl);
	if (impl == IMPL_LFHT) {
		long before, after;
		unsigned long count;

		urcu_memb_read_lock();
		cds_lfht_count_nodes(tbl, &before, &count, &after);
		urcu_memb_read_unlock();
		return count;
	}
	return ((struct rwt *)tbl)->nelems;
}

void table_settle(enum bench_impl impl, void *tbl, size_t n)
{
	if (impl == IMPL_RHT) {
		/* The worker may start a resize just after the last insert. */
		sleep_ns(1000000);
		while (rht__resizing(tbl))
			sleep_ns(1000000);
	} else if (impl == IMPL_LFHT) {
		/* No way to ask cds_lfht: give its resize worker a moment
		 * (half a second at 10M keys). */
		sleep_ns(20000000 + (int64_t)n * 50);
	}
}

static void count_obj(void *ptr, void *arg)
{
	(void)ptr;
	++*(size_t *)arg;
}

void table_destroy(enum bench_impl impl, void *tbl, void *objs, size_t n)
{
	if (impl == IMPL_RHT) {
		size_t count = 0;

		rhashtable_free_and_destroy(tbl, count_obj, &count);
		free(tbl);
		if (count != n)
			die("rhashtable held %zu objects, not %zu", count, n);
	} else if (impl == IMPL_LFHT) {
		/* cds_lfht_destroy wants an empty table. */
		table_remove(impl, tbl, objs, 0, n);
		if (cds_lfht_destroy(tbl, NULL))
			die("cds_lfht_destroy failed (table not empty?)");

	} else {
		struct rwt *t = tbl;

		if (t->nelems != n)
			die("rwlock table held %zu objects, not %zu", t->nelems,
			    n);
		pthread_rwlock_destroy(&t->lock);
		free(t->buckets);
		free(t);
	}
	/* No reader is left (their threads were joined), and the tables'
	 * workers are gone: the objects may be reused at once. */
}
