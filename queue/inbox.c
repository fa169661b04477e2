/*
 * Retry inboxes: how a worker hands a retry to the timer without its mutex.
 *
 * Why
 * - A retry that waits for its backoff used to take the timer's mutex and
 *   raise two shared counters (the timer's count and q->staged): four
 *   locked instructions on lines the other workers and the timer thread
 *   write too, and a worker could sleep on the mutex while the timer
 *   thread, holding it, was preempted. On RETRY (10% of W1's items fail
 *   once) that path was the workers' largest cost after the task itself.
 *
 * Design
 * - Each worker owns an inbox (inbox.h), allocated at its first retry:
 *   Concurrency Kit's ck_ring in SPSC mode, holding timed entries by value
 *   (CK_RING_PROTOTYPE). SPSC fits because there is one producer, the
 *   worker (only it retries its items), and one consumer at a time:
 *   whoever holds the timer's mutex, or the closer's sweep after the
 *   joins; the mutex (or the join) orders one consumer after the last.
 *   ck gives the ring's ordering (an entry is written before the tail
 *   publishes it, and read out before the head hands its slot back) and
 *   its layout (head and tail on lines of their own); this file keeps the
 *   reservation, the accounting and the wake-up around it.
 * - The worker reserves a slot (ck's reservation is only a pointer, so a
 *   full timer gives it up for free), fills it and commits; the timer
 *   thread moves the entries into its lane or heap under its mutex when it
 *   wakes (timer.c, drain), before it decides how long to sleep, and so
 *   does a worker serving due items (blq__timer_assist). The drain reads
 *   each inbox's head in place to merge them (inbox.h, blq__inbox_head:
 *   ck_ring has no peek), and takes an entry only once the timer has it.
 * - Capacity stays exact: the worker reserves its place in the timer's
 *   count (`held`, a CAS that never takes it past timer_capacity), like
 *   the locked path does. A full inbox or a full timer takes the locked
 *   path instead, which decides (and starts the thread the first time).
 * - Any due order: the drain merges the inboxes by their heads and puts
 *   each entry in the lane or the heap as blq__timer_add would, so jitter
 *   or a custom backoff costs heap operations, not correctness.
 * - Waking the thread: it publishes when it will next wake (sleep_until)
 *   before it looks at the inboxes a last time, and a worker publishes its
 *   entry before it reads sleep_until, each with a full barrier between
 *   (Dekker): either the thread sees the entry, or the worker sees that
 *   the thread would wake too late for it and signals it. An entry due no
 *   earlier than the thread's wake-up minus its own slack (the common case
 *   of one backoff step) costs no system call.
 * - Accounting: instead of q->staged, the items a worker put in are
 *   counted in its inbox (`in`, a plain store on its own line) and, once
 *   delivered or abandoned, in `out` (the timer's line). blq__staged adds
 *   in - out of every inbox to q->staged, reading each `out` before its
 *   `in` (as blq__inflight reads `left` before `entered`): it may count an
 *   item twice for a moment, never miss one. The close protocol holds as
 *   with q->staged: `out` is raised only after the item is in a ring. `in`
 *   is raised before the reservation, so blq_stats never shows an item in
 *   `delayed` that `size` lacks.
 * - Order: entries take their insertion order (ties on the due time) when
 *   drained, not when added.
 */
#include <stdlib.h>
#include <string.h>

#include "inbox.h"
#include "internal.h"

static blq__inbox *own_inbox(blq__worker *w)
{
	blq__inbox *b = atomic_load_explicit(&w->inbox, memory_order_relaxed);

	if (b == NULL) {
		/* Once per worker slot, at its first retry with a delay. */
		b = aligned_alloc(BLQ__CACHELINE, sizeof(*b));
		if (b == NULL)
			return NULL;
		memset(b, 0, offsetof(blq__inbox, slot));
		ck_ring_init(&b->ring, BLQ__INBOX_SLOTS);
		atomic_store_explicit(&w->inbox, b, memory_order_release);
	}
	return b;
}

