/*
 * dlqdump on real files: the format and its checksum, configuration
 * errors, the flush triggers, a round trip through a directory, damaged
 * files (quarantined, good records restored), failing writes (tiny tmpfs
 * or a directory replaced by a file: reported, buffered, refused or
 * dropped, always counted), the fallback writer, the restore limit and
 * the dead store, the Prometheus families (promtool), and why each item
 * was dead-lettered (format 2: every reason from real queues into a
 * directory and a Redis stream, format 1 still read, the metadata under
 * the checksum, the dead store keeping it).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/file.h>

#include "../dlq/crc32c.h"
#include "../dlq/dump_format.h"
#include "../dlq/dump_fs_checkpoint.h"
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
	TU_WAIT_FOR(du_rstats(r).restored >= expect && du_count(dir, "*.bin") == 0, 5000);
	blq_restorer_close(r);
	struct blq_restorer_stats out = du_rstats(r);
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

	/* An unreachable Redis: a writer is made all the same (it connects at
	 * its first write, so a dump starts during an outage: issue 32); a
	 * reader is refused, its message naming the address. A bad field is
	 * refused by both, naming the field. */
	int port = du_free_port();
	blq_dump_redis_config rcfg = {.port = port, .key = "k", .connect_timeout_ns = 200000000};
#ifdef BLQ_TEST_WITH_REDIS
	blq_dump_writer *down = blq_dump_redis_writer_new(&rcfg, &err);
	cr_expect_not_null(down, "a writer while Redis is down: %s", err.msg);
	blq_dump_writer_free(down);
#endif
	rcfg.read_count = 1000000;
	cr_expect_null(blq_dump_redis_reader_new(&rcfg, &err));
#ifdef BLQ_TEST_WITH_REDIS
	cr_expect(strstr(err.msg, "read_count: must be <= 100000") != NULL, "%s", err.msg);
#endif
	rcfg.read_count = 0;
#ifdef BLQ_TEST_WITH_REDIS
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_expect_null(blq_dump_redis_reader_new(&rcfg, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, addr) != NULL, "%s", err.msg);
	rcfg.key = NULL;
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "key") != NULL, "%s", err.msg);
	rcfg.key = "k";
	rcfg.port = 70000;
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "port") != NULL, "%s", err.msg);
	rcfg.port = port;
	rcfg.host = "";
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "host") != NULL, "%s", err.msg);
	rcfg.host = NULL;
	rcfg.reconnect_min_ns = 2000000000u;
	rcfg.reconnect_max_ns = 1000000000u;
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "reconnect_max_ns") != NULL, "%s", err.msg);
#else
	cr_expect_null(blq_dump_redis_writer_new(&rcfg, &err));
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

Test(dlqdump, damaged_files_are_quarantined_after_their_intact_records)
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
	/* Intact records: 5 + 4 + 3 + 4 + 0 + 0 (a damaged record in the
	 * middle of a file loses that record only: the reader resyncs on the
	 * next one; a truncated tail loses the tail). */
	struct blq_restorer_stats rs = restore_dir(dir, 1, 16);
	unsigned expect_seen[6] = {5, 4, 3, 4, 0, 0};
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
	cr_expect_eq(rs.quarantined, 5, "the restorer counts them as the metric does");
	cr_expect_eq(rs.records, 16 + 5);
	cr_expect_eq(rs.records, rs.done + rs.dead + rs.lost + rs.returned + rs.quarantined +
					 rs.in_flight);
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
	cr_expect(TU_WAIT_FOR(du_rstats(r).dead == 50, 10000), "dead %llu restored %llu",
		  (unsigned long long)du_rstats(r).dead, (unsigned long long)du_rstats(r).restored);
	struct blq_restorer_stats rs = du_rstats(r);
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
	cr_expect(TU_WAIT_FOR(du_rstats(r).postponed > 5, 2000));
	cr_expect(du_rstats(r).restored <= 7, "restored %llu", (unsigned long long)du_rstats(r).restored);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	tu_gate_open(&gate);
	cr_expect(TU_WAIT_FOR(du_rstats(r).dumps == 1, 5000));
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

/* ---- why an item was dead-lettered (format 2) --------------------- */

#define WALL_NS 1700000000123456789ull /* the queues' wall clock, held still */

static void why_set(blq_dlq_why *w, enum blq_dlq_reason reason, uint32_t attempts, int32_t rc,
		    uint64_t time_ns, const char *queue)
{
	memset(w, 0, sizeof(*w));
	w->reason = reason;
	w->attempts = attempts;
	w->rc = rc;
	w->time_ns = time_ns;
	snprintf(w->queue, sizeof(w->queue), "%s", queue);
}

