/*
 * Balancing, with a fake clock and calibrations driven by the test (the
 * heartbeat is set to an hour, so only blq__calibrate and the enqueue-side
 * hints move workers): wake-up steps, sleep in chunks, the sleep interval,
 * throttling, workers_min 0, schedule switches, pause/resume/wait_idle.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite_util.h"

/* Internal: one heartbeat's work, run on the calling thread. */
void blq__calibrate(blq *q);
unsigned blq__workers_waiting(blq *q);

/* Before the fake clock moves: every active worker has started its idle
 * clock (it waits on the empty queue), so the move counts as its idle
 * time. A fixed sleep here was not always enough on a loaded machine. */
static void settle(blq *q)
{
	cr_assert(TU_WAIT_FOR(blq__workers_waiting(q) == stats(q).workers_active, 5000),
		  "%u of %u active workers waiting", blq__workers_waiting(q),
		  stats(q).workers_active);
}

static _Atomic uint64_t wall_ns;

static uint64_t fake_wall(void *ctx)
{
	(void)ctx;
	return atomic_load(&wall_ns);
}

static uint64_t slow_mono(void *ctx)
{
	tu_sleep_us(20);
	return tu_fake_mono(ctx);
}

static void advance(uint64_t ns)
{
	atomic_fetch_add(&tu_mono_ns, ns);
	atomic_fetch_add(&wall_ns, ns);
}

static tu_gate gate;

static int gated(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	tu_gate_pass(&gate);
	tu_item_free(payload);
	return 0;
}

static void setup(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	tu_gate_init(&gate);
}

/* One timeout for every case (30 s, what steady_load_does_not_flap had;
 * the others had 20): a case with a longer timeout beside a later one with
 * a shorter loses Criterion's timeout requests, a 48-byte leak the ASan
 * build reports (cmake/blq_helpers.cmake, blq_criterion_one_timeout). */
TestSuite(balancer, .init = setup, .timeout = 30);

static blq_config balanced_cfg(size_t cap, unsigned min, unsigned max)
{
	blq_config c = {0};

	c.name = "bal";
	c.capacity = cap;
	c.workers_min = min;
	c.workers_max = max;
	c.worker = gated;
	c.item_free = tu_item_free;
	c.heartbeat_interval_ns = 3600ull * 1000000000u; /* the test calibrates */
	c.clock.now_ns = tu_fake_mono;
	c.clock.wall_ns = fake_wall;
	return c;
}

/* Waits until the threads report what the balancer asked. */
#define EXPECT_WORKERS(q, active, asleep)                                                          \
	do {                                                                                       \
		bool ok_ = TU_WAIT_FOR(stats(q).workers_active == (active) &&                      \
					       stats(q).workers_asleep == (asleep),                \
				       3000);                                                      \
		struct blq_stats s_ = stats(q);                                                    \
		cr_assert(ok_, "want %u active %u asleep, have %u active %u asleep %u idle",       \
			  (unsigned)(active), (unsigned)(asleep), s_.workers_active,               \
			  s_.workers_asleep, s_.workers_idle);                                     \
	} while (0)

static void fill(blq *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(blq_try_enqueue(q, tu_item_new(i)), 0);
}

Test(balancer, wakes_in_doubling_steps_as_the_rate_rises)
{
	blq_config c = balanced_cfg(100, 1, 8);
	blq *q = must_new(&c);

	EXPECT_WORKERS(q, 1, 0);
	fill(q, 60); /* rate 0.59 after the worker took one: below 0.75 */
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	blq__calibrate(q);
	EXPECT_WORKERS(q, 1, 0);
	fill(q, 31); /* now 90 queued: 0.90 */
	blq__calibrate(q);
	EXPECT_WORKERS(q, 2, 0);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 4, 0);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 8, 0);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 8, 0); /* the max */
	cr_expect_eq(stats(q).threads_started, 8);
	tu_gate_open(&gate);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 91);
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

