/* The textbook bounded pool: a ring of `capacity` payloads under one mutex,
 * with not_full / not_empty condition variables signalled only when the
 * other side waits (waiter counts), as a decent hand-written pool does. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "baseline_producers.h"

typedef struct mpool {
	pthread_mutex_t mu;
	pthread_cond_t not_full, not_empty;
	void **buf;
	size_t cap, head, count;
	unsigned wait_full, wait_empty;
	bool done; /* producers finished: consumers exit when empty */
	const bench_shape *shape;
} mpool;

static void push(void *sys, void *payload)
{
	mpool *m = sys;

	pthread_mutex_lock(&m->mu);
	while (m->count == m->cap) {
		m->wait_full++;
		pthread_cond_wait(&m->not_full, &m->mu);
		m->wait_full--;
	}
	m->buf[(m->head + m->count) % m->cap] = payload;
	m->count++;
	if (m->wait_empty > 0)
		pthread_cond_signal(&m->not_empty);
	pthread_mutex_unlock(&m->mu);
}

static void *consumer(void *arg)
{
	mpool *m = arg;

	for (;;) {
		pthread_mutex_lock(&m->mu);
		while (m->count == 0 && !m->done) {
			m->wait_empty++;
			pthread_cond_wait(&m->not_empty, &m->mu);
			m->wait_empty--;
		}
		if (m->count == 0) {
			pthread_mutex_unlock(&m->mu);
			return NULL;
		}
		void *payload = m->buf[m->head];
		m->head = (m->head + 1) % m->cap;
		m->count--;
		if (m->wait_full > 0)
			pthread_cond_signal(&m->not_full);
		pthread_mutex_unlock(&m->mu);
		m->shape->task(payload);
	}
}

int64_t bench_run_mutex(const bench_shape *s)
{
	mpool m = {.cap = s->capacity, .shape = s};
	pthread_t *ws = calloc(s->workers, sizeof(*ws));
	bench_producers p;

	m.buf = calloc(s->capacity, sizeof(void *));
	if (ws == NULL || m.buf == NULL) {
		free(ws);
		free(m.buf);
		return -1;
	}
	pthread_mutex_init(&m.mu, NULL);
	pthread_cond_init(&m.not_full, NULL);
	pthread_cond_init(&m.not_empty, NULL);
	for (unsigned i = 0; i < s->workers; i++)
		pthread_create(&ws[i], NULL, consumer, &m);
	if (bench_producers_start(&p, s, push, &m) != 0)
		abort();
	bench_producers_go(&p);
	bench_producers_join(&p);
	pthread_mutex_lock(&m.mu);
	m.done = true;
	pthread_cond_broadcast(&m.not_empty);
	pthread_mutex_unlock(&m.mu);
	for (unsigned i = 0; i < s->workers; i++)
		pthread_join(ws[i], NULL);
	int64_t elapsed = (int64_t)(bench_now_ns() - p.start_ns);
	pthread_cond_destroy(&m.not_full);
	pthread_cond_destroy(&m.not_empty);
	pthread_mutex_destroy(&m.mu);
	free(m.buf);
	free(ws);
	return elapsed;
}
