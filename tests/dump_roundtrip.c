/*
 * dump_roundtrip fs|redis N: N items leak from a small queue (its worker
 * parked) into a dump (a directory, or a Redis stream); two restorers
 * (sharing the directory through flock, or the stream through a consumer
 * group) feed them into a second queue that processes them. In this
 * no-fault run every item must be processed exactly once, and the
 * accounting adds up across the queues, the dump, the restorers and the
 * Prometheus counters.
 *
 * redis mode needs BLQ_TEST_REDIS=host:port (scripts/test.sh starts a
 * server and sets it): without it the run is skipped (exit 77); with it, a
 * server that does not answer fails the run.
 */
#include <stdarg.h>

#include "dump_util.h"

#define SKIP 77

static tu_gate gate;

static int parked(void *ctx, void *payload, blq_task *t)
{
	tu_gate_pass(&gate);
	return du_sink(ctx, payload, t);
}

static uint64_t prom_value(const char *text, const char *series)
{
	const char *p = strstr(text, series);

	return p ? strtoull(p + strlen(series), NULL, 10) : UINT64_MAX;
}

int main(int argc, char **argv)
{
	du_prog = "dump_roundtrip";
	if (argc != 3 || (strcmp(argv[1], "fs") != 0 && strcmp(argv[1], "redis") != 0)) {
		fprintf(stderr, "usage: dump_roundtrip fs|redis N\n");
		return 2;
	}
	bool redis = strcmp(argv[1], "redis") == 0;
	du_n = strtoull(argv[2], NULL, 10);
	char host[256];
	int port = 0;
	if (redis && !du_redis_env(host, sizeof(host), &port)) {
		printf("dump_roundtrip: SKIP: BLQ_TEST_REDIS is not set\n");
		return SKIP;
	}
	du_seen = calloc(du_n, sizeof(*du_seen));
	tu_gate_init(&gate);
	blq_error err;
	blq_prom *reg = blq_prom_new(&err);
	const blq_dump_metrics *m = blq_prom_dump_writer(reg, "rt", &err);
	blq_logger log = blq_stderr_logger(BLQ_LOG_WARN);

	/* Writer and two readers. */
	char *dir = du_tmpdir("roundtrip");
	char key[128];
	snprintf(key, sizeof(key), "blq-test-roundtrip-%ld-%llu", (long)getpid(),
		 (unsigned long long)tu_now_ns());
	blq_dump_fs_config fc = {.directory = dir, .version = 3, .metrics = m, .logger = log};
	blq_dump_redis_config rc = {.host = host, .port = port, .key = key, .version = 3,
				    .metrics = m, .logger = log, .read_count = 256};
	blq_dump_writer *w = redis ? blq_dump_redis_writer_new(&rc, &err)
				   : blq_dump_fs_writer_new(&fc, &err);
	if (w == NULL) {
		fprintf(stderr, "dump_roundtrip: writer: %s\n", err.msg);
		return 1;
	}
	blq_dump_reader *rd[2];
	for (int i = 0; i < 2; i++) {
		rd[i] = redis ? blq_dump_redis_reader_new(&rc, &err) : blq_dump_fs_reader_new(&fc, &err);
		if (rd[i] == NULL) {
			fprintf(stderr, "dump_roundtrip: reader: %s\n", err.msg);
			return 1;
		}
	}

	blq_dump_config dc = {.name = "rt", .version = 3, .capacity = 64 << 10,
			      .flush_interval_ns = 20000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w, .metrics = m, .logger = log};
	blq_dump *d = blq_dump_new(&dc, &err);
	blq_config c1 = {.name = "source", .capacity = 64, .workers = 1, .worker = parked,
			 .item_free = free, .dlq = blq_dump_enqueuer(d), .logger = log};
	blq_config c2 = {.name = "target", .capacity = 256, .workers = 2, .worker = du_sink,
			 .item_free = free, .logger = log};
	blq *q1 = blq_new(&c1, &err), *q2 = blq_new(&c2, &err);
	if (d == NULL || q1 == NULL || q2 == NULL) {
		fprintf(stderr, "dump_roundtrip: %s\n", err.msg);
		return 1;
	}
	blq_restorer *r[2];
	for (int i = 0; i < 2; i++) {
		blq_restorer_config resc = {.name = "rt", .reader = rd[i],
					    .decoder = blq_dump_bytes_decoder(), .target = q2,
					    .item_free = free, .check_interval_ns = 5000000,
					    .postpone_interval_ns = 1000000, .metrics = m,
					    .logger = log};
		r[i] = blq_restorer_new(&resc, &err);
		if (r[i] == NULL) {
			fprintf(stderr, "dump_roundtrip: restorer: %s\n", err.msg);
			return 1;
		}
	}

	uint64_t t0 = tu_now_ns();
	for (uint64_t i = 0; i < du_n; i++) {
		blq_bytes *b = du_item(i, 32);
		if (blq_enqueue(q1, b) != 0) {
			free(b);
			du_check(false, "enqueue %llu refused", (unsigned long long)i);
		}
	}
	tu_gate_open(&gate);
	blq_close(q1);
	du_check(blq_dump_close(d) == 0, "dump close failed");
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	struct blq_restorer_stats rs[2];
	uint64_t restored = 0;
	for (int round = 0; round < 4000 && restored < ds.written; round++) {
		tu_sleep_us(5000);
		restored = 0;
		for (int i = 0; i < 2; i++) {
			blq_restorer_stats(r[i], &rs[i]);
			restored += rs[i].restored;
		}
	}
	for (int i = 0; i < 2; i++) {
		blq_restorer_close(r[i]);
		blq_restorer_stats(r[i], &rs[i]);
	}
	blq_close(q2);
	double secs = (double)(tu_now_ns() - t0) / 1e9;

	struct blq_stats s1, s2;
	blq_stats(q1, &s1);
	blq_stats(q2, &s2);
	uint64_t once = 0, never = 0, twice = 0;
	for (uint64_t i = 0; i < du_n; i++) {
		unsigned k = atomic_load(&du_seen[i]);
		once += k == 1;
		never += k == 0;
		twice += k > 1;
	}
	du_check(once == du_n, "%llu items never processed, %llu more than once",
	      (unsigned long long)never, (unsigned long long)twice);
	du_check(s1.in == du_n && s1.lost == 0, "source: in %llu lost %llu",
	      (unsigned long long)s1.in, (unsigned long long)s1.lost);
	du_check(tu_balanced(&s1) && tu_balanced(&s2), "a queue's outcomes do not add up");
	du_check(ds.in == s1.leaked, "dump in %llu != source leaked %llu", (unsigned long long)ds.in,
	      (unsigned long long)s1.leaked);
	du_check(ds.written == ds.in && ds.refused + ds.dropped + ds.buffered == 0,
	      "dump: in %llu written %llu refused %llu dropped %llu", (unsigned long long)ds.in,
	      (unsigned long long)ds.written, (unsigned long long)ds.refused,
	      (unsigned long long)ds.dropped);
	du_check(restored == ds.written && s2.in == restored, "restored %llu, target in %llu",
	      (unsigned long long)restored, (unsigned long long)s2.in);
	du_check(s1.processed + s2.processed == du_n, "processed %llu + %llu",
	      (unsigned long long)s1.processed, (unsigned long long)s2.processed);
	du_check(rs[0].restored > 0 && rs[1].restored > 0, "both restorers took part (%llu, %llu)",
	      (unsigned long long)rs[0].restored, (unsigned long long)rs[1].restored);
	if (!redis)
		du_check(du_count(dir, "*.bin") == 0, "files left after restoring");
	/* Nothing waits in the dump any more. */
	void *left = NULL;
	int more = rd[0]->next(rd[0], &left, &err);
	du_check(more == 0, "the dump still holds something (%d: %s)", more, err.msg);
	if (more == 1)
		rd[0]->release(rd[0], left);

	static char text[1 << 16];
	blq_prom_render(reg, text, sizeof(text));
	du_check(prom_value(text, "dlqdump_size_in_total{queue=\"rt\"} ") == ds.in &&
		      prom_value(text, "dlqdump_size_out_total{queue=\"rt\"} ") == restored &&
		      prom_value(text, "dlqdump_lost_total{queue=\"rt\"} ") == 0,
	      "Prometheus counters disagree:\n%s", text);
	printf("dump_roundtrip %s: %llu items, %llu leaked into %llu batches, restored %llu + %llu "
	       "(%llu dumps), processed %llu + %llu, %.2f s\n",
	       argv[1], (unsigned long long)du_n, (unsigned long long)ds.in,
	       (unsigned long long)ds.flushes, (unsigned long long)rs[0].restored,
	       (unsigned long long)rs[1].restored, (unsigned long long)(rs[0].dumps + rs[1].dumps),
	       (unsigned long long)s1.processed, (unsigned long long)s2.processed, secs);

	for (int i = 0; i < 2; i++) {
		blq_restorer_free(r[i]);
		blq_dump_reader_free(rd[i]);
	}
	blq_free(q1);
	blq_free(q2);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	blq_prom_free(reg);
	du_rmrf(dir);
	free(du_seen);
	tu_gate_destroy(&gate);
	return du_failures ? 1 : 0;
}
