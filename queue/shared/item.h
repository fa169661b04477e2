/*
 * The queue's item: what the queue keeps per enqueued payload, by value
 * (in a ring slot, a timer entry, a QoS sub-queue). Shared by the core and
 * the engines (queue/shared/engine.h). Not installed.
 *
 * 56 bytes, so a ring slot (its sequence number and the item) fills one
 * 64-byte cache line: a field added here costs every slot a second line.
 */
#ifndef BLQ_QUEUE_ITEM_H
#define BLQ_QUEUE_ITEM_H

#include <stdint.h>

#include <blq/queue.h>

typedef struct blq__item {
	void *payload;
	const blq_done *done; /* the job's completion hook, or NULL */
	uint64_t enq_ns;      /* 0 unless the queue stamps items */
	uint64_t deadline_ns; /* absolute on the queue's clock; 0 = none */
	uint64_t timeout_ns;  /* run-time limit of one attempt; 0 = none */
	uint64_t prev_delay;  /* the last retry's delay (decorrelated jitter) */
	uint32_t attempt;     /* 1 on the first try */
	uint32_t tag;         /* the engine's, set by its classify at the enqueue
			       * (QoS: the evaluator percent, 1..100, so a
			       * delayed item enters its sub-queue when due) */
} blq__item;

_Static_assert(sizeof(blq__item) == 56, "an item plus its slot's sequence fills one cache line");

#endif
