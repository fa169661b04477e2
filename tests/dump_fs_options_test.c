/*
 * The fs dump's options (issue 34, item 9): the writer's write_buffer
 * (the size of its writes) and the reader's archive directory and finished
 * hook (what becomes of a file once every record reached its outcome),
 * including an archive that moved to another file system.
 * Files are made by the real fs writer behind a real dump and consumed by
 * the real fs reader behind a real restorer into a queue with one worker,
 * so the order of the items is the order of the records.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sys/mman.h>

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
	blq_restorer *r = du_restorer(rd, q, 64, 0, &err);

	cr_assert_not_null(r, "%s", err.msg);
	return r;
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

	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps == dumps, 20000), "dumps restored: %llu of %llu",
		  (unsigned long long)du_rstats(r).dumps, (unsigned long long)dumps);
	struct blq_restorer_stats s = du_rstats(r);
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
		cr_assert(files >= 4, "write_buffer %zu: %zu files", sizes[k], files);
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
	cr_expect(calls[0] > 4 * calls[2], "write_buffer 512: %llu calls, 0: %llu",
		     (unsigned long long)calls[0], (unsigned long long)calls[2]);
	cr_expect(calls[1] < calls[0]);
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

/* ---- archive and finished hook -------------------------------------- */

#define FILES_MAX 64
typedef struct snapshot {
	size_t n;
	char name[FILES_MAX][256];
	unsigned char *bytes[FILES_MAX];
	size_t len[FILES_MAX];
} snapshot;

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
	*len = b != NULL ? fread(b, 1, (size_t)n, f) : 0;
	fclose(f);
	return b;
}

/* The dump files in dir, names and bytes. */
static void snap(const char *dir, snapshot *s)
{
	char p[512];
	glob_t g;

	s->n = 0;
	snprintf(p, sizeof(p), "%s/*.bin", dir);
	if (glob(p, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc && s->n < FILES_MAX; i++, s->n++) {
			snprintf(s->name[s->n], 256, "%s", strrchr(g.gl_pathv[i], '/') + 1);
			s->bytes[s->n] = slurp(g.gl_pathv[i], &s->len[s->n]);
		}
	globfree(&g);
}

static void snap_free(snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->bytes[i]);
}

/* Each file of s is in dir under its name, byte for byte. */
static void expect_files(const snapshot *s, const char *dir)
{
	char p[512];

	cr_expect_eq(du_count(dir, "*.bin"), s->n, "%s: %zu files, want %zu", dir,
		     du_count(dir, "*.bin"), s->n);
	for (size_t i = 0; i < s->n; i++) {
		size_t len = 0;
		snprintf(p, sizeof(p), "%s/%s", dir, s->name[i]);
		unsigned char *b = slurp(p, &len);
		cr_expect_not_null(b, "%s: missing", p);
		cr_expect(b != NULL && len == s->len[i] && memcmp(b, s->bytes[i], len) == 0,
			  "%s: %zu bytes, not the %zu written", p, len, s->len[i]);
		free(b);
	}
}

/* Dumps n items into a fresh directory in batches of `batch` bytes, at
 * least min_files files, snapshots them; *arch is DIR/archive. */
static char *archive_setup(const char *tag, uint64_t n, size_t batch, size_t min_files,
			   char *arch, snapshot *s)
{
	char *dir = du_tmpdir(tag);
	uint64_t calls;

	snprintf(arch, 256, "%s/archive", dir);
	dump_ids(dir, n, batch, 0, &calls);
	snap(dir, s);
	cr_assert(s->n >= min_files);
	return dir;
}

/* 600 items in about 10 files: archived whole, nothing deleted, each item
 * once, in order. */
