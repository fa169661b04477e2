/*
 * blq-dlq redrive: move records back where a running restorer picks them
 * up, at a chosen rate.
 *
 * Design
 * - Through the dump, not around it: records are appended to a dump
 *   (default: the source's own "dump" area; --to another) with their
 *   restore count and why, and the restorer consuming that dump feeds
 *   them to its queue at its own pace and under its own rules
 *   (max_restores, dead store). The tool never talks to a queue.
 * - At least once: each batch is appended (durable on return) and only
 *   then deleted from the source. A crash between the two leaves the
 *   batch in both places: a duplicate, never a loss. A record the delete
 *   cannot remove (held, gone, a damaged file's) stops the redrive with
 *   exit 3 and says so, rather than redriving it again on the next batch;
 *   a dry run of the delete before the append finds them, so such a batch
 *   is not written at all (only a restorer taking a file between the dry
 *   run and the delete leaves a duplicate).
 * - Pacing: small batches (rate/10, so ten a second; --batch to choose)
 *   against a schedule started with the first one: batch k is appended no
 *   earlier than start + k*batch/rate. Sleeping against the schedule, not
 *   after each batch, keeps the average rate exact whatever each batch
 *   costs.
 * - Each batch is a fresh scan of the source's first records: the ones
 *   before it were deleted, so no cursor goes stale. Record locations
 *   (--loc FILE#I@OFF) are moved in one batch: deleting some records of a
 *   file shifts the others' offsets.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	for (uint64_t n = now_ns(); n < t; n = now_ns()) {
		struct timespec ts = {(time_t)((t - n) / 1000000000ull), (long)((t - n) % 1000000000ull)};
		nanosleep(&ts, NULL);
	}
}

static bool names_records(const struct cli_opts *o)
{
	for (size_t i = 0; i < o->nlocs; i++)
		if (strchr(o->locs[i], '#') != NULL || strchr(o->locs[i], ':') != NULL)
			return true;
	return false;
}

/* Appends b's records to `to`, then deletes them from `from`. */
static int move_batch(blq_inspect *from, blq_inspect *to, struct cli_batch *b, uint64_t *moved)
{
	blq_inspect_item *items = malloc(b->n * sizeof(*items));
	const char **locs = cli_batch_locs(b);
	int rc = 0;
	if (items == NULL || locs == NULL) {
		rc = cli_fail(CLI_RUNTIME, "redrive: out of memory");
		goto out;
	}
	for (size_t i = 0; i < b->n; i++)
		items[i] = (blq_inspect_item){b->v[i].data, b->v[i].len, b->v[i].restores,
					      cli_why_empty(&b->v[i].why) ? NULL : &b->v[i].why};
	blq_error err = {0};
	blq_inspect_delete_stats st = {0};
	/* A dry run of the delete first: records it would not remove (a
	 * damaged file's are refused, a held file's skipped) must not be
	 * written, or every run would leave another copy of them. */
	if (blq_inspect_delete(from, locs, b->n, BLQ_INSPECT_DRY_RUN, NULL, NULL, &st, &err) != 0) {
		rc = cli_fail(CLI_RUNTIME, "redrive: %s (nothing of the batch was written)", err.msg);
		goto out;
	}
	if (st.records != b->n) {
		rc = cli_fail(CLI_RUNTIME, "redrive: %" PRIu64 " of %zu records selected could not be "
					   "deleted from the source (%" PRIu64 " held, %" PRIu64
					   " not found, %" PRIu64 " refused: a damaged file's records are "
					   "salvaged, not redriven), so nothing of it was written; stopping",
			      (uint64_t)b->n - st.records, b->n, st.held, st.not_found, st.refused);
		goto out;
	}
	if (blq_inspect_append(to, items, b->n, &err) != 0) {
		rc = cli_fail(CLI_RUNTIME, "redrive: writing: %s (the batch stays in the source)",
			      err.msg);
		goto out;
	}
	memset(&st, 0, sizeof(st));
	if (blq_inspect_delete(from, locs, b->n, 0, NULL, NULL, &st, &err) != 0) {
		rc = cli_fail(CLI_RUNTIME, "redrive: deleting from the source: %s (the batch "
					   "was written: expect duplicates of it)", err.msg);
		goto out;
	}
	*moved += st.records;
	if (st.records != b->n)
		rc = cli_fail(CLI_RUNTIME, "redrive: %" PRIu64 " of %zu records redriven could not "
					   "be deleted from the source (%" PRIu64 " held, %" PRIu64
					   " not found, %" PRIu64 " refused): they were written and "
					   "remain there; stopping",
			      (uint64_t)b->n - st.records, b->n, st.held, st.not_found, st.refused);
out:
	free(items);
	free(locs);
	return rc;
}

