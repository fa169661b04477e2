/*
 * dump_cut: a queue leaking into an fs dump, across a power cut
 * (tests/powercut/dump_cut.sh runs it on lazyfs; docs/testing.md).
 *
 * dump_cut produce DIR LOG SEED: a leaky queue (capacity 4, its one worker
 * parked for good) whose DLQ is a dump with the fs writer on DIR. Once the
 * queue is full of fillers, it leaks ids 0, 1, 2, ... in seeded batches of
 * 1 to 40; before a batch it appends "next N" (the batch's last id) to LOG,
 * and "held N" for an id the queue admitted instead of leaking (its worker
 * took items ahead, making room),
 * after it calls blq_dump_flush or blq_dlq_sync (seeded, by turns) and
 * when that returns 0 appends "ack N" (the highest id acknowledged) and
 * fsyncs LOG. LOG lies outside the mount: it survives the cut. Runs until
 * killed.
 *
 * dump_cut check DIR LOG: after the cut, a restorer (fs reader on DIR)
 * feeds the dump into a queue that records each id: every id up to the
 * last "ack" must come back (at least once: a batch written but not yet
 * acknowledged may come twice), nothing damaged (payloads as produced),
 * nothing foreign (no id past the last "next", no held id), nothing quarantined, no
 * dump file left. Exits 0, or 1 with the reasons on stderr.
 */
#include "../dump_util.h"

#define FILLER (UINT64_C(1) << 40)

static uint64_t g_foreign, g_damaged, g_fillers;
static unsigned char *g_held; /* ids the source queue admitted, not leaked */

static int parked(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)payload, (void)t;
	for (;;)
		pause(); /* holds its item until the process is killed */
	return 0;
}

static void put_log(int fd, const char *what, uint64_t id, int sync)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%s %llu\n", what, (unsigned long long)id);
	if (write(fd, line, (size_t)n) != n || (sync && fsync(fd) != 0)) {
		perror("dump_cut: log");
		_exit(2);
	}
}

static size_t item_size(uint64_t id)
{
	return 8 + (size_t)(id * 7 % 57);
}

static int produce(const char *dir, const char *logpath, unsigned seed)
{
	int log = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log < 0) {
		perror(logpath);
		return 2;
	}
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = 1};
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	blq_dump_config dc = {.name = "cut", .version = 1, .capacity = 1024,
			      .flush_interval_ns = 2000000, .encoder = blq_dump_bytes_encoder(),
			      .item_free = free, .writer = w};
	blq_dump *d = w ? blq_dump_new(&dc, &err) : NULL;
	blq_config qc = {.name = "source", .capacity = 4, .workers = 1, .worker = parked,
			 .item_free = free};
	if (d)
		qc.dlq = blq_dump_enqueuer(d);
	blq *q = d ? blq_new(&qc, &err) : NULL;
	if (q == NULL) {
		fprintf(stderr, "dump_cut produce: %s\n", err.msg);
		return 2;
	}
	alarm(60); /* never outlive a broken script */
	struct blq_stats st;
	/* Fill the queue (and its parked worker) until the first leak. */
	for (uint64_t k = 0;; k++) {
		if (blq_enqueue(q, du_item(FILLER | k, 8)) != 0)
			return 2;
		blq_stats(q, &st);
		if (st.leaked > 0)
			break;
		if (k > 1000) {
			fprintf(stderr, "dump_cut produce: the queue never leaked\n");
			return 2;
		}
	}
	uint64_t leaked = st.leaked;
	for (uint64_t id = 0; id < 100000000;) {
		uint64_t n = 1 + (uint64_t)(rand_r(&seed) % 40);
		put_log(log, "next", id + n - 1, 0);
		for (uint64_t i = 0; i < n; i++, id++) {
			if (blq_enqueue(q, du_item(id, item_size(id))) != 0) {
				fprintf(stderr, "dump_cut produce: enqueue %llu refused\n",
					(unsigned long long)id);
				return 2;
			}
			blq_stats(q, &st);
			/* A leak is counted before blq_enqueue returns. The parked
			 * worker may take items ahead, making room: an id admitted
			 * stays in this process's memory and must not come back. */
			if (st.leaked == leaked)
				put_log(log, "held", id, 0);
			leaked = st.leaked;
		}
		int rc = rand_r(&seed) % 2 ? blq_dump_flush(d) : blq_dlq_sync(q);
		if (rc == 0)
			put_log(log, "ack", id - 1, 1);
		else
			fprintf(stderr, "dump_cut produce: sync: %s\n", blq_strerror(rc));
	}
	for (;;)
		pause();
}

