/*
 * SIDES: what one item costs each side of a blq queue on its own, with
 * nobody racing it (issue #33: "measure what limits it").
 *
 * W1's ns/item mixes both sides with the host's scheduling: four threads
 * on two CPUs, a producer that finds the queue full, a worker that finds
 * it empty. Here one thread enqueues `capacity` items into a paused
 * queue of 4096 (no worker takes any meanwhile), then resumes it and waits for
 * its one worker to drain them with a task that does nothing; a round is
 * many such cycles, timed side by side. Run twice: with the producer and
 * the worker on one CPU (every slot's line stays in that core's caches)
 * and free to run on two (each slot's line crosses cores twice a lap, as
 * in W1). The difference between the two is what moving the items'
 * lines costs; what is left on one CPU is the instructions. drain_ns
 * also carries a cycle's two wake-ups (the worker's at the resume, the
 * waiter's at idle), a few microseconds over 4096 items.
 *
 * Pinning: sched_setaffinity on the calling thread before blq_new, which
 * the queue's worker thread inherits; put back after the queue is freed.
 */
#include "bench_sides.h"
#include "baseline.h"
#include "median.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#define SIDES_CAPACITY 4096u
#define SIDES_CYCLES 500u

static int nothing(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	(void)payload;
	(void)t;
	return 0;
}

/* One round: SIDES_CYCLES fills and drains of a fresh queue. *enq, *drain:
 * ns per item. 0, or -1 (said why on stderr). */
static int round_of(double *enq, double *drain)
{
	blq_config c = {.name = "sides", .capacity = SIDES_CAPACITY, .workers = 1,
			.worker = nothing};
	blq_error err;
	blq *q = blq_new(&c, &err);
	uint64_t te = 0, td = 0;

	if (q == NULL) {
		fprintf(stderr, "blq-bench: SIDES: blq_new: %s\n", err.msg);
		return -1;
	}
	for (unsigned k = 0; k < SIDES_CYCLES; k++) {
		if (blq_pause(q) != 0)
			goto fail;
		uint64_t t0 = bench_now_ns();

		for (uintptr_t i = 1; i <= SIDES_CAPACITY; i++)
			if (blq_try_enqueue(q, (void *)i) != 0) /* paused: room for all */
				goto fail;
		uint64_t t1 = bench_now_ns();

		if (blq_resume(q) != 0 || blq_wait_idle(q, UINT64_MAX) != 0)
			goto fail;
		te += t1 - t0;
		td += bench_now_ns() - t1;
	}
	blq_close(q);
	blq_free(q);
	*enq = (double)te / SIDES_CYCLES / SIDES_CAPACITY;
	*drain = (double)td / SIDES_CYCLES / SIDES_CAPACITY;
	return 0;
fail:
	fprintf(stderr, "blq-bench: SIDES: a paused queue of %u refused an item or did not drain\n",
		SIDES_CAPACITY);
	blq_close(q);
	blq_free(q);
	return -1;
}

int bench_sides(unsigned rounds)
{
	cpu_set_t was, one;
	double enq[2][64], drain[2][64];

	if (sched_getaffinity(0, sizeof(was), &was) != 0) {
		perror("blq-bench: SIDES: sched_getaffinity");
		return -1;
	}
	CPU_ZERO(&one);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &was)) {
			CPU_SET(cpu, &one);
			break;
		}
	/* Alternated per round, so a host that speeds up or slows down
	 * weighs on both alike. */
	for (unsigned r = 0; r < rounds; r++)
		for (int pinned = 0; pinned < 2; pinned++) {
			if (sched_setaffinity(0, sizeof(cpu_set_t), pinned ? &one : &was) != 0) {
				perror("blq-bench: SIDES: sched_setaffinity");
				return -1;
			}
			int rc = round_of(&enq[pinned][r], &drain[pinned][r]);

			if (sched_setaffinity(0, sizeof(was), &was) != 0 || rc != 0)
				return -1;
		}
	for (int pinned = 0; pinned < 2; pinned++)
		printf("BENCH SIDES blq enqueue_ns=%.1f drain_ns=%.1f cpus=%s capacity=%u "
		       "cycles=%u rounds=%u\n",
		       bench_median(enq[pinned], rounds), bench_median(drain[pinned], rounds),
		       pinned ? "one" : "two", SIDES_CAPACITY, SIDES_CYCLES, rounds);
	return 0;
}
