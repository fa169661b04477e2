/*
 * Damage in the middle of a dump file loses only what it covers: the
 * readers (the restorer's fs reader, the inspector) resynchronise on the
 * next intact record, so every record after a damaged one is restored,
 * listed and salvaged, at stable indices (the checkpoint across claims,
 * the inspector's locations); the file is quarantined after them, the
 * bytes skipped are said, and the restorer counts what it set aside
 * (blq_restorer_stats.quarantined, inside its invariant) and logs it
 * through its own logger when the reader has none. Files are written by a
 * real dump (fs writer, records with a why), damaged by hand, restored
 * into a real queue and checked by payload identity.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>
#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>
#endif

#include <blq/dlqinspect.h>

#include "../dlq/dump_format.h"
#include "dump_util.h"
#include "suite_util.h"

TestSuite(dump_damage, .timeout = 60);

#define N 41       /* records in the file */
#define LEN 40     /* payload bytes of each */
#define VERSION 1u
#define MAX_IDS 4096

static _Atomic unsigned seen[MAX_IDS];
static uint64_t offs[N + 1]; /* each record's offset; offs[N]: the file's size */

static int sink(void *ctx, void *payload, blq_task *t)
{
	uint64_t id = du_id(payload);

	(void)ctx, (void)t;
	if (id < MAX_IDS)
		atomic_fetch_add(&seen[id], 1);
	free(payload);
	return 0;
}

static uint64_t size_of(int k)
{
	return offs[k + 1] - offs[k];
}

/* A real dump of N records (ids 0..N-1, each with a why) into dir: one
 * format-2 file, its path in path; offs[] from its length fields. */
static void write_dump(const char *dir, char *path)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = 1 << 20, .version = VERSION,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	blq_dlq_why why = {.reason = BLQ_DLQ_FAILED, .attempts = 3, .rc = -42,
			   .time_ns = 1764000000000000000ull};
	strcpy(why.queue, "orders");
	for (uint64_t i = 0; i < N; i++)
		cr_assert_eq(blq_dump_enqueue_why(d, du_item(i, LEN), &why), 0);
	cr_assert_eq(blq_dump_close(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	cr_assert_eq(du_count(dir, "*.bin"), 1);
	cr_assert(du_first(dir, "*.bin", path));

	unsigned char buf[8192];
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	cr_assert(n > 16 && n < (ssize_t)sizeof(buf));
	cr_assert_eq(buf[4], 2, "format 2: records with a why");
	uint64_t off = BLQ__DUMP_HEADER;
	for (int k = 0; k < N; k++) {
		offs[k] = off;
		off += BLQ__DUMP_REC_HEADER + blq__get32(buf + off);
	}
	offs[N] = off;
	cr_assert_eq(off, (uint64_t)n, "N records, back to back");
}

static void flip(const char *path, uint64_t at)
{
	unsigned char b;
	int fd = open(path, O_RDWR);
	cr_assert(fd >= 0 && pread(fd, &b, 1, (off_t)at) == 1);
	b ^= 0xFF;
	cr_assert(pwrite(fd, &b, 1, (off_t)at) == 1);
	close(fd);
}

static void put_len(const char *path, uint64_t at, uint32_t v)
{
	unsigned char b[4];
	int fd = open(path, O_WRONLY);
	blq__put32(b, v);
	cr_assert(fd >= 0 && pwrite(fd, b, 4, (off_t)at) == 4);
	close(fd);
}

static struct blq_restorer_stats rstats(blq_restorer *r)
{
	struct blq_restorer_stats s;

	blq_restorer_stats(r, &s);
	return s;
}

/* Restores dir into a real queue: a reader with no logger and no name of
 * its own, a restorer "rst" logging to du_keeper. Returns its final stats
 * once the file is gone from dir (quarantined) and `expect` items were
 * restored (or 5 s). */
static struct blq_restorer_stats restore(const char *dir, uint64_t expect)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = VERSION};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	blq_config qc = {.name = "target", .capacity = 64, .workers = 2, .worker = sink,
			 .item_free = free};
	blq *q = must_new(&qc);
	blq_restorer_config rc = {.name = "rst", .reader = rd, .decoder = blq_dump_bytes_decoder(),
				  .target = q, .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_expect(TU_WAIT_FOR(rstats(r).restored >= expect && rstats(r).dumps >= 1 &&
				      du_count(dir, "*.bin") == 0,
			      5000));
	blq_restorer_close(r);
	struct blq_restorer_stats s = rstats(r);
	blq_restorer_free(r);
	cr_expect_null(rd->host, "the restorer took its host back");
	blq_close(q);
	struct blq_stats qs = stats(q);
	cr_expect(tu_balanced(&qs));
	cr_expect_eq(qs.processed, s.restored);
	blq_free(q);
	blq_dump_reader_free(rd);
	return s;
}

