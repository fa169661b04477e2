/*
 * A prefetch for writing: asks for a cache line in the state a store
 * needs (owned, every other core's copy invalidated), so that the store
 * that comes later finds it there. Not installed.
 *
 * Why not __builtin_prefetch(p, 1, 3) alone: on x86 GCC and Clang emit
 * its write form as PREFETCHW only when the build targets a CPU that has
 * it (-mprfchw, or a -march that includes it); for the default x86-64
 * target they emit PREFETCHT0, a read prefetch. That brings the line in
 * shared with the core that last read it, and the store still waits for
 * that copy to be invalidated: a lane's fill, whose slot a worker on the
 * other core read a lap before, paid it on every item (docs/benchmarks.md,
 * "A prefetch for writing": on an Intel Xeon a producer's enqueue took
 * 0.81x as long on two CPUs, W1-BATCH 0.90x). Not every
 * x86 CPU has PREFETCHW (CPUID leaf 0x80000001, ECX bit 8), so the library
 * asks once, when it is loaded (prefetch.c), and keeps the read prefetch
 * where the CPU lacks it. Elsewhere the builtin's write form is the write
 * prefetch (PRFM PSTL1KEEP on AArch64).
 */
#ifndef BLQ_UTIL_PREFETCH_H
#define BLQ_UTIL_PREFETCH_H

#include <stdbool.h>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__PRFCHW__)
#define BLQ__PREFETCHW_ASKED 1
/* The CPU has PREFETCHW: set once, before main (prefetch.c); false
 * until then, which only means a read prefetch. */
extern bool blq__prefetchw_ok;
#endif

/* A hint, never a fault (any address, mapped or not, is fine). */
static inline void blq__prefetch_write(const void *p)
{
#ifdef BLQ__PREFETCHW_ASKED
	if (blq__prefetchw_ok) {
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
		return;
	}
#endif
	__builtin_prefetch(p, 1, 3);
}

#endif
