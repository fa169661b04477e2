/*
 * The Prometheus writer's registry: per-queue series and lock-free
 * updates (prom_render.c renders them, prom_dump.c holds the dump
 * families).
 *
 * Design
 * - One series block per queue, made by blq_prom_queue_writer; its writer's
 *   ctx points at the block, so an event costs no lookup.
 * - Counters and histograms live in BLQ__PROM_CELLS cache-line cells per
 *   series; a thread adds into the cell its address hashes to (relaxed
 *   atomic adds), so producers and workers rarely share a line. Rendering
 *   folds the cells; a render racing updates sees each counter at some
 *   recent value (counters never go back).
 * - The per-item worker events (pull, exec) go to a cell of the worker's
 *   own, made on its first event: a worker index has one thread at a time
 *   (the queue joins a slot's thread before it starts another), so those
 *   cells have a single writer and take plain adds (a relaxed load and
 *   store) instead of locked ones: five locked adds per item were most of
 *   the writer's cost in W1-PROM. One writer per queue: two queues sharing
 *   one would share worker indices.
 * - Histograms keep per-bucket counts (not cumulative; folded into
 *   cumulative `le` buckets at render) and a sum in nanoseconds.
 * - The registry's list of series and watched queues is under a mutex that
 *   only registration, watch and render take.
 * - QoS sub-queues: a series makes a block of per-thread cells for each
 *   sub-queue name on its first event (under the series' own mutex, once);
 *   later events find it by name without a lock (a few short string
 *   compares), and rendering reads the blocks published so far.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "prom_internal.h"
#include "thread_hash.h"

/* Upper bounds in ns: 100 us .. 5 s. */
static const uint64_t bucket_ns[] = {
	100000,    250000,    500000,    1000000,    2500000,    5000000,    10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000, 5000000000,
};
_Static_assert(sizeof(bucket_ns) / sizeof(bucket_ns[0]) == NBUCKETS, "one bound per bucket");

static unsigned my_cell_index(void)
{
	return blq__thread_cell(BLQ__PROM_CELLS);
}

static cell *my_cell(series *s)
{
	return &s->cells[my_cell_index()];
}

static void add(void *ctx, int counter)
{
	atomic_fetch_add_explicit(&my_cell(ctx)->c[counter], 1, memory_order_relaxed);
}

/* The bucket an observation falls in: the first bound >= ns; NBUCKETS is
 * the one above the last bound. */
static size_t bucket_of(uint64_t ns)
{
	size_t b = 0;

	while (b < NBUCKETS && ns > bucket_ns[b])
		b++;
	return b;
}

static void observe(void *ctx, int which, uint64_t ns)
{
	hist *h = &my_cell(ctx)->h[which];

	atomic_fetch_add_explicit(&h->bucket[bucket_of(ns)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

/* A single-writer counter: no locked instruction. */
static inline void own_add(_Atomic uint64_t *x, uint64_t v)
{
	atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static void own_observe(cell *c, int which, uint64_t ns)
{
	hist *h = &c->h[which];

	own_add(&h->bucket[bucket_of(ns)], 1);
	own_add(&h->sum_ns, ns);
}

/* Worker w's own cell, made on its first event; NULL (use the shared
 * cells) for an index out of range or when memory runs out. */
static cell *worker_cell(series *s, unsigned w)
{
	if (w >= BLQ__PROM_WORKERS)
		return NULL;
	cell *c = atomic_load_explicit(&s->wcells[w], memory_order_acquire);
	if (c != NULL)
		return c;
	c = aligned_alloc(64, sizeof(cell));
	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	cell *none = NULL;
	/* Release: the zeroed cell before its pointer. Only worker w makes
	 * its cell, so the exchange cannot lose; it is a CAS for safety. */
	if (!atomic_compare_exchange_strong_explicit(&s->wcells[w], &none, c, memory_order_release,
						     memory_order_acquire)) {
		free(c);
		c = none;
	}
	return c;
}

static void on_put(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_IN);
}

static void on_pull(void *ctx, const char *q, unsigned worker, uint64_t wait_ns)
{
	cell *c = worker_cell(ctx, worker);

	(void)q;
	if (c == NULL) {
		add(ctx, C_OUT);
		observe(ctx, H_WAIT, wait_ns);
		return;
	}
	own_add(&c->c[C_OUT], 1);
	own_observe(c, H_WAIT, wait_ns);
}

static void on_retry(void *ctx, const char *q, uint64_t delay_ns)
{
	(void)q;
	add(ctx, C_RETRY);
	observe(ctx, H_RETRY, delay_ns);
}

static void on_delayed(void *ctx, const char *q, uint64_t waited_ns)
{
	(void)q;
	observe(ctx, H_DELAY, waited_ns);
}

static void on_leak(void *ctx, const char *q, enum blq_leak_dir dir)
{
	(void)q;
	add(ctx, dir == BLQ_LEAK_FRONT ? C_LEAK_FRONT : C_LEAK_REAR);
}

static void on_deadline(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_DEADLINE);
}

static void on_lost(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_LOST);
}

static void on_cancelled(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_CANCELLED);
}

