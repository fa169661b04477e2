/*
 * qos_three: a queue with three priority sub-queues (high, medium, low).
 *
 * An evaluator gives each item a percent from its priority; the percent
 * picks the sub-queue by the ingress weights. An egress thread moves items
 * from the sub-queues to the workers by weighted round-robin (WRR): per
 * round 4 from high, 2 from medium, 1 from low, as long as each has items.
 *
 * The queue is paused while 300 items of each priority arrive, so all
 * three sub-queues are full when the single worker starts; then the order
 * in which it runs them shows the 4:2:1 of the egress weights.
 *
 * What to look at: the per-sub-queue table (put = pull + leak + size, from
 * a small metrics writer), and the counts by priority in a stretch of the
 * run order.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/blq.h>

#include "example_util.h"

enum { HIGH, MEDIUM, LOW, NPRIO };
static const char *const names[NPRIO] = {"high", "medium", "low"};
#define PER_PRIO 300u

typedef struct item {
	int prio;
} item;

/* The evaluator: a percent for each priority. With ingress weights
 * 10/30/60 the sub-queues take the percents 1-10, 11-40 and 41-100. */
static unsigned by_priority(void *ctx, void *payload, uint64_t weight)
{
	static const unsigned percent[NPRIO] = {5, 25, 70};

	(void)ctx, (void)weight;
	return percent[((const item *)payload)->prio];
}

/* The run order, by priority (one worker, so no two items race here). */
static int order[NPRIO * PER_PRIO];
static atomic_uint ran;

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx, (void)task;
	order[atomic_fetch_add(&ran, 1)] = ((item *)payload)->prio;
	free(payload);
	return 0;
}

/* A metrics writer with only the sub-queue events: counts per sub-queue. */
static atomic_ulong put[NPRIO], pull[NPRIO], leak[NPRIO];

static atomic_ulong *slot(atomic_ulong *counts, const char *subq)
{
	for (int i = 0; i < NPRIO; i++)
		if (strcmp(subq, names[i]) == 0)
			return &counts[i];
	return &counts[LOW]; /* not reached: every sub-queue has a name above */
}

static void on_put(void *ctx, const char *q, const char *subq)
{
	atomic_fetch_add(slot(put, subq), 1);
}

static void on_pull(void *ctx, const char *q, const char *subq)
{
	atomic_fetch_add(slot(pull, subq), 1);
}

static void on_leak(void *ctx, const char *q, const char *subq)
{
	atomic_fetch_add(slot(leak, subq), 1);
}

int main(void)
{
	blq_error err;
	blq_qos_subq subqs[NPRIO] = {
		{.name = "high", .capacity = PER_PRIO, .ingress_weight = 10, .egress_weight = 4},
		{.name = "medium", .capacity = PER_PRIO, .ingress_weight = 30, .egress_weight = 2},
		{.name = "low", .capacity = PER_PRIO, .ingress_weight = 60, .egress_weight = 1},
	};
	blq_qos_config qos = {.algo = BLQ_QOS_WRR,
			      .egress = {.capacity = 64, .workers = 1},
			      .evaluator = {.kind = BLQ_QOS_EVAL_CUSTOM, .fn = by_priority},
			      .subqs = subqs, .nsubqs = NPRIO};
	blq_metrics_writer mw = {.subq_put = on_put, .subq_pull = on_pull, .subq_leak = on_leak};
	/* capacity 0: the sum of the sub-queues and the egress (964). */
	blq_config cfg = {.name = "jobs", .qos = &qos, .workers = 1, .worker = work,
			  .item_free = free, .metrics = &mw};
	blq *q = blq_new(&cfg, &err);
	if (q == NULL) {
		fprintf(stderr, "qos_three: %s\n", err.msg);
		return 1;
	}

	/* Paused, the worker starts nothing; the egress thread still fills the
	 * egress ring (64 items; it may hold one more in hand, waiting for
	 * room); the rest waits in the sub-queues. */
	blq_pause(q);
	for (unsigned i = 0; i < NPRIO * PER_PRIO; i++) {
		item *it = malloc(sizeof(*it));
		if (it == NULL)
			break;
		it->prio = (int)(i % NPRIO); /* high, medium, low, high, ... */
		int rc = blq_enqueue(q, it);
		if (rc != 0) {
			fprintf(stderr, "qos_three: enqueue: %s\n", blq_strerror(rc));
			free(it); /* refused: still ours */
		}
	}
	/* Give the egress thread a moment (up to 1 s) to fill the egress. */
	blq_qos_subq_stats st;
	for (int i = 0; i < 1000; i++) {
		blq_qos_subq_info(q, BLQ_QOS_EGRESS, &st);
		if (st.size == st.capacity)
			break;
		ex_sleep_us(1000);
	}
	printf("paused, after %u items:\n", NPRIO * PER_PRIO);
	for (unsigned i = 0; i <= NPRIO; i++) {
		blq_qos_subq_info(q, i < NPRIO ? i : BLQ_QOS_EGRESS, &st);
		printf("  %-7s size %3zu of %3zu  weights in %2llu out %llu\n", st.name, st.size,
		       st.capacity, (unsigned long long)st.ingress_weight,
		       (unsigned long long)st.egress_weight);
	}
	blq_resume(q);
	blq_close(q); /* drains every sub-queue through the egress */

	printf("after close:\n");
	for (int p = 0; p < NPRIO; p++)
		printf("  %-7s put %3lu = pulled %3lu + leaked %lu\n", names[p],
		       atomic_load(&put[p]), atomic_load(&pull[p]), atomic_load(&leak[p]));
	/* Skip the first 100 (the egress ring began filling while items were
	 * still arriving) and count 350 runs, 50 WRR rounds while all three
	 * sub-queues had items: 200, 100 and 50 expected. */
	unsigned seen[NPRIO] = {0};
	for (unsigned i = 100; i < 450 && i < atomic_load(&ran); i++)
		seen[order[i]]++;
	printf("runs 100..449 by priority: high %u, medium %u, low %u\n", seen[HIGH],
	       seen[MEDIUM], seen[LOW]);

	printf("checks:\n");
	ex_balanced(q);
	for (int p = 0; p < NPRIO; p++)
		ex_check(atomic_load(&put[p]) == PER_PRIO &&
				 atomic_load(&pull[p]) + atomic_load(&leak[p]) == PER_PRIO,
			 "%s: the evaluator routed its %u items there; all pulled or leaked",
			 names[p], PER_PRIO);
	ex_check(seen[HIGH] >= 192 && seen[HIGH] <= 208 && seen[MEDIUM] >= 92 &&
			 seen[MEDIUM] <= 108 && seen[LOW] >= 42 && seen[LOW] <= 58,
		 "the worker ran them 4:2:1, as the egress weights say (within a round)");
	blq_free(q);
	return ex_failures == 0 ? 0 : 1;
}
