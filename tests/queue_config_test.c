/* Configuration checks: each bad field is refused with a message naming it. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <blq/blq.h>

static int ok_worker(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)payload, (void)t;
	return 0;
}

static uint64_t custom_backoff(void *ctx, unsigned retry, uint64_t interval)
{
	(void)ctx;
	return interval * retry;
}

static uint64_t custom_jitter(void *ctx, uint64_t d, uint64_t prev)
{
	(void)ctx;
	(void)prev;
	return d;
}

static blq_config base(void)
{
	blq_config c = {0};

	c.capacity = 8;
	c.workers = 1;
	c.worker = ok_worker;
	return c;
}

static int dlq_refuse(void *self, void *payload)
{
	(void)self, (void)payload;
	return -1;
}

static int dlq_why_refuse(void *self, void *payload, const blq_dlq_why *why)
{
	(void)self, (void)payload, (void)why;
	return -1;
}

typedef struct bad_case {
	const char *what;
	void (*mutate)(blq_config *c);
	int code;
	const char *msg; /* the exact message */
} bad_case;

#define MUT(name, body) static void name(blq_config *c) { body; }
MUT(cap0, c->capacity = 0)
MUT(cap_huge, c->capacity = (size_t)1 << 40)
MUT(no_worker, c->worker = NULL)
MUT(wmax0, c->workers = 0; c->workers_max = 0)
MUT(min_gt_max, c->workers = 0; c->workers_min = 4; c->workers_max = 2)
MUT(both_pool, c->workers_max = 4)
MUT(too_many, c->workers = 5000)
MUT(streams_gt_cap, c->streams = 9)
MUT(wake_nan, c->wakeup_factor = NAN)
MUT(wake_neg, c->wakeup_factor = -0.5)
MUT(wake_big, c->wakeup_factor = 1.5)
MUT(sleep_nan, c->sleep_factor = NAN)
MUT(sleep_gt_wake, c->wakeup_factor = 0.4; c->sleep_factor = 0.6)
MUT(name_empty, c->name = "")
MUT(name_long, c->name = "0123456789012345678901234567890123456789012345678901234567890123456789")
MUT(leak_dir, c->leak_direction = (enum blq_leak_dir)7)
MUT(fail_no_dlq, c->fail_to_dlq = true)
MUT(deadline_no_dlq, c->deadline_to_dlq = true)
MUT(dlq_self_only, c->dlq.self = c)
MUT(dlq_why_only, c->dlq.enqueue_why = dlq_why_refuse)
MUT(backoff_bad, c->backoff = (enum blq_backoff)99)
MUT(jitter_bad, c->jitter = (enum blq_jitter)99)
MUT(clock_ctx_only, c->clock.ctx = c)
MUT(logger_ctx_only, c->logger.ctx = c)
MUT(retries_many, c->max_retries = 2000000)
MUT(retry_neg, c->retry_interval_ns = (uint64_t)-5)
MUT(delay_absurd, c->delay_interval_ns = 400ull * 24 * 3600 * 1000000000ull)
MUT(timeout_neg, c->timeout_ns = (uint64_t)-1)
MUT(deadline_le_delay, c->delay_interval_ns = 1000; c->deadline_interval_ns = 1000)
MUT(backoff_no_interval, c->backoff = BLQ_BACKOFF_EXPONENTIAL)
MUT(backoff_custom_no_fn, c->backoff = BLQ_BACKOFF_CUSTOM)
MUT(backoff_fn_not_custom, c->retry_interval_ns = 10; c->backoff_fn = custom_backoff)
MUT(retry_cap_below, c->retry_interval_ns = 1000; c->retry_max_interval_ns = 10)
MUT(jitter_custom_no_fn, c->jitter = BLQ_JITTER_CUSTOM)
MUT(jitter_fn_not_custom, c->jitter_fn = custom_jitter)
MUT(jitter_min_not_decorr, c->jitter = BLQ_JITTER_FULL; c->jitter_min_ns = 5)
MUT(decorr_no_max, c->jitter = BLQ_JITTER_DECORRELATED; c->jitter_min_ns = 5)
MUT(decorr_min_gt_max, c->jitter = BLQ_JITTER_DECORRELATED; c->jitter_min_ns = 50;
    c->jitter_max_ns = 10)
MUT(decorr_interval_gt_max, c->jitter = BLQ_JITTER_DECORRELATED; c->retry_interval_ns = 50;
    c->jitter_max_ns = 10)
MUT(timer_cap_huge, c->timer_capacity = (size_t)1 << 40)

