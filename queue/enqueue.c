/*
 * The producer side: enqueue, try-enqueue, batches, enqueue a job, and
 * leaking.
 *
 * Fast path: count the producer in (`entered`, one locked add on its cell;
 * for a lane's owner the same add takes a place from its lane's credit,
 * queue/lanes.h), check the closed flag, push into its lane (or a ring),
 * count it out (`left`, a second locked add, which is also the full
 * barrier the wake-up check needs), and wake a worker only if one sleeps.
 * No lock, no allocation, no system call.
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
 * A batch (blq_enqueue_batch) is the same sequence once for n items:
 * `entered` and `left` count the call, `extra` its n - 1 other items
 * (before any is placed, so `in` never runs behind an outcome), and the
 * rings engine reserves the slots of as many as fit with one CAS per up
 * to 64 (rings.c, blq__push_batch), so the per-call costs (the locked adds, the
 * closed check, the clock, the wake-up check) are shared by the batch.
 * `refused` counts the items the call gave back. A batch weighs one
 * producer in flight, as force_calibration_limit means.
 *
 * Delayed items go to the timer (timer.c) instead of a ring, while the
 * producer still counts as in flight, so they are in q->staged before it
 * leaves (the close protocol above extends to them).
 */
#include <stdint.h>

#include "internal.h"
#include "thread_hash.h"

/* Producers are the caller's threads, unknown to the queue: a lane's
 * owner counts in its lane's cell (whose `entered` carries the lane's
 * credit, internal.h); others hash the address of a thread-local to
 * spread over the producer cells. *lane: the caller's lane, or NULL. */
static blq__cell *producer_cell(blq *q, blq__lane **lane)
{
	*lane = q->lanes.lane != NULL ? blq__lane_own(q) : NULL;
	if (*lane != NULL)
		return blq__lane_cell(q, *lane);
	return &q->cells[blq__thread_cell(BLQ__PRODUCER_CELLS)];
}

blq__cell *blq__producer_cell(blq *q)
{
	blq__lane *lane;

	return producer_cell(q, &lane);
}

int64_t blq__inflight(const blq *q)
{
	uint64_t left = 0, entered = 0;

	for (unsigned i = 0; i < blq__ncells(q); i++)
		left += atomic_load_explicit(&q->cells[i].left, memory_order_seq_cst);
	for (unsigned i = 0; i < blq__ncells(q); i++)
		entered += atomic_load_explicit(&q->cells[i].entered, memory_order_seq_cst) >>
			   BLQ__ENTER_SHIFT;
	return (int64_t)(entered - left);
}

/* Counts the producer out and, if it placed any item, wakes whoever takes
 * them next (`woken`: a worker, or with QoS an egress thread) if one
 * sleeps: blq__handoff, whose locked add on `left` is also the barrier the
 * wake-up check needs (engine.h). One check per call, whatever its size. */
static void leave(blq *q, blq__cell *c, blq__ec *woken)
{
	blq__handoff(&q->port, &c->left, 1, woken);
	if (woken == NULL) {
		/* Refused or leaked: blq_wait_idle may be waiting for the
		 * producers to leave. */
		blq__ec_notify(&q->idle_ec, 0);
	}
}

static void accepted(blq *q, uint64_t n)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (m != NULL && m->queue_put != NULL)
		for (uint64_t i = 0; i < n; i++)
			m->queue_put(m->ctx, q->name);
}

/* The balancer samples every 64th call per cell, and every batch of 64
 * items or more. `before`: the cell's calls before this one. */
static bool sample_due(uint64_t before, uint64_t n)
{
	return (before & 63) == 63 || n >= 64;
}

/* Enqueue-side balancing (balancer.c): grow the pool when the fill rate
 * reached the wakeup factor. (Starting a worker when none is active
 * happens in finish, before the producer counts itself out.) */
