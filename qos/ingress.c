/*
 * QoS ingress: the producer's side. The evaluator gives the item a percent,
 * the ingress table (qos.c) turns it into a sub-queue, and the item goes
 * into that sub-queue's ring: one lock-free push, no lock, no allocation.
 *
 * Accounting: the producer counts the item in q->staged before the push
 * makes it visible, while it still counts as in flight (entered - left),
 * so a worker deciding that a closing queue has nothing more to come
 * (worker.c: closed, no producer in flight, staged == 0) can never miss
 * it. A failed push takes the count back; the egress threads give it back
 * once the item is in the egress ring (egress.c).
 *
 * Full sub-queue: a leaky queue leaks from that sub-queue only (front: the
 * sub-queue's oldest items go to the DLQ to make room; rear: the new one
 * does); otherwise blq_try_enqueue says BLQ_EFULL and blq_enqueue sleeps on
 * that sub-queue's event count until the egress has drained it to half, or
 * the queue closes. Other sub-queues keep accepting meanwhile.
 */
#include <sched.h>

#include "qos_internal.h"

/* xorshift64*, one state per thread: no lock, no system call. */
static _Thread_local uint64_t blq__rng;

static unsigned random_percent(void)
{
	uint64_t x = blq__rng;

	if (x == 0) /* first use on this thread: seed from the clock and the thread */
		x = (blq__monotonic_ns() ^ (uint64_t)(uintptr_t)&blq__rng) | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	blq__rng = x;
	return (unsigned)(((x * UINT64_C(0x2545F4914F6CDD1D)) >> 32) % 100) + 1;
}

/* The original's weighted evaluator: def for weight 0, 100 from max up,
 * else floor(weight * 100 / max). */
static unsigned weighted_percent(const blq_qos_evaluator *e, uint64_t weight)
{
	uint64_t max = e->max != 0 ? e->max : 100;

	if (weight == 0)
		return e->def;
	if (weight >= max)
		return 100;
	__extension__ unsigned __int128 p = (unsigned __int128)weight * 100 / max;
	return (unsigned)p;
}

unsigned blq_qos_eval(const blq_qos_evaluator *e, void *payload, uint64_t weight)
{
	unsigned p = 1;

	if (e == NULL)
		return 1;
	switch (e->kind) {
	case BLQ_QOS_EVAL_WEIGHTED:
		p = weighted_percent(e, weight);
		break;
	case BLQ_QOS_EVAL_RANDOM:
		p = random_percent();
		break;
	case BLQ_QOS_EVAL_CUSTOM:
		if (e->fn != NULL)
			p = e->fn(e->ctx, payload, weight);
		break;
	default:
		break;
	}
	return p < 1 ? 1 : p > 100 ? 100 : p;
}

/* Counted in staged before the push can publish it (the push's release
 * store orders the increment before it, so an egress thread never gives
 * back a count that is not there yet); relaxed, because this producer's
 * `left` increment (seq_cst, later) is what publishes it to a closing
 * worker. A failed push takes it back: the item never became visible. */
static bool subq_push(blq *q, blq__subq *sq, const blq__item *it)
{
	atomic_fetch_add_explicit(&q->staged, 1, memory_order_relaxed);
	if (blq__ring_push(&sq->ring, it))
		return true;
	atomic_fetch_sub_explicit(&q->staged, 1, memory_order_relaxed);
	return false;
}

static void subq_leak_event(blq *q, const blq__subq *sq)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (m != NULL && m->subq_leak != NULL)
		m->subq_leak(m->ctx, q->name, sq->name);
}

/* The sub-queue is full and the queue leaky: front leaks move its oldest
 * items to the DLQ to make room; else (or when that keeps failing) the new
 * item leaks. True when the new item went into the sub-queue after all. */
static bool leak(blq *q, blq__cell *c, blq__subq *sq, const blq__item *it)
{
	if (q->cfg.leak_direction == BLQ_LEAK_FRONT) {
		blq__item old;

		for (unsigned a = 0; a < q->cfg.front_leak_attempts; a++) {
			if (blq__ring_pop(&sq->ring, &old)) {
				/* Relaxed: we are in flight, so no closing worker
				 * relies on this count until we leave. */
				atomic_fetch_sub_explicit(&q->staged, 1, memory_order_relaxed);
				subq_leak_event(q, sq);
				blq__to_dlq(q, c, &old, &c->leaked_front, BLQ_LEAK_FRONT);
			}
			if (subq_push(q, sq, it))
				return true;
		}
	}
	subq_leak_event(q, sq);
	blq__to_dlq(q, c, it, &c->leaked_rear, BLQ_LEAK_REAR);
	return false;
}

/* Blocks until the item fits into its full sub-queue (0) or the queue
 * closes (BLQ_ECLOSED): a few yielding looks, then a sleep announced and
 * re-checked on the sub-queue's event count (ec.h). */
static int wait_push(blq *q, blq__subq *sq, const blq__item *it)
{
	for (unsigned i = 0; i < BLQ__SPIN_ROUNDS; i++) {
		if (atomic_load_explicit(&q->closed, memory_order_relaxed))
			return BLQ_ECLOSED;
		sched_yield();
		if (subq_push(q, sq, it))
			return 0;
	}
	for (;;) {
		uint32_t snap = blq__ec_prepare(&sq->space);

		if (subq_push(q, sq, it)) {
			blq__ec_cancel(&sq->space);
			return 0;
		}
		/* seq_cst: pairs with the closer's store (enqueue.c). */
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			blq__ec_cancel(&sq->space);
			return BLQ_ECLOSED;
		}
		blq__ec_wait(&sq->space, snap, 0);
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst))
			return BLQ_ECLOSED;
	}
}

unsigned blq__qos_percent(const blq *q, void *payload, uint64_t weight)
{
	return blq_qos_eval(&q->qos->cfg.evaluator, payload, weight);
}

int blq__qos_enqueue(blq *q, blq__cell *c, const blq__item *it, bool try_only, bool *pushed)
{
	struct blq__qos *s = q->qos;
	blq__subq *sq = &s->subqs[s->ingress[it->qos_pct - 1]];
	const blq_metrics_writer *m = q->cfg.metrics;
	int rc = 0;

	*pushed = subq_push(q, sq, it);
	if (!*pushed) {
		if (q->balanced)
			blq__scale_up_hint(q); /* full: more hands, now */
		if (q->leaky)
			*pushed = leak(q, c, sq, it);
		else if (try_only)
			rc = BLQ_EFULL;
		else
			*pushed = (rc = wait_push(q, sq, it)) == 0;
	}
	/* Put: the item reached the sub-queue (and is in it, or leaked at its
	 * rear), so per sub-queue put = pull + leak + size. */
	if (rc == 0 && m != NULL && m->subq_put != NULL)
		m->subq_put(m->ctx, q->name, sq->name);
	return rc;
}
