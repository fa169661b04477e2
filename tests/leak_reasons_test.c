/*
 * Each leaked item counts in `leaked` and in exactly one reason counter
 * (leaked_rear, leaked_front, leaked_failed, leaked_deadline,
 * leaked_closed), one scenario per reason, with the accounting invariant
 * after close. The metrics writer's queue_leak event carries a direction,
 * not the reason: fail_to_dlq and deadline_to_dlq report BLQ_LEAK_REAR
 * and a close BLQ_LEAK_FRONT (what docs/reference-metrics.md says of
 * queue_leak_total{dir}); checked here so that the doc stays true.
 */
#include <criterion/criterion.h>

#include "suite_util.h"

static tu_gate gate;
static _Atomic int fail_all;
static _Atomic uint64_t leak_events[2]; /* by enum blq_leak_dir */

static int worker(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	(void)t;
	tu_gate_pass(&gate);
	if (atomic_load(&fail_all))
		return -1;
	tu_item_free(payload);
	return 0;
}

static void on_leak(void *ctx, const char *queue, enum blq_leak_dir dir)
{
	(void)ctx;
	(void)queue;
	atomic_fetch_add(&leak_events[dir], 1);
}

static const blq_metrics_writer writer = {.queue_leak = on_leak};

static void setup(void)
{
	tu_gate_init(&gate);
	atomic_store(&fail_all, 0);
}

TestSuite(leak_reasons, .init = setup, .timeout = 30);

/* The one non-zero reason counter, after close: `want` of them under
 * `reason` (its offset in blq_stats), none under the others, and their sum
 * is leaked. */
static void expect_only(const struct blq_stats *s, const uint64_t *reason, uint64_t want)
{
	const uint64_t *all[] = {&s->leaked_rear, &s->leaked_front, &s->leaked_failed,
				 &s->leaked_deadline, &s->leaked_closed};
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		sum += *all[i];
		if (all[i] == reason)
			cr_expect_eq(*all[i], want, "reason %zu: %llu, want %llu", i,
				     (unsigned long long)*all[i], (unsigned long long)want);
		else
			cr_expect_eq(*all[i], 0, "reason %zu: %llu, want 0", i,
				     (unsigned long long)*all[i]);
	}
	cr_expect_eq(sum, s->leaked, "the reasons add up to leaked");
	cr_expect_eq(s->leaked, want);
	cr_expect(tu_balanced(s), "in %llu", (unsigned long long)s->in);
}

static blq_config base(tu_rec *r)
{
	return (blq_config){.name = "lr", .capacity = 1, .workers = 1, .worker = worker,
			    .item_free = tu_item_free, .metrics = &writer,
			    .dlq = {.enqueue = tu_rec_enqueue, .self = r}};
}

/* One item parked in the worker, one queued: the queue is full. */
static void fill(blq *q)
{
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
}

static struct blq_stats finish(blq *q, tu_rec *r, uint64_t leaked)
{
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(tu_rec_count(r), leaked, "the DLQ got every leaked item");
	blq_free(q);
	tu_rec_free(r);
	return s;
}

Test(leak_reasons, overflow_rear)
{
	tu_rec *r = tu_rec_new();
	blq_config c = base(r);
	blq *q = must_new(&c);

	fill(q);
	for (uint64_t i = 2; i < 5; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	struct blq_stats s = finish(q, r, 3);
	expect_only(&s, &s.leaked_rear, 3);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_REAR]), 3);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_FRONT]), 0);
}

Test(leak_reasons, overflow_front)
{
	tu_rec *r = tu_rec_new();
	blq_config c = base(r);
	c.leak_direction = BLQ_LEAK_FRONT;
	blq *q = must_new(&c);

	fill(q);
	for (uint64_t i = 2; i < 5; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	struct blq_stats s = finish(q, r, 3);
	expect_only(&s, &s.leaked_front, 3);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_FRONT]), 3);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_REAR]), 0);
}

/* fail_to_dlq: counted leaked_failed (and failed stays 0: an item ends
 * once), while the metrics event says rear. */
Test(leak_reasons, failed)
{
	tu_rec *r = tu_rec_new();
	blq_config c = base(r);
	c.capacity = 8;
	c.fail_to_dlq = true;
	atomic_store(&fail_all, 1);
	tu_gate_open(&gate);
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	struct blq_stats s = finish(q, r, 4);
	expect_only(&s, &s.leaked_failed, 4);
	cr_expect_eq(s.failed, 0, "a failure sent to the DLQ is a leak, not a failure");
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_REAR]), 4, "queue_leak says rear");
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_FRONT]), 0);
}

/* deadline_to_dlq on a fake clock: the queued item is taken past its
 * deadline. */
Test(leak_reasons, deadline)
{
	tu_rec *r = tu_rec_new();
	blq_config c = base(r);
	c.capacity = 4;
	c.deadline_to_dlq = true;
	c.deadline_interval_ns = 1000000ull;
	c.clock.now_ns = tu_fake_mono;
	blq *q = must_new(&c);

	fill(q);
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	atomic_fetch_add(&tu_mono_ns, 2000000ull);
	struct blq_stats s = finish(q, r, 2);
	expect_only(&s, &s.leaked_deadline, 2);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.expired, 0);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_REAR]), 2, "queue_leak says rear");
}

/* A Soft close hands the queued items over: leaked_closed, dir front.
 * Paused first, so the worker that returns starts nothing more. */
Test(leak_reasons, closed)
{
	tu_rec *r = tu_rec_new();
	blq_config c = base(r);
	c.capacity = 4;
	blq *q = must_new(&c);

	fill(q);
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(3)), 0);
	cr_assert_eq(blq_pause(q), 0);
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000));
	cr_assert_eq(blq_close_soft(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(tu_rec_count(r), 3);
	blq_free(q);
	tu_rec_free(r);
	expect_only(&s, &s.leaked_closed, 3);
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_FRONT]), 3, "queue_leak says front");
	cr_expect_eq(atomic_load(&leak_events[BLQ_LEAK_REAR]), 0);
}
