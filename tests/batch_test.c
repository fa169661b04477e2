/*
 * Batch enqueue (blq_enqueue_batch, blq_try_enqueue_batch): who owns which
 * payload after a partial batch, a batch that meets a close, a batch into
 * a full leaky queue (rear and front) and into a full blocking one, the
 * per-item paths (QoS, a delay) and several streams, bad input; the
 * accounting invariant after every close.
 *
 * The worker records the ids it runs, in order, and frees the payload;
 * id 0 (the blocker) waits in a gate first, so a test can hold the only
 * worker and fill the ring to an exact count.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "suite_util.h"

#define N 64

/* Internal (queue/enqueue.c): producers inside an enqueue call. */
int64_t blq__inflight(const blq *q);

static tu_gate gate;
static pthread_mutex_t ran_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ran[8192];
static size_t nran;

static int record(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	tu_item *it = payload;

	if (it->id == 0)
		tu_gate_pass(&gate);
	pthread_mutex_lock(&ran_mu);
	if (nran < 8192)
		ran[nran++] = it->id;
	pthread_mutex_unlock(&ran_mu);
	tu_item_free(payload);
	return 0;
}

static size_t ran_count(void)
{
	pthread_mutex_lock(&ran_mu);
	size_t n = nran;
	pthread_mutex_unlock(&ran_mu);
	return n;
}

static void setup(void)
{
	tu_gate_init(&gate);
	nran = 0;
	atomic_store(&tu_freed, 0);
}

TestSuite(batch, .init = setup, .timeout = 30);

/* One worker held in the gate by the blocker: the ring is then empty and
 * every one of its `capacity` slots is free. */
static blq *held_queue(blq_config *c)
{
	c->name = "batch";
	c->workers = 1;
	c->worker = record;
	c->item_free = tu_item_free;
	blq *q = must_new(c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 5000), "the worker holds the blocker");
	return q;
}

/* ids first .. first + n - 1 */
static void fill(void **batch, uint64_t first, size_t n)
{
	for (size_t i = 0; i < n; i++)
		batch[i] = tu_item_new(first + i);
}

static void free_rest(void **batch, size_t from, size_t n)
{
	for (size_t i = from; i < n; i++)
		tu_item_free(batch[i]);
}

static void close_balanced(blq *q)
{
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_assert(tu_balanced(&s), "in %llu != outcomes", (unsigned long long)s.in);
}

Test(batch, a_try_batch_takes_what_fits_and_the_caller_keeps_the_rest)
{
	blq_config c = {.capacity = 8};
	blq *q = held_queue(&c);
	void *batch[20];

	fill(batch, 1, 20);
	cr_assert_eq(blq_try_enqueue_batch(q, batch, 20), 8, "the 8 free slots");
	/* Full now: nothing taken, the reason given. */
	cr_assert_eq(blq_try_enqueue_batch(q, batch + 8, 12), BLQ_EFULL);
	cr_assert_eq(atomic_load(&tu_freed), 0, "the queue freed none of the caller's");
	free_rest(batch, 8, 20);
	close_balanced(q);
	struct blq_stats s = stats(q);
	cr_assert_eq(s.in, 9);
	cr_assert_eq(s.processed, 9);
	cr_assert_eq(ran_count(), 9);
	for (uint64_t i = 0; i < 9; i++)
		cr_assert_eq(ran[i], i, "FIFO: the blocker, then the batch's first 8 in order");
	blq_free(q);
}

typedef struct batch_arg {
	blq *q;
	void **batch;
	size_t n;
	ssize_t took;
	_Atomic int done;
} batch_arg;

static void *batch_producer(void *p)
{
	batch_arg *a = p;

	a->took = blq_enqueue_batch(a->q, a->batch, a->n);
	atomic_store(&a->done, 1);
	return NULL;
}

