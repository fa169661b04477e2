/*
 * Outcomes: the one place where an item ends. Each function counts the
 * outcome in a cell, disposes of the payload as blq_stats documents
 * (item_free, the DLQ, or nothing when the worker kept it), reports the
 * metrics event, and then runs the completion hooks (the job's, then the
 * config's), so that a hook sees the counters already updated.
 * blq_enqueue_wait is one such hook (wait.c).
 */
#include "internal.h"

/* The hooks, out of line: an item without one pays a load and a branch
 * for each of the two (finish), not the register saves of a call. */
static __attribute__((noinline)) void run_hooks(const blq *q, const blq__item *it,
						enum blq_outcome o)
{
	const blq_done *d = it->done;

	if (d != NULL)
		d->fn(d->ctx, it->payload, o);
	if (q->cfg.on_done.fn != NULL)
		q->cfg.on_done.fn(q->cfg.on_done.ctx, it->payload, o);
}

static inline void finish(const blq *q, const blq__item *it, enum blq_outcome o)
{
	if (__builtin_expect(it->done != NULL || q->cfg.on_done.fn != NULL, 0))
		run_hooks(q, it, o);
}

void blq__processed(blq *q, blq__cell *own, const blq__item *it)
{
	blq__count_own(&own->processed);
	finish(q, it, BLQ_OUTCOME_PROCESSED);
}

void blq__drop(blq *q, const blq__item *it, _Atomic uint64_t *counter, enum blq_outcome o)
{
	if (q->cfg.item_free != NULL)
		q->cfg.item_free(it->payload);
	blq__count_shared(counter);
	finish(q, it, o);
}

void blq__cancelled(blq *q, blq__cell *c, const blq__item *it)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	blq__drop(q, it, &c->cancelled, BLQ_OUTCOME_CANCELLED);
	if (m != NULL && m->queue_cancelled != NULL)
		m->queue_cancelled(m->ctx, q->name);
}

/* A cancelled item (handle.c) that would leave for the DLQ or be lost
 * ends cancelled instead: freed, so no restorer runs it again. One load
 * for items with a hook; none without. */
static bool ends_cancelled(blq *q, blq__cell *c, const blq__item *it)
{
	if (__builtin_expect(it->done == NULL, 1) || !blq__handle_cancelled(it->done))
		return false;
	blq__cancelled(q, c, it);
	return true;
}

void blq__lose(blq *q, blq__cell *c, const blq__item *it)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (ends_cancelled(q, c, it))
		return;
	blq__drop(q, it, &c->lost, BLQ_OUTCOME_LOST);
	if (m != NULL && m->queue_lost != NULL)
		m->queue_lost(m->ctx, q->name);
}

void blq__to_dlq(blq *q, blq__cell *c, const blq__item *it, _Atomic uint64_t *leak_counter,
		 enum blq_leak_dir dir)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (ends_cancelled(q, c, it))
		return;
	if (q->cfg.dlq.enqueue(q->cfg.dlq.self, it->payload) == 0) {
		blq__count_shared(leak_counter);
		if (m != NULL && m->queue_leak != NULL)
			m->queue_leak(m->ctx, q->name, dir);
		finish(q, it, BLQ_OUTCOME_LEAKED);
		return;
	}
	/* The DLQ refused: we still own the payload. Never silent. */
	blq__log(q, BLQ_LOG_WARN, "queue %s: DLQ refused an item; counted lost", q->name);
	blq__lose(q, c, it);
}

void blq__core_leak(blq *q, blq__cell *c, const blq__item *it, enum blq_leak_dir dir)
{
	blq__to_dlq(q, c, it, dir == BLQ_LEAK_FRONT ? &c->leaked_front : &c->leaked_rear, dir);
}

void blq__abandon(blq *q, blq__cell *c, const blq__item *it)
{
	if (q->leaky)
		blq__to_dlq(q, c, it, &c->leaked_closed, BLQ_LEAK_FRONT);
	else
		blq__lose(q, c, it);
}

const char *blq_outcome_name(enum blq_outcome o)
{
	switch (o) {
	case BLQ_OUTCOME_PROCESSED:
		return "processed";
	case BLQ_OUTCOME_FAILED:
		return "failed";
	case BLQ_OUTCOME_TIMED_OUT:
		return "timed out";
	case BLQ_OUTCOME_LEAKED:
		return "leaked";
	case BLQ_OUTCOME_EXPIRED:
		return "expired";
	case BLQ_OUTCOME_LOST:
		return "lost";
	case BLQ_OUTCOME_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}
