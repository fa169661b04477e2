/*
 * An attempt given up at its time limit ends at the limit (late.c, issue
 * #34 item 1): the waiter, the hooks, the handle and the counters learn it
 * then, while the callback is still held in a gate; the payload is freed
 * only after the callback returns; a retry or a DLQ hand-over goes on at
 * the limit only on a copy (item_dup). The real clock: the watchdog sleeps
 * until the limit on CLOCK_MONOTONIC.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <blq/blq.h>

#include "suite_util.h"

#define MS 1000000ull
/* The limit of every timed attempt here, and how late the waiter may hear
 * of it on a busy 2-CPU host under a sanitizer (the watchdog wakes at the
 * limit; the rest is scheduling). The callbacks stay in the gate for as
 * long as the test wants: without the feature every wait below would run
 * into its 10 s bound. */
#define LIMIT (30 * MS)
#define SLACK (250 * MS)

static tu_gate gate;
/* The payload each attempt ran on, by attempt number (1, 2). */
static void *_Atomic ran_on[3];
static _Atomic unsigned outcomes[BLQ_OUTCOME_CANCELLED + 1];
static _Atomic unsigned dups;

static void setup(void)
{
	tu_gate_init(&gate);
	atomic_store(&tu_freed, 0);
	atomic_store(&dups, 0);
	for (unsigned i = 0; i < 3; i++)
		atomic_store(&ran_on[i], NULL);
	for (unsigned i = 0; i <= BLQ_OUTCOME_CANCELLED; i++)
		atomic_store(&outcomes[i], 0);
}

static void teardown(void)
{
	tu_gate_open(&gate); /* a failed assertion must not leave a worker inside */
}

TestSuite(late, .init = setup, .fini = teardown, .timeout = 60);

/* The late callback is in the gate, or on its way there: on a busy host
 * it may be preempted past its own limit before it gets there. */
static bool still_inside(void)
{
	return TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000);
}

/* The first attempt waits in the gate, ignoring its token; a later one
 * succeeds at once and keeps the payload it was given (claimed, freed). */
static int first_attempt_stuck(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	unsigned a = blq_task_attempt(t);

	if (a < 3)
		atomic_store(&ran_on[a], payload);
	if (a == 1) {
		tu_gate_pass(&gate);
		return 0; /* too late: given up, whatever it returns */
	}
	cr_expect(blq_task_claim(t));
	tu_item_free(payload);
	return 0;
}

static void *item_dup(const void *payload)
{
	const tu_item *it = payload;

	atomic_fetch_add(&dups, 1);
	return tu_item_new(it->id);
}

static void count_outcome(void *ctx, void *payload, enum blq_outcome o)
{
	(void)ctx;
	(void)payload;
	atomic_fetch_add(&outcomes[o], 1);
}

static blq_config cfg(void)
{
	blq_config c = {.name = "late", .capacity = 8, .workers = 2, .worker = first_attempt_stuck,
			.item_free = tu_item_free, .timeout_ns = LIMIT};
	return c;
}

/* Open the gate, wait for the late callback to return, close and free. */
static struct blq_stats finish(blq *q)
{
	tu_gate_open(&gate);
	cr_assert(tu_wait_unstuck(q));
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	return s;
}

Test(late, the_waiter_hears_of_the_timeout_at_the_limit)
{
	blq_config c = cfg();
	blq *q = must_new(&c);
	blq_job j = {.payload = tu_item_new(1)};
	blq_wait_result r;

	uint64_t t0 = tu_now_ns();
	cr_assert_eq(blq_enqueue_wait_result(q, &j, 10000 * MS, &r), 0);
	uint64_t took = tu_now_ns() - t0;
	cr_expect(still_inside(), "the callback is still inside");
	cr_expect_eq(r.outcome, BLQ_OUTCOME_TIMED_OUT);
	cr_expect_eq(r.worker_rc, BLQ_ETIMEDOUT, "no return code yet: the limit's");
	cr_expect_eq(r.attempts, 1);
	cr_expect(took >= LIMIT && took < LIMIT + SLACK, "heard after %llu ms",
		  (unsigned long long)(took / MS));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.timed_out, 1);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(atomic_load(&tu_freed), 0, "the late callback may still read it");

	s = finish(q);
	cr_expect_eq(atomic_load(&tu_freed), 1, "freed once, after the return");
	cr_expect_eq(s.failed, 1, "counted once");
}

