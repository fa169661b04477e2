/*
 * The full-queue admission policy (queue/admission.c), for the engines:
 * what becomes of a new item whose first push found no room. Each engine
 * keeps that first push inline and calls blq__admit_full only when it
 * failed. Not installed.
 */
#ifndef BLQ_QUEUE_ADMISSION_H
#define BLQ_QUEUE_ADMISSION_H

#include <stdbool.h>

#include "engine.h"

/* Where the engine holds new items, as the policy sees it; ctx is the
 * engine's (blq__admission.ctx). Called on the slow path only. */
typedef struct blq__admit_ops {
	/* Pushes the item where it goes (counted as the engine counts it
	 * there); true when it went in. Lock-free; concurrent callers. */
	bool (*push)(void *ctx, const blq__item *it);
	/* Takes out the oldest item of that place, a front leak's victim,
	 * uncounted from whatever counted it there; false when none. */
	bool (*pop_oldest)(void *ctx, blq__item *out);
	/* Hands an item to the DLQ as a leak in direction `dir`, counted on
	 * c, with any metrics event of the engine's own. */
	void (*leak)(void *ctx, blq__cell *c, const blq__item *it, enum blq_leak_dir dir);
} blq__admit_ops;

/* One place that can be full: the rings, or one QoS sub-queue. */
typedef struct blq__admission {
	const blq__admit_ops *ops;
	void *ctx;
	/* The queue as the engine sees it: leaky, balanced (and q for the
	 * hint), leak_direction, front_leak_attempts, the blocked count, the
	 * closed and forced flags, the looks' state. */
	const blq__port *port;
	blq__ec *space; /* a waiter sleeps here until room is freed */
	/* Who takes what push placed (the workers' items_ec): a BLQ__TIMER
	 * waiter wakes one before each sleep, its pushes so far having woken
	 * nobody. NULL: no BLQ__TIMER admission here. */
	blq__ec *takers;
} blq__admission;

/* The item found no room at a's place (the engine's first push failed):
 * hint the balancer; on a leaky queue leak (front, then rear); else
 * BLQ__TRY refuses with BLQ_EFULL and BLQ__BLOCK / BLQ__TIMER wait for
 * room (with `looks`: looks before each sleep: spin.h) until it fits or
 * they must give up (BLQ_ECLOSED: on close, BLQ__TIMER only on a force).
 * 0 with *pushed true (in) or false (leaked); BLQ_EFULL or BLQ_ECLOSED:
 * the caller still holds the item. No lock (but the balancer's trylock),
 * no allocation; a system call only to sleep or yield. */
int blq__admit_full(const blq__admission *a, blq__cell *c, const blq__item *it,
		    enum blq__mode mode, bool looks, bool *pushed);

#endif
