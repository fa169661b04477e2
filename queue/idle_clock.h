/*
 * A worker's idle clock: how long it has waited on an empty queue, which
 * the balancer turns into how busy the pool is (balancer.c).
 *
 * The worker writes it, the balancer's heartbeat reads it at any moment.
 * Kept as two words (a running total and the start of the current wait)
 * the heartbeat could read them half-updated, between the wait's end and
 * its addition to the total: it then saw the wait neither running nor
 * added and counted it at the next beat a second time, as idle time of a
 * worker that was busy; under load the pool shrank below its need. One
 * word that is read and written whole cannot be seen half-updated:
 *   bit 0 clear: not waiting; the word is the total.
 *   bit 0 set:   waiting since t0; the word is (total - t0) with bit 0
 *                set, and the total at time `now` is word - 1 + now.
 * Unsigned arithmetic wraps, so total - t0 needs no sign; bit 0 costs at
 * most a nanosecond per wait.
 */
#ifndef BLQ_QUEUE_IDLE_CLOCK_H
#define BLQ_QUEUE_IDLE_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* The worker begins to wait at `now`. */
static inline void blq__idle_clock_start(_Atomic uint64_t *c, uint64_t now)
{
	uint64_t total = atomic_load_explicit(c, memory_order_relaxed);

	atomic_store_explicit(c, ((total - now) & ~(uint64_t)1) | 1, memory_order_relaxed);
}

/* The wait that began at blq__idle_clock_start ends at `now`. */
static inline void blq__idle_clock_stop(_Atomic uint64_t *c, uint64_t now)
{
	uint64_t w = atomic_load_explicit(c, memory_order_relaxed);

	atomic_store_explicit(c, ((w & ~(uint64_t)1) + now) & ~(uint64_t)1,
			      memory_order_relaxed);
}

/* The total idle time as of `now` (any thread). A clock read before the
 * wait's own start can put it slightly below an earlier reading: callers
 * take differences against the highest total seen. */
static inline uint64_t blq__idle_clock_read(_Atomic uint64_t *c, uint64_t now)
{
	uint64_t w = atomic_load_explicit(c, memory_order_relaxed);

	return (w & 1) ? (w & ~(uint64_t)1) + now : w;
}

/* A thread starts in the slot: no wait runs (the total carries on, as the
 * heartbeat's snapshot of it does). */
static inline void blq__idle_clock_reset(_Atomic uint64_t *c)
{
	uint64_t w = atomic_load_explicit(c, memory_order_relaxed);

	atomic_store_explicit(c, w & ~(uint64_t)1, memory_order_relaxed);
}

#endif
