/*
 * The Prometheus writer against real parts: two live queues feed one
 * registry; the exposition must pass `promtool check metrics` with no
 * warning and parse with python3-prometheus-client, and carry the exact
 * counter values of a known run.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static tu_gate gate;

static int worker(void *ctx, void *payload, blq_task *t)
{
	tu_item *it = payload;

	(void)ctx, (void)t;
	tu_gate_pass(&gate);
	if (it->id == 1)
		return 1; /* fails: the queue frees it */
	tu_item_free(it);
	return 0;
}

static void setup(void)
{
	tu_gate_init(&gate);
}

TestSuite(metrics, .init = setup, .timeout = 60);

/* Runs a shell command with `input` on stdin; returns its exit status and
 * its output (stdout and stderr) in out. */
static int run_with_input(const char *cmd, const char *input, char *out, size_t cap)
{
	char path[] = "/tmp/blq-metrics-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(input, f);
	fclose(f);
	char full[512];
	snprintf(full, sizeof(full), "%s < %s 2>&1", cmd, path);
	FILE *p = popen(full, "r");
	cr_assert_not_null(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char text[1 << 16];

static void expect_lines(const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_expect(strstr(text, want[i]) != NULL, "missing: %s", want[i]);
}

/* promtool accepts the exposition in `text` without a word. */
static void expect_promtool_clean(void)
{
	char out[8192];
	int rc = run_with_input("promtool check metrics", text, out, sizeof(out));

	cr_expect_eq(rc, 0, "promtool: %s", out);
	cr_expect_eq(strlen(out), 0, "promtool printed (lint warnings?): %s", out);
}

Test(metrics, two_live_queues_promtool_and_the_python_parser)
{
	blq_error err;
	blq_prom *r = blq_prom_new(&err);
	cr_assert_not_null(r);
	blq_discard drop;
	blq_discard_init(&drop, tu_item_free);

	blq_config a = {.name = "alpha", .capacity = 2, .workers = 1, .worker = worker,
			.item_free = tu_item_free, .dlq = blq_discard_enqueuer(&drop)};
	a.metrics = blq_prom_queue_writer(r, "alpha", &err);
	cr_assert_not_null(a.metrics, "%s", err.msg);
	blq *qa = blq_new(&a, &err);
	cr_assert_not_null(qa, "%s", err.msg);
	blq_config b = a;
	b.name = "we\"ird\\q";
	b.capacity = 8;
	b.dlq = (blq_enqueuer){0};
	b.metrics = blq_prom_queue_writer(r, b.name, &err);
	cr_assert_not_null(b.metrics, "%s", err.msg);
	blq *qb = blq_new(&b, &err);
	cr_assert_not_null(qb, "%s", err.msg);
	cr_assert_eq(blq_prom_watch(r, qa), 0);
	cr_assert_eq(blq_prom_watch(r, qb), 0);

	/* alpha: item 0 taken and parked, 1 and 2 fill it, 3 and 4 leak. */
	cr_assert_eq(blq_enqueue(qa, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i <= 4; i++)
		cr_assert_eq(blq_enqueue(qa, tu_item_new(i)), 0);
	for (uint64_t i = 10; i < 13; i++)
		cr_assert_eq(blq_enqueue(qb, tu_item_new(i)), 0);

	int n = blq_prom_render(r, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	cr_expect(strstr(text, "queue_size{queue=\"alpha\"} 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "queue_capacity{queue=\"alpha\"} 2\n") != NULL);
	cr_expect(strstr(text, "queue_workers_active{queue=\"alpha\"} 1\n") != NULL);
	cr_expect(strstr(text, "queue_workers_busy{queue=\"alpha\"} 1\n") != NULL, "%s", text);
	cr_expect(strstr(text, "queue_workers_overrunning{queue=\"alpha\"} 0\n") != NULL);
	cr_expect(strstr(text, "queue_producers_blocked{queue=\"alpha\"} 0\n") != NULL);
	cr_expect(strstr(text, "queue_dlq_waiting{queue=\"alpha\"} 0\n") != NULL);

	tu_gate_open(&gate);
	blq_close(qa);
	blq_close(qb);
	n = blq_prom_render(r, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	static const char *const want[] = {
		"queue_in_total{queue=\"alpha\"} 5\n",
		"queue_out_total{queue=\"alpha\"} 3\n",
		"queue_leak_total{queue=\"alpha\",dir=\"rear\"} 2\n",
		"queue_leak_total{queue=\"alpha\",dir=\"front\"} 0\n",
		/* the same two leaks by reason (watched queues: blq_stats) */
		"queue_leak_reason_total{queue=\"alpha\",reason=\"overflow_rear\"} 2\n",
		"queue_leak_reason_total{queue=\"alpha\",reason=\"failed\"} 0\n",
		"queue_leak_reason_total{queue=\"alpha\",reason=\"closed\"} 0\n",
		"queue_dlq_waiting{queue=\"alpha\"} 0\n",
		"queue_producers_turned_away_total{queue=\"alpha\"} 0\n",
		"queue_failed_total{queue=\"alpha\"} 1\n",
		"queue_lost_total{queue=\"alpha\"} 0\n",
		"queue_exec_seconds_count{queue=\"alpha\"} 3\n",
		"queue_wait_seconds_count{queue=\"alpha\"} 3\n",
		"queue_exec_seconds_bucket{queue=\"alpha\",le=\"+Inf\"} 3\n",
		"queue_size{queue=\"alpha\"} 0\n",
		"queue_in_total{queue=\"we\\\"ird\\\\q\"} 3\n",
		"queue_out_total{queue=\"we\\\"ird\\\\q\"} 3\n",
		"# TYPE queue_wait_seconds histogram\n",
		"# TYPE queue_in_total counter\n",
		"# TYPE queue_size gauge\n",
	};
	expect_lines(want, sizeof(want) / sizeof(want[0]));
	expect_promtool_clean();

	/* Debian's python, where python3-prometheus-client is installed. */
	char out[8192];
	int rc = run_with_input(
		"/usr/bin/python3 -c 'import sys; from prometheus_client.parser import "
		"text_string_to_metric_families as parse; "
		"fams = list(parse(sys.stdin.read())); "
		"v = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams for s in f.samples}; "
		"print(len(fams), int(v[(\"queue_in_total\", ((\"queue\", \"alpha\"),))]), "
		"int(v[(\"queue_in_total\", ((\"queue\", \"we\\\"ird\\\\q\"),))]))'",
		text, out, sizeof(out));
	cr_expect_eq(rc, 0, "python parser: %s", out);
	cr_expect_str_eq(out, "30 5 3\n",
			 "families (21 + the 4 gauges of the moment + queue_dlq_waiting + "
			 "queue_leak_reason_total + queue_producers_turned_away_total + the rate "
			 "limit's two), alpha's in, the odd name's in");

	blq_prom_unwatch(r, qa);
	blq_prom_unwatch(r, qb);
	blq_free(qa);
	blq_free(qb);
	blq_prom_free(r);
}

/* QoS: sub-queue counters and sizes, by subq label, promtool-clean. A
 * custom evaluator routes by id: 1 -> "hi", else "lo". */
static unsigned route(void *ctx, void *payload, uint64_t weight)
{
	(void)ctx, (void)weight;
	return ((tu_item *)payload)->id >= 100 ? 100 : 1;
}

Test(metrics, qos_subq_families)
{
	blq_error err;
	blq_prom *r = blq_prom_new(&err);
	blq_discard drop;
	blq_discard_init(&drop, tu_item_free);
	blq_qos_subq subqs[2] = {{.name = "hi", .capacity = 2, .weight = 1},
				 {.name = "lo", .capacity = 2, .weight = 1}};
	blq_qos_config qc = {.algo = BLQ_QOS_PQ,
			     .egress = {.capacity = 1},
			     .evaluator = {.kind = BLQ_QOS_EVAL_CUSTOM, .fn = route},
			     .subqs = subqs,
			     .nsubqs = 2};
	blq_config c = {.name = "qq", .qos = &qc, .workers = 1, .worker = worker,
			.item_free = tu_item_free, .dlq = blq_discard_enqueuer(&drop)};
	c.metrics = blq_prom_queue_writer(r, "qq", &err);
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	cr_assert_eq(blq_prom_watch(r, q), 0);

	/* 0 parked in the worker, 2 in the egress, 3 and 4 in "hi", 5 leaks
	 * from "hi"; 100 in "lo". */
	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(2)), 0);
	blq_qos_subq_stats eg;
	cr_assert(TU_WAIT_FOR(blq_qos_subq_info(q, BLQ_QOS_EGRESS, &eg) == 0 && eg.size == 1 &&
				      blq_size(q) == 1,
			      2000));
	for (uint64_t id = 3; id <= 5; id++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(id)), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(100)), 0);
	int n = blq_prom_render(r, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	static const char *const mid[] = {
		"queue_subq_size{queue=\"qq\",subq=\"hi\"} 2\n",
		"queue_subq_size{queue=\"qq\",subq=\"lo\"} 1\n",
		"queue_subq_size{queue=\"qq\",subq=\"egress\"} 1\n",
		"queue_subq_in_total{queue=\"qq\",subq=\"hi\"} 5\n",
		"queue_subq_out_total{queue=\"qq\",subq=\"hi\"} 2\n",
		"queue_subq_leak_total{queue=\"qq\",subq=\"hi\"} 1\n",
		"queue_subq_in_total{queue=\"qq\",subq=\"lo\"} 1\n",
		"queue_size{queue=\"qq\"} 4\n",
		"# TYPE queue_subq_size gauge\n",
		"# TYPE queue_subq_in_total counter\n",
	};
	expect_lines(mid, sizeof(mid) / sizeof(mid[0]));
	expect_promtool_clean();

	tu_gate_open(&gate);
	blq_close(q);
	n = blq_prom_render(r, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	cr_expect(strstr(text, "queue_subq_out_total{queue=\"qq\",subq=\"hi\"} 4\n") != NULL, "%s", text);
	cr_expect(strstr(text, "queue_subq_out_total{queue=\"qq\",subq=\"lo\"} 1\n") != NULL);
	cr_expect(strstr(text, "queue_subq_size{queue=\"qq\",subq=\"hi\"} 0\n") != NULL);
	blq_prom_unwatch(r, q);
	blq_free(q);
	blq_prom_free(r);
}

Test(metrics, histogram_buckets_and_cut_output)
{
	blq_prom *r = blq_prom_new(NULL);
	const blq_metrics_writer *w = blq_prom_queue_writer(r, "h", NULL);
	static const uint64_t ns[] = {50000, 100000, 100001, 3000000, 7000000000ull};

	/* Workers 0 and 1 (their own cells) and an index beyond the worker
	 * limit (the shared cells): the render folds them all. */
	static const unsigned worker[] = {0, 1, 0, 5000, 1};
	for (size_t i = 0; i < 5; i++)
		w->queue_exec(w->ctx, "h", worker[i], ns[i], 0);
	int n = blq_prom_render(r, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	/* 50 us and 100 us fall in le=0.0001; 100.001 us in 0.00025; 3 ms in
	 * 0.005; 7 s only in +Inf. Buckets are cumulative. */
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"0.0001\"} 2\n"));
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"0.00025\"} 3\n"));
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"0.0025\"} 3\n"));
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"0.005\"} 4\n"));
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"5\"} 4\n"));
	cr_expect(strstr(text, "queue_exec_seconds_bucket{queue=\"h\",le=\"+Inf\"} 5\n"));
	cr_expect(strstr(text, "queue_exec_seconds_sum{queue=\"h\"} 7.003250001\n"), "%s", text);
	cr_expect(strstr(text, "queue_exec_seconds_count{queue=\"h\"} 5\n"));

	char small[16];
	cr_expect_eq(blq_prom_render(r, small, sizeof(small)), n, "full length when cut");
	cr_expect_eq(strlen(small), sizeof(small) - 1);
	blq_prom_free(r);
}

