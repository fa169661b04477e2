/**
 * \file
 * Composable workers: transit, chain and async_chain. Each is a blq_worker
 * (a callback plus its context) that can be a queue's worker or a step of
 * another composite, so they build processing trees that end in the next
 * queue:
 *
 *     chain( parse, async_chain( index, notify ), transit( next_queue ) )
 *
 * Ownership of the payload, the one rule: a queue's worker owns the payload
 * when it returns 0 and must leave it alone when it fails (the queue frees
 * it or sends it to its DLQ). Inside a composite:
 * - chain: every step but the last only borrows the payload (must not
 *   free or keep it); the last step gets the worker's rule. The chain
 *   stops at the first failing step and returns its code.
 * - async_chain: every step only borrows the payload, concurrently; on
 *   success the optional `done` callback takes it (frees or forwards);
 *   without `done` an async_chain belongs in a chain before a step that
 *   takes the payload. The first failure (by step order) is returned.
 * - transit: hands the payload to an enqueuer; returns 0 when it was
 *   accepted (the target owns it), BLQ_EREFUSED otherwise (untouched).
 *
 * Thread-safety: the constructors and the _worker accessors may be called
 * from any thread. The workers they make may run on many threads at once
 * (as far as their steps may). A _free function must be the last call on
 * its object, once no call of its worker runs any more: after every queue
 * using it was freed (blq_free), or closed with blq_stats' workers_stuck
 * at 0 (a close past its time limit may leave callbacks running).
 */
#ifndef BLQ_WORKERS_H
#define BLQ_WORKERS_H

#include <stddef.h>

#include <blq/enqueuer.h>
#include <blq/error.h>
#include <blq/export.h>
#include <blq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A worker as a value: what blq_config.worker and worker_ctx take, and a
 * step of a chain. */
typedef struct blq_worker {
	blq_worker_fn fn; /**< the callback; required */
	void *ctx;        /**< its context (blq_config.worker_ctx); borrowed */
} blq_worker;

/**
 * A worker that hands each payload to \p target. With a time limit
 * (blq_config.timeout_ns) it claims the attempt first (blq_task_claim),
 * so a late hand-over cannot leave the payload with both queues.
 * \param[out] storage the caller's storage for the copy of \p target (no
 *        allocation); it must outlive the worker's use.
 * \param target copied into \p storage; the enqueuer's object must
 *        outlive the worker's use.
 * \return the worker, a value: nothing to free. Its call returns 0 when
 *         the target accepted the payload (the target owns it),
 *         BLQ_EREFUSED when it did not, and BLQ_ETIMEDOUT when the attempt
 *         was given up at its time limit before the hand-over; on both
 *         failures the calling queue keeps the payload. When \p storage is
 *         NULL or target.enqueue is NULL: a worker whose fn is NULL (blq_new
 *         and blq_chain_new refuse it with BLQ_EINVAL), \p storage left
 *         alone.
 * \threadsafety The worker may run on many threads at once when the
 * target's enqueue may (blq queues, dumps and discard DLQs may).
 */
BLQ_API blq_worker blq_transit_worker(blq_enqueuer *storage, blq_enqueuer target);

/** A chain of steps run one after another (opaque). Made by
 * blq_chain_new, freed with blq_chain_free. */
typedef struct blq_chain blq_chain;

/**
 * A worker that runs \p steps one after another on each payload and stops
 * at the first failure (see the ownership rule above). A retry re-runs
 * every step from the first (the queue retries the chain as one worker),
 * so steps must be idempotent; or join single steps with transit through
 * queues, each retrying only its own step.
 * \param steps n workers, copied (their contexts are borrowed); each fn
 *        must be non-NULL.
 * \param n the number of steps, at least 1.
 * \param[out] err optional; on failure names the bad step.
 * \return the chain, or NULL with BLQ_EINVAL (no steps, a NULL step) or
 *         BLQ_ENOMEM in \p err. The caller owns it: free it with
 *         blq_chain_free once no queue calls it any more.
 */
BLQ_API blq_chain *blq_chain_new(const blq_worker *steps, size_t n, blq_error *err);

/**
 * Free the chain (not its steps' contexts).
 * \param c the chain; NULL is a no-op.
 * \threadsafety Once, when no call of its worker runs any more (see the
 * top of this file).
 */
BLQ_API void blq_chain_free(blq_chain *c);

/**
 * The chain as a blq_worker {fn, ctx}, for a queue's config or another
 * chain.
 * \param c the chain.
 * \return the worker, a value holding \p c: valid until blq_chain_free,
 *         nothing to free itself. For a NULL \p c, a worker whose fn is
 *         NULL (blq_new and blq_chain_new refuse it).
 */
BLQ_API blq_worker blq_chain_worker(blq_chain *c);

/** An async chain: steps run in parallel on helper threads (opaque). Made
 * by blq_async_chain_new, freed with blq_async_chain_free. */
typedef struct blq_async_chain blq_async_chain;

/** An async chain's configuration; copied by blq_async_chain_new. */
typedef struct blq_async_config {
	const blq_worker *steps; /**< run concurrently on each payload; copied */
	size_t n;                /**< entries in steps: 1..64 */
	/** Helper threads shared by every call, started once: a call never
	 * starts a thread. Default (0) n - 1, at least 1 (the calling thread
	 * runs a step too); at most 256. */
	unsigned helpers;
	/** Called with the payload when every step succeeded, to take it
	 * (free it, forward it). Optional; see the ownership rule. */
	void (*done)(void *ctx, void *payload);
	/** Passed to done; borrowed. */
	void *done_ctx;
} blq_async_config;

/**
 * A worker that runs its steps in parallel on each payload, on a fixed
 * set of helper threads plus the calling thread, and returns when all
 * finished: 0 when all succeeded, else the failure of the first failing
 * step in step order.
 *
 * A call runs its first step itself and queues the others for the
 * helpers; the ones no helper has taken by the time its own step ends it
 * runs itself, one after another. So a call never waits for helpers busy
 * with other calls (no deadlock), and steps run truly in parallel when
 * helpers are free: steps that wait for each other need enough idle
 * helpers.
 * \param cfg the configuration; only read during the call.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the async chain with its helpers started, or NULL with
 *         BLQ_EINVAL (no steps, too many, a NULL step, too many helpers),
 *         BLQ_ENOMEM or BLQ_ETHREAD in \p err. The caller owns it: free it
 *         with blq_async_chain_free once no queue calls it any more.
 */
BLQ_API blq_async_chain *blq_async_chain_new(const blq_async_config *cfg, blq_error *err);

/**
 * Stop and join the helpers, then free the async chain (not its steps'
 * contexts).
 * \param a the async chain; NULL is a no-op.
 * \threadsafety Once, when no call of its worker runs any more (see the
 * top of this file); never from one of its own steps.
 */
BLQ_API void blq_async_chain_free(blq_async_chain *a);

/**
 * The async chain as a blq_worker {fn, ctx}.
 * \param a the async chain.
 * \return the worker, a value holding \p a: valid until
 *         blq_async_chain_free, nothing to free itself. For a NULL \p a,
 *         a worker whose fn is NULL (blq_new and blq_chain_new refuse it).
 */
BLQ_API blq_worker blq_async_chain_worker(blq_async_chain *a);

#ifdef __cplusplus
}
#endif

#endif
