/*
 * The watchdog: gives up on attempts that run past their time limit, so a
 * callback that ignores its token costs the pool no worker (seed 000), and
 * lets a close with a time limit leave the callbacks it cannot wait for.
 *
 * Design
 * - One thread per queue, started by the first attempt that has a time
 *   limit: a queue without timeouts never has it. Each worker publishes
 *   its attempt's limit in busy_until (worker.c); the watchdog sleeps until
 *   the earliest one, or for good while no attempt has a limit: an idle
 *   queue's watchdog costs no CPU.
 * - A worker arming an attempt whose limit comes before the watchdog's
 *   planned look (wd_next) wakes it. While the watchdog scans, wd_next
 *   reads "none" (UINT64_MAX), so an attempt armed during the scan wakes
 *   it too (its wait then returns at once): no limit is missed. With
 *   limits of one length that is the first attempt after a quiet spell;
 *   otherwise the worker pays one load.
 * - Giving up: a compare-and-swap sets BLQ__BUSY_GIVEN_UP in the worker's
 *   busy_until against the exact limit it saw, so a worker that returned
 *   meanwhile, or went on to another attempt (whose limit is later), is
 *   left alone. The worker's verdict at its return reads the bit
 *   (worker.c): the attempt timed out unless it claimed the payload first
 *   (blq_task_claim). Then, under pool_mu and mu, the thread is detached:
 *   its slot moves from ACTIVE to DETACHED and is told to stop after this
 *   item (the thread finishes its item's outcome itself when the callback
 *   returns), and a new thread starts in an idle slot, so as many workers
 *   serve the queue as before. Right after its CAS, before any lock, the
 *   watchdog takes the worker's unstarted hand back (handback.c) into its
 *   backlog, which it puts back into the queue after each look (and every
 *   millisecond while some of it finds no room), so that no item waits for
 *   the late callback. In the same window it ends the late attempt's own
 *   item at the limit (late.c): its waiters hear of it then, and a retry
 *   starts then on a copy (item_dup).
 * - Bound: the pool has as many spare slots as its ceiling (blq__slots,
 *   twice the largest ceiling so far).
 *   With no idle slot left, the attempt is still given up but the thread
 *   is kept: the pool serves with one worker less until it returns.
 * - A dropping close (Soft, Hard) starts no replacement; a close past its
 *   time limit detaches every running callback (close.c) and does not
 *   wait for them: blq_free does. Their hands end at once, with the items
 *   still queued (blq__give_up_running; an attempt without a limit keeps
 *   its hand to its return, handback.c says why).
 * - With the caller's clock (tests) the watchdog cannot sleep until a
 *   limit on that clock: it looks every BLQ__WD_OWN_CLOCK_POLL_NS and
 *   when the timer is kicked (as the timer does), and workers do not wake
 *   it at each attempt.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#define BLQ__WD_OWN_CLOCK_POLL_NS 50000000ull
/* How soon hands taken back that found no room look again. */
#define BLQ__WD_BACKLOG_RETRY_NS 1000000ull

/* Caller holds pool_mu. An idle slot for a replacement, or NULL. */
static blq__worker *idle_slot(blq *q)
{
	if (q->pool_closed)
		return NULL;
	for (unsigned i = 0; i < blq__slots(q); i++)
		if (atomic_load_explicit(&q->workers[i].state, memory_order_acquire) == BLQ__W_IDLE)
			return &q->workers[i];
	return NULL;
}

/* Caller holds pool_mu. Moves w's thread from ACTIVE to DETACHED: it
 * stops after its item, counted in q->detached until it exits. False when
 * it is not active (it parked or exited since). */
static bool detach(blq *q, blq__worker *w)
{
	int st = BLQ__W_ACTIVE;
	bool ok;

	pthread_mutex_lock(&q->mu);
	ok = atomic_compare_exchange_strong_explicit(&w->state, &st, BLQ__W_DETACHED,
						     memory_order_acq_rel, memory_order_acquire);
	if (ok) {
		atomic_fetch_sub_explicit(&q->n_active, 1, memory_order_acq_rel);
		w->detached = true;
		atomic_fetch_add_explicit(&q->detached, 1, memory_order_relaxed);
		pthread_cond_broadcast(&q->cond); /* a closer past its limit waits for this */
	}
	pthread_mutex_unlock(&q->mu);
	/* Woken too: its callback may have returned since the mark and the
	 * thread gone to sleep as any worker, which would sleep on, counted
	 * stuck, until the next push. */
	if (ok)
		blq__pool_tell_stop(q, w);
	return ok;
}

