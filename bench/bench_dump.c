/*
 * DUMP-FS and DUMP-REDIS: dump throughput, 64-byte and 1 KiB items.
 *
 * One producer calls blq_dump_enqueue for every item (a static blq_bytes,
 * no item_free: the figure is the dump's own cost), then blq_dump_flush
 * waits until the last batch is durable (files fsync'd and renamed; Redis
 * entries acknowledged). Batches of 1 MiB. The clock covers the enqueues
 * and that final flush; allocations are counted over the same window.
 *
 * DUMP-REDIS also runs `redis-benchmark -t lpush` (its defaults: 50
 * clients, no pipelining) against the same server with the same item
 * count and size, in the same run, and reports blq_ratio = blq's
 * ns_per_item / redis-benchmark's (below 2 means blq reaches at least half
 * of redis-benchmark's LPUSH rate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blq/blq.h>

#include "bench_dump.h"
#include "bench_blq.h"
#include "median.h"

static int rmrf_files(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* One timed run: items through a fresh dump on writer w. ns/item or -1. */
static double run(blq_dump_writer *w, const blq_bytes *item, size_t items, double *allocs)
{
	blq_error err;
	blq_dump_config dc = {.name = "bench", .capacity = 1 << 20,
			      .encoder = blq_dump_bytes_encoder(), .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);

	if (d == NULL) {
		fprintf(stderr, "blq-bench: dump: %s\n", err.msg);
		return -1;
	}
	/* Warm the two batch buffers so the window sees steady state. */
	for (size_t i = 0; i < (2u << 20) / (item->len + 12) + 1; i++)
		blq_dump_enqueue(d, (void *)item);
	blq_dump_flush(d);
	uint64_t a0 = bench_allocs(), t0 = bench_now_ns();
	for (size_t i = 0; i < items; i++)
		if (blq_dump_enqueue(d, (void *)item) != 0) {
			fprintf(stderr, "blq-bench: dump refused an item\n");
			blq_dump_free(d);
			return -1;
		}
	int rc = blq_dump_flush(d);
	uint64_t t1 = bench_now_ns();
	*allocs = (double)(bench_allocs() - a0) / (double)items;
	blq_dump_free(d);
	if (rc != 0) {
		fprintf(stderr, "blq-bench: dump flush: %s\n", blq_strerror(rc));
		return -1;
	}
	return (double)(t1 - t0) / (double)items;
}

static void line(const char *wl, const char *sys, double ns, double allocs, size_t bytes,
		 unsigned rounds, double blq_ns)
{
	printf("BENCH %s %s ns_per_item=%.1f items_per_s=%.0f allocs_per_item=%.6g item_bytes=%zu "
	       "mb_per_s=%.1f",
	       wl, sys, ns, 1e9 / ns, allocs, bytes, 1e9 / ns * (double)bytes / 1e6);
	if (blq_ns > 0)
		printf(" blq_ratio=%.3f", blq_ns / ns);
	printf(" rounds=%u\n", rounds);
	fflush(stdout);
}

static blq_bytes *make_item(size_t bytes)
{
	blq_bytes *b = malloc(sizeof(*b) + bytes);

	b->restores = 0;
	b->len = bytes;
	memset(b->data, 'x', bytes);
	return b;
}

int bench_dump_fs(size_t items_override, unsigned rounds)
{
	static const size_t sizes[] = {64, 1024};
	char dir[] = "/tmp/blq-bench-dump-XXXXXX";

	if (mkdtemp(dir) == NULL)
		return -1;
	for (int k = 0; k < 2; k++) {
		size_t items = items_override ? items_override : sizes[k] == 64 ? 400000 : 50000;
		blq_bytes *item = make_item(sizes[k]);
		double ns[64], al[64];
		blq_error err;
		blq_dump_fs_config fc = {.directory = dir};
		blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);

		if (w == NULL) {
			fprintf(stderr, "blq-bench: DUMP-FS: %s\n", err.msg);
			return -1;
		}
		for (unsigned r = 0; r < rounds; r++) {
			if ((ns[r] = run(w, item, items, &al[r])) < 0)
				return -1;
			char sub[600];
			snprintf(sub, sizeof(sub), "%s/*.bin", dir);
			char cmd[700];
			snprintf(cmd, sizeof(cmd), "rm -f %s", sub);
			if (system(cmd) != 0)
				return -1;
		}
		line("DUMP-FS", "blq", bench_median(ns, rounds), bench_median(al, rounds), sizes[k], rounds, -1);
		blq_dump_writer_free(w);
		free(item);
	}
	rmrf_files(dir);
	return 0;
}

