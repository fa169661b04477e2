/*
 * blq-dlq redrive: move records back where a running restorer picks them
 * up, at a chosen rate. The work is blq_inspect_redrive's (the one redrive
 * blq-demo uses too: dry-run delete first, append, then delete; a damaged
 * file salvaged whole; the target's version and file names; restore
 * counts reset from the dead store); this file turns options into its
 * config and its result into a line and an exit code.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

static int progress(void *ctx, const blq_inspect_redrive_stats *st)
{
	(void)ctx;
	fprintf(stderr, "\rredrive: %" PRIu64 " moved, %.1f/s ", st->moved,
		st->elapsed_s > 0 ? (double)st->moved / st->elapsed_s : 0.0);
	return 0;
}

static int run(struct cli_opts *o)
{
	const char *from_area = o->from != NULL ? o->from : "dead";
	if (o->to == NULL && strncmp(from_area, "dump", 4) == 0)
		return cli_fail(CLI_USAGE, "redrive: --from %s into the same dump: give --to",
				from_area);
	if (o->part != NULL)
		return cli_fail(CLI_USAGE, "redrive: use --from for the source area or part");
	if (o->to == NULL && (o->to_match != NULL || o->to_version_set))
		return cli_fail(CLI_USAGE, "redrive: --to-match and --to-version describe --to: "
					   "give --to, or --match and --dump-version for SOURCE");
	int code;
	blq_inspect *from = cli_open(o, o->args[0], true, &code), *to = NULL;
	if (from == NULL)
		return code;
	if (o->to != NULL && (to = cli_open(o, o->to, false, &code)) == NULL) {
		blq_inspect_close(from);
		return code;
	}
	blq_inspect_filter f = {.newest_first = o->newest, .reasons = o->reasons,
				.since_ns = o->since_ns, .until_ns = o->until_ns,
				.limit = o->limit};
	bool tty = isatty(STDERR_FILENO) && !o->json;
	blq_inspect_redrive_config rc = {
		.to = to, .from = from_area, .locs = o->locs, .nlocs = o->nlocs, .filter = &f,
		.rate = o->rate, .batch = o->batch, .keep_restores = o->keep_restores,
		.progress = tty ? progress : NULL};
	blq_inspect_redrive_stats st = {0};
	blq_error err = {0};
	int e = blq_inspect_redrive(from, &rc, &st, &err);
	if (tty && st.batches > 0)
		fputc('\n', stderr);
	blq_inspect_close(to);
	blq_inspect_close(from);
	const char *dest = o->to != NULL ? o->to : "dump";
	double rate = st.elapsed_s > 0 ? (double)st.moved / st.elapsed_s : 0.0;
	if (o->json) {
		printf("{\"moved\":%" PRIu64 ",\"salvaged\":%" PRIu64 ",\"batches\":%" PRIu64
		       ",\"from\":",
		       st.moved, st.salvaged, st.batches);
		cli_json_str(stdout, from_area);
		printf(",\"to\":");
		cli_json_str(stdout, dest);
		printf(",\"version\":%" PRIu64 ",\"restores_reset\":%s,\"seconds\":%.3f,"
		       "\"rate\":%.1f,\"ok\":%s}\n",
		       st.version, st.reset_restores ? "true" : "false", st.elapsed_s, rate,
		       e == 0 ? "true" : "false");
	} else {
		printf("redrove %" PRIu64 " records from %s to %s in %.1f s (%.1f/s, %" PRIu64
		       " batches; version %" PRIu64 ", restore counts %s)\n",
		       st.moved, from_area, dest, st.elapsed_s, rate, st.batches, st.version,
		       st.reset_restores ? "reset to 0" : "kept");
		if (st.files_salvaged > 0)
			printf("  of them %" PRIu64 " intact records of %" PRIu64 " damaged files, "
			       "salvaged whole (the files deleted)\n",
			       st.salvaged, st.files_salvaged);
	}
	if (e != 0)
		return cli_fail(e == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "%s", err.msg);
	return st.moved == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_redrive = {
	"redrive", run, "move records back into a dump a running restorer consumes, at a rate",
	"usage: blq-dlq redrive SOURCE [--from AREA|PART] [--to DIR|redis://...]\n"
	"                      [--rate N] [--batch N] [--keep-restores] [filters] [--json]\n"
	"\n"
	"Moves the selected records of --from (default dead, the dead store) into\n"
	"the dump (default SOURCE's own; --to another dump), where the restorer\n"
	"consuming it feeds them to its queue. Each batch is written durably,\n"
	"then deleted from the source: at least once (a crash in between leaves a\n"
	"duplicate, never a loss). A batch that could not be deleted whole (a\n"
	"file a restorer holds) is not written, and the redrive stops. A damaged\n"
	"file is salvaged whole (its intact records moved, then it is deleted)\n"
	"unless a filter or --loc picks records of it (refused: salvage it).\n"
	"\n"
	"Records are written as the target dump's restorer reads them: its\n"
	"version (that of the files or entries there, else of SOURCE's dump or\n"
	"dead store) and its file names (made from its --match: 'KEY.*.bin'\n"
	"writes KEY.<time>--<n>.bin). From the dead store the restore count is\n"
	"reset to 0: kept, the restorer's max_restores sends them straight back.\n"
	"Progress on stderr when it is a terminal.\n"
	"\n"
	"  --from LOC       an area (dead, quarantine, dump with --to) or a file\n"
	"  --to TARGET      a directory or redis://HOST:PORT/KEY\n"
	"  --to-match GLOB  the --to directory's files (default *.bin)\n"
	"  --to-version N   the --to dump's version, when nothing in it says\n"
	"  --file-mask M    names of the files written (default from the match)\n"
	"  --keep-restores  keep each record's restore count (from dead)\n"
	"  --rate N         records per second, 0.001 to 1000000 (paced in batches\n"
	"                   of N/10)\n"
	"  --batch N        records per batch (default N/10 with --rate, else 500)\n"
	"  --json           the report as one JSON object\n"
	"Selection: --loc, --reason, --since, --until, --limit (in all), --newest\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version\n"
	"\n"
	"Exit: 0 moved, 1 nothing matched, 2 usage (also: the version cannot be\n"
	"known), 3 cannot open / write or delete failed (the message says what\n"
	"was moved).\n",
	CLI_SOURCE_OPTS | CLI_SELECT_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_TO) | CLI_BIT(O_FROM) |
		CLI_BIT(O_RATE) | CLI_BIT(O_BATCH) | CLI_BIT(O_TO_MATCH) | CLI_BIT(O_TO_VERSION) |
		CLI_BIT(O_KEEP_RESTORES),
	1, 1,
};