Test(fs_options, finished_files_are_archived_intact)
{
	char arch[256];
	snapshot s;
	char *dir = archive_setup("arch", 600, 10 << 10, 5, arch, &s);
	blq_dump_fs_config fc = {.directory = dir, .archive = arch};
	struct blq_restorer_stats st = restore_all(&fc, s.n);
	cr_expect_eq(st.done, 600);
	cr_expect_eq(st.read_errors, 0);
	expect_exactly_once_in_order(600);
	cr_expect_eq(du_count(dir, "*.bin"), 0, "finished files left in the directory");
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0, "checkpoints left in the directory");
	cr_expect_eq(du_count(arch, ".*.ckpt"), 0, "checkpoints in the archive");
	expect_files(&s, arch);
	snap_free(&s);
	du_rmrf(dir);
}

/* A restorer closed midway, another started on the same directory: every
 * item once (the done marks of a released file hold), every file archived
 * whole, and the archived ones are not read again. */
Test(fs_options, archive_across_a_restart_restores_nothing_twice)
{
	char arch[256];
	snapshot s;
	char *dir = archive_setup("archrs", 800, 5 << 10, 8, arch, &s);
	blq_dump_fs_config fc = {.directory = dir, .archive = arch};

	atomic_store(&slow_us, 500); /* 800 items: 0.4 s at least */
	blq *q = target();
	blq_dump_reader *rd = reader(&fc);
	blq_restorer *r = restorer(rd, q);
	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps >= 2, 20000));
	blq_restorer_free(r); /* closes: commits what reached its outcome, releases the rest */
	blq_free(q);
	blq_dump_reader_free(rd);
	size_t first = atomic_load(&n_order), archived = du_count(arch, "*.bin");
	cr_expect(first < 800 && archived < s.n, "the first restorer finished everything (%zu)",
		  first);
	cr_expect_eq(du_count(dir, "*.bin") + archived, s.n, "a file was deleted");

	atomic_store(&slow_us, 0);
	struct blq_restorer_stats st = restore_all(&fc, s.n - archived);
	cr_expect_eq(st.read_errors, 0);
	expect_exactly_once_in_order(800);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	expect_files(&s, arch);
	snap_free(&s);
	du_rmrf(dir);
}

typedef struct hook_state {
	pthread_mutex_t mu;
	unsigned calls;
	unsigned fail;   /* calls to fail with BLQ_EIO first */
	bool leave;      /* return 0 and leave the file where it is */
	char keep[256];  /* move even calls' files here; odd ones: BLQ_DUMP_FS_DELETE */
	char last[512];
} hook_state;

