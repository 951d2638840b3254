/*
 * rhkv_cluster: its MD5 (OpenSSL's, through client/md5.c) against RFC
 * 1321's test vectors, one wrapper reused as the cluster does; its ketama ring
 * against libmemcached's (the Debian libmemcached, linked only here: the
 * server of 10,000 keys, equal and unequal weights, port 11211 or not,
 * weighted and plain ketama); and a live cluster of three rhkvd nodes that
 * loses one (only its keys move) and gets it back; every single-key call
 * on its key's server; the iterator over servers (stats, flush_all, a
 * prefix flush with one node dead); and the rejoin modes against a node
 * frozen with SIGSTOP and thawed: AT_ONCE reads the value from before the
 * outage (the documented risk), FLUSH never does, QUIET keeps the key on
 * its fallback until the node has been quiet long enough.
 */
#include <criterion/criterion.h>
#include <libmemcached/memcached.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md5.h"
#include "util.h"

#define NKEYS 10000

static void live_fini(void);

TestSuite(cluster, .fini = live_fini, .timeout = 90);

Test(cluster, md5_rfc1321)
{
	static const char *const vec[][2] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz",
		  "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		  "0123456789",
		  "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345678"
		  "9012345678901234567890",
		  "57edf4a22be3c955ac49da2e2107b67a" },
	};

	struct rhkv__md5 m;

	cr_assert_eq(rhkv__md5_init(&m), 0);
	/* twice over: the context is reused from one digest to the next */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
			unsigned char d[16];
			char hex[33];

			cr_assert_eq(
				rhkv__md5(&m, vec[i][0], strlen(vec[i][0]), d),
				0);
			for (int j = 0; j < 16; j++)
				sprintf(hex + 2 * j, "%02x", d[j]);
			cr_expect_str_eq(hex, vec[i][1], "MD5(\"%s\")",
					 vec[i][0]);
		}
	}
	rhkv__md5_free(&m);
	rhkv__md5_free(&m); /* a freed one may be freed again */
}

struct server {
	const char *host;
	int port;
	unsigned int weight;
};

static void key_of(int i, char *buf, size_t cap)
{
	/* a few shapes, so that lengths vary */
	switch (i % 3) {
	case 0:
		snprintf(buf, cap, "key:%d", i);
		break;
	case 1:
		snprintf(buf, cap, "user/%08x/session",
			 (unsigned)i * 2654435761u);
		break;
	default:
		snprintf(buf, cap, "%d", i);
		break;
	}
}

/* Every key's server, librhkv's and libmemcached's, for the servers. */
static void compare(const struct server *sv, size_t n, int mode)
{
	memcached_st *memc = memcached_create(NULL);
	rhkv_cluster *cl;
	int differ = 0;

	cr_assert(memc);
	cr_assert_eq(rhkv_cluster_new(&cl, NULL), 0);
	cr_assert_eq(rhkv_cluster_set_ketama(cl, mode), 0);
	if (mode == RHKV_KETAMA_WEIGHTED) {
		cr_assert_eq(
			memcached_behavior_set(
				memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
			MEMCACHED_SUCCESS);
	} else {
		cr_assert_eq(memcached_behavior_set(
				     memc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
				     MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA),
			     MEMCACHED_SUCCESS);
		cr_assert_eq(memcached_behavior_set(memc,
						    MEMCACHED_BEHAVIOR_HASH,
						    MEMCACHED_HASH_MD5),
			     MEMCACHED_SUCCESS);
	}
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(memcached_server_add_with_weight(
				     memc, sv[i].host, (in_port_t)sv[i].port,
				     sv[i].weight),
			     MEMCACHED_SUCCESS);
		cr_assert_eq(rhkv_cluster_add(cl, sv[i].host, sv[i].port,
					      sv[i].weight),
			     0);
	}
	for (int i = 0; i < NKEYS; i++) {
		char key[64], host[64];
		const memcached_instance_st *in;
		uint32_t idx;
		int port;

		key_of(i, key, sizeof(key));
		idx = memcached_generate_hash(memc, key, strlen(key));
		in = memcached_server_instance_by_position(memc, idx);
		cr_assert(in);
		cr_assert_eq(rhkv_cluster_server_of(cl, key, strlen(key), host,
						    sizeof(host), &port),
			     0);
		if (port != memcached_server_port(in) ||
		    strcmp(host, memcached_server_name(in)) != 0) {
			if (differ++ < 5)
				cr_log_error("%s: librhkv %s:%d, libmemcached "
					     "%s:%d",
					     key, host, port,
					     memcached_server_name(in),
					     (int)memcached_server_port(in));
		}
	}
	cr_expect_eq(differ, 0, "%d of %d keys on another server", differ,
		     NKEYS);
	rhkv_cluster_free(cl);
	memcached_free(memc);
}

