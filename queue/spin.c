/*
 * The waits' spin (shared/spin.h says when a thread spins and why): the
 * process-wide places, the pause loop bounded by time, and the moving
 * average that tells a busy host. Slow paths only: a thread comes here
 * after a look found nothing.
 */
#include <pthread.h>
#include <sched.h>

#include "ck_tsan.h" /* before any ck header */

#include <ck_pr.h>

#include "internal.h"

static pthread_once_t places_once = PTHREAD_ONCE_INIT;
static unsigned places;          /* set once, before places_once returns */
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

void blq__spin_note(blq__spin *s, bool stolen)
{
	uint32_t old = atomic_load_explicit(&s->stolen, memory_order_relaxed), v = old;

	if (stolen)
		v = v - v / 8 + BLQ__STOLEN_ONE / 8;
	else
		v = v > BLQ__STOLEN_BUSY ? v / 2 : v - v / 8; /* a probe: half */
	/* A quiet host's average rests (below 8 it no longer moves): no
	 * store then, so the line stays shared by every wait's read. */
	if (v != old)
		atomic_store_explicit(&s->stolen, v, memory_order_relaxed);
}

/* Busy: one wait per BLQ__PROBE_NS (for the whole queue) may spin. */
static bool probe_due(blq__spin *s, uint64_t now)
{
	uint64_t at = atomic_load_explicit(&s->probe_at, memory_order_relaxed);

	return now >= at && atomic_compare_exchange_strong_explicit(&s->probe_at, &at,
								    now + BLQ__PROBE_NS,
								    memory_order_relaxed,
								    memory_order_relaxed);
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

bool blq__spin_start(blq__spin *s, blq__spinner *sp)
{
	uint64_t now = blq__fast_ns();

	if (blq__spin_busy(s) && !probe_due(s, now))
		return false;
	if (!take_place())
		return false;
	sp->until = now + BLQ__SPIN_NS;
	sp->look_at = now + BLQ__LOOK_NS;
	sp->last = now;
	return true;
}

static void end(blq__spin *s, bool stolen)
{
	atomic_fetch_sub_explicit(&spinners, 1, memory_order_relaxed);
	blq__spin_note(s, stolen);
}

bool blq__spin_pause(blq__spin *s, blq__spinner *sp)
{
	uint64_t now;

	do {
		ck_pr_stall(); /* pause: the look costs the other hyperthread little */
		now = blq__fast_ns();
		if (now - sp->last > BLQ__STOLEN_NS) {
			end(s, true);
			return false;
		}
		sp->last = now;
	} while (now < sp->look_at);
	if (now >= sp->until) {
		end(s, false);
		return false;
	}
	sp->look_at = now + BLQ__LOOK_NS;
	return true;
}

void blq__spin_stop(blq__spin *s, blq__spinner *sp)
{
	(void)sp;
	end(s, false);
}
