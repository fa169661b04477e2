/*
 * Retries, backoff and jitter, delays, deadlines with delays, task timeouts,
 * enqueue-and-wait, and the timer's close and leak rules. Time is a fake
 * clock the test moves; after moving it the test kicks the timer thread
 * (blq__timer_kick), so nothing here sleeps for the intervals it tests.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite_util.h"

/* Internal: make the timer thread look at the clock now. */
void blq__timer_kick(blq *q);

#define SEC 1000000000ull
#define MS 1000000ull

static _Atomic uint64_t fake_ns = 1000 * SEC;

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_ns);
}

/* Moves the clock and lets the timer see it. */
static void advance(blq *q, uint64_t ns)
{
	atomic_fetch_add(&fake_ns, ns);
	blq__timer_kick(q);
}

/* ---- a recording worker --------------------------------------------- */

#define REC_MAX 4096

typedef struct wlog {
	_Atomic unsigned calls;
	uint64_t id[REC_MAX];
	uint64_t at[REC_MAX]; /* fake clock at the call */
	unsigned attempt[REC_MAX];
	_Atomic int ready[REC_MAX]; /* entry i written (release) */
	/* Items whose id is below fail_ids fail while attempt <= fail_until. */
	uint64_t fail_ids;
	unsigned fail_until;
} wlog;

static wlog R;

static int rec_worker(void *ctx, void *payload, blq_task *t)
{
	wlog *r = ctx;
	tu_item *it = payload;
	unsigned i = atomic_fetch_add(&r->calls, 1);

	if (i < REC_MAX) {
		r->id[i] = it->id;
		r->at[i] = fake_now(NULL);
		r->attempt[i] = blq_task_attempt(t);
		atomic_store_explicit(&r->ready[i], 1, memory_order_release);
	}
	if (it->id < r->fail_ids && blq_task_attempt(t) <= r->fail_until)
		return -1;
	tu_item_free(payload);
	return 0;
}

/* Calls recorded for item id, in order. */
static unsigned calls_of(uint64_t id, uint64_t *at, unsigned *attempt, unsigned max)
{
	unsigned n = 0, total = atomic_load(&R.calls);

	for (unsigned i = 0; i < total && i < REC_MAX; i++)
		if (atomic_load_explicit(&R.ready[i], memory_order_acquire) && R.id[i] == id) {
			if (n < max) {
				if (at)
					at[n] = R.at[i];
				if (attempt)
					attempt[n] = R.attempt[i];
			}
			n++;
		}
	return n;
}

/* The id of the i-th call (acquire: written by a worker thread), or
 * UINT64_MAX while it is not recorded. */
static uint64_t call_id(unsigned i)
{
	return atomic_load_explicit(&R.ready[i], memory_order_acquire) ? R.id[i] : UINT64_MAX;
}

static void setup(void)
{
	memset(&R, 0, sizeof(R));
	atomic_store(&tu_freed, 0);
}

TestSuite(retry, .init = setup, .timeout = 30);

static blq_config cfg(size_t cap, unsigned workers)
{
	blq_config c = {0};

	c.name = "retry";
	c.capacity = cap;
	c.workers = workers;
	c.worker = rec_worker;
	c.worker_ctx = &R;
	c.item_free = tu_item_free;
	c.clock.now_ns = fake_now;
	return c;
}

static void close_balanced(blq *q)
{
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s), "in %llu != outcomes", (unsigned long long)s.in);
	cr_expect_eq(s.size, 0);
	cr_expect_eq(s.delayed, 0);
	blq_free(q);
}

/* ---- backoff and jitter ------------------------------------------------ */

Test(retry, backoff_sequences_match_the_table)
{
	static const struct {
		enum blq_backoff kind;
		uint64_t interval;
		uint64_t want[7];
	} table[] = {
		{BLQ_BACKOFF_NONE, 10, {10, 10, 10, 10, 10, 10, 10}},
		{BLQ_BACKOFF_LINEAR, 10, {10, 20, 30, 40, 50, 60, 70}},
		{BLQ_BACKOFF_EXPONENTIAL, 10, {10, 20, 40, 80, 160, 320, 640}},
		{BLQ_BACKOFF_QUADRATIC, 10, {10, 40, 90, 160, 250, 360, 490}},
		{BLQ_BACKOFF_POLYNOMIAL, 10, {10, 80, 270, 640, 1250, 2160, 3430}},
		/* 1000 * ln(n + 1), truncated */
		{BLQ_BACKOFF_LOGARITHMIC, 1000, {693, 1098, 1386, 1609, 1791, 1945, 2079}},
		{BLQ_BACKOFF_FIBONACCI, 10, {10, 10, 20, 30, 50, 80, 130}},
	};
	for (size_t k = 0; k < sizeof(table) / sizeof(table[0]); k++)
		for (unsigned n = 1; n <= 7; n++)
			cr_expect_eq(blq_backoff_ns(table[k].kind, table[k].interval, n),
				     table[k].want[n - 1], "kind %d retry %u: %llu", table[k].kind, n,
				     (unsigned long long)blq_backoff_ns(table[k].kind,
									 table[k].interval, n));
	/* Saturation instead of overflow. */
	cr_expect_eq(blq_backoff_ns(BLQ_BACKOFF_EXPONENTIAL, 10, 100), UINT64_MAX);
	cr_expect_eq(blq_backoff_ns(BLQ_BACKOFF_POLYNOMIAL, 1ull << 62, 2), UINT64_MAX);
	cr_expect_eq(blq_backoff_ns(BLQ_BACKOFF_FIBONACCI, 1ull << 40, 200), UINT64_MAX);
	cr_expect_eq(blq_backoff_ns(BLQ_BACKOFF_CUSTOM, 10, 1), 0);

	/* random: interval/2 + [0, interval), spread over the whole range. */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t d = blq_backoff_ns(BLQ_BACKOFF_RANDOM, 1000, 3);

		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	cr_expect(lo >= 500 && lo < 520, "random low end %llu", (unsigned long long)lo);
	cr_expect(hi < 1500 && hi > 1480, "random high end %llu", (unsigned long long)hi);
}

