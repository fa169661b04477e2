/*
 * The producer side: enqueue, try-enqueue, leaking, and the outcome helpers
 * the workers and the closer share.
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
 */
#include <sched.h>
#include <stdint.h>

#include "internal.h"

/* Producers are the caller's threads, unknown to the queue: hash the
 * address of a thread-local to spread them over the producer cells. */
static _Thread_local char blq__tls_anchor;

blq__cell *blq__producer_cell(blq *q)
{
	uint64_t h = (uint64_t)(uintptr_t)&blq__tls_anchor * UINT64_C(0x9E3779B97F4A7C15);

	return &q->cells[q->nworkers + (unsigned)(h >> 60) % BLQ__PRODUCER_CELLS];
}

/* Round-robin start ring per producer thread, so streams spread the load. */
static _Thread_local unsigned blq__tls_rr;

static bool push_any(blq *q, const blq__item *it)
{
	unsigned n = q->nrings;

	if (n == 1)
		return blq__ring_push(&q->rings[0], it);
	unsigned start = blq__tls_rr++;
	for (unsigned i = 0; i < n; i++)
		if (blq__ring_push(&q->rings[(start + i) % n], it))
			return true;
	return false;
}

static bool spin_push(blq *q, const blq__item *it)
{
	for (unsigned i = 0; i < BLQ__SPIN_ROUNDS; i++) {
		if (atomic_load_explicit(&q->closed, memory_order_relaxed))
			return false;
		sched_yield();
		if (push_any(q, it))
			return true;
	}
	return false;
}

bool blq__pop_any(blq *q, unsigned start, blq__item *out)
{
	unsigned n = q->nrings;

	if (n == 1)
		return blq__ring_pop(&q->rings[0], out);
	for (unsigned i = 0; i < n; i++)
		if (blq__ring_pop(&q->rings[(start + i) % n], out))
			return true;
	return false;
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

void blq__drop(blq *q, void *payload, _Atomic uint64_t *counter)
{
	if (q->cfg.item_free != NULL)
		q->cfg.item_free(payload);
	blq__count_shared(counter);
}

void blq__to_dlq(blq *q, blq__cell *c, void *payload, _Atomic uint64_t *leak_counter, int dir)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (q->cfg.dlq.enqueue(q->cfg.dlq.self, payload) == 0) {
		blq__count_shared(leak_counter);
		if (m != NULL && m->queue_leak != NULL)
			m->queue_leak(m->ctx, q->name, (enum blq_leak_dir)dir);
		return;
	}
	/* The DLQ refused: we still own the payload. Never silent. */
	blq__drop(q, payload, &c->lost);
	blq__log(q, BLQ_LOG_WARN, "queue %s: DLQ refused an item; counted lost", q->name);
	if (m != NULL && m->queue_lost != NULL)
		m->queue_lost(m->ctx, q->name);
}

/* Counts the producer out; then, if it pushed, wakes a worker that sleeps
 * (with QoS, an egress thread).
 * The locked add orders the push before the read of the waiters count,
 * which is the barrier blq__ec_notify would otherwise issue (ec.h). */
static void leave(blq *q, blq__cell *c, bool pushed)
{
	atomic_fetch_add_explicit(&c->left, 1, memory_order_seq_cst);
#if !defined(__x86_64__) && !defined(__i386__)
	/* Elsewhere a seq_cst RMW need not be a full barrier. */
	atomic_thread_fence(memory_order_seq_cst);
#endif
	if (!pushed) {
		/* Refused or leaked: blq_wait_idle may be waiting for the
		 * producers to leave. */
		blq__ec_notify(&q->idle_ec, 0);
	} else {
		/* QoS: the item is in a sub-queue; an egress thread moves it on. */
		blq__ec *ec = q->qos != NULL ? blq__qos_ec(q) : &q->items_ec;
#ifdef BLQ__TSAN
		blq__ec_notify(ec, 1); /* TSan: the RMW form of the barrier */
#else
		if (atomic_load_explicit(&ec->waiters, memory_order_relaxed) != 0 &&
		    blq__ec_claim(ec))
			blq__ec_wake_slow(ec, 1);
#endif
	}
	/* After close, the closer and draining workers wait for the producers
	 * to leave: tell them. Only on the rare closing path. */
	if (atomic_load_explicit(&q->closed, memory_order_seq_cst))
		blq__wake_all(q);
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
	if ((uint64_t)blq_size(q) * 1000 >= wake * q->cfg.capacity)
		blq__scale_up_hint(q);
}

