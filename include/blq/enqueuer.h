/*
 * blq_enqueuer: anything that accepts payloads. A queue is one
 * (blq_as_enqueuer), a DLQ is one (blq_discard_enqueuer), and later a dump
 * queue is one: this is how queues chain.
 */
#ifndef BLQ_ENQUEUER_H
#define BLQ_ENQUEUER_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct blq_enqueuer {
	/* Takes payload. Returns 0 when it took ownership of payload; any
	 * other value means it refused and the caller still owns payload.
	 * Called from producer threads, worker threads and the closing thread
	 * at once, so it must be thread-safe. */
	int (*enqueue)(void *self, void *payload);
	void *self;
} blq_enqueuer;

#ifdef __cplusplus
}
#endif

#endif
