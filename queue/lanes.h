/*
 * Lanes: a ring per producer thread, in front of the queue's shared rings,
 * behind one exact capacity (the rings engine's; QoS keeps its own rings).
 * Not installed; queue/ only.
 *
 * Why: one ring shared by every producer and worker costs a CAS per push
 * on the tail and one per take on the head, each on a line that crosses
 * cores (docs/benchmarks.md measured 187-228 ns/item for a plain shared
 * ring, 35-61 for a ring per producer). A lane has one producer at a time,
 * its owner, so a push is a plain store of the tail (util/ring.h,
 * blq__ring_reserve_sp); workers take from it as from any ring (a CAS on
 * its head), a home lane first (worker index modulo the lanes made), then
 * the others, then the shared rings.
 *
 * Ownership: a thread's first enqueue into a queue adopts a lane (the
 * first free one of BLQ__LANES_MAX, whose rings blq_new mapped), and keeps
 * it until the thread exits (a pthread key's destructor gives it back) or
 * the queue is freed. A thread that finds no free lane pushes into the
 * shared rings, as every producer did before lanes, and looks again every
 * BLQ__LANE_RETRY calls. The thread remembers its lanes in a small
 * thread-local table keyed by the queue's serial number (never reused, so
 * a freed queue's entry can never match a new queue at the same address).
 *
 * Capacity: `held` counts the items in the lanes, the shared rings and
 * the workers' hands, reserved (a CAS, never above capacity) before an
 * item is pushed and released after a worker's take has moved it out,
 * or for a hand once the hand is over; a producer that finds held full
 * claims the places of the hand items already started
 * (hand_places.c). A
 * lane's owner reserves BLQ__LANE_CREDIT places at a time into its lane's
 * credit and spends them one per item; a producer that finds held full,
 * and no started hand place to claim (they are looked at first: on W1
 * they have room far more often), takes what it needs from the other
 * lanes' credit before it calls the queue full, so credit in a lane never
 * makes a queue with room refuse (blq_size and the wake-up of producers
 * count held less the credit).
 * Nor does credit on its way to a lane: a refill's places are reserved
 * in held (a CAS) and then added to the lane's credit, and a producer
 * preempted between the two holds up to BLQ__LANE_CREDIT - 1 places out
 * of every count meanwhile. So the refill's CAS also counts it in
 * transit and begun (held's word, above BLQ__HELD_MASK), and it counts
 * itself out of transit after the credit add. A producer that finds the
 * count full and no credit to take loads the word again: moved since the
 * count said full (a refill began or landed between its looks, a place
 * was freed), it looks again at once; a refill in transit, it waits
 * (yielding) and looks again; for at most BLQ__TRANSIT_WAIT_NS in all.
 * Only a word that stayed put with nothing in transit means full
 * (docs/model-check.md, "Credit": the SPIN model found both gaps, the
 * transit and a refill landing between a thief's two looks, and checks
 * the fix). A thread without a lane takes credit as an owner
 * does. The credit sits in the low
 * bits of the owner's counter cell's `entered` (internal.h), so the one
 * locked add that counts a single enqueue in also takes its place
 * (enqueue.c): two locked instructions per item, not three. A
 * lane's ring is smaller than capacity when capacity is large
 * (BLQ__LANE_SLOTS); a push that finds its lane full goes to the shared
 * rings, which hold capacity, so a reservation always finds a slot (a
 * look over several that missed it looks again: rings.c, push_missed).
 *
 * Order: a producer's items are taken in the order it enqueued them. When
 * its lane is full it spills into one shared ring (the lane's own, chosen
 * by index), and keeps pushing there until that ring's head has passed
 * its last spilled item, so newer items never overtake older ones. And a
 * worker takes from the shared rings only when the lanes were empty at
 * its look and no spill began since (`spills`, read before the look and
 * again before its take's CAS): a producer that filled its lane and
 * spilled while the worker looked would otherwise have its spilled items
 * taken before its lane's. A
 * thread without a lane pushes into one shared ring of its own (by thread
 * hash) while it has room, and when it adopts a lane later (one given
 * back by an exiting thread), its items still in that ring count as a
 * spill. With streams > 1, an item that finds its ring full goes to
 * another, and may start before older ones.
 */
