/*
 * The wait policy of queue/shared/spin.h: when a queue's threads spin or
 * yield before they sleep, how many spin at once and for how long, when
 * they yield instead because spins do not pay, and when they stop because
 * the host is busy. The averages' arithmetic is driven directly; the
 * signal itself is checked on the real scheduler: a thread that shares
 * its CPU with a CPU-bound thread sees its yields stolen and turns busy,
 * and its spins preempted. (The opposite, that a quiet CPU keeps it
 * looking, is not asserted here: the test suite runs beside other tests,
 * so no CPU is quiet for sure; the benchmarks W1 and W3 show it.)
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "spin.h"

TestSuite(spin, .timeout = 60);

static blq__spin fresh(void)
{
	blq__spin s;

	memset(&s, 0, sizeof(s));
	return s;
}

Test(spin, a_quiet_queue_yields_its_full_rounds)
{
	blq__spin s = fresh();

	for (int i = 0; i < 1000; i++)
		blq__spin_note(&s, false);
	cr_assert(!blq__spin_busy(&s));
	for (int i = 0; i < 100; i++)
		cr_assert_eq(blq__spin_rounds(&s), BLQ__SPIN_ROUNDS);
}

Test(spin, a_stolen_yield_now_and_then_does_not_make_the_host_busy)
{
	blq__spin s = fresh();

	/* One stolen in eight, spread out (the quiet W1 shows 2 in 100). */
	for (int i = 0; i < 800; i++) {
		blq__spin_note(&s, i % 8 == 0);
		cr_assert(!blq__spin_busy(&s), "after yield %d", i);
	}
}

Test(spin, three_stolen_yields_in_a_row_make_it_busy_and_two_probes_end_it)
{
	blq__spin s = fresh();

	blq__spin_note(&s, true);
	blq__spin_note(&s, true);
	cr_assert(!blq__spin_busy(&s), "two are not enough");
	blq__spin_note(&s, true);
	cr_assert(blq__spin_busy(&s));
	/* Busy: no looks, but one wait per BLQ__PROBE_NS yields once (the
	 * first here: no probe yet). */
	cr_assert_eq(blq__spin_rounds(&s), 1, "the first wait probes");
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(blq__spin_rounds(&s), 0, "no second probe within %u ns", BLQ__PROBE_NS);
	/* Probes that come back at once: quiet again after two, from a
	 * saturated average too. */
	for (int i = 0; i < 40; i++)
		blq__spin_note(&s, true);
	blq__spin_note(&s, false);
	cr_assert(blq__spin_busy(&s));
	blq__spin_note(&s, false);
	cr_assert(!blq__spin_busy(&s));
	cr_assert_eq(blq__spin_rounds(&s), BLQ__SPIN_ROUNDS);
}

Test(spin, a_stolen_yield_ends_the_waits_looks)
{
	blq__spin s = fresh();
	unsigned rounds = BLQ__SPIN_ROUNDS;

	/* The real yield, timed: a quiet one leaves the rounds alone (not
	 * asserted: see the top), a stolen one ends them; either way the
	 * average moved by this yield. */
	blq__spin_yield(&s, &rounds);
	cr_assert(rounds == BLQ__SPIN_ROUNDS || rounds == 0);
	cr_assert_eq(rounds == 0, atomic_load(&s.stolen) != 0,
		     "a stolen yield raised the average, a quiet one did not");
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static _Atomic int hog_stop;

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
		;
	return NULL;
}

/* Pins the calling thread to the first CPU it may use (a cpuset may leave
 * out CPU 0) and starts a CPU-bound thread on the same CPU. */
static pthread_t hog_beside_me(void)
{
	cpu_set_t mine, one;
	pthread_attr_t attr;
	pthread_t t;
	int cpu = 0;

	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	atomic_store(&hog_stop, 0);
	cr_assert_eq(pthread_create(&t, &attr, hog, NULL), 0);
	pthread_attr_destroy(&attr);
	return t;
}

static void hog_end(pthread_t t)
{
	atomic_store(&hog_stop, 1);
	pthread_join(t, NULL);
}

Test(spin, yields_beside_a_cpu_bound_thread_on_the_same_cpu_turn_it_busy)
{
	blq__spin s = fresh();
	pthread_t t = hog_beside_me();

	/* Each yield hands the CPU to the hog for its slice (0.75 ms or
	 * more under EEVDF); a few are enough. */
	int n = 0;
	while (!blq__spin_busy(&s) && n < 64) {
		unsigned rounds = BLQ__SPIN_ROUNDS;

		blq__spin_yield(&s, &rounds);
		cr_assert(rounds == 0 || !blq__spin_busy(&s));
		n++;
	}
	hog_end(t);
	cr_assert(blq__spin_busy(&s), "still quiet after %d yields beside a hog", n);
	cr_assert_eq(blq__spin_rounds(&s) <= 1, 1);
}

Test(spin, half_the_cpus_spin_at_once_and_the_others_take_yielding_looks)
{
	cpu_set_t mine;
	blq__spin s = fresh();
	blq__spinner sp[CPU_SETSIZE / 2 + 1];

	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	unsigned places = blq__spin_places();

	cr_assert_eq(places, (unsigned)CPU_COUNT(&mine) / 2);
	for (unsigned i = 0; i < places; i++)
		cr_assert(blq__spin_start(&s, &sp[i], true) && sp[i].spin, "place %u of %u", i, places);
	cr_assert_eq(blq__spinning(), places);
	/* No place left: the peer may be waiting for our CPU, so yield. */
	cr_assert(blq__spin_start(&s, &sp[places], true));
	cr_assert(!sp[places].spin, "no place left: yielding looks");
	cr_assert_eq(sp[places].rounds, BLQ__SPIN_ROUNDS);
	blq__spin_stop(&s, &sp[places]);
	cr_assert_eq(blq__spinning(), places, "yielding looks hold no place");
	if (places > 0) {
		blq__spin_stop(&s, &sp[0]);
		cr_assert(blq__spin_start(&s, &sp[0], true) && sp[0].spin, "a place given back is taken");
	}
	for (unsigned i = 0; i < places; i++)
		blq__spin_stop(&s, &sp[i]);
	cr_assert_eq(blq__spinning(), 0);
}

