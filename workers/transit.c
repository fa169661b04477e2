/*
 * transit: a worker that hands the payload to any blq_enqueuer (another
 * queue, a dump, a DLQ), which is how queues are chained in-process.
 * Accepted means the target owns the payload now, so for the calling queue
 * the item is processed; refused (the target is full or closed) returns
 * BLQ_EREFUSED, a failure, so the calling queue's retries, backoff and DLQ
 * decide what happens, and the payload stays with it. With a time limit it
 * claims the attempt first (blq_task_claim), so a late forward cannot
 * leave the payload with both queues.
 */
#include <blq/workers.h>

static int transit(void *ctx, void *payload, blq_task *task)
{
	const blq_enqueuer *to = ctx;

	/* With a time limit, the attempt must be ours before the target
	 * gets the payload: past it the watchdog may have handed the payload
	 * back to the calling queue (blq_task_claim). */
	if (!blq_task_claim(task))
		return BLQ_ETIMEDOUT;
	/* Accepted: the target owns it, and so "the worker" did its job.
	 * Refused: the payload stays with the calling queue. */
	return to->enqueue(to->self, payload) == 0 ? 0 : BLQ_EREFUSED;
}

blq_worker blq_transit_worker(blq_enqueuer *storage, blq_enqueuer target)
{
	if (storage == NULL || target.enqueue == NULL)
		return (blq_worker){0}; /* no fn: blq_new and blq_chain_new refuse it */
	*storage = target;
	return (blq_worker){.fn = transit, .ctx = storage};
}
