/*
 * Core queue behaviour: order, back-pressure, try-enqueue, leaking, chaining,
 * fail_to_dlq, deadlines, the three closes, and the accounting invariant.
 * Workers are parked on a gate where a test needs a deterministic state.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "suite_util.h"

/* The worker's context: a gate to park on, the order items ran in, and
 * which ids fail. */
typedef struct wctx {
	tu_gate gate;
	bool use_gate;
	pthread_mutex_t mu;
	uint64_t order[8192];
	size_t n;
	bool fail_odd;
	/* close this queue when id 5 runs; set after blq_new, so atomic */
	_Atomic(blq *) close_from_inside;
	_Atomic int inside_rc;
	_Atomic int free_rc;
	bool wait_cancel;
	_Atomic int cancelled_seen;
} wctx;

static int test_worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;
	uint64_t id = it->id;

	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	it->magic = TU_MAGIC_TAKEN;
	if (w->wait_cancel) {
		/* A cooperative long task: runs until cancelled. */
		while (!blq_task_cancelled(task))
			tu_sleep_us(100);
		atomic_store(&w->cancelled_seen, 1);
		it->magic = TU_MAGIC_LIVE;
		return 1;
	}
	if (w->use_gate)
		tu_gate_pass(&w->gate);
	pthread_mutex_lock(&w->mu);
	if (w->n < 8192)
		w->order[w->n++] = id;
	pthread_mutex_unlock(&w->mu);
	blq *self = atomic_load(&w->close_from_inside);
	if (self != NULL && id == 5) {
		atomic_store(&w->inside_rc, blq_close(self));
		atomic_store(&w->free_rc, blq_free(self));
	}
	if (w->fail_odd && id % 2 == 1) {
		it->magic = TU_MAGIC_LIVE; /* the queue frees it */
		return 1;
	}
	tu_item_free(it); /* success: the worker owns the payload */
	return 0;
}

static wctx *wctx_new(bool gate)
{
	wctx *w = calloc(1, sizeof(*w));

	tu_gate_init(&w->gate);
	w->use_gate = gate;
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

/* Once the queue that ran it is freed (blq_free joins every worker). */
static void wctx_free(wctx *w)
{
	tu_gate_destroy(&w->gate);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static blq_config cfg_for(wctx *w, size_t cap, unsigned workers)
{
	blq_config c = {0};

	c.capacity = cap;
	c.workers = workers;
	c.worker = test_worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	return c;
}

static void expect_balanced(blq *q)
{
	struct blq_stats s;

	cr_assert_eq(blq_stats(q, &s), 0);
	cr_expect(tu_balanced(&s),
		  "in %lu != processed %lu + failed %lu + leaked %lu + expired %lu + lost %lu",
		  s.in, s.processed, s.failed, s.leaked, s.expired, s.lost);
}

TestSuite(queue, .timeout = 20);

Test(queue, fifo_order_with_one_worker)
{
	wctx *w = wctx_new(false);
	blq_config c = cfg_for(w, 1000, 1);
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert_eq(blq_close(q), 0);
	cr_assert_eq(w->n, 1000);
	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_eq(w->order[i], i, "position %lu holds %lu", i, w->order[i]);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.in, 1000);
	cr_expect_eq(s.processed, 1000);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 1000); /* all by the worker */
	blq_free(q);
	wctx_free(w);
}

Test(queue, back_pressure_blocks_and_resumes)
{
	wctx *w = wctx_new(true);
	blq_config c = cfg_for(w, 2, 1);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	cr_expect_eq(blq_size(q), 2);
	cr_expect_float_eq(blq_rate(q), 1.0, 1e-9);

	/* try_enqueue on a full queue: refused, the caller keeps the item. */
	tu_item *extra = tu_item_new(99);
	cr_expect_eq(blq_try_enqueue(q, extra), BLQ_EFULL);
	tu_item_free(extra);

	producer_arg a = {.q = q, .id = 3};
	pthread_t t;
	pthread_create(&t, NULL, blocking_producer, &a);
	tu_sleep_us(50000);
	cr_expect_eq(atomic_load(&a.done), 0, "enqueue returned while the queue was full");

	tu_gate_open(&w->gate);
	cr_assert(TU_WAIT_FOR(atomic_load(&a.done) == 1, 2000), "producer never resumed");
	pthread_join(t, NULL);
	cr_expect_eq(a.rc, 0);
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(w->n, 4);
	for (uint64_t i = 0; i < 4; i++)
		cr_expect_eq(w->order[i], i);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

Test(queue, blocked_producer_wakes_with_closed)
{
	wctx *w = wctx_new(false);
	w->wait_cancel = true; /* worker holds item 0 until force close */
	blq_config c = cfg_for(w, 1, 1);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	producer_arg a = {.q = q, .id = 2};
	pthread_t t;
	pthread_create(&t, NULL, blocking_producer, &a);
	tu_sleep_us(20000);
	cr_expect_eq(atomic_load(&a.done), 0);
	cr_assert_eq(blq_force_close(q), 0);
	pthread_join(t, NULL);
	cr_expect_eq(a.rc, BLQ_ECLOSED);
	cr_expect_eq(atomic_load(&w->cancelled_seen), 1);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.in, 2);
	cr_expect_eq(s.failed, 1); /* the cancelled item */
	cr_expect_eq(s.lost, 1);   /* item 1, still queued */
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 3); /* 2 by the queue, 1 by the test */
	blq_free(q);
	wctx_free(w);
}

