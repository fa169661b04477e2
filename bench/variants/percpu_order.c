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
 * Then the front leak: a paused queue of capacity 10 whose DLQ records
 * what leaks. Producer X, on CPU 0, enqueues 1-5 and stays alive;
 * producer Y, on CPU 0 too, enqueues 6-10 and then 11, which finds the
 * queue full and leaks its own oldest item: 6 with per-producer lanes
 * (Y's lane). With per-CPU lanes X's and Y's items share CPU 0's lane,
 * and the oldest there is X's 1. Exits 1 when the dropped item is not 6.
 *
 *   cc -O2 -I include percpu_order.c BUILD/libblq.a -lpthread -lm
 * (bench/variants/per_cpu_lanes.sh ORDER=1 builds and runs it in both.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
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

static uintptr_t dropped[4];
static unsigned ndropped;

static int dlq_put(void *self, void *payload)
{
	(void)self;
	if (ndropped < 4)
		dropped[ndropped] = (uintptr_t)payload;
	ndropped++;
	return 0;
}

typedef struct producer {
	blq *q;
	uintptr_t from, to; /* ids from..to */
	sem_t *done, *stay; /* stay: NULL, or wait there after pushing */
} producer;

static void *produce(void *arg)
{
	producer *p = arg;

	if (pin(0) != 0)
		perror("percpu_order: sched_setaffinity");
	for (uintptr_t id = p->from; id <= p->to; id++)
		if (blq_enqueue(p->q, (void *)id) != 0)
			fprintf(stderr, "percpu_order: enqueue %lu failed\n", (unsigned long)id);
	sem_post(p->done);
	if (p->stay != NULL)
		sem_wait(p->stay);
	return NULL;
}

/* 0 when the front leak dropped Y's own oldest (6). */
static int front_leak(void)
{
	blq_config cfg = {.name = "leak",
			  .capacity = 10,
			  .workers = 1,
			  .worker = work,
			  .dlq = {.enqueue = dlq_put},
			  .leak_direction = BLQ_LEAK_FRONT};
	blq_error err;
	blq *q = blq_new(&cfg, &err);
	sem_t xdone, ydone, xstay;
	pthread_t x, y;

	if (q == NULL || blq_pause(q) != 0)
		return 2;
	sem_init(&xdone, 0, 0);
	sem_init(&ydone, 0, 0);
	sem_init(&xstay, 0, 0);
	producer px = {.q = q, .from = 1, .to = 5, .done = &xdone, .stay = &xstay};
	producer py = {.q = q, .from = 6, .to = 11, .done = &ydone};

	pthread_create(&x, NULL, produce, &px);
	sem_wait(&xdone);
	pthread_create(&y, NULL, produce, &py);
	sem_wait(&ydone);
	pthread_join(y, NULL);
	sem_post(&xstay);
	pthread_join(x, NULL);
	nstarted = 0;
	blq_resume(q);
	blq_close(q);
	blq_free(q);
	printf("percpu_order: front leak: Y (6-11, X's 1-5 alive on the same CPU) dropped %u item(s):",
	       ndropped);
	for (unsigned i = 0; i < ndropped && i < 4; i++)
		printf(" %lu", (unsigned long)dropped[i]);
	printf(" (its own oldest is 6)\n");
	return ndropped == 1 && dropped[0] == 6 ? 0 : 1;
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
	int bad = inv != 0 || nstarted != N;

	return front_leak() != 0 || bad;
}
