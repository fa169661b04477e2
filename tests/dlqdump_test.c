/*
 * dlqdump on real files: the format and its checksum, configuration
 * errors, the flush triggers, a round trip through a directory, damaged
 * files (quarantined, good records restored), failing writes (tiny tmpfs
 * or a directory replaced by a file: reported, buffered, refused or
 * dropped, always counted), the fallback writer, the restore limit and
 * the dead store, and the Prometheus families (promtool).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mount.h>

#include "../dlq/crc32c.h"
#include "../dlq/dump_format.h"
#include "dump_util.h"
#include "suite_util.h"

TestSuite(dlqdump, .timeout = 60);

/* ---- a target queue that records what it processed ------------------ */

#define MAX_IDS 20000
static _Atomic unsigned seen[MAX_IDS];
static _Atomic uint64_t seen_restores; /* sum of blq_bytes.restores */

static int sink(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	uint64_t id = du_id(b);

	(void)ctx, (void)t;
	if (id < MAX_IDS)
		atomic_fetch_add(&seen[id], 1);
	atomic_fetch_add(&seen_restores, b->restores);
	free(b);
	return 0;
}

static blq *sink_new(size_t capacity)
{
	blq_config c = {.name = "sink", .capacity = capacity, .workers = 2, .worker = sink,
			.item_free = free};
	return must_new(&c);
}

/* Ids 0..n-1 each seen exactly once (and nothing else). */
static void expect_each_once(uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < MAX_IDS; i++)
		if (atomic_load(&seen[i]) != (i < n ? 1u : 0u))
			bad++;
	cr_expect_eq(bad, 0, "%llu ids not seen exactly once", (unsigned long long)bad);
}


/* A worker parked on the gate in ctx, then a sink. */
static int gated(void *ctx, void *p, blq_task *t)
{
	tu_gate_pass(ctx);
	return sink(NULL, p, t);
}

static int fail_all(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)p, (void)t;
	return 1;
}


/* Counting metrics. */
static _Atomic uint64_t m_in, m_out, m_flush_bytes, m_lost, m_quarantined;
static void mc_in(void *c, const char *n, size_t b) { (void)c, (void)n, (void)b; m_in++; }
static void mc_out(void *c, const char *n, size_t b) { (void)c, (void)n, (void)b; m_out++; }
static void mc_flush(void *c, const char *n, enum blq_dump_flush_reason r, size_t b)
{
	(void)c, (void)n, (void)r;
	m_flush_bytes += b;
}
static void mc_lost(void *c, const char *n, uint64_t k) { (void)c, (void)n; m_lost += k; }
static void mc_quar(void *c, const char *n, uint64_t k) { (void)c, (void)n; m_quarantined += k; }
static const blq_dump_metrics counting = {.dump_in = mc_in, .restore_out = mc_out,
					  .flush = mc_flush, .lost = mc_lost,
					  .quarantined = mc_quar};

static blq_dump_writer *must_fs_writer(const char *dir)
{
	blq_dump_fs_config fc = {.directory = dir};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);

	cr_assert_not_null(w, "fs writer: %s", err.msg);
	return w;
}

static blq_dump *must_dump(blq_dump_config *c)
{
	blq_error err;
	blq_dump *d = blq_dump_new(c, &err);

	cr_assert_not_null(d, "blq_dump_new: %s", err.msg);
	return d;
}

static struct blq_dump_stats dstats(blq_dump *d)
{
	struct blq_dump_stats s;

	blq_dump_stats(d, &s);
	return s;
}

static struct blq_restorer_stats rstats(blq_restorer *r)
{
	struct blq_restorer_stats s;

	blq_restorer_stats(r, &s);
	return s;
}

/* Restores every file in dir into a fresh sink; returns the restorer's
 * stats once `expect` items were restored and no file is left (or 5 s). */
static struct blq_restorer_stats restore_dir(const char *dir, uint64_t version, uint64_t expect)
{
	blq_dump_fs_config fc = {.directory = dir, .version = version, .metrics = &counting,
				 .logger = du_keeper};
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "fs reader: %s", err.msg);
	blq *q = sink_new(64);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .metrics = &counting,
				  .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "restorer: %s", err.msg);
	TU_WAIT_FOR(rstats(r).restored >= expect && du_count(dir, "*.bin") == 0, 5000);
	blq_restorer_close(r);
	struct blq_restorer_stats out = rstats(r);
	blq_restorer_free(r);
	blq_close(q);
	struct blq_stats qs = stats(q);
	cr_expect(tu_balanced(&qs));
	cr_expect_eq(qs.processed, out.restored);
	blq_free(q);
	blq_dump_reader_free(rd);
	return out;
}

/* ---- format ------------------------------------------------------- */

