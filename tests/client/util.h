/*
 * Helpers of librhkv's tests: a live rhkvd from the harness (srv_start), or
 * one started here on a chosen port (to restart it on the same port), a
 * handle connected to it, and assertions on calls.
 */
#ifndef RHKV_TESTS_CLIENT_UTIL_H
#define RHKV_TESTS_CLIENT_UTIL_H

#include <rhkv.h>
#include <sys/types.h>

#include "harness.h"

/* A port that was free a moment ago. */
int cl_free_port(void);
/* Starts rhkvd (RHKV_TEST_SERVER) on 127.0.0.1:port and waits until it
 * answers; its pid, or -1. */
pid_t cl_start_on(int port, const char *const *extra);
/* SIGTERM, then SIGKILL after 5 s; reaps it. Returns its wait status (0:
 * exited with status 0), or -1 for no pid. */
int cl_stop(pid_t pid);
/* A handle on 127.0.0.1:port with io_timeout_ms; asserts it connected. */
rhkv *cl_connect(int port, int io_timeout_ms);
/* The general statistic name of the rhkvd on port (text protocol), or -1
 * when it cannot be read. */
long cl_stat(int port, const char *name);

/* Assertions on a call of librhkv that returns 0 or an RHKV_E* code,
 * with the handle's words on failure: the handle is the test's `c`. */
#define OK(call)                                                               \
	do {                                                                   \
		int rc_ = (call);                                              \
		cr_assert_eq(rc_, 0, "%s: %s (%s)", #call, rhkv_strerror(rc_), \
			     rhkv_errstr(c));                                  \
	} while (0)
#define ERR(call, err)                                                         \
	do {                                                                   \
		int rc_ = (call);                                              \
		cr_assert_eq(rc_, (err), "%s: %d %s (%s), expected %s", #call, \
			     rc_, rhkv_strerror(rc_), rhkv_errstr(c),          \
			     rhkv_strerror(err));                              \
	} while (0)

#endif
