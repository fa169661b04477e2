/**
 * \file
 * Metrics-writer interface: one callback per event of the original's
 * MetricsWriter. Every callback is optional (NULL = not interested) and
 * receives the queue's name. A queue without a writer pays one predictable
 * branch per event. Callbacks run on producer, worker and closing threads
 * at once, so they must be thread-safe and should not block. Nothing here
 * to call: a queue calls the callbacks (blq_config.metrics); ready-made
 * writers are in blq/prometheus.h and blq/log.h.
 */
#ifndef BLQ_METRICS_H
#define BLQ_METRICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Which side of the queue an item leaked from (blq_config.leak_direction
 * and the queue_leak event). */
enum blq_leak_dir {
	BLQ_LEAK_REAR = 0,  /**< the new item went to the DLQ */
	BLQ_LEAK_FRONT = 1, /**< the oldest item went to the DLQ to make room */
};

/**
 * A metrics writer: a context and one optional callback per event. The
 * queue reads it through the pointer in blq_config.metrics, which is
 * borrowed: the struct (and ctx) must outlive the queue, blq_free included.
 * Every callback gets ctx and the queue's name (valid during the call).
 *
 * Worker lifecycle: thread created, started taking items, put to sleep,
 * woken, waiting for items, stopped. Items: accepted, taken by a worker
 * (with the time it waited since its enqueue), retried, leaked, expired
 * past their deadline, lost, and the time a worker spent on one.
 * queue_pull and queue_exec come from the worker `worker` (0-based)
 * itself, and a worker index has one thread at a time, so a writer may keep
 * per-worker state without locked instructions (the Prometheus writer
 * does).
 */
typedef struct blq_metrics_writer {
	/** Passed as the first argument of every callback. */
	void *ctx;
	/** Once, when the queue has started: its worker slots by state
	 * (active threads, asleep threads, slots without a thread). */
	void (*worker_setup)(void *ctx, const char *queue, unsigned active, unsigned asleep,
			     unsigned idle);
	/** A worker thread started taking items (worker: its 0-based index). */
	void (*worker_init)(void *ctx, const char *queue, unsigned worker);
	/** The balancer put a worker to sleep. */
	void (*worker_sleep)(void *ctx, const char *queue, unsigned worker);
	/** An asleep worker was woken and takes items again. */
	void (*worker_wakeup)(void *ctx, const char *queue, unsigned worker);
	/** A worker waited ns for items on an empty queue. */
	void (*worker_wait)(void *ctx, const char *queue, unsigned worker, uint64_t ns);
	/** A worker thread ended; forced is non-zero at a Soft or Hard close. */
	void (*worker_stop)(void *ctx, const char *queue, unsigned worker, int forced);
	/** An item was accepted (once per item, batches included). */
	void (*queue_put)(void *ctx, const char *queue);
	/** Worker `worker` took an item that waited wait_ns since its
	 * enqueue (0 when the queue does not stamp items). */
	void (*queue_pull)(void *ctx, const char *queue, unsigned worker, uint64_t wait_ns);
	/** A failed item will be retried after delay_ns. */
	void (*queue_retry)(void *ctx, const char *queue, uint64_t delay_ns);
	/** An item left the timer for a ring after waiting waited_ns there
	 * (a delay or a retry's backoff). */
	void (*queue_delayed)(void *ctx, const char *queue, uint64_t waited_ns);
	/** The DLQ accepted an item. dir is BLQ_LEAK_FRONT for the oldest item
	 * moved out to make room and for items handed over at a Soft or Hard
	 * close; BLQ_LEAK_REAR for everything else (the new item on overflow, a
	 * full timer, fail_to_dlq, deadline_to_dlq). dir is the side, not the
	 * reason: blq_stats' leaked_rear, leaked_front, leaked_failed,
	 * leaked_deadline and leaked_closed count by reason (the Prometheus
	 * writer renders them as queue_leak_reason_total). */
	void (*queue_leak)(void *ctx, const char *queue, enum blq_leak_dir dir);
	/** A worker took an item past its deadline (it then expires, or
	 * leaks with deadline_to_dlq: queue_leak follows). */
	void (*queue_deadline)(void *ctx, const char *queue);
	/** An item was lost: dropped at a Soft or Hard close without a DLQ, or
	 * refused by the DLQ. */
	void (*queue_lost)(void *ctx, const char *queue);
	/** Worker `worker` spent ns on one attempt; failed is non-zero when
	 * the attempt failed or ran past its time limit. */
	void (*queue_exec)(void *ctx, const char *queue, unsigned worker, uint64_t ns,
			   int failed);
	/** QoS: an item reached sub-queue subq (kept, or leaked at its rear). */
	void (*subq_put)(void *ctx, const char *queue, const char *subq);
	/** QoS: an item moved from sub-queue subq to the egress ring. */
	void (*subq_pull)(void *ctx, const char *queue, const char *subq);
	/** QoS: an item left sub-queue subq for the DLQ (a leak, a close) or
	 * was lost. */
	void (*subq_leak)(void *ctx, const char *queue, const char *subq);
	/** An item ended cancelled through its handle (blq_cancel). */
	void (*queue_cancelled)(void *ctx, const char *queue);
} blq_metrics_writer;

#ifdef __cplusplus
}
#endif

#endif
