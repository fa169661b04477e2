/*
 * Concurrency Kit as ThreadSanitizer can check it. Include this before any
 * ck header; outside a TSan build it adds nothing.
 *
 * Why
 * - ck's atomics are invisible or misleading to TSan either way ck 0.7
 *   builds them. By default (x86_64 inline assembly) TSan sees none of
 *   them, so it sees a ring's slot written by one thread and read by
 *   another with nothing between: a race on every correct hand-off. With
 *   CK_USE_CC_BUILTINS=1 (gcc/ck_pr.h) a load or store is a volatile
 *   access, which TSan treats as a plain one, and ordering comes from
 *   standalone fences, which TSan does not model: a race on the ring's
 *   counters instead. Either way TSan reports a correct SPSC hand-off,
 *   and fails retry_test (the drain's ck_ring_size against the worker's
 *   commit).
 * - So a TSan build (which defines CK_USE_CC_BUILTINS=1 for every target,
 *   cmake/blq_helpers.cmake) takes ck_pr's primitive layer from here, on
 *   the compiler's __atomic builtins, which TSan instruments: a load is an
 *   acquire, a store a release, a read-modify-write sequentially
 *   consistent. That is the ordering ck's fences give its loads and stores
 *   on x86 (TSO), so TSan then sees the happens-before ck's protocols
 *   establish, and only that: a slot written by two producers of an SPSC
 *   ring, or read by a consumer that did not dequeue it, is still a race.
 * - It checks how blq uses ck (who produces, who consumes, when) more than
 *   ck itself: where ck relied on a fence it omitted, the acquire here
 *   would hide it.
 * - The names are those of gcc/ck_pr.h (ck 0.7.1), which skips its own
 *   when CK_F_PR is defined, with the signatures of the x86_64 port that
 *   the other builds use; ck_pr.h derives the rest.
 */
#ifndef BLQ_UTIL_CK_TSAN_H
#define BLQ_UTIL_CK_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define BLQ__CK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BLQ__CK_TSAN 1
#endif
#endif

#ifdef BLQ__CK_TSAN

#ifdef CK_PR_H
#error "util/ck_tsan.h must come before any ck header"
#endif
#if !defined(CK_USE_CC_BUILTINS) || !CK_USE_CC_BUILTINS
#error "a TSan build defines CK_USE_CC_BUILTINS=1 (cmake/blq_helpers.cmake, blq_sanitize)"
#endif

#include <ck_cc.h>
#include <ck_stdbool.h>
#include <ck_stdint.h>

#define CK_F_PR
#include <gcc/ck_f_pr.h>

#define BLQ__CK_LOAD_STORE(S, M, T)                                                   \
	static inline T ck_pr_md_load_##S(const M *target)                            \
	{                                                                              \
		T r;                                                                   \
		__atomic_load((const T *)target, &r, __ATOMIC_ACQUIRE);                \
		return r;                                                              \
	}                                                                              \
	static inline void ck_pr_md_store_##S(M *target, T v)                         \
	{                                                                              \
		__atomic_store((T *)target, &v, __ATOMIC_RELEASE);                     \
	}

BLQ__CK_LOAD_STORE(char, char, char)
BLQ__CK_LOAD_STORE(uint, unsigned int, unsigned int)
BLQ__CK_LOAD_STORE(int, int, int)
#ifndef CK_PR_DISABLE_DOUBLE
BLQ__CK_LOAD_STORE(double, double, double)
#endif
BLQ__CK_LOAD_STORE(64, uint64_t, uint64_t)
BLQ__CK_LOAD_STORE(32, uint32_t, uint32_t)
BLQ__CK_LOAD_STORE(16, uint16_t, uint16_t)
BLQ__CK_LOAD_STORE(8, uint8_t, uint8_t)
#undef BLQ__CK_LOAD_STORE

static inline void *ck_pr_md_load_ptr(const void *target)
{
	return __atomic_load_n((void *const *)target, __ATOMIC_ACQUIRE);
}

static inline void ck_pr_md_store_ptr(void *target, const void *v)
{
	__atomic_store_n((void **)target, CK_CC_DECONST_PTR(v), __ATOMIC_RELEASE);
}