Test(dlqdump, crc32c_check_value_and_record_parse)
{
	cr_expect_eq(blq__crc32c(0, "123456789", 9), 0xE3069283u);
	cr_expect_eq(blq__crc32c(blq__crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);

	blq__buf b = {0};
	cr_assert_eq(blq__dump_rec_append(&b, 1, "hello", 5, 3, NULL), 0);
	cr_assert_eq(blq__dump_rec_append(&b, 1, "", 0, 0, NULL), 0);
	size_t off = 0;
	blq_dump_record rec;
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_OK);
	cr_expect_eq(rec.len, 5);
	cr_expect_eq(rec.restores, 3);
	cr_expect(memcmp(rec.data, "hello", 5) == 0);
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_OK);
	cr_expect_eq(rec.len, 0);
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_END);

	off = 0; /* truncated: every cut of the first record */
	for (size_t cut = 1; cut < 17; cut++)
		cr_expect_eq(blq__dump_rec_parse(b.p, cut, 1, &off, &rec), BLQ__DUMP_TRUNCATED,
			     "cut %zu", cut);
	b.p[14] ^= 1; /* a data byte */
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_BAD_CRC);
	b.p[14] ^= 1;
	b.p[4] ^= 1; /* the restore count is covered too */
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_BAD_CRC);
	blq__put32(b.p, 0xFFFFFFF0u); /* absurd length: refused before any use */
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 1, &off, &rec), BLQ__DUMP_TOO_LONG);
	cr_expect_eq(off, 0);
	blq__buf_free(&b);

	unsigned char h[BLQ__DUMP_HEADER];
	uint64_t v = 0;
	unsigned fmt = 0;
	blq__dump_header_put(h, 1, 0x0102030405060708ull);
	cr_expect_eq(blq__dump_header_check(h, sizeof(h), &fmt, &v), BLQ__DUMP_OK);
	cr_expect_eq(v, 0x0102030405060708ull);
	cr_expect_eq(blq__dump_header_check(h, 10, &fmt, &v), BLQ__DUMP_SHORT_HEADER);
	h[0] = 'X';
	cr_expect_eq(blq__dump_header_check(h, sizeof(h), &fmt, &v), BLQ__DUMP_BAD_MAGIC);
}

/* ---- configuration errors ----------------------------------------- */

Test(dlqdump, bad_configs_name_the_field)
{
	char *dir = du_tmpdir("cfg");
	blq_error err;
	blq_dump_fs_config fc = {.directory = "/nonexistent/blq-dump"};

	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, "directory") && strstr(err.msg, "/nonexistent/blq-dump"), "%s",
		  err.msg);
	fc.directory = NULL;
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "directory: required") != NULL, "%s", err.msg);

	/* A path that is a file, not a directory. */
	char file[300];
	snprintf(file, sizeof(file), "%s/plain", dir);
	close(open(file, O_CREAT | O_WRONLY, 0644));
	fc.directory = file;
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "Not a directory") != NULL, "%s", err.msg);

	fc.directory = dir;
	fc.file_mask = "";
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "file_mask: must not be empty") != NULL, "%s", err.msg);
	fc.file_mask = "dump-%Y.bin"; /* no counter */
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "file_mask") && strstr(err.msg, "%i"), "%s", err.msg);
	fc.file_mask = "dump-%%i.bin"; /* a literal "%i": still no counter */
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "file_mask") && strstr(err.msg, "%i"), "%s", err.msg);
	fc.file_mask = "dump-%i.dat"; /* readers (default *.bin) would never see it */
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	cr_expect(strstr(err.msg, "match") != NULL, "%s", err.msg);
	fc.file_mask = "a/%i.bin";
	cr_expect_null(blq_dump_fs_writer_new(&fc, &err));
	fc.file_mask = NULL;

	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 0, .encoder = blq_dump_bytes_encoder(), .writer = w};
	cr_expect_null(blq_dump_new(&dc, &err));
	cr_expect(strstr(err.msg, "capacity") != NULL, "%s", err.msg);
	dc.capacity = 1024;
	dc.encoder.encode = NULL;
	cr_expect_null(blq_dump_new(&dc, &err));
	cr_expect(strstr(err.msg, "encoder") != NULL, "%s", err.msg);
	dc.encoder = blq_dump_bytes_encoder();
	dc.writer = NULL;
	cr_expect_null(blq_dump_new(&dc, &err));
	cr_expect(strstr(err.msg, "writer: required") != NULL, "%s", err.msg);
	dc.writer = w;
	dc.name = "";
	cr_expect_null(blq_dump_new(&dc, &err));
	cr_expect(strstr(err.msg, "name") != NULL, "%s", err.msg);

	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	blq *q = sink_new(8);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .max_restores = 3};
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "dead") != NULL, "%s", err.msg);
	rc.max_restores = 0;
	rc.allow_rate = 1.5;
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "allow_rate") != NULL, "%s", err.msg);
	rc.allow_rate = 0;
	rc.target = NULL;
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "target") != NULL, "%s", err.msg);

	/* An unreachable Redis: the message names the address. */
	int port = du_free_port();
	blq_dump_redis_config rcfg = {.port = port, .key = "k", .connect_timeout_ns = 200000000};
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	rcfg.read_count = 1000000;
	cr_expect_null(blq_dump_redis_reader_new(&rcfg, &err));
