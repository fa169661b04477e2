/*
 * dlqinspect on real dumps: directories filled by a real blq_dump from
 * real leaky queues (overflow and failed items, with why), a format-1
 * file, damaged files (truncated, a flipped bit, a bad length), salvage
 * then a real restorer, delete (all, some, a dry run compared byte for
 * byte, a file a live restorer holds), a scan beside a running restorer,
 * bad inputs, and the same on the real redis-server (BLQ_TEST_REDIS).
 */
#include <criterion/criterion.h>
#include <fcntl.h>

#include "../dlq/crc32c.h"
#include "../dlq/dump_format.h"
#include "dump_util.h"
#include "suite_util.h"

/* One timeout for every case (90 s, what the scan beside a running
 * restorer had; the others had 60): a case with a longer timeout beside a
 * later one with a shorter loses Criterion's timeout requests, a 48-byte
 * leak the ASan build reports (cmake/blq_helpers.cmake,
 * blq_criterion_one_timeout). */
TestSuite(dlqinspect, .timeout = 90);

#define VERSION 7

/* ---- making dumps from real queues -------------------------------- */

static tu_gate gate;

static int parked(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)t;
	tu_gate_pass(&gate);
	free(p);
	return 0;
}

static int failing(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)p, (void)t;
	return -42;
}

/* ids [base, base + n) leak from queue "rear" (capacity 2, its one worker
 * parked on id base - 3 .. base - 1 which are not dumped), as overflow. */
static void leak_overflow(blq_dump *d, uint64_t base, uint64_t n)
{
	tu_gate_init(&gate);
	blq_config c = {.name = "rear", .capacity = 2, .workers = 1, .worker = parked,
			.item_free = free, .dlq = blq_dump_enqueuer(d)};
	blq *q = must_new(&c);
	cr_assert_eq(blq_enqueue(q, du_item(1000000 + base, 16)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&gate.waiting) == 1, 5000));
	cr_assert_eq(blq_enqueue(q, du_item(1000001 + base, 16)), 0);
	cr_assert_eq(blq_enqueue(q, du_item(1000002 + base, 16)), 0);
	for (uint64_t i = 0; i < n; i++)
		blq_enqueue(q, du_item(base + i, 16)); /* leaks: the dump took it */
	tu_gate_open(&gate);
	blq_close(q);
	struct blq_stats s = stats(q);
	cr_assert_eq(s.leaked_rear, n);
	blq_free(q);
	tu_gate_destroy(&gate);
}

/* ids [base, base + n) fail in queue "bad" (rc -42, one attempt). */
static void leak_failed(blq_dump *d, uint64_t base, uint64_t n)
{
	blq_config c = {.name = "bad", .capacity = 64, .workers = 1, .worker = failing,
			.item_free = free, .fail_to_dlq = true, .dlq = blq_dump_enqueuer(d)};
	blq *q = must_new(&c);
	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(blq_enqueue(q, du_item(base + i, 16)), 0);
	blq_close(q);
	cr_assert_eq(stats(q).leaked_failed, n);
	blq_free(q);
}

static blq_dump *dump_on(blq_dump_writer *w)
{
	blq_dump_config dc = {.capacity = 1 << 20, .version = VERSION,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = w};
	blq_error err;
	blq_dump *d = blq_dump_new(&dc, &err);
	cr_assert_not_null(d, "%s", err.msg);
	return d;
}

static blq_dump_writer *fs_writer(const char *dir)
{
	blq_dump_fs_config fc = {.directory = dir};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	return w;
}

/* A directory dump of two files: n overflow leaks (ids 0..n-1), then k
 * failures (ids 100..100+k-1). */
static void fill_fs(const char *dir, uint64_t n, uint64_t k)
{
	blq_dump_writer *w = fs_writer(dir);
	blq_dump *d = dump_on(w);
	leak_overflow(d, 0, n);
	cr_assert_eq(blq_dump_flush(d), 0);
	leak_failed(d, 100, k);
	blq_dump_free(d);
	blq_dump_writer_free(w);
}

static blq_inspect *open_dir(const char *dir)
{
	blq_inspect_config c = {.directory = dir, .version = VERSION};
	blq_error err;
	blq_inspect *in = blq_inspect_open(&c, &err);
	cr_assert_not_null(in, "%s", err.msg);
	return in;
}

/* ---- collecting ------------------------------------------------------ */

#define MAXR 4096
typedef struct got {
	char loc[BLQ_INSPECT_LOC_MAX];
	enum blq_inspect_state state;
	char damage[128];
	uint64_t id, offset, time_ns, skipped, spans;
	size_t len;
	uint32_t deliveries;
	bool pending, done;
	char consumer[64];
	blq_dlq_why why;
} got;

typedef struct coll {
	got r[MAXR];
	size_t n;
} coll;

static int collect(void *ctx, const blq_inspect_record *rec)
{
	coll *c = ctx;
	got *g = &c->r[c->n++];

	cr_assert(c->n <= MAXR);
	memset(g, 0, sizeof(*g));
	snprintf(g->loc, sizeof(g->loc), "%s", rec->loc);
	snprintf(g->damage, sizeof(g->damage), "%s", rec->damage);
	snprintf(g->consumer, sizeof(g->consumer), "%s", rec->consumer);
	g->state = rec->state;
	g->offset = rec->offset;
	g->skipped = rec->skipped;
	g->spans = rec->spans;
	g->time_ns = rec->time_ns;
	g->len = rec->len;
	g->deliveries = rec->deliveries;
	g->pending = rec->pending;
	g->done = rec->done;
	g->why = rec->why;
	if (rec->state == BLQ_INSPECT_OK && rec->len >= 8)
		memcpy(&g->id, rec->data, 8);
	return 0;
}

static coll *scan(blq_inspect *in, const blq_inspect_filter *f)
{
	static coll c;
	blq_error err;

	c.n = 0;
	cr_assert_eq(blq_inspect_scan(in, f, collect, &c, &err), 0, "scan: %s", err.msg);
	return &c;
}

typedef struct parts {
	blq_inspect_part p[64];
	char loc[64][BLQ_INSPECT_LOC_MAX];
	char consumer[64][64];
	uint64_t cpending[64];
	size_t nc;
	size_t n;
} parts;

static int keep_part(void *ctx, const blq_inspect_part *p)
{
	parts *ps = ctx;

	cr_assert(ps->n < 64);
	ps->p[ps->n] = *p;
	snprintf(ps->loc[ps->n], BLQ_INSPECT_LOC_MAX, "%s", p->loc);
	for (size_t i = 0; i < p->nconsumers && ps->nc < 64; i++) {
		snprintf(ps->consumer[ps->nc], 64, "%s", p->consumers[i].name);
		ps->cpending[ps->nc++] = p->consumers[i].pending;
	}
	ps->p[ps->n].loc = ps->loc[ps->n];
	ps->p[ps->n].name = NULL;
	ps->p[ps->n].consumers = NULL;
	ps->n++;
	return 0;
}

