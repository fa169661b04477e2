/*
 * The capacity bounds the workers' hands too (queue/hand_places.c, issue
 * #33): the items a worker took ahead stay counted until they start, and
 * the places of the items it started are room at once, though the
 * worker releases them only when its hand is over.
 *
 * Stepped: the worker's callbacks each wait for a step of the test, so
 * between steps the queue stands still: `started` callbacks entered, the
 * rest queued (in the rings or in the worker's hand). At each step the
 * test try-enqueues until BLQ_EFULL and checks that the queue then holds
 * exactly its capacity: accepted - started == capacity (never more: the
 * hand counted; never less: a started item's place, not yet released,
 * was claimed), and blq_size says the same. With 64 places and a ring
 * that holds 64, the worker's takes are hands of 17 (BLQ__HAND + 1)
 * while 33 or more wait: before the hands were counted, a full queue
 * held 64 + 16.
 *
 * A stress test checks the bound while two producers block, a third
 * feeds the timer (its items wait beside the capacity: counted apart),
 * two workers take hands and a sampler reads the counts: enqueues returned, read
 * before the callbacks started, never exceed the starts by more than the
 * capacity and the one item per worker between its take and its
 * callback.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "suite_util.h"

#define CAP 64

typedef struct stepper {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	uint64_t allowed;          /* callbacks may return up to this many */
	_Atomic uint64_t started;  /* callbacks entered */
	_Atomic uint64_t returned;
} stepper;

static int stepped_worker(void *ctx, void *payload, blq_task *task)
{
	stepper *s = ctx;
	tu_item *it = payload;

	(void)task;
	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	uint64_t me = atomic_fetch_add(&s->started, 1);

	pthread_mutex_lock(&s->mu);
	while (s->allowed <= me)
		pthread_cond_wait(&s->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	tu_item_free(it);
	atomic_fetch_add(&s->returned, 1);
	return 0;
}

static void allow(stepper *s, uint64_t n)
{
	pthread_mutex_lock(&s->mu);
	s->allowed = n;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

/* Lets callback `step` return, and waits for the next one to start. */
static void step_on(stepper *s, uint64_t step)
{
	allow(s, step);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->started) == step + 1, 5000),
		  "step %llu: the next item never started", (unsigned long long)step);
}

/* Try-enqueues until BLQ_EFULL; the items accepted. */
static uint64_t fill(blq *q, uint64_t *next_id)
{
	uint64_t n = 0;

	for (;;) {
		tu_item *it = tu_item_new((*next_id)++);
		int rc = blq_try_enqueue(q, it);

		if (rc != 0) {
			cr_assert_eq(rc, BLQ_EFULL, "try_enqueue: %s", blq_strerror(rc));
			tu_item_free(it);
			return n;
		}
		n++;
	}
}

/* A queue of CAP with one stepped worker (leaking rear into dlq when it
 * is not NULL), whose first item (id 0) has started and waits. */
static blq *stepped_queue(stepper *s, tu_rec *dlq)
{
	blq_config c = {0};

	c.capacity = CAP;
	c.workers = 1;
	c.worker = stepped_worker;
	c.worker_ctx = s;
	c.item_free = tu_item_free;
	if (dlq != NULL) {
		c.dlq.enqueue = tu_rec_enqueue;
		c.dlq.self = dlq;
		c.leak_direction = BLQ_LEAK_REAR;
	}
	blq *q = must_new(&c);

	/* The first item runs (and waits) before the rest go in. */
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->started) == 1, 5000), "the first item never ran");
	return q;
}

Test(hands, a_full_queue_holds_its_capacity_with_a_hand_out, .timeout = 120)
{
	stepper s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	blq *q = stepped_queue(&s, NULL);
	uint64_t accepted = 1, id = 1;

	for (uint64_t step = 1; step <= 60; step++) {
		accepted += fill(q, &id);
		uint64_t started = atomic_load(&s.started);

		cr_assert_eq(accepted - started, CAP,
			     "step %llu: %llu accepted, %llu started: the queue holds %llu, not %d",
			     (unsigned long long)step, (unsigned long long)accepted,
			     (unsigned long long)started, (unsigned long long)(accepted - started),
			     CAP);
		cr_assert_eq(blq_size(q), CAP, "step %llu: blq_size %zu", (unsigned long long)step,
			     blq_size(q));
		step_on(&s, step);
	}
	allow(&s, UINT64_MAX);
	blq_close(q);
	struct blq_stats st = stats(q);
	cr_expect_eq(st.in, accepted);
	cr_expect_eq(st.processed, accepted);
	cr_expect(tu_balanced(&st));
	blq_free(q);
}

/* The same with a leaky queue: a full queue leaks the new item (rear),
 * and only when it holds its capacity, hands included. */