#ifdef BLQ_TEST_WITH_REDIS
	cr_expect(strstr(err.msg, "read_count: must be <= 100000") != NULL, "%s", err.msg);
#endif
	rcfg.read_count = 0;
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
#ifdef BLQ_TEST_WITH_REDIS
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, addr) != NULL, "%s", err.msg);
	cr_expect_null(blq_dump_redis_reader_new(&rcfg, &err));
	cr_expect(strstr(err.msg, addr) != NULL, "%s", err.msg);
	rcfg.key = NULL;
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "key") != NULL, "%s", err.msg);
#else
	cr_expect_eq(err.code, BLQ_ENOTSUP);
#endif
	blq_free(q);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	du_rmrf(dir);
}

/* Every public function of dlqdump.h given NULL for its object or config
 * returns its error (NULL, BLQ_EINVAL) or does nothing, never crashes. */
Test(dlqdump, null_arguments_get_their_error)
{
	blq_error err;
	struct blq_dump_stats ds;
	struct blq_restorer_stats rs;

	cr_expect_null(blq_bytes_new(NULL, 5), "NULL data with a length");
	blq_bytes *empty = blq_bytes_new(NULL, 0);
	cr_assert_not_null(empty, "NULL data, length 0: an empty buffer");
	cr_expect_eq(empty->len, 0);
	free(empty);

	cr_expect_null(blq_dump_fs_writer_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_null(blq_dump_fs_reader_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_null(blq_dump_redis_writer_new(NULL, &err));
	cr_expect_null(blq_dump_redis_reader_new(NULL, &err));
	cr_expect_null(blq_dump_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect_null(blq_restorer_new(NULL, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);

	int payload;
	cr_expect_eq(blq_dump_enqueue(NULL, &payload), BLQ_EINVAL);
	blq_enqueuer e = blq_dump_enqueuer(NULL);
	cr_expect_eq(e.enqueue(e.self, &payload), BLQ_EINVAL, "refused: the caller keeps it");
	cr_expect_eq(e.sync(e.self), BLQ_EINVAL);
	cr_expect_eq(blq_dump_flush(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_dump_close(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_dump_stats(NULL, &ds), BLQ_EINVAL);
	cr_expect_eq(blq_restorer_kick(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_restorer_close(NULL), BLQ_EINVAL);
	cr_expect_eq(blq_restorer_stats(NULL, &rs), BLQ_EINVAL);
	blq_dump_free(NULL);
	blq_restorer_free(NULL);
	blq_dump_writer_free(NULL);
	blq_dump_reader_free(NULL);
}

/* ---- flushing ----------------------------------------------------- */

Test(dlqdump, flushes_on_capacity_interval_and_close)
{
	char *dir = du_tmpdir("flush");
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 1000, .flush_interval_ns = 30000000, /* 30 ms */
			      .encoder = blq_dump_string_encoder(), .writer = w};
	blq_dump *d = must_dump(&dc);

	/* Capacity: 100 records of 12 + 8 bytes = 2000 bytes -> 2 files soon. */
	for (int i = 0; i < 100; i++)
		cr_assert_eq(blq_dump_enqueue(d, "12345678"), 0);
	cr_expect(TU_WAIT_FOR(du_count(dir, "*.bin") >= 2, 2000));
	/* Interval: one item alone is written within ~30 ms. */
	size_t before = du_count(dir, "*.bin");
	cr_assert_eq(blq_dump_enqueue(d, "x"), 0);
	cr_expect(TU_WAIT_FOR(du_count(dir, "*.bin") == before + 1, 2000));
	cr_expect(TU_WAIT_FOR(dstats(d).buffered == 0, 2000)); /* stats follow the rename */
	/* Close: the last item is written at once. */
	dc.flush_interval_ns = 3600ull * 1000000000u;
	blq_dump *d2 = must_dump(&dc);
	cr_assert_eq(blq_dump_enqueue(d2, "last"), 0);
	cr_expect_eq(blq_dump_close(d2), 0);
	cr_expect_eq(blq_dump_enqueue(d2, "late"), BLQ_ECLOSED);
	struct blq_dump_stats s = dstats(d2);
	cr_expect_eq(s.in, 1);
	cr_expect_eq(s.written, 1);
	cr_expect_eq(s.bytes_flushed, 12 + 4);
	blq_dump_free(d2);
	blq_dump_free(d);
	cr_expect_eq(du_count(dir, ".*.tmp"), 0, "temporary files left");
	blq_dump_writer_free(w);
	du_rmrf(dir);
}

/* ---- round trip --------------------------------------------------- */

Test(dlqdump, fs_round_trip_through_a_leaky_queue)
{
	char *dir = du_tmpdir("rt");
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 8192, .flush_interval_ns = 20000000, .version = 7,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w,
			      .metrics = &counting};
	blq_dump *d = must_dump(&dc);
	static tu_gate gate;
	tu_gate_init(&gate);
	/* The source: 4 slots, its worker parked, so nearly everything leaks. */
	blq_config c1 = {.name = "src", .capacity = 4, .workers = 1, .worker = NULL,
			 .item_free = free, .dlq = blq_dump_enqueuer(d)};
	c1.worker = gated;
	c1.worker_ctx = &gate;
	blq *src_q = must_new(&c1);
	const uint64_t n = 5000;
	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(blq_enqueue(src_q, du_item(i, 40)), 0);
	tu_gate_open(&gate);
	blq_close(src_q);
	struct blq_stats s1 = stats(src_q);
	cr_expect(tu_balanced(&s1));
	cr_expect_eq(blq_dump_close(d), 0);
	struct blq_dump_stats ds = dstats(d);
	cr_expect_eq(ds.in, s1.leaked);
	cr_expect_eq(ds.written, ds.in);
	cr_expect_eq(ds.refused + ds.dropped + ds.buffered, 0);
	cr_expect_eq(m_in, ds.in);
	cr_expect_eq(m_flush_bytes, ds.bytes_flushed);

	struct blq_restorer_stats rs = restore_dir(dir, 7, ds.in);
	cr_expect_eq(rs.restored, ds.in);
	expect_each_once(n);
	cr_expect_eq(m_out, ds.in);
	cr_expect_eq(du_count(dir, "*.bin"), 0, "restored files are removed");
	cr_expect_eq(du_count(dir, "quarantine/*"), 0);
	blq_free(src_q);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	du_rmrf(dir);
}

/* ---- damaged files ------------------------------------------------ */

/* Writes a dump file of `n` records (ids 100*k + i) and returns its path. */
static void write_file(const char *dir, uint64_t version, int n, uint64_t base, char *path)
{
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 1 << 20, .version = version,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	size_t before = du_count(dir, "*.bin");

	for (int i = 0; i < n; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(base + (uint64_t)i, 20)), 0);
	cr_assert_eq(blq_dump_close(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	cr_assert_eq(du_count(dir, "*.bin"), before + 1);
	/* The newest: names sort in write order. */
	char p[512];
	glob_t g;
	snprintf(p, sizeof(p), "%s/*.bin", dir);
	glob(p, 0, NULL, &g);
	snprintf(path, 512, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
}

static void patch(const char *path, long at, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(pwrite(fd, bytes, n, at), (ssize_t)n);
	close(fd);
}

Test(dlqdump, damaged_files_are_quarantined_after_their_good_records)
{
	char *dir = du_tmpdir("bad");
	char f[6][512];
	const long rec = 12 + 20; /* one record of a 20-byte item */

	/* 0: intact. 1: bad checksum in record 3. 2: truncated inside record 4.
	 * 3: absurd length in record 2. 4: bad magic. 5: another version. */
	for (int k = 0; k < 6; k++)
		write_file(dir, k == 5 ? 99 : 1, 5, 100u * (uint64_t)k, f[k]);
	unsigned char x = 0xEE;
	patch(f[1], 16 + 2 * rec + 15, &x, 1);
	cr_assert_eq(truncate(f[2], 16 + 3 * rec + 7), 0);
	unsigned char huge[4] = {0xF0, 0xFF, 0xFF, 0x7F};
	patch(f[3], 16 + 1 * rec, huge, 4);
	patch(f[4], 0, "XXXX", 4);

	memset(seen, 0, sizeof(seen));
	m_quarantined = 0;
	/* Good records: 5 + 2 + 3 + 1 + 0 + 0. */
	restore_dir(dir, 1, 11);
	unsigned expect_seen[6] = {5, 2, 3, 1, 0, 0};
	for (int k = 0; k < 6; k++) {
		unsigned got = 0;
		for (int i = 0; i < 5; i++)
			got += atomic_load(&seen[100 * k + i]);
		cr_expect_eq(got, expect_seen[k], "file %d: %u restored, want %u", k, got,
			     expect_seen[k]);
	}
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 5, "five files set aside, none deleted");
	cr_expect_eq(m_quarantined, 5);
	cr_expect(du_logged("bad checksum at offset"), "%s", du_log_text);
	cr_expect(du_logged("truncated record at offset"), "%s", du_log_text);
	cr_expect(du_logged("record length above the limit"), "%s", du_log_text);
	cr_expect(du_logged("bad magic"), "%s", du_log_text);
	cr_expect(du_logged("version 99, this reader takes 1"), "%s", du_log_text);
	du_rmrf(dir);
}

/* ---- failing writes ----------------------------------------------- */

/* Two ways to make writes fail, as root (which ignores permission bits):
 * a directory replaced by a file (ENOTDIR), and, where mount works (root
 * with CAP_SYS_ADMIN), a 64 KiB tmpfs that fills up (ENOSPC). */
static void break_dir(const char *dir)
{
	du_rmrf(dir);
	close(open(dir, O_CREAT | O_WRONLY, 0644));
}

static void failing_writes(bool tmpfs)
{
	char *dir = du_tmpdir("full");
	if (tmpfs && mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0) {
		du_rmrf(dir);
		return; /* no mount here: the replaced directory covers the path */
	}
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 16384, .flush_interval_ns = 5000000,
			      .retry_interval_ns = 2000000, .close_timeout_ns = 50000000,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w,
			      .metrics = &counting, .logger = du_keeper};
	blq_dump *d = must_dump(&dc);
	m_lost = 0;
	du_log_text[0] = '\0';
	if (!tmpfs)
		break_dir(dir);
	/* 1 KiB items: 64 KiB fit in the tmpfs; then both batches fill up. */
	uint64_t ok = 0, refused = 0;
	for (uint64_t i = 0; i < 400; i++) {
		blq_bytes *b = du_item(i, 1000);
		int rc = blq_dump_enqueue(d, b);
		if (rc == 0) {
			ok++;
		} else {
			cr_expect_eq(rc, BLQ_EFULL);
			free(b);
			refused++;
		}
		if (i % 20 == 0)
			tu_sleep_us(1000);
	}
	cr_expect(refused > 0, "a failing writer must not buffer without bound");
	cr_expect(TU_WAIT_FOR(du_logged("writer failed"), 2000), "%s", du_log_text);
	cr_expect(du_logged(tmpfs ? "No space left on device" : "Not a directory"), "%s", du_log_text);
	cr_expect(du_logged("refusing items, counted lost"), "%s", du_log_text);
	cr_expect_eq(blq_dump_close(d), BLQ_EIO);
	struct blq_dump_stats s = dstats(d);
	cr_expect_eq(s.in, ok);
	cr_expect_eq(s.refused, refused);
	cr_expect_eq(s.in, s.written + s.dropped, "in %llu written %llu dropped %llu",
		     (unsigned long long)s.in, (unsigned long long)s.written,
		     (unsigned long long)s.dropped);
	cr_expect(s.dropped > 0);
	cr_expect_eq(s.buffered, 0);
	cr_expect_eq(m_lost, s.refused + s.dropped);
	cr_expect(du_logged("items lost"), "%s", du_log_text);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	if (tmpfs) {
		/* What did reach the disk is whole, and no temp file is left. */
		cr_expect_eq(du_count(dir, ".*.tmp"), 0, "failed writes leave no temp file");
		memset(seen, 0, sizeof(seen));
		cr_expect_eq(restore_dir(dir, 0, s.written).restored, s.written);
		umount(dir);
	}
	du_rmrf(dir);
}

Test(dlqdump, failing_writes_directory_gone)
{
	failing_writes(false);
}

Test(dlqdump, failing_writes_disk_full)
{
	failing_writes(true);
}

Test(dlqdump, the_fallback_takes_what_the_writer_cannot)
{
	char *bad = du_tmpdir("main"), *good = du_tmpdir("fb");
	blq_dump_writer *w = must_fs_writer(bad), *fb = must_fs_writer(good);
	blq_dump_config dc = {.capacity = 4096, .flush_interval_ns = 5000000,
			      .retry_interval_ns = 2000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w, .fallback = fb, .logger = du_keeper};
	blq_dump *d = must_dump(&dc);

	break_dir(bad);
	for (uint64_t i = 0; i < 2000; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 32)), 0);
	cr_expect_eq(blq_dump_flush(d), 0);
	cr_expect_eq(blq_dump_close(d), 0);
	struct blq_dump_stats s = dstats(d);
	cr_expect_eq(s.in, 2000);
	cr_expect_eq(s.written, 0);
	cr_expect_eq(s.written_fallback, 2000);
	cr_expect_eq(s.refused + s.dropped, 0);
	cr_expect(s.write_errors > 0);
	memset(seen, 0, sizeof(seen));
	restore_dir(good, 0, 2000);
	expect_each_once(2000);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	blq_dump_writer_free(fb);
	du_rmrf(bad);
	du_rmrf(good);
}

/* ---- restore limit and dead store --------------------------------- */

Test(dlqdump, items_past_max_restores_go_to_the_dead_store)
{
	char *dir = du_tmpdir("loop"), *dead = du_tmpdir("dead");
	blq_dump_writer *w = must_fs_writer(dir), *dw = must_fs_writer(dead);
	blq_dump_config dc = {.capacity = 1 << 16, .flush_interval_ns = 2000000,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	/* A target that leaks everything back into the dump: its one worker
	 * fails every item (fail_to_dlq), so items cycle dump -> queue -> dump. */
	blq_config c = {.name = "loop", .capacity = 16, .workers = 1, .worker = fail_all,
			.item_free = free, .dlq = blq_dump_enqueuer(d), .fail_to_dlq = true};
	blq *q = must_new(&c);
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, NULL);
	cr_assert_not_null(rd);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .max_restores = 3, .dead = dw};
	blq_error err;
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	for (uint64_t i = 0; i < 50; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 16)), 0);
	/* Each item is restored 3 times, then parked in the dead store. */
	cr_expect(TU_WAIT_FOR(rstats(r).dead == 50, 10000), "dead %llu restored %llu",
		  (unsigned long long)rstats(r).dead, (unsigned long long)rstats(r).restored);
	struct blq_restorer_stats rs = rstats(r);
	cr_expect_eq(rs.restored, 150);
	blq_restorer_free(r);
	blq_close(q);
	blq_dump_close(d);
	struct blq_stats qs = stats(q);
	cr_expect(tu_balanced(&qs));
	cr_expect_eq(qs.leaked, 150, "leaked_failed %llu in %llu lost %llu", (unsigned long long)qs.leaked_failed, (unsigned long long)qs.in, (unsigned long long)qs.lost);
	cr_expect(du_count(dead, "*.bin") >= 1);
	/* The dead store is a dump like any other: 50 records, restores 3. */
	blq_dump_fs_config dfc = {.directory = dead};
	blq_dump_reader *drd = blq_dump_fs_reader_new(&dfc, NULL);
	void *dump;
	uint64_t recs = 0;
	while (drd->next(drd, &dump, &err) == 1) {
		blq_dump_record rec;
		while (drd->record(drd, dump, &rec, &err) == 1) {
			cr_expect_eq(drd->done(drd, dump, rec.index, &err), 0);
			cr_expect_eq(rec.restores, 3);
			recs++;
		}
		cr_expect_eq(drd->commit(drd, dump, &err), 0);
	}
	cr_expect_eq(recs, 50);
	blq_dump_reader_free(drd);
	blq_free(q);
	blq_dump_free(d);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	blq_dump_writer_free(dw);
	du_rmrf(dir);
	du_rmrf(dead);
}

