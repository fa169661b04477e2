/**
 * \file
 * The Prometheus metrics writer: a registry, shared by many queues (there
 * is no process-global one), that turns the queues' events into the metric
 * families below and renders them in the text exposition format 0.0.4.
 *
 * Families (every series labelled `queue="NAME"`):
 * - counters: queue_in_total, queue_out_total, queue_retry_total,
 *   `queue_leak_total{dir="rear"|"front"}`, queue_deadline_total,
 *   queue_lost_total, queue_failed_total, queue_cancelled_total;
 * - histograms: queue_wait_seconds (enqueue to start), queue_exec_seconds,
 *   queue_retry_delay_seconds, queue_delay_seconds (time in the timer);
 *   buckets 100 us .. 5 s;
 * - for watched queues (blq_prom_watch), the counter
 *   `queue_leak_reason_total{reason="overflow_rear"|"overflow_front"|
 *   "failed"|"deadline"|"closed"}`: blq_stats' leaked_rear, leaked_front,
 *   leaked_failed, leaked_deadline and leaked_closed (queue_leak_total's
 *   dir is the side, not the reason: fail_to_dlq and deadline_to_dlq
 *   count as "rear", a Soft or Hard close as "front");
 * - gauges, for watched queues (blq_prom_watch): queue_size,
 *   queue_capacity, queue_workers_active, queue_workers_sleep,
 *   queue_workers_idle, queue_workers_busy, queue_workers_overrunning,
 *   queue_producers_blocked, queue_dlq_waiting (blq_stats.dlq_waiting),
 *   queue_workers_stuck;
 * - QoS: the counters queue_subq_in_total, queue_subq_out_total,
 *   queue_subq_leak_total and (watched queues) the gauge queue_subq_size,
 *   each with `subq="NAME"` (the size also for `subq="egress"`);
 * - dlqdump: the counters dlqdump_size_in_total, dlqdump_size_out_total,
 *   dlqdump_bytes_in_total, dlqdump_bytes_out_total,
 *   `dlqdump_bytes_flush_total{reason="size"|"interval"|"close"}`,
 *   dlqdump_lost_total, dlqdump_quarantined_total,
 *   dlqdump_redelivered_total and
 *   `dlqdump_failures_total{reason="..."}` (one series per
 *   blq_dump_failure, named by blq_dump_failure_name), for each
 *   blq_prom_dump_writer (label `queue="DUMP NAME"`).
 *
 * Hot-path updates take no lock: each queue's counters are spread over
 * per-thread cells (atomic adds on lines other threads rarely touch), and
 * rendering folds them.
 *
 * Thread-safety: every function here may be called from any thread at
 * once, while the queues run, until blq_prom_free, which must be the last
 * call on the registry.
 */
#ifndef BLQ_PROMETHEUS_H
#define BLQ_PROMETHEUS_H

#include <stddef.h>

#include <blq/dlqdump.h>
#include <blq/error.h>
#include <blq/export.h>
#include <blq/metrics.h>
#include <blq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A Prometheus registry (opaque). Made by blq_prom_new, freed with
 * blq_prom_free. */
typedef struct blq_prom blq_prom;

/**
 * An empty registry.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the registry, or NULL with BLQ_ENOMEM in \p err. The caller owns
 *         it: free it with blq_prom_free.
 */
BLQ_API blq_prom *blq_prom_new(blq_error *err);

/**
 * Free the registry and every writer it handed out.
 * \param r the registry; NULL is a no-op.
 * \threadsafety Not concurrently with any other call on \p r: the last
 * call, after every queue, dump and restorer using one of its writers was
 * freed.
 */
BLQ_API void blq_prom_free(blq_prom *r);

/**
 * The writer to put in a queue's blq_config.metrics. One per queue: its
 * counters are that queue's series, and its per-worker cells (updated
 * without locked instructions) rely on one queue's worker indices; two
 * queues must not share a writer.
 * \param r the registry.
 * \param queue the series' label value; copied; 1..63 bytes, any
 *        characters (escaped on output); unique within the registry. Name
 *        it as the queue (blq_config.name) for blq_prom_watch to find it.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the writer, owned by the registry (freed by blq_prom_free; valid
 *         until then), or NULL with BLQ_EINVAL (\p r NULL, bad or
 *         duplicate name) or BLQ_ENOMEM in \p err.
 */
BLQ_API const blq_metrics_writer *blq_prom_queue_writer(blq_prom *r, const char *queue,
							 blq_error *err);

/**
 * Dump metrics for a blq_dump_config.metrics and its restorer's
 * blq_restorer_config.metrics (and the fs / Redis readers' quarantine
 * reports): one writer per dump, its series labelled `queue="NAME"`.
 * Updates take no lock.
 * \param r the registry.
 * \param name 1..63 bytes, copied; unique among the registry's dump
 *        writers.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the writer, owned by the registry (freed by blq_prom_free; valid
 *         until then), or NULL with BLQ_EINVAL (\p r NULL, bad or
 *         duplicate name) or BLQ_ENOMEM in \p err.
 */
BLQ_API const blq_dump_metrics *blq_prom_dump_writer(blq_prom *r, const char *name,
						     blq_error *err);

/**
 * Also render \p q's gauges (size, capacity, workers, and with QoS each
 * sub-queue's size), read from blq_stats at render time, under the queue
 * writer whose label is the queue's name (blq_name).
 * \param r the registry.
 * \param q the queue; borrowed: call blq_prom_unwatch before blq_free(q).
 * \retval 0 watched (a second call changes nothing).
 * \retval BLQ_EINVAL \p r or \p q NULL, or no queue writer of that name.
 */
BLQ_API int blq_prom_watch(blq_prom *r, blq *q);

/**
 * Stop rendering \p q's gauges. Once it returned, no render reads \p q.
 * \param r the registry.
 * \param q the queue.
 * \retval 0 no longer watched.
 * \retval BLQ_EINVAL \p r or \p q NULL, or no queue writer of that name.
 */
BLQ_API int blq_prom_unwatch(blq_prom *r, blq *q);

/**
 * Render the exposition (text format 0.0.4: HELP and TYPE lines, escaped
 * label values, `_bucket`/`_sum`/`_count`) into \p buf. Registration,
 * watch and render share one lock; updates take none.
 * \param r the registry.
 * \param[out] buf the caller's buffer; NULL only with \p len 0 (to learn
 *        the length needed). Always NUL-terminated when \p len > 0.
 * \param len the size of \p buf in bytes.
 * \return the length the whole text needs, excluding the NUL, as snprintf
 *         (a value >= len means it was cut; call again with a larger
 *         buffer), or BLQ_EINVAL (\p r NULL, or \p buf NULL with
 *         \p len > 0), or BLQ_ENOMEM when the text would exceed INT32_MAX
 *         bytes.
 */
BLQ_API int blq_prom_render(blq_prom *r, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
