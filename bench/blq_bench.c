/*
 * blq-bench: the DESIGN.md workloads, timed, with blq and (with --compare)
 * the other systems side by side in the same process and the same run.
 *
 * Every measurement prints one line scripts can read:
 *   BENCH <workload> <system> ns_per_item=<x> items_per_s=<y> allocs_per_item=<z> [k=v ...]
 * Rounds run the systems round-robin (blq, glib, mutex, ckring, pairs, blq,
 * ...) so a noisy neighbour hits them alike; the line gives the median round.
 *
 * Allocations are counted by interposing malloc and friends in this
 * executable. blq's figure covers only the window in which items flow
 * (after creation and thread start-up); the other systems' figures cover
 * their whole call, set-up included, which over 2,000,000 items adds
 * at most a few millionths per item.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <blq/blq.h>

#include "baseline.h"
#include "bench_blq.h"
#include "bench_dump.h"
#include "bench_restore.h"
#include "bench_sides.h"
#include "median.h"
#include "noise.h"

/* ---- allocation counter: interposes the allocator for the whole process */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic uint64_t allocs;

uint64_t bench_allocs(void)
{
	return atomic_load_explicit(&allocs, memory_order_relaxed);
}

void *malloc(size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_realloc(p, n);
}

void *aligned_alloc(size_t al, size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	*out = __libc_memalign(al, n);
	return *out != NULL ? 0 : ENOMEM;
}

/* ---- task bodies ---------------------------------------------------- */

static unsigned spin_iters; /* calibrated so spin() takes ~50 ns */

static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
}

static void calibrate(void)
{
	const unsigned n = 20000000;
	uint64_t t0 = bench_now_ns();

	spin(n);
	double per = (double)(bench_now_ns() - t0) / n;
	spin_iters = (unsigned)(50.0 / per + 0.5);
	if (spin_iters == 0)
		spin_iters = 1;
}

static void tiny_task(void *payload)
{
	(void)payload;
	spin(spin_iters);
}

/* W4: a slow task, 100 us asleep. */
static void sleep_task(void *payload)
{
	struct timespec ts = {0, 100000};

	(void)payload;
	nanosleep(&ts, NULL);
}

static int idle_worker(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)payload, (void)t;
	return 0;
}

/* W3: stamp at push, measure at start. */
static uint64_t *stamps, *latencies;

static void stamp_push(void *payload)
{
	stamps[(uintptr_t)payload - 1] = bench_now_ns();
}

static void latency_task(void *payload)
{
	uintptr_t i = (uintptr_t)payload - 1;

	latencies[i] = bench_now_ns() - stamps[i];
	spin(spin_iters);
}

/* ---- systems -------------------------------------------------------- */

/* SYS_PAIRS is the least handoff (bench_run_pairs: a ring per producer,
 * one reader each, nothing else); SYS_FLOOR is no queue: the task bodies
 * alone over the cores (bench_run_floor), the line no handoff can go
 * below. */
enum { SYS_BLQ, SYS_GLIB, SYS_MUTEX, SYS_CKRING, SYS_PAIRS, SYS_FLOOR, SYS_COUNT };
static const char *const sys_names[SYS_COUNT] = {"blq",	  "glib",  "mutex",
						 "ckring", "pairs", "floor"};

typedef struct result {
	double ns[64];
	double allocs[64];
	double p[64][4]; /* W3: p50, p90, p99, p99.9 in us */
	unsigned n;
} result;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* A system's round that has not ended after STALL_S seconds, plus 10 us
 * per item (a long --items), is stalled: the raw ck ring's MPMC enqueue
 * waits, spinning, for the producer before it to publish, and with both
 * producers on one CPU each spins its whole time slice for the other:
 * one push per slice (docs/benchmarks.md, "Running them"), which held a
 * run of --compare for its whole outer timeout. The longest healthy round at the default items (W1-NOISY,
 * the mutex pool) takes a few seconds. */
#define STALL_S 120u

static const char *volatile stalled_sys = "";

/* SIGALRM during a round: say which system stalled and end the process
 * (its threads cannot be stopped; the lines printed so far stay, stdout
 * being line-buffered), so a script that runs blq-bench again goes on. */
static void on_stall(int sig)
{
	static const char a[] = "blq-bench: ", b[] = " stalled (a round past its time limit); giving up\n";

	(void)sig;
	/* Async-signal-safe: write and _exit only; a failed write changes
	 * nothing we could do. */
	if (write(STDERR_FILENO, a, sizeof(a) - 1) > 0 &&
	    write(STDERR_FILENO, stalled_sys, strlen(stalled_sys)) > 0)
		(void)!write(STDERR_FILENO, b, sizeof(b) - 1);
	_exit(3);
}