Test(cluster, ketama_equal_weights)
{
	static const struct server sv[] = {
		{ "127.0.0.1", 22121, 1 },
		{ "127.0.0.1", 22122, 1 },
		{ "127.0.0.1", 22123, 1 },
	};

	compare(sv, 3, RHKV_KETAMA_WEIGHTED);
}

Test(cluster, ketama_weights_1_2_3)
{
	static const struct server sv[] = {
		{ "127.0.0.1", 22121, 1 },
		{ "127.0.0.1", 22122, 2 },
		{ "127.0.0.1", 22123, 3 },
	};

	compare(sv, 3, RHKV_KETAMA_WEIGHTED);
}

/* shares that are not whole in float: 1/15 * 40 * 5, ... */
Test(cluster, ketama_weights_five)
{
	static const struct server sv[] = {
		{ "10.0.0.1", 11211, 1 }, { "10.0.0.2", 11211, 2 },
		{ "10.0.0.3", 11211, 3 }, { "10.0.0.4", 11211, 4 },
		{ "10.0.0.5", 11211, 5 },
	};

	compare(sv, 5, RHKV_KETAMA_WEIGHTED);
}

/* port 11211 is left out of the hashed name ("host-N") */
Test(cluster, ketama_default_port)
{
	static const struct server sv[] = {
		{ "127.0.0.1", 11211, 1 },
		{ "127.0.0.1", 11212, 1 },
		{ "127.0.0.1", 11213, 1 },
	};

	compare(sv, 3, RHKV_KETAMA_WEIGHTED);
}

Test(cluster, ketama_plain)
{
	static const struct server sv[] = {
		{ "127.0.0.1", 11211, 1 },
		{ "127.0.0.1", 22122, 1 },
		{ "127.0.0.1", 22123, 1 },
	};

	compare(sv, 3, RHKV_KETAMA_PLAIN);
}

Test(cluster, no_servers)
{
	rhkv_cluster *cl;
	struct rhkv_value v;

	cr_assert_eq(rhkv_cluster_new(&cl, NULL), 0);
	cr_assert_null(rhkv_cluster_pick(cl, "k", 1));
	cr_assert_str_neq(rhkv_cluster_errstr(cl), "");
	cr_assert_eq(rhkv_cluster_get(cl, "k", 1, &v), RHKV_ECONN);
	cr_assert_eq(rhkv_cluster_server_of(cl, "k", 1, NULL, 0, NULL),
		     RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_add(cl, "", 1, 1), RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_add(cl, "h", 70000, 1), RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_set_retry(cl, -1), RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_set_ketama(cl, 7), RHKV_EINVAL);
	rhkv_cluster_free(cl);
	rhkv_cluster_free(NULL);
}

/* ---- a live cluster ---- */

#define NODES	  3
#define LIVE_KEYS 3000
#define RETRY_MS  100

static int ports[NODES];
static pid_t pids[NODES];

static void live_fini(void)
{
	for (int i = 0; i < NODES; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGCONT); /* a stopped one cannot exit */
			H_EXPECT_EXIT_OK(cl_stop(pids[i]),
					 "rhkvd after SIGTERM");
		}
		pids[i] = 0;
	}
}

static void start_nodes(void)
{
	for (int i = 0; i < NODES; i++) {
		ports[i] = cl_free_port();
		pids[i] = cl_start_on(ports[i], NULL);
		cr_assert_gt(pids[i], 0, "rhkvd on %d", ports[i]);
	}
}

/* SIGSTOP: its calls time out. Returns once every thread has stopped
 * (kill returns before; a worker may still answer meanwhile). */
static void freeze(int i)
{
	int st;

	cr_assert_eq(kill(pids[i], SIGSTOP), 0);
	cr_assert_eq(waitpid(pids[i], &st, WUNTRACED), pids[i]);
	cr_assert(WIFSTOPPED(st));
}

static void thaw(int i)
{
	int st;

	cr_assert_eq(kill(pids[i], SIGCONT), 0);
	cr_assert_eq(waitpid(pids[i], &st, WCONTINUED), pids[i]);
}

/* A cluster of the NODES servers with io_timeout_ms. */
static rhkv_cluster *live_cluster(int io_timeout_ms)
{
	struct rhkv_options o;
	rhkv_cluster *cl;

	rhkv_options_init(&o);
	o.connect_timeout_ms = 1000;
	o.io_timeout_ms = io_timeout_ms;
	cr_assert_eq(rhkv_cluster_new(&cl, &o), 0);
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(rhkv_cluster_add(cl, "127.0.0.1", ports[i], 1), 0);
	return cl;
}

