/*
 * Cancelling one item through its handle (seed 000's Task.Stop): queued,
 * timer-held (a delay, a retry's backoff), running (token raised; the
 * return value decides between cancelled and processed), abandoned at a
 * Soft close (cancelled, not leaked), and after its outcome (BLQ_EFINISHED,
 * nothing changes). The new outcome in the counters, the hooks, the status
 * JSON and the Prometheus exposition, with the invariant per item.
 *
 * The worker runs by id: odd ids wait in a gate; ids 100+ poll their
 * token until it is raised and return 100 - id % 2 (so 0 for odd: they
 * finish after all); id 50 fails its first attempt (a retry then waits in
 * the timer). Every id it runs is recorded.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <blq/prometheus.h>

#include "suite_util.h"

#define HOUR (3600ull * 1000000000ull)

static tu_gate gate;
static pthread_mutex_t ran_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ran[64];
static size_t nran;
static _Atomic int hook_outcome;

static bool has_run(uint64_t id)
{
	bool yes = false;

	pthread_mutex_lock(&ran_mu);
	for (size_t i = 0; i < nran; i++)
		yes |= ran[i] == id;
	pthread_mutex_unlock(&ran_mu);
	return yes;
}

static int by_id(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;

	pthread_mutex_lock(&ran_mu);
	if (nran < 64)
		ran[nran++] = it->id;
	pthread_mutex_unlock(&ran_mu);
	if (it->id >= 100) {
		while (!blq_task_cancelled(t))
			tu_sleep_us(200);
		if (it->id % 2 == 0)
			return -1; /* gave up: the queue has it */
	} else if (it->id % 2 == 1) {
		tu_gate_pass(&gate);
	} else if (it->id == 50 && blq_task_attempt(t) == 1) {
		return -1;
	}
	tu_item_free(payload);
	return 0;
}

static void note_outcome(void *ctx, void *payload, enum blq_outcome o)
{
	(void)ctx, (void)payload;
	atomic_store(&hook_outcome, (int)o);
}

static const blq_done hook = {.fn = note_outcome};

static void setup(void)
{
	tu_gate_init(&gate);
	nran = 0;
	atomic_store(&hook_outcome, 0);
	atomic_store(&tu_freed, 0);
}

TestSuite(cancel, .init = setup, .timeout = 30);

static blq_config cfg(void)
{
	blq_config c = {.name = "c", .capacity = 8, .workers = 1, .worker = by_id,
			.item_free = tu_item_free};
	return c;
}

static blq_handle *enqueue_handle(blq *q, uint64_t id, uint64_t delay)
{
	blq_job j = {.payload = tu_item_new(id), .delay_ns = delay, .done = &hook};
	blq_handle *h = NULL;

	cr_assert_eq(blq_enqueue_job_handle(q, &j, &h), 0);
	cr_assert_not_null(h);
	return h;
}

static bool json_has(blq *q, const char *want)
{
	char buf[4096];

	return blq_status_json(q, buf, sizeof(buf)) > 0 && strstr(buf, want) != NULL;
}

/* Queued behind a held worker: cancelled, it never runs; the queue frees
 * it and its hook sees the outcome. */
Test(cancel, a_queued_item_never_runs)
{
	blq_config c = cfg();
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	blq_handle *h = enqueue_handle(q, 2, 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(4)), 0);
	cr_expect_eq(blq_handle_outcome(h), 0, "no outcome yet");
	cr_expect_eq(blq_cancel(h), 0);
	cr_expect_eq(blq_cancel(h), 0, "a second cancel: still on its way");
	tu_gate_open(&gate);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect_eq(blq_handle_outcome(h), BLQ_OUTCOME_CANCELLED);
	cr_expect_eq(atomic_load(&hook_outcome), BLQ_OUTCOME_CANCELLED, "the job's hook");
	cr_expect(!has_run(2), "a cancelled item does not run");
	cr_expect(has_run(4), "the one behind it does");
	cr_expect_eq(blq_cancel(h), BLQ_EFINISHED);
	cr_expect_str_eq(blq_strerror(BLQ_EFINISHED), "the item already reached its outcome");
	cr_expect(json_has(q, "\"cancelled\":1,"));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.cancelled, 1);
	cr_expect_eq(s.processed, 2);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 3, "the queue freed the cancelled one");
	blq_handle_release(h);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

/* Delayed an hour: the cancel ends it at once (the timer takes it out),
 * and blq_wait_idle sees the queue idle. */
