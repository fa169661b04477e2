/*
 * Lanes (queue/lanes.h): a ring per producer thread behind one exact
 * capacity. These tests hold the queue's only worker in a gate on a first
 * item, so what the producers manage to put in is exactly what the queue
 * holds, and check:
 * - the capacity is exact: one producer fills exactly `capacity` items
 *   (its lane of 4096 and the rest spilled into the shared ring) before
 *   BLQ_EFULL, and 40 producers (more than the 16 lanes) together fill
 *   exactly that many, while a sampler never sees more; and a thread
 *   beyond the 16 lanes takes the places idle in the lanes' credit
 *   instead of calling a queue with room full;
 * - a leaky queue leaks exactly what did not fit, and a front leak drops
 *   the leaker's own oldest item;
 * - each producer's items start in the order it enqueued them, across a
 *   lane's spill into the shared ring;
 * - a thread's lane outlives neither the queue nor the thread: a thread
 *   that fed a freed queue exits cleanly (ASan watches the lane's
 *   release), and a thread feeding more queues than its table holds
 *   (8) keeps every queue working.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "suite_util.h"

#define BLOCKER 1000000u

typedef struct wctx {
	tu_gate gate;          /* the blocker waits here */
	pthread_mutex_t mu;
	uint64_t last[64];     /* per producer: the last seq + 1 run */
	_Atomic unsigned disorder;
	_Atomic uint64_t ran;
} wctx;

/* Payload ids: producer * 1,000,000 + seq, or BLOCKER. */
static int worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;

	(void)task;
	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	if (it->id == BLOCKER) {
		tu_gate_pass(&w->gate);
	} else {
		unsigned p = (unsigned)(it->id / 1000000u) % 64;
		uint64_t seq = it->id % 1000000u;

		pthread_mutex_lock(&w->mu);
		if (w->last[p] > seq)
			atomic_fetch_add(&w->disorder, 1);
		w->last[p] = seq + 1;
		pthread_mutex_unlock(&w->mu);
	}
	atomic_fetch_add(&w->ran, 1);
	tu_item_free(it);
	return 0;
}

static wctx *wctx_new(void)
{
	wctx *w = calloc(1, sizeof(*w));

	tu_gate_init(&w->gate);
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

static void wctx_free(wctx *w)
{
	tu_gate_destroy(&w->gate);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* A queue of one worker, held in the gate by its first item. */
static blq *held_queue(wctx *w, size_t capacity, tu_rec *dlq, enum blq_leak_dir dir)
{
	blq_config c = {0};

	c.capacity = capacity;
	c.workers = 1;
	c.worker = worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	if (dlq != NULL) {
		c.dlq.enqueue = tu_rec_enqueue;
		c.dlq.self = dlq;
		c.leak_direction = dir;
	}
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(BLOCKER)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 5000), "the blocker never ran");
	return q;
}

/* Try-enqueues ids producer * 1e6 + 0, 1, ... until BLQ_EFULL. */
typedef struct filler {
	blq *q;
	unsigned producer;
	pthread_barrier_t *start;
	uint64_t accepted;
} filler;

static void *fill_until_full(void *p)
{
	filler *f = p;

	pthread_barrier_wait(f->start);
	for (;;) {
		tu_item *it = tu_item_new((uint64_t)f->producer * 1000000u + f->accepted);
		int rc = blq_try_enqueue(f->q, it);

		if (rc != 0) {
			cr_expect_eq(rc, BLQ_EFULL, "try_enqueue: %s", blq_strerror(rc));
			tu_item_free(it);
			return NULL;
		}
		f->accepted++;
	}
}

typedef struct sampler {
	blq *q;
	size_t capacity;
	_Atomic int stop;
	size_t worst;
} sampler;

static void *sample_size(void *p)
{
	sampler *s = p;

	while (!atomic_load(&s->stop)) {
		size_t n = blq_size(s->q);

		if (n > s->worst)
			s->worst = n;
	}
	return NULL;
}

static void fill_with(unsigned producers, size_t capacity)
{
	wctx *w = wctx_new();
	blq *q = held_queue(w, capacity, NULL, BLQ_LEAK_REAR);
	pthread_barrier_t start;
	filler f[64];
	pthread_t t[64], st;
	sampler s = {.q = q, .capacity = capacity};
	uint64_t total = 0;

	pthread_barrier_init(&start, NULL, producers);
	pthread_create(&st, NULL, sample_size, &s);
	for (unsigned i = 0; i < producers; i++) {
		f[i] = (filler){.q = q, .producer = i, .start = &start};
		pthread_create(&t[i], NULL, fill_until_full, &f[i]);
	}
	for (unsigned i = 0; i < producers; i++) {
		pthread_join(t[i], NULL);
		total += f[i].accepted;
	}
	atomic_store(&s.stop, 1);
	pthread_join(st, NULL);
	cr_expect_eq(total, capacity, "%u producers put %llu items into a queue of %zu", producers,
		     (unsigned long long)total, capacity);
	cr_expect_eq(blq_size(q), capacity);
	cr_expect_leq(s.worst, capacity, "the sampler saw %zu held", s.worst);
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats st_ = stats(q);
	cr_expect_eq(st_.in, capacity + 1);
	cr_expect_eq(st_.processed, capacity + 1);
	cr_expect_eq(atomic_load(&w->disorder), 0, "a producer's items ran out of order");
	blq_free(q);
	pthread_barrier_destroy(&start);
	wctx_free(w);
}