static int run_one(int sys, const bench_shape *s, const blq_config *base, double *ns,
		   double *allocs_per_item)
{
	uint64_t a0 = bench_allocs(), in_run = 0;
	int64_t t;

	stalled_sys = sys_names[sys];
	alarm(STALL_S + (unsigned)(s->items / 100000u));
	switch (sys) {
	case SYS_BLQ:
		t = bench_run_blq(s, base, &in_run);
		break;
	case SYS_GLIB:
		t = bench_run_glib(s);
		break;
	case SYS_MUTEX:
		t = bench_run_mutex(s);
		break;
	case SYS_FLOOR:
		t = bench_run_floor(s);
		break;
	case SYS_PAIRS:
		t = bench_run_pairs(s);
		break;
	default:
		t = bench_run_ckring(s);
		break;
	}
	alarm(0);
	if (t < 0)
		return -1;
	if (sys != SYS_BLQ)
		in_run = bench_allocs() - a0;
	*ns = (double)t / (double)s->items;
	*allocs_per_item = (double)in_run / (double)s->items;
	return 0;
}

static void percentiles(size_t n, double out[4])
{
	static const double q[4] = {0.50, 0.90, 0.99, 0.999};

	qsort(latencies, n, sizeof(uint64_t), cmp_u64);
	for (int i = 0; i < 4; i++)
		out[i] = (double)latencies[(size_t)(q[i] * (double)(n - 1))] / 1000.0;
}

/* What a workload line carries beyond the common keys. */
enum { EXTRA_NONE = 0, EXTRA_LATENCY = 1, EXTRA_WALL = 2 };

static void print_line(const char *wl, int sys, result *r, double blq_ns, int extra,
		       double items, const char *more)
{
	double ns = bench_median(r->ns, r->n);

	printf("BENCH %s %s ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g", wl,
	       sys_names[sys], ns, 1e9 / ns, bench_median(r->allocs, r->n));
	if (extra & EXTRA_LATENCY) {
		double p[4][64];

		for (unsigned k = 0; k < r->n; k++)
			for (int i = 0; i < 4; i++)
				p[i][k] = r->p[k][i];
		printf(" p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f", bench_median(p[0], r->n),
		       bench_median(p[1], r->n), bench_median(p[2], r->n), bench_median(p[3], r->n));
	}
	if (extra & EXTRA_WALL)
		printf(" wall_s=%.3f", ns * items / 1e9);
	if (sys != SYS_BLQ) {
		if (blq_ns > 0) /* 0: blq not run (--only) */
			printf(" blq_ratio=%.3f", blq_ns / ns);
	} else if (more != NULL)
		printf(" %s", more);
	printf(" rounds=%u\n", r->n);
	fflush(stdout);
}

/* Runs one workload over the systems in `mask`, round-robin, and prints a
 * line per system. Returns blq's median ns/item, or -1. */
static double workload(const char *name, bench_shape *s, const bench_shape *other_shape,
		       const blq_config *base, unsigned mask, unsigned rounds, int extra,
		       const char *more)
{
	result res[SYS_COUNT];

	if (mask == 0) { /* --only names a system this workload lacks */
		printf("# %s: no such system here (--only)\n", name);
		return 0;
	}
	memset(res, 0, sizeof(res));
	for (unsigned round = 0; round < rounds; round++) {
		for (int sys = 0; sys < SYS_COUNT; sys++) {
			result *r = &res[sys];
			const bench_shape *shape = sys == SYS_BLQ ? s : other_shape;

			if (!(mask & (1u << sys)))
				continue;
			if (run_one(sys, shape, base, &r->ns[r->n], &r->allocs[r->n]) != 0) {
				fprintf(stderr, "blq-bench: %s on %s failed to start\n", name,
					sys_names[sys]);
				return -1;
			}
			if (extra & EXTRA_LATENCY)
				percentiles(s->items, r->p[r->n]);
			r->n++;
		}
	}
	double blq_ns = res[SYS_BLQ].n ? bench_median(res[SYS_BLQ].ns, res[SYS_BLQ].n) : 0;
	for (int sys = 0; sys < SYS_COUNT; sys++)
		if (mask & (1u << sys))
			print_line(name, sys, &res[sys], blq_ns, extra, (double)s->items, more);
	return blq_ns;
}

/* The QoS queue of W1-QOS and IDLE-QOS: W1's 1024 items as three WRR
 * sub-queues of 320 (weights 250/600/150, a uniform evaluator) plus the
 * default egress of 64. */