Test(dlqdump, format_2_records_carry_why_and_the_checksum_covers_it)
{
	blq_dlq_why w;
	why_set(&w, BLQ_DLQ_FAILED, 3, -42, WALL_NS, "orders");
	blq__buf b = {0};
	cr_assert_eq(blq__dump_rec_append(&b, 2, "hello", 5, 1, &w), 0);
	cr_assert_eq(blq__dump_rec_append(&b, 2, "", 0, 0, NULL), 0);
	/* The cost: 18 bytes plus the queue's name per record. */
	cr_expect_eq(b.len, (12 + 18 + 6 + 5) + (12 + 18));
	size_t off = 0;
	blq_dump_record rec;
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_OK);
	cr_expect_eq(rec.len, 5);
	cr_expect(memcmp(rec.data, "hello", 5) == 0);
	cr_expect_eq(rec.restores, 1);
	cr_expect_eq(rec.why.reason, BLQ_DLQ_FAILED);
	cr_expect_eq(rec.why.attempts, 3);
	cr_expect_eq(rec.why.rc, -42);
	cr_expect_eq(rec.why.time_ns, WALL_NS);
	cr_expect_str_eq(rec.why.queue, "orders");
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_OK);
	cr_expect_eq(rec.len, 0);
	cr_expect_eq(rec.why.reason, BLQ_DLQ_UNKNOWN);
	cr_expect_str_eq(rec.why.queue, "");
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_END);

	/* Every byte of the metadata is under the checksum. */
	for (size_t i = 12; i < 12 + 18 + 6; i++) {
		off = 0;
		b.p[i] ^= 0x10;
		cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_BAD_CRC,
			     "byte %zu", i);
		b.p[i] ^= 0x10;
	}
	/* Metadata that does not fit its record, even with a good checksum:
	 * a length below 18, a name past the end, a NUL inside the name. */
	unsigned char one[12 + 40] = {0};
	blq__dump_rec_seal(one, 10, 0);
	off = 0;
	cr_expect_eq(blq__dump_rec_parse(one, 12 + 10, 2, &off, &rec), BLQ__DUMP_BAD_META);
	one[12 + 1] = 30; /* qlen 30 in 20 bytes */
	blq__dump_rec_seal(one, 20, 0);
	cr_expect_eq(blq__dump_rec_parse(one, 12 + 20, 2, &off, &rec), BLQ__DUMP_BAD_META);
	one[12 + 1] = 3;
	memcpy(one + 12 + 18, "a\0b", 3);
	blq__dump_rec_seal(one, 21, 0);
	cr_expect_eq(blq__dump_rec_parse(one, 12 + 21, 2, &off, &rec), BLQ__DUMP_BAD_META);
	cr_expect_eq(off, 0);
	cr_expect_str_eq(blq__dump_parse_str(BLQ__DUMP_BAD_META), "bad metadata block");
	/* A reason this build does not name (a newer writer's) is passed on. */
	memcpy(one + 12 + 18, "abc", 3);
	one[12] = 77;
	blq__dump_rec_seal(one, 21, 0);
	cr_expect_eq(blq__dump_rec_parse(one, 12 + 21, 2, &off, &rec), BLQ__DUMP_OK);
	cr_expect_eq((int)rec.why.reason, 77);
	cr_expect_str_eq(rec.why.queue, "abc");
	cr_expect_str_eq(blq_dlq_reason_name(rec.why.reason), "unknown");
	/* Format 2's length limit: the data's plus the largest metadata. */
	off = 0;
	blq__put32(b.p, BLQ_DUMP_RECORD_MAX + BLQ__DUMP_META_MAX + 1);
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_TOO_LONG);
	blq__buf_free(&b);

	/* A batch of format-1 records rewritten as format 2: same data and
	 * restore counts, reason unknown. */
	cr_assert_eq(blq__dump_rec_append(&b, 1, "abc", 3, 4, &w), 0);
	cr_assert_eq(blq__dump_rec_append(&b, 1, "de", 2, 5, NULL), 0);
	cr_expect_eq(b.len, 12 + 3 + 12 + 2, "format 1 has no metadata");
	cr_assert_eq(blq__dump_upgrade(&b, 2), 0);
	off = 0;
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_OK);
	cr_expect(rec.len == 3 && memcmp(rec.data, "abc", 3) == 0 && rec.restores == 4);
	cr_expect_eq(rec.why.reason, BLQ_DLQ_UNKNOWN);
	cr_expect_eq(blq__dump_rec_parse(b.p, b.len, 2, &off, &rec), BLQ__DUMP_OK);
	cr_expect(rec.len == 2 && memcmp(rec.data, "de", 2) == 0 && rec.restores == 5);
	cr_expect_eq(off, b.len);
	blq__buf_free(&b);

	/* Headers: formats 1 and 2 read, 0 and 3 are unknown. */
	unsigned char h[BLQ__DUMP_HEADER];
	unsigned fmt = 0;
	uint64_t v = 0;
	blq__dump_header_put(h, 2, 9);
	cr_expect_eq(blq__dump_header_check(h, sizeof(h), &fmt, &v), BLQ__DUMP_OK);
	cr_expect(fmt == 2 && v == 9);
	h[4] = 3;
	cr_expect_eq(blq__dump_header_check(h, sizeof(h), &fmt, &v), BLQ__DUMP_BAD_FORMAT);
	h[4] = 0;
	cr_expect_eq(blq__dump_header_check(h, sizeof(h), &fmt, &v), BLQ__DUMP_BAD_FORMAT);

	const char *names[] = {"unknown", "overflow rear", "overflow front", "failed", "deadline",
			       "closed"};
	for (int r = 0; r <= BLQ_DLQ_CLOSED; r++)
		cr_expect_str_eq(blq_dlq_reason_name((enum blq_dlq_reason)r), names[r]);
}

/* The scenario: six queues, one per way out, leak into one dump. Each
 * queue runs on its own fake clock (ctx) and the same fixed wall clock. */
typedef struct why_q {
	tu_gate gate;
	_Atomic uint64_t now;
	_Atomic int in_long;
} why_q;

static uint64_t why_now(void *ctx)
{
	return atomic_load(&((why_q *)ctx)->now);
}

static uint64_t why_wall(void *ctx)
{
	(void)ctx;
	return WALL_NS;
}

/* By id: 0, 10, 40, 60 park on the gate; 20-22 fail with -42; 30 runs
 * past its timeout; 50 fails with -7; 51 runs until cancelled. */
static int why_worker(void *ctx, void *payload, blq_task *t)
{
	why_q *w = ctx;
	uint64_t id = du_id(payload);

	switch (id) {
	case 0: case 10: case 40: case 60:
		tu_gate_pass(&w->gate);
		break;
	case 20: case 21: case 22:
		return -42;
	case 30:
		atomic_fetch_add(&w->now, 5000000000ull);
		cr_expect(blq_task_cancelled(t));
		return 0; /* too late: timed out, the queue keeps the payload */
	case 50:
		return -7;
	case 51: {
		uint64_t end = tu_now_ns() + 10000000000ull;
		atomic_store(&w->in_long, 1);
		while (!blq_task_cancelled(t) && tu_now_ns() < end)
			tu_sleep_us(1000);
		return -1;
	}
	}
	free(payload);
	return 0;
}