/* Every id but those in lost[] restored exactly once; the file
 * quarantined whole; the stats and the log line say so. */
static void expect_restored(const char *dir, const struct blq_restorer_stats *s, const int *lost,
			    int nlost, uint64_t skipped, const char *damage)
{
	bool gone[N] = {0};
	for (int i = 0; i < nlost; i++)
		gone[lost[i]] = true;
	unsigned bad = 0;
	for (uint64_t id = 0; id < N; id++)
		if (atomic_load(&seen[id]) != (gone[id] ? 0u : 1u)) {
			bad++;
			cr_expect(false, "id %llu seen %u times", (unsigned long long)id,
				  atomic_load(&seen[id]));
		}
	cr_expect_eq(bad, 0);
	cr_expect_eq(s->restored, (uint64_t)(N - nlost));
	cr_expect_eq(s->done, (uint64_t)(N - nlost));
	cr_expect_eq(s->quarantined, 1, "one damaged file set aside");
	cr_expect_eq(s->skipped_bytes, skipped);
	cr_expect_eq(s->records, (uint64_t)(N - nlost) + 1, "intact records, and the file");
	cr_expect_eq(s->records,
		     s->done + s->dead + s->lost + s->returned + s->quarantined + s->in_flight,
		     "the invariant");
	cr_expect_eq(s->dumps, 1);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 1, "quarantined, not deleted");
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	char want[256];
	snprintf(want, sizeof(want), "dump rst: ");
	cr_expect(du_logged(want), "the restorer's name and logger: %s", du_log_text);
	cr_expect(du_logged(damage), "%s", du_log_text);
	snprintf(want, sizeof(want), "%d damaged span%s, %llu bytes skipped; moved to ", nlost,
		 nlost == 1 ? "" : "s", (unsigned long long)skipped);
	cr_expect(du_logged(want), "want \"%s\": %s", want, du_log_text);
	snprintf(want, sizeof(want), "after its %d intact records were restored", N - nlost);
	cr_expect(du_logged(want), "want \"%s\": %s", want, du_log_text);
}

/* skipped: the bytes the damage covers; 0 for the whole damaged record
 * (offs[] is known only once the file is written). */
static void damaged_one(void (*damage)(const char *path), int lost, uint64_t skipped,
			const char *kind)
{
	char *dir = du_tmpdir("dmg"), path[512], want[128];
	write_dump(dir, path);
	if (skipped == 0)
		skipped = size_of(lost);
	damage(path);
	struct blq_restorer_stats s = restore(dir, N - 1);
	snprintf(want, sizeof(want), "%s at offset %llu, ", kind, (unsigned long long)offs[lost]);
	expect_restored(dir, &s, &lost, 1, skipped, want);
	du_rmrf(dir);
}

static void flip_mid_20(const char *p)
{
	flip(p, offs[20] + size_of(20) / 2);
}

Test(dump_damage, a_flipped_byte_mid_file_loses_only_its_record)
{
	damaged_one(flip_mid_20, 20, 0, "bad checksum");
}

static void len_past_end_20(const char *p)
{
	put_len(p, offs[20], 1u << 20); /* within the limit, past the end */
}

Test(dump_damage, a_length_past_the_end_loses_only_its_record)
{
	damaged_one(len_past_end_20, 20, 0, "truncated record");
}

static void len_into_next_20(const char *p)
{
	/* Into the middle of record 21: the checksum covers the length. */
	put_len(p, offs[20], (uint32_t)(size_of(20) - 12 + size_of(21) / 2));
}

Test(dump_damage, a_length_into_another_record_loses_only_its_record)
{
	damaged_one(len_into_next_20, 20, 0, "bad checksum");
}

static void flip_first(const char *p)
{
	flip(p, offs[0] + 8); /* its checksum */
}

Test(dump_damage, damage_in_the_first_record)
{
	damaged_one(flip_first, 0, 0, "bad checksum");
}

static void flip_last(const char *p)
{
	flip(p, offs[N - 1] + size_of(N - 1) - 1);
}

