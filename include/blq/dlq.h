/**
 * \file
 * Ready-made DLQs. Any blq queue is a DLQ too (blq_as_enqueuer), and so is
 * a dump (blq_dump_enqueuer, blq/dlqdump.h). The names of the reasons a
 * queue gives its DLQ (blq_dlq_why, blq/enqueuer.h).
 *
 * Thread-safety: blq_discard_enqueuer and blq_discard_count may be called
 * from any thread, and the enqueuer made here accepts payloads from many
 * threads at once (the count is a relaxed atomic). blq_discard_init is the
 * exception (see there).
 */
#ifndef BLQ_DLQ_H
#define BLQ_DLQ_H

#include <stdint.h>

#include <blq/enqueuer.h>
#include <blq/error.h>
#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The discard DLQ: frees every payload it receives and counts it, for a
 * queue that must leak rather than block but keeps nothing of what leaked.
 * Caller-allocated (no malloc, nothing to free); initialise with
 * blq_discard_init, which sets its fields. */
typedef struct blq_discard {
	void (*item_free)(void *payload); /**< frees each payload; NULL: none */
	uint64_t count; /**< accessed atomically; read with blq_discard_count */
} blq_discard;

/**
 * Prepare a discard DLQ: set its free function, zero its count.
 * \param[out] d the caller's storage; it must outlive every queue using
 *        it. Nothing is allocated: nothing to free. NULL is a no-op.
 * \param item_free frees each payload; NULL drops payloads without freeing.
 * \threadsafety Not thread-safe for the same \p d: call it before any queue
 * uses \p d, never while one may leak into it.
 */
BLQ_API void blq_discard_init(blq_discard *d, void (*item_free)(void *payload));

/**
 * \p d as a blq_enqueuer (for blq_config.dlq): its enqueue takes every
 * payload (returns 0), frees it with item_free and counts it.
 * \param d an initialised discard DLQ, borrowed: it must outlive every
 *        queue using the enqueuer. NULL gives an enqueuer that takes and
 *        drops every payload without freeing or counting it.
 * \return the enqueuer, a value holding \p d: nothing to free.
 */
BLQ_API blq_enqueuer blq_discard_enqueuer(blq_discard *d);

/**
 * Payloads discarded so far.
 * \param d the discard DLQ; NULL reads 0.
 * \return the count, a snapshot while queues leak into \p d.
 */
BLQ_API uint64_t blq_discard_count(const blq_discard *d);

/**
 * A reason an item was dead-lettered, in words, for logs and tools:
 * "overflow rear", "overflow front", "failed", "deadline", "closed".
 * \param reason any value, also one read from a dump.
 * \return a static string, never NULL: "unknown" for BLQ_DLQ_UNKNOWN and
 *         for values this build does not name.
 * \threadsafety Any thread.
 */
BLQ_API const char *blq_dlq_reason_name(enum blq_dlq_reason reason);

/**
 * The reason a name says: the inverse of blq_dlq_reason_name, for tools
 * and formats that print reasons. '-' or '_' may stand for the space
 * ("overflow-rear"); case matters not.
 * \param name the name, NUL-terminated.
 * \param[out] out the reason.
 * \retval 0 a reason's name ("unknown" gives BLQ_DLQ_UNKNOWN).
 * \retval BLQ_EINVAL \p name or \p out NULL, or no reason has that name.
 * \threadsafety Any thread.
 */
BLQ_API int blq_dlq_reason_parse(const char *name, enum blq_dlq_reason *out);

#ifdef __cplusplus
}
#endif

#endif
