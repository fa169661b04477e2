/*
 * Task groups (blq/group.h): every job of a group ends in exactly one
 * outcome count and its own hook runs once; counts add up at every read
 * (accepted == outcomes + pending); refused enqueues (queue closed, full,
 * group cancelled) count as refused only; wait with a limit times out
 * while a job is stuck, then succeeds; cancel ends queued, delayed and
 * running jobs; many producers into one group (under TSan too); free with
 * jobs pending is refused.
 *
 * The worker runs by id: below 1000 it succeeds; 1000..1999 always fail;
 * 2000..2999 wait in the gate, then succeed; 3000.. poll their token until
 * it is raised, then fail (so a cancel ends them cancelled). Every id it
 * runs is counted. Each job carries its own hook (hooks[id]), which
 * counts its calls and keeps the outcome.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include <blq/group.h>

#include "suite_util.h"

#define HOUR (3600ull * 1000000000ull)
#define MS 1000000ull
#define N 4096

static tu_gate gate;
static _Atomic unsigned ran[N];
static _Atomic unsigned hook_calls[N];
static _Atomic int hook_outcome[N];
static blq_done hooks[N];

static int by_id(void *ctx, void *payload, blq_task *t)
{
	(void)ctx;
	tu_item *it = payload;
	uint64_t id = it->id;

	atomic_fetch_add(&ran[id], 1);
	if (id >= 3000) {
		while (!blq_task_cancelled(t))
			tu_sleep_us(200);
		return -1; /* the queue keeps it: cancelled */
	}
	if (id >= 2000)
		tu_gate_pass(&gate);
	else if (id >= 1000)
		return -1;
	tu_item_free(payload);
	return 0;
}

/* The job's own hook: the payload is only an identity here, the id comes
 * in ctx. */
static void note(void *ctx, void *payload, enum blq_outcome o)
{
	uintptr_t id = (uintptr_t)ctx;

	(void)payload;
	atomic_store(&hook_outcome[id], (int)o);
	atomic_fetch_add(&hook_calls[id], 1);
}

static void setup(void)
{
	tu_gate_init(&gate);
	atomic_store(&tu_freed, 0);
	for (uintptr_t i = 0; i < N; i++) {
		atomic_store(&ran[i], 0);
		atomic_store(&hook_calls[i], 0);
		atomic_store(&hook_outcome[i], 0);
		hooks[i] = (blq_done){.fn = note, .ctx = (void *)i};
	}
}

TestSuite(group, .init = setup, .timeout = 60);

static blq_config cfg(unsigned workers, size_t capacity)
{
	blq_config c = {.name = "g", .capacity = capacity, .workers = workers, .worker = by_id,
			.item_free = tu_item_free};
	return c;
}

static blq_group *must_group(blq *q)
{
	blq_error err;
	blq_group *g = blq_group_new(q, &err);

	cr_assert_not_null(g, "blq_group_new: %s", err.msg);
	cr_assert_eq(err.code, BLQ_OK);
	return g;
}

static struct blq_group_counts counts(const blq_group *g)
{
	struct blq_group_counts c;

	cr_assert_eq(blq_group_counts(g, &c), 0);
	return c;
}

static uint64_t ended(const struct blq_group_counts *c)
{
	return c->processed + c->failed + c->timed_out + c->leaked + c->expired + c->lost +
	       c->cancelled;
}

/* The group's law, true at every read. */
static bool adds_up(const struct blq_group_counts *c)
{
	return c->accepted == ended(c) + c->pending;
}

/* Every field of the group's counts as `want` (a field left out: 0),
 * and the law. `at` names the moment. */
#define FIELDS(X)                                                                                  \
	X(accepted) X(refused) X(pending) X(enqueuing) X(processed) X(failed) X(timed_out)        \
	X(leaked) X(expired) X(lost) X(cancelled)
static void expect_counts(const blq_group *g, struct blq_group_counts want, const char *at)
{
	struct blq_group_counts n = counts(g);

#define EXPECT_FIELD(f)                                                                            \
	cr_expect_eq(n.f, want.f, "%s: " #f " %llu, want %llu", at, (unsigned long long)n.f,       \
		     (unsigned long long)want.f);
	FIELDS(EXPECT_FIELD)
#undef EXPECT_FIELD
	cr_expect(adds_up(&n), "%s: accepted == outcomes + pending", at);
}

