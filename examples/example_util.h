/*
 * What several examples share: time helpers, the accounting check, and a
 * check that prints what it verified, so a run reads as a short report and
 * the exit status says whether everything held.
 */
#ifndef BLQ_EXAMPLE_UTIL_H
#define BLQ_EXAMPLE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <blq/blq.h>

static inline uint64_t ex_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void ex_sleep_us(long us)
{
	struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};

	nanosleep(&ts, NULL);
}

/* Checks that failed so far; main returns non-zero when any did. */
static int ex_failures;

/* Prints "ok" or "FAILED" before the description, and counts failures. */
static inline bool ex_check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("  %-6s ", cond ? "ok" : "FAILED");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		ex_failures++;
	return cond;
}

/*
 * The conservation law of queue.h: once a queue is closed every accepted
 * item has exactly one outcome, so
 *   in == processed + failed + leaked + expired + lost + cancelled.
 */
static inline bool ex_balanced(blq *q)
{
	struct blq_stats s;

	blq_stats(q, &s);
	return ex_check(s.in == s.processed + s.failed + s.leaked + s.expired + s.lost + s.cancelled,
			"%-8s in %llu = processed %llu + failed %llu + leaked %llu + expired %llu"
			" + lost %llu + cancelled %llu",
			blq_name(q), (unsigned long long)s.in, (unsigned long long)s.processed,
			(unsigned long long)s.failed, (unsigned long long)s.leaked,
			(unsigned long long)s.expired, (unsigned long long)s.lost,
			(unsigned long long)s.cancelled);
}

#endif