Test(cancel, a_delayed_item_ends_at_once)
{
	blq_config c = cfg();
	blq *q = must_new(&c);

	blq_handle *h = enqueue_handle(q, 2, HOUR);
	blq_handle *keep = enqueue_handle(q, 4, HOUR);
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 2, 2000));
	cr_expect_eq(blq_cancel(h), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(h) == BLQ_OUTCOME_CANCELLED, 2000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.delayed, 1, "the other delayed item stays");
	cr_expect_eq(s.cancelled, 1);
	cr_expect_eq(blq_cancel(keep), 0);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0, "nothing left, nothing running");
	s = stats(q);
	cr_expect_eq(s.delayed, 0);
	cr_expect_eq(s.size, 0);
	cr_expect_eq(s.cancelled, 2);
	cr_expect(tu_balanced(&s));
	cr_expect(!has_run(2) && !has_run(4));
	blq_handle_release(h);
	blq_handle_release(keep);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

/* A retry waiting out an hour's backoff: cancelled at once, not retried. */
Test(cancel, a_retry_in_its_backoff_ends_at_once)
{
	blq_config c = cfg();
	c.max_retries = 3;
	c.retry_interval_ns = HOUR;
	blq *q = must_new(&c);

	blq_handle *h = enqueue_handle(q, 50, 0);
	/* The retry is counted just after its item is parked (retry.c): a
	 * cancel between the two, on a loaded host, found retried 0. */
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 1 && stats(q).retried == 1, 2000),
		  "the retry waits in the timer");
	cr_expect_eq(blq_cancel(h), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(h) == BLQ_OUTCOME_CANCELLED, 2000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.retried, 1);
	cr_expect_eq(s.delayed, 0);
	cr_expect_eq(s.cancelled, 1);
	cr_expect(tu_balanced(&s));
	blq_handle_release(h);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

/* blq_handle_state follows the item: running (held in the gate), queued
 * behind it, delayed an hour, waiting out a retry's backoff, ended. */
Test(cancel, a_handle_says_where_its_item_is)
{
	blq_config c = cfg();
	blq *q = must_new(&c);

	blq_handle *run = enqueue_handle(q, 3, 0); /* odd: waits in the gate */
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_expect_eq(blq_handle_state(run), BLQ_HANDLE_RUNNING);
	blq_handle *queued = enqueue_handle(q, 2, 0);
	cr_expect_eq(blq_handle_state(queued), BLQ_HANDLE_QUEUED);
	blq_handle *later = enqueue_handle(q, 4, HOUR);
	cr_expect_eq(blq_handle_state(later), BLQ_HANDLE_DELAYED);
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(queued) != 0, 2000));
	cr_expect_eq(blq_handle_state(run), BLQ_HANDLE_ENDED);
	cr_expect_eq(blq_handle_state(queued), BLQ_HANDLE_ENDED);
	cr_expect_eq(blq_handle_state(later), BLQ_HANDLE_DELAYED);
	cr_expect_eq(blq_cancel(later), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_state(later) == BLQ_HANDLE_ENDED, 2000));
	cr_expect_eq(blq_handle_outcome(later), BLQ_OUTCOME_CANCELLED);
	cr_expect_eq(blq_handle_state(NULL), 0);
	blq_handle_release(run);
	blq_handle_release(queued);
	blq_handle_release(later);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);

	/* A retry waiting out its backoff is delayed again. */
	c.max_retries = 3;
	c.retry_interval_ns = HOUR;
	q = must_new(&c);
	blq_handle *h = enqueue_handle(q, 50, 0);
	/* The retry is counted just after its item is parked (retry.c): a
	 * cancel between the two, on a loaded host, found retried 0. */
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 1 && stats(q).retried == 1, 2000),
		  "the retry waits in the timer");
	cr_expect_eq(blq_handle_state(h), BLQ_HANDLE_DELAYED);
	cr_expect_eq(blq_cancel(h), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_state(h) == BLQ_HANDLE_ENDED, 2000));
	blq_handle_release(h);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

/* Running: the token is raised; a failing return ends it cancelled with
 * retries left, a 0 return means it was processed after all. */
Test(cancel, a_running_item_sees_its_token_and_the_return_value_decides)
{
	blq_config c = cfg();
	c.max_retries = 3;
	blq *q = must_new(&c);

	blq_handle *gives_up = enqueue_handle(q, 100, 0);
	cr_assert(TU_WAIT_FOR(has_run(100), 2000));
	cr_expect_eq(blq_cancel(gives_up), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(gives_up) == BLQ_OUTCOME_CANCELLED, 2000));
	blq_handle *finishes = enqueue_handle(q, 101, 0);
	cr_assert(TU_WAIT_FOR(has_run(101), 2000));
	cr_expect_eq(blq_cancel(finishes), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(finishes) == BLQ_OUTCOME_PROCESSED, 2000));
	/* The worker's token is down again for the next item. */
	blq_handle *next = enqueue_handle(q, 2, 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(next) == BLQ_OUTCOME_PROCESSED, 2000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.retried, 0, "cancelled: no retry");
	cr_expect_eq(s.cancelled, 1);
	cr_expect_eq(s.processed, 2);
	cr_expect(tu_balanced(&s));
	blq_handle_release(gives_up);
	blq_handle_release(finishes);
	blq_handle_release(next);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
}

