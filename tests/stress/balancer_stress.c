/*
 * Balancer stress: a balanced queue (workers_min 0..1, max 6) with a 1 ms
 * heartbeat and a short sleep interval, so workers are started, put to
 * sleep, woken and stopped all the time, while producers push in bursts
 * and pauses, a controller pauses, resumes and waits for idle, and the
 * round ends in a random close. Checks, per round: every accepted item has
 * exactly one outcome, and in == processed + failed + leaked + lost.
 *
 * A plain program (runs under TSan): prints "N passed, N failed".
 * Usage: balancer_stress [rounds] [items-per-producer]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <blq/blq.h>

#include "stress_util.h"

#define PRODUCERS 3

typedef struct item {
	_Atomic int outcomes;
	bool accepted;
} item;

typedef struct round_ctx {
	blq *q;
	item *items;
	uint64_t per;
	_Atomic unsigned errors;
	_Atomic bool stop;
} round_ctx;

static round_ctx *g_round;

static void sleep_us(unsigned us)
{
	struct timespec ts = {0, (long)us * 1000};

	nanosleep(&ts, NULL);
}

static void outcome(item *it)
{
	if (atomic_fetch_add(&it->outcomes, 1) != 0)
		atomic_fetch_add(&g_round->errors, 1);
}

static int worker(void *ctx, void *payload, blq_task *t)
{
	item *it = payload;
	unsigned seed = (unsigned)(uintptr_t)it;

	(void)ctx, (void)t;
	if (rand_r(&seed) % 16 == 0)
		sleep_us(50);
	if (rand_r(&seed) % 10 == 0)
		return 1; /* failed: the queue frees it */
	outcome(it);
	return 0;
}

static void item_free(void *p)
{
	outcome(p);
}

static int dlq(void *self, void *p)
{
	(void)self;
	outcome(p);
	return 0;
}

typedef struct parg {
	round_ctx *r;
	unsigned index;
} parg;

static void *producer(void *arg)
{
	parg *a = arg;
	unsigned seed = a->index * 7919u + (unsigned)time(NULL);

	for (uint64_t i = 0; i < a->r->per; i++) {
		item *it = &a->r->items[a->index * a->r->per + i];

		if (blq_enqueue(a->r->q, it) == 0)
			it->accepted = true;
		if (rand_r(&seed) % 512 == 0)
			sleep_us(rand_r(&seed) % 3000); /* a lull: let the pool shrink */
	}
	return NULL;
}

static void *controller(void *arg)
{
	round_ctx *r = arg;
	unsigned seed = (unsigned)time(NULL);

	while (!atomic_load(&r->stop)) {
		switch (rand_r(&seed) % 4) {
		case 0:
			blq_pause(r->q);
			sleep_us(500);
			blq_resume(r->q);
			break;
		case 1:
			blq_wait_idle(r->q, 1000000);
			break;
		default:
			sleep_us(1000);
		}
	}
	return NULL;
}

static int run_round(unsigned round, uint64_t per)
{
	round_ctx r = {.per = per};
	unsigned seed = round * 2654435761u + (unsigned)time(NULL);
	blq_error err;

	r.items = calloc(PRODUCERS * per, sizeof(item));
	g_round = &r;
	blq_config c = {.name = "bstress", .capacity = 32 + rand_r(&seed) % 200,
			.workers_min = round % 2, .workers_max = 6, .worker = worker,
			.item_free = item_free, .heartbeat_interval_ns = 1000000,
			.sleep_interval_ns = 2000000, .force_calibration_limit = 2};
	if (round % 3 == 0)
		c.dlq.enqueue = dlq;
	r.q = blq_new(&c, &err);
	if (r.q == NULL) {
		fprintf(stderr, "balancer_stress: %s\n", err.msg);
		return 1;
	}
	pthread_t t[PRODUCERS], ctl;
	parg a[PRODUCERS];
	for (unsigned i = 0; i < PRODUCERS; i++) {
		a[i] = (parg){&r, i};
		pthread_create(&t[i], NULL, producer, &a[i]);
	}
	pthread_create(&ctl, NULL, controller, &r);
	for (unsigned i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&r.stop, true);
	pthread_join(ctl, NULL);
	int how = rand_r(&seed) % 3;
	if (how == 0)
		blq_close(r.q);
	else if (how == 1) {
		blq_close_timeout(r.q, 1000000);
		stress_wait_unstuck(r.q);
	}
	else
		blq_force_close(r.q);

	struct blq_stats s;
	blq_stats(r.q, &s);
	uint64_t accepted = 0;
	for (uint64_t i = 0; i < PRODUCERS * per; i++) {
		accepted += r.items[i].accepted;
		if (atomic_load(&r.items[i].outcomes) != (r.items[i].accepted ? 1 : 0))
			atomic_fetch_add(&r.errors, 1);
	}
	if (s.in != accepted || s.in != s.processed + s.failed + s.leaked + s.expired + s.lost)
		atomic_fetch_add(&r.errors, 1);
	printf("round %2u: min %u cap %3zu %s started %3" PRIu64 " stopped %3" PRIu64
	       " woken %3" PRIu64 " slept %3" PRIu64 " in %6" PRIu64 " -> %s\n",
	       round, c.workers_min, c.capacity, c.dlq.enqueue ? "leaky" : "block",
	       s.threads_started, s.threads_stopped, s.workers_woken, s.workers_slept, s.in,
	       atomic_load(&r.errors) ? "FAIL" : "ok");
	blq_free(r.q);
	free(r.items);
	return atomic_load(&r.errors) ? 1 : 0;
}

int main(int argc, char **argv)
{
	return stress_main(argc, argv, 10, 20000, run_round);
}