static blq *parked_leaky_queue(wctx *w, tu_rec *r, enum blq_leak_dir dir)
{
	blq_config c = cfg_for(w, 2, 1);

	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	c.leak_direction = dir;
	blq *q = must_new(&c);
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i <= 5; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0, "leaky enqueue %lu", i);
	return q;
}

Test(queue, rear_leak_sends_the_new_items)
{
	wctx *w = wctx_new(true);
	tu_rec *r = tu_rec_new();
	blq *q = parked_leaky_queue(w, r, BLQ_LEAK_REAR);

	cr_assert_eq(r->n, 3);
	cr_expect_eq(r->ids[0], 3);
	cr_expect_eq(r->ids[1], 4);
	cr_expect_eq(r->ids[2], 5);
	tu_gate_open(&w->gate);
	blq_close(q);
	cr_assert_eq(w->n, 3);
	cr_expect(w->order[0] == 0 && w->order[1] == 1 && w->order[2] == 2);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.leaked_rear, 3);
	cr_expect_eq(s.leaked, 3);
	cr_expect_eq(s.processed, 3);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

Test(queue, front_leak_sends_the_oldest_items)
{
	wctx *w = wctx_new(true);
	tu_rec *r = tu_rec_new();
	blq *q = parked_leaky_queue(w, r, BLQ_LEAK_FRONT);

	cr_assert_eq(r->n, 3);
	cr_expect_eq(r->ids[0], 1);
	cr_expect_eq(r->ids[1], 2);
	cr_expect_eq(r->ids[2], 3);
	tu_gate_open(&w->gate);
	blq_close(q);
	cr_assert_eq(w->n, 3);
	cr_expect(w->order[0] == 0 && w->order[1] == 4 && w->order[2] == 5);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.leaked_front, 3);
	cr_expect_eq(s.leaked_rear, 0);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

Test(queue, refused_leak_is_counted_lost_and_freed)
{
	wctx *w = wctx_new(true);
	tu_rec *r = tu_rec_new();
	r->refuse = true;
	blq *q = parked_leaky_queue(w, r, BLQ_LEAK_REAR);

	cr_expect_eq(atomic_load(&tu_freed), 3);
	tu_gate_open(&w->gate);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.lost, 3);
	cr_expect_eq(s.leaked, 0);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