static blq_job job(uint64_t id)
{
	return (blq_job){.payload = tu_item_new(id), .done = &hooks[id]};
}

/* blq_group_enqueue of job(id) (plus its delay and deadline) that must
 * be accepted. */
static void put(blq_group *g, uint64_t id, uint64_t delay, uint64_t deadline)
{
	blq_job j = job(id);

	j.delay_ns = delay;
	j.deadline_ns = deadline;
	cr_assert_eq(blq_group_enqueue(g, &j), 0, "job %llu", (unsigned long long)id);
}

static void expect_hooks_once(uint64_t from, uint64_t to, enum blq_outcome o)
{
	for (uint64_t i = from; i < to; i++) {
		cr_expect_eq(atomic_load(&hook_calls[i]), 1, "job %llu's own hook: once",
			     (unsigned long long)i);
		cr_expect_eq(atomic_load(&hook_outcome[i]), (int)o, "job %llu: %s",
			     (unsigned long long)i, blq_outcome_name(o));
	}
}

static void close_balanced(blq *q)
{
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	cr_assert_eq(blq_free(q), 0);
}

Test(group, all_jobs_processed_and_wait_returns)
{
	blq_config c = cfg(2, 16);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	for (uint64_t i = 0; i < 200; i++)
		put(g, i, 0, 0);
	cr_assert_eq(blq_group_wait(g, UINT64_MAX), 0);
	expect_counts(g, (struct blq_group_counts){.accepted = 200, .processed = 200}, "after");
	/* Every job's own hook has returned when the wait does. */
	expect_hooks_once(0, 200, BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(blq_group_wait(g, 0), 0, "an idle group: a look says so");
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 200);
}

/* Processed, failed after its retries, expired (the fake clock moves past
 * the deadline while the only worker is held), cancelled while delayed:
 * each counted exactly, each job's hook once with that outcome. */
Test(group, mixed_outcomes_counted_exactly)
{
	blq_config c = cfg(1, 64);
	c.max_retries = 2; /* no interval: straight back to the queue */
	c.clock.now_ns = tu_fake_mono;
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 2000, 0, 0); /* holds the worker */
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	for (uint64_t i = 0; i < 5; i++)
		put(g, i, 0, 0);
	for (uint64_t i = 1000; i < 1003; i++)
		put(g, i, 0, 0);
	for (uint64_t i = 10; i < 12; i++)
		put(g, i, 0, 100 * MS);
	for (uint64_t i = 20; i < 22; i++)
		put(g, i, HOUR, 0); /* the fake clock never gets there */
	atomic_fetch_add(&tu_mono_ns, 200 * MS); /* past the deadlines */
	tu_gate_open(&gate);

	/* All but the two delayed jobs end; the wait limit passes. */
	cr_assert(TU_WAIT_FOR(counts(g).pending == 2, 5000));
	cr_expect_eq(blq_group_wait(g, 20 * MS), BLQ_ETIMEDOUT);
	cr_expect_eq(blq_group_cancel(g), 2, "the two delayed jobs");
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);

	struct blq_group_counts n = {
		.accepted = 13, .processed = 6, .failed = 3, .expired = 2, .cancelled = 2};
	expect_counts(g, n, "after");
	expect_hooks_once(0, 5, BLQ_OUTCOME_PROCESSED);
	expect_hooks_once(2000, 2001, BLQ_OUTCOME_PROCESSED);
	expect_hooks_once(1000, 1003, BLQ_OUTCOME_FAILED);
	expect_hooks_once(10, 12, BLQ_OUTCOME_EXPIRED);
	expect_hooks_once(20, 22, BLQ_OUTCOME_CANCELLED);
	for (uint64_t i = 1000; i < 1003; i++)
		cr_expect_eq(atomic_load(&ran[i]), 3, "three attempts");
	cr_expect_eq(atomic_load(&ran[10]) + atomic_load(&ran[20]), 0, "never ran");

	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, n.processed);
	cr_expect_eq(s.failed, n.failed);
	cr_expect_eq(s.expired, n.expired);
	cr_expect_eq(s.cancelled, n.cancelled);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 13, "each payload freed once");
}

