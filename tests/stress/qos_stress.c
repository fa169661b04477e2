/*
 * QoS stress, in the style of queue_stress.c: every item carries a magic
 * value, a per-producer sequence number, the percent its evaluator gave it
 * and an outcome counter, so a double take, a lost item, an item in the
 * wrong order within its sub-queue or a miscount is caught by the test.
 *
 * Each round draws a QoS queue at random: PQ, RR or WRR; 2 to 4
 * sub-queues of small random capacities and weights; 1 to 3 egress
 * threads over 1 or 2 egress streams; 1 to 4 workers; leaky (rear or
 * front, a DLQ that sometimes refuses) or blocking; a custom evaluator
 * (the item's own percent) or the random one. 4 producers mix
 * blq_enqueue, blq_try_enqueue, blq_enqueue_job and batches of 1 to 16
 * (blocking or try) (yielding after each
 * item in half the rounds, so the egress keeps up) while the queue is
 * closed at a random moment, gracefully, with a short timeout, or by
 * force. After the close every accepted item must have exactly one
 * outcome, the refused ones none, and
 * in == processed + failed + leaked + expired + lost.
 * With one egress thread and one stream, a worker must see each
 * producer's items of one sub-queue in their order.
 *
 * A plain program (Criterion aborts under TSan): prints its own
 * "N passed, N failed" line and exits non-zero on any failure.
 * Usage: qos_stress [rounds] [items-per-producer]
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blq/blq.h>

#include "stress_util.h"

#define PRODUCERS 4
#define MAX_WORKERS 4
#define MAX_SUBQS 4
#define LIVE 0x5eedu
#define TAKEN 0xd0e5u

typedef struct item {
	_Atomic unsigned magic;
	unsigned producer;
	unsigned percent; /* what the custom evaluator answers */
	uint64_t seq;
	_Atomic int taken;
	_Atomic int outcomes; /* must end 1 when accepted, 0 when refused */
	bool accepted;
} item;

typedef struct round_ctx {
	blq *q;
	item *items;
	uint64_t per;
	unsigned fail_pct;
	unsigned nsubqs;
	uint64_t iw[MAX_SUBQS]; /* ingress weights, to know an item's sub-queue */
	bool custom;            /* the items' percents route them */
	bool check_order;
	bool paced;             /* producers yield after each item */
	/* last seq + 1 seen per worker, producer and sub-queue */
	uint64_t last[MAX_WORKERS][PRODUCERS][MAX_SUBQS];
	_Atomic bool dlq_refuses;
	_Atomic uint64_t dlq_got;
	_Atomic uint64_t accepted;
	_Atomic unsigned errors;
	unsigned seed;
} round_ctx;

static round_ctx *cur; /* item_free has no context */

static void complain(round_ctx *r, const char *what, const item *it)
{
	if (atomic_fetch_add(&r->errors, 1) < 10)
		fprintf(stderr, "qos_stress: %s (producer %u seq %" PRIu64 " percent %u)\n", what,
			it->producer, it->seq, it->percent);
}

static void settle(round_ctx *r, item *it)
{
	if (atomic_fetch_add(&it->outcomes, 1) != 0)
		complain(r, "an item reached a second outcome", it);
}

/* The sub-queue a percent goes to: the first whose cumulative ingress
 * weight reaches it (the contract of qos.h). */
static unsigned subq_of(const round_ctx *r, unsigned percent)
{
	uint64_t total = 0, cum = 0;

	for (unsigned i = 0; i < r->nsubqs; i++)
		total += r->iw[i];
	for (unsigned i = 0; i < r->nsubqs; i++) {
		cum += r->iw[i];
		if ((uint64_t)percent * total <= cum * 100)
			return i;
	}
	return r->nsubqs - 1;
}

static unsigned item_percent(void *ctx, void *payload, uint64_t weight)
{
	(void)ctx, (void)weight;
	return ((item *)payload)->percent;
}

static void spin(unsigned *seed)
{
	for (volatile unsigned i = (unsigned)rand_r(seed) % 2048; i > 0; i--)
		;
}

