/*
 * Closing, in the four modes of seed 000: Light (blq_close: drain
 * everything), Soft (blq_close_soft: running items finish, uncancelled;
 * what is queued or timer-held is abandoned), either with a time limit past
 * which it turns Hard, and Hard (blq_force_close: as Soft, and the running
 * items' cancellation is raised). The table is in queue.h.
 *
 * Design
 * - The first close moves the state OPEN -> CLOSING and raises `closed`
 *   (producers refuse from then on; blocked producers wake and refuse).
 *   Soft and Hard also raise `forced` (the queue is dropping: workers stop
 *   after their current item, the timer and the engine stop moving items);
 *   Hard also raises every running item's cancellation flag. A close only
 *   ever gets stronger: `forced` holds the mode, raised and never lowered
 *   (Light 0, then Soft, then Hard).
 * - Light: workers drain the rings and exit by themselves once no
 *   producer is in flight and the rings are empty (worker.c). The closer
 *   sleeps on q->cond until `alive` reaches zero: no busy-waiting (the
 *   original spins on an atomic in Close).
 * - Finishing (exactly one thread, the first to get there): wait for the
 *   workers to exit and the producers to leave, join the threads (QoS
 *   egress threads last), then sweep what is left in the rings, the timer
 *   and the engine (only after Soft or Hard) into the DLQ, or free it and
 *   count it lost. Other closers wait for CLOSED.
 * - A close called from one of the queue's own workers cannot wait for
 *   itself: it starts the close and returns; blq_free finishes.
 * - The timer: a Light close waits for delayed items and retries to come
 *   due (the workers stay while q->staged is non-zero); Soft and Hard stop
 *   the timer thread and sweep its items with the rings'. A running item
 *   that fails under Soft or Hard is not retried: it is abandoned like the
 *   queued ones (retry.c).
 * - Balanced queues: a Light close wakes the asleep workers so they help
 *   drain (and starts one if none exists while items wait); Soft and Hard
 *   wake them so they exit. Closing also ends a pause.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "internal.h"

/* What a close past its limit gives the running callbacks to see their
 * raised token and return, before it leaves them running. */
#define BLQ__CLOSE_GRACE_NS 5000000ull

void blq__wake_all(blq *q)
{
	blq__ec_notify(&q->items_ec, 0);
	blq__ec_notify(&q->space_ec, 0);
	blq__ec_notify(&q->ctl_ec, 0);
	blq__ec_notify(&q->pause_ec, 0);
	blq__ec_notify(&q->idle_ec, 0);
	blq__ec_notify(&q->hb_ec, 0);
	blq__ec_notify(&q->rate_ec, 0);
	if (q->engine->wake_all != NULL)
		q->engine->wake_all(q->engine_state);
}

/* Raises `forced` to `mode` if it is stronger than the one in force.
 * True when it did. */
static bool raise_mode(blq *q, enum blq__close_mode mode)
{
	int cur = atomic_load_explicit(&q->forced, memory_order_acquire);

	while (cur < (int)mode)
		if (atomic_compare_exchange_weak_explicit(&q->forced, &cur, (int)mode,
							  memory_order_seq_cst,
							  memory_order_acquire))
			return true;
	return false;
}

