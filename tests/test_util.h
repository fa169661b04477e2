/*
 * Shared helpers for the test suites: tracked payloads (magic, id, freed
 * exactly once), a gate that parks workers (libuv's saturate-the-pool
 * trick), a bounded wait for a condition, a blocking producer thread and
 * a recording DLQ.
 */
#ifndef BLQ_TEST_UTIL_H
#define BLQ_TEST_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <blq/blq.h>

#define TU_MAGIC_LIVE 0xdeadu
#define TU_MAGIC_TAKEN 0xbeefu

typedef struct tu_item {
	unsigned magic;
	uint64_t id;
	_Atomic int taken; /* times a worker ran it: must end 0 or 1 */
} tu_item;

/* Count of tu_item_free calls, and of frees of an already-freed item. */
static _Atomic uint64_t tu_freed;

static inline tu_item *tu_item_new(uint64_t id)
{
	tu_item *it = calloc(1, sizeof(*it));

	it->magic = TU_MAGIC_LIVE;
	it->id = id;
	return it;
}

/* The queues' item_free: count, check it is a live item, poison, free. */
static inline void tu_item_free(void *p)
{
	tu_item *it = p;

	if (it->magic != TU_MAGIC_LIVE && it->magic != TU_MAGIC_TAKEN)
		abort(); /* double free or garbage: crash the test loudly */
	it->magic = 0;
	atomic_fetch_add(&tu_freed, 1);
	free(it);
}

/* A fake CLOCK_MONOTONIC for blq_config.clock.now_ns, moved by the test
 * (it starts at 1 s: the queue reads 0 as "none" in places). */
static _Atomic uint64_t tu_mono_ns = 1000000000ull;

static inline uint64_t tu_fake_mono(void *ctx)
{
	(void)ctx;
	return atomic_load(&tu_mono_ns);
}

static inline uint64_t tu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void tu_sleep_us(unsigned us)
{
	struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000};

	nanosleep(&ts, NULL);
}

/* Polls cond every 200 us for at most limit_ms; true if it became true. */
#define TU_WAIT_FOR(cond, limit_ms)                                                                \
	({                                                                                         \
		uint64_t tu_end_ = tu_now_ns() + (uint64_t)(limit_ms) * 1000000u;                  \
		bool tu_ok_ = false;                                                               \
		while (!(tu_ok_ = (cond)) && tu_now_ns() < tu_end_)                                \
			tu_sleep_us(200);                                                          \
		tu_ok_;                                                                            \
	})

/* A gate: workers wait in it until the test opens it. `waiting` says how
 * many are parked, so a test knows the pool is saturated. */
typedef struct tu_gate {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool open;
	_Atomic unsigned waiting;
} tu_gate;

static inline void tu_gate_init(tu_gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->open = false;
	atomic_init(&g->waiting, 0);
}

static inline void tu_gate_pass(tu_gate *g)
{
	pthread_mutex_lock(&g->mu);
	atomic_fetch_add(&g->waiting, 1);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->mu);
	atomic_fetch_sub(&g->waiting, 1);
	pthread_mutex_unlock(&g->mu);
}

static inline void tu_gate_open(tu_gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
}

static inline void tu_gate_close(tu_gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = false;
	pthread_mutex_unlock(&g->mu);
}

static inline void tu_gate_destroy(tu_gate *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->mu);
}

/* A DLQ that records the ids it receives (and owns their payloads). */
typedef struct tu_rec {
	pthread_mutex_t mu;
	uint64_t ids[4096];
	size_t n;
	bool refuse;
} tu_rec;

static inline int tu_rec_enqueue(void *self, void *payload)
{
	tu_rec *r = self;
	tu_item *it = payload;

	if (r->refuse)
		return -1;
	pthread_mutex_lock(&r->mu);
	if (r->n < 4096)
		r->ids[r->n++] = it->id;
	pthread_mutex_unlock(&r->mu);
	tu_item_free(it);
	return 0;
}

static inline tu_rec *tu_rec_new(void)
{
	tu_rec *r = calloc(1, sizeof(*r));

	pthread_mutex_init(&r->mu, NULL);
	return r;
}

/* Once nothing can reach r any more (the queue that fed it freed). */
static inline void tu_rec_free(tu_rec *r)
{
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static inline size_t tu_rec_count(tu_rec *r)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* A thread that enqueues one item (blocking) and says when it returned:
 * pthread_create(&t, NULL, blocking_producer, &arg). */
typedef struct producer_arg {
	blq *q;
	uint64_t id;
	_Atomic int done;
	int rc;
} producer_arg;

static inline void *blocking_producer(void *p)
{
	producer_arg *a = p;
	tu_item *it = tu_item_new(a->id);

	a->rc = blq_enqueue(a->q, it);
	if (a->rc != 0)
		tu_item_free(it); /* refused: still ours */
	atomic_store(&a->done, 1);
	return NULL;
}

/* After a close with a time limit: callbacks it left running (even a
 * cooperative one, descheduled past the close's grace on a loaded
 * machine) hold their items until they return; the counters are final
 * once none is left (queue.h). */
static inline bool tu_wait_unstuck(blq *q)
{
	struct blq_stats s;

	return TU_WAIT_FOR(blq_stats(q, &s) == 0 && s.workers_stuck == 0, 10000);
}

/* The invariant of DESIGN.md, after close. */
static inline bool tu_balanced(const struct blq_stats *s)
{
	return s->in == s->processed + s->failed + s->leaked + s->expired + s->lost + s->cancelled;
}

#endif