static parts *list(blq_inspect *in)
{
	static parts ps;
	blq_error err;

	memset(&ps, 0, sizeof(ps));
	cr_assert_eq(blq_inspect_list(in, keep_part, &ps, &err), 0, "list: %s", err.msg);
	return &ps;
}

/* Every file under dir (names and bytes, hidden ones too), as one string:
 * what a dry run must leave as it was. */
static char *snapshot(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd),
		 "cd %s && find . -type f | sort | while read f; do echo \"$f\"; od -An -tx1 \"$f\"; "
		 "done",
		 dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 1 << 20, n = 0;
	char *s = malloc(cap);
	size_t k;
	while ((k = fread(s + n, 1, cap - n - 1, p)) > 0)
		n += k;
	s[n] = '\0';
	pclose(p);
	return s;
}

static void check_overflow_why(const got *g)
{
	cr_expect_eq(g->why.reason, BLQ_DLQ_OVERFLOW_REAR, "%s", g->loc);
	cr_expect_str_eq(g->why.queue, "rear");
	cr_expect_eq(g->why.attempts, 0);
	cr_expect(g->why.time_ns != 0);
	cr_expect_eq(g->time_ns, g->why.time_ns);
}

static void check_failed_why(const got *g)
{
	cr_expect_eq(g->why.reason, BLQ_DLQ_FAILED, "%s", g->loc);
	cr_expect_str_eq(g->why.queue, "bad");
	cr_expect_eq(g->why.attempts, 1);
	cr_expect_eq(g->why.rc, -42);
}

/* ---- list, scan, locations ----------------------------------------- */

Test(dlqinspect, lists_and_scans_a_real_fs_dump_with_why)
{
	char *dir = du_tmpdir("ins");
	fill_fs(dir, 10, 5);
	blq_inspect *in = open_dir(dir);

	parts *ps = list(in);
	cr_assert_eq(ps->n, 2, "two dump files, no quarantine, no dead store");
	cr_expect_eq(ps->p[0].area, BLQ_INSPECT_DUMP);
	cr_expect_eq(ps->p[0].records, 10);
	cr_expect_eq(ps->p[1].records, 5);
	cr_expect_eq(ps->p[0].format, 2);
	cr_expect_eq(ps->p[0].version, VERSION);
	cr_expect_eq(ps->p[0].damaged, 0);
	cr_expect(!ps->p[0].held);
	cr_expect(ps->p[0].oldest_ns > 0 && ps->p[0].oldest_ns <= ps->p[0].newest_ns);
	cr_expect(ps->p[0].newest_ns <= ps->p[1].oldest_ns);
	cr_expect_eq(ps->p[0].bytes, 16 + 10 * (12 + 18 + 4 + 16), "header, records with 'rear'");

	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 15);
	for (size_t i = 0; i < 15; i++) {
		cr_expect_eq(c->r[i].state, BLQ_INSPECT_OK);
		cr_expect_eq(c->r[i].id, i < 10 ? i : 100 + (i - 10));
		cr_expect_eq(c->r[i].len, 16);
		if (i < 10)
			check_overflow_why(&c->r[i]);
		else
			check_failed_why(&c->r[i]);
		/* The location prints and parses back. */
		blq_inspect_loc l;
		char again[BLQ_INSPECT_LOC_MAX];
		cr_assert_eq(blq_inspect_loc_parse(c->r[i].loc, &l, NULL), 0, "%s", c->r[i].loc);
		cr_expect(l.record);
		cr_expect_eq(l.index, i < 10 ? i : i - 10);
		cr_expect_eq(l.offset, c->r[i].offset);
		cr_expect_eq(l.offset, 16 + (i < 10 ? i : i - 10) * (12 + 18 + (i < 10 ? 4 : 3) + 16));
		cr_expect(blq_inspect_loc_format(&l, again, sizeof(again)) > 0);
		cr_expect_str_eq(again, c->r[i].loc);
	}

	/* Filters: by reason, newest first, a page. */
	blq_inspect_filter f = {.reasons = 1u << BLQ_DLQ_FAILED};
	c = scan(in, &f);
	cr_expect_eq(c->n, 5);
	cr_expect_eq(c->r[0].id, 100);
	f = (blq_inspect_filter){.newest_first = true, .skip = 3, .limit = 4};
	c = scan(in, &f);
	cr_assert_eq(c->n, 4);
	cr_expect_eq(c->r[0].id, 101);
	cr_expect_eq(c->r[1].id, 100);
	cr_expect_eq(c->r[2].id, 9);
	cr_expect_eq(c->r[3].id, 8);
	f = (blq_inspect_filter){.part = ps->loc[1]};
	cr_expect_eq(scan(in, &f)->n, 5);
	f = (blq_inspect_filter){.since_ns = UINT64_MAX - 1};
	cr_expect_eq(scan(in, &f)->n, 0);
	blq_inspect_summary sum;
	cr_expect_eq(blq_inspect_verify(in, NULL, &sum, NULL, NULL, NULL), 0);
	cr_expect_eq(sum.records, 15);
	cr_expect_eq(sum.damaged, 0);
	blq_inspect_close(in);
	du_rmrf(dir);
}

Test(dlqinspect, location_syntax)
{
	blq_inspect_loc l;
	blq_error err;
	char s[BLQ_INSPECT_LOC_MAX];

	cr_assert_eq(blq_inspect_loc_parse("quarantine/a#b.bin#12@340", &l, NULL), 0);
	cr_expect_eq(l.area, BLQ_INSPECT_QUARANTINE);
	cr_expect_str_eq(l.file, "a#b.bin");
	cr_expect(l.record && l.index == 12 && l.offset == 340);
	cr_assert_eq(blq_inspect_loc_parse("dead/x.bin", &l, NULL), 0);
	cr_expect(!l.record);
	cr_expect_str_eq(l.file, "x.bin");
	cr_assert_eq(blq_inspect_loc_parse("dump:1700000000000-3", &l, NULL), 0);
	cr_expect_str_eq(l.id, "1700000000000-3");
	blq_inspect_loc_format(&l, s, sizeof(s));
	cr_expect_str_eq(s, "dump:1700000000000-3");
	cr_assert_eq(blq_inspect_loc_parse("dump", &l, NULL), 0);
	cr_expect(l.file[0] == '\0' && l.id[0] == '\0');
	cr_expect_eq(blq_inspect_loc_parse("trash/x", &l, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "dump, quarantine or dead") != NULL, "%s", err.msg);
	cr_expect_eq(blq_inspect_loc_parse("dump:12", &l, &err), BLQ_EINVAL);
	cr_expect_eq(blq_inspect_loc_parse("dump/", &l, &err), BLQ_EINVAL);
	cr_expect_eq(blq_inspect_loc_parse("dump/..", &l, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "not . or ..") != NULL, "%s", err.msg);
	cr_expect_eq(blq_inspect_loc_parse("dump/.", &l, &err), BLQ_EINVAL);
	cr_expect_eq(blq_inspect_loc_parse("dump/..#0@16", &l, &err), BLQ_EINVAL);
	/* A short name that starts with a dot is a name. */
	cr_assert_eq(blq_inspect_loc_parse("dump/.a", &l, &err), 0, "%s", err.msg);
	cr_expect_str_eq(l.file, ".a");
	cr_assert_eq(blq_inspect_loc_parse("dead/.b#2@40", &l, &err), 0, "%s", err.msg);
	cr_expect(l.record && l.index == 2 && l.offset == 40 && strcmp(l.file, ".b") == 0);
	cr_expect_eq(blq_inspect_loc_format(&l, s, 3), BLQ_EINVAL);
}