Test(dlqdump, a_full_target_postpones_and_nothing_is_dropped)
{
	char *dir = du_tmpdir("rate");
	static tu_gate gate;
	tu_gate_init(&gate);
	blq_config c = {.name = "slow", .capacity = 10, .workers = 1, .worker = gated,
			.worker_ctx = &gate, .item_free = free};
	blq *q = must_new(&c);
	memset(seen, 0, sizeof(seen));
	char path[512];
	write_file(dir, 0, 200, 0, path);
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, NULL);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 1000000,
				  .postpone_interval_ns = 1000000, .allow_rate = 0.5};
	blq_restorer *r = blq_restorer_new(&rc, NULL);
	cr_assert_not_null(r);
	/* The worker is parked: the restorer fills the target to half, then
	 * waits; the file stays until every item was accepted. */
	cr_expect(TU_WAIT_FOR(rstats(r).postponed > 5, 2000));
	cr_expect(rstats(r).restored <= 7, "restored %llu", (unsigned long long)rstats(r).restored);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	tu_gate_open(&gate);
	cr_expect(TU_WAIT_FOR(rstats(r).dumps == 1, 5000));
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	blq_restorer_free(r);
	blq_close(q);
	expect_each_once(200);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* ---- Prometheus --------------------------------------------------- */

