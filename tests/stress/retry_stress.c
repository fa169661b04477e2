/*
 * Stress for the timer paths: random failures with retries and backoff,
 * per-job delays, deadlines and timeouts (some callbacks poll their token,
 * some run past their limit without looking: the watchdog gives them up
 * and replaces their thread), a small timer now and then (so the
 * full-timer paths run), enqueue-and-wait callers that give up early,
 * items with a handle cancelled at once, a little later or never, and a
 * random close in each of seed 000's modes (Light, Soft, each with a short
 * limit or none, Hard) while the producers and the timer are busy; on
 * plain rings or QoS sub-queues
 * (due items then enter their sub-queue), with a fixed pool or a balanced
 * one that drops to zero threads between bursts (a 1-3 ms heartbeat).
 * Real clock, microsecond intervals. A round that does not finish its
 * close within 40 s says so and exits (a hang, not a slow machine).
 *
 * Every item carries an outcome counter: after the close each accepted
 * item must have exactly one outcome (processed by a worker, freed by the
 * queue, or taken by the DLQ), each refused one none, and
 * in == processed + failed + leaked + expired + lost + cancelled.
 *
 * A plain program (Criterion aborts under TSan): prints "N passed, N
 * failed" and exits non-zero on any failure.
 * Usage: retry_stress [rounds] [items-per-producer]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <blq/blq.h>

#include "stress_util.h"

#define PRODUCERS 3
#define MAGIC_LIVE 0xdeadu
#define MAGIC_TAKEN 0xbeefu
#define US 1000ull

typedef struct item {
	_Atomic unsigned magic;
	unsigned producer;
	uint64_t seq;
	_Atomic int running;  /* a worker is inside it: must stay 0 or 1 */
	_Atomic int outcomes; /* must end 1 when accepted, 0 when refused */
	bool accepted;
	unsigned pct; /* QoS: the percent the evaluator gives it */
} item;

typedef struct round_ctx {
	blq *q;
	item *items;
	uint64_t per;
	unsigned fail_pct;
	_Atomic uint64_t accepted, dlq_got, waited, cancels;
	_Atomic unsigned errors;
	unsigned seed;
} round_ctx;

static round_ctx *g_round;

static void fail_check(round_ctx *r, const char *what, const item *it)
{
	if (atomic_fetch_add(&r->errors, 1) < 10)
		fprintf(stderr, "retry_stress: %s (producer %u seq %" PRIu64 ")\n", what,
			it->producer, it->seq);
}

