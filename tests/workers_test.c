/* Composable workers: transit, chain, async_chain, and a tree of them. */
#include <criterion/criterion.h>
#include <string.h>

#include "suite_util.h"

/* The last worker of a tree: takes the payload and frees it. */
static _Atomic uint64_t sunk;
static int sink(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	atomic_fetch_add(&sunk, 1);
	tu_item_free(payload);
	return 0;
}

TestSuite(workers, .timeout = 30);

Test(workers, transit_moves_items_into_the_next_queue)
{
	blq_config c2 = {.name = "to", .capacity = 64, .workers = 2, .worker = sink,
			 .item_free = tu_item_free};
	blq *q2 = must_new(&c2);
	blq_enqueuer target;
	blq_worker t = blq_transit_worker(&target, blq_as_enqueuer(q2));
	blq_config c1 = {.name = "from", .capacity = 64, .workers = 2, .worker = t.fn,
			 .worker_ctx = t.ctx, .item_free = tu_item_free};
	blq *q1 = must_new(&c1);

	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_eq(blq_enqueue(q1, tu_item_new(i)), 0);
	blq_close(q1);
	blq_close(q2);
	struct blq_stats s1 = stats(q1), s2 = stats(q2);
	cr_expect_eq(s1.processed, 1000);
	cr_expect_eq(s2.in, 1000);
	cr_expect_eq(s2.processed, 1000);
	cr_expect(tu_balanced(&s1) && tu_balanced(&s2));
	cr_expect_eq(atomic_load(&sunk), 1000);
	cr_expect_eq(atomic_load(&tu_freed), 1000);
	blq_free(q1);
	blq_free(q2);
}

Test(workers, transit_refused_leaves_the_payload_to_the_queue)
{
	blq_config c2 = {.capacity = 4, .workers = 1, .worker = sink};
	blq *q2 = must_new(&c2);
	blq_close(q2); /* refuses everything */
	blq_enqueuer target;
	blq_worker t = blq_transit_worker(&target, blq_as_enqueuer(q2));
	int p = 0;

	cr_expect_eq(t.fn(t.ctx, &p, NULL), BLQ_EREFUSED);
	blq_free(q2);
}

/* A chain step that records its index in the payload's log. */
typedef struct logged {
	char log[8];
	_Atomic int n;
} logged;

static int step(void *ctx, void *payload, blq_task *t)
{
	logged *l = payload;
	intptr_t me = (intptr_t)ctx;

	(void)t;
	l->log[atomic_fetch_add(&l->n, 1)] = (char)('0' + me);
	return me == 7 ? 42 : 0; /* step "7" fails with 42 */
}

Test(workers, chain_runs_steps_in_order_and_stops_at_the_first_failure)
{
	blq_worker steps[] = {{step, (void *)1}, {step, (void *)2}, {step, (void *)3}};
	blq_chain *c = blq_chain_new(steps, 3, NULL);
	blq_worker w = blq_chain_worker(c);
	logged l = {0};

	cr_assert_eq(w.fn(w.ctx, &l, NULL), 0);
	cr_expect_str_eq(l.log, "123");

	blq_worker failing[] = {{step, (void *)1}, {step, (void *)7}, {step, (void *)3}};
	blq_chain *f = blq_chain_new(failing, 3, NULL);
	logged l2 = {0};
	w = blq_chain_worker(f);
	cr_expect_eq(w.fn(w.ctx, &l2, NULL), 42, "the failing step's code");
	cr_expect_str_eq(l2.log, "17", "step 3 did not run");
	blq_chain_free(c);
	blq_chain_free(f);
}