static void begin_close(blq *q, enum blq__close_mode mode)
{
	bool first, stronger;

	pthread_mutex_lock(&q->mu);
	first = q->state == BLQ__OPEN;
	if (first)
		q->state = BLQ__CLOSING;
	pthread_mutex_unlock(&q->mu);

	/* seq_cst: pairs with the producers' `entered` increment (enqueue.c). */
	atomic_store_explicit(&q->closed, 1, memory_order_seq_cst);
	/* Closing implies resuming: the drain needs the workers. */
	atomic_store_explicit(&q->paused, 0, memory_order_seq_cst);
	/* `forced` before any token: a worker that sees its token raised and
	 * returns must find the queue dropping, or it takes one more item (it
	 * did, under TSan's slower stores). */
	stronger = raise_mode(q, mode);
	if (mode >= BLQ__CLOSE_SOFT) {
		if (mode == BLQ__CLOSE_HARD)
			for (unsigned i = 0; i < blq__slots(q); i++)
				atomic_store_explicit(&q->workers[i].task.cancelled, 1,
						      memory_order_release);
		for (unsigned i = 0; i < blq__slots(q); i++)
			blq__ec_notify(&q->workers[i].park, 0);
	} else if (q->balanced) {
		blq__balance_on_close(q);
	}
	blq__wake_all(q);
	blq__timer_kick(q); /* producers waiting for timer room refuse; a drop stops it */
	if (first)
		blq__log(q, BLQ_LOG_INFO, "queue %s: closing", q->name);
	if (stronger && mode == BLQ__CLOSE_SOFT)
		blq__log(q, BLQ_LOG_INFO, "queue %s: soft close", q->name);
	if (stronger && mode == BLQ__CLOSE_HARD)
		blq__log(q, BLQ_LOG_INFO, "queue %s: force close", q->name);
}

/* Caller holds mu. No worker thread left but, when `leave_detached`, the
 * detached ones (given up inside a callback, watchdog.c). */
static bool workers_gone(const blq *q, bool leave_detached)
{
	return q->alive <= (leave_detached ? atomic_load_explicit(&q->detached, memory_order_relaxed)
					   : 0);
}

/* Waits until workers_gone, or until abs_ns on CLOCK_MONOTONIC (0 = no
 * limit). True when they are gone. (A thread's exit, detached or not,
 * signals cond under mu.) */