/* A leaky queue full behind a held worker: the overflow leaks inside the
 * enqueue call (the hooks run before it returns), and still counts once
 * as accepted and once as leaked. */
Test(group, overflow_leaks_inside_the_enqueue_and_counts_once)
{
	tu_rec *dlq = tu_rec_new();
	blq_config c = cfg(1, 2);
	c.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = dlq};
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 2000, 0, 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	for (uint64_t i = 0; i < 6; i++) {
		put(g, i, 0, 0);
		struct blq_group_counts n = counts(g);
		cr_expect(adds_up(&n));
	}
	/* Capacity 2: the last four leak at the rear. */
	expect_counts(g, (struct blq_group_counts){.accepted = 7, .leaked = 4, .pending = 3},
		      "held");
	expect_hooks_once(2, 6, BLQ_OUTCOME_LEAKED);
	tu_gate_open(&gate);
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	expect_counts(g, (struct blq_group_counts){.accepted = 7, .leaked = 4, .processed = 3},
		      "after");
	expect_hooks_once(0, 2, BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(tu_rec_count(dlq), 4);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
	tu_rec_free(dlq);
}

/* A stuck job: waits with a limit time out (at the limit, not before),
 * free is refused; once the job ends the wait succeeds and free works. */
Test(group, wait_with_a_limit_times_out_while_a_job_is_stuck_then_succeeds)
{
	blq_config c = cfg(1, 8);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 2000, 0, 0);
	put(g, 1, 0, 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	uint64_t t0 = tu_now_ns();
	cr_expect_eq(blq_group_wait(g, 50 * MS), BLQ_ETIMEDOUT);
	cr_expect_geq(tu_now_ns() - t0, 50 * MS, "not before the limit");
	cr_expect_eq(blq_group_wait(g, 0), BLQ_ETIMEDOUT, "a look");
	expect_counts(g, (struct blq_group_counts){.accepted = 2, .pending = 2}, "stuck");
	cr_expect_eq(blq_group_free(g), BLQ_EBUSY, "jobs pending: not freed");
	tu_gate_open(&gate);
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	expect_counts(g, (struct blq_group_counts){.accepted = 2, .processed = 2}, "after");
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
}

/* Cancel with one job running (it polls its token), three queued behind
 * it and two delayed an hour: all six end cancelled; none of the queued
 * or delayed ones runs; a later enqueue is refused and counted. */
Test(group, cancel_ends_running_queued_and_delayed_jobs)
{
	blq_config c = cfg(1, 8);
	c.max_retries = 3; /* a cancelled failure is not retried */
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 3000, 0, 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&ran[3000]) == 1, 2000));
	for (uint64_t i = 0; i < 3; i++)
		put(g, i, 0, 0);
	for (uint64_t i = 20; i < 22; i++)
		put(g, i, HOUR, 0);
	cr_assert(TU_WAIT_FOR(stats(q).delayed == 2, 2000));
	cr_expect_eq(blq_group_cancel(g), 6);

	blq_job late = job(99);
	cr_expect_eq(blq_group_enqueue(g, &late), BLQ_ECANCELED);
	cr_expect_eq(blq_group_try_enqueue(g, &late), BLQ_ECANCELED);
	cr_expect_str_eq(blq_strerror(BLQ_ECANCELED), "cancelled");
	tu_item_free(late.payload); /* refused: still ours */

	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	expect_counts(g, (struct blq_group_counts){.accepted = 6, .cancelled = 6, .refused = 2},
		      "after");
	expect_hooks_once(3000, 3001, BLQ_OUTCOME_CANCELLED);
	expect_hooks_once(0, 3, BLQ_OUTCOME_CANCELLED);
	expect_hooks_once(20, 22, BLQ_OUTCOME_CANCELLED);
	cr_expect_eq(atomic_load(&hook_calls[99]), 0, "a refused job's hook never runs");
	cr_expect_eq(atomic_load(&ran[3000]), 1, "not retried");
	for (uint64_t i = 0; i < 3; i++)
		cr_expect_eq(atomic_load(&ran[i]), 0, "a cancelled queued job never runs");
	cr_expect_eq(blq_group_cancel(g), 0, "nothing left to cancel");
	cr_expect_eq(stats(q).cancelled, 6);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 7, "six cancelled and the refused one");
}

