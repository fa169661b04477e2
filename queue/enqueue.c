/*
 * The producer side: enqueue, try-enqueue, enqueue a job, and leaking.
 *
 * Fast path: count the producer in (`entered`, one locked add on its cell),
 * check the closed flag, push into a ring, count it out (`left`, a second
 * locked add, which is also the full barrier the wake-up check needs), and
 * wake a worker only if one sleeps. No lock, no allocation, no system call.
 * `in` is entered - refused: counted before the item can reach a worker, so
 * the outcomes never run ahead of it (blq_wait_idle relies on that).
 *
 * Close safety: a producer increments `entered` (seq_cst) before it reads
 * `closed`, and the closer stores `closed` (seq_cst) before it sums
 * entered - left. So either the producer sees `closed` and backs off, or
 * the closer sees it in flight and waits for it to leave. Workers use the
 * same sum to decide that no item can arrive any more. The sum reads every
 * `left` before any `entered`, so it can over-count a producer that just
 * left (harmless: the reader looks again when woken) but never miss one
 * that is inside.
 *
 * Delayed items go to the timer (timer.c) instead of a ring, while the
 * producer still counts as in flight, so they are in q->staged before it
 * leaves (the close protocol above extends to them).
 */
#include <sched.h>
#include <stdint.h>

#include "internal.h"
#include "thread_hash.h"

/* Producers are the caller's threads, unknown to the queue: hash the
 * address of a thread-local to spread them over the producer cells. */
blq__cell *blq__producer_cell(blq *q)
{
	return &q->cells[q->nslots + blq__thread_cell(BLQ__PRODUCER_CELLS)];
}

int64_t blq__inflight(const blq *q)
{
	uint64_t left = 0, entered = 0;

	for (unsigned i = 0; i < q->ncells; i++)
		left += atomic_load_explicit(&q->cells[i].left, memory_order_seq_cst);
	for (unsigned i = 0; i < q->ncells; i++)
		entered += atomic_load_explicit(&q->cells[i].entered, memory_order_seq_cst);
	return (int64_t)(entered - left);
}

/* Counts the producer out and, if it placed the item, wakes whoever takes
 * it next (`woken`: a worker, or with QoS an egress thread) if one
 * sleeps: blq__handoff, whose locked add on `left` is also the barrier the
 * wake-up check needs (engine.h). */
static void leave(blq *q, blq__cell *c, blq__ec *woken)
{
	blq__handoff(&q->port, &c->left, 1, woken);
	if (woken == NULL) {
		/* Refused or leaked: blq_wait_idle may be waiting for the
		 * producers to leave. */
		blq__ec_notify(&q->idle_ec, 0);
	}
}

static void accepted(blq *q)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (m != NULL && m->queue_put != NULL)
		m->queue_put(m->ctx, q->name);
}

/* Enqueue-side balancing (balancer.c): every 64th item per cell, grow the
 * pool when the fill rate reached the wakeup factor. `n` is this cell's
 * count before the item. (Starting a worker when none is active happens in
 * enqueue_item, before the producer counts itself out.) */
static void balance_hint(blq *q, uint64_t n)
{
	if ((n & 63) != 63)
		return;
	uint64_t wake = atomic_load_explicit(&q->wakeup_permille, memory_order_relaxed);
	if (blq__ready(q) * 1000 >= wake * q->capacity)
		blq__scale_up_hint(q);
}

/* `delay` is relative; it->deadline_ns arrives relative and leaves
 * absolute. `weight` is the QoS evaluator's input. */
