/*
 * The QoS engine's table (queue/shared/engine.h) and its lifecycle and
 * views: copying the config, the ingress table and the WRR quotas, the
 * sub-queues' rings, the leftovers after a force close, the info and
 * status views.
 *
 * blq_new calls init before it allocates the rings, and takes the shape
 * it reports: the queue's own rings become the egress (ring_cap = egress
 * capacity, streams = egress streams), and the queue's capacity the sum
 * of everything, so blq_size, blq_rate and the balancer see sub-queues and
 * egress as one queue (items in sub-queues count through the port's
 * staged count). The caller's config is not written: the queue keeps its
 * capacity and streams apart from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_escape.h"
#include "qos_internal.h"

__extension__ typedef unsigned __int128 blq__u128;

/* Percent p (1..100) goes to the first sub-queue whose cumulative ingress
 * weight reaches p% of the total: 250/600/150 gives 1-25, 26-85, 86-100.
 * Exact integer arithmetic, so the boundaries do not depend on rounding. */
static void ingress_table(struct blq__qos *s)
{
	blq__u128 total = 0, cum;
	unsigned i = 0;

	for (unsigned k = 0; k < s->n; k++)
		total += blq__qos_iw(&s->conf[k]);
	cum = blq__qos_iw(&s->conf[0]);
	for (unsigned p = 1; p <= 100; p++) {
		while (i + 1 < s->n && (blq__u128)p * total > cum * 100)
			cum += blq__qos_iw(&s->conf[++i]);
		s->ingress[p - 1] = (uint8_t)i;
	}
}

/* WRR: each sub-queue's items per round, its egress weight over the
 * smallest one, rounded half up (the original's: 250/600/150 -> 2/4/1). */
static void wrr_quotas(struct blq__qos *s)
{
	uint64_t min = UINT64_MAX;

	for (unsigned i = 0; i < s->n; i++)
		if (blq__qos_ew(&s->conf[i]) < min)
			min = blq__qos_ew(&s->conf[i]);
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t w = blq__qos_ew(&s->conf[i]), r = w % min;

		s->subqs[i].quota = w / min + (r >= min - r ? 1 : 0);
	}
}

static int qos_init(const blq_config *qcfg, const blq__port *port, void **state,
		    blq__shape *shape)
{
	const blq_qos_config *c = qcfg->qos;
	struct blq__qos *s;

	/* Sizes are multiples of the cache line: every struct here is
	 * cache-line aligned. */
	s = aligned_alloc(BLQ__CACHELINE, sizeof(*s));
	if (s == NULL)
		return BLQ_ENOMEM;
	memset(s, 0, sizeof(*s));
	*state = s; /* from here on, qos_free undoes whatever was built */
	s->port = *port;
	s->cfg = *c;
	s->cfg.egress = blq__qos_egress_defaults(&c->egress);
	if (s->cfg.evaluator.kind == BLQ_QOS_EVAL_WEIGHTED && s->cfg.evaluator.max == 0)
		s->cfg.evaluator.max = 100;
	s->n = c->nsubqs;
	s->nmovers = s->cfg.egress.workers;
	s->conf = calloc(s->n, sizeof(*s->conf));
	s->subqs = aligned_alloc(BLQ__CACHELINE, sizeof(blq__subq) * s->n);
	s->movers = aligned_alloc(BLQ__CACHELINE, sizeof(blq__mover) * s->nmovers);
	if (s->conf == NULL || s->subqs == NULL || s->movers == NULL)
		return BLQ_ENOMEM;
	memset(s->subqs, 0, sizeof(blq__subq) * s->n);
	memset(s->movers, 0, sizeof(blq__mover) * s->nmovers);
	for (unsigned i = 0; i < s->n; i++) {
		blq__subq *sq = &s->subqs[i];

		s->conf[i] = c->subqs[i];
		if (c->subqs[i].name != NULL)
			snprintf(sq->name, sizeof(sq->name), "%s", c->subqs[i].name);
		else
			snprintf(sq->name, sizeof(sq->name), "%u", i);
		s->conf[i].name = sq->name;
		if (blq__ring_init(&sq->ring, c->subqs[i].capacity) != 0)
			return BLQ_ENOMEM;
	}
	s->cfg.subqs = s->conf;
	ingress_table(s);
	wrr_quotas(s);
	for (unsigned i = 0; i < s->nmovers; i++) {
		s->movers[i].s = s;
		s->movers[i].index = i;
		s->movers[i].credit = s->subqs[0].quota;
	}
	shape->capacity = (size_t)blq__qos_capacity(&s->cfg);
	shape->ring_cap = s->cfg.egress.capacity;
	shape->streams = s->cfg.egress.streams;
	shape->direct_due = false; /* due items enter their sub-queue */
	return 0;
}

