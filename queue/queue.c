/*
 * Queue lifecycle (create, free) and read-only accessors.
 *
 * Design
 * - blq_new validates the whole config first (config.c), then copies it,
 *   applies the defaults, allocates everything the queue will ever need
 *   (rings of item slots, counter cells, worker records), and only then
 *   starts the workers: after creation nothing on the item path allocates.
 * - A failure at any step tears down what was built and returns NULL with
 *   the reason: never a half-valid queue.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"
#include "schedule_internal.h"

static uint64_t default_now(void *ctx)
{
	(void)ctx;
	return blq__fast_ns();
}

static uint64_t default_wall(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void apply_defaults(blq *q)
{
	blq_config *c = &q->cfg;

	snprintf(q->name, sizeof(q->name), "%s", c->name != NULL ? c->name : "queue");
	c->name = q->name;
	if (c->streams == 0)
		c->streams = 1;
	if (c->workers > 0)
		c->workers_min = c->workers_max = c->workers;
	if (c->wakeup_factor == 0)
		c->wakeup_factor = 0.75;
	if (c->sleep_factor == 0)
		c->sleep_factor = 0.5;
	if (c->sleep_interval_ns == 0)
		c->sleep_interval_ns = 5000000000u;
	if (c->heartbeat_interval_ns == 0)
		c->heartbeat_interval_ns = 1000000000u;
	if (c->force_calibration_limit == 0)
		c->force_calibration_limit = 1000;
	if (c->front_leak_attempts == 0)
		c->front_leak_attempts = 5;
	if (c->rate_limit != 0 && c->rate_burst == 0)
		c->rate_burst = 1;
	if (c->jitter == BLQ_JITTER_DECORRELATED && c->jitter_min_ns == 0)
		c->jitter_min_ns = c->retry_interval_ns;
	q->own_clock = c->clock.now_ns != NULL;
	if (c->clock.now_ns == NULL)
		c->clock.now_ns = default_now;
	if (c->clock.wall_ns == NULL)
		c->clock.wall_ns = default_wall;
	if (c->logger.level == 0)
		c->logger.level = BLQ_LOG_INFO;
	q->leaky = c->dlq.enqueue != NULL;
	q->stamp = c->stamp_enqueue_time || c->metrics != NULL || c->deadline_interval_ns != 0;
	q->balanced = c->workers_min < c->workers_max || c->schedule != NULL;
	c->schedule = NULL; /* the queue keeps its own copy (q->schedule) */
}

/* The rings the engine's shape asks for: ring_cap slots over `streams`. */
static int alloc_rings(blq *q, unsigned streams)
{
	size_t per = q->ring_cap / streams, extra = q->ring_cap % streams;

	q->rings = aligned_alloc(BLQ__CACHELINE, sizeof(blq__ring) * streams);
	if (q->rings == NULL)
		return BLQ_ENOMEM;
	memset(q->rings, 0, sizeof(blq__ring) * streams);
	for (unsigned i = 0; i < streams; i++) {
		if (blq__ring_init(&q->rings[i], per + (i < extra ? 1 : 0)) != 0)
			return BLQ_ENOMEM;
		q->nrings++;
	}
	return 0;
}

/* Address space for n objects of `size` bytes, zero-filled and backed page
 * by page as it is touched (MAP_NORESERVE: not charged against the commit
 * limit until then), or NULL. */
