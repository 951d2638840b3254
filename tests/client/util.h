/*
 * Helpers of librhkv's tests: a live rhkvd from the harness (srv_start), or
 * one started here on a chosen port (to restart it on the same port), and
 * a handle connected to it.
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
/* SIGTERM, then SIGKILL after 5 s; reaps it. */
void cl_stop(pid_t pid);
/* A handle on 127.0.0.1:port with io_timeout_ms; asserts it connected. */
rhkv *cl_connect(int port, int io_timeout_ms);

#endif
