/*
 * Built-in backoffs and jitters (the jitters draw from util/rand.c).
 *
 * Every multiplication (and RANDOM's sum) saturates: a retry count or an
 * interval that would overflow gives UINT64_MAX, which the queue then caps
 * with retry_max_interval_ns (or its one-year interval limit).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include <blq/retry.h>

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
	case BLQ_BACKOFF_RANDOM: {
		uint64_t d;

		if (__builtin_add_overflow(interval / 2, blq_rand_below(interval), &d))
			return UINT64_MAX;
		return d;
	}
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
