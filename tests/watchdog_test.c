/*
 * Time limits that hold against callbacks that ignore their token (seed
 * 000): the watchdog gives an attempt up at its limit, detaches its thread
 * and starts a replacement (bounded by the spare slots), the attempt counts
 * as timed out whatever the callback returns unless it claimed the payload
 * first; and a close with a time limit returns at its limit, leaving the
 * callbacks it cannot wait for running (blq_free waits for them).
 *
 * The attempt limits run on a fake clock, moved with advance() (which
 * kicks the timer and the watchdog, as the tests' clocks do elsewhere);
 * close limits are on CLOCK_MONOTONIC, so those tests measure real time.
 * The worker holds items with an odd id in a gate, ignoring its token.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

void blq__timer_kick(blq *q);

#define MS 1000000ull

static tu_gate gate;
static _Atomic int claims_refused;

static void advance(blq *q, uint64_t ns)
{
	atomic_fetch_add(&tu_mono_ns, ns);
	blq__timer_kick(q);
}

/* Odd ids wait in the gate on their first attempt, token or not; every
 * item claims its payload before freeing it, and gives it back (returning
 * 0 all the same) when the claim is refused. */
static int stubborn(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;
	if (it->id % 2 == 1 && blq_task_attempt(t) == 1)
		tu_gate_pass(&gate);
	if (!blq_task_claim(t)) {
		atomic_fetch_add(&claims_refused, 1);
		return 0; /* given up: the queue has it, whatever we return */
	}
	tu_item_free(payload);
	return 0;
}

/* Item 2 claims first, then waits in the gate: past its limit it is still
 * the worker's. */
static int claims_then_waits(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	cr_expect(blq_task_claim(t));
	cr_expect(blq_task_claim(t), "claiming twice is fine");
	tu_gate_pass(&gate);
	cr_expect(!blq_task_timed_out(t), "claimed: the attempt is the worker's");
	tu_item_free(payload);
	return 0;
}

static void setup(void)
{
	tu_gate_init(&gate);
	atomic_store(&claims_refused, 0);
	atomic_store(&tu_freed, 0);
}

TestSuite(watchdog, .init = setup, .timeout = 30);

static blq_config cfg(unsigned workers)
{
	blq_config c = {.name = "wd", .capacity = 8, .workers = workers, .worker = stubborn,
			.item_free = tu_item_free};
	c.clock.now_ns = tu_fake_mono;
	return c;
}

static void enqueue_timed(blq *q, uint64_t id, uint64_t timeout)
{
	blq_job j = {.payload = tu_item_new(id), .timeout_ns = timeout};
	cr_assert_eq(blq_enqueue_job(q, &j), 0);
}

/* Threads of this process named blq-watchdog. */
static unsigned watchdog_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], name[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof(name), f) != NULL && strncmp(name, "blq-watchdog", 12) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* One worker, held past its item's limit: the next item runs on a
 * replacement while the late callback is still inside; the late attempt
 * times out at the limit although it returns 0 later, and the queue frees
 * its payload once, after the return. */
Test(watchdog, a_late_callback_is_given_up_and_a_replacement_serves_the_queue)
{
	blq_config c = cfg(1);
	blq *q = must_new(&c);

	enqueue_timed(q, 1, 30 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	tu_sleep_us(20000);
	cr_expect_eq(stats(q).processed, 0, "one worker, held: nothing else runs");
	cr_expect_eq(stats(q).workers_stuck, 0);

	advance(q, 30 * MS);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000), "the replacement ran item 2");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_stuck, 1);
	cr_expect_eq(s.workers_overrunning, 1);
	cr_expect_eq(s.workers_active, 1, "the pool keeps its size");
	cr_expect_eq(s.threads_started, 2);
	/* Since 0.6 (#34 item 1) the late attempt ends at its limit; its
	 * payload is freed only when the callback returns. */
	cr_expect_eq(s.timed_out, 1, "counted at the limit");
	cr_expect_eq(s.failed, 1, "ended at the limit");
	cr_expect_eq(atomic_load(&tu_freed), 1, "item 2 only: item 1's payload is still lent");

	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 0, 2000));
	cr_assert_eq(blq_close(q), 0);
	s = stats(q);
	cr_expect_eq(atomic_load(&claims_refused), 1);
	cr_expect_eq(s.timed_out, 1);
	cr_expect_eq(s.failed, 1, "timed out although it returned 0");
	cr_expect_eq(s.processed, 1);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 2, "each payload freed once");
	blq_free(q);
}