/* Keeps the queue's own log lines. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 14];
static size_t log_len;

static void keep_log(void *ctx, int level, const char *fmt, va_list ap)
{
	char line[256];

	(void)ctx;
	vsnprintf(line, sizeof(line), fmt, ap);
	pthread_mutex_lock(&log_mu);
	log_len += (size_t)snprintf(log_text + log_len, sizeof(log_text) - log_len, "%d %s\n",
				    level, line);
	pthread_mutex_unlock(&log_mu);
}

Test(balancer, enqueue_side_hint_grows_the_pool_without_a_heartbeat)
{
	blq_config c = balanced_cfg(1000, 1, 8);
	c.logger = (blq_logger){.log = keep_log, .level = BLQ_LOG_DEBUG};
	blq *q = must_new(&c);

	/* 900 items from one thread: the 64-item samples see the rate cross
	 * 0.75 and double the pool each time, no calibration call needed. */
	fill(q, 900);
	EXPECT_WORKERS(q, 8, 0);
	tu_gate_open(&gate);
	blq_close(q);
	cr_expect_eq(stats(q).processed, 900);
	blq_free(q);
	/* The queue logged its own events: start, each scale-up, close. */
	pthread_mutex_lock(&log_mu);
	cr_expect(strstr(log_text, "3 queue bal: started, capacity 1000, workers 1..8 (balanced)\n"),
		  "%s", log_text);
	cr_expect(strstr(log_text, "4 queue bal: enqueue-side scale-up at rate 0.") != NULL);
	cr_expect(strstr(log_text, "active 4 -> 8, asleep 0 -> 0\n") != NULL, "%s", log_text);
	cr_expect(strstr(log_text, "3 queue bal: closed\n") != NULL);
	pthread_mutex_unlock(&log_mu);
}

typedef struct burst {
	blq *q;
	pthread_barrier_t *go;
} burst;

static void *burst_producer(void *p)
{
	burst *b = p;

	pthread_barrier_wait(b->go);
	for (unsigned i = 0; i < 200; i++)
		cr_assert_eq(blq_enqueue(b->q, tu_item_new(i)), 0);
	return NULL;
}

/* Eight producers enqueue at once into a queue whose relative schedule
 * switched ranges (min 1 -> 3) with no heartbeat and a low fill rate, so
 * only a calibration run by the producers can apply it. Returns the active
 * workers afterwards. */
static unsigned burst_with_limit(unsigned limit)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params later = {.workers_min = 3, .workers_max = 3};
	blq_error err;
	cr_assert_eq(blq_schedule_add_relative(s, "10s-1h", &later, &err), 0, "%s", err.msg);
	blq_config c = balanced_cfg(100000, 1, 1);
	c.schedule = s;
	c.force_calibration_limit = limit;
	/* Each enqueue reads this slow clock inside the enqueue, so the eight
	 * producers overlap there and the in-flight count reaches the limit. */
	c.clock.now_ns = slow_mono;
	c.stamp_enqueue_time = true;
	blq *q = must_new(&c);
	blq_schedule_free(s);
	tu_gate_open(&gate);
	EXPECT_WORKERS(q, 1, 0);
	advance(10000000000ull);

	enum { N = 8 };
	pthread_t t[N];
	pthread_barrier_t go;
	burst b = {q, &go};
	pthread_barrier_init(&go, NULL, N);
	for (int i = 0; i < N; i++)
		pthread_create(&t[i], NULL, burst_producer, &b);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	TU_WAIT_FOR(stats(q).workers_active == 3, 1000);
	unsigned active = stats(q).workers_active;
	blq_close(q);
	cr_expect_eq(stats(q).processed, N * 200);
	blq_free(q);
	atomic_fetch_sub(&tu_mono_ns, 10000000000ull);
	return active;
}

Test(balancer, force_calibration_when_many_enqueue_at_once)
{
	cr_expect_eq(burst_with_limit(2), 3, "limit 2: the producers calibrated");
	cr_expect_eq(burst_with_limit(1000), 1, "limit 1000: nothing calibrated");
}

Test(balancer, throttled_while_full_and_recovers)
{
	blq_config c = balanced_cfg(10, 1, 2);
	blq *q = must_new(&c);

	fill(q, 1);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) >= 1, 2000));
	/* Fill the ring completely (the workers hold one item each). */
	while (blq_size(q) < 10) {
		tu_item *it = tu_item_new(99);
		if (blq_try_enqueue(q, it) != 0)
			tu_item_free(it);
	}
	blq__calibrate(q);
	cr_expect(stats(q).throttled);
	tu_gate_open(&gate);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	blq__calibrate(q);
	cr_expect_not(stats(q).throttled);
	blq_free(q);
}

