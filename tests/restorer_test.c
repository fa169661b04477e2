/*
 * The restorer's commit rule: a record is committed only once its item
 * reached an outcome in the target. Files stay until every record is done
 * and restart from their checkpoint; stream entries stay pending until
 * their outcome; max_in_flight bounds what is in flight; lost and refused
 * items come again; leaked ones wait for their dump's write; redeliveries
 * say so. (Real processes killed with SIGKILL: restore_faults.c.)
 */
#include <criterion/criterion.h>
#include <pthread.h>
#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>
#endif

#include "dump_util.h"

#define MAX_IDS 4096
static _Atomic unsigned seen[MAX_IDS], seen_redelivered[MAX_IDS];
static tu_gate gate;

/* Records the id (and whether the worker was told it is a redelivery). */
static int sink(void *ctx, void *payload, blq_task *t)
{
	blq_bytes *b = payload;
	uint64_t id = du_id(b);

	(void)ctx, (void)t;
	if (id < MAX_IDS) {
		atomic_fetch_add(&seen[id], 1);
		if (b->deliveries > 0)
			atomic_fetch_add(&seen_redelivered[id], 1);
	}
	free(b);
	return 0;
}

static int gated(void *ctx, void *p, blq_task *t)
{
	tu_gate_pass(&gate);
	return sink(ctx, p, t);
}

static int fail_all(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)p, (void)t;
	return 1;
}

static void init(void)
{
	memset(seen, 0, sizeof(seen));
	memset(seen_redelivered, 0, sizeof(seen_redelivered));
	tu_gate_init(&gate);
}

static void fini(void)
{
	tu_gate_open(&gate);
}

TestSuite(restorer, .init = init, .fini = fini, .timeout = 60);

static blq *target(size_t capacity, blq_worker_fn fn)
{
	blq_error err;
	blq_config c = {.name = "target", .capacity = capacity, .workers = 1, .worker = fn,
			.item_free = free};
	blq *q = blq_new(&c, &err);

	cr_assert_not_null(q, "%s", err.msg);
	return q;
}

/* Dumps ids [from, from + n) into dir through a dump (one batch per
 * `per_file` items). */
static void dump_ids(const char *dir, uint64_t from, uint64_t n, size_t per_file)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = per_file * (12 + 32), .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	for (uint64_t i = from; i < from + n; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 32)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
}

static blq_dump_reader *fs_reader(const char *dir)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);

	cr_assert_not_null(rd, "%s", err.msg);
	return rd;
}

static blq_restorer *restorer(blq_dump_reader *rd, blq *q, size_t in_flight,
			      uint64_t close_timeout)
{
	blq_error err;
	blq_restorer *r = du_restorer(rd, q, in_flight, close_timeout, &err);

	cr_assert_not_null(r, "%s", err.msg);
	return r;
}

static unsigned count_seen(uint64_t n, unsigned *dups)
{
	unsigned distinct = 0;

	*dups = 0;
	for (uint64_t i = 0; i < n; i++) {
		unsigned k = atomic_load(&seen[i]);
		distinct += k > 0;
		*dups += k > 1 ? k - 1 : 0;
	}
	return distinct;
}

