/*
 * percpu_order: what per-CPU lanes (per-cpu-lanes.patch) do to one
 * producer's order when it migrates. One producer, one worker, a paused
 * queue: the producer pins itself to CPU 0, enqueues 100 items, to CPU 1,
 * 100 more, and so on for 6 blocks; then the queue resumes and the
 * worker records the order the items start in. With per-producer lanes
 * the producer's items are all in its lane: they start 0, 1, 2, ...
 * With per-CPU lanes blocks 0, 2, 4 sit in CPU 0's lane and 1, 3, 5 in
 * CPU 1's; the worker drains its home lane first, so newer items start
 * before older ones. Prints the inversions (an item that starts after
 * a newer one of the same producer) and exits 1 when there are any.
 *
 *   cc -O2 -I include percpu_order.c BUILD/libblq.a -lpthread -lm
 * (bench/variants/per_cpu_lanes.sh ORDER=1 builds and runs it in both.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#define BLOCK 100
#define BLOCKS 6
#define N (BLOCK * BLOCKS)

static uintptr_t started[N];
static unsigned nstarted;

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx, (void)task;
	started[nstarted++] = (uintptr_t)payload - 1; /* one worker: no race */
	return 0;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

int main(void)
{
	blq_config cfg = {.name = "order", .capacity = 4096, .workers = 1, .worker = work};
	blq_error err;
	blq *q = blq_new(&cfg, &err);

	if (q == NULL || blq_pause(q) != 0) {
		fprintf(stderr, "percpu_order: blq_new/blq_pause failed\n");
		return 2;
	}
	for (int b = 0; b < BLOCKS; b++) {
		if (pin(b % 2) != 0) {
			perror("percpu_order: sched_setaffinity (needs 2 CPUs)");
			return 2;
		}
		for (int i = 0; i < BLOCK; i++)
			if (blq_enqueue(q, (void *)(uintptr_t)(b * BLOCK + i + 1)) != 0)
				return 2;
	}
	blq_resume(q);
	blq_close(q);
	blq_free(q);

	unsigned inv = 0;
	uintptr_t newest = 0;

	for (unsigned i = 0; i < nstarted; i++) {
		if (i > 0 && started[i] < newest)
			inv++;
		if (started[i] > newest)
			newest = started[i];
	}
	printf("percpu_order: %u items started; %u started after a newer one of the same "
	       "producer; the start order's first items:",
	       nstarted, inv);
	for (unsigned i = 0; i < nstarted; i += BLOCK / 2)
		printf(" %lu", (unsigned long)started[i]);
	printf("\n");
	return inv != 0 || nstarted != N;
}
