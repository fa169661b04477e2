/*
 * blq under the baseline contract (baseline.h), so blq-bench times it
 * exactly like the other systems: the same producer harness, payloads and
 * task.
 */
#include <stdlib.h>

#include <blq/blq.h>

#include "baseline_producers.h"
#include "bench_blq.h"

static int task_worker(void *ctx, void *payload, blq_task *t)
{
	const bench_shape *s = ctx;

	(void)t;
	s->task(payload);
	return 0;
}

static void push(void *sys, void *payload)
{
	if (blq_enqueue(sys, payload) != 0)
		abort(); /* an open non-leaky queue never refuses */
}

static void push_batch(void *sys, void *const *payloads, size_t n)
{
	/* An open non-leaky queue takes the whole batch (waiting for room). */
	if (blq_enqueue_batch(sys, payloads, n) != (ssize_t)n)
		abort();
}

int64_t bench_run_blq(const bench_shape *s, const blq_config *base, uint64_t *allocs_in_run)
{
	blq_config c = *base;
	bench_producers p;
	blq_error err;

	c.capacity = s->capacity;
	if (c.workers == 0 && c.workers_max == 0)
		c.workers = s->workers;
	if (c.worker == NULL)
		c.worker = task_worker; /* a base's own worker gets the shape too */
	c.worker_ctx = (void *)s;
	blq *q = blq_new(&c, &err);
	if (q == NULL)
		return -1;
	if (bench_producers_start(&p, s, push, q) != 0) {
		blq_free(q);
		return -1;
	}
	p.push_batch = push_batch; /* used when the shape batches */
	uint64_t allocs0 = bench_allocs();
	bench_producers_go(&p);
	bench_producers_join(&p);
	blq_close(q); /* returns when the last item finished */
	int64_t elapsed = (int64_t)(bench_now_ns() - p.start_ns);
	*allocs_in_run = bench_allocs() - allocs0;
	blq_free(q);
	return elapsed;
}
