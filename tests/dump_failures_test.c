/*
 * Failures by reason and the dump log writer (issue 34, item 9). The
 * failures are provoked for real: the fs writer's directory removed under
 * it (its writes fail: write, then no_room while they fail, then dropped at
 * close), an encoder that refuses an item (encode), a file damaged on disk
 * (quarantine) and a decoder that refuses a record (decode); the counts
 * must agree between the stats, the metrics callback and the counters they
 * break down. The log writer must tell a real dump and restore event by
 * event, in order.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "dump_util.h"

TestSuite(failures, .timeout = 60);

/* A blq_dump_metrics that counts failures by reason (and lost items). */
typedef struct fcount {
	_Atomic uint64_t by[BLQ_DUMP_FAILURES];
	_Atomic uint64_t lost, bad_reason;
} fcount;

static void fc_failure(void *ctx, const char *name, enum blq_dump_failure reason, uint64_t n)
{
	fcount *f = ctx;

	(void)name;
	if ((unsigned)reason < BLQ_DUMP_FAILURES)
		atomic_fetch_add(&f->by[reason], n);
	else
		atomic_fetch_add(&f->bad_reason, 1);
}

static void fc_lost(void *ctx, const char *name, uint64_t n)
{
	(void)name;
	atomic_fetch_add(&((fcount *)ctx)->lost, n);
}

/* Refuses the payload whose id is ctx's (and encodes the others as bytes). */
static long picky_encode(void *ctx, const void *payload, void *dst, size_t cap)
{
	if (du_id(payload) == *(const uint64_t *)ctx)
		return BLQ_EINVAL;
	return blq_dump_bytes_encoder().encode(NULL, payload, dst, cap);
}

/* The stats' array and the callback's counts agree, reason by reason, and
 * only the reasons in `only` are non-zero. */
static void expect_same(const uint64_t *stats, fcount *f, const int *only, size_t n_only)
{
	for (int k = 0; k < BLQ_DUMP_FAILURES; k++) {
		bool listed = false;
		for (size_t i = 0; i < n_only; i++)
			listed |= only[i] == k;
		const char *name = blq_dump_failure_name((enum blq_dump_failure)k);
		cr_expect_eq(stats[k], atomic_load(&f->by[k]), "%s: stats %llu, metrics %llu", name,
			     (unsigned long long)stats[k], (unsigned long long)atomic_load(&f->by[k]));
		if (listed)
			cr_expect(stats[k] > 0, "%s: never counted", name);
		else
			cr_expect_eq(stats[k], 0, "%s: %llu unexpected", name,
				     (unsigned long long)stats[k]);
	}
	cr_expect_eq(atomic_load(&f->bad_reason), 0);
}

Test(failures, a_dump_counts_write_no_room_encode_and_dropped)
{
	char *dir = du_tmpdir("fail");
	blq_error err;
	blq_dump_fs_config fsc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fsc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	static fcount f;
	blq_dump_metrics m = {.ctx = &f, .failure = fc_failure, .lost = fc_lost};
	uint64_t bad_id = 3;
	blq_dump_config dc = {.name = "failing", .capacity = 512,
			      .encoder = {.encode = picky_encode, .ctx = &bad_id},
			      .item_free = free, .writer = w, .retry_interval_ns = 2000000,
			      .close_timeout_ns = 50000000, .metrics = &m};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);

	/* The directory goes: every write of the fs writer fails from now on
	 * (its temporary file cannot be made). */
	du_rmrf(dir);
	uint64_t accepted = 0, encode_refused = 0, full = 0;
	for (uint64_t i = 0; i < 10000 && full < 5; i++) {
		blq_bytes *b = du_item(i, 40);
		int rc = blq_dump_enqueue(d, b);
		if (rc == 0) {
			accepted++;
			continue;
		}
		free(b);
		if (rc == BLQ_EFULL)
			full++;
		else if (rc == BLQ_EINVAL && i == bad_id)
			encode_refused++;
		else
			cr_assert(false, "item %llu: %s", (unsigned long long)i, blq_strerror(rc));
		if (full == 0)
			tu_sleep_us(200);
	}
	cr_assert_eq(full, 5, "the dump never refused for want of room");
	cr_expect_eq(encode_refused, 1);
	cr_expect_eq(blq_dump_close(d), BLQ_EIO, "close wrote what it could not");
	struct blq_dump_stats st;
	blq_dump_stats(d, &st);
	blq_dump_free(d);
	blq_dump_writer_free(w);

	cr_expect_eq(st.in, accepted);
	cr_expect_eq(st.written + st.written_fallback, 0);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_NO_ROOM], 5);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_ENCODE], 1);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_DROPPED], accepted, "dropped at close");
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_DROPPED], st.dropped);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_WRITE], st.write_errors);
	cr_expect(st.write_errors >= 2, "write attempts failed: %llu",
		  (unsigned long long)st.write_errors);
	cr_expect_eq(st.refused, st.failures[BLQ_DUMP_FAIL_NO_ROOM] +
					 st.failures[BLQ_DUMP_FAIL_ENCODE] +
					 st.failures[BLQ_DUMP_FAIL_MEMORY]);
	cr_expect_eq(atomic_load(&f.lost), st.refused + st.dropped);
	const int only[] = {BLQ_DUMP_FAIL_WRITE, BLQ_DUMP_FAIL_NO_ROOM, BLQ_DUMP_FAIL_ENCODE,
			    BLQ_DUMP_FAIL_DROPPED};
	expect_same(st.failures, &f, only, 4);
}

