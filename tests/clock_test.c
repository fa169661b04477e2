/*
 * The queue's default clock (blq__fast_ns): CLOCK_MONOTONIC read through
 * the TSC where that is safe. It must agree with CLOCK_MONOTONIC, before
 * and after it has measured its rate, and never go back on a thread.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "suite_util.h"

uint64_t blq__fast_ns(void);

TestSuite(clock, .timeout = 30);

/* |fast - CLOCK_MONOTONIC| read back to back, in ns. */
static uint64_t skew(void)
{
	uint64_t a = tu_now_ns(), f = blq__fast_ns(), b = tu_now_ns();

	if (f < a)
		return a - f;
	return f > b ? f - b : 0;
}

static void *reader(void *arg)
{
	uint64_t last = 0, worst = 0, *out = arg;
	uint64_t end = tu_now_ns() + 60000000ull; /* 60 ms: through calibration and re-anchors */

	while (tu_now_ns() < end) {
		for (int i = 0; i < 1000; i++) {
			uint64_t t = blq__fast_ns();

			if (t < last)
				out[1]++; /* went back */
			last = t;
		}
		uint64_t s = skew();
		worst = s > worst ? s : worst;
	}
	out[0] = worst;
	return NULL;
}

Test(clock, agrees_with_clock_monotonic_and_never_goes_back)
{
	pthread_t t[3];
	uint64_t res[3][2] = {{0}};

	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, reader, res[i]);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(res[i][1], 0, "thread %d: the clock went back %llu times", i,
			     (unsigned long long)res[i][1]);
		/* Tens of ns in theory; a preempted reader between the three
		 * reads inflates it, so the bound is loose. */
		cr_expect(res[i][0] < 2000000ull, "thread %d: %llu ns off CLOCK_MONOTONIC", i,
			  (unsigned long long)res[i][0]);
	}
	/* A 20 ms interval measures as 20 ms. */
	uint64_t f0 = blq__fast_ns(), m0 = tu_now_ns();
	tu_sleep_us(20000);
	uint64_t df = blq__fast_ns() - f0, dm = tu_now_ns() - m0;
	cr_expect(df + 200000 > dm && df < dm + 200000, "fast %llu ns vs monotonic %llu ns",
		  (unsigned long long)df, (unsigned long long)dm);
}
