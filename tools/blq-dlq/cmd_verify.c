/*
 * blq-dlq verify: read every record of every file and entry (or those
 * selected) and report each damage by file and offset; exit 1 on damage,
 * so a script or a monitor can act on it.
 */
#include "cli.h"

#include <inttypes.h>

static int report(void *ctx, const blq_inspect_record *r)
{
	const struct cli_opts *o = ctx;
	if (o->json) {
		printf("{\"loc\":");
		cli_json_str(stdout, r->loc);
		printf(",\"state\":\"%s\",\"offset\":%" PRIu64 ",\"damage\":",
		       r->state == BLQ_INSPECT_GONE	    ? "gone"
		       : r->state == BLQ_INSPECT_UNREADABLE ? "unreadable"
							    : "damaged",
		       r->offset);
		cli_json_str(stdout, r->damage);
		printf(",\"skipped\":%" PRIu64 ",\"spans\":%" PRIu64 "}\n", r->skipped, r->spans);
	} else if (r->state == BLQ_INSPECT_GONE) {
		printf("%s: gone while read (a restorer took it)\n", r->loc);
	} else if (r->state == BLQ_INSPECT_UNREADABLE) {
		printf("%s: UNREADABLE: %s\n", r->loc, r->damage);
	} else {
		char more[96];
		printf("%s: DAMAGED at offset %" PRIu64 ": %s%s\n", r->loc, r->offset, r->damage,
		       cli_skipped(r, more, sizeof(more)));
	}
	return 0;
}

/* ", N unreadable" when there are any: the usual line stays as it was. */
static const char *unreadable(uint64_t n, char *buf, size_t cap)
{
	if (n == 0)
		return "";
	snprintf(buf, cap, ", %" PRIu64 " unreadable", n);
	return buf;
}

static int run(struct cli_opts *o)
{
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	blq_inspect_filter f = {.part = o->part};
	blq_inspect_summary s = {0};
	blq_error err = {0};
	int rc = blq_inspect_verify(in, &f, &s, report, o, &err);
	blq_inspect_close(in);
	if (rc < 0)
		return cli_fail(rc == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "verify: %s", err.msg);
	char size[32], more[48];
	if (o->json)
		printf("{\"records\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"damaged\":%" PRIu64
		       ",\"gone\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"unreadable\":%" PRIu64
		       "}\n",
		       s.records, s.bytes, s.damaged, s.gone, s.skipped, s.unreadable);
	else if (s.skipped == 0)
		printf("%" PRIu64 " records (%s) good, %" PRIu64 " damaged, %" PRIu64 " gone%s\n",
		       s.records, cli_size(s.bytes, size, sizeof(size)), s.damaged, s.gone,
		       unreadable(s.unreadable, more, sizeof(more)));
	else
		printf("%" PRIu64 " records (%s) good, %" PRIu64 " damaged (%" PRIu64
		       " bytes skipped), %" PRIu64 " gone%s\n",
		       s.records, cli_size(s.bytes, size, sizeof(size)), s.damaged, s.skipped, s.gone,
		       unreadable(s.unreadable, more, sizeof(more)));
	return rc == 1 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_verify = {
	"verify", run, "check every record; report damage by file and offset",
	"usage: blq-dlq verify SOURCE [--part LOC] [--json]\n"
	"\n"
	"Reads every record of every file and stream entry (of one area or file\n"
	"with --part) and checks it (header, length, checksum); prints each\n"
	"damaged file or entry as LOCATION: DAMAGED at offset N: WHAT (its\n"
	"first damage; for a file also the damaged spans and the bytes skipped:\n"
	"records after a damaged span are read and counted), and a name that is\n"
	"no readable dump file (a directory, a symbolic link) as LOCATION:\n"
	"UNREADABLE: WHY, then the totals. Every version is read (a record\n"
	"carries its own).\n"
	"Read-only; safe beside a running restorer (a file it removes meanwhile\n"
	"is reported as gone). Salvage a damaged file with blq-dlq salvage.\n"
	"\n"
	"  --part LOC    dump, quarantine, dead, or one file (AREA/NAME)\n"
	"  --json        one JSON object per damage, then the totals\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version\n"
	"\n"
	"Exit: 0 no damage, 1 damage or an unreadable file found, 2 usage,\n"
	"3 cannot open.\n",
	CLI_SOURCE_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_PART), 1, 1,
};
