/*
 * Clock interface, so tests can drive time. Default: CLOCK_MONOTONIC for
 * intervals and deadlines.
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
	void *ctx;
} blq_clock;

#ifdef __cplusplus
}
#endif

#endif