static long curr_items(int port)
{
	long n = cl_stat(port, "curr_items");

	cr_assert_geq(n, 0, "no curr_items from %d", port);
	return n;
}

static int node_of(rhkv_cluster *cl, const char *key)
{
	int port;

	if (rhkv_cluster_server_of(cl, key, strlen(key), NULL, 0, &port))
		return -1;
	for (int i = 0; i < NODES; i++)
		if (ports[i] == port)
			return i;
	return -1;
}

Test(cluster, live_failover)
{
	static int owner[LIVE_KEYS];
	rhkv_cluster *cl;
	long items[NODES], total = 0;
	int dead = 1, moved = 0, rc;
	char key[64];

	start_nodes();
	cl = live_cluster(2000);
	/* long enough for the checks while a node is down */
	cr_assert_eq(rhkv_cluster_set_retry(cl, 60000), 0);

	for (int k = 0; k < LIVE_KEYS; k++) {
		snprintf(key, sizeof(key), "live:%d", k);
		owner[k] = node_of(cl, key);
		cr_assert_geq(owner[k], 0);
		rc = rhkv_cluster_set(cl, key, strlen(key), key, strlen(key), 0,
				      0, NULL);
		cr_assert_eq(rc, 0, "set %s: %s (%s)", key, rhkv_strerror(rc),
			     rhkv_cluster_errstr(cl));
	}
	for (int i = 0; i < NODES; i++) {
		long expect = 0;

		for (int k = 0; k < LIVE_KEYS; k++)
			expect += owner[k] == i;
		items[i] = curr_items(ports[i]);
		total += items[i];
		cr_expect_eq(items[i], expect, "node %d: %ld items, %ld keys",
			     i, items[i], expect);
		cr_expect(items[i] >= LIVE_KEYS * 20 / 100 &&
				  items[i] <= LIVE_KEYS * 47 / 100,
			  "node %d holds %ld of %d keys", i, items[i],
			  LIVE_KEYS);
	}
	cr_assert_eq(total, LIVE_KEYS);

	/* node 1 dies; the first call on it notices (its connection is
	 * lost: the call fails, and is not repeated elsewhere) */
	H_EXPECT_EXIT_OK(cl_stop(pids[dead]), "rhkvd after SIGTERM");
	pids[dead] = 0;
	for (int k = 0; k < LIVE_KEYS; k++) {
		struct rhkv_value v;

		if (owner[k] != dead)
			continue;
		snprintf(key, sizeof(key), "live:%d", k);
		rc = rhkv_cluster_get(cl, key, strlen(key), &v);
		cr_assert(rc == RHKV_ECONN || rc == RHKV_ETIMEDOUT,
			  "get on the dead node: %s", rhkv_strerror(rc));
		break;
	}

	/* the others' keys stay where they were, with their values; the dead
	 * node's keys go to the others */
	for (int k = 0; k < LIVE_KEYS; k++) {
		struct rhkv_value v;
		int now;

		snprintf(key, sizeof(key), "live:%d", k);
		now = node_of(cl, key);
		if (owner[k] != dead) {
			cr_assert_eq(now, owner[k], "%s moved from %d to %d",
				     key, owner[k], now);
			rc = rhkv_cluster_get(cl, key, strlen(key), &v);
			cr_assert_eq(rc, 0, "get %s: %s", key,
				     rhkv_strerror(rc));
			cr_assert_eq(v.len, strlen(key));
			cr_assert_eq(memcmp(v.data, key, v.len), 0);
			rhkv_value_free(&v);
		} else {
			cr_assert(now >= 0 && now != dead, "%s on %d", key,
				  now);
			rc = rhkv_cluster_get(cl, key, strlen(key), &v);
			cr_assert_eq(rc, RHKV_ENOTFOUND, "get %s: %s", key,
				     rhkv_strerror(rc));
			rc = rhkv_cluster_set(cl, key, strlen(key), key,
					      strlen(key), 0, 0, NULL);
			cr_assert_eq(rc, 0, "set %s: %s", key,
				     rhkv_strerror(rc));
			moved++;
		}
	}
	cr_assert_eq(moved, items[dead]);
	total = 0;
	for (int i = 0; i < NODES; i++) {
		if (i == dead)
			continue;
		total += curr_items(ports[i]);
	}
	cr_expect_eq(total, LIVE_KEYS, "the live nodes hold %ld items", total);

	/* back on its port: after the retry interval its keys return */
	pids[dead] = cl_start_on(ports[dead], NULL);
	cr_assert_gt(pids[dead], 0);
	for (int k = 0; k < LIVE_KEYS; k++) {
		snprintf(key, sizeof(key), "live:%d", k);
		cr_assert_neq(node_of(cl, key), dead, "retried too soon");
	}
	cr_assert_eq(rhkv_cluster_set_retry(cl, RETRY_MS), 0);
	h_sleep_ms(RETRY_MS + 50);
	for (int k = 0; k < LIVE_KEYS; k++) {
		snprintf(key, sizeof(key), "live:%d", k);
		rc = rhkv_cluster_set(cl, key, strlen(key), "again", 5, 0, 0,
				      NULL);
		cr_assert_eq(rc, 0, "set %s: %s (%s)", key, rhkv_strerror(rc),
			     rhkv_cluster_errstr(cl));
		cr_assert_eq(node_of(cl, key), owner[k]);
	}
	cr_expect_eq(curr_items(ports[dead]), items[dead]);
	rhkv_cluster_free(cl);
}