static void *soft_close(void *q)
{
	cr_expect_eq(blq_close_soft(q), 0);
	return NULL;
}

/* A Soft close abandons what is queued: a cancelled item ends cancelled,
 * not in the DLQ (a restorer would run it). */
Test(cancel, a_soft_close_ends_a_cancelled_item_cancelled_not_leaked)
{
	tu_rec *dlq = tu_rec_new();
	blq_config c = cfg();
	c.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = dlq};
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	blq_handle *h = enqueue_handle(q, 2, 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(4)), 0);
	cr_expect_eq(blq_cancel(h), 0);
	/* The close begins while item 1 holds the worker: 2 and 4 are still
	 * queued when the worker returns, and are abandoned. */
	pthread_t closer;
	pthread_create(&closer, NULL, soft_close, q);
	cr_assert(TU_WAIT_FOR(json_has(q, "\"status\":\"soft-closing\""), 2000));
	tu_gate_open(&gate);
	pthread_join(closer, NULL);
	struct blq_stats s = stats(q);
	cr_expect_eq(blq_handle_outcome(h), BLQ_OUTCOME_CANCELLED);
	cr_expect_eq(s.cancelled, 1);
	cr_expect_eq(s.leaked_closed, 1, "item 4");
	cr_expect_eq(tu_rec_count(dlq), 1);
	cr_expect_eq(dlq->ids[0], 4);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), 3);
	blq_handle_release(h);
	blq_free(q);
	free(dlq);
}

/* A handle released before its item ends, and one that outlives it. */
Test(cancel, a_handle_and_its_item_outlive_each_other)
{
	blq_config c = cfg();
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(1)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	blq_handle *early = enqueue_handle(q, 2, 0);
	blq_handle_release(early); /* the item keeps its own reference */
	blq_handle *late = enqueue_handle(q, 4, 0);
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
	cr_expect(has_run(2), "released, not cancelled: it ran");
	cr_expect_eq(blq_handle_outcome(late), BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(blq_cancel(late), BLQ_EFINISHED, "after blq_free too");
	blq_handle_release(late);
	blq_handle_release(NULL);
	cr_expect_eq(blq_cancel(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_handle_outcome(NULL), 0);
}

/* Bad input: a clear code, nothing enqueued, nothing leaked. */
Test(cancel, bad_arguments_are_refused)
{
	blq_config c = cfg();
	blq *q = must_new(&c);
	blq_handle *h = (blq_handle *)&c; /* overwritten with NULL */
	blq_job j = {.payload = tu_item_new(2)};
	blq_done nofn = {0};

	cr_expect_eq(blq_enqueue_job_handle(q, &j, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_enqueue_job_handle(NULL, &j, &h), BLQ_EINVAL);
	cr_expect_null(h);
	j.done = &nofn;
	cr_expect_eq(blq_enqueue_job_handle(q, &j, &h), BLQ_EINVAL);
	cr_assert_eq(blq_close(q), 0);
	j.done = NULL;
	cr_expect_eq(blq_enqueue_job_handle(q, &j, &h), BLQ_ECLOSED);
	cr_expect_null(h);
	cr_expect_eq(stats(q).in, 0);
	tu_item_free(j.payload);
	blq_free(q);
}

/* Prometheus: queue_cancelled_total counts them. */
Test(cancel, prometheus_counts_cancelled_items)
{
	blq_error err;
	blq_prom *r = blq_prom_new(&err);
	cr_assert_not_null(r);
	blq_config c = cfg();
	c.metrics = blq_prom_queue_writer(r, "c", &err);
	cr_assert_not_null(c.metrics, "%s", err.msg);
	blq *q = must_new(&c);

	blq_handle *h = enqueue_handle(q, 2, HOUR);
	cr_expect_eq(blq_cancel(h), 0);
	cr_assert(TU_WAIT_FOR(blq_handle_outcome(h) == BLQ_OUTCOME_CANCELLED, 2000));
	static char text[65536];
	cr_assert(blq_prom_render(r, text, sizeof(text)) > 0);
	cr_expect(strstr(text, "queue_cancelled_total{queue=\"c\"} 1\n") != NULL, "%s", text);
	blq_handle_release(h);
	cr_assert_eq(blq_close(q), 0);
	blq_free(q);
	blq_prom_free(r);
}