/* What record `id` must say, by the scenario. False: it must not leak. */
static bool why_expected(uint64_t id, blq_dlq_why *w)
{
	if (id >= 3 && id <= 5)
		why_set(w, BLQ_DLQ_OVERFLOW_REAR, 0, 0, WALL_NS, "rear");
	else if (id >= 11 && id <= 13)
		why_set(w, BLQ_DLQ_OVERFLOW_FRONT, 0, 0, WALL_NS, "front");
	else if (id >= 20 && id <= 22)
		why_set(w, BLQ_DLQ_FAILED, 3, -42, WALL_NS, "failed");
	else if (id == 30)
		why_set(w, BLQ_DLQ_FAILED, 1, BLQ_ETIMEDOUT, WALL_NS, "timeout");
	else if (id >= 41 && id <= 43)
		why_set(w, BLQ_DLQ_DEADLINE, 0, 0, WALL_NS, "deadline");
	else if (id == 50 || id == 51) /* waiting for its retry; failed at the close */
		why_set(w, BLQ_DLQ_CLOSED, 1, 0, WALL_NS, "closed");
	else if (id >= 52 && id <= 54)
		why_set(w, BLQ_DLQ_CLOSED, 0, 0, WALL_NS, "closed");
	else if (id == 64)
		why_set(w, BLQ_DLQ_OVERFLOW_REAR, 0, 0, WALL_NS, "qos");
	else
		return false;
	return true;
}
#define WHY_LEAKS 19 /* ids why_expected names */

static blq *why_queue(why_q *w, blq_config c, blq_dump *d)
{
	tu_gate_init(&w->gate);
	atomic_store(&w->now, 1000);
	atomic_store(&w->in_long, 0);
	c.workers = 1;
	c.worker = why_worker;
	c.worker_ctx = w;
	c.item_free = free;
	c.dlq = blq_dump_enqueuer(d);
	c.clock = (blq_clock){.now_ns = why_now, .wall_ns = why_wall, .ctx = w};
	return must_new(&c);
}

static void why_put(blq *q, uint64_t id)
{
	cr_assert_eq(blq_enqueue(q, du_item(id, 16)), 0, "id %llu", (unsigned long long)id);
}

/* Runs the scenario into d, closes every queue (checking the accounting
 * and each leak counter), then closes and frees d. */
static void why_scenario(blq_dump *d)
{
	static why_q w[7];
	blq *q[7];

	/* Overflow, both ends: capacity 2, the worker parked on 0 / 10. */
	q[0] = why_queue(&w[0], (blq_config){.name = "rear", .capacity = 2}, d);
	q[1] = why_queue(&w[1], (blq_config){.name = "front", .capacity = 2,
					     .leak_direction = BLQ_LEAK_FRONT}, d);
	for (int k = 0; k < 2; k++) {
		why_put(q[k], 10u * (uint64_t)k);
		cr_assert(TU_WAIT_FOR(atomic_load(&w[k].gate.waiting) == 1, 2000));
		for (uint64_t i = 1; i <= 5; i++)
			why_put(q[k], 10u * (uint64_t)k + i);
	}
	/* Failed after three attempts; failed by a timeout. */
	q[2] = why_queue(&w[2], (blq_config){.name = "failed", .capacity = 8, .max_retries = 2,
					     .fail_to_dlq = true}, d);
	q[3] = why_queue(&w[3], (blq_config){.name = "timeout", .capacity = 8,
					     .timeout_ns = 1000000000ull, .fail_to_dlq = true}, d);
	for (uint64_t i = 20; i <= 22; i++)
		why_put(q[2], i);
	why_put(q[3], 30);
	/* Past the deadline: 41-43 wait behind 40 while the clock moves. */
	q[4] = why_queue(&w[4], (blq_config){.name = "deadline", .capacity = 8,
					     .deadline_interval_ns = 100, .deadline_to_dlq = true}, d);
	why_put(q[4], 40);
	cr_assert(TU_WAIT_FOR(atomic_load(&w[4].gate.waiting) == 1, 2000));
	for (uint64_t i = 41; i <= 43; i++)
		why_put(q[4], i);
	atomic_fetch_add(&w[4].now, 200);
	/* Force close: 50 waits for its retry (an hour on a still clock), 51
	 * runs until cancelled, 52-54 are queued. */
	q[5] = why_queue(&w[5], (blq_config){.name = "closed", .capacity = 8, .max_retries = 3,
					     .retry_interval_ns = 3600000000000ull}, d);
	why_put(q[5], 50);
	cr_assert(TU_WAIT_FOR(stats(q[5]).retried == 1, 2000));
	why_put(q[5], 51);
	cr_assert(TU_WAIT_FOR(atomic_load(&w[5].in_long) == 1, 2000));
	for (uint64_t i = 52; i <= 54; i++)
		why_put(q[5], i);
	/* QoS: a full sub-queue leaks at its rear (through the engine). */
	blq_qos_subq sq[2] = {{.name = "a", .capacity = 2, .weight = 1},
			      {.name = "b", .capacity = 2, .weight = 1}};
	blq_qos_config qc = {.algo = BLQ_QOS_PQ, .egress = {.capacity = 1},
			     .evaluator = {.kind = BLQ_QOS_EVAL_WEIGHTED}, /* all to "a" */
			     .subqs = sq, .nsubqs = 2};
	q[6] = why_queue(&w[6], (blq_config){.name = "qos", .qos = &qc}, d);
	why_put(q[6], 60);
	cr_assert(TU_WAIT_FOR(atomic_load(&w[6].gate.waiting) == 1, 2000));
	why_put(q[6], 61);
	blq_qos_subq_stats eg;
	cr_assert(TU_WAIT_FOR(blq_qos_subq_info(q[6], BLQ_QOS_EGRESS, &eg) == 0 && eg.size == 1 &&
				      blq_size(q[6]) == 1,
			      2000));
	for (uint64_t i = 62; i <= 64; i++)
		why_put(q[6], i);

	cr_assert_eq(blq_force_close(q[5]), 0);
	for (int k = 0; k < 7; k++) {
		tu_gate_open(&w[k].gate);
		if (k != 5)
			cr_assert_eq(blq_close(q[k]), 0);
	}
	uint64_t want[7][5] = {/* rear, front, failed, deadline, closed */
			       {3, 0, 0, 0, 0}, {0, 3, 0, 0, 0}, {0, 0, 3, 0, 0}, {0, 0, 1, 0, 0},
			       {0, 0, 0, 3, 0}, {0, 0, 0, 0, 5}, {1, 0, 0, 0, 0}};
	for (int k = 0; k < 7; k++) {
		struct blq_stats s = stats(q[k]);
		uint64_t got[5] = {s.leaked_rear, s.leaked_front, s.leaked_failed, s.leaked_deadline,
				   s.leaked_closed};
		cr_expect(tu_balanced(&s), "queue %d", k);
		cr_expect(memcmp(got, want[k], sizeof(got)) == 0,
			  "queue %d: leaked rear %llu front %llu failed %llu deadline %llu closed %llu",
			  k, (unsigned long long)got[0], (unsigned long long)got[1],
			  (unsigned long long)got[2], (unsigned long long)got[3],
			  (unsigned long long)got[4]);
		cr_expect_eq(s.lost, 0, "queue %d: the dump refused nothing", k);
		blq_free(q[k]);
		tu_gate_destroy(&w[k].gate);
	}
	cr_assert_eq(blq_dump_close(d), 0);
	struct blq_dump_stats ds = dstats(d);
	cr_expect_eq(ds.in, WHY_LEAKS);
	cr_expect_eq(ds.written, WHY_LEAKS);
	blq_dump_free(d);
}