/* a server that was never up: pick skips it without failing a call */
Test(cluster, unreachable_server_skipped)
{
	rhkv_cluster *cl;
	int down;

	ports[0] = cl_free_port();
	pids[0] = cl_start_on(ports[0], NULL);
	cr_assert_gt(pids[0], 0);
	down = cl_free_port();
	cr_assert_eq(rhkv_cluster_new(&cl, NULL), 0);
	cr_assert_eq(rhkv_cluster_add(cl, "127.0.0.1", ports[0], 1), 0);
	cr_assert_eq(rhkv_cluster_add(cl, "127.0.0.1", down, 1), 0);
	for (int k = 0; k < 200; k++) {
		char key[32];
		struct rhkv_value v;
		int rc;

		snprintf(key, sizeof(key), "u:%d", k);
		rc = rhkv_cluster_set(cl, key, strlen(key), "v", 1, 0, 0, NULL);
		cr_assert_eq(rc, 0, "set %s: %s (%s)", key, rhkv_strerror(rc),
			     rhkv_cluster_errstr(cl));
		cr_assert_eq(rhkv_cluster_get(cl, key, strlen(key), &v), 0);
		rhkv_value_free(&v);
	}
	cr_expect_eq(curr_items(ports[0]), 200);
	/* with a retry of 0 and every server down, pick gives up */
	H_EXPECT_EXIT_OK(cl_stop(pids[0]), "rhkvd after SIGTERM");
	pids[0] = 0;
	cr_assert_eq(rhkv_cluster_set_retry(cl, 0), 0);
	for (int k = 0; k < 10; k++) {
		struct rhkv_value v;
		int rc = rhkv_cluster_get(cl, "u:1", 3, &v);

		cr_assert(rc == RHKV_ECONN || rc == RHKV_ETIMEDOUT, "%s",
			  rhkv_strerror(rc));
	}
	cr_assert_null(rhkv_cluster_pick(cl, "u:2", 3));
	rhkv_cluster_free(cl);
}

static void cl_ok(rhkv_cluster *cl, int rc, const char *call)
{
	cr_assert_eq(rc, 0, "%s: %s (%s)", call, rhkv_strerror(rc),
		     rhkv_cluster_errstr(cl));
}

/* A cluster call that must succeed, with the cluster's words if not. */
#define CL_OK(call) cl_ok(cl, (call), #call)

/* key's value through the cluster is want (NULL: a miss) */
static void expect_value(rhkv_cluster *cl, const char *key, const char *want,
			 const char *why)
{
	struct rhkv_value v;
	int rc = rhkv_cluster_get(cl, key, strlen(key), &v);

	if (!want) {
		cr_expect_eq(rc, RHKV_ENOTFOUND, "%s: get %s: %s (%s)", why,
			     key, rhkv_strerror(rc), rc ? "" : v.data);
		if (!rc)
			rhkv_value_free(&v);
		return;
	}
	cr_assert_eq(rc, 0, "%s: get %s: %s (%s)", why, key, rhkv_strerror(rc),
		     rhkv_cluster_errstr(cl));
	cr_expect_str_eq(v.data, want, "%s: %s", why, key);
	rhkv_value_free(&v);
}