static const bad_case cases[] = {
	{"capacity 0", cap0, BLQ_EINVAL, "capacity: must be > 0"},
	{"capacity huge", cap_huge, BLQ_EINVAL,
	 "capacity: must be <= 1073741824, got 1099511627776"},
	{"no worker", no_worker, BLQ_EINVAL,
	 "worker: is NULL (a queue needs a worker callback)"},
	{"workers_max 0", wmax0, BLQ_EINVAL,
	 "workers_max: must be > 0 (or set workers for a fixed pool)"},
	{"min > max", min_gt_max, BLQ_EINVAL, "workers_max: must be >= workers_min (4), got 2"},
	{"workers and max", both_pool, BLQ_EINVAL,
	 "workers: set either workers or workers_min/workers_max, not both"},
	{"too many workers", too_many, BLQ_EINVAL, "workers: must be <= 1024, got 5000"},
	{"streams > capacity", streams_gt_cap, BLQ_EINVAL,
	 "streams: must be <= capacity (8), got 9"},
	{"wakeup NaN", wake_nan, BLQ_EINVAL, "wakeup_factor: must be a number, got NaN"},
	{"wakeup negative", wake_neg, BLQ_EINVAL, "wakeup_factor: must be in [0, 1], got -0.5"},
	{"wakeup above 1", wake_big, BLQ_EINVAL, "wakeup_factor: must be in [0, 1], got 1.5"},
	{"sleep NaN", sleep_nan, BLQ_EINVAL, "sleep_factor: must be a number, got NaN"},
	{"sleep > wakeup", sleep_gt_wake, BLQ_EINVAL,
	 "sleep_factor: must be <= wakeup_factor (0.4), got 0.6"},
	{"empty name", name_empty, BLQ_EINVAL, "name: must not be empty (NULL means \"queue\")"},
	{"long name", name_long, BLQ_EINVAL, "name: must be at most 63 bytes"},
	{"leak direction", leak_dir, BLQ_EINVAL,
	 "leak_direction: must be BLQ_LEAK_REAR or BLQ_LEAK_FRONT, got 7"},
	{"fail_to_dlq alone", fail_no_dlq, BLQ_EINVAL, "fail_to_dlq: needs a dlq"},
	{"deadline_to_dlq alone", deadline_no_dlq, BLQ_EINVAL, "deadline_to_dlq: needs a dlq"},
	{"dlq self only", dlq_self_only, BLQ_EINVAL, "dlq: self is set but enqueue is NULL"},
	{"dlq why only", dlq_why_only, BLQ_EINVAL,
	 "dlq: enqueue_why is set but enqueue is NULL (both are needed)"},
	{"backoff", backoff_bad, BLQ_EINVAL, "backoff: unknown kind 99"},
	{"jitter", jitter_bad, BLQ_EINVAL, "jitter: unknown kind 99"},
	{"clock ctx", clock_ctx_only, BLQ_EINVAL, "clock: ctx is set but now_ns and wall_ns are NULL"},
	{"logger ctx", logger_ctx_only, BLQ_EINVAL, "logger: ctx is set but log is NULL"},
	{"retries", retries_many, BLQ_EINVAL, "max_retries: must be <= 1000000, got 2000000"},
	{"negative retry interval", retry_neg, BLQ_EINVAL,
	 "retry_interval_ns: must be at most 1 year (31536000000000000 ns), got "
	 "18446744073709551611 (a negative value cast to unsigned?)"},
	{"absurd delay", delay_absurd, BLQ_EINVAL,
	 "delay_interval_ns: must be at most 1 year (31536000000000000 ns), got "
	 "34560000000000000 (a negative value cast to unsigned?)"},
	{"negative timeout", timeout_neg, BLQ_EINVAL,
	 "timeout_ns: must be at most 1 year (31536000000000000 ns), got "
	 "18446744073709551615 (a negative value cast to unsigned?)"},
	{"deadline <= delay", deadline_le_delay, BLQ_EINVAL,
	 "deadline_interval_ns: must be above delay_interval_ns (1000), got 1000 (every item "
	 "would expire)"},
	{"backoff without interval", backoff_no_interval, BLQ_EINVAL,
	 "backoff: needs retry_interval_ns (the backoff's base)"},
	{"custom backoff without fn", backoff_custom_no_fn, BLQ_EINVAL,
	 "backoff_fn: BLQ_BACKOFF_CUSTOM needs backoff_fn"},
	{"backoff fn without custom", backoff_fn_not_custom, BLQ_EINVAL,
	 "backoff_fn: is set but backoff is not BLQ_BACKOFF_CUSTOM"},
	{"retry cap below interval", retry_cap_below, BLQ_EINVAL,
	 "retry_max_interval_ns: must be >= retry_interval_ns (1000), got 10"},
	{"custom jitter without fn", jitter_custom_no_fn, BLQ_EINVAL,
	 "jitter_fn: BLQ_JITTER_CUSTOM needs jitter_fn"},
	{"jitter fn without custom", jitter_fn_not_custom, BLQ_EINVAL,
	 "jitter_fn: is set but jitter is not BLQ_JITTER_CUSTOM"},
	{"jitter min without decorrelated", jitter_min_not_decorr, BLQ_EINVAL,
	 "jitter_min_ns: only BLQ_JITTER_DECORRELATED uses it"},
	{"decorrelated without max", decorr_no_max, BLQ_EINVAL,
	 "jitter_max_ns: BLQ_JITTER_DECORRELATED needs a maximum"},
	{"decorrelated min > max", decorr_min_gt_max, BLQ_EINVAL,
	 "jitter_min_ns: must be <= jitter_max_ns (10), got 50"},
	{"decorrelated interval > max", decorr_interval_gt_max, BLQ_EINVAL,
	 "jitter_min_ns: must be <= jitter_max_ns (10), got 50 (from retry_interval_ns)"},
	{"timer capacity huge", timer_cap_huge, BLQ_EINVAL,
	 "timer_capacity: must be <= 1073741824, got 1099511627776"},
};

