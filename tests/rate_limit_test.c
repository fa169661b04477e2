/*
 * The rate limit (blq_config.rate_limit, rate_burst; queue/rate.c): on the
 * fake clock each step releases exactly the starts GCRA allows; a close
 * while workers wait for tokens returns at once and every item reaches an
 * outcome; bad values are refused naming the field; on the real clock the
 * starts keep within 5% of the rate (2 s here; BLQ_RATE_LONG=1 makes it
 * the 10 s of issue #34, docs/testing.md); the balancer does not grow the
 * pool for a backlog the limit holds.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

/* Internal: wake what keeps time on the queue's clock (the fake one moved). */
void blq__timer_kick(blq *q);

static _Atomic uint64_t starts;
static tu_gate gate;

static int count_start(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	atomic_fetch_add(&starts, 1);
	tu_item_free(payload);
	return 0;
}

static int gated(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	tu_gate_pass(&gate);
	tu_item_free(payload);
	return 0;
}

static void setup(void)
{
	atomic_store(&starts, 0);
	tu_gate_init(&gate);
}

TestSuite(rate_limit, .init = setup, .timeout = 60);

static blq_config cfg_of(blq_worker_fn fn, size_t cap, double rate, unsigned burst)
{
	blq_config c = {0};

	c.name = "rl";
	c.capacity = cap;
	c.worker = fn;
	c.item_free = tu_item_free;
	c.rate_limit = rate;
	c.rate_burst = burst;
	return c;
}

static void fill(blq *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(blq_try_enqueue(q, tu_item_new(i)), 0);
}

static void expect_invariant(blq *q, uint64_t n)
{
	struct blq_stats s = stats(q);

	cr_expect_eq(s.in, n);
	cr_expect_eq(s.in, s.processed + s.failed + s.leaked + s.expired + s.lost + s.cancelled,
		     "in %llu processed %llu leaked %llu lost %llu", (unsigned long long)s.in,
		     (unsigned long long)s.processed, (unsigned long long)s.leaked,
		     (unsigned long long)s.lost);
}

/* Moves the fake clock, wakes the waiting workers, and checks the starts
 * reach `want` and stay there (a further look 50 ms later). */
static void step(blq *q, uint64_t ns, uint64_t want)
{
	atomic_fetch_add(&tu_mono_ns, ns);
	blq__timer_kick(q);
	cr_assert(TU_WAIT_FOR(atomic_load(&starts) >= want, 3000), "%llu starts, want %llu",
		  (unsigned long long)atomic_load(&starts), (unsigned long long)want);
	tu_sleep_us(50000);
	cr_assert_eq(atomic_load(&starts), want, "%llu starts, want %llu",
		     (unsigned long long)atomic_load(&starts), (unsigned long long)want);
}

Test(rate_limit, fake_clock_releases_exactly_the_allowed_starts)
{
	blq_config c = cfg_of(count_start, 100, 10, 2); /* T = 100 ms, burst 2 */
	c.workers = 3;
	c.clock.now_ns = tu_fake_mono;
	blq *q = must_new(&c);

	fill(q, 40);
	/* The burst at once, then nothing while the clock stands still. */
	step(q, 0, 2);
	/* One token per 100 ms step: ten steps, ten starts. */
	for (unsigned i = 1; i <= 10; i++)
		step(q, 100000000ull, 2 + i);
	/* Half a token: none; the other half: one. */
	step(q, 50000000ull, 12);
	step(q, 50000000ull, 13);
	/* A quiet second accrues the burst, not ten. */
	step(q, 1000000000ull, 15);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.size, 25);
	/* Every start after the burst waited for its token; the waiting time
	 * is on the queue's clock, which moved 1.6 s while they waited. */
	cr_expect(s.rate_delayed >= 11 && s.rate_delayed <= 13, "%llu delayed",
		  (unsigned long long)s.rate_delayed);
	cr_expect(s.rate_limited_ns >= 1600000000ull, "%llu ns waited",
		  (unsigned long long)s.rate_limited_ns);
	char js[4096];
	cr_assert(blq_status_json(q, js, sizeof(js)) > 0);
	cr_expect_not_null(strstr(js, "\"rate_limit\":{\"per_s\":10,\"burst\":2,"), "%s", js);

	/* A graceful close drains at the rate: 25 left, 2.5 s of clock. */
	for (unsigned i = 0; i < 200 && atomic_load(&starts) < 40; i++) {
		uint64_t before = atomic_load(&starts);

		atomic_fetch_add(&tu_mono_ns, 100000000ull);
		blq__timer_kick(q);
		cr_expect(TU_WAIT_FOR(atomic_load(&starts) == before + 1, 1000));
	}
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(atomic_load(&starts), 40);
	expect_invariant(q, 40);
	cr_expect_eq(stats(q).processed, 40);
	cr_expect_eq(atomic_load(&tu_freed), 40);
	blq_free(q);
}

