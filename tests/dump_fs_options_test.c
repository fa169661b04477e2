/*
 * The fs dump's options (issue 34, item 9): the writer's write_buffer
 * (the size of its writes).
 * Files are made by the real fs writer behind a real dump and consumed by
 * the real fs reader behind a real restorer into a queue with one worker,
 * so the order of the items is the order of the records.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "dump_util.h"

#define N_MAX 4096
static _Atomic unsigned seen[N_MAX];
static uint64_t order[N_MAX]; /* ids in the order the worker saw them */
static _Atomic size_t n_order;
static _Atomic unsigned bad_bytes; /* items whose bytes were not their id's */
static _Atomic unsigned slow_us;  /* per item, to stop a restorer midway */

/* An item's size and bytes follow from its id: 8..(8 + 300) bytes. */
static size_t item_size(uint64_t id)
{
	return 8 + (size_t)(id * 37 % 301);
}

/* Records the id, checks the bytes, keeps the order. */
static int sink(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	uint64_t id = du_id(b);
	blq_bytes *want = du_item(id, item_size(id));

	(void)ctx, (void)t;
	if (want == NULL || b->len != want->len || memcmp(b->data, want->data, b->len) != 0)
		atomic_fetch_add(&bad_bytes, 1);
	free(want);
	if (id < N_MAX) {
		atomic_fetch_add(&seen[id], 1);
		size_t k = atomic_fetch_add(&n_order, 1);
		if (k < N_MAX)
			order[k] = id;
	}
	free(b);
	if (atomic_load(&slow_us) > 0)
		tu_sleep_us(atomic_load(&slow_us));
	return 0;
}

static void init(void)
{
	memset(seen, 0, sizeof(seen));
	atomic_store(&n_order, 0);
	atomic_store(&bad_bytes, 0);
	atomic_store(&slow_us, 0);
}

TestSuite(fs_options, .init = init, .timeout = 60);

/* write(2)-like system calls this process made so far (/proc/self/io's
 * syscw: every thread, the dump's flush thread included). */
static uint64_t write_calls(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	unsigned long long n = 0;

	cr_assert_not_null(f, "/proc/self/io: %s", strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "syscw: %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Dumps ids [0, n) through the fs writer (write_buffer wb), batches of
 * about `batch` bytes; returns the record bytes written and, in *calls,
 * the write calls made meanwhile. */
static size_t dump_ids(const char *dir, uint64_t n, size_t batch, size_t wb, uint64_t *calls)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .write_buffer = wb};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "write_buffer %zu: %s", wb, err.msg);
	blq_dump_config dc = {.capacity = batch, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	/* No assertion between the two reads: Criterion reports each one
	 * with a write of its own. */
	uint64_t before = write_calls(), refused = 0;
	for (uint64_t i = 0; i < n; i++)
		refused += blq_dump_enqueue(d, du_item(i, item_size(i))) != 0;
	int flushed = blq_dump_flush(d);
	*calls = write_calls() - before;
	cr_assert_eq(refused, 0);
	cr_assert_eq(flushed, 0);
	struct blq_dump_stats st;
	blq_dump_stats(d, &st);
	cr_assert_eq(st.written, n);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	return st.bytes_flushed;
}

static blq *target(void)
{
	blq_error err;
	blq_config c = {.name = "target", .capacity = 256, .workers = 1, .worker = sink,
			.item_free = free};
	blq *q = blq_new(&c, &err);

	cr_assert_not_null(q, "%s", err.msg);
	return q;
}

static blq_dump_reader *reader(const blq_dump_fs_config *fc)
{
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(fc, &err);

	cr_assert_not_null(rd, "%s", err.msg);
	return rd;
}

static blq_restorer *restorer(blq_dump_reader *rd, blq *q)
{
	blq_error err;
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .max_in_flight = 64};
	blq_restorer *r = blq_restorer_new(&rc, &err);

	cr_assert_not_null(r, "%s", err.msg);
	return r;
}

static struct blq_restorer_stats rstats(blq_restorer *r)
{
	struct blq_restorer_stats s;

	blq_restorer_stats(r, &s);
	return s;
}