/* ---- review fixes --------------------------------------------------- */

static _Atomic int flaky_calls;

/* Fails twice, then writes everything. */
static int flaky_write(blq_dump_writer *w, const blq_dump_batch *b, size_t *done, blq_error *err)
{
	(void)w, (void)err;
	if (atomic_fetch_add(&flaky_calls, 1) < 2) {
		*done = 0;
		return BLQ_EIO;
	}
	*done = b->count;
	return 0;
}

/* A duration that would wrap a deadline means "no limit", not "already
 * passed": close with close_timeout_ns UINT64_MAX keeps retrying until the
 * writer recovers. Durations above a year are refused, naming the field. */
Test(dlqdump, durations_saturate_and_a_close_may_retry_without_limit)
{
	blq_dump_writer w = {.write = flaky_write};
	blq_dump_config dc = {.capacity = 4096, .encoder = blq_dump_string_encoder(), .writer = &w,
			      .retry_interval_ns = 1000000, .close_timeout_ns = UINT64_MAX};
	blq_dump *d = must_dump(&dc);
	char s[] = "item";

	atomic_store(&flaky_calls, 0);
	cr_assert_eq(blq_dump_enqueue(d, s), 0);
	cr_expect_eq(blq_dump_close(d), 0);
	struct blq_dump_stats st = dstats(d);
	cr_expect_eq(st.written, 1);
	cr_expect_eq(st.dropped, 0);
	cr_expect_geq(atomic_load(&flaky_calls), 3);
	blq_dump_free(d);

	blq_error err;
	blq_dump_config bad = dc;
	bad.flush_interval_ns = (uint64_t)-5;
	cr_expect_null(blq_dump_new(&bad, &err));
	cr_expect(strstr(err.msg, "flush_interval_ns: must be at most 1 year") != NULL, "%s",
		  err.msg);
	bad = dc;
	bad.close_timeout_ns = UINT64_MAX - 1;
	cr_expect_null(blq_dump_new(&bad, &err));
	cr_expect(strstr(err.msg, "close_timeout_ns") != NULL, "%s", err.msg);

	char *dir = du_tmpdir("dur");
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, NULL);
	blq *q = sink_new(16);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .check_interval_ns = (uint64_t)-1};
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "check_interval_ns: must be at most 1 year") != NULL, "%s",
		  err.msg);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* A quarantine directory removed after the reader was made is made again:
 * else the damaged file would be restored at every poll. */
