/*
 * Workers: pthreads that take items from the rings and run the callback.
 *
 * Design
 * - Worker i starts its search at ring i % nrings, so with streams each
 *   worker mostly drains its own ring and steals from the others when it
 *   is empty.
 * - A worker sleeps on items_ec only after a failed take, announced and
 *   re-checked (ec.h), so it never misses an item and never spins: an idle
 *   queue's workers cost no CPU.
 * - After each take, a worker wakes a producer sleeping on a full queue
 *   when the rings have drained to half and no wake-up is pending: one
 *   sleeper per wake-up (space_wake says why), and not per item while
 *   none sleeps (a wake-up per item is a system call per item).
 * - Between items a worker reads its command from the balancer (one load
 *   of its own cache line): RUN, SLEEP (park on its own event count until
 *   woken or told to stop) or STOP (end the thread).
 * - While active, the time it spends blocked on an empty queue is added up
 *   (a clock read on the blocking path only), so the balancer can tell how
 *   many workers the load really keeps busy.
 * - Exit: at once when forced (after the current item) or told to stop;
 *   when closing, once no producer is in flight and the rings are empty.
 * - Workers block the asynchronous signals, so SIGTERM and SIGINT reach
 *   the application's own threads (seed 004: the drain runs there).
 *
 * Taking ahead
 * - A worker whose ring holds at least 2 * (BLQ__HAND + 1) items (and no
 *   due retry) takes BLQ__HAND more with its item, in one CAS on the
 *   ring's head (take, blq__take_ahead): the head CAS (also the barrier
 *   of the wake-up check after it, util/ring.h) and that check are paid
 *   once per hand instead of once per item, where two workers fight for
 *   the head line. A shallow ring is not
 *   taken ahead from, so latency and the spread over workers are as
 *   without it whenever the queue is not backed up.
 * - The hand is the worker's own: it runs those items itself, in their
 *   order, each as if just taken: a pause holds the next one until the
 *   resume, and a Soft or Hard close abandons the rest like the items
 *   still queued (blq__abandon). A worker told to sleep or stop runs its
 *   hand out first (at most BLQ__HAND items, each under the watchdog as
 *   usual). blq_size counts a hand (w->hand). With lanes a hand's
 *   places stay in the capacity's count until its items leave it
 *   (hand_places.c): the capacity bounds the hands too.
 * - A worker given up inside a callback with a time limit (by the
 *   watchdog, or a close past its limit) does not keep its hand: the
 *   thread that gave it up takes the unstarted items back to the queue
 *   at once (handback.c, with the handshake on busy_until that makes this
 *   safe without a locked instruction per item), and the worker, told by
 *   its exchange on busy_until, settles for what it was left (nothing,
 *   unless the watchdog's backlog was full). So no item waits for a
 *   callback that is not its own. (An attempt without a limit can only
 *   be given up by a dropping close: its thread abandons the hand when
 *   the callback returns.) The hand is in the worker's slot (w->h) for
 *   that reason.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* The queue whose worker runs on this thread, so close and free called
 * from inside a worker do not wait for themselves. */
static _Thread_local const blq *blq__own_queue;

bool blq__is_own_worker(const blq *q)
{
	return blq__own_queue == q;
}

/* The wake-up rule: at most half the rings' room queued (with lanes,
 * the rings' items and the hands' places: a hand's release wakes again
 * once they are out). */
static bool wake_due(const blq *q)
{
	uint64_t half = q->ring_cap / 2;

	return blq__lanes_on(q) ? blq__lanes_held_within(q, half) : blq__ring_items(q) <= half;
}

/* One sleeper per wake-up, not all of them: a woken producer acknowledges
 * the pending wake-up (ec.h) and pushes, each item it pushes is taken
 * later, and that take looks again, so while the queue stays at or below
 * half the sleepers come back one after another at the workers' pace,
 * and none sleeps on a queue with room (a producer that stops waiting
 * without pushing found it full; a close wakes them all). With every
 * sleeper woken at once, 64 producers (W1-MANY) woke for a few places
 * each and most slept again: 40,000 futex calls a run; waking one ran
 * W1-MANY 0.71x as long (docs/benchmarks.md). The SPIN models check it
 * (models/ec.pml, lanes.pml, hands.pml: SPACE_WAKE_ALL is the old way). */