Test(late, the_hooks_and_the_handle_learn_it_at_the_limit)
{
	blq_config c = cfg();
	c.on_done = (blq_done){count_outcome, NULL};
	blq *q = must_new(&c);
	blq_done job_hook = {count_outcome, NULL};
	blq_job j = {.payload = tu_item_new(1), .done = &job_hook};
	blq_handle *h;

	cr_assert_eq(blq_enqueue_job_handle(q, &j, &h), 0);
	/* The job's hook runs, then the handle ends, then on_done runs:
	 * wait for the last one. */
	cr_assert(TU_WAIT_FOR(atomic_load(&outcomes[BLQ_OUTCOME_TIMED_OUT]) == 2, 2000),
		  "the job's and on_done");
	cr_expect(still_inside(), "the callback is still inside");
	cr_expect_eq(blq_handle_state(h), BLQ_HANDLE_ENDED);
	cr_expect_eq(blq_handle_outcome(h), BLQ_OUTCOME_TIMED_OUT);
	cr_expect_eq(blq_cancel(h), BLQ_EFINISHED, "ended: nothing to cancel");
	cr_expect_eq(atomic_load(&tu_freed), 0);
	blq_handle_release(h);

	finish(q);
	cr_expect_eq(atomic_load(&tu_freed), 1);
	cr_expect_eq(atomic_load(&outcomes[BLQ_OUTCOME_TIMED_OUT]), 2, "no second outcome");
}

/* A hook that hears the timeout lets the late callback return, and gives
 * its worker the time to go back to the queue and sleep there before it
 * returns (it runs on the watchdog's thread). */
static void release_on_timeout(void *ctx, void *payload, enum blq_outcome o)
{
	(void)ctx;
	(void)payload;
	if (o == BLQ_OUTCOME_TIMED_OUT) {
		tu_gate_open(&gate);
		tu_sleep_us(50000);
	}
	atomic_fetch_add(&outcomes[o], 1); /* after: the test waits for the return */
}

/* The outcome is told once the late thread is detached (told to stop), so
 * a callback let go by whoever heard of it ends its thread at once. Told
 * first (as built before fec6aeb), the thread went back to the queue, slept
 * there, and was detached asleep: counted stuck until the next push. */
Test(late, a_callback_let_go_on_its_timeout_ends_its_thread)
{
	blq_config c = cfg();
	c.on_done = (blq_done){release_on_timeout, NULL};
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&outcomes[BLQ_OUTCOME_TIMED_OUT]) == 1, 2000));
	tu_sleep_us(100000); /* past the watchdog's detach, in either order */
	cr_expect(TU_WAIT_FOR(stats(q).workers_stuck == 0, 2000),
		  "the late thread let go is still counted stuck");
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(s.timed_out, 1);
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 1);
}

/* blq_cancel reached the running attempt, which ignores it: at the limit
 * the item ends cancelled, not at the return. */
Test(late, a_cancelled_late_attempt_ends_cancelled_at_the_limit)
{
	blq_config c = cfg();
	c.max_retries = 3;
	c.timeout_ns = 300 * MS; /* time for the cancel to land first */
	blq *q = must_new(&c);
	blq_job j = {.payload = tu_item_new(1)};
	blq_handle *h;

	cr_assert_eq(blq_enqueue_job_handle(q, &j, &h), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_cancel(h), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_state(h) == BLQ_HANDLE_ENDED, 2000));
	cr_expect_eq(blq_handle_outcome(h), BLQ_OUTCOME_CANCELLED);
	cr_expect_eq(stats(q).retried, 0, "cancelled: no retry");
	cr_expect_eq(atomic_load(&tu_freed), 0);
	blq_handle_release(h);

	struct blq_stats s = finish(q);
	cr_expect_eq(s.cancelled, 1);
	cr_expect_eq(atomic_load(&tu_freed), 1);
}

Test(late, a_retry_starts_at_the_limit_on_a_copy)
{
	blq_config c = cfg();
	c.max_retries = 1;
	c.item_dup = item_dup;
	blq *q = must_new(&c);
	tu_item *orig = tu_item_new(7);
	blq_job j = {.payload = orig};
	blq_wait_result r;

	cr_assert_eq(blq_enqueue_wait_result(q, &j, 10000 * MS, &r), 0);
	cr_expect(still_inside(), "attempt 1 is still inside");
	cr_expect_eq(r.outcome, BLQ_OUTCOME_PROCESSED, "attempt 2 ran on the copy");
	cr_expect_eq(r.attempts, 2);
	cr_expect_eq(atomic_load(&dups), 1);
	cr_expect_eq(atomic_load(&ran_on[1]), orig);
	cr_expect(atomic_load(&ran_on[2]) != orig, "a copy, not the lent original");
	cr_expect_eq(atomic_load(&tu_freed), 1, "the copy, by the worker that processed it");
	cr_expect_eq(orig->magic, TU_MAGIC_LIVE, "the original is untouched");

	struct blq_stats s = finish(q);
	cr_expect_eq(atomic_load(&tu_freed), 2, "and the original, after the return");
	cr_expect_eq(s.retried, 1);
	cr_expect_eq(s.timed_out, 1);
	cr_expect_eq(s.processed, 1);
}

