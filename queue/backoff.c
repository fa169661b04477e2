/*
 * Built-in backoffs, jitters and the per-thread random generator.
 *
 * Every multiplication saturates: a retry count or an interval that would
 * overflow gives UINT64_MAX, which the queue then caps with
 * retry_max_interval_ns (or its one-year interval limit).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include <blq/retry.h>

#include "../util/monotonic.h"

/* splitmix64: tiny, fast, and good enough for spreading retries. The
 * state is per thread, seeded from the thread's own address, the time and
 * a process-wide counter (one relaxed add per thread, ever). */
static _Thread_local uint64_t rng_state;
static _Atomic uint64_t rng_threads;

static uint64_t seed(void)
{
	return (uint64_t)(uintptr_t)&rng_state ^ (blq__monotonic_ns() << 20) ^
	       atomic_fetch_add_explicit(&rng_threads, 0x632BE59BD9B4E019ull,
					 memory_order_relaxed);
}

uint64_t blq_rand_u64(void)
{
	if (rng_state == 0)
		rng_state = seed() | 1;
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t blq_rand_below(uint64_t n)
{
	/* Multiply-shift: uniform enough for n far below 2^64, no modulo. */
	return (uint64_t)(((unsigned __int128)blq_rand_u64() * n) >> 64);
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t fib(unsigned n)
{
	uint64_t a = 1, b = 1; /* fib(1), fib(2) */

	for (unsigned i = 2; i < n; i++) {
		uint64_t c = a + b;

		if (c < b)
			return UINT64_MAX;
		a = b;
		b = c;
	}
	return n <= 2 ? 1 : b;
}

uint64_t blq_backoff_ns(enum blq_backoff kind, uint64_t interval, unsigned n)
{
	if (n == 0)
		n = 1;
	switch (kind) {
	case BLQ_BACKOFF_NONE:
		return interval;
	case BLQ_BACKOFF_LINEAR:
		return mul_sat(interval, n);
	case BLQ_BACKOFF_EXPONENTIAL:
		return n - 1 >= 64 ? (interval ? UINT64_MAX : 0) : mul_sat(interval, 1ull << (n - 1));
	case BLQ_BACKOFF_QUADRATIC:
		return mul_sat(interval, mul_sat(n, n));
	case BLQ_BACKOFF_POLYNOMIAL:
		return mul_sat(interval, mul_sat(mul_sat(n, n), n));
	case BLQ_BACKOFF_LOGARITHMIC: {
		double d = (double)interval * log((double)n + 1.0);

		return d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)d;
	}
	case BLQ_BACKOFF_FIBONACCI:
		return mul_sat(interval, fib(n));
	case BLQ_BACKOFF_RANDOM:
		return interval / 2 + blq_rand_below(interval);
	case BLQ_BACKOFF_CUSTOM:
		break;
	}
	return 0;
}

/* Uniform in [lo, hi]; lo when hi <= lo. */
static uint64_t between(uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return blq_rand_u64();
	return lo + blq_rand_below(hi - lo + 1);
}

uint64_t blq_jitter_ns(enum blq_jitter kind, uint64_t d, uint64_t min_ns, uint64_t max_ns,
		       uint64_t prev_ns)
{
	switch (kind) {
	case BLQ_JITTER_FULL:
		return blq_rand_below(d);
	case BLQ_JITTER_HALF:
		return between(d - d / 2, d);
	case BLQ_JITTER_DECORRELATED: {
		uint64_t base = prev_ns > d ? prev_ns : d;
		uint64_t hi = mul_sat(base, 3);
		uint64_t r = between(min_ns, hi < min_ns ? min_ns : hi);

		return r > max_ns ? max_ns : r;
	}
	case BLQ_JITTER_NONE:
	case BLQ_JITTER_CUSTOM:
		break;
	}
	return d;
}