static void outcome(round_ctx *r, item *it)
{
	if (atomic_fetch_add(&it->outcomes, 1) != 0)
		fail_check(r, "an item reached a second outcome", it);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Returns 1 (failure: the queue keeps the payload) or 0 (processed). */
static int give_back(item *it, int rc)
{
	atomic_store(&it->magic, MAGIC_LIVE);
	atomic_fetch_sub(&it->running, 1);
	return rc;
}

static int worker(void *ctx, void *payload, blq_task *task)
{
	round_ctx *r = ctx;
	item *it = payload;
	unsigned seed = (unsigned)(uintptr_t)it ^ r->seed ^ blq_task_attempt(task);

	if (atomic_fetch_add(&it->running, 1) != 0)
		fail_check(r, "two workers ran one item at once", it);
	if (atomic_exchange(&it->magic, MAGIC_TAKEN) != MAGIC_LIVE)
		fail_check(r, "a worker got an item with a bad magic", it);
	if (blq_task_timeout_at_ns(task) != 0 && rand_r(&seed) % 5 == 0) {
		/* A stubborn one: runs past its limit without looking (the
		 * watchdog gives it up and starts a replacement), then claims
		 * the item; refused, it is the queue's. */
		uint64_t end = now_ns() + 300 * US;
		while (now_ns() < end)
			;
		if (!blq_task_claim(task))
			return give_back(it, rand_r(&seed) % 2);
	} else if (blq_task_timeout_at_ns(task) != 0 && rand_r(&seed) % 2 == 0) {
		/* A long one: poll the token until told (timeout or force). */
		uint64_t end = now_ns() + 2000 * US;
		while (!blq_task_cancelled(task) && now_ns() < end)
			;
		if (blq_task_timed_out(task))
			return give_back(it, rand_r(&seed) % 2); /* told: not ours either way */
		if (blq_task_cancelled(task))
			return give_back(it, 1);
	}
	if ((unsigned)rand_r(&seed) % 100 < r->fail_pct)
		return give_back(it, 1);
	/* Past its limit the watchdog may give the attempt up: claim the
	 * item before taking it (timeout_ns). */
	if (!blq_task_claim(task))
		return give_back(it, rand_r(&seed) % 2); /* given up: not ours either way */
	atomic_fetch_sub(&it->running, 1);
	outcome(r, it); /* processed: ours now */
	return 0;
}

static unsigned by_pct(void *ctx, void *payload, uint64_t weight)
{
	(void)ctx, (void)weight;
	return ((item *)payload)->pct;
}

static unsigned alarm_round;

static void on_alarm(int sig)
{
	char b[80];
	int n = snprintf(b, sizeof(b), "retry_stress: round %u: close hangs\n", alarm_round);

	(void)sig;
	if (write(2, b, (size_t)n) < 0)
		_exit(3);
	_exit(3);
}

static void item_free(void *payload)
{
	outcome(g_round, payload);
}

static int dlq_enqueue(void *self, void *payload)
{
	round_ctx *r = self;

	atomic_fetch_add(&r->dlq_got, 1);
	outcome(r, payload);
	return 0;
}

typedef struct producer_arg {
	round_ctx *r;
	unsigned index;
} producer_arg;

static void *producer(void *p)
{
	producer_arg *a = p;
	round_ctx *r = a->r;
	unsigned seed = r->seed * 31 + a->index;

	for (uint64_t i = 0; i < r->per; i++) {
		item *it = &r->items[a->index * r->per + i];
		blq_job j = {.payload = it};
		int rc;

		it->producer = a->index;
		it->seq = i;
		it->pct = 1 + (unsigned)rand_r(&seed) % 100;
		atomic_store(&it->magic, MAGIC_LIVE);
		if (rand_r(&seed) % 4 == 0)
			j.delay_ns = (uint64_t)(rand_r(&seed) % 300) * US;
		if (rand_r(&seed) % 5 == 0)
			j.deadline_ns = j.delay_ns + (uint64_t)(1 + rand_r(&seed) % 2000) * US;
		if (rand_r(&seed) % 6 == 0)
			j.timeout_ns = (uint64_t)(20 + rand_r(&seed) % 100) * US;
		switch (rand_r(&seed) % 8) {
		case 0: {
			/* Waits briefly, often gives up: the record outlives it. */
			enum blq_outcome o;
			rc = blq_enqueue_wait(r->q, &j, (uint64_t)(rand_r(&seed) % 200) * US, &o);
			if (rc == BLQ_ETIMEDOUT)
				rc = 0;
			else if (rc == 0)
				atomic_fetch_add(&r->waited, 1);
			break;
		}
		case 1:
			rc = j.delay_ns || j.deadline_ns || j.timeout_ns ? blq_enqueue_job(r->q, &j)
									 : blq_try_enqueue(r->q, it);
			break;
		case 2: {
			/* With a handle: cancelled at once (queued or delayed),
			 * a little later (often running), or never. */
			blq_handle *h;
			rc = blq_enqueue_job_handle(r->q, &j, &h);
			if (rc != 0)
				break;
			unsigned when = (unsigned)rand_r(&seed) % 3;
			if (when == 1) {
				struct timespec ts = {0, (long)(rand_r(&seed) % 100) * 1000L};
				nanosleep(&ts, NULL);
			}
			if (when != 2) {
				int c = blq_cancel(h);
				if (c == 0)
					atomic_fetch_add(&r->cancels, 1);
				else if (c != BLQ_EFINISHED)
					fail_check(r, "blq_cancel returned an unexpected code", it);
			}
			blq_handle_release(h);
			break;
		}
		default:
			rc = blq_enqueue_job(r->q, &j);
		}
		if (rc == 0) {
			it->accepted = true;
			atomic_fetch_add(&r->accepted, 1);
		} else if (rc != BLQ_ECLOSED && rc != BLQ_EFULL) {
			fail_check(r, "enqueue returned an unexpected code", it);
		}
	}
	return NULL;
}

static int run_round(unsigned round, uint64_t per)
{
	round_ctx *r = calloc(1, sizeof(*r));
	unsigned seed = (unsigned)time(NULL) ^ (round * 2654435761u);
	int closing = (int)(rand_r(&seed) % STRESS_NCLOSE);
	blq_config c = {0};
	blq_error err;

	r->per = per;
	r->seed = seed;
	r->items = calloc(PRODUCERS * per, sizeof(item));
	r->fail_pct = rand_r(&seed) % 30;
	g_round = r;

	c.name = "retry-stress";
	bool with_qos = round % 2, balanced = (round / 2) % 2;
	blq_qos_subq sq[3] = {
		{.name = "a", .capacity = 8 + rand_r(&seed) % 16, .weight = 3},
		{.name = "b", .capacity = 8, .weight = 2},
		{.name = "c", .capacity = 4, .weight = 1},
	};
	blq_qos_config qc = {
		.algo = (enum blq_qos_algo)(rand_r(&seed) % 3),
		.evaluator = {.kind = BLQ_QOS_EVAL_CUSTOM, .fn = by_pct},
		.subqs = sq,
		.nsubqs = 3,
		.egress = {.capacity = 4 + rand_r(&seed) % 16, .workers = 1 + rand_r(&seed) % 2},
	};
	if (with_qos)
		c.qos = &qc;
	else
		c.capacity = 16 + rand_r(&seed) % 64;
	if (balanced) {
		c.workers_min = 0;
		c.workers_max = 1 + rand_r(&seed) % 3;
		c.heartbeat_interval_ns = (1 + rand_r(&seed) % 3) * 1000000ull;
		c.sleep_interval_ns = 2000000;
	} else {
		c.workers = 1 + rand_r(&seed) % 4;
	}
	c.worker = worker;
	c.worker_ctx = r;
	c.item_free = item_free;
	c.max_retries = rand_r(&seed) % 4;
	/* 1 ms: retries queue up behind the head, and the workers serve the
	 * due ones themselves (timer.c, blq__timer_assist). */
	static const uint64_t intervals[] = {0, 20 * US, 1000 * US};
	c.retry_interval_ns = intervals[rand_r(&seed) % 3];
	if (c.retry_interval_ns) {
		c.backoff = BLQ_BACKOFF_EXPONENTIAL;
		/* Without jitter a worker's inbox is mostly in due order (the
		 * lane); with it, its entries go to the heap. */
		c.jitter = rand_r(&seed) % 2 ? BLQ_JITTER_FULL : BLQ_JITTER_NONE;
	}
	c.timer_capacity = rand_r(&seed) % 3 == 0 ? 8 : 0;
	if (round % 3 != 2) {
		c.dlq.enqueue = dlq_enqueue;
		c.dlq.self = r;
		c.fail_to_dlq = round % 2 == 0;
		c.deadline_to_dlq = round % 4 == 1;
		c.leak_direction = round % 2 ? BLQ_LEAK_FRONT : BLQ_LEAK_REAR;
	}
	r->q = blq_new(&c, &err);
	if (r->q == NULL) {
		fprintf(stderr, "retry_stress: blq_new: %s\n", err.msg);
		return 1;
	}

	pthread_t t[PRODUCERS];
	producer_arg args[PRODUCERS];
	for (unsigned i = 0; i < PRODUCERS; i++) {
		args[i] = (producer_arg){r, i};
		pthread_create(&t[i], NULL, producer, &args[i]);
	}
	bool drain_first = round % 4 == 3; /* close after every item is in */
	if (drain_first) {
		for (unsigned i = 0; i < PRODUCERS; i++)
			pthread_join(t[i], NULL);
	} else {
		/* While the producers run: the timer never holds more than its
		 * capacity (reservations never overshoot, inbox.c). */
		size_t limit = c.timer_capacity;
		unsigned looks = rand_r(&seed) % 30 * 5; /* 200 us each */
		for (unsigned i = 0; i < looks; i++) {
			struct blq_stats now;
			struct timespec ts = {0, 200000L};

			blq_stats(r->q, &now);
			if (now.delayed > (limit != 0 ? limit : now.capacity)) {
				fprintf(stderr, "retry_stress: round %u: delayed %" PRIu64
						" above the timer's capacity %zu\n",
					round, now.delayed, limit != 0 ? limit : now.capacity);
				atomic_fetch_add(&r->errors, 1);
				break;
			}
			nanosleep(&ts, NULL);
		}
	}
	alarm_round = round;
	alarm(40);
	const char *how = stress_close(r->q, closing, &seed);
	for (unsigned i = 0; i < PRODUCERS && !drain_first; i++)
		pthread_join(t[i], NULL);
	alarm(0);

	struct blq_stats s;
	blq_stats(r->q, &s);
	if (!stress_balanced("retry_stress", round, &s))
		atomic_fetch_add(&r->errors, 1);
	if (s.cancelled > atomic_load(&r->cancels)) {
		fprintf(stderr, "retry_stress: round %u: %" PRIu64 " cancelled, %" PRIu64
				" cancels\n",
			round, s.cancelled, atomic_load(&r->cancels));
		atomic_fetch_add(&r->errors, 1);
	}
	if (s.in != atomic_load(&r->accepted) || s.leaked != atomic_load(&r->dlq_got) ||
	    s.size != 0 || s.delayed != 0) {
		fprintf(stderr,
			"retry_stress: round %u: in %" PRIu64 " accepted %" PRIu64 " leaked %" PRIu64
			" dlq %" PRIu64 " size %zu delayed %" PRIu64 "\n",
			round, s.in, atomic_load(&r->accepted), s.leaked, atomic_load(&r->dlq_got),
			s.size, s.delayed);
		atomic_fetch_add(&r->errors, 1);
	}
	for (uint64_t i = 0; i < PRODUCERS * per; i++) {
		item *it = &r->items[i];

		if (atomic_load(&it->outcomes) != (it->accepted ? 1 : 0))
			fail_check(r, it->accepted ? "an accepted item has no single outcome"
						   : "a refused item reached an outcome",
				   it);
	}
	blq_free(r->q);
	unsigned errors = atomic_load(&r->errors);
	printf("round %2u: %s %s cap %3zu w %u retries %u %s %s %-7s fail %2u%% in %5" PRIu64
	       " processed %5" PRIu64 " failed %4" PRIu64 " leaked %5" PRIu64 " expired %4" PRIu64
	       " lost %4" PRIu64 " cancelled %3" PRIu64 " retried %5" PRIu64 " timed out %3" PRIu64
	       " -> %s\n",
	       round, with_qos ? "qos  " : "rings", balanced ? "balanced" : "fixed   ", s.capacity,
	       balanced ? c.workers_max : c.workers, c.max_retries, c.retry_interval_ns ? "backoff" : "direct",
	       c.dlq.enqueue ? "leaky" : "block",
	       how, r->fail_pct, s.in,
	       s.processed, s.failed, s.leaked, s.expired, s.lost, s.cancelled, s.retried,
	       s.timed_out,
	       errors ? "FAIL" : "ok");
	free(r->items);
	free(r);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	signal(SIGALRM, on_alarm);
	return stress_main(argc, argv, 20, 5000, run_round);
}