/* A format-1 file: records without why, time from the file's mtime. */
Test(dlqinspect, a_format_1_dump_reads_with_reason_unknown)
{
	char *dir = du_tmpdir("ins1");
	blq_dump_writer *w = fs_writer(dir);
	blq_dump *d = dump_on(w);
	for (uint64_t i = 0; i < 4; i++)
		cr_assert_eq(blq_dump_enqueue(d, du_item(i, 16)), 0);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	char f[512];
	struct stat st;
	cr_assert(du_first(dir, "*.bin", f));
	stat(f, &st);
	uint64_t mt = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;

	blq_inspect *in = open_dir(dir);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 1);
	cr_expect_eq(ps->p[0].format, 1);
	cr_expect_eq(ps->p[0].oldest_ns, mt);
	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 4);
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(c->r[i].why.reason, BLQ_DLQ_UNKNOWN);
		cr_expect_eq(c->r[i].time_ns, mt);
		cr_expect_eq(c->r[i].offset, 16 + i * 28);
	}
	blq_inspect_filter ff = {.reasons = 1u << BLQ_DLQ_UNKNOWN};
	cr_expect_eq(scan(in, &ff)->n, 4);
	blq_inspect_close(in);
	du_rmrf(dir);
}

/* ---- damage, salvage ------------------------------------------------- */

/* A format-2 file by hand at path: ids [base, base + n), reason FAILED,
 * queue "q"; each record 12 + 19 + 16 = 47 bytes. */
static void write_file(const char *path, uint64_t base, int n)
{
	blq__buf b = {0};
	unsigned char h[BLQ__DUMP_HEADER];
	blq_dlq_why why = {.reason = BLQ_DLQ_FAILED, .attempts = 3, .rc = 5, .time_ns = 42};
	strcpy(why.queue, "q");
	for (int i = 0; i < n; i++) {
		unsigned char data[16];
		uint64_t id = base + (uint64_t)i;
		memcpy(data, &id, 8);
		memset(data + 8, 0xCD, 8);
		cr_assert_eq(blq__dump_rec_append(&b, 2, data, 16, 1, &why), 0);
	}
	blq__dump_header_put(h, 2, VERSION);
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	cr_assert(fd >= 0 && write(fd, h, sizeof(h)) == (ssize_t)sizeof(h) &&
		  write(fd, b.p, b.len) == (ssize_t)b.len);
	close(fd);
	blq__buf_free(&b);
}

#define REC 47u

static void poke(const char *path, off_t at, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert(fd >= 0 && pwrite(fd, p, n, at) == (ssize_t)n);
	close(fd);
}

/* Records after a damaged one are handed out (a resync on the next
 * intact record), then one report: the first damage's offset and kind,
 * the bytes skipped. Before the resync, b and c lost their third record. */
Test(dlqinspect, damaged_files_give_their_intact_records_then_file_offset_kind_and_skipped)
{
	char *dir = du_tmpdir("insd");
	char a[600], b[600], c3[600], d4[600];
	snprintf(a, sizeof(a), "%s/a.bin", dir);
	snprintf(b, sizeof(b), "%s/b.bin", dir);
	snprintf(c3, sizeof(c3), "%s/c.bin", dir);
	snprintf(d4, sizeof(d4), "%s/d.bin", dir);
	write_file(a, 0, 3);
	cr_assert_eq(truncate(a, 16 + 3 * REC - 5), 0); /* the third record cut */
	write_file(b, 10, 3);
	unsigned char x = 0x5A;
	poke(b, 16 + REC + 12 + 19 + 3, &x, 1); /* a data byte of the second record */
	write_file(c3, 20, 3);
	unsigned char len[4];
	blq__put32(len, 0x7FFFFFF0u);
	poke(c3, 16 + REC, len, 4); /* the second record's length */
	poke(d4, 0, "NOTADUMPFILE....", 16);

	blq_inspect *in = open_dir(dir);
	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 2 + 1 + 2 + 1 + 2 + 1 + 1,
		     "a: 2 + damage, b: 2 + damage, c: 2 + damage, d");
	size_t i = 0;
	cr_expect_eq(c->r[i++].id, 0);
	cr_expect_eq(c->r[i++].id, 1);
	cr_expect_eq(c->r[i].state, BLQ_INSPECT_DAMAGED);
	cr_expect_str_eq(c->r[i].loc, "dump/a.bin");
	cr_expect_str_eq(c->r[i].damage, "truncated record");
	cr_expect_eq(c->r[i].skipped, REC - 5, "the cut record, to the end");
	cr_expect_eq(c->r[i].spans, 1);
	cr_expect_eq(c->r[i++].offset, 16 + 2 * REC);
	cr_expect_eq(c->r[i++].id, 10);
	cr_expect_eq(c->r[i].id, 12, "after the damage");
	cr_expect_str_eq(c->r[i++].loc, "dump/b.bin#1@110");
	cr_expect_str_eq(c->r[i].damage, "bad checksum");
	cr_expect_str_eq(c->r[i].loc, "dump/b.bin");
	cr_expect_eq(c->r[i].skipped, REC);
	cr_expect_eq(c->r[i].spans, 1);
	cr_expect_eq(c->r[i++].offset, 16 + REC);
	cr_expect_eq(c->r[i++].id, 20);
	cr_expect_eq(c->r[i++].id, 22, "after a length pointing past the end");
	cr_expect_str_eq(c->r[i].damage, "record length above the limit");
	cr_expect_eq(c->r[i].skipped, REC);
	cr_expect_eq(c->r[i++].offset, 16 + REC);
	cr_expect_str_eq(c->r[i].loc, "dump/d.bin");
	cr_expect_str_eq(c->r[i].damage, "bad magic");
	cr_expect_eq(c->r[i].skipped, 16, "the whole file");
	cr_expect_eq(c->r[i].spans, 0);
	cr_expect_eq(c->r[i].offset, 0);

	blq_inspect_summary s;
	cr_expect_eq(blq_inspect_verify(in, NULL, &s, NULL, NULL, NULL), 1, "an exit code");
	cr_expect_eq(s.records, 6);
	cr_expect_eq(s.damaged, 4);
	cr_expect_eq(s.skipped, (REC - 5) + REC + REC + 16);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 4);
	cr_expect_eq(ps->p[0].records, 2);
	cr_expect_eq(ps->p[0].damaged, 1);
	cr_expect_eq(ps->p[3].format, 0);

	/* Not a dump file: salvage refuses, naming it. */
	blq_error err;
	uint64_t n = 99;
	cr_expect_eq(blq_inspect_salvage(in, "dump/d.bin", dir, NULL, &n, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "not a dump file: bad magic") != NULL, "%s", err.msg);
	cr_expect_eq(n, 0);
	cr_expect_eq(blq_inspect_salvage(in, "dump/none.bin", dir, NULL, &n, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "no such file") != NULL, "%s", err.msg);
	blq_inspect_close(in);
	du_rmrf(dir);
}

