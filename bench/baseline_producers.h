/*
 * The producer side every baseline shares (baseline.h's contract): threads
 * released together by a barrier, each pushing its slice of payloads in
 * order, paced when the shape says so.
 */
#ifndef BLQ_BENCH_BASELINE_PRODUCERS_H
#define BLQ_BENCH_BASELINE_PRODUCERS_H

#include <pthread.h>

#include "baseline.h"

typedef struct bench_producers {
	const bench_shape *shape;
	void (*push)(void *sys, void *payload); /* the system's enqueue */
	/* Its batch enqueue, used when shape->batch > 1 (NULL: none). */
	void (*push_batch)(void *sys, void *const *payloads, size_t n);
	void *sys;
	pthread_barrier_t go; /* producers + the caller */
	uint64_t start_ns;
	pthread_t *threads;
	struct bench_producer_arg *args;
} bench_producers;

/* Starts the producers; they wait on the barrier. 0 or -1. */
int bench_producers_start(bench_producers *p, const bench_shape *s,
			  void (*push)(void *sys, void *payload), void *sys);
/* Releases them and records start_ns. */
void bench_producers_go(bench_producers *p);
/* Joins them and frees what start allocated. */
void bench_producers_join(bench_producers *p);

#endif
