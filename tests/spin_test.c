/*
 * The wait policy of queue/shared/spin.h: when a queue's threads spin
 * before they sleep, for how long, how many at once, and when they stop
 * because the host is busy. The average's arithmetic is driven directly
 * (blq__spin_note); the signal itself is checked on the real scheduler: a
 * spin that shares its CPU with a CPU-bound thread is preempted, ends at
 * once and counts as stolen. (The opposite, that a quiet CPU lets a spin
 * run its time, is asserted only loosely: the test suite runs beside
 * other tests, so no CPU is quiet for sure; the benchmark W3 shows it.)
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

/* Whether a wait may spin now; gives the place straight back. */
static bool may_spin(blq__spin *s)
{
	blq__spinner sp;

	if (!blq__spin_start(s, &sp))
		return false;
	blq__spin_stop(s, &sp);
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

Test(spin, a_quiet_queue_spins_when_there_is_a_place)
{
	blq__spin s = fresh();
	bool places = blq__spin_places() > 0;

	for (int i = 0; i < 1000; i++)
		blq__spin_note(&s, false);
	cr_assert(!blq__spin_busy(&s));
	for (int i = 0; i < 100; i++)
		cr_assert_eq(may_spin(&s), places);
	cr_assert_eq(blq__spinning(), 0, "every place given back");
}

Test(spin, half_the_cpus_spin_at_once_and_the_others_sleep_at_once)
{
	cpu_set_t mine;
	blq__spin s = fresh();
	blq__spinner sp[CPU_SETSIZE / 2 + 1];

	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	unsigned places = blq__spin_places();

	cr_assert_eq(places, (unsigned)CPU_COUNT(&mine) / 2);
	for (unsigned i = 0; i < places; i++)
		cr_assert(blq__spin_start(&s, &sp[i]), "place %u of %u", i, places);
	cr_assert_eq(blq__spinning(), places);
	cr_assert(!blq__spin_start(&s, &sp[places]), "no place left: sleep at once");
	if (places > 0) {
		blq__spin_stop(&s, &sp[0]);
		cr_assert(blq__spin_start(&s, &sp[0]), "a place given back is taken");
	}
	for (unsigned i = 0; i < places; i++)
		blq__spin_stop(&s, &sp[i]);
	cr_assert_eq(blq__spinning(), 0);
}

Test(spin, a_spin_ends_after_its_time_and_gives_its_place_back)
{
	blq__spin s = fresh();
	blq__spinner sp;

	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
	uint64_t t0 = now_ns();

	cr_assert(blq__spin_start(&s, &sp));
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

Test(spin, a_stolen_spin_now_and_then_does_not_make_the_host_busy)
{
	blq__spin s = fresh();

	/* One stolen in eight, spread out (the quiet W1 shows 2 in 100). */
	for (int i = 0; i < 800; i++) {
		blq__spin_note(&s, i % 8 == 0);
		cr_assert(!blq__spin_busy(&s), "after spin %d", i);
	}
}

Test(spin, three_stolen_spins_in_a_row_make_it_busy_and_two_probes_end_it)
{
	blq__spin s = fresh();

	blq__spin_note(&s, true);
	blq__spin_note(&s, true);
	cr_assert(!blq__spin_busy(&s), "two are not enough");
	blq__spin_note(&s, true);
	cr_assert(blq__spin_busy(&s));
	/* Busy: no spin, but one wait per BLQ__PROBE_NS spins (the first
	 * here: no probe yet). */
	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
	blq__spinner probe;

	cr_assert(blq__spin_start(&s, &probe), "the first wait probes");
	for (int i = 0; i < 1000; i++) {
		blq__spinner sp;

		cr_assert(!blq__spin_start(&s, &sp), "no second probe within %u ns", BLQ__PROBE_NS);
	}
	blq__spin_stop(&s, &probe); /* not preempted: the average halves */
	/* Probes that come back at once: quiet again after two, from a
	 * saturated average too. */
	for (int i = 0; i < 40; i++)
		blq__spin_note(&s, true);
	blq__spin_note(&s, false);
	cr_assert(blq__spin_busy(&s));
	blq__spin_note(&s, false);
	cr_assert(!blq__spin_busy(&s));
	cr_assert(may_spin(&s));
}

static _Atomic int hog_stop;

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
		;
	return NULL;
}

Test(spin, a_spin_beside_a_cpu_bound_thread_on_the_same_cpu_is_preempted_and_counted)
{
	cpu_set_t mine, one;
	pthread_attr_t attr;
	pthread_t t;
	blq__spin s = fresh();
	int cpu = 0;

	/* The first CPU this test may use (a cpuset may leave out CPU 0). */
	if (blq__spin_places() == 0)
		cr_skip_test("one CPU: nothing ever spins");
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
	/* The hog and the spinner share the CPU in slices (0.75 ms or more
	 * under EEVDF): within a few slices one of the spins is preempted.
	 * That spin ends at once, gives its place back and counts as
	 * stolen. */
	int n = 0;
	bool preempted = false;

	while (!preempted && n < 100000) {
		blq__spinner sp;
		uint32_t before = atomic_load(&s.stolen);

		cr_assert(blq__spin_start(&s, &sp) || blq__spin_busy(&s));
		if (blq__spin_busy(&s))
			break; /* stolen often enough already */
		while (blq__spin_pause(&s, &sp))
			;
		preempted = atomic_load(&s.stolen) > before;
		cr_assert_eq(blq__spinning(), 0);
		n++;
	}
	atomic_store(&hog_stop, 1);
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	cr_assert(preempted || blq__spin_busy(&s), "no spin of %d beside a hog was preempted", n);
	cr_assert(atomic_load(&s.stolen) > 0);
}