Test(spin, a_wait_for_room_takes_yielding_looks_even_with_a_place_free)
{
	blq__spin s = fresh();
	blq__spinner sp;

	cr_assert(blq__spin_start(&s, &sp, false));
	cr_assert(!sp.spin);
	cr_assert_eq(sp.rounds, BLQ__SPIN_ROUNDS);
	cr_assert_eq(blq__spinning(), 0, "yielding looks hold no place");
	blq__spin_stop(&s, &sp);
}

Test(spin, a_spin_ends_after_its_time_and_gives_its_place_back)
{
	blq__spin s = fresh();
	blq__spinner sp;

	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
	uint64_t t0 = now_ns();

	cr_assert(blq__spin_start(&s, &sp, true));
	unsigned looks = 0;

	while (blq__spin_pause(&s, &sp))
		looks++;
	uint64_t took = now_ns() - t0;

	cr_assert_eq(blq__spinning(), 0);
	/* Ended by its time, or earlier by a preemption (a busy test host);
	 * never later than its time plus one preemption. */
	cr_assert(took <= BLQ__SPIN_NS + 2ull * BLQ__STOLEN_NS + 100000000ull, "took %llu ns",
		  (unsigned long long)took);
	if (atomic_load(&s.stolen) == 0) {
		cr_assert(took >= BLQ__SPIN_NS, "a spin not preempted runs its time: %llu ns",
			  (unsigned long long)took);
		/* A look per BLQ__LOOK_NS at most (fewer when a short
		 * preemption, below BLQ__STOLEN_NS, took some of the time). */
		cr_assert(looks <= BLQ__SPIN_NS / BLQ__LOOK_NS, "%u looks in %llu ns", looks,
			  (unsigned long long)took);
	}
}

Test(spin, spins_that_keep_running_out_their_time_give_way_to_yields_and_a_probe_spin)
{
	blq__spin s = fresh();
	blq__spinner sp;

	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
	cr_assert(blq__spin_start(&s, &sp, true) && sp.spin, "a quiet queue spins");
	blq__spin_stop(&s, &sp);
	/* Spins that ran out their time (the peer was not running): after
	 * a few, the average of unpaid spins is above half. Driven through
	 * the real spins: each runs its 20 us unless preempted (then it
	 * counts in the stolen average instead, and the loop goes on). */
	int n = 0;

	while (atomic_load(&s.unpaid) <= BLQ__UNPAID_MAX && n < 1000) {
		if (!blq__spin_start(&s, &sp, true))
			break; /* busy: preempted too often on this host */
		if (!sp.spin)
			break;
		while (blq__spin_pause(&s, &sp))
			;
		n++;
	}
	if (blq__spin_busy(&s))
		cr_skip_test("the test host preempted the spins: busy");
	cr_assert(atomic_load(&s.unpaid) > BLQ__UNPAID_MAX, "after %d spins", n);
	/* Then the waits take yielding looks, not spins, except one probe
	 * spin per BLQ__PROBE_NS for the queue: the first here. */
	cr_assert(blq__spin_start(&s, &sp, true));
	cr_assert(sp.spin, "the first wait probes with a spin");
	blq__spin_stop(&s, &sp); /* it paid: the average halves */
	cr_assert(atomic_load(&s.unpaid) <= BLQ__UNPAID_MAX);
	atomic_store(&s.unpaid, BLQ__STOLEN_ONE);
	for (int i = 0; i < 100; i++) {
		cr_assert(blq__spin_start(&s, &sp, true));
		cr_assert(!sp.spin, "no second probe spin within %u ns", BLQ__PROBE_NS);
		cr_assert_eq(sp.rounds, BLQ__SPIN_ROUNDS, "yielding looks instead");
		blq__spin_stop(&s, &sp);
	}
	cr_assert_eq(blq__spinning(), 0);
}

Test(spin, a_spin_beside_a_cpu_bound_thread_on_the_same_cpu_is_preempted_and_counted)
{
	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
	blq__spin s = fresh();
	pthread_t t = hog_beside_me();

	/* The hog and the spinner share the CPU in slices (0.75 ms or more
	 * under EEVDF): within a few slices one of the spins is preempted.
	 * That spin ends at once, gives its place back and counts as
	 * stolen. */
	int n = 0;
	bool preempted = false;

	while (!preempted && n < 100000) {
		blq__spinner sp;
		uint32_t before = atomic_load(&s.stolen);

		cr_assert(blq__spin_start(&s, &sp, true) || blq__spin_busy(&s));
		if (blq__spin_busy(&s))
			break; /* stolen often enough already */
		while (blq__spin_pause(&s, &sp))
			;
		preempted = atomic_load(&s.stolen) > before;
		cr_assert_eq(blq__spinning(), 0);
		n++;
	}
	hog_end(t);
	cr_assert(preempted || blq__spin_busy(&s), "no spin of %d beside a hog was preempted", n);
	cr_assert(atomic_load(&s.stolen) > 0);
}
