/*
 * The timer: delayed items and retries waiting for their backoff, in a
 * set ordered by due time (timed_set.h), serviced by one thread that
 * moves due items into the rings. See timer.c for the design.
 */
#ifndef BLQ_QUEUE_TIMER_H
#define BLQ_QUEUE_TIMER_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "item_ring.h"
#include "timed_set.h"

/* How late the thread may deliver an item that waits `span`: an eighth of
 * it, at most 200 us, so items queued just behind the head come due in the
 * same wake-up instead of one wake-up each. */
static inline uint64_t blq__timer_slack(uint64_t span)
{
	return span / 8 < 200000u ? span / 8 : 200000u;
}

/* While the workers serve the due items themselves, the thread's own
 * wake-ups (the fallback) come this many times its slack late. */
#define BLQ__TIMER_RELAXED 4u

typedef struct blq__timer {
	pthread_mutex_t mu;  /* guards the fields that are not atomic */
	pthread_cond_t cond; /* the thread: new earliest item, kick, stop */
	pthread_cond_t room; /* producers waiting for room */
	/* The waiting items, in due order (timed_set.h). */
	blq__timed_set set;
	/* Of held, those added through blq__timer_add, so counted in
	 * q->staged (blq__ready tells them from the QoS sub-queues'). */
	_Atomic uint64_t held_shared;
	uint64_t order;
	unsigned room_waiters; /* producers waiting for room in `held` */
	/* Read by every retry: a line written once per sleep, wake-up or
	 * batch, away from the fields above, written per item.
	 * When the thread sleeps until, on the queue's clock: UINT64_MAX with
	 * nothing to wait for, 0 while awake (it drains the inboxes before
	 * it sleeps again). An inbox add due before it wakes the thread. */
	alignas(BLQ__CACHELINE) _Atomic uint64_t sleep_until;
	/* The thread runs (started on the first item, until stop): written
	 * under mu; workers read it without, to use their inboxes. */
	_Atomic bool open;
	/* When a retrying worker should serve the due items itself
	 * (blq__timer_assist): the head's due time plus a quarter of its
	 * slack; UINT64_MAX with no head, or no due ring. Written under mu. */
	_Atomic uint64_t assist_at;
	/* The workers served due items since the thread's previous wake-up
	 * and nothing was late at its last: it sleeps BLQ__TIMER_RELAXED
	 * times its slack past the head (blq__timer_wake_slack). Written
	 * under mu. */
	_Atomic bool relaxed;
	/* Items in the lane, the heap and the workers' inboxes: the count
	 * timer_capacity bounds, and blq_stats' `delayed`. Reserved with a
	 * CAS (blq__timer_reserve) before an item enters, so the inboxes'
	 * lock-free adds and the locked ones share one exact bound; lowered
	 * under mu when the thread or a worker takes a batch (or the sweep an
	 * item). Its
	 * own line: every add's CAS would otherwise take the line the thread
	 * writes per item (the lane's count, the order). */
	alignas(BLQ__CACHELINE) _Atomic uint64_t held;
	size_t limit; /* timer_capacity: beside the count it bounds */
	alignas(BLQ__CACHELINE) bool stop;
	bool assisted; /* a worker served due items since the thread woke */
	/* The thread is pushing a batch outside mu: workers do not serve
	 * meanwhile, or later items would enter the due ring before it. */
	bool delivering;
	/* blq_cancel asked the thread to take the cancelled items out
	 * (blq__timer_sweep_cancelled): written under mu. */
	bool cancels;
	bool ready; /* mu and the conds are initialised */
	pthread_t thread;
} blq__timer;

/* How late the thread's own wake-up may come for an item that waits
 * `span`: its slack, longer while the workers serve (`relaxed`). */
static inline uint64_t blq__timer_wake_slack(const blq__timer *t, uint64_t span)
{
	uint64_t s = blq__timer_slack(span);

	return atomic_load_explicit(&t->relaxed, memory_order_relaxed) ? s * BLQ__TIMER_RELAXED : s;
}

#endif