/* A record as read back: its id (the data's first 8 bytes), length,
 * restore count and why. */
typedef struct got {
	uint64_t id;
	size_t len;
	uint32_t restores;
	blq_dlq_why why;
} got;

/* Reads every record the reader hands out (at most cap), marking each done
 * and committing each dump. Returns how many. */
static size_t read_all(blq_dump_reader *rd, got *out, size_t cap)
{
	blq_error err;
	void *dump;
	size_t n = 0;

	while (rd->next(rd, &dump, &err) == 1) {
		blq_dump_record rec;
		while (rd->record(rd, dump, &rec, &err) == 1) {
			cr_assert(n < cap && rec.len >= 8, "record %zu of %zu bytes", n, rec.len);
			memcpy(&out[n].id, rec.data, 8);
			out[n].len = rec.len;
			out[n].restores = rec.restores;
			out[n].why = rec.why;
			n++;
			cr_expect_eq(rd->done(rd, dump, rec.index, &err), 0, "%s", err.msg);
		}
		cr_expect_eq(rd->commit(rd, dump, &err), 0, "%s", err.msg);
	}
	return n;
}

/* Reads every dump the reader hands out: each record must be one the
 * scenario leaked, once, with the right why. Returns the records read. */
static size_t why_read_back(blq_dump_reader *rd)
{
	unsigned times[100] = {0};
	got g[2 * WHY_LEAKS];
	size_t n = read_all(rd, g, 2 * WHY_LEAKS);

	for (size_t i = 0; i < n; i++) {
		unsigned long long id = g[i].id;
		blq_dlq_why want;

		cr_assert(id < 100 && g[i].len == 16, "id %llu, %zu bytes", id, g[i].len);
		times[id]++;
		cr_expect(why_expected(id, &want), "id %llu must not leak", id);
		cr_expect_eq(g[i].why.reason, want.reason, "id %llu: %s, want %s", id,
			     blq_dlq_reason_name(g[i].why.reason), blq_dlq_reason_name(want.reason));
		cr_expect_eq(g[i].why.attempts, want.attempts, "id %llu: attempts %u", id,
			     g[i].why.attempts);
		cr_expect_eq(g[i].why.rc, want.rc, "id %llu: rc %d", id, g[i].why.rc);
		cr_expect_eq(g[i].why.time_ns, WALL_NS, "id %llu", id);
		cr_expect_str_eq(g[i].why.queue, want.queue, "id %llu", id);
		cr_expect_eq(g[i].restores, 0);
	}
	for (uint64_t id = 0; id < 100; id++) {
		blq_dlq_why want;
		cr_expect_eq(times[id], why_expected(id, &want) ? 1u : 0u, "id %llu read %u times",
			     (unsigned long long)id, times[id]);
	}
	return n;
}

Test(dlqdump, each_reason_reaches_the_fs_dump_with_its_fields)
{
	char *dir = du_tmpdir("why");
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 1 << 16, .version = 3, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	why_scenario(must_dump(&dc));
	char f[512];
	cr_assert(du_first(dir, "*.bin", f));
	unsigned char h[BLQ__DUMP_HEADER];
	int fd = open(f, O_RDONLY);
	cr_assert(fd >= 0 && read(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
	close(fd);
	cr_expect_eq(h[4], 2, "a dump with reasons is format 2");
	blq_dump_fs_config fc = {.directory = dir, .version = 3};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, NULL);
	cr_assert_not_null(rd);
	cr_expect_eq(why_read_back(rd), WHY_LEAKS);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, "quarantine/*"), 0);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	du_rmrf(dir);
}

/* A file laid out byte by byte as format 1 (what older versions wrote):
 * `n` records of ids from `base`, 16 bytes each, restores 2. */
