/*
 * blq_resize: the pool follows new bounds during the call (no heartbeat:
 * every queue here has an hour-long one, so only the resize can move the
 * pool), a shrink ends no item early, the ceiling rises past the creation
 * value, bad bounds are refused with the field named, a resize racing a
 * close loses nothing, and a schedule range in force overrides the base
 * bounds a resize sets (docs/balancing-and-schedules.md).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "suite_util.h"

/* Internal: one heartbeat's work, run on the calling thread. */
void blq__calibrate(blq *q);

#define HOUR_NS (3600ull * 1000000000u)

static tu_gate gate;

/* Held in the gate, so a test knows how many workers run at once. */
static int gated(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	tu_gate_pass(&gate);
	tu_item_free(payload);
	return 0;
}

/* Per-item run counts: each must end at exactly 1. */
#define N_ITEMS 3000u
static _Atomic unsigned runs[N_ITEMS];

static int counted(void *ctx, void *payload, blq_task *t)
{
	tu_item *it = payload;

	(void)ctx, (void)t;
	atomic_fetch_add(&runs[it->id], 1);
	tu_sleep_us(100);
	tu_item_free(it);
	return 0;
}

static void setup(void)
{
	tu_gate_init(&gate);
	for (unsigned i = 0; i < N_ITEMS; i++)
		atomic_store(&runs[i], 0);
}

TestSuite(resize, .init = setup, .timeout = 60);

static blq_config cfg_of(blq_worker_fn fn, size_t cap)
{
	blq_config c = {0};

	c.name = "rs";
	c.capacity = cap;
	c.worker = fn;
	c.item_free = tu_item_free;
	c.heartbeat_interval_ns = HOUR_NS; /* only the resize moves the pool */
	return c;
}

static void fill(blq *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(blq_try_enqueue(q, tu_item_new(i)), 0);
}

static void must_resize(blq *q, blq_pool_bounds b)
{
	blq_error err;

	cr_assert_eq(blq_resize(q, &b, &err), 0, "blq_resize: %s", err.msg);
}

/* After the close: every item reached one outcome, its payload freed once. */
static void expect_invariant(blq *q, uint64_t n)
{
	struct blq_stats s = stats(q);

	cr_expect_eq(s.in, n);
	cr_expect_eq(s.in, s.processed + s.failed + s.leaked + s.expired + s.lost + s.cancelled);
}

Test(resize, grow_from_1_to_4_under_backlog_at_once)
{
	blq_config c = cfg_of(gated, 64);
	c.workers = 1;
	blq *q = must_new(&c);

	fill(q, 20);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 3000));
	must_resize(q, (blq_pool_bounds){.workers = 4});
	/* Started during the call: no heartbeat has run (it is an hour). */
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_active, 4);
	cr_expect_eq(s.workers_min, 4);
	cr_expect_eq(s.workers_max, 4);
	cr_expect_eq(s.threads_started, 4);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 4, 3000), "%u in the gate",
		  atomic_load(&gate.waiting));
	tu_gate_open(&gate);
	blq_close(q);
	expect_invariant(q, 20);
	cr_expect_eq(stats(q).processed, 20);
	blq_free(q);
}

Test(resize, a_fixed_pool_given_a_range_becomes_balanced)
{
	blq_config c = cfg_of(gated, 64);
	c.workers = 2;
	blq *q = must_new(&c);
	char js[2048];

	cr_assert(blq_status_json(q, js, sizeof(js)) > 0);
	cr_expect_not_null(strstr(js, "\"balanced\":false"), "%s", js);
	must_resize(q, (blq_pool_bounds){.workers_min = 1, .workers_max = 6});
	cr_assert(blq_status_json(q, js, sizeof(js)) > 0);
	cr_expect_not_null(strstr(js, "\"balanced\":true"), "%s", js);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_min, 1);
	cr_expect_eq(s.workers_max, 6);
	/* The idle slots count against the new ceiling. */
	cr_expect_eq(s.workers_active + s.workers_asleep + s.workers_idle, 6);
	/* Backed up, the balancer grows it now (two beats, run here: the
	 * heartbeat is an hour): 2 -> 4 -> 6 while the workers are held. */
	fill(q, 64);
	/* (The enqueue side may have grown it already.) */
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) >= 2, 3000));
	blq__calibrate(q);
	blq__calibrate(q);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 6, 3000), "%u in the gate",
		  atomic_load(&gate.waiting));
	tu_gate_open(&gate);
	blq_close(q);
	expect_invariant(q, 64);
	blq_free(q);
}

