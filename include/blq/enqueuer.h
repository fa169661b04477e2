/**
 * \file
 * blq_enqueuer: anything that accepts payloads. A queue is one
 * (blq_as_enqueuer), a DLQ is one (blq_discard_enqueuer), a dump queue is
 * one (blq_dump_enqueuer): this is how queues chain. Nothing here to call:
 * a queue calls an enqueuer's callbacks (blq_config.dlq, transit workers,
 * the restorer).
 */
#ifndef BLQ_ENQUEUER_H
#define BLQ_ENQUEUER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The longest queue name a blq_dlq_why carries, in bytes without the NUL
 * (the dump format keeps it in one byte). */
#define BLQ_DLQ_QUEUE_MAX 255

/**
 * Why an item was dead-lettered: handed to its queue's DLQ. Each reason
 * has its own counter in blq_stats, named after it. The values are stored
 * in dumps (one byte): never renumbered.
 */
enum blq_dlq_reason {
	/** Not said: a record of a format-1 dump, or an item given to the DLQ
	 * by something other than a queue (blq_dump_enqueue). */
	BLQ_DLQ_UNKNOWN = 0,
	/** The queue (or its timer, or a QoS sub-queue) was full and the new
	 * item leaked (leaked_rear). */
	BLQ_DLQ_OVERFLOW_REAR = 1,
	/** The queue was full and this oldest item was moved out to make room
	 * for a new one (leak_direction BLQ_LEAK_FRONT; leaked_front). */
	BLQ_DLQ_OVERFLOW_FRONT = 2,
	/** Its last attempt failed with no retry left (fail_to_dlq), or it
	 * failed with retries left but a leaky queue had no room to hold it
	 * for its backoff (leaked_failed). */
	BLQ_DLQ_FAILED = 3,
	/** Past its deadline when a worker took it (deadline_to_dlq;
	 * leaked_deadline). */
	BLQ_DLQ_DEADLINE = 4,
	/** Still queued, delayed or waiting for a retry at a Soft or Hard
	 * close (leaked_closed). */
	BLQ_DLQ_CLOSED = 5,
};

/**
 * Why one item was dead-lettered, as a queue tells its DLQ
 * (blq_enqueuer.enqueue_why) and as a dump stores it with the item's
 * record (blq_dump_record.why). A plain value, with no pointers: copy it
 * freely. An all-zero blq_dlq_why says nothing (reason unknown).
 */
typedef struct blq_dlq_why {
	/** Why; a reader may meet values this build does not name (a newer
	 * writer's): blq_dlq_reason_name() says "unknown" for them. */
	enum blq_dlq_reason reason;
	/** Attempts that ran before it left, 0 when it never ran (a retry
	 * waiting for its backoff counts those it had); for BLQ_DLQ_FAILED
	 * the failed last attempt included. */
	uint32_t attempts;
	/** BLQ_DLQ_FAILED: the worker's return value for the last attempt, or
	 * BLQ_ETIMEDOUT when that attempt timed out (whatever it returned).
	 * 0 for the other reasons. */
	int32_t rc;
	/** When, in nanoseconds since the Unix epoch: the queue's wall clock
	 * (blq_clock.wall_ns, CLOCK_REALTIME unless the config replaces it),
	 * read as the item leaves. 0: unknown. */
	uint64_t time_ns;
	/** The name of the queue it left (blq_config.name), NUL-terminated;
	 * "" when unknown. */
	char queue[BLQ_DLQ_QUEUE_MAX + 1];
} blq_dlq_why;

/** A receiver of payloads, as a value: its callbacks and the object they
 * act on. Copied freely; the object behind self must outlive every copy's
 * use. */
typedef struct blq_enqueuer {
	/** Takes payload. Returns 0 when it took ownership of payload; any
	 * other value means it refused and the caller still owns payload.
	 * Called from producer threads, worker threads and the closing thread
	 * at once, so it must be thread-safe. */
	int (*enqueue)(void *self, void *payload);
	/** The receiver, passed to both callbacks; borrowed. */
	void *self;
	/** Optional: makes every payload accepted so far durable and returns
	 * 0, or a negative BLQ_E* code when it could not (they stay accepted
	 * and a later call tries again). A dump's is blq_dump_flush; NULL for
	 * enqueuers that keep payloads in memory (a queue). The restorer uses
	 * it (through blq_dlq_sync) before it counts an item that leaked from
	 * its target as done. May block; never called on a queue's hot path. */
	int (*sync)(void *self);
	/**
	 * Optional: enqueue, told why the payload is dead-lettered. A queue
	 * calls it instead of enqueue when it is not NULL (enqueue stays
	 * required: other callers use it). Same contract as enqueue: returns
	 * 0 when it took ownership of payload, any other value when it
	 * refused (the caller still owns payload and the queue counts the
	 * item lost); called from many threads at once, so thread-safe.
	 * \param self the enqueuer's self.
	 * \param payload the item's payload.
	 * \param why never NULL; valid only during the call (copy it to keep
	 *        it).
	 * \return 0 or a refusal code (a negative BLQ_E* code).
	 * A dump's is blq_dump_enqueue_why (it stores why with the record). A
	 * queue's (blq_as_enqueuer) is NULL: the reason does not travel down a
	 * chain of queues; when the next queue dead-letters the item in turn,
	 * its own DLQ hears that queue's reason.
	 */
	int (*enqueue_why)(void *self, void *payload, const blq_dlq_why *why);
} blq_enqueuer;

#ifdef __cplusplus
}
#endif

#endif
