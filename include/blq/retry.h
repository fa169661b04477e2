/**
 * \file
 * Retry delays: backoff kinds, jitter kinds, and the per-thread random
 * generator they draw from.
 *
 * A queue computes the delay before retry n (n = 1 for the first retry) as
 *
 *     d = backoff(n)   (capped at retry_max_interval_ns when set), then
 *     delay = jitter(d)
 *
 * and parks the item in its timer until the delay has passed; no worker
 * waits for it. The functions below are the built-ins the queue uses, public
 * so programs and tests can see the exact sequences.
 *
 * Thread-safety: every function here may be called from any thread at
 * once: they keep no shared state (the random ones draw from the calling
 * thread's own generator).
 */
#ifndef BLQ_RETRY_H
#define BLQ_RETRY_H

#include <stdint.h>

#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Backoff: the delay before retry n, as a multiple of retry_interval_ns
 * (blq_config.backoff). */
enum blq_backoff {
	BLQ_BACKOFF_NONE = 0,    /**< constant: interval every time */
	BLQ_BACKOFF_LINEAR,      /**< interval * n: 1, 2, 3, ... */
	BLQ_BACKOFF_EXPONENTIAL, /**< interval * 2^(n-1): 1, 2, 4, ... */
	BLQ_BACKOFF_QUADRATIC,   /**< interval * n^2: 1, 4, 9, ... */
	BLQ_BACKOFF_POLYNOMIAL,  /**< interval * n^3: 1, 8, 27, ... */
	BLQ_BACKOFF_LOGARITHMIC, /**< interval * ln(n + 1) */
	BLQ_BACKOFF_FIBONACCI,   /**< interval * fib(n): 1, 1, 2, 3, 5, ... */
	BLQ_BACKOFF_RANDOM,      /**< interval/2 + random [0, interval) */
	BLQ_BACKOFF_CUSTOM,      /**< the config's backoff_fn */
};

/** Jitter applied to the backoff's delay d (blq_config.jitter). */
enum blq_jitter {
	BLQ_JITTER_NONE = 0,     /**< d itself */
	BLQ_JITTER_FULL,         /**< random [0, d) */
	BLQ_JITTER_HALF,         /**< random [d - d/2, d] */
	BLQ_JITTER_DECORRELATED, /**< min(max, random [min, 3 * max(prev, d)]); prev is the
				  *   item's previous delay (AWS "decorrelated jitter") */
	BLQ_JITTER_CUSTOM,       /**< the config's jitter_fn */
};

/**
 * A custom backoff (blq_config.backoff_fn). Called on worker threads,
 * several at once: it must be thread-safe.
 * \param ctx blq_config.backoff_ctx.
 * \param retry the retry's number, 1-based.
 * \param interval_ns blq_config.retry_interval_ns.
 * \return the delay before that retry in ns (then capped at
 *         retry_max_interval_ns when set, and jittered).
 */
typedef uint64_t (*blq_backoff_fn)(void *ctx, unsigned retry, uint64_t interval_ns);

/**
 * A custom jitter (blq_config.jitter_fn). Called on worker threads,
 * several at once: it must be thread-safe; blq_rand_u64 is safe to call
 * from it.
 * \param ctx blq_config.jitter_ctx.
 * \param d the backoff's delay in ns.
 * \param prev_ns the item's previous delay, 0 before its first retry.
 * \return the delay to use, in ns.
 */
typedef uint64_t (*blq_jitter_fn)(void *ctx, uint64_t d, uint64_t prev_ns);

/**
 * A built-in backoff's delay before retry \p retry.
 * \param kind any enum blq_backoff but BLQ_BACKOFF_CUSTOM (which gives 0).
 * \param interval_ns the base interval (retry_interval_ns).
 * \param retry 1 for the first retry; 0 is treated as 1.
 * \return the delay in ns. Every kind saturates at UINT64_MAX instead of
 *         overflowing (RANDOM's sum can pass it for an \p interval_ns above
 *         2/3 of UINT64_MAX).
 */
BLQ_API uint64_t blq_backoff_ns(enum blq_backoff kind, uint64_t interval_ns, unsigned retry);

/**
 * A built-in jitter applied to delay \p d.
 * \param kind the jitter; BLQ_JITTER_NONE and BLQ_JITTER_CUSTOM return
 *        \p d unchanged.
 * \param d the backoff's delay in ns.
 * \param min_ns lower bound of BLQ_JITTER_DECORRELATED (ignored otherwise).
 * \param max_ns upper bound of BLQ_JITTER_DECORRELATED (ignored otherwise);
 *        with min_ns <= max_ns the result is in [min_ns, max_ns].
 * \param prev_ns the previous delay of the same item, 0 before its first
 *        retry.
 * \return the jittered delay in ns.
 */
BLQ_API uint64_t blq_jitter_ns(enum blq_jitter kind, uint64_t d, uint64_t min_ns, uint64_t max_ns,
			       uint64_t prev_ns);

/**
 * 64 random bits from the calling thread's generator (splitmix64, seeded
 * per thread). No lock, no shared state, no rand(). Not for cryptography.
 * \return the next value of the calling thread's sequence.
 */
BLQ_API uint64_t blq_rand_u64(void);

/**
 * A uniform random number in [0, n), from the calling thread's generator.
 * \param n the bound.
 * \return a value in [0, n); 0 when \p n is 0.
 */
BLQ_API uint64_t blq_rand_below(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