/* Every single-key call of a cluster lands on the key's server. */
Test(cluster, single_key_calls)
{
	rhkv *direct[NODES];
	rhkv_cluster *cl;

	start_nodes();
	cl = live_cluster(2000);
	for (int i = 0; i < NODES; i++)
		direct[i] = cl_connect(ports[i], 2000);
	for (int k = 0; k < 30; k++) {
		struct rhkv_mget_opts mo = { .want_value = 1 };
		struct rhkv_value v;
		struct rhkv_meta m;
		char key[32], buf[16];
		uint64_t n, cas;
		size_t len, kl;
		int home;

		snprintf(key, sizeof(key), "op:%d", k);
		kl = strlen(key);
		home = node_of(cl, key);
		cr_assert_geq(home, 0);

		CL_OK(rhkv_cluster_add_key(cl, key, kl, "b", 1, 0, 0, NULL));
		cr_assert_eq(
			rhkv_cluster_add_key(cl, key, kl, "x", 1, 0, 0, NULL),
			RHKV_ENOTSTORED);
		CL_OK(rhkv_cluster_replace(cl, key, kl, "c", 1, 7, 0, NULL));
		CL_OK(rhkv_cluster_append(cl, key, kl, "d", 1, NULL));
		CL_OK(rhkv_cluster_prepend(cl, key, kl, "b", 1, NULL));
		CL_OK(rhkv_cluster_get_into(cl, key, kl, buf, sizeof(buf), &len,
					    NULL, &cas));
		cr_assert_eq(len, 3);
		cr_assert_eq(memcmp(buf, "bcd", 3), 0);
		CL_OK(rhkv_cluster_gat(cl, key, kl, 0, &v));
		cr_assert_eq(v.flags, 7);
		rhkv_value_free(&v);
		CL_OK(rhkv_cluster_cas(cl, key, kl, "5", 1, 0, 0, cas, NULL));
		cr_assert_eq(
			rhkv_cluster_cas(cl, key, kl, "6", 1, 0, 0, cas, NULL),
			RHKV_EEXISTS);
		CL_OK(rhkv_cluster_touch(cl, key, kl, 1000));
		CL_OK(rhkv_cluster_incr(cl, key, kl, 10, &n));
		cr_assert_eq(n, 15);
		CL_OK(rhkv_cluster_decr(cl, key, kl, 3, &n));
		cr_assert_eq(n, 12);
		CL_OK(rhkv_cluster_meta_arith(cl, key, kl, 8, NULL, &n, NULL));
		cr_assert_eq(n, 20);
		CL_OK(rhkv_cluster_meta_get(cl, key, kl, &mo, &m));
		cr_assert_str_eq(m.value.data, "20");
		rhkv_value_free(&m.value);
		/* the value is on the key's server, and only there */
		for (int i = 0; i < NODES; i++) {
			int rc = rhkv_get(direct[i], key, kl, &v);

			cr_assert_eq(rc, i == home ? 0 : RHKV_ENOTFOUND,
				     "%s on node %d (home %d): %s", key, i,
				     home, rhkv_strerror(rc));
			if (!rc)
				rhkv_value_free(&v);
		}
		CL_OK(rhkv_cluster_meta_set(cl, key, kl, "m", 1, NULL, NULL));
		expect_value(cl, key, "m", "meta set");
		CL_OK(rhkv_cluster_meta_delete(cl, key, kl, NULL));
		expect_value(cl, key, NULL, "meta delete");
	}
	for (int i = 0; i < NODES; i++)
		rhkv_close(direct[i]);
	rhkv_cluster_free(cl);
}

/* The iterator reaches every server: statistics, flush_all, and a dead
 * server reported as such in its own status. */
Test(cluster, every_server)
{
	rhkv_cluster *cl;
	int status[NODES];
	long sum = 0;
	rhkv *c;

	start_nodes();
	cl = live_cluster(1000);
	cr_assert_eq(rhkv_cluster_count(cl), NODES);
	cr_assert_eq(rhkv_cluster_count(NULL), 0);
	for (int k = 0; k < 300; k++) {
		char key[32];

		snprintf(key, sizeof(key), "it:%d", k);
		CL_OK(rhkv_cluster_set(cl, key, strlen(key), "v", 1, 0, 0,
				       NULL));
	}
	/* the loop of rhkv.h's comment */
	for (size_t i = 0; i < rhkv_cluster_count(cl); i++) {
		struct rhkv_stat *st;
		const char *host;
		size_t n;
		int port;

		CL_OK(rhkv_cluster_server(cl, i, &host, &port, &c));
		cr_assert_str_eq(host, "127.0.0.1");
		cr_assert_eq(port, ports[i]);
		CL_OK(rhkv_stats(c, NULL, &st, &n));
		for (size_t j = 0; j < n; j++)
			if (strcmp(st[j].name, "curr_items") == 0)
				sum += atol(st[j].value);
		rhkv_stats_free(st, n);
	}
	cr_assert_eq(sum, 300);
	cr_assert_eq(rhkv_cluster_server(cl, NODES, NULL, NULL, &c),
		     RHKV_EINVAL);
	cr_assert_null(c);

	CL_OK(rhkv_cluster_flush_all(cl, 0, status));
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(status[i], 0);
	/* flushed items leave lazily: curr_items may still count them */
	for (int k = 0; k < 300; k++) {
		char key[32];

		snprintf(key, sizeof(key), "it:%d", k);
		expect_value(cl, key, NULL, "flushed");
	}

	cr_assert_eq(rhkv_cluster_set_retry(cl, 60000), 0);
	H_EXPECT_EXIT_OK(cl_stop(pids[2]), "rhkvd after SIGTERM");
	pids[2] = 0;
	cr_assert_neq(rhkv_cluster_flush_all(cl, 0, status), 0);
	cr_assert_eq(status[0], 0);
	cr_assert_eq(status[1], 0);
	cr_assert(status[2] == RHKV_ECONN || status[2] == RHKV_ETIMEDOUT, "%s",
		  rhkv_strerror(status[2]));
	/* now known dead: skipped without a try */
	cr_assert_eq(rhkv_cluster_flush_all(cl, 0, status), RHKV_ECONN);
	cr_assert_eq(status[2], RHKV_ECONN);
	rhkv_cluster_free(cl);
}