static int enqueue_item(blq *q, blq__item *it, enum blq__mode mode, uint64_t delay,
			uint64_t weight)
{
	blq__cell *c = blq__producer_cell(q);
	blq__ec *woken = NULL; /* where the item went: who to wake */
	int rc = 0;

	/* seq_cst RMW then seq_cst load: see "Close safety" above. The count
	 * before us, per cell, paces the balancer's samples. */
	uint64_t n = atomic_fetch_add_explicit(&c->entered, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
		rc = BLQ_ECLOSED;
		goto out;
	}
	/* Force calibration (the original's): when force_calibration_limit
	 * producers, this one included, are inside enqueue at once, calibrate
	 * on this thread now. Sampled every 64th item per cell. */
	if (q->balanced && (n & 63) == 63 &&
	    blq__inflight(q) >= (int64_t)q->cfg.force_calibration_limit)
		blq__calibrate_try(q);
	/* Priority is decided at the enqueue, delayed or not. */
	if (q->engine->classify != NULL)
		q->engine->classify(q->engine_state, it, weight);
	/* The clock is read only when something needs it. */
	if (q->stamp || it->deadline_ns != 0 || delay != 0) {
		uint64_t now = blq__now(q);

		if (q->stamp)
			it->enq_ns = now;
		if (it->deadline_ns != 0)
			it->deadline_ns = blq__sat_add(now, it->deadline_ns);
		if (delay != 0) {
			rc = blq__timer_add(q, it, now, delay, mode);
			if (rc == BLQ_EFULL && q->leaky) {
				/* A full timer leaks the new item (rear),
				 * whatever leak_direction says: its oldest
				 * entries are the ones due next. */
				blq__to_dlq(q, c, it, &c->leaked_rear, BLQ_LEAK_REAR);
				rc = 0;
			}
			goto out;
		}
	}
	rc = q->engine->admit(q->engine_state, c, it, mode, &woken);
	/* No active worker for our item (workers_min 0): start one while we
	 * still count as in flight, so a close cannot finish before it. */
	if (woken != NULL && q->balanced && atomic_load_explicit(&q->n_active, memory_order_acquire) == 0)
		blq__scale_up_hint(q);
out:
	if (rc != 0)
		atomic_fetch_add_explicit(&c->refused, 1, memory_order_relaxed);
	leave(q, c, woken);
	if (rc == 0) {
		accepted(q);
		if (q->balanced)
			balance_hint(q, n);
	}
	return rc;
}

static int enqueue_payload(blq *q, void *payload, enum blq__mode mode)
{
	if (q == NULL)
		return BLQ_EINVAL;

	blq__item it = {
		.payload = payload,
		.deadline_ns = q->cfg.deadline_interval_ns,
		.timeout_ns = q->cfg.timeout_ns,
		.attempt = 1,
	};
	return enqueue_item(q, &it, mode, q->cfg.delay_interval_ns, 0);
}

int blq_enqueue(blq *q, void *payload)
{
	return enqueue_payload(q, payload, BLQ__BLOCK);
}

int blq_try_enqueue(blq *q, void *payload)
{
	return enqueue_payload(q, payload, BLQ__TRY);
}

int blq__enqueue_job_as(blq *q, const blq_job *job, const blq_done *done, bool try_only)
{
	if (q == NULL || job == NULL)
		return BLQ_EINVAL;
	if (job->delay_ns > BLQ__INTERVAL_LIMIT || job->deadline_ns > BLQ__INTERVAL_LIMIT ||
	    job->timeout_ns > BLQ__INTERVAL_LIMIT)
		return BLQ_EINVAL; /* see blq_enqueue_job */
	if (done != NULL && done->fn == NULL)
		return BLQ_EINVAL; /* a hook that cannot be called */

	uint64_t delay = job->delay_ns != 0 ? job->delay_ns : q->cfg.delay_interval_ns;
	blq__item it = {
		.payload = job->payload,
		.done = done,
		.deadline_ns = job->deadline_ns != 0 ? job->deadline_ns : q->cfg.deadline_interval_ns,
		.timeout_ns = job->timeout_ns != 0 ? job->timeout_ns : q->cfg.timeout_ns,
		.attempt = 1,
	};
	/* A deadline at or before the delay would expire every time. */
	if (it.deadline_ns != 0 && it.deadline_ns <= delay)
		return BLQ_EINVAL;
	return enqueue_item(q, &it, try_only ? BLQ__TRY : BLQ__BLOCK, delay, job->weight);
}

int blq_enqueue_job(blq *q, const blq_job *job)
{
	return blq__enqueue_job_as(q, job, job != NULL ? job->done : NULL, false);
}

int blq_try_enqueue_job(blq *q, const blq_job *job)
{
	return blq__enqueue_job_as(q, job, job != NULL ? job->done : NULL, true);
}

static int enqueuer_cb(void *self, void *payload)
{
	return blq_enqueue(self, payload);
}

blq_enqueuer blq_as_enqueuer(blq *q)
{
	/* No sync: the target keeps items in memory. */
	blq_enqueuer e = {.enqueue = enqueuer_cb, .self = q};

	return e;
}

int blq_dlq_sync(blq *q)
{
	if (q == NULL)
		return BLQ_EINVAL;
	if (q->cfg.dlq.enqueue == NULL || q->cfg.dlq.sync == NULL)
		return BLQ_ENOTSUP;
	return q->cfg.dlq.sync(q->cfg.dlq.self);
}
