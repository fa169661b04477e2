/*
 * Task groups (blq/group.h): jobs enqueued together, waited for, counted
 * by outcome and cancelled together.
 *
 * Design
 * - A group stands on the completion hooks and the handles; nothing in
 *   the queue knows groups exist, so an item outside a group pays nothing
 *   for them (no field, no branch on the enqueue or worker paths). Each
 *   job gets a record here and a handle (handle.c): the record's hook is
 *   the handle's user hook, so whoever ends the item runs handle_done ->
 *   job_done -> the job's own hook, once; blq_cancel on the handle is how
 *   the group cancels.
 * - One mutex guards the counts, the list of records and each record's
 *   flags; `ended` (a condition variable on CLOCK_MONOTONIC) wakes the
 *   waiters when the last job ends. The job's own hook runs before
 *   job_done takes the mutex, so the hook may call back into the group
 *   (try-enqueue, counts, cancel), and a waiter that saw the job ended
 *   knows its hook returned.
 * - A record lives from the enqueue call's start until both its outcome
 *   and the enqueue call's return have been seen: the outcome can come
 *   first (a leak on overflow runs the hooks inside the enqueue call, on
 *   its thread). Whichever of the two comes second frees it, under the
 *   mutex; whichever comes first counts the job accepted, so at every
 *   moment accepted == the outcome counts + pending. `enqueuing` counts the
 *   calls in progress, which blq_group_wait and blq_group_free wait for
 *   too (a record may still be touched by its enqueuer).
 * - Cancel: under the mutex, sets `cancelled` (later enqueues are
 *   refused) and calls blq_cancel on each pending record's handle; a record
 *   whose enqueue has not returned yet has no handle: its enqueuer cancels
 *   it as it returns, seeing the flag. The record's handle stays valid
 *   while it is in the list (job_done releases it under the mutex).
 *   blq_cancel does not wait and runs no hook on the caller's thread (it
 *   flags the handle, raises a running task's token and kicks the timer);
 *   the timer mutex it takes is never held while a hook runs (timer.c),
 *   so the lock order group mutex -> timer mutex cannot close a cycle.
 * - Free: refused (BLQ_EBUSY) while a job is pending or an enqueue is in
 *   progress. A job's last access to its group is job_done's unlock; the
 *   waiter or the freer sees the job ended only after taking the same
 *   mutex, so nothing touches the group after blq_group_free returned 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <blq/group.h>

#include "internal.h"

/* Indexed by enum blq_outcome (1..BLQ_OUTCOME_CANCELLED). */
#define NOUTCOMES (BLQ_OUTCOME_CANCELLED + 1)

struct job_rec {
	blq_done hook;        /* the handle's user hook: {job_done, this} */
	const blq_done *user; /* the job's own hook, or NULL */
	blq_group *g;
	blq_handle *h;        /* NULL until the enqueue call returned */
	struct job_rec *prev, *next; /* in g->pending_list until its outcome */
	bool accepted;        /* counted in g->accepted */
	bool ended;           /* its outcome came */
	bool returned;        /* its enqueue call returned 0 */
};

struct blq_group {
	blq *q;
	pthread_mutex_t mu;
	pthread_cond_t ended; /* CLOCK_MONOTONIC; signalled when nothing is left */
	/* Everything below is guarded by mu. */
	struct job_rec *pending_list;
	bool cancelled;
	uint64_t accepted, refused, enqueuing;
	uint64_t outcomes[NOUTCOMES];
};

static void unlink_rec(blq_group *g, struct job_rec *r)
{
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		g->pending_list = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

static uint64_t ended_count(const blq_group *g)
{
	uint64_t n = 0;

	for (int o = 1; o < NOUTCOMES; o++)
		n += g->outcomes[o];
	return n;
}

static bool idle(const blq_group *g)
{
	return g->enqueuing == 0 && g->accepted == ended_count(g);
}

/* Whichever of the outcome and the enqueue's return comes first counts
 * the job accepted. Under mu. */
static void accept(blq_group *g, struct job_rec *r)
{
	if (!r->accepted) {
		r->accepted = true;
		g->accepted++;
	}
}

/* The record's part of the item's hook (handle.c's handle_done runs it,
 * on the thread that ended the item). */
static void job_done(void *ctx, void *payload, enum blq_outcome o)
{
	struct job_rec *r = ctx;
	blq_group *g = r->g;
	blq_handle *h = NULL;

	if (r->user != NULL)
		r->user->fn(r->user->ctx, payload, o);
	pthread_mutex_lock(&g->mu);
	accept(g, r);
	g->outcomes[o]++; /* 1..BLQ_OUTCOME_CANCELLED */
	unlink_rec(g, r);
	r->ended = true;
	if (r->returned)
		h = r->h; /* the enqueuer is gone: the record is ours to free */
	if (idle(g))
		pthread_cond_broadcast(&g->ended);
	pthread_mutex_unlock(&g->mu);
	/* From here on the group is not touched: a waiter may free it. */
	if (h != NULL) {
		/* The caller's reference; handle_done drops the item's after
		 * this returns. */
		blq_handle_release(h);
		free(r);
	}
}

blq_group *blq_group_new(blq *q, blq_error *err)
{
	if (q == NULL) {
		blq__error_set(err, BLQ_EINVAL, "q: must not be NULL");
		return NULL;
	}
	blq_group *g = calloc(1, sizeof(*g));
	if (g == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "no memory for the group");
		return NULL;
	}
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
		free(g);
		blq__error_set(err, BLQ_ENOMEM, "cannot make the group's mutex");
		return NULL;
	}
	if (blq__cond_init_monotonic(&g->ended) != 0) {
		pthread_mutex_destroy(&g->mu);
		free(g);
		blq__error_set(err, BLQ_ENOMEM, "cannot make the group's condition variable");
		return NULL;
	}
	g->q = q;
	blq__error_set(err, BLQ_OK, "%s", "");
	return g;
}