/*
 * A prefix flush reaches every server, whichever holds the prefix's keys,
 * and a dead one in the middle neither stops the others nor hides its
 * failure: its status is a connection error, theirs 0, and the call's
 * result an error. Each live node, asked directly, has lost the prefix's
 * keys it held and kept the others.
 */
Test(cluster, flush_prefix_one_dead)
{
	enum { KEYS = 300, DEAD = 1 };
	static int owner[KEYS];
	int status[NODES], held[NODES] = { 0 };
	rhkv_cluster *cl;
	rhkv *direct[NODES] = { NULL };
	int rc;

	start_nodes();
	cl = live_cluster(1000);
	for (int k = 0; k < KEYS; k++) {
		char key[32];

		snprintf(key, sizeof(key), "%s:%d", k % 2 ? "fp" : "keep", k);
		owner[k] = node_of(cl, key);
		cr_assert_geq(owner[k], 0, "no node for %s", key);
		held[owner[k]]++;
		CL_OK(rhkv_cluster_set(cl, key, strlen(key), "v", 1, 0, 0,
				       NULL));
	}
	for (int i = 0; i < NODES; i++)
		cr_assert_gt(held[i], 0, "node %d holds no key", i);

	cr_assert_eq(rhkv_cluster_set_retry(cl, 60000), 0);
	H_EXPECT_EXIT_OK(cl_stop(pids[DEAD]), "rhkvd after SIGTERM");
	pids[DEAD] = 0;
	rc = rhkv_cluster_flush_prefix(cl, "fp:", 3, status);
	cr_assert_neq(rc, 0, "a dead node, yet the flush succeeded");
	cr_assert(status[DEAD] == RHKV_ECONN || status[DEAD] == RHKV_ETIMEDOUT,
		  "dead node: %s", rhkv_strerror(status[DEAD]));
	cr_assert_eq(rc, status[DEAD]);
	for (int i = 0; i < NODES; i++) {
		if (i == DEAD)
			continue;
		cr_assert_eq(status[i], 0, "node %d: %s", i,
			     rhkv_strerror(status[i]));
		direct[i] = cl_connect(ports[i], 1000);
	}
	for (int k = 0; k < KEYS; k++) {
		rhkv *c = direct[owner[k]];
		struct rhkv_value v;
		char key[32];

		if (owner[k] == DEAD)
			continue;
		snprintf(key, sizeof(key), "%s:%d", k % 2 ? "fp" : "keep", k);
		if (k % 2) {
			ERR(rhkv_get(c, key, strlen(key), &v), RHKV_ENOTFOUND);
		} else {
			OK(rhkv_get(c, key, strlen(key), &v));
			rhkv_value_free(&v);
		}
	}
	for (int i = 0; i < NODES; i++)
		rhkv_close(direct[i]);
	rhkv_cluster_free(cl);
}

/* ---- a server that comes back: the rejoin modes ---- */

#define STOPPED	    1
#define RJ_IO_MS    300
#define RJ_QUIET_MS 1000

/*
 * Three servers; key (a key of node STOPPED) is written "old", the node is
 * frozen (SIGSTOP: its calls time out), the key moves to its fallback and
 * is written "new" there, and the node is thawed with its "old" copy and
 * retried after RETRY_MS. The cluster is left right after the retry time.
 */