Test(hands, a_leaky_queue_leaks_only_at_its_capacity_with_a_hand_out, .timeout = 120)
{
	stepper s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	tu_rec *dlq = tu_rec_new();
	blq *q = stepped_queue(&s, dlq);
	uint64_t id = 1;

	for (uint64_t step = 1; step <= 40; step++) {
		/* Enqueue until one leaks: the queue holds CAP then. */
		size_t leaked = tu_rec_count(dlq);

		while (tu_rec_count(dlq) == leaked)
			cr_assert_eq(blq_enqueue(q, tu_item_new(id++)), 0);
		struct blq_stats st = stats(q);

		cr_assert_eq(st.in - st.leaked - atomic_load(&s.started), CAP,
			     "step %llu: in %llu, leaked %llu, started %llu",
			     (unsigned long long)step, (unsigned long long)st.in,
			     (unsigned long long)st.leaked,
			     (unsigned long long)atomic_load(&s.started));
		step_on(&s, step);
	}
	allow(&s, UINT64_MAX);
	blq_close(q);
	struct blq_stats st = stats(q);
	cr_expect_eq(st.leaked, tu_rec_count(dlq));
	cr_expect(tu_balanced(&st));
	blq_free(q);
	tu_rec_free(dlq);
}

/* Two producers blocking, a third whose items go through the timer, two
 * workers taking hands, and a sampler. */
typedef struct race {
	blq *q;
	_Atomic uint64_t returned; /* enqueues that returned 0 */
	_Atomic uint64_t started;  /* callbacks entered */
	_Atomic uint64_t delayed_started;
	_Atomic int done;
	uint64_t worst;            /* the sampler's largest returned - started */
} race;

#define DELAYED_ID 1000000000u /* ids from here went through the timer */

static int counting_worker(void *ctx, void *payload, blq_task *task)
{
	race *r = ctx;
	const tu_item *it = payload;

	(void)task;
	/* The timer's items wait beside the capacity (timer_capacity, then
	 * the due ring): counted apart. */
	atomic_fetch_add(it->id >= DELAYED_ID ? &r->delayed_started : &r->started, 1);
	/* A task body long enough for the rings to stay full. */
	for (volatile int i = 0; i < 200; i++)
		;
	tu_item_free(payload);
	return 0;
}

#define PER_PRODUCER 100000u

static void *producer(void *p)
{
	race *r = p;

	for (unsigned i = 0; i < PER_PRODUCER; i++) {
		cr_assert_eq(blq_enqueue(r->q, tu_item_new(i)), 0);
		atomic_fetch_add(&r->returned, 1);
	}
	return NULL;
}

#define DELAYED 10000u

/* Jobs delayed by 0 to 255 us: the timer delivers them while the
 * producers keep the rings full (a full due ring's items would enter the
 * rings like a producer's, inside the capacity). */
static void *delayed_producer(void *p)
{
	race *r = p;

	for (unsigned i = 0; i < DELAYED; i++) {
		blq_job j = {.payload = tu_item_new(DELAYED_ID + i),
			     .delay_ns = (uint64_t)(i % 256) * 1000u};

		cr_assert_eq(blq_enqueue_job(r->q, &j), 0);
	}
	return NULL;
}

static void *sampler(void *p)
{
	race *r = p;

	while (!atomic_load(&r->done)) {
		/* Returned first, started after: every item counted in
		 * `returned` was in the queue or started by the second load,
		 * so the difference is at most what the queue held then. */
		uint64_t in = atomic_load(&r->returned);
		uint64_t run = atomic_load(&r->started);

		if (in > run && in - run > r->worst)
			r->worst = in - run;
	}
	return NULL;
}

Test(hands, blocking_producers_never_see_more_than_capacity_queued_beside_the_timer,
     .timeout = 120)
{
	race r = {0};
	blq_config c = {0};

	c.capacity = CAP;
	c.workers = 2;
	c.worker = counting_worker;
	c.worker_ctx = &r;
	c.item_free = tu_item_free;
	r.q = must_new(&c);
	pthread_t prod[3], samp;

	pthread_create(&samp, NULL, sampler, &r);
	for (int i = 0; i < 2; i++)
		pthread_create(&prod[i], NULL, producer, &r);
	pthread_create(&prod[2], NULL, delayed_producer, &r);
	for (int i = 0; i < 3; i++)
		pthread_join(prod[i], NULL);
	atomic_store(&r.done, 1);
	pthread_join(samp, NULL);
	blq_close(r.q);
	struct blq_stats st = stats(r.q);
	cr_expect_eq(st.processed, 2ull * PER_PRODUCER + DELAYED);
	cr_expect_eq(atomic_load(&r.delayed_started), DELAYED);
	cr_expect(tu_balanced(&st));
	/* Plus one per worker: an item taken alone leaves the count at its
	 * take, before its callback counts it started. */
	cr_expect(r.worst <= CAP + 2, "the queue held %llu items at a sample, capacity %d",
		  (unsigned long long)r.worst, CAP);
	blq_free(r.q);
}
