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
 *
 * The same path serves an attempt the watchdog ended at its time limit
 * while its callback runs on (late.c): there is no worker then (w NULL),
 * so the counts go to the closer's cell with locked adds, the retry skips
 * the worker's inbox, and "no room" hands the item back to the watchdog,
 * which places it when room comes.
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

/* Where an attempt's end is counted: the worker's own cell (a plain
 * store: one writer), or without a worker the closer's (shared). */
static blq__cell *cell_of(blq *q, blq__worker *w)
{
	return w != NULL ? w->cell : &q->cells[BLQ__CELL_CLOSER];
}

static void count(blq__worker *w, _Atomic uint64_t *c)
{
	if (w != NULL)
		blq__count_own(c);
	else
		blq__count_shared(c);
}

/* The retry happens: count it and report its delay. On the timer path this
 * comes after the item is parked, so whoever sees the event finds its due
 * time fixed. */
static void retried(blq *q, blq__worker *w, uint64_t d)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	count(w, &cell_of(q, w)->retried);
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
		blq__abandon(q, cell_of(q, w), it);
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
		if ((w != NULL && blq__inbox_add(q, w, it, now, d)) ||
		    blq__timer_add(q, it, now, d, BLQ__TRY) == 0) {
			retried(q, w, d);
			/* The clock is read: serve the timer's due items,
			 * if its head is past due (timer.c). */
			blq__timer_assist(q, now);
			return true;
		}
		if (q->leaky) {
			it->attempt--;
			blq__to_dlq(q, cell_of(q, w), it, BLQ_DLQ_FAILED, rc);
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

/* The last allowed attempt failed, with rc (BLQ_ETIMEDOUT when it timed
 * out). */
static void fail(blq *q, blq__cell *c, const blq__item *it, int rc, bool timed_out)
{
	if (q->cfg.fail_to_dlq)
		blq__to_dlq(q, c, it, BLQ_DLQ_FAILED, rc);
	else
		blq__drop(q, it, &c->failed, timed_out ? BLQ_OUTCOME_TIMED_OUT : BLQ_OUTCOME_FAILED);
}

__attribute__((noinline)) bool blq__attempt_failed(blq *q, blq__worker *w, blq__item *it,
						   int rc, bool timed_out, bool cancelled)
{
	blq__cell *c = cell_of(q, w);

	if (timed_out)
		count(w, &c->timed_out);
	if (cancelled) { /* failed after blq_cancel: no retry, no DLQ */
		blq__cancelled(q, c, it);
		return true;
	}
	/* What a DLQ hears of this attempt's end (blq_dlq_why.rc). */
	int end_rc = timed_out ? BLQ_ETIMEDOUT : rc;
	if (it->attempt > q->cfg.max_retries) {
		fail(q, c, it, end_rc, timed_out);
		return true;
	}
	return blq__retry(q, w, it, end_rc);
}
