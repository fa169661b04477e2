/*
 * Stress test in the style of Concurrency Kit's ring regressions: every item
 * carries a unique id, a magic value rewritten when taken, a per-producer
 * sequence number and an outcome counter, so a double take, a lost item or
 * a reordering is caught by the test itself.
 *
 * Each round: 4 producers (a quarter of their calls blocking or try
 * batches of 1 to 32 items), 4 workers, a small capacity, random worker
 * failures and stalls, a DLQ that sometimes refuses, alternating rear and
 * front leaking, streams 1 or 3, and a close chosen at random (graceful,
 * with a short timeout, forced). After the close every accepted item must
 * have exactly one outcome, the refused ones none, and
 * in == processed + failed + leaked + expired + lost.
 *
 * A plain program (Criterion aborts under TSan): prints its own
 * "N passed, N failed" line and exits non-zero on any failure.
 * Usage: queue_stress [rounds] [items-per-producer] [min-capacity] [producers]
 * A min-capacity of 256 or more (the ctest queue_stress_deep) keeps the
 * rings deep enough for workers to take ahead (worker.c) in every round.
 * More producers than a queue has lanes (queue/lanes.h: 16; the ctest
 * queue_stress_lanes runs 40) put some of them on the shared rings while
 * the others own lanes, and capacities above a lane's ring make lanes
 * spill: the order check covers both.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blq/blq.h>

#include "stress_util.h"

#define MAX_PRODUCERS 64
#define WORKERS 4
#define MAGIC_LIVE 0xdeadu
#define MAGIC_TAKEN 0xbeefu

typedef struct item {
	_Atomic unsigned magic;
	unsigned producer;
	uint64_t seq;          /* per-producer, increasing */
	_Atomic int taken;     /* times a worker started it */
	_Atomic int outcomes;  /* processed + freed + leaked: must end 1 */
	bool accepted;         /* enqueue returned 0 (set by its producer) */
} item;

typedef struct round_ctx {
	blq *q;
	item *items; /* g_producers * per */
	uint64_t per;
	unsigned fail_pct;
	_Atomic bool dlq_refuses;
	_Atomic bool closing; /* raised just before the close starts */
	_Atomic uint64_t dlq_got;
	/* last sequence seen per worker and producer: FIFO check (streams 1) */
	uint64_t last_seq[WORKERS][MAX_PRODUCERS];
	bool check_order;
	_Atomic unsigned errors;
	_Atomic uint64_t accepted;
	unsigned seed;
} round_ctx;

static round_ctx *g_round; /* item_free has no context argument */
static unsigned g_min_capacity = 16;
static unsigned g_producers = 4;

static void fail_check(round_ctx *r, const char *what, const item *it)
{
	if (atomic_fetch_add(&r->errors, 1) < 10)
		fprintf(stderr, "queue_stress: %s (producer %u seq %" PRIu64 ")\n", what,
			it->producer, it->seq);
}

static void outcome(round_ctx *r, item *it)
{
	if (atomic_fetch_add(&it->outcomes, 1) != 0)
		fail_check(r, "an item reached a second outcome", it);
}

static void stall(unsigned *seed)
{
	unsigned n = (unsigned)rand_r(seed) % 2048;

	for (volatile unsigned i = 0; i < n; i++)
		;
}

static int worker(void *ctx, void *payload, blq_task *task)
{
	round_ctx *r = ctx;
	item *it = payload;
	unsigned w = blq_task_worker(task);
	unsigned seed = (unsigned)(uintptr_t)it ^ r->seed;

	if (atomic_fetch_add(&it->taken, 1) != 0)
		fail_check(r, "an item was taken twice", it);
	if (atomic_exchange(&it->magic, MAGIC_TAKEN) != MAGIC_LIVE)
		fail_check(r, "a worker got an item with a bad magic", it);
	if (r->check_order) {
		/* last_seq holds the last seen seq + 1 (0: none yet) */
		if (r->last_seq[w][it->producer] > it->seq)
			fail_check(r, "a worker saw a producer's items out of order", it);
		r->last_seq[w][it->producer] = it->seq + 1;
	}
	if ((unsigned)rand_r(&seed) % 8 == 0)
		stall(&seed);
	if ((unsigned)rand_r(&seed) % 100 < r->fail_pct) {
		atomic_store(&it->magic, MAGIC_LIVE); /* the queue frees it */
		return 1;
	}
	outcome(r, it); /* processed: ours now */
	return 0;
}

