/*
 * Kernel names over rhkv's own, so that code written against the kernel
 * rhashtable API (the snippets of Neil Brown's LWN article "The rhashtable
 * documentation I wanted to read", 2018)
 * compiles nearly verbatim: u32, refcount_t, rcu_read_lock/unlock, kfree_rcu
 * and printk. For examples and tests; rhkv itself uses the rhkv_ names.
 */
#ifndef RHKV_COMMON_KERNEL_COMPAT_H
#define RHKV_COMMON_KERNEL_COMPAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rcu.h"

typedef uint32_t u32;

#define printk printf

/* Read-side sections nest, as in the kernel; the thread must be registered
 * (rhkv_rcu_register_thread). */
#define rcu_read_lock()	  rhkv_rcu_read_lock()
#define rcu_read_unlock() rhkv_rcu_read_unlock()

/* ---- refcount_t, with the kernel's memory orderings ---- */

typedef struct {
	atomic_uint refs;
} refcount_t;

static inline void refcount_set(refcount_t *r, unsigned int n)
{
	atomic_store_explicit(&r->refs, n, memory_order_relaxed);
}

static inline unsigned int refcount_read(const refcount_t *r)
{
	return atomic_load_explicit(&r->refs, memory_order_relaxed);
}

static inline void refcount_inc(refcount_t *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

/*
 * Takes a reference unless the count is zero (the object is being torn
 * down). Returns whether it did. No ordering: the caller keeps the object's
 * memory alive by other means (RCU), as in the kernel.
 */
static inline bool refcount_inc_not_zero(refcount_t *r)
{
	unsigned int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	do {
		if (!old)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&r->refs, &old, old + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/*
 * Drops a reference; true when it was the last. acq_rel: the release orders
 * this owner's accesses before the drop, the acquire orders the last
 * owner's teardown after every other owner's drop (the kernel's release +
 * acquire-on-zero, without a fence, which TSan cannot see).
 */
static inline bool refcount_dec_and_test(refcount_t *r)
{
	return atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) ==
	       1;
}

/* ---- kfree_rcu(ptr, field) ---- */

/*
 * Frees with RHKV_KFREE: free() unless defined before this header is
 * included (tests define it to see what is freed).
 */
#ifndef RHKV_KFREE
#define RHKV_KFREE free
#endif

/*
 * kfree_rcu(ptr, field) frees ptr, an object from malloc() holding a struct
 * rcu_head named field, after a grace period. An RCU callback receives only
 * the address of the rcu_head, so the offset of the field must travel in the
 * choice of callback (the kernel encodes it in the callback pointer too):
 * there is one callback per possible offset, in units of the alignment of
 * struct rcu_head, for offsets below 64 units (512 bytes on 64-bit). A field
 * further into its object fails to compile. May be called inside a
 * read-side section; never blocks.
 */
#define RHKV__KFREE_UNIT _Alignof(struct rcu_head)
#define RHKV__KFREE_MAX	 (64 * RHKV__KFREE_UNIT)

#define RHKV__KFREE_CB(hi, lo)                                                 \
	static inline void rhkv__kfree_rcu_##hi##lo(struct rcu_head *head)     \
	{                                                                      \
		rhkv_rcu_callback_enter();                                     \
		RHKV_KFREE((char *)head - ((hi)*8 + (lo)) * RHKV__KFREE_UNIT); \
	}
#define RHKV__KFREE_CASE(hi, lo) \
	case (hi)*8 + (lo):      \
		return rhkv__kfree_rcu_##hi##lo;
#define RHKV__KFREE_8(X, hi) \
	X(hi, 0) X(hi, 1) X(hi, 2) X(hi, 3) X(hi, 4) X(hi, 5) X(hi, 6) X(hi, 7)
#define RHKV__KFREE_64(X)   \
	RHKV__KFREE_8(X, 0) \
	RHKV__KFREE_8(X, 1) \
	RHKV__KFREE_8(X, 2) \
	RHKV__KFREE_8(X, 3) \
	RHKV__KFREE_8(X, 4) \
	RHKV__KFREE_8(X, 5) \
	RHKV__KFREE_8(X, 6) \
	RHKV__KFREE_8(X, 7)

RHKV__KFREE_64(RHKV__KFREE_CB)

typedef void (*rhkv__rcu_callback_t)(struct rcu_head *head);

/* The callback freeing an object whose rcu_head is `units` units in. */
static inline rhkv__rcu_callback_t rhkv__kfree_rcu_fn(size_t units)
{
	switch (units) {
		RHKV__KFREE_64(RHKV__KFREE_CASE)
	}
	abort(); /* unreachable: kfree_rcu checks the offset at compile time */
}

#define kfree_rcu(ptr, field)                                                  \
	do {                                                                   \
		_Static_assert(offsetof(__typeof__(*(ptr)), field) <           \
				       RHKV__KFREE_MAX,                        \
			       "kfree_rcu: rcu_head too far into the object"); \
		rhkv_rcu_call(&(ptr)->field,                                   \
			      rhkv__kfree_rcu_fn(                              \
				      offsetof(__typeof__(*(ptr)), field) /    \
				      RHKV__KFREE_UNIT));                      \
	} while (0)

#endif
