/*
 * QoS internals, shared by the files of qos/. Not installed. The core
 * calls into QoS only through the blq__qos_* hooks declared in
 * queue/internal.h; each does nothing on a queue without QoS.
 */
#ifndef BLQ_QOS_INTERNAL_H
#define BLQ_QOS_INTERNAL_H

#include <blq/qos.h>

#include "../queue/internal.h"

#define BLQ__QOS_EGRESS_CAPACITY 64u
#define BLQ__QOS_EGRESS_WORKERS_MAX 64u
/* An egress thread gives back the staged count of the items it moved and
 * wakes the workers at least every this many moves (egress.c). */
#define BLQ__QOS_BATCH 16u

typedef struct blq__subq {
	blq__ring ring;
	/* Producers blocked on this full sub-queue (no DLQ) sleep here; the
	 * egress wakes them all when it has drained the sub-queue to half. */
	alignas(BLQ__CACHELINE) blq__ec space;
	uint64_t quota; /* WRR: items per round */
	char name[BLQ__NAME_MAX + 1];
} blq__subq;

/* An egress thread. Its scheduling state is its own: no shared line. */
typedef struct blq__mover {
	alignas(BLQ__CACHELINE) blq *q;
	unsigned index;
	unsigned cur;    /* RR: next sub-queue to look at; WRR: the one whose turn it is */
	uint64_t credit; /* WRR: items the current sub-queue may still give this round */
	uint64_t room;   /* egress slots known to be free */
	uint64_t moved;  /* pushed into the egress, still counted in staged */
	unsigned ring;   /* next egress stream to try */
	/* An item taken out of a sub-queue that a force close caught before
	 * it reached the egress; still counted in staged; the closer's sweep
	 * takes it (blq__qos_take_any) after the thread is joined. */
	blq__item held;
	bool has_held;
	pthread_t thread;
	bool joinable;
} blq__mover;

struct blq__qos {
	/* Egress threads sleep here while every sub-queue is empty; producers
	 * wake one after pushing into a sub-queue (enqueue.c, leave). */
	alignas(BLQ__CACHELINE) blq__ec ec;
	_Atomic int stop; /* set by blq__qos_stop: the movers end */

	alignas(BLQ__CACHELINE) blq_qos_config cfg; /* copied; subqs points at conf[] */
	blq_qos_subq *conf; /* the copied sub-queue configs; names point at subqs[i].name */
	unsigned n;
	blq__subq *subqs;
	uint8_t ingress[100]; /* percent - 1 -> sub-queue index */
	unsigned nmovers;
	blq__mover *movers;
};

/* The weights after the original's rules (weight fills an unset ingress or
 * egress weight). */
static inline uint64_t blq__qos_iw(const blq_qos_subq *s)
{
	return s->ingress_weight != 0 ? s->ingress_weight : s->weight;
}

static inline uint64_t blq__qos_ew(const blq_qos_subq *s)
{
	return s->egress_weight != 0 ? s->egress_weight : s->weight;
}

/* The egress config with the defaults filled in. */
blq_qos_egress blq__qos_egress_defaults(const blq_qos_egress *e);

/* The config's sum of sub-queue and egress capacities (after defaults). */
uint64_t blq__qos_capacity(const blq_qos_config *c);

#endif