Test(dlqdump, a_removed_quarantine_directory_is_made_again)
{
	char *dir = du_tmpdir("quar");
	char f[512], q[600];

	write_file(dir, 1, 3, 0, f);
	cr_assert_eq(truncate(f, 16 + 2 * (12 + 20) + 7), 0); /* two good records */
	blq_dump_fs_config fc = {.directory = dir, .version = 1};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, NULL);
	cr_assert_not_null(rd);
	snprintf(q, sizeof(q), "%s/quarantine", dir);
	rmdir(q);
	void *dump;
	blq_dump_record rec;
	blq_error err;
	unsigned handed = 0;
	cr_assert_eq(rd->next(rd, &dump, &err), 1);
	while (rd->record(rd, dump, &rec, &err) == 1) {
		cr_expect_eq(rd->done(rd, dump, rec.index, &err), 0, "%s", err.msg);
		handed++;
	}
	cr_expect_eq(rd->commit(rd, dump, &err), 0, "%s", err.msg);
	cr_expect_eq(handed, 2);
	cr_expect_eq(rd->next(rd, &dump, &err), 0, "nothing left to restore again");
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 1);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

static blq_dump *logging_dump;
static _Atomic int logged_lines;

/* A logger that reads the dump it logs for (e.g. to add counters). */
static void stats_logger(void *ctx, int level, const char *fmt, va_list ap)
{
	struct blq_dump_stats st;

	(void)ctx, (void)level, (void)fmt, (void)ap;
	blq_dump_stats(logging_dump, &st);
	atomic_fetch_add(&logged_lines, 1);
}