static void qos_free(void *state)
{
	struct blq__qos *s = state;

	if (s == NULL)
		return;
	if (s->subqs != NULL)
		for (unsigned i = 0; i < s->n; i++)
			blq__ring_destroy(&s->subqs[i].ring);
	free(s->subqs);
	free(s->movers);
	free(s->conf);
	free(s);
}

static void qos_wake_all(void *state)
{
	struct blq__qos *s = state;

	blq__ec_notify(&s->ec, 0);
	for (unsigned i = 0; i < s->n; i++)
		blq__ec_notify(&s->subqs[i].space, 0);
}

static bool qos_take_left(void *state, blq__item *out)
{
	struct blq__qos *s = state;
	const blq_metrics_writer *m = s->port.metrics;

	for (unsigned i = 0; i < s->nmovers; i++) {
		if (s->movers[i].has_held) {
			s->movers[i].has_held = false;
			*out = s->movers[i].held;
			/* Relaxed: every other thread has been joined. */
			atomic_fetch_sub_explicit(s->port.staged, 1, memory_order_relaxed);
			return true;
		}
	}
	for (unsigned i = 0; i < s->n; i++) {
		if (blq__ring_pop(&s->subqs[i].ring, out)) {
			atomic_fetch_sub_explicit(s->port.staged, 1, memory_order_relaxed);
			if (m != NULL && m->subq_leak != NULL)
				m->subq_leak(m->ctx, s->port.name, s->subqs[i].name);
			return true;
		}
	}
	return false;
}

unsigned blq_qos_subqs(const blq *q)
{
	const struct blq__qos *s = blq__core_engine_state(q, &blq__qos_engine);

	return s != NULL ? s->n : 0;
}

static int subq_info(const struct blq__qos *s, unsigned i, blq_qos_subq_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (i == BLQ_QOS_EGRESS) {
		out->name = "egress";
		blq__core_rings_usage(s->port.q, &out->size, &out->capacity);
		return 0;
	}
	out->name = s->subqs[i].name;
	out->capacity = s->subqs[i].ring.cap;
	out->size = blq__ring_size(&s->subqs[i].ring);
	out->ingress_weight = blq__qos_iw(&s->conf[i]);
	out->egress_weight = blq__qos_ew(&s->conf[i]);
	return 0;
}

int blq_qos_subq_info(const blq *q, unsigned i, blq_qos_subq_stats *out)
{
	const struct blq__qos *s = blq__core_engine_state(q, &blq__qos_engine);

	if (out == NULL || s == NULL || (i >= s->n && i != BLQ_QOS_EGRESS))
		return BLQ_EINVAL;
	return subq_info(s, i, out);
}

/* Appends ,"qos":{...} to blq_status_json's object: the algorithm, then
 * each sub-queue's and the egress's size and capacity. Returns the length
 * the text needs, like snprintf; "" without QoS. */
static int qos_status_json(const void *state, char *buf, size_t len)
{
	const struct blq__qos *s = state;
	static const char *const algo[] = {"pq", "rr", "wrr"};
	char name[BLQ__NAME_MAX * 6 + 1];
	blq_qos_subq_stats st;
	size_t n = 0;

	subq_info(s, BLQ_QOS_EGRESS, &st);
	n += (size_t)snprintf(buf, len, ",\"qos\":{\"algo\":\"%s\",\"egress\":{\"size\":%zu,"
				       "\"capacity\":%zu},\"subqs\":[",
			      algo[s->cfg.algo], st.size, st.capacity);
	for (unsigned i = 0; i < s->n; i++) {
		subq_info(s, i, &st);
		blq__json_escape(name, sizeof(name), st.name);
		n += (size_t)snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0,
				      "%s{\"name\":\"%s\",\"size\":%zu,\"capacity\":%zu}",
				      i > 0 ? "," : "", name, st.size, st.capacity);
	}
	n += (size_t)snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "]}");
	return (int)n;
}

const blq__engine blq__qos_engine = {
	.name = "qos",
	.check = blq__qos_check,
	.init = qos_init,
	.start = blq__qos_start,
	.classify = blq__qos_classify,
	.admit = blq__qos_admit,
	.wake_all = qos_wake_all,
	.stop = blq__qos_stop,
	.take_left = qos_take_left,
	.status_json = qos_status_json,
	.free = qos_free,
};