static const blq_qos_subq qos_subqs[3] = {
	{.name = "high", .capacity = 320, .weight = 250},
	{.name = "medium", .capacity = 320, .weight = 600},
	{.name = "low", .capacity = 320, .weight = 150},
};
static const blq_qos_config qos3 = {.algo = BLQ_QOS_WRR,
				    .evaluator = {.kind = BLQ_QOS_EVAL_RANDOM},
				    .subqs = qos_subqs,
				    .nsubqs = 3};

/* IDLE-*: CPU used by a queue that has nothing to do, over 5 s, after a
 * burst of 5000 items (getrusage, whole process). */
static int idle_cpu(const char *name, blq_config c)
{
	struct rusage r0, r1;
	blq_error err;

	c.worker = idle_worker;
	blq *q = blq_new(&c, &err);
	if (q == NULL) {
		fprintf(stderr, "blq-bench: %s: %s\n", name, err.msg);
		return -1;
	}
	for (int i = 0; i < 5000; i++)
		blq_enqueue(q, NULL);
	blq_wait_idle(q, UINT64_MAX);
	getrusage(RUSAGE_SELF, &r0);
	uint64_t t0 = bench_now_ns();
	struct timespec five = {5, 0};
	nanosleep(&five, NULL);
	getrusage(RUSAGE_SELF, &r1);
	double wall = (double)(bench_now_ns() - t0) / 1e9;
	double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
		     (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
		     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
		     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	struct blq_stats st;
	blq_stats(q, &st);
	printf("BENCH %s blq cpu_pct=%.3f wall_s=%.2f workers_active=%u workers_asleep=%u\n", name,
	       100.0 * cpu / wall, wall, st.workers_active, st.workers_asleep);
	blq_free(q);
	return 0;
}

/* IDLE-BALANCED: a balanced queue, after a burst grew its pool. */
static int idle_balanced(void)
{
	blq_config c = {.name = "idle", .capacity = 1024, .workers_min = 1, .workers_max = 8};
	bench_shape s = {.producers = 1, .workers = 8, .items = 100000, .capacity = 1024,
			 .task = tiny_task};
	uint64_t burst_allocs;

	/* A burst first, so the pool has grown before it idles. */
	if (bench_run_blq(&s, &c, &burst_allocs) < 0)
		return -1;
	return idle_cpu("IDLE-BALANCED", c);
}

/* IDLE-QOS: W1-QOS's queue (2 workers, 1 egress thread) at rest. */
static int idle_qos(void)
{
	blq_config c = {.name = "idle-qos", .qos = &qos3, .workers = 2};

	return idle_cpu("IDLE-QOS", c);
}

/*
 * A variant of W1 against plain W1, run back to back in each round: the
 * line gives both medians and the median of the per-round ratios. On this
 * 2-vCPU machine whole runs swing between two speeds (how the scheduler
 * places 4 threads on 2 cores), so a ratio of medians taken minutes apart
 * measures the swing, not the variant; a pair shares its regime.
 */
static int paired_ratio(const char *name, const bench_shape *s, const blq_config *variant,
			const blq_config *plain, unsigned rounds)
{
	double with[64], without[64], ratio[64], a_with[64];
	uint64_t run_allocs;

	for (unsigned r = 0; r < rounds; r++) {
		int64_t t0 = bench_run_blq(s, plain, &run_allocs);
		int64_t t1 = bench_run_blq(s, variant, &run_allocs);
		if (t0 < 0 || t1 < 0)
			return -1;
		without[r] = (double)t0 / (double)s->items;
		with[r] = (double)t1 / (double)s->items;
		ratio[r] = with[r] / without[r];
		a_with[r] = (double)run_allocs / (double)s->items;
	}
	double w = bench_median(with, rounds);
	/* A pair may still straddle two regimes, and W1's slow regime is
	 * often slower than the variant's: the fastest round of each, both
	 * in their fast regime, is the other view of the cost. */
	double best_with = with[0], best_without = without[0];
	for (unsigned r = 1; r < rounds; r++) {
		best_with = with[r] < best_with ? with[r] : best_with;
		best_without = without[r] < best_without ? without[r] : best_without;
	}
	printf("BENCH %s blq ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g "
	       "w1_ns_per_item=%.1f w1_ratio=%.3f w1_best_ratio=%.3f rounds=%u\n",
	       name, w, 1e9 / w, bench_median(a_with, rounds), bench_median(without, rounds),
	       bench_median(ratio, rounds), best_with / best_without, rounds);
	return 0;
}

/* W1-BATCH: W1's items handed over in batches of 32 (blq_enqueue_batch),
 * each round beside the floor (bench_run_floor: the task bodies alone over
 * the cores) and, with --compare, the least handoff (bench_run_pairs, its
 * batch push). A line for the floor, then one per system with floor_ratio,
 * the median of the per-round ratios system / floor. */
static int w1_batch(size_t items, unsigned rounds, const blq_config *fixed, bool pairs)
{
	bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
			 .capacity = 1024, .task = tiny_task, .batch = 32};
	double batch[64], floor[64], ratio[64], alloc_rate[64], pair[64], pair_ratio[64];
	double pair_allocs[64];
	uint64_t run_allocs;

	for (unsigned r = 0; r < rounds; r++) {
		int64_t tf = bench_run_floor(&s);
		int64_t tb = bench_run_blq(&s, fixed, &run_allocs);
		if (tf < 0 || tb < 0 ||
		    (pairs && run_one(SYS_PAIRS, &s, fixed, &pair[r], &pair_allocs[r]) != 0))
			return -1;
		floor[r] = (double)tf / (double)s.items;
		batch[r] = (double)tb / (double)s.items;
		ratio[r] = batch[r] / floor[r];
		pair_ratio[r] = pairs ? pair[r] / floor[r] : 0;
		alloc_rate[r] = (double)run_allocs / (double)s.items;
	}
	double f = bench_median(floor, rounds), b = bench_median(batch, rounds);
	printf("BENCH W1 floor ns_per_item=%.1f items_per_s=%.0f threads=%ld rounds=%u\n", f,
	       1e9 / f, sysconf(_SC_NPROCESSORS_ONLN), rounds);
	printf("BENCH W1-BATCH blq ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g batch=%u "
	       "floor_ratio=%.3f rounds=%u\n",
	       b, 1e9 / b, bench_median(alloc_rate, rounds), s.batch, bench_median(ratio, rounds), rounds);
	if (pairs) {
		double p = bench_median(pair, rounds);

		printf("BENCH W1-BATCH pairs ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g "
		       "batch=%u floor_ratio=%.3f blq_ratio=%.3f rounds=%u\n",
		       p, 1e9 / p, bench_median(pair_allocs, rounds), s.batch, bench_median(pair_ratio, rounds),
		       b / p, rounds);
	}
	fflush(stdout);
	return 0;
}

