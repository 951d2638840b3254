/*
 * A read-through cache that never stampedes, on librhkv's meta commands:
 * however many clients miss a key at once, one of them (the winner)
 * computes the value; the others serve the stale value meanwhile, or wait
 * briefly for the winner when there is none yet. An item close to its
 * expiry is recomputed early, by one client, while it is still served.
 *
 * Usage: read_through [PORT] (default 11311, on 127.0.0.1). Prints where
 * each read's value came from: computed, cached, then computed again
 * after the key was invalidated.
 */
#include <rhkv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TTL	    300 /* seconds a computed value lives */
#define RECACHE	    30	/* recompute when fewer seconds than this are left */
#define PLACEHOLDER 10	/* how long a winner has to store its value */

/* The expensive part: what the cache saves (a query, a render, ...). */
static int compute(const char *key, char *buf, size_t cap)
{
	return snprintf(buf, cap, "report for %s", key) < (int)cap ? 0 : -1;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The value of key into buf[cap], from the cache or computed; *from says
 * which. 0 or an RHKV_E* code.
 */
static int cached(rhkv *c, const char *key, char *buf, size_t cap,
		  const char **from)
{
	struct rhkv_mget_opts o = { .want_value = 1,
				    .vivify_ttl = PLACEHOLDER,
				    .recache_ttl = RECACHE };
	struct rhkv_mset_opts so = { .ttl = TTL };
	struct rhkv_meta m;
	int rc;

	for (int tries = 0; tries < 100; tries++) {
		rc = rhkv_meta_get(c, key, strlen(key), &o, &m);
		if (rc && rc != RHKV_ENOTFOUND)
			return rc;
		if (m.won || rc == RHKV_ENOTFOUND) {
			/* Ours to compute: the others wait or serve stale. */
			rhkv_value_free(&m.value);
			if (compute(key, buf, cap))
				return RHKV_ERANGE;
			*from = "computed";
			return rhkv_meta_set(c, key, strlen(key), buf,
					     strlen(buf), &so, NULL);
		}
		if (m.won_by_other && !m.stale && m.value.len == 0) {
			/* The winner's empty placeholder: no value yet. */
			rhkv_value_free(&m.value);
			pause_ms(10);
			continue;
		}
		/* A hit; stale (or being recached) while a winner works. */
		*from = m.stale ? "stale" : "cached";
		snprintf(buf, cap, "%s", m.value.data ? m.value.data : "");
		rhkv_value_free(&m.value);
		return 0;
	}
	return RHKV_ETIMEDOUT;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 11311;
	struct rhkv_mdelete_opts inval = { .invalidate = 1 };
	const char *key = "user:42", *from = "";
	char buf[256];
	rhkv *c;
	int rc;

	rc = rhkv_connect(&c, "127.0.0.1", port, NULL);
	for (int i = 0; rc == 0 && i < 3; i++) {
		if (i == 2) /* the data changed: mark the cached copy stale */
			rc = rhkv_meta_delete(c, key, strlen(key), &inval);
		if (rc == 0)
			rc = cached(c, key, buf, sizeof(buf), &from);
		if (rc == 0)
			printf("%s = %s (%s)\n", key, buf, from);
	}
	if (rc == 0)
		rc = rhkv_delete(c, key, strlen(key));
	if (rc)
		fprintf(stderr, "read_through: %s (%s)\n", rhkv_strerror(rc),
			rhkv_errstr(c));
	rhkv_close(c);
	return rc ? 1 : 0;
}