Test(lanes, one_producer_fills_exactly_the_capacity_across_its_lanes_spill)
{
	fill_with(1, 10000); /* a lane of 4096, 5904 spilled */
}

Test(lanes, forty_producers_fill_exactly_the_capacity)
{
	fill_with(40, 1000); /* 16 lanes, 24 producers on the shared ring */
}

Test(lanes, a_small_capacity_is_exact_too)
{
	fill_with(40, 3);
}

/* A lane's owner that puts one item in and keeps its lane (and its
 * lane's credit) until the gate opens. */
typedef struct owner {
	blq *q;
	unsigned producer;
	tu_gate *hold;
} owner;

static void *own_a_lane(void *p)
{
	owner *o = p;

	cr_expect_eq(blq_enqueue(o->q, tu_item_new((uint64_t)o->producer * 1000000u)), 0);
	tu_gate_pass(o->hold);
	return NULL;
}

Test(lanes, a_thread_without_a_lane_takes_the_lanes_credit_before_it_calls_the_queue_full)
{
	wctx *w = wctx_new();
	blq *q = held_queue(w, 64, NULL, BLQ_LEAK_REAR); /* this thread owns lane 0 */
	tu_gate hold;
	owner o[15];
	pthread_t t[15], late;
	pthread_barrier_t start;
	filler f;

	tu_gate_init(&hold);
	for (unsigned i = 0; i < 15; i++) {
		o[i] = (owner){.q = q, .producer = 1 + i, .hold = &hold};
		pthread_create(&t[i], NULL, own_a_lane, &o[i]);
	}
	cr_assert(TU_WAIT_FOR(atomic_load(&hold.waiting) == 15, 5000));
	/* 15 items in, the 16 lanes taken, and most of the 64 places sit
	 * in the lanes' credit: a 17th thread, with no lane, must take it. */
	cr_expect_eq(blq_size(q), 15);
	pthread_barrier_init(&start, NULL, 1);
	f = (filler){.q = q, .producer = 20, .start = &start};
	pthread_create(&late, NULL, fill_until_full, &f);
	pthread_join(late, NULL);
	cr_expect_eq(f.accepted, 64 - 15, "the thread without a lane put %llu items into a "
		     "queue with %d places free", (unsigned long long)f.accepted, 64 - 15);
	cr_expect_eq(blq_size(q), 64);
	tu_gate_open(&hold);
	for (unsigned i = 0; i < 15; i++)
		pthread_join(t[i], NULL);
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats st = stats(q);
	cr_expect_eq(st.in, 65);
	cr_expect_eq(st.processed, 65);
	cr_expect_eq(atomic_load(&w->disorder), 0);
	blq_free(q);
	pthread_barrier_destroy(&start);
	tu_gate_destroy(&hold);
	wctx_free(w);
}

/* Enqueues ids producer * 1e6 + [0, n), blocking. */
typedef struct pusher {
	blq *q;
	unsigned producer;
	uint64_t from, n;
} pusher;

static void *push_n(void *p)
{
	pusher *a = p;

	for (uint64_t i = a->from; i < a->from + a->n; i++) {
		tu_item *it = tu_item_new((uint64_t)a->producer * 1000000u + i);

		cr_expect_eq(blq_enqueue(a->q, it), 0);
	}
	return NULL;
}

Test(lanes, a_leaky_queue_leaks_exactly_what_does_not_fit)
{
	wctx *w = wctx_new();
	tu_rec *dlq = tu_rec_new();
	blq *q = held_queue(w, 100, dlq, BLQ_LEAK_REAR);
	pusher a[8];
	pthread_t t[8];

	for (unsigned i = 0; i < 8; i++) {
		a[i] = (pusher){.q = q, .producer = i, .n = 50};
		pthread_create(&t[i], NULL, push_n, &a[i]);
	}
	for (unsigned i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(tu_rec_count(dlq), 300);
	cr_expect_eq(blq_size(q), 100);
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 101);
	cr_expect_eq(s.leaked, 300);
	cr_expect_eq(atomic_load(&w->disorder), 0);
	blq_free(q);
	tu_rec_free(dlq);
	wctx_free(w);
}

static void *push_one_hundred(void *p)
{
	cr_expect_eq(blq_enqueue(p, tu_item_new(100)), 0);
	return NULL;
}

