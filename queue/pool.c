/*
 * The worker pool: a fixed array of worker slots (the thread ceiling), each
 * idle (no thread), active or asleep. Only the balancer (heartbeat,
 * enqueue-side hints, close) changes commands, under q->pool_mu; the worker
 * threads themselves change their reported state (worker.c).
 *
 * A slot's thread is joined before the slot gets a new one, and at close.
 * Threads are created with the asynchronous signals blocked
 * (blq__thread_create).
 */
#include <pthread.h>

#include "internal.h"

/* Caller holds pool_mu. Starts a thread in an idle slot. */
int blq__pool_start(blq *q, blq__worker *w)
{
	int e;

	if (q->pool_closed || atomic_load_explicit(&w->state, memory_order_acquire) != BLQ__W_IDLE)
		return BLQ_EINVAL;
	if (w->joinable) {
		/* The slot's previous thread has ended (state IDLE): reap it. */
		pthread_join(w->thread, NULL);
		w->joinable = false;
	}
	atomic_store_explicit(&w->cmd, BLQ__CMD_RUN, memory_order_release);
	blq__idle_clock_reset(&w->idle_clock);
	atomic_store_explicit(&w->task.cancelled, 0, memory_order_relaxed);
	/* The slot counts as active from now, so the balancer and the
	 * enqueue-side hint do not start it twice. */
	atomic_store_explicit(&w->state, BLQ__W_ACTIVE, memory_order_release);
	atomic_fetch_add_explicit(&q->n_active, 1, memory_order_acq_rel);
	pthread_mutex_lock(&q->mu);
	q->alive++;
	pthread_mutex_unlock(&q->mu);

	e = blq__thread_create(&w->thread, blq__worker_main, w);
	if (e != 0) {
		atomic_store_explicit(&w->state, BLQ__W_IDLE, memory_order_release);
		atomic_fetch_sub_explicit(&q->n_active, 1, memory_order_acq_rel);
		pthread_mutex_lock(&q->mu);
		q->alive--;
		pthread_cond_broadcast(&q->cond);
		pthread_mutex_unlock(&q->mu);
		blq__log(q, BLQ_LOG_ERROR, "queue %s: cannot start worker %u (error %d)", q->name,
			 w->index, e);
		return BLQ_ETHREAD;
	}
	w->joinable = true;
	atomic_fetch_add_explicit(&q->started_threads, 1, memory_order_relaxed);
	return 0;
}

void blq__pool_rescue(blq *q)
{
	pthread_mutex_lock(&q->pool_mu);
	for (unsigned i = 0; i < blq__slots(q); i++)
		if (blq__pool_start(q, &q->workers[i]) == 0)
			break;
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__pool_wake(blq *q, blq__worker *w)
{
	atomic_store_explicit(&w->cmd, BLQ__CMD_RUN, memory_order_release);
	blq__ec_notify(&w->park, 0);
	atomic_fetch_add_explicit(&q->woken, 1, memory_order_relaxed);
}

void blq__pool_sleep(blq *q, blq__worker *w)
{
	atomic_store_explicit(&w->cmd, BLQ__CMD_SLEEP, memory_order_release);
	/* It may be blocked on the empty queue, or waiting for a rate token
	 * (rate.c): make it look at its command. */
	blq__ec_notify(&q->items_ec, 0);
	blq__ec_notify(&q->rate_ec, 0);
	atomic_fetch_add_explicit(&q->slept, 1, memory_order_relaxed);
}

void blq__pool_tell_stop(blq *q, blq__worker *w)
{
	atomic_store_explicit(&w->cmd, BLQ__CMD_STOP, memory_order_release);
	/* Wherever it sleeps (parked, on the empty queue, for a rate
	 * token), it reads its command after it announces its sleep (ec.h):
	 * wake it to read this one. */
	blq__ec_notify(&w->park, 0);
	blq__ec_notify(&q->items_ec, 0);
	blq__ec_notify(&q->rate_ec, 0);
}

void blq__pool_stop(blq *q, blq__worker *w)
{
	blq__pool_tell_stop(q, w);
	atomic_fetch_add_explicit(&q->stopped_threads, 1, memory_order_relaxed);
}

void blq__pool_join_all(blq *q)
{
	pthread_mutex_lock(&q->pool_mu);
	q->pool_closed = true;
	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];

		/* A thread given up inside a callback (watchdog.c) may run
		 * on for long: joined once it exited (blq_free). */
		pthread_mutex_lock(&q->mu);
		bool running_on = w->detached;
		pthread_mutex_unlock(&q->mu);
		if (w->joinable && !running_on) {
			pthread_join(w->thread, NULL);
			w->joinable = false;
		}
	}
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__pool_counts(const blq *q, unsigned *active, unsigned *asleep, unsigned *idle)
{
	unsigned a = 0, s = 0;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		int st = atomic_load_explicit(&q->workers[i].state, memory_order_relaxed);

		a += st == BLQ__W_ACTIVE;
		s += st == BLQ__W_ASLEEP;
	}
	*active = a;
	*asleep = s;
	/* Replacements run in spare slots: idle counts against the ceiling. */
	unsigned ceiling = atomic_load_explicit(&q->nworkers, memory_order_relaxed);
	*idle = a + s < ceiling ? ceiling - a - s : 0;
}
