/*
 * Fuzz target for configuration validation: blq_new (include/blq/queue.h,
 * queue/config.c) with an optional QoS config (include/blq/qos.h,
 * qos/config.c) and an optional schedule (include/blq/schedule.h).
 * Configurations come from programs, configuration files and blq-demo's
 * HTTP API, so any values may reach blq_new; the project's rule is that a
 * bad one gets a clear error naming what is wrong, and a good one a queue
 * that keeps its accounting.
 *
 * The input is read field by field by a small byte reader (past its end
 * every byte reads 0, i.e. the defaults). Each number is picked from a
 * table of edge values (0, 1, 2, small, the documented bounds and bound
 * +-1, UINT32_MAX, SIZE_MAX/UINT64_MAX, one year +-1 ns, negative numbers
 * cast to unsigned, NaN/inf/-0 for factors) or taken raw from the input;
 * enums include out-of-range values. Pointer fields are never garbage:
 * each is NULL or a valid object or function of this file (a ctx without
 * its callback, a DLQ self without enqueue... are tried, as the header
 * says they are refused). Names come from the input: NULL, empty, 63/64
 * bytes, longer, any bytes (not UTF-8 too). The QoS config has 0..5
 * fuzzed sub-queues (or, rarely, 65 or a NULL array), fuzzed algorithm,
 * evaluator and egress; the schedule has 0..3 ranges of either kind.
 *
 * What must hold:
 *   - blq_new returns NULL with err.code BLQ_EINVAL, BLQ_ENOMEM or
 *     BLQ_ETHREAD and a non-empty, NUL-terminated err.msg; or a queue with
 *     err.code 0 and err.msg "". The same verdict, code and message with
 *     the library's own check (blq__config_check) alone, which also
 *     stands in for blq_new on configs accepted with a capacity or pool
 *     too large to build here (2^30 items: gigabytes); a refusal there is
 *     still asked of blq_new.
 *   - an accepted queue has the capacity the header promises (capacity,
 *     or with QoS the sum of the sub-queues and the egress), its name
 *     ("queue" for NULL) and its sub-queues. Accepted with long times
 *     (delays, deadlines, timeouts, backoffs above 2 ms) or many retries,
 *     it is freed and made again with those clamped (which must be
 *     accepted too) before the run.
 *   - the run: a few items (try-enqueue, blocking enqueue, jobs with a
 *     QoS weight, a batch), a worker that fails some attempts (retries,
 *     fail_to_dlq, timeouts with blq_task_claim), a DLQ that sometimes
 *     refuses, then one of the closes and blq_free. After the close, with
 *     workers_stuck 0: in = the items the enqueues took = processed +
 *     failed + leaked + expired + lost + cancelled, leaked = the sum of
 *     leaked_*, and this file's own counts agree: the worker's successes
 *     = processed, the DLQ's takes = leaked, item_free's calls = failed +
 *     expired + lost + cancelled, on_done's calls per outcome. Payloads
 *     are malloc'd when item_free is set, so ASan sees an item lost
 *     without its free (a leak) or freed twice.
 * Anything else aborts, so libFuzzer reports it and keeps the input;
 * libFuzzer's -timeout catches a hang.
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary (seeds
 * in corpus/queue_config), and as a normal test with fuzz_main.c
 * replaying the seeds. QCF_VERBOSE=1 in the environment prints each
 * verdict (the replay's way to see which field a seed hits).
 */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blq/dlq.h>
#include <blq/queue.h>
#include <blq/schedule.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The library's own check (queue/config.c), internal: reached through the
 * static library, to stand in for blq_new where building is too big. */
int blq__config_check(const blq_config *cfg, blq_error *err);

#define YEAR_NS (365ull * 24 * 3600 * 1000000000ull)
#define CAP_LIMIT (1ull << 30)
/* Larger than these: checked by blq__config_check only. */
#define BUILD_CAP_MAX 4096u
#define BUILD_THREADS_MAX 1100u
/* The run's clamps. */
#define RUN_NS_MAX 2000000ull
#define RUN_RETRIES_MAX 3u
#define MAX_ITEMS 12

/* ---- the byte reader ------------------------------------------------ */

typedef struct rd {
	const uint8_t *p;
	size_t n;
} rd;

static uint8_t u8(rd *r)
{
	if (r->n == 0)
		return 0;
	r->n--;
	return *r->p++;
}

static uint64_t raw(rd *r, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)u8(r) << (8 * i);
	return v;
}

static bool flag(rd *r)
{
	return u8(r) & 1;
}

