/*
 * The completion hook (blq_done): per job (blq_job.done) and per queue
 * (blq_config.on_done). Each item's hooks run exactly once, with its
 * outcome, after the counters include it; the job's before the queue's; a
 * leak on overflow runs them on the producer before its enqueue returns;
 * a refused enqueue never runs them; bad hooks are refused.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include <blq/blq.h>

#include "test_util.h"

#define N 2000

/* What the hooks saw, per id (the payload is the id). */
typedef struct seen {
	_Atomic unsigned job[N], queue[N];
	_Atomic int outcome[N];
	_Atomic unsigned order_bad; /* the queue's hook ran before the job's */
	blq *q;                     /* to read the counters from the hook */
	_Atomic unsigned stats_behind;
	pthread_t thread[N];
} seen;

static uintptr_t id_of(void *payload)
{
	return (uintptr_t)payload;
}

static void job_hook(void *ctx, void *payload, enum blq_outcome o)
{
	seen *s = ctx;
	uintptr_t id = id_of(payload);

	atomic_store(&s->outcome[id], (int)o);
	s->thread[id] = pthread_self();
	if (s->q != NULL && o == BLQ_OUTCOME_PROCESSED) {
		/* Items whose hooks finished, then the counters: those items
		 * and this one are in them already. */
		unsigned done = 0;
		for (unsigned i = 0; i < N; i++)
			done += atomic_load(&s->job[i]) != 0;
		struct blq_stats st;
		blq_stats(s->q, &st);
		if (st.processed + st.failed < done + 1)
			atomic_fetch_add(&s->stats_behind, 1);
	}
	atomic_fetch_add(&s->job[id], 1);
}

static void queue_hook(void *ctx, void *payload, enum blq_outcome o)
{
	seen *s = ctx;
	uintptr_t id = id_of(payload);

	(void)o;
	if (atomic_load(&s->job[id]) == 0)
		atomic_fetch_add(&s->order_bad, 1);
	atomic_fetch_add(&s->queue[id], 1);
}

static int odd_fails(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	return id_of(payload) % 2 != 0;
}

static int gated(void *ctx, void *payload, blq_task *t)
{
	(void)payload, (void)t;
	tu_gate_pass(ctx);
	return 0;
}

static blq *must_new(const blq_config *c)
{
	blq_error err;
	blq *q = blq_new(c, &err);

	cr_assert_not_null(q, "blq_new: %s", err.msg);
	return q;
}

