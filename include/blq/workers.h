/*
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
 *   - chain: every step but the last only borrows the payload (must not
 *     free or keep it); the last step gets the worker's rule. The chain
 *     stops at the first failing step and returns its code.
 *   - async_chain: every step only borrows the payload, concurrently; on
 *     success the optional `done` callback takes it (frees or forwards);
 *     without `done` an async_chain belongs in a chain before a step that
 *     takes the payload. The first failure (by step order) is returned.
 *   - transit: hands the payload to an enqueuer; returns 0 when it was
 *     accepted (the target owns it), BLQ_EREFUSED otherwise (untouched).
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

/* A worker as a value: what blq_config.worker and worker_ctx take. */
typedef struct blq_worker {
	blq_worker_fn fn;
	void *ctx;
} blq_worker;

/**
 * blq_transit_worker() - a worker that hands each payload to @target.
 * @target: copied into @storage; the enqueuer must outlive the worker.
 * @storage: caller's storage for the copy (no allocation).
 * Return: the worker. Its call returns 0 when the target accepted the
 * payload, BLQ_EREFUSED when it did not (the caller keeps the payload).
 * Thread-safety: as the target's enqueue (blq queues: any thread).
 */
BLQ_API blq_worker blq_transit_worker(blq_enqueuer *storage, blq_enqueuer target);

typedef struct blq_chain blq_chain;

/**
 * blq_chain_new() - a worker that runs @steps one after another on each
 * payload and stops at the first failure (see the ownership rule above).
 * A retry re-runs every step from the first (the queue retries the chain
 * as one worker), so steps must be idempotent; or join single steps with
 * transit through queues, each retrying only its own step.
 * @steps: n workers, copied; each fn must be non-NULL.
 * @err:   optional; names the bad step.
 * Return: the chain, or NULL with BLQ_EINVAL (no steps, a NULL step) or
 * BLQ_ENOMEM. Free with blq_chain_free after every queue using it closed.
 * Thread-safety: the worker may run on many threads at once if its steps
 * may.
 */
BLQ_API blq_chain *blq_chain_new(const blq_worker *steps, size_t n, blq_error *err);
/** blq_chain_free() - frees the chain (not its steps' contexts); call after
 * every queue using it closed. NULL is a no-op. */
BLQ_API void blq_chain_free(blq_chain *c);
/** blq_chain_worker() - the chain as a blq_worker {fn, ctx} for a queue's
 * config or another chain; valid until blq_chain_free. */
BLQ_API blq_worker blq_chain_worker(blq_chain *c);

typedef struct blq_async_chain blq_async_chain;

typedef struct blq_async_config {
	const blq_worker *steps; /* run concurrently on each payload */
	size_t n;                /* 1..64 */
	/* Helper threads shared by every call, started once: a call never
	 * starts a thread. Default n - 1 (the calling thread runs a step
	 * too); at most 256. */
	unsigned helpers;
	/* Called with the payload when every step succeeded, to take it
	 * (free it, forward it). Optional; see the ownership rule. */
	void (*done)(void *ctx, void *payload);
	void *done_ctx;
} blq_async_config;

/**
 * blq_async_chain_new() - a worker that runs its steps in parallel on each
 * payload, on a fixed set of helper threads plus the calling thread, and
 * returns when all finished: 0 when all succeeded, else the failure of the
 * first failing step in step order.
 * Return: the async chain, or NULL with BLQ_EINVAL (no steps, too many, a
 * NULL step, too many helpers), BLQ_ENOMEM or BLQ_ETHREAD in @err.
 * Thread-safety: its worker may run on many threads at once. A call runs
 * its first step itself and queues the others for the helpers; the ones no
 * helper has taken by the time its own step ends it runs itself, one after
 * another. So a call never waits for helpers busy with other calls (no
 * deadlock), and steps run truly in parallel when helpers are free: steps
 * that wait for each other need enough idle helpers.
 */
BLQ_API blq_async_chain *blq_async_chain_new(const blq_async_config *cfg, blq_error *err);
/** blq_async_chain_free() - joins the helpers; call after the queues using
 * it closed. NULL is a no-op. */
BLQ_API void blq_async_chain_free(blq_async_chain *a);
/** blq_async_chain_worker() - the async chain as a blq_worker {fn, ctx};
 * valid until blq_async_chain_free. */
BLQ_API blq_worker blq_async_chain_worker(blq_async_chain *a);

#ifdef __cplusplus
}
#endif

#endif