static inline void space_wake(blq *q)
{
	/* StoreLoad: the room we freed must be visible before we read the
	 * producers' waiters count (ec.h). The caller's read-modify-write
	 * freed it (a take's CAS on a ring's head, util/ring.h; a hand's
	 * release from held, hand_places.c), seq_cst: the barrier, as
	 * blq__handoff's add is the producers'. */
	/* A wake-up still pending first: then no claim can succeed, and
	 * wake_due may walk the lanes' cells (a miss each: W1-MANY's 64
	 * producers keep sleepers and a pending wake-up on space_ec most of
	 * the time). */
	if (blq__ec_waiters_after_rmw(&q->space_ec) != 0 && !blq__ec_pending(&q->space_ec) &&
	    wake_due(q) && blq__ec_claim(&q->space_ec))
		blq__ec_wake_slow(&q->space_ec, 1);
}

void blq__space_wake(blq *q)
{
	space_wake(q);
}

static inline void after_take(blq *q)
{
	space_wake(q);
}

/* An attempt of an item with a hook starts: when it is a handle's
 * (handle.c), the attempt is published for blq_cancel, and an item
 * cancelled already ends here without running. */
static bool cancelled_at_start(blq *q, blq__worker *w, const blq__item *it)
{
	if (__builtin_expect(it->done == NULL, 1) || !blq__handle_begin(it->done, &w->task))
		return false;
	blq__cancelled(q, w->cell, it);
	return true;
}

/* An attempt returned: the metrics writer hears how long it ran (from
 * *t0, which moves on to now for the next attempt). */
static inline void exec_done(blq *q, blq__worker *w, uint64_t *t0, bool failed)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (m != NULL && m->queue_exec != NULL) {
		uint64_t t1 = blq__now(q);

		m->queue_exec(m->ctx, q->name, w->index, t1 - *t0, failed);
		*t0 = w->last_end = t1;
	}
}

/* A late attempt's callback returned after the watchdog ended its item
 * at the limit (late.c): the payload is all that is left. Out of line,
 * off the loop. */
static __attribute__((noinline, cold)) void late_returned(blq *q, blq__worker *w,
							  const blq__item *it, uint64_t t0)
{
	w->late = false;
	atomic_store_explicit(&w->task.token, BLQ__TOKEN_DOWN, memory_order_relaxed);
	w->task.timeout_at = 0;
	exec_done(q, w, &t0, true);
	if (q->cfg.item_free != NULL) /* the original, lent until now */
		q->cfg.item_free(it->payload);
}

/* Runs the attempts of one item until it is processed, fails for good, or
 * leaves for a retry (the timer, a ring, the DLQ). */