Test(rate_limit, a_close_while_workers_wait_for_tokens_is_prompt_and_loses_nothing)
{
	tu_rec *dlq = tu_rec_new();
	blq_config c = cfg_of(count_start, 100, 1, 0); /* one start a second */
	c.workers = 4;
	c.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = dlq};
	blq *q = must_new(&c);

	fill(q, 50);
	cr_assert(TU_WAIT_FOR(stats(q).rate_delayed == 0 && atomic_load(&starts) == 1, 3000));
	tu_sleep_us(20000); /* the four are waiting for the next token now */
	uint64_t t0 = tu_now_ns();
	cr_assert_eq(blq_close_soft(q), 0);
	uint64_t took = tu_now_ns() - t0;
	cr_expect(took < 300000000ull, "the close took %llu ms", (unsigned long long)(took / 1000000));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, atomic_load(&starts));
	cr_expect_eq(s.leaked_closed, 50 - s.processed);
	cr_expect_eq(tu_rec_count(dlq), 50 - s.processed);
	cr_expect_eq(s.lost, 0);
	expect_invariant(q, 50);
	cr_expect_eq(atomic_load(&tu_freed), 50);
	blq_free(q);
	tu_rec_free(dlq);
}

static void refused(double rate, unsigned burst, const char *msg)
{
	blq_config c = cfg_of(count_start, 8, rate, burst);
	blq_error err;

	c.workers = 1;
	cr_expect_null(blq_new(&c, &err), "%s", msg);
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_eq(strncmp(err.msg, msg, strlen(msg)), 0, "got \"%s\", want \"%s...\"", err.msg,
		     msg);
}

Test(rate_limit, bad_config_is_refused_naming_the_field)
{
	refused(-1, 0, "rate_limit: must be 0 (no limit) or in [0.001, 1e+09] starts per second, got -1");
	refused(NAN, 0, "rate_limit: must be a number, got NaN");
	refused(INFINITY, 0, "rate_limit: must be 0 (no limit) or in");
	refused(2e9, 0, "rate_limit: must be 0 (no limit) or in [0.001, 1e+09] starts per second, got 2e+09");
	refused(1e-4, 0, "rate_limit: must be 0 (no limit) or in");
	refused(0, 3, "rate_burst: needs rate_limit");
	refused(10, 1000001, "rate_burst: must be <= 1000000, got 1000001");
	/* The edges are accepted. */
	blq_config c = cfg_of(count_start, 8, 1e9, 1000000);
	c.workers = 1;
	blq *q = must_new(&c);
	blq_free(q);
	c = cfg_of(count_start, 8, 1e-3, 0);
	c.workers = 1;
	q = must_new(&c);
	/* No burst given: 1, as the status says (0 without a rate). */
	char js[4096];
	cr_assert(blq_status_json(q, js, sizeof(js)) > 0);
	cr_expect_not_null(strstr(js, "\"per_s\":0.001,\"burst\":1,"), "%s", js);
	blq_free(q);
	c = cfg_of(count_start, 8, 0, 0);
	c.workers = 1;
	q = must_new(&c);
	cr_assert(blq_status_json(q, js, sizeof(js)) > 0);
	cr_expect_not_null(strstr(js, "\"rate_limit\":{\"per_s\":0,\"burst\":0,"), "%s", js);
	blq_free(q);
}

struct feeder {
	blq *q;
	_Atomic int stop;
	uint64_t n;
};

/* Keeps the queue backed up (blocking enqueues) until told to stop. */
static void *feed(void *p)
{
	struct feeder *f = p;

	while (!atomic_load(&f->stop)) {
		tu_item *it = tu_item_new(f->n);
		if (blq_enqueue(f->q, it) != 0) {
			tu_item_free(it);
			break;
		}
		f->n++;
	}
	return NULL;
}

