/*
 * Metrics-writer interface: one callback per event of the original's
 * MetricsWriter. Every callback is optional (NULL = not interested) and
 * receives the queue's name. A queue without a writer pays one predictable
 * branch per event. Callbacks run on producer, worker and closing threads
 * at once, so they must be thread-safe and should not block.
 */
#ifndef BLQ_METRICS_H
#define BLQ_METRICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which side of the queue an item leaked from. */
enum blq_leak_dir {
	BLQ_LEAK_REAR = 0,  /* the new item went to the DLQ */
	BLQ_LEAK_FRONT = 1, /* the oldest item went to the DLQ to make room */
};

typedef struct blq_metrics_writer {
	void *ctx;
	/* Worker lifecycle: thread created, started taking items, put to
	 * sleep, woken, waiting for items, stopped. */
	void (*worker_setup)(void *ctx, const char *queue, unsigned active, unsigned asleep,
			     unsigned idle);
	void (*worker_init)(void *ctx, const char *queue, unsigned worker);
	void (*worker_sleep)(void *ctx, const char *queue, unsigned worker);
	void (*worker_wakeup)(void *ctx, const char *queue, unsigned worker);
	void (*worker_wait)(void *ctx, const char *queue, unsigned worker, uint64_t ns);
	void (*worker_stop)(void *ctx, const char *queue, unsigned worker, int forced);
	/* Items: accepted, taken by a worker (with the time it waited since
	 * its enqueue), retried, leaked, expired past their deadline, lost,
	 * and the time a worker spent on one. queue_pull and queue_exec come
	 * from the worker `worker` (0-based) itself, and a worker index has
	 * one thread at a time, so a writer may keep per-worker state without
	 * locked instructions (the Prometheus writer does). */
	void (*queue_put)(void *ctx, const char *queue);
	void (*queue_pull)(void *ctx, const char *queue, unsigned worker, uint64_t wait_ns);
	void (*queue_retry)(void *ctx, const char *queue, uint64_t delay_ns);
	/* An item left the timer for a ring after waiting waited_ns there
	 * (a delay or a retry's backoff). */
	void (*queue_delayed)(void *ctx, const char *queue, uint64_t waited_ns);
	void (*queue_leak)(void *ctx, const char *queue, enum blq_leak_dir dir);
	void (*queue_deadline)(void *ctx, const char *queue);
	void (*queue_lost)(void *ctx, const char *queue);
	void (*queue_exec)(void *ctx, const char *queue, unsigned worker, uint64_t ns,
			   int failed);
	/* QoS sub-queues. */
	void (*subq_put)(void *ctx, const char *queue, const char *subq);
	void (*subq_pull)(void *ctx, const char *queue, const char *subq);
	void (*subq_leak)(void *ctx, const char *queue, const char *subq);
	/* An item ended cancelled through its handle (blq_cancel). */
	void (*queue_cancelled)(void *ctx, const char *queue);
} blq_metrics_writer;

#ifdef __cplusplus
}
#endif

#endif
