/* The dlqdump workloads of blq-bench (bench_dump.c). */
#ifndef BLQ_BENCH_DUMP_H
#define BLQ_BENCH_DUMP_H

#include <stddef.h>

/* DUMP-FS: prints one line per item size (64 B, 1 KiB). items_override 0
 * means the default counts. Returns 0 or -1. */
int bench_dump_fs(size_t items_override, unsigned rounds);

/* DUMP-REDIS against host:port, beside redis-benchmark -t lpush. */
int bench_dump_redis(const char *host, int port, size_t items_override, unsigned rounds);

#endif
