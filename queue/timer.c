/*
 * The timer: where delayed items and retries wait for their time.
 *
 * Design
 * - Items wait by due time (ties keep their insertion order) under one
 *   mutex, and one thread sleeps until the earliest due time, then moves
 *   every due item into the rings. An item due no earlier than the last
 *   one queued (the common case: one delay interval, one backoff step)
 *   joins a FIFO lane in O(1); the others go to a binary min-heap; the
 *   thread takes the earlier of the two heads (timed_set.c). It sleeps
 *   until slightly after the head is due (an eighth of the head's delay,
 *   at most 200 us), so a stream of retries is delivered in batches, not
 *   one wake-up each. No worker ever sleeps through a delay or a backoff
 *   (the original makes the worker sleep, so one long per-job delay holds
 *   a worker, and with it the items behind it); an item in the timer is
 *   never in front of one that is due.
 * - Workers' retries come in through each worker's inbox (inbox.c), a
 *   ck_ring in SPSC mode (one worker writes it; the mutex's holder reads
 *   it) that the thread drains into the lane or heap each time it wakes
 *   and before it sleeps; blq__timer_add (producers' delays, and retries
 *   the inbox cannot take) takes the mutex.
 * - Workers serve too (blq__timer_assist): a worker that has just read the
 *   clock for a retry and finds the head a quarter of its slack past due
 *   takes the mutex if it is free and moves the due items into the due
 *   ring itself. Under a stream of retries the items then come due within
 *   that quarter, and the thread, finding at its wake-up that the workers
 *   served since its last and nothing is late past its slack, sleeps
 *   BLQ__TIMER_RELAXED times its slack past the head (and one slack after
 *   a wake-up where they did not): a fallback for when the retries stop.
 *   Its wake-ups, each a timer interrupt and a preempted worker or
 *   producer on a busy machine, were half of what a retry cost RETRY.
 *   Workers do not serve while the thread pushes a batch outside the
 *   mutex, so due items still enter the due ring in due order.
 * - Lateness: an item is delivered at most its wake slack after its due
 *   time when it is the head; one behind a head with a longer delay can
 *   wait for the head's slack instead, so the absolute caps hold for all
 *   (200 us, 800 us relaxed), the fractions of the delay for the head.
 * - Lazy: the lane's and heap's memory and the thread come with the first
 *   item, so a queue that never delays or backs off has none of them. They
 *   grow by doubling. `held` counts the items in the lane, the heap and the
 *   inboxes, at most timer_capacity (default: the queue's capacity): each
 *   add reserves its place there first; beyond that the caller's rules
 *   apply (timer_add's mode).
 * - Accounting: an item counts as staged (q->staged, or its inbox's
 *   in - out) from the moment it enters the timer until the thread has
 *   pushed it into a ring (or leaked or abandoned it), so blq_size includes
 *   it and a graceful close waits for it: the workers do not exit while
 *   anything is staged (internal.h, blq__staged).
 * - Due items go to a ring of their own (q->due, BLQ__TIMER_DUE_CAP),
 *   which the workers look at before the producers' rings: the thread then
 *   does not fight the producers for room in full rings (a third producer
 *   spinning on a full ring cost RETRY a fifth of its throughput), and a
 *   retry that is due runs next instead of behind a full queue of new
 *   items. Only when that ring is full does the thread push like a
 *   producer (queue/admission.c's policy, in BLQ__TIMER mode): a leaky
 *   queue leaks a due item that finds the rings full; otherwise the thread
 *   waits for room, through a graceful close, until a force. With QoS a
 *   due item enters its sub-queue instead, like a new one.
 * - The due ring stays the MPMC ring of util/ring.h, not ck_ring's SPMC
 *   mode, though one thread pushes at a time: the thread pushes its batch
 *   outside the mutex (admission.c may wait there for room, and the DLQ and
 *   hooks run there), kept apart from the workers' pushes (assist) by
 *   `delivering`, not by holding the mutex. And ck's multi-consumer dequeue
 *   copies a slot before its CAS, so a worker preempted there reads a slot
 *   the thread may be refilling once the ring wraps (the copy is then
 *   thrown away): a race by the letter, which TSan reports.
 * - Clock: the heap is ordered on the queue's clock. With the default
 *   clock (CLOCK_MONOTONIC) the thread sleeps until the earliest due time
 *   plus the slack above; with a caller's clock (a test's fake one) it cannot know how
 *   that clock moves, so it looks at least every 50 ms and tests kick it
 *   after moving their clock.
 * - Close: graceful: the thread runs on until finish() stops it after the
 *   workers exited (the heap is empty by then). Force: the thread stops at
 *   once (an item in its hands is abandoned: DLQ or lost), and finish()
 *   sweeps the inboxes and the heap the same way after joining it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inbox.h"
#include "internal.h"

#define BLQ__TIMER_BATCH 64
#define BLQ__TIMER_DRAIN_WAYS 16
#define BLQ__TIMER_STUCK_POLL_NS 1000000ull
#define BLQ__TIMER_DUE_CAP 1024
#define BLQ__TIMER_OWN_CLOCK_POLL_NS 50000000ull

int blq__timer_init(blq *q)
{
	blq__timer *t = &q->timer;

	/* Default: the queue's capacity (with QoS, known only now). */
	if (q->cfg.timer_capacity == 0)
		q->cfg.timer_capacity = q->capacity;
	t->limit = q->cfg.timer_capacity;
	atomic_store_explicit(&t->assist_at, UINT64_MAX, memory_order_relaxed);
	/* Adaptive: producers adding delays and the thread popping due items
	 * hold it for a heap operation each; spinning briefly before sleeping
	 * cut RETRY's context switches by a fifth and its W1 ratio from a
	 * median 1.50x to 1.31x over ten alternating runs (when the workers'
	 * retries still took it; they now use their inboxes). */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	int e = pthread_mutex_init(&t->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	if (e != 0)
		return BLQ_ENOMEM;
	/* The thread's timed waits are on CLOCK_MONOTONIC: a wall-clock jump
	 * must not fire or hold back delays. */
	int e1 = blq__cond_init_monotonic(&t->cond);
	int e2 = blq__cond_init_monotonic(&t->room);
	if (e1 != 0 || e2 != 0) {
		if (e1 == 0)
			pthread_cond_destroy(&t->cond);
		if (e2 == 0)
			pthread_cond_destroy(&t->room);
		pthread_mutex_destroy(&t->mu);
		return BLQ_ENOMEM;
	}
	t->ready = true;
	return 0;
}