static int hook(void *ctx, const char *path, blq_error *err)
{
	hook_state *h = ctx;
	char to[600];
	int rc = 0;

	pthread_mutex_lock(&h->mu);
	unsigned k = h->calls++;
	snprintf(h->last, sizeof(h->last), "%s", path);
	if (k < h->fail) {
		snprintf(err->msg, sizeof(err->msg), "the archive service is down");
		rc = BLQ_EIO;
	} else if (h->leave) {
		rc = 0;
	} else if (k % 2 == 0) {
		snprintf(to, sizeof(to), "%s/%s", h->keep, strrchr(path, '/') + 1);
		rc = rename(path, to) == 0 ? 0 : BLQ_EIO;
	} else {
		rc = BLQ_DUMP_FS_DELETE;
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* The hook decides: even files moved to its own directory, odd ones
 * deleted by the reader at its word; nothing restored twice. */
Test(fs_options, finished_hook_decides)
{
	char *dir = du_tmpdir("hook");
	hook_state h = {.mu = PTHREAD_MUTEX_INITIALIZER};
	uint64_t calls;
	snapshot s;

	snprintf(h.keep, sizeof(h.keep), "%s/kept", dir);
	cr_assert_eq(mkdir(h.keep, 0755), 0);
	dump_ids(dir, 300, 5 << 10, 0, &calls);
	snap(dir, &s);
	cr_assert(s.n >= 4);
	blq_dump_fs_config fc = {.directory = dir, .finished = hook, .finished_ctx = &h};
	struct blq_restorer_stats st = restore_all(&fc, s.n);
	cr_expect_eq(st.read_errors, 0);
	expect_exactly_once_in_order(300);
	cr_expect_eq(h.calls, s.n);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	cr_expect_eq(du_count(h.keep, "*.bin"), (s.n + 1) / 2);
	snap_free(&s);
	du_rmrf(dir);
}

/* A hook that fails (or returns 0 and leaves the file): the commit fails,
 * logged and counted, the file stays with its records done; the hook is
 * called again, and once it takes the file it is gone; no item twice,
 * across a restart too. */
Test(fs_options, a_failing_finished_hook_keeps_the_file)
{
	char *dir = du_tmpdir("hookf");
	hook_state h = {.mu = PTHREAD_MUTEX_INITIALIZER, .fail = 2};
	uint64_t calls;

	snprintf(h.keep, sizeof(h.keep), "%s/kept", dir);
	cr_assert_eq(mkdir(h.keep, 0755), 0);
	dump_ids(dir, 50, 1 << 20, 0, &calls);
	cr_assert_eq(du_count(dir, "*.bin"), 1);
	blq_dump_fs_config fc = {.directory = dir, .finished = hook, .finished_ctx = &h};
	blq *q = target();
	blq_dump_reader *rd = reader(&fc);
	blq_restorer *r = restorer(rd, q);
	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps == 1, 20000), "the hook never took the file");
	struct blq_restorer_stats st = du_rstats(r);
	cr_expect_geq(st.read_errors, 1, "the failed hook was not counted");
	blq_restorer_free(r); /* joins the restorer's thread: h is ours again */
	cr_expect_eq(h.calls, 3, "hook calls: %u (two failures, then it took the file)", h.calls);
	blq_free(q);
	blq_dump_reader_free(rd);
	expect_exactly_once_in_order(50);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(h.keep, "*.bin"), 1);

	/* Returns 0, leaves the file: refused; after a restart the records
	 * are done (not restored again) and a deleting hook ends it. */
	init();
	h.calls = 0;
	h.fail = 0;
	h.leave = true;
	dump_ids(dir, 40, 1 << 20, 0, &calls);
	q = target();
	rd = reader(&fc);
	r = restorer(rd, q);
	cr_assert(TU_WAIT_FOR(du_rstats(r).done == 40 && du_rstats(r).read_errors >= 1, 20000));
	cr_expect_eq(du_rstats(r).dumps, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	cr_expect_eq(du_count(dir, "*.bin"), 1, "the file left in place went");
	h.leave = false;
	h.calls = 1; /* odd: BLQ_DUMP_FS_DELETE */
	struct blq_restorer_stats st2 = restore_all(&fc, 1);
	cr_expect_eq(st2.records, 0, "records restored again after the restart: %llu",
		     (unsigned long long)st2.records);
	expect_exactly_once_in_order(40);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	du_rmrf(dir);
}

Test(fs_options, bad_archive_or_hook_config_is_refused)
{
	char *dir = du_tmpdir("archbad"), file[256];
	blq_error err = {0, ""};
	int ctx;

	blq_dump_fs_config same = {.directory = dir, .archive = dir};
	cr_expect_null(blq_dump_fs_reader_new(&same, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "archive") != NULL, "%s", err.msg);

	snprintf(file, sizeof(file), "%s/plain", dir);
	const char *names[] = {"plain"};
	cr_assert(du_touch(dir, names, 1));
	blq_dump_fs_config notdir = {.directory = dir, .archive = file};
	cr_expect_null(blq_dump_fs_reader_new(&notdir, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "archive") != NULL, "%s", err.msg);

	blq_dump_fs_config ctx_only = {.directory = dir, .finished_ctx = &ctx};
	cr_expect_null(blq_dump_fs_reader_new(&ctx_only, &err));
	cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "finished_ctx") != NULL, "%s",
		  err.msg);

	/* Another file system: /dev/shm (tmpfs) where /tmp is not. */
	struct stat a, b;
	char *other = mkdtemp((char[]){"/dev/shm/blq-arch-XXXXXX"});
	if (other != NULL && stat(other, &a) == 0 && stat(dir, &b) == 0 && a.st_dev != b.st_dev) {
		blq_dump_fs_config cross = {.directory = dir, .archive = other};
		cr_expect_null(blq_dump_fs_reader_new(&cross, &err));
		cr_expect(err.code == BLQ_EINVAL && strstr(err.msg, "another file system") != NULL,
			  "%s", err.msg);
	} else {
		fprintf(stderr, "no second file system beside /tmp: the cross-device check is not run\n");
	}
	if (other != NULL)
		rmdir(other);
	du_rmrf(dir);
}