static rhkv_cluster *outage(enum rhkv_rejoin mode, char *key, size_t cap)
{
	rhkv_cluster *cl;
	struct rhkv_value v;
	int rc;

	start_nodes();
	cl = live_cluster(RJ_IO_MS);
	cr_assert_eq(rhkv_cluster_set_rejoin(cl, mode, RJ_QUIET_MS), 0);
	/* no retry while frozen: a retry would time out a call */
	cr_assert_eq(rhkv_cluster_set_retry(cl, 60000), 0);
	for (int k = 0;; k++) {
		snprintf(key, cap, "rj:%d", k);
		if (node_of(cl, key) == STOPPED)
			break;
	}
	CL_OK(rhkv_cluster_set(cl, key, strlen(key), "old", 3, 0, 0, NULL));

	freeze(STOPPED);
	rc = rhkv_cluster_get(cl, key, strlen(key), &v);
	cr_assert_eq(rc, RHKV_ETIMEDOUT, "get on the frozen node: %s",
		     rhkv_strerror(rc));
	cr_assert_neq(node_of(cl, key), STOPPED, "the key did not move");
	CL_OK(rhkv_cluster_set(cl, key, strlen(key), "new", 3, 0, 0, NULL));
	expect_value(cl, key, "new", "on the fallback");

	thaw(STOPPED);
	cr_assert_eq(rhkv_cluster_set_retry(cl, RETRY_MS), 0);
	h_sleep_ms(RETRY_MS + 50);
	return cl;
}

/* The default, as libmemcached: the key moves back at once and reads the
 * value from before the outage. This test documents the risk. */
Test(cluster, rejoin_at_once_reads_stale)
{
	char key[32];
	rhkv_cluster *cl = outage(RHKV_REJOIN_AT_ONCE, key, sizeof(key));

	expect_value(cl, key, "old", "AT_ONCE serves the pre-outage value");
	cr_assert_eq(node_of(cl, key), STOPPED);
	rhkv_cluster_free(cl);
}

/* Flushed before it takes keys: a miss, never the old value. */
Test(cluster, rejoin_flush_never_stale)
{
	char key[32];
	rhkv_cluster *cl = outage(RHKV_REJOIN_FLUSH, key, sizeof(key));

	expect_value(cl, key, NULL, "FLUSH: the rejoined server is empty");
	cr_assert_eq(node_of(cl, key), STOPPED);
	CL_OK(rhkv_cluster_set(cl, key, strlen(key), "newer", 5, 0, 0, NULL));
	expect_value(cl, key, "newer", "after the rejoin");
	rhkv_cluster_free(cl);
}

/*
 * Quiet: the key stays on its fallback while the server answers pings for
 * less than RJ_QUIET_MS; a failure in between (frozen again) starts the
 * quiet period over; after it the server rejoins, and serves its old
 * value: QUIET stops the bouncing, not the stale read.
 */
Test(cluster, rejoin_quiet_waits)
{
	char key[32];
	rhkv_cluster *cl = outage(RHKV_REJOIN_QUIET, key, sizeof(key));
	/* A period starts during a call, so after the time before it. The
	 * looks "within" a period prove something only when they begin well
	 * inside it: a loaded machine may have slept past it, and then they
	 * are skipped (logged). */
	long long q0 = h_now_ms(), q1;

	expect_value(cl, key, "new", "first ping: the quiet period starts");
	cr_assert_neq(node_of(cl, key), STOPPED);
	h_sleep_ms(300);
	if (h_now_ms() - q0 < RJ_QUIET_MS * 8 / 10)
		expect_value(cl, key, "new", "within the quiet period");
	else
		cr_log_warn("slow: the look within the first quiet period "
			    "was skipped");

	/* it flaps: the probe times out, the key stays on the fallback */
	freeze(STOPPED);
	h_sleep_ms(RETRY_MS + 50);
	expect_value(cl, key, "new", "frozen during the quiet period");
	thaw(STOPPED);
	h_sleep_ms(RETRY_MS + 50);
	q0 = h_now_ms();
	expect_value(cl, key, "new", "back: the quiet period starts over");
	q1 = h_now_ms();
	/* past the first period's end, within the second's */
	h_sleep_ms(RJ_QUIET_MS * 6 / 10);
	if (h_now_ms() - q0 < RJ_QUIET_MS * 8 / 10) {
		expect_value(cl, key, "new", "the quiet period started over");
		cr_assert_neq(node_of(cl, key), STOPPED);
	} else {
		cr_log_warn("slow: the look within the second quiet period "
			    "was skipped");
	}

	/* Until the second period has surely ended. */
	while (h_now_ms() < q1 + RJ_QUIET_MS + 200)
		h_sleep_ms(20);
	expect_value(cl, key, "old", "QUIET, once rejoined, serves stale");
	cr_assert_eq(node_of(cl, key), STOPPED);
	rhkv_cluster_free(cl);
}

Test(cluster, rejoin_bad_arguments)
{
	rhkv_cluster *cl;

	cr_assert_eq(rhkv_cluster_new(&cl, NULL), 0);
	cr_assert_eq(rhkv_cluster_set_rejoin(cl, (enum rhkv_rejoin)3, 0),
		     RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_set_rejoin(cl, RHKV_REJOIN_QUIET, -1),
		     RHKV_EINVAL);
	cr_assert_eq(rhkv_cluster_set_rejoin(NULL, RHKV_REJOIN_QUIET, 0),
		     RHKV_EINVAL);
	rhkv_cluster_free(cl);
}

