/*
 * Limits on waiting for room (issue #34): timed enqueues
 * (blq_enqueue_timeout, blq_enqueue_job_timeout, blq_enqueue_batch_timeout)
 * and the cap on producers blocked at once (producers_blocked_max).
 *
 * The queue's one worker is held in a gate by a first item, so the queue
 * stays full for as long as the test wants. The limits are on the real
 * CLOCK_MONOTONIC (the futex's), so the tests check a floor (no return
 * before the limit) and a generous ceiling (a loaded CI host).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <blq/prometheus.h>

#include "suite_util.h"

#define BLOCKER 1000000u

typedef struct wctx {
	tu_gate gate;
	_Atomic uint64_t ran;
} wctx;

static int worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;

	(void)task;
	if (it->id == BLOCKER)
		tu_gate_pass(&w->gate);
	atomic_fetch_add(&w->ran, 1);
	tu_item_free(it);
	return 0;
}

/* A queue of `capacity` whose one worker holds the blocker, and `fill`
 * items queued behind it. */
static blq *full_queue(wctx *w, size_t capacity, size_t fill, blq_config *extra)
{
	blq_config c = extra != NULL ? *extra : (blq_config){0};

	tu_gate_init(&w->gate);
	c.capacity = capacity;
	c.workers = 1;
	c.worker = worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(BLOCKER)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 5000), "the blocker never ran");
	for (size_t i = 0; i < fill; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	return q;
}

/* Opens the gate, closes, and checks every accepted item ran. */
static void drain_and_free(blq *q, wctx *w, uint64_t accepted)
{
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);

	cr_expect_eq(s.in, accepted);
	cr_expect_eq(s.processed, accepted);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&w->ran), accepted);
	blq_free(q);
	tu_gate_destroy(&w->gate);
}

Test(timed_enqueue, a_full_queue_times_out_after_the_limit_and_the_payload_stays_the_callers,
     .timeout = 30)
{
	wctx w = {0};
	blq *q = full_queue(&w, 4, 4, NULL);
	tu_item *it = tu_item_new(7);
	uint64_t t0 = tu_now_ns();
	int rc = blq_enqueue_timeout(q, it, 50000000ull);
	uint64_t took = tu_now_ns() - t0;

	cr_expect_eq(rc, BLQ_ETIMEDOUT, "got %s", blq_strerror(rc));
	cr_expect(took >= 50000000ull, "returned after %llu ns", (unsigned long long)took);
	cr_expect(took < 3000000000ull, "returned after %llu ns", (unsigned long long)took);
	cr_expect_eq(it->magic, TU_MAGIC_LIVE, "the refused payload was touched");
	cr_expect_eq(stats(q).producers_blocked, 0);
	tu_item_free(it);
	/* 0: no wait at all. */
	it = tu_item_new(8);
	cr_expect_eq(blq_enqueue_timeout(q, it, 0), BLQ_ETIMEDOUT);
	tu_item_free(it);
	drain_and_free(q, &w, 5);
}

static void *open_after_50ms(void *g)
{
	tu_sleep_us(50000);
	tu_gate_open(g);
	return NULL;
}

Test(timed_enqueue, gets_in_when_room_appears_before_the_limit, .timeout = 30)
{
	wctx w = {0};
	blq *q = full_queue(&w, 2, 2, NULL);
	pthread_t opener;

	pthread_create(&opener, NULL, open_after_50ms, &w.gate);
	cr_expect_eq(blq_enqueue_timeout(q, tu_item_new(9), 10000000000ull), 0);
	pthread_join(opener, NULL);
	/* UINT64_MAX: no limit, as blq_enqueue (the queue has room now). */
	cr_expect_eq(blq_enqueue_timeout(q, tu_item_new(10), UINT64_MAX), 0);
	drain_and_free(q, &w, 5);
}

