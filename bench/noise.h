/* A busy host on demand (W1-NOISY): one CPU-bound thread per online core,
 * nice 0, spinning beside the workload for as long as it runs (noise.c). */
#ifndef BLQ_BENCH_NOISE_H
#define BLQ_BENCH_NOISE_H

/* Starts the threads. Returns how many, or -1 (nothing left running). */
int bench_noise_start(void);

/* Stops and joins them. */
void bench_noise_stop(void);

#endif
