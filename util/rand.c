/*
 * The library's one random generator: blq_rand_u64 and blq_rand_below
 * (declared in blq/retry.h), used by the retry jitters and the QoS random
 * evaluator.
 *
 * splitmix64 with one state per thread: no lock, no system call, no
 * shared line. Not cryptographic; spreading retries and drawing
 * priorities need speed and a fair spread, nothing more.
 */
#include <stdatomic.h>
#include <stdint.h>

#include <blq/retry.h>

#include "monotonic.h"

/* splitmix64: tiny, fast, and good enough for spreading retries. The
 * state is per thread, seeded from the thread's own address, the time and
 * a process-wide counter (one relaxed add per thread, ever). */
static _Thread_local uint64_t rng_state;
static _Atomic uint64_t rng_threads;

static uint64_t seed(void)
{
	return (uint64_t)(uintptr_t)&rng_state ^ (blq__monotonic_ns() << 20) ^
	       atomic_fetch_add_explicit(&rng_threads, 0x632BE59BD9B4E019ull,
					 memory_order_relaxed);
}

uint64_t blq_rand_u64(void)
{
	if (rng_state == 0)
		rng_state = seed() | 1;
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t blq_rand_below(uint64_t n)
{
	/* Multiply-shift: uniform enough for n far below 2^64, no modulo. */
	return (uint64_t)(((unsigned __int128)blq_rand_u64() * n) >> 64);
}