Test(queue, two_chained_queues)
{
	wctx *w1 = wctx_new(true), *w2 = wctx_new(false);
	blq_config c2 = cfg_for(w2, 100, 2);
	blq *q2 = must_new(&c2);
	blq_config c1 = cfg_for(w1, 2, 1);
	c1.dlq = blq_as_enqueuer(q2);
	blq *q1 = must_new(&c1);

	cr_assert_eq(blq_enqueue(q1, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w1->gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i < 10; i++)
		cr_assert_eq(blq_enqueue(q1, tu_item_new(i)), 0);
	tu_gate_open(&w1->gate);
	blq_close(q1);
	blq_close(q2);
	struct blq_stats s1, s2;
	blq_stats(q1, &s1);
	blq_stats(q2, &s2);
	cr_expect_eq(s1.processed, 3);
	cr_expect_eq(s1.leaked, 7);
	cr_expect_eq(s2.in, 7);
	cr_expect_eq(s2.processed, 7);
	cr_expect(tu_balanced(&s1));
	cr_expect(tu_balanced(&s2));
	cr_expect_eq(w1->n + w2->n, 10);
	cr_expect_eq(atomic_load(&tu_freed), 10);
	blq_free(q1);
	blq_free(q2);
	wctx_free(w1);
	wctx_free(w2);
}

Test(queue, failures_are_freed_or_sent_to_dlq)
{
	wctx *w = wctx_new(false);
	w->fail_odd = true;
	blq_config c = cfg_for(w, 64, 2);
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 100; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.processed, 50);
	cr_expect_eq(s.failed, 50);
	cr_expect_eq(atomic_load(&tu_freed), 100); /* 50 by the worker, 50 by item_free */
	cr_expect(tu_balanced(&s));
	blq_free(q);

	/* fail_to_dlq: the failed ones go to the DLQ instead. */
	wctx *w2 = wctx_new(false);
	w2->fail_odd = true;
	tu_rec *r = tu_rec_new();
	c = cfg_for(w2, 128, 2);
	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	c.fail_to_dlq = true;
	q = must_new(&c);
	for (uint64_t i = 0; i < 100; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	blq_close(q);
	blq_stats(q, &s);
	cr_expect_eq(s.failed, 0);
	cr_expect_eq(s.leaked_failed, 50);
	cr_expect_eq(tu_rec_count(r), 50);
	for (size_t i = 0; i < r->n; i++)
		cr_expect_eq(r->ids[i] % 2, 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
	wctx_free(w2);
	tu_rec_free(r);
}

static int slow_worker(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	tu_sleep_us(50);
	tu_item_free(payload);
	return 0;
}

Test(queue, close_drains_everything_then_refuses)
{
	blq_config c = {.capacity = 1000, .workers = 2, .worker = slow_worker,
			.item_free = tu_item_free};
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 500; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(blq_size(q), 0);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.processed, 500);
	cr_expect_eq(s.workers_active, 0);
	cr_expect(tu_balanced(&s));
	tu_item *late = tu_item_new(1);
	cr_expect_eq(blq_enqueue(q, late), BLQ_ECLOSED);
	cr_expect_eq(blq_try_enqueue(q, late), BLQ_ECLOSED);
	tu_item_free(late);
	cr_expect_eq(blq_close(q), 0, "double close");
	cr_expect_eq(blq_force_close(q), 0, "force after close");
	char buf[512];
	blq_status_json(q, buf, sizeof(buf));
	cr_expect(strstr(buf, "\"status\":\"closed\"") != NULL, "%s", buf);
	blq_free(q);
}

Test(queue, close_timeout_forces_a_stuck_drain)
{
	wctx *w = wctx_new(false);
	w->wait_cancel = true;
	blq_config c = cfg_for(w, 10, 1);
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 6; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	uint64_t t0 = tu_now_ns();
	cr_expect_eq(blq_close_timeout(q, 50 * 1000000ull), BLQ_ETIMEDOUT);
	uint64_t took = tu_now_ns() - t0;
	cr_expect(took >= 50 * 1000000ull && took < 1000 * 1000000ull, "took %lu ns", took);
	tu_wait_unstuck(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(s.lost, 5);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 6);
	blq_free(q);
	wctx_free(w);
}

Test(queue, close_timeout_in_time_returns_zero)
{
	blq_config c = {.capacity = 100, .workers = 2, .worker = slow_worker,
			.item_free = tu_item_free};
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 50; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_expect_eq(blq_close_timeout(q, 5000 * 1000000ull), 0);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.processed, 50);
	blq_free(q);
}

Test(queue, force_close_hands_the_rest_to_the_dlq)
{
	wctx *w = wctx_new(false);
	w->wait_cancel = true;
	tu_rec *r = tu_rec_new();
	blq_config c = cfg_for(w, 10, 1);
	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 8; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 7, 2000));
	cr_assert_eq(blq_force_close(q), 0);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(s.leaked_closed, 7);
	cr_expect_eq(tu_rec_count(r), 7);
	for (size_t i = 0; i < r->n; i++)
		cr_expect_eq(r->ids[i], i + 1, "DLQ order");
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

Test(queue, close_from_inside_a_worker)
{
	wctx *w = wctx_new(false);
	blq_config c = cfg_for(w, 1000, 2);
	blq *q = must_new(&c);
	atomic_store(&w->inside_rc, 1);
	atomic_store(&w->close_from_inside, q);

	uint64_t accepted = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		tu_item *it = tu_item_new(i);
		if (blq_enqueue(q, it) == 0)
			accepted++;
		else
			tu_item_free(it);
	}
	cr_assert(TU_WAIT_FOR(atomic_load(&w->inside_rc) == 0 &&
				      atomic_load(&w->free_rc) == BLQ_EDEADLK,
			      2000));
	cr_expect_eq(blq_free(q), 0);
	/* blq_free closed it; every accepted item reached an outcome. */
	cr_expect_eq(w->n, accepted);
	cr_expect_eq(atomic_load(&tu_freed), 1000);
	wctx_free(w);
}

