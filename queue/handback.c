/*
 * Handing back: the items a worker took ahead (its hand, worker.c) go back
 * to the queue when the worker is given up inside a callback, so that no
 * item waits for a callback that is not its own (issue #33: with 2
 * workers, a 20 ms limit and 2 callbacks stuck for 300 ms, 200 instant
 * items behind them finished 600 ms after their enqueue, in the hands of
 * the stuck threads).
 *
 * Design
 * - The hand lives in the worker's slot (blq__worker.h), not on its
 *   stack. The worker alone writes it while it owns it: a take fills it,
 *   and the worker claims each next item with a plain increment and a
 *   relaxed store of the count (w->hand, for blq_size): no locked
 *   instruction per item.
 * - The handshake is the attempt's busy word (worker.c, watchdog.c), which
 *   both sides already pay for on an attempt with a time limit: the
 *   worker publishes the limit with a seq_cst store before the callback
 *   and takes it back with an exchange after it; the thread that gives
 *   the attempt up (the watchdog, or a close past its limit) sets
 *   BLQ__BUSY_GIVEN_UP with a compare-and-swap against the exact value it
 *   saw. Only the thread whose own CAS succeeded takes the hand over
 *   (blq__hand_take), at once, without a lock:
 *   - what it reads is the worker's: the CAS read the value the worker's
 *     seq_cst store (a release) wrote, so the worker's writes to the hand
 *     before that store (the take, every claim) happen before the
 *     thief's reads; and from that store to its exchange the worker does
 *     not touch the hand (it is inside the callback);
 *   - the worker learns it: the exchange and the CAS are read-modify-
 *     writes of one word, so the exchange comes after the CAS in the
 *     word's order and returns the bit. The worker then waits
 *     (blq__hand_settle: a few loads, the thief is copying 16 items at
 *     most) for w->hand to say BLQ__HAND_GONE, which the thief stores
 *     (release) after its last read, with the count of the items it left
 *     to the worker; the worker's acquire load of it orders the thief's
 *     reads before the worker's next writes to the hand.
 *   A given-up attempt that returns before the thief's CAS is not given
 *   up (the CAS fails on the word the exchange zeroed), and keeps its
 *   hand. Two thieves (the watchdog, a closer) cannot both win: one CAS
 *   per attempt succeeds.
 * - Not an attempt without a limit: its busy word is taken back with a
 *   relaxed store, not an exchange (an exchange per item would be a
 *   locked instruction on every item of every queue), so the worker could
 *   not learn of a takeover. Only a close past its limit gives such an
 *   attempt up, and the queue is then dropping: the hand stays with its
 *   thread, which abandons it (to the DLQ, or lost) when its callback
 *   returns, as before. Both sides tell the two kinds apart by the busy
 *   value (BLQ__BUSY_NO_LIMIT).
 * - Counting: the thief counts the items in q->staged before it tells the
 *   worker (which uncounts them from w->hand), and then releases their
 *   places in the lanes' held (hand_places.c), so blq_size over-counts
 *   them for a moment and never under-counts, and draining workers of a
 *   graceful close do not exit while they are on their way back (the
 *   rule of q->staged, internal.h).
 * - Where they go (put_back, the one place to re-point): the timer's due
 *   ring when the queue has one (workers take from it first: the front of
 *   the work), else the rings (behind what is queued there), through the
 *   push functions, ending with blq__handoff (uncount, wake a worker). A
 *   dropping queue (Soft, Hard) abandons them as it abandons the queued
 *   items. With no room (producers refilled the rings meanwhile), the
 *   rest waits in the thief's backlog: the watchdog places it at its next
 *   look, one millisecond later (watchdog.c), without holding anything
 *   else up. Nothing is dropped, doubled or run twice: each item is in
 *   exactly one place (the worker's hand, the backlog, a ring) at a time,
 *   and it moves by a copy that the one owner makes.
 * - Bound: the watchdog's backlog holds BLQ__HAND items per worker slot.
 *   A takeover it has no room for leaves the rest to the worker (the
 *   count in BLQ__HAND_GONE's low bits), which runs them after its
 *   callback, as before this file existed.
 */
#include <sched.h>
#include <string.h>

#include "internal.h"

void blq__hand_take(blq *q, blq__worker *w, blq__backlog *b)
{
	/* Plain reads: ordered after the worker's writes by the CAS that gave
	 * the attempt up (above). */
	const blq__hand *h = &w->h;
	unsigned rest = h->n - h->next;
	unsigned room = b->cap - b->n;
	unsigned m = rest < room ? rest : room;

	if (m > 0) {
		memcpy(&b->it[b->n], &h->it[h->next], m * sizeof(blq__item));
		b->n += m;
		/* Counted here before the worker uncounts them (q->staged). */
		atomic_fetch_add_explicit(&q->staged, m, memory_order_seq_cst);
		/* Their places in held (hand_places.c) go: they come back
		 * through the admission like any producer's items, or go to
		 * the due ring, outside it. After staged counts them, so
		 * blq_size never under-counts. */
		if (h->placed) {
			atomic_fetch_sub_explicit(&q->lanes.held, m, memory_order_seq_cst);
			blq__space_wake(q);
		}
	}
	/* Release: our reads of the hand come before the worker's next writes
	 * (its acquire in blq__hand_settle). */
	atomic_store_explicit(&w->hand, BLQ__HAND_GONE | (rest - m), memory_order_release);
}

void blq__hand_settle(blq__worker *w)
{
	unsigned v;

	/* The thief stores BLQ__HAND_GONE right after its CAS and a copy of
	 * 16 items at most: yield only if it was preempted in between. */
	while (((v = atomic_load_explicit(&w->hand, memory_order_acquire)) & BLQ__HAND_GONE) == 0)
		sched_yield();
	unsigned left = v & ~BLQ__HAND_GONE;

	w->h.next = w->h.n - left; /* the thief took the first ones */
	atomic_store_explicit(&w->hand, left, memory_order_relaxed);
}

/* The front of the work: the due ring, which workers take from first,
 * else the rings. False: no room. The one place to re-point when the
 * take path changes. */
static bool put_back(blq *q, const blq__item *it)
{
	blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);

	if (due != NULL && blq__ring_push(due, it))
		return true;
	return blq__push_any(q, it);
}

bool blq__backlog_flush(blq *q, blq__backlog *b, bool drop)
{
	unsigned done = 0;

	if (b->n == 0)
		return true;
	if (drop || atomic_load_explicit(&q->forced, memory_order_acquire) != 0) {
		/* Dropping: as the items still queued (the closer's cell, shared). */
		blq__cell *c = &q->cells[BLQ__CELL_CLOSER];

		for (; done < b->n; done++)
			blq__abandon(q, c, &b->it[done]);
		blq__handoff(&q->port, &q->staged, -(uint64_t)done, NULL);
	} else {
		while (done < b->n && put_back(q, &b->it[done]))
			done++;
		if (done > 0) /* after the pushes: uncount, wake a worker */
			blq__handoff(&q->port, &q->staged, -(uint64_t)done, &q->items_ec);
	}
	memmove(b->it, b->it + done, (b->n - done) * sizeof(blq__item));
	b->n -= done;
	return b->n == 0;
}
