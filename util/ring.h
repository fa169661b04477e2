/*
 * Bounded MPMC ring of items held by value, one sequence number per slot
 * (after D. Vyukov's bounded queue). Exact capacity: the index is pos %
 * cap, with a mask when cap is a power of two.
 *
 * Producers claim positions with a CAS on tail, as far as the room allows
 * (cap less tail - head), and publish each by storing seq = 2*pos + 1 in
 * its slot (release). Consumers look for seq == 2*pos + 1 from the head,
 * copy those items out and then claim them with a CAS on head: that CAS
 * is what frees their slots for the next lap, so consumers never write a
 * slot. A copy whose CAS is lost is dropped (another consumer took those
 * items, and a producer may already be refilling the slots: the words
 * are relaxed atomics, so that read is no data race).
 *
 * Why not Vyukov's own protocol, where the consumer claims first and then
 * writes the slot free: a slot's line then crosses cores four times a lap
 * (producer reads, writes; consumer reads, writes) instead of twice, the
 * consumer's fence before its wake-up check waits for those writes, and a
 * consumer preempted between its claim and its write holds up the
 * producer that needs the slot next. Measured: docs/benchmarks.md.
 * The factor 2 in the sequence keeps a slot's initial 2*i (nothing yet)
 * apart from "full for position i" (2*i + 1) at every capacity.
 * A producer preempted between claiming and publishing delays only its
 * own slot, never the other producers (unlike ck_ring's MPMC mode, which
 * commits in order); consumers reaching it find the ring "empty" there.
 * Producers read the head through head_seen, a copy on the tail's line,
 * and read the head itself (whose line the consumers write on every
 * take) only when the copy says full. Positions are 64-bit and never wrap
 * in practice.
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
#include <string.h>

#include <blq/error.h>

#include "cacheline.h"
#include "prefetch.h"

/* The item as words: a consumer may read a slot while a producer refills
 * it (its copy is then dropped, blq__ring_take), so both copy it with
 * relaxed atomic loads and stores, which compile to plain moves. */
#define BLQ__RING_WORDS ((sizeof(BLQ__RING_ITEM) + 7) / 8)
/* The item's whole words, and the bytes of a last partial one. */
#define BLQ__RING_FULL_WORDS (sizeof(BLQ__RING_ITEM) / 8)
#define BLQ__RING_TAIL_BYTES (sizeof(BLQ__RING_ITEM) % 8)

/* One cache line per slot: a producer filling slot i+1 does not steal the
 * line a consumer reads slot i from. */
typedef struct blq__slot {
	alignas(BLQ__CACHELINE) _Atomic uint64_t seq;
	_Atomic uint64_t item[BLQ__RING_WORDS];
} blq__slot;

/* The copies go word by word between the slot and the item itself, with
 * no buffer between them, unrolled: through a buffer of words, the copy
 * out stored 8 bytes at a time and at once read them back 16 at a time
 * into the item, a load the CPU cannot forward from the stores still in
 * flight, and that stall was a quarter of the workers' take
 * (take_deep's samples, perf annotate on W1). */
static inline void blq__slot_write(blq__slot *s, const BLQ__RING_ITEM *it)
{
	const unsigned char *p = (const unsigned char *)it;

#pragma GCC unroll 16
	for (size_t i = 0; i < BLQ__RING_FULL_WORDS; i++) {
		uint64_t w;

		memcpy(&w, p + 8 * i, 8);
		atomic_store_explicit(&s->item[i], w, memory_order_relaxed);
	}
	if (BLQ__RING_TAIL_BYTES != 0) {
		uint64_t w = 0;

		memcpy(&w, p + 8 * BLQ__RING_FULL_WORDS, BLQ__RING_TAIL_BYTES);
		atomic_store_explicit(&s->item[BLQ__RING_WORDS - 1], w, memory_order_relaxed);
	}
}

static inline void blq__slot_read(const blq__slot *s, BLQ__RING_ITEM *it)
{
	unsigned char *p = (unsigned char *)it;

#pragma GCC unroll 16
	for (size_t i = 0; i < BLQ__RING_FULL_WORDS; i++) {
		uint64_t w = atomic_load_explicit(&s->item[i], memory_order_relaxed);

		memcpy(p + 8 * i, &w, 8);
	}
	if (BLQ__RING_TAIL_BYTES != 0) {
		uint64_t w = atomic_load_explicit(&s->item[BLQ__RING_WORDS - 1],
						  memory_order_relaxed);

		memcpy(p + 8 * BLQ__RING_FULL_WORDS, &w, BLQ__RING_TAIL_BYTES);
	}
}

typedef struct blq__ring {
	alignas(BLQ__CACHELINE) _Atomic uint64_t tail; /* next position to fill */
	_Atomic uint64_t head_seen; /* the producers' last look at head */
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
	atomic_init(&r->head_seen, 0);
	atomic_init(&r->tail, 0);
	return 0;
}

