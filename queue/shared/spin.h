/*
 * How a thread waits a little before it sleeps on an event count (ec.h),
 * and when it must not: the yielding looks of the waits in blq (a worker
 * on empty rings, a batch's producer and the timer thread on full ones,
 * QoS's movers and ingress; a single producer on full rings sleeps at once,
 * queue/engine_rings.c says why).
 * Shared by the core and the engines. Not installed.
 *
 * Why yield at all: with more threads than cores (W1: 2 producers and 2
 * workers on 2 cores) the peer a thread waits for is usually runnable but
 * not running, and sched_yield hands it our CPU at once, with no futex
 * wake-up to pay later: measured, W1 makes ~4,000 such looks and 60 futex
 * calls for 2,000,000 items, and without the looks it is 1.4x slower.
 *
 * Why not always: when processes outside the queue want the CPU too, a
 * yield hands it to one of them for its whole slice, while the ring sits
 * still. Measured with a timing sched_yield interposer on W1 (2 vCPUs,
 * kernel 6.18's EEVDF scheduler): on a quiet host 98% of yields return
 * within 0.5 ms (the peer fills or drains the ring and waits in turn); with
 * two CPU-bound threads beside it (W1-NOISY) 85% take 1 to 8 ms, and blq
 * ran 15x slower than on the quiet host. A sleeper does better there: its
 * wake-up puts it ahead of the CPU-bound threads.
 *
 * So every yield is timed, and one that took longer than BLQ__STOLEN_NS
 * (0.5 ms) counts as stolen: the wait that made it stops looking and sleeps (so a
 * wait loses one slice at most, not one per look), and the queue keeps a
 * moving average of stolen yields (1/8 weight per yield, shared by its
 * threads, so all learn from each). Above a quarter the host counts as
 * busy: waits skip the looks and sleep at once, except one probe, a single
 * yield, per BLQ__PROBE_NS for the whole queue, which finds out when the
 * host is quiet again (a probe that comes back at once halves the
 * average: two in a row end the busy spell). A quiet host's odd stolen
 * yield (the hypervisor's, or a peer's long turn: under 2 in 100 on W1)
 * does not trip it. The clock is read only around a yield and, while
 * busy, once per wait: slow paths.
 * Races on the average or the probe time lose an update at worst: they
 * are hints.
 */
#ifndef BLQ_QUEUE_SPIN_H
#define BLQ_QUEUE_SPIN_H

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cacheline.h"
#include "monotonic.h"

/* Looks (each a sched_yield) a thread makes before it sleeps on an empty
 * or full ring, on a quiet host. */
#define BLQ__SPIN_ROUNDS 16u
/* A yield longer than this ran someone else's whole slice: EEVDF's base
 * slice is 0.75 ms x (1 + log2 CPUs), so 0.75 ms on one CPU, and a quiet
 * W1 here had under 2% of its yields above 0.5 ms. */
#define BLQ__STOLEN_NS 500000u
/* The moving average of stolen yields is kept in 1/1024ths; above this,
 * the host counts as busy. */
#define BLQ__STOLEN_ONE 1024u
#define BLQ__STOLEN_BUSY (BLQ__STOLEN_ONE / 4)
/* While busy, a queue's waits probe (yield once) this often at most. */
#define BLQ__PROBE_NS 100000000u

typedef struct blq__spin {
	/* On a line of its own: written on the slow path only, read by
	 * every wait. */
	alignas(BLQ__CACHELINE) _Atomic uint32_t stolen; /* of BLQ__STOLEN_ONE */
	_Atomic uint64_t probe_at; /* busy: the next probe's earliest time */
} blq__spin;

/* True while the host looks busy: the waits then skip their looks. */
static inline bool blq__spin_busy(const blq__spin *s)
{
	return atomic_load_explicit(&s->stolen, memory_order_relaxed) > BLQ__STOLEN_BUSY;
}

/* How many yielding looks this wait may take: BLQ__SPIN_ROUNDS on a quiet
 * host; on a busy one none, or one when it is time to probe. */
static inline unsigned blq__spin_rounds(blq__spin *s)
{
	if (!blq__spin_busy(s))
		return BLQ__SPIN_ROUNDS;
	uint64_t at = atomic_load_explicit(&s->probe_at, memory_order_relaxed);
	uint64_t now = blq__monotonic_ns();

	return now >= at && atomic_compare_exchange_strong_explicit(&s->probe_at, &at,
								    now + BLQ__PROBE_NS,
								    memory_order_relaxed,
								    memory_order_relaxed)
		       ? 1
		       : 0;
}

/* Moves the average by one yield, stolen or not. */
static inline void blq__spin_note(blq__spin *s, bool stolen)
{
	uint32_t old = atomic_load_explicit(&s->stolen, memory_order_relaxed), v = old;

	if (stolen)
		v = v - v / 8 + BLQ__STOLEN_ONE / 8;
	else
		v = v > BLQ__STOLEN_BUSY ? v / 2 : v - v / 8; /* a probe: half */
	/* A quiet host's average rests (below 8 it no longer moves): no
	 * store then, so the line stays shared by every wait's read. */
	if (v != old)
		atomic_store_explicit(&s->stolen, v, memory_order_relaxed);
}

/* One look's yield, timed. When it was stolen, *rounds becomes 0: the
 * caller's look after it is its last, then it sleeps. */
static inline void blq__spin_yield(blq__spin *s, unsigned *rounds)
{
	uint64_t t0 = blq__monotonic_ns();

	sched_yield();
	bool stolen = blq__monotonic_ns() - t0 > BLQ__STOLEN_NS;

	blq__spin_note(s, stolen);
	if (stolen)
		*rounds = 0;
}

#endif
