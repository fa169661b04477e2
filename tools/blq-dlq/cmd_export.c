/*
 * blq-dlq export: selected records as JSON lines (blq_inspect_jsonl_put),
 * to stdout or a file, for moving a DLQ to another host (blq-dlq import
 * there) and for scripts. Read-only on the dump.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct export_ctx {
	FILE *f;
	char *buf;
	size_t cap;
	bool failed;
};

static int export_one(void *ctx, const blq_inspect_record *r)
{
	struct export_ctx *c = ctx;
	size_t n = blq_inspect_jsonl_put(r, c->buf, c->cap);
	if (n >= c->cap) {
		char *b = realloc(c->buf, n + 1);
		if (b == NULL) {
			c->failed = true;
			return cli_fail(CLI_RUNTIME, "export: out of memory");
		}
		c->buf = b;
		c->cap = n + 1;
		blq_inspect_jsonl_put(r, c->buf, c->cap);
	}
	if (fwrite(c->buf, 1, n, c->f) != n) {
		c->failed = true;
		return cli_fail(CLI_RUNTIME, "export: write: %s", strerror(errno));
	}
	return 0;
}

static int run(struct cli_opts *o)
{
	int code;
	blq_inspect *in = cli_open(o, o->args[0], true, &code);
	if (in == NULL)
		return code;
	struct export_ctx c = {stdout, NULL, 0, false};
	if (o->output != NULL && (c.f = fopen(o->output, "w")) == NULL) {
		blq_inspect_close(in);
		return cli_fail(CLI_RUNTIME, "export: %s: %s", o->output, strerror(errno));
	}
	uint64_t n;
	/* Records a restorer marked done were restored already: imported
	 * elsewhere they would run again. */
	o->skip_done = true;
	int rc = cli_select(in, o, NULL, true, export_one, &c, &n);
	blq_inspect_close(in);
	free(c.buf);
	if (fflush(c.f) != 0 && rc == 0)
		rc = cli_fail(CLI_RUNTIME, "export: write: %s", strerror(errno));
	if (c.f != stdout && fclose(c.f) != 0 && rc == 0)
		rc = cli_fail(CLI_RUNTIME, "export: %s: %s", o->output, strerror(errno));
	if (rc != 0)
		return rc;
	fprintf(stderr, "blq-dlq: exported %llu records\n", (unsigned long long)n);
	return n == 0 ? CLI_FOUND : CLI_OK;
}

const struct cli_cmd cli_export = {
	"export", run, "selected records as JSON lines (to stdout or a file)",
	"usage: blq-dlq export SOURCE [selection] [-o FILE]\n"
	"\n"
	"Writes each selected record as one line of JSON (docs/operating-a-dlq.md,\n"
	"\"JSON lines\": v, loc, version, restores, deliveries, time_ns, why,\n"
	"payload in base64), to stdout or FILE. Damage is left out. Read-only:\n"
	"move a DLQ with export here, import there, then purge here.\n"
	"\n"
	"  -o, --output FILE   write there instead of stdout\n"
	"Selection: --part, --loc, --reason, --since, --until, --limit, --newest\n"
	"(blq-dlq show --help). Source: --dead, --match, --quarantine, ...\n"
	"\n"
	"Exit: 0 exported, 1 nothing matched, 2 usage, 3 cannot open / write failed.\n",
	CLI_SOURCE_OPTS | CLI_SELECT_OPTS | CLI_BIT(O_OUTPUT), 1, 1,
};
