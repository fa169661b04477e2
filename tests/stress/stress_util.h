/* What the stress programs share: the round loop with its summary line,
 * the closes they pick from, and the accounting check. */
#ifndef BLQ_STRESS_UTIL_H
#define BLQ_STRESS_UTIL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <blq/blq.h>

/* Usage: prog [rounds] [items-per-producer]. Prints "N passed, N failed";
 * the exit code is non-zero on any failed round. */
static inline int stress_main(int argc, char **argv, unsigned def_rounds, uint64_t def_per,
			      int (*round)(unsigned index, uint64_t per))
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : def_rounds;
	uint64_t per = argc > 2 ? (uint64_t)atoll(argv[2]) : def_per;
	unsigned passed = 0, failed = 0;

	for (unsigned i = 0; i < rounds; i++)
		round(i, per) == 0 ? passed++ : failed++;
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* The close modes of seed 000 (queue.h's table), each with and without a
 * limit where it has one. */
enum { STRESS_CLOSE, STRESS_CLOSE_TIMEOUT, STRESS_SOFT, STRESS_SOFT_TIMEOUT, STRESS_FORCE,
       STRESS_NCLOSE };

/* Closes q the given way (a timeout of 0..2 ms); returns its name. */
/* After a close with a time limit, callbacks it left running hold their
 * items until they return: the counters are final once none is left. */
static inline void stress_wait_unstuck(blq *q)
{
	struct blq_stats s;

	while (blq_stats(q, &s) == 0 && s.workers_stuck > 0) {
		struct timespec ts = {0, 200000L};
		nanosleep(&ts, NULL);
	}
}

static inline const char *stress_close(blq *q, int how, unsigned *seed)
{
	switch (how) {
	case STRESS_CLOSE:
		blq_close(q);
		return "close";
	case STRESS_CLOSE_TIMEOUT:
		blq_close_timeout(q, (uint64_t)(rand_r(seed) % 3) * 1000000u);
		stress_wait_unstuck(q);
		return "timeout";
	case STRESS_SOFT:
		blq_close_soft(q);
		return "soft";
	case STRESS_SOFT_TIMEOUT:
		blq_close_soft_timeout(q, (uint64_t)(rand_r(seed) % 3) * 1000000u);
		stress_wait_unstuck(q);
		return "soft-t";
	default:
		blq_force_close(q);
		return "force";
	}
}

/* in == processed + failed + leaked + expired + lost + cancelled; says
 * what is off. */
static inline bool stress_balanced(const char *prog, unsigned round, const struct blq_stats *s)
{
	if (s->in == s->processed + s->failed + s->leaked + s->expired + s->lost + s->cancelled)
		return true;
	fprintf(stderr,
		"%s: round %u: in %" PRIu64 " != processed %" PRIu64 " + failed %" PRIu64
		" + leaked %" PRIu64 " + expired %" PRIu64 " + lost %" PRIu64 " + cancelled %" PRIu64
		"\n",
		prog, round, s->in, s->processed, s->failed, s->leaked, s->expired, s->lost,
		s->cancelled);
	return false;
}

#endif