static void balance_hint(blq *q, uint64_t before, uint64_t n)
{
	if (!sample_due(before, n))
		return;
	uint64_t wake = atomic_load_explicit(&q->wakeup_permille, memory_order_relaxed);
	if (blq__ready(q) * 1000 >= wake * q->capacity)
		blq__scale_up_hint(q);
}

/* Counts the producer in with its n items, before it reads `closed`
 * (seq_cst RMW then seq_cst load: see "Close safety" above). False:
 * closed. *before: the cell's calls before this one (the samples' pace).
 * With `lane` (a single undelayed item of the lane's owner), the same add
 * takes one place from the lane's credit (internal.h, blq__cell): *placed
 * says whether it did; with no credit the add borrows, and a second add
 * gives the place back and counts us in (before `closed` is read). A
 * place taken when the queue is closed goes back. Always inlined: with
 * the timed enqueues' extra callers GCC stopped inlining it into
 * enqueue_item, and W1 ran 1.2x slower (the call, and the fused add's
 * result no longer folded into the credit test). */
static inline __attribute__((always_inline)) bool enter(blq *q, blq__cell *c, uint64_t n,
							 uint64_t *before, blq__lane *lane,
							 bool *placed)
{
	uint64_t old = atomic_fetch_add_explicit(&c->entered,
						 BLQ__ENTER_ONE - (lane != NULL ? 1 : 0),
						 memory_order_seq_cst);

	*placed = false;
	if (lane != NULL) {
		if ((old & BLQ__CREDIT_MASK) != 0)
			*placed = true;
		else
			atomic_fetch_add_explicit(&c->entered, 1, memory_order_seq_cst);
	}
	*before = old >> BLQ__ENTER_SHIFT;
	if (n > 1)
		atomic_fetch_add_explicit(&c->extra, n - 1, memory_order_seq_cst);
	if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
		if (*placed)
			blq__lanes_unspend(q, lane);
		*placed = false;
		return false;
	}
	/* Force calibration (the original's): when force_calibration_limit
	 * producers, this one included, are inside enqueue at once, calibrate
	 * on this thread now. */
	if (atomic_load_explicit(&q->balanced, memory_order_relaxed) && sample_due(*before, n) &&
	    blq__inflight(q) >= (int64_t)q->cfg.force_calibration_limit)
		blq__calibrate_try(q);
	return true;
}

/* Reads the clock only when something needs it: the stamp, the deadline
 * (relative on arrival, absolute from here on), a delay. Returns the time
 * read (0 when none was). */
static uint64_t stamp(blq *q, blq__item *it, uint64_t delay)
{
	if (!q->stamp && it->deadline_ns == 0 && delay == 0)
		return 0;
	uint64_t now = blq__now(q);

	if (q->stamp)
		it->enq_ns = now;
	if (it->deadline_ns != 0)
		it->deadline_ns = blq__sat_add(now, it->deadline_ns);
	return now;
}

/* One counted item in: into the timer when delayed, else through the
 * engine (*woken as its admit's). 0, or why it was refused. */
static int take_in(blq *q, blq__cell *c, blq__item *it, enum blq__mode mode, uint64_t delay,
		   uint64_t now, blq__ec **woken)
{
	if (delay == 0)
		return q->engine->admit(q->engine_state, c, it, mode, woken);
	/* A leaky queue never waits for the timer's room either (its
	 * producers never stall): a blocking call adds like a try. */
	int rc = blq__timer_add(q, it, now, delay, q->leaky ? BLQ__TRY : mode);

	if (rc == BLQ_EFULL && q->leaky) {
		/* A full timer leaks the new item (rear), whatever
		 * leak_direction says: its oldest entries are the ones due
		 * next. */
		blq__to_dlq(q, c, it, BLQ_DLQ_OVERFLOW_REAR, 0);
		rc = 0;
	}
	return rc;
}

/* The producer's end: its n items counted in, `took` of them taken (placed
 * or leaked), the rest refused. */
