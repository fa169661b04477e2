/*
 * Taking ahead (worker.c): a worker that finds its ring deep takes a hand
 * of items with its own. These tests make the hand visible: the first item
 * taken blocks in a gate, so its worker holds the hand while the queue
 * goes on. They check that the hand is counted in blq_size, runs in order
 * on its own worker, waits out a pause, and ends like the queued items in
 * a Soft and a Hard close; and the accounting invariant each time.
 *
 * Deterministic: every worker first runs a blocker item that waits in a
 * gate of its own; 41 items go into the ring of 64 meanwhile; then one
 * blocker is let go, and its worker's next take finds 41 in the ring, at
 * least 2 * (16 + 1), so a hand of 16 goes with item 0, which blocks. The
 * other blocker (two workers) is let go after that.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

#define N 41
#define HAND 16 /* BLQ__HAND in worker.c */
#define BLOCKER 1000 /* ids from here are blockers, one per worker */

typedef struct wctx {
	tu_gate hold[2];   /* blocker i waits in hold[i] */
	_Atomic int held;  /* blockers inside their gate */
	tu_gate gate;
	_Atomic int first; /* the first item run blocks in the gate */
	_Atomic uint64_t blocked_id;
	pthread_mutex_t mu;
	pthread_t thread[N]; /* which thread ran each item */
	uint64_t order[N];
	size_t n;
} wctx;

static int worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;

	(void)task;
	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	if (it->id >= BLOCKER) {
		atomic_fetch_add(&w->held, 1);
		tu_gate_pass(&w->hold[it->id - BLOCKER]);
		tu_item_free(it);
		return 0;
	}
	if (atomic_exchange(&w->first, 1) == 0) {
		atomic_store(&w->blocked_id, it->id);
		tu_gate_pass(&w->gate);
	}
	pthread_mutex_lock(&w->mu);
	if (w->n < N) {
		w->thread[w->n] = pthread_self();
		w->order[w->n++] = it->id;
	}
	pthread_mutex_unlock(&w->mu);
	tu_item_free(it);
	return 0;
}

static wctx *wctx_new(void)
{
	wctx *w = calloc(1, sizeof(*w));

	tu_gate_init(&w->hold[0]);
	tu_gate_init(&w->hold[1]);
	tu_gate_init(&w->gate);
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

static void wctx_free(wctx *w)
{
	tu_gate_destroy(&w->hold[0]);
	tu_gate_destroy(&w->hold[1]);
	tu_gate_destroy(&w->gate);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static size_t ran(wctx *w)
{
	pthread_mutex_lock(&w->mu);
	size_t n = w->n;
	pthread_mutex_unlock(&w->mu);
	return n;
}

/* A blocker per worker (1 or 2), items 0..N-1 queued while they hold
 * every worker, then the blockers let go one after the other; returns once
 * the first item taken, item 0, is blocked in the gate with its hand. */
static blq *load(wctx *w, unsigned workers, tu_rec *dlq)
{
	blq_config c = {0};

	c.name = "hand";
	c.capacity = 64;
	c.workers = workers;
	c.worker = worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	if (dlq != NULL) {
		c.dlq.enqueue = tu_rec_enqueue;
		c.dlq.self = dlq;
	}
	blq *q = must_new(&c);
	for (unsigned i = 0; i < workers; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(BLOCKER + i)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->held) == (int)workers, 2000),
		  "%d of %u workers holding a blocker", atomic_load(&w->held), workers);
	for (uint64_t i = 0; i < N; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	tu_gate_open(&w->hold[0]);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->first) != 0, 2000), "no item started");
	cr_assert_eq(atomic_load(&w->blocked_id), 0, "the first item run is not item 0");
	if (workers > 1)
		tu_gate_open(&w->hold[1]);
	return q;
}

/* ids[0..n) are consecutive and ascending. */
static bool consecutive(const uint64_t *ids, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (ids[i] != ids[i - 1] + 1)
			return false;
	return true;
}

TestSuite(take_ahead, .timeout = 30);

/* Two workers: the one blocked holds its hand of 16; the other runs the
 * rest and then finds nothing. The 16 count in blq_size, and run in
 * their order on the blocked worker's thread once it returns. */
