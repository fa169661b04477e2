/*
 * leaky_burst: pushes a burst of load through a leaky queue and shows what
 * happens, one status line a second, then the final accounting.
 *
 * The main queue (capacity 10,000, 2 workers of ~20 us each) cannot keep up
 * with a producer that pushes as fast as it can for `seconds`; its overflow
 * leaks into a second queue (the DLQ, 1 slow worker), whose own overflow is
 * discarded and counted. Nothing blocks the producer; nothing is lost
 * uncounted.
 *
 * Usage: leaky_burst [seconds]   (default 3)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <blq/blq.h>

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};

	nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A payload: a heap-allocated number; whoever ends with it frees it. */
static int work(void *ctx, void *payload, blq_task *task)
{
	long ns = *(long *)ctx;

	(void)task;
	sleep_ns(ns);
	free(payload);
	return 0;
}

typedef struct producer {
	blq *q;
	uint64_t until_ns;
	atomic_bool done;
} producer;

static void *produce(void *arg)
{
	producer *p = arg;

	for (uint64_t i = 0; now_ns() < p->until_ns; i++) {
		uint64_t *v = malloc(sizeof(*v));

		*v = i;
		if (blq_enqueue(p->q, v) != 0)
			free(v); /* refused: still ours */
		if (i % 64 == 0)
			sleep_ns(20000); /* ~3 million items a second is plenty */
	}
	atomic_store(&p->done, true);
	return NULL;
}

static void line(const char *when, blq *q)
{
	struct blq_stats s;

	blq_stats(q, &s);
	printf("%-6s %-8s size %6zu rate %.2f workers %u  in %8llu processed %8llu leaked %8llu lost %llu\n",
	       when, blq_name(q), s.size, (double)s.size / (double)s.capacity, s.workers_active,
	       (unsigned long long)s.in, (unsigned long long)s.processed,
	       (unsigned long long)s.leaked, (unsigned long long)s.lost);
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 3;
	long main_ns = 20000, dlq_ns = 50000;
	blq_discard discard;
	blq_error err;

	if (seconds < 1 || seconds > 3600) {
		fprintf(stderr, "leaky_burst: seconds: want 1..3600, got '%s'\n", argv[1]);
		return 2;
	}
	blq_discard_init(&discard, free);
	blq_config dc = {.name = "overflow", .capacity = 1000, .workers = 1, .worker = work,
			 .worker_ctx = &dlq_ns, .item_free = free,
			 .dlq = blq_discard_enqueuer(&discard)};
	blq *dlq = blq_new(&dc, &err);
	if (dlq == NULL) {
		fprintf(stderr, "leaky_burst: %s\n", err.msg);
		return 1;
	}
	blq_config mc = {.name = "main", .capacity = 10000, .workers = 2, .worker = work,
			 .worker_ctx = &main_ns, .item_free = free, .dlq = blq_as_enqueuer(dlq)};
	blq *q = blq_new(&mc, &err);
	if (q == NULL) {
		fprintf(stderr, "leaky_burst: %s\n", err.msg);
		blq_free(dlq);
		return 1;
	}

	producer p = {.q = q, .until_ns = now_ns() + (uint64_t)seconds * 1000000000u};
	pthread_t t;
	pthread_create(&t, NULL, produce, &p);
	for (int sec = 1; !atomic_load(&p.done); sec++) {
		char when[16];

		sleep_ns(1000000000L);
		snprintf(when, sizeof(when), "t=%ds", sec);
		line(when, q);
		line(when, dlq);
	}
	pthread_join(t, NULL);

	/* Close the main queue first: its drain may still leak into the DLQ. */
	blq_close(q);
	blq_close(dlq);
	line("final", q);
	line("final", dlq);
	struct blq_stats a, b;
	blq_stats(q, &a);
	blq_stats(dlq, &b);
	int ok = a.in == a.processed + a.failed + a.leaked + a.expired + a.lost &&
		 b.in == b.processed + b.failed + b.leaked + b.expired + b.lost && b.in == a.leaked &&
		 b.leaked == blq_discard_count(&discard);
	printf("accounting: main in %llu = processed %llu + leaked %llu; overflow in %llu = processed %llu + discarded %llu: %s\n",
	       (unsigned long long)a.in, (unsigned long long)a.processed,
	       (unsigned long long)a.leaked, (unsigned long long)b.in,
	       (unsigned long long)b.processed, (unsigned long long)blq_discard_count(&discard),
	       ok ? "balanced" : "NOT BALANCED");
	blq_free(q);
	blq_free(dlq);
	return ok ? 0 : 1;
}