static void run_item(blq *q, blq__worker *w, blq__item *it)
{
	const blq_metrics_writer *m = q->cfg.metrics;
	uint64_t t0 = 0;

	if (cancelled_at_start(q, w, it))
		return;
	if (m != NULL && (m->queue_pull != NULL || m->queue_exec != NULL))
		t0 = w->last_end != 0 ? w->last_end : blq__now(q);
	w->last_end = 0;
	if (m != NULL && m->queue_pull != NULL)
		m->queue_pull(m->ctx, q->name, w->index,
			      it->enq_ns != 0 && t0 > it->enq_ns ? t0 - it->enq_ns : 0);
	if (it->deadline_ns != 0 && (t0 != 0 ? t0 : blq__now(q)) >= it->deadline_ns) {
		if (m != NULL && m->queue_deadline != NULL)
			m->queue_deadline(m->ctx, q->name);
		if (q->cfg.deadline_to_dlq)
			blq__to_dlq(q, w->cell, it, BLQ_DLQ_DEADLINE, 0);
		else
			blq__drop(q, it, &w->cell->expired, BLQ_OUTCOME_EXPIRED);
		return;
	}
	for (;;) {
		w->task.enq_ns = it->enq_ns;
		w->task.attempt = it->attempt;
		/* Items without a timeout read no clock here, and leave the
		 * watchdog alone: one branch on each side of the call. */
		bool limited = it->timeout_ns != 0;
		if (limited) {
			uint64_t start = blq__now(q);

			/* Before the limit's seq_cst store: a thread whose CAS
			 * gives the attempt up reads it (late.c). */
			w->h.running = it;
			w->task.timeout_at = blq__sat_add(start, it->timeout_ns);
			blq__watchdog_arm(q, &w->busy_until,
					  w->task.timeout_at < BLQ__BUSY_NO_LIMIT ? w->task.timeout_at
										  : BLQ__BUSY_NO_LIMIT);
		} else {
			atomic_store_explicit(&w->busy_until, BLQ__BUSY_NO_LIMIT, memory_order_relaxed);
		}
		int rc = q->cfg.worker(q->cfg.worker_ctx, it->payload, &w->task);
		bool timed_out = false;
		if (limited) {
			/* Timed out: the worker was told (it no longer owns the
			 * payload, whatever it returned), the watchdog gave the
			 * attempt up past its limit before the worker claimed it
			 * (blq_task_claim: then the return value decides), or it
			 * failed past its limit. A worker that returns 0 never
			 * told nor given up keeps the payload: deciding on the
			 * clock alone here would race with its free. */
			uint64_t was = atomic_exchange_explicit(&w->busy_until, 0,
								memory_order_relaxed);
			/* Given up: whoever did took our hand (handback.c) and
			 * may have ended the item at the limit (late.c). Wait
			 * for it before our exchange of the token, so that its
			 * raise of the token comes first. */
			if (__builtin_expect((was & BLQ__BUSY_GIVEN_UP) != 0, 0) &&
			    was != (BLQ__BUSY_GIVEN_UP | BLQ__BUSY_NO_LIMIT)) {
				blq__hand_settle(w);
				if (w->late) {
					late_returned(q, w, it, t0);
					return;
				}
			}
			int tok = atomic_exchange_explicit(&w->task.token, BLQ__TOKEN_DOWN,
							   memory_order_relaxed);
			bool given_up = (was & BLQ__BUSY_GIVEN_UP) != 0 && tok != BLQ__TOKEN_CLAIMED;
			timed_out = tok == BLQ__TOKEN_RAISED ||
				    ((given_up || rc != 0) && blq__now(q) >= w->task.timeout_at);
			w->task.timeout_at = 0;
		} else {
			atomic_store_explicit(&w->busy_until, 0, memory_order_relaxed);
		}
		bool cancelled = false;
		if (__builtin_expect(it->done != NULL, 0)) {
			blq__wait_note(it->done, rc, it->attempt);
			cancelled = blq__handle_end(it->done, &w->task);
		}
		exec_done(q, w, &t0, rc != 0 || timed_out);
		if (__builtin_expect(rc != 0 || timed_out, 0)) {
			if (blq__attempt_failed(q, w, it, rc, timed_out, cancelled))
				return;
			/* No room anywhere for the retry: run it again here. */
			if (cancelled_at_start(q, w, it))
				return;
			continue;
		}
		blq__processed(q, w->cell, it);
		return;
	}
}

static bool forced(const blq *q)
{
	return atomic_load_explicit(&q->forced, memory_order_acquire) != 0;
}

/* Paused and not closing: a close ends a pause (the drain needs us). */
static bool paused(const blq *q)
{
	return atomic_load_explicit(&q->paused, memory_order_seq_cst) &&
	       !atomic_load_explicit(&q->closed, memory_order_seq_cst);
}

static void set_state(blq *q, blq__worker *w, int state)
{
	int old = atomic_exchange_explicit(&w->state, state, memory_order_acq_rel);

	if (old == BLQ__W_ACTIVE && state != BLQ__W_ACTIVE)
		atomic_fetch_sub_explicit(&q->n_active, 1, memory_order_acq_rel);
	else if (old != BLQ__W_ACTIVE && state == BLQ__W_ACTIVE)
		atomic_fetch_add_explicit(&q->n_active, 1, memory_order_acq_rel);
}

/* Parked by the balancer: sleep on our own event count until told to run
 * or stop, or until the queue is forced closed. False: end the thread. */