/* A sink queue: counts each id it processed. */
#define MAX_IDS 4096
static _Atomic unsigned seen[MAX_IDS];

static int sink(void *ctx, void *payload, blq_task *t)
{
	uint64_t id = du_id(payload);

	(void)ctx, (void)t;
	if (id < MAX_IDS)
		atomic_fetch_add(&seen[id], 1);
	free(payload);
	return 0;
}

static int slow_sink(void *ctx, void *payload, blq_task *t)
{
	tu_sleep_us(200);
	return sink(ctx, payload, t);
}

static struct blq_restorer_stats rstats(blq_restorer *r)
{
	struct blq_restorer_stats s;
	blq_restorer_stats(r, &s);
	return s;
}

/* A running restorer on a reader into a sink queue. */
typedef struct live {
	blq_dump_reader *rd;
	blq *q;
	blq_restorer *r;
} live;

static void live_start(live *l, blq_dump_reader *rd, blq_worker_fn worker)
{
	blq_config qc = {.name = "sink", .capacity = 64, .workers = 2, .worker = worker,
			 .item_free = free};
	l->rd = rd;
	l->q = must_new(&qc);
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(),
				  .target = l->q, .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000};
	blq_error err;
	l->r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(l->r, "%s", err.msg);
}

/* Stops it; checks records = done + dead + lost + returned + quarantined +
 * in_flight. */
static struct blq_restorer_stats live_stop(live *l)
{
	blq_restorer_close(l->r);
	struct blq_restorer_stats s = rstats(l->r);
	cr_expect_eq(s.records, s.done + s.dead + s.lost + s.returned + s.quarantined + s.in_flight,
		     "records %llu", (unsigned long long)s.records);
	blq_restorer_free(l->r);
	blq_close(l->q);
	struct blq_stats qs = stats(l->q);
	cr_expect(tu_balanced(&qs));
	blq_free(l->q);
	blq_dump_reader_free(l->rd);
	return s;
}

static blq_dump_reader *fs_reader(const char *dir)
{
	blq_dump_fs_config fc = {.directory = dir, .version = VERSION};
	blq_error err;
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	return rd;
}

Test(dlqinspect, salvage_then_a_restorer_restores_exactly_the_good_records)
{
	char *dir = du_tmpdir("inss");
	char q[256], f[300];
	snprintf(q, sizeof(q), "%s/quarantine", dir);
	mkdir(q, 0755);
	snprintf(f, sizeof(f), "%s/old.bin", q);
	write_file(f, 0, 6);
	unsigned char x = 0x01;
	poke(f, 16 + 4 * REC + 20, &x, 1); /* record 4 damaged: 0..3 and 5 intact */
	char *before = snapshot(q);

	blq_inspect *in = open_dir(dir);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 1);
	cr_expect_str_eq(ps->loc[0], "quarantine/old.bin");
	cr_expect_eq(ps->p[0].area, BLQ_INSPECT_QUARANTINE);
	uint64_t n = 0;
	blq_error err;
	cr_assert_eq(blq_inspect_salvage(in, "quarantine/old.bin", dir, NULL, &n, &err), 0, "%s",
		     err.msg);
	cr_expect_eq(n, 5, "the record after the damage too");
	char *after = snapshot(q);
	cr_expect_str_eq(after, before, "the source is left in place");
	free(before);
	free(after);
	cr_assert_eq(du_count(dir, "*.bin"), 1);
	coll *c = scan(in, &(blq_inspect_filter){.part = "dump"});
	cr_assert_eq(c->n, 5);
	cr_expect_eq(c->r[4].id, 5);
	cr_expect_eq(c->r[4].why.reason, BLQ_DLQ_FAILED, "format 2 kept the why");
	cr_expect_eq(c->r[4].why.attempts, 3);
	blq_inspect_close(in);

	for (size_t i = 0; i < MAX_IDS; i++)
		atomic_store(&seen[i], 0);
	live l;
	live_start(&l, fs_reader(dir), sink);
	cr_expect(TU_WAIT_FOR(du_count(dir, "*.bin") == 0, 5000));
	struct blq_restorer_stats s = live_stop(&l);
	cr_expect_eq(s.restored, 5);
	for (uint64_t id = 0; id < 8; id++)
		cr_expect_eq(atomic_load(&seen[id]), id < 6 && id != 4 ? 1u : 0u, "id %llu",
			     (unsigned long long)id);
	cr_expect_eq(du_count(q, "*"), 1, "quarantined file still there");
	du_rmrf(dir);
}

/* ---- delete ------------------------------------------------------------ */

typedef struct dels {
	char loc[32][BLQ_INSPECT_LOC_MAX];
	enum blq_inspect_action action[32];
	char msg[32][256];
	size_t n;
} dels;

static void keep_del(void *ctx, const blq_inspect_deletion *d)
{
	dels *ds = ctx;

	if (ds->n >= 32)
		return;
	snprintf(ds->loc[ds->n], BLQ_INSPECT_LOC_MAX, "%s", d->loc);
	snprintf(ds->msg[ds->n], 256, "%s", d->message);
	ds->action[ds->n++] = d->action;
}