Test(timed_enqueue, a_job_times_out_and_its_hook_never_runs, .timeout = 30)
{
	wctx w = {0};
	blq *q = full_queue(&w, 2, 2, NULL);
	tu_item *it = tu_item_new(11);
	blq_job job = {.payload = it};

	cr_expect_eq(blq_enqueue_job_timeout(q, &job, 20000000ull), BLQ_ETIMEDOUT);
	cr_expect_eq(it->magic, TU_MAGIC_LIVE);
	tu_item_free(it);
	drain_and_free(q, &w, 3);
}

Test(timed_enqueue, a_delayed_job_times_out_on_a_full_timer, .timeout = 30)
{
	wctx w = {0};
	blq_config c = {.timer_capacity = 1};
	blq *q = full_queue(&w, 4, 0, &c);
	blq_job first = {.payload = tu_item_new(12), .delay_ns = 60000000000ull};
	tu_item *it = tu_item_new(13);
	blq_job second = {.payload = it, .delay_ns = 60000000000ull};
	uint64_t t0 = tu_now_ns();

	cr_assert_eq(blq_enqueue_job(q, &first), 0); /* the timer's one place */
	cr_expect_eq(blq_enqueue_job_timeout(q, &second, 30000000ull), BLQ_ETIMEDOUT);
	cr_expect(tu_now_ns() - t0 >= 30000000ull);
	cr_expect_eq(it->magic, TU_MAGIC_LIVE);
	tu_item_free(it);
	/* The delayed item is dropped at a Hard close: no wait for a minute. */
	tu_gate_open(&w.gate);
	cr_assert_eq(blq_force_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 2);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	tu_gate_destroy(&w.gate);
}

Test(timed_enqueue, a_batch_takes_what_fits_then_times_out, .timeout = 30)
{
	wctx w = {0};
	blq *q = full_queue(&w, 5, 2, NULL);
	void *p[6];

	for (unsigned i = 0; i < 6; i++)
		p[i] = tu_item_new(100 + i);
	ssize_t r = blq_enqueue_batch_timeout(q, p, 6, 30000000ull);

	cr_expect_eq(r, 3, "took %zd", r); /* the 3 places left */
	r = blq_enqueue_batch_timeout(q, p + 3, 3, 10000000ull);
	cr_expect_eq(r, BLQ_ETIMEDOUT, "got %zd", r); /* took none: why */
	for (unsigned i = 3; i < 6; i++) {
		cr_expect_eq(((tu_item *)p[i])->magic, TU_MAGIC_LIVE);
		tu_item_free(p[i]);
	}
	drain_and_free(q, &w, 6);
}

/* A leak inside a timed enqueue into a DLQ that is another (full,
 * blocking) queue waits by that queue's rules, not the call's limit: the
 * leaked item gets into the DLQ once it has room. */