/* Brings a min..8 queue to 8 active workers and lets them go idle. */
static blq *eight_idle_workers(unsigned min)
{
	blq_config c = balanced_cfg(100, min, 8);
	blq *q = must_new(&c);

	fill(q, 95);
	for (int i = 0; i < 4; i++)
		blq__calibrate(q);
	EXPECT_WORKERS(q, 8, 0);
	tu_gate_open(&gate);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	/* Let every worker block on the empty queue before time moves. */
	settle(q);
	return q;
}

Test(balancer, sleeps_in_chunks_never_below_min_then_stops_after_sleep_interval)
{
	blq *q = eight_idle_workers(1);

	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 4, 4); /* at most half per beat */
	settle(q);
	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 2, 6);
	settle(q);
	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 1, 7);
	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 1, 7); /* never below workers_min */
	cr_expect_eq(stats(q).workers_slept, 7);

	/* Asleep for 5 s (the default sleep_interval): their threads end. */
	advance(5000000000ull);
	blq__calibrate(q);
	cr_assert(TU_WAIT_FOR(stats(q).workers_idle == 7, 3000));
	cr_expect_eq(stats(q).threads_stopped, 7);
	EXPECT_WORKERS(q, 1, 0);

	/* The pool still works and grows again from its stopped slots. */
	tu_gate_close(&gate);
	fill(q, 90);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 2, 0);
	tu_gate_open(&gate);
	blq_close(q);
	cr_expect_eq(stats(q).processed, 95 + 90);
	blq_free(q);
}

Test(balancer, a_woken_worker_comes_back_from_sleep)
{
	blq *q = eight_idle_workers(1);

	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 4, 4);
	tu_gate_close(&gate); /* park the workers again */
	fill(q, 90);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 8, 0); /* 4 asleep woken, not new threads */
	cr_expect_eq(stats(q).workers_woken, 4);
	cr_expect_eq(stats(q).threads_started, 8);
	tu_gate_open(&gate);
	blq_close(q);
	blq_free(q);
}

Test(balancer, workers_min_zero_scales_to_no_thread_and_back)
{
	blq_config c = balanced_cfg(100, 0, 2);
	blq *q = must_new(&c);

	EXPECT_WORKERS(q, 0, 0);
	tu_gate_open(&gate);
	fill(q, 1); /* no active worker: the enqueue starts one */
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect_eq(stats(q).processed, 1);
	settle(q);
	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 0, 1);
	advance(6000000000ull);
	blq__calibrate(q);
	cr_assert(TU_WAIT_FOR(stats(q).workers_idle == 2, 3000));
	fill(q, 3);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect_eq(stats(q).processed, 4);
	blq_close(q);
	struct blq_stats s = stats(q);
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

Test(balancer, graceful_close_drains_with_asleep_workers)
{
	blq *q = eight_idle_workers(0);
	static const unsigned active[] = {4, 2, 1, 0};

	for (int i = 0; i < 4; i++) {
		advance(1000000000ull);
		blq__calibrate(q);
		EXPECT_WORKERS(q, active[i], 8 - active[i]);
		settle(q); /* the woken ones block again before time moves */
	}
	blq_pause(q); /* keep items queued while nobody is active */
	fill(q, 50);
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 95 + 50);
	cr_expect(tu_balanced(&s));
	blq_free(q);
}

Test(balancer, force_close_stops_asleep_workers)
{
	blq *q = eight_idle_workers(1);

	advance(1000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 4, 4);
	uint64_t t0 = tu_now_ns();
	cr_assert_eq(blq_force_close(q), 0);
	cr_expect(tu_now_ns() - t0 < 1000000000ull);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_active + s.workers_asleep, 0);
	blq_free(q);
}