/* Every id in [0, n) seen exactly once, in order, with its bytes. */
static void expect_exactly_once_in_order(uint64_t n)
{
	cr_expect_eq(atomic_load(&n_order), n, "items restored: %zu, want %llu",
		     atomic_load(&n_order), (unsigned long long)n);
	cr_expect_eq(atomic_load(&bad_bytes), 0, "items with other bytes than written");
	for (uint64_t i = 0; i < n; i++) {
		cr_expect_eq(atomic_load(&seen[i]), 1, "id %llu seen %u times",
			     (unsigned long long)i, atomic_load(&seen[i]));
		cr_expect_eq(order[i], i, "item %llu came as id %llu", (unsigned long long)i,
			     (unsigned long long)order[i]);
		if (atomic_load(&seen[i]) != 1 || order[i] != i)
			break;
	}
}

/* Restores dir (with fc's reader options) until `dumps` files are done. */
static struct blq_restorer_stats restore_all(blq_dump_fs_config *fc, uint64_t dumps)
{
	blq *q = target();
	blq_dump_reader *rd = reader(fc);
	blq_restorer *r = restorer(rd, q);

	cr_assert(TU_WAIT_FOR(rstats(r).dumps == dumps, 20000), "dumps restored: %llu of %llu",
		  (unsigned long long)rstats(r).dumps, (unsigned long long)dumps);
	struct blq_restorer_stats s = rstats(r);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	return s;
}

/* ---- write_buffer ---------------------------------------------------- */

/* 2,000 items of 8..308 bytes in batches of 64 KiB (about 6 files), with
 * the smallest write size, a large one, and none: the same records come
 * back in the same order; the small one really wrote in slices. */
Test(fs_options, write_buffer_small_and_large_round_trip)
{
	const uint64_t n = 2000;
	const size_t sizes[] = {BLQ_DUMP_FS_WRITE_BUFFER_MIN, 1u << 20, 0};
	uint64_t calls[3];
	size_t bytes = 0;

	for (int k = 0; k < 3; k++) {
		init();
		char *dir = du_tmpdir("wbuf");
		bytes = dump_ids(dir, n, 64 << 10, sizes[k], &calls[k]);
		size_t files = du_count(dir, "*.bin");
		cr_assert_geq(files, 4, "write_buffer %zu: %zu files", sizes[k], files);
		if (sizes[k] == BLQ_DUMP_FS_WRITE_BUFFER_MIN)
			cr_expect_geq(calls[k], (bytes + files * 16) / sizes[k],
				      "write_buffer %zu: %llu write calls for %zu bytes", sizes[k],
				      (unsigned long long)calls[k], bytes);
		blq_dump_fs_config fc = {.directory = dir};
		struct blq_restorer_stats s = restore_all(&fc, files);
		cr_expect_eq(s.records, n);
		cr_expect_eq(s.done, n);
		cr_expect_eq(s.quarantined, 0);
		expect_exactly_once_in_order(n);
		cr_expect_eq(du_count(dir, "*.bin"), 0);
		du_rmrf(dir);
	}
	/* A file a slice at a time: many more calls than one per file. */
	cr_expect_gt(calls[0], 4 * calls[2], "write_buffer 512: %llu calls, 0: %llu",
		     (unsigned long long)calls[0], (unsigned long long)calls[2]);
	cr_expect_lt(calls[1], calls[0]);
}

Test(fs_options, write_buffer_out_of_range_is_refused)
{
	char *dir = du_tmpdir("wbufbad");
	const size_t bad[] = {1, BLQ_DUMP_FS_WRITE_BUFFER_MIN - 1,
			      (size_t)BLQ_DUMP_FS_WRITE_BUFFER_MAX + 1, SIZE_MAX};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		blq_error err = {0, ""};
		blq_dump_fs_config fc = {.directory = dir, .write_buffer = bad[i]};
		cr_expect_null(blq_dump_fs_writer_new(&fc, &err), "write_buffer %zu taken", bad[i]);
		cr_expect_eq(err.code, BLQ_EINVAL);
		cr_expect(strstr(err.msg, "write_buffer") != NULL, "message: %s", err.msg);
	}
	const size_t good[] = {0, BLQ_DUMP_FS_WRITE_BUFFER_MIN, BLQ_DUMP_FS_WRITE_BUFFER_MAX};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		blq_error err;
		blq_dump_fs_config fc = {.directory = dir, .write_buffer = good[i]};
		blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
		cr_expect_not_null(w, "write_buffer %zu: %s", good[i], err.msg);
		blq_dump_writer_free(w);
	}
	du_rmrf(dir);
}

