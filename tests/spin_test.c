/*
 * The wait policy of queue/shared/spin.h: when a queue's threads yield
 * before they sleep, and when they stop because the host is busy. The
 * average's arithmetic is driven directly (blq__spin_note); the signal
 * itself is checked on the real scheduler: a thread that shares its CPU
 * with a CPU-bound thread sees its yields stolen and turns busy. (The
 * opposite, that a quiet CPU keeps it yielding, is not asserted here: the
 * test suite runs beside other tests, so no CPU is quiet for sure; the
 * benchmark W1 shows it.)
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

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

static _Atomic int hog_stop;

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
		;
	return NULL;
}

Test(spin, yields_beside_a_cpu_bound_thread_on_the_same_cpu_turn_it_busy)
{
	cpu_set_t mine, one;
	pthread_attr_t attr;
	pthread_t t;
	blq__spin s = fresh();
	int cpu = 0;

	/* The first CPU this test may use (a cpuset may leave out CPU 0). */
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
	/* Each yield hands the CPU to the hog for its slice (0.75 ms or
	 * more under EEVDF); a few are enough. */
	int n = 0;
	while (!blq__spin_busy(&s) && n < 64) {
		unsigned rounds = BLQ__SPIN_ROUNDS;

		blq__spin_yield(&s, &rounds);
		cr_assert(rounds == 0 || !blq__spin_busy(&s));
		n++;
	}
	atomic_store(&hog_stop, 1);
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	cr_assert(blq__spin_busy(&s), "still quiet after %d yields beside a hog", n);
	cr_assert_eq(blq__spin_rounds(&s) <= 1, 1);
}