/* Each case, applied to a fresh base config, is refused with its code and
 * exact message. */
static void expect_refused(const bad_case *cs, size_t n, blq_config (*make)(void))
{
	for (size_t i = 0; i < n; i++) {
		blq_config c = make();
		blq_error err = {0};

		cs[i].mutate(&c);
		blq *q = blq_new(&c, &err);
		cr_expect_null(q, "%s: queue created", cs[i].what);
		blq_free(q);
		cr_expect_eq(err.code, cs[i].code, "%s: code %s, want %s", cs[i].what,
			     blq_errname(err.code), blq_errname(cs[i].code));
		cr_expect_str_eq(err.msg, cs[i].msg, "%s", cs[i].what);
	}
}

Test(config, each_bad_field_is_named)
{
	expect_refused(cases, sizeof(cases) / sizeof(cases[0]), base);
}

Test(config, null_config_and_null_error)
{
	blq_error err;

	cr_expect_null(blq_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "config: is NULL");
	blq_config c = base();
	c.capacity = 0;
	cr_expect_null(blq_new(&c, NULL)); /* no error sink: still refused */
}

Test(config, zero_config_plus_worker_and_capacity_is_valid)
{
	blq_error err;
	blq_config c = base();

	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	cr_expect_eq(err.code, BLQ_OK);
	cr_expect_str_eq(blq_name(q), "queue");
	cr_expect_eq(blq_capacity(q), 8);
	cr_expect_eq(blq_free(q), 0);
}

Test(config, config_is_copied)
{
	char name[16] = "copied";
	blq_config c = base();
	blq_error err;

	c.name = name;
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	strcpy(name, "changed");
	c.capacity = 1; /* no effect on the running queue */
	cr_expect_str_eq(blq_name(q), "copied");
	cr_expect_eq(blq_capacity(q), 8);
	blq_free(q);
}

Test(config, exact_capacity_not_rounded)
{
	blq_config c = base();
	blq_error err;

	c.capacity = 1000;
	c.streams = 3;
	c.dlq.enqueue = dlq_refuse;
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	cr_expect_eq(blq_capacity(q), 1000);
	blq_free(q);
}

Test(errors, names_and_messages)
{
	cr_expect_str_eq(blq_strerror(BLQ_EFULL), "queue is full");
	cr_expect_str_eq(blq_errname(BLQ_EFULL), "BLQ_EFULL");
	cr_expect_str_eq(blq_strerror(0), "success");
	cr_expect_str_eq(blq_errname(BLQ_ECLOSED), "BLQ_ECLOSED");
	/* Unknown codes never give NULL (nng's errors_test). */
	for (long i = 1; i < 0x1000000; i = i * 2 + 100) {
		cr_expect_not_null(blq_strerror((int)i));
		cr_expect_not_null(blq_strerror((int)-i));
		cr_expect_not_null(blq_errname((int)-i));
	}
	cr_expect_str_eq(blq_strerror(-12345), "unknown error");
}