/* A file removed while restored (by hand, blq-dlq): its records finish,
 * the commit archives nothing and calls no hook, and counts no error. */
Test(fs_options, a_file_removed_meanwhile_is_neither_archived_nor_handed_over)
{
	char arch[256], path[512];
	snapshot s;
	char *dir = archive_setup("archgone", 50, 1 << 20, 1, arch, &s);
	hook_state h = {.mu = PTHREAD_MUTEX_INITIALIZER};

	snprintf(path, sizeof(path), "%s/%s", dir, s.name[0]);
	atomic_store(&slow_us, 5000); /* 50 items: 0.25 s at least */
	blq_dump_fs_config fc = {.directory = dir, .archive = arch, .finished = hook,
				 .finished_ctx = &h};
	blq *q = target();
	blq_dump_reader *rd = reader(&fc);
	blq_restorer *r = restorer(rd, q);
	cr_assert(TU_WAIT_FOR(atomic_load(&n_order) >= 1, 20000));
	cr_assert_eq(unlink(path), 0, "%s: %s", path, strerror(errno));
	cr_assert(TU_WAIT_FOR(du_rstats(r).dumps == 1, 20000), "the commit never came");
	cr_expect_eq(du_rstats(r).read_errors, 0);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	expect_exactly_once_in_order(50);
	cr_expect_eq(h.calls, 0, "the hook was called for a file that is gone");
	cr_expect_eq(du_count(arch, "*"), 0, "something was archived");
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	snap_free(&s);
	du_rmrf(dir);
}

/* ---- the archive on another file system at commit time --------------- */

/* What the child restorer saw, shared with the parent (MAP_SHARED). */
typedef struct child_view {
	struct blq_restorer_stats st;
	size_t items;
	int ok;
} child_view;

/* A reader made while fc->archive is a directory of its own (it checks
 * that it shares the dump's file system), which then becomes a symlink to
 * `other`, on another file system. */
static blq_dump_reader *xdev_reader(const blq_dump_fs_config *fc, const char *other)
{
	unlink(fc->archive); /* the symlink of an earlier call */
	blq_dump_reader *rd = reader(fc); /* makes the archive */
	cr_assert_eq(rmdir(fc->archive), 0, "%s: %s", fc->archive, strerror(errno));
	cr_assert_eq(symlink(other, fc->archive), 0, "%s: %s", fc->archive, strerror(errno));
	return rd;
}

/* The archive was on the dump's file system when the reader was made (it
 * checks), and is not when a file finishes: here the archive directory is
 * replaced by a symlink into /dev/shm (tmpfs), so the rename gives EXDEV.
 * Chosen behaviour: no copy (a copy across file systems is not the atomic
 * move the archive promises, and a mount that moved is the operator's to
 * see): the commit fails, counted once (read_errors and
 * failures[commit]) and logged; the file stays in the directory with every
 * record marked done in its checkpoint (synced at once), so neither a
 * crash nor a restart restores it again; the move is tried again, and the
 * file is archived once the archive is back on the file system. */