Test(done_hook, every_item_reaches_both_hooks_once_with_its_outcome, .timeout = 30)
{
	static seen s;
	blq_done hook = {.fn = job_hook, .ctx = &s};
	blq_config c = {.name = "hooks", .capacity = 64, .workers = 2, .worker = odd_fails,
			.on_done = {.fn = queue_hook, .ctx = &s}};
	blq *q = must_new(&c);

	s.q = q;
	for (uintptr_t i = 0; i < N; i++) {
		blq_job j = {.payload = (void *)i, .done = &hook};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	blq_close(q);
	for (uintptr_t i = 0; i < N; i++) {
		cr_expect_eq(atomic_load(&s.job[i]), 1, "job hook of %lu ran %u times",
			     (unsigned long)i, atomic_load(&s.job[i]));
		cr_expect_eq(atomic_load(&s.queue[i]), 1, "queue hook of %lu ran %u times",
			     (unsigned long)i, atomic_load(&s.queue[i]));
		int want = i % 2 ? BLQ_OUTCOME_FAILED : BLQ_OUTCOME_PROCESSED;
		cr_expect_eq(atomic_load(&s.outcome[i]), want, "item %lu: %s", (unsigned long)i,
			     blq_outcome_name((enum blq_outcome)atomic_load(&s.outcome[i])));
	}
	cr_expect_eq(atomic_load(&s.order_bad), 0, "the queue's hook ran before the job's");
	cr_expect_eq(atomic_load(&s.stats_behind), 0, "a hook ran before the counters had it");
	struct blq_stats st;
	blq_stats(q, &st);
	cr_expect_eq(st.processed, N / 2);
	cr_expect_eq(st.failed, N / 2);
	cr_expect(tu_balanced(&st));
	blq_free(q);
}

Test(done_hook, plain_enqueues_reach_only_the_queue_hook, .timeout = 30)
{
	static seen s;
	blq_config c = {.name = "plain", .capacity = 64, .workers = 2, .worker = odd_fails,
			.on_done = {.fn = queue_hook, .ctx = &s}};
	blq *q = must_new(&c);

	for (uintptr_t i = 0; i < 100; i++)
		cr_assert_eq(blq_enqueue(q, (void *)i), 0);
	blq_close(q);
	for (uintptr_t i = 0; i < 100; i++) {
		cr_expect_eq(atomic_load(&s.queue[i]), 1);
		cr_expect_eq(atomic_load(&s.job[i]), 0);
	}
	blq_free(q);
}

static int dlq_take(void *self, void *payload)
{
	(void)self, (void)payload;
	return 0;
}

Test(done_hook, a_leak_on_overflow_runs_the_hook_on_the_producer_before_it_returns, .timeout = 30)
{
	static seen s;
	static tu_gate gate;
	tu_gate_init(&gate);
	blq_done hook = {.fn = job_hook, .ctx = &s};
	blq_config c = {.name = "leaky", .capacity = 1, .workers = 1, .worker = gated,
			.worker_ctx = &gate, .dlq = {.enqueue = dlq_take}};
	blq *q = must_new(&c);

	/* 0 is taken by the worker (held at the gate), 1 fills the ring, 2
	 * leaks at the rear. */
	blq_job j0 = {.payload = (void *)0, .done = &hook};
	cr_assert_eq(blq_enqueue_job(q, &j0), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	blq_job j1 = {.payload = (void *)1, .done = &hook};
	cr_assert_eq(blq_enqueue_job(q, &j1), 0);
	blq_job j2 = {.payload = (void *)2, .done = &hook};
	cr_assert_eq(blq_try_enqueue_job(q, &j2), 0);
	cr_expect_eq(atomic_load(&s.job[2]), 1, "the leaked item's hook ran before the return");
	cr_expect_eq(atomic_load(&s.outcome[2]), BLQ_OUTCOME_LEAKED);
	cr_expect(pthread_equal(s.thread[2], pthread_self()), "on the producer's thread");
	cr_expect_eq(atomic_load(&s.job[0]) + atomic_load(&s.job[1]), 0);
	tu_gate_open(&gate);
	blq_close(q);
	cr_expect_eq(atomic_load(&s.outcome[0]), BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(atomic_load(&s.outcome[1]), BLQ_OUTCOME_PROCESSED);
	blq_free(q);
	tu_gate_destroy(&gate);
}

/* Lets the held worker go once the force close has begun. */
static void *open_later(void *gate)
{
	tu_sleep_us(20000);
	tu_gate_open(gate);
	return NULL;
}

Test(done_hook, expired_and_lost_items_report_so, .timeout = 30)
{
	static seen s;
	static tu_gate gate;
	tu_gate_init(&gate);
	blq_done hook = {.fn = job_hook, .ctx = &s};
	blq_config c = {.name = "ends", .capacity = 8, .workers = 1, .worker = gated,
			.worker_ctx = &gate};
	blq *q = must_new(&c);

	blq_job held = {.payload = (void *)0, .done = &hook};
	cr_assert_eq(blq_enqueue_job(q, &held), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	/* 1 expires while 0 holds the worker; 2..4 are queued at the force
	 * close without a DLQ: lost. */
	blq_job exp = {.payload = (void *)1, .done = &hook, .deadline_ns = 1000000};
	cr_assert_eq(blq_enqueue_job(q, &exp), 0);
	tu_sleep_us(5000);
	tu_gate_open(&gate);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.job[1]) == 1, 2000));
	cr_expect_eq(atomic_load(&s.outcome[1]), BLQ_OUTCOME_EXPIRED);
	tu_gate_close(&gate);
	blq_job next = {.payload = (void *)5, .done = &hook};
	cr_assert_eq(blq_enqueue_job(q, &next), 0); /* held at the gate */
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	for (uintptr_t i = 2; i <= 4; i++) {
		blq_job j = {.payload = (void *)i, .done = &hook};
		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	pthread_t opener;
	cr_assert_eq(pthread_create(&opener, NULL, open_later, &gate), 0);
	blq_force_close(q);
	pthread_join(opener, NULL);
	for (uintptr_t i = 2; i <= 4; i++) {
		cr_expect_eq(atomic_load(&s.job[i]), 1);
		cr_expect_eq(atomic_load(&s.outcome[i]), BLQ_OUTCOME_LOST, "item %lu: %s",
			     (unsigned long)i,
			     blq_outcome_name((enum blq_outcome)atomic_load(&s.outcome[i])));
	}
	cr_expect_eq(atomic_load(&s.job[5]), 1, "the item in the worker ends too");
	struct blq_stats st;
	blq_stats(q, &st);
	cr_expect(tu_balanced(&st));
	cr_expect_eq(st.lost, 3);
	cr_expect_eq(st.expired, 1);
	blq_free(q);
	tu_gate_destroy(&gate);
}

Test(done_hook, a_refused_enqueue_never_runs_the_hook, .timeout = 30)
{
	static seen s;
	static tu_gate gate;
	tu_gate_init(&gate);
	blq_done hook = {.fn = job_hook, .ctx = &s};
	blq_config c = {.name = "full", .capacity = 1, .workers = 1, .worker = gated,
			.worker_ctx = &gate};
	blq *q = must_new(&c);

	blq_job j0 = {.payload = (void *)0, .done = &hook};
	cr_assert_eq(blq_enqueue_job(q, &j0), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	blq_job j1 = {.payload = (void *)1, .done = &hook};
	cr_assert_eq(blq_try_enqueue_job(q, &j1), 0);
	blq_job j2 = {.payload = (void *)2, .done = &hook};
	cr_expect_eq(blq_try_enqueue_job(q, &j2), BLQ_EFULL, "full, no DLQ: never waits");
	blq_job late = {.payload = (void *)3, .done = &hook, .delay_ns = 1000};
	tu_gate_open(&gate);
	blq_close(q);
	cr_expect_eq(blq_enqueue_job(q, &late), BLQ_ECLOSED);
	cr_expect_eq(blq_try_enqueue_job(q, &late), BLQ_ECLOSED);
	cr_expect_eq(atomic_load(&s.job[2]), 0);
	cr_expect_eq(atomic_load(&s.job[3]), 0);
	cr_expect_eq(atomic_load(&s.job[0]) + atomic_load(&s.job[1]), 2);
	blq_free(q);
	tu_gate_destroy(&gate);
}

Test(done_hook, hooks_without_fn_are_refused)
{
	blq_error err;
	int ctx;
	blq_config c = {.capacity = 4, .workers = 1, .worker = odd_fails, .on_done = {.ctx = &ctx}};

	cr_expect_null(blq_new(&c, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, "on_done") != NULL, "message: %s", err.msg);
	c.on_done.ctx = NULL;
	blq *q = must_new(&c);
	blq_done bad = {.fn = NULL, .ctx = &ctx};
	blq_job j = {.payload = (void *)1, .done = &bad};
	cr_expect_eq(blq_enqueue_job(q, &j), BLQ_EINVAL);
	cr_expect_eq(blq_try_enqueue_job(q, &j), BLQ_EINVAL);
	cr_expect_eq(blq_enqueue_wait(q, &j, 0, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_try_enqueue_job(NULL, &j), BLQ_EINVAL);
	cr_expect_eq(blq_try_enqueue_job(q, NULL), BLQ_EINVAL);
	struct blq_stats st;
	blq_stats(q, &st);
	cr_expect_eq(st.in, 0, "refused jobs are not counted in");
	blq_free(q);
}

Test(done_hook, enqueue_wait_runs_the_jobs_hook_before_it_returns, .timeout = 30)
{
	static seen s;
	blq_done hook = {.fn = job_hook, .ctx = &s};
	blq_config c = {.name = "wait", .capacity = 8, .workers = 2, .worker = odd_fails};
	blq *q = must_new(&c);

	for (uintptr_t i = 0; i < 20; i++) {
		blq_job j = {.payload = (void *)i, .done = &hook};
		enum blq_outcome o = 0;
		cr_assert_eq(blq_enqueue_wait(q, &j, UINT64_MAX, &o), 0);
		cr_expect_eq(atomic_load(&s.job[i]), 1, "hook of %lu ran before the return",
			     (unsigned long)i);
		cr_expect_eq((int)o, atomic_load(&s.outcome[i]));
	}
	blq_free(q);
}

/* Even ids succeed; odd ids fail with 100 * attempt + id; id 1001 fails on
 * its first attempt and succeeds on its second. */
static int coded_rc(void *ctx, void *payload, blq_task *t)
{
	uintptr_t id = (uintptr_t)payload;

	(void)ctx;
	if (id == 1001)
		return blq_task_attempt(t) == 1 ? 7 : 0;
	return id % 2 == 0 ? 0 : (int)(100 * blq_task_attempt(t) + id);
}

/* blq_enqueue_wait_result: the outcome, the last attempt's return code and
 * how many attempts ran; no attempt at all for an item leaked on overflow. */
Test(done_hook, enqueue_wait_result_says_why_an_item_failed, .timeout = 30)
{
	blq_config c = {.name = "why", .capacity = 8, .workers = 2, .worker = coded_rc,
			.max_retries = 2};
	blq *q = must_new(&c);

	for (uintptr_t i = 0; i < 10; i++) {
		blq_job j = {.payload = (void *)i};
		blq_wait_result r = {.worker_rc = -1};

		cr_assert_eq(blq_enqueue_wait_result(q, &j, UINT64_MAX, &r), 0);
		if (i % 2 == 0) {
			cr_expect_eq(r.outcome, BLQ_OUTCOME_PROCESSED);
			cr_expect_eq(r.worker_rc, 0);
			cr_expect_eq(r.attempts, 1);
		} else {
			cr_expect_eq(r.outcome, BLQ_OUTCOME_FAILED);
			cr_expect_eq(r.worker_rc, (int)(300 + i), "item %lu: rc %d",
				     (unsigned long)i, r.worker_rc);
			cr_expect_eq(r.attempts, 3);
		}
	}
	blq_job j = {.payload = (void *)1001};
	blq_wait_result r;
	cr_assert_eq(blq_enqueue_wait_result(q, &j, UINT64_MAX, &r), 0);
	cr_expect_eq(r.outcome, BLQ_OUTCOME_PROCESSED);
	cr_expect_eq(r.worker_rc, 0, "the last attempt's code, not the first's");
	cr_expect_eq(r.attempts, 2);
	/* NULL res: the outcome is still waited for. */
	cr_expect_eq(blq_enqueue_wait_result(q, &j, UINT64_MAX, NULL), 0);
	cr_expect_eq(blq_enqueue_wait_result(NULL, &j, 0, &r), BLQ_EINVAL);
	blq_free(q);

	/* Leaked before it ran: no attempt, code 0. */
	blq_config t = {.name = "target", .capacity = 4, .workers = 1, .worker = coded_rc};
	blq *target = must_new(&t);
	blq_config lc = {.name = "leaky", .capacity = 1, .workers = 1, .worker = coded_rc,
			 .dlq = blq_as_enqueuer(target)};
	blq *leaky = must_new(&lc);
	blq_pause(leaky);
	blq_job first = {.payload = (void *)2};
	cr_assert_eq(blq_enqueue_job(leaky, &first), 0);
	blq_job second = {.payload = (void *)4};
	cr_assert_eq(blq_enqueue_wait_result(leaky, &second, UINT64_MAX, &r), 0);
	cr_expect_eq(r.outcome, BLQ_OUTCOME_LEAKED);
	cr_expect_eq(r.attempts, 0);
	cr_expect_eq(r.worker_rc, 0);
	blq_resume(leaky);
	blq_free(leaky);
	blq_free(target);
}

/* blq_dlq_sync: a dump's sync is its flush; a queue as DLQ has none. */
Test(done_hook, dlq_sync_says_what_the_dlq_can_do)
{
	blq_config c = {.capacity = 4, .workers = 1, .worker = odd_fails};
	blq *plain = must_new(&c);
	blq *target = must_new(&c);
	c.dlq = blq_as_enqueuer(target);
	blq *chained = must_new(&c);

	cr_expect_eq(blq_dlq_sync(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_dlq_sync(plain), BLQ_ENOTSUP, "no DLQ");
	cr_expect_eq(blq_dlq_sync(chained), BLQ_ENOTSUP, "a queue keeps items in memory");
	blq_free(chained);
	blq_free(plain);
	blq_free(target);
}
