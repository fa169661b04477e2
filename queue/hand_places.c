/*
 * A hand's places: the items a worker took ahead (worker.c, "Taking
 * ahead") stay counted in the lanes' `held` until they leave the hand,
 * so that the capacity is one exact bound over the lanes, the shared
 * rings and the hands together (issue #33; before, a take released its
 * whole hand at once, and a full queue held capacity + BLQ__HAND items
 * per worker).
 *
 * Why not a release per item started: that is a locked instruction per
 * item on held's line, which every producer and worker writes (W1 pays
 * about a tenth of its time per such instruction, docs/benchmarks.md,
 * "Lanes"). So a worker releases its hand's places once, when the hand
 * is over, as its take did before; and in between, the places of the
 * items it has started are room that a producer finding the queue full
 * claims itself:
 * - The worker counts the items that left its hand (started, or
 *   abandoned by a dropping close) in `started` with a plain store per
 *   item (its own line, which it writes per item anyway: w->hand).
 * - `freed` counts those released from held, by a producer's claim (a
 *   CAS raising it, never past `started`: the place passes straight to
 *   the producer's item, held unchanged) or by the worker at the hand's
 *   end (an exchange to `started`, then the subtraction from held). Each
 *   place is released once: both sides move `freed` by a read-modify-
 *   write, and `freed` never passes `started`.
 * - Between its exchange and its subtraction the worker's released
 *   places are counted nowhere as room: the exchange sets
 *   BLQ__FREED_RELEASING, cleared after the subtraction, and a producer
 *   that sees it waits for it as for a refill in transit (lanes.c; its
 *   wait is bounded).
 * - A producer calls the queue full only when no worker's `started` or
 *   `freed` moved between two looks (the sum of both over the workers,
 *   each monotonic, is the same twice) and held's word did not move
 *   either: a start between its looks is room it looked for too early.
 * - After the subtraction the worker wakes producers waiting for room,
 *   as after a take (its subtraction is the StoreLoad barrier). Without
 *   it a producer could sleep for good: the wake-up rule counts held
 *   (the hands' places in it, so no take walks the workers' slots), and
 *   the hand's items may be the last the workers take; and the wake
 *   after a hand's take does not cover its first item's place, whose
 *   `started` store its load of the waiters may pass (a store buffer:
 *   models/hands.pml, NO_RELEASE_WAKE, fails only with it modelled). A
 *   producer asleep next to a started place waits for the hand's end,
 *   as producers wait for half the queue to drain anyway.
 * - The thread that takes a given-up worker's hand back (handback.c)
 *   releases the places of the items it took before it puts them back
 *   through the admission like any producer; the worker's `started`
 *   never counted them.
 * - blq__lanes_items (blq_size) leaves the hands' places out: held less
 *   the credit, the unstarted items in hands (counted in blq_size by
 *   w->hand) and the started places not yet released.
 * Queues without lanes (QoS) release at the take, as before: their hands
 * are outside the sub-queues' bounds.
 */
#include "internal.h"

void blq__hand_places_release(blq *q, blq__worker *w)
{
	blq__hand *h = &w->h;

	h->placed = false;
	uint64_t was = atomic_exchange_explicit(&w->freed, h->started | BLQ__FREED_RELEASING,
						memory_order_seq_cst);

	if (h->started > was)
		atomic_fetch_sub_explicit(&q->lanes.held, h->started - was, memory_order_seq_cst);
	/* Release: a claimer that sees the bit gone sees held's new count. */
	atomic_store_explicit(&w->freed, h->started, memory_order_release);
	blq__space_wake(q);
}

uint64_t blq__hand_places_claim(blq *q, uint64_t want, uint64_t *sum, bool *releasing)
{
	uint64_t got = 0, s = 0;
	unsigned n = blq__slots(q);

	*releasing = false;
	for (unsigned i = 0; i < n; i++) {
		blq__worker *w = &q->workers[i];
		/* freed first: started only grows, so started - freed read in
		 * this order never counts a place that was not started. */
		uint64_t f = atomic_load_explicit(&w->freed, memory_order_acquire);
		uint64_t st = atomic_load_explicit(&w->started, memory_order_relaxed);

		while (got < want && (f & BLQ__FREED_RELEASING) == 0 && st > f) {
			uint64_t k = st - f < want - got ? st - f : want - got;

			/* Acquire: as a credit's take (lanes.c take_credit). */
			if (atomic_compare_exchange_weak_explicit(&w->freed, &f, f + k,
								  memory_order_acquire,
								  memory_order_acquire)) {
				got += k;
				f += k;
			}
		}
		if (f & BLQ__FREED_RELEASING)
			*releasing = true;
		s += (f & ~BLQ__FREED_RELEASING) + st;
	}
	*sum = s;
	return got;
}

uint64_t blq__hand_places(const blq *q)
{
	uint64_t n = 0;
	unsigned slots = blq__slots(q);

	for (unsigned i = 0; i < slots; i++) {
		const blq__worker *w = &q->workers[i];
		uint64_t f = atomic_load_explicit(&w->freed, memory_order_relaxed) &
			     ~BLQ__FREED_RELEASING;
		uint64_t st = atomic_load_explicit(&w->started, memory_order_relaxed);

		n += (atomic_load_explicit(&w->hand, memory_order_relaxed) & ~BLQ__HAND_GONE) +
		     (st > f ? st - f : 0);
	}
	return n;
}