Test(workers, bad_compositions_are_refused_with_a_message)
{
	blq_error err;
	blq_worker steps[] = {{step, NULL}, {NULL, NULL}};

	cr_expect_null(blq_chain_new(NULL, 0, &err));
	cr_expect_str_eq(err.msg, "chain: steps: need at least one");
	cr_expect_null(blq_chain_new(steps, 2, &err));
	cr_expect_str_eq(err.msg, "chain: steps[1]: fn is NULL");
	blq_async_config a = {.steps = steps, .n = 2};
	cr_expect_null(blq_async_chain_new(&a, &err));
	cr_expect_str_eq(err.msg, "async_chain: steps[1]: fn is NULL");
	a.n = 65;
	cr_expect_null(blq_async_chain_new(&a, &err));
	cr_expect_str_eq(err.msg, "async_chain: n: must be <= 64, got 65");
	a.n = 1;
	a.helpers = 1000;
	cr_expect_null(blq_async_chain_new(&a, &err));
	cr_expect_str_eq(err.msg, "async_chain: helpers: must be <= 256, got 1000");
	blq_chain_free(NULL);
	blq_async_chain_free(NULL);
}

/* A NULL where a worker's object belongs gives a worker without fn, which
 * a queue and a chain refuse, instead of one that crashes on its first
 * item. */
Test(workers, null_arguments_give_a_worker_that_is_refused)
{
	blq_error err;
	blq_enqueuer storage = {0};
	blq_discard d;
	blq_discard_init(&d, NULL);

	blq_worker w[] = {
		blq_transit_worker(NULL, blq_discard_enqueuer(&d)),
		blq_transit_worker(&storage, (blq_enqueuer){.self = &d}),
		blq_chain_worker(NULL),
		blq_async_chain_worker(NULL),
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		cr_expect_null(w[i].fn, "worker %zu", i);
		blq_config c = {.capacity = 4, .workers = 1, .worker = w[i].fn,
				.worker_ctx = w[i].ctx};
		cr_expect_null(blq_new(&c, &err), "worker %zu", i);
		cr_expect(strstr(err.msg, "worker: is NULL") != NULL, "%s", err.msg);
		cr_expect_null(blq_chain_new(&w[i], 1, &err), "worker %zu", i);
		cr_expect_str_eq(err.msg, "chain: steps[0]: fn is NULL");
	}
	cr_expect_null(storage.enqueue, "storage is left alone");
	cr_expect_null(blq_async_chain_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
}

/* Two steps that each signal, then wait for the other's signal: they can
 * only both finish if they run at the same time. */
typedef struct rendezvous {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int arrived;
} rendezvous;

static int meet(void *ctx, void *payload, blq_task *t)
{
	rendezvous *r = payload;
	struct timespec limit;

	(void)ctx, (void)t;
	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += 5;
	pthread_mutex_lock(&r->mu);
	r->arrived++;
	pthread_cond_broadcast(&r->cond);
	int rc = 0;
	while (r->arrived < 2 && rc == 0)
		rc = pthread_cond_timedwait(&r->cond, &r->mu, &limit);
	pthread_mutex_unlock(&r->mu);
	return rc == 0 ? 0 : 99;
}

Test(workers, async_chain_runs_steps_in_parallel)
{
	blq_worker steps[] = {{meet, NULL}, {meet, NULL}};
	blq_async_config cfg = {.steps = steps, .n = 2};
	blq_error err;
	blq_async_chain *a = blq_async_chain_new(&cfg, &err);
	cr_assert_not_null(a, "%s", err.msg);
	blq_worker w = blq_async_chain_worker(a);
	rendezvous r = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

	cr_expect_eq(w.fn(w.ctx, &r, NULL), 0, "each step saw the other");
	cr_expect_eq(r.arrived, 2);
	blq_async_chain_free(a);
}

static _Atomic int done_calls;
static void count_done(void *ctx, void *payload)
{
	(void)ctx, (void)payload;
	atomic_fetch_add(&done_calls, 1);
}

static int ok_step(void *ctx, void *payload, blq_task *t)
{
	(void)payload, (void)t;
	atomic_fetch_add((_Atomic int *)ctx, 1);
	return 0;
}

static int fail_step(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)payload, (void)t;
	return 5;
}