void blq__timer_destroy(blq *q)
{
	blq__timer *t = &q->timer;

	if (!t->ready)
		return;
	pthread_cond_destroy(&t->room);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->mu);
	blq__timed_set_free(&t->set);
	blq__ring *due = atomic_exchange_explicit(&q->due, NULL, memory_order_relaxed);
	if (due != NULL) {
		blq__ring_destroy(due);
		free(due);
	}
	t->ready = false;
}

static bool forced(const blq *q)
{
	return atomic_load_explicit(&q->forced, memory_order_acquire) != 0;
}

bool blq__timer_reserve(blq__timer *t)
{
	uint64_t h = atomic_load_explicit(&t->held, memory_order_relaxed);

	/* A CAS, not an add undone on failure: `held` never reads above the
	 * limit, so a failed attempt cannot turn another one away. */
	do {
		if (h >= t->limit)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&t->held, &h, h + 1, memory_order_seq_cst,
							 memory_order_relaxed));
	return true;
}

/* `held` goes down by n, and producers waiting for room (timer_add) are
 * woken. Caller holds t->mu: `held` goes down nowhere else, so a waiter
 * that found no room under mu cannot miss this. */
static void release(blq__timer *t, uint64_t n)
{
	atomic_fetch_sub_explicit(&t->held, n, memory_order_seq_cst);
	if (t->room_waiters > 0)
		pthread_cond_broadcast(&t->room);
}

/* How long an entry waits in all: what its slack is a fraction of. */
static uint64_t span_of(const blq__timed *e)
{
	return e->due > e->since ? e->due - e->since : 0;
}

/* How long it has waited by `now`: the queue_delayed metric. */
static uint64_t waited_of(const blq__timed *e, uint64_t now)
{
	return now > e->since ? now - e->since : 0;
}

