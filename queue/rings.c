/*
 * The queue's rings: where items wait for a worker, whichever engine
 * brought them there. A rings-engine queue has lanes (lanes.h: a ring per
 * producer thread, behind one exact capacity) in front of its shared
 * rings; a QoS queue has only the shared rings (its egress).
 *
 * Shared rings (`streams` of them, capacity / streams slots each): the
 * rings of producers without a lane, of a lane's overflow, of retries
 * without a delay and of the timer's overflow. Without lanes (QoS), a
 * producer starts its look at a ring of its own (round robin per call)
 * and goes on to the next when it is full, as before lanes.
 *
 * Workers look at the timer's due ring first (blq__pop_any): a due retry
 * runs next instead of behind a full queue of new items. Then their home
 * lane (worker index modulo the lanes made), the other lanes, and the
 * shared rings from their home one. A worker that finds a ring deep takes
 * a hand of items at once (blq__take_ahead, worker.c), from any of them.
 */
#include "internal.h"
#include "thread_hash.h"

/* Round-robin start ring per producer thread, for queues without lanes. */
static _Thread_local unsigned blq__tls_rr;

/* Slots left the held count: after a take moved them out of a ring.
 * seq_cst: also the StoreLoad barrier before the taker reads the
 * producers' waiters (worker.c, after_take; ec.h). */
static void release_held(blq *q, uint64_t k)
{
	atomic_fetch_sub_explicit(&q->lanes.held, k, memory_order_seq_cst);
}

/* Fills positions pos..pos+k of r with *tmpl, each with payloads[at + j]
 * when payloads is not NULL. `warm`: r is a lane, whose one producer
 * fills it in position order, so each fill also warms a slot
 * BLQ__RING_WARM_AHEAD positions on (util/ring.h says why). */
static inline void fill(blq__ring *r, uint64_t pos, uint64_t k, const blq__item *tmpl,
			void *const *payloads, size_t at, bool warm)
{
	blq__ring_cursor c = blq__ring_at(r, pos);

	for (uint64_t j = 0; j < k; j++) {
		blq__item it = *tmpl;

		if (payloads != NULL)
			it.payload = payloads[at + j];
		blq__ring_fill(blq__ring_next(&c), pos + j, &it);
		if (warm)
			blq__ring_warm(&c);
	}
}

/* Up to n items into the shared rings, from ring `first` on, a
 * reservation per up to BLQ__RING_RESERVE_MAX; *ring and *end: where the
 * last one went (its ring, its position + 1). Returns how many went in. */
static size_t push_shared(blq *q, unsigned first, const blq__item *tmpl, void *const *payloads,
			  size_t at, size_t n, unsigned *ring, uint64_t *end)
{
	unsigned nr = q->nrings;
	size_t done = 0;

	for (unsigned i = 0; i < nr && done < n; i++) {
		unsigned ri = (first + i) % nr;
		blq__ring *r = &q->rings[ri];
		uint64_t pos, k;

		while (done < n && (k = blq__ring_reserve(r, n - done, &pos)) > 0) {
			fill(r, pos, k, tmpl, payloads, at + done, false);
			done += k;
			*ring = ri;
			*end = pos + k;
		}
	}
	return done;
}

/* The shared rings' heads, summed: each only grows, so two sums are
 * equal exactly when no ring's head moved between them. */
static uint64_t shared_heads(const blq *q)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < q->nrings; i++)
		sum += atomic_load_explicit(&q->rings[i].head, memory_order_seq_cst);
	return sum;
}

/* The rest of a reservation's n items, after push_shared found every
 * shared ring full. It may: its look is one ring after another, not a
 * snapshot. With held counting our places the rings never hold capacity
 * at once, but the room can move behind the look: a worker takes from a
 * ring the look has passed (releasing its place in held), another
 * producer reserves that place and pushes into a ring the look has not
 * reached yet, which is then full too. Caught under TSan with 3 streams
 * (queue_stress_lanes, about one round in a hundred; docs/model-check.md,
 * "Shared rings"): a producer found ring 1 full, then ring 2, was
 * preempted while the workers drained both and others filled ring 0,
 * and found ring 0 full.
 *
 * So look again while a head moved. A ring found full (its tail at pos,
 * its head at h, pos - h its size) stays full while its head stays at h:
 * tails never go back. So when the heads' sum is the same before and
 * after a look that found every ring full, every ring was full at once at
 * the end of that look, while held counted our places: held's count is
 * wrong, and we stop the process rather than overfill a ring or lose the
 * item. A moved head is a take during our look, so each look again means
 * the others got on: lock-free, and no wait for anybody (the room is
 * there, nobody has to run for us to find it). A ring's head loads, the
 * look's and ours, are ordered by coherence: a later one never sees an
 * older head (seq_cst here all the same: a plain move on x86). */