/* A selector byte: below the table's size, that entry; the next 16
 * values a raw value of `bytes` bytes; the next 16 a small one (0..255);
 * the rest wrap back into the table. */
static uint64_t pick(rd *r, const uint64_t *tab, unsigned ntab, unsigned bytes)
{
	unsigned s = u8(r);
	if (s < ntab)
		return tab[s];
	if (s < ntab + 16)
		return raw(r, bytes);
	if (s < ntab + 32)
		return u8(r);
	return tab[s % ntab];
}

#define NT(t) ((unsigned)(sizeof(t) / sizeof((t)[0])))

static const uint64_t tab_size[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 16, 63, 64, 65, 100, 1000,
	CAP_LIMIT - 1, CAP_LIMIT, CAP_LIMIT + 1, UINT32_MAX, (uint64_t)SIZE_MAX,
	(uint64_t)SIZE_MAX - 1, (uint64_t)-1000,
};
static const uint64_t tab_uns[] = {
	0, 1, 2, 3, 4, 5, 8, 16, 63, 64, 65, 100, 1023, 1024, 1025,
	UINT32_MAX, UINT32_MAX - 1, (uint32_t)-10, 0x80000000u,
};
static const uint64_t tab_ns[] = {
	0, 1, 2, 3, 1000, 1000000, 2000000, 1000000000, 5000000000ull,
	YEAR_NS - 1, YEAR_NS, YEAR_NS + 1, UINT64_MAX, UINT64_MAX - 1,
	(uint64_t)-1000000000ll, (uint64_t)INT64_MAX, 1ull << 63,
};
static const uint64_t tab_retries[] = {
	0, 1, 2, 3, 5, 999999, 1000000, 1000001, UINT32_MAX, (uint32_t)-1 - 1,
};
static const uint64_t tab_u64[] = {
	0, 1, 2, 3, 50, 99, 100, 101, 250, 600, 1000, UINT32_MAX, UINT64_MAX,
	UINT64_MAX - 1, 1ull << 63,
};

static uint64_t ns(rd *r)
{
	return pick(r, tab_ns, NT(tab_ns), 8);
}

static unsigned uns(rd *r)
{
	return (unsigned)pick(r, tab_uns, NT(tab_uns), 4);
}

static size_t sz(rd *r)
{
	return (size_t)pick(r, tab_size, NT(tab_size), 8);
}

static double factor(rd *r)
{
	static const double tab[] = {
		0.0, 0.5, 0.75, 1.0, 0.25, 0.1, 0.9, -0.0, -1.0, 1.0000000000000002,
		0.9999999999999999, 2.0, 1e-300, 5e-324, -5e-324,
	};
	unsigned s = u8(r);
	if (s < NT(tab))
		return tab[s];
	switch (s % 8) {
	case 0:
		return NAN;
	case 1:
		return INFINITY;
	case 2:
		return -INFINITY;
	case 3: {
		uint64_t b = raw(r, 8);
		double d;
		memcpy(&d, &b, sizeof(d));
		return d;
	}
	default:
		return (s % 101) / 100.0;
	}
}

/* An enum's value: in range mostly, out of range sometimes (as int). */
static int en(rd *r, int max)
{
	unsigned s = u8(r);
	if (s < 200)
		return (int)(s % (unsigned)(max + 1));
	switch (s % 5) {
	case 0:
		return max + 1;
	case 1:
		return -1;
	case 2:
		return INT_MAX;
	case 3:
		return INT_MIN;
	default:
		return (int)(s - 100);
	}
}

/* A name into buf (cap >= 400): NULL, "", bytes from the input (any, up
 * to the first NUL), 63 / 64 / 300 bytes, or a fixed word. */
static const char *name(rd *r, char *buf, size_t cap, const char *word)
{
	unsigned s = u8(r);
	switch (s % 8) {
	case 0:
		return NULL;
	case 1:
		return "";
	case 2:
	case 3: {
		size_t n = u8(r) % 24, i;
		for (i = 0; i < n && i + 1 < cap; i++)
			buf[i] = (char)u8(r);
		buf[i] = '\0';
		return buf;
	}
	case 4:
	case 5: {
		size_t n = (s & 0x80) ? 64 : 63;
		if (s & 0x40)
			n = 300;
		memset(buf, (s & 0x20) ? 0xff : 'n', n);
		buf[n] = '\0';
		return buf;
	}
	case 6:
		return word;
	default:
		snprintf(buf, cap, "\xc3\x28q%u", s);
		return buf;
	}
}

