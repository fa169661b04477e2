/*
 * dlq_node: the real producer and the real restorer the blq-dlq tests
 * (the scripts in tests/dlq_tool) and the worked session (scripts/dlq_session.sh)
 * run beside the tool.
 *
 *   dlq_node produce TARGET N [BASE] [failed|overflow|mix] [binary]
 *     Real leaky queues dump ids BASE..BASE+N-1 into TARGET (a directory,
 *     or redis://HOST:PORT/KEY) through a blq_dump with why: "failed"
 *     makes each fail in queue "orders" (rc -42, one attempt), "overflow"
 *     leaks each from queue "ingest" (full, its one worker parked);
 *     "mix" (the default) does the first half one way and the rest the
 *     other. A payload is the text "order ID" (binary: 8 bytes of ID,
 *     then 0x00 0xff 0x7f). Exits 0 only when the dump wrote all N.
 *
 *   dlq_node done DIR K
 *     The real fs reader claims DIR's first file, marks its first K
 *     records done, syncs its checkpoint and releases it (restored
 *     records a restorer has not removed yet).
 *
 *   dlq_node restore TARGET LOG [US_PER_ITEM]
 *     A restorer consuming TARGET (group "blq" on a stream) into a queue
 *     whose worker appends "ID\n" to LOG (O_APPEND, one write a line) and
 *     sleeps US_PER_ITEM (default 0). Runs until SIGTERM, then closes.
 *
 * Counting the lines of LOG per id is how the tests see what was
 * restored, lost or duplicated.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blq/blq.h>

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "dlq_node: %s: %s\n", what, msg);
	exit(2);
}

/* A target: a directory, or redis://HOST:PORT/KEY (split in place). */
struct target {
	const char *dir;
	char host[128];
	int port;
	const char *key;
};

static struct target parse_target(const char *s)
{
	struct target t = {0};
	if (strncmp(s, "redis://", 8) != 0) {
		t.dir = s;
		return t;
	}
	const char *hp = s + 8, *slash = strchr(hp, '/'), *colon = strchr(hp, ':');
	if (slash == NULL || colon == NULL || colon > slash)
		die(s, "expected redis://HOST:PORT/KEY");
	snprintf(t.host, sizeof(t.host), "%.*s", (int)(colon - hp), hp);
	t.port = atoi(colon + 1);
	t.key = slash + 1;
	return t;
}

static blq_dump_redis_config redis_cfg(const struct target *t)
{
	return (blq_dump_redis_config){.host = t->host, .port = t->port, .key = t->key,
				       .group = "blq", .claim_idle_ns = 1000000000,
				       .read_count = 32};
}

static bool binary;

static void *item(uint64_t id)
{
	if (binary) {
		unsigned char b[11];
		memcpy(b, &id, 8);
		b[8] = 0x00, b[9] = 0xff, b[10] = 0x7f;
		return blq_bytes_new(b, sizeof(b));
	}
	char s[32];
	int n = snprintf(s, sizeof(s), "order %" PRIu64, id);
	return blq_bytes_new(s, (size_t)n);
}

/* ---- produce ---- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static atomic_int parked_workers;

static int parked(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)t;
	atomic_fetch_add(&parked_workers, 1);
	pthread_mutex_lock(&gate_mu);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	free(p);
	return 0;
}

static int failing(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)p, (void)t;
	return -42;
}

static blq *queue(blq_config *c)
{
	blq_error err;
	blq *q = blq_new(c, &err);
	if (q == NULL)
		die("queue", err.msg);
	return q;
}

static void leak_failed(blq_dump *d, uint64_t base, uint64_t n)
{
	blq_config c = {.name = "orders", .capacity = 1024, .workers = 1, .worker = failing,
			.item_free = free, .fail_to_dlq = true, .dlq = blq_dump_enqueuer(d)};
	blq *q = queue(&c);
	for (uint64_t i = 0; i < n; i++) {
		while (blq_enqueue(q, item(base + i)) != 0) /* full: wait for room */
			usleep(1000);
	}
	blq_close(q);
	blq_free(q);
}

static void leak_overflow(blq_dump *d, uint64_t base, uint64_t n)
{
	blq_config c = {.name = "ingest", .capacity = 1, .workers = 1, .worker = parked,
			.item_free = free, .dlq = blq_dump_enqueuer(d)};
	blq *q = queue(&c);
	/* Two fillers that are not dumped: one the parked worker holds, one
	 * that fills the queue; then each new item leaks. */
	blq_enqueue(q, blq_bytes_new("filler", 6));
	while (atomic_load(&parked_workers) == 0)
		usleep(1000);
	blq_enqueue(q, blq_bytes_new("filler", 6));
	for (uint64_t i = 0; i < n; i++)
		blq_enqueue(q, item(base + i));
	pthread_mutex_lock(&gate_mu);
	gate_open = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	blq_close(q);
	blq_free(q);
}

