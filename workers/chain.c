/*
 * chain: a worker that runs its steps one after another on the same
 * payload, stopping at the first that fails and returning its code, so
 * the queue's retry and DLQ rules apply to the chain as one worker.
 *
 * A retry re-runs the whole chain from the first step: the queue retries
 * its worker callback, and this callback always starts at step 0; it
 * keeps no record of which steps succeeded before. So every step must be
 * idempotent (running it again on the same payload does no harm), or the
 * chain must be split over queues joined by transit, where each queue
 * retries only its own step.
 */
#include <stdlib.h>
#include <string.h>

#include <blq/workers.h>

#include "errorf.h"

struct blq_chain {
	size_t n;
	blq_worker steps[]; /* copied */
};

static int run_chain(void *ctx, void *payload, blq_task *task)
{
	const blq_chain *c = ctx;

	for (size_t i = 0; i < c->n; i++) {
		int rc = c->steps[i].fn(c->steps[i].ctx, payload, task);

		if (rc != 0)
			return rc;
	}
	return 0;
}

blq_chain *blq_chain_new(const blq_worker *steps, size_t n, blq_error *err)
{
	if (steps == NULL || n == 0) {
		blq__error_set(err, BLQ_EINVAL, "chain: steps: need at least one");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (steps[i].fn == NULL) {
			blq__error_set(err, BLQ_EINVAL, "chain: steps[%zu]: fn is NULL", i);
			return NULL;
		}
	blq_chain *c = malloc(sizeof(*c) + n * sizeof(blq_worker));
	if (c == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "chain: out of memory");
		return NULL;
	}
	c->n = n;
	memcpy(c->steps, steps, n * sizeof(blq_worker));
	return c;
}

void blq_chain_free(blq_chain *c)
{
	free(c);
}

blq_worker blq_chain_worker(blq_chain *c)
{
	if (c == NULL)
		return (blq_worker){0}; /* no fn: blq_new and blq_chain_new refuse it */
	return (blq_worker){.fn = run_chain, .ctx = c};
}
