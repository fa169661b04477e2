/*
 * Retries: where a failed attempt with retries left goes.
 *
 * The delay before retry n is the backoff's value for n (capped at
 * retry_max_interval_ns), then jittered. With a delay the item waits in the
 * timer and the worker moves on at once; without one (no retry interval)
 * it goes straight back into a ring. When neither has room (the timer is
 * at timer_capacity, the rings are full), a leaky queue hands the item to
 * the DLQ (as a failure: leaked_failed), and any other queue runs the
 * attempt again right here on this worker: a worker never blocks on a full
 * queue (it is the one that would drain it), and nothing is dropped.
 */
#include "internal.h"

static uint64_t delay_for(const blq *q, const blq__item *it)
{
	const blq_config *c = &q->cfg;
	unsigned n = it->attempt - 1; /* 1 for the first retry */
	uint64_t d;

	if (c->backoff == BLQ_BACKOFF_CUSTOM)
		d = c->backoff_fn(c->backoff_ctx, n, c->retry_interval_ns);
	else
		d = blq_backoff_ns(c->backoff, c->retry_interval_ns, n);
	uint64_t cap = c->retry_max_interval_ns != 0 ? c->retry_max_interval_ns : BLQ__INTERVAL_LIMIT;
	if (d > cap)
		d = cap;
	if (c->jitter == BLQ_JITTER_CUSTOM)
		d = c->jitter_fn(c->jitter_ctx, d, it->prev_delay);
	else if (c->jitter != BLQ_JITTER_NONE)
		d = blq_jitter_ns(c->jitter, d, c->jitter_min_ns, c->jitter_max_ns, it->prev_delay);
	return d > BLQ__INTERVAL_LIMIT ? BLQ__INTERVAL_LIMIT : d;
}

/* The retry happens: count it and report its delay. On the timer path this
 * comes after the item is parked, so whoever sees the event finds its due
 * time fixed. */
static void retried(blq *q, blq__worker *w, uint64_t d)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	blq__count_own(&w->cell->retried);
	if (m != NULL && m->queue_retry != NULL)
		m->queue_retry(m->ctx, q->name, d);
}

bool blq__retry(blq *q, blq__worker *w, blq__item *it, int rc)
{
	if (atomic_load_explicit(&q->forced, memory_order_acquire)) {
		/* No retry after a force: it ends like the queued items, as
		 * one waiting for its next attempt (so a DLQ hears of the
		 * attempts that ran, this one included). */
		it->attempt++;
		blq__abandon(q, w->cell, it);
		return true;
	}
	it->attempt++;
	uint64_t d = delay_for(q, it);
	it->prev_delay = d;
	if (d > 0) {
		uint64_t now = blq__now(q);

		if (it->done != NULL)
			blq__handle_where(it->done, BLQ_HANDLE_DELAYED);
		/* The worker's own inbox first: no lock (inbox.c). */
		if (blq__inbox_add(q, w, it, now, d) || blq__timer_add(q, it, now, d, BLQ__TRY) == 0) {
			retried(q, w, d);
			/* The clock is read: serve the timer's due items,
			 * if its head is past due (timer.c). */
			blq__timer_assist(q, now);
			return true;
		}
		if (q->leaky) {
			it->attempt--;
			blq__to_dlq(q, w->cell, it, BLQ_DLQ_FAILED, rc);
			return true;
		}
		blq__log(q, BLQ_LOG_DEBUG, "queue %s: timer full, a retry skips its backoff",
			 q->name);
		d = 0;
	}
	retried(q, w, d);
	if (it->done != NULL)
		blq__handle_where(it->done, BLQ_HANDLE_QUEUED); /* straight back */
	if (blq__push_any(q, it)) {
		blq__ec_notify(&q->items_ec, 1);
		return true;
	}
	return false;
}