Test(rate_limit, real_clock_keeps_within_5_percent_of_the_rate)
{
	const char *longer = getenv("BLQ_RATE_LONG");
	double secs = longer != NULL && strcmp(longer, "1") == 0 ? 10.0 : 2.0;
	const double rate = 200;
	/* Burst 8: a wake-up up to 7 intervals (35 ms) late is made up, and
	 * the starts over the window stay at most rate * window + 8 (2% of
	 * 400). With burst 1 GCRA forfeits every late wake-up's time: 130-183
	 * starts/s measured here on a 2-vCPU host at load 13
	 * (docs/configuration.md). BLQ_RATE_BURST overrides it, to measure. */
	const char *b = getenv("BLQ_RATE_BURST");
	blq_config c = cfg_of(count_start, 64, rate, b != NULL ? (unsigned)atoi(b) : 8);
	c.workers = 4;
	blq *q = must_new(&c);
	struct feeder f = {.q = q};
	pthread_t t;

	/* The feeder blocks while the queue is full (not leaky: a leaking
	 * feeder would spin on a CPU the workers need to wake on time). */
	pthread_create(&t, NULL, feed, &f);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 64, 3000));
	/* The limit must hold in every window (at most 5% over, the burst
	 * being 2% of a 2 s window). Under it, a window on a host that kept
	 * the workers off the CPU for longer than the burst makes up (load
	 * 21 did once in three ASan runs: 176/s) is measured again, up to
	 * three windows: that is the host's time, not the limiter's. */
	double got = 0;
	for (int tries = 0; tries < 3; tries++) {
		uint64_t s0 = atomic_load(&starts), t0 = tu_now_ns();
		tu_sleep_us((unsigned)(secs * 1e6));
		uint64_t s1 = atomic_load(&starts), t1 = tu_now_ns();
		got = (double)(s1 - s0) / ((double)(t1 - t0) / 1e9);
		fprintf(stderr, "rate_limit: %.0f starts/s over %.1f s (limit %.0f): %llu starts\n",
			got, (double)(t1 - t0) / 1e9, rate, (unsigned long long)(s1 - s0));
		cr_expect(got <= 1.05 * rate, "%.1f starts/s, limit %.0f", got, rate);
		if (got >= 0.95 * rate)
			break;
	}
	cr_expect(got >= 0.95 * rate, "%.1f starts/s, limit %.0f", got, rate);
	atomic_store(&f.stop, 1);
	/* Soft: what is queued ends lost, counted (no DLQ here); the feeder's
	 * blocked enqueue returns BLQ_ECLOSED. */
	cr_assert_eq(blq_close_soft(q), 0);
	pthread_join(t, NULL);
	expect_invariant(q, f.n);
	cr_expect_eq(stats(q).processed, atomic_load(&starts));
	cr_expect_eq(atomic_load(&tu_freed), f.n + 1);
	blq_free(q);
}

static unsigned max_active_over(blq *q, unsigned ms)
{
	unsigned most = 0;

	for (unsigned i = 0; i < ms / 10; i++) {
		unsigned a = stats(q).workers_active;
		most = a > most ? a : most;
		tu_sleep_us(10000);
	}
	return most;
}

Test(rate_limit, the_balancer_does_not_grow_for_a_backlog_the_limit_holds)
{
	tu_rec *dlq = tu_rec_new();
	blq_config c = cfg_of(count_start, 200, 20, 0); /* a token every 50 ms */
	c.workers_min = 1;
	c.workers_max = 8;
	c.heartbeat_interval_ns = 200000000ull;
	c.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = dlq};
	blq *q = must_new(&c);

	/* The worker meets the limit first (the second item waits for its
	 * token), then the backlog arrives: fill rate 0.99, above the
	 * wake-up factor for the whole second below. */
	fill(q, 2);
	cr_assert(TU_WAIT_FOR(stats(q).rate_delayed == 1, 3000));
	fill(q, 198);
	cr_expect(stats(q).throttled || blq_rate(q) >= 0.75);
	unsigned most = max_active_over(q, 1000); /* five heartbeats */
	cr_expect_eq(most, 1, "the pool grew to %u for a rate-held backlog", most);
	cr_expect_eq(stats(q).threads_started, 1);
	cr_assert_eq(blq_close_soft(q), 0);
	expect_invariant(q, 200);
	blq_free(q);

	/* The same backlog held by busy workers instead: the pool grows (so
	 * the check above can fail). */
	blq_config g = cfg_of(gated, 200, 0, 0);
	g.workers_min = 1;
	g.workers_max = 8;
	g.heartbeat_interval_ns = 200000000ull;
	g.dlq = (blq_enqueuer){.enqueue = tu_rec_enqueue, .self = dlq};
	q = must_new(&g);
	fill(q, 200);
	cr_expect(TU_WAIT_FOR(stats(q).workers_active > 1, 3000), "%u active",
		  stats(q).workers_active);
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	expect_invariant(q, 200);
	blq_free(q);
	tu_rec_free(dlq);
}