/* Tells retrying workers when to serve the head (blq__timer_assist): a
 * quarter of its slack past its due time, so that one of them serves a
 * batch, not each an item. Caller holds t->mu, after the lane or heap
 * changed. */
static void publish_assist(blq *q)
{
	blq__timer *t = &q->timer;
	const blq__timed *first = blq__timed_set_earliest(&t->set);
	uint64_t at = UINT64_MAX;

	if (first != NULL && atomic_load_explicit(&q->due, memory_order_relaxed) != NULL)
		at = blq__sat_add(first->due, blq__timer_slack(span_of(first)) / 4);
	/* Only a change is stored: every retry reads this line. */
	if (atomic_load_explicit(&t->assist_at, memory_order_relaxed) != at)
		atomic_store_explicit(&t->assist_at, at, memory_order_relaxed);
}

/* How many items of a batch came in through each origin: they leave the
 * staged counts per origin (origins_settle), after they are in a ring. */
typedef struct origins {
	size_t n;
	struct {
		uint32_t origin;
		uint64_t n;
	} of[BLQ__TIMER_BATCH];
} origins;

static void origins_add(origins *o, uint32_t origin)
{
	size_t j = 0;

	while (j < o->n && o->of[j].origin != origin)
		j++;
	if (j == o->n) {
		o->of[j].origin = origin;
		o->of[j].n = 0;
		o->n++;
	}
	o->of[j].n++;
}

/* Settles the workers' inbox counts of a batch and returns how many of
 * its items came through blq__timer_add: those count in q->staged, which
 * the caller's blq__handoff uncounts. After the pushes. */
static uint64_t origins_settle(blq *q, const origins *o)
{
	uint64_t shared = 0;

	for (size_t j = 0; j < o->n; j++) {
		if (o->of[j].origin == BLQ__TIMER_SHARED)
			shared += o->of[j].n;
		else
			blq__inbox_settle(q, o->of[j].origin, o->of[j].n);
	}
	if (shared > 0)
		atomic_fetch_sub_explicit(&q->timer.held_shared, shared, memory_order_relaxed);
	return shared;
}

/* Moves the workers' inbox entries (inbox.c) into the lane or the heap,
 * merged by their heads' due times (an inbox is in due order when its
 * worker's retries wait one backoff step), so that the retries of several
 * workers, interleaved in time, still join the lane in O(1); any other
 * entry goes to the heap, as in blq__timer_add.
 * Caller holds t->mu. False when an entry found no memory: it stays in
 * its inbox for the next look. */
static bool drain_inboxes(blq *q)
{
	blq__timer *t = &q->timer;
	struct {
		blq__inbox *b;
		unsigned left; /* of the entries published when we looked */
	} way[BLQ__TIMER_DRAIN_WAYS];
	unsigned i = 0;

	while (i < blq__slots(q)) {
		unsigned n = 0;

		for (; i < blq__slots(q) && n < BLQ__TIMER_DRAIN_WAYS; i++) {
			blq__inbox *b = blq__inbox_at(q, i);
			if (b == NULL)
				continue;
			way[n].b = b;
			way[n].left = blq__inbox_ready(b);
			n += way[n].left != 0;
		}
		while (n > 0) {
			unsigned m = 0;

			for (unsigned j = 1; j < n; j++)
				if (blq__inbox_head(way[j].b)->due < blq__inbox_head(way[m].b)->due)
					m = j;
			/* Inserted from its slot, and only then taken: an
			 * entry that finds no memory stays where it is. */
			blq__timed *e = blq__inbox_head(way[m].b);
			e->order = t->order;
			if (blq__timed_set_insert(&t->set, e, t->limit) != 0)
				return false;
			t->order++;
			/* In the set now: hand the slot back to the worker
			 * (ck_ring has no skip; the dequeue's copy is unused). */
			blq__timed spent;
			blq__inbox_take(way[m].b, &spent);
			if (--way[m].left == 0)
				way[m] = way[--n];
		}
	}
	return true;
}

/* Has an inbox an entry the last drain did not see? */
static bool inboxes_pending(const blq *q)
{
	for (unsigned i = 0; i < blq__slots(q); i++) {
		const blq__inbox *b = blq__inbox_at(q, i);
		if (b != NULL && blq__inbox_ready(b) != 0)
			return true;
	}
	return false;
}

