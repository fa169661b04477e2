/**
 * \file
 * blq QoS: priority sub-queues in front of a queue's workers.
 *
 * With blq_config.qos set, an enqueued item does not go straight into the
 * ring the workers take from. A priority evaluator gives it a percent
 * (1..100), the percent picks a sub-queue by cumulative ingress weight, and
 * one or more egress threads move items from the sub-queues into the egress
 * ring, choosing the next sub-queue by the algorithm:
 * - PQ: always the first non-empty sub-queue, in configuration order;
 * - RR: one item from each non-empty sub-queue in turn;
 * - WRR: per round, round(egress_weight / smallest egress_weight) items
 *   from each sub-queue (weights 250/600/150 take 2, 4 and 1).
 *
 * A full sub-queue leaks (rear or front, from that sub-queue only) into the
 * queue's DLQ; without a DLQ the producer blocks on that sub-queue only
 * (blq_try_enqueue says BLQ_EFULL). Accounting, closing and the outcomes
 * are exactly those of a plain queue (queue.h): items waiting in
 * sub-queues count in blq_size, drain through the egress on a graceful
 * close and go to the DLQ (or are lost) on a force close.
 *
 * Thread-safety: every function here may be called from any thread at
 * once; those taking a queue, until blq_free(q) is called.
 */
#ifndef BLQ_QOS_H
#define BLQ_QOS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The queue, declared here too so this header stands alone; documented in
 * blq/queue.h (the markers hide this second declaration from the
 * reference). */
/** \cond */
typedef struct blq blq;
/** \endcond */

/** At most this many sub-queues per queue. */
#define BLQ_QOS_SUBQS_MAX 64u
/** blq_qos_subq_info's index for the egress ring. */
#define BLQ_QOS_EGRESS UINT_MAX

/** How the egress picks the sub-queue to take the next item from. */
enum blq_qos_algo {
	BLQ_QOS_PQ = 0, /**< priority queuing: the first non-empty, in order */
	BLQ_QOS_RR,     /**< round-robin: one from each in turn */
	BLQ_QOS_WRR,    /**< weighted round-robin: by egress weight per round */
};

/** Built-in priority evaluators. */
enum blq_qos_eval_kind {
	BLQ_QOS_EVAL_NONE = 0, /**< not set: refused by blq_new */
	BLQ_QOS_EVAL_WEIGHTED, /**< percent = job weight / max * 100 (the original's) */
	BLQ_QOS_EVAL_RANDOM,   /**< uniform 1..100: for tests and demos */
	BLQ_QOS_EVAL_CUSTOM,   /**< fn */
};

/**
 * A custom evaluator (blq_qos_evaluator.fn). Runs on the producer's
 * thread, several at once: it must be thread-safe, and should be cheap (it
 * is on every enqueue).
 * \param ctx blq_qos_evaluator.ctx.
 * \param payload the payload being enqueued; borrowed for the call.
 * \param weight the weight from blq_enqueue_job (0 from blq_enqueue).
 * \return the percent, 1..100; 0 counts as 1, above 100 as 100.
 */
typedef unsigned (*blq_qos_eval_fn)(void *ctx, void *payload, uint64_t weight);

/** Gives each enqueued item a percent, 1..100, which picks its sub-queue. */
typedef struct blq_qos_evaluator {
	enum blq_qos_eval_kind kind; /**< which evaluator; required (not NONE) */
	/** WEIGHTED: the weight that means 100 percent. Default 100. */
	uint64_t max;
	/** WEIGHTED: the percent of weight 0 (blq_enqueue, or a job without
	 * weight). Default 0, which counts as 1: the first sub-queue. */
	unsigned def;
	/** CUSTOM: the callback. */
	blq_qos_eval_fn fn;
	/** CUSTOM: passed to fn; borrowed (must outlive the queue). */
	void *ctx;
} blq_qos_evaluator;

/** One sub-queue. Set weight, or both ingress_weight and egress_weight (or
 * weight plus one of them: weight stands in for the other). */
