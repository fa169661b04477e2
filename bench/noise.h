/* A busy host on demand (W1-NOISY): one CPU-bound thread per online core,
 * nice 0, spinning beside the workload for as long as it runs (noise.c). */
#ifndef BLQ_BENCH_NOISE_H
#define BLQ_BENCH_NOISE_H

#include <stdint.h>

/* Starts the threads. Returns how many, or -1 (nothing left running). */
int bench_noise_start(void);

/* Stops and joins them. */
void bench_noise_stop(void);

/* CPU time (ns) and context switches (voluntary and not) the threads of
 * the last bench_noise_start took, each measured by the thread itself as
 * it stops: perf stat counts the whole process, noise included. */
void bench_noise_usage(uint64_t *cpu_ns, uint64_t *context_switches);

#endif
