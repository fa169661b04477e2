/*
 * Baselines that blq-bench runs side by side with blq: the same workload
 * shape pushed through another handoff mechanism, in the same process.
 *
 * Every baseline follows one contract so the driver can time them alike:
 *   - it starts `workers` consumer threads and `producers` producer threads;
 *   - producer p pushes the payloads (void *)(uintptr_t)(i + 1) for every
 *     i in [p * per, (p + 1) * per) where per = items / producers (the
 *     driver passes items divisible by producers), in increasing order;
 *   - when shape->pace_ns is non-zero, a producer waits until
 *     start + k * pace_ns (busy-waiting on CLOCK_MONOTONIC) before its k-th push;
 *   - just before each push the producer calls shape->on_push(payload) when
 *     it is non-NULL (the latency workload stamps the time there);
 *   - each consumer calls shape->task(payload) exactly once per payload;
 *   - the function returns when every payload has been handed to task and
 *     every thread it started has been joined.
 *
 * Return: elapsed wall time in nanoseconds from the moment the threads are
 * released to the moment the last payload finished, or a negative value
 * when the system could not be set up (threads, memory).
 */
#ifndef BLQ_BENCH_BASELINE_H
#define BLQ_BENCH_BASELINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_shape {
	unsigned producers;  /* producer threads, >= 1 */
	unsigned workers;    /* consumer threads, >= 1 */
	size_t items;        /* total payloads, a multiple of producers */
	size_t capacity;     /* bound of the handoff buffer where the system has one */
	uint64_t pace_ns;    /* 0: push as fast as possible */
	void (*task)(void *payload);    /* the task body, run by consumers */
	void (*on_push)(void *payload); /* optional, run by producers */
	/* > 1: a producer hands over this many payloads per call (its
	 * slice's last call may have fewer), in the same order, where the
	 * system has a batch call (blq_enqueue_batch); not with pace_ns. */
	unsigned batch;
} bench_shape;

/* GLib GThreadPool used as its documentation intends: g_thread_pool_new with
 * max_threads = workers, exclusive = TRUE, and g_thread_pool_push (unbounded;
 * capacity is ignored). */
int64_t bench_run_glib(const bench_shape *shape);

/* A textbook bounded pool: a ring of `capacity` payloads under one mutex with
 * two condition variables (not_full, not_empty). */
int64_t bench_run_mutex(const bench_shape *shape);

/* The limit: a raw Concurrency Kit ck_ring in MPMC mode of `capacity` slots
 * (rounded up to a power of two), producers and consumers spin with
 * sched_yield() while full or empty. No blocking, no accounting. */
int64_t bench_run_ckring(const bench_shape *shape);

/* The least handoff (baseline_pairs.c): a ring of capacity / producers
 * slots per producer, read by consumer (ring % workers) alone, producers and
 * consumers sleeping on a futex after a short spin. No CAS, no accounting,
 * no stealing: what moving items between threads costs on this host when a
 * design pays for nothing else. Has a batch push. */
int64_t bench_run_pairs(const bench_shape *shape);

/* The floor: no handoff at all, the task body alone spread over the
 * cores (one thread per online CPU, each running its share of the items
 * back to back). Elapsed ns from their release to the last one's end. */
int64_t bench_run_floor(const bench_shape *shape);

/* Monotonic clock in nanoseconds, shared by the driver and the baselines. */
uint64_t bench_now_ns(void);

#endif
