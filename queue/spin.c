/*
 * The waits' looks (shared/spin.h says when a thread spins, yields or
 * sleeps, and why): the process-wide spin places, the pause loop bounded
 * by time, the timed yields, and the moving averages that tell a busy host
 * and spins that do not pay. Slow paths only: a thread comes here after a
 * look found nothing.
 */
#include <pthread.h>
#include <sched.h>

#include "ck_tsan.h" /* before any ck header */

#include <ck_pr.h>

#include "internal.h"

static pthread_once_t places_once = PTHREAD_ONCE_INIT;
static unsigned places;           /* set once, before places_once returns */
static _Atomic unsigned spinners; /* threads spinning now, process-wide */

static void count_places(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;

	places = (unsigned)n / 2;
}

unsigned blq__spin_places(void)
{
	pthread_once(&places_once, count_places);
	return places;
}

unsigned blq__spinning(void)
{
	return atomic_load_explicit(&spinners, memory_order_relaxed);
}

bool blq__spin_busy(const blq__spin *s)
{
	return atomic_load_explicit(&s->stolen, memory_order_relaxed) > BLQ__STOLEN_BUSY;
}

/* One step of a moving average in 1/BLQ__STOLEN_ONE: 1/8 weight per event;
 * a probe that came back well while the average is above `limit` halves
 * it. A settled average (below 8 it no longer moves) is not stored again,
 * so its line stays shared by every wait's read. */
static void average(_Atomic uint32_t *a, bool hit, uint32_t limit)
{
	uint32_t old = atomic_load_explicit(a, memory_order_relaxed), v = old;

	if (hit)
		v = v - v / 8 + BLQ__STOLEN_ONE / 8;
	else
		v = v > limit ? v / 2 : v - v / 8;
	if (v != old)
		atomic_store_explicit(a, v, memory_order_relaxed);
}

void blq__spin_note(blq__spin *s, bool stolen)
{
	average(&s->stolen, stolen, BLQ__STOLEN_BUSY);
}

/* One caller per `period` (for the whole queue) gets true. */
static bool probe_due(_Atomic uint64_t *at_p, uint64_t now)
{
	uint64_t at = atomic_load_explicit(at_p, memory_order_relaxed);

	return now >= at && atomic_compare_exchange_strong_explicit(at_p, &at, now + BLQ__PROBE_NS,
								    memory_order_relaxed,
								    memory_order_relaxed);
}

unsigned blq__spin_rounds(blq__spin *s)
{
	if (!blq__spin_busy(s))
		return BLQ__SPIN_ROUNDS;
	return probe_due(&s->probe_at, blq__monotonic_ns()) ? 1 : 0;
}

void blq__spin_yield(blq__spin *s, unsigned *rounds)
{
	uint64_t t0 = blq__monotonic_ns();

	sched_yield();
	bool stolen = blq__monotonic_ns() - t0 > BLQ__STOLEN_NS;

	blq__spin_note(s, stolen);
	if (stolen)
		*rounds = 0;
}

static bool take_place(void)
{
	unsigned n = atomic_load_explicit(&spinners, memory_order_relaxed);
	unsigned max = blq__spin_places();

	do {
		if (n >= max)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&spinners, &n, n + 1, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/* A spin, when spins pay (or a probe spin is due) and a place is free. */
static bool start_spin(blq__spin *s, blq__spinner *sp)
{
	uint64_t now = blq__fast_ns();

	if (atomic_load_explicit(&s->unpaid, memory_order_relaxed) > BLQ__UNPAID_MAX &&
	    !probe_due(&s->spin_probe_at, now))
		return false;
	if (!take_place())
		return false;
	sp->spin = true;
	sp->rounds = 0;
	sp->until = now + BLQ__SPIN_NS;
	sp->look_at = now + BLQ__LOOK_NS;
	sp->last = now;
	return true;
}

bool blq__spin_start(blq__spin *s, blq__spinner *sp, bool may_spin)
{
	sp->rounds = blq__spin_rounds(s);
	if (sp->rounds == 0)
		return false; /* busy, no probe due */
	if (may_spin && !blq__spin_busy(s) && start_spin(s, sp))
		return true;
	sp->spin = false; /* yielding looks (one, a probe, when busy) */
	return true;
}

static void end_spin(blq__spin *s, bool stolen, bool paid)
{
	atomic_fetch_sub_explicit(&spinners, 1, memory_order_relaxed);
	blq__spin_note(s, stolen);
	if (!stolen)
		average(&s->unpaid, !paid, BLQ__UNPAID_MAX);
}

bool blq__spin_pause(blq__spin *s, blq__spinner *sp)
{
	if (!sp->spin) {
		/* Yielding looks: a stolen yield zeroes the rounds; its look
		 * still comes, and the next pause ends them. */
		if (sp->rounds == 0)
			return false;
		sp->rounds--;
		blq__spin_yield(s, &sp->rounds);
		return true;
	}
	uint64_t now;

	do {
		ck_pr_stall(); /* pause: the look costs the other hyperthread little */
		now = blq__fast_ns();
		if (now - sp->last > BLQ__STOLEN_NS) {
			end_spin(s, true, false);
			return false;
		}
		sp->last = now;
	} while (now < sp->look_at);
	if (now >= sp->until) {
		end_spin(s, false, false);
		return false;
	}
	sp->look_at = now + BLQ__LOOK_NS;
	return true;
}

void blq__spin_stop(blq__spin *s, blq__spinner *sp)
{
	if (sp->spin)
		end_spin(s, false, true);
}

bool blq__spin_look(blq__spin *s, bool may_spin, bool (*ending)(void *), bool (*look)(void *),
		    void *ctx)
{
	blq__spinner sp;

	if (!blq__spin_start(s, &sp, may_spin))
		return false;
	while (blq__spin_pause(s, &sp)) {
		if (ending(ctx)) {
			blq__spin_stop(s, &sp);
			return false;
		}
		if (look(ctx)) {
			blq__spin_stop(s, &sp);
			return true;
		}
	}
	return false;
}