Test(dlqinspect, delete_some_all_and_a_dry_run_that_changes_nothing)
{
	char *dir = du_tmpdir("insx");
	fill_fs(dir, 10, 5);
	blq_inspect *in = open_dir(dir);
	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 15);
	static char locs[15][BLQ_INSPECT_LOC_MAX];
	for (size_t i = 0; i < 15; i++)
		snprintf(locs[i], BLQ_INSPECT_LOC_MAX, "%s", c->r[i].loc);
	parts *ps = list(in);
	char file0[BLQ_INSPECT_LOC_MAX], file1[BLQ_INSPECT_LOC_MAX];
	snprintf(file0, sizeof(file0), "%s", ps->loc[0]);
	snprintf(file1, sizeof(file1), "%s", ps->loc[1]);

	/* Dry run: records 2 and 5 of the first file, the whole second. */
	const char *sel[] = {locs[2], locs[5], file1};
	char *before = snapshot(dir);
	dels ds = {0};
	blq_inspect_delete_stats st;
	blq_error err;
	cr_assert_eq(blq_inspect_delete(in, sel, 3, BLQ_INSPECT_DRY_RUN, keep_del, &ds, &st, &err), 0,
		     "%s", err.msg);
	char *after = snapshot(dir);
	cr_expect_str_eq(after, before, "a dry run changes nothing");
	free(before);
	free(after);
	cr_expect_eq(st.records, 2 + 5);
	cr_expect_eq(st.rewritten, 1);
	cr_expect_eq(st.files, 1);
	cr_assert_eq(ds.n, 2);
	cr_expect_eq(ds.action[0], BLQ_INSPECT_REWRITTEN, "%s", ds.msg[0]);
	cr_expect(strstr(ds.msg[0], "would be rewritten") != NULL, "%s", ds.msg[0]);
	cr_expect_eq(ds.action[1], BLQ_INSPECT_DELETED);

	/* For real. */
	memset(&ds, 0, sizeof(ds));
	cr_assert_eq(blq_inspect_delete(in, sel, 3, 0, keep_del, &ds, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.records, 7);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	cr_expect_eq(du_count(dir, ".blqinspect-*"), 0, "no temporary directory left");
	c = scan(in, NULL);
	cr_assert_eq(c->n, 8);
	uint64_t want[] = {0, 1, 3, 4, 6, 7, 8, 9};
	for (size_t i = 0; i < 8; i++) {
		cr_expect_eq(c->r[i].id, want[i]);
		check_overflow_why(&c->r[i]);
	}
	/* The old locations are stale now: refused, nothing deleted. */
	const char *stale[] = {locs[9]};
	memset(&ds, 0, sizeof(ds));
	cr_assert_eq(blq_inspect_delete(in, stale, 1, 0, keep_del, &ds, &st, &err), 0);
	cr_expect_eq(st.not_found, 1);
	cr_expect_eq(st.records, 0);
	cr_expect(strstr(ds.msg[0], "stale") != NULL, "%s", ds.msg[0]);
	cr_expect_eq(scan(in, NULL)->n, 8);

	/* Everything. */
	const char *all[] = {"dump"};
	cr_assert_eq(blq_inspect_delete(in, all, 1, 0, NULL, NULL, &st, &err), 0);
	cr_expect_eq(st.records, 8);
	cr_expect_eq(st.files, 1);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	cr_expect_eq(scan(in, NULL)->n, 0);

	/* A bad location: refused before anything changes. */
	const char *bad[] = {"dead/x.bin"};
	cr_expect_eq(blq_inspect_delete(in, bad, 1, 0, NULL, NULL, &st, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "no dead area") != NULL, "%s", err.msg);
	blq_inspect_close(in);
	du_rmrf(dir);
}

Test(dlqinspect, a_file_a_live_restorer_holds_is_not_deleted)
{
	char *dir = du_tmpdir("insh");
	fill_fs(dir, 4, 0);
	blq_dump_reader *rd = fs_reader(dir);
	void *held = NULL;
	cr_assert_eq(rd->next(rd, &held, NULL), 1, "the restorer's reader claims the file");

	blq_inspect *in = open_dir(dir);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 1);
	cr_expect(ps->p[0].held, "seen as held");
	coll *c = scan(in, NULL);
	cr_expect_eq(c->n, 4, "scanning a held file is fine");
	char *before = snapshot(dir);
	const char *sel[] = {c->r[1].loc, ps->loc[0]};
	dels ds = {0};
	blq_inspect_delete_stats st;
	cr_assert_eq(blq_inspect_delete(in, sel, 1, 0, keep_del, &ds, &st, NULL), 0);
	cr_expect_eq(st.held, 1);
	cr_expect_eq(st.records, 0);
	cr_assert_eq(ds.n, 1);
	cr_expect_eq(ds.action[0], BLQ_INSPECT_HELD);
	cr_expect(strstr(ds.msg[0], "a restorer holds it") != NULL, "%s", ds.msg[0]);
	cr_assert_eq(blq_inspect_delete(in, sel + 1, 1, 0, NULL, NULL, &st, NULL), 0);
	cr_expect_eq(st.held, 1);
	char *after = snapshot(dir);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);

	rd->release(rd, held);
	cr_assert_eq(blq_inspect_delete(in, sel, 1, 0, NULL, NULL, &st, NULL), 0);
	cr_expect_eq(st.rewritten, 1);
	cr_expect_eq(scan(in, NULL)->n, 3);
	/* The claim's count is carried: the rewritten file's records come as
	 * redeliveries. */
	cr_expect_eq(scan(in, NULL)->r[0].deliveries, 1);
	void *again = NULL;
	blq_dump_record rec;
	cr_assert_eq(rd->next(rd, &again, NULL), 1);
	cr_assert_eq(rd->record(rd, again, &rec, NULL), 1);
	cr_expect_eq(rec.deliveries, 1);
	rd->release(rd, again);
	blq_dump_reader_free(rd);
	blq_inspect_close(in);
	du_rmrf(dir);
}

/* ---- beside a running restorer --------------------------------------- */

static int count_ok(void *ctx, const blq_inspect_record *r)
{
	if (r->state == BLQ_INSPECT_OK)
		(*(uint64_t *)ctx)++;
	return 0;
}

Test(dlqinspect, scanning_beside_a_running_restorer_disturbs_nothing)
{
	char *dir = du_tmpdir("insl");
	blq_dump_writer *w = fs_writer(dir);
	blq_dump *d = dump_on(w);
	enum { FILES = 40, PER = 25 };
	for (uint64_t f = 0; f < FILES; f++) {
		for (uint64_t i = 0; i < PER; i++)
			cr_assert_eq(blq_dump_enqueue(d, du_item(f * PER + i, 16)), 0);
		cr_assert_eq(blq_dump_flush(d), 0);
	}
	blq_dump_free(d);
	blq_dump_writer_free(w);
	for (size_t i = 0; i < MAX_IDS; i++)
		atomic_store(&seen[i], 0);

	blq_inspect *in = open_dir(dir);
	live l;
	live_start(&l, fs_reader(dir), slow_sink);
	unsigned scans = 0;
	uint64_t last = FILES * PER;
	while (du_count(dir, "*.bin") > 0 && scans < 100000) {
		uint64_t ok = 0;
		blq_error err;
		cr_assert_eq(blq_inspect_scan(in, NULL, count_ok, &ok, &err), 0, "%s", err.msg);
		cr_expect(ok <= FILES * PER);
		parts *ps = list(in);
		(void)ps;
		last = ok;
		scans++;
	}
	cr_expect(scans > 1, "%u scans", scans);
	cr_expect(TU_WAIT_FOR(rstats(l.r).done == FILES * PER, 10000));
	struct blq_restorer_stats s = live_stop(&l);
	cr_expect_eq(s.restored, FILES * PER);
	cr_expect_eq(s.redelivered, 0);
	uint64_t bad = 0;
	for (uint64_t id = 0; id < MAX_IDS; id++)
		bad += atomic_load(&seen[id]) != (id < FILES * PER ? 1u : 0u);
	cr_expect_eq(bad, 0, "each item restored once");
	cr_expect_eq(du_count(dir, "quarantine/*"), 0);
	(void)last;
	blq_inspect_close(in);
	du_rmrf(dir);
}

/* ---- append ---------------------------------------------------------- */

