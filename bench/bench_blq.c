/*
 * blq under the baseline contract (baseline.h), so blq-bench times it
 * exactly like the other systems: same producers, same payloads, same task.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "bench_blq.h"

typedef struct run {
	const bench_shape *shape;
	blq *q;
	pthread_barrier_t go;
	uint64_t start_ns;
	unsigned index;
} run;

typedef struct prod {
	run *r;
	unsigned index;
} prod;

static int task_worker(void *ctx, void *payload, blq_task *t)
{
	const bench_shape *s = ctx;

	(void)t;
	s->task(payload);
	return 0;
}

static void *producer(void *arg)
{
	prod *p = arg;
	const bench_shape *s = p->r->shape;
	size_t per = s->items / s->producers;
	size_t first = p->index * per;

	pthread_barrier_wait(&p->r->go);
	uint64_t start = p->r->start_ns;
	for (size_t k = 0; k < per; k++) {
		void *payload = (void *)(uintptr_t)(first + k + 1);

		if (s->pace_ns != 0)
			while (bench_now_ns() < start + k * s->pace_ns)
				;
		if (s->on_push != NULL)
			s->on_push(payload);
		if (blq_enqueue(p->r->q, payload) != 0)
			abort(); /* a non-leaky open queue never refuses */
	}
	return NULL;
}

int64_t bench_run_blq(const bench_shape *s, const blq_config *base, uint64_t *allocs_in_run)
{
	blq_config c = *base;
	run r = {.shape = s};
	prod *ps = calloc(s->producers, sizeof(*ps));
	pthread_t *ts = calloc(s->producers, sizeof(*ts));
	blq_error err;

	c.capacity = s->capacity;
	if (c.workers == 0 && c.workers_max == 0)
		c.workers = s->workers;
	c.worker = task_worker;
	c.worker_ctx = (void *)s;
	r.q = blq_new(&c, &err);
	if (r.q == NULL || ps == NULL || ts == NULL) {
		free(ps);
		free(ts);
		blq_free(r.q);
		return -1;
	}
	pthread_barrier_init(&r.go, NULL, s->producers + 1);
	for (unsigned i = 0; i < s->producers; i++) {
		ps[i] = (prod){&r, i};
		pthread_create(&ts[i], NULL, producer, &ps[i]);
	}
	uint64_t allocs0 = bench_allocs();
	r.start_ns = bench_now_ns();
	pthread_barrier_wait(&r.go);
	for (unsigned i = 0; i < s->producers; i++)
		pthread_join(ts[i], NULL);
	blq_close(r.q); /* returns when the last item finished */
	int64_t elapsed = (int64_t)(bench_now_ns() - r.start_ns);
	*allocs_in_run = bench_allocs() - allocs0;
	blq_free(r.q);
	pthread_barrier_destroy(&r.go);
	free(ps);
	free(ts);
	return elapsed;
}
