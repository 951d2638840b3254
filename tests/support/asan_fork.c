/*
 * asan_fork.c: criterion's runner, safe to fork under AddressSanitizer.
 *
 * Criterion's runner forks a worker for each test (its BoxFort sandbox),
 * and the child allocates before it execs the worker: a table of the
 * descriptors to close, opendir()'s buffer, a copy of the environment.
 * GCC 12's ASan runtime does not lock its allocator around fork(). When
 * another thread of the runner (nanomsg's, or the one that reaps workers)
 * held the allocator's lock for one of those sizes at the moment of the
 * fork, the child waits for it forever and the runner waits for the child,
 * until meson's timeout. It is rare and seen under load; a runner thread
 * that allocates in a loop makes it happen within seconds.
 *
 * Linked into every criterion test of an ASan build, this file defines
 * malloc, calloc, realloc and free, which the dynamic linker then prefers
 * to ASan's for every library of the process. They hand each call to ASan,
 * except in a child the runner has just forked: there, until its exec,
 * memory comes from mmap(), which takes no lock of this process, and goes
 * back with munmap(). Only the runner arms the switch (its workers have
 * BXFI_MAP in their environment), so what the tests allocate, and what a
 * test's own fork() children allocate, stay under ASan's eye.
 *
 * The child path serves what BoxFort's child calls: malloc and free
 * directly, malloc through opendir(), at most a few blocks at once.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ASan's own entry points, which its malloc and friends alias. */
void *__interceptor_malloc(size_t size);
void *__interceptor_calloc(size_t n, size_t size);
void *__interceptor_realloc(void *p, size_t size);
void __interceptor_free(void *p);

#define CHILD_BLOCKS 64

struct child_block {
	void *p;
	size_t len;
};

/* Set in the forked child only, which has one thread: no locking. */
static bool in_forked_child;
static struct child_block child_blocks[CHILD_BLOCKS];

static void *child_alloc(size_t size)
{
	size_t len = size ? size : 1;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	for (int i = 0; i < CHILD_BLOCKS; i++) {
		if (!child_blocks[i].p) {
			child_blocks[i] = (struct child_block){ p, len };
			return p;
		}
	}
	munmap(p, len);
	return NULL;
}

static struct child_block *child_block_of(const void *p)
{
	for (int i = 0; i < CHILD_BLOCKS; i++)
		if (p && child_blocks[i].p == p)
			return &child_blocks[i];
	return NULL;
}

void *malloc(size_t size)
{
	if (in_forked_child)
		return child_alloc(size);
	return __interceptor_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (!in_forked_child)
		return __interceptor_calloc(n, size);
	if (size && n > SIZE_MAX / size)
		return NULL;
	return child_alloc(n * size); /* fresh anonymous pages are zero */
}

void free(void *p)
{
	struct child_block *b;

	if (!in_forked_child) {
		__interceptor_free(p);
		return;
	}
	/* A block from before the fork stays: the child execs soon. */
	b = child_block_of(p);
	if (b) {
		munmap(b->p, b->len);
		b->p = NULL;
	}
}

void *realloc(void *p, size_t size)
{
	struct child_block *b;
	void *q;

	if (!in_forked_child)
		return __interceptor_realloc(p, size);
	if (!p)
		return child_alloc(size);
	b = child_block_of(p);
	if (!b)
		return NULL; /* ASan's block: growing it would take its lock */
	q = child_alloc(size);
	if (q) {
		memcpy(q, p, b->len < size ? b->len : size);
		free(p);
	}
	return q;
}

static void enter_forked_child(void)
{
	in_forked_child = true;
}

__attribute__((constructor)) static void arm_in_runner(void)
{
	if (!getenv("BXFI_MAP"))
		pthread_atfork(NULL, NULL, enter_forked_child);
}
