/*
 * QoS egress: the threads that move items from the sub-queues into the
 * egress ring(s), which are the queue's own rings, the ones its workers
 * take from.
 *
 * Design
 * - Threads: qos.egress.workers movers ("blq-e0", ...), started by blq_new
 *   after the workers, ended and joined by the closer (blq__qos_stop, from
 *   finish). Each keeps its own scheduling state (RR cursor, WRR turn and
 *   credit, egress stream cursor): no lock and no shared line between
 *   them. A move is a pop from a sub-queue ring and a push into an egress
 *   ring: no lock, no allocation, no system call.
 * - Choosing (take): PQ pops from the first non-empty sub-queue in
 *   configuration order; RR from the next non-empty one after the last it
 *   served; WRR serves sub-queue i for up to quota[i] items (egress weight
 *   over the smallest, rounded: 250/600/150 -> 2/4/1) then passes the turn
 *   on; an empty sub-queue passes its turn at once (work-conserving).
 * - Room first: a mover takes an item out of a sub-queue only when it
 *   knows of a free egress slot (`room`, recomputed from the rings'
 *   indices when used up). So items wait in their sub-queues, where the
 *   priority applies, and not in a mover's hands while the egress is full.
 * - Accounting (the port's staged count, engine.h): the producer counted the
 *   item when it entered its sub-queue (ingress.c). The mover keeps it
 *   counted while it holds it and after the push, and gives the counts
 *   back in a flush: one seq_cst subtraction of everything pushed since
 *   the last flush, then the wake-ups below. Flushes come every
 *   BLQ__QOS_BATCH moves and always before a mover sleeps or ends, so
 *   staged is exact whenever the movers rest and over-counts by at most a
 *   batch per mover while items flow (blq_size is a snapshot anyway), and
 *   a closing worker that reads staged == 0 sees every pushed item in the
 *   rings (the subtraction comes after the pushes).
 * - Waking (flush): one full fence, then only where someone waits: one
 *   worker (items_ec; a woken worker passes the wake-up on, worker.c);
 *   producers blocked on a sub-queue that is down to half (all at once,
 *   deferring to a pending wake-up, like worker.c's after_take); waiters
 *   of blq_wait_idle; and every sleeper when closed (blq__wake_all), as
 *   the staged protocol asks.
 * - Blocking, looking a moment first: with nothing to take, a mover
 *   flushes, looks again a little where that pays (spin.h: a spin, or
 *   yielding looks, as the workers do), then sleeps
 *   on qos->ec after announcing itself and trying once more (ec.h). Each
 *   producer that pushed into a sub-queue wakes one (enqueue.c, leave: a
 *   load when nobody sleeps); a woken mover passes a wake-up on to the
 *   next when it found work. With no egress room it sleeps on
 *   the queue's space event count (the port's), where the workers wake
 *   one sleeper once the egress has drained to half (worker.c), and a
 *   mover woken there wakes the next (wait_room says why). If a push fails all
 *   the same (another mover took the slot, or a worker claimed it and has
 *   not yet freed it), the mover holds the item and sleeps there too. So
 *   an idle QoS queue costs no CPU: the original spins idle_threshold
 *   times and then sleeps idle_timeout, over and over (and its unlock
 *   signal can never fire); idle_threshold and idle_timeout_ns are kept in
 *   the config for compatibility and ignored.
 * - Close: graceful: the movers keep moving; producers are refused, so
 *   the sub-queues drain; each mover's flush when it runs dry brings
 *   staged down and, closed, wakes everyone; the workers exit once no
 *   producer is in flight, staged is 0 and the rings are empty. finish()
 *   then stops and joins the movers (nothing is left for them). Forced:
 *   the movers stop at once (after a flush); an item a mover held stays in
 *   its hands, still counted in staged, and the closer's sweep takes the
 *   held items and the sub-queues' leftovers (blq__qos_take_any) to the
 *   DLQ or counts them lost, after the producers have left and the movers
 *   are joined.
 */
#include <stdio.h>

#include "qos_internal.h"

static bool ending(const struct blq__qos *s)
{
	/* Acquire: pairs with the stopper's and the closer's stores; after
	 * them nothing more is asked of a mover. */
	return atomic_load_explicit(&s->stop, memory_order_acquire) ||
	       atomic_load_explicit(s->port.forced, memory_order_acquire);
}

/* What a mover's looks (blq__spin_look) see: the mover, and the item a
 * look takes into (next) or pushes (push). */
