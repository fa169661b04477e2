/*
 * restore_cut: a restorer working through dump files, across a power cut
 * (tests/powercut/restore_cut.sh runs it on lazyfs; docs/testing.md).
 *
 * restore_cut make DIR FILES PER [DEAD_EVERY [VERSION]]: writes ids
 * 0 .. FILES*PER-1 into DIR through the library (a dump with the fs
 * writer, one blq_dump_flush per file, so FILES files of PER records).
 * With DEAD_EVERY (0: none), every id divisible by it is written with a
 * restore count of MAX_RESTORES: the restorer sends those to its dead
 * store. VERSION (default 1) is the dump's version; the restorers here
 * read 1, so another one is quarantined unread.
 *
 * restore_cut drain DIR LOG [DEAD DEADLOG]: a restorer as `run`'s until
 * DIR holds no dump file, then closed: how dlq_cut.sh makes a real dead
 * store and a real quarantine for blq-dlq to work on.
 *
 * restore_cut run DIR LOG [DEAD DEADLOG]: a restorer (the fs reader on
 * DIR, checkpoints and all) feeds a queue whose two workers append
 * "p ID DELIVERIES" to LOG for each item, fdatasync'd, before the item's
 * outcome; max_in_flight is IN_FLIGHT, so the documented bound on
 * duplicates is small enough to see. With DEAD, its dead store is an fs
 * writer on DEAD, wrapped so that each batch the writer acknowledged
 * (returned 0) appends "d ID" per record to DEADLOG, fdatasync'd. Runs
 * until killed.
 *
 * restore_cut check DIR LOG N [DEAD DEADLOG DEAD_EVERY]: after the cut.
 * First the dead store as the cut left it: every id DEADLOG says was
 * acknowledged must be in it. Then a restorer as above (LOG gets a
 * "restart" line) runs until DIR holds no dump file. Then, per id:
 *   - every id not meant for the dead store was processed at least once
 *     (none lost), none of those meant for it was;
 *   - ids processed more than once: at most IN_FLIGHT in all, the bound
 *     docs/dumping-and-restoring.md states for a killed restorer, and
 *     each second delivery came with deliveries > 0 (the claim counted);
 *   - every dead id is in the dead store, at most IN_FLIGHT twice;
 *   - nothing damaged, foreign or quarantined, no dump file left.
 * Exits 0, or 1 with the reasons on stderr.
 */
#include "pc_util.h"

#define IN_FLIGHT 32
#define MAX_RESTORES 3

static int g_log = -1;

static int recorder(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	const blq_bytes *b = payload;
	uint64_t id = pc_rec_id(b->data, b->len);
	pc_log(g_log, "p %lld %u\n", id == UINT64_MAX ? -1LL : (long long)id, b->deliveries);
	free(payload);
	return 0;
}

/* The dead store: an fs writer, and a line per record it acknowledged. */
typedef struct dead_writer {
	blq_dump_writer w; /* first */
	blq_dump_writer *fs;
	int log;
} dead_writer;

static int dead_write(blq_dump_writer *w, const blq_dump_batch *b, size_t *done, blq_error *err)
{
	dead_writer *dw = (dead_writer *)w;
	int rc = dw->fs->write(dw->fs, b, done, err);
	if (rc != 0)
		return rc;
	size_t off = 0;
	blq_dump_record rec;
	while (blq__dump_rec_parse(b->data, b->len, b->format ? b->format : 1, &off, &rec) ==
	       BLQ__DUMP_OK) {
		uint64_t id = pc_rec_id(rec.data, rec.len);
		pc_log(dw->log, "d %lld\n", id == UINT64_MAX ? -1LL : (long long)id);
	}
	return 0;
}

static int make(const char *dir, unsigned files, unsigned per, unsigned dead_every,
		uint64_t version)
{
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = version};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	blq_dump_config dc = {.name = "make", .version = version, .capacity = 1 << 20,
			      .flush_interval_ns = 60000000000ull, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = w ? blq_dump_new(&dc, &err) : NULL;
	if (d == NULL) {
		fprintf(stderr, "restore_cut make: %s\n", err.msg);
		return 2;
	}
	uint64_t id = 0;
	for (unsigned f = 0; f < files; f++) {
		for (unsigned i = 0; i < per; i++, id++) {
			bool dead = dead_every > 0 && id % dead_every == 0;
			if (blq_dump_enqueue(d, pc_item(id, dead ? MAX_RESTORES : 0)) != 0)
				return 2;
		}
		int rc = blq_dump_flush(d);
		if (rc != 0) {
			fprintf(stderr, "restore_cut make: flush: %s\n", blq_strerror(rc));
			return 2;
		}
	}
	blq_dump_close(d);
	blq_dump_free(d);
	blq_dump_writer_free(w);
	return 0;
}

typedef struct rig {
	blq_dump_reader *rd;
	blq *q;
	blq_dump_writer *fs;
	dead_writer dead;
	blq_restorer *r;
} rig;