Test(dump_damage, damage_in_the_last_record)
{
	damaged_one(flip_last, N - 1, 0, "bad checksum");
}

static void cut_tail(const char *p)
{
	cr_assert_eq(truncate(p, (off_t)(offs[N - 1] + 20)), 0);
}

Test(dump_damage, a_truncated_tail_loses_only_the_cut_record)
{
	damaged_one(cut_tail, N - 1, 20, "truncated record");
}

Test(dump_damage, two_damaged_spots_lose_their_two_records)
{
	char *dir = du_tmpdir("dmg2"), path[512], want[128];
	write_dump(dir, path);
	flip(path, offs[10] + 30);
	put_len(path, offs[30], 0xFFFFFFF0u); /* above the limit */
	struct blq_restorer_stats s = restore(dir, N - 2);
	int lost[2] = {10, 30};
	snprintf(want, sizeof(want), "bad checksum at offset %llu, ", (unsigned long long)offs[10]);
	expect_restored(dir, &s, lost, 2, size_of(10) + size_of(30), want);
	du_rmrf(dir);
}

/* The checkpoint indexes records by their place among the intact ones:
 * the same at every claim, so records after a resync marked done in one
 * claim are skipped in the next (none lost, none doubled), and the others
 * come with the same index, as redeliveries. */
Test(dump_damage, indices_after_a_resync_are_stable_across_claims)
{
	char *dir = du_tmpdir("dmgck"), path[512];
	write_dump(dir, path);
	flip(path, offs[20] + 20);
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = VERSION};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "%s", err.msg);

	void *h = NULL;
	blq_dump_record rec;
	uint64_t index_of[N];
	int n = 0;
	cr_assert_eq(rd->next(rd, &h, &err), 1);
	while (rd->record(rd, h, &rec, &err) == 1) {
		uint64_t id;
		memcpy(&id, rec.data, 8);
		cr_assert(id < N && id != 20);
		cr_expect_eq(rec.index, id < 20 ? id : id - 1, "id %llu", (unsigned long long)id);
		cr_expect_eq(rec.why.attempts, 3);
		index_of[id] = rec.index;
		n++;
		/* Done: 0..4 before the damage, 25..35 after it. */
		if (id < 5 || (id >= 25 && id <= 35))
			cr_assert_eq(rd->done(rd, h, rec.index, &err), 0, "%s", err.msg);
	}
	cr_expect_eq(n, N - 1);
	cr_assert_eq(rd->sync(rd, h, &err), 0, "%s", err.msg);
	rd->release(rd, h); /* as a crash after the sync: the checkpoint stays */

	n = 0;
	cr_assert_eq(rd->next(rd, &h, &err), 1);
	while (rd->record(rd, h, &rec, &err) == 1) {
		uint64_t id;
		memcpy(&id, rec.data, 8);
		cr_expect(!(id < 5 || (id >= 25 && id <= 35)) && id != 20, "id %llu came again",
			  (unsigned long long)id);
		cr_expect_eq(rec.index, index_of[id], "id %llu: the same index",
			     (unsigned long long)id);
		cr_expect_eq(rec.deliveries, 1);
		n++;
	}
	cr_expect_eq(n, N - 1 - 5 - 11);
	rd->release(rd, h);
	blq_dump_reader_free(rd);

	/* A restorer finishes it: each id left exactly once. */
	struct blq_restorer_stats s = restore(dir, N - 1 - 16);
	for (uint64_t id = 0; id < N; id++)
		cr_expect_eq(atomic_load(&seen[id]), id < 5 || (id >= 25 && id <= 35) || id == 20 ? 0u
												    : 1u,
			     "id %llu", (unsigned long long)id);
	cr_expect_eq(s.restored, N - 1 - 16);
	cr_expect_eq(s.redelivered, N - 1 - 16, "the file was claimed before");
	cr_expect_eq(s.quarantined, 1);
	cr_expect_eq(du_count(dir, "quarantine/*.bin"), 1);
	du_rmrf(dir);
}

/* ---- the inspector ---------------------------------------------------- */

typedef struct seen_recs {
	uint64_t ids[N], idx[N], off[N];
	int n, reports;
	char report_loc[256], damage[128];
	uint64_t report_off, skipped, spans;
} seen_recs;

