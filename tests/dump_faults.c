/*
 * dump_faults sigkill N | redis-kill N: dlqdump under real faults.
 *
 * sigkill: a child process dumps N items into a directory and publishes
 * how many its dump reported written; the parent kills it with SIGKILL
 * mid-dump, then restores the directory: every item reported written comes
 * back exactly once, nothing never produced appears, and the temporary
 * file the child may have been writing is never restored.
 *
 * redis-kill: a private redis-server (AOF, fsync always, so a SIGKILL
 * keeps what it acknowledged) is killed mid-run and restarted on the same
 * port while items leak into a Redis dump and two restorers feed them
 * back. No item may be lost; duplicates are allowed (entries a restorer
 * enqueued whose ack died with the server) and counted. Needs
 * BLQ_TEST_REDIS to be set (scripts/test.sh, which installs redis-server);
 * skipped (exit 77) otherwise.
 *
 * redis-late: a private redis-server that is not running yet when a dump
 * with a Redis writer and an fs fallback starts: the first half of the
 * items goes to the fallback's files, the server starts, the second half
 * goes to Redis; each item is read back from exactly one of the two.
 * Needs BLQ_TEST_REDIS too (it says redis-server is installed).
 */
#include <stdarg.h>
#include <sys/mman.h>

#include "dump_util.h"

#define SKIP 77


/* ---- SIGKILL of the producing process ------------------------------ */

typedef struct shared {
	_Atomic uint64_t written;  /* items the child's dump reported written */
	_Atomic uint64_t produced; /* items the child handed to its dump */
} shared;

static void child(const char *dir, shared *sh)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	blq_dump_config dc = {.capacity = 4096, .flush_interval_ns = 5000000,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = w ? blq_dump_new(&dc, &err) : NULL;

	alarm(60); /* never outlive a broken parent */
	if (d == NULL) {
		fprintf(stderr, "dump_faults child: %s\n", err.msg);
		_exit(1);
	}
	for (uint64_t i = 0; i < du_n; i++) {
		if (blq_dump_enqueue(d, du_item(i, 64)) != 0)
			_exit(1);
		atomic_store(&sh->produced, i + 1);
		if (i % 32 == 0) {
			struct blq_dump_stats s;
			blq_dump_stats(d, &s);
			/* One producer and batches written in order: ids below
			 * `written` are on disk. */
			atomic_store(&sh->written, s.written);
			tu_sleep_us(100);
		}
	}
	for (;;)
		pause();
}

static int sigkill_test(void)
{
	char *dir = du_tmpdir("sigkill");
	shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);

	/* Fork before this process starts any thread. */
	pid_t pid = fork();
	if (pid == 0)
		child(dir, sh);
	du_check(pid > 0, "fork");
	du_check(TU_WAIT_FOR(atomic_load(&sh->written) >= du_n / 4, 20000),
	      "the child wrote too little (%llu)", (unsigned long long)atomic_load(&sh->written));
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	du_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child did not die by SIGKILL");
	uint64_t written = atomic_load(&sh->written), produced = atomic_load(&sh->produced);

	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	blq_config qc = {.name = "after", .capacity = 256, .workers = 2, .worker = du_sink,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000};
	blq_restorer *r = rd && q ? blq_restorer_new(&rc, &err) : NULL;
	if (r == NULL) {
		fprintf(stderr, "dump_faults: %s\n", err.msg);
		return 1;
	}
	du_check(TU_WAIT_FOR(du_count(dir, "*.bin") == 0, 20000), "files left unrestored");
	blq_restorer_close(r);
	blq_close(q);
	struct blq_restorer_stats rs;
	blq_restorer_stats(r, &rs);
	uint64_t missing = 0, dup = 0, ghost = 0;
	for (uint64_t i = 0; i < du_n; i++) {
		unsigned k = atomic_load(&du_seen[i]);
		missing += i < written && k == 0;
		dup += k > 1;
		ghost += i >= produced && k > 0;
	}
	du_check(missing == 0, "%llu written items did not come back", (unsigned long long)missing);
	du_check(dup == 0, "%llu items came back twice", (unsigned long long)dup);
	du_check(ghost == 0, "%llu items never produced came back", (unsigned long long)ghost);
	du_check(rs.restored >= written, "restored %llu < written %llu",
	      (unsigned long long)rs.restored, (unsigned long long)written);
	du_check(du_count(dir, "quarantine/*") == 0, "a file was quarantined after a SIGKILL");
	printf("dump_faults sigkill: produced %llu, reported written %llu, restored %llu, "
	       "temporary files left by the kill %zu\n",
	       (unsigned long long)produced, (unsigned long long)written,
	       (unsigned long long)rs.restored, du_count(dir, ".*.tmp"));
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
	return du_failures ? 1 : 0;
}