/* ---- what the queue calls -------------------------------------------- */

/* A payload: how many attempts fail first (UINT32_MAX: all), the code. */
typedef struct item {
	unsigned fail_first;
	int rc;
} item;

static item static_items[MAX_ITEMS];

typedef struct run {
	bool malloced; /* payloads are malloc'd (item_free set) */
	atomic_ulong worked;       /* the worker returned 0 with the payload claimed */
	atomic_ulong freed;        /* item_free calls */
	atomic_ulong dlq_taken;    /* the counting DLQ took */
	atomic_ulong dlq_refused;  /* ... refused */
	atomic_ulong dlq_calls;
	unsigned dlq_refuse_every; /* 0: never */
	atomic_ulong done[8];      /* on_done per outcome */
	atomic_ulong evals;
} run;

static run R;

static int worker(void *ctx, void *payload, blq_task *task)
{
	(void)ctx;
	item *it = payload;
	unsigned fail_first = it->fail_first;
	int rc = it->rc;

	if (blq_task_attempt(task) <= fail_first && fail_first != 0)
		return rc != 0 ? rc : -1;
	if (!blq_task_claim(task))
		return 0; /* given up at its time limit: the queue's now */
	atomic_fetch_add(&R.worked, 1);
	if (R.malloced)
		free(payload);
	return 0;
}

static void counting_free(void *payload)
{
	atomic_fetch_add(&R.freed, 1);
	free(payload);
}

static int dlq_enqueue(void *self, void *payload)
{
	(void)self;
	unsigned long k = atomic_fetch_add(&R.dlq_calls, 1) + 1;
	if (R.dlq_refuse_every != 0 && k % R.dlq_refuse_every == 0) {
		atomic_fetch_add(&R.dlq_refused, 1);
		return BLQ_EREFUSED;
	}
	atomic_fetch_add(&R.dlq_taken, 1);
	if (R.malloced)
		free(payload);
	return 0;
}

static int dlq_enqueue_why(void *self, void *payload, const blq_dlq_why *why)
{
	CHECK(why != NULL);
	CHECK(memchr(why->queue, '\0', sizeof(why->queue)) != NULL);
	return dlq_enqueue(self, payload);
}

static int dlq_sync(void *self)
{
	(void)self;
	return 0;
}

static void on_done(void *ctx, void *payload, enum blq_outcome o)
{
	(void)ctx;
	(void)payload;
	CHECK(o >= BLQ_OUTCOME_PROCESSED && o <= BLQ_OUTCOME_CANCELLED);
	atomic_fetch_add(&R.done[o], 1);
}

static uint64_t backoff_fn(void *ctx, unsigned retry, uint64_t interval_ns)
{
	(void)ctx;
	(void)retry;
	return interval_ns < RUN_NS_MAX ? interval_ns : RUN_NS_MAX;
}

static uint64_t jitter_fn(void *ctx, uint64_t d, uint64_t prev_ns)
{
	(void)ctx;
	(void)prev_ns;
	return d / 2;
}

static unsigned eval_fn(void *ctx, void *payload, uint64_t weight)
{
	(void)ctx;
	(void)payload;
	atomic_fetch_add(&R.evals, 1);
	return (unsigned)(weight % 150);
}