Test(lanes, a_front_leak_drops_the_leakers_own_oldest_item)
{
	wctx *w = wctx_new();
	tu_rec *dlq = tu_rec_new();
	blq *q = held_queue(w, 10, dlq, BLQ_LEAK_FRONT);
	pthread_t other;

	for (uint64_t id = 1; id <= 11; id++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(id)), 0);
	cr_assert_eq(tu_rec_count(dlq), 1);
	cr_expect_eq(dlq->ids[0], 1, "dropped %llu", (unsigned long long)dlq->ids[0]);
	/* Another thread: its own lane is empty, so the oldest found (the
	 * lanes from the first) goes: ours, now 2. */
	pthread_create(&other, NULL, push_one_hundred, q);
	pthread_join(other, NULL);
	cr_assert_eq(tu_rec_count(dlq), 2);
	cr_expect_eq(dlq->ids[1], 2, "dropped %llu", (unsigned long long)dlq->ids[1]);
	cr_expect_eq(blq_size(q), 10);
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(stats(q).processed, 11);
	blq_free(q);
	tu_rec_free(dlq);
	wctx_free(w);
}

/* Two phases on one thread (order is per producer thread): n items, a
 * wait in the gate `between`, n more. */
typedef struct two_phase {
	pusher p;
	tu_gate *between;
	_Atomic int *first_done;
} two_phase;

static void *push_twice(void *arg)
{
	two_phase *t = arg;

	push_n(&t->p);
	atomic_fetch_add(t->first_done, 1);
	tu_gate_pass(t->between);
	t->p.from += t->p.n;
	push_n(&t->p);
	return NULL;
}

Test(lanes, each_producers_items_start_in_order_across_a_spill)
{
	wctx *w = wctx_new();
	blq *q = held_queue(w, 15000, NULL, BLQ_LEAK_REAR);
	two_phase a[3];
	pthread_t t[3];
	tu_gate between;
	_Atomic int first_done = 0;

	/* 4500 each while the worker is held: a lane holds 4096, the
	 * other 404 spill into the shared ring. Then, on the same threads,
	 * 4500 more each while the worker runs. */
	tu_gate_init(&between);
	for (unsigned i = 0; i < 3; i++) {
		a[i] = (two_phase){.p = {.q = q, .producer = i, .n = 4500},
				   .between = &between,
				   .first_done = &first_done};
		pthread_create(&t[i], NULL, push_twice, &a[i]);
	}
	cr_assert(TU_WAIT_FOR(atomic_load(&first_done) == 3, 10000));
	cr_expect_eq(blq_size(q), 13500);
	tu_gate_open(&w->gate);
	tu_gate_open(&between);
	for (unsigned i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(stats(q).processed, 27001);
	cr_expect_eq(atomic_load(&w->disorder), 0, "a producer's items ran out of order");
	blq_free(q);
	tu_gate_destroy(&between);
	wctx_free(w);
}

/* A thread that feeds a queue, waits while the test frees it and makes
 * another, feeds that one and exits: its lane of the freed queue must
 * not be written at its exit. */
typedef struct outliver {
	blq *q;
	tu_gate go;
	_Atomic int fed;
} outliver;

static void *outlive(void *p)
{
	outliver *o = p;

	cr_expect_eq(blq_enqueue(o->q, tu_item_new(1)), 0);
	atomic_store(&o->fed, 1);
	tu_gate_pass(&o->go);
	cr_expect_eq(blq_enqueue(o->q, tu_item_new(2)), 0);
	return NULL;
}

Test(lanes, a_thread_that_outlives_its_queue_exits_cleanly)
{
	wctx *w = wctx_new();
	blq_config c = {.capacity = 64, .workers = 1, .worker = worker, .worker_ctx = w,
			.item_free = tu_item_free};
	outliver o = {.q = must_new(&c)};
	pthread_t t;

	tu_gate_init(&o.go);
	pthread_create(&t, NULL, outlive, &o);
	cr_assert(TU_WAIT_FOR(atomic_load(&o.fed) == 1, 5000));
	cr_assert_eq(blq_close(o.q), 0);
	blq_free(o.q);
	o.q = must_new(&c); /* often at the freed one's address */
	tu_gate_open(&o.go);
	pthread_join(t, NULL);
	cr_assert_eq(blq_close(o.q), 0);
	cr_expect_eq(stats(o.q).processed, 1);
	blq_free(o.q);
	tu_gate_destroy(&o.go);
	cr_expect_eq(atomic_load(&w->ran), 2);
	wctx_free(w);
}

Test(lanes, a_thread_feeding_more_queues_than_its_table_keeps_each_working)
{
	enum { QUEUES = 12, ROUNDS = 50 };
	wctx *w = wctx_new();
	blq_config c = {.capacity = 1024, .workers = 1, .worker = worker, .worker_ctx = w,
			.item_free = tu_item_free};
	blq *q[QUEUES];

	for (unsigned i = 0; i < QUEUES; i++)
		q[i] = must_new(&c);
	for (unsigned r = 0; r < ROUNDS; r++)
		for (unsigned i = 0; i < QUEUES; i++)
			cr_assert_eq(blq_enqueue(q[i], tu_item_new((uint64_t)(10 + i) * 1000000u + r)), 0);
	for (unsigned i = 0; i < QUEUES; i++) {
		cr_assert_eq(blq_close(q[i]), 0);
		cr_expect_eq(stats(q[i]).processed, ROUNDS, "queue %u", i);
		blq_free(q[i]);
	}
	cr_expect_eq(atomic_load(&w->ran), QUEUES * ROUNDS);
	wctx_free(w);
}
