/*
 * The auth file reloaded while checks run (server/exec/auth.h's contract):
 * reader threads check credentials without a pause while the main thread
 * rewrites the file and reloads it, alternating two user lists. A user in
 * both must always pass, each list's own user must pass while it is in,
 * and a wrong password must never pass; under ASan a list freed before
 * its readers are done is a use after free, under TSan a missing ordering
 * a race. A plain executable, so that it runs under TSan (criterion
 * cannot); RHKV_STRESS_MS bounds its time (default 2000 ms).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rcu.h"
#include "server/exec/auth.h"
#include "stress_time.h"

#define READERS 3

static struct auth *a;
static atomic_bool stop;
static atomic_ulong checks, seen_one, seen_two;
static atomic_int failed;

static bool check(const char *user, const char *pass)
{
	return auth_check(a, user, strlen(user), pass, strlen(pass));
}

static void *reader(void *arg)
{
	(void)arg;
	rhkv_rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (!check("keep", "always") || check("keep", "never") ||
		    check("one", "two")) {
			atomic_store(&failed, 1);
			break;
		}
		if (check("one", "1"))
			atomic_fetch_add_explicit(&seen_one, 1,
						  memory_order_relaxed);
		if (check("two", "2"))
			atomic_fetch_add_explicit(&seen_two, 1,
						  memory_order_relaxed);
		atomic_fetch_add_explicit(&checks, 1, memory_order_relaxed);
	}
	rhkv_rcu_unregister_thread();
	return NULL;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

int main(void)
{
	static const char *const lists[] = {
		"keep:always\none:1\n",
		"two:2\nkeep:always\n",
	};
	char path[] = "/tmp/rhkv-auth-stress-XXXXXX";
	char err[512] = "cannot write the file";
	pthread_t th[READERS];
	struct timespec t0;
	long budget = stress_budget_ms();
	unsigned long reloads = 0;
	int fd = mkstemp(path), rc = 0;

	rhkv_rcu_register_thread();
	if (fd >= 0)
		close(fd);
	if (fd < 0 || write_file(path, lists[0]) ||
	    auth_open(&a, path, err, sizeof(err))) {
		fprintf(stderr, "stress_auth_reload: setup: %s\n", err);
		return 1;
	}
	for (int i = 0; i < READERS; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (stress_elapsed_ms(&t0) < budget && !atomic_load(&failed)) {
		if (write_file(path, lists[++reloads % 2]) ||
		    auth_reload(a, err, sizeof(err))) {
			fprintf(stderr, "stress_auth_reload: reload: %s\n",
				err);
			rc = 1;
			break;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&failed)) {
		fprintf(stderr, "stress_auth_reload: a check gave a wrong "
				"answer during a reload\n");
		rc = 1;
	}
	/* Both lists were in place while readers checked. */
	if (!rc && (reloads < 2 || !atomic_load(&seen_one) ||
		    !atomic_load(&seen_two))) {
		fprintf(stderr,
			"stress_auth_reload: %lu reloads, user one seen %lu "
			"times, two %lu\n",
			reloads, atomic_load(&seen_one),
			atomic_load(&seen_two));
		rc = 1;
	}
	printf("stress_auth_reload: %lu reloads, %lu checks\n", reloads,
	       atomic_load(&checks));
	auth_destroy(&a);
	unlink(path);
	rhkv_rcu_unregister_thread();
	return rc;
}