/*
 * W1-MANY: W1's items, task, capacity and 2 workers, pushed by 64 producer
 * threads instead of 2 (each its items / 64 share): more producers than a
 * queue can give a lane each (issue #33). Every system of W1 and the floor
 * run round-robin as in workload(); blq's plain W1 runs just before its
 * W1-MANY in each round, so w1_ratio (median of the per-round ratios
 * W1-MANY / W1) compares two runs in the same regime of the host, as
 * paired_ratio does. The producers are the shared harness's
 * (baseline_producers.c), for blq and every baseline alike.
 */
#define W1_MANY_PRODUCERS 64

static int w1_many(size_t items, unsigned rounds, const blq_config *fixed, unsigned mask)
{
	size_t n = items ? items : 2000000;
	bench_shape s = {.producers = W1_MANY_PRODUCERS, .workers = 2,
			 .items = n - n % W1_MANY_PRODUCERS, /* equal shares */
			 .capacity = 1024, .task = tiny_task};
	bench_shape w1 = s;
	double w1_ns[64], ratio[64], a;
	result res[SYS_COUNT];

	w1.producers = 2; /* plain W1, with the same item count */
	if (mask == 0 || s.items == 0) {
		printf("# W1-MANY: no such system here (--only), or too few items\n");
		return 0;
	}
	memset(res, 0, sizeof(res));
	for (unsigned round = 0; round < rounds; round++)
		for (int sys = 0; sys < SYS_COUNT; sys++) {
			result *r = &res[sys];

			if (!(mask & (1u << sys)))
				continue;
			if ((sys == SYS_BLQ && run_one(SYS_BLQ, &w1, fixed, &w1_ns[r->n], &a) != 0) ||
			    run_one(sys, &s, fixed, &r->ns[r->n], &r->allocs[r->n]) != 0) {
				fprintf(stderr, "blq-bench: W1-MANY on %s failed to start\n",
					sys_names[sys]);
				return -1;
			}
			if (sys == SYS_BLQ)
				ratio[r->n] = r->ns[r->n] / w1_ns[r->n];
			r->n++;
		}
	result *b = &res[SYS_BLQ];
	double blq_ns = b->n ? bench_median(b->ns, b->n) : 0;
	char more[128];
	snprintf(more, sizeof(more), "producers=%u", s.producers);
	if (b->n) {
		double best = b->ns[0], best_w1 = w1_ns[0];
		for (unsigned r = 1; r < b->n; r++) {
			best = b->ns[r] < best ? b->ns[r] : best;
			best_w1 = w1_ns[r] < best_w1 ? w1_ns[r] : best_w1;
		}
		snprintf(more, sizeof(more),
			 "producers=%u w1_ns_per_item=%.1f w1_ratio=%.3f w1_best_ratio=%.3f",
			 s.producers, bench_median(w1_ns, b->n), bench_median(ratio, b->n), best / best_w1);
	}
	for (int sys = 0; sys < SYS_COUNT; sys++)
		if (mask & (1u << sys))
			print_line("W1-MANY", sys, &res[sys], blq_ns, EXTRA_NONE, (double)s.items,
				   more);
	return 0;
}

