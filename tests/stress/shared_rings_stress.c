/*
 * A reserved push into many shared rings (queue/rings.c push_reserved,
 * push_missed). held reserves a place before the push, so the shared
 * rings always have room for it at any one moment; but the push looks at
 * them one after another, and the room can move behind its look (a
 * worker takes from a ring it passed, another producer fills the one it
 * goes to next). The code before 42d1f82 aborted on such a miss (under
 * TSan, queue_stress_lanes: about one round in a hundred).
 *
 * This program makes misses frequent in every build: streams equal to
 * the capacity (rings of one slot, so a look passes up to `capacity`
 * rings), more producers than lanes (queue/lanes.h: 16; the others push
 * into the shared rings, each from its own ring, singles and batches of
 * up to 32, a batch's items over many rings), a blocking enqueue that
 * keeps the queue full, and workers that take as fast as they can.
 * Measured on a 2-vCPU host: with the miss logged instead of the abort,
 * 1 to 4 misses in 4 rounds; 378f8de's library (the abort) aborted in 11
 * runs of 11 of the ctest's 6 rounds.
 *
 * Checks: no abort; every item taken exactly once, with its magic; after
 * the close in == processed (nothing leaked, failed or lost) and every
 * producer's enqueues accepted. A plain program (Criterion aborts under
 * TSan): prints "N passed, N failed", exits non-zero on any failure.
 * Usage: shared_rings_stress [rounds] [items-per-producer] [producers]
 *        [capacity]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "stress_util.h"

#define MAX_PRODUCERS 128
#define WORKERS 4
#define MAGIC 0x5eedu

typedef struct item {
	unsigned magic;
	_Atomic int taken;
} item;

typedef struct round_ctx {
	blq *q;
	item *items;
	uint64_t per;
	_Atomic unsigned errors;
	_Atomic uint64_t refused;
	_Atomic unsigned started; /* the producers' indexes, in start order */
} round_ctx;

static unsigned g_producers = 64;
static unsigned g_capacity = 64;

static int worker(void *ctx, void *payload, blq_task *task)
{
	round_ctx *r = ctx;
	item *it = payload;

	(void)task;
	if (it->magic != MAGIC || atomic_fetch_add(&it->taken, 1) != 0)
		atomic_fetch_add(&r->errors, 1);
	return 0;
}

static void *producer(void *p)
{
	round_ctx *r = p;
	unsigned index = atomic_fetch_add(&r->started, 1);
	item *mine = &r->items[index * r->per];
	unsigned seed = index * 2654435761u;

	for (uint64_t i = 0; i < r->per;) {
		/* One call in four a batch of 2 to 32: its reservation's items
		 * spread over many one-slot rings. */
		unsigned m = rand_r(&seed) % 4 == 0 ? 2 + rand_r(&seed) % 31 : 1;
		void *batch[32];

		if (m > r->per - i)
			m = (unsigned)(r->per - i);
		for (unsigned k = 0; k < m; k++)
			batch[k] = &mine[i + k];
		ssize_t took = m == 1 ? (blq_enqueue(r->q, batch[0]) == 0 ? 1 : 0)
				      : blq_enqueue_batch(r->q, batch, m);

		if (took != (ssize_t)m)
			atomic_fetch_add(&r->refused, m - (took > 0 ? (uint64_t)took : 0));
		i += m;
	}
	return NULL;
}

static int run_round(unsigned round, uint64_t per)
{
	round_ctx *r = calloc(1, sizeof(*r));
	blq_config c = {0};
	blq_error err;
	uint64_t n = (uint64_t)g_producers * per;

	r->per = per;
	r->items = calloc(n, sizeof(item));
	for (uint64_t i = 0; i < n; i++)
		r->items[i].magic = MAGIC;
	c.name = "shared";
	c.capacity = g_capacity;
	c.streams = g_capacity;
	c.workers = WORKERS;
	c.worker = worker;
	c.worker_ctx = r;
	r->q = blq_new(&c, &err);
	if (r->q == NULL) {
		fprintf(stderr, "shared_rings_stress: blq_new: %s\n", err.msg);
		return 1;
	}

	pthread_t t[MAX_PRODUCERS];

	for (unsigned i = 0; i < g_producers; i++)
		pthread_create(&t[i], NULL, producer, r);
	for (unsigned i = 0; i < g_producers; i++)
		pthread_join(t[i], NULL);
	blq_close(r->q);

	struct blq_stats s;
	unsigned bad = 0;

	blq_stats(r->q, &s);
	if (!stress_balanced("shared_rings_stress", round, &s))
		bad++;
	if (s.in != n || s.processed != n || atomic_load(&r->refused) != 0) {
		fprintf(stderr,
			"shared_rings_stress: round %u: %" PRIu64 " items, in %" PRIu64
			" processed %" PRIu64 " refused %" PRIu64 "\n",
			round, n, s.in, s.processed, atomic_load(&r->refused));
		bad++;
	}
	for (uint64_t i = 0; i < n; i++)
		if (atomic_load(&r->items[i].taken) != 1) {
			if (bad++ < 10)
				fprintf(stderr, "shared_rings_stress: round %u: item %" PRIu64
						" taken %d times\n",
					round, i, atomic_load(&r->items[i].taken));
		}
	bad += atomic_load(&r->errors);
	blq_free(r->q);
	printf("round %2u: capacity %u streams %u producers %u items %" PRIu64 " -> %s\n", round,
	       g_capacity, g_capacity, g_producers, n, bad ? "FAIL" : "ok");
	free(r->items);
	free(r);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 3 && atoi(argv[3]) > 0 && atoi(argv[3]) <= MAX_PRODUCERS)
		g_producers = (unsigned)atoi(argv[3]);
	if (argc > 4 && atoi(argv[4]) > 0)
		g_capacity = (unsigned)atoi(argv[4]);
	return stress_main(argc, argv, 4, 5000, run_round);
}
