/*
 * restore_node: one "host" of the multi-host tests (the scripts in tests/netns), run
 * inside a network namespace against a real redis-server.
 *
 *   restore_node produce HOST PORT KEY N
 *     Host A: a queue whose worker is a transit into a Redis dump (ordinary
 *     work handed over through the stream, not dead letters). Enqueues ids
 *     0..N-1 (64-byte blq_bytes), closes the queue, closes the dump, and
 *     exits 0 only when the dump wrote all N.
 *
 *   restore_node restore HOST PORT KEY CONSUMER LOG [US_PER_ITEM]
 *     Hosts B, C: a restorer on the stream (group "mh") feeding a local
 *     queue whose workers "process" an item by appending "id deliveries\n"
 *     to LOG (one write per line, O_APPEND: a line is whole or absent, and
 *     survives a SIGKILL of this process). Runs until SIGTERM, then closes
 *     gracefully and prints its restorer's counters on stderr.
 *
 * Short timeouts (claim_idle 1 s, commands 500 ms) so the tests see a
 * take-over within seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blq/blq.h>

static int log_fd = -1;
static unsigned us_per_item = 200;

static void die(const char *what, const blq_error *err)
{
	fprintf(stderr, "restore_node: %s: %s\n", what, err->msg);
	exit(2);
}

static int process(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	uint64_t id;
	char line[64];

	(void)ctx, (void)t;
	memcpy(&id, b->data, 8);
	if (us_per_item > 0) {
		struct timespec ts = {0, (long)us_per_item * 1000};
		nanosleep(&ts, NULL);
	}
	int n = snprintf(line, sizeof(line), "%llu %u\n", (unsigned long long)id, b->deliveries);
	if (write(log_fd, line, (size_t)n) != n)
		return 1; /* not processed: it stays, and comes again */
	free(b);
	return 0;
}

static blq_dump_redis_config redis_cfg(const char *host, const char *port, const char *key)
{
	return (blq_dump_redis_config){.host = host, .port = atoi(port), .key = key,
				       .group = "mh", .connect_timeout_ns = 500000000,
				       .command_timeout_ns = 500000000,
				       .reconnect_max_ns = 500000000,
				       .claim_idle_ns = 1000000000, .read_count = 32};
}

static int produce(const char *host, const char *port, const char *key, uint64_t n)
{
	blq_error err;
	blq_dump_redis_config rc = redis_cfg(host, port, key);
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	if (w == NULL)
		die("redis writer", &err);
	blq_dump_config dc = {.name = "handover", .capacity = 1 << 16,
			      .flush_interval_ns = 50000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w, .close_timeout_ns = UINT64_MAX};
	blq_dump *d = blq_dump_new(&dc, &err);
	if (d == NULL)
		die("dump", &err);
	blq_enqueuer transit;
	blq_worker tw = blq_transit_worker(&transit, blq_dump_enqueuer(d));
	blq_config qc = {.name = "host-a", .capacity = 256, .workers = 2, .worker = tw.fn,
			 .worker_ctx = tw.ctx, .item_free = free, .max_retries = 100,
			 .retry_interval_ns = 1000000};
	blq *q = blq_new(&qc, &err);
	if (q == NULL)
		die("queue", &err);
	for (uint64_t i = 0; i < n; i++) {
		unsigned char item[64] = {0};
		memcpy(item, &i, 8);
		if (blq_enqueue(q, blq_bytes_new(item, sizeof(item))) != 0) {
			fprintf(stderr, "restore_node: enqueue %llu refused\n", (unsigned long long)i);
			return 1;
		}
	}
	blq_close(q);
	struct blq_stats qs;
	blq_stats(q, &qs);
	int rc2 = blq_dump_close(d);
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	printf("produced %llu processed %llu written %llu lost %llu\n", (unsigned long long)n,
	       (unsigned long long)qs.processed, (unsigned long long)ds.written,
	       (unsigned long long)(qs.lost + qs.failed + ds.refused + ds.dropped));
	blq_free(q);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	return rc2 == 0 && ds.written == n && qs.processed == n ? 0 : 1;
}

static int restore(const char *host, const char *port, const char *key, const char *consumer,
		   const char *log)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	/* Before any thread: the library's threads inherit the mask, so the
	 * signal waits for sigwait below. */
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0) {
		fprintf(stderr, "restore_node: %s: %s\n", log, strerror(errno));
		return 2;
	}
	blq_error err;
	blq_dump_redis_config rc = redis_cfg(host, port, key);
	rc.consumer = consumer;
	blq_dump_reader *rd;
	/* The server may not be reachable yet (or the link is down): retry. */
	for (int k = 0;; k++) {
		if ((rd = blq_dump_redis_reader_new(&rc, &err)) != NULL)
			break;
		if (k == 100)
			die("redis reader", &err);
		usleep(100000);
	}
	blq_config qc = {.name = consumer, .capacity = 64, .workers = 2, .worker = process,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	if (q == NULL)
		die("queue", &err);
	blq_restorer_config rsc = {.name = consumer, .reader = rd,
				   .decoder = blq_dump_bytes_decoder(), .target = q,
				   .item_free = free, .check_interval_ns = 20000000,
				   .postpone_interval_ns = 1000000, .max_in_flight = 32,
				   .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	blq_restorer *r = blq_restorer_new(&rsc, &err);
	if (r == NULL)
		die("restorer", &err);
	int sig;
	sigwait(&term, &sig);
	blq_restorer_close(r);
	blq_close(q);
	struct blq_restorer_stats st;
	blq_restorer_stats(r, &st);
	fprintf(stderr,
		"restore_node %s: records %llu done %llu returned %llu redelivered %llu "
		"read_errors %llu\n",
		consumer, (unsigned long long)st.records, (unsigned long long)st.done,
		(unsigned long long)st.returned, (unsigned long long)st.redelivered,
		(unsigned long long)st.read_errors);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	close(log_fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "produce") == 0)
		return produce(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 10));
	if (argc >= 7 && strcmp(argv[1], "restore") == 0) {
		if (argc >= 8)
			us_per_item = (unsigned)atoi(argv[7]);
		return restore(argv[2], argv[3], argv[4], argv[5], argv[6]);
	}
	fprintf(stderr, "usage: restore_node produce HOST PORT KEY N\n"
			"       restore_node restore HOST PORT KEY CONSUMER LOG [US_PER_ITEM]\n");
	return 2;
}