static int group_enqueue(blq_group *g, const blq_job *job, bool try_only)
{
	if (g == NULL)
		return BLQ_EINVAL;
	struct job_rec *r = NULL;
	int rc = BLQ_EINVAL;

	if (job == NULL || (job->done != NULL && job->done->fn == NULL))
		goto refused;
	rc = BLQ_ENOMEM;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		goto refused;
	r->hook.fn = job_done;
	r->hook.ctx = r;
	r->user = job->done;
	r->g = g;

	pthread_mutex_lock(&g->mu);
	if (g->cancelled) {
		pthread_mutex_unlock(&g->mu);
		free(r);
		r = NULL;
		rc = BLQ_ECANCELED;
		goto refused;
	}
	g->enqueuing++;
	r->next = g->pending_list;
	if (r->next != NULL)
		r->next->prev = r;
	g->pending_list = r;
	pthread_mutex_unlock(&g->mu);

	/* Outside the mutex: the enqueue may wait for room, and a leak on
	 * overflow runs job_done on this thread before it returns. */
	blq_job mine = *job;
	blq_handle *h;

	mine.done = &r->hook;
	rc = blq__enqueue_job_handle(g->q, &mine, try_only, &h);

	pthread_mutex_lock(&g->mu);
	g->enqueuing--;
	if (rc != 0) {
		/* Not accepted: no outcome will come, job_done never ran. */
		unlink_rec(g, r);
		g->refused++;
		if (idle(g))
			pthread_cond_broadcast(&g->ended);
		pthread_mutex_unlock(&g->mu);
		free(r);
		return rc;
	}
	accept(g, r);
	r->returned = true;
	bool ended = r->ended;
	if (!ended) {
		r->h = h;
		if (g->cancelled)
			blq_cancel(h); /* the group was cancelled during the call */
	} else if (idle(g)) {
		pthread_cond_broadcast(&g->ended);
	}
	pthread_mutex_unlock(&g->mu);
	if (ended) {
		/* It ended inside the call (job_done left the record to us). */
		blq_handle_release(h);
		free(r);
	}
	return 0;

refused:
	pthread_mutex_lock(&g->mu);
	g->refused++;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

int blq_group_enqueue(blq_group *g, const blq_job *job)
{
	return group_enqueue(g, job, false);
}

int blq_group_try_enqueue(blq_group *g, const blq_job *job)
{
	return group_enqueue(g, job, true);
}

int blq_group_wait(blq_group *g, uint64_t timeout_ns)
{
	if (g == NULL)
		return BLQ_EINVAL;
	if (blq__is_own_worker(g->q))
		return BLQ_EDEADLK;
	uint64_t abs = timeout_ns == 0 ? 0 : blq__deadline_after(timeout_ns); /* 0: none */
	struct timespec ts = blq__timespec_of(abs);
	int rc = 0;

	pthread_mutex_lock(&g->mu);
	while (!idle(g)) {
		if (timeout_ns == 0) {
			rc = BLQ_ETIMEDOUT; /* only a look */
			break;
		}
		if (abs == 0) {
			pthread_cond_wait(&g->ended, &g->mu);
		} else if (pthread_cond_timedwait(&g->ended, &g->mu, &ts) == ETIMEDOUT) {
			rc = idle(g) ? 0 : BLQ_ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

int blq_group_counts(const blq_group *g, struct blq_group_counts *out)
{
	if (g == NULL || out == NULL)
		return BLQ_EINVAL;
	blq_group *m = (blq_group *)g; /* the lock only; nothing is changed */

	pthread_mutex_lock(&m->mu);
	*out = (struct blq_group_counts){
		.accepted = g->accepted,
		.refused = g->refused,
		.pending = g->accepted - ended_count(g),
		.enqueuing = g->enqueuing,
		.processed = g->outcomes[BLQ_OUTCOME_PROCESSED],
		.failed = g->outcomes[BLQ_OUTCOME_FAILED],
		.timed_out = g->outcomes[BLQ_OUTCOME_TIMED_OUT],
		.leaked = g->outcomes[BLQ_OUTCOME_LEAKED],
		.expired = g->outcomes[BLQ_OUTCOME_EXPIRED],
		.lost = g->outcomes[BLQ_OUTCOME_LOST],
		.cancelled = g->outcomes[BLQ_OUTCOME_CANCELLED],
	};
	pthread_mutex_unlock(&m->mu);
	return 0;
}

ssize_t blq_group_cancel(blq_group *g)
{
	if (g == NULL)
		return BLQ_EINVAL;
	ssize_t n = 0;

	pthread_mutex_lock(&g->mu);
	g->cancelled = true;
	for (struct job_rec *r = g->pending_list; r != NULL; r = r->next)
		if (r->h == NULL || blq_cancel(r->h) == 0)
			n++; /* no handle yet: its enqueuer cancels it on return */
	pthread_mutex_unlock(&g->mu);
	return n;
}

int blq_group_free(blq_group *g)
{
	if (g == NULL)
		return 0;
	pthread_mutex_lock(&g->mu);
	bool busy = !idle(g);
	pthread_mutex_unlock(&g->mu);
	if (busy)
		return BLQ_EBUSY;
	pthread_cond_destroy(&g->ended);
	pthread_mutex_destroy(&g->mu);
	free(g);
	return 0;
}