/* RANDOM is interval/2 + [0, interval): past 2/3 of UINT64_MAX that sum
 * can pass UINT64_MAX, and then saturates like the other kinds. */
Test(retry, random_backoff_saturates_instead_of_wrapping)
{
	/* The largest interval whose sum cannot pass UINT64_MAX, the next
	 * one, and three where it does a sixth, a third and half the time. */
	static const uint64_t edge = UINT64_MAX / 3 * 2 + 1; /* 0xAAAAAAAAAAAAAAAB */
	static const uint64_t intervals[] = {edge, edge + 1, 0xC000000000000000ull,
					     UINT64_MAX - 1, UINT64_MAX};

	cr_assert_eq(edge / 2 + (edge - 1), UINT64_MAX);
	for (size_t k = 0; k < sizeof(intervals) / sizeof(intervals[0]); k++) {
		uint64_t iv = intervals[k];
		unsigned saturated = 0;

		for (int i = 0; i < 1000; i++) {
			uint64_t d = blq_backoff_ns(BLQ_BACKOFF_RANDOM, iv, 1);

			cr_assert(d >= iv / 2, "interval %#llx: %#llx wrapped below interval/2",
				  (unsigned long long)iv, (unsigned long long)d);
			saturated += d == UINT64_MAX;
		}
		if (k >= 2)
			cr_expect(saturated > 0, "interval %#llx never reached UINT64_MAX",
				  (unsigned long long)iv);
	}
}

Test(retry, jitter_bounds_over_many_draws)
{
	uint64_t flo = UINT64_MAX, fhi = 0, hlo = UINT64_MAX, hhi = 0;

	for (int i = 0; i < 20000; i++) {
		uint64_t f = blq_jitter_ns(BLQ_JITTER_FULL, 1000, 0, 0, 0);
		uint64_t h = blq_jitter_ns(BLQ_JITTER_HALF, 1000, 0, 0, 0);

		flo = f < flo ? f : flo;
		fhi = f > fhi ? f : fhi;
		hlo = h < hlo ? h : hlo;
		hhi = h > hhi ? h : hhi;
	}
	cr_expect(flo < 20 && fhi < 1000 && fhi > 980, "full [%llu, %llu]", (unsigned long long)flo,
		  (unsigned long long)fhi);
	cr_expect(hlo >= 500 && hlo < 520 && hhi <= 1000 && hhi > 980, "half [%llu, %llu]",
		  (unsigned long long)hlo, (unsigned long long)hhi);
	cr_expect_eq(blq_jitter_ns(BLQ_JITTER_NONE, 1234, 0, 0, 0), 1234);
	cr_expect_eq(blq_jitter_ns(BLQ_JITTER_FULL, 0, 0, 0, 0), 0);

	/* decorrelated: a chain of delays, each fed back as prev, stays in
	 * [min, max] and reaches both ends. */
	uint64_t prev = 0, dlo = UINT64_MAX, dhi = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t d = blq_jitter_ns(BLQ_JITTER_DECORRELATED, 100, 100, 5000, prev);

		cr_assert(d >= 100 && d <= 5000, "decorrelated %llu out of [100, 5000]",
			  (unsigned long long)d);
		dlo = d < dlo ? d : dlo;
		dhi = d > dhi ? d : dhi;
		prev = d;
	}
	cr_expect(dlo < 150 && dhi == 5000, "decorrelated [%llu, %llu]", (unsigned long long)dlo,
		  (unsigned long long)dhi);
	/* Two threads' generators are independent: no shared state. */
	cr_expect(blq_rand_u64() != blq_rand_u64());
	cr_expect_eq(blq_rand_below(0), 0);
}

/* ---- retries ----------------------------------------------------------- */

Test(retry, max_retries_counts_immediate_retries)
{
	for (unsigned max = 1; max <= 2; max++) {
		setup();
		R.fail_ids = 50;
		R.fail_until = 2; /* attempts 1 and 2 fail, 3 succeeds */
		blq_config c = cfg(64, 2);
		c.max_retries = max;
		blq *q = must_new(&c);

		for (uint64_t i = 0; i < 50; i++)
			cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
		cr_assert_eq(blq_close(q), 0);
		struct blq_stats s = stats(q);
		cr_expect(tu_balanced(&s));
		cr_expect_eq(s.processed, max == 2 ? 50 : 0, "max %u", max);
		cr_expect_eq(s.failed, max == 2 ? 0 : 50, "max %u", max);
		cr_expect_eq(s.retried, 50 * max, "max %u: one retry per failure but the last", max);
		cr_expect_eq(atomic_load(&R.calls), 50 * (max + 1));
		cr_expect_eq(atomic_load(&tu_freed), 50, "every payload freed once");
		blq_free(q);
	}
}

Test(retry, fail_to_dlq_after_the_last_retry)
{
	blq_discard d;
	blq_discard_init(&d, tu_item_free);
	R.fail_ids = 1;
	R.fail_until = 100;
	blq_config c = cfg(8, 1);
	c.max_retries = 2;
	c.dlq = blq_discard_enqueuer(&d);
	c.fail_to_dlq = true;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&R.calls), 3, "the first attempt and two retries");
	cr_expect_eq(s.retried, 2);
	cr_expect_eq(s.leaked_failed, 1);
	cr_expect_eq(s.failed, 0);
	cr_expect_eq(blq_discard_count(&d), 1);
	blq_free(q);
}

