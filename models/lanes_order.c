/* The order finding of models/lanes.pml (docs/model-check.md, "Order"),
 * in C: one producer, one worker, capacity 10000 (lanes of 4096 since
 * a75d3e1, of 512 before; one shared ring). The worker holds item 1 while
 * the producer enqueues 2..4601 (4096 into its lane, 504 spilled into
 * the shared ring), then drains. Prints
 * the first inversion of the producer's order; exits 1 when there is one.
 * Not built by CMake; against a build tree:
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -I<build>/include \
 *       models/lanes_order.c <build>/libblq.a -lck -lpthread -lm
 */
#include <blq/queue.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int go;
static uintptr_t seen[5000];
static atomic_uint n;

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx; (void)task;
	uintptr_t v = (uintptr_t)payload;
	if (v == 1)
		while (!atomic_load(&go))
			usleep(1000);
	seen[atomic_fetch_add(&n, 1)] = v;
	return 0;
}

int main(void)
{
	blq_config cfg = {0};
	blq_error err;
	cfg.capacity = 10000;
	cfg.workers = 1;
	cfg.worker = work;
	blq *q = blq_new(&cfg, &err);
	if (q == NULL) { printf("blq_new failed\n"); return 2; }
	blq_enqueue(q, (void *)1);
	usleep(100000); /* the worker holds item 1 */
	for (uintptr_t i = 2; i <= 4601; i++)
		if (blq_enqueue(q, (void *)i) != 0) { printf("enqueue %lu failed\n", (unsigned long)i); return 2; }
	atomic_store(&go, 1);
	blq_close(q);
	unsigned m = atomic_load(&n), bad = 0;
	for (unsigned i = 1; i < m; i++)
		if (seen[i] < seen[i - 1]) {
			if (bad++ == 0)
				printf("inversion at take %u: %lu after %lu\n", i, (unsigned long)seen[i], (unsigned long)seen[i - 1]);
		}
	printf("%u items, %u inversions\n", m, bad);
	printf("order:"); for (unsigned i = 4070; i < 4130 && i < m; i++) printf(" %lu", (unsigned long)seen[i]); printf("\n");
	blq_free(q);
	return bad != 0;
}