/* A parallel mget over three servers, one killed and one paused: the live
 * server's keys come back, the paused one's time out together (one
 * deadline, not one per key), the killed one's fail or miss, never a
 * wrong value; then both are skipped and their keys miss on the rest,
 * each such miss marked as read on a fallback (rhkv_cluster_mget_moved). */
Test(cluster, mget_parallel_one_killed_one_paused)
{
	enum { N = 300 };
	static char keys[N][24];
	const char *kp[N];
	size_t kl[N];
	struct rhkv_item items[N];
	struct rhkv_value out[N];
	int st[N], owner[N], moved[N];
	rhkv_cluster *cl;
	long long t0, took;

	start_nodes();
	cl = live_cluster(300);
	cr_assert_eq(rhkv_cluster_set_retry(cl, 60000), 0);
	for (int i = 0; i < N; i++) {
		key_of(i, keys[i], sizeof(keys[i]));
		kp[i] = keys[i];
		kl[i] = strlen(keys[i]);
		items[i] = (struct rhkv_item){ .key = kp[i],
					       .klen = kl[i],
					       .val = kp[i],
					       .vlen = kl[i],
					       .flags = (uint32_t)i };
		owner[i] = node_of(cl, keys[i]);
	}
	cr_assert_eq(rhkv_cluster_mset(cl, N, items, st), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(st[i], 0, "%s: %s", keys[i], rhkv_strerror(st[i]));
	cr_assert_eq(curr_items(ports[0]) + curr_items(ports[1]) +
			     curr_items(ports[2]),
		     N);
	cr_assert_eq(rhkv_cluster_mget_moved(cl, N, kp, kl, out, st, moved), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(st[i], 0);
		cr_assert_eq(moved[i], 0, "every server is alive");
		cr_assert_str_eq(out[i].data, keys[i]);
		cr_assert_eq(out[i].flags, (uint32_t)i);
		rhkv_value_free(&out[i]);
	}

	H_EXPECT_EXIT_OK(cl_stop(pids[0]), "rhkvd after SIGTERM");
	pids[0] = 0;
	freeze(1);
	t0 = h_now_ms();
	cr_assert_eq(rhkv_cluster_mget(cl, N, kp, kl, out, st), 0);
	took = h_now_ms() - t0;
	for (int i = 0; i < N; i++) {
		if (owner[i] == 2) {
			cr_assert_eq(st[i], 0, "%s", rhkv_strerror(st[i]));
			cr_assert_str_eq(out[i].data, keys[i]);
		} else if (owner[i] == 1) {
			cr_assert_eq(st[i], RHKV_ETIMEDOUT, "%s",
				     rhkv_strerror(st[i]));
		} else {
			cr_assert(st[i] == RHKV_ECONN ||
					  st[i] == RHKV_ENOTFOUND,
				  "%s", rhkv_strerror(st[i]));
		}
		if (st[i])
			cr_assert_null(out[i].data);
		rhkv_value_free(&out[i]);
	}
	cr_assert_geq(took, 290, "%lld ms", took);
	/* both are skipped now: their keys miss on the live server, and
	 * the caller can tell those misses from true ones */
	cr_assert_eq(rhkv_cluster_mget_moved(cl, N, kp, kl, out, st, moved), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(st[i], owner[i] == 2 ? 0 : RHKV_ENOTFOUND);
		cr_assert_eq(moved[i], owner[i] != 2, "%s on node %d", keys[i],
			     owner[i]);
		rhkv_value_free(&out[i]);
	}
	thaw(1);
	rhkv_cluster_free(cl);
}

/* A batch whose server cannot be reached: every command gets its result
 * (RHKV_ECONN), none is lost, and the call itself succeeds. */
Test(cluster, exec_with_no_server_alive)
{
	const char *keys[3] = { "a", "b", "c" };
	size_t kl[3] = { 1, 1, 1 };
	struct rhkv_value out[3];
	int st[3] = { 0, 0, 0 };
	rhkv_cluster *cl;

	cr_assert_eq(rhkv_cluster_new(&cl, NULL), 0);
	cr_assert_eq(rhkv_cluster_add(cl, "127.0.0.1", cl_free_port(), 1), 0);
	cr_assert_eq(rhkv_cluster_mget(cl, 3, keys, kl, out, st), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(st[i], RHKV_ECONN, "%s", rhkv_strerror(st[i]));
		cr_assert_null(out[i].data);
	}
	rhkv_cluster_free(cl);
}