struct mover_look {
	blq__mover *m;
	blq__item *out;
	const blq__item *in;
};

static bool mover_ending(void *ctx)
{
	const struct mover_look *l = ctx;

	return ending(l->m->s);
}

/* The looks before a sleep (spin.h: a spin where it pays and may_spin,
 * else yielding looks), looking with look after each pause unless the
 * mover is to end. True: a look found what it looked for. False: the looks
 * ended (or the mover is to end): sleep, or end. */
static bool spin(bool may_spin, bool (*look)(void *), struct mover_look l)
{
	return blq__spin_look(l.m->s->port.spin, may_spin, mover_ending, look, &l);
}

static void flush(blq__mover *m)
{
	struct blq__qos *s = m->s;

	/* The hand-over (engine.h): seq_cst, after the pushes, so a worker
	 * that reads staged == 0 finds these items in the rings; its RMW is
	 * also the StoreLoad barrier before the waiters counts read here and
	 * below (ec.h); it wakes one worker, and everyone when closed. */
	blq__handoff(&s->port, s->port.staged, -m->moved, s->port.items);
	m->moved = 0;
	for (unsigned i = 0; i < s->n; i++) {
		blq__subq *sq = &s->subqs[i];

		if (blq__ec_waiters_after_rmw(&sq->space) != 0 &&
		    blq__ring_size(&sq->ring) <= sq->ring.cap / 2 && blq__ec_claim(&sq->space))
			blq__ec_wake_slow(&sq->space, 0);
	}
	if (blq__ec_waiters_after_rmw(s->port.idle) != 0)
		blq__ec_wake_slow(s->port.idle, 0);
}

/* A look of wait_room's spin. */
static bool room_seen(void *ctx)
{
	blq__mover *m = ((struct mover_look *)ctx)->m;

	return (m->room = blq__core_room(m->s->port.q)) > 0;
}

/* Waits until the egress has room: the looks first, where they pay (the
 * workers are draining it, and a sleep and wake-up per half-egress costs
 * more than the moves), then sleeps. False: the mover is to end.
 *
 * A mover woken here passes the wake-up on. The workers wake one sleeper
 * on the egress's room per half-drain (worker.c, space_wake), and count on
 * the one they wake to push, so that the take of what it pushed wakes the
 * next. A mover may find nothing left to move and go to sleep on the
 * sub-queues instead, and the timer and the producers that wait here too
 * would then sleep on an egress with room, for good once the workers have
 * drained it (retry_stress under ASan: a QoS round whose timer waited on
 * an empty egress, its pool scaled down to no thread). */
static bool wait_room(blq__mover *m)
{
	struct blq__qos *s = m->s;
	blq__ec *space = s->port.space;
	bool slept = false;

	if ((m->room = blq__core_room(s->port.q)) > 0)
		return true;
	flush(m);
	if (spin(false, room_seen, (struct mover_look){.m = m}))
		return true;
	for (;;) {
		uint32_t snap = blq__ec_prepare(space);

		if ((m->room = blq__core_room(s->port.q)) > 0) {
			blq__ec_cancel(space);
			if (slept)
				blq__ec_notify(space, 1);
			return true;
		}
		if (ending(s)) {
			blq__ec_cancel(space);
			return false;
		}
		blq__ec_wait(space, snap, 0);
		slept = true;
	}
}

static bool pop(blq__mover *m, unsigned i, blq__item *it)
{
	const struct blq__qos *s = m->s;
	const blq_metrics_writer *mw = s->port.metrics;

	if (!blq__ring_pop(&s->subqs[i].ring, it))
		return false;
	if (mw != NULL && mw->subq_pull != NULL)
		mw->subq_pull(mw->ctx, s->port.name, s->subqs[i].name);
	return true;
}

static void wrr_pass(blq__mover *m)
{
	const struct blq__qos *s = m->s;

	m->cur = (m->cur + 1) % s->n;
	m->credit = s->subqs[m->cur].quota;
}

/* One item out of a sub-queue, chosen by the algorithm. */
static bool take(blq__mover *m, blq__item *it)
{
	const struct blq__qos *s = m->s;
	unsigned n = s->n;

	switch (s->cfg.algo) {
	case BLQ_QOS_PQ:
		for (unsigned i = 0; i < n; i++)
			if (pop(m, i, it))
				return true;
		return false;
	case BLQ_QOS_RR:
		for (unsigned k = 0; k < n; k++) {
			unsigned i = (m->cur + k) % n;

			if (pop(m, i, it)) {
				m->cur = (i + 1) % n;
				return true;
			}
		}
		return false;
	default: /* BLQ_QOS_WRR */
		for (unsigned k = 0; k < n; k++) {
			if (pop(m, m->cur, it)) {
				if (--m->credit == 0)
					wrr_pass(m);
				return true;
			}
			wrr_pass(m); /* empty: its turn passes */
		}
		return false;
	}
}