/* The given-up attempt is retried like any timed-out one. */
Test(watchdog, a_given_up_attempt_is_retried)
{
	blq_config c = cfg(1);
	c.max_retries = 1;
	blq *q = must_new(&c);

	enqueue_timed(q, 1, 30 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	advance(q, 31 * MS);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 1, 2000));
	cr_expect_eq(stats(q).retried, 0, "the item is the callback's until it returns");
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000), "then retried, and processed");
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.retried, 1);
	cr_expect_eq(s.timed_out, 1);
	cr_expect_eq(s.failed, 0);
	cr_expect_eq(atomic_load(&claims_refused), 1, "the late first attempt's claim");
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 1, "the retry's worker freed it, nobody else");
	blq_free(q);
}

/* At the bound (as many overrunning threads as the ceiling) the late
 * worker is kept: with one worker, the second late item holds the
 * replacement and the queue waits for them. */
Test(watchdog, past_the_bound_the_late_worker_is_kept)
{
	blq_config c = cfg(1);
	blq *q = must_new(&c);

	enqueue_timed(q, 1, 30 * MS);
	enqueue_timed(q, 3, 30 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	advance(q, 31 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 2, 2000), "item 3 on the replacement");
	advance(q, 31 * MS);
	cr_assert(TU_WAIT_FOR(stats(q).workers_overrunning == 2, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(4)), 0);
	tu_sleep_us(50000);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_stuck, 1, "no spare slot for a second replacement");
	cr_expect_eq(s.threads_started, 2);
	cr_expect_eq(s.processed, 0, "both threads are held");

	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	s = stats(q);
	cr_expect_eq(s.timed_out, 2, "both given up");
	cr_expect_eq(s.failed, 2);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.workers_stuck, 0);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 3);
	blq_free(q);
}

/* A worker that claimed its payload before the limit keeps it: the thread
 * is still given up (it is late) but the item is processed. */
Test(watchdog, a_claim_before_the_limit_keeps_the_item)
{
	blq_config c = cfg(1);
	c.worker = claims_then_waits;
	blq *q = must_new(&c);

	enqueue_timed(q, 2, 30 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	advance(q, 31 * MS);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 1, 2000));
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.timed_out, 0);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 1);
	blq_free(q);
}

/* Short items: each sleeps 5 ms (real time) and notes how many of them
 * run at once. */
static _Atomic int short_running, short_most;

static int stuck_or_short(void *ctx, void *payload, blq_task *t)
{
	tu_item *it = payload;

	if (it->id == 1)
		return stubborn(ctx, payload, t);
	int now = atomic_fetch_add(&short_running, 1) + 1;
	for (int m = atomic_load(&short_most); now > m;)
		if (atomic_compare_exchange_weak(&short_most, &m, now))
			break;
	tu_sleep_us(5000);
	atomic_fetch_sub(&short_running, 1);
	tu_item_free(payload);
	return 0;
}

/* A pool of 2 with one callback stuck past its limit still serves a
 * stream of short items with 2 workers: two at once, in about half the
 * time one worker needs. */
