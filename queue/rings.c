/*
 * The queue's rings: the bounded rings (one per stream) where items wait
 * for a worker, whichever engine brought them there.
 *
 * Streams spread the contention: a producer starts its look at a ring of
 * its own (round robin per thread), a worker at ring index % nrings
 * (worker.c), and both go on to the next ring when theirs is full or
 * empty, so one stream's backlog never idles a worker. With one stream
 * (the default) every call is a single push or pop. Workers look at the
 * timer's due ring before the rings (blq__pop_any): a due retry runs next
 * instead of behind a full queue of new items. A worker that finds its
 * ring deep takes a hand of items at once (blq__take_ahead, worker.c).
 */
#include "internal.h"

/* Round-robin start ring per producer thread, so streams spread the load. */
static _Thread_local unsigned blq__tls_rr;

bool blq__push_any(blq *q, const blq__item *it)
{
	unsigned n = q->nrings;

	if (n == 1)
		return blq__ring_push(&q->rings[0], it);
	unsigned start = blq__tls_rr++;
	for (unsigned i = 0; i < n; i++)
		if (blq__ring_push(&q->rings[(start + i) % n], it))
			return true;
	return false;
}

size_t blq__push_batch(blq *q, const blq__item *tmpl, void *const *payloads, size_t n)
{
	unsigned nr = q->nrings, start = nr == 1 ? 0 : blq__tls_rr++;
	size_t done = 0;

	/* Reservations of up to BLQ__RING_RESERVE_MAX slots, ring by ring in
	 * the thread's round-robin order until one is full; the items keep
	 * their order. */
	for (unsigned i = 0; i < nr && done < n; i++) {
		blq__ring *r = &q->rings[(start + i) % nr];
		uint64_t pos, k;

		while (done < n && (k = blq__ring_reserve(r, n - done, &pos)) > 0) {
			blq__ring_cursor at = blq__ring_at(r, pos);

			for (uint64_t j = 0; j < k; j++) {
				blq__item it = *tmpl;

				it.payload = payloads[done + j];
				blq__ring_fill(blq__ring_next(&at), pos + j, &it);
			}
			done += k;
		}
	}
	return done;
}

bool blq__pop_any(blq *q, unsigned start, blq__item *out)
{
	/* Due retries and delayed items first (timer.c). */
	blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);

	if (due != NULL && blq__ring_pop(due, out))
		return true;
	return blq__pop_rings(q, start, out);
}

bool blq__pop_rings(blq *q, unsigned start, blq__item *out)
{
	unsigned n = q->nrings;

	if (n == 1)
		return blq__ring_pop(&q->rings[0], out);
	for (unsigned i = 0; i < n; i++)
		if (blq__ring_pop(&q->rings[(start + i) % n], out))
			return true;
	return false;
}

unsigned blq__take_ahead(blq *q, unsigned home, blq__item *out, unsigned max)
{
	const blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);
	blq__ring *r = &q->rings[home];

	/* A due retry runs next (blq__pop_any), not behind a hand of new
	 * items; and a shallow ring (no item 2 * max from the head) is left
	 * to the other workers. The depth is read at that item's slot, not
	 * from the tail: the tail's line moves to the producers' cores with
	 * every push, and reading it was 44% of this function's samples on
	 * W1-BATCH (perf record); the slot is one this worker is about to
	 * take. */
	if (due != NULL && blq__ring_size(due) != 0)
		return 0;
	if (!blq__ring_holds(r, atomic_load_explicit(&r->head, memory_order_relaxed) +
					2 * (uint64_t)max - 1))
		return 0;
	return (unsigned)blq__ring_take(r, out, max);
}

bool blq__core_push(blq *q, const blq__item *it, unsigned *cursor)
{
	unsigned n = q->nrings;

	if (n == 1)
		return blq__ring_push(&q->rings[0], it);
	for (unsigned k = 0; k < n; k++) {
		if (++*cursor >= n)
			*cursor = 0;
		if (blq__ring_push(&q->rings[*cursor], it))
			return true;
	}
	return false;
}

uint64_t blq__core_room(const blq *q)
{
	uint64_t used = blq__ring_items(q);

	return used < q->ring_cap ? q->ring_cap - used : 0;
}

void blq__core_rings_usage(const blq *q, size_t *size, size_t *capacity)
{
	*size = (size_t)blq__ring_items(q);
	*capacity = q->ring_cap;
}
