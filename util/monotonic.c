/*
 * CLOCK_MONOTONIC for every sleep deadline (event counts, condition
 * variables, timed joins): wall-clock jumps must neither fire nor hold back
 * a wait. The queue's own cheap clock (queue/clock.c) is for timestamps;
 * deadlines given to the kernel come from here.
 */
#include "monotonic.h"

#include <time.h>

uint64_t blq__monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int blq__cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int e = pthread_condattr_init(&a);

	if (e != 0)
		return e;
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	e = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return e;
}

void blq__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, uint64_t deadline_ns)
{
	if (deadline_ns == UINT64_MAX) {
		pthread_cond_wait(c, mu);
		return;
	}
	struct timespec ts = blq__timespec_of(deadline_ns);
	pthread_cond_timedwait(c, mu, &ts);
}
