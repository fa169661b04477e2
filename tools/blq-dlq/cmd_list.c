/*
 * blq-dlq list: the parts of a dump (its files or its stream, the
 * quarantine, the dead store) with their counts, sizes and times; for a
 * stream, its consumer group and what each consumer holds.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

struct list_ctx {
	const struct cli_opts *o;
	uint64_t parts;
	uint64_t bad; /* parts damaged or unreadable: the exit code says so */
};

static int list_part(void *ctx, const blq_inspect_part *p)
{
	struct list_ctx *c = ctx;
	c->parts++;
	c->bad += p->damaged > 0 || p->unreadable != NULL;
	if (c->o->json) {
		printf("{\"loc\":");
		cli_json_str(stdout, p->loc);
		printf(",\"area\":\"%s\",\"stream\":%s,\"name\":", blq_inspect_area_name(p->area),
		       p->stream ? "true" : "false");
		cli_json_str(stdout, p->name);
		printf(",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"done\":%" PRIu64
		       ",\"damaged\":%" PRIu64 ",\"oldest_ns\":%" PRIu64 ",\"newest_ns\":%" PRIu64
		       ",\"held\":%s,\"format\":%u,\"version\":%" PRIu64 ",\"other_version\":%s"
		       ",\"unreadable\":",
		       p->records, p->bytes, p->done, p->damaged, p->oldest_ns, p->newest_ns,
		       p->held ? "true" : "false", p->format, p->version,
		       p->other_version ? "true" : "false");
		if (p->unreadable != NULL)
			cli_json_str(stdout, p->unreadable);
		else
			printf("null");
		if (p->stream && p->area == BLQ_INSPECT_DUMP) {
			printf(",\"group_exists\":%s,\"pending\":%" PRIu64 ",\"consumers\":[",
			       p->group_exists ? "true" : "false", p->pending);
			for (size_t i = 0; i < p->nconsumers; i++) {
				printf("%s{\"name\":", i > 0 ? "," : "");
				cli_json_str(stdout, p->consumers[i].name);
				printf(",\"pending\":%" PRIu64 "}", p->consumers[i].pending);
			}
			printf("]");
		}
		printf("}\n");
		return 0;
	}
	char size[32], oldest[48], newest[48], note[256] = "";
	if (p->held)
		snprintf(note, sizeof(note), "held by a restorer");
	if (p->damaged > 0)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "%sdamaged",
			 note[0] != '\0' ? ", " : "");
	if (p->unreadable != NULL)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "%sunreadable: %s",
			 note[0] != '\0' ? ", " : "", p->unreadable);
	if (p->other_version)
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "%sversion %" PRIu64 ", not %" PRIu64 " (its restorer quarantines it)",
			 note[0] != '\0' ? ", " : "", p->version, c->o->version);
	if (p->stream && p->area == BLQ_INSPECT_DUMP)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "%sgroup %s, %" PRIu64
			 " pending", note[0] != '\0' ? ", " : "",
			 p->group_exists ? "ok" : "missing", p->pending);
	printf("%-40s %8" PRIu64 " %10s %6" PRIu64 " %6" PRIu64 "  %-29s %-29s %s\n", p->loc,
	       p->records, cli_size(p->bytes, size, sizeof(size)), p->done, p->damaged,
	       cli_time(p->oldest_ns, oldest, sizeof(oldest)),
	       cli_time(p->newest_ns, newest, sizeof(newest)), note);
	for (size_t i = 0; i < p->nconsumers; i++)
		printf("  consumer %-30s %8" PRIu64 " pending\n", p->consumers[i].name,
		       p->consumers[i].pending);
	return 0;
}

static int run(struct cli_opts *o)
{
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	if (!o->json)
		printf("%-40s %8s %10s %6s %6s  %-29s %-29s %s\n", "LOCATION", "RECORDS", "BYTES",
		       "DONE", "DAMAGE", "OLDEST", "NEWEST", "NOTE");
	struct list_ctx c = {o, 0, 0};
	blq_error err = {0};
	int rc = blq_inspect_list(in, list_part, &c, &err);
	blq_inspect_close(in);
	if (rc != 0)
		return cli_fail(CLI_RUNTIME, "list %s: %s", o->args[0], err.msg);
	return c.bad > 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_list = {
	"list", run, "the dump's files or stream, quarantine and dead store, with counts",
	"usage: blq-dlq list SOURCE [--dead DIR|redis://...] [--json]\n"
	"\n"
	"Lists the parts of the dump at SOURCE (a directory, or\n"
	"redis://HOST:PORT/KEY[?group=G]): each file (or the stream), then the\n"
	"quarantine, then the dead store, with records, bytes, records marked\n"
	"done, damage, oldest and newest record time; for a stream, its consumer\n"
	"group and the entries each consumer holds (pending). Read-only.\n"
	"\n"
	"  --dead DIR|redis://H:P/KEY  the restorer's dead store\n"
	"  --match GLOB                the dump's files (default *.bin)\n"
	"  --quarantine DIR            default SOURCE/quarantine\n"
	"  --dead-match GLOB           the dead store's files (default *.bin)\n"
	"  --dump-version N            the dump's version, if you know it: parts of\n"
	"                              another are noted (its restorer quarantines\n"
	"                              them); every version is read either way\n"
	"  --file-mask MASK            names of files written (not used by list)\n"
	"  --json                      one JSON object per part\n"
	"\n"
	"Exit: 0 listed, 1 listed, with a part damaged or unreadable, 2 usage,\n"
	"3 the dump cannot be opened.\n",
	CLI_SOURCE_OPTS | CLI_BIT(O_JSON), 1, 1,
};
