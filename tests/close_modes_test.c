/*
 * The close modes of seed 000 (queue.h's table): Light, Soft, Soft with a
 * time limit, Hard, and a close that gets stronger while another runs.
 * What each does to the running item (finished, its token raised or not),
 * to the queued ones and to those the timer holds (run, or leaked / lost),
 * what it returns, and the accounting invariant per item.
 *
 * The worker holds item 0 in a gate (or, `cooperative`, until its token is
 * raised), so the running item and the queued ones are known when the
 * close begins.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

#define HOUR (3600ull * 1000000000ull)
#define MS 1000000ull

typedef struct wctx {
	tu_gate gate;
	bool cooperative;     /* item 0 runs until its token is raised */
	bool fail_first;      /* item 0 fails (after the gate) */
	_Atomic int cancelled_at_end; /* item 0's token when it returned */
	_Atomic int runs;     /* attempts of all items */
	pthread_mutex_t mu;
	uint64_t order[64];
	size_t n;
} wctx;

static int worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;

	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	atomic_fetch_add(&w->runs, 1);
	if (it->id == 0) {
		if (w->cooperative)
			while (!blq_task_cancelled(task))
				tu_sleep_us(100);
		else
			tu_gate_pass(&w->gate);
		atomic_store(&w->cancelled_at_end, blq_task_cancelled(task) ? 1 : 2);
	}
	pthread_mutex_lock(&w->mu);
	if (w->n < 64)
		w->order[w->n++] = it->id;
	pthread_mutex_unlock(&w->mu);
	if (it->id == 0 && (w->fail_first || w->cooperative)) {
		atomic_store(&it->taken, 0);
		return 1; /* the queue keeps the payload */
	}
	tu_item_free(it);
	return 0;
}

static wctx *wctx_new(void)
{
	wctx *w = calloc(1, sizeof(*w));

	tu_gate_init(&w->gate);
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

/* Once the queue that ran it is freed (blq_free joins every worker). */
static void wctx_free(wctx *w)
{
	tu_gate_destroy(&w->gate);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static blq_config cfg_for(wctx *w)
{
	blq_config c = {0};

	c.name = "modes";
	c.capacity = 16;
	c.workers = 1;
	c.worker = worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	return c;
}

/* Item 0 running, items 1..5 queued, 100 and 101 in the timer for an hour. */
static void load(blq *q)
{
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000), "item 0 never started");
	for (uint64_t i = 1; i <= 5; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	for (uint64_t i = 100; i <= 101; i++) {
		blq_job j = {.payload = tu_item_new(i), .delay_ns = HOUR};

		cr_assert_eq(blq_enqueue_job(q, &j), 0);
	}
	cr_assert_eq(blq_size(q), 7);
	cr_assert_eq(stats(q).delayed, 2);
}

static bool state_is(blq *q, const char *state)
{
	char buf[4096], want[64];

	snprintf(want, sizeof(want), "\"status\":\"%s\"", state);
	return blq_status_json(q, buf, sizeof(buf)) > 0 && strstr(buf, want) != NULL;
}

typedef struct closer {
	blq *q;
	int (*fn)(blq *);
	_Atomic int done;
	int rc;
} closer;

static void *run_closer(void *p)
{
	closer *c = p;

	c->rc = c->fn(c->q);
	atomic_store(&c->done, 1);
	return NULL;
}

/* Runs c's close on a thread of its own and waits until the queue reports
 * `state` (the close has begun). */
#define START_CLOSER(t, c, state)                                                                  \
	do {                                                                                       \
		pthread_create(&(t), NULL, run_closer, &(c));                                      \
		cr_assert(TU_WAIT_FOR(state_is((c).q, (state)), 2000), "never %s", (state));       \
	} while (0)

TestSuite(close_modes, .timeout = 30);

/* Soft without a DLQ: the running item finishes with its token down and
 * counts processed; the five queued and the two delayed are freed and
 * counted lost; nothing else runs. */
Test(close_modes, soft_finishes_the_running_item_and_drops_the_rest)
{
	wctx *w = wctx_new();
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	closer cl = {.q = q, .fn = blq_close_soft};
	pthread_t t;
	START_CLOSER(t, cl, "soft-closing");
	tu_item *late = tu_item_new(9);
	cr_expect_eq(blq_try_enqueue(q, late), BLQ_ECLOSED, "a soft close refuses new items");
	tu_item_free(late);
	tu_sleep_us(20000);
	cr_expect_eq(atomic_load(&cl.done), 0, "returned before the running item finished");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	cr_expect_eq(cl.rc, 0);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 2, "the running item's token was raised");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 8);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect_eq(s.leaked, 0);
	cr_expect_eq(s.size, 0);
	cr_expect_eq(s.delayed, 0);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(w->n, 1);
	cr_expect_eq(w->order[0], 0);
	cr_expect_eq(atomic_load(&w->runs), 1, "a queued item ran");
	cr_expect_eq(atomic_load(&tu_freed), 9); /* 8 + the refused one */
	cr_expect(state_is(q, "closed"));
	blq_free(q);
	wctx_free(w);
}

