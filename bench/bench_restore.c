/*
 * RESTORE-REDIS: restore throughput from one Redis stream into target
 * queues, with 1, 2 and 3 restorer processes, 64-byte items.
 *
 * Per round and process count P: N items go into a fresh stream through a
 * blq_dump (not timed). Then P child processes start (fork + exec of
 * blq-bench itself, so no thread of this process is inherited), each with
 * a Redis reader in one consumer group, a target queue (capacity 1024, 2
 * workers) and a restorer with its defaults (check 1 ms, postpone 100 us).
 * A worker counts each item in a shared counter and frees it. The clock
 * runs from the first fork until the counter reaches N: every item was
 * processed, which with at-least-once means the restorers also did their
 * part of the bookkeeping. The line is the median over rounds:
 *   BENCH RESTORE-REDIS blq ns_per_item=.. items_per_s=.. allocs_per_item=nan
 *         procs=P item_bytes=64 dups=..
 * (allocations are counted per process, so not across these children).
 * The source compiles against the restorer of f1ad1e3 too, for the before
 * and after figures of docs/benchmarks.md ("Restore").
 */
#include "bench_restore.h"
#include "median.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blq/blq.h>

#define ITEMS 200000u
#define BYTES 64u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static _Atomic uint64_t *map_counter(const char *path, bool create)
{
	int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);

	if (fd < 0 || (create && ftruncate(fd, sizeof(uint64_t)) != 0)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* ---- the child ---------------------------------------------------- */

static _Atomic uint64_t *child_counter;

static int count_item(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	atomic_fetch_add_explicit(child_counter, 1, memory_order_relaxed);
	free(payload);
	return 0;
}

int bench_restore_child(int argc, char **argv)
{
	if (argc < 7)
		_exit(2);
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	child_counter = map_counter(argv[5], false);
	blq_error err;
	blq_dump_redis_config rc = {.host = argv[2], .port = atoi(argv[3]), .key = argv[4],
				    .group = "bench", .consumer = argv[6]};
	blq_dump_reader *rd = child_counter ? blq_dump_redis_reader_new(&rc, &err) : NULL;
	blq_config qc = {.name = "target", .capacity = 1024, .workers = 2, .worker = count_item,
			 .item_free = free};
	blq *q = rd ? blq_new(&qc, &err) : NULL;
	blq_restorer_config rsc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				   .item_free = free, .check_interval_ns = 1000000,
				   .postpone_interval_ns = 100000};
	blq_restorer *r = q ? blq_restorer_new(&rsc, &err) : NULL;
	if (r == NULL) {
		fprintf(stderr, "blq-bench: restore child: %s\n", err.msg);
		_exit(1);
	}
	int sig;
	sigwait(&term, &sig);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	_exit(0);
}

/* ---- the parent --------------------------------------------------- */

static int fill(const char *host, int port, const char *key, size_t n)
{
	blq_error err;
	blq_dump_redis_config rc = {.host = host, .port = port, .key = key};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	if (w == NULL) {
		fprintf(stderr, "blq-bench: RESTORE-REDIS: %s\n", err.msg);
		return -1;
	}
	blq_dump_config dc = {.name = "bench", .capacity = 1 << 20,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	int rc2 = d == NULL ? -1 : 0;
	unsigned char item[BYTES] = {0};
	for (size_t i = 0; rc2 == 0 && i < n; i++) {
		memcpy(item, &i, sizeof(i));
		blq_bytes *b = blq_bytes_new(item, sizeof(item));
		if (b == NULL || blq_dump_enqueue(d, b) != 0)
			rc2 = -1;
	}
	struct blq_dump_stats s;
	if (rc2 == 0 && (blq_dump_flush(d) != 0 || blq_dump_stats(d, &s) != 0 || s.written != n))
		rc2 = -1;
	blq_dump_free(d);
	blq_dump_writer_free(w);
	if (rc2 != 0)
		fprintf(stderr, "blq-bench: RESTORE-REDIS: filling the stream failed\n");
	return rc2;
}

static void del_key(const char *host, int port, const char *key)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "redis-cli -h '%s' -p %d DEL '%s' >/dev/null 2>&1", host, port,
		 key);
	if (system(cmd) != 0)
		fprintf(stderr, "blq-bench: RESTORE-REDIS: could not delete %s\n", key);
}

/* One timed run: ns per item, or -1. *dups: items counted past n. */
static double run(const char *self, const char *host, int port, size_t n, unsigned procs,
		  unsigned round, uint64_t *dups)
{
	char key[96], counter[96], sport[16];
	snprintf(key, sizeof(key), "blq-bench-restore-%d-%u-%u", (int)getpid(), procs, round);
	snprintf(counter, sizeof(counter), "/dev/shm/blq-bench-restore-%d", (int)getpid());
	snprintf(sport, sizeof(sport), "%d", port);
	del_key(host, port, key);
	if (fill(host, port, key, n) != 0)
		return -1;
	_Atomic uint64_t *done = map_counter(counter, true);
	if (done == NULL)
		return -1;
	pid_t kids[3];
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < procs; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%u", i);
		kids[i] = fork();
		if (kids[i] == 0) {
			execl(self, self, "--restore-child", host, sport, key, counter, name,
			      (char *)NULL);
			_exit(127);
		}
	}
	uint64_t limit = t0 + 120000000000ull;
	while (atomic_load(done) < n && now_ns() < limit)
		usleep(200);
	uint64_t t1 = now_ns(), got = atomic_load(done);
	for (unsigned i = 0; i < procs; i++)
		kill(kids[i], SIGTERM);
	bool clean = true;
	for (unsigned i = 0; i < procs; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		clean = clean && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	uint64_t total = atomic_load(done);
	munmap((void *)done, sizeof(uint64_t));
	unlink(counter);
	del_key(host, port, key);
	if (got < n || !clean) {
		fprintf(stderr, "blq-bench: RESTORE-REDIS: %llu of %zu items processed%s\n",
			(unsigned long long)got, n, clean ? "" : ", a child failed");
		return -1;
	}
	*dups = total - n;
	return (double)(t1 - t0) / (double)n;
}

int bench_restore_redis(const char *self, const char *host, int port, size_t items_override,
			unsigned rounds)
{
	size_t n = items_override ? items_override : ITEMS;

	for (unsigned procs = 1; procs <= 3; procs++) {
		double ns[BENCH_ROUNDS_MAX];
		uint64_t dups = 0;
		for (unsigned r = 0; r < rounds; r++) {
			uint64_t d = 0;
			if ((ns[r] = run(self, host, port, n, procs, r, &d)) < 0)
				return -1;
			dups += d;
		}
		double med = bench_median(ns, rounds);
		printf("BENCH RESTORE-REDIS blq ns_per_item=%.1f items_per_s=%.0f "
		       "allocs_per_item=nan procs=%u item_bytes=%u dups=%llu rounds=%u\n",
		       med, 1e9 / med, procs, BYTES, (unsigned long long)dups, rounds);
		fflush(stdout);
	}
	return 0;
}
