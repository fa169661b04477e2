/*
 * Admission on a full queue (shared/admission.h): the one policy both
 * engines apply when a new item's first push finds no room, in the rings
 * (engine_rings.c) or in its QoS sub-queue (qos/ingress.c). The engine
 * keeps that first push inline, so an item that fits pays for none of
 * this: no call through the ops, no extra atomic.
 *
 * The policy, in order:
 * - Balanced queue: hint the balancer (full: more hands, now), and again
 *   after each wake-up that still finds no room.
 * - Leaky queue: leak. Front: up to front_leak_attempts times, move the
 *   place's oldest item to the DLQ (pop_oldest) and push again; rear, or
 *   when that keeps failing: the new item goes to the DLQ. Never waits.
 * - BLQ__TRY: BLQ_EFULL.
 * - BLQ__BLOCK: counted in producers_blocked (port->blocked) from here
 *   until it gets in or gives up; when producers_blocked_max wait already
 *   (port->blocked_max), refused with BLQ_EFULL and counted in
 *   producers_turned_away instead (the add and its undo keep the count
 *   exact without a CAS loop: the cap may refuse one more than needed
 *   while another's add is being undone, never admit one over it).
 * - Waiting (BLQ__BLOCK and BLQ__TIMER), in rounds: a BLQ__TIMER waiter
 *   first wakes one taker (its pushes so far woke nobody: timer.c wakes
 *   once per batch); then, when the engine asks for them, the yielding
 *   looks (one call, look; spin.h says why a wait for room never spins);
 *   then announce the sleep on `space`, push again, and sleep until a
 *   drain to half or a close wakes it.
 * - Giving up: BLQ_ECLOSED once the queue is closed (seq_cst: pairs with
 *   the closer's store), checked before each look, after announcing the
 *   sleep and after waking; the timer thread gives up only on a force (a
 *   graceful close drains the timer through it). A timed enqueue
 *   (blq__core_wait_until) gives up with BLQ_ETIMEDOUT at its limit,
 *   checked after announcing the sleep, which ends there.
 * No lock (the balancer's hint is a trylock, or a lock when no worker is
 * active, as before), no allocation; a system call only to yield or sleep.
 *
 * The two engines each had their own copy of this until issue #33; where
 * they disagreed, this is what was chosen:
 * - The close check in the looks: QoS read `closed` relaxed there, the
 *   rings seq_cst. Now seq_cst for both (a plain load on x86).
 * - After a wake-up that found no room: QoS went straight back to sleep;
 *   the rings hinted the balancer again and took their looks again (and
 *   the timer woke a taker again). Now the rings' way for both: a new
 *   round is a new wait, as spin.h counts them, and the balancer hears
 *   that the queue is still full.
 * - Before the policy: the rings pushed a second time at once (their
 *   `place` began with a push after the engine's failed one), QoS did
 *   not. Now the engine's one inline push, then the policy.
 * - BLQ__TIMER: the rings wait (giving up on a force only); QoS refused
 *   it at a full sub-queue like a try, leaking first on a leaky queue, and
 *   sent it on to the rings (blq__place). Both kept: QoS asks the policy
 *   with BLQ__TRY for a due item, so the timer never waits on a
 *   sub-queue, which a graceful close would make it give up on.
 * - Unchanged and now written once: producers_blocked counts BLQ__BLOCK
 *   only (with QoS too), both engines hint once before leaking or
 *   refusing, and the front leak's victim comes from the full place only
 *   (the rings: the producer's lane, else any ring, never the timer's due
 *   ring; QoS: the full sub-queue).
 * Which admissions take the looks is the engine's choice (the rings' single
 * blocking producer sleeps at once: engine_rings.c, with the measurements).
 */
#include "admission.h"
#include "monotonic.h"

/* The condition a waiter gives up on: a close for producers, only a
 * force for the timer thread (a graceful close drains the timer). */
static bool give_up(const blq__port *p, enum blq__mode mode)
{
	return atomic_load_explicit(mode == BLQ__TIMER ? p->forced : p->closed,
				    memory_order_seq_cst) != 0;
}

/* A wait for room's looks, as blq__spin_look sees them. */
struct room_look {
	const blq__admission *a;
	const blq__item *it;
	enum blq__mode mode;
};

