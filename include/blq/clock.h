/**
 * \file
 * Clock interface, so tests can drive time. Defaults: CLOCK_MONOTONIC for
 * intervals and deadlines, CLOCK_REALTIME for the time-of-day schedule.
 * Either callback may be left NULL for its default; ctx goes to both.
 * Nothing here to call: a queue calls the callbacks (blq_config.clock).
 */
#ifndef BLQ_CLOCK_H
#define BLQ_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A time source: two callbacks and their context (blq_config.clock).
 * Both are called from the queue's producers, workers and helper threads
 * at once, so they must be thread-safe. */
typedef struct blq_clock {
	/** Nanoseconds on a clock that never goes backwards. NULL:
	 * CLOCK_MONOTONIC (extrapolated from the TSC on CPUs with an invariant
	 * one, to within tens of nanoseconds). */
	uint64_t (*now_ns)(void *ctx);
	/** Nanoseconds since the Unix epoch, read as local time of day by
	 * time-of-day schedules. NULL: CLOCK_REALTIME. */
	uint64_t (*wall_ns)(void *ctx);
	/** Passed to both callbacks; borrowed (must outlive the queue). A
	 * ctx without either callback is refused by blq_new. */
	void *ctx;
} blq_clock;

#ifdef __cplusplus
}
#endif

#endif