typedef struct blq_qos_subq {
	/** Used in metrics (label subq) and status; copied. NULL: its index
	 * ("0", "1", ...). 1..63 bytes, unique, not "ingress" or "egress". */
	const char *name;
	/** Items it holds, exactly. Required, >= 1. */
	size_t capacity;
	/** Both weights at once. */
	uint64_t weight;
	/** Share of incoming items: the sub-queue takes the percents in its
	 * slice of the cumulative ingress weights (250/600/150: 1-25, 26-85,
	 * 86-100). */
	uint64_t ingress_weight;
	/** WRR: share of outgoing items per round. PQ and RR ignore it. */
	uint64_t egress_weight;
} blq_qos_subq;

/** The egress: the ring the workers take from, and the threads that fill
 * it from the sub-queues. Zero fields take the defaults. */
typedef struct blq_qos_egress {
	/** Items the egress ring holds (split over streams). Default 64. */
	size_t capacity;
	/** Rings the egress is sharded into, 1..capacity. Default 1. */
	unsigned streams;
	/** Threads moving items from the sub-queues to the egress, 1..64.
	 * Default 1. Each schedules on its own, so with more than one the
	 * PQ/RR/WRR order holds per thread, not across them. */
	unsigned workers;
	/** Kept for compatibility with the original (default 1000) and
	 * ignored: an egress thread with nothing to move takes a few yielding
	 * looks, then sleeps until an item arrives; it never polls on a timer,
	 * so an idle QoS queue uses no CPU. */
	unsigned idle_threshold;
	/** Kept for compatibility with the original (default 1 ms) and
	 * ignored, as idle_threshold. */
	uint64_t idle_timeout_ns;
} blq_qos_egress;

/**
 * QoS configuration, for blq_config.qos. Copied by blq_new (the sub-queue
 * array and names too): the caller may free it afterwards. The queue's
 * capacity becomes the sum of the sub-queues' and the egress's capacities:
 * blq_config.capacity must be 0 or that sum, and blq_config.streams 0 (the
 * egress has its own).
 */
typedef struct blq_qos_config {
	enum blq_qos_algo algo;      /**< how the egress picks; default PQ */
	blq_qos_egress egress;       /**< the egress ring and its threads */
	blq_qos_evaluator evaluator; /**< required */
	/** The sub-queues, in priority order for PQ (first = served first);
	 * copied. */
	const blq_qos_subq *subqs;
	unsigned nsubqs; /**< entries in subqs: 2..BLQ_QOS_SUBQS_MAX */
} blq_qos_config;

/** A sub-queue (or the egress) as blq_qos_subq_info reports it. */
typedef struct blq_qos_subq_stats {
	const char *name; /**< the queue's copy; valid until blq_free */
	size_t capacity;  /**< items it holds at most */
	size_t size;      /**< items in it now */
	uint64_t ingress_weight, /**< its ingress weight; 0 for the egress */
		egress_weight;   /**< its egress weight; 0 for the egress */
} blq_qos_subq_stats;

/**
 * The percent a built-in or custom evaluator gives an item, clamped to
 * 1..100 exactly as the queue uses it.
 * \param e the evaluator (its defaults apply to zero fields); borrowed for
 *        the call.
 * \param payload what blq_enqueue_job would pass to a custom evaluator.
 * \param weight the job's weight, as blq_enqueue_job would pass it.
 * \return 1..100; 1 for a NULL or unset evaluator, or CUSTOM without fn.
 * \threadsafety Any thread (RANDOM draws from a per-thread generator); a
 * CUSTOM evaluator's fn runs on the calling thread.
 */
BLQ_API unsigned blq_qos_eval(const blq_qos_evaluator *e, void *payload, uint64_t weight);

/**
 * How many sub-queues \p q has.
 * \param q the queue.
 * \return the count, 0 for a queue without QoS or NULL.
 */
BLQ_API unsigned blq_qos_subqs(const blq *q);

/**
 * A sub-queue's name, capacity, size and weights. The size is a snapshot;
 * exact only when nothing moves.
 * \param q the queue.
 * \param i 0..blq_qos_subqs(q)-1, or BLQ_QOS_EGRESS for the egress ring.
 * \param[out] out filled on success; its name points into the queue
 *        (valid until blq_free, not to be freed).
 * \retval 0 \p out filled.
 * \retval BLQ_EINVAL \p q or \p out NULL, a queue without QoS, or \p i
 *         out of range.
 */
BLQ_API int blq_qos_subq_info(const blq *q, unsigned i, blq_qos_subq_stats *out);

#ifdef __cplusplus
}
#endif

#endif