Test(take_ahead, a_hand_counts_in_size_and_runs_in_order_on_its_worker)
{
	wctx *w = wctx_new();
	blq *q = load(w, 2, NULL);

	cr_assert(TU_WAIT_FOR(ran(w) == N - 1 - HAND, 5000), "the other worker ran %zu, not %d",
		  ran(w), N - 1 - HAND);
	tu_sleep_us(20000);
	cr_expect_eq(ran(w), N - 1 - HAND, "an item of the hand ran on the other worker");
	cr_expect_eq(blq_size(q), HAND, "the hand is not counted in blq_size");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, N + 2); /* and the two blockers */
	cr_expect_eq(s.processed, N - 1 - HAND + 2);

	pthread_t other = w->thread[0];
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_wait_idle(q, 5000000000ull), 0);
	cr_assert_eq(ran(w), N);
	/* The first item taken, then its hand, in order, on one thread. */
	uint64_t first = atomic_load(&w->blocked_id);
	size_t at = N - 1 - HAND;
	cr_expect_eq(w->order[at], first);
	cr_expect(consecutive(&w->order[at], HAND + 1), "the hand ran out of order");
	for (size_t i = at; i < N; i++)
		cr_expect(!pthread_equal(w->thread[i], other), "item %zu of the hand ran elsewhere", i);
	s = stats(q);
	cr_expect_eq(s.processed, N + 2);
	cr_expect_eq(s.size, 0);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

/* A pause that begins while the hand is held: no item of it starts until
 * the resume. */
Test(take_ahead, a_pause_holds_the_hand)
{
	wctx *w = wctx_new();
	blq *q = load(w, 1, NULL);

	cr_assert_eq(blq_pause(q), 0);
	tu_gate_open(&w->gate);
	cr_assert(TU_WAIT_FOR(ran(w) == 1, 2000));
	tu_sleep_us(50000);
	cr_expect_eq(ran(w), 1, "%zu items started while paused", ran(w));
	cr_expect_eq(blq_size(q), N - 1);
	cr_assert_eq(blq_resume(q), 0);
	cr_assert_eq(blq_wait_idle(q, 5000000000ull), 0);
	cr_expect_eq(ran(w), N);
	cr_expect(consecutive(w->order, N), "one worker ran the items out of order");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, N + 1); /* and the blocker */
	cr_expect(tu_balanced(&s));
	blq_free(q);
	wctx_free(w);
}

typedef struct closer {
	blq *q;
	int (*fn)(blq *);
	int rc;
} closer;

static void *run_closer(void *p)
{
	closer *c = p;

	c->rc = c->fn(c->q);
	return NULL;
}

static bool state_is(blq *q, const char *state)
{
	char buf[4096], want[64];

	snprintf(want, sizeof(want), "\"status\":\"%s\"", state);
	return blq_status_json(q, buf, sizeof(buf)) > 0 && strstr(buf, want) != NULL;
}

/* Starts cl's close on thread t and waits until the queue says `state`. */
static void start_closer(pthread_t *t, closer *cl, const char *state)
{
	pthread_create(t, NULL, run_closer, cl);
	cr_assert(TU_WAIT_FOR(state_is(cl->q, state), 2000), "never %s", state);
}

/* A Soft close with a DLQ: the running item finishes; the hand goes to
 * the DLQ (its worker abandons it after its item), then the queued items
 * (the closer's sweep, once the worker left): items 1..40 in their order,
 * counted leaked_closed, none run. */
Test(take_ahead, a_soft_close_hands_the_hand_to_the_dlq_in_order)
{
	wctx *w = wctx_new();
	tu_rec *r = tu_rec_new();
	blq *q = load(w, 1, r);

	closer cl = {.q = q, .fn = blq_close_soft};
	pthread_t t;
	start_closer(&t, &cl, "soft-closing");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	cr_expect_eq(cl.rc, 0);
	cr_expect_eq(ran(w), 1, "an item of the hand ran after a Soft close");
	cr_assert_eq(tu_rec_count(r), N - 1);
	cr_expect_eq(r->ids[0], 1);
	cr_expect(consecutive(r->ids, N - 1), "the DLQ got the items out of order");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 2); /* the blocker and item 0 */
	cr_expect_eq(s.leaked_closed, N - 1);
	cr_expect_eq(s.size, 0);
	cr_expect(tu_balanced(&s));
	blq_free(q);
	tu_rec_free(r);
	wctx_free(w);
}

/* A Hard close without a DLQ: the hand is freed and counted lost, like
 * the queued items. */
Test(take_ahead, a_hard_close_frees_the_hand_as_lost)
{
	wctx *w = wctx_new();
	blq *q = load(w, 1, NULL);

	closer cl = {.q = q, .fn = blq_force_close};
	pthread_t t;
	start_closer(&t, &cl, "force-closing");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	cr_expect_eq(cl.rc, 0);
	cr_expect_eq(ran(w), 1, "an item of the hand ran after a Hard close");
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 2); /* the blocker and item 0 */
	cr_expect_eq(s.lost, N - 1);
	cr_expect_eq(s.size, 0);
	cr_expect(tu_balanced(&s));
	cr_expect_eq(atomic_load(&tu_freed), N + 1);
	blq_free(q);
	wctx_free(w);
}