/* ---- redis-server killed and restarted ----------------------------- */

static tu_gate gate;

static int parked(void *ctx, void *payload, blq_task *t)
{
	tu_gate_pass(&gate);
	return du_sink(ctx, payload, t);
}

static int redis_kill_test(void)
{
	char host[256];
	int env_port;
	if (!du_redis_env(host, sizeof(host), &env_port)) {
		printf("dump_faults: SKIP: BLQ_TEST_REDIS is not set\n");
		return SKIP;
	}
	char *rdir = du_tmpdir("redis-kill");
	int port = du_free_port();
	pid_t srv = du_redis_start(port, rdir);
	if (srv < 0) {
		fprintf(stderr, "dump_faults: cannot start redis-server on port %d\n", port);
		return 1;
	}
	blq_error err;
	blq_logger log = blq_stderr_logger(BLQ_LOG_ERROR);
	blq_dump_redis_config rc = {.port = port, .key = "blq-faults", .version = 1,
				    .connect_timeout_ns = 200000000,
				    .command_timeout_ns = 1000000000,
				    .reconnect_min_ns = 10000000, .reconnect_max_ns = 100000000,
				    .pipeline = 256, .read_count = 128,
				    .claim_idle_ns = 500000000, .logger = log};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	blq_dump_reader *rd[2] = {NULL, NULL};
	for (int i = 0; w != NULL && i < 2; i++) {
		rc.consumer = i == 0 ? "restorer-a" : "restorer-b";
		rd[i] = blq_dump_redis_reader_new(&rc, &err);
	}
	if (w == NULL || rd[0] == NULL || rd[1] == NULL) {
		fprintf(stderr, "dump_faults: %s\n", err.msg);
		du_redis_kill(srv);
		return 1;
	}
	blq_dump_config dc = {.version = 1, .capacity = 2 << 20, .flush_interval_ns = 10000000,
			      .retry_interval_ns = 10000000, .close_timeout_ns = 10000000000ull,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w,
			      .logger = log};
	blq_dump *d = blq_dump_new(&dc, &err);
	tu_gate_init(&gate);
	blq_config c1 = {.name = "source", .capacity = 32, .workers = 1, .worker = parked,
			 .item_free = free, .dlq = blq_dump_enqueuer(d)};
	blq_config c2 = {.name = "target", .capacity = 256, .workers = 2, .worker = du_sink,
			 .item_free = free};
	blq *q1 = blq_new(&c1, &err), *q2 = blq_new(&c2, &err);
	blq_restorer *r[2];
	for (int i = 0; i < 2; i++) {
		blq_restorer_config resc = {.reader = rd[i], .decoder = blq_dump_bytes_decoder(),
					    .target = q2, .item_free = free,
					    .check_interval_ns = 5000000,
					    .postpone_interval_ns = 1000000, .logger = log};
		r[i] = blq_restorer_new(&resc, &err);
	}
	if (d == NULL || q1 == NULL || q2 == NULL || r[0] == NULL || r[1] == NULL) {
		fprintf(stderr, "dump_faults: %s\n", err.msg);
		du_redis_kill(srv);
		return 1;
	}
	/* About a second of production; the server dies a third of the way. */
	for (uint64_t i = 0; i < du_n; i++) {
		blq_bytes *b = du_item(i, 64);
		if (blq_enqueue(q1, b) != 0) {
			free(b);
			du_check(false, "enqueue refused");
		}
		if (i % 50 == 0)
			tu_sleep_us(2000);
		if (i == du_n / 3) {
			du_redis_kill(srv);
			tu_sleep_us(300000);
			srv = du_redis_start(port, rdir);
			du_check(srv > 0, "redis-server did not restart");
		}
	}
	tu_gate_open(&gate);
	blq_close(q1);
	du_check(blq_dump_close(d) == 0, "dump close lost items");
	bool all = TU_WAIT_FOR(({
				       uint64_t k = 0;
				       for (uint64_t i = 0; i < du_n; i++)
					       k += atomic_load(&du_seen[i]) > 0;
				       k == du_n;
			       }),
			       30000);
	for (int i = 0; i < 2; i++)
		blq_restorer_close(r[i]);
	blq_close(q2);

	struct blq_dump_stats ds;
	struct blq_stats s1, s2;
	struct blq_restorer_stats rs[2];
	blq_dump_stats(d, &ds);
	blq_stats(q1, &s1);
	blq_stats(q2, &s2);
	blq_restorer_stats(r[0], &rs[0]);
	blq_restorer_stats(r[1], &rs[1]);
	uint64_t missing = 0, dups = 0;
	for (uint64_t i = 0; i < du_n; i++) {
		unsigned k = atomic_load(&du_seen[i]);
		missing += k == 0;
		dups += k > 1 ? k - 1 : 0;
	}
	du_check(all && missing == 0, "%llu items lost", (unsigned long long)missing);
	du_check(ds.refused + ds.dropped == 0 && ds.written == ds.in,
	      "dump: in %llu written %llu refused %llu dropped %llu", (unsigned long long)ds.in,
	      (unsigned long long)ds.written, (unsigned long long)ds.refused,
	      (unsigned long long)ds.dropped);
	du_check(ds.write_errors > 0, "the kill went unnoticed by the writer");
	du_check(tu_balanced(&s1) && tu_balanced(&s2), "a queue's outcomes do not add up");
	du_check(s2.in == rs[0].restored + rs[1].restored, "target in %llu != restored",
	      (unsigned long long)s2.in);
	du_check(s1.processed + s2.processed == du_n + dups, "processed %llu + %llu, dups %llu",
	      (unsigned long long)s1.processed, (unsigned long long)s2.processed,
	      (unsigned long long)dups);
	printf("dump_faults redis-kill: %llu items, %llu through the dump, %llu write errors, "
	       "restored %llu + %llu, duplicates %llu, lost %llu\n",
	       (unsigned long long)du_n, (unsigned long long)ds.in,
	       (unsigned long long)ds.write_errors, (unsigned long long)rs[0].restored,
	       (unsigned long long)rs[1].restored, (unsigned long long)dups,
	       (unsigned long long)missing);
	for (int i = 0; i < 2; i++) {
		blq_restorer_free(r[i]);
		blq_dump_reader_free(rd[i]);
	}
	blq_free(q1);
	blq_free(q2);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	if (srv > 0)
		du_redis_kill(srv);
	du_rmrf(rdir);
	tu_gate_destroy(&gate);
	return du_failures ? 1 : 0;
}