Test(api, null_arguments)
{
	cr_expect_eq(blq_enqueue(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_try_enqueue(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_enqueue_job(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_close(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_close_timeout(NULL, 1), BLQ_EINVAL);
	cr_expect_eq(blq_force_close(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_free(NULL), 0);
	cr_expect_eq(blq_stats(NULL, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_size(NULL), 0);
	cr_expect_eq(blq_capacity(NULL), 0);
	cr_expect_eq(blq_status_json(NULL, NULL, 0), BLQ_EINVAL);

	blq_config c = base();
	blq *q = blq_new(&c, NULL);
	cr_assert_not_null(q);
	cr_expect_eq(blq_enqueue_job(q, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_stats(q, NULL), BLQ_EINVAL);
	blq_job j = {.payload = NULL, .delay_ns = (uint64_t)-1};
	cr_expect_eq(blq_enqueue_job(q, &j), BLQ_EINVAL, "a negative delay");
	j = (blq_job){.payload = NULL, .timeout_ns = 400ull * 24 * 3600 * 1000000000ull};
	cr_expect_eq(blq_enqueue_job(q, &j), BLQ_EINVAL, "an absurd timeout");
	j = (blq_job){.payload = NULL, .delay_ns = 10, .deadline_ns = 5};
	cr_expect_eq(blq_enqueue_job(q, &j), BLQ_EINVAL, "a deadline before the delay");
	cr_expect_eq(blq_enqueue_wait(q, NULL, 0, NULL), BLQ_EINVAL);
	cr_expect_eq(blq_enqueue_wait(NULL, &j, 0, NULL), BLQ_EINVAL);
	blq_free(q);
}

/* QoS: every bad field refused with a message naming it, and the
 * sub-queue by index and name. */
static blq_qos_subq qsubqs[3];
static blq_qos_config qcfg;

static blq_config qos_base(void)
{
	qsubqs[0] = (blq_qos_subq){.name = "high", .capacity = 4, .weight = 250};
	qsubqs[1] = (blq_qos_subq){.name = "medium", .capacity = 4, .weight = 600};
	qsubqs[2] = (blq_qos_subq){.name = "low", .capacity = 4, .weight = 150};
	qcfg = (blq_qos_config){.algo = BLQ_QOS_WRR,
				.evaluator = {.kind = BLQ_QOS_EVAL_RANDOM},
				.subqs = qsubqs,
				.nsubqs = 3};
	blq_config c = base();
	c.capacity = 0;
	c.qos = &qcfg;
	return c;
}

MUT(q_algo, qcfg.algo = (enum blq_qos_algo)7)
MUT(q_no_eval, qcfg.evaluator.kind = BLQ_QOS_EVAL_NONE)
MUT(q_eval_kind, qcfg.evaluator.kind = (enum blq_qos_eval_kind)9)
MUT(q_custom_no_fn, qcfg.evaluator.kind = BLQ_QOS_EVAL_CUSTOM)
MUT(q_def, qcfg.evaluator.kind = BLQ_QOS_EVAL_WEIGHTED; qcfg.evaluator.def = 101)
MUT(q_none, qcfg.nsubqs = 0)
MUT(q_null, qcfg.subqs = NULL)
MUT(q_single, qcfg.nsubqs = 1)
MUT(q_many, qcfg.nsubqs = 65)
MUT(q_ingress, qsubqs[1].name = "ingress")
MUT(q_egress, qsubqs[2].name = "egress")
MUT(q_dup, qsubqs[2].name = "high")
MUT(q_dup_index, qsubqs[0].name = NULL; qsubqs[1].name = "0")
MUT(q_empty_name, qsubqs[0].name = "")
MUT(q_cap0, qsubqs[1].capacity = 0)
MUT(q_cap_huge, qsubqs[0].capacity = (size_t)1 << 31)
MUT(q_no_weight, qsubqs[1].weight = 0)
MUT(q_only_ingress, qsubqs[1].weight = 0; qsubqs[1].ingress_weight = 5)
MUT(q_only_egress, qsubqs[2].weight = 0; qsubqs[2].egress_weight = 5)
MUT(q_capacity, c->capacity = 100)
MUT(q_streams, c->streams = 2)
MUT(q_egress_streams, qcfg.egress.capacity = 2; qcfg.egress.streams = 3)
MUT(q_egress_workers, qcfg.egress.workers = 65)

static const bad_case qos_cases[] = {
	{"algo", q_algo, BLQ_EINVAL,
	 "qos.algo: unknown algorithm 7 (BLQ_QOS_PQ, BLQ_QOS_RR or BLQ_QOS_WRR)"},
	{"no evaluator", q_no_eval, BLQ_EINVAL,
	 "qos.evaluator: not set (BLQ_QOS_EVAL_WEIGHTED, BLQ_QOS_EVAL_RANDOM or BLQ_QOS_EVAL_CUSTOM)"},
	{"evaluator kind", q_eval_kind, BLQ_EINVAL, "qos.evaluator: kind: unknown kind 9"},
	{"custom without fn", q_custom_no_fn, BLQ_EINVAL,
	 "qos.evaluator: fn: is NULL (a custom evaluator needs it)"},
	{"weighted def", q_def, BLQ_EINVAL, "qos.evaluator: def: must be a percent, 0..100, got 101"},
	{"no sub-queues", q_none, BLQ_EINVAL, "qos.subqs: no sub-queues"},
	{"NULL sub-queues", q_null, BLQ_EINVAL, "qos.subqs: no sub-queues"},
	{"single sub-queue", q_single, BLQ_EINVAL,
	 "qos.subqs: a single sub-queue is senseless (want 2 or more)"},
	{"too many", q_many, BLQ_EINVAL, "qos.subqs: at most 64 sub-queues, got 65"},
	{"reserved ingress", q_ingress, BLQ_EINVAL,
	 "qos.subqs[1] \"ingress\": name: \"ingress\" and \"egress\" are reserved"},
	{"reserved egress", q_egress, BLQ_EINVAL,
	 "qos.subqs[2] \"egress\": name: \"ingress\" and \"egress\" are reserved"},
	{"duplicate", q_dup, BLQ_EINVAL, "qos.subqs[2] \"high\": name: already used by qos.subqs[0]"},
	{"duplicate of an index", q_dup_index, BLQ_EINVAL,
	 "qos.subqs[1] \"0\": name: already used by qos.subqs[0]"},
	{"empty name", q_empty_name, BLQ_EINVAL,
	 "qos.subqs[0]: name: must be 1..63 bytes (NULL means its index)"},
	{"zero capacity", q_cap0, BLQ_EINVAL, "qos.subqs[1] \"medium\": capacity: must be > 0"},
	{"huge capacity", q_cap_huge, BLQ_EINVAL,
	 "qos.subqs[0] \"high\": capacity: must be <= 1073741824, got 2147483648"},
	{"no weight", q_no_weight, BLQ_EINVAL,
	 "qos.subqs[1] \"medium\": weight: none set (set weight, or ingress_weight and egress_weight)"},
	{"only ingress weight", q_only_ingress, BLQ_EINVAL,
	 "qos.subqs[1] \"medium\": egress_weight: not set while ingress_weight is (set both, or weight)"},
	{"only egress weight", q_only_egress, BLQ_EINVAL,
	 "qos.subqs[2] \"low\": ingress_weight: not set while egress_weight is (set both, or weight)"},
	{"capacity not the sum", q_capacity, BLQ_EINVAL,
	 "capacity: must be 0 or the sum of the QoS sub-queues and egress (76), got 100"},
	{"streams", q_streams, BLQ_EINVAL,
	 "streams: must be 0 with qos (set qos.egress.streams), got 2"},
	{"egress streams", q_egress_streams, BLQ_EINVAL,
	 "qos.egress.streams: must be <= qos.egress.capacity (2), got 3"},
	{"egress workers", q_egress_workers, BLQ_EINVAL, "qos.egress.workers: must be <= 64, got 65"},
};

Test(config, qos_each_bad_field_is_named)
{
	expect_refused(qos_cases, sizeof(qos_cases) / sizeof(qos_cases[0]), qos_base);
}

/* The original's weight rules: weight stands in for an unset ingress or
 * egress weight. */
Test(config, qos_weight_fills_the_unset_side)
{
	blq_config c = qos_base();
	blq_error err;

	qsubqs[1].ingress_weight = 7; /* egress from weight (600) */
	qsubqs[2].egress_weight = 9;  /* ingress from weight (150) */
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	blq_qos_subq_stats st;
	cr_assert_eq(blq_qos_subq_info(q, 1, &st), 0);
	cr_expect_eq(st.ingress_weight, 7);
	cr_expect_eq(st.egress_weight, 600);
	cr_assert_eq(blq_qos_subq_info(q, 2, &st), 0);
	cr_expect_eq(st.ingress_weight, 150);
	cr_expect_eq(st.egress_weight, 9);
	cr_expect_eq(blq_capacity(q), 76);
	blq_free(q);
}
