/*
 * The server's clock in seconds: wall-clock time from the kernel's coarse
 * clock (its resolution is a scheduler tick; read through the vDSO, so no
 * system call). Item expiry (the store's cache_now), idle and handshake
 * timeouts and `stats` uptimes all read it, so that they agree.
 */
#ifndef RHKV_COMMON_CLOCK_H
#define RHKV_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec;
}

#endif