typedef struct racer {
	blq *q;
	uint64_t base;
	uint64_t ok;
} racer;

static void *race_enqueue(void *p)
{
	racer *r = p;

	for (uint64_t i = 0; i < 20000; i++) {
		tu_item *it = tu_item_new(r->base + i);
		if (blq_enqueue(r->q, it) == 0)
			r->ok++;
		else
			tu_item_free(it);
	}
	return NULL;
}

static void *race_close(void *p)
{
	tu_sleep_us(2000);
	blq_close(p);
	return NULL;
}

Test(queue, enqueues_racing_two_closes)
{
	blq_config c = {.capacity = 64, .workers = 2, .worker = slow_worker,
			.item_free = tu_item_free};
	blq *q = must_new(&c);
	racer rs[3] = {{q, 0, 0}, {q, 100000, 0}, {q, 200000, 0}};
	pthread_t t[5];

	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, race_enqueue, &rs[i]);
	pthread_create(&t[3], NULL, race_close, q);
	pthread_create(&t[4], NULL, race_close, q);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.in, rs[0].ok + rs[1].ok + rs[2].ok);
	cr_expect_eq(s.processed, s.in);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 60000);
	blq_free(q);
}

/* A fake clock the test moves by hand. */
static _Atomic uint64_t fake_ns = 1000;
static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_ns);
}

Test(queue, deadline_expires_or_goes_to_dlq)
{
	for (int to_dlq = 0; to_dlq <= 1; to_dlq++) {
		wctx *w = wctx_new(true);
		tu_rec *r = tu_rec_new();
		blq_config c = cfg_for(w, 10, 1);
		c.clock.now_ns = fake_now;
		c.deadline_interval_ns = 100;
		if (to_dlq) {
			c.dlq.enqueue = tu_rec_enqueue;
			c.dlq.self = r;
			c.deadline_to_dlq = true;
		}
		blq *q = must_new(&c);

		cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
		for (uint64_t i = 1; i <= 3; i++)
			cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
		/* A per-job deadline overrides the config's. */
		blq_job j = {.payload = tu_item_new(4), .deadline_ns = 1000};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
		atomic_fetch_add(&fake_ns, 200); /* past 100, before 1000 */
		tu_gate_open(&w->gate);
		blq_close(q);
		struct blq_stats s;
		blq_stats(q, &s);
		cr_expect_eq(s.processed, 2, "item 0 and the job");
		cr_expect_eq(w->order[1], 4);
		cr_expect_eq(to_dlq ? s.leaked_deadline : s.expired, 3);
		cr_expect_eq(tu_rec_count(r), to_dlq ? 3 : 0);
		cr_expect(tu_balanced(&s));
		blq_free(q);
		wctx_free(w);
		tu_rec_free(r);
	}
}

static int stamp_worker(void *ctx, void *payload, blq_task *t)
{
	uint64_t *seen = ctx;

	seen[0] = blq_task_enqueued_ns(t);
	seen[1] = blq_task_attempt(t);
	seen[2] = blq_task_cancelled(t);
	seen[3] = blq_task_queue(t) != NULL;
	tu_item_free(payload);
	return 0;
}

Test(queue, task_handle_reports_stamp_and_attempt)
{
	uint64_t seen[4] = {0};
	blq_config c = {.capacity = 4, .workers = 1, .worker = stamp_worker, .worker_ctx = seen,
			.stamp_enqueue_time = true};
	c.clock.now_ns = fake_now;
	atomic_store(&fake_ns, 777000);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	blq_close(q);
	cr_expect_eq(seen[0], 777000);
	cr_expect_eq(seen[1], 1);
	cr_expect_eq(seen[2], 0);
	cr_expect_eq(seen[3], 1);
	blq_free(q);
}

Test(queue, streams_keep_the_exact_capacity)
{
	wctx *w = wctx_new(true);
	blq_config c = cfg_for(w, 10, 1);
	c.streams = 3;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	uint64_t ok = 0;
	for (uint64_t i = 1; i <= 20; i++) {
		tu_item *it = tu_item_new(i);
		if (blq_try_enqueue(q, it) == 0)
			ok++;
		else
			tu_item_free(it);
	}
	cr_expect_eq(ok, 10);
	cr_expect_eq(blq_size(q), 10);
	tu_gate_open(&w->gate);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_expect_eq(s.processed, 11);
	blq_free(q);
	wctx_free(w);
}