/* The ring is full and the queue is leaky: make room at the front (moving
 * the oldest items to the DLQ) or leak the new item at the rear. True when
 * the new item went into the ring after all. */
static bool leak(blq *q, blq__cell *c, const blq__item *it)
{
	if (q->cfg.leak_direction == BLQ_LEAK_FRONT) {
		blq__item old;

		for (unsigned a = 0; a < q->cfg.front_leak_attempts; a++) {
			if (blq__pop_any(q, 0, &old))
				blq__to_dlq(q, c, old.payload, &c->leaked_front, BLQ_LEAK_FRONT);
			if (push_any(q, it))
				return true;
		}
	}
	blq__to_dlq(q, c, it->payload, &c->leaked_rear, BLQ_LEAK_REAR);
	return false;
}

enum { MODE_BLOCK, MODE_TRY };

static int enqueue_item(blq *q, blq__item *it, int mode, uint64_t weight)
{
	blq__cell *c = blq__producer_cell(q);
	bool pushed = false;
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
	/* Deadlines arrive relative; make them absolute on the queue's clock.
	 * The clock is read only when something needs it. */
	if (q->stamp || it->deadline_ns != 0) {
		uint64_t now = blq__now(q);

		if (q->stamp)
			it->enq_ns = now;
		if (it->deadline_ns != 0)
			it->deadline_ns = it->deadline_ns > UINT64_MAX - now ? UINT64_MAX
									     : now + it->deadline_ns;
	}
	if (q->qos != NULL) {
		rc = blq__qos_enqueue(q, c, it, weight, mode == MODE_TRY, &pushed);
		goto placed;
	}
	for (;;) {
		if (push_any(q, it)) {
			pushed = true;
			break;
		}
		if (q->balanced)
			blq__scale_up_hint(q); /* full: more hands, now */
		if (q->leaky) {
			pushed = leak(q, c, it);
			break;
		}
		if (mode == MODE_TRY) {
			rc = BLQ_EFULL;
			break;
		}
		/* Slow path: a few yielding looks (the workers are draining;
		 * yielding hands them our CPU), then sleep until a worker frees
		 * room or the queue closes, re-checking both after announcing
		 * ourselves. */
		if (spin_push(q, it)) {
			pushed = true;
			break;
		}
		uint32_t snap = blq__ec_prepare(&q->space_ec);
		if (push_any(q, it)) {
			blq__ec_cancel(&q->space_ec);
			pushed = true;
			break;
		}
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			blq__ec_cancel(&q->space_ec);
			rc = BLQ_ECLOSED;
			break;
		}
		blq__ec_wait(&q->space_ec, snap, 0);
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			rc = BLQ_ECLOSED;
			break;
		}
	}
placed:
	/* No active worker for our item (workers_min 0): start one while we
	 * still count as in flight, so a close cannot finish before it. */
	if (pushed && q->balanced && atomic_load_explicit(&q->n_active, memory_order_acquire) == 0)
		blq__scale_up_hint(q);
out:
	if (rc != 0)
		atomic_fetch_add_explicit(&c->refused, 1, memory_order_relaxed);
	leave(q, c, pushed);
	if (rc == 0) {
		accepted(q);
		if (q->balanced)
			balance_hint(q, n);
	}
	return rc;
}

static int enqueue_payload(blq *q, void *payload, int mode)
{
	if (q == NULL)
		return BLQ_EINVAL;

	blq__item it = {
		.payload = payload,
		.deadline_ns = q->cfg.deadline_interval_ns,
		.attempt = 1,
	};
	return enqueue_item(q, &it, mode, 0);
}

int blq_enqueue(blq *q, void *payload)
{
	return enqueue_payload(q, payload, MODE_BLOCK);
}

int blq_try_enqueue(blq *q, void *payload)
{
	return enqueue_payload(q, payload, MODE_TRY);
}

int blq_enqueue_job(blq *q, const blq_job *job)
{
	if (q == NULL || job == NULL)
		return BLQ_EINVAL;
	if (job->delay_ns != 0)
		return BLQ_ENOTSUP;

	blq__item it = {
		.payload = job->payload,
		.deadline_ns = job->deadline_ns != 0 ? job->deadline_ns : q->cfg.deadline_interval_ns,
		.attempt = 1,
	};
	return enqueue_item(q, &it, MODE_BLOCK, job->weight);
}

static int enqueuer_cb(void *self, void *payload)
{
	return blq_enqueue(self, payload);
}

blq_enqueuer blq_as_enqueuer(blq *q)
{
	blq_enqueuer e = {.enqueue = enqueuer_cb, .self = q};

	return e;
}