static void *reserve(size_t n, size_t size)
{
	void *p = mmap(NULL, n * size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p != MAP_FAILED ? p : NULL;
}

void blq__slots_grow(blq *q, unsigned workers_max)
{
	/* The thread ceiling: the schedule's largest max may be above it. */
	unsigned ceiling = workers_max;
	if (q->schedule != NULL && blq_schedule_workers_max(q->schedule) > ceiling)
		ceiling = blq_schedule_workers_max(q->schedule);
	unsigned from = blq__slots(q), to = 2 * ceiling; /* the spares: watchdog.c */

	atomic_store_explicit(&q->nworkers, ceiling, memory_order_relaxed);
	if (to <= from)
		return;
	/* The reserved pages read zero: state IDLE, cmd RUN, no inbox, empty
	 * counters. Only the links are set. */
	for (unsigned i = from; i < to; i++) {
		blq__worker *w = &q->workers[i];

		w->q = q;
		w->index = i;
		w->cell = &q->cells[BLQ__CELL_WORKERS + i];
		w->task.queue = q;
		w->task.worker = i;
	}
	/* Release: a walker that reads the new count sees the slots set up. */
	atomic_store_explicit(&q->nslots, to, memory_order_release);
}

/* The slots and the cells, reserved for BLQ__SLOTS_LIMIT slots so that
 * blq_resize can raise the ceiling to the limit without moving them (a
 * walker may be on them: the balancer, blq_stats, the timer, a producer
 * reading blq_size). A slot is 1152 bytes and a cell 192 bytes, so the
 * reservation is about 2.6 MiB of address space per queue, of which only
 * the pages of the slots in use are ever backed: a queue of 4 workers
 * touches what its own 8 slots take, as when the arrays were sized to the
 * ceiling. */
static int alloc_workers(blq *q)
{
	/* mmap's pages are page-aligned: the cache-line alignment holds. */
	q->cells = reserve(BLQ__CELL_WORKERS + BLQ__SLOTS_LIMIT, sizeof(blq__cell));
	q->workers = reserve(BLQ__SLOTS_LIMIT, sizeof(blq__worker));
	if (q->cells == NULL || q->workers == NULL)
		return BLQ_ENOMEM;
	blq__slots_grow(q, q->cfg.workers_max);
	return 0;
}

static int init_sync(blq *q)
{
	if (pthread_mutex_init(&q->mu, NULL) != 0)
		return BLQ_ENOMEM;
	if (pthread_mutex_init(&q->pool_mu, NULL) != 0) {
		pthread_mutex_destroy(&q->mu);
		return BLQ_ENOMEM;
	}
	/* Close timeouts are measured on CLOCK_MONOTONIC: a wall-clock jump
	 * must not stretch or cut them. */
	if (blq__cond_init_monotonic(&q->cond) != 0) {
		pthread_mutex_destroy(&q->pool_mu);
		pthread_mutex_destroy(&q->mu);
		return BLQ_ENOMEM;
	}
	return 0;
}

/* The balancer's bounds, read under pool_mu: the heartbeat may be
 * calibrating and writes them there. */
static blq__bounds bounds_in_force(const blq *q)
{
	pthread_mutex_lock((pthread_mutex_t *)&q->pool_mu);
	blq__bounds b = q->bounds;
	pthread_mutex_unlock((pthread_mutex_t *)&q->pool_mu);
	return b;
}

static void destroy(blq *q, bool sync_ready)
{
	blq__lanes_destroy(q);
	for (unsigned i = 0; i < q->nrings; i++)
		blq__ring_destroy(&q->rings[i]);
	free(q->rings);
	if (q->cells != NULL)
		munmap(q->cells, (BLQ__CELL_WORKERS + BLQ__SLOTS_LIMIT) * sizeof(blq__cell));
	blq__inbox_free_all(q);
	if (q->workers != NULL)
		munmap(q->workers, BLQ__SLOTS_LIMIT * sizeof(blq__worker));
	blq_schedule_free(q->schedule);
	blq__timer_destroy(q);
	if (q->engine != NULL && q->engine->free != NULL)
		q->engine->free(q->engine_state);
	if (sync_ready) {
		pthread_cond_destroy(&q->cond);
		pthread_mutex_destroy(&q->pool_mu);
		pthread_mutex_destroy(&q->mu);
	}
#ifndef NDEBUG
	/* Poison, so a use after free fails loudly in debug builds. */
	memset(q, 0xa5, sizeof(*q));
#endif
	free(q);
}

blq *blq_new(const blq_config *cfg, blq_error *err)
{
	blq *q;
	unsigned streams = 0;
	int rc;

	blq__error_set(err, BLQ_OK, "%s", "");
	if (blq__config_check(cfg, err) != 0)
		return NULL;
	q = aligned_alloc(BLQ__CACHELINE, (sizeof(*q) + BLQ__CACHELINE - 1) / BLQ__CACHELINE *
						  BLQ__CACHELINE);
	if (q == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "queue: out of memory");
		return NULL;
	}
	memset(q, 0, sizeof(*q));
	q->cfg = *cfg;
	if (cfg->schedule != NULL && (q->schedule = blq__schedule_copy(cfg->schedule)) == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "schedule: out of memory");
		free(q);
		return NULL;
	}
	apply_defaults(q);
	blq__rate_init(q);
	q->start_ns = blq__now(q);
	if (blq__engine_setup(q, &streams) != 0 || alloc_rings(q, streams) != 0 ||
	    (q->engine == &blq__rings_engine && blq__lanes_init(q) != 0) || alloc_workers(q) != 0) {
		blq__error_set(err, BLQ_ENOMEM, "capacity: out of memory for %zu items",
			       q->capacity != 0 ? q->capacity : q->cfg.capacity);
		destroy(q, false);
		return NULL;
	}
	if (init_sync(q) != 0) {
		blq__error_set(err, BLQ_ENOMEM, "queue: cannot initialise its mutex");
		destroy(q, false);
		return NULL;
	}
	if (blq__timer_init(q) != 0) {
		blq__error_set(err, BLQ_ENOMEM, "queue: cannot initialise the timer's mutex");
		destroy(q, true);
		return NULL;
	}
	rc = blq__balancer_start(q, err);
	if (rc == 0 && q->engine->start != NULL)
		rc = q->engine->start(q->engine_state, err);
	if (rc != 0) {
		blq_force_close(q); /* stops and joins the workers that did start */
		destroy(q, true);
		return NULL;
	}
	blq__bounds b = bounds_in_force(q);
	const blq_metrics_writer *m = q->cfg.metrics;
	if (m != NULL && m->worker_setup != NULL)
		m->worker_setup(m->ctx, q->name, b.min, 0,
				atomic_load_explicit(&q->nworkers, memory_order_relaxed) - b.min);
	blq__log(q, BLQ_LOG_INFO, "queue %s: started, capacity %zu, workers %u..%u%s", q->name,
		 q->capacity, b.min, b.max, q->balanced ? " (balanced)" : "");
	return q;
}