Test(retry, backoff_waits_in_the_timer_while_the_worker_goes_on)
{
	R.fail_ids = 1; /* item 0 always fails */
	R.fail_until = 100;
	blq_config c = cfg(256, 1); /* one worker: a held worker would stall everything */
	c.max_retries = 3;
	c.retry_interval_ns = 1 * SEC;
	c.backoff = BLQ_BACKOFF_EXPONENTIAL;
	blq *q = must_new(&c);
	uint64_t t0 = fake_now(NULL);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 1, 2000), "the retry waits in the timer");
	cr_expect_eq(blq_size(q), 1, "an item in the timer counts in blq_size");
	for (uint64_t i = 1; i <= 100; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 100, 5000),
		  "the worker is not held by the backoff");

	/* Retry n waits 1, 2, 4 s: never early. */
	const uint64_t waits[] = {1 * SEC, 2 * SEC, 4 * SEC};
	for (unsigned r = 0; r < 3; r++) {
		advance(q, waits[r] - 1);
		tu_sleep_us(20000);
		cr_expect_eq(calls_of(0, NULL, NULL, 0), r + 1, "retry %u ran early", r + 1);
		advance(q, 1);
		cr_assert(TU_WAIT_FOR(calls_of(0, NULL, NULL, 0) == r + 2, 2000), "retry %u", r + 1);
	}
	uint64_t at[4];
	unsigned attempt[4];
	cr_assert_eq(calls_of(0, at, attempt, 4), 4);
	cr_expect_eq(at[1] - at[0], 1 * SEC);
	cr_expect_eq(at[2] - at[1], 2 * SEC);
	cr_expect_eq(at[3] - at[2], 4 * SEC);
	cr_expect(attempt[0] == 1 && attempt[3] == 4);
	cr_expect(at[0] == t0);
	cr_assert(TU_WAIT_FOR(stats(q).failed == 1, 2000), "failed after the last retry");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.retried, 3);
	cr_expect_eq(s.delayed, 0);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 101);
}

/* ---- custom backoff and jitter, and the metrics events ---------------- */

typedef struct events {
	_Atomic unsigned retries, delayed, deadlines;
	_Atomic uint64_t retry_delay[8];
	_Atomic uint64_t waited[8];
} events;

static events EV;

static void ev_retry(void *ctx, const char *q, uint64_t delay)
{
	(void)ctx, (void)q;
	unsigned i = atomic_fetch_add(&EV.retries, 1);
	if (i < 8)
		EV.retry_delay[i] = delay;
}

static void ev_delayed(void *ctx, const char *q, uint64_t waited)
{
	(void)ctx, (void)q;
	unsigned i = atomic_fetch_add(&EV.delayed, 1);
	if (i < 8)
		EV.waited[i] = waited;
}

static void ev_deadline(void *ctx, const char *q)
{
	(void)ctx, (void)q;
	atomic_fetch_add(&EV.deadlines, 1);
}

static uint64_t seven_ms_per_retry(void *ctx, unsigned retry, uint64_t interval)
{
	cr_expect_eq(ctx, &R);
	cr_expect_eq(interval, 0);
	return retry * 7 * MS;
}

static uint64_t plus_one(void *ctx, uint64_t d, uint64_t prev)
{
	(void)ctx;
	(void)prev;
	return d + 1;
}

Test(retry, custom_backoff_jitter_and_the_metrics_events)
{
	static const blq_metrics_writer mw = {
		.queue_retry = ev_retry, .queue_delayed = ev_delayed, .queue_deadline = ev_deadline};
	memset(&EV, 0, sizeof(EV));
	R.fail_ids = 1;
	R.fail_until = 2;
	blq_config c = cfg(8, 1);
	c.max_retries = 2;
	c.backoff = BLQ_BACKOFF_CUSTOM;
	c.backoff_fn = seven_ms_per_retry;
	c.backoff_ctx = &R;
	c.jitter = BLQ_JITTER_CUSTOM;
	c.jitter_fn = plus_one;
	c.metrics = &mw;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&EV.retries) == 1, 2000));
	advance(q, 7 * MS + 1);
	cr_assert(TU_WAIT_FOR(atomic_load(&EV.retries) == 2, 2000));
	advance(q, 14 * MS + 1);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000));
	cr_expect_eq(EV.retry_delay[0], 7 * MS + 1);
	cr_expect_eq(EV.retry_delay[1], 14 * MS + 1);
	cr_expect_eq(atomic_load(&EV.delayed), 2);
	cr_expect_eq(EV.waited[0], 7 * MS + 1, "time waited in the timer");
	cr_expect_eq(EV.waited[1], 14 * MS + 1);

	/* The deadline event: an item delayed past its deadline. */
	blq_job j = {.payload = tu_item_new(5), .delay_ns = 1 * SEC, .deadline_ns = 2 * SEC};
	cr_assert_eq(blq_enqueue_job(q, &j), 0);
	advance(q, 3 * SEC);
	cr_assert(TU_WAIT_FOR(stats(q).expired == 1, 2000));
	cr_expect_eq(atomic_load(&EV.deadlines), 1);
	close_balanced(q);
}

/* ---- delays ------------------------------------------------------------ */

Test(retry, delays_are_respected_per_config_and_per_job)
{
	blq_config c = cfg(64, 2);
	c.delay_interval_ns = 5 * SEC;
	blq *q = must_new(&c);
	uint64_t t0 = fake_now(NULL);

	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0); /* the config's 5 s */
	for (uint64_t i = 3; i < 6; i++) {
		blq_job j = {.payload = tu_item_new(i), .delay_ns = 2 * SEC};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	cr_expect_eq(blq_size(q), 6);
	cr_expect_eq(stats(q).delayed, 6);
	const unsigned want[] = {0, 0, 3, 3, 3, 6}; /* processed after t0 + k s */
	for (unsigned k = 0; k <= 5; k++) {
		if (k > 0)
			advance(q, 1 * SEC);
		if (want[k] > 0)
			cr_assert(TU_WAIT_FOR(stats(q).processed == want[k], 2000), "at +%us", k);
		tu_sleep_us(20000);
		cr_expect_eq(stats(q).processed, want[k], "at +%us: none early", k);
	}
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t at;

		cr_assert_eq(calls_of(i, &at, NULL, 1), 1);
		cr_expect_geq(at - t0, i < 3 ? 5 * SEC : 2 * SEC, "item %llu started early",
			      (unsigned long long)i);
	}
	close_balanced(q);
}

/* The timer delivers due items in batches. When its due ring and the
 * rings fill partway through one, the timer waits for room; the items it
 * already pushed must have woken a worker first, or the sleeping workers
 * never make that room (a lost wake-up that hung retry_stress about once
 * in ten runs). 1100 items: more than the due ring (1024) and the ring (4)
 * hold. */
Test(retry, a_batch_that_fills_the_ring_midway_still_wakes_the_workers)
{
	blq_config c = cfg(4, 1);
	c.delay_interval_ns = 1 * SEC;
	c.timer_capacity = 2048;
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 1100; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	tu_sleep_us(50000); /* the worker is asleep on the empty ring by now */
	advance(q, 1 * SEC); /* 1100 items due at once */
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1100, 5000), "processed %llu of 1100",
		  (unsigned long long)stats(q).processed);
	close_balanced(q);
}

