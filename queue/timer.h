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
	blq__timed *heap;
	size_t n, cap, limit; /* held, allocated, timer_capacity */
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