static void item_free(void *payload)
{
	outcome(g_round, payload);
}

static int dlq_enqueue(void *self, void *payload)
{
	round_ctx *r = self;

	if (atomic_load(&r->dlq_refuses))
		return -1;
	atomic_fetch_add(&r->dlq_got, 1);
	outcome(r, payload);
	return 0;
}

typedef struct producer_arg {
	round_ctx *r;
	unsigned index;
} producer_arg;

/* Counts the outcome of an enqueue call for `it` (rc: 0 accepted). */
static void count_enqueue(round_ctx *r, item *it, int rc)
{
	if (rc == 0) {
		it->accepted = true;
		atomic_fetch_add(&r->accepted, 1);
	} else if (rc != BLQ_ECLOSED && rc != BLQ_EFULL) {
		fail_check(r, "enqueue returned an unexpected code", it);
	}
}

/* A batch of m items from i on, blocking or try: the queue owns the
 * first `took`, the producer keeps the rest (refused, as with a single
 * call's error). */
static void enqueue_batch(round_ctx *r, unsigned producer, uint64_t i, unsigned m, bool try_only)
{
	void *batch[32];

	for (unsigned k = 0; k < m; k++)
		batch[k] = &r->items[producer * r->per + i + k];
	ssize_t took = try_only ? blq_try_enqueue_batch(r->q, batch, m)
				: blq_enqueue_batch(r->q, batch, m);
	int rc = took < 0 ? (int)took : BLQ_EFULL; /* why the rest stayed ours */

	/* A blocking batch stops short only at a close (the flag is raised
	 * before it starts, so a short batch always finds it raised). */
	if (took > (ssize_t)m || (!try_only && took < (ssize_t)m && !atomic_load(&r->closing)))
		fail_check(r, "a blocking batch stopped short on an open queue", batch[0]);
	for (unsigned k = 0; k < m; k++)
		count_enqueue(r, batch[k], (ssize_t)k < took ? 0 : rc);
}

static void *producer(void *p)
{
	producer_arg *a = p;
	round_ctx *r = a->r;
	unsigned seed = r->seed * 31 + a->index;

	for (uint64_t i = 0; i < r->per;) {
		/* A quarter of the calls are batches of 1 to 32 items. */
		unsigned how = rand_r(&seed) % 8;
		unsigned m = how < 2 ? 1 + rand_r(&seed) % 32 : 1;

		if (m > r->per - i)
			m = (unsigned)(r->per - i);
		for (unsigned k = 0; k < m; k++) {
			item *it = &r->items[a->index * r->per + i + k];

			it->producer = a->index;
			it->seq = i + k;
			atomic_store(&it->magic, MAGIC_LIVE);
		}
		if (how < 2) {
			enqueue_batch(r, a->index, i, m, how == 0);
		} else {
			item *it = &r->items[a->index * r->per + i];

			count_enqueue(r, it, how == 2 || how == 3 ? blq_try_enqueue(r->q, it)
								   : blq_enqueue(r->q, it));
		}
		i += m;
		if (rand_r(&seed) % 64 == 0)
			stall(&seed);
	}
	return NULL;
}

