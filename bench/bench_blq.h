/* blq under the baseline contract, plus the allocation counter the driver
 * keeps (its malloc interposer, blq_bench.c). */
#ifndef BLQ_BENCH_BLQ_H
#define BLQ_BENCH_BLQ_H

#include <blq/blq.h>

#include "baseline.h"

/* Runs the shape through a blq queue configured like *base (capacity and,
 * unless base sets a pool, workers come from the shape; the worker is one
 * that runs shape->task unless base sets its own, which then receives the
 * shape as its ctx).
 * *allocs_in_run receives the allocations made while items flowed: from the
 * producers' release to the last item's end, excluding queue creation and
 * thread start-up. Returns elapsed ns or -1. */
int64_t bench_run_blq(const bench_shape *shape, const blq_config *base, uint64_t *allocs_in_run);

/* Allocations (malloc, calloc, realloc, aligned_alloc, posix_memalign)
 * made by the whole process so far. */
uint64_t bench_allocs(void);

#endif