static void on_exec(void *ctx, const char *q, unsigned worker, uint64_t ns, int failed)
{
	cell *c = worker_cell(ctx, worker);

	(void)q;
	if (c == NULL) {
		if (failed)
			add(ctx, C_FAILED);
		observe(ctx, H_EXEC, ns);
		return;
	}
	if (failed)
		own_add(&c->c[C_FAILED], 1);
	own_observe(c, H_EXEC, ns);
}

/* The block of sub-queue `name`, made on its first event. NULL when a
 * series already has BLQ_QOS_SUBQS_MAX names or memory ran out: the event
 * is dropped (never blocks, never fails the queue). */
static subq_series *subq_of(series *s, const char *name)
{
	/* Acquire: pairs with the release below, so a counted block is fully
	 * written. */
	unsigned n = atomic_load_explicit(&s->nsubq, memory_order_acquire);
	subq_series *b = NULL;

	for (unsigned i = 0; i < n; i++)
		if (strcmp(s->subq[i]->name, name) == 0)
			return s->subq[i];
	pthread_mutex_lock(&s->subq_mu);
	/* Relaxed: only holders of subq_mu change it. */
	n = atomic_load_explicit(&s->nsubq, memory_order_relaxed);
	for (unsigned i = 0; i < n && b == NULL; i++)
		if (strcmp(s->subq[i]->name, name) == 0)
			b = s->subq[i];
	if (b == NULL && n < BLQ_QOS_SUBQS_MAX &&
	    (b = aligned_alloc(64, (sizeof(*b) + 63) / 64 * 64)) != NULL) {
		memset(b, 0, sizeof(*b));
		snprintf(b->name, sizeof(b->name), "%s", name);
		s->subq[n] = b;
		atomic_store_explicit(&s->nsubq, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->subq_mu);
	return b;
}

static void subq_add(void *ctx, const char *name, int counter)
{
	subq_series *b = subq_of(ctx, name);

	if (b != NULL)
		atomic_fetch_add_explicit(&b->cells[my_cell_index()].c[counter], 1,
					  memory_order_relaxed);
}

static void on_subq_put(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_IN);
}

static void on_subq_pull(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_OUT);
}

static void on_subq_leak(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_LEAK);
}

blq_prom *blq_prom_new(blq_error *err)
{
	blq_prom *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "prometheus: out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	return r;
}

void blq_prom_free(blq_prom *r)
{
	if (r == NULL)
		return;
	for (series *s = r->head, *n; s != NULL; s = n) {
		n = s->next;
		for (unsigned i = 0; i < atomic_load_explicit(&s->nsubq, memory_order_relaxed); i++)
			free(s->subq[i]);
		for (unsigned i = 0; i < BLQ__PROM_WORKERS; i++)
			free(atomic_load_explicit(&s->wcells[i], memory_order_relaxed));
		pthread_mutex_destroy(&s->subq_mu);
		free(s);
	}
	for (dump_series *s = r->dumps, *n; s != NULL; s = n) {
		n = s->next;
		free(s);
	}
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static series *find(blq_prom *r, const char *name)
{
	for (series *s = r->head; s != NULL; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

const blq_metrics_writer *blq_prom_queue_writer(blq_prom *r, const char *queue, blq_error *err)
{
	if (r == NULL || queue == NULL || queue[0] == '\0' || strlen(queue) > NAME_MAX_LEN) {
		blq__error_set(err, BLQ_EINVAL, "prometheus: queue: must be 1..%d bytes",
			       NAME_MAX_LEN);
		return NULL;
	}
	series *s = aligned_alloc(64, (sizeof(series) + 63) / 64 * 64);
	if (s == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "prometheus: out of memory");
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", queue);
	s->w = (blq_metrics_writer){
		.ctx = s,
		.queue_put = on_put,
		.queue_pull = on_pull,
		.queue_retry = on_retry,
		.queue_delayed = on_delayed,
		.queue_leak = on_leak,
		.queue_deadline = on_deadline,
		.queue_lost = on_lost,
		.queue_exec = on_exec,
		.subq_put = on_subq_put,
		.subq_pull = on_subq_pull,
		.subq_leak = on_subq_leak,
		.queue_cancelled = on_cancelled,
	};
	pthread_mutex_init(&s->subq_mu, NULL);
	pthread_mutex_lock(&r->mu);
	if (find(r, queue) != NULL) {
		pthread_mutex_unlock(&r->mu);
		pthread_mutex_destroy(&s->subq_mu);
		free(s);
		blq__error_set(err, BLQ_EINVAL, "prometheus: queue \"%s\": already has a writer",
			       queue);
		return NULL;
	}
	/* Append: families list queues in registration order. */
	series **tail = &r->head;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = s;
	pthread_mutex_unlock(&r->mu);
	return &s->w;
}

static int set_watch(blq_prom *r, blq *q, blq *to)
{
	if (r == NULL || q == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&r->mu);
	series *s = find(r, blq_name(q));
	if (s != NULL)
		s->watched = to;
	pthread_mutex_unlock(&r->mu);
	return s != NULL ? 0 : BLQ_EINVAL;
}

int blq_prom_watch(blq_prom *r, blq *q)
{
	return set_watch(r, q, q);
}

int blq_prom_unwatch(blq_prom *r, blq *q)
{
	return set_watch(r, q, NULL);
}