Test(workers, async_chain_reports_the_first_failure)
{
	_Atomic int ran = 0;
	blq_worker steps[] = {{ok_step, &ran}, {fail_step, NULL}, {ok_step, &ran}};
	blq_async_config cfg = {.steps = steps, .n = 3, .done = count_done};
	blq_async_chain *a = blq_async_chain_new(&cfg, NULL);
	blq_worker w = blq_async_chain_worker(a);
	int p = 0;

	cr_expect_eq(w.fn(w.ctx, &p, NULL), 5);
	cr_expect_eq(atomic_load(&ran), 2, "the other steps still ran");
	cr_expect_eq(atomic_load(&done_calls), 0, "done only on success");
	blq_async_chain_free(a);
}

Test(workers, async_chain_under_many_callers_with_one_helper)
{
	_Atomic int ran = 0;
	blq_worker steps[] = {{ok_step, &ran}, {ok_step, &ran}, {ok_step, &ran}};
	blq_async_config cfg = {.steps = steps, .n = 3, .helpers = 1, .done = count_done};
	blq_async_chain *a = blq_async_chain_new(&cfg, NULL);
	blq_worker w = blq_async_chain_worker(a);
	/* Four queue workers share one helper: calls must never wait on it. */
	blq_config c = {.capacity = 64, .workers = 4, .worker = w.fn, .worker_ctx = w.ctx};
	blq *q = must_new(&c);

	for (int i = 0; i < 2000; i++)
		cr_assert_eq(blq_enqueue(q, &ran), 0);
	blq_close(q);
	cr_expect_eq(stats(q).processed, 2000);
	cr_expect_eq(atomic_load(&ran), 3 * 2000);
	cr_expect_eq(atomic_load(&done_calls), 2000);
	blq_free(q);
	blq_async_chain_free(a);
}

/* The tree: chain( count, async_chain( count, count ), transit(q2) ). */
static _Atomic int pre, left, right;

Test(workers, a_tree_ends_in_the_next_queue_with_both_accounts_balanced)
{
	blq_config c2 = {.name = "next", .capacity = 128, .workers = 2, .worker = sink,
			 .item_free = tu_item_free};
	blq *q2 = must_new(&c2);
	blq_worker par[] = {{ok_step, &left}, {ok_step, &right}};
	blq_async_config ac = {.steps = par, .n = 2};
	blq_async_chain *a = blq_async_chain_new(&ac, NULL);
	blq_enqueuer target;
	blq_worker tree[] = {{ok_step, &pre}, blq_async_chain_worker(a),
			     blq_transit_worker(&target, blq_as_enqueuer(q2))};
	blq_chain *c = blq_chain_new(tree, 3, NULL);
	blq_worker w = blq_chain_worker(c);
	blq_config c1 = {.name = "tree", .capacity = 128, .workers = 3, .worker = w.fn,
			 .worker_ctx = w.ctx, .item_free = tu_item_free};
	blq *q1 = must_new(&c1);

	for (uint64_t i = 0; i < 3000; i++)
		cr_assert_eq(blq_enqueue(q1, tu_item_new(i)), 0);
	blq_close(q1);
	blq_close(q2);
	struct blq_stats s1 = stats(q1), s2 = stats(q2);
	cr_expect_eq(s1.processed, 3000);
	cr_expect_eq(s2.processed, 3000);
	cr_expect(tu_balanced(&s1), "first queue balanced");
	cr_expect(tu_balanced(&s2), "second queue balanced");
	cr_expect_eq(atomic_load(&pre), 3000);
	cr_expect_eq(atomic_load(&left), 3000);
	cr_expect_eq(atomic_load(&right), 3000);
	cr_expect_eq(atomic_load(&tu_freed), 3000);
	blq_free(q1);
	blq_free(q2);
	blq_chain_free(c);
	blq_async_chain_free(a);
}
