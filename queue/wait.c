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
 * The worker's return code: after each attempt the worker hands it to
 * blq__wait_note, which keeps it in the record when the item's hook is a
 * waiter's (one pointer compare, on items with a hook only); the
 * outcome's release store publishes it with the outcome.
 */
#include <stdlib.h>

#include "internal.h"

struct blq__waiter {
	blq_done hook;        /* the item's: {waiter_done, this record} */
	const blq_done *user; /* the job's own hook, or NULL */
	blq__ec ec;
	_Atomic int outcome;  /* 0 until the item ends */
	_Atomic int refs;
	/* The last attempt's return code and how many attempts ran; written
	 * by the worker running the item, read by the caller after the
	 * outcome (relaxed: the outcome's release/acquire orders them). */
	_Atomic int worker_rc;
	_Atomic uint32_t attempts;
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

void blq__wait_note(const blq_done *d, int rc, uint32_t attempt)
{
	if (d->fn != waiter_done)
		return;
	struct blq__waiter *w = d->ctx;

	atomic_store_explicit(&w->worker_rc, rc, memory_order_relaxed);
	atomic_store_explicit(&w->attempts, attempt, memory_order_relaxed);
}

int blq_enqueue_wait_result(blq *q, const blq_job *job, uint64_t wait_ns, blq_wait_result *res)
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
	if (o != 0 && res != NULL) {
		res->outcome = (enum blq_outcome)o;
		res->worker_rc = atomic_load_explicit(&w->worker_rc, memory_order_relaxed);
		res->attempts = atomic_load_explicit(&w->attempts, memory_order_relaxed);
	}
	unref(w);
	return o == 0 ? BLQ_ETIMEDOUT : 0;
}

int blq_enqueue_wait(blq *q, const blq_job *job, uint64_t wait_ns, enum blq_outcome *outcome)
{
	blq_wait_result r;
	int rc = blq_enqueue_wait_result(q, job, wait_ns, &r);

	if (rc == 0 && outcome != NULL)
		*outcome = r.outcome;
	return rc;
}