typedef struct counting_metrics {
	_Atomic int put, pull, leak, lost, exec, init, stop, setup;
} counting_metrics;

static void m_put(void *c, const char *q) { (void)q; atomic_fetch_add(&((counting_metrics *)c)->put, 1); }
static void m_pull(void *c, const char *q, unsigned wk, uint64_t w) { (void)q, (void)wk, (void)w; atomic_fetch_add(&((counting_metrics *)c)->pull, 1); }
static void m_leak(void *c, const char *q, enum blq_leak_dir d) { (void)q, (void)d; atomic_fetch_add(&((counting_metrics *)c)->leak, 1); }
static void m_exec(void *c, const char *q, unsigned wk, uint64_t ns, int failed) { (void)q, (void)wk, (void)ns, (void)failed; atomic_fetch_add(&((counting_metrics *)c)->exec, 1); }
static void m_init(void *c, const char *q, unsigned w) { (void)q, (void)w; atomic_fetch_add(&((counting_metrics *)c)->init, 1); }
static void m_stop(void *c, const char *q, unsigned w, int f) { (void)q, (void)w, (void)f; atomic_fetch_add(&((counting_metrics *)c)->stop, 1); }

Test(queue, metrics_writer_sees_each_event)
{
	counting_metrics cm = {0};
	blq_metrics_writer mw = {.ctx = &cm, .queue_put = m_put, .queue_pull = m_pull,
				 .queue_leak = m_leak, .queue_exec = m_exec,
				 .worker_init = m_init, .worker_stop = m_stop};
	wctx *w = wctx_new(true);
	tu_rec *r = tu_rec_new();
	blq_config c = cfg_for(w, 2, 1);
	c.metrics = &mw;
	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i <= 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	tu_gate_open(&w->gate);
	blq_close(q);
	cr_expect_eq(cm.put, 5);
	cr_expect_eq(cm.pull, 3);
	cr_expect_eq(cm.exec, 3);
	cr_expect_eq(cm.leak, 2);
	cr_expect_eq(cm.init, 1);
	cr_expect_eq(cm.stop, 1);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

Test(queue, status_json_escapes_the_name)
{
	blq_config c = {.capacity = 4, .workers = 1, .worker = slow_worker, .name = "a\"b\\c\n"};
	blq *q = must_new(&c);
	char buf[1024];

	int n = blq_status_json(q, buf, sizeof(buf));
	cr_assert(n > 0 && (size_t)n < sizeof(buf));
	cr_expect(strstr(buf, "\"name\":\"a\\\"b\\\\c\\u000a\"") != NULL, "%s", buf);
	cr_expect(strstr(buf, "\"status\":\"active\"") != NULL, "%s", buf);
	cr_expect(strstr(buf, "\"capacity\":4") != NULL, "%s", buf);
	cr_expect(strstr(buf, "\"workers\":{\"active\":1") != NULL, "%s", buf);
	char tiny[8];
	cr_expect_eq(blq_status_json(q, tiny, sizeof(tiny)), n, "returns the full length");
	cr_expect_eq(strlen(tiny), 7);
	blq_free(q);
}

Test(queue, status_json_is_utf8_whatever_the_name)
{
	/* é and € pass; a stray 0xff, a cut sequence and an overlong '/'
	 * (0xc0 0xaf) become '?': JSON text must be UTF-8. */
	blq_config c = {.capacity = 4, .workers = 1, .worker = slow_worker,
			.name = "\xc3\xa9\xe2\x82\xac-\xff-\xe2\x82-\xc0\xaf"};
	blq *q = must_new(&c);
	char buf[1024];

	int n = blq_status_json(q, buf, sizeof(buf));
	cr_assert(n > 0 && (size_t)n < sizeof(buf));
	cr_expect(strstr(buf, "\"name\":\"\xc3\xa9\xe2\x82\xac-?-?" "?-?" "?\"") != NULL, "%s", buf);
	blq_free(q);
}

Test(queue, discard_dlq_frees_and_counts)
{
	blq_discard d;
	wctx *w = wctx_new(true);
	blq_discard_init(&d, tu_item_free);
	blq_config c = cfg_for(w, 1, 1);
	c.dlq = blq_discard_enqueuer(&d);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i <= 10; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_expect_eq(blq_discard_count(&d), 9);
	cr_expect_eq(atomic_load(&tu_freed), 9);
	tu_gate_open(&w->gate);
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 11);
	wctx_free(w);
}