static int produce(const struct target *t, uint64_t n, uint64_t base, const char *mode)
{
	blq_error err;
	blq_dump_writer *w;
	if (t->dir != NULL) {
		blq_dump_fs_config fc = {.directory = t->dir};
		w = blq_dump_fs_writer_new(&fc, &err);
	} else {
		blq_dump_redis_config rc = redis_cfg(t);
		w = blq_dump_redis_writer_new(&rc, &err);
	}
	if (w == NULL)
		die("writer", err.msg);
	blq_dump_config dc = {.name = "dlq", .capacity = 1 << 16, .flush_interval_ns = 50000000,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w,
			      .close_timeout_ns = UINT64_MAX};
	blq_dump *d = blq_dump_new(&dc, &err);
	if (d == NULL)
		die("dump", err.msg);
	uint64_t nf = strcmp(mode, "failed") == 0 ? n : strcmp(mode, "overflow") == 0 ? 0 : n / 2;
	if (nf > 0)
		leak_failed(d, base, nf);
	if (n > nf)
		leak_overflow(d, base + nf, n - nf);
	int rc = blq_dump_close(d);
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	printf("produced %" PRIu64 " failed %" PRIu64 " overflow %" PRIu64 " written %" PRIu64
	       "\n",
	       n, nf, n - nf, ds.written);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	return rc == 0 && ds.written == n ? 0 : 1;
}

/* ---- restore ---- */

static int log_fd = -1;
static unsigned us_per_item;

static int process(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	char line[48];
	uint64_t id = 0;
	(void)ctx, (void)t;
	if (b->len > 6 && b->len < 32 && memcmp(b->data, "order ", 6) == 0) {
		char digits[32];
		memcpy(digits, b->data + 6, b->len - 6);
		digits[b->len - 6] = '\0';
		id = strtoull(digits, NULL, 10);
	} else if (b->len == 11) {
		memcpy(&id, b->data, 8);
	}
	if (us_per_item > 0)
		usleep(us_per_item);
	int n = snprintf(line, sizeof(line), "%" PRIu64 "\n", id);
	if (write(log_fd, line, (size_t)n) != n)
		return 1; /* not processed: it stays, and comes again */
	free(b);
	return 0;
}

static int restore(const struct target *t, const char *log)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	/* Before any thread: the library's threads inherit the mask. */
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		die(log, strerror(errno));
	blq_error err;
	blq_dump_reader *rd;
	char consumer[32];
	snprintf(consumer, sizeof(consumer), "restorer-%d", (int)getpid());
	if (t->dir != NULL) {
		blq_dump_fs_config fc = {.directory = t->dir};
		rd = blq_dump_fs_reader_new(&fc, &err);
	} else {
		blq_dump_redis_config rc = redis_cfg(t);
		rc.consumer = consumer;
		rd = blq_dump_redis_reader_new(&rc, &err);
	}
	if (rd == NULL)
		die("reader", err.msg);
	blq_config qc = {.name = "orders", .capacity = 256, .workers = 2, .worker = process,
			 .item_free = free};
	blq *q = queue(&qc);
	blq_restorer_config rsc = {.name = consumer, .reader = rd,
				   .decoder = blq_dump_bytes_decoder(), .target = q,
				   .item_free = free, .check_interval_ns = 20000000,
				   .postpone_interval_ns = 1000000, .max_in_flight = 64,
				   .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	blq_restorer *r = blq_restorer_new(&rsc, &err);
	if (r == NULL)
		die("restorer", err.msg);
	printf("ready\n");
	fflush(stdout);
	int sig;
	sigwait(&term, &sig);
	blq_restorer_close(r);
	blq_close(q);
	struct blq_restorer_stats st;
	blq_restorer_stats(r, &st);
	fprintf(stderr, "dlq_node restore: records %" PRIu64 " redelivered %" PRIu64 "\n",
		st.records, st.redelivered);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	close(log_fd);
	return 0;
}

/* The real fs reader takes DIR's first file, marks its first k records
 * done (as a restorer does once their items reached an outcome), syncs the
 * checkpoint and lets the file go: records restored, the file not yet
 * removed. */
static int mark_done(const char *dir, uint64_t k)
{
	blq_error err = {0};
	blq_dump_fs_config c = {.directory = dir};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&c, &err);
	void *dump = NULL;
	blq_dump_record rec;
	if (rd == NULL)
		die("reader", err.msg);
	if (rd->next(rd, &dump, &err) != 1)
		die("next", "no file to claim");
	for (uint64_t i = 0; i < k && rd->record(rd, dump, &rec, &err) == 1; i++)
		if (rd->done(rd, dump, rec.index, &err) != 0)
			die("done", err.msg);
	if (rd->sync(rd, dump, &err) != 0)
		die("sync", err.msg);
	rd->release(rd, dump);
	blq_dump_reader_free(rd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "done") == 0)
		return mark_done(argv[2], strtoull(argv[3], NULL, 10));
	if (argc >= 4 && strcmp(argv[1], "produce") == 0) {
		struct target t = parse_target(argv[2]);
		uint64_t base = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
		binary = argc > 6 && strcmp(argv[6], "binary") == 0;
		return produce(&t, strtoull(argv[3], NULL, 10), base, argc > 5 ? argv[5] : "mix");
	}
	if (argc >= 4 && strcmp(argv[1], "restore") == 0) {
		struct target t = parse_target(argv[2]);
		if (argc > 4)
			us_per_item = (unsigned)atoi(argv[4]);
		return restore(&t, argv[3]);
	}
	fprintf(stderr, "usage: dlq_node produce TARGET N [BASE] [failed|overflow|mix] [binary]\n"
			"       dlq_node restore TARGET LOG [US_PER_ITEM]\n"
			"       dlq_node done DIR K\n");
	return 2;
}