/* Moves one due item on through the engine (BLQ__TIMER: the rings
 * engine puts it into the due ring, or the rings when that is full; QoS
 * into its sub-queue like a new item, or the rings when that is full on a
 * queue that blocks, since the timer thread must not wait on a sub-queue,
 * which a graceful close would make it give up on), or to the DLQ.
 * Returns where a waiter should be woken, or NULL when it did not land in
 * a ring or sub-queue. */
static blq__ec *deliver(blq *q, blq__timed *e, uint64_t now)
{
	const blq_metrics_writer *m = q->cfg.metrics;
	blq__cell *c = &q->cells[BLQ__CELL_CLOSER];
	blq__ec *woken = NULL;

	if (m != NULL && m->queue_delayed != NULL)
		m->queue_delayed(m->ctx, q->name, waited_of(e, now));
	if (e->item.done != NULL)
		blq__handle_where(e->item.done, BLQ_HANDLE_QUEUED);
	if (q->engine->admit(q->engine_state, c, &e->item, BLQ__TIMER, &woken) != 0)
		blq__abandon(q, c, &e->item); /* forced while waiting for room */
	return woken;
}

/* Delivers a batch, then uncounts it and wakes once: per batch, not per
 * item, the shared counters and the wake-up barrier. (When it must wait
 * for ring room mid-batch, admission.c wakes a worker first: the items
 * pushed before have woken nobody.) */
static void deliver_batch(blq *q, blq__timed *due, size_t k, uint64_t now)
{
	blq__ec *wake[2] = {NULL, NULL}; /* the workers', an engine's movers' */
	origins from = {.n = 0};

	for (size_t i = 0; i < k; i++) {
		blq__ec *ec = deliver(q, &due[i], now);

		if (ec != NULL)
			wake[ec != &q->items_ec] = ec;
		origins_add(&from, due[i].origin);
	}
	/* After the pushes: a worker that reads no staged item on close sees
	 * the items in the rings (internal.h, inbox.c). A woken worker
	 * passes the wake-up on; when closing, everyone re-checks. */
	uint64_t shared = origins_settle(q, &from);
	blq__handoff(&q->port, &q->staged, -shared, wake[0]);
	if (wake[1] != NULL)
		blq__ec_notify(wake[1], 1);
	/* A balanced pool may have no active worker (workers_min 0). */
	if ((wake[0] != NULL || wake[1] != NULL) && q->balanced &&
	    atomic_load_explicit(&q->n_active, memory_order_acquire) == 0)
		blq__scale_up_hint(q);
}

/* Absolute CLOCK_MONOTONIC time to sleep until for an item due at `due`. */
static struct timespec wake_at(const blq *q, uint64_t due, uint64_t now)
{
	uint64_t wait = due > now ? due - now : 0;

	if (q->own_clock && wait > BLQ__TIMER_OWN_CLOCK_POLL_NS)
		wait = BLQ__TIMER_OWN_CLOCK_POLL_NS;
	uint64_t mono = blq__monotonic_ns();
	uint64_t abs = blq__sat_add(mono, wait);
	return blq__timespec_of(abs);
}

/* At a wake-up: did the workers serve what came due while the thread
 * slept? Yes when one of them did (assisted) and the head is not late
 * past its slack: the thread may sleep longer (relaxed). Otherwise (the
 * retries stopped, or they did not keep up) back to one slack. Caller
 * holds t->mu. */
static void judge_service(blq__timer *t, const blq__timed *first, uint64_t now)
{
	bool late = first != NULL &&
		    blq__sat_add(first->due, blq__timer_slack(span_of(first))) <= now;

	atomic_store_explicit(&t->relaxed, t->assisted && !late, memory_order_relaxed);
	t->assisted = false;
}

/* Takes the cancelled items out of the set and ends them, a batch at a
 * time: unlocked around their ends (their hooks, item_free), as the
 * delivery is. Caller holds t->mu. */
static bool is_cancelled(const blq__timed *e, void *ctx)
{
	(void)ctx;
	return blq__handle_cancelled(e->item.done);
}