Test(batch, a_blocking_batch_waits_for_room_and_takes_every_item)
{
	blq_config c = {.capacity = 4};
	blq *q = held_queue(&c);
	void *batch[N];
	batch_arg a = {.q = q, .batch = batch, .n = N};
	pthread_t t;

	fill(batch, 1, N);
	pthread_create(&t, NULL, batch_producer, &a);
	cr_assert(TU_WAIT_FOR(stats(q).producers_blocked == 1, 5000), "blocked on the full ring");
	tu_sleep_us(20000);
	cr_assert_eq(atomic_load(&a.done), 0, "still waiting while the worker is held");
	/* One producer in flight, whatever its batch's size: that is what
	 * force_calibration_limit counts. */
	cr_assert_eq(blq__inflight(q), 1);
	tu_gate_open(&gate);
	pthread_join(t, NULL);
	cr_assert_eq(a.took, N);
	close_balanced(q);
	cr_assert_eq(stats(q).processed, N + 1);
	cr_assert_eq(stats(q).producers_blocked, 0);
	for (uint64_t i = 0; i <= N; i++)
		cr_assert_eq(ran[i], i, "one producer, one worker: in order");
	blq_free(q);
}

static void *closer(void *p)
{
	blq_close(p);
	return NULL;
}

Test(batch, a_batch_across_a_close_returns_what_it_placed)
{
	blq_config c = {.capacity = 4};
	blq *q = held_queue(&c);
	void *batch[N];
	batch_arg a = {.q = q, .batch = batch, .n = N};
	pthread_t t, tc;

	fill(batch, 1, N);
	pthread_create(&t, NULL, batch_producer, &a);
	cr_assert(TU_WAIT_FOR(stats(q).producers_blocked == 1, 5000));
	/* A graceful close gives the waiting batch up, then waits for the
	 * worker: the batch placed 4 of its items, and owns the rest. */
	pthread_create(&tc, NULL, closer, q);
	pthread_join(t, NULL);
	cr_assert_eq(a.took, 4);
	cr_assert_eq(blq_enqueue_batch(q, batch + 4, N - 4), BLQ_ECLOSED, "none taken: why");
	cr_assert_eq(blq_try_enqueue_batch(q, batch + 4, N - 4), BLQ_ECLOSED);
	tu_gate_open(&gate);
	pthread_join(tc, NULL);
	free_rest(batch, 4, N);
	struct blq_stats s = stats(q);
	cr_assert(tu_balanced(&s));
	cr_assert_eq(s.in, 5);
	cr_assert_eq(s.processed, 5, "the placed ones ran: a graceful close drains");
	cr_assert_eq(atomic_load(&tu_freed), N + 1, "each payload freed once, by its owner");
	blq_free(q);
}

static void leaky_batch(enum blq_leak_dir dir, const uint64_t *want_ring, const uint64_t *want_dlq)
{
	tu_rec *rec = tu_rec_new();
	blq_config c = {.capacity = 4,
			.leak_direction = dir,
			.dlq = {.enqueue = tu_rec_enqueue, .self = rec}};
	blq *q = held_queue(&c);
	void *batch[10];

	fill(batch, 1, 10);
	cr_assert_eq(blq_enqueue_batch(q, batch, 10), 10, "a leaky queue takes every payload");
	cr_assert_eq(tu_rec_count(rec), 6);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(rec->ids[i], want_dlq[i], "dlq[%zu]", i);
	close_balanced(q);
	struct blq_stats s = stats(q);
	cr_assert_eq(s.in, 11);
	cr_assert_eq(s.leaked, 6);
	cr_assert_eq(s.processed, 5);
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(ran[1 + i], want_ring[i], "ran[%zu]", 1 + i);
	blq_free(q);
	free(rec);
}

Test(batch, a_full_leaky_queue_leaks_the_newest_at_the_rear)
{
	static const uint64_t ring[] = {1, 2, 3, 4}, dlq[] = {5, 6, 7, 8, 9, 10};

	leaky_batch(BLQ_LEAK_REAR, ring, dlq);
}

Test(batch, a_full_leaky_queue_leaks_the_oldest_at_the_front)
{
	static const uint64_t ring[] = {7, 8, 9, 10}, dlq[] = {1, 2, 3, 4, 5, 6};

	leaky_batch(BLQ_LEAK_FRONT, ring, dlq);
}