Test(resize, shrink_from_4_to_1_finishes_every_item_once)
{
	blq_config c = cfg_of(counted, 32);
	c.workers = 4;
	blq *q = must_new(&c);

	for (unsigned i = 0; i < N_ITEMS; i++) {
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
		if (i == N_ITEMS / 3)
			must_resize(q, (blq_pool_bounds){.workers = 1});
	}
	cr_expect_eq(stats(q).workers_max, 1);
	/* The three above the max stop after their item and their hand. */
	cr_assert(TU_WAIT_FOR(stats(q).workers_active == 1, 5000), "%u active",
		  stats(q).workers_active);
	cr_expect_eq(stats(q).threads_stopped, 3);
	blq_close(q);
	expect_invariant(q, N_ITEMS);
	cr_expect_eq(stats(q).processed, N_ITEMS);
	unsigned bad = 0;
	for (unsigned i = 0; i < N_ITEMS; i++)
		bad += atomic_load(&runs[i]) != 1;
	cr_expect_eq(bad, 0, "%u items did not run exactly once", bad);
	cr_expect_eq(atomic_load(&tu_freed), N_ITEMS);
	blq_free(q);
}

Test(resize, raises_workers_max_past_the_creation_value)
{
	blq_config c = cfg_of(gated, 1024);
	c.workers_min = 1;
	c.workers_max = 2;
	blq *q = must_new(&c);

	/* Enough that 48 workers each find one after the first ones took
	 * hands ahead (worker.c). */
	fill(q, 1000);
	/* From a ceiling of 2 (4 slots) to 48: 96 slots set up in place. */
	must_resize(q, (blq_pool_bounds){.workers_min = 48, .workers_max = 48});
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 48, 5000), "%u in the gate",
		  atomic_load(&gate.waiting));
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_active, 48);
	cr_expect_eq(s.workers_max, 48);
	cr_expect_eq(s.workers_idle, 0);
	/* And to the limit's ceiling, without starting threads: the slots'
	 * room was reserved at creation. */
	must_resize(q, (blq_pool_bounds){.workers_min = 1, .workers_max = 1024});
	s = stats(q);
	cr_expect_eq(s.workers_max, 1024);
	cr_expect_eq(s.workers_active + s.workers_asleep + s.workers_idle, 1024);
	tu_gate_open(&gate);
	blq_close(q);
	expect_invariant(q, 1000);
	cr_expect_eq(stats(q).processed, 1000);
	blq_free(q);
}

/* Refused with blq_new's message; the bounds in force stay. */
static void refused(blq *q, blq_pool_bounds b, const char *msg)
{
	blq_error err;

	cr_expect_eq(blq_resize(q, &b, &err), BLQ_EINVAL, "%s", msg);
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_eq(strncmp(err.msg, msg, strlen(msg)), 0, "got \"%s\", want \"%s...\"", err.msg,
		     msg);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.workers_min, 1);
	cr_expect_eq(s.workers_max, 3);
	cr_expect(s.wakeup_factor == 0.75);
	cr_expect(s.sleep_factor == 0.5);
}

Test(resize, bad_bounds_are_refused_naming_the_field)
{
	blq_config c = cfg_of(gated, 8);
	c.workers_min = 1;
	c.workers_max = 3;
	blq *q = must_new(&c);
	blq_error err;

	refused(q, (blq_pool_bounds){.workers_min = 5, .workers_max = 2},
		"workers_max: must be >= workers_min (5), got 2");
	refused(q, (blq_pool_bounds){.workers_min = 1}, "workers_max: must be > 0");
	refused(q, (blq_pool_bounds){.workers_max = 1025}, "workers_max: must be <= 1024, got 1025");
	refused(q, (blq_pool_bounds){.workers = 1025}, "workers: must be <= 1024, got 1025");
	refused(q, (blq_pool_bounds){.workers = 2, .workers_max = 3},
		"workers: set either workers or workers_min/workers_max");
	refused(q, (blq_pool_bounds){.workers = 2, .wakeup_factor = 1.5},
		"wakeup_factor: must be in [0, 1], got 1.5");
	refused(q, (blq_pool_bounds){.workers = 2, .sleep_factor = -0.1},
		"sleep_factor: must be in [0, 1], got -0.1");
	/* An unset wakeup factor keeps the current one (0.75). */
	refused(q, (blq_pool_bounds){.workers = 2, .sleep_factor = 0.8},
		"sleep_factor: must be <= wakeup_factor (0.75), got 0.8");
	cr_expect_eq(blq_resize(NULL, &(blq_pool_bounds){.workers = 1}, &err), BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "queue: is NULL");
	cr_expect_eq(blq_resize(q, NULL, &err), BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "bounds: is NULL");
	/* Factors set: kept by a later resize that leaves them 0. */
	must_resize(q, (blq_pool_bounds){.workers_min = 1, .workers_max = 3, .wakeup_factor = 0.9,
					 .sleep_factor = 0.2});
	must_resize(q, (blq_pool_bounds){.workers_min = 2, .workers_max = 3});
	struct blq_stats s = stats(q);
	cr_expect(s.wakeup_factor == 0.9 && s.sleep_factor == 0.2, "%g %g", s.wakeup_factor,
		  s.sleep_factor);
	cr_expect_eq(s.workers_min, 2);
	blq_close(q);
	cr_expect_eq(blq_resize(q, &(blq_pool_bounds){.workers = 1}, &err), BLQ_ECLOSED);
	cr_expect_eq(strncmp(err.msg, "queue: ", 7), 0, "%s", err.msg);
	blq_free(q);
}