static void take_cancelled(blq *q)
{
	blq__timer *t = &q->timer;
	blq__cell *c = &q->cells[BLQ__CELL_CLOSER];
	blq__timed out[BLQ__TIMER_BATCH];
	size_t k;

	while ((k = blq__timed_set_take_if(&t->set, is_cancelled, NULL, out, BLQ__TIMER_BATCH)) >
	       0) {
		origins from = {.n = 0};

		release(t, k);
		publish_assist(q);
		pthread_mutex_unlock(&t->mu);
		for (size_t i = 0; i < k; i++) {
			blq__cancelled(q, c, &out[i].item);
			origins_add(&from, out[i].origin);
		}
		/* Uncounted like a delivered batch, so a draining close and
		 * blq_wait_idle look again. */
		uint64_t shared = origins_settle(q, &from);
		blq__handoff(&q->port, &q->staged, -shared, NULL);
		blq__ec_notify(&q->idle_ec, 0);
		pthread_mutex_lock(&t->mu);
	}
}

static void *timer_main(void *arg)
{
	blq *q = arg;
	blq__timer *t = &q->timer;
	blq__timed due[BLQ__TIMER_BATCH];
	bool woke = false; /* from a sleep: judge the workers' service */

	pthread_setname_np(pthread_self(), "blq-timer");
	pthread_mutex_lock(&t->mu);
	while (!t->stop && !forced(q)) {
		bool drained = drain_inboxes(q);
		if (t->cancels) {
			t->cancels = false;
			take_cancelled(q);
			continue;
		}
		uint64_t now = blq__now(q);
		size_t k = 0;

		const blq__timed *first;
		if (woke) {
			judge_service(t, blq__timed_set_earliest(&t->set), now);
			woke = false;
		}
		while (k < BLQ__TIMER_BATCH && (first = blq__timed_set_earliest(&t->set)) != NULL &&
		       first->due <= now)
			blq__timed_set_pop(&t->set, &due[k++]);
		publish_assist(q);
		if (k > 0) {
			/* In our hands now: no longer `delayed`, and their room
			 * is free (they stay staged until delivered). */
			release(t, k);
			t->delivering = true;
			pthread_mutex_unlock(&t->mu);
			deliver_batch(q, due, k, now);
			pthread_mutex_lock(&t->mu);
			t->delivering = false;
			continue;
		}
		/* Sleep a little past the head (blq__timer_wake_slack): the
		 * items queued just behind it come due in the same wake-up
		 * instead of one each. Never early; a retry backing off 1 ms
		 * runs up to 125 us late (500 us while the workers serve).
		 * Entries stuck in an inbox (no memory for them here) are
		 * looked at again every millisecond. */
		uint64_t until = UINT64_MAX;
		if ((first = blq__timed_set_earliest(&t->set)) != NULL)
			until = blq__sat_add(first->due, blq__timer_wake_slack(t, span_of(first)));
		if (!drained && blq__sat_add(now, BLQ__TIMER_STUCK_POLL_NS) < until)
			until = blq__sat_add(now, BLQ__TIMER_STUCK_POLL_NS);
		/* Announce the wake-up, then look at the inboxes a last time:
		 * a worker publishes, then reads sleep_until (inbox.c). */
		atomic_store_explicit(&t->sleep_until, until, memory_order_seq_cst);
		blq__full_fence();
		if (drained && inboxes_pending(q)) {
			atomic_store_explicit(&t->sleep_until, 0, memory_order_relaxed);
			continue;
		}
		if (until == UINT64_MAX) {
			pthread_cond_wait(&t->cond, &t->mu);
		} else {
			struct timespec ts = wake_at(q, until, now);

			pthread_cond_timedwait(&t->cond, &t->mu, &ts);
		}
		atomic_store_explicit(&t->sleep_until, 0, memory_order_relaxed);
		woke = true;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static blq__ring *new_due_ring(void)
{
	blq__ring *r = malloc(sizeof(*r));

	if (r != NULL && blq__ring_init(r, BLQ__TIMER_DUE_CAP) != 0) {
		free(r);
		r = NULL;
	}
	return r;
}

int blq__timer_add(blq *q, const blq__item *it, uint64_t now, uint64_t delay,
		   enum blq__mode mode)
{
	blq__timer *t = &q->timer;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	if (t->stop) { /* finish() is past the workers: nobody would take it */
		pthread_mutex_unlock(&t->mu);
		return BLQ_ECLOSED;
	}
	if (!atomic_load_explicit(&t->open, memory_order_relaxed)) {
		/* The due ring first (the thread pushes into it); without one
		 * (no memory) due items go to the rings as before. */
		if (q->direct_due && atomic_load_explicit(&q->due, memory_order_relaxed) == NULL)
			atomic_store_explicit(&q->due, new_due_ring(), memory_order_release);
		int e = blq__thread_create(&t->thread, timer_main, q);

		if (e != 0) {
			pthread_mutex_unlock(&t->mu);
			blq__log(q, BLQ_LOG_ERROR, "queue %s: cannot start the timer thread (error %d)",
				 q->name, e);
			return BLQ_ETHREAD;
		}
		atomic_store_explicit(&t->open, true, memory_order_release);
	}
	/* Staged before it shows in `held` (blq_stats: delayed <= size), then
	 * our place in `held` (the workers' inboxes take theirs without the
	 * lock), or wait for room: release() wakes us. seq_cst, before the
	 * producer counts itself out (or the worker goes back to look for
	 * items): see `staged` in internal.h. */
	for (;;) {
		atomic_fetch_add_explicit(&q->staged, 1, memory_order_seq_cst);
		if (blq__timer_reserve(t))
			break;
		atomic_fetch_sub_explicit(&q->staged, 1, memory_order_seq_cst);
		if (mode != BLQ__BLOCK) {
			rc = BLQ_EFULL;
			goto out;
		}
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			rc = BLQ_ECLOSED;
			goto out;
		}
		/* `held` goes down only under mu (release()): no missed
		 * wake-up between the reservation and the wait. A timed
		 * enqueue waits until its limit. */
		uint64_t until = blq__core_wait_until(q);

		if (until != 0 && blq__monotonic_ns() >= until) {
			rc = BLQ_ETIMEDOUT;
			goto out;
		}
		t->room_waiters++;
		blq__cond_wait_until(&t->room, &t->mu, until != 0 ? until : UINT64_MAX);
		t->room_waiters--;
	}
	blq__timed e = {
		.due = blq__sat_add(now, delay),
		.order = t->order,
		.since = now,
		.origin = BLQ__TIMER_SHARED,
		.item = *it,
	};
	if ((rc = blq__timed_set_insert(&t->set, &e, t->limit)) != 0) {
		release(t, 1);
		atomic_fetch_sub_explicit(&q->staged, 1, memory_order_seq_cst);
		goto out;
	}
	t->order++;
	publish_assist(q);
	atomic_fetch_add_explicit(&t->held_shared, 1, memory_order_relaxed);
	if (blq__timed_set_earliest(&t->set)->order == e.order)
		pthread_cond_signal(&t->cond); /* a new earliest item */
out:
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* A handle's item into the due ring: marked queued first (a worker may
 * start it at once), and back to delayed if the ring was full. Out of
 * line: the assist's loop stays the plain push for every other item. */
static __attribute__((noinline)) bool push_due_marked(blq__ring *due, const blq__item *it)
{
	blq__handle_where(it->done, BLQ_HANDLE_QUEUED);
	if (blq__ring_push(due, it))
		return true;
	blq__handle_where(it->done, BLQ_HANDLE_DELAYED);
	return false;
}

static inline bool push_due(blq__ring *due, const blq__item *it)
{
	if (__builtin_expect(it->done == NULL, 1))
		return blq__ring_push(due, it);
	return push_due_marked(due, it);
}

void blq__timer_assist(blq *q, uint64_t now)
{
	blq__timer *t = &q->timer;
	blq__ring *due = atomic_load_explicit(&q->due, memory_order_relaxed);
	const blq_metrics_writer *m = q->cfg.metrics;
	uint64_t waited[BLQ__TIMER_BATCH];
	origins from = {.n = 0};
	size_t k = 0;

	if (due == NULL || now < atomic_load_explicit(&t->assist_at, memory_order_relaxed))
		return;
	if (pthread_mutex_trylock(&t->mu) != 0)
		return; /* the thread or another worker is at it */
	if (!t->stop && !t->delivering && !forced(q)) {
		drain_inboxes(q);
		/* Into the due ring, and only what it takes: a worker must
		 * not wait for room in the rings (admission.c), the workers
		 * are who make it. The rest is the thread's. */
		const blq__timed *first;
		while (k < BLQ__TIMER_BATCH && (first = blq__timed_set_earliest(&t->set)) != NULL &&
		       first->due <= now && push_due(due, &first->item)) {
			waited[k++] = waited_of(first, now);
			origins_add(&from, first->origin);
			blq__timed_set_pop(&t->set, NULL);
		}
		if (k > 0) {
			release(t, k);
			t->assisted = true;
		}
		publish_assist(q);
	}
	pthread_mutex_unlock(&t->mu);
	if (k == 0)
		return;
	if (m != NULL && m->queue_delayed != NULL)
		for (size_t i = 0; i < k; i++)
			m->queue_delayed(m->ctx, q->name, waited[i]);
	/* After the pushes, as in deliver_batch. We go and take one; others
	 * may sleep. */
	uint64_t shared = origins_settle(q, &from);
	blq__handoff(&q->port, &q->staged, -shared, &q->items_ec);
}

void blq__timer_sweep_cancelled(blq *q)
{
	blq__timer *t = &q->timer;

	if (!t->ready || !atomic_load_explicit(&t->open, memory_order_acquire))
		return;
	pthread_mutex_lock(&t->mu);
	t->cancels = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->mu);
}