/* ---- redis-server down when the dump starts ------------------------ */

/* Items i in [from, to), paced, then a flush: each batch goes to Redis or,
 * when it cannot, to the fallback. */
static void dump_range(blq_dump *d, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		du_check(blq_dump_enqueue(d, du_item(i, 64)) == 0, "dump refused item %llu",
			 (unsigned long long)i);
		if (i % 64 == 0)
			tu_sleep_us(1000);
	}
	du_check(blq_dump_flush(d) == 0, "flush");
}

/* Restores every record of a reader into a counting queue (du_seen). */
static bool restore_all(blq_dump_reader *rd, uint64_t want)
{
	blq_error err;
	blq_config qc = {.name = "count", .capacity = 256, .workers = 2, .worker = du_sink,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000};
	blq_restorer *r = q != NULL ? blq_restorer_new(&rc, &err) : NULL;
	if (r == NULL) {
		fprintf(stderr, "dump_faults: %s\n", err.msg);
		blq_free(q);
		return false;
	}
	struct blq_restorer_stats rs;
	bool ok = TU_WAIT_FOR(blq_restorer_stats(r, &rs) == 0 && rs.done >= want, 20000);
	blq_restorer_close(r);
	blq_close(q);
	blq_restorer_free(r);
	blq_free(q);
	return ok;
}

/* Issue 32: a dump whose Redis writer has an fs fallback starts while
 * Redis is down (the writer's constructor does not connect), its first
 * half goes to the fallback's files; the server starts; the second half
 * goes to Redis once the reconnect backoff (at most 100 ms here) let the
 * writer try again. Every item is in exactly one of the two places. */