static uint64_t now_fn(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void log_fn(void *ctx, int level, const char *fmt, va_list ap)
{
	(void)ctx;
	(void)level;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
}

static int some_ctx;

/* ---- decoding ---------------------------------------------------------- */

typedef struct decoded {
	blq_config cfg;
	blq_qos_config qos;
	blq_qos_subq subqs[BLQ_QOS_SUBQS_MAX + 1];
	char subq_names[6][400];
	char extra_names[BLQ_QOS_SUBQS_MAX + 1][16];
	char qname[400];
	blq_schedule *sched;
	blq_discard discard;
	int dlq_mode;
	bool has_qos;
} decoded;

static const char *const tod_ranges[] = {
	"00:00-12:00", "12:00-*", "*-06:00", "22:00-06:00", "*-*", "08:00:00.500-08:00:01",
	"10:00-10:00", "25:00-26:00", "11:00-13:00",
};
static const char *const rel_ranges[] = {
	"0s-1h", "1h-2h", "0ms-1ms", "30s-1m", "1m30s-2m", "2m-1m", "0s-5124095h34m33s709ms",
	"30m-90m",
};

static void decode_schedule(rd *r, decoded *d)
{
	unsigned n = u8(r) % 4; /* 0: an empty schedule, refused */
	bool relative = flag(r);

	d->sched = blq_schedule_new();
	CHECK(d->sched != NULL);
	for (unsigned i = 0; i < n; i++) {
		blq_schedule_params p = {
			.workers_min = (unsigned)pick(r, tab_uns, 6, 4),
			.workers_max = (unsigned)pick(r, tab_uns, NT(tab_uns), 4),
			.wakeup_factor = factor(r),
			.sleep_factor = factor(r),
		};
		bool rel = (u8(r) % 8 == 0) ? !relative : relative; /* mixing, sometimes */
		blq_error e;
		if (rel)
			(void)blq_schedule_add_relative(
				d->sched, rel_ranges[u8(r) % NT(rel_ranges)], &p, &e);
		else
			(void)blq_schedule_add(d->sched, tod_ranges[u8(r) % NT(tod_ranges)], &p,
					       &e);
	}
}

static void decode_qos(rd *r, decoded *d)
{
	blq_qos_config *q = &d->qos;
	static const char *const words[] = {"ingress", "egress", "high", "0", "1"};

	q->algo = (enum blq_qos_algo)en(r, BLQ_QOS_WRR);
	q->evaluator.kind = (enum blq_qos_eval_kind)en(r, BLQ_QOS_EVAL_CUSTOM);
	if (u8(r) % 4 == 0)
		q->evaluator.kind = BLQ_QOS_EVAL_WEIGHTED;
	q->evaluator.max = pick(r, tab_u64, NT(tab_u64), 8);
	q->evaluator.def = (unsigned)pick(r, tab_u64, NT(tab_u64), 4);
	unsigned ptrs = u8(r);
	q->evaluator.fn = (ptrs & 1) ? eval_fn : NULL;
	q->evaluator.ctx = (ptrs & 2) ? &some_ctx : NULL;
	q->egress.capacity = (size_t)pick(r, tab_size, NT(tab_size), 8);
	q->egress.streams = uns(r);
	q->egress.workers = (unsigned)pick(r, tab_uns, 13, 4); /* up to 100 */
	q->egress.idle_threshold = uns(r);
	q->egress.idle_timeout_ns = ns(r);

	unsigned s = u8(r);
	unsigned n = s % 6;
	if (s >= 250)
		n = s == 255 ? BLQ_QOS_SUBQS_MAX + 1 : BLQ_QOS_SUBQS_MAX;
	for (unsigned i = 0; i < n && i < 6; i++) {
		blq_qos_subq *sq = &d->subqs[i];
		const char *w = words[u8(r) % NT(words)];
		sq->name = name(r, d->subq_names[i], sizeof(d->subq_names[i]), w);
		if (i > 0 && u8(r) % 8 == 0)
			sq->name = d->subqs[i - 1].name; /* a duplicate */
		sq->capacity = sz(r);
		if (u8(r) % 2)
			sq->capacity = 1 + u8(r) % 8;
		sq->weight = pick(r, tab_u64, NT(tab_u64), 8);
		sq->ingress_weight = pick(r, tab_u64, NT(tab_u64), 8);
		sq->egress_weight = pick(r, tab_u64, NT(tab_u64), 8);
	}
	/* The many-sub-queue cases: valid fillers past the fuzzed ones. */
	for (unsigned i = 6; i < n; i++) {
		snprintf(d->extra_names[i], sizeof(d->extra_names[i]), "x%u", i);
		d->subqs[i] = (blq_qos_subq){.name = d->extra_names[i], .capacity = 1, .weight = 1};
	}
	q->nsubqs = n;
	q->subqs = d->subqs;
	if (u8(r) % 16 == 0)
		q->subqs = NULL;
	if (u8(r) % 16 == 0)
		q->nsubqs = 0;
}

/* The QoS capacity the header promises: the sub-queues' plus the
 * egress's (default 64); saturated. */
static uint64_t qos_sum(const blq_qos_config *q)
{
	uint64_t sum = q->egress.capacity != 0 ? q->egress.capacity : 64;
	for (unsigned i = 0; q->subqs != NULL && i < q->nsubqs; i++) {
		uint64_t c = q->subqs[i].capacity;
		sum = sum + c < sum ? UINT64_MAX : sum + c;
	}
	return sum;
}

static void decode(rd *r, decoded *d)
{
	blq_config *c = &d->cfg;
	unsigned u;

	c->name = name(r, d->qname, sizeof(d->qname), "q");
	c->capacity = sz(r);
	c->streams = (unsigned)pick(r, tab_uns, NT(tab_uns), 4);
	if (u8(r) % 8 == 0)
		c->streams = (unsigned)c->capacity + (u8(r) & 1);
	c->worker = (u8(r) % 32 == 0) ? NULL : worker;
	c->worker_ctx = flag(r) ? &some_ctx : NULL;
	c->item_free = flag(r) ? counting_free : NULL;

	u = u8(r);
	if (u % 3 == 0) {
		c->workers = (unsigned)pick(r, tab_uns, NT(tab_uns), 4);
	} else {
		c->workers_min = (unsigned)pick(r, tab_uns, NT(tab_uns), 4);
		c->workers_max = (unsigned)pick(r, tab_uns, NT(tab_uns), 4);
		if (u % 3 == 1)
			c->workers = (unsigned)pick(r, tab_uns, 4, 4); /* both, sometimes */
	}
	c->wakeup_factor = factor(r);
	c->sleep_factor = factor(r);
	c->sleep_threshold = uns(r);
	c->sleep_interval_ns = ns(r);
	c->heartbeat_interval_ns = ns(r);
	c->force_calibration_limit = uns(r);

	c->max_retries = (unsigned)pick(r, tab_retries, NT(tab_retries), 4);
	c->retry_interval_ns = ns(r);
	c->retry_max_interval_ns = ns(r);
	c->backoff = (enum blq_backoff)en(r, BLQ_BACKOFF_CUSTOM);
	c->jitter = (enum blq_jitter)en(r, BLQ_JITTER_CUSTOM);
	u = u8(r);
	/* The custom callbacks follow their kinds mostly; not always. */
	bool bf = c->backoff == BLQ_BACKOFF_CUSTOM, jf = c->jitter == BLQ_JITTER_CUSTOM;
	if (u & 1)
		bf = !bf;
	if (u & 2)
		jf = !jf;
	if ((u & 0x0c) == 0) {
		c->backoff_fn = bf ? backoff_fn : NULL;
		c->jitter_fn = jf ? jitter_fn : NULL;
	} else {
		c->backoff_fn = c->backoff == BLQ_BACKOFF_CUSTOM ? backoff_fn : NULL;
		c->jitter_fn = c->jitter == BLQ_JITTER_CUSTOM ? jitter_fn : NULL;
	}
	c->backoff_ctx = (u & 0x10) ? &some_ctx : NULL;
	c->jitter_ctx = (u & 0x20) ? &some_ctx : NULL;
	if (c->jitter == BLQ_JITTER_DECORRELATED || (u & 0x40)) {
		c->jitter_min_ns = ns(r);
		c->jitter_max_ns = ns(r);
	}
	c->timer_capacity = sz(r);

	u = u8(r);
	d->dlq_mode = u % 6;
	switch (d->dlq_mode) {
	case 1: /* counting, maybe refusing */
	case 2:
		c->dlq.enqueue = dlq_enqueue;
		c->dlq.self = (u & 8) ? &some_ctx : NULL;
		c->dlq.enqueue_why = d->dlq_mode == 2 ? dlq_enqueue_why : NULL;
		c->dlq.sync = (u & 16) ? dlq_sync : NULL;
		R.dlq_refuse_every = (u >> 5) % 4; /* 0: never; 1: always; 2, 3 */
		break;
	case 3: /* the discard DLQ, counting through item_free */
		blq_discard_init(&d->discard, NULL);
		c->dlq = blq_discard_enqueuer(&d->discard);
		break;
	case 4: /* self without enqueue: refused */
		c->dlq.self = &some_ctx;
		break;
	case 5: /* enqueue_why without enqueue: refused */
		if (u & 8)
			c->dlq.enqueue_why = dlq_enqueue_why;
		break;
	default:
		break;
	}
	u = u8(r);
	c->fail_to_dlq = u & 1;
	c->deadline_to_dlq = u & 2;
	c->stamp_enqueue_time = u & 4;
	c->leak_direction = (enum blq_leak_dir)en(r, 1);
	c->front_leak_attempts = uns(r);

	c->delay_interval_ns = ns(r);
	c->deadline_interval_ns = ns(r);
	c->timeout_ns = ns(r);
	if (u & 8) { /* tiny, usable times, most often */
		c->delay_interval_ns %= 3000;
		c->deadline_interval_ns %= 5000000;
		c->timeout_ns %= 5000000;
	}

	u = u8(r);
	switch (u % 4) {
	case 1:
		c->clock.now_ns = now_fn;
		break;
	case 2:
		c->clock.ctx = &some_ctx; /* without callbacks: refused */
		break;
	case 3:
		c->clock.now_ns = now_fn;
		c->clock.ctx = &some_ctx;
		break;
	default:
		break;
	}
	switch ((u >> 2) % 4) {
	case 1:
		c->logger.log = log_fn;
		c->logger.level = (int)(u >> 4) - 4;
		break;
	case 2:
		c->logger.ctx = &some_ctx; /* refused */
		break;
	default:
		break;
	}
	switch ((u >> 4) % 4) {
	case 1:
	case 3:
		c->on_done.fn = on_done;
		break;
	case 2:
		c->on_done.ctx = &some_ctx; /* refused */
		break;
	default:
		break;
	}
	if (u & 0x40)
		c->on_done.ctx = (u & 0x80) ? &some_ctx : NULL;
	/* metrics: NULL (a writer's own contract is its fuzz target's). */

	u = u8(r);
	if (u & 1) {
		d->has_qos = true;
		decode_qos(r, d);
		c->qos = &d->qos;
		switch ((u >> 1) % 4) { /* capacity: 0, the sum, the sum +- 1 */
		case 0:
			c->capacity = 0;
			break;
		case 1:
			c->capacity = (size_t)qos_sum(&d->qos);
			break;
		case 2:
			c->capacity = (size_t)qos_sum(&d->qos) + 1;
			break;
		default:
			break; /* the fuzzed one */
		}
		if ((u >> 3) & 1)
			c->streams = 0;
	}
	if (u & 0x20) {
		decode_schedule(r, d);
		c->schedule = d->sched;
	}
}

/* Too big to build here (gigabytes, or over a thousand threads). */
static bool too_big(const decoded *d)
{
	const blq_config *c = &d->cfg;
	uint64_t cap = c->capacity;
	if (d->has_qos)
		cap = qos_sum(&d->qos);
	if (cap > BUILD_CAP_MAX)
		return true;
	if (d->has_qos && d->qos.subqs != NULL && d->qos.nsubqs > 0 && d->qos.nsubqs <= 6) {
		for (unsigned i = 0; i < d->qos.nsubqs; i++)
			if (d->qos.subqs[i].capacity > BUILD_CAP_MAX)
				return true;
	}
	if (c->workers > BUILD_THREADS_MAX || c->workers_min > BUILD_THREADS_MAX)
		return true;
	return false;
}

static bool clamp_ns(uint64_t *v)
{
	if (*v <= RUN_NS_MAX)
		return false;
	*v = RUN_NS_MAX;
	return true;
}

/* The run's copy: long times and many retries cut down. True when it
 * differs from the original. */
static bool clamp(blq_config *c)
{
	bool changed = false;
	changed |= clamp_ns(&c->retry_interval_ns);
	changed |= clamp_ns(&c->retry_max_interval_ns);
	changed |= clamp_ns(&c->jitter_min_ns);
	changed |= clamp_ns(&c->jitter_max_ns);
	changed |= clamp_ns(&c->delay_interval_ns);
	changed |= clamp_ns(&c->deadline_interval_ns);
	changed |= clamp_ns(&c->timeout_ns);
	if (c->deadline_interval_ns != 0 && c->deadline_interval_ns <= c->delay_interval_ns) {
		c->deadline_interval_ns = c->delay_interval_ns + 1;
		changed = true;
	}
	if (c->max_retries > RUN_RETRIES_MAX) {
		c->max_retries = RUN_RETRIES_MAX;
		changed = true;
	}
	return changed;
}

static bool verbose(void)
{
	static int v = -1;
	if (v < 0) {
		const char *e = getenv("QCF_VERBOSE");
		v = e != NULL && e[0] == '1';
	}
	return v == 1;
}

static void check_refusal(const blq_error *e)
{
	CHECK(e->code == BLQ_EINVAL || e->code == BLQ_ENOMEM || e->code == BLQ_ETHREAD);
	CHECK(memchr(e->msg, '\0', sizeof(e->msg)) != NULL);
	CHECK(e->msg[0] != '\0');
}

/* ---- the run ------------------------------------------------------------ */

static void *new_payload(rd *r, unsigned i)
{
	item *it;
	if (R.malloced) {
		it = malloc(sizeof(*it));
		CHECK(it != NULL);
	} else {
		it = &static_items[i];
	}
	unsigned s = u8(r);
	it->fail_first = (s & 3) == 0 ? 0 : (s & 3) == 3 ? UINT32_MAX : (s & 3);
	it->rc = (s & 4) ? BLQ_EIO : 7;
	return it;
}

static void drop_payload(void *p)
{
	if (R.malloced)
		free(p);
}

static void run_queue(rd *r, blq *q, const decoded *d)
{
	const blq_config *c = &d->cfg;
	unsigned n = u8(r) % (MAX_ITEMS + 1);
	uint64_t taken = 0;

	for (unsigned i = 0; i < n; i++) {
		void *p = new_payload(r, i);
		unsigned how = u8(r);
		int rc;
		switch (how % 5) {
		case 0:
		case 1:
			rc = blq_try_enqueue(q, p);
			CHECK(rc == 0 || rc == BLQ_EFULL);
			break;
		case 2: /* a blocking enqueue: the workers make room */
			rc = blq_enqueue(q, p);
			CHECK(rc == 0);
			break;
		case 3: {
			blq_job job = {
				.payload = p,
				.weight = pick(r, tab_u64, NT(tab_u64), 8),
				.delay_ns = (how & 8) ? u8(r) * 1000u : 0,
				.deadline_ns = (how & 16) ? 3000000u + u8(r) : 0,
				.timeout_ns = (how & 32) ? 1000000u : 0,
			};
			/* The job's intervals override the config's; a deadline
			 * not after the delay is refused (blq_enqueue_job). */
			uint64_t delay = job.delay_ns != 0 ? job.delay_ns : c->delay_interval_ns;
			uint64_t deadline =
				job.deadline_ns != 0 ? job.deadline_ns : c->deadline_interval_ns;
			bool bad = deadline != 0 && deadline <= delay;
			rc = blq_try_enqueue_job(q, &job);
			if (verbose() && rc != 0)
				fprintf(stderr, "  job: delay %llu deadline %llu: %d\n",
					(unsigned long long)delay, (unsigned long long)deadline, rc);
			if (bad)
				CHECK(rc == BLQ_EINVAL);
			else
				CHECK(rc == 0 || rc == BLQ_EFULL);
			break;
		}
		default: {
			void *one[1] = {p};
			ssize_t k = blq_try_enqueue_batch(q, one, 1);
			CHECK(k == 1 || k == BLQ_EFULL);
			rc = k == 1 ? 0 : (int)k;
			break;
		}
		}
		if (rc == 0)
			taken++;
		else
			drop_payload(p);
	}

	unsigned mode = u8(r) % 5;
	int rc;
	switch (mode) {
	case 0:
		rc = blq_close(q);
		CHECK(rc == 0);
		break;
	case 1:
		rc = blq_close_soft(q);
		CHECK(rc == 0);
		break;
	case 2:
		rc = blq_force_close(q);
		CHECK(rc == 0);
		break;
	case 3:
		rc = blq_close_timeout(q, 1000000);
		CHECK(rc == 0 || rc == BLQ_ETIMEDOUT);
		break;
	default:
		rc = blq_close_soft_timeout(q, 1000000);
		CHECK(rc == 0 || rc == BLQ_ETIMEDOUT);
		break;
	}

	struct blq_stats st;
	for (int t = 0;; t++) {
		CHECK(blq_stats(q, &st) == 0);
		if (st.workers_stuck == 0)
			break;
		CHECK(t < 5000); /* 5 s */
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	CHECK(blq_try_enqueue(q, &static_items[0]) == BLQ_ECLOSED);

	if (verbose())
		fprintf(stderr,
			"  run: close %u in %llu processed %llu failed %llu leaked %llu expired %llu "
			"lost %llu cancelled %llu retried %llu timed_out %llu\n",
			mode, (unsigned long long)st.in, (unsigned long long)st.processed,
			(unsigned long long)st.failed, (unsigned long long)st.leaked,
			(unsigned long long)st.expired, (unsigned long long)st.lost,
			(unsigned long long)st.cancelled, (unsigned long long)st.retried,
			(unsigned long long)st.timed_out);
	CHECK(st.in == taken);
	CHECK(st.in == st.processed + st.failed + st.leaked + st.expired + st.lost + st.cancelled);
	CHECK(st.leaked == st.leaked_rear + st.leaked_front + st.leaked_failed +
				   st.leaked_deadline + st.leaked_closed);
	CHECK(st.cancelled == 0); /* no handles here */
	CHECK(st.size == 0);
	CHECK(st.delayed == 0);
	CHECK(st.capacity == blq_capacity(q));
	CHECK(atomic_load(&R.worked) == st.processed);
	if (c->dlq.enqueue == dlq_enqueue) {
		CHECK(atomic_load(&R.dlq_taken) == st.leaked);
	} else if (d->dlq_mode == 3) {
		CHECK(blq_discard_count(&d->discard) == st.leaked);
	} else {
		CHECK(st.leaked == 0);
	}
	if (c->item_free != NULL)
		CHECK(atomic_load(&R.freed) == st.failed + st.expired + st.lost + st.cancelled);
	if (c->on_done.fn != NULL) {
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_PROCESSED]) == st.processed);
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_FAILED]) +
			      atomic_load(&R.done[BLQ_OUTCOME_TIMED_OUT]) ==
		      st.failed);
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_LEAKED]) == st.leaked);
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_EXPIRED]) == st.expired);
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_LOST]) == st.lost);
		CHECK(atomic_load(&R.done[BLQ_OUTCOME_CANCELLED]) == 0);
	}
	if (c->dlq.enqueue == NULL) {
		CHECK(st.leaked == 0);
	}
	if (!c->fail_to_dlq)
		CHECK(st.leaked_failed == 0 || c->max_retries > 0);
	if (!c->deadline_to_dlq)
		CHECK(st.leaked_deadline == 0);
}

