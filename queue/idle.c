/*
 * Pause, resume and wait-until-idle, without closing the queue.
 *
 * Paused workers sleep on pause_ec (no polling); resume wakes them all.
 * blq_wait_idle sleeps on idle_ec, which every worker notifies when it
 * finds the queue empty (only a load when nobody waits there) and when it
 * exits; "idle" is: no item in the rings and every accepted item counted
 * in an outcome, so no worker is inside an item.
 */
#include "internal.h"

int blq_pause(blq *q)
{
	if (q == NULL)
		return BLQ_EINVAL;
	if (atomic_load_explicit(&q->closed, memory_order_acquire))
		return BLQ_ECLOSED;
	atomic_store_explicit(&q->paused, 1, memory_order_seq_cst);
	/* A close that came in between ends the pause it did not see. */
	if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
		atomic_store_explicit(&q->paused, 0, memory_order_seq_cst);
		blq__ec_notify(&q->pause_ec, 0);
		return BLQ_ECLOSED;
	}
	blq__log(q, BLQ_LOG_INFO, "queue %s: paused", q->name);
	return 0;
}

int blq_resume(blq *q)
{
	if (q == NULL)
		return BLQ_EINVAL;
	atomic_store_explicit(&q->paused, 0, memory_order_seq_cst);
	blq__ec_notify(&q->pause_ec, 0);
	blq__log(q, BLQ_LOG_INFO, "queue %s: resumed", q->name);
	return 0;
}

/* Idle: no producer inside enqueue, the rings empty, and every accepted
 * item counted in an outcome. `in` is counted before an item enters a ring
 * (enqueue.c), so an item a worker holds is in `in` and not yet in an
 * outcome. Reading the producers and `in` first keeps the test
 * conservative against concurrent enqueues. */
static bool is_idle(const blq *q)
{
	struct blq_stats s;

	if (blq__inflight(q) != 0)
		return false;
	uint64_t in = blq__fold_in(q);
	blq_stats(q, &s);
	return s.size == 0 &&
	       s.processed + s.failed + s.leaked + s.expired + s.lost + s.cancelled >= in;
}

int blq_wait_idle(blq *q, uint64_t timeout_ns)
{
	if (q == NULL)
		return BLQ_EINVAL;
	if (blq__is_own_worker(q))
		return BLQ_EDEADLK;
	uint64_t deadline = blq__deadline_after(timeout_ns); /* 0: none */
	for (;;) {
		uint32_t snap = blq__ec_prepare(&q->idle_ec);

		if (is_idle(q)) {
			blq__ec_cancel(&q->idle_ec);
			return 0;
		}
		if (deadline != 0 && blq__monotonic_ns() >= deadline) {
			blq__ec_cancel(&q->idle_ec);
			return BLQ_ETIMEDOUT;
		}
		blq__ec_wait(&q->idle_ec, snap, deadline);
	}
}