static int rig_start(rig *g, const char *dir, const char *log, const char *dead,
		     const char *deadlog)
{
	blq_error err;
	memset(g, 0, sizeof(*g));
	g_log = pc_log_open(log);
	blq_dump_fs_config fc = {.directory = dir, .version = 1,
				 .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	g->rd = blq_dump_fs_reader_new(&fc, &err);
	blq_config qc = {.name = "target", .capacity = 64, .workers = 2, .worker = recorder,
			 .item_free = free};
	g->q = g->rd ? blq_new(&qc, &err) : NULL;
	blq_restorer_config rc = {.reader = g->rd, .decoder = blq_dump_bytes_decoder(),
				  .target = g->q, .item_free = free, .max_in_flight = IN_FLIGHT,
				  .check_interval_ns = 2000000, .postpone_interval_ns = 500000,
				  .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	if (g->q != NULL && dead != NULL) {
		blq_dump_fs_config dfc = {.directory = dead, .version = 1};
		if ((g->fs = blq_dump_fs_writer_new(&dfc, &err)) == NULL) {
			fprintf(stderr, "restore_cut: dead store: %s\n", err.msg);
			return 2;
		}
		g->dead = (dead_writer){{dead_write, NULL}, g->fs, pc_log_open(deadlog)};
		rc.dead = &g->dead.w;
		rc.max_restores = MAX_RESTORES;
	}
	g->r = g->q ? blq_restorer_new(&rc, &err) : NULL;
	if (g->r == NULL) {
		fprintf(stderr, "restore_cut: %s\n", err.msg);
		return 2;
	}
	return 0;
}

/* Waits until dir holds no dump file (every record's outcome reached
 * and its file committed), up to 20 s. Polls every 5 ms, not
 * TU_WAIT_FOR's 200 us: each poll is a directory listing that
 * single-threaded lazyfs serves between the restorer's own requests. */
static bool wait_drained(const char *dir)
{
	for (int i = 0; i < 4000; i++) {
		if (du_count(dir, "*.bin") == 0)
			return true;
		tu_sleep_us(5000);
	}
	return du_count(dir, "*.bin") == 0;
}

static int run(const char *dir, const char *log, const char *dead, const char *deadlog)
{
	rig g;
	if (rig_start(&g, dir, log, dead, deadlog) != 0)
		return 2;
	alarm(60); /* never outlive a broken script */
	for (;;)
		pause();
}

static int drain(const char *dir, const char *log, const char *dead, const char *deadlog)
{
	rig g;
	if (rig_start(&g, dir, log, dead, deadlog) != 0)
		return 2;
	bool ok = wait_drained(dir);
	blq_restorer_close(g.r);
	blq_close(g.q);
	blq_restorer_free(g.r);
	blq_free(g.q);
	blq_dump_reader_free(g.rd);
	blq_dump_writer_free(g.fs);
	if (!ok)
		fprintf(stderr, "restore_cut drain: dump files left\n");
	return ok ? 0 : 1;
}

/* The lines of LOG: processed counts per id, before and after "restart",
 * and deliveries > 0 seen after it. */
typedef struct tally {
	unsigned *before, *after, *redelivered;
	uint64_t foreign;
} tally;

static void read_log(const char *path, uint64_t n, tally *t)
{
	FILE *f = fopen(path, "r");
	char what[16];
	long long id;
	unsigned deliv;
	bool after = false;

	t->foreign = 0;
	t->before = calloc(n, sizeof(unsigned));
	t->after = calloc(n, sizeof(unsigned));
	t->redelivered = calloc(n, sizeof(unsigned));
	while (f && fscanf(f, "%15s", what) == 1) {
		if (strcmp(what, "restart") == 0) {
			after = true;
			continue;
		}
		if (strcmp(what, "p") != 0 || fscanf(f, "%lld %u", &id, &deliv) != 2)
			break;
		if (id < 0 || (uint64_t)id >= n) {
			t->foreign++;
			continue;
		}
		(after ? t->after : t->before)[id]++;
		if (after && deliv > 0)
			t->redelivered[id]++;
	}
	if (f)
		fclose(f);
}

static int check(const char *dir, const char *log, uint64_t n, const char *dead,
		 const char *deadlog, unsigned dead_every)
{
	uint64_t foreign = 0;
	unsigned *dead_now = calloc(n, sizeof(unsigned));
	/* What the cut left of the dead store, before anything writes to it. */
	if (dead != NULL) {
		du_check(pc_count_dir(dead, "*.bin", dead_now, n, &foreign) == 0,
			 "a dead-store file does not parse whole after the cut");
		FILE *f = fopen(deadlog, "r");
		long long id;
		uint64_t acked = 0, missing = 0, first = 0;
		while (f && fscanf(f, "d %lld\n", &id) == 1) {
			acked++;
			if (id < 0 || (uint64_t)id >= n || dead_now[id] == 0)
				if (missing++ == 0)
					first = (uint64_t)id;
		}
		if (f)
			fclose(f);
		du_check(missing == 0,
			 "%llu of the %llu dead records acknowledged before the cut are not in the "
			 "dead store after it (the first: %lld)",
			 (unsigned long long)missing, (unsigned long long)acked, (long long)first);
		printf("dead store after the cut: %llu acknowledged before it, all there; ",
		       (unsigned long long)acked);
	}
	int fd = pc_log_open(log);
	pc_log(fd, "restart\n");
	close(fd);
	rig g;
	if (rig_start(&g, dir, log, dead, deadlog) != 0)
		return 1;
	du_check(wait_drained(dir), "dump files left unrestored");
	blq_restorer_close(g.r);
	blq_close(g.q);
	struct blq_restorer_stats rs;
	blq_restorer_stats(g.r, &rs);
	du_check(rs.quarantined == 0 && du_count(dir, "quarantine/*") == 0,
		 "%llu files quarantined", (unsigned long long)rs.quarantined);

	tally t;
	read_log(log, n, &t);
	uint64_t lost = 0, first_lost = 0, twice = 0, twice_blind = 0, first_blind = 0,
		 wrong = 0, processed_before = 0, dead_missing = 0, dead_twice = 0;
	unsigned *dead_end = calloc(n, sizeof(unsigned));
	if (dead != NULL)
		du_check(pc_count_dir(dead, "*.bin", dead_end, n, &foreign) == 0,
			 "a dead-store file does not parse whole");
	for (uint64_t i = 0; i < n; i++) {
		unsigned k = t.before[i] + t.after[i];
		bool is_dead = dead != NULL && dead_every > 0 && i % dead_every == 0;
		processed_before += t.before[i] > 0;
		if (is_dead) {
			wrong += k > 0;
			dead_missing += dead_end[i] == 0;
			dead_twice += dead_end[i] > 1;
			continue;
		}
		if (k == 0 && lost++ == 0)
			first_lost = i;
		twice += k > 1;
		/* processed before the cut and again after: its file was
		 * claimed before, so the second delivery must say so */
		if (t.before[i] > 0 && t.after[i] > 0 && t.redelivered[i] == 0 &&
		    twice_blind++ == 0)
			first_blind = i;
	}
	du_check(lost == 0, "%llu ids were never processed (the first: %llu)",
		 (unsigned long long)lost, (unsigned long long)first_lost);
	du_check(twice <= IN_FLIGHT,
		 "%llu ids processed twice or more: above max_in_flight (%d), the documented bound",
		 (unsigned long long)twice, IN_FLIGHT);
	du_check(twice_blind == 0,
		 "%llu ids came again after the cut with deliveries 0 (the first: %llu)",
		 (unsigned long long)twice_blind, (unsigned long long)first_blind);
	du_check(t.foreign == 0 && foreign == 0, "%llu foreign or damaged records",
		 (unsigned long long)(t.foreign + foreign));
	du_check(wrong == 0, "%llu ids meant for the dead store were processed",
		 (unsigned long long)wrong);
	du_check(dead_missing == 0, "%llu dead ids are not in the dead store",
		 (unsigned long long)dead_missing);
	du_check(dead_twice <= IN_FLIGHT, "%llu dead ids twice in the dead store: above %d",
		 (unsigned long long)dead_twice, IN_FLIGHT);
	printf("%llu ids, %llu processed before the cut, %llu twice (bound %d), "
	       "%llu dead twice, %llu restored after it\n",
	       (unsigned long long)n, (unsigned long long)processed_before,
	       (unsigned long long)twice, IN_FLIGHT, (unsigned long long)dead_twice,
	       (unsigned long long)rs.restored);
	blq_restorer_free(g.r);
	blq_free(g.q);
	blq_dump_reader_free(g.rd);
	blq_dump_writer_free(g.fs);
	free(t.before);
	free(t.after);
	free(t.redelivered);
	free(dead_now);
	free(dead_end);
	return du_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	du_prog = "restore_cut";
	if (argc >= 5 && argc <= 7 && strcmp(argv[1], "make") == 0)
		return make(argv[2], (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]),
			    argc >= 6 ? (unsigned)atoi(argv[5]) : 0,
			    argc == 7 ? strtoull(argv[6], NULL, 10) : 1);
	if ((argc == 4 || argc == 6) && strcmp(argv[1], "drain") == 0)
		return drain(argv[2], argv[3], argc == 6 ? argv[4] : NULL,
			     argc == 6 ? argv[5] : NULL);
	if ((argc == 4 || argc == 6) && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], argc == 6 ? argv[4] : NULL, argc == 6 ? argv[5] : NULL);
	if ((argc == 5 || argc == 8) && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3], strtoull(argv[4], NULL, 10),
			     argc == 8 ? argv[5] : NULL, argc == 8 ? argv[6] : NULL,
			     argc == 8 ? (unsigned)atoi(argv[7]) : 0);
	fprintf(stderr, "usage: restore_cut make DIR FILES PER [DEAD_EVERY [VERSION]] | "
			"run|drain DIR LOG [DEAD DEADLOG] | check DIR LOG N [DEAD DEADLOG DEAD_EVERY]\n");
	return 2;
}
