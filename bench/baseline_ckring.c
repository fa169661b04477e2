/* The limit: a raw Concurrency Kit ck_ring in MPMC mode (capacity rounded
 * up to a power of two), producers and consumers spinning with
 * sched_yield() while full or empty. No blocking, no accounting. */
#include <ck_ring.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "baseline_producers.h"

typedef struct cring {
	ck_ring_t ring;
	ck_ring_buffer_t *buf;
	_Atomic size_t taken;
	const bench_shape *shape;
} cring;

static void push(void *sys, void *payload)
{
	cring *c = sys;

	while (!ck_ring_enqueue_mpmc(&c->ring, c->buf, payload))
		sched_yield();
}

static void *consumer(void *arg)
{
	cring *c = arg;
	void *payload;

	while (atomic_load_explicit(&c->taken, memory_order_relaxed) < c->shape->items) {
		if (!ck_ring_dequeue_mpmc(&c->ring, c->buf, &payload)) {
			sched_yield();
			continue;
		}
		atomic_fetch_add_explicit(&c->taken, 1, memory_order_relaxed);
		c->shape->task(payload);
	}
	return NULL;
}

int64_t bench_run_ckring(const bench_shape *s)
{
	cring c = {.shape = s};
	unsigned size = 4;
	pthread_t *ws = calloc(s->workers, sizeof(*ws));
	bench_producers p;

	while (size < s->capacity + 1) /* ck_ring holds size - 1 */
		size *= 2;
	c.buf = calloc(size, sizeof(ck_ring_buffer_t));
	if (ws == NULL || c.buf == NULL) {
		free(ws);
		free(c.buf);
		return -1;
	}
	ck_ring_init(&c.ring, size);
	for (unsigned i = 0; i < s->workers; i++)
		pthread_create(&ws[i], NULL, consumer, &c);
	if (bench_producers_start(&p, s, push, &c) != 0)
		abort();
	bench_producers_go(&p);
	bench_producers_join(&p);
	for (unsigned i = 0; i < s->workers; i++)
		pthread_join(ws[i], NULL);
	int64_t elapsed = (int64_t)(bench_now_ns() - p.start_ns);
	free(c.buf);
	free(ws);
	return elapsed;
}
