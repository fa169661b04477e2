/* The RESTORE-REDIS workload of blq-bench (bench_restore.c). */
#ifndef BLQ_BENCH_RESTORE_H
#define BLQ_BENCH_RESTORE_H

#include <stddef.h>

/* RESTORE-REDIS against host:port: prints one line per process count
 * (1, 2, 3). items_override 0 means 200,000. Returns 0 or -1. */
int bench_restore_redis(const char *self, const char *host, int port, size_t items_override,
			unsigned rounds);

/* The child process of that workload: `blq-bench --restore-child HOST
 * PORT KEY COUNTER_FILE NAME` (it never returns). */
int bench_restore_child(int argc, char **argv);

#endif