static tu_gate due_gate;

static int gated_rec_worker(void *ctx, void *payload, blq_task *t)
{
	tu_gate_pass(&due_gate);
	return rec_worker(ctx, payload, t);
}

/* A leaky queue (capacity 4, one gated worker) whose worker holds item 0,
 * whose ring is full with items 1-4, and whose timer has just delivered
 * @ndue delayed items (ids 100...) into its due ring. */
static blq *due_items_behind_a_full_ring(blq_discard *d, enum blq_leak_dir dir, unsigned ndue)
{
	blq_discard_init(d, tu_item_free);
	tu_gate_init(&due_gate);
	blq_config c = cfg(4, 1);
	c.worker = gated_rec_worker;
	c.dlq = blq_discard_enqueuer(d);
	c.leak_direction = dir;
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < ndue; i++) {
		blq_job j = {.payload = tu_item_new(100 + i), .delay_ns = 1 * SEC};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&due_gate.waiting) == 1, 2000), "the worker holds 0");
	for (uint64_t i = 1; i <= 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_expect_eq(stats(q).leaked, 0, "four fit the ring");
	advance(q, 1 * SEC); /* the delayed items come due, the ring is full */
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 0, 2000), "the timer delivered them");
	return q;
}

/* Due items wait in a ring of their own that the workers take from first:
 * a due retry or delayed item neither fights the producers for room in a
 * full queue nor waits behind it, and a leaky queue does not leak it for
 * finding the queue full. */
Test(retry, a_due_item_runs_ahead_of_a_full_queue_and_is_not_leaked)
{
	blq_discard d;
	blq *q = due_items_behind_a_full_ring(&d, BLQ_LEAK_REAR, 1);

	struct blq_stats s = stats(q);
	cr_expect_eq(s.leaked, 0, "a due item is not leaked for a full queue");
	cr_expect_eq(s.size, 5, "four in the ring, one due");
	tu_gate_open(&due_gate);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 6, 2000));
	cr_expect_eq(call_id(0), 0);
	cr_expect_eq(call_id(1), 100, "the due item runs next, ahead of the full ring");
	cr_expect_eq(call_id(2), 1);
	close_balanced(q);
	tu_gate_destroy(&due_gate);
}

/* A front leak makes room in the producers' rings, where the new item
 * goes: the due items waiting in the timer's ring are not evicted for it
 * (they free no room there). */
Test(retry, a_front_leak_does_not_evict_due_items)
{
	blq_discard d;
	blq *q = due_items_behind_a_full_ring(&d, BLQ_LEAK_FRONT, 3);

	cr_assert_eq(blq_enqueue(q, tu_item_new(5)), 0, "accepted: the oldest queued item leaks");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.leaked_front, 1, "one item made room");
	cr_expect_eq(s.leaked_rear, 0, "and the new one went in");
	cr_expect_eq(s.size, 7, "three due, four in the ring");
	tu_gate_open(&due_gate);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 8, 2000));
	for (uint64_t id = 100; id < 103; id++)
		cr_expect_eq(calls_of(id, NULL, NULL, 0), 1, "due item %llu ran", (unsigned long long)id);
	close_balanced(q);
	tu_gate_destroy(&due_gate);
}

Test(retry, a_long_delay_at_the_head_holds_up_nothing)
{
	blq_config c = cfg(1024, 2);
	blq *q = must_new(&c);

	blq_job j = {.payload = tu_item_new(9999), .delay_ns = 10 * SEC};
	cr_assert_eq(blq_enqueue_job(q, &j), 0);
	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1000, 5000),
		  "1000 undelayed jobs complete at once, behind a 10 s delay");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.delayed, 1);
	cr_expect_eq(s.size, 1);
	cr_expect_float_eq(blq_rate(q), 0.0, 1e-9, "a delayed item is not ready: no fill");
	cr_expect_eq(calls_of(9999, NULL, NULL, 0), 0);
	char json[1024];
	blq_status_json(q, json, sizeof(json));
	cr_expect(strstr(json, "\"size\":1,") != NULL && strstr(json, "\"delayed\":1,") != NULL,
		  "status: %s", json);
	advance(q, 10 * SEC);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1001, 2000));
	close_balanced(q);
}

/* The timer's FIFO lane takes items due no earlier than its last one, the
 * heap the rest; what comes out is in due order either way, ties in
 * enqueue order, also across the two (ids 0 and 5 both due at +5 s). */
Test(retry, the_timer_releases_in_due_order_ties_in_enqueue_order)
{
	blq_config c = cfg(64, 1); /* one worker: it runs them in ring order */
	blq *q = must_new(&c);
	static const unsigned delay_s[] = {5, 3, 7, 3, 1, 5, 9, 2};
	static const uint64_t want[] = {4, 7, 1, 3, 0, 5, 2, 6};

	for (uint64_t i = 0; i < 8; i++) {
		blq_job j = {.payload = tu_item_new(i), .delay_ns = delay_s[i] * SEC};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	advance(q, 10 * SEC); /* all due at once: one batch, in order */
	cr_assert(TU_WAIT_FOR(stats(q).processed == 8, 2000));
	for (unsigned i = 0; i < 8; i++) {
		cr_assert(atomic_load_explicit(&R.ready[i], memory_order_acquire));
		cr_expect_eq(R.id[i], want[i], "position %u: id %llu, want %llu", i,
			     (unsigned long long)R.id[i], (unsigned long long)want[i]);
	}
	close_balanced(q);
}

/* ---- deadlines with delays -------------------------------------------- */

Test(retry, a_delayed_item_past_its_deadline_expires_or_goes_to_the_dlq)
{
	for (int to_dlq = 0; to_dlq <= 1; to_dlq++) {
		setup();
		blq_discard d;
		blq_discard_init(&d, tu_item_free);
		blq_config c = cfg(8, 1);
		if (to_dlq) {
			c.dlq = blq_discard_enqueuer(&d);
			c.deadline_to_dlq = true;
		}
		blq *q = must_new(&c);
		blq_job late = {.payload = tu_item_new(1), .delay_ns = 1 * SEC, .deadline_ns = 2 * SEC};
		blq_job ok = {.payload = tu_item_new(2), .delay_ns = 1 * SEC, .deadline_ns = 5 * SEC};

		cr_assert_eq(blq_enqueue_job(q, &late), 0);
		cr_assert_eq(blq_enqueue_job(q, &ok), 0);
		advance(q, 3 * SEC); /* both due; the first one's deadline passed */
		cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000));
		struct blq_stats s = stats(q);
		cr_expect_eq(to_dlq ? s.leaked_deadline : s.expired, 1, "to_dlq %d", to_dlq);
		cr_expect_eq(calls_of(1, NULL, NULL, 0), 0, "never run");
		close_balanced(q);
		cr_expect_eq(atomic_load(&tu_freed), 2);
	}
}