int blq_free(blq *q)
{
	if (q == NULL)
		return 0;
	if (blq__is_own_worker(q))
		return BLQ_EDEADLK;
	/* Waits for callbacks a close past its limit left running too (the
	 * join then reaps their threads): nothing is freed under them. */
	blq_close(q);
	blq__pool_join_all(q);
	destroy(q, true);
	return 0;
}

uint64_t blq__taken_items(const blq *q)
{
	const blq__ring *due = atomic_load_explicit(&q->due, memory_order_acquire);

	/* The due ring: delivered by the timer, not yet taken by a worker. */
	return blq__ring_items(q) + (due != NULL ? blq__ring_size(due) : 0);
}

uint64_t blq__hand_items(const blq *q)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < blq__slots(q); i++)
		n += atomic_load_explicit(&q->workers[i].hand, memory_order_relaxed) &
		     ~BLQ__HAND_GONE; /* a takeover's flag (handback.c) */
	return n;
}

uint64_t blq__ready(const blq *q)
{
	/* q->staged less the timer's share of it: no inbox walk (this is read
	 * on the enqueue side of balanced queues). */
	uint64_t staged = atomic_load_explicit(&q->staged, memory_order_relaxed);
	uint64_t delayed = atomic_load_explicit(&q->timer.held_shared, memory_order_relaxed);

	return blq__taken_items(q) + blq__hand_items(q) +
	       (staged > delayed ? staged - delayed : 0);
}

size_t blq_size(const blq *q)
{
	if (q == NULL)
		return 0;
	return (size_t)(blq__taken_items(q) + blq__hand_items(q) + blq__staged(q));
}

size_t blq_capacity(const blq *q)
{
	return q != NULL ? q->capacity : 0;
}