static __attribute__((noinline, cold)) void push_missed(blq *q, unsigned first,
							const blq__item *tmpl,
							void *const *payloads, size_t at, size_t n,
							unsigned *ring, uint64_t *end)
{
	uint64_t heads = shared_heads(q);

	for (size_t done = 0;;) {
		done += push_shared(q, first, tmpl, payloads, at + done, n - done, ring, end);
		if (done == n)
			return;
		uint64_t now = shared_heads(q);

		if (now == heads)
			abort(); /* every shared ring full at once: held's count is wrong */
		heads = now;
	}
}

/* Whether a lane's spilled items have all been taken from its shared
 * ring: then its owner pushes into the lane again. */
static bool spill_over(const blq *q, const blq__lane *l)
{
	return atomic_load_explicit(&q->rings[l->spill_ring].head, memory_order_relaxed) >=
	       l->spill_end;
}

/* n reserved items (held counts them) into the caller's lane, or the
 * shared rings (lanes.h: "Order"). Every one goes in: the shared rings
 * hold capacity, and held never does more. */
static void push_reserved(blq *q, blq__lane *l, const blq__item *tmpl, void *const *payloads,
			  size_t n)
{
	size_t done = 0;
	unsigned ring = 0, first;
	uint64_t end = 0;

	if (l == NULL) {
		/* No lane: one shared ring of our own while it has room. */
		first = q->nrings == 1 ? 0 : blq__thread_cell(q->nrings);
	} else {
		if (!l->spilling || spill_over(q, l)) {
			uint64_t pos, k;

			l->spilling = false;
			while (done < n && (k = blq__ring_reserve_sp(&l->ring, n - done, &pos)) > 0) {
				fill(&l->ring, pos, k, tmpl, payloads, done, true);
				done += k;
			}
			if (done == n)
				return;
			l->spill_ring = (unsigned)(l - q->lanes.lane) % q->nrings;
			/* A spill begins: after the lane's items, before the
			 * shared ones (lanes.h, "Order"). */
			atomic_fetch_add_explicit(&q->lanes.spills, 1, memory_order_seq_cst);
		}
		/* The lane is full, or older items of ours still wait in
		 * the shared ring: after them. */
		first = l->spill_ring;
	}
	/* held reserved the room (lanes.h, "Capacity"): the shared rings
	 * have it, though one look may miss it (push_missed). */
	done += push_shared(q, first, tmpl, payloads, done, n - done, &ring, &end);
	if (done < n)
		push_missed(q, first, tmpl, payloads, done, n - done, &ring, &end);
	if (l == NULL) {
		blq__lane_note_shared(q, ring, end);
	} else if (ring == l->spill_ring) {
		l->spilling = true;
		l->spill_end = end;
	}
}

void blq__push_placed(blq *q, blq__lane *l, const blq__item *it)
{
	uint64_t pos;

	/* The common case here: the owner's lane, not spilling, with room,
	 * without the call into push_reserved (15 instructions an item
	 * fewer: callgrind on SIDES; its enqueue 0.92 on one CPU). */
	if (l != NULL && !l->spilling && blq__ring_reserve_sp(&l->ring, 1, &pos) == 1) {
		fill(&l->ring, pos, 1, it, NULL, 0, true);
		return;
	}
	push_reserved(q, l, it, NULL, 1);
}

bool blq__push_any(blq *q, const blq__item *it)
{
	unsigned n = q->nrings;

	if (blq__lanes_on(q)) {
		blq__lane *l = blq__lane_own(q);

		if (blq__lanes_admit(q, l, 1) == 0)
			return false;
		push_reserved(q, l, it, NULL, 1);
		return true;
	}
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
	unsigned ring;
	uint64_t end;

	if (blq__lanes_on(q)) {
		blq__lane *l = blq__lane_own(q);
		uint64_t k = blq__lanes_admit(q, l, n);

		if (k > 0)
			push_reserved(q, l, tmpl, payloads, (size_t)k);
		return (size_t)k;
	}
	/* Without lanes: the thread's round-robin order until one is full;
	 * the items keep their order. */
	return push_shared(q, q->nrings == 1 ? 0 : blq__tls_rr++, tmpl, payloads, 0, n, &ring,
			   &end);
}

