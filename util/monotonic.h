/* CLOCK_MONOTONIC helpers shared by the modules. Not installed. */
#ifndef BLQ_UTIL_MONOTONIC_H
#define BLQ_UTIL_MONOTONIC_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (the kernel's, as every sleep deadline
 * needs; the queue's cheap default clock is blq__fast_ns in queue/). */
uint64_t blq__monotonic_ns(void);

/* a + b, saturated: a deadline that would wrap means "never". */
static inline uint64_t blq__sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* An absolute CLOCK_MONOTONIC time in ns as the timespec that
 * pthread_cond_timedwait and futex waits take. */
static inline struct timespec blq__timespec_of(uint64_t abs_ns)
{
	return (struct timespec){.tv_sec = (time_t)(abs_ns / 1000000000u),
				 .tv_nsec = (long)(abs_ns % 1000000000u)};
}

/* A condition variable whose timed waits are on CLOCK_MONOTONIC, so a
 * wall-clock jump neither fires nor holds back a wait. Returns 0 or the
 * pthread error. */
int blq__cond_init_monotonic(pthread_cond_t *c);
/* Waits on c (made by blq__cond_init_monotonic; mu held) until woken or
 * until deadline_ns (CLOCK_MONOTONIC; UINT64_MAX: no deadline). Spurious
 * wake-ups return too. */
void blq__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, uint64_t deadline_ns);

#endif