static int worker(void *ctx, void *payload, blq_task *task)
{
	round_ctx *r = ctx;
	item *it = payload;
	unsigned seed = r->seed ^ (unsigned)(uintptr_t)it;

	if (atomic_fetch_add(&it->taken, 1) != 0)
		complain(r, "an item was taken twice", it);
	if (atomic_exchange(&it->magic, TAKEN) != LIVE)
		complain(r, "a worker got an item with a bad magic", it);
	if (r->check_order) {
		uint64_t *last = &r->last[blq_task_worker(task)][it->producer][subq_of(r, it->percent)];

		if (*last > it->seq)
			complain(r, "a worker saw a sub-queue's items out of order", it);
		*last = it->seq + 1;
	}
	if (rand_r(&seed) % 8 == 0)
		spin(&seed);
	if ((unsigned)rand_r(&seed) % 100 < r->fail_pct) {
		atomic_store(&it->magic, LIVE); /* the queue frees it */
		return 1;
	}
	settle(r, it);
	return 0;
}

static void item_free(void *payload)
{
	settle(cur, payload);
}

static int dlq(void *self, void *payload)
{
	round_ctx *r = self;

	if (atomic_load(&r->dlq_refuses))
		return -1;
	atomic_fetch_add(&r->dlq_got, 1);
	settle(r, payload);
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
		complain(r, "enqueue returned an unexpected code", it);
	}
}

static void *producer(void *p)
{
	producer_arg *a = p;
	round_ctx *r = a->r;
	unsigned seed = r->seed * 17 + a->index;

	for (uint64_t i = 0; i < r->per;) {
		int how = rand_r(&seed) % 5;
		/* how 4: a batch (blocking or try) of 1 to 16 items, which a
		 * QoS queue admits one by one inside the call. */
		unsigned m = how == 4 ? 1 + rand_r(&seed) % 16 : 1;
		void *batch[16];

		if (m > r->per - i)
			m = (unsigned)(r->per - i);
		for (unsigned k = 0; k < m; k++) {
			item *it = &r->items[a->index * r->per + i + k];

			it->producer = a->index;
			it->seq = i + k;
			it->percent = 1 + (unsigned)rand_r(&seed) % 100;
			atomic_store(&it->magic, LIVE);
			batch[k] = it;
		}
		if (how == 4) {
			bool try_only = rand_r(&seed) % 2;
			ssize_t took = try_only ? blq_try_enqueue_batch(r->q, batch, m)
						: blq_enqueue_batch(r->q, batch, m);

			if (took > (ssize_t)m)
				complain(r, "a batch took more than it was given", batch[0]);
			for (unsigned k = 0; k < m; k++)
				count_enqueue(r, batch[k],
					      (ssize_t)k < took ? 0 : took < 0 ? (int)took : BLQ_EFULL);
		} else {
			item *it = batch[0];
			int rc;

			if (how == 0) {
				rc = blq_try_enqueue(r->q, it);
			} else if (how == 1) {
				blq_job job = {.payload = it, .weight = it->percent};
				rc = blq_enqueue_job(r->q, &job);
			} else {
				rc = blq_enqueue(r->q, it);
			}
			count_enqueue(r, it, rc);
		}
		i += m;
		if (rand_r(&seed) % 64 == 0)
			spin(&seed);
		if (r->paced)
			sched_yield();
	}
	return NULL;
}

/* Checks the counters and every item's outcome; returns the errors. */
static unsigned verify(round_ctx *r, unsigned round)
{
	struct blq_stats s;

	blq_stats(r->q, &s);
	if (!stress_balanced("qos_stress", round, &s))
		atomic_fetch_add(&r->errors, 1);
	if (s.in != atomic_load(&r->accepted) || s.leaked != atomic_load(&r->dlq_got) || s.size != 0) {
		fprintf(stderr,
			"qos_stress: round %u: in %" PRIu64 " (accepted %" PRIu64 "), leaked %" PRIu64
			" (DLQ got %" PRIu64 "), size %zu after close\n",
			round, s.in, atomic_load(&r->accepted), s.leaked, atomic_load(&r->dlq_got),
			s.size);
		atomic_fetch_add(&r->errors, 1);
	}
	for (uint64_t i = 0; i < PRODUCERS * r->per; i++) {
		item *it = &r->items[i];

		if (atomic_load(&it->outcomes) != (it->accepted ? 1 : 0))
			complain(r, it->accepted ? "an accepted item has no single outcome"
						 : "a refused item reached an outcome",
				 it);
	}
	return atomic_load(&r->errors);
}