Test(metrics, bad_names_are_refused)
{
	blq_prom *r = blq_prom_new(NULL);
	blq_error err;

	cr_expect_not_null(blq_prom_queue_writer(r, "q", &err));
	cr_expect_null(blq_prom_queue_writer(r, "q", &err));
	cr_expect_str_eq(err.msg, "prometheus: queue \"q\": already has a writer");
	cr_expect_null(blq_prom_queue_writer(r, "", &err));
	cr_expect_str_eq(err.msg, "prometheus: queue: must be 1..63 bytes");
	cr_expect_eq(blq_prom_render(NULL, NULL, 0), BLQ_EINVAL);
	cr_expect_eq(blq_prom_watch(r, NULL), BLQ_EINVAL);
	blq_prom_free(r);
	blq_prom_free(NULL);
}

/* A logger that keeps the lines. */
typedef struct lines {
	pthread_mutex_t mu;
	char text[1 << 14];
	size_t n;
} lines;

static void keep(void *ctx, int level, const char *fmt, va_list ap)
{
	lines *l = ctx;
	char line[256];

	vsnprintf(line, sizeof(line), fmt, ap);
	pthread_mutex_lock(&l->mu);
	l->n += (size_t)snprintf(l->text + l->n, sizeof(l->text) - l->n, "%d %s\n", level, line);
	pthread_mutex_unlock(&l->mu);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

Test(metrics, the_log_writer_logs_each_event)
{
	lines l = {.mu = PTHREAD_MUTEX_INITIALIZER};
	blq_log_writer lw;
	blq_discard drop;
	blq_discard_init(&drop, tu_item_free);
	blq_config c = {.name = "logged", .capacity = 2, .workers = 1, .worker = worker,
			.item_free = tu_item_free, .dlq = blq_discard_enqueuer(&drop)};
	c.metrics = blq_log_writer_init(&lw, (blq_logger){.log = keep, .ctx = &l});
	blq *q = blq_new(&c, NULL);
	cr_assert_not_null(q);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 2000));
	for (uint64_t i = 1; i <= 3; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(i)), 0);
	tu_gate_open(&gate);
	blq_free(q);
	/* 4 accepted, 1 leaked at the rear, 3 run (item 1 fails). */
	cr_expect_eq(count(l.text, "4 queue=logged event=put\n"), 4, "%s", l.text);
	cr_expect_eq(count(l.text, "queue=logged event=leak dir=rear\n"), 1);
	cr_expect_eq(count(l.text, "queue=logged event=pull worker=0 wait_ns="), 3);
	cr_expect_eq(count(l.text, "queue=logged event=exec worker=0 ns="), 3);
	cr_expect_eq(count(l.text, "failed=1\n"), 1);
	cr_expect_eq(count(l.text, "failed=0\n"), 2);
	cr_expect_eq(count(l.text, "queue=logged event=worker_init worker=0\n"), 1);
	cr_expect_eq(count(l.text, "queue=logged event=worker_stop worker=0 forced=0\n"), 1);
	cr_expect_eq(count(l.text, "queue=logged event=worker_setup active=1 asleep=0 idle=0\n"), 1);
}

