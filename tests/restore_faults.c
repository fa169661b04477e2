/*
 * restore_faults fs|redis PROCS KILLS [ITEMS]: restorer processes killed
 * with SIGKILL at random moments, then checked for loss.
 *
 * ITEMS ids are dumped (files, or a Redis stream on BLQ_TEST_REDIS). PROCS
 * restorer processes share them, each feeding its own slow target queue;
 * the parent kills a random one KILLS times, at random moments (before,
 * during and after enqueueing, with items still in its target), and starts
 * a replacement each time. Once every id was processed and the source is
 * empty, the survivors stop (SIGTERM) and the checks run:
 *   - no id lost, none that was never dumped;
 *   - duplicates (processings past the first) <= KILLS * MAXF, the bound
 *     docs/scaling-out.md states (max_in_flight per dead restorer);
 *   - every duplicate was visible to the worker as a redelivery
 *     (blq_bytes.deliveries > 0);
 *   - nothing left: no file, checkpoint or quarantined file; no stream
 *     entry, nothing pending;
 *   - accounting: written == distinct processed + left in the source.
 * Exit 77 (skip) for redis without BLQ_TEST_REDIS.
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "dump_util.h"

#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>
#endif

#define SKIP 77
#define MAXF 32u

static _Atomic unsigned *seen, *redelivered;
/* Per child slot: its restorer's records in flight, published every 2 ms,
 * so the parent knows whether a kill hit a target holding items. */
static _Atomic uint64_t *in_flight;
static uint64_t items;
static unsigned work_us;
static bool use_redis;
static char dir[64], key[96], host[64];
static int port;

static int work(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	uint64_t id = du_id(b);

	(void)ctx, (void)t;
	tu_sleep_us(work_us);
	if (id < items) {
		atomic_fetch_add(&seen[id], 1);
		if (b->deliveries > 0)
			atomic_fetch_add(&redelivered[id], 1);
	}
	free(b);
	return 0;
}

static blq_dump_redis_config redis_cfg(const char *consumer)
{
	return (blq_dump_redis_config){.host = host, .port = port, .key = key, .group = "rf",
				       .consumer = consumer, .claim_idle_ns = 300000000,
				       .read_count = MAXF};
}

/* A child: dumps the ids, exits 0 when all were written. */
static void fill(void)
{
	blq_error err;
	blq_dump_writer *w;

	if (use_redis) {
		blq_dump_redis_config rc = redis_cfg(NULL);
		w = blq_dump_redis_writer_new(&rc, &err);
	} else {
		blq_dump_fs_config fc = {.directory = dir};
		w = blq_dump_fs_writer_new(&fc, &err);
	}
	if (w == NULL) {
		fprintf(stderr, "restore_faults: writer: %s\n", err.msg);
		_exit(1);
	}
	/* About 40 records per batch: many files, many stream batches. */
	blq_dump_config dc = {.capacity = 40 * (12 + 64), .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	if (d == NULL)
		_exit(1);
	for (uint64_t i = 0; i < items; i++)
		if (blq_dump_enqueue(d, du_item(i, 64)) != 0)
			_exit(1);
	struct blq_dump_stats s;
	if (blq_dump_flush(d) != 0 || blq_dump_stats(d, &s) != 0 || s.written != items)
		_exit(1);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	_exit(0);
}

/* A restorer process: runs until SIGTERM, then closes and exits 0. */
static void restorer_child(unsigned n, unsigned slot)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	alarm(240); /* never outlive a broken parent */

	char name[32];
	snprintf(name, sizeof(name), "rf-%u-%d", n, (int)getpid());
	blq_error err;
	blq_dump_reader *rd;
	if (use_redis) {
		blq_dump_redis_config rc = redis_cfg(name);
		rd = blq_dump_redis_reader_new(&rc, &err);
	} else {
		blq_dump_fs_config fc = {.directory = dir};
		rd = blq_dump_fs_reader_new(&fc, &err);
	}
	if (rd == NULL) {
		fprintf(stderr, "restore_faults: reader: %s\n", err.msg);
		_exit(1);
	}
	blq_config qc = {.name = "target", .capacity = 64, .workers = 1, .worker = work,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	blq_restorer_config rsc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				   .item_free = free, .check_interval_ns = 5000000,
				   .postpone_interval_ns = 1000000, .max_in_flight = MAXF,
				   .logger = blq_stderr_logger(BLQ_LOG_ERROR)};
	blq_restorer *r = q ? blq_restorer_new(&rsc, &err) : NULL;
	if (r == NULL) {
		fprintf(stderr, "restore_faults: restorer: %s\n", err.msg);
		_exit(1);
	}
	struct timespec tick = {0, 2000000};
	while (sigtimedwait(&term, NULL, &tick) < 0) {
		struct blq_restorer_stats st;
		blq_restorer_stats(r, &st);
		atomic_store(&in_flight[slot], st.in_flight);
	}
	blq_restorer_close(r);
	blq_close(q);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	_exit(0);
}