Test(fs_options, an_archive_moved_to_another_file_system_keeps_the_file_without_restoring_twice)
{
	char arch[256], other_buf[] = "/dev/shm/blq-xdev-XXXXXX";
	snapshot s;
	char *dir = archive_setup("xdev", 50, 1 << 20, 1, arch, &s);
	char *other = mkdtemp(other_buf);
	struct stat a, b;
	cr_assert_not_null(other, "/dev/shm: %s", strerror(errno));
	if (stat(other, &a) != 0 || stat(dir, &b) != 0 || a.st_dev == b.st_dev) {
		rmdir(other);
		snap_free(&s);
		du_rmrf(dir);
		cr_skip_test("/dev/shm and /tmp are one file system here");
	}
	blq_dump_fs_config fc = {.directory = dir, .archive = arch, .logger = du_keeper};
	blq_dump_reader *rd = xdev_reader(&fc, other);

	/* A restorer that dies (no close, no release) once the commit failed. */
	child_view *cv = mmap(NULL, sizeof(*cv), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
	cr_assert(cv != MAP_FAILED);
	memset(cv, 0, sizeof(*cv));
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		blq *q = target();
		blq_restorer *r = restorer(rd, q);
		cv->ok = TU_WAIT_FOR(du_rstats(r).failures[BLQ_DUMP_FAIL_COMMIT] >= 1, 20000);
		cv->st = du_rstats(r);
		cv->items = atomic_load(&n_order);
		_exit(0); /* a crash: nothing is closed, released or freed */
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(cv->ok, "the commit never failed (read_errors %llu)",
		  (unsigned long long)cv->st.read_errors);
	cr_expect_eq(cv->items, 50);
	cr_expect_eq(cv->st.done, 50);
	cr_expect_eq(cv->st.dumps, 0, "a file was committed across file systems");
	cr_expect_eq(cv->st.failures[BLQ_DUMP_FAIL_COMMIT], 1);
	cr_expect_eq(cv->st.read_errors, 1);
	cr_expect_eq(du_count(dir, "*.bin"), 1, "the file left the directory");
	cr_expect_eq(du_count(other, "*"), 0, "something reached the other file system");
	blq_dump_reader_free(rd);

	/* A restart, archive still elsewhere: nothing restored again, the
	 * commit fails again, close gives the file back. */
	rd = xdev_reader(&fc, other);
	blq *q = target();
	blq_error err;
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .logger = du_keeper};
	blq_restorer *r = blq_restorer_new(&rc, &err);
	cr_assert_not_null(r, "%s", err.msg);
	cr_assert(TU_WAIT_FOR(du_rstats(r).failures[BLQ_DUMP_FAIL_COMMIT] >= 1, 20000));
	blq_restorer_close(r);
	struct blq_restorer_stats st = du_rstats(r);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	size_t again = atomic_load(&n_order);
	cr_expect_eq(st.records, 0, "records restored again: %llu", (unsigned long long)st.records);
	cr_expect_eq(again, 0, "items restored again after a crash: %zu", again);
	cr_expect_eq(st.dumps, 0);
	cr_expect_eq(st.released, 1);
	cr_expect_eq(du_count(dir, "*.bin"), 1);
	cr_expect(du_logged("Invalid cross-device link"), "the log does not say why: %s",
		  du_log_text);

	/* The archive back on this file system: archived whole, once. */
	cr_assert_eq(unlink(arch), 0);
	cr_assert_eq(mkdir(arch, 0755), 0);
	struct blq_restorer_stats fin = restore_all(&fc, 1);
	cr_expect_eq(fin.records, 0);
	cr_expect_eq(fin.failures[BLQ_DUMP_FAIL_COMMIT], 0);
	again = atomic_load(&n_order);
	cr_expect_eq(again, 0, "items restored again once archived: %zu", again);
	cr_expect_eq(du_count(dir, "*.bin"), 0);
	cr_expect_eq(du_count(dir, ".*.ckpt"), 0);
	expect_files(&s, arch);
	munmap(cv, sizeof(*cv));
	rmdir(other);
	snap_free(&s);
	du_rmrf(dir);
}