static void write_format_1(const char *path, uint64_t version, uint64_t base, int n)
{
	unsigned char buf[16 + 8 * (12 + 16)];
	size_t len = 16;

	cr_assert(n <= 8);
	memcpy(buf, "BLQD\x01\x00\x00\x00", 8);
	blq__put32(buf + 8, (uint32_t)version);
	blq__put32(buf + 12, (uint32_t)(version >> 32));
	for (int i = 0; i < n; i++) {
		unsigned char *r = buf + len;
		uint64_t id = base + (uint64_t)i;

		blq__put32(r, 16);
		blq__put32(r + 4, 2);
		memcpy(r + 12, &id, 8);
		memset(r + 20, 0xAB, 8);
		blq__put32(r + 8, blq__crc32c(blq__crc32c(0, r, 8), r + 12, 16));
		len += 12 + 16;
	}
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

Test(dlqdump, a_format_1_file_still_reads_with_reason_unknown)
{
	char *dir = du_tmpdir("fmt1");
	char path[600];

	snprintf(path, sizeof(path), "%s/old.bin", dir);
	write_format_1(path, 5, 0, 4);
	blq_dump_fs_config fc = {.directory = dir, .version = 5};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, NULL);
	cr_assert_not_null(rd);
	got g[8];
	cr_assert_eq(read_all(rd, g, 8), 4);
	for (uint64_t i = 0; i < 4; i++) {
		cr_expect(g[i].id == i && g[i].len == 16 && g[i].restores == 2, "record %llu",
			  (unsigned long long)i);
		cr_expect_eq(g[i].why.reason, BLQ_DLQ_UNKNOWN);
		cr_expect(g[i].why.attempts == 0 && g[i].why.rc == 0 && g[i].why.time_ns == 0);
		cr_expect_str_eq(g[i].why.queue, "");
	}
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	blq_dump_reader_free(rd);

	/* And through the restorer into a queue. */
	snprintf(path, sizeof(path), "%s/old2.bin", dir);
	write_format_1(path, 5, 0, 8);
	memset(seen, 0, sizeof(seen));
	restore_dir(dir, 5, 8);
	expect_each_once(8);
	cr_expect_eq(du_count(dir, "quarantine/*"), 0);
	du_rmrf(dir);
}

/* A dump given only items without a why writes format 1, byte for byte
 * as before; the first why switches it to format 2, rewriting the batch
 * it is filling, and the rest of its life it stays format 2. */