/* A ring over slots the caller provides, zeroed (cap of them, aligned to
 * a cache line), and frees itself (blq__ring_destroy must not be called).
 * A sequence of 0 says "nothing yet" for every position as 2 * i does
 * (only 2 * pos + 1 says full, and producers find room by the head), so
 * no slot is written here: the pages of a ring never used stay
 * untouched (queue/lanes.c maps its lanes so). */
static inline void blq__ring_init_zeroed(blq__ring *r, uint64_t cap, blq__slot *slots)
{
	r->cap = cap;
	r->pow2 = (cap & (cap - 1)) == 0;
	r->mask = cap - 1;
	r->slots = slots;
	atomic_init(&r->head, 0);
	atomic_init(&r->head_seen, 0);
	atomic_init(&r->tail, 0);
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
 * anything it reads through r (callgrind, W1-BATCH: the slot lookups
 * were 28 of the queue's ~190 instructions per item, 24 with the
 * cursor). */
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

/* A reservation takes this many positions at most, and a take this many
 * items: a lost CAS costs a rescan (a take's: a copy), so a long batch
 * competing with single pushes keeps its attempts short (and takes the
 * rest in further reservations). */
#define BLQ__RING_RESERVE_MAX 64u

/* A claim's second look when its first found nothing at pos: true, with
 * the end's current position in *pos, when the end has moved on since
 * (pos was stale: look again there); false when it is still at pos (the
 * ring is full at the tail, or empty at the head). */
static inline bool blq__ring_moved(_Atomic uint64_t *end, uint64_t *pos)
{
	uint64_t now = atomic_load_explicit(end, memory_order_relaxed);

	if (now == *pos)
		return false;
	*pos = now;
	return true;
}

/* Room for positions from pos on: cap less the positions between the head
 * and pos, by the producers' copy of the head first and the head itself
 * when that copy says full. Acquire on both: the consumers' reads of the
 * slots they took happen before we refill them (the head's CAS is their
 * release; head_seen's store passes it on). */
static inline uint64_t blq__ring_room(blq__ring *r, uint64_t pos)
{
	uint64_t seen = atomic_load_explicit(&r->head_seen, memory_order_acquire);

	if (pos - seen < r->cap) /* a stale pos below seen wraps: no room */
		return r->cap - (pos - seen);
	/* seq_cst: a producer about to sleep on a full ring (ec.h) re-checks
	 * after announcing itself; this load must not pass that announcement
	 * (the consumers' seq_cst CAS then their load of waiters is the
	 * other half). */
	uint64_t head = atomic_load_explicit(&r->head, memory_order_seq_cst);

	if (head != seen)
		atomic_store_explicit(&r->head_seen, head, memory_order_release);
	return pos - head < r->cap ? r->cap - (pos - head) : 0;
}

/* Claims up to n (at most BLQ__RING_RESERVE_MAX) consecutive positions at
 * the tail with one CAS (a batch's reservation; a single push is the case
 * n = 1). Returns how many (0: full, or n is 0) and the first in *first.
 * The claimer then owns the positions until it fills each with
 * blq__ring_fill (walking their slots with a cursor from blq__ring_at); a
 * consumer that reaches one not yet filled finds the ring "empty" there,
 * as with a slow single push. */
static inline uint64_t blq__ring_reserve(blq__ring *r, uint64_t n, uint64_t *first)
{
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (n > BLQ__RING_RESERVE_MAX)
		n = BLQ__RING_RESERVE_MAX;
	if (n == 0)
		return 0;
	for (;;) {
		uint64_t room = blq__ring_room(r, pos);

		if (room == 0) {
			/* Full, or pos is stale: the head may have passed
			 * it. Decide on a fresh tail. */
			if (!blq__ring_moved(&r->tail, &pos))
				return 0;
			continue;
		}
		uint64_t k = n < room ? n : room;

		if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + k,
							  memory_order_relaxed, memory_order_relaxed)) {
			*first = pos;
			return k;
		}
	}
}

/* blq__ring_reserve for a ring with one producer at a time (a lane,
 * queue/lanes.c): nobody else moves the tail, so the claim is a plain
 * store instead of a CAS, and the tail's line stays in the producer's
 * cache. The caller hands the ring from one producer to the next with a
 * release and an acquire (the lane's owner word). */
static inline uint64_t blq__ring_reserve_sp(blq__ring *r, uint64_t n, uint64_t *first)
{
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t room = blq__ring_room(r, pos);
	uint64_t k = n < room ? n : room;

	if (k > BLQ__RING_RESERVE_MAX)
		k = BLQ__RING_RESERVE_MAX;
	if (k != 0) {
		atomic_store_explicit(&r->tail, pos + k, memory_order_relaxed);
		*first = pos;
	}
	return k;
}

/* Fills reserved position pos, whose slot is s (a cursor's), and
 * publishes it to the consumers. */