/* A closed queue, a full one and a bad job: refused, counted, the caller
 * keeps the payload, no hook; the group stays empty. */
Test(group, refused_enqueues_are_counted_not_pending)
{
	blq_config c = cfg(1, 1);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 2000, 0, 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	put(g, 1, 0, 0); /* fills the queue */
	blq_job j = job(2);
	cr_expect_eq(blq_group_try_enqueue(g, &j), BLQ_EFULL);
	blq_done no_fn = {.fn = NULL};
	blq_job bad = {.payload = j.payload, .done = &no_fn};
	cr_expect_eq(blq_group_enqueue(g, &bad), BLQ_EINVAL);
	cr_expect_eq(blq_group_enqueue(g, NULL), BLQ_EINVAL);
	expect_counts(g, (struct blq_group_counts){.accepted = 2, .pending = 2, .refused = 3},
		      "full");
	tu_gate_open(&gate);
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	cr_assert_eq(blq_close(q), 0);

	cr_expect_eq(blq_group_enqueue(g, &j), BLQ_ECLOSED);
	cr_expect_eq(blq_group_try_enqueue(g, &j), BLQ_ECLOSED);
	expect_counts(g, (struct blq_group_counts){.accepted = 2, .processed = 2, .refused = 5},
		      "closed");
	cr_expect_eq(atomic_load(&hook_calls[2]), 0);
	cr_expect_eq(blq_group_wait(g, 0), 0);
	tu_item_free(j.payload);
	cr_expect_eq(blq_group_free(g), 0);
	cr_assert_eq(blq_free(q), 0);
}

Test(group, free_with_pending_is_refused)
{
	blq_config c = cfg(1, 8);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	put(g, 20, HOUR, 0);
	cr_expect_eq(blq_group_free(g), BLQ_EBUSY);
	cr_expect_str_eq(blq_errname(BLQ_EBUSY), "BLQ_EBUSY");
	cr_expect_eq(counts(g).pending, 1, "the group is still there");
	cr_expect_eq(blq_group_cancel(g), 1);
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	cr_expect_eq(blq_group_free(g), 0);
	cr_expect_eq(blq_group_free(NULL), 0);
	close_balanced(q);
}