static int collect(void *ctx, const blq_inspect_record *r)
{
	seen_recs *c = ctx;

	if (r->state == BLQ_INSPECT_OK) {
		cr_assert(c->n < N);
		memcpy(&c->ids[c->n], r->data, 8);
		c->idx[c->n] = r->index;
		c->off[c->n] = r->offset;
		char want[BLQ_INSPECT_LOC_MAX];
		snprintf(want, sizeof(want), "%s#%llu@%llu", r->part, (unsigned long long)r->index,
			 (unsigned long long)r->offset);
		cr_expect_str_eq(r->loc, want);
		c->n++;
	} else {
		c->reports++;
		snprintf(c->report_loc, sizeof(c->report_loc), "%s", r->loc);
		snprintf(c->damage, sizeof(c->damage), "%s", r->damage);
		c->report_off = r->offset;
		c->skipped = r->skipped;
		c->spans = r->spans;
	}
	return 0;
}

static int by_deletion(void *ctx, const blq_inspect_record *r)
{
	(void)ctx, (void)r;
	return 0;
}

Test(dump_damage, inspector_scan_verify_and_salvage_hand_out_every_intact_record)
{
	char *dir = du_tmpdir("dmgin"), path[512], into[400];
	write_dump(dir, path);
	flip(path, offs[12] + 25);
	put_len(path, offs[33], 1u << 20);
	const char *name = strrchr(path, '/') + 1;
	blq_error err;
	blq_inspect_config ic = {.directory = dir, .version = VERSION};
	blq_inspect *in = blq_inspect_open(&ic, &err);
	cr_assert_not_null(in, "%s", err.msg);

	seen_recs c = {0};
	cr_assert_eq(blq_inspect_scan(in, NULL, collect, &c, &err), 0, "%s", err.msg);
	cr_assert_eq(c.n, N - 2, "before, between and after the two damaged records");
	for (int k = 0; k < c.n; k++) {
		uint64_t id = c.ids[k], rec = id < 12 ? id : id < 33 ? id - 1 : id - 2;
		cr_expect_eq(id, k < 12 ? (uint64_t)k : k < 32 ? (uint64_t)k + 1 : (uint64_t)k + 2);
		cr_expect_eq(c.idx[k], rec, "index: its place among the intact records");
		cr_expect_eq(c.off[k], offs[id], "offset: where it is");
	}
	cr_expect_eq(c.reports, 1, "one damage report");
	char want[600];
	snprintf(want, sizeof(want), "dump/%s", name);
	cr_expect_str_eq(c.report_loc, want);
	cr_expect_str_eq(c.damage, "bad checksum", "the first damage");
	cr_expect_eq(c.report_off, offs[12]);
	cr_expect_eq(c.skipped, size_of(12) + size_of(33));
	cr_expect_eq(c.spans, 2);

	/* Newest first: the report, then the same records in reverse. */
	seen_recs r = {0};
	blq_inspect_filter nf = {.newest_first = true};
	cr_assert_eq(blq_inspect_scan(in, &nf, collect, &r, &err), 0, "%s", err.msg);
	cr_assert_eq(r.n, N - 2);
	for (int k = 0; k < r.n; k++)
		cr_expect(r.ids[k] == c.ids[c.n - 1 - k] && r.idx[k] == c.idx[c.n - 1 - k] &&
				  r.off[k] == c.off[c.n - 1 - k],
			  "record %d", k);

	blq_inspect_summary sum;
	cr_expect_eq(blq_inspect_verify(in, NULL, &sum, by_deletion, NULL, &err), 1);
	cr_expect_eq(sum.records, N - 2);
	cr_expect_eq(sum.damaged, 1);
	cr_expect_eq(sum.skipped, size_of(12) + size_of(33));

	/* Deleting some records of a damaged file is refused, those after the
	 * damage too: delete it whole, or salvage it first. */
	char loc[BLQ_INSPECT_LOC_MAX];
	snprintf(loc, sizeof(loc), "dump/%s#%llu@%llu", name, (unsigned long long)(40 - 2),
		 (unsigned long long)offs[40]);
	const char *locs[] = {loc};
	blq_inspect_delete_stats ds;
	cr_assert_eq(blq_inspect_delete(in, locs, 1, 0, NULL, NULL, &ds, &err), 0, "%s", err.msg);
	cr_expect_eq(ds.refused, 1);
	cr_expect_eq(ds.not_found, 0, "the location after the damage is a valid one");
	cr_expect_eq(ds.records, 0);

	/* Salvage every intact record into a directory that is not there. */
	snprintf(into, sizeof(into), "%s/new/salvaged", dir);
	snprintf(want, sizeof(want), "dump/%s", name);
	uint64_t written = 0;
	cr_assert_eq(blq_inspect_salvage(in, want, into, NULL, &written, &err), 0, "%s", err.msg);
	cr_expect_eq(written, N - 2);
	struct stat st;
	cr_assert_eq(stat(into, &st), 0, "made");
	cr_expect(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "mode %o",
		  (unsigned)(st.st_mode & 0777));
	cr_expect_eq(du_count(into, "*.bin"), 1);
	blq_inspect_close(in);

	blq_inspect_config sc = {.directory = into, .version = VERSION};
	in = blq_inspect_open(&sc, &err);
	cr_assert_not_null(in, "%s", err.msg);
	seen_recs s2 = {0};
	cr_assert_eq(blq_inspect_scan(in, NULL, collect, &s2, &err), 0, "%s", err.msg);
	cr_expect_eq(s2.n, N - 2);
	cr_expect_eq(s2.reports, 0, "the copy is whole");
	for (int k = 0; k < s2.n && k < c.n; k++)
		cr_expect_eq(s2.ids[k], c.ids[k]);
	blq_inspect_close(in);
	du_rmrf(dir);
}

