/*
 * blq_inspect_redrive and what writes learn from a dump, on what the other
 * parts really make: a dead store filled by a real restorer (a queue whose
 * worker fails, fail_to_dlq into a real dump of version 3 named as
 * blq-demo names a key's files, max_restores 1), redriven with no option
 * and restored once each by a restorer started again with its worker
 * fixed; the version and file names learned, or refused when the files
 * disagree; names that are no dump file reported as such; a damaged
 * quarantined file salvaged whole, never twice; a stream target written
 * with the source's version (the real redis-server, BLQ_TEST_REDIS).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "../dlq/dump_format.h"
#include "dump_util.h"
#include "suite_util.h"

TestSuite(dlqinspect_redrive, .timeout = 90);

#define VERSION 3
#define MASK "orders.%Y-%m-%d--%H-%M-%S--%i.bin"
#define MATCH "orders.*.bin"
#define N 40

static _Atomic unsigned seen[N];

static int failing(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)p, (void)t;
	return -42;
}

static int counting(void *ctx, void *p, blq_task *t)
{
	(void)ctx, (void)t;
	uint64_t id = du_id(p);
	if (id < N)
		atomic_fetch_add(&seen[id], 1);
	free(p);
	return 0;
}

static blq_dump_writer *fs_writer(const char *dir)
{
	blq_dump_fs_config fc = {.directory = dir, .file_mask = MASK, .match = MATCH};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	return w;
}

/* A service as a user builds one: queue "orders" leaking its failures into
 * a dump of dir, a restorer feeding that dump back, with a dead store. */
typedef struct svc {
	blq_dump_writer *w, *dw;
	blq_dump *d;
	blq_dump_reader *rd;
	blq *q;
	blq_restorer *r;
} svc;

static void svc_start(svc *s, const char *dir, const char *dead, blq_worker_fn worker)
{
	blq_error err;
	s->w = fs_writer(dir);
	s->dw = fs_writer(dead);
	blq_dump_config dc = {.capacity = 1 << 16, .flush_interval_ns = 2000000, .version = VERSION,
			      .encoder = blq_dump_bytes_encoder(), .item_free = free, .writer = s->w};
	s->d = blq_dump_new(&dc, &err);
	cr_assert_not_null(s->d, "%s", err.msg);
	blq_config c = {.name = "orders", .capacity = 256, .workers = 1, .worker = worker,
			.item_free = free, .fail_to_dlq = true, .dlq = blq_dump_enqueuer(s->d)};
	s->q = must_new(&c);
	blq_dump_fs_config rc = {.directory = dir, .match = MATCH, .version = VERSION};
	s->rd = blq_dump_fs_reader_new(&rc, &err);
	cr_assert_not_null(s->rd, "%s", err.msg);
	blq_restorer_config cfg = {.reader = s->rd, .decoder = blq_dump_bytes_decoder(),
				   .target = s->q, .item_free = free, .check_interval_ns = 2000000,
				   .max_restores = 1, .dead = s->dw};
	s->r = blq_restorer_new(&cfg, &err);
	cr_assert_not_null(s->r, "%s", err.msg);
}

static struct blq_restorer_stats svc_rstats(svc *s)
{
	struct blq_restorer_stats st;
	blq_restorer_stats(s->r, &st);
	return st;
}

static struct blq_restorer_stats svc_stop(svc *s)
{
	blq_restorer_close(s->r);
	blq_close(s->q);
	blq_dump_close(s->d);
	struct blq_restorer_stats st = svc_rstats(s);
	struct blq_stats qs = stats(s->q);
	cr_expect_eq(qs.in, qs.processed + qs.failed + qs.leaked + qs.expired + qs.lost);
	blq_restorer_free(s->r);
	blq_free(s->q);
	blq_dump_free(s->d);
	blq_dump_reader_free(s->rd);
	blq_dump_writer_free(s->w);
	blq_dump_writer_free(s->dw);
	return st;
}