#ifdef BLQ_BENCH_REDIS
#include <hiredis/hiredis.h>

/* redis-benchmark -t lpush: requests per second, or -1. */
static double redis_benchmark(const char *host, int port, size_t items, size_t bytes)
{
	char cmd[512], buf[512];
	double rps = -1;

	snprintf(cmd, sizeof(cmd),
		 "redis-benchmark -h %s -p %d -t lpush -n %zu -d %zu -q --csv 2>/dev/null", host,
		 port, items, bytes);
	FILE *p = popen(cmd, "r");
	if (p == NULL)
		return -1;
	while (fgets(buf, sizeof(buf), p) != NULL)
		if (strncmp(buf, "\"LPUSH\",\"", 9) == 0)
			rps = strtod(buf + 9, NULL);
	pclose(p);
	return rps;
}

static void redis_del(redisContext *c, const char *key)
{
	redisReply *r = redisCommand(c, "DEL %s", key);

	if (r != NULL)
		freeReplyObject(r);
}

int bench_dump_redis(const char *host, int port, size_t items_override, unsigned rounds)
{
	static const size_t sizes[] = {64, 1024};
	char key[64];
	struct timeval tv = {2, 0};
	redisContext *c = redisConnectWithTimeout(host, port, tv);

	if (c == NULL || c->err) {
		fprintf(stderr, "blq-bench: DUMP-REDIS: cannot connect to %s:%d\n", host, port);
		return -1;
	}
	snprintf(key, sizeof(key), "blq-bench-%ld", (long)getpid());
	for (int k = 0; k < 2; k++) {
		size_t items = items_override ? items_override : sizes[k] == 64 ? 200000 : 50000;
		blq_bytes *item = make_item(sizes[k]);
		double ns[64], al[64], rb[64];
		blq_error err;
		blq_dump_redis_config rc = {.host = host, .port = port, .key = key};
		blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);

		if (w == NULL) {
			fprintf(stderr, "blq-bench: DUMP-REDIS: %s\n", err.msg);
			return -1;
		}
		/* Alternate blq and redis-benchmark so both see the same server. */
		for (unsigned r = 0; r < rounds; r++) {
			if ((ns[r] = run(w, item, items, &al[r])) < 0)
				return -1;
			redis_del(c, key);
			double rps = redis_benchmark(host, port, items, sizes[k]);
			if (rps <= 0) {
				fprintf(stderr, "blq-bench: redis-benchmark failed (is it installed?)\n");
				return -1;
			}
			rb[r] = 1e9 / rps;
			redis_del(c, "mylist");
		}
		double blq_ns = bench_median(ns, rounds);
		line("DUMP-REDIS", "blq", blq_ns, bench_median(al, rounds), sizes[k], rounds, -1);
		line("DUMP-REDIS", "redis-benchmark", bench_median(rb, rounds), 0, sizes[k], rounds, blq_ns);
		blq_dump_writer_free(w);
		free(item);
	}
	redisFree(c);
	return 0;
}
#else
int bench_dump_redis(const char *host, int port, size_t items_override, unsigned rounds)
{
	(void)host, (void)port, (void)items_override, (void)rounds;
	fprintf(stderr, "blq-bench: DUMP-REDIS: blq was built without BLQ_WITH_REDIS\n");
	return -1;
}
#endif