Test(dlqdump, a_dump_switches_to_format_2_at_its_first_why)
{
	char *dir = du_tmpdir("switch");
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 1 << 16, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	blq_dlq_why why;
	char f[512];
	unsigned char h[BLQ__DUMP_HEADER];

	cr_assert_eq(blq_dump_enqueue(d, du_item(0, 16)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	cr_assert(du_first(dir, "*.bin", f));
	int fd = open(f, O_RDONLY);
	cr_assert(fd >= 0 && read(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
	close(fd);
	cr_expect_eq(h[4], 1, "no why yet: format 1");
	cr_expect_eq(dstats(d).bytes_flushed, 12 + 16);

	/* Bad whys are refused, nothing counted. */
	blq_bytes *keep = du_item(99, 16);
	why_set(&why, (enum blq_dlq_reason)6, 0, 0, 0, "q");
	cr_expect_eq(blq_dump_enqueue_why(d, keep, &why), BLQ_EINVAL);
	why_set(&why, BLQ_DLQ_DEADLINE, 0, 0, 0, "q");
	memset(why.queue, 'x', sizeof(why.queue)); /* no NUL */
	cr_expect_eq(blq_dump_enqueue_why(d, keep, &why), BLQ_EINVAL);
	free(keep);

	cr_assert_eq(blq_dump_enqueue(d, du_item(1, 16)), 0);
	cr_assert_eq(blq_dump_enqueue(d, du_item(2, 16)), 0);
	why_set(&why, BLQ_DLQ_DEADLINE, 2, 0, 77, "mine");
	cr_assert_eq(blq_dump_enqueue_why(d, du_item(3, 16), &why), 0);
	memset(&why, 0, sizeof(why)); /* all zero: says nothing */
	cr_assert_eq(blq_dump_enqueue_why(d, du_item(4, 16), &why), 0);
	cr_assert_eq(blq_dump_enqueue_why(d, du_item(5, 16), NULL), 0);
	cr_assert_eq(blq_dump_close(d), 0);
	struct blq_dump_stats st = dstats(d);
	cr_expect_eq(st.in, 6);
	cr_expect_eq(st.refused, 0);
	cr_expect_eq(st.bytes_flushed, (12 + 16) + 5 * (12 + 18 + 16) + 4);
	blq_dump_free(d);

	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, NULL);
	got g[8];
	cr_assert_eq(read_all(rd, g, 8), 6);
	for (uint64_t i = 0; i < 6; i++) {
		bool said = i == 3;

		cr_expect(g[i].id == i && g[i].len == 16, "record %llu", (unsigned long long)i);
		cr_expect_eq(g[i].why.reason, said ? BLQ_DLQ_DEADLINE : BLQ_DLQ_UNKNOWN);
		cr_expect_eq(g[i].why.attempts, said ? 2u : 0u);
		cr_expect_eq(g[i].why.time_ns, said ? 77u : 0u);
		cr_expect_str_eq(g[i].why.queue, said ? "mine" : "");
	}
	cr_expect_eq(du_count(dir, "quarantine/*"), 0);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	du_rmrf(dir);
}

/* A byte flipped in a record's metadata is caught like one in its data:
 * the good records before it are restored, the file set aside. */
Test(dlqdump, a_damaged_metadata_block_is_caught_by_the_checksum)
{
	char *dir = du_tmpdir("meta");
	blq_dump_writer *w = must_fs_writer(dir);
	blq_dump_config dc = {.capacity = 1 << 16, .version = 1, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	blq_dlq_why why;
	char f[512];

	why_set(&why, BLQ_DLQ_OVERFLOW_REAR, 0, 0, WALL_NS, "src");
	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(blq_dump_enqueue_why(d, du_item(i, 20), &why), 0);
	cr_assert_eq(blq_dump_close(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	cr_assert(du_first(dir, "*.bin", f));
	const long rec = 12 + 18 + 3 + 20;
	unsigned char reason = BLQ_DLQ_CLOSED; /* record 1 says another reason */
	patch(f, 16 + rec + 12, &reason, 1);

	memset(seen, 0, sizeof(seen));
	m_quarantined = 0;
	restore_dir(dir, 1, 2);
	cr_expect_eq(atomic_load(&seen[0]), 1);
	cr_expect_eq(atomic_load(&seen[1]), 0, "the damaged record");
	cr_expect_eq(atomic_load(&seen[2]), 1, "the record after it, by a resync");
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 1);
	cr_expect(du_logged("bad checksum at offset 69"), "%s", du_log_text);
	du_rmrf(dir);
}

/* The dead store keeps each record's why; a restored item that leaks
 * again is dead-lettered with the target's reason, its restore count
 * carried on. */
Test(dlqdump, the_dead_store_keeps_why_and_a_new_leak_says_its_own)
{
	char *src = du_tmpdir("wsrc"), *dead = du_tmpdir("wdead"), *again = du_tmpdir("wagain");
	blq_dump_writer *w = must_fs_writer(src), *dw = must_fs_writer(dead),
			*aw = must_fs_writer(again);
	blq_dump_config dc = {.capacity = 1 << 16, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = must_dump(&dc);
	blq_dlq_why why;

	/* ids 0-4 restored twice already (to the dead store at max_restores
	 * 2), 5-9 fresh (restored into a target that fails them). */
	why_set(&why, BLQ_DLQ_DEADLINE, 0, 0, WALL_NS, "first");
	for (uint64_t i = 0; i < 10; i++) {
		blq_bytes *b = du_item(i, 16);
		b->restores = i < 5 ? 2 : 0;
		cr_assert_eq(blq_dump_enqueue_why(d, b, &why), 0);
	}
	cr_assert_eq(blq_dump_close(d), 0);
	blq_dump_free(d);
	dc.writer = aw;
	blq_dump *da = must_dump(&dc);
	blq_config c = {.name = "target", .capacity = 16, .workers = 1, .worker = fail_all,
			.item_free = free, .dlq = blq_dump_enqueuer(da), .fail_to_dlq = true,
			.clock = {.wall_ns = why_wall}};
	blq *q = must_new(&c);
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = src}, NULL);
	cr_assert_not_null(rd);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .max_restores = 2, .dead = dw};
	blq_error err;
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_expect(TU_WAIT_FOR(du_rstats(r).dead == 5 && du_rstats(r).done == 5, 10000));
	blq_restorer_free(r);
	blq_close(q);
	struct blq_stats qs = stats(q);
	cr_expect(tu_balanced(&qs));
	cr_expect_eq(qs.leaked_failed, 5);
	blq_free(q);
	cr_assert_eq(blq_dump_close(da), 0);
	blq_dump_free(da);
	blq_dump_reader_free(rd);

	const char *dirs[2] = {dead, again};
	for (int k = 0; k < 2; k++) {
		blq_dump_reader *xr =
			blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dirs[k]}, NULL);
		got g[10];
		cr_expect_eq(read_all(xr, g, 10), 5, "%s", dirs[k]);
		for (int i = 0; i < 5; i++) {
			if (k == 0) { /* as dumped the first time */
				cr_expect(g[i].id < 5, "id %llu", (unsigned long long)g[i].id);
				cr_expect_eq(g[i].restores, 2);
				cr_expect_eq(g[i].why.reason, BLQ_DLQ_DEADLINE);
				cr_expect_str_eq(g[i].why.queue, "first");
			} else { /* leaked again by the target: its reason */
				cr_expect_geq(g[i].id, 5);
				cr_expect_eq(g[i].restores, 1);
				cr_expect_eq(g[i].why.reason, BLQ_DLQ_FAILED);
				cr_expect_eq(g[i].why.attempts, 1);
				cr_expect_eq(g[i].why.rc, 1, "fail_all's");
				cr_expect_str_eq(g[i].why.queue, "target");
			}
			cr_expect_eq(g[i].why.time_ns, WALL_NS);
		}
		blq_dump_reader_free(xr);
	}
	blq_dump_writer_free(w);
	blq_dump_writer_free(dw);
	blq_dump_writer_free(aw);
	du_rmrf(src);
	du_rmrf(dead);
	du_rmrf(again);
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
static long long redis_count(redisContext *c, const char *fmt, const char *key)
{
	redisReply *rep = redisCommand(c, fmt, key);
	long long n = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;

	freeReplyObject(rep);
	return n;
}

static bool redis_addr(char *host, size_t cap, int *port)
{
	if (du_redis_env(host, cap, port))
		return true;
	fprintf(stderr, "BLQ_TEST_REDIS unset: scripts/test.sh provides a server\n");
	return false;
}

Test(dlqdump, each_reason_reaches_the_redis_dump_with_its_fields)
{
	char host[64], key[64];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	snprintf(key, sizeof(key), "blq:test:why:%d", (int)getpid());
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, port);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key, .version = 3};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rcfg, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = 1 << 16, .version = 3, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	why_scenario(must_dump(&dc));
	/* Each entry holds its format-2 record in field r2. */
	redisReply *rep = redisCommand(c, "XRANGE %s - +", key);
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_ARRAY);
	cr_expect_eq(rep->elements, WHY_LEAKS);
	for (size_t i = 0; i < rep->elements; i++) {
		redisReply *f = rep->element[i]->element[1];
		cr_expect(f->elements == 4 && strcmp(f->element[0]->str, "v") == 0 &&
			  strcmp(f->element[2]->str, "r2") == 0);
	}
	freeReplyObject(rep);
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rcfg, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_expect_eq(why_read_back(rd), WHY_LEAKS);
	cr_expect_eq(redis_count(c, "XLEN %s", key), 0, "every entry acked and deleted");
	cr_expect_eq(redis_count(c, "EXISTS %s:quarantine", key), 0);
	blq_dump_reader_free(rd);
	blq_dump_writer_free(w);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redisFree(c);
}

/* Entries say their format by the record's field: r (format 1, as older
 * versions wrote: reason unknown) or r2. A damaged metadata block, or an
 * entry with both fields, is set aside in the quarantine stream. */