static int redis_late_test(void)
{
	char host[256];
	int env_port;
	if (!du_redis_env(host, sizeof(host), &env_port)) {
		printf("dump_faults: SKIP: BLQ_TEST_REDIS is not set\n");
		return SKIP;
	}
	char *rdir = du_tmpdir("redis-late"), *fdir = du_tmpdir("redis-late-fb");
	int port = du_free_port();
	blq_error err;
	blq_dump_redis_config rc = {.port = port, .key = "blq-late", .version = 1,
				    .connect_timeout_ns = 200000000,
				    .reconnect_min_ns = 10000000, .reconnect_max_ns = 100000000};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	if (w == NULL) {
		du_check(false, "no Redis writer while the server is down: %s", err.msg);
		return 1;
	}
	blq_dump_fs_config fc = {.directory = fdir, .version = 1};
	blq_dump_writer *fb = blq_dump_fs_writer_new(&fc, &err);
	blq_dump_config dc = {.version = 1, .capacity = 4096, .flush_interval_ns = 10000000,
			      .retry_interval_ns = 10000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w, .fallback = fb};
	blq_dump *d = fb != NULL ? blq_dump_new(&dc, &err) : NULL;
	if (d == NULL) {
		fprintf(stderr, "dump_faults: %s\n", err.msg);
		return 1;
	}
	uint64_t half = du_n / 2;
	dump_range(d, 0, half);
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	du_check(ds.written == 0 && ds.written_fallback == half && ds.write_errors > 0,
		 "Redis down: written %llu, to the fallback %llu (want %llu), write errors %llu",
		 (unsigned long long)ds.written, (unsigned long long)ds.written_fallback,
		 (unsigned long long)half, (unsigned long long)ds.write_errors);
	uint64_t errors_down = ds.write_errors;

	pid_t srv = du_redis_start(port, rdir);
	du_check(srv > 0, "redis-server did not start on port %d", port);
	tu_sleep_us(300000); /* past the backoff's ceiling (100 ms) */
	dump_range(d, half, du_n);
	du_check(blq_dump_close(d) == 0, "dump close lost items");
	blq_dump_stats(d, &ds);
	du_check(ds.written == du_n - half && ds.written_fallback == half &&
			 ds.write_errors == errors_down && ds.refused + ds.dropped == 0,
		 "Redis up: written %llu (want %llu), to the fallback %llu, write errors %llu "
		 "(%llu while down), refused %llu, dropped %llu",
		 (unsigned long long)ds.written, (unsigned long long)(du_n - half),
		 (unsigned long long)ds.written_fallback, (unsigned long long)ds.write_errors,
		 (unsigned long long)errors_down, (unsigned long long)ds.refused,
		 (unsigned long long)ds.dropped);
	printf("dump_faults redis-late: %llu items: %llu to the fallback's files while Redis was "
	       "down (%llu write errors), %llu to Redis after it started\n",
	       (unsigned long long)du_n, (unsigned long long)ds.written_fallback,
	       (unsigned long long)errors_down, (unsigned long long)ds.written);

	/* Count both places, by id: every item once. */
	blq_dump_reader *frd = blq_dump_fs_reader_new(&fc, &err);
	du_check(frd != NULL && restore_all(frd, half), "the fallback's files: %s", err.msg);
	rc.consumer = "late";
	blq_dump_reader *rrd = srv > 0 ? blq_dump_redis_reader_new(&rc, &err) : NULL;
	du_check(rrd != NULL && restore_all(rrd, du_n - half), "the stream: %s", err.msg);
	uint64_t missing = 0, dups = 0, files = 0, redis = 0;
	for (uint64_t i = 0; i < du_n; i++) {
		unsigned k = atomic_load(&du_seen[i]);
		missing += k == 0;
		dups += k > 1;
		files += i < half && k == 1;
		redis += i >= half && k == 1;
	}
	du_check(missing == 0 && dups == 0, "%llu items missing, %llu twice",
		 (unsigned long long)missing, (unsigned long long)dups);
	printf("dump_faults redis-late: read back %llu from the files, %llu from the stream; "
	       "missing %llu, twice %llu\n",
	       (unsigned long long)files, (unsigned long long)redis, (unsigned long long)missing,
	       (unsigned long long)dups);
	blq_dump_reader_free(frd);
	blq_dump_reader_free(rrd);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	blq_dump_writer_free(fb);
	if (srv > 0)
		du_redis_kill(srv);
	du_rmrf(rdir);
	du_rmrf(fdir);
	return du_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	du_prog = "dump_faults";
	if (argc != 3) {
		fprintf(stderr, "usage: dump_faults sigkill|redis-kill|redis-late N\n");
		return 2;
	}
	du_n = strtoull(argv[2], NULL, 10);
	du_seen = calloc(du_n, sizeof(*du_seen));
	int rc = 2;
	if (strcmp(argv[1], "sigkill") == 0)
		rc = sigkill_test();
	else if (strcmp(argv[1], "redis-kill") == 0)
		rc = redis_kill_test();
	else if (strcmp(argv[1], "redis-late") == 0)
		rc = redis_late_test();
	free(du_seen);
	return rc;
}
