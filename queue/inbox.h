/*
 * A worker's retry inbox: where its retries enter the timer without the
 * timer's mutex. See inbox.c for the design.
 */
#ifndef BLQ_QUEUE_INBOX_H
#define BLQ_QUEUE_INBOX_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "item_ring.h"
#include "timer.h"

#define BLQ__INBOX_CAP 256u

/* Single producer (its worker), single consumer at a time: whoever holds
 * the timer's mutex (its thread, a worker serving due items), or the
 * closer's sweep once the workers and the timer thread are joined. */
typedef struct blq__inbox {
	/* The worker's line. `in`: items it ever put in; in - out of them
	 * are staged (in the inbox, or in the timer after the drain). */
	alignas(BLQ__CACHELINE) _Atomic uint64_t tail;
	_Atomic uint64_t in;
	/* The timer's line. `out`: of `in`, delivered or abandoned. */
	alignas(BLQ__CACHELINE) _Atomic uint64_t head;
	_Atomic uint64_t out;
	blq__timed slot[BLQ__INBOX_CAP];
} blq__inbox;

#endif