static int run_round(unsigned round, uint64_t per)
{
	static const char *const algo_names[] = {"pq", "rr", "wrr"};
	round_ctx *r = calloc(1, sizeof(*r));
	unsigned seed = (unsigned)time(NULL) ^ (round * 2654435761u);
	int closing = (int)(rand_r(&seed) % STRESS_NCLOSE);
	blq_qos_subq subqs[MAX_SUBQS];
	blq_qos_config qc = {0};
	blq_config c = {0};
	blq_error err;

	r->per = per;
	r->seed = seed;
	r->items = calloc(PRODUCERS * per, sizeof(item));
	r->fail_pct = (unsigned)rand_r(&seed) % 15;
	r->nsubqs = 2 + (unsigned)rand_r(&seed) % (MAX_SUBQS - 1);
	cur = r;
	memset(subqs, 0, sizeof(subqs));
	for (unsigned i = 0; i < r->nsubqs; i++) {
		subqs[i].capacity = 1 + (unsigned)rand_r(&seed) % 24;
		subqs[i].ingress_weight = r->iw[i] = 1 + (unsigned)rand_r(&seed) % 500;
		subqs[i].egress_weight = 1 + (unsigned)rand_r(&seed) % 500;
	}
	qc.algo = (enum blq_qos_algo)(rand_r(&seed) % 3);
	qc.egress.capacity = 1 + (unsigned)rand_r(&seed) % 16;
	qc.egress.streams = qc.egress.capacity > 1 && rand_r(&seed) % 2 ? 2 : 1;
	qc.egress.workers = 1 + (unsigned)rand_r(&seed) % 3;
	r->custom = rand_r(&seed) % 4 != 0;
	qc.evaluator = r->custom ? (blq_qos_evaluator){.kind = BLQ_QOS_EVAL_CUSTOM, .fn = item_percent}
				 : (blq_qos_evaluator){.kind = BLQ_QOS_EVAL_RANDOM};
	qc.subqs = subqs;
	qc.nsubqs = r->nsubqs;
	r->check_order = r->custom && qc.egress.workers == 1 && qc.egress.streams == 1;
	r->paced = rand_r(&seed) % 2;

	c.name = "qos-stress";
	c.qos = &qc;
	c.workers = 1 + (unsigned)rand_r(&seed) % MAX_WORKERS;
	c.worker = worker;
	c.worker_ctx = r;
	c.item_free = item_free;
	if (round % 3 != 2) { /* every third round blocks instead of leaking */
		c.dlq = (blq_enqueuer){.enqueue = dlq, .self = r};
		c.fail_to_dlq = round % 2 == 0;
		c.leak_direction = rand_r(&seed) % 2 ? BLQ_LEAK_FRONT : BLQ_LEAK_REAR;
	}
	r->q = blq_new(&c, &err);
	if (r->q == NULL) {
		fprintf(stderr, "qos_stress: blq_new: %s\n", err.msg);
		return 1;
	}

	pthread_t t[PRODUCERS];
	producer_arg args[PRODUCERS];
	for (unsigned i = 0; i < PRODUCERS; i++) {
		args[i] = (producer_arg){r, i};
		pthread_create(&t[i], NULL, producer, &args[i]);
	}
	struct timespec ts = {0, (long)(rand_r(&seed) % 20) * 1000000L};
	nanosleep(&ts, NULL);
	if (rand_r(&seed) % 4 == 0)
		atomic_store(&r->dlq_refuses, true);
	const char *how = stress_close(r->q, closing, &seed);
	for (unsigned i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);

	unsigned errors = verify(r, round);
	struct blq_stats s;
	blq_stats(r->q, &s);
	blq_free(r->q);
	printf("round %2u: %-3s subqs %u egress %2zu/%u/%u workers %u %s%s %-7s in %6" PRIu64
	       " processed %6" PRIu64 " failed %5" PRIu64 " leaked %6" PRIu64 " lost %5" PRIu64
	       " -> %s\n",
	       round, algo_names[qc.algo], r->nsubqs, qc.egress.capacity, qc.egress.streams,
	       qc.egress.workers, c.workers, c.dlq.enqueue ? "leaky" : "block",
	       r->paced ? " paced" : "      ", how,
	       s.in, s.processed, s.failed, s.leaked, s.lost, errors ? "FAIL" : "ok");
	free(r->items);
	free(r);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	return stress_main(argc, argv, 20, 20000, run_round);
}