static void finish(blq *q, blq__cell *c, uint64_t before, uint64_t n, uint64_t took,
		   blq__ec *woken)
{
	/* No active worker for our items (workers_min 0): start one while we
	 * still count as in flight, so a close cannot finish before it. */
	if (woken != NULL && atomic_load_explicit(&q->balanced, memory_order_relaxed) &&
	    atomic_load_explicit(&q->n_active, memory_order_acquire) == 0)
		blq__scale_up_hint(q);
	if (took < n)
		atomic_fetch_add_explicit(&c->refused, n - took, memory_order_relaxed);
	leave(q, c, woken);
	if (took > 0) {
		accepted(q, took);
		if (atomic_load_explicit(&q->balanced, memory_order_relaxed))
			balance_hint(q, before, n);
	}
}

/* A payload enqueued without a job: the queue's defaults (the deadline
 * still relative, made absolute by stamp). */
static blq__item plain_item(const blq *q, void *payload)
{
	return (blq__item){
		.payload = payload,
		.deadline_ns = q->cfg.deadline_interval_ns,
		.timeout_ns = q->cfg.timeout_ns,
		.attempt = 1,
	};
}

/* `delay` is relative; it->deadline_ns arrives relative and leaves
 * absolute. `weight` is the QoS evaluator's input. */
static int enqueue_item(blq *q, blq__item *it, enum blq__mode mode, uint64_t delay,
			uint64_t weight)
{
	blq__lane *lane;
	blq__cell *c = producer_cell(q, &lane);
	blq__ec *woken = NULL; /* where the item went: who to wake */
	uint64_t before;
	bool placed;
	int rc = BLQ_ECLOSED;

	if (enter(q, c, 1, &before, delay == 0 ? lane : NULL, &placed)) {
		/* Priority is decided at the enqueue, delayed or not. */
		if (q->engine->classify != NULL)
			q->engine->classify(q->engine_state, it, weight);
		uint64_t now = stamp(q, it, delay);

		if (placed) {
			/* Its place is taken (a lane's, so the rings engine's):
			 * straight into the lane. */
			blq__push_placed(q, lane, it);
			woken = &q->items_ec;
			rc = 0;
		} else {
			rc = take_in(q, c, it, mode, delay, now, &woken);
		}
	}
	finish(q, c, before, 1, rc == 0, woken);
	return rc;
}

/* A batch the engine cannot take at once (QoS) or that waits in the
 * timer: item by item inside the batch's one count, each as enqueue_item
 * would. A placed item wakes its taker before the next admission, which
 * may wait for room that only that taker can make. */
static size_t take_in_each(blq *q, blq__cell *c, const blq__item *tmpl, void *const *payloads,
			   size_t n, enum blq__mode mode, uint64_t delay, uint64_t now,
			   blq__ec **woken, int *rc)
{
	size_t took = 0;

	for (; took < n; took++) {
		blq__item it = *tmpl;
		blq__ec *w = NULL;

		it.payload = payloads[took];
		if (q->engine->classify != NULL)
			q->engine->classify(q->engine_state, &it, 0);
		*rc = take_in(q, c, &it, mode, delay, now, &w);
		if (*rc != 0)
			break;
		if (w != NULL) {
			*woken = w;
			if (took + 1 < n)
				blq__ec_notify(w, 1);
		}
	}
	return took;
}

/* A batch: one count in and out (the call; `extra` for its other items),
 * one clock read, the engine's batch admission (a reservation per 64 slots) and one
 * wake-up check, so an item costs a slot's copy and little else. */