double blq_rate(const blq *q)
{
	if (q == NULL)
		return 0.0;
	double r = (double)blq__ready(q) / (double)q->capacity;
	return r < 1.0 ? r : 1.0; /* QoS movers' batched counts may run ahead */
}

const char *blq_name(const blq *q)
{
	return q != NULL ? q->name : "";
}

static uint64_t fold(const blq *q, size_t offset)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < blq__ncells(q); i++)
		sum += atomic_load_explicit(
			(const _Atomic uint64_t *)((const char *)&q->cells[i] + offset),
			memory_order_relaxed);
	return sum;
}

uint64_t blq__fold_in(const blq *q)
{
	uint64_t entered = 0;

	/* Packed with a lane's credit below BLQ__ENTER_SHIFT (internal.h). */
	for (unsigned i = 0; i < blq__ncells(q); i++)
		entered += atomic_load_explicit(&q->cells[i].entered, memory_order_relaxed) >>
			   BLQ__ENTER_SHIFT;
	return entered + fold(q, offsetof(blq__cell, extra)) -
	       fold(q, offsetof(blq__cell, refused));
}

/* Workers inside their callback, and those of them past the attempt's
 * time limit (the clock is read only when one has a limit). */
static void busy_counts(const blq *q, unsigned *busy, unsigned *over)
{
	uint64_t now = 0;

	*busy = *over = 0;
	for (unsigned i = 0; i < blq__slots(q); i++) {
		uint64_t until = atomic_load_explicit(&q->workers[i].busy_until,
						      memory_order_relaxed) &
				 ~BLQ__BUSY_GIVEN_UP;

		if (until == 0)
			continue;
		(*busy)++;
		if (until == BLQ__BUSY_NO_LIMIT)
			continue;
		if (now == 0)
			now = blq__now(q);
		*over += now >= until;
	}
}

int blq_stats(const blq *q, struct blq_stats *out)
{
	if (q == NULL || out == NULL)
		return BLQ_EINVAL;
	memset(out, 0, sizeof(*out));
	out->in = blq__fold_in(q);
	out->processed = fold(q, offsetof(blq__cell, processed));
	out->failed = fold(q, offsetof(blq__cell, failed));
	out->leaked_rear = fold(q, offsetof(blq__cell, leaked_rear));
	out->leaked_front = fold(q, offsetof(blq__cell, leaked_front));
	out->leaked_failed = fold(q, offsetof(blq__cell, leaked_failed));
	out->leaked_deadline = fold(q, offsetof(blq__cell, leaked_deadline));
	out->leaked_closed = fold(q, offsetof(blq__cell, leaked_closed));
	out->leaked = out->leaked_rear + out->leaked_front + out->leaked_failed +
		      out->leaked_deadline + out->leaked_closed;
	out->expired = fold(q, offsetof(blq__cell, expired));
	out->lost = fold(q, offsetof(blq__cell, lost));
	out->cancelled = fold(q, offsetof(blq__cell, cancelled));
	out->retried = fold(q, offsetof(blq__cell, retried));
	out->timed_out = fold(q, offsetof(blq__cell, timed_out));
	out->delayed = blq__timer_size(q);
	out->size = blq_size(q);
	out->capacity = q->capacity;
	blq__pool_counts(q, &out->workers_active, &out->workers_asleep, &out->workers_idle);
	out->workers_woken = atomic_load_explicit(&q->woken, memory_order_relaxed);
	out->workers_slept = atomic_load_explicit(&q->slept, memory_order_relaxed);
	out->threads_started = atomic_load_explicit(&q->started_threads, memory_order_relaxed);
	out->threads_stopped = atomic_load_explicit(&q->stopped_threads, memory_order_relaxed);
	out->producers_blocked =
		atomic_load_explicit(&q->producers_blocked, memory_order_relaxed);
	out->producers_turned_away =
		atomic_load_explicit(&q->producers_turned_away, memory_order_relaxed);
	/* The balancer's look at the fill rate, or producers waiting for
	 * room now (the only sign a fixed pool has). */
	out->throttled = atomic_load_explicit(&q->throttled, memory_order_relaxed) != 0 ||
			 out->producers_blocked > 0;
	/* dlq_out first: both only grow, and a call counts in dlq_out after
	 * dlq_in, so the later sum of dlq_in is not below it (relaxed loads
	 * of other cells may still pass: a gauge, clamped at 0). */
	uint64_t dlq_out = fold(q, offsetof(blq__cell, dlq_out));
	uint64_t dlq_in = fold(q, offsetof(blq__cell, dlq_in));
	out->dlq_waiting = dlq_in > dlq_out ? (unsigned)(dlq_in - dlq_out) : 0;
	busy_counts(q, &out->workers_busy, &out->workers_overrunning);
	out->workers_stuck = atomic_load_explicit(&q->detached, memory_order_relaxed);
	out->paused = atomic_load_explicit(&q->paused, memory_order_relaxed) != 0;
	blq__bounds b = bounds_in_force(q);
	out->workers_min = b.min;
	out->workers_max = b.max;
	out->wakeup_factor = b.wakeup;
	out->sleep_factor = b.sleep;
	out->schedule_range = b.range;
	out->rate_delayed = fold(q, offsetof(blq__cell, rate_delayed));
	out->rate_limited_ns = fold(q, offsetof(blq__cell, rate_wait_ns));
	return 0;
}