struct resizer {
	blq *q;
	_Atomic unsigned applied;
	int last_rc;
};

/* Resizes between 1 and 8 workers until the queue refuses (closing). */
static void *resize_loop(void *p)
{
	struct resizer *r = p;

	for (unsigned k = 0;; k++) {
		blq_pool_bounds b = {.workers_min = 1 + k % 3, .workers_max = 1 + k % 8};
		if (b.workers_min > b.workers_max)
			b.workers_min = b.workers_max;
		blq_error err;
		int rc = blq_resize(r->q, &b, &err);
		if (rc != 0) {
			r->last_rc = rc;
			if (rc != BLQ_ECLOSED)
				fprintf(stderr, "resize: %s\n", err.msg);
			return NULL;
		}
		atomic_fetch_add(&r->applied, 1);
		tu_sleep_us(50);
	}
}

Test(resize, racing_close_loses_no_item)
{
	for (int round = 0; round < 5; round++) {
		setup();
		atomic_store(&tu_freed, 0);
		blq_config c = cfg_of(counted, 64);
		c.workers_min = 1;
		c.workers_max = 4;
		c.heartbeat_interval_ns = 2000000; /* the heartbeat races too */
		blq *q = must_new(&c);
		struct resizer r = {.q = q};
		pthread_t t;

		pthread_create(&t, NULL, resize_loop, &r);
		for (unsigned i = 0; i < 600; i++)
			cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
		cr_assert_eq(blq_close(q), 0);
		pthread_join(t, NULL);
		cr_expect_eq(r.last_rc, BLQ_ECLOSED);
		cr_expect(atomic_load(&r.applied) > 0);
		expect_invariant(q, 600);
		cr_expect_eq(stats(q).processed, 600);
		unsigned bad = 0;
		for (unsigned i = 0; i < 600; i++)
			bad += atomic_load(&runs[i]) != 1;
		cr_expect_eq(bad, 0, "round %d: %u items did not run exactly once", round, bad);
		cr_expect_eq(atomic_load(&tu_freed), 600);
		blq_free(q);
	}
}

Test(resize, a_schedule_range_in_force_overrides_the_new_base)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params later = {.workers_min = 3, .workers_max = 3};
	blq_error err;

	cr_assert_eq(blq_schedule_add_relative(s, "10s-20s", &later, &err), 0, "%s", err.msg);
	blq_config c = cfg_of(gated, 100);
	c.workers_min = 1;
	c.workers_max = 2;
	c.schedule = s;
	c.clock.now_ns = tu_fake_mono;
	blq *q = must_new(&c);
	blq_schedule_free(s);

	/* No range yet: the resize's bounds are in force at once. */
	must_resize(q, (blq_pool_bounds){.workers_min = 2, .workers_max = 5, .wakeup_factor = 0.9});
	struct blq_stats st = stats(q);
	cr_expect_eq(st.schedule_range, -1);
	cr_expect_eq(st.workers_min, 2);
	cr_expect_eq(st.workers_max, 5);
	cr_assert(TU_WAIT_FOR(stats(q).workers_active == 2, 3000));

	/* The range begins: it overrides the base; its unset factors are the
	 * base's, the resized ones. */
	atomic_fetch_add(&tu_mono_ns, 10000000000ull);
	blq__calibrate(q);
	st = stats(q);
	cr_expect_eq(st.schedule_range, 0);
	cr_expect_eq(st.workers_min, 3);
	cr_expect_eq(st.workers_max, 3);
	cr_expect(st.wakeup_factor == 0.9, "%g", st.wakeup_factor);
	cr_assert(TU_WAIT_FOR(stats(q).workers_active == 3, 3000));

	/* A resize while the range is in force changes the base only. */
	must_resize(q, (blq_pool_bounds){.workers_min = 1, .workers_max = 6});
	st = stats(q);
	cr_expect_eq(st.schedule_range, 0);
	cr_expect_eq(st.workers_min, 3);
	cr_expect_eq(st.workers_max, 3);
	cr_expect_eq(st.workers_active, 3);

	/* The range ends: the last resize's bounds are back. */
	atomic_fetch_add(&tu_mono_ns, 10000000000ull);
	blq__calibrate(q);
	st = stats(q);
	cr_expect_eq(st.schedule_range, -1);
	cr_expect_eq(st.workers_min, 1);
	cr_expect_eq(st.workers_max, 6);
	blq_close(q);
	blq_free(q);
}