/* W1-SELF: plain W1 paired with itself, the control for the paired
 * ratios: how far this machine moves a ratio whose true value is 1. */
static int w1_self(size_t items, unsigned rounds)
{
	bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
			 .capacity = 1024, .task = tiny_task};
	blq_config plain = {.name = "bench"};

	return paired_ratio("W1-SELF", &s, &plain, &plain, rounds);
}

/* RETRY: every tenth payload fails its first attempt. */
static int fail_tenth_once(void *ctx, void *payload, blq_task *t)
{
	const bench_shape *s = ctx;

	s->task(payload);
	return (uintptr_t)payload % 10 == 0 && blq_task_attempt(t) == 1 ? -1 : 0;
}

/* RETRY: W1 where 10% of the items fail once and come back after a 1 ms
 * exponential backoff through the timer, paired with plain W1. The timer
 * holds up to 65536 items: at W1's pace ~2,000 retries wait at any time,
 * more than the default (the capacity, 1024) would take before retries
 * start skipping their backoff. */
static int retry_workload(size_t items, unsigned rounds)
{
	bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
			 .capacity = 1024, .task = tiny_task};
	blq_config plain = {.name = "bench"};
	blq_config retry = plain;

	retry.worker = fail_tenth_once;
	retry.max_retries = 1;
	retry.retry_interval_ns = 1000000;
	retry.backoff = BLQ_BACKOFF_EXPONENTIAL;
	retry.timer_capacity = 65536;
	return paired_ratio("RETRY", &s, &retry, &plain, rounds);
}

/* W1-QOS: W1 through qos3, paired with plain W1. */
static int w1_qos(size_t items, unsigned rounds)
{
	bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
			 .capacity = 1024, .task = tiny_task};
	blq_config plain = {.name = "bench"};
	blq_config qos = {.name = "bench", .qos = &qos3};

	return paired_ratio("W1-QOS", &s, &qos, &plain, rounds);
}