Test(watchdog, a_pool_of_two_with_a_stuck_callback_serves_at_the_rate_of_two)
{
	blq_config c = cfg(2);
	c.capacity = 64;
	c.worker = stuck_or_short;
	blq *q = must_new(&c);
	atomic_store(&short_running, 0);
	atomic_store(&short_most, 0);

	enqueue_timed(q, 1, 30 * MS);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	advance(q, 31 * MS);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 1, 2000));
	uint64_t t0 = tu_now_ns();
	for (uint64_t i = 0; i < 40; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(100 + 2 * i)), 0);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 40, 5000));
	uint64_t took = tu_now_ns() - t0;
	struct blq_stats s = stats(q);
	cr_expect_eq(atomic_load(&short_most), 2, "two short items ran at once");
	cr_expect_eq(s.workers_active, 2);
	cr_expect_eq(s.workers_stuck, 1);
	cr_expect(took < 40 * 5 * MS, "40 items of 5 ms took %llu ms: one worker's time",
		  (unsigned long long)(took / MS));
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	s = stats(q);
	cr_expect_eq(s.timed_out, 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

/* The watchdog exists only for queues whose items have limits. */
Test(watchdog, started_by_the_first_attempt_with_a_limit_only)
{
	blq_config c = cfg(2);
	blq *q = must_new(&c);
	unsigned before = watchdog_threads();

	for (uint64_t i = 0; i < 20; i += 2)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect_eq(watchdog_threads(), before, "no limits: no watchdog");
	enqueue_timed(q, 0, 30 * MS);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect(TU_WAIT_FOR(watchdog_threads() == before + 1, 2000), "started (it names itself)");
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(watchdog_threads(), before, "joined at close");
	blq_free(q);
}

/* ---- close limits that hold (real time: CLOCK_MONOTONIC) ---------- */

typedef struct freer {
	blq *q;
	_Atomic int done;
} freer;

static void *free_it(void *arg)
{
	freer *f = arg;
	blq_free(f->q);
	atomic_store(&f->done, 1);
	return NULL;
}

static uint64_t close_and_time(blq *q, int soft, int *rc)
{
	uint64_t t0 = tu_now_ns();
	*rc = soft ? blq_close_soft_timeout(q, 100 * MS) : blq_close_timeout(q, 100 * MS);
	return tu_now_ns() - t0;
}

/* A callback that never looks at its token: the close returns at its
 * limit (plus the grace), reports the callback stuck, and its item reaches
 * its outcome when it returns; blq_free waits for it. */
static void close_limit_holds(int soft)
{
	blq_config c = {.name = soft ? "soft" : "light", .capacity = 8, .workers = 1,
			.worker = stubborn, .item_free = tu_item_free};
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(4)), 0);
	int rc;
	uint64_t took = close_and_time(q, soft, &rc);
	cr_expect_eq(rc, BLQ_ETIMEDOUT);
	cr_expect(took >= 100 * MS, "returned before its limit: %llu ns", (unsigned long long)took);
	cr_expect(took < 100 * MS + 20 * MS, "the limit did not hold: %llu ns",
		  (unsigned long long)took);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_stuck, 1);
	cr_expect_eq(s.workers_busy, 1);
	cr_expect_eq(s.lost, 2, "the queued items, at the Hard turn (no DLQ)");
	cr_expect_eq(s.processed, 0);
	char buf[2048];
	cr_expect(blq_status_json(q, buf, sizeof(buf)) > 0 && strstr(buf, "\"stuck\":1") != NULL,
		  "%s", buf);

	freer f = {.q = q};
	pthread_t t;
	pthread_create(&t, NULL, free_it, &f);
	tu_sleep_us(50000);
	cr_expect_eq(atomic_load(&f.done), 0, "blq_free waits for the stuck callback");
	s = stats(q);
	cr_expect_eq(s.in, s.processed + s.failed + s.leaked + s.expired + s.lost + 1,
		     "the running item is in no counter yet");
	tu_gate_open(&gate);
	pthread_join(t, NULL);
	cr_expect_eq(atomic_load(&tu_freed), 3, "each payload freed once");
	cr_expect_eq(atomic_load(&claims_refused), 0, "no limit of its own: it claimed");
}

Test(watchdog, a_light_close_limit_holds_against_a_callback_that_ignores_its_token)
{
	close_limit_holds(0);
}

Test(watchdog, a_soft_close_limit_holds_against_a_callback_that_ignores_its_token)
{
	close_limit_holds(1);
}

/* After the callback returns, the counters are final and add up. */
Test(watchdog, the_stuck_item_reaches_its_outcome_when_its_callback_returns)
{
	blq_config c = {.name = "late", .capacity = 8, .workers = 2, .worker = stubborn,
			.item_free = tu_item_free};
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(3)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 2, 2000));
	cr_expect_eq(blq_close_timeout(q, 20 * MS), BLQ_ETIMEDOUT);
	cr_expect_eq(stats(q).workers_stuck, 2);
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 0, 2000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 2, "Hard: the return value decides");
	cr_expect(tu_balanced(&s));
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 2);
}