/* Soft with a DLQ: the queued items go to it in their order, the timer's
 * with them; all counted leaked_closed. */
Test(close_modes, soft_hands_the_queued_and_delayed_to_the_dlq)
{
	wctx *w = wctx_new();
	tu_rec *r = tu_rec_new();
	blq_config c = cfg_for(w);
	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	blq *q = must_new(&c);
	load(q);

	closer cl = {.q = q, .fn = blq_close_soft};
	pthread_t t;
	START_CLOSER(t, cl, "soft-closing");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	cr_expect_eq(cl.rc, 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.leaked_closed, 7);
	cr_expect_eq(s.leaked, 7);
	cr_expect_eq(s.lost, 0);
	cr_expect(tu_balanced(&s));
	cr_assert_eq(tu_rec_count(r), 7);
	/* The rings' items keep their order; the timer's are there too. */
	uint64_t next = 1, delayed = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->ids[i] >= 100)
			delayed += r->ids[i];
		else
			cr_expect_eq(r->ids[i], next++, "DLQ position %zu", i);
	}
	cr_expect_eq(next, 6);
	cr_expect_eq(delayed, 201);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 2);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

/* A running item that fails during a Soft close is not retried (there is
 * nobody left to run it): it ends like the queued ones, in the DLQ. */
Test(close_modes, soft_does_not_retry_a_failing_running_item)
{
	wctx *w = wctx_new();
	w->fail_first = true;
	tu_rec *r = tu_rec_new();
	blq_config c = cfg_for(w);
	c.max_retries = 3;
	c.dlq.enqueue = tu_rec_enqueue;
	c.dlq.self = r;
	blq *q = must_new(&c);
	load(q);

	closer cl = {.q = q, .fn = blq_close_soft};
	pthread_t t;
	START_CLOSER(t, cl, "soft-closing");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.retried, 0);
	cr_expect_eq(s.processed, 0);
	cr_expect_eq(s.leaked_closed, 8);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&w->runs), 1);
	cr_expect_eq(tu_rec_count(r), 8);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

typedef struct opener {
	blq *q;
	wctx *w;
	const char *state;
} opener;

/* Opens the gate once the queue reports `state` (the close has begun). */
static void *open_when(void *p)
{
	opener *o = p;

	if (TU_WAIT_FOR(state_is(o->q, o->state), 5000))
		tu_sleep_us(10000);
	tu_gate_open(&o->w->gate);
	return NULL;
}

/* Soft within its limit: 0, and the token never raised. */
Test(close_modes, soft_timeout_in_time_returns_0)
{
	wctx *w = wctx_new();
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	opener o = {.q = q, .w = w, .state = "soft-closing"};
	pthread_t t;
	pthread_create(&t, NULL, open_when, &o);
	cr_expect_eq(blq_close_soft_timeout(q, 5000 * MS), 0);
	pthread_join(t, NULL);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 2);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* Soft past its limit turns Hard: the running item's token is raised at
 * the limit, the call returns BLQ_ETIMEDOUT soon after; the running item
 * returned 1 on its cancel, its last attempt: failed. The rest is lost. */
