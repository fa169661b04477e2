/*
 * Outcomes: the one place where an item ends. Each function counts the
 * outcome in a cell, disposes of the payload as blq_stats documents
 * (item_free, the DLQ, or nothing when the worker kept it), reports the
 * metrics event, and then runs the completion hooks (the job's, then the
 * config's), so that a hook sees the counters already updated.
 * blq_enqueue_wait is one such hook (wait.c).
 *
 * An item that timed out at its limit while its callback runs on ends on
 * the watchdog's thread with its payload lent to that callback
 * (blq__lend_payload, late.c): counted and told now, freed at the return.
 *
 * An item leaves for the DLQ with its reason (blq__to_dlq), which picks
 * its leak counter; a DLQ with enqueue_why hears it, with the attempts
 * that ran, the failed attempt's code, the queue's name and its wall
 * clock's time: a clock read and a copy of the name, on the leak path
 * only.
 *
 * The DLQ's enqueue runs on the thread that leaks (a producer on
 * overflow, a worker for fail_to_dlq and deadline_to_dlq, the timer, the
 * closer), and it takes as long as the DLQ takes: a DLQ that is itself a
 * full non-leaky queue (blq_as_enqueuer) blocks that thread until it has
 * room, so a "leaky" queue's producer can wait after all. Such threads
 * count in their cell's dlq_in - dlq_out while inside the call
 * (blq_stats.dlq_waiting).
 */
#include <string.h>

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

/* The payload a late attempt's callback may still read (late.c), on the
 * thread ending its item at the limit. A pointer compare rather than a
 * flag, so that a hook that ends another item meanwhile frees that one. */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
	void *payload;
	bool on;
} lent;

void blq__lend_payload(bool on, void *payload)
{
	lent.payload = payload;
	lent.on = on;
}

void blq__drop(blq *q, const blq__item *it, _Atomic uint64_t *counter, enum blq_outcome o)
{
	if (q->cfg.item_free != NULL && !(lent.on && it->payload == lent.payload))
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

/* The DLQ told why (blq_enqueuer.enqueue_why). Out of line: the why and
 * its name copy stay off the stack of DLQs that do not ask. */
static __attribute__((noinline)) int enqueue_why(blq *q, const blq__item *it,
						 enum blq_dlq_reason reason, int rc)
{
	const blq_enqueuer *d = &q->cfg.dlq;
	blq_dlq_why why;

	why.reason = reason;
	/* attempt is the next attempt's number for an item that waits, the
	 * one that just ran for a failed one. */
	why.attempts = reason == BLQ_DLQ_FAILED ? it->attempt : it->attempt - (it->attempt > 0);
	why.rc = reason == BLQ_DLQ_FAILED ? rc : 0;
	why.time_ns = q->cfg.clock.wall_ns(q->cfg.clock.ctx);
	_Static_assert(BLQ__NAME_MAX <= BLQ_DLQ_QUEUE_MAX, "a queue name fits a why");
	memcpy(why.queue, q->name, strlen(q->name) + 1);
	return d->enqueue_why(d->self, it->payload, &why);
}

/* A reason's leak counter, and the direction its queue_leak event says
 * (front for the oldest items: moved out, or left at a close). */
static _Atomic uint64_t *leak_counter(blq__cell *c, enum blq_dlq_reason why,
				      enum blq_leak_dir *dir)
{
	*dir = why == BLQ_DLQ_OVERFLOW_FRONT || why == BLQ_DLQ_CLOSED ? BLQ_LEAK_FRONT
								      : BLQ_LEAK_REAR;
	switch (why) {
	case BLQ_DLQ_OVERFLOW_FRONT:
		return &c->leaked_front;
	case BLQ_DLQ_FAILED:
		return &c->leaked_failed;
	case BLQ_DLQ_DEADLINE:
		return &c->leaked_deadline;
	case BLQ_DLQ_CLOSED:
		return &c->leaked_closed;
	default: /* BLQ_DLQ_OVERFLOW_REAR */
		return &c->leaked_rear;
	}
}

void blq__to_dlq(blq *q, blq__cell *c, const blq__item *it, enum blq_dlq_reason why, int rc)
{
	const blq_metrics_writer *m = q->cfg.metrics;
	const blq_enqueuer *d = &q->cfg.dlq;

	if (ends_cancelled(q, c, it))
		return;
	/* Counted inside the call (blq_stats.dlq_waiting): a DLQ that is a
	 * full non-leaky queue blocks the caller here, a producer too. Two
	 * relaxed adds in the caller's own cell, as the leak counter below
	 * (a gauge: no ordering needed; blq_stats reads dlq_out first). */
	blq__count_shared(&c->dlq_in);
	int took = d->enqueue_why != NULL ? enqueue_why(q, it, why, rc)
					  : d->enqueue(d->self, it->payload);
	blq__count_shared(&c->dlq_out);
	if (took == 0) {
		enum blq_leak_dir dir;

		blq__count_shared(leak_counter(c, why, &dir));
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
	blq__to_dlq(q, c, it, dir == BLQ_LEAK_FRONT ? BLQ_DLQ_OVERFLOW_FRONT : BLQ_DLQ_OVERFLOW_REAR,
		    0);
}

void blq__abandon(blq *q, blq__cell *c, const blq__item *it)
{
	if (q->leaky)
		blq__to_dlq(q, c, it, BLQ_DLQ_CLOSED, 0);
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
