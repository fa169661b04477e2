/*
 * Clock interface, so tests can drive time. Defaults: CLOCK_MONOTONIC for
 * intervals and deadlines, CLOCK_REALTIME for the time-of-day schedule.
 * Either callback may be left NULL for its default; ctx goes to both.
 */
#ifndef BLQ_CLOCK_H
#define BLQ_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct blq_clock {
	/* Nanoseconds on a clock that never goes backwards. Thread-safe. */
	uint64_t (*now_ns)(void *ctx);
	/* Nanoseconds since the Unix epoch, read as local time of day by
	 * time-of-day schedules. Thread-safe. */
	uint64_t (*wall_ns)(void *ctx);
	void *ctx;
} blq_clock;

#ifdef __cplusplus
}
#endif

#endif
