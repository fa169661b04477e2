/*
 * QoS ingress: the producer's side. The evaluator gives the item a percent,
 * the ingress table (qos.c) turns it into a sub-queue, and the item goes
 * into that sub-queue's ring: one lock-free push, no lock, no allocation.
 *
 * Accounting: the producer counts the item in staged (the port's) before the push
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
#include <blq/retry.h>

#include "qos_internal.h"

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
		p = (unsigned)blq_rand_below(100) + 1; /* util/rand.c */
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
static bool subq_push(struct blq__qos *s, blq__subq *sq, const blq__item *it)
{
	atomic_fetch_add_explicit(s->port.staged, 1, memory_order_relaxed);
	if (blq__ring_push(&sq->ring, it))
		return true;
	atomic_fetch_sub_explicit(s->port.staged, 1, memory_order_relaxed);
	return false;
}

static void subq_leak_event(const struct blq__qos *s, const blq__subq *sq)
{
	const blq_metrics_writer *m = s->port.metrics;

	if (m != NULL && m->subq_leak != NULL)
		m->subq_leak(m->ctx, s->port.name, sq->name);
}

/* The sub-queue is full and the queue leaky: front leaks move its oldest
 * items to the DLQ to make room; else (or when that keeps failing) the new
 * item leaks. True when the new item went into the sub-queue after all. */
static bool leak(struct blq__qos *s, blq__cell *c, blq__subq *sq, const blq__item *it)
{
	if (s->port.leak_direction == BLQ_LEAK_FRONT) {
		blq__item old;

		for (unsigned a = 0; a < s->port.front_leak_attempts; a++) {
			if (blq__ring_pop(&sq->ring, &old)) {
				/* Relaxed: we are in flight, so no closing worker
				 * relies on this count until we leave. */
				atomic_fetch_sub_explicit(s->port.staged, 1, memory_order_relaxed);
				subq_leak_event(s, sq);
				blq__core_leak(s->port.q, c, &old, BLQ_LEAK_FRONT);
			}
			if (subq_push(s, sq, it))
				return true;
		}
	}
	subq_leak_event(s, sq);
	blq__core_leak(s->port.q, c, it, BLQ_LEAK_REAR);
	return false;
}

/* Blocks until the item fits into its full sub-queue (0) or the queue
 * closes (BLQ_ECLOSED): a spin while it can pay (spin.h), then a sleep
 * announced and re-checked on the sub-queue's event count (ec.h). */
static int wait_push(struct blq__qos *s, blq__subq *sq, const blq__item *it)
{
	const _Atomic int *closed = s->port.closed;

	blq__spinner sp;

	if (blq__spin_start(s->port.spin, &sp)) {
		while (blq__spin_pause(s->port.spin, &sp)) {
			bool in = subq_push(s, sq, it);

			if (in || atomic_load_explicit(closed, memory_order_relaxed)) {
				blq__spin_stop(s->port.spin, &sp);
				if (in)
					return 0;
				break; /* closed: the sleep's checks below say so */
			}
		}
	}
	for (;;) {
		uint32_t snap = blq__ec_prepare(&sq->space);

		if (subq_push(s, sq, it)) {
			blq__ec_cancel(&sq->space);
			return 0;
		}
		/* seq_cst: pairs with the closer's store (enqueue.c). */
		if (atomic_load_explicit(closed, memory_order_seq_cst)) {
			blq__ec_cancel(&sq->space);
			return BLQ_ECLOSED;
		}
		blq__ec_wait(&sq->space, snap, 0);
		if (atomic_load_explicit(closed, memory_order_seq_cst))
			return BLQ_ECLOSED;
	}
}

void blq__qos_classify(void *state, blq__item *it, uint64_t weight)
{
	struct blq__qos *s = state;

	it->tag = blq_qos_eval(&s->cfg.evaluator, it->payload, weight);
}

/* Into the sub-queue of it->tag (counted in staged), leaking it from
 * there, or waiting for room in it as the mode says. A due item from the
 * timer (BLQ__TIMER) never waits on a sub-queue: when its sub-queue is
 * full on a queue that blocks, it goes to the egress (blq__place). */
static int subq_admit(struct blq__qos *s, blq__cell *c, const blq__item *it,
		      enum blq__mode mode, bool *pushed)
{
	blq__subq *sq = &s->subqs[s->ingress[it->tag - 1]];
	const blq_metrics_writer *m = s->port.metrics;
	int rc = 0;

	*pushed = subq_push(s, sq, it);
	if (!*pushed) {
		if (s->port.balanced)
			blq__scale_up_hint(s->port.q); /* full: more hands, now */
		if (s->port.leaky)
			*pushed = leak(s, c, sq, it);
		else if (mode != BLQ__BLOCK)
			rc = BLQ_EFULL;
		else {
			/* A blocked producer (blq_stats' producers_blocked). */
			atomic_fetch_add_explicit(s->port.blocked, 1, memory_order_relaxed);
			*pushed = (rc = wait_push(s, sq, it)) == 0;
			atomic_fetch_sub_explicit(s->port.blocked, 1, memory_order_relaxed);
		}
	}
	/* Put: the item reached the sub-queue (and is in it, or leaked at its
	 * rear), so per sub-queue put = pull + leak + size. */
	if (rc == 0 && m != NULL && m->subq_put != NULL)
		m->subq_put(m->ctx, s->port.name, sq->name);
	return rc;
}

int blq__qos_admit(void *state, blq__cell *c, blq__item *it, enum blq__mode mode,
		   blq__ec **woken)
{
	struct blq__qos *s = state;
	bool pushed = false;
	int rc = subq_admit(s, c, it, mode, &pushed);

	if (rc == 0) {
		*woken = pushed ? &s->ec : NULL; /* an egress thread moves it on */
		return 0;
	}
	if (rc == BLQ_EFULL && mode == BLQ__TIMER) {
		rc = blq__place(s->port.q, c, it, BLQ__TIMER, &pushed);
		*woken = pushed ? s->port.items : NULL;
		return rc;
	}
	*woken = NULL;
	return rc;
}
