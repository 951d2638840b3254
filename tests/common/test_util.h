/*
 * Helpers shared by the criterion unit tests of common/: clocks, bounded
 * polling for what the resize worker does in the background, and the RCU
 * fixture every suite that touches a table installs.
 */
#ifndef RHKV_TESTS_COMMON_TEST_UTIL_H
#define RHKV_TESTS_COMMON_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/rcu.h"

static inline int64_t test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void test_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Polls cond every millisecond until it holds or timeout_ms have passed.
 * Check cond again afterwards (with cr_assert) to fail the test.
 */
#define TEST_WAIT_FOR(cond, timeout_ms)                           \
	do {                                                      \
		int64_t deadline_ = test_now_ms() + (timeout_ms); \
		while (!(cond) && test_now_ms() < deadline_)      \
			test_sleep_ms(1);                         \
	} while (0)

/* Suite fixtures: criterion's test thread registers with RCU. */
static inline void test_rcu_init(void)
{
	rhkv_rcu_register_thread();
}

static inline void test_rcu_fini(void)
{
	rhkv_rcu_unregister_thread();
}

#endif
