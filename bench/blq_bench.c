/*
 * blq-bench: the DESIGN.md workloads, timed, with blq and (with --compare)
 * the other systems side by side in the same process and the same run.
 *
 * Every measurement prints one line scripts can read:
 *   BENCH <workload> <system> ns_per_item=<x> items_per_s=<y> allocs_per_item=<z> [k=v ...]
 * Rounds run the systems round-robin (blq, glib, mutex, ckring, blq, ...) so
 * a noisy neighbour hits them alike; the line gives the median round.
 *
 * Allocations are counted by interposing malloc and friends in this
 * executable. blq's figure covers only the window in which items flow
 * (after creation and thread start-up); the other systems' figures cover
 * their whole call, set-up included, which over 2,000,000 items adds
 * at most a few millionths per item.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blq/blq.h>

#include "baseline.h"
#include "bench_blq.h"

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

enum { SYS_BLQ, SYS_GLIB, SYS_MUTEX, SYS_CKRING, SYS_COUNT };
static const char *const sys_names[SYS_COUNT] = {"blq", "glib", "mutex", "ckring"};

typedef struct result {
	double ns[64];
	double allocs[64];
	double p[64][4]; /* W3: p50, p90, p99, p99.9 in us */
	unsigned n;
} result;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	double tmp[64];

	memcpy(tmp, v, n * sizeof(double));
	qsort(tmp, n, sizeof(double), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static int run_one(int sys, const bench_shape *s, const blq_config *base, double *ns,
		   double *allocs_per_item)
{
	uint64_t a0 = bench_allocs(), in_run = 0;
	int64_t t;

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
	default:
		t = bench_run_ckring(s);
		break;
	}
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

static void print_line(const char *wl, int sys, result *r, double blq_ns, bool latency)
{
	double ns = median(r->ns, r->n);

	printf("BENCH %s %s ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g", wl,
	       sys_names[sys], ns, 1e9 / ns, median(r->allocs, r->n));
	if (latency) {
		double p[4][64];

		for (unsigned k = 0; k < r->n; k++)
			for (int i = 0; i < 4; i++)
				p[i][k] = r->p[k][i];
		printf(" p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f", median(p[0], r->n),
		       median(p[1], r->n), median(p[2], r->n), median(p[3], r->n));
	}
	if (sys != SYS_BLQ)
		printf(" blq_ratio=%.3f", blq_ns / ns);
	printf(" rounds=%u\n", r->n);
	fflush(stdout);
}

/* Runs one workload over the chosen systems, round-robin, and prints a line
 * per system. */
static int workload(const char *name, bench_shape *s, const blq_config *base, bool compare,
		    unsigned rounds, bool latency)
{
	result res[SYS_COUNT];
	int nsys = compare ? SYS_COUNT : 1;

	memset(res, 0, sizeof(res));
	for (unsigned round = 0; round < rounds; round++) {
		for (int sys = 0; sys < nsys; sys++) {
			result *r = &res[sys];

			if (run_one(sys, s, base, &r->ns[r->n], &r->allocs[r->n]) != 0) {
				fprintf(stderr, "blq-bench: %s on %s failed to start\n", name,
					sys_names[sys]);
				return -1;
			}
			if (latency)
				percentiles(s->items, r->p[r->n]);
			r->n++;
		}
	}
	double blq_ns = median(res[SYS_BLQ].ns, res[SYS_BLQ].n);
	for (int sys = 0; sys < nsys; sys++)
		print_line(name, sys, &res[sys], blq_ns, latency);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: blq-bench [--compare] [--rounds N] [--items N] [WORKLOAD...]\n"
		"\n"
		"Workloads (default: all):\n"
		"  W1   tiny tasks: 2 producers, 2,000,000 items, capacity 1024,\n"
		"       2 fixed workers, ~50 ns task body\n"
		"  W3   latency: 1 producer paced at one item per 5 us, 200,000 items,\n"
		"       2 workers; enqueue-to-start p50/p90/p99/p99.9\n"
		"\n"
		"Options:\n"
		"  --compare   also run GLib GThreadPool, a mutex+condvar pool and a raw\n"
		"              ck_ring handoff, round-robin with blq, and print blq_ratio\n"
		"              (blq ns/item divided by the other system's)\n"
		"  --rounds N  rounds per system; lines give the median (default 5)\n"
		"  --items N   override the item count of every workload\n"
		"  --help      this text\n"
		"\n"
		"Output: BENCH <workload> <system> ns_per_item=.. items_per_s=..\n"
		"        allocs_per_item=.. [p50_us=.. p90_us=.. p99_us=.. p999_us=..]\n"
		"        [blq_ratio=..] rounds=..\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"compare", no_argument, NULL, 'c'},
		{"rounds", required_argument, NULL, 'r'},
		{"items", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool compare = false;
	unsigned rounds = 5;
	size_t items = 0;
	int c;

	while ((c = getopt_long(argc, argv, "cr:i:h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'c':
			compare = true;
			break;
		case 'r':
			rounds = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || rounds == 0 || rounds > 64) {
				fprintf(stderr, "blq-bench: --rounds: want 1..64, got '%s'\n", optarg);
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
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	bool want_w1 = optind == argc, want_w3 = optind == argc;
	for (int i = optind; i < argc; i++) {
		if (strcmp(argv[i], "W1") == 0)
			want_w1 = true;
		else if (strcmp(argv[i], "W3") == 0)
			want_w3 = true;
		else {
			fprintf(stderr, "blq-bench: unknown workload '%s' (see --help)\n", argv[i]);
			return 2;
		}
	}

	calibrate();
	printf("# blq-bench: task body %u spin iterations (~50 ns), %u rounds%s\n", spin_iters,
	       rounds, compare ? ", compare" : "");
	blq_config base = {.name = "bench"};

	if (want_w1) {
		bench_shape s = {.producers = 2, .workers = 2, .items = items ? items : 2000000,
				 .capacity = 1024, .task = tiny_task};
		if (workload("W1", &s, &base, compare, rounds, false) != 0)
			return 1;
	}
	if (want_w3) {
		bench_shape s = {.producers = 1, .workers = 2, .items = items ? items : 200000,
				 .capacity = 1024, .pace_ns = 5000, .task = latency_task,
				 .on_push = stamp_push};
		stamps = calloc(s.items, sizeof(uint64_t));
		latencies = calloc(s.items, sizeof(uint64_t));
		if (stamps == NULL || latencies == NULL)
			return 1;
		if (workload("W3", &s, &base, compare, rounds, true) != 0)
			return 1;
		free(stamps);
		free(latencies);
	}
	return 0;
}
