/*
 * Bounded MPMC ring of items held by value, one sequence number per slot
 * (D. Vyukov's bounded queue). Exact capacity: the index is pos % cap, with
 * a mask when cap is a power of two.
 *
 * Slot i's sequence says what the slot holds for a given lap:
 *   seq == 2*pos           free, the producer that claims position pos may fill it;
 *   seq == 2*pos + 1       full, the consumer that claims position pos may take it;
 *   seq == 2*(pos + cap)   free again, for the producer of the next lap.
 * The factor 2 keeps "full for pos" and "free for pos + cap" apart even
 * when cap is 1 (Vyukov's original pos / pos+1 / pos+cap encoding makes
 * them equal there, and a producer would overwrite a full slot).
 * Producers claim a position with a CAS on tail, consumers on head. A thread
 * preempted between claiming and publishing delays only its own slot, never
 * the other producers (unlike ck_ring's MPMC mode, which commits in order).
 * Positions are 64-bit and never wrap in practice.
 *
 * Typed, by value, without knowing the type: the includer defines
 * BLQ__RING_ITEM (the element type) before including this header, once
 * per program (queue/shared/item_ring.h does it for the queue's item), the
 * way ck_ring's CK_RING_PROTOTYPE makes a typed ring. A copy per slot
 * instead of a pointer: the queue's producers and workers then share no
 * allocation per item. Not thread-safe to init or destroy; push, pop and
 * size from any thread.
 */
#ifndef BLQ_UTIL_RING_H
#define BLQ_UTIL_RING_H

#ifndef BLQ__RING_ITEM
#error "define BLQ__RING_ITEM (the element type) before including ring.h"
#endif

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <blq/error.h>

#include "cacheline.h"

/* One cache line per slot: a producer filling slot i+1 does not steal the
 * line a consumer reads slot i from. */
typedef struct blq__slot {
	alignas(BLQ__CACHELINE) _Atomic uint64_t seq;
	BLQ__RING_ITEM item;
} blq__slot;

typedef struct blq__ring {
	alignas(BLQ__CACHELINE) _Atomic uint64_t tail; /* next position to fill */
	alignas(BLQ__CACHELINE) _Atomic uint64_t head; /* next position to take */
	alignas(BLQ__CACHELINE) uint64_t cap;
	uint64_t mask;     /* cap - 1 when cap is a power of two */
	bool pow2;
	blq__slot *slots;
} blq__ring;

/* Allocates the slots (a cache line each). Returns 0 or BLQ_ENOMEM. */
static inline int blq__ring_init(blq__ring *r, uint64_t cap)
{
	r->cap = cap;
	r->pow2 = (cap & (cap - 1)) == 0;
	r->mask = cap - 1;
	r->slots = aligned_alloc(BLQ__CACHELINE,
				 ((cap * sizeof(blq__slot) + BLQ__CACHELINE - 1) / BLQ__CACHELINE) *
					 BLQ__CACHELINE);
	if (r->slots == NULL)
		return BLQ_ENOMEM;
	for (uint64_t i = 0; i < cap; i++)
		atomic_init(&r->slots[i].seq, 2 * i);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return 0;
}

/* Frees the slots; the items in them are the caller's to have taken. */
static inline void blq__ring_destroy(blq__ring *r)
{
	free(r->slots);
	r->slots = NULL;
}

/* A walk over consecutive slots from a position: the index is computed
 * once (a mask or a division) and then stepped with a wrap, and the
 * ring's fields are read once, into the cursor. The loops below run over
 * acquire loads and release stores, after which the compiler must reload
 * anything it reads through r; per slot that was most of the ring's
 * instructions (callgrind, W1-BATCH: 28 of ~190 per item). */
typedef struct blq__ring_cursor {
	blq__slot *slots;
	uint64_t index, cap;
} blq__ring_cursor;

static inline blq__ring_cursor blq__ring_at(const blq__ring *r, uint64_t pos)
{
	return (blq__ring_cursor){.slots = r->slots,
				  .index = r->pow2 ? (pos & r->mask) : (pos % r->cap),
				  .cap = r->cap};
}

/* The cursor's slot, and the cursor on to the next one. */
static inline blq__slot *blq__ring_next(blq__ring_cursor *c)
{
	blq__slot *s = &c->slots[c->index];

	if (++c->index == c->cap)
		c->index = 0;
	return s;
}

/* How many of the n positions from pos are in one state: free for their
 * lap (full = 0: seq == 2 * position) or full (full = 1: seq == 2 *
 * position + 1). *diff: the first other slot's seq less the one wanted
 * (< 0: a lap behind, > 0: pos is stale), 0 when all n are. Acquire: a
 * free slot's last item was read out (the consumer's release), a full
 * slot's item is written (the producer's release). */
static inline uint64_t blq__ring_run(const blq__ring *r, uint64_t pos, uint64_t n, uint64_t full,
				     int64_t *diff)
{
	blq__ring_cursor c = blq__ring_at(r, pos);
	uint64_t k = 0;

	*diff = 0;
	while (k < n) {
		uint64_t seq = atomic_load_explicit(&blq__ring_next(&c)->seq, memory_order_acquire);

		*diff = (int64_t)(seq - (2 * (pos + k) + full));
		if (*diff != 0)
			break;
		k++;
	}
	return k;
}

