/*
 * redis_dump_restore: a queue whose overflow is dumped to Redis and fed
 * back into it by a restorer once the load falls.
 *
 *   producer --> "jobs" --leaks--> blq_dump --> Redis stream (one entry per item)
 *                  ^                                  |
 *                  +------------ blq_restorer <-------+   while jobs is at most half full
 *
 * A burst fills the small queue; what does not fit leaks into the dump,
 * which writes it to a Redis stream in batches. The restorer reads the
 * stream and puts the items back, but only while the queue is at most half
 * full (allow_rate), so it waits out the burst. A stream entry is deleted
 * only after its item reached an outcome in the queue: at least once.
 *
 * What to look at: the status lines (the dump fills during the burst, the
 * restorer catches up after it), and the per-id check at the end: every
 * item that leaked came back and was processed, duplicates counted apart.
 *
 * Usage: redis_dump_restore [host:port]   (default: $BLQ_TEST_REDIS;
 * without either it skips with exit status 77)
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blq/blq.h>

#include "example_util.h"

#define ITEMS 3000u

/* Per payload id: processed fresh (0 or 1), processed after a restore. */
static atomic_uint fresh[ITEMS], restored[ITEMS];

/* Payloads are blq_bytes (the dump's bytes codec) holding a 4-byte id;
 * `restores` says how many times the item came back from the dump. */
static int work(void *ctx, void *payload, blq_task *task)
{
	blq_bytes *b = payload;
	uint32_t id;

	(void)ctx, (void)task;
	memcpy(&id, b->data, sizeof(id));
	ex_sleep_us(200);
	atomic_fetch_add(b->restores == 0 ? &fresh[id] : &restored[id], 1);
	free(b);
	return 0;
}

static unsigned ids_done(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ITEMS; i++)
		n += atomic_load(&fresh[i]) + atomic_load(&restored[i]) > 0;
	return n;
}

int main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : getenv("BLQ_TEST_REDIS");
	char host[256], key[128];
	blq_error err;

	if (addr == NULL || addr[0] == '\0') {
		printf("redis_dump_restore: SKIP: no Redis address (argv[1] or BLQ_TEST_REDIS)\n");
		return 77;
	}
	const char *colon = strrchr(addr, ':');
	if (colon == NULL || snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr) < 0) {
		fprintf(stderr, "redis_dump_restore: want host:port, got '%s'\n", addr);
		return 2;
	}
	/* A stream of our own, so runs never see each other's items. */
	snprintf(key, sizeof(key), "blq-example-dump-%ld-%llu", (long)getpid(),
		 (unsigned long long)ex_now_ns());
	blq_dump_redis_config rc = {.host = host, .port = atoi(colon + 1), .key = key, .version = 1};

	/* The writer and the reader each own a connection. */
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	blq_dump_reader *rd = w ? blq_dump_redis_reader_new(&rc, &err) : NULL;
	/* Batches of 16 KiB, or every 20 ms, whichever comes first. */
	blq_dump_config dc = {.name = "jobs-dump", .version = 1, .capacity = 16 << 10,
			      .flush_interval_ns = 20000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = rd ? blq_dump_new(&dc, &err) : NULL;
	blq_config qc = {.name = "jobs", .capacity = 100, .workers = 2, .worker = work,
			 .item_free = free, .dlq = blq_dump_enqueuer(d)};
	blq *q = d ? blq_new(&qc, &err) : NULL;
	blq_restorer_config resc = {.name = "jobs-restorer", .reader = rd,
				    .decoder = blq_dump_bytes_decoder(), .target = q,
				    .item_free = free, .allow_rate = 0.5,
				    .check_interval_ns = 20000000, .postpone_interval_ns = 5000000};
	blq_restorer *r = q ? blq_restorer_new(&resc, &err) : NULL;
	if (r == NULL) {
		/* err names the field, or host:port when Redis does not answer. */
		fprintf(stderr, "redis_dump_restore: %s (%s)\n", err.msg, blq_errname(err.code));
		ex_failures++;
		goto out; /* every free below accepts NULL */
	}

	/* The burst: far more than the queue holds, as fast as possible. */
	uint64_t t0 = ex_now_ns();
	for (uint32_t id = 0; id < ITEMS; id++) {
		blq_bytes *b = blq_bytes_new(&id, sizeof(id));
		int e = b ? blq_enqueue(q, b) : BLQ_ENOMEM;
		if (e != 0) {
			fprintf(stderr, "redis_dump_restore: enqueue: %s\n", blq_strerror(e));
			free(b); /* refused: still ours */
		}
	}
	/* The load has fallen; wait (up to 20 s) until every id was processed. */
	struct blq_stats s;
	struct blq_dump_stats ds;
	struct blq_restorer_stats rs;
	for (int i = 0; i < 200 && ids_done() < ITEMS; i++) {
		ex_sleep_us(100000);
		blq_stats(q, &s);
		blq_dump_stats(d, &ds);
		blq_restorer_stats(r, &rs);
		printf("t=%.1fs  queue size %3zu  leaked %4llu  dumped %4llu  restored %4llu"
		       "  (waited for room %llu times)  ids done %u/%u\n",
		       (double)(ex_now_ns() - t0) / 1e9, s.size, (unsigned long long)s.leaked,
		       (unsigned long long)ds.written, (unsigned long long)rs.restored,
		       (unsigned long long)rs.postponed, ids_done(), ITEMS);
	}

	/* Close from the top of the chain down: the restorer feeds q, q leaks
	 * into the dump, the dump writes to Redis. */
	blq_restorer_close(r);
	blq_close(q);
	blq_dump_close(d);

	blq_stats(q, &s);
	blq_dump_stats(d, &ds);
	blq_restorer_stats(r, &rs);
	unsigned leaked_ids = 0, back_ids = 0, both = 0, dups = 0;
	for (unsigned i = 0; i < ITEMS; i++) {
		unsigned f = atomic_load(&fresh[i]), b = atomic_load(&restored[i]);
		leaked_ids += f == 0;
		back_ids += b > 0;
		both += f > 0 && b > 0;
		dups += b > 1 ? b - 1 : 0;
	}
	printf("dump: in %llu, written %llu, refused %llu, dropped %llu;"
	       " restorer: restored %llu, done %llu, in flight %llu\n",
	       (unsigned long long)ds.in, (unsigned long long)ds.written,
	       (unsigned long long)ds.refused, (unsigned long long)ds.dropped,
	       (unsigned long long)rs.restored, (unsigned long long)rs.done,
	       (unsigned long long)rs.in_flight);
	printf("checks:\n");
	ex_balanced(q);
	ex_check(s.leaked == ds.in && ds.in == ds.written, "all %llu leaks were written to Redis",
		 (unsigned long long)s.leaked);
	ex_check(leaked_ids > 0, "%u of %u items leaked in the burst", leaked_ids, ITEMS);
	ex_check(back_ids == leaked_ids && both == 0,
		 "every leaked id came back and was processed (%u, %u duplicates): no id lost",
		 back_ids, dups);
	ex_check(rs.in_flight == 0 && rs.done == rs.restored, "the restorer committed all it restored");
out:
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_free(d);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	return ex_failures == 0 ? 0 : 1;
}