static pid_t spawn(unsigned n, unsigned slot)
{
	atomic_store(&in_flight[slot], 0);
	pid_t pid = fork();

	if (pid == 0)
		restorer_child(n, slot);
	du_check(pid > 0, "fork");
	return pid;
}

#ifdef BLQ_TEST_WITH_REDIS
static redisContext *rc_conn;

static long long redis_num(const char *cmd)
{
	redisReply *rep = redisCommand(rc_conn, cmd, key);
	long long v = -1;

	if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	else if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
		 rep->element[0]->type == REDIS_REPLY_INTEGER)
		v = rep->element[0]->integer;
	else if (rep != NULL && rep->type == REDIS_REPLY_ERROR &&
		 strncmp(rep->str, "NOGROUP", 7) == 0)
		v = 0;
	freeReplyObject(rep);
	return v;
}
#else
static long long redis_num(const char *cmd)
{
	(void)cmd;
	return -1;
}
#endif

/* Records still in the source: files' records, or stream entries. */
static long long source_left(void)
{
	if (use_redis)
		return redis_num("XLEN %s");
	return (long long)du_count(dir, "*.bin");
}

static uint64_t distinct(void)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < items; i++)
		n += atomic_load(&seen[i]) > 0;
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "fs") != 0 && strcmp(argv[1], "redis") != 0)) {
		fprintf(stderr, "usage: restore_faults fs|redis PROCS KILLS [ITEMS]\n");
		return 2;
	}
	use_redis = strcmp(argv[1], "redis") == 0;
	unsigned procs = (unsigned)atoi(argv[2]), kills = (unsigned)atoi(argv[3]);
	items = argc > 4 ? strtoull(argv[4], NULL, 10) : (use_redis ? 5000 : 2000);
	du_check(procs >= 1 && procs <= 8, "PROCS: 1..8");
	if (use_redis) {
#ifndef BLQ_TEST_WITH_REDIS
		fprintf(stderr, "restore_faults: built without Redis: skipped\n");
		return SKIP;
#else
		if (!du_redis_env(host, sizeof(host), &port)) {
			fprintf(stderr, "restore_faults: BLQ_TEST_REDIS unset: skipped\n");
			return SKIP;
		}
		rc_conn = redisConnect(host, port);
		du_check(rc_conn != NULL && rc_conn->err == 0, "redis at %s:%d", host, port);
		snprintf(key, sizeof(key), "blq:test:restore_faults:%d", (int)getpid());
		freeReplyObject(redisCommand(rc_conn, "DEL %s", key));
#endif
	} else {
		snprintf(dir, sizeof(dir), "%s", du_tmpdir("rfaults"));
	}
	size_t bytes = (size_t)items * sizeof(unsigned) * 2;
	seen = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	du_check(seen != MAP_FAILED, "mmap");
	redelivered = seen + items;
	in_flight = mmap(NULL, 8 * sizeof(*in_flight), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	du_check(in_flight != MAP_FAILED, "mmap");
	/* Pace the work so that it lasts through the kills (about 4.3 s of
	 * them): kills land before, during and after enqueueing. */
	work_us = (unsigned)(4000000ull * procs / items);
	work_us = work_us < 100 ? 100 : work_us > 5000 ? 5000 : work_us;

	/* SIGTERM blocked from the start, inherited by every child (and the
	 * library's threads there): a child stopped right after its fork
	 * still takes it in sigwait. No thread in this process, ever: it only
	 * forks, kills and counts. */
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	pid_t f = fork();
	if (f == 0)
		fill();
	int status;
	waitpid(f, &status, 0);
	du_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "dumping the items failed");

	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	if (getenv("BLQ_TEST_SEED") != NULL)
		seed = (unsigned)atoi(getenv("BLQ_TEST_SEED"));
	srand(seed);
	uint64_t t0 = tu_now_ns();
	pid_t kids[8];
	unsigned born = 0;
	unsigned loaded_kills = 0; /* kills of a restorer with records in flight */
	for (unsigned i = 0; i < procs; i++)
		kids[i] = spawn(born++, i);
	for (unsigned k = 0; k < kills; k++) {
		tu_sleep_us(30000 + (unsigned)(rand() % 370000));
		unsigned v = (unsigned)rand() % procs;
		loaded_kills += atomic_load(&in_flight[v]) > 0;
		kill(kids[v], SIGKILL);
		waitpid(kids[v], &status, 0);
		du_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			 "restorer %u did not die by SIGKILL (status %d)", v, status);
		kids[v] = spawn(born++, v);
	}
	bool finished = TU_WAIT_FOR(distinct() == items && source_left() == 0 &&
					    (!use_redis || redis_num("XPENDING %s rf") == 0),
				    90000);
	for (unsigned i = 0; i < procs; i++) {
		kill(kids[i], SIGTERM);
		waitpid(kids[i], &status, 0);
		du_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "a surviving restorer did not stop cleanly (status %d)", status);
	}
	double elapsed = (double)(tu_now_ns() - t0) / 1e9;

	uint64_t lost = 0, processed = 0, dups = 0, unmarked = 0;
	for (uint64_t i = 0; i < items; i++) {
		unsigned k = atomic_load(&seen[i]);
		lost += k == 0;
		processed += k;
		dups += k > 1 ? k - 1 : 0;
		if (k > 1 && atomic_load(&redelivered[i]) < k - 1)
			unmarked++;
	}
	long long left = source_left();
	printf("restore_faults %s procs=%u kills=%u kills_with_items_in_flight=%u items=%llu "
	       "seed=%u processed=%llu duplicates=%llu bound=%u lost=%llu left=%lld "
	       "elapsed=%.1f\n",
	       argv[1], procs, kills, loaded_kills, (unsigned long long)items, seed,
	       (unsigned long long)processed, (unsigned long long)dups, kills * MAXF,
	       (unsigned long long)lost, left, elapsed);
	du_check(finished, "not finished in 90 s: %llu of %llu ids processed, %lld left in the "
			   "source, %lld pending",
		 (unsigned long long)distinct(), (unsigned long long)items, left,
		 use_redis ? redis_num("XPENDING %s rf") : 0);
	du_check(lost == 0, "%llu ids never processed", (unsigned long long)lost);
	du_check(dups <= (uint64_t)kills * MAXF, "%llu duplicates, above the bound %u",
		 (unsigned long long)dups, kills * MAXF);
	du_check(unmarked == 0, "%llu ids processed twice without a redelivery mark",
		 (unsigned long long)unmarked);
	du_check((long long)items == (long long)distinct() + left,
		 "accounting: written %llu != processed %llu + left %lld",
		 (unsigned long long)items, (unsigned long long)distinct(), left);
	if (use_redis) {
		du_check(redis_num("XPENDING %s rf") == 0, "entries left pending");
#ifdef BLQ_TEST_WITH_REDIS
		freeReplyObject(redisCommand(rc_conn, "DEL %s", key));
		redisFree(rc_conn);
#endif
	} else {
		du_check(du_count(dir, ".*.ckpt") == 0, "checkpoints left behind");
		du_check(du_count(dir, "quarantine/*") == 0, "a file was quarantined after a kill");
		du_rmrf(dir);
	}
	return du_failures ? 1 : 0;
}