static bool room_ending(void *ctx)
{
	const struct room_look *r = ctx;

	return give_up(r->a->port, r->mode);
}

static bool room_pushed(void *ctx)
{
	const struct room_look *r = ctx;

	return r->a->ops->push(r->a->ctx, r->it);
}

/* The looks: yielding ones (spin.h: a wait for room never spins): true
 * once the item went in; false when the looks ran out or the waiter must
 * give up (the caller's re-check after announcing its sleep tells
 * which). */
static bool look(const blq__admission *a, const blq__item *it, enum blq__mode mode)
{
	return blq__spin_look(a->port->spin, false, room_ending, room_pushed,
			      &(struct room_look){a, it, mode});
}

/* Leaky and full: make room at the front or leak the new item at the
 * rear. True when the new item went in after all. */
static bool leak(const blq__admission *a, blq__cell *c, const blq__item *it)
{
	const blq__port *p = a->port;

	if (p->leak_direction == BLQ_LEAK_FRONT) {
		blq__item old;

		for (unsigned i = 0; i < p->front_leak_attempts; i++) {
			if (a->ops->pop_oldest(a->ctx, &old))
				a->ops->leak(a->ctx, c, &old, BLQ_LEAK_FRONT);
			if (a->ops->push(a->ctx, it))
				return true;
		}
	}
	a->ops->leak(a->ctx, c, it, BLQ_LEAK_REAR);
	return false;
}

/* Waits for room in rounds: 0 once the item is in, BLQ_ECLOSED, or
 * BLQ_ETIMEDOUT at a timed enqueue's limit. */
static int wait_room(const blq__admission *a, const blq__item *it, enum blq__mode mode,
		     bool looks)
{
	const blq__port *p = a->port;
	uint64_t until = mode == BLQ__BLOCK ? blq__core_wait_until(p->q) : 0;

	for (;;) {
		if (mode == BLQ__TIMER && a->takers != NULL)
			blq__ec_notify(a->takers, 1); /* a woken taker passes it on */
		if (looks && look(a, it, mode))
			return 0;
		/* Announce, then re-check room and close: a drain or a close
		 * after the announcement wakes us (ec.h). */
		uint32_t snap = blq__ec_prepare(a->space);

		if (a->ops->push(a->ctx, it)) {
			blq__ec_cancel(a->space);
			return 0;
		}
		if (give_up(p, mode)) {
			blq__ec_cancel(a->space);
			return BLQ_ECLOSED;
		}
		if (until != 0 && blq__monotonic_ns() >= until) {
			blq__ec_cancel(a->space);
			return BLQ_ETIMEDOUT;
		}
		blq__ec_wait(a->space, snap, until);
		if (give_up(p, mode))
			return BLQ_ECLOSED;
		if (a->ops->push(a->ctx, it))
			return 0;
		if (atomic_load_explicit(p->balanced, memory_order_relaxed))
			blq__scale_up_hint(p->q); /* still full after a wake-up */
	}
}

int blq__admit_full(const blq__admission *a, blq__cell *c, const blq__item *it,
		    enum blq__mode mode, bool looks, bool *pushed)
{
	const blq__port *p = a->port;
	int rc;

	*pushed = false;
	if (atomic_load_explicit(p->balanced, memory_order_relaxed))
		blq__scale_up_hint(p->q); /* full: more hands, now */
	if (p->leaky) {
		*pushed = leak(a, c, it);
		return 0;
	}
	if (mode == BLQ__TRY)
		return BLQ_EFULL;
	if (mode == BLQ__BLOCK &&
	    atomic_fetch_add_explicit(p->blocked, 1, memory_order_relaxed) >= p->blocked_max &&
	    p->blocked_max != 0) {
		/* As many wait already as may: refused, as a try would be. */
		atomic_fetch_sub_explicit(p->blocked, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(p->turned_away, 1, memory_order_relaxed);
		return BLQ_EFULL;
	}
	rc = wait_room(a, it, mode, looks);
	if (mode == BLQ__BLOCK)
		atomic_fetch_sub_explicit(p->blocked, 1, memory_order_relaxed);
	*pushed = rc == 0;
	return rc;
}