Test(dlqdump, redis_entries_say_their_format_by_field)
{
	char host[64], key[64];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	snprintf(key, sizeof(key), "blq:test:whyfmt:%d", (int)getpid());
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, port);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));

	unsigned char old[12 + 8];
	uint64_t id = 1;
	blq__put32(old, 8);
	blq__put32(old + 4, 0);
	memcpy(old + 12, &id, 8);
	blq__put32(old + 8, blq__crc32c(blq__crc32c(0, old, 8), old + 12, 8));
	blq_dlq_why why;
	why_set(&why, BLQ_DLQ_OVERFLOW_FRONT, 0, 0, WALL_NS, "edge");
	blq__buf b = {0};
	id = 2;
	cr_assert_eq(blq__dump_rec_append(&b, 2, &id, 8, 0, &why), 0);
	size_t one = b.len;
	id = 3;
	cr_assert_eq(blq__dump_rec_append(&b, 2, &id, 8, 0, &why), 0);
	b.p[one + 12 + 2] ^= 1; /* id 3: attempts flipped */
	freeReplyObject(redisCommand(c, "XADD %s * v 1 r %b", key, old, sizeof(old)));
	freeReplyObject(redisCommand(c, "XADD %s * v 1 r2 %b", key, b.p, one));
	freeReplyObject(redisCommand(c, "XADD %s * v 1 r2 %b", key, b.p + one, b.len - one));
	freeReplyObject(redisCommand(c, "XADD %s * v 1 r %b r2 %b", key, old, sizeof(old), b.p,
				     one));
	blq__buf_free(&b);

	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key, .version = 1};
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rcfg, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	got g[4];
	cr_assert_eq(read_all(rd, g, 4), 2);
	for (uint64_t i = 0; i < 2; i++) {
		bool old_entry = i == 0;

		cr_expect(g[i].id == i + 1 && g[i].len == 8, "record %llu", (unsigned long long)i);
		cr_expect_eq(g[i].why.reason, old_entry ? BLQ_DLQ_UNKNOWN : BLQ_DLQ_OVERFLOW_FRONT);
		cr_expect_str_eq(g[i].why.queue, old_entry ? "" : "edge");
		cr_expect_eq(g[i].why.time_ns, old_entry ? 0 : WALL_NS);
	}
	blq_dump_reader_free(rd);

	redisReply *rep = redisCommand(c, "XRANGE %s:quarantine - +", key);
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_ARRAY);
	cr_assert_eq(rep->elements, 2);
	/* [id, <id>, reason, <why>, v, 1, r2, <record>] */
	redisReply *f = rep->element[0]->element[1];
	cr_expect_str_eq(f->element[3]->str, "bad checksum");
	cr_expect(f->elements == 8 && strcmp(f->element[6]->str, "r2") == 0, "kept as r2");
	f = rep->element[1]->element[1];
	cr_expect_str_eq(f->element[3]->str, "more than one record field (r, r2)");
	freeReplyObject(rep);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));
	redisFree(c);
}

/* The version field is the writer's "%llu" and nothing else: a space, a
 * sign, a number past 64 bits or a NUL in it sets the entry aside (the
 * check once read " 1", "+1", "-18446744073709551615" and "1\0junk" as
 * version 1, and took them). */
Test(dlqdump, redis_entries_with_a_version_no_writer_makes_are_quarantined)
{
	char host[64], key[64];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	snprintf(key, sizeof(key), "blq:test:badver:%d", (int)getpid());
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, port);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));

	blq__buf rec = {0};
	uint64_t id = 7;
	cr_assert_eq(blq__dump_rec_append(&rec, 1, &id, 8, 0, NULL), 0);
	static const struct {
		const char *v;
		size_t len;
	} bad[] = {{" 1", 2}, {"+1", 2}, {"-18446744073709551615", 21},
		   {"18446744073709551617", 20}, {"1\0junk", 6}, {"\0", 1}};
	enum { NBAD = sizeof(bad) / sizeof(bad[0]) };
	for (size_t i = 0; i < NBAD; i++)
		freeReplyObject(redisCommand(c, "XADD %s * v %b r %b", key, bad[i].v, bad[i].len, rec.p,
					     rec.len));
	freeReplyObject(redisCommand(c, "XADD %s * v 1 r %b", key, rec.p, rec.len));
	blq__buf_free(&rec);

	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key, .version = 1};
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rcfg, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	got g[NBAD + 1];
	cr_expect_eq(read_all(rd, g, NBAD + 1), 1, "only the entry with v \"1\"");
	cr_expect_eq(g[0].id, 7);
	blq_dump_reader_free(rd);

	redisReply *rep = redisCommand(c, "XRANGE %s:quarantine - +", key);
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_ARRAY);
	cr_assert_eq(rep->elements, NBAD);
	for (size_t i = 0; i < rep->elements; i++) {
		/* [id, <id>, reason, <why>, v, <as written>, r, <record>] */
		redisReply *f = rep->element[i]->element[1];
		cr_assert_eq(f->elements, 8);
		cr_expect_str_eq(f->element[3]->str, "bad version field");
		cr_expect(f->element[5]->len == bad[i].len &&
			  memcmp(f->element[5]->str, bad[i].v, bad[i].len) == 0,
			  "entry %zu kept as written", i);
	}
	freeReplyObject(rep);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));
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
	m->failure(m->ctx, "dlq", BLQ_DUMP_FAIL_WRITE, 2);
	m->failure(m->ctx, "dlq", BLQ_DUMP_FAIL_QUARANTINE, 1);
	m->failure(m->ctx, "dlq", BLQ_DUMP_FAIL_WRITE, 3);
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
	/* Failures by reason: every reason a series, 0 included. */
	cr_expect(strstr(text, "# TYPE dlqdump_failures_total counter\n") != NULL, "%s", text);
	cr_expect(strstr(text, "dlqdump_failures_total{queue=\"dlq\",reason=\"write\"} 5\n"));
	cr_expect(strstr(text, "dlqdump_failures_total{queue=\"dlq\",reason=\"quarantine\"} 1\n"));
	cr_expect(strstr(text, "dlqdump_failures_total{queue=\"dlq\",reason=\"dead_store\"} 0\n"));
	size_t series = 0;
	for (const char *p = text; (p = strstr(p, "\ndlqdump_failures_total{")) != NULL; p++)
		series++;
	cr_expect_eq(series, BLQ_DUMP_FAILURES);
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
	const char *files[] = {".gone.bin.ckpt", ".kept.bin.ckpt", "kept.bin", ".other.txt.ckpt"};

	cr_assert(du_touch(dir, files, sizeof(files) / sizeof(files[0])), "%s", dir);
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_expect_eq(du_count(dir, ".gone.bin.ckpt"), 0, "the orphan is gone");
	cr_expect_eq(du_count(dir, ".kept.bin.ckpt"), 1, "its file is there: kept");
	cr_expect_eq(du_count(dir, ".other.txt.ckpt"), 1, "not a checkpoint of *.bin: kept");
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* A dump file of n one-byte records, written by the real fs writer; its
 * path in path (PATH_MAX bytes). */