/* Without item_dup the queue cannot retry what the callback may still
 * read: the handle says RUNNING, and the retry waits for the return. */
Test(late, without_item_dup_a_retry_waits_for_the_return)
{
	blq_config c = cfg();
	c.max_retries = 1;
	blq *q = must_new(&c);
	blq_job j = {.payload = tu_item_new(1)};
	blq_handle *h;

	cr_assert_eq(blq_enqueue_job_handle(q, &j, &h), 0);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 1, 2000), "given up");
	tu_sleep_us(50000);
	cr_expect_eq(stats(q).retried, 0);
	cr_expect_eq(blq_handle_state(h), BLQ_HANDLE_RUNNING);
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(blq_handle_state(h) == BLQ_HANDLE_ENDED, 2000));
	cr_expect_eq(blq_handle_outcome(h), BLQ_OUTCOME_PROCESSED);
	blq_handle_release(h);

	struct blq_stats s = finish(q);
	cr_expect_eq(s.retried, 1);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(atomic_load(&tu_freed), 1, "the worker's, after attempt 2");
}

static blq_config dlq_cfg(tu_rec *r)
{
	blq_config c = cfg();
	c.fail_to_dlq = true;
	c.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = r};
	return c;
}

Test(late, the_dlq_gets_a_copy_at_the_limit)
{
	tu_rec *r = tu_rec_new();
	blq_config c = dlq_cfg(r);
	c.item_dup = item_dup;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(9)), 0);
	/* The DLQ records the id, frees the copy and returns; then the queue
	 * counts the leak: wait for the count, the last of the three. */
	cr_assert(TU_WAIT_FOR(stats(q).leaked == 1, 2000));
	cr_expect(still_inside(), "the callback is still inside");
	cr_expect_eq(tu_rec_count(r), 1);
	cr_expect_eq(r->ids[0], 9);
	cr_expect_eq(atomic_load(&tu_freed), 1, "the copy, by the DLQ");

	finish(q);
	cr_expect_eq(atomic_load(&tu_freed), 2, "and the original, after the return");
	cr_expect_eq(tu_rec_count(r), 1);
	tu_rec_free(r);
}

Test(late, without_item_dup_the_dlq_waits_for_the_return)
{
	tu_rec *r = tu_rec_new();
	blq_config c = dlq_cfg(r);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(9)), 0);
	cr_assert(TU_WAIT_FOR(stats(q).workers_stuck == 1, 2000), "given up");
	tu_sleep_us(50000);
	cr_expect_eq(tu_rec_count(r), 0);
	finish(q);
	cr_expect_eq(tu_rec_count(r), 1);
	cr_expect_eq(atomic_load(&tu_freed), 1, "the original, by the DLQ");
	tu_rec_free(r);
}

static void *dup_fails(const void *payload)
{
	(void)payload;
	atomic_fetch_add(&dups, 1);
	return NULL;
}

Test(late, an_item_dup_that_returns_null_leaves_the_item_to_the_callback)
{
	blq_config c = cfg();
	c.max_retries = 1;
	c.item_dup = dup_fails;
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&dups) == 1, 2000));
	cr_expect_eq(stats(q).retried, 0);
	struct blq_stats s = finish(q);
	cr_expect_eq(s.retried, 1, "retried at the return instead");
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(atomic_load(&tu_freed), 1);
}

Test(late, item_dup_without_item_free_is_refused)
{
	blq_config c = cfg();
	c.item_free = NULL;
	c.item_dup = item_dup;
	blq_error err;

	cr_assert(blq_new(&c, &err) == NULL);
	cr_expect(strstr(err.msg, "item_dup") != NULL, "%s", err.msg);
	cr_expect(strstr(err.msg, "item_free") != NULL, "%s", err.msg);
}

/* Many late attempts on a small queue, with retries on copies, hands taken
 * ahead and a close while some are inside: each payload is freed exactly
 * once (tu_item_free aborts on a second free; ASan finds a missed one) and
 * the accounting balances. */
static _Atomic int slow_left;

static int sometimes_slow(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;

	if (it->id % 3 == 0 && blq_task_attempt(t) == 1 && atomic_fetch_sub(&slow_left, 1) > 0)
		tu_sleep_us(4000); /* past the 1 ms limit, token ignored */
	/* Given up or not, by now: the claim says whose the payload is. */
	if (!blq_task_claim(t))
		return 0;
	tu_item_free(payload);
	return 0;
}