/* The first defect: accepted is not done. */
Test(restorer, a_file_stays_until_its_items_reached_an_outcome)
{
	char *dir = du_tmpdir("stay");
	dump_ids(dir, 0, 50, 50);
	cr_assert_eq(du_count(dir, "*.bin"), 1);
	blq *q = target(100, gated);
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 0, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 50, 5000));
	tu_sleep_us(50000);
	/* Every item sits in the target (the worker holds one): none done. */
	cr_expect_eq(du_count(dir, "*.bin"), 1, "the file went before its items were processed");
	cr_expect_eq(du_rstats(r).done, 0);
	cr_expect_eq(du_rstats(r).in_flight, 50);
	tu_gate_open(&gate);
	cr_expect(TU_WAIT_FOR(du_rstats(r).dumps == 1, 5000));
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0, "the checkpoint goes with its file");
	struct blq_restorer_stats s = du_rstats(r);
	cr_expect_eq(s.done, 50);
	cr_expect_eq(s.processed, 50);
	cr_expect_eq(s.in_flight, 0);
	unsigned dups;
	cr_expect_eq(count_seen(50, &dups), 50);
	cr_expect_eq(dups, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

static _Atomic unsigned passed;

/* Processes `limit` items, then holds every other one at the gate. */
static int first_then_hold(void *ctx, void *p, blq_task *t)
{
	if (atomic_fetch_add(&passed, 1) >= 40)
		tu_gate_pass(&gate);
	return sink(ctx, p, t);
}

Test(restorer, a_restart_skips_done_records_and_marks_the_rest_as_redeliveries)
{
	char *dir = du_tmpdir("restart");
	dump_ids(dir, 0, 100, 100);
	atomic_store(&passed, 0);
	blq *q = target(200, first_then_hold);
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 16, 20000000);

	/* 40 processed; the rest of the window waits in the target. */
	cr_assert(TU_WAIT_FOR(du_rstats(r).done >= 40 && du_rstats(r).in_flight == 16, 5000),
		  "done %llu in flight %llu", (unsigned long long)du_rstats(r).done,
		  (unsigned long long)du_rstats(r).in_flight);
	blq_restorer_close(r); /* waits 20 ms, then releases the file */
	struct blq_restorer_stats first = du_rstats(r);
	cr_expect_eq(first.done, 40);
	cr_expect_eq(first.returned, 16, "the items still in the target come again");
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 1);
	/* The target then processes them anyway: those are the duplicates. */
	tu_gate_open(&gate);
	blq_close(q);
	blq_restorer_free(r);
	blq_free(q);

	blq *q2 = target(200, sink);
	blq_restorer *r2 = restorer(rd, q2, 16, 0);
	cr_assert(TU_WAIT_FOR(du_rstats(r2).dumps == 1, 5000));
	struct blq_restorer_stats second = du_rstats(r2);
	cr_expect_eq(second.records, 60, "the 40 done records are skipped");
	cr_expect_eq(second.redelivered, 60);
	cr_expect_eq(du_count(dir, "*.bin") + du_count(dir, ".*.ckpt"), 0);
	blq_restorer_free(r2);
	blq_close(q2);
	unsigned dups;
	cr_expect_eq(count_seen(100, &dups), 100, "nothing lost");
	cr_expect_eq(dups, 16, "exactly the items in flight at the close came twice");
	for (unsigned i = 0; i < 100; i++)
		if (atomic_load(&seen[i]) > 1)
			cr_expect_eq(atomic_load(&seen_redelivered[i]), 1,
				     "id %u: the duplicate was marked a redelivery", i);
	blq_free(q2);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

Test(restorer, max_in_flight_bounds_what_is_in_flight)
{
	char *dir = du_tmpdir("window");
	dump_ids(dir, 0, 300, 60);
	blq *q = target(1000, gated);
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 8, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).in_flight == 8, 5000));
	tu_sleep_us(30000);
	cr_expect_eq(du_rstats(r).restored, 8, "the restorer waits at its bound, it never drops");
	cr_expect_leq(blq_size(q), 8);
	/* Let items through one at a time for a while: never above 8. */
	uint64_t worst = 0;
	tu_gate_open(&gate);
	while (du_rstats(r).dumps < 5) {
		struct blq_restorer_stats s = du_rstats(r);
		if (s.in_flight > worst)
			worst = s.in_flight;
		cr_assert(s.records <= 300);
		tu_sleep_us(200);
	}
	cr_expect_leq(worst, 8);
	unsigned dups;
	cr_expect_eq(count_seen(300, &dups), 300);
	cr_expect_eq(dups, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

static void *force_close(void *q)
{
	blq_force_close(q);
	return NULL;
}

Test(restorer, items_the_target_loses_at_a_force_close_come_again)
{
	char *dir = du_tmpdir("lost");
	dump_ids(dir, 0, 20, 20);
	blq *q = target(100, gated);
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 0, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 20 && blq_size(q) == 19, 5000));
	/* One item in the worker, 19 queued: a force close without a DLQ
	 * loses the 19. Their records are not done. */
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, force_close, q), 0);
	tu_sleep_us(20000);
	tu_gate_open(&gate);
	pthread_join(t, NULL);
	struct blq_stats qs;
	blq_stats(q, &qs);
	cr_expect_eq(qs.lost, 19);
	cr_expect(TU_WAIT_FOR(du_rstats(r).returned == 19, 5000));
	cr_expect_eq(du_rstats(r).done, 1);
	blq_restorer_free(r);
	cr_expect_eq(du_count(dir, "*.bin"), 1, "the file stays for the lost items");
	blq_free(q);

	blq *q2 = target(100, sink);
	blq_restorer *r2 = restorer(rd, q2, 0, 0);
	cr_expect(TU_WAIT_FOR(du_rstats(r2).dumps == 1, 5000));
	cr_expect_eq(du_rstats(r2).records, 19);
	blq_restorer_free(r2);
	blq_close(q2);
	unsigned dups;
	cr_expect_eq(count_seen(20, &dups), 20);
	cr_expect_eq(dups, 0);
	blq_free(q2);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* Two threads close one restorer at once; each notes what it saw when its
 * call returned. */