/* ---- the restorer -------------------------------------------------- */

static _Atomic unsigned seen[256];

static int sink(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	uint64_t id = du_id(payload);
	if (id < 256)
		atomic_fetch_add(&seen[id], 1);
	free(payload);
	return 0;
}

/* Refuses the record of id 7. */
static int picky_decode(void *ctx, const blq_dump_record *rec, void **payload)
{
	uint64_t id;

	(void)ctx;
	if (rec->len >= 8) {
		memcpy(&id, rec->data, 8);
		if (id == 7)
			return BLQ_EINVAL;
	}
	return blq_dump_bytes_decoder().decode(NULL, rec, payload);
}

/* Writes ids [from, to) as one file into dir. */
static void one_file(const char *dir, uint64_t from, uint64_t to)
{
	blq_error err;
	blq_dump_fs_config fsc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fsc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = 1 << 20, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	for (uint64_t i = from; i < to; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 32)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
}

Test(failures, a_restorer_counts_quarantine_and_decode)
{
	char *dir = du_tmpdir("rfail");
	one_file(dir, 0, 20);
	char path[512];
	cr_assert(du_first(dir, "*.bin", path));
	/* The second file gets a later name: the mask has the time and %i. */
	char moved[600];
	snprintf(moved, sizeof(moved), "%s/a-first.bin", dir);
	cr_assert_eq(rename(path, moved), 0);
	one_file(dir, 100, 120);
	cr_assert(du_first(dir, "2*.bin", path));
	/* One byte of its third record's data flipped: its checksum fails. */
	int fd = open(path, O_RDWR);
	cr_assert(fd >= 0);
	off_t at = 16 + 2 * (12 + 32) + 12 + 10;
	unsigned char c;
	cr_assert_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	cr_assert_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);

	static fcount f;
	blq_dump_metrics m = {.ctx = &f, .failure = fc_failure, .lost = fc_lost};
	blq_error err;
	blq_config qc = {.name = "t", .capacity = 64, .workers = 1, .worker = sink,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	cr_assert_not_null(q, "%s", err.msg);
	blq_dump_fs_config fsc = {.directory = dir};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fsc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	blq_restorer_config rc = {.reader = rd, .decoder = {.decode = picky_decode}, .target = q,
				  .item_free = free, .check_interval_ns = 2000000, .metrics = &m};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps == 2, 20000), "dumps: %llu",
		  (unsigned long long)du_rstats(r).dumps);
	blq_restorer_close(r);
	struct blq_restorer_stats st = du_rstats(r);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);

	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_QUARANTINE], 1);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_QUARANTINE], st.quarantined);
	cr_expect_eq(st.failures[BLQ_DUMP_FAIL_DECODE], 1, "decode failures: %llu",
		     (unsigned long long)st.failures[BLQ_DUMP_FAIL_DECODE]);
	cr_expect_eq(st.lost, 1, "the refused record, without a dead store");
	cr_expect_eq(atomic_load(&f.lost), 1);
	cr_expect_eq(st.read_errors, 0);
	/* 39 intact records: 19 restored of the first file (7 refused), 19 of
	 * the damaged one (its third one skipped). */
	cr_expect_eq(st.restored, 38, "restored: %llu", (unsigned long long)st.restored);
	for (uint64_t i = 0; i < 20; i++)
		cr_expect_eq(atomic_load(&seen[i]), i == 7 ? 0 : 1, "id %llu", (unsigned long long)i);
	for (uint64_t i = 100; i < 120; i++)
		cr_expect_eq(atomic_load(&seen[i]), i == 102 ? 0 : 1, "id %llu",
			     (unsigned long long)i);
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 1);
	const int only[] = {BLQ_DUMP_FAIL_QUARANTINE, BLQ_DUMP_FAIL_DECODE};
	expect_same(st.failures, &f, only, 2);
	du_rmrf(dir);
}