static bool wait_workers(blq *q, uint64_t abs_ns, bool leave_detached)
{
	struct timespec ts = blq__timespec_of(abs_ns);
	bool done;

	pthread_mutex_lock(&q->mu);
	while (!(done = workers_gone(q, leave_detached))) {
		if (abs_ns == 0) {
			pthread_cond_wait(&q->cond, &q->mu);
		} else if (pthread_cond_timedwait(&q->cond, &q->mu, &ts) == ETIMEDOUT) {
			done = workers_gone(q, leave_detached);
			break;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return done;
}

/* A close past its time limit, now Hard: the callbacks that look at their
 * token get BLQ__CLOSE_GRACE_NS to return; the others are given up and
 * left running (blq_free waits for them), looking again every grace in
 * case a worker started one more callback on its way out. The threads
 * not inside a callback exit at once (forced). */
static void leave_stuck(blq *q)
{
	if (wait_workers(q, blq__deadline_after(BLQ__CLOSE_GRACE_NS), false))
		return;
	do
		blq__give_up_running(q);
	while (!wait_workers(q, blq__deadline_after(BLQ__CLOSE_GRACE_NS), true));
}

static void wait_producers(blq *q)
{
	for (;;) {
		uint32_t snap = blq__ec_prepare(&q->ctl_ec);

		if (blq__inflight(q) == 0) {
			blq__ec_cancel(&q->ctl_ec);
			return;
		}
		blq__ec_wait(&q->ctl_ec, snap, 0);
	}
}

static void sweep(blq *q)
{
	blq__cell *c = &q->cells[BLQ__CELL_CLOSER]; /* the closer's cell */
	blq__item it;
	uint64_t n = 0;

	blq__timer_sweep(q, c);
	while (blq__pop_any(q, 0, &it) ||
	       (q->engine->take_left != NULL && q->engine->take_left(q->engine_state, &it))) {
		n++;
		blq__abandon(q, c, &it);
	}
	if (n > 0)
		blq__log(q, q->leaky ? BLQ_LOG_INFO : BLQ_LOG_WARN,
			 "queue %s: %llu items left at %s close %s", q->name,
			 (unsigned long long)n,
			 atomic_load_explicit(&q->forced, memory_order_acquire) == BLQ__CLOSE_HARD
				 ? "force"
				 : "soft",
			 q->leaky ? "went to the DLQ" : "were lost");
}

/* abs_ns: the close's limit on CLOCK_MONOTONIC (0 = none); past it the
 * rescue turns into a force. `past_limit`: the close is past its limit
 * already, so the callbacks it gave up are not waited for. True when it
 * had to force. */
static bool finish(blq *q, uint64_t abs_ns, bool past_limit)
{
	bool timed_out = false;

	pthread_mutex_lock(&q->mu);
	if (q->finishing) {
		while (q->state != BLQ__CLOSED)
			pthread_cond_wait(&q->cond, &q->mu);
		pthread_mutex_unlock(&q->mu);
		return false;
	}
	q->finishing = true;
	pthread_mutex_unlock(&q->mu);

	/* Past the limit, the threads given up inside a callback are left
	 * (leave_stuck); any other close waits for every thread. */
	wait_workers(q, 0, past_limit);
	wait_producers(q);
	/* Graceful: an item may have arrived after the last worker left (a
	 * balanced pool with workers_min 0, or a slot that was stopping).
	 * Every thread has exited now, so a slot is free: start one to drain. */
	while (!atomic_load_explicit(&q->forced, memory_order_acquire) && blq_size(q) > 0) {
		blq__pool_rescue(q);
		if (!wait_workers(q, abs_ns, false)) {
			begin_close(q, BLQ__CLOSE_HARD);
			timed_out = true;
			leave_stuck(q);
		}
	}
	/* A producer that was still in flight may have started a worker for
	 * its item (workers_min 0); joining waits for it to drain and exit. */
	blq__pool_join_all(q);
	blq__watchdog_stop(q);
	blq__balancer_stop(q);
	/* Graceful: the workers exited, so the timer and the sub-queues are
	 * empty (they wait for staged items). Forced: they stop now; the
	 * sweep takes what they held. */
	blq__timer_stop(q);
	/* After the producers left: an engine's sub-queues only drain now. */
	if (q->engine->stop != NULL)
		q->engine->stop(q->engine_state);
	sweep(q);

	pthread_mutex_lock(&q->mu);
	q->state = BLQ__CLOSED;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
	blq__wake_all(q); /* blq_wait_idle callers: the sweep emptied the rings */
	blq__log(q, BLQ_LOG_INFO, "queue %s: closed", q->name);
	return timed_out;
}

/* Closes in `mode`; past timeout_ns (UINT64_MAX: none) the close turns
 * Hard. BLQ_ETIMEDOUT when it had to. */
static int close_in(blq *q, enum blq__close_mode mode, uint64_t timeout_ns)
{
	int rc = 0;

	if (q == NULL)
		return BLQ_EINVAL;
	begin_close(q, mode);
	if (blq__is_own_worker(q))
		return 0;
	uint64_t abs_ns = mode == BLQ__CLOSE_HARD ? 0 : blq__deadline_after(timeout_ns);
	if (mode != BLQ__CLOSE_HARD && !wait_workers(q, abs_ns, false)) {
		begin_close(q, BLQ__CLOSE_HARD);
		rc = BLQ_ETIMEDOUT;
		leave_stuck(q);
	}
	if (finish(q, abs_ns, rc == BLQ_ETIMEDOUT))
		rc = BLQ_ETIMEDOUT;
	return rc;
}

int blq_close_timeout(blq *q, uint64_t timeout_ns)
{
	return close_in(q, BLQ__CLOSE_LIGHT, timeout_ns);
}

int blq_close(blq *q)
{
	return close_in(q, BLQ__CLOSE_LIGHT, UINT64_MAX);
}

int blq_close_soft_timeout(blq *q, uint64_t timeout_ns)
{
	return close_in(q, BLQ__CLOSE_SOFT, timeout_ns);
}

int blq_close_soft(blq *q)
{
	return close_in(q, BLQ__CLOSE_SOFT, UINT64_MAX);
}

int blq_force_close(blq *q)
{
	return close_in(q, BLQ__CLOSE_HARD, UINT64_MAX);
}
