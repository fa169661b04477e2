/*
 * QoS configuration checks. Each refusal names the field, and the
 * sub-queue by index and name, in the style of queue/config.c:
 *   qos.subqs[1] "medium": capacity: must be > 0
 */
#include <stdio.h>
#include <string.h>

#include "qos_internal.h"

blq_qos_egress blq__qos_egress_defaults(const blq_qos_egress *e)
{
	blq_qos_egress d = *e;

	if (d.capacity == 0)
		d.capacity = BLQ__QOS_EGRESS_CAPACITY;
	if (d.streams == 0)
		d.streams = 1;
	if (d.workers == 0)
		d.workers = 1;
	if (d.idle_threshold == 0)
		d.idle_threshold = 1000;
	if (d.idle_timeout_ns == 0)
		d.idle_timeout_ns = 1000000u;
	return d;
}

uint64_t blq__qos_capacity(const blq_qos_config *c)
{
	uint64_t sum = blq__qos_egress_defaults(&c->egress).capacity;

	for (unsigned i = 0; i < c->nsubqs; i++)
		sum += c->subqs[i].capacity;
	return sum;
}

static int check_evaluator(const blq_qos_evaluator *e, blq_error *err)
{
	switch (e->kind) {
	case BLQ_QOS_EVAL_NONE:
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.evaluator: not set (BLQ_QOS_EVAL_WEIGHTED, "
				      "BLQ_QOS_EVAL_RANDOM or BLQ_QOS_EVAL_CUSTOM)");
	case BLQ_QOS_EVAL_WEIGHTED:
		if (e->def > 100)
			return blq__error_set(err, BLQ_EINVAL,
					      "qos.evaluator: def: must be a percent, 0..100, got %u",
					      e->def);
		return 0;
	case BLQ_QOS_EVAL_RANDOM:
		return 0;
	case BLQ_QOS_EVAL_CUSTOM:
		if (e->fn == NULL)
			return blq__error_set(err, BLQ_EINVAL,
					      "qos.evaluator: fn: is NULL (a custom evaluator needs it)");
		return 0;
	}
	return blq__error_set(err, BLQ_EINVAL, "qos.evaluator: kind: unknown kind %d", (int)e->kind);
}

static int check_egress(const blq_qos_egress *raw, blq_error *err)
{
	blq_qos_egress e = blq__qos_egress_defaults(raw);

	if (e.capacity > BLQ__CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "qos.egress.capacity: must be <= %llu, got %zu",
				      (unsigned long long)BLQ__CAPACITY_LIMIT, e.capacity);
	if (e.streams > e.capacity)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.egress.streams: must be <= qos.egress.capacity (%zu), got %u",
				      e.capacity, e.streams);
	if (e.workers > BLQ__QOS_EGRESS_WORKERS_MAX)
		return blq__error_set(err, BLQ_EINVAL, "qos.egress.workers: must be <= %u, got %u",
				      BLQ__QOS_EGRESS_WORKERS_MAX, e.workers);
	return 0;
}

/* The name a sub-queue goes by: its own, or its index. */
static void subq_name(const blq_qos_config *c, unsigned i, char *buf, size_t cap)
{
	if (c->subqs[i].name != NULL)
		snprintf(buf, cap, "%s", c->subqs[i].name);
	else
		snprintf(buf, cap, "%u", i);
}

static int check_subq(const blq_qos_config *c, unsigned i, blq_error *err)
{
	const blq_qos_subq *s = &c->subqs[i];
	char name[BLQ__NAME_MAX + 1], other[BLQ__NAME_MAX + 1];

	if (s->name != NULL && (s->name[0] == '\0' || strlen(s->name) > BLQ__NAME_MAX))
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs[%u]: name: must be 1..%d bytes (NULL means its index)",
				      i, BLQ__NAME_MAX);
	subq_name(c, i, name, sizeof(name));
	if (strcmp(name, "ingress") == 0 || strcmp(name, "egress") == 0)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs[%u] \"%s\": name: \"ingress\" and \"egress\" are reserved",
				      i, name);
	for (unsigned j = 0; j < i; j++) {
		subq_name(c, j, other, sizeof(other));
		if (strcmp(name, other) == 0)
			return blq__error_set(err, BLQ_EINVAL,
					      "qos.subqs[%u] \"%s\": name: already used by qos.subqs[%u]",
					      i, name, j);
	}
	if (s->capacity == 0)
		return blq__error_set(err, BLQ_EINVAL, "qos.subqs[%u] \"%s\": capacity: must be > 0",
				      i, name);
	if (s->capacity > BLQ__CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs[%u] \"%s\": capacity: must be <= %llu, got %zu", i,
				      name, (unsigned long long)BLQ__CAPACITY_LIMIT, s->capacity);
	if (s->weight == 0 && s->ingress_weight == 0 && s->egress_weight == 0)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs[%u] \"%s\": weight: none set (set weight, or "
				      "ingress_weight and egress_weight)",
				      i, name);
	if (s->weight == 0 && (s->ingress_weight == 0 || s->egress_weight == 0))
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs[%u] \"%s\": %s: not set while %s is (set both, or weight)",
				      i, name, s->ingress_weight == 0 ? "ingress_weight" : "egress_weight",
				      s->ingress_weight == 0 ? "egress_weight" : "ingress_weight");
	return 0;
}

int blq__qos_check(const blq_config *cfg, blq_error *err)
{
	const blq_qos_config *c = cfg->qos;
	int rc;

	if ((unsigned)c->algo > BLQ_QOS_WRR)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.algo: unknown algorithm %d (BLQ_QOS_PQ, BLQ_QOS_RR or "
				      "BLQ_QOS_WRR)",
				      (int)c->algo);
	if ((rc = check_evaluator(&c->evaluator, err)) != 0)
		return rc;
	if ((rc = check_egress(&c->egress, err)) != 0)
		return rc;
	if (c->nsubqs == 0 || c->subqs == NULL)
		return blq__error_set(err, BLQ_EINVAL, "qos.subqs: no sub-queues");
	if (c->nsubqs == 1)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos.subqs: a single sub-queue is senseless (want 2 or more)");
	if (c->nsubqs > BLQ_QOS_SUBQS_MAX)
		return blq__error_set(err, BLQ_EINVAL, "qos.subqs: at most %u sub-queues, got %u",
				      BLQ_QOS_SUBQS_MAX, c->nsubqs);
	for (unsigned i = 0; i < c->nsubqs; i++)
		if ((rc = check_subq(c, i, err)) != 0)
			return rc;
	uint64_t sum = blq__qos_capacity(c);
	if (sum > BLQ__CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL,
				      "qos: sub-queues and egress hold %llu items, above the limit %llu",
				      (unsigned long long)sum, (unsigned long long)BLQ__CAPACITY_LIMIT);
	if (cfg->capacity != 0 && cfg->capacity != sum)
		return blq__error_set(err, BLQ_EINVAL,
				      "capacity: must be 0 or the sum of the QoS sub-queues and egress "
				      "(%llu), got %zu",
				      (unsigned long long)sum, cfg->capacity);
	if (cfg->streams != 0)
		return blq__error_set(err, BLQ_EINVAL,
				      "streams: must be 0 with qos (set qos.egress.streams), got %u",
				      cfg->streams);
	return 0;
}
