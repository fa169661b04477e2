/*
 * The floor of the W1 family (baseline.h, bench_run_floor): what the task
 * bodies alone cost when spread over the cores with no queue at all. A
 * handoff can approach it but never beat it, so "within 1.5x of the
 * floor" says how much of the machine the queue itself takes.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "baseline.h"

typedef struct floor_arg {
	const bench_shape *s;
	pthread_barrier_t *go;
	size_t first, count;
} floor_arg;

static void *floor_main(void *p)
{
	floor_arg *a = p;

	pthread_barrier_wait(a->go);
	for (size_t i = 0; i < a->count; i++)
		a->s->task((void *)(uintptr_t)(a->first + i + 1));
	return NULL;
}

int64_t bench_run_floor(const bench_shape *s)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > 0 && cpus < 256 ? (unsigned)cpus : 1;
	pthread_t *t = calloc(n, sizeof(*t));
	floor_arg *a = calloc(n, sizeof(*a));
	pthread_barrier_t go;

	if (t == NULL || a == NULL) {
		free(t);
		free(a);
		return -1;
	}
	pthread_barrier_init(&go, NULL, n + 1);
	for (unsigned i = 0; i < n; i++) {
		size_t per = s->items / n;

		a[i] = (floor_arg){s, &go, i * per, i + 1 == n ? s->items - i * per : per};
		if (pthread_create(&t[i], NULL, floor_main, &a[i]) != 0)
			abort(); /* a floor without its threads means nothing */
	}
	uint64_t start = bench_now_ns();
	pthread_barrier_wait(&go);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	int64_t elapsed = (int64_t)(bench_now_ns() - start);
	pthread_barrier_destroy(&go);
	free(t);
	free(a);
	return elapsed;
}