/* Marks the attempt w runs (its busy word read as `seen`) given up.
 * False when w has moved on. When our own CAS did it (*ours) and the
 * attempt has a limit, the worker's hand is ours to take back, and must
 * be taken at once (handback.c: the worker waits for it). */
static bool mark(blq__worker *w, uint64_t seen, bool *ours)
{
	*ours = false;
	if ((seen & BLQ__BUSY_GIVEN_UP) != 0)
		return true;
	if (!atomic_compare_exchange_strong_explicit(&w->busy_until, &seen,
						     seen | BLQ__BUSY_GIVEN_UP,
						     memory_order_seq_cst, memory_order_relaxed))
		return false;
	*ours = seen != BLQ__BUSY_NO_LIMIT;
	return true;
}

/* An attempt past its limit: give it up, take its worker's hand back
 * (into b, placed by the caller), detach its thread and start a
 * replacement (not when the queue is dropping). */
static void give_up_late(blq *q, blq__worker *w, uint64_t seen, blq__backlog *b)
{
	bool ours;

	if (!mark(w, seen, &ours))
		return;
	/* The item ends now, or goes on on a copy (late.c), unless its
	 * callback claimed it; then its unstarted hand comes back. */
	blq__late late;
	bool ended = ours && blq__late_take(q, w, &late, b->cap - b->n);
	if (ours)
		blq__hand_take(q, w, b);
	bool dropping = atomic_load_explicit(&q->forced, memory_order_acquire) != 0;
	bool replaced = false;
	pthread_mutex_lock(&q->pool_mu);
	blq__worker *spare = dropping ? NULL : idle_slot(q);
	if (spare != NULL && detach(q, w))
		replaced = blq__pool_start(q, spare) == 0;
	pthread_mutex_unlock(&q->pool_mu);
	/* The outcome after the detach: whoever hears of it (a waiter, a
	 * hook) and then lets the callback return finds its thread told to
	 * stop already (a CI run caught the other order: the worker returned,
	 * went to sleep on the queue, and was detached asleep). */
	if (ended)
		blq__late_end(q, &late, b);
	/* Said once per given-up attempt: replaced, kept at the bound, or
	 * kept because the queue is dropping. (A worker that returned between
	 * the mark and the detach needs no word; a failed start logs its own.) */
	if (replaced)
		blq__log(q, BLQ_LOG_WARN,
			 "queue %s: worker %u ran past its time limit; worker %u took its place",
			 q->name, w->index, spare->index);
	else if (spare == NULL)
		blq__log(q, BLQ_LOG_WARN, "queue %s: worker %u ran past its time limit; %s",
			 q->name, w->index,
			 dropping ? "no replacement while the queue closes"
				  : "no spare slot for a replacement: kept");
}

/* Gives up every attempt past its limit; returns the earliest limit still
 * ahead (UINT64_MAX: none). */
static uint64_t scan(blq *q, uint64_t now, blq__backlog *b)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];
		uint64_t v = atomic_load_explicit(&w->busy_until, memory_order_seq_cst);

		if (v == 0 || v == BLQ__BUSY_NO_LIMIT || (v & BLQ__BUSY_GIVEN_UP) != 0)
			continue;
		if (v > now) {
			next = v < next ? v : next;
			continue;
		}
		give_up_late(q, w, v, b);
	}
	return next;
}

/* Room in the backlog for a hand and a late item per slot in use: at the
 * start, and again after a blq_resize added slots (the backlog is this
 * thread's alone). Without the memory, the room it has stays (none at
 * first): a worker given up keeps what does not fit until its callback
 * returns, and a late item whose way needs a place there waits for it. */
static void backlog_fit(blq *q, blq__backlog *b)
{
	unsigned want = (BLQ__HAND + 1) * blq__slots(q);

	if (b->cap >= want)
		return;
	blq__item *it = realloc(b->it, sizeof(blq__item) * want);
	if (it == NULL) {
		blq__log(q, BLQ_LOG_ERROR,
			 "queue %s: no memory for the watchdog's backlog: a worker given up "
			 "keeps the items it took ahead until its callback returns",
			 q->name);
		return;
	}
	b->it = it;
	b->cap = want;
}

