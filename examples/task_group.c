/*
 * task_group: a fan-out with a time limit (blq/group.h).
 *
 * One request fans out into 20 jobs: 16 quick ones and 4 that hang (they
 * would take 10 s, but look at their token, as long jobs should). The
 * caller waits 200 ms for the whole group, then cancels what is left and
 * waits again, and reads how each job ended. Each job also carries its own
 * completion hook, which still runs exactly once.
 *
 * What to look at: blq_group_wait's BLQ_ETIMEDOUT, how many jobs
 * blq_group_cancel stopped, and the counts adding up.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

#define QUICK 16
#define HANGING 4
#define MS 1000000ull

typedef struct request {
	int part;
	bool hangs;
} request;

static int work(void *ctx, void *payload, blq_task *task)
{
	request *r = payload;

	(void)ctx;
	if (r->hangs) {
		/* 10 s of work in 1 ms steps, stopping when told to. */
		for (int i = 0; i < 10000 && !blq_task_cancelled(task); i++)
			ex_sleep_us(1000);
		if (blq_task_cancelled(task))
			return -1; /* gave up: the queue frees it (item_free) */
	} else {
		ex_sleep_us(1000);
	}
	free(r);
	return 0;
}

static atomic_uint hooked;

/* The job's own hook: payload is only an identity here. */
static void on_part_done(void *ctx, void *payload, enum blq_outcome o)
{
	(void)ctx, (void)payload, (void)o;
	atomic_fetch_add(&hooked, 1);
}

int main(void)
{
	blq_error err;
	blq_config cfg = {.name = "fanout", .capacity = 64, .workers = 2, .worker = work,
			  .item_free = free};
	blq *q = blq_new(&cfg, &err);
	if (q == NULL) {
		fprintf(stderr, "task_group: %s\n", err.msg);
		return 1;
	}
	blq_group *g = blq_group_new(q, &err);
	if (g == NULL) {
		fprintf(stderr, "task_group: %s\n", err.msg);
		return 1;
	}
	static const blq_done hook = {.fn = on_part_done};

	printf("20 jobs in one group, 4 of them hanging; wait 200 ms, then cancel:\n");
	for (int i = 0; i < QUICK + HANGING; i++) {
		request *r = malloc(sizeof(*r));
		if (r == NULL)
			return 1;
		*r = (request){.part = i, .hangs = i >= QUICK}; /* the hanging ones last */
		blq_job job = {.payload = r, .done = &hook};
		int rc = blq_group_enqueue(g, &job);
		if (rc != 0) {
			fprintf(stderr, "task_group: %s\n", blq_strerror(rc));
			free(r); /* refused: still ours */
		}
	}
	int rc = blq_group_wait(g, 200 * MS);
	ex_check(rc == BLQ_ETIMEDOUT, "the wait timed out (%s): the hanging jobs still run",
		 blq_errname(rc));
	ssize_t stopped = blq_group_cancel(g);
	ex_check(stopped == HANGING, "blq_group_cancel stopped %zd jobs", stopped);
	ex_check(blq_group_wait(g, 5000 * MS) == 0, "then every job ended");

	struct blq_group_counts c;
	blq_group_counts(g, &c);
	ex_check(c.processed == QUICK && c.cancelled == HANGING,
		 "processed %llu, cancelled %llu", (unsigned long long)c.processed,
		 (unsigned long long)c.cancelled);
	ex_check(c.accepted == c.processed + c.failed + c.timed_out + c.leaked + c.expired +
				       c.lost + c.cancelled + c.pending,
		 "accepted %llu = the outcomes + pending %llu", (unsigned long long)c.accepted,
		 (unsigned long long)c.pending);
	ex_check(atomic_load(&hooked) == QUICK + HANGING, "each job's own hook ran once (%u)",
		 atomic_load(&hooked));
	ex_check(blq_group_free(g) == 0, "the group freed");
	blq_close(q);
	ex_balanced(q);
	blq_free(q);
	return ex_failures != 0;
}