typedef struct closer {
	blq_restorer *r;
	pthread_barrier_t *start;
	struct blq_restorer_stats at_return;
	uint64_t took_ns;
} closer;

static void *close_restorer(void *arg)
{
	closer *c = arg;

	pthread_barrier_wait(c->start);
	uint64_t t0 = tu_now_ns();
	cr_expect_eq(blq_restorer_close(c->r), 0);
	c->took_ns = tu_now_ns() - t0;
	c->at_return = du_rstats(c->r);
	return NULL;
}

Test(restorer, every_concurrent_close_waits_for_the_restorer_to_stop)
{
	char *dir = du_tmpdir("closers");
	dump_ids(dir, 0, 20, 20);
	blq *q = target(100, gated); /* a slow target: it holds every item */
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 0, 200000000); /* waits 200 ms at close */

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 20 && du_rstats(r).in_flight == 20, 5000));
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2);
	closer c[2] = {{.r = r, .start = &start}, {.r = r, .start = &start}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, close_restorer, &c[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* The restorer waited its close_timeout for the 20 items, then gave
	 * their records back and released the dump: both callers returned
	 * after that, and saw the final stats. */
	for (int i = 0; i < 2; i++) {
		cr_expect_geq(c[i].took_ns, 150000000, "closer %d returned after %llu ns", i,
			      (unsigned long long)c[i].took_ns);
		cr_expect_eq(c[i].at_return.in_flight, 0, "closer %d", i);
		cr_expect_eq(c[i].at_return.returned, 20, "closer %d", i);
		cr_expect_eq(c[i].at_return.released, 1, "closer %d", i);
	}
	cr_expect_eq(blq_restorer_close(r), 0, "a later close returns at once");
	pthread_barrier_destroy(&start);
	tu_gate_open(&gate);
	blq_close(q);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	cr_expect_eq(du_count(dir, "*.bin"), 1, "the file stays for the returned records");
	du_rmrf(dir);
}

Test(restorer, a_closed_target_keeps_the_records_and_says_so)
{
	char *dir = du_tmpdir("closed");
	dump_ids(dir, 0, 10, 10);
	blq *q = target(100, sink);
	blq_close(q);
	blq_dump_reader *rd = fs_reader(dir);
	blq_error err;
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);

	cr_expect(TU_WAIT_FOR(du_rstats(r).released >= 2, 5000), "released %llu",
		  (unsigned long long)du_rstats(r).released);
	cr_expect(du_logged("the target refused an item (queue is closed)"), "log: %s", du_log_text);
	struct blq_restorer_stats s = du_rstats(r);
	cr_expect_eq(s.restored, 0);
	cr_expect_eq(s.done, 0);
	cr_expect_geq(s.returned, 2);
	cr_expect_leq(s.records - s.returned, 1, "at most the record being refused is in flight");
	blq_restorer_free(r);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

Test(restorer, a_file_removed_under_the_reader_is_finished_without_harm)
{
	char *dir = du_tmpdir("gone");
	char path[512];
	dump_ids(dir, 0, 30, 30);
	cr_assert(du_first(dir, "*.bin", path));
	blq *q = target(100, gated);
	blq_dump_reader *rd = fs_reader(dir);
	blq_restorer *r = restorer(rd, q, 0, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 30, 5000));
	cr_assert_eq(unlink(path), 0);
	tu_gate_open(&gate);
	cr_expect(TU_WAIT_FOR(du_rstats(r).done == 30, 5000));
	cr_expect(TU_WAIT_FOR(du_rstats(r).dumps == 1, 5000));
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	unsigned dups;
	cr_expect_eq(count_seen(30, &dups), 30);
	cr_expect_eq(dups, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* Item 2's leaked case: a record whose item leaked into a dump is done
 * only once that dump wrote it. */
Test(restorer, a_leaked_item_is_done_once_its_dump_wrote_it)
{
	char *src = du_tmpdir("lsrc"), *dlq = du_tmpdir("ldlq");
	dump_ids(src, 0, 10, 10);
	blq_error err;
	blq_dump_fs_config fc = {.directory = dlq};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	/* A long flush interval: only the restorer's sync writes it soon. */
	blq_dump_config dc = {.capacity = 1 << 20, .flush_interval_ns = 60000000000ull,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	blq_config c = {.name = "leaky", .capacity = 100, .workers = 1, .worker = fail_all,
			.item_free = free, .dlq = blq_dump_enqueuer(d), .fail_to_dlq = true};
	blq *q = blq_new(&c, &err);
	cr_assert_not_null(q, "%s", err.msg);
	blq_dump_reader *rd = fs_reader(src);
	blq_restorer *r = restorer(rd, q, 0, 0);

	cr_assert(TU_WAIT_FOR(du_count(src, "*.bin") == 0, 5000));
	/* The source went: by then the dump had written all ten. */
	struct blq_dump_stats ds;
	blq_dump_stats(d, &ds);
	cr_expect_eq(ds.written, 10, "the source file went before its leaked items were durable");
	cr_expect_eq(du_count(dlq, "*.bin"), 1);
	struct blq_restorer_stats s = du_rstats(r);
	cr_expect_eq(s.leaked, 10);
	cr_expect_eq(s.done, 10);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	blq_dump_reader_free(rd);
	du_rmrf(src);
	du_rmrf(dlq);
}

/* A poison item: every delivery kills its restorer before the outcome.
 * After max_restores deliveries it goes to the dead store instead. */
Test(restorer, a_record_delivered_max_restores_times_goes_to_the_dead_store)
{
	char *dir = du_tmpdir("poison"), *dead = du_tmpdir("poisoned");
	dump_ids(dir, 0, 5, 5);
	blq_dump_reader *rd = fs_reader(dir);
	/* Two deliveries that never reach an outcome (the target holds the
	 * items; the restorer gives up at close, as a crash would). */
	for (int k = 0; k < 2; k++) {
		tu_gate_close(&gate);
		blq *q = target(100, gated);
		blq_restorer *r = restorer(rd, q, 0, 1000000);
		cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 5, 5000));
		blq_restorer_close(r);
		cr_expect_eq(du_rstats(r).returned, 5);
		tu_gate_open(&gate);
		blq_restorer_free(r);
		blq_free(q);
	}
	memset(seen, 0, sizeof(seen));
	blq_error err;
	blq_dump_fs_config dfc = {.directory = dead};
	blq_dump_writer *dw = blq_dump_fs_writer_new(&dfc, &err);
	cr_assert_not_null(dw, "%s", err.msg);
	blq *q = target(100, sink);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .max_restores = 2, .dead = dw};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_expect(TU_WAIT_FOR(du_rstats(r).dumps == 1, 5000));
	struct blq_restorer_stats s = du_rstats(r);
	cr_expect_eq(s.dead, 5, "restores 0 + deliveries 2 reached max_restores 2");
	cr_expect_eq(s.restored, 0);
	cr_expect_eq(s.records,
		     s.dead + s.done + s.lost + s.returned + s.quarantined + s.in_flight);
	cr_expect_eq(du_count(dead, "*.bin"), 1);
	cr_expect_eq(du_count(dir, "*.bin") + du_count(dir, ".*.ckpt"), 0);
	unsigned dups;
	cr_expect_eq(count_seen(5, &dups), 0, "none reached the target a third time");
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_writer_free(dw);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
	du_rmrf(dead);
}