static inline void blq__ring_fill(blq__slot *s, uint64_t pos, const BLQ__RING_ITEM *it)
{
	blq__slot_write(s, it);
	/* Release: the item is written before the slot says full. */
	atomic_store_explicit(&s->seq, 2 * pos + 1, memory_order_release);
}

/* How far ahead of its fills a ring's one producer warms slots
 * (blq__ring_warm): far enough that the line has arrived when the fill
 * comes (a few pushes later), near enough that it is not a slot a
 * consumer still has to read when the ring is nearly full. 4 and 16
 * measured alike, 32 slower (docs/benchmarks.md, "Warming a lane's slots"). */
#define BLQ__RING_WARM_AHEAD 8u

/* Asks for the slot BLQ__RING_WARM_AHEAD positions past the cursor's,
 * for writing: for a ring that one producer fills in position order (a
 * lane), its cursor just past its last fill. Why: a slot's line was last
 * read by a consumer on another core, so the fill's store misses, and the
 * producer's next locked instruction (the count of its next item) waits
 * for that store to drain: perf put 39% of W1's samples on that add. A
 * prefetch is a hint, never a fault; on a ring within a few slots of
 * full it may fetch a slot a consumer has still to read (a line moved
 * once more, for the last pushes before the producer finds it full).
 * Rings of a few slots stay in cache: nothing to warm. */
static inline void blq__ring_warm(const blq__ring_cursor *c)
{
	if (c->cap <= BLQ__RING_WARM_AHEAD)
		return;
	uint64_t i = c->index + BLQ__RING_WARM_AHEAD;

	if (i >= c->cap)
		i -= c->cap;
	blq__prefetch_write(&c->slots[i]);
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
 * out[0..] with one CAS on head (a single pop is the case n = 1). Returns
 * how many (0: empty, or the oldest position claimed but not yet
 * published); stops at the first position not yet published.
 * The items are copied out before the CAS, and the CAS is what frees
 * their slots: a producer refills a slot only once it has seen the head
 * past it. A lost CAS means another consumer took them first (the copy is
 * dropped, and may have been torn by a refill: never used).
 * blq__ring_take_if takes nothing (returns 0) when *guard, read after the
 * copy, no longer equals expect; blq__ring_take has no guard. */
static inline uint64_t blq__ring_take_if(blq__ring *r, BLQ__RING_ITEM *out, uint64_t n,
					 const _Atomic uint64_t *guard, uint64_t expect)
{
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (n > BLQ__RING_RESERVE_MAX)
		n = BLQ__RING_RESERVE_MAX;
	if (n == 0)
		return 0;
	for (;;) {
		/* The run of published items from pos (seq == 2 * position
		 * + 1; acquire: each item is written, the producer's release),
		 * copied out as it is found. diff: the first other slot's seq
		 * less the one wanted (< 0: not yet published, > 0: a later
		 * lap, so pos is stale). */
		blq__ring_cursor c = blq__ring_at(r, pos);
		int64_t diff = 0;
		uint64_t k = 0;

		while (k < n) {
			const blq__slot *s = blq__ring_next(&c);

			diff = (int64_t)(atomic_load_explicit(&s->seq, memory_order_acquire) -
					 (2 * (pos + k) + 1));
			if (diff != 0)
				break;
			blq__slot_read(s, &out[k++]);
		}
		if (k == 0) {
			if (diff < 0)
				return 0; /* empty, or the oldest not yet published */
			/* A later lap's item: the head has passed pos. (Were it
			 * still at pos, the slot would have been refilled
			 * before its item was taken: never in a sound ring,
			 * and no reason to spin.) */
			if (!blq__ring_moved(&r->head, &pos))
				return 0;
			continue;
		}
		/* The caller's guard moved while we copied: take nothing
		 * (queue/rings.c, the lanes' spills). */
		if (guard != NULL && atomic_load_explicit(guard, memory_order_acquire) != expect)
			return 0;
		/* seq_cst: frees the slots (release: our reads of them come
		 * first) and is the StoreLoad barrier before a waker reads the
		 * producers' waiters (ec.h). */
		if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + k,
							  memory_order_seq_cst, memory_order_relaxed))
			return k;
	}
}

static inline uint64_t blq__ring_take(blq__ring *r, BLQ__RING_ITEM *out, uint64_t n)
{
	return blq__ring_take_if(r, out, n, NULL, 0);
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

/* Whether the ring holds a published item at its head now: a hint, stale
 * by the time it returns, but never "empty" for a ring that held an item
 * all along (a stale head whose slot a later lap refilled is read again,
 * as blq__ring_take does). blq__ring_holds can say "no" for that. */
static inline bool blq__ring_nonempty(blq__ring *r)
{
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);

	for (;;) {
		blq__ring_cursor c = blq__ring_at(r, pos);
		int64_t diff = (int64_t)(atomic_load_explicit(&blq__ring_next(&c)->seq,
							       memory_order_acquire) -
					 (2 * pos + 1));

		if (diff == 0)
			return true;
		if (diff < 0 || !blq__ring_moved(&r->head, &pos))
			return false;
	}
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
