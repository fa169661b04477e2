/*
 * Clocks.
 *
 * blq__monotonic_ns (util/monotonic.h) is the kernel's CLOCK_MONOTONIC: every
 * sleep deadline (futex, condition variable) is on it.
 *
 * blq__fast_ns is the queue's default clock (cfg.clock.now_ns unset): the
 * same CLOCK_MONOTONIC, read for a fraction of the cost on CPUs with an
 * invariant TSC. A queue with metrics reads the clock three times per item
 * (enqueue, start, end), and the vDSO's clock_gettime costs 25-60 ns on the
 * 2-vCPU KVM machines we measure on (it fences, then scales the TSC under a
 * seqlock), against ~10-20 ns for a bare rdtsc. So:
 * - Each thread keeps an anchor, a (TSC, CLOCK_MONOTONIC) pair, and
 *   extrapolates from it with a process-wide ticks-to-ns rate; it reads
 *   CLOCK_MONOTONIC again once the anchor is 4 ms old. The extrapolation
 *   error is the rate's error times 4 ms: tens of nanoseconds.
 * - The rate is measured, not assumed: from the first call on, calls read
 *   CLOCK_MONOTONIC until 10 ms have passed since the first one, and that
 *   call turns the 10 ms baseline into the rate. No busy-wait, no start-up
 *   cost beyond that window.
 * - Per thread it never goes back: a fresh anchor that lands below what
 *   the thread last returned (a rate a hair too fast) is clamped. Across
 *   threads, readings agree with CLOCK_MONOTONIC to within that error.
 * - Without an invariant TSC (CPUID 0x80000007 EDX bit 8), or off x86-64,
 *   it is plain clock_gettime.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "internal.h"

uint64_t blq__deadline_after(uint64_t ns)
{
	/* now > 0 (time since boot), so 0 can mean "no limit". */
	uint64_t abs = blq__sat_add(blq__monotonic_ns(), ns);

	return abs == UINT64_MAX ? 0 : abs;
}

#if defined(__x86_64__)

#define CAL_BASELINE_NS 10000000ull /* measure the rate over 10 ms */
#define ANCHOR_AGE_NS 4000000ull    /* re-anchor every 4 ms */

static pthread_once_t cal_once = PTHREAD_ONCE_INIT;
static bool tsc_ok;                 /* set once, before cal_once returns */
static uint64_t cal_tsc, cal_ns;    /* the process-wide first anchor */
/* ns = ticks * mult >> 32; 0 until measured. Relaxed: the value is all
 * a reader needs (cal_* were published by pthread_once). */
static _Atomic uint64_t cal_mult;
static _Atomic uint64_t anchor_ticks; /* ANCHOR_AGE_NS in ticks */

static _Thread_local uint64_t my_tsc, my_ns, my_last;

static void calibrate_start(void)
{
	unsigned a, b, c, d;

	tsc_ok = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) != 0;
	if (!tsc_ok)
		return;
	cal_tsc = __rdtsc();
	cal_ns = blq__monotonic_ns();
}

/* Until the rate is known: CLOCK_MONOTONIC, and the call that finds the
 * baseline long enough measures the rate. */
static uint64_t calibrating(void)
{
	pthread_once(&cal_once, calibrate_start);
	uint64_t ns = blq__monotonic_ns();
	if (!tsc_ok)
		return ns;
	uint64_t t = __rdtsc();
	if (ns - cal_ns >= CAL_BASELINE_NS && t > cal_tsc) {
		uint64_t mult = (uint64_t)(((unsigned __int128)(ns - cal_ns) << 32) / (t - cal_tsc));

		if (mult != 0) {
			atomic_store_explicit(&anchor_ticks,
					      (uint64_t)(((unsigned __int128)ANCHOR_AGE_NS << 32) / mult),
					      memory_order_relaxed);
			atomic_store_explicit(&cal_mult, mult, memory_order_release);
		}
	}
	return ns;
}

uint64_t blq__fast_ns(void)
{
	uint64_t mult = atomic_load_explicit(&cal_mult, memory_order_acquire);

	if (mult == 0)
		return calibrating();
	uint64_t t = __rdtsc();
	uint64_t ns;
	if (my_tsc != 0 && t - my_tsc < atomic_load_explicit(&anchor_ticks, memory_order_relaxed)) {
		ns = my_ns + (uint64_t)(((unsigned __int128)(t - my_tsc) * mult) >> 32);
	} else {
		ns = my_ns = blq__monotonic_ns();
		my_tsc = t;
	}
	if (ns < my_last)
		ns = my_last;
	my_last = ns;
	return ns;
}

#else

uint64_t blq__fast_ns(void)
{
	return blq__monotonic_ns();
}

#endif
