/*
 * The timer: delayed items and retries waiting for their backoff, in a
 * min-heap by due time, serviced by one thread that moves due items into
 * the rings. See timer.c for the design.
 */
#ifndef BLQ_QUEUE_TIMER_H
#define BLQ_QUEUE_TIMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

typedef struct blq__timed {
	uint64_t due;   /* on the queue's clock */
	uint64_t order; /* insertion order: equal due times stay FIFO */
	uint64_t since; /* when it entered the timer (metrics) */
	blq__item item;
} blq__timed;

typedef struct blq__timer {
	pthread_mutex_t mu;  /* guards everything below */
	pthread_cond_t cond; /* the thread: new earliest item, kick, stop */
	pthread_cond_t room; /* producers waiting for room */
	/* Min-heap by (due, order), for items that arrive out of due order. */
	blq__timed *heap;
	size_t hn, hcap;
	/* The lane: a FIFO ring, lane[(lhead + i) % lcap], for items that
	 * arrive in due order (no earlier than the lane's last), which is most
	 * of them: one delay interval, one backoff step. O(1) instead of a
	 * heap's log n moves of a 96-byte entry. */
	blq__timed *lane;
	size_t lhead, ln, lcap;
	size_t n, limit; /* held in both, timer_capacity */
	/* n, readable without the lock, and counted like q->staged (of which
	 * it is a part): raised at the add, lowered after the delivery. */
	_Atomic uint64_t held;
	uint64_t order;
	unsigned room_waiters;
	bool started; /* the thread runs (started on the first item) */
	bool stop;
	bool ready; /* mu and the conds are initialised */
	pthread_t thread;
} blq__timer;

#endif