/* ---- close with items in the timer ------------------------------------- */

static void *close_thread(void *arg)
{
	blq_close(arg);
	return NULL;
}

Test(retry, graceful_close_waits_for_the_timer)
{
	blq_config c = cfg(8, 2);
	c.delay_interval_ns = 5 * SEC;
	blq *q = must_new(&c);
	pthread_t t;

	for (uint64_t i = 0; i < 5; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	pthread_create(&t, NULL, close_thread, q);
	tu_sleep_us(50000);
	cr_expect_eq(stats(q).processed, 0);
	tu_item *late = tu_item_new(99);
	cr_expect_eq(blq_enqueue(q, late), BLQ_ECLOSED);
	tu_item_free(late);
	advance(q, 5 * SEC);
	pthread_join(t, NULL);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 5, "drained after coming due");
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

Test(retry, force_close_hands_the_timer_to_the_dlq_or_counts_it_lost)
{
	for (int leaky = 0; leaky <= 1; leaky++) {
		setup();
		blq_discard d;
		blq_discard_init(&d, tu_item_free);
		R.fail_ids = 2;
		R.fail_until = 100;
		blq_config c = cfg(8, 1);
		c.max_retries = 5;
		c.retry_interval_ns = 1 * SEC;
		if (leaky)
			c.dlq = blq_discard_enqueuer(&d);
		blq *q = must_new(&c);

		/* Two retries and three delayed items in the timer. */
		cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
		cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
		for (uint64_t i = 2; i < 5; i++) {
			blq_job j = {.payload = tu_item_new(i), .delay_ns = 60 * SEC};
			cr_assert_eq(blq_enqueue_job(q, &j), 0);
		}
		cr_assert(TU_WAIT_FOR(stats(q).delayed == 5, 2000));
		cr_assert_eq(blq_force_close(q), 0);
		struct blq_stats s = stats(q);
		cr_expect(tu_balanced(&s));
		cr_expect_eq(leaky ? s.leaked_closed : s.lost, 5, "leaky %d", leaky);
		cr_expect_eq(s.delayed, 0);
		cr_expect_eq(s.size, 0);
		cr_expect_eq(atomic_load(&tu_freed), 5);
		blq_free(q);
	}
}

/* blq_close_timeout keeps its limit even when the drain needs a rescued
 * worker: a balanced pool at zero threads, and a producer still inside
 * enqueue with a delayed job as the close begins (held there by the
 * clock, which it reads after its closed check). The close must force at
 * its limit, not wait 3 s for the item to come due. */
static _Atomic int held_in_clock, release_producer;
static _Thread_local int is_held_producer;

static uint64_t holding_clock(void *ctx)
{
	(void)ctx;
	if (is_held_producer && !atomic_load(&release_producer)) {
		atomic_store(&held_in_clock, 1);
		while (!atomic_load(&release_producer))
			tu_sleep_us(100);
	}
	return tu_now_ns();
}

static void *held_producer(void *arg)
{
	is_held_producer = 1;
	blq_job j = {.payload = tu_item_new(1), .delay_ns = 3 * SEC};
	int rc = blq_enqueue_job(arg, &j);
	if (rc != 0)
		tu_item_free(j.payload);
	return (void *)(intptr_t)rc;
}

static void *release_later(void *arg)
{
	(void)arg;
	tu_sleep_us(20000);
	atomic_store(&release_producer, 1);
	return NULL;
}

Test(retry, close_timeout_keeps_its_limit_when_a_rescue_is_needed)
{
	blq_config c = cfg(8, 0);
	c.workers_min = 0;
	c.workers_max = 2;
	c.clock.now_ns = holding_clock;
	blq *q = must_new(&c);
	pthread_t p, r;

	atomic_store(&held_in_clock, 0);
	atomic_store(&release_producer, 0);
	pthread_create(&p, NULL, held_producer, q);
	cr_assert(TU_WAIT_FOR(atomic_load(&held_in_clock), 2000));
	pthread_create(&r, NULL, release_later, NULL);
	uint64_t t0 = tu_now_ns();
	int rc = blq_close_timeout(q, 50 * MS);
	uint64_t took = tu_now_ns() - t0;
	void *prc;
	pthread_join(p, &prc);
	pthread_join(r, NULL);
	cr_expect(took < 1 * SEC, "close took %llu ms", (unsigned long long)(took / MS));
	tu_wait_unstuck(q);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	if ((intptr_t)prc == 0) { /* accepted: it had to be forced */
		cr_expect_eq(rc, BLQ_ETIMEDOUT);
		cr_expect_eq(s.lost, 1);
	}
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 1);
}

/* ---- a full timer follows the queue's rules -------------------------- */

static void *blocking_enqueue(void *arg)
{
	return (void *)(intptr_t)blq_enqueue(arg, tu_item_new(7));
}

/* A queue whose every item waits 5 s (fake) in a timer of 2, already
 * holding items 1 and 2; leaky: its DLQ is d. */
static blq *full_timer_queue(blq_discard *d, bool leaky)
{
	setup();
	blq_discard_init(d, tu_item_free);
	blq_config c = cfg(8, 1);
	c.delay_interval_ns = 5 * SEC;
	c.timer_capacity = 2;
	if (leaky)
		c.dlq = blq_discard_enqueuer(d);
	blq *q = must_new(&c);

	cr_assert_eq(blq_try_enqueue(q, tu_item_new(1)), 0);
	cr_assert_eq(blq_try_enqueue(q, tu_item_new(2)), 0);
	return q;
}

