/*
 * A restorer feeding a blq_enqueuer instead of a queue (issue 34, item 9:
 * blq_restorer_config.sink). The dumps are real: a queue whose worker is
 * parked leaks into a dump (fs writer, or Redis), and a restorer reads it
 * back into
 * - another dump's blq_dump_enqueuer: every leaked item lands in the
 *   second dump once, keeps why it was dead-lettered (enqueue_why), and
 *   its record is committed only after the second dump wrote it;
 * - a sink of the test's own that refuses some items for a while and
 *   whose sync fails at first: a refused record stays in its file and
 *   comes again, nothing is lost or taken twice, and the restorer's
 *   counters add up item by item.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "dump_util.h"

#define N_MAX 4096

/* ---- the source: a real queue leaking into a real dump ---------------- */

static _Atomic unsigned processed_by_src[N_MAX];

/* The source's worker: parked until the gate opens, then records the id. */
static int src_worker(void *ctx, void *payload, blq_task *t)
{
	(void)t;
	tu_gate_pass(ctx);
	uint64_t id = du_id(payload);
	if (id < N_MAX)
		atomic_fetch_add(&processed_by_src[id], 1);
	free(payload);
	return 0;
}

/* Leaks about n items of queue "src" into the dump whose writer is w;
 * returns how many leaked. Every id either leaked or was processed. */
static uint64_t leak_into(blq_dump_writer *w, uint64_t n)
{
	blq_error err;
	blq_dump_config dc = {.name = "src-dump", .capacity = 2048, .version = 3,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	static tu_gate gate;
	tu_gate_init(&gate);
	blq_config c = {.name = "src", .capacity = 4, .workers = 1, .worker = src_worker,
			.worker_ctx = &gate, .item_free = free, .dlq = blq_dump_enqueuer(d)};
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	memset(processed_by_src, 0, sizeof(processed_by_src));
	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(blq_enqueue(q, du_item(i, 24 + i % 40)), 0);
	tu_gate_open(&gate);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	cr_assert(tu_balanced(&s));
	cr_assert_eq(blq_dump_close(d), 0);
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	cr_assert_eq(ds.written, s.leaked);
	cr_assert(s.leaked > n / 2, "only %llu of %llu leaked", (unsigned long long)s.leaked,
		  (unsigned long long)n);
	for (uint64_t i = 0; i < n; i++)
		cr_assert(atomic_load(&processed_by_src[i]) <= 1);
	blq_free(q);
	blq_dump_free(d);
	tu_gate_destroy(&gate);
	return s.leaked;
}

static blq_dump_writer *fs_writer(const char *dir)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);

	cr_assert_not_null(w, "%s", err.msg);
	return w;
}

/* About n items leaked through an fs dump into dir, in at least
 * min_files files; returns how many leaked, *files how many files. */
static uint64_t leak_into_files(const char *dir, uint64_t n, size_t min_files, size_t *files)
{
	blq_dump_writer *w = fs_writer(dir);
	uint64_t leaked = leak_into(w, n);

	blq_dump_writer_free(w);
	*files = du_count(dir, "*.bin");
	cr_assert(*files >= min_files, "%zu files", *files);
	return leaked;
}

static blq_dump_reader *fs_reader(const char *dir)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = 3};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);

	cr_assert_not_null(rd, "%s", err.msg);
	return rd;
}

static blq_restorer *sink_restorer(blq_dump_reader *rd, blq_enqueuer sink)
{
	blq_error err;
	blq_restorer_config rc = {.name = "mover", .reader = rd,
				  .decoder = blq_dump_bytes_decoder(), .sink = sink,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 1000000, .max_in_flight = 64};
	blq_restorer *r = blq_restorer_new(&rc, &err);

	cr_assert_not_null(r, "%s", err.msg);
	return r;
}

static uint64_t failures_total(const struct blq_restorer_stats *s)
{
	uint64_t n = 0;

	for (int k = 0; k < BLQ_DUMP_FAILURES; k++)
		n += s->failures[k];
	return n;
}

/* ---- (a) into another dump -------------------------------------------- */

/* What the second dump holds, read back by a restorer into a queue whose
 * decoder checks each record's why and restore count. */
static _Atomic unsigned in_dump2[N_MAX];
static _Atomic unsigned why_ok, why_bad, restores_bad;