static bool park(blq *q, blq__worker *w)
{
	const blq_metrics_writer *m = q->cfg.metrics;
	int cmd;

	atomic_store_explicit(&w->asleep_since, blq__now(q), memory_order_relaxed);
	set_state(q, w, BLQ__W_ASLEEP);
	/* The last active worker going to sleep while items wait would leave
	 * them until the next heartbeat: have the balancer wake one now. */
	if (atomic_load_explicit(&q->n_active, memory_order_seq_cst) == 0 && blq__ready(q) > 0)
		blq__scale_up_hint(q);
	if (m != NULL && m->worker_sleep != NULL)
		m->worker_sleep(m->ctx, q->name, w->index);
	for (;;) {
		uint32_t snap = blq__ec_prepare(&w->park);

		cmd = atomic_load_explicit(&w->cmd, memory_order_acquire);
		if (cmd != BLQ__CMD_SLEEP || forced(q)) {
			blq__ec_cancel(&w->park);
			break;
		}
		blq__ec_wait(&w->park, snap, 0);
	}
	if (cmd == BLQ__CMD_STOP || forced(q))
		return false;
	set_state(q, w, BLQ__W_ACTIVE);
	if (m != NULL && m->worker_wakeup != NULL)
		m->worker_wakeup(m->ctx, q->name, w->index);
	return true;
}

/* Paused queue: wait until resumed or closed. */
static void wait_resume(blq *q)
{
	for (;;) {
		uint32_t snap = blq__ec_prepare(&q->pause_ec);

		if (!atomic_load_explicit(&q->paused, memory_order_seq_cst) || forced(q) ||
		    atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			blq__ec_cancel(&q->pause_ec);
			return;
		}
		blq__ec_wait(&q->pause_ec, snap, 0);
	}
}

/* Blocks on the empty queue, accounting the time as idle for the balancer. */
static void wait_items(blq *q, blq__worker *w, uint32_t snap)
{
	const blq_metrics_writer *m = q->cfg.metrics;

	if (!atomic_load_explicit(&q->balanced, memory_order_relaxed) && m == NULL) {
		blq__ec_wait(&q->items_ec, snap, 0);
		return;
	}
	uint64_t t0 = blq__now(q);
	blq__idle_clock_start(&w->idle_clock, t0);
	blq__ec_wait(&q->items_ec, snap, 0);
	uint64_t t1 = blq__now(q);
	blq__idle_clock_stop(&w->idle_clock, t1);
	uint64_t d = t1 > t0 ? t1 - t0 : 0;
	if (m != NULL && m->worker_wait != NULL)
		m->worker_wait(m->ctx, q->name, w->index, d);
}

/* n items left the hand (started, or abandoned): their places in held
 * may be claimed (hand_places.c). A plain store: the worker alone writes
 * `started`, on a line it writes per item anyway (w->hand). */
static inline void hand_left(blq__worker *w, blq__hand *h, unsigned n)
{
	h->started += n;
	atomic_store_explicit(&w->started, h->started, memory_order_relaxed);
}

/* One take: the next item into h->it[0], and with it a hand when the
 * ring is deep (one CAS for both). False: nothing to take. */
/* A take under the rate limit (rate.c): a token first, then one item (no
 * hand: each start needs its token); the token goes back when no item was
 * there. Out of line: the unlimited take stays as it was. */
static __attribute__((noinline)) bool take_limited(blq *q, blq__worker *w, unsigned home,
						   blq__hand *h)
{
	uint64_t tat;

	/* Nothing to take: no token spent (and none churned by the looks
	 * before a sleep). */
	if (blq__taken_items(q) == 0 || !blq__rate_token(q, blq__now(q), &tat))
		return false;
	if (!blq__pop_any(q, home, &h->it[0])) {
		blq__rate_refund(q, tat);
		return false;
	}
	if (w->rate_waited) {
		blq__count_own(&w->cell->rate_delayed);
		w->rate_waited = false;
	}
	h->next = 1;
	h->n = 1;
	return true;
}

/* Inlined into the loop, as before hand_left grew it (callgrind: the
 * call alone was 0.7% of RETRY's instructions). */
