/*
 * chain_dlq: two queues in one process, the second being the first one's
 * DLQ.
 *
 * "fast" is small and leaky: its workers take the quick path, and whatever
 * does not fit leaks into "slow", whose workers handle it the slow way.
 * "slow" has no DLQ of its own, so when it is full too, the producer waits
 * inside blq_enqueue: back-pressure comes from the end of the chain, and
 * nothing is dropped anywhere.
 *
 * What to look at: the two stats lines (fast's `leaked` is slow's `in`),
 * and the per-item check that every id was handled exactly once, by one
 * path or the other.
 *
 * Usage: chain_dlq [items]   (default 4000)
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

typedef struct job {
	unsigned id;
} job;

/* How many times each id was handled, by either path: must end at 1. */
static atomic_uint *handled;
static atomic_uint by_fast, by_slow;

static int fast_path(void *ctx, void *payload, blq_task *task)
{
	job *j = payload;

	(void)ctx, (void)task;
	ex_sleep_us(20); /* a quick lookup */
	atomic_fetch_add(&handled[j->id], 1);
	atomic_fetch_add(&by_fast, 1);
	free(j); /* returning 0: the worker owns the payload */
	return 0;
}

static int slow_path(void *ctx, void *payload, blq_task *task)
{
	job *j = payload;

	(void)ctx, (void)task;
	ex_sleep_us(200); /* the expensive way: a remote call, say */
	atomic_fetch_add(&handled[j->id], 1);
	atomic_fetch_add(&by_slow, 1);
	free(j);
	return 0;
}

static void show(blq *q)
{
	struct blq_stats s;

	blq_stats(q, &s);
	printf("%-5s capacity %4zu  in %5llu  processed %5llu  leaked %5llu  lost %llu\n",
	       blq_name(q), s.capacity, (unsigned long long)s.in, (unsigned long long)s.processed,
	       (unsigned long long)s.leaked, (unsigned long long)s.lost);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4000;
	blq_error err;

	if (n == 0 || n > 10000000) {
		fprintf(stderr, "chain_dlq: items: want 1..10000000\n");
		return 2;
	}
	handled = calloc(n, sizeof(*handled));
	if (handled == NULL)
		return 1;

	/* Build the chain from its end: the DLQ must exist (and outlive)
	 * the queue that leaks into it. */
	blq_config sc = {.name = "slow", .capacity = 256, .workers = 2, .worker = slow_path,
			 .item_free = free};
	blq *slow = blq_new(&sc, &err);
	if (slow == NULL) {
		fprintf(stderr, "chain_dlq: slow: %s\n", err.msg);
		return 1;
	}
	/* Setting .dlq makes "fast" leaky: a full "fast" never makes the
	 * producer wait; the item goes to blq_as_enqueuer(slow), which is
	 * plain blq_enqueue on "slow" with slow's own rules. */
	blq_config fc = {.name = "fast", .capacity = 64, .workers = 2, .worker = fast_path,
			 .item_free = free, .dlq = blq_as_enqueuer(slow)};
	blq *fast = blq_new(&fc, &err);
	if (fast == NULL) {
		fprintf(stderr, "chain_dlq: fast: %s\n", err.msg);
		blq_free(slow);
		return 1;
	}

	/* One producer, as fast as it can. */
	for (unsigned i = 0; i < n; i++) {
		job *j = malloc(sizeof(*j));
		int rc;

		if (j == NULL)
			break;
		j->id = i;
		rc = blq_enqueue(fast, j);
		if (rc != 0) {
			/* On an error the payload is still ours. */
			fprintf(stderr, "chain_dlq: enqueue %u: %s\n", i, blq_strerror(rc));
			free(j);
		}
	}

	/* Close in chain order: "fast" first, because while it drains it may
	 * still hand items to "slow"; then "slow". */
	blq_close(fast);
	blq_close(slow);
	show(fast);
	show(slow);

	struct blq_stats f, s;
	blq_stats(fast, &f);
	blq_stats(slow, &s);
	unsigned once = 0;
	for (unsigned i = 0; i < n; i++)
		once += atomic_load(&handled[i]) == 1;
	printf("checks:\n");
	ex_balanced(fast);
	ex_balanced(slow);
	ex_check(f.in == n, "fast took all %u items (it is leaky: it never refuses for room)", n);
	ex_check(f.leaked == s.in, "every item fast leaked (%llu) arrived in slow",
		 (unsigned long long)f.leaked);
	ex_check(f.lost + s.lost + f.failed + s.failed == 0, "nothing lost or failed");
	ex_check(atomic_load(&by_fast) == f.processed && atomic_load(&by_slow) == s.processed,
		 "fast path handled %u, slow path %u", atomic_load(&by_fast),
		 atomic_load(&by_slow));
	ex_check(once == n, "each of the %u ids handled exactly once (%u were)", n, once);

	blq_free(fast);
	blq_free(slow);
	free(handled);
	return ex_failures == 0 ? 0 : 1;
}