static int run(struct cli_opts *o)
{
	const char *from_area = o->from != NULL ? o->from : "dead";
	if (o->to == NULL && strncmp(from_area, "dump", 4) == 0)
		return cli_fail(CLI_USAGE, "redrive: --from %s into the same dump: give --to",
				from_area);
	if (o->part != NULL)
		return cli_fail(CLI_USAGE, "redrive: use --from for the source area or part");
	int code;
	blq_inspect *from = cli_open(o, o->args[0], true, &code), *to = from;
	if (from == NULL)
		return code;
	if (o->to != NULL && (to = cli_open(o, o->to, false, &code)) == NULL) {
		blq_inspect_close(from);
		return code;
	}
	size_t batch = o->batch;
	if (batch == 0)
		batch = o->rate > 0 ? (size_t)(o->rate / 10 > 1 ? o->rate / 10 : 1) : 500;
	if (batch > 10000)
		batch = 10000;
	bool one_batch = names_records(o);
	bool progress = isatty(STDERR_FILENO) && !o->json;
	struct cli_opts sel = *o;
	sel.part = from_area;
	/* Records a restorer marked done were restored: redriving them would
	 * restore them again. The delete drops them from their file anyway. */
	sel.skip_done = true;
	struct cli_batch b = {0};
	uint64_t moved = 0, batches = 0, start = now_ns();
	int rc = 0;
	for (;;) {
		uint64_t left = o->limit != 0 ? o->limit - moved : UINT64_MAX;
		if (left == 0)
			break;
		sel.limit = one_batch ? o->limit : (left < batch ? left : batch);
		uint64_t matched;
		cli_batch_clear(&b);
		rc = cli_select(from, &sel, from_area, true, cli_batch_add, &b, &matched);
		if (rc == 0 && b.nomem)
			rc = cli_fail(CLI_RUNTIME, "redrive: out of memory");
		if (rc != 0 || b.n == 0)
			break;
		if (o->rate > 0)
			sleep_until(start + (uint64_t)((double)moved * 1e9 / o->rate));
		rc = move_batch(from, to, &b, &moved);
		batches++;
		if (progress) {
			double s = (double)(now_ns() - start) / 1e9;
			fprintf(stderr, "\rredrive: %" PRIu64 " moved, %.1f/s ", moved,
				s > 0 ? (double)moved / s : 0.0);
		}
		if (rc != 0 || one_batch)
			break;
	}
	/* The last batch's slot ends moved/rate after the start: waiting it
	 * out makes the reported rate the one kept (12 records at 20/s took
	 * 0.5 s to the last batch's start, which read as 24/s). */
	if (o->rate > 0 && rc == 0 && moved > 0)
		sleep_until(start + (uint64_t)((double)moved * 1e9 / o->rate));
	double secs = (double)(now_ns() - start) / 1e9;
	if (progress && batches > 0)
		fputc('\n', stderr);
	cli_batch_clear(&b);
	free(b.v);
	if (to != from)
		blq_inspect_close(to);
	blq_inspect_close(from);
	const char *dest = o->to != NULL ? o->to : "dump";
	if (o->json) {
		printf("{\"moved\":%" PRIu64 ",\"batches\":%" PRIu64 ",\"from\":", moved, batches);
		cli_json_str(stdout, from_area);
		printf(",\"to\":");
		cli_json_str(stdout, dest);
		printf(",\"seconds\":%.3f,\"rate\":%.1f,\"ok\":%s}\n", secs,
		       secs > 0 ? (double)moved / secs : 0.0, rc == 0 ? "true" : "false");
	} else {
		printf("redrove %" PRIu64 " records from %s to %s in %.1f s (%.1f/s, %" PRIu64
		       " batches)\n",
		       moved, from_area, dest, secs, secs > 0 ? (double)moved / secs : 0.0, batches);
	}
	if (rc != 0)
		return rc;
	return moved == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_redrive = {
	"redrive", run, "move records back into a dump a running restorer consumes, at a rate",
	"usage: blq-dlq redrive SOURCE [--from AREA|PART] [--to DIR|redis://...]\n"
	"                      [--rate N] [--batch N] [filters] [--json]\n"
	"\n"
	"Moves the selected records of --from (default dead, the dead store) into\n"
	"the dump (default SOURCE's own; --to another dump), where the restorer\n"
	"consuming it feeds them to its queue. Each batch is written durably,\n"
	"then deleted from the source: at least once (a crash in between leaves a\n"
	"duplicate, never a loss). Progress on stderr when it is a terminal.\n"
	"\n"
	"  --from LOC       an area (dead, quarantine, dump with --to) or a file\n"
	"  --to TARGET      a directory or redis://HOST:PORT/KEY\n"
	"  --rate N         records per second, 0.001 to 1000000 (paced in batches\n"
	"                   of N/10)\n"
	"  --batch N        records per batch (default N/10 with --rate, else 500)\n"
	"  --json           the report as one JSON object\n"
	"Selection: --loc, --reason, --since, --until, --limit (in all), --newest\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version\n"
	"\n"
	"Exit: 0 moved, 1 nothing matched, 2 usage, 3 cannot open / write or\n"
	"delete failed (the message says what was moved).\n",
	CLI_SOURCE_OPTS | CLI_SELECT_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_TO) | CLI_BIT(O_FROM) |
		CLI_BIT(O_RATE) | CLI_BIT(O_BATCH),
	1, 1,
};