Test(retry, a_full_timer_blocks_refuses_or_leaks)
{
	for (int leaky = 0; leaky <= 1; leaky++) {
		blq_discard d;
		blq *q = full_timer_queue(&d, leaky);
		tu_item *x = tu_item_new(3);
		if (leaky) {
			cr_expect_eq(blq_try_enqueue(q, x), 0);
			cr_expect_eq(stats(q).leaked_rear, 1);
			advance(q, 5 * SEC);
		} else {
			cr_expect_eq(blq_try_enqueue(q, x), BLQ_EFULL);
			tu_item_free(x);
			pthread_t t;
			void *rc;
			pthread_create(&t, NULL, blocking_enqueue, q);
			tu_sleep_us(50000);
			cr_expect_eq(stats(q).delayed, 2, "the producer waits for room");
			advance(q, 5 * SEC); /* two come due: room */
			pthread_join(t, &rc);
			cr_expect_eq((intptr_t)rc, 0);
			advance(q, 5 * SEC);
		}
		cr_assert(TU_WAIT_FOR(stats(q).processed == (leaky ? 2u : 3u), 2000));
		close_balanced(q);
		cr_expect_eq(atomic_load(&tu_freed), leaky ? 3 : 4, "the refused one by the test");
	}
}

/* A blocking delayed enqueue of item 3 on a thread of its own: by
 * blq_enqueue (0), blq_enqueue_job (1) or blq_enqueue_batch (2). */
typedef struct delayed_producer {
	blq *q;
	int how;
	long rc;
	_Atomic int returned;
} delayed_producer;

static void *delayed_enqueue(void *arg)
{
	delayed_producer *p = arg;
	tu_item *x = tu_item_new(3);
	void *one[1] = {x};
	blq_job j = {.payload = x, .delay_ns = 5 * SEC};

	if (p->how == 0)
		p->rc = blq_enqueue(p->q, x);
	else if (p->how == 1)
		p->rc = blq_enqueue_job(p->q, &j);
	else
		p->rc = blq_enqueue_batch(p->q, one, 1) == 1 ? 0 : -1;
	if (p->rc != 0)
		tu_item_free(x);
	atomic_store(&p->returned, 1);
	return NULL;
}

Test(retry, a_full_timer_never_blocks_a_producer_of_a_leaky_queue)
{
	for (int how = 0; how <= 2; how++) {
		blq_discard d;
		blq *q = full_timer_queue(&d, true);
		delayed_producer p = {.q = q, .how = how};
		pthread_t t;
		pthread_create(&t, NULL, delayed_enqueue, &p);
		/* It leaks at once; the timer's items are 5 s (fake) from due,
		 * so a producer waiting for room would still be waiting. */
		bool returned = TU_WAIT_FOR(atomic_load(&p.returned), 2000);
		cr_expect(returned, "how %d: the blocking call waited for the timer's room", how);
		if (!returned)
			advance(q, 5 * SEC); /* let it go, to end the test cleanly */
		pthread_join(t, NULL);
		cr_expect_eq(p.rc, 0, "how %d", how);
		struct blq_stats s = stats(q);
		cr_expect_eq(s.leaked_rear, 1, "how %d: the new item leaks (rear)", how);
		cr_expect_eq(blq_discard_count(&d), 1, "how %d", how);
		advance(q, 5 * SEC);
		advance(q, 5 * SEC);
		cr_assert(TU_WAIT_FOR(stats(q).processed + stats(q).leaked_rear == 3, 2000));
		close_balanced(q);
		cr_expect_eq(atomic_load(&tu_freed), 3, "how %d", how);
	}
}

Test(retry, a_retry_finding_the_timer_full_skips_its_backoff)
{
	R.fail_ids = 3;
	R.fail_until = 1;
	blq_config c = cfg(8, 1);
	c.max_retries = 1;
	c.retry_interval_ns = 60 * SEC;
	c.timer_capacity = 1;
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	/* One retry fits the timer; the other two go straight back. */
	cr_assert(TU_WAIT_FOR(stats(q).processed == 2, 2000));
	cr_expect_eq(stats(q).delayed, 1);
	advance(q, 60 * SEC);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 3, 2000));
	close_balanced(q);
}

/* ---- workers serve due items ------------------------------------------ */

static _Atomic int gate_open;
static _Atomic unsigned served_by_worker, served_by_thread;
/* The test's clock as the workers see it, and as the timer thread does:
 * the thread sees a move only with advance_split's kick, so whatever is
 * served before that was served by a worker. */
static _Atomic uint64_t workers_ns, timer_ns;
static _Atomic uint64_t ran_at[3];

static bool on_timer_thread(void)
{
	char name[16] = "";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	return strcmp(name, "blq-timer") == 0;
}

static uint64_t split_now(void *ctx)
{
	(void)ctx;
	return atomic_load(on_timer_thread() ? &timer_ns : &workers_ns);
}

static void advance_split(blq *q, uint64_t ns)
{
	atomic_fetch_add(&workers_ns, ns);
	atomic_fetch_add(&timer_ns, ns);
	blq__timer_kick(q);
}

/* queue_delayed runs on whichever thread moved the item out of the timer. */
static void note_server(void *ctx, const char *q, uint64_t waited)
{
	(void)ctx, (void)q, (void)waited;
	atomic_fetch_add(on_timer_thread() ? &served_by_thread : &served_by_worker, 1);
}

/* Ids 3r (delayed jobs) run once, recording when; the others wait for
 * the gate, then fail their first attempt (a retry, with a backoff). */
static int gated_worker(void *ctx, void *payload, blq_task *t)
{
	tu_item *it = payload;

	(void)ctx;
	if (it->id % 3 == 0) {
		atomic_store(&ran_at[it->id / 3], split_now(NULL));
	} else if (blq_task_attempt(t) == 1) {
		while (!atomic_load(&gate_open))
			sched_yield();
		return -1;
	}
	tu_item_free(payload);
	return 0;
}

