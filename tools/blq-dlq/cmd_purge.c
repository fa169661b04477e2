/*
 * blq-dlq purge: delete records (all of an area, by default the dead
 * store, or those selected), through blq_inspect_delete: a file a
 * restorer holds is skipped and said so, never changed under it.
 *
 * Design: a dry run always comes first, because it is what the prompt
 * shows ("delete 42 records?") and what --dry-run prints; the real
 * delete then runs on the same locations. Without --yes the operator must
 * answer on a terminal: a purge in a pipe or a cron job without --yes is
 * refused rather than guessed at.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const action_names[] = {"delete", "rewrite", "held", "not found",
					   "refused"};

static void print_action(void *ctx, const blq_inspect_deletion *d)
{
	const struct cli_opts *o = ctx;
	if (o->json) {
		printf("{\"loc\":");
		cli_json_str(stdout, d->loc);
		printf(",\"action\":\"%s\",\"records\":%" PRIu64 ",\"kept\":%" PRIu64
		       ",\"dry_run\":%s,\"message\":",
		       action_names[d->action], d->records, d->kept, o->dry_run ? "true" : "false");
		cli_json_str(stdout, d->message);
		printf("}\n");
	} else {
		printf("%s\n", d->message); /* says "would" itself in a dry run */
	}
}

static bool selects_records(const struct cli_opts *o)
{
	return o->reasons != 0 || o->since_ns != 0 || o->until_ns != 0 || o->limit != 0 ||
	       o->newest;
}

static int run(struct cli_opts *o)
{
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	const char *area = o->part != NULL ? o->part : "dead";
	struct cli_batch b = {0};
	const char **locs = NULL;
	size_t n;
	int rc = 0;
	if (selects_records(o)) {
		/* Filters: the matching records, one location each. */
		uint64_t matched;
		rc = cli_select(in, o, area, true, cli_batch_add, &b, &matched);
		if (rc == 0 && b.nomem)
			rc = cli_fail(CLI_RUNTIME, "purge: out of memory");
		locs = cli_batch_locs(&b);
		n = b.n;
	} else {
		/* Whole parts or records as named. */
		locs = malloc((o->nlocs + 1) * sizeof(*locs));
		n = o->nlocs > 0 ? o->nlocs : 1;
		if (locs != NULL) {
			if (o->nlocs > 0)
				memcpy(locs, o->locs, o->nlocs * sizeof(*locs));
			else
				locs[0] = area;
		}
	}
	if (rc == 0 && locs == NULL)
		rc = cli_fail(CLI_RUNTIME, "purge: out of memory");
	blq_inspect_delete_stats st = {0};
	blq_error err = {0};
	if (rc == 0 && n > 0) {
		/* The dry run: printed with --dry-run, counted for the prompt. */
		struct cli_opts quiet = *o;
		quiet.dry_run = true;
		int d = blq_inspect_delete(in, locs, n, BLQ_INSPECT_DRY_RUN,
					   o->dry_run ? print_action : NULL, &quiet, &st, &err);
		if (d != 0)
			rc = cli_fail(d == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "purge: %s", err.msg);
	}
	if (rc == 0 && !o->dry_run && st.records > 0 && !o->yes) {
		if (!isatty(STDIN_FILENO)) {
			rc = cli_fail(CLI_USAGE, "purge: would delete %" PRIu64 " records; stdin is "
						 "not a terminal to confirm: pass --yes (or --dry-run "
						 "to see them)", st.records);
		} else {
			fprintf(stderr, "Delete %" PRIu64 " records (%" PRIu64 " files whole) from %s? "
					"[y/N] ", st.records, st.files, o->args[0]);
			char answer[16] = "";
			if (fgets(answer, sizeof(answer), stdin) == NULL ||
			    (answer[0] != 'y' && answer[0] != 'Y'))
				rc = cli_fail(CLI_USAGE, "purge: not confirmed; nothing deleted");
		}
	}
	if (rc == 0 && !o->dry_run && st.records > 0) {
		memset(&st, 0, sizeof(st));
		int d = blq_inspect_delete(in, locs, n, 0, print_action, o, &st, &err);
		if (d != 0)
			rc = cli_fail(CLI_RUNTIME, "purge: %s (what is listed above was done)", err.msg);
	}
	blq_inspect_close(in);
	free(locs);
	cli_batch_clear(&b);
	free(b.v);
	if (rc != 0)
		return rc;
	if (o->json)
		printf("{\"dry_run\":%s,\"records\":%" PRIu64 ",\"files\":%" PRIu64
		       ",\"rewritten\":%" PRIu64 ",\"held\":%" PRIu64 ",\"not_found\":%" PRIu64
		       ",\"refused\":%" PRIu64 "}\n",
		       o->dry_run ? "true" : "false", st.records, st.files, st.rewritten, st.held,
		       st.not_found, st.refused);
	else
		printf("%s %" PRIu64 " records (%" PRIu64 " files removed, %" PRIu64
		       " rewritten; skipped: %" PRIu64 " held, %" PRIu64 " not found, %" PRIu64
		       " refused)\n",
		       o->dry_run ? "would delete" : "deleted", st.records, st.files, st.rewritten,
		       st.held, st.not_found, st.refused);
	return st.records == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_purge = {
	"purge", run, "delete records (default: the whole dead store), with --dry-run",
	"usage: blq-dlq purge SOURCE [--part AREA|--loc LOC...] [filters] [--dry-run] [--yes]\n"
	"\n"
	"Deletes records: all of an area (--part; default dead, the dead store),\n"
	"the locations given (--loc: records, files, entries or areas), or the\n"
	"records of the area that match --reason/--since/--until/--limit. A file\n"
	"that loses some records is rewritten durably; one a restorer holds is\n"
	"skipped (held); some records of a damaged file are refused (purge it\n"
	"whole, or salvage it first). Stream entries are deleted (acked first\n"
	"when pending).\n"
	"\n"
	"  -n, --dry-run   print what would go; change nothing\n"
	"  -y, --yes       do not ask; without it purge asks on the terminal, and\n"
	"                  refuses (exit 2) when stdin is not a terminal\n"
	"  --json          one JSON object per action, then the totals\n"
	"Selection: --part, --loc, --reason, --since, --until, --limit, --newest\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version\n"
	"\n"
	"Exit: 0 deleted (or would), 1 nothing to delete, 2 usage or not\n"
	"confirmed, 3 cannot open / delete failed.\n",
	CLI_SOURCE_OPTS | CLI_SELECT_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_YES) | CLI_BIT(O_DRY_RUN),
	1, 1,
};