/* ---- the stderr logger ------------------------------------------------ */

static void say(const blq_logger *l, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	l->log(l->ctx, level, fmt, ap);
	va_end(ap);
}

/* What blq_stderr_logger(level) prints for one line at each level, ERROR
 * to DEBUG (stderr is a temporary file meanwhile). */
static void stderr_lines(int level, char *out, size_t cap)
{
	blq_logger l = blq_stderr_logger(level);
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);

	cr_assert_not_null(f);
	cr_assert(saved >= 0);
	fflush(stderr);
	cr_assert(dup2(fileno(f), STDERR_FILENO) >= 0);
	for (int lv = BLQ_LOG_ERROR; lv <= BLQ_LOG_DEBUG; lv++)
		say(&l, lv, "line %d", lv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

Test(metrics, the_stderr_loggers_level_0_means_info_as_everywhere)
{
	char zero[512], info[512], error[512];

	stderr_lines(0, zero, sizeof(zero));
	stderr_lines(BLQ_LOG_INFO, info, sizeof(info));
	stderr_lines(BLQ_LOG_ERROR, error, sizeof(error));
	cr_expect_str_eq(info, "blq ERROR: line 1\nblq WARN: line 2\nblq INFO: line 3\n");
	cr_expect_str_eq(zero, info, "level 0 printed \"%s\"", zero);
	cr_expect_str_eq(error, "blq ERROR: line 1\n");

	/* The filter a queue applies (blq_logger.level) agrees with it. */
	blq_logger z = blq_stderr_logger(0), i = blq_stderr_logger(BLQ_LOG_INFO);
	cr_expect(z.log == i.log && z.ctx == i.ctx, "level 0 is the INFO logger");
	cr_expect_eq(z.level, BLQ_LOG_INFO);
}

Test(metrics, the_log_writer_refuses_a_null_storage)
{
	cr_expect_null(blq_log_writer_init(NULL, blq_stderr_logger(BLQ_LOG_WARN)));
	cr_expect_null(blq_log_writer_init(NULL, (blq_logger){0}));
}
