/*
 * timeout_at_the_limit: a task that ignores its time limit does not hold
 * its caller (seed 000: the caller hears of the timeout at the timeout).
 *
 * A "fetch" worker that, for the first attempt of request 1, hangs for
 * a second without looking at its token: a stuck network call, say. The
 * queue gives each attempt 50 ms (timeout_ns) and one retry, and copies a
 * request (item_dup) so that the retry can start at the limit while the
 * stuck call still reads the original.
 *   request 1  attempt 1 hangs; at 50 ms the watchdog gives it up, the
 *              retry runs on the copy on another worker and succeeds:
 *              blq_enqueue_wait_result returns PROCESSED after ~50 ms, 2
 *              attempts, long before the stuck call returns
 *   request 2  is not held up by it
 * Then the stuck call returns, and the queue frees the original request
 * (item_free), which the stuck call could read until then.
 *
 * What to look at: the times, and that the original is freed only once
 * the stuck call has returned.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/blq.h>

#include "example_util.h"

#define MS 1000000ull

typedef struct request {
	int id;
	char url[64];
} request;

static _Atomic int stuck_returned, freed;
static const request *_Atomic stuck_original;

static int fetch(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	const request *r = payload;

	if (r->id == 1 && blq_task_attempt(t) == 1) {
		atomic_store(&stuck_original, r);
		ex_sleep_us(1000000); /* hung, token ignored */
		atomic_store(&stuck_returned, 1);
		/* Past the limit: the request is the queue's now (claim says so). */
		if (!blq_task_claim(t))
			return 0;
	}
	printf("  fetched %s (request %d, attempt %u)\n", r->url, r->id, blq_task_attempt(t));
	if (blq_task_claim(t))
		free(payload); /* processed: the worker owns it */
	return 0;
}

static void *request_dup(const void *payload)
{
	request *c = malloc(sizeof(*c));

	if (c != NULL)
		memcpy(c, payload, sizeof(*c));
	return c;
}

static void request_free(void *payload)
{
	if (payload == atomic_load(&stuck_original))
		ex_check(atomic_load(&stuck_returned) == 1,
			 "the original request is freed only after the stuck call returned");
	atomic_fetch_add(&freed, 1);
	free(payload);
}

static request *new_request(int id)
{
	request *r = malloc(sizeof(*r));

	r->id = id;
	snprintf(r->url, sizeof(r->url), "https://example.com/item/%d", id);
	return r;
}

int main(void)
{
	blq_config c = {.name = "fetch", .capacity = 16, .workers = 2, .worker = fetch,
			.item_free = request_free, .item_dup = request_dup,
			.timeout_ns = 50 * MS, .max_retries = 1};
	blq_error err;
	blq *q = blq_new(&c, &err);
	if (q == NULL) {
		fprintf(stderr, "blq_new: %s\n", err.msg);
		return 1;
	}

	printf("request 1 (its first attempt hangs for 1 s):\n");
	blq_wait_result res;
	uint64_t t0 = ex_now_ns();
	int rc = blq_enqueue_wait_result(q, &(blq_job){.payload = new_request(1)}, 5000 * MS, &res);
	uint64_t took = (ex_now_ns() - t0) / MS;
	ex_check(rc == 0 && res.outcome == BLQ_OUTCOME_PROCESSED, "processed (%s)",
		 rc == 0 ? blq_outcome_name(res.outcome) : blq_errname(rc));
	ex_check(res.attempts == 2, "in %u attempts: the retry ran on the copy", res.attempts);
	ex_check(took < 500, "the caller waited %llu ms, not the stuck call's 1000",
		 (unsigned long long)took);
	ex_check(atomic_load(&stuck_returned) == 0, "the stuck call is still inside");

	printf("request 2:\n");
	t0 = ex_now_ns();
	rc = blq_enqueue_wait_result(q, &(blq_job){.payload = new_request(2)}, 5000 * MS, &res);
	ex_check(rc == 0 && res.outcome == BLQ_OUTCOME_PROCESSED && res.attempts == 1,
		 "processed in %llu ms, by the replacement worker",
		 (unsigned long long)((ex_now_ns() - t0) / MS));

	blq_close(q);
	/* The close does not wait for a callback the watchdog gave up on
	 * (blq_free would): watch it return. */
	struct blq_stats s;
	while (blq_stats(q, &s) == 0 && s.workers_stuck != 0)
		ex_sleep_us(10000);
	ex_check(atomic_load(&stuck_returned) == 1 && atomic_load(&freed) == 1,
		 "after the close: the stuck call returned and the original was freed");
	ex_check(s.timed_out == 1 && s.retried == 1 && s.processed == 2,
		 "counted: timed out %llu, retried %llu, processed %llu",
		 (unsigned long long)s.timed_out, (unsigned long long)s.retried,
		 (unsigned long long)s.processed);
	blq_free(q);
	return ex_failures != 0;
}
