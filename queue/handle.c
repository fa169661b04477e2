/*
 * Handles: cancelling one item (seed 000's Task.Stop).
 *
 * Design
 * - A handle is a small heap record, the one allocation of
 *   blq_enqueue_job_handle, with two references: the caller's and the
 *   item's. The item carries the handle's hook as its blq_done, so the
 *   hook (run by whoever ends the item, outcome.c) runs the job's own
 *   hook, stores the outcome and drops the item's reference; the caller
 *   drops its own with blq_handle_release. The last one frees the record:
 *   a handle outlives its item, and an item outlives a released handle
 *   (the same scheme as blq_enqueue_wait's record, wait.c).
 * - State: PENDING, CANCELLING once blq_cancel's compare-and-swap won,
 *   DONE once the outcome is stored. A cancel of a DONE handle changes
 *   nothing and says so (BLQ_EFINISHED).
 * - Where (blq_handle_state): set by whoever moves the item, before the
 *   move makes it visible to the next one: the enqueue (queued, or
 *   delayed), a worker's start (running), a retry (delayed into the
 *   timer, or queued straight back), the timer's delivery (queued), the
 *   outcome (ended). Only items with a hook pay for it: each place tests
 *   it->done first, as it does for cancels.
 * - Where the cancel takes effect depends on where the item is; each
 *   place asks the handle (blq__handle_cancelled), and nothing is looked
 *   for in the rings:
 *   - queued (a ring, a QoS sub-queue, the due ring): the worker that
 *     takes it ends it, cancelled, without running it (worker.c);
 *   - timer-held (a delay, a retry's backoff): blq_cancel asks the timer
 *     to sweep (timer.c), which takes the cancelled items out at once;
 *   - running: each attempt publishes its task in the handle and the
 *     handle in its task (cancel_for). blq_cancel raises bit 0 of the
 *     task's cancel_for with a compare-and-swap against the handle, so a
 *     task that has moved on to another item is left alone; the callback
 *     sees blq_task_cancelled. A failing return then ends the item
 *     cancelled (no retry, no DLQ); returning 0, the callback processed
 *     it;
 *   - abandoned at a Soft or Hard close: cancelled rather than leaked
 *     or lost (outcome.c).
 * - Why freed and not sent to the DLQ: the DLQ holds what the queue could
 *   not do, for later; a cancelled item is one its owner no longer wants,
 *   and a restorer would run it again.
 * - Order: the worker stores its task's cancel_for, then reads the state;
 *   blq_cancel writes the state, then reads the handle's task: one of the
 *   two sees the other (seq_cst), so a cancel racing a start either stops
 *   the start or raises the running attempt's token.
 */
#include <stdlib.h>

#include "internal.h"

enum { PENDING, CANCELLING, DONE };

struct blq_handle {
	blq_done hook;        /* the item's: {handle_done, this record} */
	const blq_done *user; /* the job's own hook, or NULL */
	blq *q;
	_Atomic int state;
	_Atomic int where;   /* enum blq_handle_state: blq__handle_where */
	_Atomic int outcome; /* 0 until the item ends */
	_Atomic int refs;
	/* The task of the attempt that started last (a worker slot's, which
	 * lives as long as the queue), or NULL before the first. */
	_Atomic(struct blq_task *) task;
};

static void unref(blq_handle *h)
{
	/* acq_rel: the other side's last writes happen before the free. */
	if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1)
		free(h);
}

static void handle_done(void *ctx, void *payload, enum blq_outcome o)
{
	blq_handle *h = ctx;

	if (h->user != NULL)
		h->user->fn(h->user->ctx, payload, o);
	atomic_store_explicit(&h->outcome, (int)o, memory_order_release);
	atomic_store_explicit(&h->where, BLQ_HANDLE_ENDED, memory_order_release);
	atomic_store_explicit(&h->state, DONE, memory_order_release);
	unref(h);
}

static blq_handle *handle_of(const blq_done *d)
{
	return d != NULL && d->fn == handle_done ? d->ctx : NULL;
}

bool blq__handle_cancelled(const blq_done *d)
{
	const blq_handle *h = handle_of(d);

	return h != NULL && atomic_load_explicit(&h->state, memory_order_seq_cst) == CANCELLING;
}

void blq__handle_where(const blq_done *d, int where)
{
	blq_handle *h = handle_of(d);

	if (h != NULL)
		atomic_store_explicit(&h->where, where, memory_order_release);
}

bool blq__handle_begin(const blq_done *d, struct blq_task *t)
{
	blq_handle *h = handle_of(d);

	if (h == NULL)
		return false;
	atomic_store_explicit(&h->where, BLQ_HANDLE_RUNNING, memory_order_release);
	atomic_store_explicit(&t->cancel_for, (uintptr_t)h, memory_order_seq_cst);
	atomic_store_explicit(&h->task, t, memory_order_seq_cst);
	if (atomic_load_explicit(&h->state, memory_order_seq_cst) != CANCELLING)
		return false;
	atomic_store_explicit(&t->cancel_for, 0, memory_order_relaxed);
	return true;
}

bool blq__handle_end(const blq_done *d, struct blq_task *t)
{
	if (handle_of(d) == NULL)
		return false;
	atomic_store_explicit(&t->cancel_for, 0, memory_order_seq_cst);
	return blq__handle_cancelled(d);
}

int blq__enqueue_job_handle(blq *q, const blq_job *job, bool try_only, blq_handle **out)
{
	if (out != NULL)
		*out = NULL;
	if (q == NULL || job == NULL || out == NULL)
		return BLQ_EINVAL;
	if (job->done != NULL && job->done->fn == NULL)
		return BLQ_EINVAL;
	blq_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return BLQ_ENOMEM;
	h->hook.fn = handle_done;
	h->hook.ctx = h;
	h->user = job->done;
	h->q = q;
	atomic_init(&h->refs, 2);
	/* Its first place (queued or delayed) is set by the enqueue. */
	atomic_init(&h->where, BLQ_HANDLE_QUEUED);

	int rc = blq__enqueue_job_as(q, job, &h->hook, try_only);
	if (rc != 0) {
		free(h); /* not accepted: no outcome will ever come */
		return rc;
	}
	*out = h;
	return 0;
}

int blq_enqueue_job_handle(blq *q, const blq_job *job, blq_handle **out)
{
	return blq__enqueue_job_handle(q, job, false, out);
}

int blq_cancel(blq_handle *h)
{
	if (h == NULL)
		return BLQ_EINVAL;
	int s = PENDING;
	if (!atomic_compare_exchange_strong_explicit(&h->state, &s, CANCELLING,
						     memory_order_seq_cst, memory_order_acquire))
		return s == DONE ? BLQ_EFINISHED : 0;
	struct blq_task *t = atomic_load_explicit(&h->task, memory_order_seq_cst);
	if (t != NULL) {
		uintptr_t mine = (uintptr_t)h;

		atomic_compare_exchange_strong_explicit(&t->cancel_for, &mine, mine | 1,
							memory_order_acq_rel, memory_order_relaxed);
	}
	blq__timer_sweep_cancelled(h->q);
	return 0;
}

enum blq_handle_state blq_handle_state(const blq_handle *h)
{
	return h != NULL ? (enum blq_handle_state)atomic_load_explicit(&h->where,
								      memory_order_acquire)
			 : 0;
}

enum blq_outcome blq_handle_outcome(const blq_handle *h)
{
	return h != NULL ? (enum blq_outcome)atomic_load_explicit(&h->outcome, memory_order_acquire)
			 : 0;
}

void blq_handle_release(blq_handle *h)
{
	if (h != NULL)
		unref(h);
}