Test(batch, bad_input_is_refused_and_an_empty_batch_takes_nothing)
{
	blq_config c = {.capacity = 4};
	blq *q = held_queue(&c);
	void *one[1] = {NULL};

	cr_assert_eq(blq_enqueue_batch(NULL, one, 1), BLQ_EINVAL);
	cr_assert_eq(blq_try_enqueue_batch(NULL, one, 1), BLQ_EINVAL);
	cr_assert_eq(blq_enqueue_batch(q, NULL, 3), BLQ_EINVAL);
	cr_assert_eq(blq_enqueue_batch(q, one, (size_t)SSIZE_MAX + 1), BLQ_EINVAL);
	cr_assert_eq(blq_enqueue_batch(q, NULL, 0), 0);
	cr_assert_eq(blq_try_enqueue_batch(q, one, 0), 0);
	close_balanced(q);
	cr_assert_eq(stats(q).in, 1, "only the blocker went in");
	blq_free(q);
}

/* Many producers and several streams: every item runs exactly once. */
typedef struct many_arg {
	blq *q;
	uint64_t first;
} many_arg;

static void *many_batches(void *p)
{
	many_arg *a = p;

	for (uint64_t b = 0; b < 50; b++) {
		void *batch[32];

		fill(batch, a->first + b * 32, 32);
		if (blq_enqueue_batch(a->q, batch, 32) != 32)
			abort();
	}
	return NULL;
}

static void run_many(blq_config *c)
{
	c->name = "many";
	c->worker = record;
	c->item_free = tu_item_free;
	blq *q = must_new(c);
	pthread_t t[4];
	many_arg a[4];

	for (unsigned i = 0; i < 4; i++) {
		a[i] = (many_arg){q, 1000 + i * 1600};
		pthread_create(&t[i], NULL, many_batches, &a[i]);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_assert(tu_balanced(&s));
	cr_assert_eq(s.in, 4 * 1600);
	cr_assert_eq(s.processed, 4 * 1600);
	cr_assert_eq(ran_count(), 4 * 1600);
	/* Each id once: sort-free check through a seen bitmap. */
	static bool seen[4 * 1600];
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < 4 * 1600; i++) {
		cr_assert(ran[i] >= 1000 && ran[i] < 1000 + 4 * 1600);
		cr_assert(!seen[ran[i] - 1000], "id %llu ran twice", (unsigned long long)ran[i]);
		seen[ran[i] - 1000] = true;
	}
	blq_free(q);
}

Test(batch, batches_from_four_producers_over_three_streams_run_once_each)
{
	blq_config c = {.capacity = 48, .streams = 3, .workers = 3};

	run_many(&c);
}

Test(batch, a_qos_queue_admits_a_batch_item_by_item)
{
	static const blq_qos_subq subqs[2] = {{.name = "a", .capacity = 8, .weight = 1},
					      {.name = "b", .capacity = 8, .weight = 1}};
	blq_qos_config qos = {.algo = BLQ_QOS_RR,
			      .evaluator = {.kind = BLQ_QOS_EVAL_RANDOM},
			      .subqs = subqs,
			      .nsubqs = 2};
	blq_config c = {.qos = &qos, .workers = 2};

	run_many(&c);
}

Test(batch, a_delayed_batch_waits_in_the_timer_then_runs)
{
	blq_config c = {.name = "delayed",
			.capacity = 64,
			.workers = 1,
			.worker = record,
			.item_free = tu_item_free,
			.delay_interval_ns = 300ull * 1000000u};
	blq *q = must_new(&c);
	void *batch[10];

	fill(batch, 1, 10);
	cr_assert_eq(blq_enqueue_batch(q, batch, 10), 10);
	struct blq_stats s = stats(q);
	cr_assert_eq(s.delayed, 10, "all ten wait for their delay");
	cr_assert_eq(ran_count(), 0);
	cr_assert_eq(blq_close(q), 0, "a graceful close waits for them, then runs them");
	s = stats(q);
	cr_assert(tu_balanced(&s));
	cr_assert_eq(s.processed, 10);
	for (uint64_t i = 0; i < 10; i++)
		cr_assert_eq(ran[i], i + 1, "in their order");
	blq_free(q);
}