/* A reservation looks at this many slots at most: a lost CAS costs a
 * rescan, so a long batch competing with single pushes keeps its attempts
 * short (and takes the rest in further reservations). */
#define BLQ__RING_RESERVE_MAX 64u

/* One end's claim: up to n (at most BLQ__RING_RESERVE_MAX) consecutive
 * positions from *end that are all free (full = 0: the tail, producers) or
 * all full (full = 1: the head, consumers), with one CAS on *end. Returns
 * how many (0: none in that state at *end, or n is 0) and the first in
 * *first; the claimer then owns the positions. */
static inline uint64_t blq__ring_claim(blq__ring *r, _Atomic uint64_t *end, uint64_t n,
				       uint64_t full, uint64_t *first)
{
	uint64_t pos = atomic_load_explicit(end, memory_order_relaxed);

	if (n > BLQ__RING_RESERVE_MAX)
		n = BLQ__RING_RESERVE_MAX;
	if (n == 0)
		return 0;
	for (;;) {
		int64_t diff;
		/* Every slot is looked at: the other side frees or fills
		 * them out of order. */
		uint64_t k = blq__ring_run(r, pos, n, full, &diff);

		if (k > 0) {
			/* A slot in that state stays in it until its
			 * position's claimer acts, and that claimer is
			 * whoever wins this CAS. */
			if (atomic_compare_exchange_weak_explicit(end, &pos, pos + k,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				*first = pos;
				return k;
			}
		} else if (diff < 0) {
			return 0; /* a lap behind: full (tail) or empty (head) */
		} else {
			pos = atomic_load_explicit(end, memory_order_relaxed); /* stale */
		}
	}
}

/* Claims up to n consecutive free positions at the tail with one CAS (a
 * batch's reservation; a single push is the case n = 1). Returns how many
 * (0: full, or n is 0) and the first in *first. The claimer then owns the
 * positions until it fills each with blq__ring_fill (walking their slots
 * with a cursor from blq__ring_at); a consumer that
 * reaches one not yet filled finds the ring "empty" there, as with a slow
 * single push. */
static inline uint64_t blq__ring_reserve(blq__ring *r, uint64_t n, uint64_t *first)
{
	return blq__ring_claim(r, &r->tail, n, 0, first);
}

/* Fills reserved position pos, whose slot is s (a cursor's), and
 * publishes it to the consumers. */
static inline void blq__ring_fill(blq__slot *s, uint64_t pos, const BLQ__RING_ITEM *it)
{
	s->item = *it;
	/* Release: the item is written before the slot says full. */
	atomic_store_explicit(&s->seq, 2 * pos + 1, memory_order_release);
}

/* Copies *it into the ring. False when full. Lock-free, no allocation. */
static inline bool blq__ring_push(blq__ring *r, const BLQ__RING_ITEM *it)
{
	uint64_t pos;

	if (blq__ring_reserve(r, 1, &pos) == 0)
		return false;
	blq__ring_cursor c = blq__ring_at(r, pos);
	blq__ring_fill(blq__ring_next(&c), pos, it);
	return true;
}

/* Moves up to n (at most BLQ__RING_RESERVE_MAX) of the oldest items into
 * out[0..] with one CAS on head: the consumers' side of a reservation (a
 * single pop is the case n = 1). Returns how many (0: empty, or the oldest
 * position claimed but not yet published); stops at the first position
 * not yet published. */
static inline uint64_t blq__ring_take(blq__ring *r, BLQ__RING_ITEM *out, uint64_t n)
{
	uint64_t pos, k = blq__ring_claim(r, &r->head, n, 1, &pos);

	if (k == 0)
		return 0;
	blq__ring_cursor c = blq__ring_at(r, pos);
	for (uint64_t j = 0; j < k; j++) {
		blq__slot *s = blq__ring_next(&c);

		out[j] = s->item;
		/* Release: the item is read out before the slot says free
		 * for the next lap. */
		atomic_store_explicit(&s->seq, 2 * (pos + j + c.cap), memory_order_release);
	}
	return k;
}

/* Moves the oldest item into *out. False when empty (or when the oldest
 * position is claimed but not yet published). */
static inline bool blq__ring_pop(blq__ring *r, BLQ__RING_ITEM *out)
{
	return blq__ring_take(r, out, 1) == 1;
}

/* Whether position pos holds a published item now (its slot full for
 * that position): a hint, stale by the time it returns. One look at one
 * slot: a consumer asking "at least n items from my head?" reads the slot
 * it will take soon instead of the tail, whose line the producers write
 * on every push. */
static inline bool blq__ring_holds(const blq__ring *r, uint64_t pos)
{
	blq__ring_cursor c = blq__ring_at(r, pos);

	return atomic_load_explicit(&blq__ring_next(&c)->seq, memory_order_relaxed) == 2 * pos + 1;
}

/* Items in the ring, clamped to [0, cap]; exact only when quiescent. */
static inline uint64_t blq__ring_size(const blq__ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (tail <= head)
		return 0;
	return tail - head > r->cap ? r->cap : tail - head;
}

#endif