static inline void ck_pr_stall(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Real fences (TSan ignores them; the loads and stores above carry the
 * ordering it checks). */
#define BLQ__CK_FENCE(T)                                                               \
	static inline void ck_pr_fence_strict_##T(void)                               \
	{                                                                              \
		__sync_synchronize();                                                  \
	}

BLQ__CK_FENCE(atomic)
BLQ__CK_FENCE(atomic_atomic)
BLQ__CK_FENCE(atomic_load)
BLQ__CK_FENCE(atomic_store)
BLQ__CK_FENCE(store_atomic)
BLQ__CK_FENCE(load_atomic)
BLQ__CK_FENCE(load)
BLQ__CK_FENCE(load_load)
BLQ__CK_FENCE(load_store)
BLQ__CK_FENCE(store)
BLQ__CK_FENCE(store_store)
BLQ__CK_FENCE(store_load)
BLQ__CK_FENCE(memory)
BLQ__CK_FENCE(acquire)
BLQ__CK_FENCE(release)
BLQ__CK_FENCE(acqrel)
BLQ__CK_FENCE(lock)
BLQ__CK_FENCE(unlock)
#undef BLQ__CK_FENCE

/* Compare-and-swap, fetch-and-add and the store-only operations, on the
 * integer types and on pointers (as uintptr_t, as ck's x86_64 port does). */
#define BLQ__CK_RMW(S, M, T)                                                          \
	static inline bool ck_pr_cas_##S(M *target, T compare, T set)                 \
	{                                                                              \
		return __atomic_compare_exchange_n((T *)target, &compare, set, false,  \
						   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	}                                                                              \
	static inline bool ck_pr_cas_##S##_value(M *target, T compare, T set, T *v)   \
	{                                                                              \
		bool r = __atomic_compare_exchange_n((T *)target, &compare, set, false,\
						     __ATOMIC_SEQ_CST,                 \
						     __ATOMIC_SEQ_CST);                \
		*v = compare;                                                          \
		return r;                                                              \
	}                                                                              \
	static inline T ck_pr_faa_##S(M *target, T d)                                 \
	{                                                                              \
		return __atomic_fetch_add((T *)target, d, __ATOMIC_SEQ_CST);           \
	}                                                                              \
	static inline void ck_pr_add_##S(M *target, T d)                              \
	{                                                                              \
		(void)__atomic_fetch_add((T *)target, d, __ATOMIC_SEQ_CST);            \
	}                                                                              \
	static inline void ck_pr_sub_##S(M *target, T d)                              \
	{                                                                              \
		(void)__atomic_fetch_sub((T *)target, d, __ATOMIC_SEQ_CST);            \
	}                                                                              \
	static inline void ck_pr_and_##S(M *target, T d)                              \
	{                                                                              \
		(void)__atomic_fetch_and((T *)target, d, __ATOMIC_SEQ_CST);            \
	}                                                                              \
	static inline void ck_pr_or_##S(M *target, T d)                               \
	{                                                                              \
		(void)__atomic_fetch_or((T *)target, d, __ATOMIC_SEQ_CST);             \
	}                                                                              \
	static inline void ck_pr_xor_##S(M *target, T d)                              \
	{                                                                              \
		(void)__atomic_fetch_xor((T *)target, d, __ATOMIC_SEQ_CST);            \
	}                                                                              \
	static inline void ck_pr_inc_##S(M *target)                                   \
	{                                                                              \
		(void)__atomic_fetch_add((T *)target, (T)1, __ATOMIC_SEQ_CST);         \
	}                                                                              \
	static inline void ck_pr_dec_##S(M *target)                                   \
	{                                                                              \
		(void)__atomic_fetch_sub((T *)target, (T)1, __ATOMIC_SEQ_CST);         \
	}

BLQ__CK_RMW(char, char, char)
BLQ__CK_RMW(int, int, int)
BLQ__CK_RMW(uint, unsigned int, unsigned int)
BLQ__CK_RMW(64, uint64_t, uint64_t)
BLQ__CK_RMW(32, uint32_t, uint32_t)
BLQ__CK_RMW(16, uint16_t, uint16_t)
BLQ__CK_RMW(8, uint8_t, uint8_t)
#undef BLQ__CK_RMW

static inline bool ck_pr_cas_ptr(void *target, void *compare, void *set)
{
	return __atomic_compare_exchange_n((void **)target, &compare, set, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static inline bool ck_pr_cas_ptr_value(void *target, void *compare, void *set, void *v)
{
	bool r = __atomic_compare_exchange_n((void **)target, &compare, set, false,
					     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);

	*(void **)v = compare;
	return r;
}

#define BLQ__CK_PTR_OP(K, F)                                                           \
	static inline void ck_pr_##K##_ptr(void *target, uintptr_t d)                 \
	{                                                                              \
		(void)F((uintptr_t *)target, d, __ATOMIC_SEQ_CST);                     \
	}

BLQ__CK_PTR_OP(add, __atomic_fetch_add)
BLQ__CK_PTR_OP(sub, __atomic_fetch_sub)
BLQ__CK_PTR_OP(and, __atomic_fetch_and)
BLQ__CK_PTR_OP(or, __atomic_fetch_or)
BLQ__CK_PTR_OP(xor, __atomic_fetch_xor)
#undef BLQ__CK_PTR_OP

static inline uintptr_t ck_pr_faa_ptr(void *target, uintptr_t d)
{
	return __atomic_fetch_add((uintptr_t *)target, d, __ATOMIC_SEQ_CST);
}

static inline void ck_pr_inc_ptr(void *target)
{
	(void)__atomic_fetch_add((uintptr_t *)target, (uintptr_t)1, __ATOMIC_SEQ_CST);
}

static inline void ck_pr_dec_ptr(void *target)
{
	(void)__atomic_fetch_sub((uintptr_t *)target, (uintptr_t)1, __ATOMIC_SEQ_CST);
}

#include <ck_pr.h>

#endif /* BLQ__CK_TSAN */

#endif