void blq__timer_kick(blq *q)
{
	blq__timer *t = &q->timer;

	blq__watchdog_kick(q); /* it keeps time on the same clock */
	blq__ec_notify(&q->rate_ec, 0); /* so do workers waiting for a rate token */
	if (!t->ready)
		return;
	pthread_mutex_lock(&t->mu);
	pthread_cond_broadcast(&t->cond);
	pthread_cond_broadcast(&t->room); /* blocked producers re-check closed */
	pthread_mutex_unlock(&t->mu);
}

void blq__timer_stop(blq *q)
{
	blq__timer *t = &q->timer;

	if (!t->ready)
		return;
	pthread_mutex_lock(&t->mu);
	bool started = atomic_exchange_explicit(&t->open, false, memory_order_acq_rel);
	t->stop = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->mu);
	if (started)
		pthread_join(t->thread, NULL);
}

/* Force close, with no memory in the heap for what the inboxes still
 * hold: abandon it from where it is. Caller holds t->mu (through the
 * DLQ's calls too: a rare path, and after every join). */
static uint64_t abandon_inboxes(blq *q, blq__cell *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__inbox *b = blq__inbox_at(q, i);

		if (b == NULL)
			continue;
		blq__timed e;
		for (; blq__inbox_take(b, &e); n++) {
			blq__abandon(q, c, &e.item);
			release(&q->timer, 1);
			blq__inbox_settle(q, i, 1);
		}
	}
	return n;
}

void blq__timer_sweep(blq *q, blq__cell *c)
{
	blq__timer *t = &q->timer;
	uint64_t n = 0;

	if (!t->ready)
		return;
	pthread_mutex_lock(&t->mu);
	/* The workers and the thread are joined: the inboxes hold still. */
	if (!drain_inboxes(q))
		n += abandon_inboxes(q, c);
	while (blq__timed_set_count(&t->set) > 0) {
		blq__timed e;

		blq__timed_set_pop(&t->set, &e);
		release(t, 1);
		pthread_mutex_unlock(&t->mu); /* the DLQ may take its time */
		blq__abandon(q, c, &e.item);
		blq__inbox_settle(q, e.origin, 1);
		n++;
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	if (n > 0)
		blq__log(q, q->leaky ? BLQ_LOG_INFO : BLQ_LOG_WARN,
			 "queue %s: %llu items waiting in the timer at force close %s", q->name,
			 (unsigned long long)n, q->leaky ? "went to the DLQ" : "were lost");
}

size_t blq__timer_size(const blq *q)
{
	return (size_t)atomic_load_explicit(&q->timer.held, memory_order_relaxed);
}
