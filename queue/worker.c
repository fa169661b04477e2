/*
 * Workers: pthreads that take items from the rings and run the callback.
 *
 * Design
 * - Worker i starts its search at ring i % nrings, so with streams each
 *   worker mostly drains its own ring and steals from the others when it
 *   is empty.
 * - A worker sleeps on items_ec only after a failed take, announced and
 *   re-checked (ec.h), so it never misses an item and never spins: an idle
 *   queue's workers cost no CPU.
 * - After each take, a worker wakes the producers sleeping on a full queue,
 *   all at once, when the rings have drained to half (not per item: a
 *   wake-up per item is a system call per item).
 * - Exit: at once when forced (after the current item); when closing,
 *   once no producer is in flight and the rings are empty.
 * - Workers block the asynchronous signals, so SIGTERM and SIGINT reach
 *   the application's own threads (seed 004: the drain runs there).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* The queue whose worker runs on this thread, so close and free called
 * from inside a worker do not wait for themselves. */
static _Thread_local const blq *blq__own_queue;

bool blq__is_own_worker(const blq *q)
{
	return blq__own_queue == q;
}

static uint64_t total_size(const blq *q)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < q->nrings; i++)
		n += blq__ring_size(&q->rings[i]);
	return n;
}

static void after_take(blq *q)
{
	/* StoreLoad: the slot we freed (a release store) must be visible
	 * before we read the producers' waiters count (ec.h). */
	if (blq__ec_publish_then_waiters(&q->space_ec) != 0 &&
	    total_size(q) <= q->cfg.capacity / 2)
		blq__ec_wake_slow(&q->space_ec, 0);
}

static void fail(blq *q, blq__worker *w, void *payload)
{
	if (q->cfg.fail_to_dlq)
		blq__to_dlq(q, w->cell, payload, &w->cell->leaked_failed, BLQ_LEAK_REAR);
	else
		blq__drop(q, payload, &w->cell->failed);
}

static void run_item(blq *q, blq__worker *w, const blq__item *it)
{
	const blq_metrics_writer *m = q->cfg.metrics;
	uint64_t t0 = 0;

	if (m != NULL && m->queue_pull != NULL)
		m->queue_pull(m->ctx, q->name);
	if (it->deadline_ns != 0 && blq__now(q) >= it->deadline_ns) {
		if (m != NULL && m->queue_deadline != NULL)
			m->queue_deadline(m->ctx, q->name);
		if (q->cfg.deadline_to_dlq)
			blq__to_dlq(q, w->cell, it->payload, &w->cell->leaked_deadline,
				    BLQ_LEAK_REAR);
		else
			blq__drop(q, it->payload, &w->cell->expired);
		return;
	}
	w->task.enq_ns = it->enq_ns;
	w->task.attempt = it->attempt;
	if (m != NULL && m->queue_exec != NULL)
		t0 = blq__now(q);
	int rc = q->cfg.worker(q->cfg.worker_ctx, it->payload, &w->task);
	if (m != NULL && m->queue_exec != NULL)
		m->queue_exec(m->ctx, q->name, blq__now(q) - t0, rc != 0);
	if (rc == 0)
		blq__count_own(&w->cell->processed);
	else
		fail(q, w, it->payload);
}

static bool forced(const blq *q)
{
	return atomic_load_explicit(&q->forced, memory_order_acquire) != 0;
}

/* Takes the next item, sleeping while there is none. False: time to exit. */
static bool next_item(blq *q, blq__worker *w, blq__item *it)
{
	unsigned home = w->index % q->nrings;

	for (;;) {
		if (forced(q))
			return false;
		if (blq__pop_any(q, home, it))
			return true;
		uint32_t snap = blq__ec_prepare(&q->items_ec);
		if (blq__pop_any(q, home, it)) {
			blq__ec_cancel(&q->items_ec);
			return true;
		}
		/* Closing and no producer in flight: whatever the rings hold
		 * now is all there will be; take it, or exit when empty. */
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst) &&
		    blq__inflight(q) == 0) {
			bool got = blq__pop_any(q, home, it);

			blq__ec_cancel(&q->items_ec);
			return got;
		}
		if (forced(q)) {
			blq__ec_cancel(&q->items_ec);
			return false;
		}
		blq__ec_wait(&q->items_ec, snap, 0);
	}
}

static void *worker_main(void *arg)
{
	blq__worker *w = arg;
	blq *q = w->q;
	const blq_metrics_writer *m = q->cfg.metrics;
	blq__item it;
	char tname[16];

	blq__own_queue = q;
	snprintf(tname, sizeof(tname), "blq-w%u", w->index);
	pthread_setname_np(pthread_self(), tname);
	if (m != NULL && m->worker_init != NULL)
		m->worker_init(m->ctx, q->name, w->index);

	pthread_mutex_lock(&q->mu);
	q->running++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);

	while (next_item(q, w, &it)) {
		after_take(q);
		run_item(q, w, &it);
	}

	if (m != NULL && m->worker_stop != NULL)
		m->worker_stop(m->ctx, q->name, w->index, forced(q));
	pthread_mutex_lock(&q->mu);
	q->alive--;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

/* Block the asynchronous signals in the threads we create; the synchronous
 * ones (faults) must stay deliverable. */
static void worker_sigmask(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, SIGSEGV);
	sigdelset(set, SIGBUS);
	sigdelset(set, SIGFPE);
	sigdelset(set, SIGILL);
	sigdelset(set, SIGABRT);
	sigdelset(set, SIGTRAP);
}

int blq__workers_start(blq *q, blq_error *err)
{
	sigset_t set, old;
	int rc = 0;

	worker_sigmask(&set);
	pthread_sigmask(SIG_SETMASK, &set, &old);
	for (unsigned i = 0; i < q->nworkers; i++) {
		blq__worker *w = &q->workers[i];

		pthread_mutex_lock(&q->mu);
		q->alive++;
		pthread_mutex_unlock(&q->mu);
		int e = pthread_create(&w->thread, NULL, worker_main, w);
		if (e != 0) {
			pthread_mutex_lock(&q->mu);
			q->alive--;
			pthread_mutex_unlock(&q->mu);
			rc = blq__error_set(err, BLQ_ETHREAD, "workers: pthread_create failed for worker %u (error %d)",
					    i, e);
			break;
		}
		w->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return rc;

	/* Handshake: return only when every worker runs. */
	pthread_mutex_lock(&q->mu);
	while (q->running < q->nworkers)
		pthread_cond_wait(&q->cond, &q->mu);
	pthread_mutex_unlock(&q->mu);
	return 0;
}
