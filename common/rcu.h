/*
 * RCU for rhkv: thin wrappers over liburcu's urcu-memb flavour.
 *
 * Every thread that calls rhkv_rcu_read_lock() (directly, or through an
 * rhashtable function) must first call rhkv_rcu_register_thread() and call
 * rhkv_rcu_unregister_thread() before it exits. Read-side sections nest.
 * rhkv_rcu_synchronize() and rhkv_rcu_barrier() must never be called inside
 * a read-side section.
 *
 * ThreadSanitizer cannot see grace periods: liburcu is not instrumented, so a
 * free after synchronize_rcu() looks like a race with the readers it waited
 * for. In TSan builds the wrappers add the missing happens-before edges on
 * one token: every read_unlock releases it, and every grace period end (after
 * synchronize, and at the start of each RCU callback) acquires it. Callbacks
 * passed to rhkv_rcu_call() must begin with rhkv_rcu_callback_enter().
 */
#ifndef RHKV_COMMON_RCU_H
#define RHKV_COMMON_RCU_H

#include <urcu/urcu-memb.h>

#if defined(__SANITIZE_THREAD__)
#define RHKV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RHKV_TSAN 1
#endif
#endif

extern char rhkv_rcu__tsan_token;

#ifdef RHKV_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define rhkv_rcu__tsan_release()      __tsan_release(&rhkv_rcu__tsan_token)
#define rhkv_rcu__tsan_acquire()      __tsan_acquire(&rhkv_rcu__tsan_token)
#define rhkv_rcu__tsan_ignore_begin() __tsan_ignore_thread_begin()
#define rhkv_rcu__tsan_ignore_end()   __tsan_ignore_thread_end()
#else
#define rhkv_rcu__tsan_release()      ((void)0)
#define rhkv_rcu__tsan_acquire()      ((void)0)
#define rhkv_rcu__tsan_ignore_begin() ((void)0)
#define rhkv_rcu__tsan_ignore_end()   ((void)0)
#endif

static inline void rhkv_rcu_register_thread(void)
{
	urcu_memb_register_thread();
}

static inline void rhkv_rcu_unregister_thread(void)
{
	urcu_memb_unregister_thread();
}

static inline void rhkv_rcu_read_lock(void)
{
	urcu_memb_read_lock();
}

static inline void rhkv_rcu_read_unlock(void)
{
	rhkv_rcu__tsan_release();
	urcu_memb_read_unlock();
}

/* Waits until every read-side section that started before it has ended. */
static inline void rhkv_rcu_synchronize(void)
{
	urcu_memb_synchronize_rcu();
	rhkv_rcu__tsan_acquire();
}

/* Runs fn(head) on liburcu's call_rcu thread after a grace period. */
static inline void rhkv_rcu_call(struct rcu_head *head,
				 void (*fn)(struct rcu_head *head))
{
	rhkv_rcu__tsan_release();
	urcu_memb_call_rcu(head, fn);
}

/* First statement of every callback given to rhkv_rcu_call(). */
static inline void rhkv_rcu_callback_enter(void)
{
	rhkv_rcu__tsan_acquire();
}

/* Last statement of a callback whose writes a later rhkv_rcu_barrier()
 * caller relies on (TSan cannot see liburcu's own ordering). */
static inline void rhkv_rcu_callback_exit(void)
{
	rhkv_rcu__tsan_release();
}

/* Waits until every callback queued by rhkv_rcu_call() so far has run. */
static inline void rhkv_rcu_barrier(void)
{
	/*
	 * urcu_memb_barrier allocates a work item that liburcu's call_rcu
	 * thread frees; the hand-off is inside uninstrumented liburcu, so
	 * TSan would report the free as a race. Ignore this thread's own
	 * accesses during the call (they are all liburcu's).
	 */
	rhkv_rcu__tsan_ignore_begin();
	urcu_memb_barrier();
	rhkv_rcu__tsan_ignore_end();
	rhkv_rcu__tsan_acquire();
}

#endif