/* N items fail, are restored once, fail again: all N in the dead store. */
static void fill_dead(const char *dir, const char *dead)
{
	svc s;
	svc_start(&s, dir, dead, failing);
	for (uint64_t i = 0; i < N; i++)
		cr_assert_eq(blq_enqueue(s.q, du_item(i, 16)), 0);
	cr_assert(TU_WAIT_FOR(svc_rstats(&s).dead == N, 20000), "dead %llu",
		  (unsigned long long)svc_rstats(&s).dead);
	svc_stop(&s);
	cr_assert_eq(du_count(dir, "*.bin"), 0);
}

static blq_inspect *open_with(const char *dir, const char *dead, const char *match, bool vset,
			      uint64_t v)
{
	blq_inspect_config c = {.directory = dir, .dead_directory = dead, .match = match,
				.dead_match = match, .version = v, .version_set = vset};
	blq_error err;
	blq_inspect *in = blq_inspect_open(&c, &err);
	cr_assert_not_null(in, "%s", err.msg);
	return in;
}

typedef struct tally {
	uint64_t ok, unreadable, other;
	uint32_t max_restores;
	uint64_t version;
	char damage[4][160];
} tally;

static int count(void *ctx, const blq_inspect_record *r)
{
	tally *t = ctx;
	if (r->state == BLQ_INSPECT_OK) {
		t->ok++;
		t->version = r->version;
		if (r->restores > t->max_restores)
			t->max_restores = r->restores;
	} else if (r->state == BLQ_INSPECT_UNREADABLE) {
		snprintf(t->damage[t->unreadable++ % 4], 160, "%s: %s", r->loc, r->damage);
	} else {
		t->other++;
	}
	return 0;
}

static tally scan_area(blq_inspect *in, const char *part)
{
	tally t = {0};
	blq_error err;
	blq_inspect_filter f = {.part = part};
	cr_assert_eq(blq_inspect_scan(in, &f, count, &t, &err), 0, "%s", err.msg);
	return t;
}

