/*
 * async_chain: every step on the same payload at once, on a fixed set of
 * helper threads plus the calling thread.
 *
 * Design
 * - The helpers are started once, at creation; a call never starts a
 *   thread and never allocates: its job (payload, results, a countdown and
 *   a mutex/condvar to wait on) lives on the caller's stack.
 * - A call queues steps 1..n-1 in a small shared ring of (job, step)
 *   entries under one mutex, runs step 0 itself, then takes back, under the
 *   same mutex, every one of its entries no helper has popped yet and runs
 *   those itself. Popping is claiming: an entry is run by whoever removed
 *   it from the ring, exactly once. So a call never waits for helpers busy
 *   with other calls, and no entry can point at a job whose call returned.
 * - A helper reports a step's result under the job's mutex and signals; the
 *   caller returns only once the countdown reached zero, after re-taking
 *   that mutex, so no helper touches the job afterwards.
 * - When the ring is full, a call runs the steps that did not fit itself.
 * Lock order: ring mutex, then (never nested) a job's mutex.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <blq/workers.h>

#include "errorf.h"
#include "thread.h"

#define MAX_STEPS 64u
#define MAX_HELPERS 256u

typedef struct job {
	void *payload;
	blq_task *task;
	const blq_worker *steps;
	int rcs[MAX_STEPS];
	unsigned remaining; /* steps not yet reported; under mu */
	pthread_mutex_t mu;
	pthread_cond_t cond;
} job;

typedef struct entry {
	job *j; /* NULL: taken back by its caller */
	unsigned step;
} entry;

struct blq_async_chain {
	blq_worker steps[MAX_STEPS];
	size_t n;
	void (*done)(void *ctx, void *payload);
	void *done_ctx;

	pthread_mutex_t mu; /* the ring */
	pthread_cond_t cond;
	entry *ring;
	unsigned cap, head, count;
	bool stop;
	unsigned nhelpers;
	pthread_t *helpers;
};

static void report(job *j, unsigned step, int rc)
{
	pthread_mutex_lock(&j->mu);
	j->rcs[step] = rc;
	if (--j->remaining == 0)
		pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->mu);
}

static void run_step(job *j, unsigned step)
{
	const blq_worker *w = &j->steps[step];

	report(j, step, w->fn(w->ctx, j->payload, j->task));
}

static void *helper_main(void *arg)
{
	blq_async_chain *a = arg;

	pthread_setname_np(pthread_self(), "blq-async");
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (a->count == 0 && !a->stop)
			pthread_cond_wait(&a->cond, &a->mu);
		if (a->count == 0)
			break; /* stopping, and nothing left */
		entry e = a->ring[a->head];
		a->head = (a->head + 1) % a->cap;
		a->count--;
		if (e.j == NULL)
			continue; /* its caller took it back */
		pthread_mutex_unlock(&a->mu);
		run_step(e.j, e.step);
		pthread_mutex_lock(&a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

static int run_async(void *ctx, void *payload, blq_task *task)
{
	blq_async_chain *a = ctx;
	job j = {.payload = payload, .task = task, .steps = a->steps, .remaining = (unsigned)a->n};
	bool queued[MAX_STEPS] = {false};

	pthread_mutex_init(&j.mu, NULL);
	pthread_cond_init(&j.cond, NULL);

	pthread_mutex_lock(&a->mu);
	for (unsigned i = 1; i < a->n && a->count < a->cap; i++) {
		a->ring[(a->head + a->count) % a->cap] = (entry){&j, i};
		a->count++;
		queued[i] = true;
	}
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->mu);

	run_step(&j, 0);

	/* Take back what no helper popped yet; it runs here. */
	bool mine[MAX_STEPS] = {false};
	pthread_mutex_lock(&a->mu);
	for (unsigned k = 0; k < a->count; k++) {
		entry *e = &a->ring[(a->head + k) % a->cap];

		if (e->j == &j) {
			mine[e->step] = true;
			e->j = NULL;
		}
	}
	pthread_mutex_unlock(&a->mu);
	for (unsigned i = 1; i < a->n; i++)
		if (!queued[i] || mine[i])
			run_step(&j, i);

	pthread_mutex_lock(&j.mu);
	while (j.remaining > 0)
		pthread_cond_wait(&j.cond, &j.mu);
	pthread_mutex_unlock(&j.mu);
	pthread_cond_destroy(&j.cond);
	pthread_mutex_destroy(&j.mu);

	for (size_t i = 0; i < a->n; i++)
		if (j.rcs[i] != 0)
			return j.rcs[i];
	if (a->done != NULL)
		a->done(a->done_ctx, payload);
	return 0;
}

static void stop_helpers(blq_async_chain *a, unsigned started)
{
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->mu);
	for (unsigned i = 0; i < started; i++)
		pthread_join(a->helpers[i], NULL);
}

static void destroy(blq_async_chain *a)
{
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->mu);
	free(a->ring);
	free(a->helpers);
	free(a);
}

blq_async_chain *blq_async_chain_new(const blq_async_config *cfg, blq_error *err)
{
	if (cfg == NULL || cfg->steps == NULL || cfg->n == 0) {
		blq__error_set(err, BLQ_EINVAL, "async_chain: steps: need at least one");
		return NULL;
	}
	if (cfg->n > MAX_STEPS) {
		blq__error_set(err, BLQ_EINVAL, "async_chain: n: must be <= %u, got %zu", MAX_STEPS,
			       cfg->n);
		return NULL;
	}
	if (cfg->helpers > MAX_HELPERS) {
		blq__error_set(err, BLQ_EINVAL, "async_chain: helpers: must be <= %u, got %u",
			       MAX_HELPERS, cfg->helpers);
		return NULL;
	}
	for (size_t i = 0; i < cfg->n; i++)
		if (cfg->steps[i].fn == NULL) {
			blq__error_set(err, BLQ_EINVAL, "async_chain: steps[%zu]: fn is NULL", i);
			return NULL;
		}
	blq_async_chain *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "async_chain: out of memory");
		return NULL;
	}
	memcpy(a->steps, cfg->steps, cfg->n * sizeof(blq_worker));
	a->n = cfg->n;
	a->done = cfg->done;
	a->done_ctx = cfg->done_ctx;
	a->nhelpers = cfg->helpers ? cfg->helpers : (unsigned)(cfg->n > 1 ? cfg->n - 1 : 1);
	a->cap = a->nhelpers * 4 + (unsigned)cfg->n;
	a->ring = calloc(a->cap, sizeof(entry));
	a->helpers = calloc(a->nhelpers, sizeof(pthread_t));
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cond, NULL);
	if (a->ring == NULL || a->helpers == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "async_chain: out of memory");
		destroy(a);
		return NULL;
	}
	/* Helpers block the asynchronous signals, like the queue's workers. */
	for (unsigned i = 0; i < a->nhelpers; i++) {
		int e = blq__thread_create(&a->helpers[i], helper_main, a);
		if (e != 0) {
			stop_helpers(a, i);
			destroy(a);
			blq__error_set(err, BLQ_ETHREAD,
				       "async_chain: helpers: cannot start thread %u (error %d)", i, e);
			return NULL;
		}
	}
	return a;
}

void blq_async_chain_free(blq_async_chain *a)
{
	if (a == NULL)
		return;
	stop_helpers(a, a->nhelpers);
	destroy(a);
}

blq_worker blq_async_chain_worker(blq_async_chain *a)
{
	if (a == NULL)
		return (blq_worker){0}; /* no fn: blq_new and blq_chain_new refuse it */
	return (blq_worker){.fn = run_async, .ctx = a};
}
