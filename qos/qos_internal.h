/*
 * QoS internals, shared by the files of qos/. Not installed.
 *
 * QoS is an engine (queue/shared/engine.h): the core calls it only
 * through blq__qos_engine's table (qos.c), and it sees the queue only
 * through the port it is given (s->port: the queue's staged count, close
 * flags and event counts) and the blq__core_* functions. engine.h is the
 * one header of the core included here; ingress.c also includes
 * admission.h, the core's full-queue policy, which it applies to a full
 * sub-queue.
 */
#ifndef BLQ_QOS_INTERNAL_H
#define BLQ_QOS_INTERNAL_H

#include <blq/qos.h>

#include <pthread.h>
#include <stdalign.h>

#include "engine.h"
#include "errorf.h"
#include "thread.h"

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
	alignas(BLQ__CACHELINE) struct blq__qos *s;
	unsigned index;
	unsigned cur;    /* RR: next sub-queue to look at; WRR: the one whose turn it is */
	uint64_t credit; /* WRR: items the current sub-queue may still give this round */
	uint64_t room;   /* egress slots known to be free */
	uint64_t moved;  /* pushed into the egress, still counted in staged */
	unsigned ring;   /* next egress stream to try (blq__core_push's cursor) */
	/* An item taken out of a sub-queue that a force close caught before
	 * it reached the egress; still counted in staged; the closer's sweep
	 * takes it (take_left, qos.c) after the thread is joined. */
	blq__item held;
	bool has_held;
	pthread_t thread;
	bool joinable;
} blq__mover;

struct blq__qos {
	/* Egress threads sleep here while every sub-queue is empty; producers
	 * wake one after pushing into a sub-queue (admit's *woken, which the
	 * core's blq__handoff wakes). */
	alignas(BLQ__CACHELINE) blq__ec ec;
	_Atomic int stop; /* set by blq__qos_stop: the movers end */

	/* Set at init, read-only after. */
	alignas(BLQ__CACHELINE) blq__port port; /* the queue, as the core shows it */
	blq_qos_config cfg; /* copied; subqs points at conf[] */
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

/* The engine's functions, by file (qos.c holds the table). */
int blq__qos_check(const blq_config *cfg, blq_error *err);      /* config.c */
void blq__qos_classify(void *state, blq__item *it, uint64_t weight); /* ingress.c */
int blq__qos_admit(void *state, blq__cell *c, blq__item *it, enum blq__mode mode,
		   blq__ec **woken);                               /* ingress.c */
int blq__qos_start(void *state, blq_error *err);                /* egress.c */
void blq__qos_stop(void *state);                                /* egress.c */

#endif
