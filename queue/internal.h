/*
 * The queue's internals, shared by the files of queue/. Not installed.
 *
 * Lock order: q->mu is the only mutex; it guards the close state machine
 * and the worker-exit bookkeeping, never the hot path.
 */
#ifndef BLQ_QUEUE_INTERNAL_H
#define BLQ_QUEUE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <blq/queue.h>

#include "ec.h"
#include "ring.h"

#define BLQ__NAME_MAX 63
#define BLQ__WORKERS_LIMIT 1024u
#define BLQ__CAPACITY_LIMIT (1ull << 30)
/* Counter cells shared by producer threads (hashed by thread). */
#define BLQ__PRODUCER_CELLS 16u

/*
 * Per-thread counters, one cache line or more each, folded by blq_stats.
 * A worker's cell has a single writer (that worker), so it is updated with
 * a relaxed load and store instead of a locked RMW; producer cells are
 * shared by hashed threads and use fetch_add.
 */
typedef struct blq__cell {
	alignas(BLQ__CACHELINE) _Atomic uint64_t in;
	_Atomic uint64_t processed;
	_Atomic uint64_t failed;
	_Atomic uint64_t leaked_rear;
	_Atomic uint64_t leaked_front;
	_Atomic uint64_t leaked_failed;
	_Atomic uint64_t leaked_deadline;
	_Atomic uint64_t leaked_closed;
	_Atomic uint64_t expired;
	_Atomic uint64_t lost;
	_Atomic uint64_t retried;
	/* Producers between their closed-check and their last touch of the
	 * ring; the closer waits for the sum to reach zero. */
	_Atomic int64_t inflight;
} blq__cell;

/* The handle a worker callback sees; one per worker, reused per item. */
struct blq_task {
	blq *queue;
	uint64_t enq_ns;
	uint32_t attempt;
	unsigned worker;
	_Atomic int cancelled;
};

typedef struct blq__worker {
	blq *q;
	unsigned index;
	pthread_t thread;
	bool started;
	blq__cell *cell;
	struct blq_task task;
} blq__worker;

enum blq__state {
	BLQ__OPEN = 0,
	BLQ__CLOSING, /* no new items; workers drain (or stop, when forced) */
	BLQ__CLOSED,  /* threads joined, leftovers swept, counters final */
};

struct blq {
	blq_config cfg; /* copied; cfg.name points at name[] */
	char name[BLQ__NAME_MAX + 1];
	bool leaky;
	bool stamp; /* read the clock on enqueue */

	unsigned nrings;
	blq__ring *rings;

	/* Workers sleep on items_ec while every ring is empty; producers
	 * sleep on space_ec while every ring is full; the closer sleeps on
	 * ctl_ec for producers to leave. */
	alignas(BLQ__CACHELINE) blq__ec items_ec;
	alignas(BLQ__CACHELINE) blq__ec space_ec;
	alignas(BLQ__CACHELINE) blq__ec ctl_ec;

	/* Set once by the first close; producers and workers read them. */
	alignas(BLQ__CACHELINE) _Atomic int closed;
	_Atomic int forced;

	unsigned nworkers;
	blq__worker *workers;
	unsigned ncells; /* nworkers + BLQ__PRODUCER_CELLS + 1 (closer) */
	blq__cell *cells;

	pthread_mutex_t mu;
	pthread_cond_t cond;      /* signalled when alive or state change */
	unsigned alive;           /* worker threads not yet exited; under mu */
	unsigned running;         /* worker threads that started; under mu */
	enum blq__state state;    /* under mu */
	bool finishing;           /* someone is joining and sweeping; under mu */
};

/* config.c */
int blq__config_check(const blq_config *cfg, blq_error *err);

/* clock.c */
uint64_t blq__monotonic_ns(void);
static inline uint64_t blq__now(const blq *q)
{
	return q->cfg.clock.now_ns(q->cfg.clock.ctx);
}

/* log.c */
void blq__log(const blq *q, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* error.c */
int blq__error_set(blq_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* enqueue.c: outcomes shared with the workers and the closer. */
blq__cell *blq__producer_cell(blq *q);
void blq__to_dlq(blq *q, blq__cell *c, void *payload, _Atomic uint64_t *leak_counter, int dir);
void blq__drop(blq *q, void *payload, _Atomic uint64_t *counter);
bool blq__pop_any(blq *q, unsigned start, blq__item *out);
int64_t blq__inflight(const blq *q);

/* worker.c */
int blq__workers_start(blq *q, blq_error *err);
bool blq__is_own_worker(const blq *q);

/* close.c */
void blq__wake_all(blq *q);

/* Counter bumps: single-writer cells (workers) avoid the locked RMW. */
static inline void blq__count_own(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static inline void blq__count_shared(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

#endif