Test(restorer, bad_configs_are_refused_with_the_field_named)
{
	char *dir = du_tmpdir("cfg");
	blq *q = target(4, sink);
	blq_dump_reader *rd = fs_reader(dir);
	blq_error err;
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .max_in_flight = 1000001};

	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "max_in_flight") != NULL, "%s", err.msg);
	rc.max_in_flight = 0;
	rc.close_timeout_ns = 400ull * 24 * 3600 * 1000000000ull;
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "close_timeout_ns") != NULL, "%s", err.msg);
	rc.close_timeout_ns = 0;
	blq_dump_reader no_done = *rd;
	no_done.done = NULL;
	rc.reader = &no_done;
	cr_expect_null(blq_restorer_new(&rc, &err));
	cr_expect(strstr(err.msg, "reader") != NULL, "%s", err.msg);
	blq_free(q);
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

/* ---- Redis -------------------------------------------------------- */
#ifdef BLQ_TEST_WITH_REDIS

static redisContext *redis(char *host, int *port)
{
	if (!du_redis_env(host, 64, port))
		return NULL;
	redisContext *c = redisConnect(host, *port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, *port);
	return c;
}

static long long redis_int(redisContext *c, const char *fmt, const char *key)
{
	redisReply *rep = redisCommand(c, fmt, key);
	long long v = -1;

	if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	else if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
		 rep->element[0]->type == REDIS_REPLY_INTEGER)
		v = rep->element[0]->integer; /* XPENDING's summary: the count first */
	freeReplyObject(rep);
	return v;
}