static int checking_decode(void *ctx, const blq_dump_record *rec, void **payload)
{
	(void)ctx;
	if (rec->why.reason == BLQ_DLQ_OVERFLOW_REAR && strcmp(rec->why.queue, "src") == 0)
		atomic_fetch_add(&why_ok, 1);
	else
		atomic_fetch_add(&why_bad, 1);
	/* Restored once into dump 2 (1 stored), now a second time. */
	if (rec->restores != 2)
		atomic_fetch_add(&restores_bad, 1);
	return blq_dump_bytes_decoder().decode(NULL, rec, payload);
}

static int count_worker(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	uint64_t id = du_id(payload);
	if (id < N_MAX)
		atomic_fetch_add(&in_dump2[id], 1);
	free(payload);
	return 0;
}

/* Restores dir2 into a queue: in_dump2 counts each id. */
static void read_back(const char *dir2, uint64_t want)
{
	blq_error err;
	memset(in_dump2, 0, sizeof(in_dump2));
	atomic_store(&why_ok, 0);
	atomic_store(&why_bad, 0);
	atomic_store(&restores_bad, 0);
	blq_config c = {.name = "check", .capacity = 256, .workers = 1, .worker = count_worker,
			.item_free = free};
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	blq_dump_reader *rd = fs_reader(dir2);
	blq_restorer_config rc = {.reader = rd, .decoder = {.decode = checking_decode},
				  .target = q, .item_free = free, .check_interval_ns = 2000000};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_assert(TU_WAIT_FOR(du_rstats(r).done == want && du_count(dir2, "*.bin") == 0, 20000),
		  "dump 2 read back: %llu of %llu", (unsigned long long)du_rstats(r).done,
		  (unsigned long long)want);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	cr_expect_eq(atomic_load(&why_ok), want, "records that kept their why: %u of %llu",
		     atomic_load(&why_ok), (unsigned long long)want);
	cr_expect_eq(atomic_load(&why_bad), 0);
	cr_expect_eq(atomic_load(&restores_bad), 0, "records with another restore count");
}

/* Restores what the source leaked (reader rd, `leaked` records) into a
 * second dump on dir2 through its enqueuer, until `empty` says the source
 * is gone; returns the restorer's final counters. While it runs, a record
 * is never done before dump 2 wrote its item: its batches are far larger
 * than the items and its interval 30 s, so only the restorer's syncs
 * (blq_dump_flush) write them. Then dir2 must hold each leaked id once. */
static struct blq_restorer_stats move(blq_dump_reader *rd, uint64_t n, uint64_t leaked,
				      const char *dir2, bool (*empty)(void *), void *ctx)
{
	blq_error err;
	blq_dump_writer *w2 = fs_writer(dir2);
	blq_dump_config dc = {.name = "dump2", .capacity = 1 << 20, .version = 3,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w2};
	blq_dump *d2 = blq_dump_new(&dc, &err);
	cr_assert_not_null(d2, "%s", err.msg);
	blq_restorer *r = sink_restorer(rd, blq_dump_enqueuer(d2));
	uint64_t early = 0, waited_ms = 0;
	struct blq_dump_stats ds;
	for (; waited_ms < 20000; waited_ms++) {
		uint64_t done = du_rstats(r).done; /* first: `written` only grows */
		blq_dump_stats(d2, &ds);
		if (done > ds.written)
			early++;
		if (done == leaked && empty(ctx))
			break;
		tu_sleep_us(1000);
	}
	cr_assert(waited_ms < 20000, "moved %llu of %llu", (unsigned long long)du_rstats(r).done,
		  (unsigned long long)leaked);
	cr_expect_eq(early, 0, "records done before dump 2 wrote them (%llu looks)",
		     (unsigned long long)early);
	blq_restorer_close(r);
	struct blq_restorer_stats s = du_rstats(r);
	blq_restorer_free(r);
	blq_dump_stats(d2, &ds);
	cr_expect_eq(ds.in, leaked);
	cr_expect_eq(ds.written, leaked, "dump 2 wrote %llu of %llu", (unsigned long long)ds.written,
		     (unsigned long long)leaked);
	cr_expect_eq(ds.buffered, 0);
	blq_dump_free(d2);
	blq_dump_writer_free(w2);

	read_back(dir2, leaked);
	for (uint64_t i = 0; i < n; i++) {
		unsigned want = atomic_load(&processed_by_src[i]) ? 0 : 1;
		cr_expect_eq(atomic_load(&in_dump2[i]), want, "id %llu in dump 2 %u times, want %u",
			     (unsigned long long)i, atomic_load(&in_dump2[i]), want);
		if (atomic_load(&in_dump2[i]) != want)
			break;
	}
	return s;
}

/* The accounting of a restorer that moved `leaked` records into a sink
 * that refused none. */
