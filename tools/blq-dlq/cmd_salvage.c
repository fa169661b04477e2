/*
 * blq-dlq salvage: the good records of a (quarantined) damaged file into
 * a new dump file: by default into the dump's own directory, where its
 * restorer takes them; or into --into DIR. The damaged file stays.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

static int run(struct cli_opts *o)
{
	if (strncmp(o->args[0], "redis://", 8) == 0)
		return cli_fail(CLI_USAGE, "salvage: %s: salvage works on files (a stream's "
					   "damaged entries are in KEY:quarantine; see show)",
				o->args[0]);
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	uint64_t written = 0;
	blq_error err = {0};
	const char *dir = o->into != NULL ? o->into : o->args[0];
	int rc = blq_inspect_salvage(in, o->args[1], dir, NULL, &written, &err);
	blq_inspect_close(in);
	if (rc != 0)
		return cli_fail(rc == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "salvage: %s", err.msg);
	if (o->json) {
		printf("{\"part\":");
		cli_json_str(stdout, o->args[1]);
		printf(",\"written\":%" PRIu64 ",\"into\":", written);
		cli_json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("salvaged %" PRIu64 " good records of %s into %s\n", written, o->args[1], dir);
	}
	return written == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_salvage = {
	"salvage", run, "write a damaged file's good records into a new dump file",
	"usage: blq-dlq salvage DIR AREA/FILE [--into OUTDIR] [--json]\n"
	"\n"
	"Copies the good records of AREA/FILE (a quarantined file usually:\n"
	"quarantine/NAME) into a new dump file, written durably (temporary name,\n"
	"fsync, rename): into DIR itself, where the restorer consuming it takes\n"
	"them, or into OUTDIR (created when missing). The copy has the dump's\n"
	"version (its files' or dead store's, or --dump-version; else the\n"
	"file's own) and names made from --match (or --file-mask). The damaged\n"
	"file is left; delete it afterwards with blq-dlq purge DIR --loc\n"
	"AREA/FILE, or move it with blq-dlq redrive DIR --from AREA/FILE, which\n"
	"salvages it and deletes it in one step.\n"
	"\n"
	"  --into OUTDIR   write there instead of DIR\n"
	"  --json          {\"part\":...,\"written\":N,\"into\":...}\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version\n"
	"\n"
	"Exit: 0 written, 1 no good record in it, 2 usage (not a dump file, no\n"
	"such file, bad location), 3 cannot open / write failed.\n",
	CLI_SOURCE_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_INTO), 2, 2,
};
