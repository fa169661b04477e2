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

#ifdef __cplusplus
extern "C" {
#endif

/** A receiver of payloads, as a value: two callbacks and the object they
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
} blq_enqueuer;

#ifdef __cplusplus
}
#endif

#endif
