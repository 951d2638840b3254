/*
 * memcached's options for the process itself: -d (run in the background),
 * -P (a pid file), -r (core files) and -k (locked memory). main.c calls
 * them in order: process_daemonize before any thread exists, the others
 * as start-up reaches them, process_ready once the server listens.
 */
#ifndef RHKV_SERVER_PROCESS_H
#define RHKV_SERVER_PROCESS_H

#include <stdbool.h>

/*
 * -d: forks. The parent waits until the child calls process_ready (then
 * exits 0) or exits (then exits with the child's status), so that a start
 * that fails is seen by whoever ran rhkvd, with its message, which the
 * child writes to the same stderr until it is ready. Returns 0 in the
 * child, or -1 when the fork failed (errno).
 */
int process_daemonize(void);

/*
 * Start-up is over: with -d, tells the parent, leaves the directory it
 * started in for / (but with -r, where core files go: memcached's rule)
 * and, unless keep_stderr, points stderr at /dev/null (memcached keeps it
 * with -v). Without -d, nothing.
 */
void process_ready(bool keep_stderr, bool stay_in_dir);

/* -r: raises the core file size limit as far as allowed; -1 (errno)
 * when core files stay off. */
int process_enable_coredumps(void);

/* -k: every page in use stays in RAM (mlockall, the pages locked as they
 * are first touched, not the whole reserved address space); -1 (errno)
 * when refused. */
int process_lock_memory(void);

/* -P: writes the process id to path (through path.tmp, renamed, so that
 * a reader never sees it empty); -1 (errno) on failure. */
int process_write_pid(const char *path);

#endif