Test(close_modes, soft_timeout_past_its_limit_turns_hard)
{
	wctx *w = wctx_new();
	w->cooperative = true;
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	uint64_t t0 = tu_now_ns();
	cr_expect_eq(blq_close_soft_timeout(q, 50 * MS), BLQ_ETIMEDOUT);
	uint64_t took = tu_now_ns() - t0;
	cr_expect(took >= 50 * MS && took < 1000 * MS, "took %llu ms",
		  (unsigned long long)(took / MS));
	tu_wait_unstuck(q);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 1, "the token was not raised");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 0);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect_eq(atomic_load(&w->runs), 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* A Light close under way becomes Soft: what it would have drained is
 * dropped, the running item still finishes uncancelled, and both callers
 * return 0 once the queue is closed. */
Test(close_modes, light_then_soft_drops_what_the_light_close_would_drain)
{
	wctx *w = wctx_new();
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	closer light = {.q = q, .fn = blq_close};
	pthread_t t;
	START_CLOSER(t, light, "closing");
	opener o = {.q = q, .w = w, .state = "soft-closing"};
	pthread_t g;
	pthread_create(&g, NULL, open_when, &o);
	cr_expect_eq(blq_close_soft(q), 0);
	pthread_join(t, NULL);
	pthread_join(g, NULL);
	cr_expect_eq(light.rc, 0);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 2);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect_eq(atomic_load(&w->runs), 1);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* A Soft close under way becomes Hard: the running item's token is raised
 * and both callers return. */
Test(close_modes, soft_then_hard_cancels_the_running_item)
{
	wctx *w = wctx_new();
	w->cooperative = true;
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	closer soft = {.q = q, .fn = blq_close_soft};
	pthread_t t;
	START_CLOSER(t, soft, "soft-closing");
	tu_sleep_us(20000);
	cr_expect_eq(atomic_load(&soft.done), 0);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 0, "a soft close raised the token");
	cr_expect_eq(blq_force_close(q), 0);
	pthread_join(t, NULL);
	cr_expect_eq(soft.rc, 0);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 1);
	cr_expect(state_is(q, "closed"));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* A Hard close is not weakened by a Soft one after it. */
Test(close_modes, a_close_never_gets_weaker)
{
	wctx *w = wctx_new();
	w->cooperative = true;
	blq_config c = cfg_for(w);
	blq *q = must_new(&c);
	load(q);

	closer hard = {.q = q, .fn = blq_force_close};
	pthread_t t;
	pthread_create(&t, NULL, run_closer, &hard);
	cr_expect_eq(blq_close_soft(q), 0);
	pthread_join(t, NULL);
	cr_expect_eq(atomic_load(&w->cancelled_at_end), 1);
	cr_expect_eq(blq_close(q), 0); /* after the end: a no-op */
	struct blq_stats s = stats(q);
	cr_expect_eq(s.failed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* A Soft close from inside the queue's own worker starts the close and
 * returns at once; blq_free finishes it. */
static _Atomic int inside_rc = -100;

static int closing_worker(void *ctx, void *payload, blq_task *task)
{
	blq *q = blq_task_queue(task);

	(void)ctx;
	if (((tu_item *)payload)->id == 0)
		atomic_store(&inside_rc, blq_close_soft(q));
	tu_item_free(payload);
	return 0;
}

Test(close_modes, soft_from_inside_a_worker_returns_at_once)
{
	wctx *w = wctx_new();
	blq_config c = cfg_for(w);
	c.worker = closing_worker;
	c.capacity = 64;
	blq *q = must_new(&c);

	blq_pause(q);
	for (uint64_t i = 0; i < 10; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	blq_resume(q);
	cr_assert(TU_WAIT_FOR(atomic_load(&inside_rc) != -100, 2000));
	cr_expect_eq(atomic_load(&inside_rc), 0);
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 10);
	wctx_free(w);
}

/* Bad input: NULL. */
Test(close_modes, null_queue_is_einval)
{
	cr_expect_eq(blq_close_soft(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_close_soft_timeout(NULL, MS), BLQ_EINVAL);
	cr_expect_eq(blq_force_close(NULL), BLQ_EINVAL);
}
