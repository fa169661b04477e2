/*
 * blq-dlq show: records with their metadata and a look at their payload
 * (text, hex, or the text a --decoder command makes of it).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[] = {"ok", "DAMAGED", "GONE"};

struct show_ctx {
	const struct cli_opts *o;
	char *text; /* the decoder's output */
	size_t cap;
	bool failed;
};

/* The payload's text: the decoder's, else the preview. Malloc'd. */
static char *payload_text(struct show_ctx *c, const blq_inspect_record *r)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	if (m == NULL)
		return NULL;
	if (c->o->decoder != NULL) {
		size_t len;
		if (cli_decode(c->o->decoder, r->data, r->len, c->text, c->cap, &len) != 0) {
			c->failed = true;
			fclose(m);
			free(buf);
			return NULL;
		}
		size_t k = strlen(c->text);
		while (k > 0 && c->text[k - 1] == '\n') /* the decoder's last newline */
			c->text[--k] = '\0';
		cli_preview(m, c->text, k, c->o->full);
		if (len >= c->cap)
			fprintf(m, " ... decoder output cut at %zu bytes", c->cap - 1);
	} else {
		cli_preview(m, r->data, r->len, c->o->full);
	}
	fclose(m);
	return buf;
}

static int show_one(void *ctx, const blq_inspect_record *r)
{
	struct show_ctx *c = ctx;
	char *text = NULL;
	if (r->state == BLQ_INSPECT_OK && (text = payload_text(c, r)) == NULL)
		return c->failed ? CLI_RUNTIME : cli_fail(CLI_RUNTIME, "show: out of memory");
	if (c->o->json) {
		printf("{\"loc\":");
		cli_json_str(stdout, r->loc);
		printf(",\"state\":\"%s\",\"damage\":", r->state == BLQ_INSPECT_OK ? "ok"
						       : r->state == BLQ_INSPECT_DAMAGED ? "damaged"
											  : "gone");
		cli_json_str(stdout, r->damage);
		if (r->state == BLQ_INSPECT_DAMAGED)
			printf(",\"skipped\":%" PRIu64 ",\"spans\":%" PRIu64, r->skipped, r->spans);
		printf(",\"offset\":%" PRIu64 ",\"len\":%zu,\"size\":%zu,\"restores\":%u,"
		       "\"deliveries\":%u,\"version\":%" PRIu64 ",\"time_ns\":%" PRIu64
		       ",\"done\":%s,\"pending\":%s,\"consumer\":",
		       r->offset, r->len, r->size, (unsigned)r->restores, (unsigned)r->deliveries,
		       r->version, r->time_ns, r->done ? "true" : "false",
		       r->pending ? "true" : "false");
		cli_json_str(stdout, r->consumer);
		printf(",\"why\":");
		cli_json_why(stdout, &r->why);
		printf(",\"text\":");
		cli_json_str(stdout, text != NULL ? text : "");
		printf("}\n");
		free(text);
		return 0;
	}
	char when[48], size[32], why[BLQ_DLQ_QUEUE_MAX + 64];
	if (r->state != BLQ_INSPECT_OK) {
		printf("%s  %s", r->loc, state_names[r->state]);
		char more[96];
		if (r->state == BLQ_INSPECT_DAMAGED)
			printf(" at offset %" PRIu64 ": %s%s", r->offset, r->damage,
			       cli_skipped(r, more, sizeof(more)));
		printf("\n");
		return 0;
	}
	printf("%s  %s  restores %u  deliveries %u  %s", r->loc, cli_size(r->len, size, sizeof(size)),
	       (unsigned)r->restores, (unsigned)r->deliveries, cli_time(r->time_ns, when, sizeof(when)));
	if (cli_why(&r->why, why, sizeof(why))[0] != '\0')
		printf("  %s", why);
	if (r->done)
		printf("  done");
	if (r->pending)
		printf("  pending with %s", r->consumer);
	printf("\n    %s\n", text);
	free(text);
	return 0;
}

static int run(struct cli_opts *o)
{
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	struct show_ctx c = {o, NULL, 1 << 20, false};
	if (o->decoder != NULL && (c.text = malloc(c.cap)) == NULL) {
		blq_inspect_close(in);
		return cli_fail(CLI_RUNTIME, "show: out of memory");
	}
	uint64_t n;
	int rc = cli_select(in, o, NULL, false, show_one, &c, &n);
	blq_inspect_close(in);
	free(c.text);
	if (rc != 0)
		return rc;
	if (n == 0 && !o->json)
		fprintf(stderr, "blq-dlq: show: no record matched\n");
	return n == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_show = {
	"show", run, "records with metadata, why they were dead-lettered, and payload",
	"usage: blq-dlq show SOURCE [selection] [--full] [--decoder CMD] [--json]\n"
	"\n"
	"Prints each selected record: location, size, restore and delivery\n"
	"counts, time (local), why it was dead-lettered (reason, attempts, rc,\n"
	"queue) when known, done/pending state, then its payload: as text when\n"
	"printable, else hex; the first 64 bytes unless --full. Damage shows as\n"
	"DAMAGED with its offset. Read-only.\n"
	"\n"
	"Selection (default: every area):\n"
	"  --part LOC        an area (dump, quarantine, dead) or file (dead/NAME)\n"
	"  --loc LOC         a record (AREA/FILE#I@OFF, AREA:ID) or part; repeatable\n"
	"  --reason R[,R]    unknown, overflow-rear, overflow-front, failed,\n"
	"                    deadline, closed; repeatable\n"
	"  --since T, --until T   YYYY-MM-DD[THH:MM[:SS]] (local), @EPOCH, or Ns/Nm/Nh/Nd ago\n"
	"  --limit N         at most N records\n"
	"  --newest          newest first\n"
	"Output:\n"
	"  --full            the whole payload\n"
	"  --decoder CMD     run `sh -c CMD` per record, payload on stdin; show its\n"
	"                    stdout instead (must exit 0, else exit 3)\n"
	"  --json            one JSON object per record (\"text\": the shown payload)\n"
	"Source: --dead, --match, --quarantine, --dead-match, --dump-version (blq-dlq list --help)\n"
	"\n"
	"Exit: 0 shown, 1 nothing matched, 2 usage, 3 cannot open / decoder failed.\n",
	CLI_SOURCE_OPTS | CLI_SELECT_OPTS | CLI_BIT(O_JSON) | CLI_BIT(O_FULL) | CLI_BIT(O_DECODER),
	1, 1,
};
