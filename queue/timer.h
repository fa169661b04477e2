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

/* Where a timed item came in: a worker's inbox (its index), or here. */
#define BLQ__TIMER_SHARED UINT32_MAX

typedef struct blq__timed {
	uint64_t due;   /* on the queue's clock */
	uint64_t order; /* insertion order: equal due times stay FIFO */
	uint64_t since; /* when it entered the timer (metrics) */
	uint32_t origin; /* BLQ__TIMER_SHARED, or the worker whose inbox */
	blq__item item;
} blq__timed;

/* How late the thread may deliver an item that waits `span`: an eighth of
 * it, at most 200 us, so items queued just behind the head come due in the
 * same wake-up instead of one wake-up each. */
static inline uint64_t blq__timer_slack(uint64_t span)
{
	return span / 8 < 200000u ? span / 8 : 200000u;
}

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
	/* Items in the lane, the heap and the workers' inboxes: the count
	 * timer_capacity bounds, and blq_stats' `delayed`. Reserved with a
	 * CAS (blq__timer_reserve) before an item enters, so the inboxes'
	 * lock-free adds and the locked ones share one exact bound; lowered
	 * under mu when the thread takes a batch (or the sweep an item). */
	_Atomic uint64_t held;
	/* Of held, those added through blq__timer_add, so counted in
	 * q->staged (blq__ready tells them from the QoS sub-queues'). */
	_Atomic uint64_t held_shared;
	uint64_t order;
	unsigned room_waiters; /* producers waiting for room in `held` */
	/* When the thread sleeps until, on the queue's clock: UINT64_MAX with
	 * nothing to wait for, 0 while awake (it drains the inboxes before
	 * it sleeps again). An inbox add due before it wakes the thread. */
	_Atomic uint64_t sleep_until;
	/* The thread runs (started on the first item, until stop): written
	 * under mu; workers read it without, to use their inboxes. */
	_Atomic bool open;
	bool stop;
	bool ready; /* mu and the conds are initialised */
	pthread_t thread;
} blq__timer;

#endif