Test(balancer, pause_resume_and_wait_idle)
{
	blq_config c = balanced_cfg(100, 2, 2);
	blq *q = must_new(&c);

	tu_gate_open(&gate);
	cr_assert_eq(blq_pause(q), 0);
	fill(q, 10);
	cr_expect_eq(blq_wait_idle(q, 30000000ull), BLQ_ETIMEDOUT);
	/* Nothing started; a worker may hold one item it was taking. */
	cr_expect_eq(stats(q).processed, 0);
	cr_expect_geq(blq_size(q), 10 - 2);
	cr_expect(stats(q).paused);
	cr_assert_eq(blq_resume(q), 0);
	cr_expect_eq(blq_wait_idle(q, 2000000000ull), 0);
	cr_expect_eq(stats(q).processed, 10);
	cr_expect_eq(blq_wait_idle(q, 0), 0, "already idle");
	blq_close(q);
	cr_expect_eq(blq_pause(q), BLQ_ECLOSED);
	cr_expect_eq(blq_pause(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_wait_idle(NULL, 0), BLQ_EINVAL);
	blq_free(q);
}

static blq_schedule *day_schedule(void)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params night = {.workers_min = 1, .workers_max = 2};
	blq_schedule_params day = {.workers_min = 4, .workers_max = 6};
	blq_error err;

	cr_assert_eq(blq_schedule_add(s, "00:00-12:00", &night, &err), 0, "%s", err.msg);
	cr_assert_eq(blq_schedule_add(s, "12:00-*", &day, &err), 0, "%s", err.msg);
	return s;
}

Test(balancer, a_schedule_switch_changes_the_live_worker_counts)
{
	blq_schedule *sched = day_schedule();
	blq_config c = balanced_cfg(100, 1, 1);
	c.schedule = sched;
	c.wakeup_factor = 0.5;
	c.sleep_factor = 0.25;
	/* 2026-11-22 11:59:59 UTC */
	atomic_store(&wall_ns, (1795348799ull) * 1000000000ull);
	blq *q = must_new(&c);
	blq_schedule_free(sched); /* the queue keeps a copy */

	EXPECT_WORKERS(q, 1, 0);
	cr_expect_eq(stats(q).schedule_range, 0, "the night range");
	cr_expect_eq(stats(q).workers_max, 2);
	advance(2000000000ull); /* 12:00:01: the day range */
	blq__calibrate(q);
	EXPECT_WORKERS(q, 4, 0);
	/* blq_stats reports the bounds in force, factors from the config. */
	struct blq_stats st = stats(q);
	cr_expect_eq(st.schedule_range, 1, "the day range");
	cr_expect_eq(st.workers_min, 4);
	cr_expect_eq(st.workers_max, 6);
	cr_expect_float_eq(st.wakeup_factor, 0.5, 1e-9);
	cr_expect_float_eq(st.sleep_factor, 0.25, 1e-9);
	char json[2048];
	cr_assert(blq_status_json(q, json, sizeof json) < (int)sizeof json);
	cr_expect(strstr(json, "\"bounds\":{\"workers_min\":4,\"workers_max\":6,") != NULL, "%s",
		  json);
	atomic_fetch_sub(&wall_ns, 3600ull * 1000000000u); /* 11:00:01: night */
	blq__calibrate(q);
	cr_assert(TU_WAIT_FOR(stats(q).workers_active <= 2, 3000));
	cr_expect_eq(stats(q).workers_active, 2);
	tu_gate_open(&gate);
	blq_close(q);
	blq_free(q);
}

Test(balancer, relative_schedule_follows_the_queue_clock)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params later = {.workers_min = 3, .workers_max = 3};
	blq_error err;

	cr_assert_eq(blq_schedule_add_relative(s, "10s-20s", &later, &err), 0, "%s", err.msg);
	blq_config c = balanced_cfg(100, 1, 1);
	c.schedule = s;
	blq *q = must_new(&c);
	blq_schedule_free(s);

	EXPECT_WORKERS(q, 1, 0);
	advance(10000000000ull);
	blq__calibrate(q);
	EXPECT_WORKERS(q, 3, 0);
	advance(10000000000ull);
	blq__calibrate(q);
	cr_assert(TU_WAIT_FOR(stats(q).workers_active == 1, 3000));
	blq_close(q);
	blq_free(q);
}

/* One beat of a steady load on the fake clock: k items are taken and held
 * in the gate by k workers while the beat's time passes, so k workers are
 * busy for the whole beat and every other active worker waits on the
 * empty queue; then the beat's calibration; then the k items finish. */
