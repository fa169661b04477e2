/*
 * A number per thread, for spreading unknown threads (the callers'
 * producers, metrics writers) over a few shared counter cells. Not
 * installed.
 *
 * The address of a thread-local byte, multiplied by the golden ratio
 * (Fibonacci hashing): distinct per live thread, no system call, no
 * registration, and the top bits are well mixed even though thread-local
 * blocks sit at regular distances. Each file that includes this gets its
 * own anchor (static): a thread's number differs between files, which no
 * caller relies on.
 */
#ifndef BLQ_UTIL_THREAD_HASH_H
#define BLQ_UTIL_THREAD_HASH_H

#include <stdint.h>

/* This thread's index among `cells` (1..16): the hash's top four bits
 * modulo cells. Thread-safe; a few instructions. */
static inline unsigned blq__thread_cell(unsigned cells)
{
	static _Thread_local char anchor;
	uint64_t h = (uint64_t)(uintptr_t)&anchor * UINT64_C(0x9E3779B97F4A7C15);

	return (unsigned)(h >> 60) % cells;
}

#endif