/* A worker that retries after the head of the timer came due moves it
 * into the queue itself (blq__timer_assist). Each round: job 3r is
 * delayed 1 s; the workers' clock passes its due time while the timer
 * thread's does not; jobs 3r+1 and 3r+2 fail at the gate, and their
 * retries serve job 3r, never before its due time. (Two retries: one
 * could find the mutex taken by the thread's 50 ms look.) */
Test(retry, a_retrying_worker_serves_the_due_items_itself)
{
	blq_metrics_writer mw = {.queue_delayed = note_server};
	blq_config c = cfg(256, 2);
	c.worker = gated_worker;
	c.max_retries = 1;
	c.retry_interval_ns = 1 * SEC;
	c.metrics = &mw;
	c.clock.now_ns = split_now;
	atomic_store(&workers_ns, 1000 * SEC);
	atomic_store(&timer_ns, 1000 * SEC);
	atomic_store(&served_by_worker, 0);
	atomic_store(&served_by_thread, 0);
	blq *q = must_new(&c);

	for (uint64_t r = 0; r < 3; r++) {
		uint64_t due = atomic_load(&workers_ns) + 1 * SEC;
		blq_job j = {.payload = tu_item_new(3 * r), .delay_ns = 1 * SEC};

		atomic_store(&gate_open, 0);
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
		cr_assert_eq(blq_enqueue(q, tu_item_new(3 * r + 1)), 0);
		cr_assert_eq(blq_enqueue(q, tu_item_new(3 * r + 2)), 0);
		atomic_fetch_add(&workers_ns, 2 * SEC); /* the thread does not see it */
		/* Let the thread, woken for the new head, go back to sleep:
		 * a worker serves only when the mutex is free. */
		tu_sleep_us(10000);
		atomic_store(&gate_open, 1);
		cr_assert(TU_WAIT_FOR(stats(q).processed == 3 * r + 1, 2000),
			  "job %llu served", (unsigned long long)(3 * r));
		/* The event comes after the push: wait for it too. */
		cr_assert(TU_WAIT_FOR(atomic_load(&served_by_worker) +
					      atomic_load(&served_by_thread) == 3 * r + 1,
				      2000));
		cr_expect_eq(atomic_load(&served_by_worker), r + 1, "round %llu",
			     (unsigned long long)r);
		cr_expect_geq(atomic_load(&ran_at[r]), due, "job %llu ran early",
			      (unsigned long long)(3 * r));
		/* The two retries, with both clocks together again: the thread. */
		cr_assert(TU_WAIT_FOR(stats(q).delayed == 2, 2000));
		atomic_store(&timer_ns, atomic_load(&workers_ns));
		advance_split(q, 1 * SEC);
		cr_assert(TU_WAIT_FOR(stats(q).processed == 3 * r + 3, 2000));
	}
	cr_expect_eq(atomic_load(&served_by_worker) + atomic_load(&served_by_thread), 9);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 9);
}

/* Four workers retry at once: most retries enter the timer through the
 * workers' own inboxes, without its lock (inbox.c). timer_capacity must
 * still hold exactly, and every retry waits its full backoff. */
Test(retry, retries_from_many_workers_keep_timer_capacity_and_their_time)
{
	for (int leaky = 0; leaky <= 1; leaky++) {
		setup();
		R.fail_ids = 300; /* ids 0..299 fail their first attempt */
		R.fail_until = 1;
		blq_discard d;
		blq_discard_init(&d, tu_item_free);
		blq_config c = cfg(1024, 4);
		c.max_retries = 1;
		c.retry_interval_ns = 1 * SEC;
		c.timer_capacity = 100;
		if (leaky)
			c.dlq = blq_discard_enqueuer(&d);
		blq *q = must_new(&c);

		/* The first retry starts the timer's thread (the locked path). */
		cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
		cr_assert(TU_WAIT_FOR(stats(q).delayed == 1, 2000));
		for (uint64_t i = 1; i < 400; i++)
			cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
		/* 100 retries wait; the other 200 found the timer full: run again
		 * at once (blocking queue) or leaked as failed (leaky queue). */
		cr_assert(TU_WAIT_FOR(stats(q).processed + stats(q).leaked_failed == 300, 5000));
		tu_sleep_us(20000);
		struct blq_stats s = stats(q);
		cr_expect_eq(s.delayed, 100, "timer_capacity 100, leaky %d", leaky);
		cr_expect_eq(s.size, 100);
		cr_expect_eq(s.leaked_failed, leaky ? 200u : 0u);
		cr_expect_eq(s.retried, leaky ? 100u : 300u);
		advance(q, 1 * SEC - 1);
		tu_sleep_us(20000);
		cr_expect_eq(stats(q).processed, leaky ? 100u : 300u, "a retry ran early");
		advance(q, 1);
		cr_assert(TU_WAIT_FOR(stats(q).processed == (leaky ? 200u : 400u), 2000));
		cr_expect_eq(stats(q).delayed, 0);
		close_balanced(q);
		cr_expect_eq(atomic_load(&tu_freed), 400);
	}
}

/* ---- task timeouts and cancellation ------------------------------------ */

static _Atomic int in_long; /* the long worker is running */
static _Atomic int saw_timeout;

static int cooperative(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	if (blq_task_attempt(t) == 1) {
		cr_expect_not(blq_task_cancelled(t));
		cr_expect(blq_task_timeout_at_ns(t) != 0);
		atomic_store(&in_long, 1);
		uint64_t end = tu_now_ns() + 10 * SEC; /* a 10 s task, polling */
		while (!blq_task_cancelled(t) && tu_now_ns() < end)
			tu_sleep_us(500);
		atomic_store(&saw_timeout, blq_task_timed_out(t));
		return 0; /* it says "done", but too late: still a failure */
	}
	tu_item_free(payload);
	return 0;
}