static int run_round(unsigned round, uint64_t per)
{
	round_ctx *r = calloc(1, sizeof(*r));
	unsigned seed = (unsigned)time(NULL) ^ (round * 2654435761u);
	int closing = (int)(rand_r(&seed) % STRESS_NCLOSE);
	blq_config c = {0};
	blq_error err;

	r->per = per;
	r->seed = seed;
	r->items = calloc(g_producers * per, sizeof(item));
	r->fail_pct = rand_r(&seed) % 20;
	g_round = r;

	c.name = "stress";
	c.capacity = g_min_capacity + rand_r(&seed) % (g_min_capacity < 64 ? 64 : g_min_capacity);
	c.streams = round % 2 ? 3 : 1;
	r->check_order = c.streams == 1;
	c.workers = WORKERS;
	c.worker = worker;
	c.worker_ctx = r;
	c.item_free = item_free;
	if (round % 4 != 3) { /* every fourth round is not leaky: back-pressure */
		c.dlq.enqueue = dlq_enqueue;
		c.dlq.self = r;
		c.fail_to_dlq = round % 3 == 0;
		c.leak_direction = round % 2 ? BLQ_LEAK_FRONT : BLQ_LEAK_REAR;
	}
	r->q = blq_new(&c, &err);
	if (r->q == NULL) {
		fprintf(stderr, "queue_stress: blq_new: %s\n", err.msg);
		return 1;
	}

	pthread_t t[MAX_PRODUCERS];
	producer_arg args[MAX_PRODUCERS];
	for (unsigned i = 0; i < g_producers; i++) {
		args[i] = (producer_arg){r, i};
		pthread_create(&t[i], NULL, producer, &args[i]);
	}
	/* Close while the producers are still going, at a random moment. */
	struct timespec ts = {0, (long)(rand_r(&seed) % 20) * 1000000L};
	nanosleep(&ts, NULL);
	if (rand_r(&seed) % 4 == 0)
		atomic_store(&r->dlq_refuses, true);
	atomic_store(&r->closing, true);
	const char *how = stress_close(r->q, closing, &seed);
	for (unsigned i = 0; i < g_producers; i++)
		pthread_join(t[i], NULL);

	struct blq_stats s;
	blq_stats(r->q, &s);
	if (!stress_balanced("queue_stress", round, &s))
		atomic_fetch_add(&r->errors, 1);
	if (s.in != atomic_load(&r->accepted)) {
		fprintf(stderr, "queue_stress: round %u: in %" PRIu64 " but producers saw %" PRIu64 " accepted\n",
			round, s.in, atomic_load(&r->accepted));
		atomic_fetch_add(&r->errors, 1);
	}
	if (s.leaked != atomic_load(&r->dlq_got)) {
		fprintf(stderr, "queue_stress: round %u: leaked %" PRIu64 " but the DLQ got %" PRIu64 "\n",
			round, s.leaked, atomic_load(&r->dlq_got));
		atomic_fetch_add(&r->errors, 1);
	}
	for (uint64_t i = 0; i < g_producers * per; i++) {
		item *it = &r->items[i];
		int want = it->accepted ? 1 : 0;

		if (atomic_load(&it->outcomes) != want)
			fail_check(r, it->accepted ? "an accepted item has no single outcome"
						   : "a refused item reached an outcome",
				   it);
	}
	blq_free(r->q);
	unsigned errors = atomic_load(&r->errors);
	printf("round %2u: streams %u cap %3zu %s %-8s fail %2u%% in %6" PRIu64
	       " processed %6" PRIu64 " failed %5" PRIu64 " leaked %6" PRIu64 " lost %5" PRIu64
	       " -> %s\n",
	       round, c.streams, c.capacity, c.dlq.enqueue ? "leaky" : "block",
	       how, r->fail_pct, s.in,
	       s.processed, s.failed, s.leaked, s.lost, errors ? "FAIL" : "ok");
	free(r->items);
	free(r);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 3 && atoi(argv[3]) > 0)
		g_min_capacity = (unsigned)atoi(argv[3]);
	if (argc > 4 && atoi(argv[4]) > 0 && atoi(argv[4]) <= MAX_PRODUCERS)
		g_producers = (unsigned)atoi(argv[4]);
	return stress_main(argc, argv, 20, 20000, run_round);
}