static inline __attribute__((always_inline)) bool take(blq *q, blq__worker *w, unsigned home,
							 blq__hand *h)
{
	if (__builtin_expect(q->rate_t != 0, 0))
		return take_limited(q, w, home, h);
	unsigned k = blq__take_ahead(q, home, h->it, BLQ__HAND + 1);

	if (k == 0) {
		if (!blq__pop_any(q, home, &h->it[0]))
			return false;
		k = 1; /* w->hand is 0 already: the last hand ran out */
	} else {
		atomic_store_explicit(&w->hand, k - 1, memory_order_relaxed);
		/* With lanes the hand's places are still in held: it[0]'s is
		 * free to claim now, the rest as they start (hand_places.c). */
		if (blq__lanes_on(q)) {
			h->placed = true;
			hand_left(w, h, 1);
		}
	}
	h->next = 1;
	h->n = k;
	return true;
}

/* What a worker's looks (blq__spin_look) see. */
struct pop_look {
	blq *q;
	blq__worker *w;
	unsigned home;
	blq__hand *h;
};

static bool pop_ending(void *ctx)
{
	const struct pop_look *l = ctx;

	return atomic_load_explicit(&l->q->closed, memory_order_relaxed) ||
	       atomic_load_explicit(&l->q->paused, memory_order_relaxed) ||
	       atomic_load_explicit(&l->w->cmd, memory_order_relaxed) != BLQ__CMD_RUN;
}

static bool pop_took(void *ctx)
{
	struct pop_look *l = ctx;

	return take(l->q, l->w, l->home, l->h);
}

/* Before sleeping, look again for a short while where that pays (spin.h:
 * a spin while a producer runs on another CPU, yields while it waits for
 * ours; either brings an item sooner than a futex sleep and wake-up).
 * Bounded, so an idle queue's workers are asleep within microseconds. A
 * worker the balancer puts to sleep stops looking at once: items are for
 * the workers it keeps. */
static bool spin_pop(blq *q, blq__worker *w, unsigned home, blq__hand *h)
{
	return blq__spin_look(&q->spin, true, pop_ending, pop_took,
			      &(struct pop_look){q, w, home, h});
}

/* Takes the next item (and maybe a hand) into h, sleeping while there is
 * none. False: time to exit. */
static bool next_item(blq *q, blq__worker *w, blq__hand *h)
{
	unsigned home = w->index;
	bool slept = false, first = true;

	for (;;) {
		/* Only a take on the first look follows the last item at once. */
		if (!first)
			w->last_end = 0;
		first = false;
		/* Woken while more items wait than the one we take: wake
		 * another worker, or a burst waits on us alone (one wake per
		 * episode, ec.h). Not for a lone item: the other worker would
		 * wake for nothing, and our take would wait for the system
		 * call (the SPIN model, docs/model-check.md, checks both). */
		if (slept && blq__taken_items(q) > 1) {
			blq__ec_notify(&q->items_ec, 1);
			slept = false;
		}
		if (forced(q))
			return false;
		int cmd = atomic_load_explicit(&w->cmd, memory_order_acquire);
		if (cmd != BLQ__CMD_RUN) {
			/* We may hold the one pending wake-up of items_ec (ec.h):
			 * pass it on before leaving, or queued items could wait
			 * for the next push while another worker sleeps. And
			 * blq_wait_idle may be waiting for us. */
			blq__ec_notify(&q->items_ec, 1);
			blq__ec_notify(&q->idle_ec, 0);
			if (cmd == BLQ__CMD_STOP || !park(q, w))
				return false;
			continue;
		}
		if (paused(q)) {
			wait_resume(q);
			continue;
		}
		if (take(q, w, home, h))
			return true;
		w->last_end = 0; /* it looks again: the next start needs its own time */
		/* Items wait for a token: sleep until it, not on the items. */
		if (__builtin_expect(q->rate_t != 0, 0) && blq__rate_hold(q, w))
			continue;
		if (spin_pop(q, w, home, h))
			return true;
		if (paused(q))
			continue; /* paused while we looked: stop taking */
		uint32_t snap = blq__ec_prepare(&q->items_ec);
		if (take(q, w, home, h)) {
			blq__ec_cancel(&q->items_ec);
			return true;
		}
		/* Nothing to do: tell blq_wait_idle to look (only a load when
		 * nobody waits there). The outcome of our last item is counted
		 * by now. */
		blq__ec_notify(&q->idle_ec, 0);
		/* Closing, no producer in flight and nothing staged outside
		 * the rings: whatever the rings hold now is all there will
		 * be; take it, or exit when empty. */
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst) &&
		    blq__inflight(q) == 0 &&
		    blq__staged(q) == 0) {
			bool got = take(q, w, home, h);

			blq__ec_cancel(&q->items_ec);
			/* Items held back by the rate limit are still to drain. */
			if (!got && q->rate_t != 0 && blq__taken_items(q) > 0)
				continue;
			return got;
		}
		if (forced(q) || atomic_load_explicit(&w->cmd, memory_order_acquire) != BLQ__CMD_RUN ||
		    paused(q)) {
			blq__ec_cancel(&q->items_ec);
			continue;
		}
		wait_items(q, w, snap);
		slept = true;
	}
}

