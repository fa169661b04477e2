/*
 * Retry delays: backoff kinds, jitter kinds, and the per-thread random
 * generator they draw from.
 *
 * A queue computes the delay before retry n (n = 1 for the first retry) as
 *   d = backoff(n) (capped at retry_max_interval_ns when set), then
 *   delay = jitter(d)
 * and parks the item in its timer until the delay has passed; no worker
 * waits for it. The functions below are the built-ins the queue uses, public
 * so programs and tests can see the exact sequences.
 */
#ifndef BLQ_RETRY_H
#define BLQ_RETRY_H

#include <stdint.h>

#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Backoff: the delay before retry n, as a multiple of retry_interval_ns. */
enum blq_backoff {
	BLQ_BACKOFF_NONE = 0,    /* constant: interval every time */
	BLQ_BACKOFF_LINEAR,      /* interval * n: 1, 2, 3, ... */
	BLQ_BACKOFF_EXPONENTIAL, /* interval * 2^(n-1): 1, 2, 4, ... */
	BLQ_BACKOFF_QUADRATIC,   /* interval * n^2: 1, 4, 9, ... */
	BLQ_BACKOFF_POLYNOMIAL,  /* interval * n^3: 1, 8, 27, ... */
	BLQ_BACKOFF_LOGARITHMIC, /* interval * ln(n + 1) */
	BLQ_BACKOFF_FIBONACCI,   /* interval * fib(n): 1, 1, 2, 3, 5, ... */
	BLQ_BACKOFF_RANDOM,      /* interval/2 + random[0, interval) */
	BLQ_BACKOFF_CUSTOM,      /* the config's backoff_fn */
};

/* Jitter applied to the backoff's delay d. */
enum blq_jitter {
	BLQ_JITTER_NONE = 0,
	BLQ_JITTER_FULL,         /* random [0, d) */
	BLQ_JITTER_HALF,         /* random [d/2, d] */
	BLQ_JITTER_DECORRELATED, /* min(max, random [min, 3 * max(prev, d)]); prev is the
				  * item's previous delay (AWS "decorrelated jitter") */
	BLQ_JITTER_CUSTOM,       /* the config's jitter_fn */
};

/* A custom backoff: the delay before retry n (1-based) for the configured
 * interval. Called on worker threads, several at once. */
typedef uint64_t (*blq_backoff_fn)(void *ctx, unsigned retry, uint64_t interval_ns);

/* A custom jitter: the delay to use given the backoff's d and the item's
 * previous delay (0 before its first retry). Called on worker threads,
 * several at once; blq_rand_u64 is safe to call from it. */
typedef uint64_t (*blq_jitter_fn)(void *ctx, uint64_t d, uint64_t prev_ns);

/**
 * blq_backoff_ns() - a built-in backoff's delay before retry @retry.
 * @kind: any enum blq_backoff but BLQ_BACKOFF_CUSTOM (which gives 0).
 * @retry: 1 for the first retry; 0 is treated as 1.
 * Return: the delay in ns, saturated at UINT64_MAX instead of overflowing.
 * Thread-safety: any thread (BLQ_BACKOFF_RANDOM draws from the calling
 * thread's own generator).
 */
BLQ_API uint64_t blq_backoff_ns(enum blq_backoff kind, uint64_t interval_ns, unsigned retry);

/**
 * blq_jitter_ns() - a built-in jitter applied to delay @d.
 * @min_ns, @max_ns: bounds of BLQ_JITTER_DECORRELATED (ignored otherwise);
 * the result is then in [min_ns, max_ns]. @prev_ns: the previous delay of
 * the same item, 0 before its first retry.
 * Return: the jittered delay (BLQ_JITTER_NONE and _CUSTOM return d).
 * Thread-safety: any thread; draws from the calling thread's generator.
 */
BLQ_API uint64_t blq_jitter_ns(enum blq_jitter kind, uint64_t d, uint64_t min_ns, uint64_t max_ns,
			       uint64_t prev_ns);

/**
 * blq_rand_u64() - 64 random bits from the calling thread's generator
 * (splitmix64, seeded per thread). No lock, no shared state, no rand().
 * Not for cryptography.
 */
BLQ_API uint64_t blq_rand_u64(void);

/** blq_rand_below() - a uniform random number in [0, n); 0 when n is 0. */
BLQ_API uint64_t blq_rand_below(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