Test(late, many_late_attempts_free_each_payload_once)
{
	blq_config c = {.name = "late-many", .capacity = 64, .workers = 2, .worker = sometimes_slow,
			.item_free = tu_item_free, .item_dup = item_dup, .timeout_ns = MS,
			.max_retries = 1};
	atomic_store(&slow_left, 60);
	blq *q = must_new(&c);

	for (uint64_t i = 0; i < 400; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert_eq(blq_close(q), 0);
	cr_assert(tu_wait_unstuck(q));
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(s.in, 400);
	blq_free(q);
	/* Every payload and every copy freed once: the items, the copies. */
	cr_expect_eq(atomic_load(&tu_freed), 400 + atomic_load(&dups));
}

/*
 * An item given up twice at its limit, in one worker: the first give-up
 * takes the worker's hand back and cannot end the item (item_dup fails,
 * so the item waits for its callback); the callback fails, its retry
 * finds the queue full and runs again in place on the same worker; the
 * second give-up must end that item, not the slot of the hand the first
 * one emptied (it read h->it[h->next - 1], and the first give-up's settle
 * had moved next to the hand's end: it ended a copy of the hand's last
 * item, which then ran twice, and the stuck item never ended; under ASan
 * the same read of a hand item whose waiter was gone was a
 * use-after-free, seen in retry_stress).
 */
#define TWICE_N 64
static tu_gate gate2, gate3;
static _Atomic unsigned ran_ok[256];
static _Atomic unsigned dup_calls;

static void *dup_second(const void *payload)
{
	if (atomic_fetch_add(&dup_calls, 1) == 0)
		return NULL; /* the first give-up cannot go on on a copy */
	return item_dup(payload);
}

static int stuck_twice(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;
	unsigned a = blq_task_attempt(t);

	if (it->id == 0 && a == 1) {
		tu_gate_pass(&gate);
		return -1;
	}
	if (it->id == 0 && a == 2) {
		tu_gate_pass(&gate3);
		return -1;
	}
	if (it->id != 0)
		tu_gate_pass(&gate2);
	/* Ours unless given up first (item 0 has a limit): claim, then free. */
	if (!blq_task_claim(t))
		return 0;
	atomic_fetch_add(&ran_ok[it->id], 1);
	tu_item_free(payload);
	return 0;
}

Test(late, a_second_give_up_ends_the_item_it_gave_up)
{
	tu_gate_init(&gate2);
	tu_gate_init(&gate3);
	atomic_store(&dup_calls, 0);
	for (unsigned i = 0; i < 256; i++)
		atomic_store(&ran_ok[i], 0);
	/* Only item 0 has a limit: the other items' worker waits in gate2
	 * without being given up, so the queue stays full. */
	blq_config c = {.name = "late-twice", .capacity = TWICE_N, .workers = 1,
			.worker = stuck_twice, .item_free = tu_item_free, .item_dup = dup_second,
			.max_retries = 3};
	blq *q = must_new(&c);

	/* Paused while it fills, so the worker's first take finds the lane
	 * deep and takes item 0 with a hand of the next ones. */
	cr_assert_eq(blq_pause(q), 0);
	blq_job j0 = {.payload = tu_item_new(0), .timeout_ns = LIMIT};
	cr_assert_eq(blq_enqueue_job(q, &j0), 0);
	for (uint64_t i = 1; i < TWICE_N; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	cr_assert_eq(blq_resume(q), 0);

	/* The first give-up: item 0 stays with its callback (no copy), the
	 * hand goes back, a replacement starts and waits in gate2. */
	cr_assert(TU_WAIT_FOR(atomic_load(&dup_calls) == 1, 5000), "the first give-up");
	cr_assert(TU_WAIT_FOR(atomic_load(&gate2.waiting) == 1, 5000), "the replacement runs");
	/* Fill every place left, so the failed attempt's retry finds none. */
	uint64_t next = TWICE_N;
	for (int rc = 0; rc == 0 && next < 256;) {
		tu_item *extra = tu_item_new(next);

		rc = blq_try_enqueue(q, extra);
		if (rc == 0)
			next++;
		else
			tu_item_free(extra);
	}
	cr_assert(next < 256, "the queue filled");

	/* Attempt 1 fails; its retry has no room and runs again in place
	 * (attempt 2), which the watchdog gives up too: on a copy now. */
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(atomic_load(&dup_calls) == 2, 5000), "the second give-up");
	tu_gate_open(&gate3);
	tu_gate_open(&gate2);
	cr_assert(tu_wait_unstuck(q));
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	blq_free(q);

	/* Every item ran to success once: item 0 on its copy (attempt 3). */
	for (uint64_t i = 0; i < next; i++)
		cr_expect_eq(atomic_load(&ran_ok[i]), 1, "item %llu ran %u times", (unsigned long long)i,
			     atomic_load(&ran_ok[i]));
	cr_expect(tu_balanced(&s));
	cr_expect_eq(s.processed, next);
	cr_expect_eq(s.timed_out, 2, "item 0, twice");
	tu_gate_destroy(&gate2);
	tu_gate_destroy(&gate3);
}