#ifndef BLQ_QUEUE_LANES_H
#define BLQ_QUEUE_LANES_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cacheline.h"
#include "item_ring.h"

/* Lanes per queue: producer threads beyond it use the shared rings. */
#define BLQ__LANES_MAX 16u
/* A lane's ring: capacity, up to this (64 bytes a slot: 256 KiB of
 * address space, touched only as the lane uses it). A lane as large as
 * the capacity never spills: with smaller lanes, a full queue's freed
 * place goes to whichever producer asks first, whose lane is then often
 * full, and the spills it makes keep the workers on the shared rings'
 * CAS (W1 at capacity 1024 with lanes of 512 was 1.5x slower). */
#define BLQ__LANE_SLOTS 4096u
/* Places a lane's owner reserves in `held` at once: the shared count's
 * line moves once per this many items instead of once per item. */
#define BLQ__LANE_CREDIT 32u
/* held's word: the places reserved in bits 0-31 (capacity is at most
 * 2^30, engine.h), the refills in transit (reserved, not yet in a lane's
 * credit; at most one per lane) in bits 32-39, and the refills begun in
 * bits 40-63 (wrapping: it only has to move between two loads of a
 * producer that finds the queue full, lanes.c). */
#define BLQ__HELD_TRANSIT_ONE (1ull << 32)
#define BLQ__HELD_BEGUN_ONE (1ull << 40)
#define BLQ__HELD_MASK (BLQ__HELD_TRANSIT_ONE - 1)
#define BLQ__HELD_TRANSIT_MASK (BLQ__HELD_BEGUN_ONE - BLQ__HELD_TRANSIT_ONE)
/* How long a producer that found the queue full waits for a refill in
 * transit to land: a preempted thread runs again within a scheduler
 * slice or two (a few ms); one stopped longer (a debugger) does not
 * hold the others up longer than this. */
#define BLQ__TRANSIT_WAIT_NS 10000000ull
/* A thread without a lane looks for one again after this many calls. */
#define BLQ__LANE_RETRY 1024u

typedef struct blq__lane {
	blq__ring ring; /* its ring: made by its first owner (lanes.c) */
	/* A thread owns it: CAS 0 -> 1 to adopt (acquire), store 0 to give
	 * it back (release), which hands the tail and the fields below from
	 * one owner to the next. On the owner's line, away from the head. */
	alignas(BLQ__CACHELINE) _Atomic int owned;
	/* Owner only: spilled items may still sit in shared ring
	 * spill_ring below position spill_end (spilling: since the lane was
	 * full). */
	bool spilling;
	unsigned spill_ring;
	uint64_t spill_end;
} blq__lane;

typedef struct blq__lanes {
	blq__lane *lane;       /* BLQ__LANES_MAX of them; NULL: no lanes (QoS) */
	uint64_t slots;        /* each lane's ring */
	void *map;             /* every lane's slots, one mapping */
	size_t map_bytes;
	uint64_t serial;       /* this queue's, never reused */
	struct blq *reg_next;  /* the live queues' list (lanes.c) */
	_Atomic unsigned made; /* lanes [0, made) were ever adopted (release) */
	/* Spill episodes begun (a lane found full): a worker that takes
	 * from the shared rings checks it did not move since it looked at
	 * the lanes (rings.c). Read on every take, written rarely. */
	_Atomic uint64_t spills;
	/* Items in the lanes, the shared rings and the hands, reserved
	 * before a push, released after a take (a hand's when it is over,
	 * hand_places.c): never above `capacity` (below
	 * BLQ__HELD_MASK; the refills in transit above it). Its own line:
	 * every producer and worker writes it. */
	alignas(BLQ__CACHELINE) _Atomic uint64_t held;
	uint64_t capacity;
} blq__lanes;

#endif
