/*
 * Error pointers, as in the kernel: a function that returns a pointer can
 * return a negative errno value folded into the top page of the address
 * space instead. IS_ERR() tells the two apart.
 */
#ifndef RHKV_COMMON_ERR_H
#define RHKV_COMMON_ERR_H

#include <stdbool.h>
#include <stdint.h>

/* Highest errno value that can be encoded; the kernel uses the same. */
#define MAX_ERRNO 4095

static inline void *ERR_PTR(long error)
{
	return (void *)(intptr_t)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)(intptr_t)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return (uintptr_t)ptr >= (uintptr_t)-MAX_ERRNO;
}

static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return ptr == NULL || IS_ERR(ptr);
}

#endif