/* W1-PROM: W1 with the Prometheus writer attached, paired with plain W1. */
static int w1_prom(size_t items, unsigned rounds)
{
	bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
			 .capacity = 1024, .task = tiny_task};
	blq_config plain = {.name = "bench"};
	blq_prom *reg = blq_prom_new(NULL);
	blq_config prom = plain;

	if (reg == NULL || (prom.metrics = blq_prom_queue_writer(reg, "bench", NULL)) == NULL)
		return -1;
	int rc = paired_ratio("W1-PROM", &s, &prom, &plain, rounds);
	blq_prom_free(reg);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: blq-bench [--compare] [--only SYSTEM] [--rounds N] [--items N]\n"
		"                 [--redis HOST:PORT] [WORKLOAD...]\n"
		"\n"
		"Workloads (default: all):\n"
		"  W1   tiny tasks: 2 producers, 2,000,000 items, capacity 1024,\n"
		"       2 fixed workers, ~50 ns task body\n"
		"  W1-NOISY  W1 on a busy host: one CPU-bound thread per core (nice 0)\n"
		"       spins beside it for the whole run (noise_threads=); --compare\n"
		"       adds the floor under the same noise (line BENCH W1-NOISY floor)\n"
		"  W1-MANY  W1 from 64 producer threads (items / 64 each; --items is\n"
		"       rounded down to a multiple of 64); blq's plain W1 runs just before\n"
		"       it each round: w1_ratio = median of the round ratios W1-MANY / W1;\n"
		"       --compare adds GLib, the mutex pool, the ck ring and the floor\n"
		"  W1-BATCH  W1 with the producers handing over 32 items per call\n"
		"       (blq_enqueue_batch), each round beside the floor: the task body\n"
		"       alone on one thread per CPU (line BENCH W1 floor); floor_ratio;\n"
		"       --compare adds the least handoff (pairs) with its floor_ratio\n"
		"  W2   as W1 with a balanced pool, workers_min 1, workers_max 8\n"
		"       (--compare: GLib with max_threads 8), then W2-VS-W1: W2 and W1\n"
		"       back to back per round, w1_ratio = median of the round ratios\n"
		"  W3   latency: 1 producer paced at one item per 5 us, 200,000 items,\n"
		"       2 workers; enqueue-to-start p50/p90/p99/p99.9\n"
		"  W4   slow tasks: 20,000 items that each sleep 100 us, balanced 1..8,\n"
		"       default 1 s heartbeat (--compare: a fixed pool of 8 GLib threads)\n"
		"  IDLE-BALANCED  CPU of an idle balanced queue over 5 s (getrusage)\n"
		"  W1-PROM  W1 with the Prometheus writer attached, back to back with\n"
		"       plain W1 per round; w1_ratio = median of the round ratios\n"
		"  W1-SELF  W1 paired with itself: the noise of the paired ratios\n"
		"       on this machine (a true ratio of 1)\n"
		"  RETRY  W1 where 10%% of the items fail once and retry after a 1 ms\n"
		"       exponential backoff (timer_capacity 65536), paired with W1\n"
		"  W1-QOS   W1 through a QoS queue (3 WRR sub-queues of 320, egress 64,\n"
		"       1 egress thread, uniform evaluator), paired with plain W1 likewise\n"
		"  IDLE-QOS  CPU of that QoS queue at rest over 5 s, after a burst\n"
		"  SIDES  each side's cost per item alone: one thread fills a paused\n"
		"       queue of 4096, then its one worker drains it with a task that\n"
		"       does nothing, 500 times a round; with both on one CPU (cpus=one)\n"
		"       and free on two (cpus=two): enqueue_ns=.. drain_ns=..\n"
		"  DUMP-FS  dlqdump to files: 400,000 x 64 B and 50,000 x 1 KiB items\n"
		"       through a dump with 1 MiB batches, until fsync'd (mb_per_s=)\n"
		"  DUMP-REDIS  the same to a Redis stream (200,000 x 64 B, 50,000 x\n"
		"       1 KiB; needs --redis), beside redis-benchmark -t lpush with the\n"
		"       same count and size on the same server (blq_ratio=)\n"
		"  RESTORE-REDIS  restore from one Redis stream (200,000 x 64 B; needs\n"
		"       --redis) by 1, 2 and 3 restorer processes into their own\n"
		"       queues, until every item was processed (procs=, dups=)\n"
		"\n"
		"Options:\n"
		"  --compare   also run the other systems round-robin with blq and print\n"
		"              blq_ratio (blq ns/item divided by the other system's):\n"
		"              W1, W3, W1-MANY: GLib GThreadPool, a mutex+condvar pool, a raw\n"
		"              ck_ring, and the least handoff (pairs: a ring per producer\n"
		"              read by one worker, nothing else; W1-BATCH too)\n"
		"  --only SYSTEM[,SYSTEM...]  run only these (blq, glib, mutex, ckring,\n"
		"              pairs, floor) of the systems --compare would run, round-robin: one\n"
		"              per process for perf stat, or all but one; a workload with\n"
		"              none of them prints a # line; blq's paired, batch, idle and\n"
		"              dump workloads run only when blq is listed\n"
		"  --rounds N  rounds per system; lines give the median (default 5)\n"
		"  --items N   override the item count of W1, W2, W3, W1-MANY, DUMP-* and\n"
		"              RESTORE-*\n"
		"  --redis HOST:PORT  the server for DUMP-REDIS and RESTORE-REDIS (run\n"
		"              only when given)\n"
		"  --help      this text\n"
		"\n"
		"Output: BENCH <workload> <system> ns_per_item=.. items_per_s=..\n"
		"        allocs_per_item=.. [p50_us=.. p90_us=.. p99_us=.. p999_us=..]\n"
		"        [wall_s=..] [blq_ratio=..] rounds=..\n"
		"        W2-VS-W1, W1-PROM, W1-QOS, W1-SELF, RETRY and W1-MANY's blq line add\n"
		"        w1_ns_per_item=.. w1_ratio=.. w1_best_ratio=.. (fastest round over\n"
		"        fastest round); W1-MANY's blq line also producers=..\n"
		"        IDLE-*: BENCH IDLE-.. blq cpu_pct=.. (percent of one core)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"compare", no_argument, NULL, 'c'},
		{"rounds", required_argument, NULL, 'r'},
		{"items", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{"redis", required_argument, NULL, 'R'},
		{"only", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"W1",	"W2",	  "W3",	      "W4",
					    "IDLE-BALANCED", "W1-PROM", "W1-QOS", "IDLE-QOS",
					    "RETRY",	"DUMP-FS", "DUMP-REDIS", "W1-SELF",
					    "RESTORE-REDIS", "W1-NOISY", "W1-BATCH", "W1-MANY",
					    "SIDES"};
	enum { W1, W2, W3, W4, IDLE, W1PROM, W1QOS, IDLEQOS, RETRY, DUMPFS, DUMPREDIS, W1SELF,
	       RESTOREREDIS, W1NOISY, W1BATCH, W1MANY, SIDES, NWL };
	char redis_host[256] = "";
	int redis_port = 0;
	bool compare = false, want[NWL] = {false};
	unsigned rounds = 5;
	size_t items = 0;
	int c;
	unsigned only = 0; /* --only: a mask of systems, 0 when not given */

	/* A child of RESTORE-REDIS (bench_restore.c), before anything else. */
	if (argc > 1 && strcmp(argv[1], "--restore-child") == 0)
		return bench_restore_child(argc, argv);
	while ((c = getopt_long(argc, argv, "cr:i:h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'c':
			compare = true;
			break;
		case 'r':
			rounds = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || rounds == 0 || rounds > BENCH_ROUNDS_MAX) {
				fprintf(stderr, "blq-bench: --rounds: want 1..%u, got '%s'\n",
					BENCH_ROUNDS_MAX, optarg);
				return 2;
			}
			break;
		case 'i':
			items = (size_t)strtoull(optarg, &end, 10);
			if (*end != '\0' || items < 2 || items > 100000000) {
				fprintf(stderr, "blq-bench: --items: want 2..100000000, got '%s'\n",
					optarg);
				return 2;
			}
			items -= items % 2;
			break;
		case 'R': {
			const char *colon = strrchr(optarg, ':');
			redis_port = colon ? atoi(colon + 1) : 0;
			if (colon == NULL || colon == optarg || redis_port <= 0 ||
			    (size_t)(colon - optarg) >= sizeof(redis_host)) {
				fprintf(stderr, "blq-bench: --redis: want HOST:PORT, got '%s'\n",
					optarg);
				return 2;
			}
			snprintf(redis_host, sizeof(redis_host), "%.*s", (int)(colon - optarg),
				 optarg);
			break;
		}
		case 'o':
			for (char *tok = strtok(optarg, ","); tok != NULL; tok = strtok(NULL, ",")) {
				int k = SYS_COUNT;

				while (--k >= 0 && strcmp(tok, sys_names[k]) != 0)
					;
				if (k < 0) {
					fprintf(stderr, "blq-bench: --only: want blq, glib, mutex, "
							"ckring, pairs or floor (comma-separated), "
							"got '%s'\n",
						tok);
					return 2;
				}
				only |= 1u << k;
			}
			if (only == 0) {
				fprintf(stderr, "blq-bench: --only: no system given\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		int k = -1;

		for (int j = 0; j < NWL; j++)
			if (strcmp(argv[i], names[j]) == 0)
				k = j;
		if (k < 0) {
			fprintf(stderr, "blq-bench: unknown workload '%s' (see --help)\n", argv[i]);
			return 2;
		}
		want[k] = true;
	}
	if (optind == argc)
		for (int j = 0; j < NWL; j++)
			want[j] = true;

	/* Line-buffered: a stalled round ends the process (on_stall), and
	 * the lines of the workloads before it must be out by then. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_stall);
	calibrate();
	printf("# blq-bench: task body %u spin iterations (~50 ns), %u rounds%s", spin_iters, rounds,
	       compare ? ", compare" : "");
	for (int k = 0, first = 1; k < SYS_COUNT; k++)
		if (only & (1u << k)) {
			printf("%s%s", first ? ", only " : ",", sys_names[k]);
			first = 0;
		}
	printf("\n");
	/* all: every queue (the floor only where a workload asks for it). */
	const unsigned all = (1u << SYS_FLOOR) - 1, blq_only = 1u << SYS_BLQ,
		       blq_glib = blq_only | (1u << SYS_GLIB);
	/* --only S[,S...]: of the systems --compare would run, those alone:
	 * one per process for perf stat, or side by side without one that
	 * does not always finish on this host (the ck ring under W1-MANY's
	 * 64 producers: its MPMC push spins, never yielding, for a preempted
	 * earlier producer to publish). Workloads that are blq's alone (paired,
	 * batch, idle, dumps) run only when blq is among them. */
	const unsigned only_mask = only ? only : ~0u;
	const bool blq_runs = (only_mask & blq_only) != 0;
#define SYSTEMS(cmp) ((compare || only ? (cmp) : blq_only) & only_mask)
	blq_config fixed = {.name = "bench"};
	blq_config balanced = {.name = "bench", .workers_min = 1, .workers_max = 8};
	if (want[W1]) {
		bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
				 .capacity = 1024, .task = tiny_task};
		if (workload("W1", &s, &s, &fixed, SYSTEMS(all), rounds, EXTRA_NONE,
			     NULL) < 0)
			return 1;
	}
	if (want[W1NOISY]) {
		/* W1 on a busy host: the noise runs through every round of
		 * every system, so they share the same neighbour; and beside
		 * them the floor under that noise (the task bodies alone get
		 * only part of the cores too). */
		bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
				 .capacity = 1024, .task = tiny_task};
		int n = bench_noise_start();
		if (n < 0) {
			fprintf(stderr, "blq-bench: W1-NOISY: cannot start the noise threads\n");
			return 1;
		}
		char more[32];
		snprintf(more, sizeof(more), "noise_threads=%d", n);
		double r = workload("W1-NOISY", &s, &s, &fixed,
				    SYSTEMS(all | (1u << SYS_FLOOR)), rounds, EXTRA_NONE,
				    more);
		bench_noise_stop();
		/* What the noise threads took, for scripts/perf_stat.sh to take
		 * off its whole-process counts (counted after the last round). */
		uint64_t noise_cpu, noise_cs;
		bench_noise_usage(&noise_cpu, &noise_cs);
		printf("# W1-NOISY noise threads: task_clock_ns=%llu context_switches=%llu\n",
		       (unsigned long long)noise_cpu, (unsigned long long)noise_cs);
		if (r < 0)
			return 1;
	}
	if (want[W1BATCH] && blq_runs &&
	    w1_batch(items, rounds, &fixed, (SYSTEMS(all) & (1u << SYS_PAIRS)) != 0) != 0)
		return 1;
	if (want[W2]) {
		bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
				 .capacity = 1024, .task = tiny_task};
		bench_shape g = s;
		g.workers = 8; /* GLib: max_threads 8 */
		if (workload("W2", &s, &g, &balanced, SYSTEMS(blq_glib), rounds,
			     EXTRA_NONE, NULL) < 0)
			return 1;
		/* The ratio to W1: back-to-back pairs (see paired_ratio). */
		if (blq_runs && paired_ratio("W2-VS-W1", &s, &balanced, &fixed, rounds) != 0)
			return 1;
	}
	if (want[W3]) {
		bench_shape s = {.producers = 1, .workers = 2, .items = items ? items : 200000,
				 .capacity = 1024, .pace_ns = 5000, .task = latency_task,
				 .on_push = stamp_push};
		stamps = calloc(s.items, sizeof(uint64_t));
		latencies = calloc(s.items, sizeof(uint64_t));
		if (stamps == NULL || latencies == NULL)
			return 1;
		if (workload("W3", &s, &s, &fixed, SYSTEMS(all), rounds, EXTRA_LATENCY,
			     NULL) < 0)
			return 1;
		free(stamps);
		free(latencies);
	}
	if (want[W4]) {
		bench_shape s = {.producers = 1, .workers = 8, .items = 20000, .capacity = 1024,
				 .task = sleep_task};
		/* W4 is slow (~0.5 s a run): at most 3 rounds. */
		if (workload("W4", &s, &s, &balanced, SYSTEMS(blq_glib),
			     rounds < 3 ? rounds : 3, EXTRA_WALL, NULL) < 0)
			return 1;
	}
	if (want[IDLE] && blq_runs && idle_balanced() != 0)
		return 1;
	if (want[W1PROM] && blq_runs && w1_prom(items, rounds) != 0)
		return 1;
	if (want[W1QOS] && blq_runs && w1_qos(items, rounds) != 0)
		return 1;
	if (want[SIDES] && blq_runs && bench_sides(rounds) != 0)
		return 1;
	if (want[IDLEQOS] && blq_runs && idle_qos() != 0)
		return 1;
	if (want[W1SELF] && blq_runs && w1_self(items, rounds) != 0)
		return 1;
	if (want[RETRY] && blq_runs && retry_workload(items, rounds) != 0)
		return 1;
	/* Dumps write 20..50 MB a round: at most 3 rounds. */
	if (want[DUMPFS] && blq_runs && bench_dump_fs(items, rounds < 3 ? rounds : 3) != 0)
		return 1;
	if (want[DUMPREDIS] && blq_runs && redis_port > 0 &&
	    bench_dump_redis(redis_host, redis_port, items, rounds < 3 ? rounds : 3) != 0)
		return 1;
	if (want[RESTOREREDIS] && blq_runs && redis_port > 0 &&
	    bench_restore_redis("/proc/self/exe", redis_host, redis_port, items, rounds) != 0)
		return 1;
	/* Last, so a run of every workload runs the others as before it. */
	if (want[W1MANY] && w1_many(items, rounds, &fixed, SYSTEMS(all | (1u << SYS_FLOOR))) != 0)
		return 1;
	return 0;
}