static ssize_t enqueue_batch(blq *q, void *const *payloads, size_t n, enum blq__mode mode)
{
	if (q == NULL || (payloads == NULL && n != 0) || n > (size_t)SSIZE_MAX)
		return BLQ_EINVAL;
	if (n == 0)
		return 0;

	blq__lane *lane;
	blq__cell *c = producer_cell(q, &lane);
	blq__ec *woken = NULL;
	uint64_t before, delay = q->cfg.delay_interval_ns;
	size_t took = 0;
	int rc = BLQ_ECLOSED;
	blq__item tmpl = plain_item(q, NULL);
	bool placed;

	if (enter(q, c, n, &before, NULL, &placed)) {
		uint64_t now = stamp(q, &tmpl, delay);

		rc = 0;
		if (delay == 0 && q->engine->admit_batch != NULL)
			took = q->engine->admit_batch(q->engine_state, c, &tmpl, payloads, n, mode,
						      &woken, &rc);
		else
			took = take_in_each(q, c, &tmpl, payloads, n, mode, delay, now, &woken,
					    &rc);
	}
	finish(q, c, before, n, took, woken);
	return took > 0 ? (ssize_t)took : rc;
}

static int enqueue_payload(blq *q, void *payload, enum blq__mode mode)
{
	if (q == NULL)
		return BLQ_EINVAL;

	blq__item it = plain_item(q, payload);

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

ssize_t blq_enqueue_batch(blq *q, void *const *payloads, size_t n)
{
	return enqueue_batch(q, payloads, n, BLQ__BLOCK);
}

ssize_t blq_try_enqueue_batch(blq *q, void *const *payloads, size_t n)
{
	return enqueue_batch(q, payloads, n, BLQ__TRY);
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
	/* A handle's first place, before a worker can see the item. */
	if (done != NULL)
		blq__handle_where(done, delay != 0 ? BLQ_HANDLE_DELAYED : BLQ_HANDLE_QUEUED);
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

/*
 * Timed enqueues (blq_enqueue_timeout and kin): a blocking enqueue whose
 * waits for room end at a limit. The limit is this thread's for the call,
 * not a parameter through the engines: the waits that read it
 * (admission.c's wait for room, timer.c's wait for the timer's room) run
 * on the producer's own thread (the lanes' wait for a refill in transit
 * is bounded by 10 ms of its own and does not), and every other path
 * (the hot one included) is the blocking enqueue's, unchanged. It is
 * keyed by the queue: a leak inside the call into a DLQ that is another
 * queue (blq_as_enqueuer) waits as that queue's own blq_enqueue does.
 */
static _Thread_local struct wait_limit {
	const blq *q;
	uint64_t until; /* absolute CLOCK_MONOTONIC; 0: none */
} wait_limit;

uint64_t blq__core_wait_until(const blq *q)
{
	return wait_limit.q == q ? wait_limit.until : 0;
}

/* Sets q's limit for this thread from now; returns the one it replaces
 * (an enqueue inside a completion hook may be a timed one too). */
static struct wait_limit limit_begin(const blq *q, uint64_t timeout_ns)
{
	struct wait_limit was = wait_limit;

	/* UINT64_MAX: no limit (blq__deadline_after's 0); 0: already due. */
	wait_limit = (struct wait_limit){q, blq__deadline_after(timeout_ns)};
	return was;
}

int blq_enqueue_timeout(blq *q, void *payload, uint64_t timeout_ns)
{
	struct wait_limit was = limit_begin(q, timeout_ns);
	int rc = enqueue_payload(q, payload, BLQ__BLOCK);

	wait_limit = was;
	return rc;
}

int blq_enqueue_job_timeout(blq *q, const blq_job *job, uint64_t timeout_ns)
{
	struct wait_limit was = limit_begin(q, timeout_ns);
	int rc = blq__enqueue_job_as(q, job, job != NULL ? job->done : NULL, false);

	wait_limit = was;
	return rc;
}

ssize_t blq_enqueue_batch_timeout(blq *q, void *const *payloads, size_t n, uint64_t timeout_ns)
{
	struct wait_limit was = limit_begin(q, timeout_ns);
	ssize_t r = enqueue_batch(q, payloads, n, BLQ__BLOCK);

	wait_limit = was;
	return r;
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