Test(dlqinspect, append_writes_a_file_a_restorer_picks_up)
{
	char *dir = du_tmpdir("insa");
	blq_inspect *in = open_dir(dir);
	blq_inspect_item items[3];
	uint64_t ids[3] = {7, 8, 9};
	blq_dlq_why why = {.reason = BLQ_DLQ_DEADLINE, .time_ns = 5};
	strcpy(why.queue, "late");
	for (int i = 0; i < 3; i++)
		items[i] = (blq_inspect_item){.data = &ids[i], .len = 8, .restores = 1,
					      .why = i == 1 ? &why : NULL};
	blq_error err;
	cr_assert_eq(blq_inspect_append(in, items, 3, &err), 0, "%s", err.msg);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 3);
	cr_expect_eq(c->r[1].why.reason, BLQ_DLQ_DEADLINE);
	cr_expect_str_eq(c->r[1].why.queue, "late");
	cr_expect_eq(c->r[0].why.reason, BLQ_DLQ_UNKNOWN);
	blq_inspect_close(in);
	for (size_t i = 0; i < MAX_IDS; i++)
		atomic_store(&seen[i], 0);
	live l;
	live_start(&l, fs_reader(dir), sink);
	cr_expect(TU_WAIT_FOR(du_count(dir, "*.bin") == 0, 5000));
	cr_expect_eq(live_stop(&l).restored, 3);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(atomic_load(&seen[ids[i]]), 1);
	du_rmrf(dir);
}

/* The dead store as a directory: its own area, "dead/FILE". */
Test(dlqinspect, a_dead_store_directory_is_listed_scanned_and_deleted)
{
	char *dir = du_tmpdir("insdd");
	char *dead = du_tmpdir("insde");
	char f[300];
	snprintf(f, sizeof(f), "%s/x.bin", dead);
	write_file(f, 50, 2);
	blq_inspect_config c = {.directory = dir, .dead_directory = dead, .version = VERSION};
	blq_error err;
	blq_inspect *in = blq_inspect_open(&c, &err);
	cr_assert_not_null(in, "%s", err.msg);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 1);
	cr_expect_str_eq(ps->loc[0], "dead/x.bin");
	cr_expect_eq(ps->p[0].area, BLQ_INSPECT_DEAD);
	cr_expect_eq(ps->p[0].records, 2);
	cr_expect_eq(ps->p[0].oldest_ns, 42, "the why's time");
	coll *k = scan(in, &(blq_inspect_filter){.part = "dead"});
	cr_assert_eq(k->n, 2);
	cr_expect_str_eq(k->r[1].loc, "dead/x.bin#1@63");
	cr_expect_eq(k->r[1].id, 51);
	const char *sel[] = {"dead/x.bin#1@63"};
	blq_inspect_delete_stats st;
	cr_assert_eq(blq_inspect_delete(in, sel, 1, 0, NULL, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.rewritten, 1);
	k = scan(in, NULL);
	cr_assert_eq(k->n, 1);
	cr_expect_eq(k->r[0].id, 50);
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}

/* ---- bad inputs ------------------------------------------------------- */

/* A restorer consumes a dump's last file while blq_inspect_open looks at
 * the directory: the file the listing named is gone when its first bytes
 * are read. That is a dump directory being emptied, not a directory of
 * foreign files: the open succeeds. A churn thread publishes and removes a
 * one-record-sized file (magic first) while the test opens 3000 times. */
static _Atomic int churn_stop;

static void *churn(void *dir)
{
	char path[512], tmp[512];

	snprintf(path, sizeof(path), "%s/d.1.bin", (const char *)dir);
	snprintf(tmp, sizeof(tmp), "%s/.d.tmp", (const char *)dir);
	while (!atomic_load(&churn_stop)) {
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, BLQ__DUMP_MAGIC "....", 8) != 8 || close(fd) != 0)
			abort();
		if (rename(tmp, path) != 0 || unlink(path) != 0)
			abort();
	}
	return NULL;
}

Test(dlqinspect, a_file_consumed_while_the_directory_is_checked_is_no_refusal)
{
	char *dir = du_tmpdir("consumed");
	pthread_t t;
	blq_error err = {0};
	unsigned refused = 0;
	char first[sizeof err.msg] = "";

	atomic_store(&churn_stop, 0);
	pthread_create(&t, NULL, churn, dir);
	for (int i = 0; i < 3000; i++) {
		blq_inspect_config c = {.directory = dir};
		blq_inspect *in = blq_inspect_open(&c, &err);
		if (in == NULL) {
			if (refused++ == 0)
				snprintf(first, sizeof(first), "%s", err.msg);
			continue;
		}
		blq_inspect_close(in);
	}
	atomic_store(&churn_stop, 1);
	pthread_join(t, NULL);
	cr_expect_eq(refused, 0, "%u of 3000 opens refused a dump directory being emptied: %s",
		     refused, first);
	du_rmrf(dir);
}

Test(dlqinspect, bad_directories_are_named_and_left_alone)
{
	char *dir = du_tmpdir("insb");
	char file[600], sub[600];
	blq_error err;
	snprintf(file, sizeof(file), "%s/plain", dir);
	poke(file, 0, "hello", 5);
	char *before = snapshot(dir);

	blq_inspect_config c = {.directory = file};
	cr_expect_null(blq_inspect_open(&c, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, "not a directory") != NULL, "%s", err.msg);
	snprintf(sub, sizeof(sub), "%s/missing", dir);
	c.directory = sub;
	cr_expect_null(blq_inspect_open(&c, &err));
	cr_expect(strstr(err.msg, "No such file") != NULL, "%s", err.msg);
	c.directory = dir;
	c.match = "plain";
	cr_expect_null(blq_inspect_open(&c, &err));
	cr_expect(strstr(err.msg, "not a dump directory") != NULL, "%s", err.msg);
	c = (blq_inspect_config){0};
	cr_expect_null(blq_inspect_open(&c, &err));
	cr_expect(strstr(err.msg, "exactly one") != NULL, "%s", err.msg);
	cr_expect_null(blq_inspect_open(NULL, &err));
	c = (blq_inspect_config){.directory = dir, .dead_directory = sub};
	cr_expect_null(blq_inspect_open(&c, &err));
	cr_expect(strstr(err.msg, "dead_directory") != NULL, "%s", err.msg);
	char *after = snapshot(dir);
	cr_expect_str_eq(after, before);
	cr_expect_eq(du_count(dir, "quarantine"), 0, "nothing created");
	free(before);
	free(after);
	du_rmrf(dir);
}

/* ---- Redis ------------------------------------------------------------ */

#ifdef BLQ_TEST_WITH_REDIS
#include <hiredis/hiredis.h>

static bool redis_addr(char *host, size_t cap, int *port)
{
	if (du_redis_env(host, cap, port))
		return true;
	fprintf(stderr, "BLQ_TEST_REDIS unset: scripts/test.sh provides a server\n");
	return false;
}

static redisContext *rconn(const char *host, int port)
{
	redisContext *c = redisConnect(host, port);
	cr_assert(c != NULL && c->err == 0, "redis at %s:%d", host, port);
	return c;
}

static void rdel(redisContext *c, const char *key)
{
	freeReplyObject(redisCommand(c, "DEL %s %s:quarantine", key, key));
}

/* A stream dump made by a real blq_dump: n overflow leaks (ids 0..n-1),
 * then k failures (ids 100..). */