Test(dlqinspect_redrive, a_dead_store_a_real_restorer_filled_goes_back_and_is_restored_once)
{
	char *dir = du_tmpdir("rdd"), *dead = du_tmpdir("rddx");
	fill_dead(dir, dead);

	/* No match, no version, no mask given: all learned from the dump. */
	blq_inspect *in = open_with(dir, dead, NULL, false, 0);
	uint64_t v = 99;
	blq_error err;
	cr_expect_eq(blq_inspect_version(in, &v, &err), 0, "%s", err.msg);
	cr_expect_eq(v, VERSION, "the dead store's records carry the dump's version");
	tally t = scan_area(in, "dead");
	cr_expect_eq(t.ok, N);
	cr_expect_eq(t.max_restores, 1);
	blq_inspect_redrive_stats st;
	cr_assert_eq(blq_inspect_redrive(in, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	cr_expect_eq(st.version, VERSION);
	cr_expect(st.reset_restores);
	cr_expect_eq(du_count(dead, "*.bin"), 0);
	cr_expect_eq(du_count(dir, "*.bin"), du_count(dir, MATCH), "named as the reader reads");
	cr_expect(du_count(dir, MATCH) > 0);
	t = scan_area(in, "dump");
	cr_expect_eq(t.ok, N);
	cr_expect_eq(t.max_restores, 0, "restore counts reset");
	cr_expect_eq(t.version, VERSION);
	blq_inspect_close(in);

	/* The worker fixed: the restorer feeds each one to it, once. */
	svc s;
	svc_start(&s, dir, dead, counting);
	cr_expect(TU_WAIT_FOR(svc_rstats(&s).processed == N, 20000));
	struct blq_restorer_stats rs = svc_stop(&s);
	cr_expect_eq(rs.restored, N);
	cr_expect_eq(rs.dead, 0, "none sent straight back to the dead store");
	for (unsigned i = 0; i < N; i++)
		cr_expect_eq(atomic_load(&seen[i]), 1, "id %u", i);
	cr_expect_eq(du_count(dir, "*.bin") + du_count(dead, "*.bin"), 0);
	du_rmrf(dir);
	du_rmrf(dead);
}

Test(dlqinspect_redrive, keep_restores_keeps_them_and_the_restorer_sends_them_back)
{
	char *dir = du_tmpdir("rdk"), *dead = du_tmpdir("rdkx");
	fill_dead(dir, dead);
	blq_inspect *in = open_with(dir, dead, MATCH, false, 0);
	blq_inspect_redrive_config c = {.keep_restores = true, .rate = 400, .batch = 10};
	blq_inspect_redrive_stats st;
	blq_error err;
	cr_assert_eq(blq_inspect_redrive(in, &c, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	cr_expect_eq(st.batches, N / 10);
	cr_expect(!st.reset_restores);
	cr_expect(st.elapsed_s >= 0.09 && st.elapsed_s < 2.0, "%g s at 400/s", st.elapsed_s);
	tally t = scan_area(in, "dump");
	cr_expect_eq(t.max_restores, 1);
	blq_inspect_close(in);
	svc s;
	svc_start(&s, dir, dead, counting);
	cr_expect(TU_WAIT_FOR(svc_rstats(&s).dead == N, 20000));
	svc_stop(&s);
	du_rmrf(dir);
	du_rmrf(dead);
}

/* Files of version 3: read whatever version is given; a given version is a
 * note on the parts (never damage), and writes that would be quarantined
 * are refused. */
typedef struct plist {
	unsigned parts, other, damaged;
	uint64_t version;
} plist;

static int note_part(void *ctx, const blq_inspect_part *p)
{
	plist *l = ctx;
	if (p->area != BLQ_INSPECT_DEAD)
		return 0;
	l->parts++;
	l->other += p->other_version;
	l->damaged += p->damaged > 0;
	l->version = p->version;
	return 0;
}

Test(dlqinspect_redrive, another_version_is_a_note_and_a_contradicted_write_is_refused)
{
	char *dir = du_tmpdir("rdv"), *dead = du_tmpdir("rdvx");
	fill_dead(dir, dead);
	blq_inspect *in = open_with(dir, dead, MATCH, true, 0);
	plist l = {0};
	blq_error err;
	cr_assert_eq(blq_inspect_list(in, note_part, &l, &err), 0, "%s", err.msg);
	cr_expect(l.parts > 0);
	cr_expect_eq(l.other, l.parts, "every dead file noted: version 3, not 0");
	cr_expect_eq(l.damaged, 0);
	cr_expect_eq(l.version, VERSION);
	blq_inspect_summary sum;
	cr_expect_eq(blq_inspect_verify(in, NULL, &sum, NULL, NULL, &err), 0);
	cr_expect_eq(sum.records, N);
	uint64_t v;
	cr_expect_eq(blq_inspect_version(in, &v, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "version 0 was given") != NULL, "%s", err.msg);
	cr_expect(strstr(err.msg, "is version 3") != NULL, "%s", err.msg);
	blq_inspect_redrive_stats st;
	cr_expect_eq(blq_inspect_redrive(in, NULL, &st, &err), BLQ_EINVAL);
	cr_expect_eq(st.moved, 0);
	cr_expect_eq(du_count(dead, "*.bin"), (size_t)l.parts, "nothing moved");
	blq_inspect_close(in);
	/* The right one given: no note, and it moves. */
	in = open_with(dir, dead, MATCH, true, VERSION);
	memset(&l, 0, sizeof(l));
	cr_assert_eq(blq_inspect_list(in, note_part, &l, &err), 0, "%s", err.msg);
	cr_expect_eq(l.other, 0);
	cr_expect_eq(blq_inspect_redrive(in, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}

/* Two keys' files in one directory (as blq-demo's dump directory holds):
 * a write cannot know which names to use, and says so; a match settles it. */
Test(dlqinspect_redrive, names_of_two_kinds_are_refused_until_a_match_says_which)
{
	char *dir = du_tmpdir("rdn"), *dead = du_tmpdir("rdnx");
	fill_dead(dir, dead);
	/* Another key's dump file beside them. */
	blq_dump_fs_config fc = {.directory = dir, .file_mask = "other.%Y-%m-%d--%H-%M-%S--%i.bin",
				 .match = "other.*.bin"};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	cr_assert_not_null(w, "%s", err.msg);
	blq__buf b = {0};
	cr_assert_eq(blq__dump_rec_append(&b, 1, "x", 1, 0, NULL), 0);
	blq_dump_batch batch = {.version = VERSION, .data = b.p, .len = b.len, .count = 1,
				.format = 1};
	size_t done;
	cr_assert_eq(w->write(w, &batch, &done, &err), 0, "%s", err.msg);
	blq__buf_free(&b);
	blq_dump_writer_free(w);
	/* The dump dir holds other.*.bin only: the names learned are those,
	 * which the orders restorer would never read. A dead store of
	 * orders.*.bin does not settle it: the dump's own names come first.
	 * So give the match, as an operator does for a blq-demo key. */
	blq_inspect *in = open_with(dir, dead, MATCH, false, 0);
	blq_inspect_redrive_stats st;
	cr_assert_eq(blq_inspect_redrive(in, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	cr_expect_eq(du_count(dir, MATCH) + du_count(dir, "other.*.bin"), du_count(dir, "*.bin"));
	cr_expect(du_count(dir, MATCH) > 0);
	blq_inspect_close(in);
	/* With both kinds in the dump area and no match: refused, named. */
	in = open_with(dir, NULL, NULL, false, 0);
	blq_inspect_item item = {.data = "y", .len = 1};
	size_t before = du_count(dir, "*.bin");
	cr_expect_eq(blq_inspect_append(in, &item, 1, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "named two ways") != NULL, "%s", err.msg);
	cr_expect_eq(du_count(dir, "*.bin"), before, "nothing written");
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}

Test(dlqinspect_redrive, names_that_are_no_dump_file_are_reported_as_what_they_are)
{
	char *dir = du_tmpdir("rdu"), *dead = du_tmpdir("rdux");
	fill_dead(dir, dead);
	char p[600], q[600];
	snprintf(p, sizeof(p), "%s/x.bin", dead);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/loop.bin", dead);
	cr_assert_eq(symlink("loop.bin", p), 0);
	snprintf(q, sizeof(q), "%s/fifo.bin", dead);
	cr_assert_eq(mkfifo(q, 0600), 0);
	blq_inspect *in = open_with(dir, dead, NULL, false, 0);
	blq_inspect_summary sum;
	blq_error err;
	cr_expect_eq(blq_inspect_verify(in, NULL, &sum, NULL, NULL, &err), 1, "%s", err.msg);
	cr_expect_eq(sum.unreadable, 3);
	cr_expect_eq(sum.gone, 0, "not blamed on a restorer");
	cr_expect_eq(sum.records, N);
	tally t = scan_area(in, "dead");
	cr_assert_eq(t.unreadable, 3);
	bool dirmsg = false, linkmsg = false, fifomsg = false;
	for (int i = 0; i < 3; i++) {
		dirmsg |= strstr(t.damage[i], "x.bin: not a regular file (a directory)") != NULL;
		linkmsg |= strstr(t.damage[i], "loop.bin: a symbolic link") != NULL;
		fifomsg |= strstr(t.damage[i], "fifo.bin: not a regular file (a FIFO)") != NULL;
	}
	cr_expect(dirmsg && linkmsg && fifomsg, "%s | %s | %s", t.damage[0], t.damage[1],
		  t.damage[2]);
	/* A redrive moves the records and leaves those names alone. */
	blq_inspect_redrive_stats st;
	cr_expect_eq(blq_inspect_redrive(in, NULL, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	cr_expect_eq(du_count(dead, "*.bin"), 3);
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}

/* A damaged file in the quarantine: redriven whole (its intact records,
 * then the file deleted), so a second run delivers nothing again; under a
 * filter it is refused before anything is written. */
Test(dlqinspect_redrive, a_damaged_quarantined_file_is_salvaged_whole_and_never_twice)
{
	char *dir = du_tmpdir("rdq"), *dead = du_tmpdir("rdqx");
	fill_dead(dir, dead);
	char qdir[256], from[512], to[1024];
	snprintf(qdir, sizeof(qdir), "%s/quarantine", dir);
	mkdir(qdir, 0755);
	/* The dead store's real files set aside (as a restorer quarantines
	 * files of another version), one byte flipped in the middle of one. */
	char first[1024] = "";
	while (du_first(dead, "*.bin", from)) {
		snprintf(to, sizeof(to), "%s/%s", qdir, strrchr(from, '/') + 1);
		cr_assert_eq(rename(from, to), 0);
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", to);
	}
	struct stat sb;
	cr_assert_eq(stat(first, &sb), 0);
	int fd = open(first, O_RDWR);
	unsigned char byte;
	cr_assert_eq(pread(fd, &byte, 1, sb.st_size / 2), 1);
	byte ^= 0x40;
	cr_assert_eq(pwrite(fd, &byte, 1, sb.st_size / 2), 1);
	close(fd);
	size_t files = du_count(qdir, "*");
	blq_inspect *in = open_with(dir, dead, MATCH, false, 0);
	tally t = scan_area(in, "quarantine");
	cr_expect_eq(t.other, 1, "one damage report");
	cr_expect(t.ok >= N - 2 && t.ok < N, "%llu intact", (unsigned long long)t.ok);
	/* The dump and the dead store hold nothing that says the version, and
	 * a quarantined file is no evidence of it: refused, nothing moved. */
	blq_inspect_redrive_config c = {.from = "quarantine"};
	blq_inspect_redrive_stats st;
	blq_error err;
	cr_expect_eq(blq_inspect_redrive(in, &c, &st, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "cannot know the version") != NULL, "%s", err.msg);
	cr_expect_eq(du_count(qdir, "*"), files, "nothing moved");
	blq_inspect_close(in);
	/* Given: under a filter the damaged file is refused, nothing written. */
	in = open_with(dir, dead, MATCH, true, VERSION);
	blq_inspect_filter f = {.reasons = 1u << BLQ_DLQ_FAILED};
	c.filter = &f;
	cr_expect_eq(blq_inspect_redrive(in, &c, &st, &err), BLQ_EREFUSED);
	cr_expect(strstr(err.msg, "nothing of it was written") != NULL, "%s", err.msg);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(qdir, "*"), files);
	/* With no filter: every intact record, the damaged file salvaged whole. */
	c.filter = NULL;
	cr_assert_eq(blq_inspect_redrive(in, &c, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, t.ok);
	cr_expect_eq(st.files_salvaged, 1);
	cr_expect(st.salvaged > 0 && st.salvaged <= st.moved);
	cr_expect_eq(du_count(qdir, "*"), 0, "the quarantine emptied, the damaged file too");
	tally d = scan_area(in, "dump");
	cr_expect_eq(d.ok, t.ok);
	cr_expect_eq(blq_inspect_redrive(in, &c, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, 0, "a second run finds nothing");
	d = scan_area(in, "dump");
	cr_expect_eq(d.ok, t.ok, "no record twice");
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}

/* Into a stream: entries written with the version the source's dead store
 * says, where the stream holds nothing to learn it from. */
Test(dlqinspect_redrive, into_an_empty_stream_with_the_sources_version)
{
	char host[64];
	int port;
	if (!du_redis_env(host, sizeof(host), &port))
		cr_skip_test("BLQ_TEST_REDIS is not set");
	char *dir = du_tmpdir("rds"), *dead = du_tmpdir("rdsx");
	fill_dead(dir, dead);
	char key[64];
	snprintf(key, sizeof(key), "blq-test:redrive:%d", (int)getpid());
	blq_inspect *in = open_with(dir, dead, MATCH, false, 0);
	blq_inspect_config tc = {.key = key, .host = host, .port = port};
	blq_error err;
	blq_inspect *to = blq_inspect_open(&tc, &err);
	cr_assert_not_null(to, "%s", err.msg);
	uint64_t v;
	cr_expect_eq(blq_inspect_version(to, &v, &err), 1, "an empty stream says nothing");
	blq_inspect_redrive_config c = {.to = to};
	blq_inspect_redrive_stats st;
	cr_assert_eq(blq_inspect_redrive(in, &c, &st, &err), 0, "%s", err.msg);
	cr_expect_eq(st.moved, N);
	cr_expect_eq(st.version, VERSION);
	tally t = scan_area(to, "dump");
	cr_expect_eq(t.ok, N);
	cr_expect_eq(t.version, VERSION);
	cr_expect_eq(blq_inspect_version(to, &v, &err), 0);
	cr_expect_eq(v, VERSION);
	const char *all[] = {"dump"};
	blq_inspect_delete(to, all, 1, 0, NULL, NULL, NULL, &err);
	blq_inspect_close(to);
	blq_inspect_close(in);
	du_rmrf(dir);
	du_rmrf(dead);
}
