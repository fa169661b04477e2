/*
 * The floor of the W1 family (baseline.h, bench_run_floor): what the task
 * bodies alone cost when spread over the cores with no queue at all. A
 * handoff can approach it but never beat it, so "within 1.5x of the
 * floor" says how much of the machine the queue itself takes.
 *
 * It is the producer harness (baseline_producers.c) with one producer per
 * online CPU whose "push" runs the task itself: the same release, the same
 * slices, the same clock as every system it is set beside.
 */
#include <unistd.h>

#include "baseline.h"
#include "baseline_producers.h"

static void run_task(void *sys, void *payload)
{
	((const bench_shape *)sys)->task(payload);
}

int64_t bench_run_floor(const bench_shape *s)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	bench_shape f = {.producers = cpus > 0 && cpus < 256 ? (unsigned)cpus : 1,
			 .task = s->task};
	bench_producers p;

	/* The harness runs items / producers per thread: time that many,
	 * and scale to the shape's count. */
	f.items = s->items - s->items % f.producers;
	if (f.items == 0 || bench_producers_start(&p, &f, run_task, &f) != 0)
		return -1;
	bench_producers_go(&p);
	bench_producers_join(&p);
	int64_t elapsed = (int64_t)(bench_now_ns() - p.start_ns);
	return (int64_t)((double)elapsed * (double)s->items / (double)f.items);
}