Test(timed_enqueue, the_limit_is_the_calls_own_queue_not_its_dlq, .timeout = 30)
{
	wctx dw = {0};
	blq *dlq = full_queue(&dw, 1, 1, NULL);
	wctx w = {0};
	blq_config c = {.dlq = blq_as_enqueuer(dlq)};
	blq *q = full_queue(&w, 1, 1, &c);
	pthread_t opener;

	pthread_create(&opener, NULL, open_after_50ms, &dw.gate);
	/* q is full and leaky: the new item leaks into dlq, which is full
	 * until the opener lets its worker go (50 ms): the 1 ms limit is q's,
	 * so the leak still waits and lands. */
	cr_expect_eq(blq_enqueue_timeout(q, tu_item_new(14), 1000000ull), 0);
	pthread_join(opener, NULL);
	tu_gate_open(&w.gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 3);
	cr_expect_eq(s.processed, 2);
	cr_expect_eq(s.leaked_rear, 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	tu_gate_destroy(&w.gate);
	cr_assert_eq(blq_close(dlq), 0);
	cr_expect_eq(stats(dlq).processed, 3);
	blq_free(dlq);
	tu_gate_destroy(&dw.gate);
}

typedef struct blocked_arg {
	blq *q;
	uint64_t id;
	int rc;
	uint64_t ns; /* how long the call took */
} blocked_arg;

static void *enqueue_and_time(void *p)
{
	blocked_arg *a = p;
	tu_item *it = tu_item_new(a->id);
	uint64_t t0 = tu_now_ns();

	a->rc = blq_enqueue(a->q, it);
	a->ns = tu_now_ns() - t0;
	if (a->rc != 0)
		tu_item_free(it);
	return NULL;
}

Test(blocked_cap, past_the_cap_a_blocking_enqueue_is_refused_at_once_and_counted, .timeout = 30)
{
	wctx w = {0};
	blq_error err;
	blq_prom *r = blq_prom_new(&err);
	cr_assert_not_null(r);
	blq_config c = {.producers_blocked_max = 2, .name = "capped"};
	c.metrics = blq_prom_queue_writer(r, "capped", &err);
	cr_assert_not_null(c.metrics, "%s", err.msg);
	blq *q = full_queue(&w, 2, 2, &c);
	blocked_arg a[2] = {{.q = q, .id = 20}, {.q = q, .id = 21}};
	pthread_t t[2];

	for (unsigned i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, enqueue_and_time, &a[i]);
	cr_assert(TU_WAIT_FOR(stats(q).producers_blocked == 2, 5000));
	/* A third blocking producer, and a timed one: refused at once. */
	tu_item *it = tu_item_new(22);
	uint64_t t0 = tu_now_ns();

	cr_expect_eq(blq_enqueue(q, it), BLQ_EFULL);
	cr_expect_eq(blq_enqueue_timeout(q, it, 10000000000ull), BLQ_EFULL);
	cr_expect(tu_now_ns() - t0 < 2000000000ull, "a refused producer waited");
	cr_expect_eq(it->magic, TU_MAGIC_LIVE);
	tu_item_free(it);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.producers_turned_away, 2);
	cr_expect_eq(s.producers_blocked, 2);
	/* `in` counts the two blocked producers' items from their calls'
	 * start (queue.h); queue_in_total only the 3 taken. */
	cr_expect_eq(s.in, 5);

	char json[2048];
	cr_assert(blq_status_json(q, json, sizeof(json)) > 0);
	cr_expect(strstr(json, "\"producers_turned_away\":2") != NULL, "%s", json);
	cr_assert_eq(blq_prom_watch(r, q), 0);
	char text[65536];
	cr_assert(blq_prom_render(r, text, sizeof(text)) > 0);
	cr_expect(strstr(text, "queue_producers_turned_away_total{queue=\"capped\"} 2\n") != NULL,
		  "%s", text);
	cr_expect(strstr(text, "queue_in_total{queue=\"capped\"} 3\n") != NULL, "%s", text);

	/* The two waiting ones get in once the worker drains. */
	tu_gate_open(&w.gate);
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(a[i].rc, 0);
	}
	cr_assert_eq(blq_close(q), 0);
	s = stats(q);
	cr_expect_eq(s.in, 5);
	cr_expect_eq(s.processed, 5);
	cr_expect(tu_balanced(&s));
	blq_prom_unwatch(r, q);
	blq_free(q);
	blq_prom_free(r);
	tu_gate_destroy(&w.gate);
}

Test(blocked_cap, a_leaky_queue_refuses_the_cap_with_a_clear_error)
{
	tu_rec *dlq = tu_rec_new();
	blq_config c = {.capacity = 4,
			.workers = 1,
			.worker = worker,
			.producers_blocked_max = 1,
			.dlq = {.enqueue = tu_rec_enqueue, .self = dlq}};
	blq_error err;

	cr_expect_null(blq_new(&c, &err));
	cr_expect(strstr(err.msg, "producers_blocked_max") != NULL, "%s", err.msg);
	tu_rec_free(dlq);
}
