/*
 * The noise of W1-NOISY: the shared host of DESIGN.md's measurements, at
 * will. One thread per online core runs a tight loop of arithmetic (no
 * memory traffic beyond its own stack, no system calls), at the default
 * priority, so the scheduler shares every core between it and the
 * workload's threads as a neighbour's CPU-bound process would; a spinning
 * waiter whose peer is descheduled then pays what it pays on a busy VM.
 * The threads look at a stop flag every 4096 iterations.
 */
#include "noise.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NOISE_MAX 256

static pthread_t threads[NOISE_MAX];
static int nthreads;
static _Atomic int stop;
static _Atomic uint64_t used_ns, used_cs; /* bench_noise_usage */

static void *burn(void *arg)
{
	volatile uint64_t x = (uint64_t)(uintptr_t)arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		for (int i = 0; i < 4096; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	/* Once, after the stop: nothing here runs while a round is timed. */
	struct timespec ts;
	struct rusage ru;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		atomic_fetch_add(&used_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		atomic_fetch_add(&used_cs, (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw));
	return NULL;
}

int bench_noise_start(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (cores < 1)
		cores = 1;
	if (cores > NOISE_MAX)
		cores = NOISE_MAX;
	atomic_store(&stop, 0);
	atomic_store(&used_ns, 0);
	atomic_store(&used_cs, 0);
	for (nthreads = 0; nthreads < (int)cores; nthreads++)
		if (pthread_create(&threads[nthreads], NULL, burn, (void *)(uintptr_t)nthreads) != 0) {
			bench_noise_stop();
			return -1;
		}
	return nthreads;
}

void bench_noise_stop(void)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	nthreads = 0;
}

void bench_noise_usage(uint64_t *cpu_ns, uint64_t *context_switches)
{
	*cpu_ns = atomic_load(&used_ns);
	*context_switches = atomic_load(&used_cs);
}