static void redis_fill(const char *host, int port, const char *key, uint64_t n)
{
	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rcfg, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = 1 << 16, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 32)), 0);
	cr_assert_eq(blq_dump_flush(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
}

static blq_dump_reader *redis_reader(const char *host, int port, const char *key,
				     const char *consumer)
{
	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key,
				      .consumer = consumer, .claim_idle_ns = 60000000000ull};
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rcfg, &err);

	cr_assert_not_null(rd, "%s", err.msg);
	return rd;
}

Test(restorer, a_stream_entry_stays_pending_until_its_outcome)
{
	char host[64];
	int port;
	redisContext *c = redis(host, &port);
	if (c == NULL)
		cr_skip_test("BLQ_TEST_REDIS unset: scripts/test.sh provides a server");
	const char *key = "blq:test:restorer:pending";
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redis_fill(host, port, key, 20);
	blq *q = target(100, gated);
	blq_dump_reader *rd = redis_reader(host, port, key, "one");
	blq_restorer *r = restorer(rd, q, 0, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 20, 5000));
	tu_sleep_us(50000);
	cr_expect_eq(redis_int(c, "XLEN %s", key), 20, "entries deleted before their outcome");
	cr_expect_eq(redis_int(c, "XPENDING %s blq", key), 20);
	tu_gate_open(&gate);
	cr_expect(TU_WAIT_FOR(du_rstats(r).dumps == 1, 5000));
	cr_expect_eq(redis_int(c, "XLEN %s", key), 0);
	cr_expect_eq(redis_int(c, "XPENDING %s blq", key), 0);
	unsigned dups;
	cr_expect_eq(count_seen(20, &dups), 20);
	cr_expect_eq(dups, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redisFree(c);
}

