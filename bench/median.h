/* The median of a bench's rounds, shared by the workloads' drivers
 * (blq_bench.c, bench_dump.c, bench_restore.c, bench_sides.c). */
#ifndef BLQ_BENCH_MEDIAN_H
#define BLQ_BENCH_MEDIAN_H

#include <stdlib.h>
#include <string.h>

/* Rounds are at most this many (blq-bench --rounds). */
#define BENCH_ROUNDS_MAX 64u

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n), 1 <= n <= BENCH_ROUNDS_MAX; v is left as it was
 * (sorted on a copy). Not const: GCC takes a const pointer to an array
 * whose first `rounds` entries a loop filled as a read of all of it
 * (-Wmaybe-uninitialized). */
static inline double bench_median(double *v, unsigned n)
{
	double tmp[BENCH_ROUNDS_MAX];

	memcpy(tmp, v, n * sizeof(double));
	qsort(tmp, n, sizeof(double), bench_cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

#endif