static _Atomic int ok_after;

static int fail_first_write(blq_dump_writer *w, const blq_dump_batch *b, size_t *done,
			    blq_error *err)
{
	(void)w, (void)err;
	if (atomic_fetch_add(&ok_after, 1) < 1) {
		*done = 0;
		return BLQ_EIO;
	}
	*done = b->count;
	return 0;
}

/* The dump logs outside its lock, so a logger may call back into it: the
 * "closing" and "writes succeed again" lines used to deadlock. */
Test(dlqdump, a_logger_may_call_back_into_the_dump)
{
	blq_dump_writer w = {.write = fail_first_write};
	blq_dump_config dc = {.capacity = 4096, .encoder = blq_dump_string_encoder(), .writer = &w,
			      .retry_interval_ns = 1000000,
			      .logger = {.log = stats_logger, .level = BLQ_LOG_DEBUG}};
	char s[] = "item";

	atomic_store(&ok_after, 0);
	atomic_store(&logged_lines, 0);
	logging_dump = must_dump(&dc);
	cr_assert_eq(blq_dump_enqueue(logging_dump, s), 0);
	cr_expect_eq(blq_dump_close(logging_dump), 0);
	cr_expect_geq(atomic_load(&logged_lines), 2, "closing, and writes succeed again");
	cr_expect_eq(dstats(logging_dump).written, 1);
	blq_dump_free(logging_dump);
}

#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>

/* The stream key vanished (a restart without persistence, a DEL): the
 * reader makes its consumer group again instead of failing on NOGROUP at
 * every poll while the writer's XADD refills the stream. */