static void fill_stream(const char *host, int port, const char *key, uint64_t n, uint64_t k)
{
	blq_dump_redis_config wc = {.host = host, .port = port, .key = key};
	blq_error err;
	blq_dump_writer *w = blq_dump_redis_writer_new(&wc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq_dump *d = dump_on(w);
	if (n > 0)
		leak_overflow(d, 0, n);
	leak_failed(d, 100, k);
	blq_dump_free(d);
	blq_dump_writer_free(w);
}

/* XRANGE and XPENDING of key, printed: to compare before and after. */
static char *rdump(redisContext *c, const char *key)
{
	size_t cap = 1 << 20, n = 0;
	char *s = calloc(1, cap);
	const char *cmds[] = {"XRANGE %s - +", "XPENDING %s blq - + 1000", "XRANGE %s:quarantine - +"};
	for (int k = 0; k < 3; k++) {
		redisReply *r = redisCommand(c, cmds[k], key, key);
		for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
			redisReply *e = r->element[i];
			for (size_t j = 0; e->type == REDIS_REPLY_ARRAY && j < e->elements; j++) {
				redisReply *x = e->element[j];
				if (x->type == REDIS_REPLY_STRING)
					n += (size_t)snprintf(s + n, cap - n, "%.*s|", (int)x->len, x->str);
				else if (x->type == REDIS_REPLY_INTEGER &&
					 j != 2) /* XPENDING's idle time moves */
					n += (size_t)snprintf(s + n, cap - n, "%lld|", x->integer);
				else if (x->type == REDIS_REPLY_ARRAY)
					for (size_t m = 0; m < x->elements; m++)
						n += (size_t)snprintf(s + n, cap - n, "%.*s|",
								      (int)x->element[m]->len,
								      x->element[m]->str);
			}
			n += (size_t)snprintf(s + n, cap - n, "\n");
		}
		freeReplyObject(r);
	}
	return s;
}

Test(dlqinspect, a_redis_dump_lists_scans_deletes_and_appends)
{
	char host[128];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	const char *key = "blq:test:inspect";
	redisContext *rc = rconn(host, port);
	rdel(rc, key);
	fill_stream(host, port, key, 6, 3);
	blq_dump_redis_config wc = {.host = host, .port = port, .key = key, .version = VERSION,
				    .consumer = "r1"};
	blq_error err;
	/* A bad entry, and a quarantined one. */
	freeReplyObject(redisCommand(rc, "XADD %s * v 7 r junk", key));
	freeReplyObject(redisCommand(rc, "XADD %s:quarantine * id 1-1 reason %s v 7", key,
				     "version mismatch"));

	/* A restorer's reader takes the first 4 entries: pending with r1. */
	wc.read_count = 4;
	blq_dump_reader *rd = blq_dump_redis_reader_new(&wc, &err);
	cr_assert_not_null(rd, "%s", err.msg);
	void *held = NULL;
	cr_assert_eq(rd->next(rd, &held, &err), 1, "%s", err.msg);

	blq_inspect_config ic = {.key = key, .host = host, .port = port, .version = VERSION};
	blq_inspect *in = blq_inspect_open(&ic, &err);
	cr_assert_not_null(in, "%s", err.msg);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 2, "the stream and its quarantine");
	cr_expect_str_eq(ps->loc[0], "dump");
	cr_expect(ps->p[0].stream);
	cr_expect_eq(ps->p[0].records, 9);
	cr_expect_eq(ps->p[0].damaged, 1);
	cr_expect(ps->p[0].group_exists);
	cr_expect_eq(ps->p[0].pending, 4);
	cr_assert_eq(ps->nc, 1);
	cr_expect_str_eq(ps->consumer[0], "r1");
	cr_expect_eq(ps->cpending[0], 4);
	cr_expect_str_eq(ps->loc[1], "quarantine");
	cr_expect_eq(ps->p[1].damaged, 1);

	char *before = rdump(rc, key);
	coll *c = scan(in, NULL);
	cr_assert_eq(c->n, 11);
	for (size_t i = 0; i < 9; i++) {
		cr_expect_eq(c->r[i].state, BLQ_INSPECT_OK);
		cr_expect_eq(c->r[i].id, i < 6 ? i : 100 + i - 6);
		if (i < 6)
			check_overflow_why(&c->r[i]);
		else
			check_failed_why(&c->r[i]);
		cr_expect_eq(c->r[i].pending, i < 4);
		cr_expect_eq(c->r[i].deliveries, i < 4 ? 1u : 0u);
		cr_expect_str_eq(c->r[i].consumer, i < 4 ? "r1" : "");
		blq_inspect_loc l;
		cr_expect_eq(blq_inspect_loc_parse(c->r[i].loc, &l, NULL), 0, "%s", c->r[i].loc);
	}
	cr_expect_eq(c->r[9].state, BLQ_INSPECT_DAMAGED);
	cr_expect_eq(c->r[10].state, BLQ_INSPECT_DAMAGED);
	cr_expect(strstr(c->r[10].damage, "version mismatch") != NULL, "%s", c->r[10].damage);
	static char locs[11][BLQ_INSPECT_LOC_MAX];
	for (size_t i = 0; i < 11; i++)
		snprintf(locs[i], BLQ_INSPECT_LOC_MAX, "%s", c->r[i].loc);
	blq_inspect_filter f = {.newest_first = true, .limit = 2, .part = "dump"};
	c = scan(in, &f);
	cr_assert_eq(c->n, 2);
	cr_expect_eq(c->r[0].state, BLQ_INSPECT_DAMAGED);
	cr_expect_eq(c->r[1].id, 102);
	blq_inspect_summary s;
	cr_expect_eq(blq_inspect_verify(in, NULL, &s, NULL, NULL, NULL), 1);
	cr_expect_eq(s.records, 9);
	cr_expect_eq(s.damaged, 2);
	char *after = rdump(rc, key);
	cr_expect_str_eq(after, before, "reading changed nothing, not even a delivery count");
	free(after);

	/* Delete a pending entry (1), a free one (5), the bad one: dry, then
	 * for real. */
	const char *sel[] = {locs[1], locs[5], locs[9]};
	dels ds = {0};
	blq_inspect_delete_stats st;
	cr_assert_eq(blq_inspect_delete(in, sel, 3, BLQ_INSPECT_DRY_RUN, keep_del, &ds, &st, &err),
		     0, "%s", err.msg);
	after = rdump(rc, key);
	cr_expect_str_eq(after, before, "a dry run changes nothing");
	free(after);
	free(before);
	cr_expect_eq(st.records, 3);
	cr_assert_eq(ds.n, 3);
	cr_expect(strstr(ds.msg[0], "pending with consumer r1") != NULL, "%s", ds.msg[0]);
	cr_assert_eq(blq_inspect_delete(in, sel, 1, BLQ_INSPECT_KEEP_PENDING, NULL, NULL, &st, &err),
		     0);
	cr_expect_eq(st.held, 1);
	cr_assert_eq(blq_inspect_delete(in, sel, 3, 0, NULL, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.records, 3);
	cr_expect_eq(scan(in, &(blq_inspect_filter){.part = "dump"})->n, 7);
	ps = list(in);
	cr_expect_eq(ps->p[0].pending, 3, "acked");
	cr_assert_eq(blq_inspect_delete(in, sel, 1, 0, NULL, NULL, &st, &err), 0);
	cr_expect_eq(st.not_found, 1);

	/* The restorer's reader goes on: the deleted entry it read is still
	 * handed out (its copy), and its acks of it do no harm. */
	blq_dump_record rec;
	size_t got_n = 0;
	while (rd->record(rd, held, &rec, &err) == 1) {
		cr_assert_eq(rd->done(rd, held, rec.index, &err), 0);
		got_n++;
	}
	cr_expect_eq(got_n, 4);
	cr_expect_eq(rd->commit(rd, held, &err), 0, "%s", err.msg);

	/* Append: entries a restorer picks up. */
	uint64_t ids[2] = {40, 41};
	blq_inspect_item items[2] = {{.data = &ids[0], .len = 8}, {.data = &ids[1], .len = 8}};
	cr_assert_eq(blq_inspect_append(in, items, 2, &err), 0, "%s", err.msg);
	c = scan(in, &(blq_inspect_filter){.part = "dump", .newest_first = true, .limit = 2});
	cr_expect_eq(c->r[0].id, 41);
	cr_expect_eq(c->r[1].id, 40);

	/* Everything, then the quarantine. */
	const char *all[] = {"dump", "quarantine"};
	cr_assert_eq(blq_inspect_delete(in, all, 2, 0, NULL, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.records, 3 + 2 + 1 + 1);
	redisReply *r = redisCommand(rc, "XLEN %s", key);
	cr_expect_eq(r->integer, 0);
	freeReplyObject(r);
	blq_inspect_close(in);
	blq_dump_reader_free(rd);
	rdel(rc, key);
	redisFree(rc);
}

/* What a list says of a stream's consumers, checked in the callback
 * (their names live only as long as it runs). */
typedef struct consumers_seen {
	size_t n, wrong;
	uint64_t pending;
} consumers_seen;

static int see_consumers(void *ctx, const blq_inspect_part *p)
{
	consumers_seen *cs = ctx;

	if (!p->stream || strcmp(p->loc, "dump") != 0)
		return 0;
	cs->n = p->nconsumers;
	for (size_t i = 0; i < p->nconsumers; i++) {
		unsigned k;
		/* Consumer cNN holds 1 + NN % 3 entries. */
		if (sscanf(p->consumers[i].name, "c%u", &k) != 1 || p->consumers[i].pending != 1 + k % 3)
			cs->wrong++;
		cs->pending += p->consumers[i].pending;
	}
	return 0;
}

/* A list names every consumer holding entries, however many there are
 * (it once kept the first 64 and dropped the rest without a word). */
Test(dlqinspect, a_redis_list_names_every_consumer_holding_entries)
{
	char host[128];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	const char *key = "blq:test:inspect-consumers";
	redisContext *rc = rconn(host, port);
	rdel(rc, key);
	enum { CONSUMERS = 70 };
	uint64_t held = 0;
	for (unsigned i = 0; i < CONSUMERS; i++)
		held += 1 + i % 3;
	fill_stream(host, port, key, held, 0);
	freeReplyObject(redisCommand(rc, "XGROUP CREATE %s blq 0", key));
	for (unsigned i = 0; i < CONSUMERS; i++) {
		redisReply *r = redisCommand(rc, "XREADGROUP GROUP blq c%02u COUNT %u STREAMS %s >", i,
					     1 + i % 3, key);
		cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY, "XREADGROUP for c%02u", i);
		freeReplyObject(r);
	}

	blq_inspect_config ic = {.key = key, .host = host, .port = port, .version = VERSION};
	blq_error err;
	blq_inspect *in = blq_inspect_open(&ic, &err);
	cr_assert_not_null(in, "%s", err.msg);
	consumers_seen cs = {0};
	cr_assert_eq(blq_inspect_list(in, see_consumers, &cs, &err), 0, "list: %s", err.msg);
	cr_expect_eq(cs.n, CONSUMERS);
	cr_expect_eq(cs.wrong, 0);
	cr_expect_eq(cs.pending, held);
	blq_inspect_close(in);
	rdel(rc, key);
	redisFree(rc);
}