/* A Soft or Hard close: the items taken ahead end as if still queued. */
static void abandon_hand(blq *q, blq__worker *w, blq__hand *h)
{
	unsigned gone = h->n - h->next;

	while (h->next < h->n)
		blq__abandon(q, w->cell, &h->it[h->next++]);
	atomic_store_explicit(&w->hand, 0, memory_order_relaxed);
	if (h->placed) {
		hand_left(w, h, gone);
		blq__hand_places_release(q, w);
	}
}

/* The next item taken ahead, if any is left. */
static bool next_from_hand(blq *q, blq__worker *w, blq__hand *h, blq__item **it)
{
	if (h->next == h->n) {
		if (h->placed) /* the hand is over: its places go */
			blq__hand_places_release(q, w);
		return false;
	}
	/* Paused: the items wait in the hand, counted in blq_size. */
	if (paused(q)) {
		wait_resume(q);
		w->last_end = 0;
	}
	if (forced(q)) {
		abandon_hand(q, w, h);
		return false; /* next_item sees forced: the thread ends */
	}
	*it = &h->it[h->next++];
	atomic_store_explicit(&w->hand, h->n - h->next, memory_order_relaxed);
	if (h->placed)
		hand_left(w, h, 1);
	return true;
}

/* The next item from the queue, and a hand with it when the ring is deep. */
static bool next_taken(blq *q, blq__worker *w, blq__hand *h, blq__item **it)
{
	h->n = h->next = 0;
	if (!next_item(q, w, h))
		return false;
	after_take(q);
	*it = &h->it[0];
	/* Taken just as a pause began: hold it until the resume, so no item
	 * starts while paused (an item from the hand had its look in
	 * next_from_hand). A force close meanwhile ends it like the items
	 * still queued. */
	if (paused(q)) {
		wait_resume(q);
		w->last_end = 0;
		if (forced(q)) {
			/* Taken but not run: as if still queued. */
			blq__abandon(q, w->cell, *it);
			abandon_hand(q, w, h);
			return false;
		}
	}
	return true;
}

void *blq__worker_main(void *arg)
{
	blq__worker *w = arg;
	blq *q = w->q;
	const blq_metrics_writer *m = q->cfg.metrics;
	blq__item *it;
	char tname[16];

	blq__own_queue = q;
	snprintf(tname, sizeof(tname), "blq-w%u", w->index);
	pthread_setname_np(pthread_self(), tname);
	if (m != NULL && m->worker_init != NULL)
		m->worker_init(m->ctx, q->name, w->index);

	/* The slot's hand, empty (a thread leaves it so). */
	blq__hand *h = &w->h;
	h->n = h->next = 0;
	h->placed = false;
	h->started = atomic_load_explicit(&w->started, memory_order_relaxed);
	atomic_store_explicit(&w->hand, 0, memory_order_relaxed);
	while (next_from_hand(q, w, h, &it) || next_taken(q, w, h, &it))
		run_item(q, w, it);

	/* We may hold the pending wake-up of items_ec: pass it on; and
	 * blq_wait_idle may be waiting for us. */
	blq__ec_notify(&q->items_ec, 1);
	blq__ec_notify(&q->idle_ec, 0);
	if (m != NULL && m->worker_stop != NULL)
		m->worker_stop(m->ctx, q->name, w->index, forced(q));
	set_state(q, w, BLQ__W_IDLE);
	pthread_mutex_lock(&q->mu);
	q->alive--;
	if (w->detached) {
		w->detached = false;
		atomic_fetch_sub_explicit(&q->detached, 1, memory_order_relaxed);
	}
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
	return NULL;
}
