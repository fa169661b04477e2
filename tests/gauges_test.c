/*
 * The gauges of the moment (seed 000's metrics): workers busy inside their
 * callback, workers past their attempt's time limit that have not returned,
 * producers blocked on a full queue, and throttled on a fixed pool while
 * producers wait. Read through blq_stats and the status JSON; the
 * Prometheus families are checked in metrics_test.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

static tu_gate gate;

/* Ignores its token: holds the item in the gate whatever happens; then
 * claims the payload before freeing it (past its limit the watchdog may
 * have given the attempt up: then the queue has it). */
static int gated(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_gate_pass(&gate);
	if (!blq_task_claim(t))
		return -1;
	tu_item_free(payload);
	return 0;
}

static void setup(void)
{
	tu_gate_init(&gate);
}

TestSuite(gauges, .init = setup, .timeout = 30);

static bool json_has(blq *q, const char *want)
{
	char buf[4096];

	return blq_status_json(q, buf, sizeof(buf)) > 0 && strstr(buf, want) != NULL;
}

/* A fixed pool, full, two producers blocked: busy 1, blocked 2, throttled;
 * after the drain all three clear. */
Test(gauges, fixed_pool_reports_busy_blocked_and_throttled)
{
	blq_config c = {.name = "g", .capacity = 2, .workers = 1, .worker = gated,
			.item_free = tu_item_free};
	blq *q = must_new(&c);

	cr_expect_eq(stats(q).workers_busy, 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_expect_eq(stats(q).workers_busy, 1);
	cr_expect_eq(stats(q).workers_overrunning, 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	cr_expect(!stats(q).throttled, "full, but nobody waits yet");
	producer_arg a = {.q = q, .id = 3}, b = {.q = q, .id = 4};
	pthread_t ta, tb;
	pthread_create(&ta, NULL, blocking_producer, &a);
	pthread_create(&tb, NULL, blocking_producer, &b);
	cr_assert(TU_WAIT_FOR(stats(q).producers_blocked == 2, 2000), "blocked %u",
		  stats(q).producers_blocked);
	cr_expect(stats(q).throttled);
	cr_expect(json_has(q, "\"throttled\":true"));
	cr_expect(json_has(q, "\"producers_blocked\":2"));
	cr_expect(json_has(q, "\"busy\":1,"));

	tu_gate_open(&gate);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_expect_eq(a.rc, 0);
	cr_expect_eq(b.rc, 0);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.producers_blocked, 0);
	cr_expect(!s.throttled, "throttled after the drain");
	cr_expect_eq(s.workers_busy, 0);
	cr_expect(json_has(q, "\"throttled\":false"));
	cr_assert_eq(blq_close(q), 0);
	s = stats(q);
	cr_expect_eq(s.processed, 5);
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

/* A callback past its time limit that ignores its token counts as
 * overrunning until it returns (fake clock). */
Test(gauges, a_callback_past_its_limit_is_overrunning_until_it_returns)
{
	blq_config c = {.name = "o", .capacity = 4, .workers = 2, .worker = gated,
			.item_free = tu_item_free};
	c.clock.now_ns = tu_fake_mono;
	blq *q = must_new(&c);

	blq_job slow = {.payload = tu_item_new(0), .timeout_ns = 30000000ull};
	cr_assert_eq(blq_enqueue_job(q, &slow), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0); /* no limit */
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 2, 2000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_busy, 2);
	cr_expect_eq(s.workers_overrunning, 0, "within its limit");
	atomic_fetch_add(&tu_mono_ns, 30000000ull);
	s = stats(q);
	cr_expect_eq(s.workers_overrunning, 1);
	cr_expect(json_has(q, "\"busy\":2,\"overrunning\":1}"));
	tu_gate_open(&gate);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	s = stats(q);
	cr_expect_eq(s.workers_busy, 0);
	cr_expect_eq(s.workers_overrunning, 0);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

/* A leaky queue whose DLQ is a full blocking queue (issue 32, point 7):
 * the leak runs blq_enqueue on the DLQ, which waits for room, so the
 * "leaky" queue's producers wait too, and dlq_waiting counts them. Both
 * pools parked in the gate; two producers overflow the source. */
Test(gauges, a_leak_into_a_full_blocking_dlq_waits_and_counts_in_dlq_waiting)
{
	blq_config tc = {.name = "dlq", .capacity = 1, .workers = 1, .worker = gated,
			 .item_free = tu_item_free};
	blq *t = must_new(&tc); /* no DLQ of its own: blocking */
	blq_config sc = {.name = "src", .capacity = 1, .workers = 1, .worker = gated,
			 .item_free = tu_item_free, .dlq = blq_as_enqueuer(t)};
	blq *s = must_new(&sc);

	cr_assert_eq(blq_enqueue(t, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(t, tu_item_new(1)), 0); /* the DLQ is full */
	cr_assert_eq(blq_enqueue(s, tu_item_new(10)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 2, 2000));
	cr_assert_eq(blq_enqueue(s, tu_item_new(11)), 0); /* the source is full */
	cr_expect_eq(stats(s).dlq_waiting, 0);

	producer_arg a = {.q = s, .id = 12}, b = {.q = s, .id = 13};
	pthread_t ta, tb;
	uint64_t t0 = tu_now_ns();
	pthread_create(&ta, NULL, blocking_producer, &a);
	pthread_create(&tb, NULL, blocking_producer, &b);
	cr_assert(TU_WAIT_FOR(stats(s).dlq_waiting == 2, 2000), "dlq_waiting %u",
		  stats(s).dlq_waiting);
	cr_expect_eq(stats(t).producers_blocked, 2, "they wait in the DLQ's enqueue");
	cr_expect_eq(stats(s).producers_blocked, 0, "not for the source's room");
	cr_expect(json_has(s, "\"dlq_waiting\":2"));
	tu_sleep_us(50000);
	cr_expect(!atomic_load(&a.done) && !atomic_load(&b.done),
		  "a leaky queue's producer waits while its DLQ is a full blocking queue");

	tu_gate_open(&gate);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_expect_geq(tu_now_ns() - t0, 50000000ull, "they waited for the gate");
	cr_expect_eq(a.rc, 0);
	cr_expect_eq(b.rc, 0);
	cr_expect_eq(stats(s).dlq_waiting, 0);
	cr_expect(json_has(s, "\"dlq_waiting\":0"));

	cr_assert_eq(blq_close(s), 0); /* the source first: it feeds the DLQ */
	cr_assert_eq(blq_close(t), 0);
	struct blq_stats ss = stats(s), ts = stats(t);
	cr_expect_eq(ss.in, 4);
	cr_expect_eq(ss.processed, 2);
	cr_expect_eq(ss.leaked, 2);
	cr_expect_eq(ss.leaked_rear, 2);
	cr_expect_eq(ss.dlq_waiting, 0);
	cr_expect(tu_balanced(&ss));
	cr_expect_eq(ts.in, 4);
	cr_expect_eq(ts.processed, 4);
	cr_expect(tu_balanced(&ts));
	blq_free(s);
	blq_free(t);
}