unsigned blq_task_attempt(const blq_task *t)
{
	return t != NULL ? t->attempt : 0;
}

uint64_t blq_task_enqueued_ns(const blq_task *t)
{
	return t != NULL ? t->enq_ns : 0;
}

unsigned blq_task_worker(const blq_task *t)
{
	return t != NULL ? t->worker : 0;
}

bool blq_task_timed_out(const blq_task *t)
{
	if (t == NULL || t->timeout_at == 0)
		return false;
	/* The task is the queue's own object; only the API is const. */
	_Atomic int *tok = &((blq_task *)t)->token;
	int cur = atomic_load_explicit(tok, memory_order_relaxed);
	if (cur != BLQ__TOKEN_DOWN)
		return cur == BLQ__TOKEN_RAISED;
	if (blq__now(t->queue) < t->timeout_at)
		return false;
	/* Latched: the worker now knows, so the payload stays with the queue.
	 * Unless it claimed the payload just now: then the attempt is its. */
	return atomic_compare_exchange_strong_explicit(tok, &cur, BLQ__TOKEN_RAISED,
						       memory_order_relaxed, memory_order_relaxed) ||
	       cur == BLQ__TOKEN_RAISED;
}

bool blq_task_cancelled(const blq_task *t)
{
	return t != NULL && (atomic_load_explicit(&t->cancelled, memory_order_acquire) != 0 ||
			     (atomic_load_explicit(&t->cancel_for, memory_order_acquire) & 1) != 0 ||
			     blq_task_timed_out(t));
}

bool blq_task_claim(blq_task *t)
{
	/* No limit (or no queue: a worker called directly): nothing can take
	 * the attempt away. */
	if (t == NULL || t->timeout_at == 0)
		return true;
	const blq__worker *w = (const blq__worker *)((char *)t - offsetof(blq__worker, task));
	int cur = BLQ__TOKEN_DOWN;
	/* Given up by the watchdog at the limit: the queue has it. */
	if ((atomic_load_explicit(&w->busy_until, memory_order_relaxed) & BLQ__BUSY_GIVEN_UP) != 0 &&
	    blq__now(t->queue) >= t->timeout_at) {
		atomic_compare_exchange_strong_explicit(&t->token, &cur, BLQ__TOKEN_RAISED,
							memory_order_relaxed, memory_order_relaxed);
		return cur == BLQ__TOKEN_CLAIMED;
	}
	return atomic_compare_exchange_strong_explicit(&t->token, &cur, BLQ__TOKEN_CLAIMED,
						       memory_order_relaxed, memory_order_relaxed) ||
	       cur == BLQ__TOKEN_CLAIMED;
}

uint64_t blq_task_timeout_at_ns(const blq_task *t)
{
	return t != NULL ? t->timeout_at : 0;
}

blq *blq_task_queue(const blq_task *t)
{
	return t != NULL ? t->queue : NULL;
}