static int recorder(void *ctx, void *payload, blq_task *t)
{
	(void)ctx, (void)t;
	const blq_bytes *b = payload;
	uint64_t id = du_id(payload);
	if (id & FILLER) {
		g_fillers++; /* only the worker thread touches these */
	} else if (id >= du_n || g_held[id]) {
		g_foreign++;
	} else {
		blq_bytes *want = du_item(id, item_size(id));
		if (b->len != want->len || memcmp(b->data, want->data, b->len) != 0)
			g_damaged++;
		else
			atomic_fetch_add(&du_seen[id], 1);
		free(want);
	}
	free(payload);
	return 0;
}

static int check(const char *dir, const char *logpath)
{
	FILE *f = fopen(logpath, "r");
	long long acked = -1, next = -1, v;
	char what[8];
	uint64_t nheld = 0, *held = NULL;
	while (f && fscanf(f, "%7s %lld", what, &v) == 2) {
		if (strcmp(what, "ack") == 0) {
			acked = v;
		} else if (strcmp(what, "held") == 0) {
			held = realloc(held, (nheld + 1) * sizeof *held);
			held[nheld++] = (uint64_t)v;
		} else if (v > next) {
			next = v;
		}
	}
	if (f)
		fclose(f);
	du_n = (uint64_t)(next + 1);
	du_seen = calloc(du_n + 1, sizeof *du_seen);
	g_held = calloc(du_n + 1, 1);
	for (uint64_t i = 0; i < nheld; i++)
		if (held[i] < du_n)
			g_held[held[i]] = 1;
	free(held);
	blq_error err;
	blq_dump_fs_config fc = {.directory = dir, .version = 1,
				 .logger = blq_stderr_logger(BLQ_LOG_WARN)};
	blq_dump_reader *rd = blq_dump_fs_reader_new(&fc, &err);
	blq_config qc = {.name = "after", .capacity = 256, .workers = 1, .worker = recorder,
			 .item_free = free};
	blq *q = rd ? blq_new(&qc, &err) : NULL;
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free,
				  .check_interval_ns = 2000000, .postpone_interval_ns = 500000};
	blq_restorer *r = q ? blq_restorer_new(&rc, &err) : NULL;
	if (r == NULL) {
		if (acked < 0 && rd == NULL) {
			/* nothing acknowledged, and the directory did not survive */
			printf("dump_cut check: nothing acknowledged, no dump (%s)\n", err.msg);
			return 0;
		}
		fprintf(stderr, "dump_cut check: %s\n", err.msg);
		return 1;
	}
	du_check(TU_WAIT_FOR(du_count(dir, "*.bin") == 0, 20000), "dump files left unrestored");
	blq_restorer_close(r);
	blq_close(q);
	struct blq_restorer_stats rs;
	blq_restorer_stats(r, &rs);
	uint64_t missing = 0, first_missing = 0, dup = 0, back = 0, nh = 0;
	for (uint64_t i = 0; i < du_n; i++) {
		unsigned k = atomic_load(&du_seen[i]);
		if ((long long)i <= acked && !g_held[i] && k == 0 && missing++ == 0)
			first_missing = i;
		dup += k > 1;
		back += k > 0;
		nh += g_held[i];
	}
	du_check(missing == 0, "%llu acknowledged ids did not come back (the first: %llu; acked up to %lld)",
		 (unsigned long long)missing, (unsigned long long)first_missing, acked);
	du_check(g_foreign == 0, "%llu foreign ids came back", (unsigned long long)g_foreign);
	du_check(g_damaged == 0, "%llu damaged payloads came back", (unsigned long long)g_damaged);
	du_check(rs.quarantined == 0 && du_count(dir, "quarantine/*") == 0,
		 "%llu files quarantined", (unsigned long long)rs.quarantined);
	printf("dump_cut check: acked up to %lld, produced up to %lld (%llu held), %llu ids back "
	       "(%llu twice), %llu fillers, %llu records restored\n",
	       acked, next, (unsigned long long)nh, (unsigned long long)back, (unsigned long long)dup,
	       (unsigned long long)g_fillers, (unsigned long long)rs.restored);
	blq_restorer_free(r);
	blq_free(q);
	blq_dump_reader_free(rd);
	free(du_seen);
	free(g_held);
	return du_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	du_prog = "dump_cut";
	if (argc == 5 && strcmp(argv[1], "produce") == 0)
		return produce(argv[2], argv[3], (unsigned)strtoul(argv[4], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3]);
	fprintf(stderr, "usage: dump_cut produce DIR LOG SEED | dump_cut check DIR LOG\n");
	return 2;
}