static void *watchdog_main(void *arg)
{
	blq *q = arg;
	/* The hands taken back and not yet placed (handback.c), and the
	 * late items whose retry found no room (late.c): room for a hand and
	 * its running item per slot (backlog_fit). */
	blq__backlog b = {0};

	pthread_setname_np(pthread_self(), "blq-watchdog");
	for (;;) {
		uint32_t snap = blq__ec_prepare(&q->wd_ec);

		backlog_fit(q, &b);

		if (atomic_load_explicit(&q->wd_stop, memory_order_acquire)) {
			blq__ec_cancel(&q->wd_ec);
			break;
		}
		atomic_store_explicit(&q->wd_next, UINT64_MAX, memory_order_seq_cst);
		uint64_t now = blq__now(q);
		uint64_t next = scan(q, now, &b);
		atomic_store_explicit(&q->wd_next, next, memory_order_seq_cst);
		uint64_t wait = next == UINT64_MAX ? UINT64_MAX : next - now;
		if (q->own_clock && wait > BLQ__WD_OWN_CLOCK_POLL_NS)
			wait = BLQ__WD_OWN_CLOCK_POLL_NS;
		/* What found no room looks again soon (the workers drain). */
		if (!blq__backlog_flush(q, &b, false) && wait > BLQ__WD_BACKLOG_RETRY_NS)
			wait = BLQ__WD_BACKLOG_RETRY_NS;
		blq__ec_wait(&q->wd_ec, snap, blq__deadline_after(wait));
	}
	/* Stopped once every worker exited: a graceful close left nothing
	 * here (draining workers wait while q->staged counts it), a dropping
	 * one abandons it. Room or not, nothing stays uncounted. */
	if (!blq__backlog_flush(q, &b, false)) {
		blq__log(q, BLQ_LOG_ERROR, "queue %s: %u items taken back from given-up workers "
			 "found no room at the close: abandoned", q->name, b.n);
		blq__backlog_flush(q, &b, true);
	}
	free(b.it);
	return NULL;
}

/* The first attempt with a limit starts the thread (not once the pool is
 * closed: a close in progress needs no watchdog). */
static void start(blq *q)
{
	int zero = 0;

	if (!atomic_compare_exchange_strong_explicit(&q->wd_started, &zero, 1,
						     memory_order_acq_rel, memory_order_acquire))
		return;
	pthread_mutex_lock(&q->pool_mu);
	if (!q->pool_closed) {
		int e = blq__thread_create(&q->wd_thread, watchdog_main, q);

		q->wd_joinable = e == 0;
		if (e != 0)
			blq__log(q, BLQ_LOG_ERROR,
				 "queue %s: cannot start the watchdog (error %d): time limits "
				 "only reach callbacks that poll their token",
				 q->name, e);
	}
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__watchdog_arm(blq *q, _Atomic uint64_t *busy_until, uint64_t limit)
{
	/* seq_cst store, then the load of wd_next: with the watchdog's store
	 * of wd_next and its scan, one of the two sees the other. */
	atomic_store_explicit(busy_until, limit, memory_order_seq_cst);
	if (__builtin_expect(!atomic_load_explicit(&q->wd_started, memory_order_relaxed), 0)) {
		start(q);
		return;
	}
	if (!q->own_clock && limit < atomic_load_explicit(&q->wd_next, memory_order_seq_cst))
		blq__ec_notify(&q->wd_ec, 0);
}

void blq__watchdog_kick(blq *q)
{
	blq__ec_notify(&q->wd_ec, 0);
}

void blq__give_up_running(blq *q)
{
	blq__item room[BLQ__HAND];
	blq__backlog b = {.it = room, .cap = BLQ__HAND};

	pthread_mutex_lock(&q->pool_mu);
	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];
		uint64_t v = atomic_load_explicit(&w->busy_until, memory_order_seq_cst);
		bool ours = false;

		if (v == 0 || !mark(w, v, &ours))
			continue;
		/* Its hand too: the queue is dropping (a close past its limit
		 * is Hard by now), so the items end now as the queued ones do,
		 * not when the callback returns. */
		if (ours) {
			blq__hand_take(q, w, &b);
			blq__backlog_flush(q, &b, true);
		}
		if (detach(q, w))
			blq__log(q, BLQ_LOG_WARN,
				 "queue %s: close past its time limit: worker %u is still inside "
				 "its callback; left running (blq_free waits for it)",
				 q->name, w->index);
	}
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__watchdog_stop(blq *q)
{
	bool join;

	pthread_mutex_lock(&q->pool_mu);
	join = q->wd_joinable;
	q->wd_joinable = false;
	pthread_mutex_unlock(&q->pool_mu);
	atomic_store_explicit(&q->wd_stop, 1, memory_order_release);
	blq__ec_notify(&q->wd_ec, 0);
	if (join)
		pthread_join(q->wd_thread, NULL);
}
