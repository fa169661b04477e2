/*
 * blq_enqueue_wait: enqueue a job and sleep until it reaches its outcome.
 *
 * It stands on the completion hook (blq_done): the item carries the hook
 * of a small heap-allocated wait record (the one allocation of this call;
 * the plain enqueue paths never allocate). Two references: the caller's
 * and the item's. The hook (run by whoever ends the item, outcome.c) first
 * runs the job's own hook, if any, then stores the outcome, wakes the
 * caller and drops the item's reference; the caller drops its own when it
 * returns, after the outcome or after its wait limit. The last one frees
 * the record, so a caller that gives up early leaves nothing dangling
 * behind the item.
 */
#include <stdlib.h>

#include "internal.h"

struct blq__waiter {
	blq_done hook;        /* the item's: {waiter_done, this record} */
	const blq_done *user; /* the job's own hook, or NULL */
	blq__ec ec;
	_Atomic int outcome;  /* 0 until the item ends */
	_Atomic int refs;
};

static void unref(struct blq__waiter *w)
{
	/* acq_rel: the other side's last writes happen before the free. */
	if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1)
		free(w);
}

static void waiter_done(void *ctx, void *payload, enum blq_outcome o)
{
	struct blq__waiter *w = ctx;

	if (w->user != NULL)
		w->user->fn(w->user->ctx, payload, o);
	/* Release: the counters bumped before this are visible to the woken
	 * caller. */
	atomic_store_explicit(&w->outcome, (int)o, memory_order_release);
	blq__ec_notify(&w->ec, 0);
	unref(w);
}

int blq_enqueue_wait(blq *q, const blq_job *job, uint64_t wait_ns, enum blq_outcome *outcome)
{
	if (q == NULL || job == NULL)
		return BLQ_EINVAL;
	if (job->done != NULL && job->done->fn == NULL)
		return BLQ_EINVAL;
	if (blq__is_own_worker(q))
		return BLQ_EDEADLK;
	struct blq__waiter *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return BLQ_ENOMEM;
	w->hook.fn = waiter_done;
	w->hook.ctx = w;
	w->user = job->done;
	atomic_init(&w->refs, 2);

	int rc = blq__enqueue_job_as(q, job, &w->hook, false);
	if (rc != 0) {
		free(w); /* not accepted: no outcome will ever come */
		return rc;
	}
	uint64_t deadline = blq__deadline_after(wait_ns); /* 0: none */
	int o;
	for (;;) {
		uint32_t snap = blq__ec_prepare(&w->ec);

		if ((o = atomic_load_explicit(&w->outcome, memory_order_acquire)) != 0) {
			blq__ec_cancel(&w->ec);
			break;
		}
		if (deadline != 0 && blq__monotonic_ns() >= deadline) {
			blq__ec_cancel(&w->ec);
			break;
		}
		blq__ec_wait(&w->ec, snap, deadline);
	}
	unref(w);
	if (o == 0)
		return BLQ_ETIMEDOUT;
	if (outcome != NULL)
		*outcome = (enum blq_outcome)o;
	return 0;
}