Test(dlqdump, the_redis_reader_survives_a_vanished_group)
{
	const char *addr = getenv("BLQ_TEST_REDIS");
	if (addr == NULL) {
		fprintf(stderr, "BLQ_TEST_REDIS unset: scripts/test.sh provides a server\n");
		return;
	}
	char host[64];
	int port = 0;
	cr_assert_eq(sscanf(addr, "%63[^:]:%d", host, &port), 2, "BLQ_TEST_REDIS=%s", addr);
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s", addr);
	freeReplyObject(redisCommand(c, "DEL blq:test:nogroup"));
	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = "blq:test:nogroup",
				      .version = 1};
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rcfg, &err);
	blq_dump_writer *w = blq_dump_redis_writer_new(&rcfg, &err);
	cr_assert(rd != NULL && w != NULL, "%s", err.msg);
	void *dump = NULL;
	cr_expect_eq(rd->next(rd, &dump, &err), 0, "empty at first");
	freeReplyObject(redisCommand(c, "DEL blq:test:nogroup"));
	blq_dump_config dc = {.version = 1, .capacity = 1 << 16, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(blq_dump_enqueue(d, blq_bytes_new("hello", 5)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	int r = 0;
	for (int k = 0; k < 3 && r != 1; k++)
		r = rd->next(rd, &dump, &err);
	cr_expect_eq(r, 1, "entries handed out again: %s", err.msg);
	if (r == 1)
		rd->release(rd, dump);
	blq_dump_close(d);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	blq_dump_reader_free(rd);
	freeReplyObject(redisCommand(c, "DEL blq:test:nogroup"));
	redisFree(c);
}
#endif

static int run_with_input(const char *cmd, const char *input, char *out, size_t cap)
{
	char path[] = "/tmp/blq-prom-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	cr_assert_eq(write(fd, input, strlen(input)), (ssize_t)strlen(input));
	close(fd);
	char full[512];
	snprintf(full, sizeof(full), "%s < %s 2>&1", cmd, path);
	FILE *p = popen(full, "r");
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int rc = pclose(p);
	unlink(path);
	return rc;
}

Test(dlqdump, prometheus_dump_families_pass_promtool)
{
	blq_prom *reg = blq_prom_new(NULL);
	blq_error err;
	const blq_dump_metrics *m = blq_prom_dump_writer(reg, "dlq", &err);
	cr_assert_not_null(m, "%s", err.msg);
	cr_expect_null(blq_prom_dump_writer(reg, "dlq", &err));
	cr_expect(strstr(err.msg, "already") != NULL, "%s", err.msg);
	cr_assert_not_null(blq_prom_queue_writer(reg, "jobs", NULL));
	m->dump_in(m->ctx, "dlq", 100);
	m->dump_in(m->ctx, "dlq", 50);
	m->flush(m->ctx, "dlq", BLQ_DUMP_FLUSH_INTERVAL, 174);
	m->restore_out(m->ctx, "dlq", 100);
	m->lost(m->ctx, "dlq", 3);
	m->quarantined(m->ctx, "dlq", 1);
	m->redelivered(m->ctx, "dlq", 7);
	static char text[1 << 16], out[4096];
	int n = blq_prom_render(reg, text, sizeof(text));
	cr_assert(n > 0 && (size_t)n < sizeof(text));
	cr_expect(strstr(text, "dlqdump_size_in_total{queue=\"dlq\"} 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "dlqdump_bytes_in_total{queue=\"dlq\"} 150\n") != NULL);
	cr_expect(strstr(text, "dlqdump_size_out_total{queue=\"dlq\"} 1\n") != NULL);
	cr_expect(strstr(text, "dlqdump_bytes_out_total{queue=\"dlq\"} 100\n") != NULL);
	cr_expect(strstr(text, "dlqdump_bytes_flush_total{queue=\"dlq\",reason=\"interval\"} 174\n"));
	cr_expect(strstr(text, "dlqdump_lost_total{queue=\"dlq\"} 3\n") != NULL);
	cr_expect(strstr(text, "dlqdump_quarantined_total{queue=\"dlq\"} 1\n") != NULL);
	cr_expect(strstr(text, "dlqdump_redelivered_total{queue=\"dlq\"} 7\n") != NULL);
	int rc = run_with_input("promtool check metrics", text, out, sizeof(out));
	cr_expect_eq(rc, 0, "promtool: %s", out);
	cr_expect_eq(strlen(out), 0, "promtool printed: %s", out);
	blq_prom_free(reg);
}

/* A restorer killed between the two unlinks of a commit (the dump file,
 * then its checkpoint) leaves a checkpoint whose file is gone: the next
 * reader made removes it, and leaves alone a checkpoint whose file is
 * there, and files that only look like checkpoints of other patterns. */
Test(dlqdump, an_orphan_checkpoint_is_swept_by_the_next_reader)
{
	char *dir = du_tmpdir("orphan");
	char path[512];
	const char *files[] = {".gone.bin.ckpt", ".kept.bin.ckpt", "kept.bin", ".other.txt.ckpt"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		int fd = open(path, O_CREAT | O_WRONLY, 0644);
		cr_assert(fd >= 0, "%s", path);
		close(fd);
	}
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_expect_eq(du_count(dir, ".gone.bin.ckpt"), 0, "the orphan is gone");
	cr_expect_eq(du_count(dir, ".kept.bin.ckpt"), 1, "its file is there: kept");
	cr_expect_eq(du_count(dir, ".other.txt.ckpt"), 1, "not a checkpoint of *.bin: kept");
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}
