/*
 * Ready-made DLQs. Any blq queue is a DLQ too (blq_as_enqueuer).
 */
#ifndef BLQ_DLQ_H
#define BLQ_DLQ_H

#include <stdint.h>

#include <blq/enqueuer.h>
#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The discard DLQ: frees every payload it receives and counts it.
 * Caller-allocated (no malloc); initialise with blq_discard_init. */
typedef struct blq_discard {
	void (*item_free)(void *payload);
	uint64_t count; /* accessed atomically; read with blq_discard_count */
} blq_discard;

/**
 * blq_discard_init() - prepare a discard DLQ.
 * @d: caller's storage; must outlive every queue using it.
 * @item_free: frees each payload; NULL drops payloads without freeing.
 */
BLQ_API void blq_discard_init(blq_discard *d, void (*item_free)(void *payload));

/** blq_discard_enqueuer() - @d as a blq_enqueuer; it accepts every payload. */
BLQ_API blq_enqueuer blq_discard_enqueuer(blq_discard *d);

/** blq_discard_count() - payloads discarded so far. Thread-safe. */
BLQ_API uint64_t blq_discard_count(const blq_discard *d);

#ifdef __cplusplus
}
#endif

#endif
