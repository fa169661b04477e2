/*
 * A worker's retry inbox: where its retries enter the timer without the
 * timer's mutex, on Concurrency Kit's ck_ring in SPSC mode. See inbox.c
 * for the design.
 */
#ifndef BLQ_QUEUE_INBOX_H
#define BLQ_QUEUE_INBOX_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ck_tsan.h" /* before ck_ring.h: ck's atomics as TSan sees them */

#include <ck_ring.h>

#include "item_ring.h"
#include "timer.h"

/* ck_ring's size is a power of two and it keeps one slot empty: 511
 * entries, at least the 256 the hand-written ring held (45 KB for each
 * worker that retries). */
#define BLQ__INBOX_SLOTS 512u

/* ck_ring_*_spsc_blq_timed: the ring by value over blq__timed. */
CK_RING_PROTOTYPE(blq_timed, blq__timed)

/* Single producer (its worker), single consumer at a time: whoever holds
 * the timer's mutex (its thread, a worker serving due items), or the
 * closer's sweep once the workers and the timer thread are joined. */
typedef struct blq__inbox {
	/* The consumer's head, the producer's tail, each on its own line
	 * (ck_ring's layout). */
	alignas(BLQ__CACHELINE) ck_ring_t ring;
	/* The worker's: items it ever put in; in - out of them are staged
	 * (in the inbox, or in the timer after the drain). */
	alignas(BLQ__CACHELINE) _Atomic uint64_t in;
	/* The consumers': of `in`, delivered or abandoned. */
	alignas(BLQ__CACHELINE) _Atomic uint64_t out;
	alignas(BLQ__CACHELINE) blq__timed slot[BLQ__INBOX_SLOTS];
} blq__inbox;

/* The consumer's side. Entries the producer has published: a drain takes
 * at most these (its snapshot, as of its start). */
static inline unsigned blq__inbox_ready(const blq__inbox *b)
{
	unsigned n = ck_ring_size(&b->ring);

	/* The slots after the count, as ck's own dequeue orders them. */
	ck_pr_fence_load();
	return n;
}

/* The oldest entry, in place, with blq__inbox_ready > 0: ck_ring has no
 * peek, and the merge compares heads before it takes one. The single
 * consumer's right: no producer writes a slot from the consumer's head to
 * the published tail, and the head moves only by the consumer's dequeue,
 * so the entry is the consumer's to read (and to write) until then. */
static inline blq__timed *blq__inbox_head(blq__inbox *b)
{
	return &b->slot[b->ring.c_head & b->ring.mask];
}

/* Takes the oldest entry into *out. False when none is published. */
static inline bool blq__inbox_take(blq__inbox *b, blq__timed *out)
{
	return ck_ring_dequeue_spsc_blq_timed(&b->ring, b->slot, out);
}

#endif