static void expect_moved(const struct blq_restorer_stats *s, uint64_t leaked)
{
	cr_expect_eq(s->records, leaked);
	cr_expect_eq(s->restored, leaked);
	cr_expect_eq(s->done, leaked);
	cr_expect_eq(s->returned + s->dead + s->lost + s->quarantined + s->in_flight, 0);
	cr_expect_eq(s->processed + s->failed + s->expired + s->leaked, 0,
		     "a sink reports no outcome");
	cr_expect_eq(failures_total(s), 0);
}

static bool dir_empty(void *dir)
{
	return du_count(dir, "*.bin") == 0 && du_count(dir, ".*.ckpt") == 0;
}

TestSuite(sink, .timeout = 60);

Test(sink, a_queues_leaks_move_from_one_dump_into_another)
{
	char *dir1 = du_tmpdir("sink1"), *dir2 = du_tmpdir("sink2");
	const uint64_t n = 1500;
	size_t files;
	uint64_t leaked = leak_into_files(dir1, n, 3, &files);

	blq_dump_reader *rd = fs_reader(dir1);
	struct blq_restorer_stats s = move(rd, n, leaked, dir2, dir_empty, dir1);
	blq_dump_reader_free(rd);
	expect_moved(&s, leaked);
	cr_expect_eq(s.dumps, files, "files committed: %llu of %zu", (unsigned long long)s.dumps,
		     files);
	du_rmrf(dir1);
	du_rmrf(dir2);
}

#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>

typedef struct stream {
	redisContext *c;
	char key[96];
} stream;

/* The source stream has no entry left (each acked and deleted). */
static bool stream_empty(void *ctx)
{
	stream *st = ctx;
	redisReply *rep = redisCommand(st->c, "XLEN %s", st->key);
	bool empty = rep != NULL && rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;

	freeReplyObject(rep);
	return empty;
}

/* The same from a Redis stream: the queue leaks into a dump whose writer
 * is Redis, the restorer reads the stream into the fs dump. */
Test(sink, leaks_move_from_a_redis_stream_into_a_file_dump)
{
	char host[64];
	int port;
	if (!du_redis_env(host, sizeof(host), &port))
		cr_skip_test("BLQ_TEST_REDIS is not set");
	stream st;
	snprintf(st.key, sizeof(st.key), "blq-sink-%d", (int)getpid());
	st.c = redisConnect(host, port);
	cr_assert(st.c != NULL && st.c->err == 0, "redis at %s:%d", host, port);
	freeReplyObject(redisCommand(st.c, "DEL %s", st.key));

	blq_error err;
	blq_dump_redis_config rc = {.host = host, .port = port, .key = st.key, .version = 3,
				    .read_count = 100};
	blq_dump_writer *w1 = blq_dump_redis_writer_new(&rc, &err);
	cr_assert_not_null(w1, "%s", err.msg);
	const uint64_t n = 1000;
	uint64_t leaked = leak_into(w1, n);
	blq_dump_writer_free(w1);
	cr_assert(!stream_empty(&st));

	char *dir2 = du_tmpdir("sinkr");
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	struct blq_restorer_stats s = move(rd, n, leaked, dir2, stream_empty, &st);
	blq_dump_reader_free(rd);
	expect_moved(&s, leaked);
	freeReplyObject(redisCommand(st.c, "DEL %s", st.key));
	redisFree(st.c);
	du_rmrf(dir2);
}
#endif

/* ---- (b) a sink that refuses some items -------------------------------- */

/* Refuses ids divisible by 3 the first `refusals` times each is offered;
 * its sync fails `sync_fail` times first. Called from the restorer's thread
 * only; the test reads it after the restorer was closed. */
typedef struct picky {
	unsigned offered[N_MAX];
	unsigned accepted[N_MAX];
	unsigned refusals;
	uint64_t refused;
	unsigned sync_fail;
	uint64_t syncs, syncs_failed;
	uint64_t accepted_since_sync; /* accepted, not synced yet */
	uint64_t synced;             /* accepted and synced */
} picky;

static int picky_enqueue(void *self, void *payload)
{
	picky *p = self;
	uint64_t id = du_id(payload);

	if (id >= N_MAX)
		return BLQ_EINVAL;
	if (id % 3 == 0 && p->offered[id]++ < p->refusals) {
		p->refused++;
		return BLQ_EIO; /* refused: the caller keeps the payload */
	}
	p->accepted[id]++;
	p->accepted_since_sync++;
	free(payload);
	return 0;
}

