/* proc: child processes for rhkv-bench's tests: run a program and wait for
 * its exit status, start one in the background, find a free loopback port,
 * wait for a port to accept. */
#ifndef RHKV_TEST_BENCHTOOL_PROC_H
#define RHKV_TEST_BENCHTOOL_PROC_H

#include <sys/types.h>

/* Starts argv[0] (looked up in PATH when it has no slash) with argv, stdout
 * and stderr to /dev/null when quiet; the child's pid, or -1. */
pid_t proc_start(char *const argv[], int quiet);
/* Waits for pid; its exit status, 128 + signal, or -1. */
int proc_wait(pid_t pid);
/* Runs argv to its end; its exit status as proc_wait. */
int proc_run(char *const argv[], int quiet);
/* A 127.0.0.1 TCP port free a moment ago, or -1. */
int proc_free_port(void);
/* 0 once 127.0.0.1:port accepts within timeout_ms, else -1. */
int proc_wait_port(int port, int timeout_ms);

#endif