Test(failures, every_reason_has_a_name)
{
	const char *want[BLQ_DUMP_FAILURES] = {"write",	 "no_room",    "encode", "memory",
					       "dropped", "read",	"decode", "quarantine",
					       "commit",  "refused",	"sync",	  "dead_store"};
	for (int k = 0; k < BLQ_DUMP_FAILURES; k++)
		cr_expect_str_eq(blq_dump_failure_name((enum blq_dump_failure)k), want[k]);
	cr_expect_str_eq(blq_dump_failure_name((enum blq_dump_failure)BLQ_DUMP_FAILURES),
			 "unknown");
	cr_expect_str_eq(blq_dump_failure_name((enum blq_dump_failure)-1), "unknown");
}

/* ---- the log writer -------------------------------------------------- */

#define LINES_MAX 64
static pthread_mutex_t lines_mu = PTHREAD_MUTEX_INITIALIZER;
static char lines[LINES_MAX][160];
static int levels[LINES_MAX];
static size_t n_lines;

static void keep_line(void *ctx, int level, const char *fmt, va_list ap)
{
	(void)ctx;
	pthread_mutex_lock(&lines_mu);
	if (n_lines < LINES_MAX) {
		vsnprintf(lines[n_lines], sizeof(lines[0]), fmt, ap);
		levels[n_lines++] = level;
	}
	pthread_mutex_unlock(&lines_mu);
}

/* Three items and one the encoder refuses, dumped and flushed by a dump
 * named "d", restored by a restorer named "r" into a one-worker queue:
 * every event in order, at BLQ_LOG_DEBUG. */
Test(failures, the_dump_log_writer_tells_a_dump_and_restore_in_order)
{
	char *dir = du_tmpdir("dlog");
	blq_error err;
	static blq_dump_log_writer lw;
	blq_logger lg = {.log = keep_line};
	cr_assert(blq_dump_log_writer_init(NULL, lg) == NULL);
	const blq_dump_metrics *m = blq_dump_log_writer_init(&lw, lg);
	cr_assert_eq(m, &lw.metrics);

	blq_dump_fs_config fsc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fsc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	uint64_t bad_id = 99;
	blq_dump_config dc = {.name = "d", .capacity = 1 << 20,
			      .encoder = {.encode = picky_encode, .ctx = &bad_id},
			      .item_free = free, .writer = w, .metrics = m};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	cr_assert_eq(blq_dump_enqueue(d, du_item(1, 10)), 0);
	blq_bytes *bad = du_item(99, 15);
	cr_assert_eq(blq_dump_enqueue(d, bad), BLQ_EINVAL);
	free(bad);
	cr_assert_eq(blq_dump_enqueue(d, du_item(2, 20)), 0);
	cr_assert_eq(blq_dump_enqueue(d, du_item(3, 30)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);

	blq_config qc = {.name = "t", .capacity = 64, .workers = 1, .worker = sink,
			 .item_free = free};
	blq *q = blq_new(&qc, &err);
	cr_assert_not_null(q, "%s", err.msg);
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fsc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	blq_restorer_config rc = {.name = "r", .reader = rd, .decoder = blq_dump_bytes_decoder(),
				  .target = q, .item_free = free, .check_interval_ns = 2000000,
				  .metrics = m};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps == 1, 20000));
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);

	/* 10 + 20 + 30 bytes of data, a 12-byte header each. */
	const char *want[] = {
		"dump=d event=in bytes=10",
		"dump=d event=lost items=1",
		"dump=d event=failure reason=encode n=1",
		"dump=d event=in bytes=20",
		"dump=d event=in bytes=30",
		"dump=d event=flush reason=close bytes=96",
		"dump=r event=restore_out bytes=10",
		"dump=r event=restore_out bytes=20",
		"dump=r event=restore_out bytes=30",
	};
	size_t n_want = sizeof(want) / sizeof(want[0]);
	pthread_mutex_lock(&lines_mu);
	cr_expect_eq(n_lines, n_want, "%zu lines, want %zu", n_lines, n_want);
	for (size_t i = 0; i < n_want && i < n_lines; i++) {
		cr_expect_str_eq(lines[i], want[i], "line %zu", i);
		cr_expect_eq(levels[i], BLQ_LOG_DEBUG);
	}
	pthread_mutex_unlock(&lines_mu);
	du_rmrf(dir);
}