static unsigned steady_beat(blq *q, unsigned k, uint64_t beat_ns, uint64_t *done)
{
	unsigned active = 0;

	fill(q, k);
	/* Each active worker takes one item into the gate; fewer active
	 * workers than k (a balancer that shrank too far) leave the rest in
	 * the queue. A worker the last beat put to sleep reports active until
	 * it parks, so the count is read again until the two agree. */
	bool settled = TU_WAIT_FOR((active = stats(q).workers_active,
				    atomic_load(&gate.waiting) == (k < active ? k : active) &&
					    blq_size(q) == k - atomic_load(&gate.waiting)),
				   3000);
	cr_assert(settled, "%u of %u items held in the gate, %zu queued, %u active",
		  atomic_load(&gate.waiting), k, blq_size(q), active);
	/* The idle workers go back to waiting within their spin rounds. One
	 * that is slower counts as busy for this beat (its wait starts after
	 * the clock moved): the estimate can only err towards keeping a
	 * worker, never towards a flap. */
	tu_sleep_us(2000);
	advance(beat_ns);
	blq__calibrate(q);
	tu_gate_open(&gate);
	*done += k;
	cr_assert(TU_WAIT_FOR(stats(q).processed == *done && atomic_load(&gate.waiting) == 0, 3000),
		  "the beat's items done");
	tu_gate_close(&gate);
	return active;
}

/* Steady load on the fake clock, a 20 ms beat calibrated by the test: the
 * pool shrinks from a burst's 8 workers to what the load keeps busy and
 * does not flap between asleep and active. The load alternates 2 and 3
 * busy workers (one item every 100 us for 200-300 us of work, as the old
 * real-time version of this test ran it), the jitter a real steady load
 * has. Deterministic: only the test moves the clock, and every beat's
 * busy count is exact (or over-estimated, never under: see steady_beat). */
Test(balancer, steady_load_does_not_flap)
{
	blq_config c = balanced_cfg(1000, 1, 8);
	blq *q = must_new(&c);
	const uint64_t beat_ns = 20000000ull;
	uint64_t done = 0, mark_woken = 0, mark_slept = 0;
	unsigned least_active = 8;

	/* A burst: all 8 workers, then idle. */
	fill(q, 950);
	for (int i = 0; i < 4; i++)
		blq__calibrate(q);
	EXPECT_WORKERS(q, 8, 0);
	tu_gate_open(&gate);
	cr_assert_eq(blq_wait_idle(q, 2000000000ull), 0);
	done = 950;
	tu_gate_close(&gate);
	settle(q);
	advance(beat_ns);
	blq__calibrate(q); /* the beat the burst ended in: no idle signal yet */

	/* 60 beats (1.2 s of the fake clock); the last 40 are the steady
	 * phase whose transitions count, as in the real-time version. */
	for (unsigned beat = 0; beat < 60; beat++) {
		if (beat == 20) {
			struct blq_stats s = stats(q);
			mark_woken = s.workers_woken + s.threads_started;
			mark_slept = s.workers_slept;
		}
		unsigned active = steady_beat(q, 2 + beat % 2, beat_ns, &done);
		if (active < least_active)
			least_active = active;
	}
	struct blq_stats s = stats(q);
	uint64_t woken = s.workers_woken + s.threads_started - mark_woken;
	uint64_t transitions = woken + s.workers_slept - mark_slept;
	/* 40 heartbeats in the steady phase: a flapping pool changes at
	 * nearly every one. */
	cr_expect(transitions <= 6, "%lu transitions in 0.8 s of steady load (active %u)",
		  transitions, s.workers_active);
	/* A flap is a worker put to sleep and woken again: with the load
	 * steady and the queue nearly empty, nothing wakes one. */
	cr_expect_eq(woken, 0, "%lu workers woken or started in the steady phase", woken);
	/* Never below what the load keeps busy: 3 busy at times, 2 * 1.25
	 * rounded up otherwise. */
	cr_expect_geq(least_active, 3, "active fell to %u", least_active);
	cr_expect_eq(s.processed, done);
	tu_gate_open(&gate);
	blq_close(q);
	blq_free(q);
}