Test(retry, a_timeout_raises_the_token_and_the_attempt_fails_then_retries)
{
	for (unsigned retries = 0; retries <= 1; retries++) {
		setup();
		atomic_store(&in_long, 0);
		atomic_store(&saw_timeout, 0);
		blq_config c = cfg(8, 1);
		c.worker = cooperative;
		c.timeout_ns = 1 * SEC;
		c.max_retries = retries;
		blq *q = must_new(&c);
		uint64_t t0 = tu_now_ns();

		cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&in_long), 2000));
		atomic_fetch_add(&fake_ns, 2 * SEC); /* past the timeout */
		cr_assert(TU_WAIT_FOR(stats(q).timed_out == 1, 2000));
		cr_expect(tu_now_ns() - t0 < 2 * SEC, "the worker stopped on the token");
		/* Since 0.6 the watchdog may count the timeout at the limit
		 * before the worker saw its token (late.c): wait for it. */
		cr_expect(TU_WAIT_FOR(atomic_load(&saw_timeout), 2000));
		cr_assert(TU_WAIT_FOR(stats(q).processed + stats(q).failed == 1, 2000));
		struct blq_stats s = stats(q);
		cr_expect_eq(s.retried, retries);
		cr_expect_eq(s.processed, retries, "retried: the second attempt succeeds");
		cr_expect_eq(s.failed, 1 - retries, "no retry: failed with reason timeout");
		close_balanced(q);
		cr_expect_eq(atomic_load(&tu_freed), 1);
	}
}

static int until_cancelled(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)payload;
	atomic_store(&in_long, 1);
	uint64_t end = tu_now_ns() + 10 * SEC;
	while (!blq_task_cancelled(t) && tu_now_ns() < end)
		tu_sleep_us(1000);
	return blq_task_cancelled(t) ? -1 : 0;
}

Test(retry, force_close_cancels_a_cooperative_ten_second_worker_at_once)
{
	atomic_store(&in_long, 0);
	blq_config c = cfg(8, 1);
	c.worker = until_cancelled;
	c.clock.now_ns = NULL; /* real time */
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&in_long), 2000));
	uint64_t t0 = tu_now_ns();
	cr_assert_eq(blq_force_close(q), 0);
	uint64_t took = tu_now_ns() - t0;
	cr_expect(took < 500 * MS, "force close took %llu ms", (unsigned long long)(took / MS));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.failed, 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 1);
}

/* ---- enqueue and wait ----------------------------------------------- */

static int by_id(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;

	switch (it->id) {
	case 1: /* fails */
		return -1;
	case 2: /* runs past its timeout, is told, stops */
		atomic_fetch_add(&fake_ns, 5 * SEC);
		cr_expect(blq_task_cancelled(t));
		return 0; /* too late: the queue keeps the payload */
	case 3: /* runs past its timeout, never asks, completes */
		atomic_fetch_add(&fake_ns, 5 * SEC);
		tu_item_free(payload);
		return 0;
	default:
		tu_item_free(payload);
		return 0;
	}
}

typedef struct later {
	blq *q;
	int what; /* 0: advance 10 s; 1: force close */
} later;

static void *do_later(void *arg)
{
	later *l = arg;

	tu_sleep_us(30000);
	if (l->what == 0)
		advance(l->q, 10 * SEC);
	else
		blq_force_close(l->q);
	return NULL;
}

static enum blq_outcome wait_job(blq *q, blq_job j, int later_what)
{
	enum blq_outcome o = 0;
	pthread_t t;
	later l = {q, later_what};

	if (later_what >= 0)
		pthread_create(&t, NULL, do_later, &l);
	int rc = blq_enqueue_wait(q, &j, UINT64_MAX, &o);
	if (later_what >= 0)
		pthread_join(t, NULL);
	cr_expect_eq(rc, 0, "blq_enqueue_wait: %s", blq_strerror(rc));
	return o;
}

Test(retry, enqueue_wait_returns_each_outcome)
{
	blq_discard d;
	blq_discard_init(&d, tu_item_free);
	blq_config c = cfg(8, 1);
	c.worker = by_id;
	blq *q = must_new(&c);
	blq_config cl = c;
	cl.name = "leaky";
	cl.dlq = blq_discard_enqueuer(&d);
	cl.fail_to_dlq = true;
	blq *ql = must_new(&cl);

	cr_expect_eq(wait_job(q, (blq_job){.payload = tu_item_new(0)}, -1), BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(wait_job(q, (blq_job){.payload = tu_item_new(1)}, -1), BLQ_OUTCOME_FAILED);
	cr_expect_eq(wait_job(q, (blq_job){.payload = tu_item_new(2), .timeout_ns = 1 * SEC}, -1),
		     BLQ_OUTCOME_TIMED_OUT);
	cr_expect_eq(wait_job(q, (blq_job){.payload = tu_item_new(3), .timeout_ns = 1 * SEC}, -1),
		     BLQ_OUTCOME_PROCESSED, "late but done, never told: the worker kept it");
	cr_expect_eq(wait_job(ql, (blq_job){.payload = tu_item_new(1)}, -1), BLQ_OUTCOME_LEAKED);
	cr_expect_eq(wait_job(q,
			      (blq_job){.payload = tu_item_new(0), .delay_ns = 1 * SEC,
					.deadline_ns = 2 * SEC},
			      0),
		     BLQ_OUTCOME_EXPIRED);
	cr_expect_str_eq(blq_outcome_name(BLQ_OUTCOME_EXPIRED), "expired");

	/* A wait limit: the caller gives up, the item still ends later. */
	enum blq_outcome o = 0;
	blq_job j = {.payload = tu_item_new(0), .delay_ns = 60 * SEC};
	cr_expect_eq(blq_enqueue_wait(q, &j, 20 * MS, &o), BLQ_ETIMEDOUT);
	cr_expect_eq(o, 0);

	/* Lost: forced while it waits in the timer, no DLQ. */
	cr_expect_eq(wait_job(q, (blq_job){.payload = tu_item_new(0), .delay_ns = 60 * SEC}, 1),
		     BLQ_OUTCOME_LOST);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(s.lost, 2, "the abandoned wait's item and the forced one");
	cr_expect_eq(s.expired, 1);
	cr_expect_eq(s.failed, 2);
	cr_expect_eq(s.timed_out, 1);
	j = (blq_job){.payload = tu_item_new(0)};
	cr_expect_eq(blq_enqueue_wait(q, &j, 0, &o), BLQ_ECLOSED, "closed: refused, caller owns it");
	tu_item_free(j.payload);
	blq_free(q);
	close_balanced(ql);
}