bool blq__pop_any(blq *q, unsigned home, blq__item *out)
{
	/* Due retries and delayed items first (timer.c). */
	blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);

	if (due != NULL && blq__ring_pop(due, out))
		return true;
	return blq__pop_rings(q, home, out);
}

/* One item from ring r into *out, released from held when lanes count. */
static bool pop_counted(blq *q, blq__ring *r, blq__item *out)
{
	if (!blq__ring_pop(r, out))
		return false;
	if (blq__lanes_on(q))
		release_held(q, 1);
	return true;
}

/* The spill count a worker's look at the lanes starts from, and whether
 * it is still that (nothing to guard without lanes). */
static uint64_t spills_now(const blq *q)
{
	return atomic_load_explicit(&q->lanes.spills, memory_order_acquire);
}

/* One item from a shared ring, when no spill began since `seen`. */
static bool pop_shared(blq *q, blq__ring *r, uint64_t seen, blq__item *out)
{
	if (!blq__lanes_on(q))
		return blq__ring_pop(r, out);
	if (blq__ring_take_if(r, out, 1, &q->lanes.spills, seen) != 1)
		return false;
	release_held(q, 1);
	return true;
}

bool blq__pop_rings(blq *q, unsigned home, blq__item *out)
{
	unsigned n = q->nrings;

	for (;;) {
		uint64_t seen = 0;

		if (blq__lanes_on(q)) {
			unsigned made = atomic_load_explicit(&q->lanes.made, memory_order_acquire);

			seen = spills_now(q);
			for (unsigned i = 0; i < made; i++)
				if (pop_counted(q, &q->lanes.lane[(home + i) % made].ring, out))
					return true;
		}
		for (unsigned i = 0; i < n; i++)
			if (pop_shared(q, &q->rings[(home + i) % n], seen, out))
				return true;
		/* Empty, unless a spill began while we looked: look again. */
		if (!blq__lanes_on(q) || spills_now(q) == seen)
			return false;
	}
}

bool blq__pop_oldest_own(blq *q, blq__item *out)
{
	blq__lane *l = blq__lanes_on(q) ? blq__lane_own(q) : NULL;

	if (l != NULL && pop_counted(q, &l->ring, out))
		return true;
	return blq__pop_rings(q, 0, out);
}

/* A hand from r when it is deep: up to max items when it holds at least
 * 2 * max. The depth is read at that item's slot, not from the tail: the
 * tail's line moves to the producers' cores with every push, and reading
 * it was 44% of blq__take_ahead's samples on W1-BATCH (perf record); the
 * slot is one this worker is about to take. With lanes the places stay
 * in held until the items leave the worker's hand (hand_places.c). */
static unsigned take_deep(blq__ring *r, blq__item *out, unsigned max,
			  const _Atomic uint64_t *guard, uint64_t seen)
{
	if (!blq__ring_holds(r, atomic_load_explicit(&r->head, memory_order_relaxed) +
					2 * (uint64_t)max - 1))
		return 0;
	return (unsigned)blq__ring_take_if(r, out, max, guard, seen);
}

unsigned blq__take_ahead(blq *q, unsigned home, blq__item *out, unsigned max)
{
	const blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);
	unsigned k;

	/* A due retry runs next (blq__pop_any), not behind a hand of new
	 * items; and a shallow ring is left to the other workers. */
	if (due != NULL && blq__ring_size(due) != 0)
		return 0;
	if (!blq__lanes_on(q))
		return take_deep(&q->rings[home % q->nrings], out, max, NULL, 0);

	unsigned made = atomic_load_explicit(&q->lanes.made, memory_order_acquire);
	uint64_t seen = spills_now(q);

	for (unsigned i = 0; i < made; i++) {
		blq__ring *r = &q->lanes.lane[(home + i) % made].ring;

		if ((k = take_deep(r, out, max, NULL, 0)) > 0)
			return k;
		/* A lane's last items come before a hand of the shared
		 * rings: they may be older items of the producer whose newer
		 * ones spilled there. */
		if (blq__ring_nonempty(r))
			return 0;
	}
	return take_deep(&q->rings[home % q->nrings], out, max, &q->lanes.spills, seen);
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

uint64_t blq__ring_items(const blq *q)
{
	uint64_t n = 0;

	if (blq__lanes_on(q))
		return blq__lanes_items(q);
	for (unsigned i = 0; i < q->nrings; i++)
		n += blq__ring_size(&q->rings[i]);
	return n;
}