Test(restorer, a_redelivered_entry_carries_its_delivery_count)
{
	char host[64];
	int port;
	redisContext *c = redis(host, &port);
	if (c == NULL)
		cr_skip_test("BLQ_TEST_REDIS unset: scripts/test.sh provides a server");
	const char *key = "blq:test:restorer:redeliver";
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redis_fill(host, port, key, 20);
	blq *q = target(100, gated);
	blq_dump_reader *rd = redis_reader(host, port, key, "same");
	blq_restorer *r = restorer(rd, q, 0, 10000000);

	/* All 20 held in the target: close gives them back unacked, as a
	 * crash would leave them. */
	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 20, 5000));
	blq_restorer_close(r);
	cr_expect_eq(du_rstats(r).returned, 20);
	cr_expect_eq(redis_int(c, "XPENDING %s blq", key), 20);
	tu_gate_open(&gate);
	blq_close(q);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);

	/* The same consumer name takes its pending entries back at once. */
	blq *q2 = target(100, sink);
	blq_dump_reader *rd2 = redis_reader(host, port, key, "same");
	blq_restorer *r2 = restorer(rd2, q2, 0, 0);
	cr_expect(TU_WAIT_FOR(du_rstats(r2).dumps == 1, 5000));
	cr_expect_eq(du_rstats(r2).redelivered, 20);
	blq_restorer_free(r2);
	blq_close(q2);
	for (unsigned i = 0; i < 20; i++) {
		cr_expect_eq(atomic_load(&seen[i]), 2);
		cr_expect_eq(atomic_load(&seen_redelivered[i]), 1);
	}
	cr_expect_eq(redis_int(c, "XLEN %s", key), 0);
	cr_expect_eq(redis_int(c, "XPENDING %s blq", key), 0);
	blq_free(q2);
	blq_dump_reader_free(rd2);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redisFree(c);
}

Test(restorer, a_stream_key_of_the_wrong_type_is_a_clear_error)
{
	char host[64];
	int port;
	redisContext *c = redis(host, &port);
	if (c == NULL)
		cr_skip_test("BLQ_TEST_REDIS unset: scripts/test.sh provides a server");
	const char *key = "blq:test:restorer:string";
	freeReplyObject(redisCommand(c, "SET %s hello", key));
	blq_error err;
	blq_dump_redis_config rcfg = {.host = host, .port = port, .key = key};
	cr_expect_null(blq_dump_redis_reader_new(&rcfg, &err));
	cr_expect(strstr(err.msg, "WRONGTYPE") != NULL && strstr(err.msg, key) != NULL, "%s",
		  err.msg);
	/* Unreachable at start: the address is named. */
	blq_dump_redis_config gone = {.host = "127.0.0.1", .port = du_free_port(), .key = key,
				      .connect_timeout_ns = 200000000};
	cr_expect_null(blq_dump_redis_reader_new(&gone, &err));
	cr_expect(strstr(err.msg, "127.0.0.1:") != NULL, "%s", err.msg);
	/* The key changes type under a running restorer: logged, no crash. */
	freeReplyObject(redisCommand(c, "DEL %s", key));
	blq *q = target(10, sink);
	blq_dump_reader *rd = redis_reader(host, port, key, "wt");
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	freeReplyObject(redisCommand(c, "SET %s hello", key));
	cr_expect(TU_WAIT_FOR(du_logged("WRONGTYPE"), 5000), "log: %s", du_log_text);
	cr_expect_geq(du_rstats(r).read_errors, 1);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redisFree(c);
}
Test(restorer, a_group_deleted_under_a_running_restorer_loses_nothing)
{
	char host[64];
	int port;
	redisContext *c = redis(host, &port);
	if (c == NULL)
		cr_skip_test("BLQ_TEST_REDIS unset: scripts/test.sh provides a server");
	const char *key = "blq:test:restorer:nogroup";
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redis_fill(host, port, key, 40);
	blq *q = target(100, gated);
	blq_dump_reader *rd = redis_reader(host, port, key, "ng");
	blq_restorer *r = restorer(rd, q, 16, 0);

	cr_assert(TU_WAIT_FOR(du_rstats(r).restored == 16, 5000));
	freeReplyObject(redisCommand(c, "XGROUP DESTROY %s blq", key));
	tu_gate_open(&gate);
	/* The group comes back at the stream's start: what was not deleted
	 * yet comes again; nothing is lost. */
	cr_expect(TU_WAIT_FOR(redis_int(c, "XLEN %s", key) == 0 && count_seen(40, &(unsigned){0}) == 40,
			      10000),
		  "xlen %lld", redis_int(c, "XLEN %s", key));
	cr_expect(TU_WAIT_FOR(du_rstats(r).in_flight == 0, 5000));
	blq_restorer_free(r);
	blq_close(q);
	unsigned dups;
	cr_expect_eq(count_seen(40, &dups), 40);
	cr_expect_leq(dups, 16, "at most the window came twice");
	blq_free(q);
	blq_dump_reader_free(rd);
	freeReplyObject(redisCommand(c, "DEL %s", key));
	redisFree(c);
}
#endif