static int picky_sync(void *self)
{
	picky *p = self;

	p->syncs++;
	if (p->syncs_failed < p->sync_fail) {
		p->syncs_failed++;
		return BLQ_EIO;
	}
	p->synced += p->accepted_since_sync;
	p->accepted_since_sync = 0;
	return 0;
}

Test(sink, refused_items_stay_in_the_store_and_come_again)
{
	char *dir = du_tmpdir("picky");
	const uint64_t n = 600;
	size_t files;
	uint64_t leaked = leak_into_files(dir, n, 2, &files);
	uint64_t leaked_div3 = 0;
	for (uint64_t i = 0; i < n; i++)
		leaked_div3 += i % 3 == 0 && !atomic_load(&processed_by_src[i]);

	static picky p;
	memset(&p, 0, sizeof(p));
	p.refusals = 2;
	p.sync_fail = 2;
	blq_dump_reader *rd = fs_reader(dir);
	blq_enqueuer sink = {.enqueue = picky_enqueue, .self = &p, .sync = picky_sync};
	blq_restorer *r = sink_restorer(rd, sink);
	cr_assert(TU_WAIT_FOR(du_rstats(r).done == leaked && dir_empty(dir), 20000),
		  "done %llu of %llu, %zu files left", (unsigned long long)du_rstats(r).done,
		  (unsigned long long)leaked, du_count(dir, "*.bin"));
	blq_restorer_close(r); /* its thread is gone: p is ours */
	struct blq_restorer_stats s = du_rstats(r);
	blq_restorer_free(r);
	blq_dump_reader_free(rd);

	/* Nothing lost, nothing taken twice; each refused id refused twice. */
	for (uint64_t i = 0; i < n; i++) {
		unsigned want = atomic_load(&processed_by_src[i]) ? 0 : 1;
		cr_expect_eq(p.accepted[i], want, "id %llu accepted %u times, want %u",
			     (unsigned long long)i, p.accepted[i], want);
		if (want == 1 && i % 3 == 0)
			cr_expect_eq(p.offered[i], 3, "id %llu offered %u times",
				     (unsigned long long)i, p.offered[i]);
	}
	cr_expect_eq(p.refused, 2 * leaked_div3);
	cr_expect_eq(p.synced, leaked, "accepted items synced: %llu of %llu",
		     (unsigned long long)p.synced, (unsigned long long)leaked);

	/* Item by item: each record read was done or returned (refused). */
	cr_expect_eq(s.records, leaked + p.refused);
	cr_expect_eq(s.restored, leaked);
	cr_expect_eq(s.done, leaked);
	cr_expect_eq(s.returned, p.refused);
	cr_expect_eq(s.records, s.done + s.dead + s.lost + s.returned + s.quarantined + s.in_flight);
	cr_expect_eq(s.failures[BLQ_DUMP_FAIL_REFUSED], p.refused);
	cr_expect_eq(s.failures[BLQ_DUMP_FAIL_SYNC], 2);
	cr_expect_eq(failures_total(&s), p.refused + 2, "other failures counted");
	cr_expect_eq(s.read_errors, 2, "the failed syncs");
	/* A refused record comes again with its file, marked as a possible
	 * redelivery (its earlier claim did not commit it). */
	cr_expect_eq(s.redelivered, p.refused);
	cr_expect_eq(s.dumps, files);
	du_rmrf(dir);
}

Test(sink, target_and_sink_are_one_or_the_other)
{
	blq_error err = {0, ""};
	char *dir = du_tmpdir("sinkcfg");
	blq_dump_reader *rd = fs_reader(dir);
	static picky p;
	blq_config c = {.name = "t", .capacity = 4, .workers = 1, .worker = count_worker,
			.item_free = free};
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);

	blq_restorer_config none = {.reader = rd, .decoder = blq_dump_bytes_decoder()};
	cr_expect_null(blq_restorer_new(&none, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "target, sink") != NULL, "%s",
		  err.msg);

	blq_restorer_config both = none;
	both.target = q;
	both.sink = (blq_enqueuer){.enqueue = picky_enqueue, .self = &p};
	cr_expect_null(blq_restorer_new(&both, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "target, sink") != NULL, "%s",
		  err.msg);

	blq_restorer_config no_fn = none;
	no_fn.sink = (blq_enqueuer){.self = &p, .sync = picky_sync};
	cr_expect_null(blq_restorer_new(&no_fn, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "sink: enqueue") != NULL, "%s",
		  err.msg);

	blq_restorer_config ok = none;
	ok.sink = blq_as_enqueuer(q);
	blq_restorer *r = blq_restorer_new(&ok, &err);
	cr_expect_not_null(r, "%s", err.msg);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}