/* Wakes the timer thread for an entry due before it would wake, less
 * the slack it would allow this entry (blq__timer_wake_slack). */
static void kick_if_late(blq *q, uint64_t due, uint64_t delay)
{
	blq__timer *t = &q->timer;

	/* StoreLoad: our commit before its sleep_until (see the design). */
	blq__full_fence();
	uint64_t wake = atomic_load_explicit(&t->sleep_until, memory_order_relaxed);
	if (wake != 0 && blq__sat_add(due, blq__timer_wake_slack(t, delay)) < wake) {
		pthread_mutex_lock(&t->mu);
		pthread_cond_signal(&t->cond);
		pthread_mutex_unlock(&t->mu);
	}
}

bool blq__inbox_add(blq *q, blq__worker *w, const blq__item *it, uint64_t now, uint64_t delay)
{
	blq__timer *t = &q->timer;

	if (!atomic_load_explicit(&t->open, memory_order_acquire))
		return false; /* no thread yet (the locked path starts it) */
	blq__inbox *b = own_inbox(w);
	if (b == NULL)
		return false;
	/* A slot first (NULL when full): ck's reservation is only a pointer,
	 * so giving it up below costs nothing. */
	blq__timed *slot = ck_ring_enqueue_reserve_spsc_blq_timed(&b->ring, b->slot);
	if (slot == NULL)
		return false;
	/* Staged before it shows in `held` (blq_stats: delayed <= size): the
	 * reservation's CAS is a release, so this store stays before it. We
	 * are the only writer of `in`, so the undo is a store too. */
	uint64_t in = atomic_load_explicit(&b->in, memory_order_relaxed);
	atomic_store_explicit(&b->in, in + 1, memory_order_relaxed);
	if (!blq__timer_reserve(t)) {
		atomic_store_explicit(&b->in, in, memory_order_relaxed);
		return false;
	}
	uint64_t due = blq__sat_add(now, delay);
	*slot = (blq__timed){.due = due, .since = now, .origin = w->index, .item = *it};
	/* Published only once `held` counts it: whoever takes it out lowers
	 * `held` for it. */
	ck_ring_enqueue_commit_spsc(&b->ring);
	kick_if_late(q, due, delay);
	return true;
}

uint64_t blq__staged(const blq *q)
{
	uint64_t n = 0;

	/* An item counts in one inbox's pair for its whole stay (or in
	 * q->staged), so each pair is read on its own: `out` first. Then
	 * q->staged, which a due item enters (QoS sub-queue) before it
	 * leaves its inbox's count. */
	for (unsigned i = 0; i < blq__slots(q); i++) {
		const blq__inbox *b = blq__inbox_at(q, i);
		if (b != NULL) {
			uint64_t out = atomic_load_explicit(&b->out, memory_order_seq_cst);

			n += atomic_load_explicit(&b->in, memory_order_seq_cst) - out;
		}
	}
	return n + atomic_load_explicit(&q->staged, memory_order_seq_cst);
}

void blq__inbox_settle(blq *q, uint32_t origin, uint64_t n)
{
	if (origin == BLQ__TIMER_SHARED) {
		atomic_fetch_sub_explicit(&q->timer.held_shared, n, memory_order_relaxed);
		atomic_fetch_sub_explicit(&q->staged, n, memory_order_seq_cst);
		return;
	}
	blq__inbox *b = blq__inbox_at(q, origin);
	/* An RMW: the timer thread and a worker that served due items
	 * (timer.c, blq__timer_assist) may settle at once, and it keeps the
	 * seq_cst order with the readers. */
	atomic_fetch_add_explicit(&b->out, n, memory_order_seq_cst);
}

void blq__inbox_free_all(blq *q)
{
	for (unsigned i = 0; q->workers != NULL && i < blq__slots(q); i++)
		free(atomic_exchange_explicit(&q->workers[i].inbox, NULL, memory_order_relaxed));
}