/* A look of next's spin. */
static bool took(void *ctx)
{
	struct mover_look *l = ctx;

	return take(l->m, l->out);
}

/* The next item to move, sleeping while there is no room or nothing to
 * take. False: the mover is to end. */
static bool next(blq__mover *m, blq__item *it)
{
	struct blq__qos *s = m->s;
	bool slept = false;

	for (;;) {
		if (ending(s) || (m->room == 0 && !wait_room(m)))
			return false;
		if (take(m, it))
			break;
		flush(m);
		if (spin(true, took, (struct mover_look){.m = m, .out = it}))
			goto got;
		uint32_t snap = blq__ec_prepare(&s->ec);
		if (take(m, it)) {
			blq__ec_cancel(&s->ec);
			break;
		}
		if (ending(s)) {
			blq__ec_cancel(&s->ec);
			return false;
		}
		blq__ec_wait(&s->ec, snap, 0);
		slept = true;
	}
got:
	/* Woken for one item: another mover may be needed (one wake-up per
	 * episode, ec.h). Only a load when no other mover sleeps. */
	if (slept && s->nmovers > 1)
		blq__ec_notify(&s->ec, 1);
	return true;
}

/* Round-robin over the egress streams, starting after the last used. */
static bool push_any(blq__mover *m, const blq__item *it)
{
	return blq__core_push(m->s->port.q, it, &m->ring);
}

/* A look of push's spin. */
static bool pushed(void *ctx)
{
	struct mover_look *l = ctx;

	return push_any(l->m, l->in);
}

/* Pushes the item into the egress. A failure despite known room is a slot
 * a worker has claimed and not yet freed, or one another mover took: look
 * again while looking pays (spin.h), then sleep while it does not fit.
 * False: forced meanwhile; the item stays in m->held for the closer's
 * sweep. */
static bool push(blq__mover *m, const blq__item *it)
{
	struct blq__qos *s = m->s;
	blq__ec *space = s->port.space;

	if (push_any(m, it))
		return true;
	flush(m);
	if (spin(false, pushed, (struct mover_look){.m = m, .in = it}))
		return true;
	for (;;) {
		uint32_t snap = blq__ec_prepare(space);

		if (push_any(m, it)) {
			blq__ec_cancel(space);
			return true;
		}
		if (ending(s)) {
			blq__ec_cancel(space);
			m->held = *it;
			m->has_held = true;
			return false;
		}
		blq__ec_wait(space, snap, 0);
	}
}

static void *mover_main(void *arg)
{
	blq__mover *m = arg;
	blq__item it;
	char tname[16];

	snprintf(tname, sizeof(tname), "blq-e%u", m->index);
	pthread_setname_np(pthread_self(), tname);
	while (next(m, &it) && push(m, &it)) {
		m->room--;
		if (++m->moved == BLQ__QOS_BATCH)
			flush(m);
	}
	flush(m);
	return NULL;
}

int blq__qos_start(void *state, blq_error *err)
{
	struct blq__qos *s = state;

	for (unsigned i = 0; i < s->nmovers; i++) {
		int e = blq__thread_create(&s->movers[i].thread, mover_main, &s->movers[i]);

		if (e != 0)
			return blq__error_set(err, BLQ_ETHREAD,
					      "qos.egress.workers: cannot start egress thread %u (error %d)",
					      i, e);
		s->movers[i].joinable = true;
	}
	return 0;
}

void blq__qos_stop(void *state)
{
	struct blq__qos *s = state;

	/* seq_cst, then the wake-ups: a mover announced on either event
	 * count either sees the flag on its re-check or is woken (ec.h). */
	atomic_store_explicit(&s->stop, 1, memory_order_seq_cst);
	blq__ec_notify(&s->ec, 0);
	blq__ec_notify(s->port.space, 0);
	for (unsigned i = 0; i < s->nmovers; i++) {
		if (s->movers[i].joinable) {
			pthread_join(s->movers[i].thread, NULL);
			s->movers[i].joinable = false;
		}
	}
}