static void one_file(const char *dir, unsigned n, char *path)
{
	blq_dump_fs_config fc = {.directory = dir, .version = 1};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq__buf b = {0};
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(blq__dump_rec_append(&b, 1, "x", 1, 0, NULL), 0);
	blq_dump_batch batch = {.version = 1, .data = b.p, .len = b.len, .count = n, .format = 1};
	size_t k;
	cr_assert_eq(w->write(w, &batch, &k, &err), 0, "%s", err.msg);
	blq__buf_free(&b);
	blq_dump_writer_free(w);
	cr_assert(du_first(dir, "*.bin", path));
}

/* Stores a checkpoint for path: prefix 0, nbits bits as given. */
static void store_ckpt_bits(const char *path, uint32_t nbits, unsigned char bits)
{
	char ck[PATH_MAX + 300];
	struct stat st;
	cr_assert(blq__ckpt_path(path, ck, sizeof(ck)));
	cr_assert_eq(stat(path, &st), 0);
	blq__ckpt c = {.nbits = nbits, .bits = &bits};
	blq__ckpt_identify(&c, &st);
	cr_assert_eq(blq__ckpt_store(ck, &c, false), 0);
}

/* Checkpoints no blq reader writes but a file can hold with a good CRC
 * (found by tests/fuzz/dump_checkpoint_fuzz.c): bits set past nbits in the
 * map's last byte once marked records done that were not (here 2 to 7,
 * skipped and lost once the map grew), and done bits at the map's front
 * once kept the file from ever being committed. */
Test(dlqdump, a_checkpoint_blq_never_writes_loses_no_record_and_lets_the_file_go)
{
	char *dir = du_tmpdir("ckodd");
	char path[PATH_MAX];
	blq_dump_fs_config fc = {.directory = dir, .version = 1};
	blq_error err;
	blq_dump_record rec;
	void *d;

	/* 9 records; nbits 1 with bit 0 clear and the 7 padding bits set. */
	one_file(dir, 9, path);
	store_ckpt_bits(path, 1, 0xfe);
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_assert_eq(rd->next(rd, &d, &err), 1, "%s", err.msg);
	unsigned handed = 0;
	while (rd->record(rd, d, &rec, &err) == 1) {
		handed++;
		if (rec.index == 0 || rec.index == 8)
			cr_assert_eq(rd->done(rd, d, rec.index, &err), 0, "%s", err.msg);
	}
	cr_expect_eq(handed, 9, "the padding marked nothing done");
	rd->release(rd, d);
	cr_assert_eq(rd->next(rd, &d, &err), 1, "%s", err.msg);
	uint64_t want = 1;
	while (rd->record(rd, d, &rec, &err) == 1) {
		cr_expect_eq(rec.index, want, "record %llu next", (unsigned long long)want);
		want = rec.index + 1;
		cr_assert_eq(rd->done(rd, d, rec.index, &err), 0, "%s", err.msg);
	}
	cr_expect_eq(want, 8, "records 1 to 7 again, none lost");
	cr_expect_eq(rd->commit(rd, d, &err), 0, "%s", err.msg);
	blq_dump_reader_free(rd);
	cr_expect_eq(du_count(dir, "*.bin"), 0);

	/* 1 record, marked done at the map's front (prefix 0, bit 0). */
	one_file(dir, 1, path);
	store_ckpt_bits(path, 1, 0x01);
	rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_assert_eq(rd->next(rd, &d, &err), 1, "%s", err.msg);
	cr_expect_eq(rd->record(rd, d, &rec, &err), 0, "nothing left to hand out");
	cr_expect_eq(rd->commit(rd, d, &err), 0, "%s", err.msg);
	blq_dump_reader_free(rd);
	cr_expect_eq(du_count(dir, "*.bin"), 0, "the file went");
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0, "and its checkpoint");
	du_rmrf(dir);
}

/* A restorer killed while it wrote a checkpoint (between the write of
 * ".<name>.ckpt.tmp" and its rename) leaves the tmp: the next reader made
 * removes it once nobody holds its dump file, or when the file is gone,
 * and keeps it while a claimant holds the file (it may be writing it). */
Test(dlqdump, a_half_written_checkpoint_is_swept_once_nobody_holds_its_file)
{
	char *dir = du_tmpdir("orphantmp");
	char path[512];
	const char *files[] = {".gone.bin.ckpt.tmp", "free.bin", ".free.bin.ckpt.tmp",
			       "held.bin", ".held.bin.ckpt.tmp", ".other.txt.ckpt.tmp"};

	cr_assert(du_touch(dir, files, sizeof(files) / sizeof(files[0])), "%s", dir);
	/* A claimant's lock on held.bin, as the reader's claim takes it. */
	snprintf(path, sizeof(path), "%s/held.bin", dir);
	int held = open(path, O_RDONLY);
	cr_assert(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0);
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_expect_eq(du_count(dir, ".gone.bin.ckpt.tmp"), 0, "its file is gone: removed");
	cr_expect_eq(du_count(dir, ".free.bin.ckpt.tmp"), 0, "nobody holds its file: removed");
	cr_expect_eq(du_count(dir, ".held.bin.ckpt.tmp"), 1, "its file is held: kept");
	cr_expect_eq(du_count(dir, ".other.txt.ckpt.tmp"), 1, "not of *.bin: kept");
	cr_expect_eq(du_count(dir, "free.bin") + du_count(dir, "held.bin"), 2,
		     "the dump files are left alone");
	blq_dump_reader_free(rd);
	/* Released: the next reader made sweeps it. */
	close(held);
	rd = blq_dump_fs_reader_new(&(blq_dump_fs_config){.directory = dir}, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	cr_expect_eq(du_count(dir, ".held.bin.ckpt.tmp"), 0, "released: removed");
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}