/* A directory dump with its dead store in a stream. */
Test(dlqinspect, a_dead_store_stream_beside_a_directory_dump)
{
	char host[128];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	const char *key = "blq:test:inspect:dead";
	redisContext *rc = rconn(host, port);
	rdel(rc, key);
	fill_stream(host, port, key, 0, 2);
	blq_error err;
	char *dir = du_tmpdir("insds");
	blq_inspect_config c = {.directory = dir, .dead_key = key, .host = host, .port = port,
				.version = VERSION};
	blq_inspect *in = blq_inspect_open(&c, &err);
	cr_assert_not_null(in, "%s", err.msg);
	parts *ps = list(in);
	cr_assert_eq(ps->n, 1);
	cr_expect_str_eq(ps->loc[0], "dead");
	cr_expect(ps->p[0].stream);
	cr_expect_eq(ps->p[0].records, 2);
	coll *k = scan(in, NULL);
	cr_assert_eq(k->n, 2);
	check_failed_why(&k->r[0]);
	cr_expect(strncmp(k->r[0].loc, "dead:", 5) == 0, "%s", k->r[0].loc);
	const char *all[] = {"dead"};
	blq_inspect_delete_stats st;
	cr_assert_eq(blq_inspect_delete(in, all, 1, 0, NULL, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.records, 2);
	blq_inspect_close(in);
	rdel(rc, key);
	redisFree(rc);
	du_rmrf(dir);
}

Test(dlqinspect, bad_redis_inputs_are_named_and_left_alone)
{
	char host[128];
	int port;
	if (!redis_addr(host, sizeof(host), &port))
		return;
	redisContext *rc = rconn(host, port);
	freeReplyObject(redisCommand(rc, "SET blq:test:inspect:str hello"));
	blq_inspect_config ic = {.key = "blq:test:inspect:str", .host = host, .port = port};
	blq_error err;
	cr_expect_null(blq_inspect_open(&ic, &err));
	cr_expect_eq(err.code, BLQ_EINVAL);
	cr_expect(strstr(err.msg, "is a string, not a stream") != NULL, "%s", err.msg);
	redisReply *r = redisCommand(rc, "GET blq:test:inspect:str");
	cr_expect_str_eq(r->str, "hello");
	freeReplyObject(r);
	ic.key = "blq:test:inspect:none";
	ic.dead_key = "blq:test:inspect:str";
	cr_expect_null(blq_inspect_open(&ic, &err));
	cr_expect(strstr(err.msg, "dead_key") != NULL, "%s", err.msg);
	r = redisCommand(rc, "EXISTS blq:test:inspect:none");
	cr_expect_eq(r->integer, 0, "no stream or group created");
	freeReplyObject(r);
	freeReplyObject(redisCommand(rc, "DEL blq:test:inspect:str"));
	redisFree(rc);

	int down = du_free_port();
	ic = (blq_inspect_config){.key = "k", .port = down, .connect_timeout_ns = 200000000};
	cr_expect_null(blq_inspect_open(&ic, &err));
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", down);
	cr_expect(strstr(err.msg, addr) != NULL, "%s", err.msg);
}
#endif
