/*
 * The Prometheus metrics writer: a registry, shared by many queues (there
 * is no process-global one), that turns the queues' events into the metric
 * families below and renders them in the text exposition format 0.0.4.
 *
 * Families (every series labelled queue="<name>"):
 *   counters   queue_in_total, queue_out_total, queue_retry_total,
 *              queue_leak_total{dir="rear"|"front"}, queue_deadline_total,
 *              queue_lost_total, queue_failed_total
 *   histograms queue_wait_seconds (enqueue to start), queue_exec_seconds,
 *              queue_retry_delay_seconds; buckets 100 us .. 5 s
 *   gauges     queue_size, queue_capacity, queue_workers_active,
 *              queue_workers_sleep, queue_workers_idle (for watched queues)
 *   QoS        counters queue_subq_in_total, queue_subq_out_total,
 *              queue_subq_leak_total and (watched queues) the gauge
 *              queue_subq_size, each with subq="<name>" (the size also
 *              for subq="egress")
 *   dlqdump    dlqdump_size_in_total, dlqdump_size_out_total,
 *              dlqdump_bytes_in_total, dlqdump_bytes_out_total,
 *              dlqdump_bytes_flush_total{reason="size"|"interval"|"close"},
 *              dlqdump_lost_total, dlqdump_quarantined_total (counters, for
 *              each blq_prom_dump_writer; label queue="<dump name>")
 *
 * Hot-path updates take no lock: each queue's counters are spread over
 * per-thread cells (atomic adds on lines other threads rarely touch), and
 * rendering folds them.
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

typedef struct blq_prom blq_prom;

/**
 * blq_prom_new() - an empty registry.
 * Return: the registry, or NULL with BLQ_ENOMEM in @err.
 */
BLQ_API blq_prom *blq_prom_new(blq_error *err);

/**
 * blq_prom_free() - frees the registry and every writer it handed out.
 * Call it after every queue using one of its writers was freed. NULL is a
 * no-op.
 */
BLQ_API void blq_prom_free(blq_prom *r);

/**
 * blq_prom_queue_writer() - the writer to put in a queue's
 * blq_config.metrics. One per queue: its counters are that queue's series,
 * and its per-worker cells (updated without locked instructions) rely on
 * one queue's worker indices; two queues must not share a writer.
 * @queue: the series' label value; copied; 1..63 bytes, any characters
 *         (escaped on output); unique within the registry.
 * Return: the writer, owned by the registry, or NULL with BLQ_EINVAL (bad
 * or duplicate name) or BLQ_ENOMEM in @err.
 * Thread-safety: any thread.
 */
BLQ_API const blq_metrics_writer *blq_prom_queue_writer(blq_prom *r, const char *queue,
							 blq_error *err);

/**
 * blq_prom_dump_writer() - dump metrics for a blq_dump_config.metrics and
 * its restorer's blq_restorer_config.metrics (and the fs / Redis readers'
 * quarantine reports): one writer per dump, its series labelled
 * queue="<name>".
 * @name: 1..63 bytes, copied; unique among the registry's dump writers.
 * Return: the writer, owned by the registry, or NULL with BLQ_EINVAL (bad
 * or duplicate name) or BLQ_ENOMEM in @err. Updates take no lock.
 * Thread-safety: any thread.
 */
BLQ_API const blq_dump_metrics *blq_prom_dump_writer(blq_prom *r, const char *name,
						     blq_error *err);

/**
 * blq_prom_watch() - also render @q's gauges (size, capacity, workers, and
 * with QoS each sub-queue's size),
 * read from blq_stats at render time, under the series named after the
 * queue. Call blq_prom_unwatch before blq_free(q).
 * Return: 0, BLQ_EINVAL (NULL, or no writer of that name), BLQ_ENOMEM.
 */
BLQ_API int blq_prom_watch(blq_prom *r, blq *q);

/** blq_prom_unwatch() - stop rendering @q's gauges. Return: 0 or BLQ_EINVAL. */
BLQ_API int blq_prom_unwatch(blq_prom *r, blq *q);

/**
 * blq_prom_render() - the exposition (text format 0.0.4: HELP and TYPE
 * lines, escaped label values, _bucket/_sum/_count) into @buf.
 * Return: the length the whole text needs, excluding the NUL, as snprintf
 * (a value >= len means it was cut; call again with a larger buffer), or
 * BLQ_EINVAL. Always NUL-terminates when len > 0.
 * Thread-safety: any thread, while the queues run.
 */
BLQ_API int blq_prom_render(blq_prom *r, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
