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
 * Full sub-queue: the one admission policy of the core
 * (queue/admission.c, through queue/shared/admission.h), applied to that
 * sub-queue: a leaky queue leaks from that sub-queue only (front: its
 * oldest items go to the DLQ to make room; rear: the new one does);
 * otherwise blq_try_enqueue says BLQ_EFULL and blq_enqueue, counted in
 * producers_blocked, takes its looks and sleeps on that
 * sub-queue's event count until the egress has drained it to half, or the
 * queue closes. Other sub-queues keep accepting meanwhile. The first push
 * stays here, inline: an item that fits never reaches admission.c.
 */
#include <blq/retry.h>

#include "admission.h"
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

/* A full sub-queue as admission.c sees it. */
typedef struct subq_at {
	struct blq__qos *s;
	blq__subq *sq;
} subq_at;

static bool at_push(void *ctx, const blq__item *it)
{
	const subq_at *at = ctx;

	return subq_push(at->s, at->sq, it);
}

/* The sub-queue's oldest: uncounted from staged at once (relaxed: we are
 * in flight, so no closing worker relies on this count until we leave). */
static bool at_pop_oldest(void *ctx, blq__item *out)
{
	const subq_at *at = ctx;

	if (!blq__ring_pop(&at->sq->ring, out))
		return false;
	atomic_fetch_sub_explicit(at->s->port.staged, 1, memory_order_relaxed);
	return true;
}

static void at_leak(void *ctx, blq__cell *c, const blq__item *it, enum blq_leak_dir dir)
{
	const subq_at *at = ctx;

	subq_leak_event(at->s, at->sq);
	blq__core_leak(at->s->port.q, c, it, dir);
}

static const blq__admit_ops subq_ops = {
	.push = at_push,
	.pop_oldest = at_pop_oldest,
	.leak = at_leak,
};

/* The first push found the sub-queue full: admission.c, with the looks.
 * A due item (BLQ__TIMER) goes as a try: the timer thread never waits on
 * a sub-queue (subq_admit). Out of line: the fast path stays a push. */
static __attribute__((noinline)) int subq_full(struct blq__qos *s, blq__cell *c,
					       blq__subq *sq, const blq__item *it,
					       enum blq__mode mode, bool *pushed)
{
	subq_at at = {.s = s, .sq = sq};
	const blq__admission a = {
		.ops = &subq_ops,
		.ctx = &at,
		.port = &s->port,
		.space = &sq->space,
		.takers = NULL,
	};

	return blq__admit_full(&a, c, it, mode == BLQ__TIMER ? BLQ__TRY : mode, true, pushed);
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
	if (!*pushed)
		rc = subq_full(s, c, sq, it, mode, pushed);
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
