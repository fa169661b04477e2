#include "baseline_producers.h"

#include <stdlib.h>

#define BENCH_BATCH_MAX 256

struct bench_producer_arg {
	bench_producers *p;
	unsigned index;
};

static void *producer_main(void *arg)
{
	struct bench_producer_arg *a = arg;
	bench_producers *p = a->p;
	const bench_shape *s = p->shape;
	size_t per = s->items / s->producers, first = a->index * per;

	pthread_barrier_wait(&p->go);
	uint64_t start = p->start_ns;
	if (s->batch > 1 && p->push_batch != NULL) {
		void *batch[BENCH_BATCH_MAX];
		size_t b = s->batch < BENCH_BATCH_MAX ? s->batch : BENCH_BATCH_MAX;

		for (size_t k = 0; k < per; k += b) {
			size_t m = per - k < b ? per - k : b;

			for (size_t j = 0; j < m; j++) {
				batch[j] = (void *)(uintptr_t)(first + k + j + 1);
				if (s->on_push != NULL)
					s->on_push(batch[j]);
			}
			p->push_batch(p->sys, batch, m);
		}
		return NULL;
	}
	for (size_t k = 0; k < per; k++) {
		void *payload = (void *)(uintptr_t)(first + k + 1);

		if (s->pace_ns != 0)
			while (bench_now_ns() < start + k * s->pace_ns)
				;
		if (s->on_push != NULL)
			s->on_push(payload);
		p->push(p->sys, payload);
	}
	return NULL;
}

int bench_producers_start(bench_producers *p, const bench_shape *s,
			  void (*push)(void *sys, void *payload), void *sys)
{
	unsigned n = s->producers;

	/* Each thread pushes items / producers payloads: with many producers
	 * (W1-MANY's 64) a count that does not divide would leave payloads
	 * unpushed and the systems that wait for every payload (the ck ring's
	 * consumers) waiting forever; the driver rounds the count down. */
	if (n == 0 || s->items % n != 0)
		return -1;
	p->shape = s;
	p->push = push;
	p->push_batch = NULL; /* a system with one sets it before the release */
	p->sys = sys;
	p->threads = calloc(n, sizeof(*p->threads));
	p->args = calloc(n, sizeof(*p->args));
	if (p->threads == NULL || p->args == NULL) {
		free(p->threads);
		free(p->args);
		return -1;
	}
	/* All n threads (64 for W1-MANY) exist and wait on the barrier before
	 * bench_producers_go takes start_ns: their creation is never timed. */
	pthread_barrier_init(&p->go, NULL, n + 1);
	for (unsigned i = 0; i < n; i++) {
		p->args[i] = (struct bench_producer_arg){p, i};
		if (pthread_create(&p->threads[i], NULL, producer_main, &p->args[i]) != 0)
			abort(); /* a benchmark without its producers means nothing */
	}
	return 0;
}

void bench_producers_go(bench_producers *p)
{
	p->start_ns = bench_now_ns();
	pthread_barrier_wait(&p->go);
}

void bench_producers_join(bench_producers *p)
{
	for (unsigned i = 0; i < p->shape->producers; i++)
		pthread_join(p->threads[i], NULL);
	pthread_barrier_destroy(&p->go);
	free(p->threads);
	free(p->args);
}