/* ---- Redis: entries set aside are counted by the restorer -------------- */

#ifdef BLQ_TEST_WITH_REDIS
Test(dump_damage, redis_entries_all_quarantined_are_counted_and_logged_by_the_restorer)
{
	char host[64], key[64];
	int port;
	if (!du_redis_env(host, sizeof(host), &port)) {
		fprintf(stderr, "BLQ_TEST_REDIS unset: scripts/test.sh provides a server\n");
		return;
	}
	snprintf(key, sizeof(key), "blq:test:allq:%d", (int)getpid());
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, port);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));

	/* 300 entries of a writer of version 2 */
	enum { M = 300 };
	blq_error err;
	blq_dump_redis_config wc = {.host = host, .port = port, .key = key};
	blq_dump_writer *w = blq_dump_redis_writer_new(&wc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump_config dc = {.capacity = 1 << 20, .version = 2,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	for (uint64_t i = 0; i < M; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, LEN)), 0);
	cr_assert_eq(blq_dump_close(d), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);

	/* A reader of version 1, with no logger nor name of its own. */
	blq_dump_redis_config rc = {.host = host, .port = port, .key = key, .version = VERSION,
				    .read_count = 64};
	blq_dump_reader *rd = blq_dump_redis_reader_new(&rc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	blq_config qc = {.name = "target", .capacity = 64, .workers = 2, .worker = sink,
			 .item_free = free};
	blq *q = must_new(&qc);
	blq_restorer_config rsc = {.name = "rst-redis", .reader = rd,
				   .decoder = blq_dump_bytes_decoder(), .target = q,
				   .item_free = free, .check_interval_ns = 2000000,
				   .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rsc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_expect(TU_WAIT_FOR(rstats(r).quarantined >= M, 10000), "quarantined %llu",
		  (unsigned long long)rstats(r).quarantined);
	blq_restorer_close(r);
	struct blq_restorer_stats s = rstats(r);
	blq_restorer_free(r);
	blq_close(q);
	blq_free(q);
	blq_dump_reader_free(rd);

	cr_expect_eq(s.quarantined, M, "each entry set aside");
	cr_expect_eq(s.skipped_bytes, 0, "entries: none");
	cr_expect_eq(s.restored, 0);
	cr_expect_eq(s.records, M);
	cr_expect_eq(s.records,
		     s.done + s.dead + s.lost + s.returned + s.quarantined + s.in_flight,
		     "the invariant");
	char want[256];
	snprintf(want, sizeof(want), "dump rst-redis: redis %s:%d: entry ", host, port);
	cr_expect(du_logged(want), "the restorer's logger and name: %s", du_log_text);
	snprintf(want, sizeof(want), "version mismatch; moved to %s:quarantine", key);
	cr_expect(du_logged(want), "%s", du_log_text);
	redisReply *rep = redisCommand(c, "XLEN %s", key);
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_INTEGER);
	cr_expect_eq(rep->integer, 0, "acked and deleted");
	freeReplyObject(rep);
	rep = redisCommand(c, "XLEN %s:quarantine", key);
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_INTEGER);
	cr_expect_eq(rep->integer, M);
	freeReplyObject(rep);
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));
	redisFree(c);
}
#endif