Test(group, bad_arguments)
{
	blq_error err;
	struct blq_group_counts n;

	cr_expect_null(blq_group_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_null(blq_group_new(NULL, NULL));
	cr_expect_eq(blq_group_enqueue(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_group_try_enqueue(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_group_wait(NULL, 0), BLQ_EINVAL);
	cr_expect_eq(blq_group_counts(NULL, &n), BLQ_EINVAL);
	cr_expect_eq(blq_group_cancel(NULL), BLQ_EINVAL);

	blq_config c = cfg(1, 8);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);
	cr_expect_eq(blq_group_counts(g, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
}

/* From one of the queue's workers: the wait would wait for itself. The
 * worker finds the group through a slot filled once both exist. */
static _Atomic int wait_rc = 1;

static int waits_on_group(void *ctx, void *payload, blq_task *t)
{
	blq_group *_Atomic *slot = ctx;

	(void)t;
	atomic_store(&wait_rc, blq_group_wait(atomic_load(slot), 1000 * MS));
	tu_item_free(payload);
	return 0;
}

Test(group, wait_from_a_worker_is_refused)
{
	static blq_group *_Atomic slot;
	blq_config c = cfg(1, 8);
	c.worker = waits_on_group;
	c.worker_ctx = (void *)&slot;
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	atomic_store(&slot, g);
	put(g, 1, 0, 0);
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	cr_expect_eq(atomic_load(&wait_rc), BLQ_EDEADLK);
	cr_expect_eq(counts(g).processed, 1);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
}

/* Many producers into one group, blocking on a small queue, while a
 * reader checks the law at every read and a waiter polls with short
 * limits; then everything ended exactly once. Under TSan too. */
#define PRODUCERS 4
#define PER 400

typedef struct prod {
	blq_group *g;
	unsigned k;
	unsigned refused;
} prod;

static void *producer(void *p)
{
	prod *a = p;

	for (unsigned i = 0; i < PER; i++) {
		uint64_t id = (uint64_t)a->k * PER + i;
		/* Every 7th fails (ids from 1000 on fail). */
		uint64_t wid = id % 7 == 0 ? 1000 + id % 1000 : id % 1000;
		blq_job j = {.payload = tu_item_new(wid), .done = &hooks[id]};
		int rc = (i % 2) ? blq_group_enqueue(a->g, &j) : blq_group_try_enqueue(a->g, &j);

		if (rc != 0) {
			cr_assert_eq(rc, BLQ_EFULL);
			tu_item_free(j.payload);
			a->refused++;
			i--; /* try that id again */
			tu_sleep_us(50);
		}
	}
	return NULL;
}

static _Atomic bool stop_reading;
static _Atomic unsigned bad_reads, timeouts;

static void *reader(void *p)
{
	blq_group *g = p;

	while (!atomic_load(&stop_reading)) {
		struct blq_group_counts n;

		blq_group_counts(g, &n);
		if (!adds_up(&n))
			atomic_fetch_add(&bad_reads, 1);
		if (blq_group_wait(g, 1 * MS) == BLQ_ETIMEDOUT)
			atomic_fetch_add(&timeouts, 1);
	}
	return NULL;
}

Test(group, many_producers_into_one_group)
{
	blq_config c = cfg(2, 32);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);
	pthread_t t[PRODUCERS], r;
	prod a[PRODUCERS];

	atomic_store(&stop_reading, false);
	cr_assert_eq(pthread_create(&r, NULL, reader, g), 0);
	for (unsigned k = 0; k < PRODUCERS; k++) {
		a[k] = (prod){.g = g, .k = k};
		cr_assert_eq(pthread_create(&t[k], NULL, producer, &a[k]), 0);
	}
	unsigned refused = 0;
	for (unsigned k = 0; k < PRODUCERS; k++) {
		pthread_join(t[k], NULL);
		refused += a[k].refused;
	}
	cr_assert_eq(blq_group_wait(g, 20000 * MS), 0);
	atomic_store(&stop_reading, true);
	pthread_join(r, NULL);

	unsigned failing = 0;
	for (unsigned id = 0; id < PRODUCERS * PER; id++)
		failing += id % 7 == 0;
	/* Every BLQ_EFULL counted in refused. */
	expect_counts(g,
		      (struct blq_group_counts){.accepted = PRODUCERS * PER, .failed = failing,
						.processed = PRODUCERS * PER - failing,
						.refused = refused},
		      "after");
	cr_expect_eq(atomic_load(&bad_reads), 0, "the counts added up at every read");
	for (unsigned id = 0; id < PRODUCERS * PER; id++) {
		cr_expect_eq(atomic_load(&hook_calls[id]), 1, "job %u's hook: once", id);
		cr_expect_eq(atomic_load(&hook_outcome[id]),
			     id % 7 == 0 ? BLQ_OUTCOME_FAILED : BLQ_OUTCOME_PROCESSED);
	}
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), PRODUCERS * PER + refused);
}

/* A job's own hook may enqueue into its group (try): the new job is part
 * of what the wait waits for. */
static blq_group *_Atomic chain_group;

static void chain(void *ctx, void *payload, enum blq_outcome o)
{
	uintptr_t id = (uintptr_t)ctx;

	note(ctx, payload, o);
	if (id < 10) {
		blq_job j = job(id + 1);
		if (blq_group_try_enqueue(atomic_load(&chain_group), &j) != 0)
			tu_item_free(j.payload);
	}
}

Test(group, a_hook_enqueues_into_its_own_group)
{
	blq_config c = cfg(1, 8);
	blq *q = must_new(&c);
	blq_group *g = must_group(q);

	atomic_store(&chain_group, g);
	for (uintptr_t i = 0; i <= 10; i++)
		hooks[i].fn = chain;
	put(g, 0, 0, 0);
	/* Job k+1 joins the group inside job k's hook, before k counts as
	 * ended: one wait covers the whole chain. */
	cr_assert_eq(blq_group_wait(g, 5000 * MS), 0);
	expect_counts(g, (struct blq_group_counts){.accepted = 11, .processed = 11}, "after");
	expect_hooks_once(0, 11, BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(blq_group_free(g), 0);
	close_balanced(q);
}
