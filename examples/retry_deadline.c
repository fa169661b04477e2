/*
 * retry_deadline: retries with exponential backoff and jitter, and a
 * per-job deadline.
 *
 * Five jobs, each handed over with blq_enqueue_wait_result, which blocks
 * until the job has its outcome and says how many attempts ran and what
 * the last one returned:
 *   ok         succeeds at once
 *   flaky-2    fails twice, then succeeds
 *   flaky-4    fails four times, then succeeds
 *   doomed     always fails, with a 60 ms deadline: a retry that comes due
 *              after it is not run; the job goes to the DLQ (deadline_to_dlq)
 *   hopeless   always fails, no deadline: it fails for good once its
 *              10 retries are used up
 * Between attempts the item waits in the queue's timer, not in a worker:
 * 5 ms, 10, 20, 40, 40, ... (exponential, capped at 40 ms), each delay
 * jittered into [d/2, d] so that many failing jobs do not retry in step.
 *
 * What to look at: the attempt lines (their times show the backoff), the
 * outcome of each job, and the counters that add up at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

#define TRY_AGAIN 7 /* what the worker returns on a failure: any non-zero */
#define MS 1000000ull

typedef struct job {
	const char *name;
	unsigned failures; /* attempts that fail before one succeeds */
	uint64_t t0;       /* when it was handed over */
} job;

static int work(void *ctx, void *payload, blq_task *task)
{
	job *j = payload;
	unsigned attempt = blq_task_attempt(task); /* 1, 2, ... */
	int fail = attempt <= j->failures;

	(void)ctx;
	printf("    %-8s attempt %2u at %5.1f ms: %s\n", j->name, attempt,
	       (double)(ex_now_ns() - j->t0) / 1e6, fail ? "fails" : "succeeds");
	if (fail)
		return TRY_AGAIN; /* the queue keeps the payload and retries */
	free(j);                  /* success: the payload is the worker's */
	return 0;
}

int main(void)
{
	blq_error err;
	blq_discard parked; /* the DLQ: counts and frees what reaches it */

	blq_discard_init(&parked, free);
	blq_config cfg = {.name = "jobs", .capacity = 64, .workers = 2, .worker = work,
			  .item_free = free,
			  .max_retries = 10,
			  .retry_interval_ns = 5 * MS,
			  .backoff = BLQ_BACKOFF_EXPONENTIAL,
			  .retry_max_interval_ns = 40 * MS,
			  .jitter = BLQ_JITTER_HALF,
			  .dlq = blq_discard_enqueuer(&parked),
			  .deadline_to_dlq = true};
	blq *q = blq_new(&cfg, &err);
	if (q == NULL) {
		fprintf(stderr, "retry_deadline: %s\n", err.msg);
		return 1;
	}

	struct {
		job j;
		uint64_t deadline_ns;
		enum blq_outcome want;
		unsigned want_attempts; /* 0: "some" (the deadline decides) */
	} cases[] = {
		{{"ok", 0, 0}, 0, BLQ_OUTCOME_PROCESSED, 1},
		{{"flaky-2", 2, 0}, 0, BLQ_OUTCOME_PROCESSED, 3},
		{{"flaky-4", 4, 0}, 1000 * MS, BLQ_OUTCOME_PROCESSED, 5},
		{{"doomed", 1000, 0}, 60 * MS, BLQ_OUTCOME_LEAKED, 0},
		{{"hopeless", 1000, 0}, 0, BLQ_OUTCOME_FAILED, 11},
	};
	unsigned retries = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		job *j = malloc(sizeof(*j));
		if (j == NULL)
			return 1;
		*j = cases[i].j;
		j->t0 = ex_now_ns();
		/* deadline_ns counts from the enqueue; 0 means none. */
		blq_job bj = {.payload = j, .deadline_ns = cases[i].deadline_ns};
		blq_wait_result res;
		printf("%s:\n", j->name);
		int rc = blq_enqueue_wait_result(q, &bj, UINT64_MAX, &res);
		if (rc != 0) {
			fprintf(stderr, "retry_deadline: %s\n", blq_strerror(rc));
			free(j); /* an enqueue error: still ours */
			ex_failures++;
			continue;
		}
		/* From here j belongs to whoever has it: do not touch it. */
		printf("  -> %s after %u attempt(s), last return code %d\n",
		       blq_outcome_name(res.outcome), res.attempts, res.worker_rc);
		ex_check(res.outcome == cases[i].want &&
				 (cases[i].want_attempts == 0 ? res.attempts >= 1
							      : res.attempts == cases[i].want_attempts),
			 "%s: %s as expected", cases[i].j.name, blq_outcome_name(cases[i].want));
		retries += res.attempts - 1;
	}

	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	printf("checks:\n");
	ex_balanced(q);
	/* `retried` counts the retries scheduled: doomed's last one came due
	 * past its deadline and never ran, so it is one more than the attempts
	 * beyond the first. */
	ex_check(s.retried == retries + 1,
		 "retried %llu = %u attempts beyond the first + doomed's last, never run",
		 (unsigned long long)s.retried, retries);
	ex_check(s.leaked_deadline == 1 && blq_discard_count(&parked) == 1,
		 "one job past its deadline went to the DLQ");
	blq_free(q);
	return ex_failures == 0 ? 0 : 1;
}