static void reset_run(bool malloced)
{
	unsigned every = R.dlq_refuse_every;
	memset(&R, 0, sizeof(R));
	R.malloced = malloced;
	R.dlq_refuse_every = every;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rd r = {data, size};
	static decoded d;

	memset(&d, 0, sizeof(d));
	R.dlq_refuse_every = 0;
	decode(&r, &d);
	reset_run(d.cfg.item_free != NULL);
	/* The discard DLQ frees with item_free in the malloc'd mode. */
	if (d.dlq_mode == 3 && R.malloced)
		d.discard.item_free = free;

	/* The library's check alone first: the verdict blq_new must give. */
	blq_error pre;
	memset(&pre, 0x5a, sizeof(pre));
	int prc = blq__config_check(&d.cfg, &pre);
	if (prc != 0)
		check_refusal(&pre);
	else
		CHECK(pre.code == 0 || pre.code == 0x5a5a5a5a); /* untouched or cleared */

	bool big = too_big(&d);
	if (verbose())
		fprintf(stderr, "config: %s%s\n", prc == 0 ? "accepted" : pre.msg,
			big ? " (too big to build)" : "");
	if (prc == 0 && big)
		goto out;

	blq_error err;
	memset(&err, 0x5a, sizeof(err));
	blq *q = blq_new(&d.cfg, &err);
	if (q == NULL) {
		check_refusal(&err);
		if (prc != 0) {
			CHECK(err.code == pre.code);
			CHECK(strcmp(err.msg, pre.msg) == 0);
		} else {
			CHECK(err.code != BLQ_EINVAL); /* a resource, not the config */
		}
		goto out;
	}
	CHECK(prc == 0);
	CHECK(err.code == BLQ_OK);
	CHECK(err.msg[0] == '\0');
	/* What the header promises of an accepted config. */
	CHECK(strcmp(blq_name(q), d.cfg.name != NULL ? d.cfg.name : "queue") == 0);
	if (d.has_qos) {
		CHECK(blq_capacity(q) == qos_sum(&d.qos));
		CHECK(blq_qos_subqs(q) == d.qos.nsubqs);
		for (unsigned i = 0; i < d.qos.nsubqs; i++) {
			blq_qos_subq_stats ss;
			CHECK(blq_qos_subq_info(q, i, &ss) == 0);
			CHECK(ss.capacity == d.qos.subqs[i].capacity);
			CHECK(ss.name != NULL && ss.name[0] != '\0');
		}
	} else {
		CHECK(blq_capacity(q) == d.cfg.capacity);
		CHECK(blq_qos_subqs(q) == 0);
	}

	blq_config run_cfg = d.cfg;
	if (clamp(&run_cfg)) {
		CHECK(blq_free(q) == 0);
		memset(&err, 0x5a, sizeof(err));
		q = blq_new(&run_cfg, &err);
		if (q == NULL) {
			fprintf(stderr, "clamped config refused: %s\n", err.msg);
			check_refusal(&err);
			CHECK(err.code != BLQ_EINVAL);
			goto out;
		}
		d.cfg = run_cfg;
	}
	run_queue(&r, q, &d);
	CHECK(blq_free(q) == 0);
out:
	blq_schedule_free(d.sched);
	return 0;
}
