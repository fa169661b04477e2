/*
 * blq-dlq import: JSON lines (blq-dlq export's) into a dump, through its
 * writer (blq_inspect_append), so a restorer consuming it takes them.
 * Every line is read and checked before anything is written: a bad line
 * (named by line and column) changes nothing.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Items per append: one dump file each (or a pipeline of entries). */
#define IMPORT_BATCH 1000

/* The version written: TARGET's (given, or what its files, entries or
 * dead store say), else the lines' own when they all agree (an export of
 * the same dump); refused when nothing says which. */
static int pick_version(blq_inspect *in, const struct cli_opts *o, const blq_inspect_jsonl *v,
			size_t n)
{
	uint64_t ver;
	blq_error err = {0};
	int rc = blq_inspect_version(in, &ver, &err);
	if (rc < 0)
		return cli_fail(rc == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "import: %s: %s",
				o->args[0], err.msg);
	if (rc == 0)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (v[i].version != v[0].version)
			return cli_fail(CLI_USAGE, "import: %s holds nothing that says its version, "
						   "and the lines have %llu and %llu: give "
						   "--dump-version (nothing imported)",
					o->args[0], (unsigned long long)v[0].version,
					(unsigned long long)v[i].version);
	blq_inspect_set_version(in, v[0].version);
	return 0;
}

static int run(struct cli_opts *o)
{
	const char *name = o->nargs > 1 && strcmp(o->args[1], "-") != 0 ? o->args[1] : NULL;
	FILE *f = name != NULL ? fopen(name, "r") : stdin;
	if (f == NULL)
		return cli_fail(CLI_USAGE, "import: %s: %s", name, strerror(errno));
	blq_inspect_jsonl *v = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int rc = 0;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		if (len == 0 || (len == 1 && line[0] == '\n'))
			continue; /* a blank line (a trailing one, often) */
		if (n == cap) {
			size_t c2 = cap != 0 ? cap * 2 : 256;
			blq_inspect_jsonl *v2 = realloc(v, c2 * sizeof(*v2));
			if (v2 == NULL) {
				rc = cli_fail(CLI_RUNTIME, "import: out of memory");
				break;
			}
			v = v2;
			cap = c2;
		}
		blq_error err = {0};
		if (blq_inspect_jsonl_get(line, (size_t)len, &v[n], &err) != 0) {
			rc = cli_fail(CLI_USAGE, "import: %s:%zu: %s (nothing imported)",
				      name != NULL ? name : "stdin", lineno, err.msg);
			break;
		}
		n++;
	}
	if (rc == 0 && ferror(f))
		rc = cli_fail(CLI_RUNTIME, "import: read: %s", strerror(errno));
	free(line);
	if (f != stdin)
		fclose(f);
	blq_inspect *in = NULL;
	if (rc == 0) {
		int code;
		if ((in = cli_open(o, o->args[0], true, &code)) == NULL)
			rc = code;
	}
	if (rc == 0 && n > 0)
		rc = pick_version(in, o, v, n);
	size_t done = 0;
	blq_inspect_item items[IMPORT_BATCH];
	while (rc == 0 && done < n) {
		size_t k = n - done < IMPORT_BATCH ? n - done : IMPORT_BATCH;
		for (size_t i = 0; i < k; i++)
			items[i] = v[done + i].item;
		blq_error err = {0};
		if (blq_inspect_append(in, items, k, &err) != 0)
			rc = cli_fail(CLI_RUNTIME, "import: %s: %s (%zu of %zu records written)",
				      o->args[0], err.msg, done, n);
		else
			done += k;
	}
	blq_inspect_close(in);
	for (size_t i = 0; i < n; i++)
		blq_inspect_jsonl_free(&v[i]);
	free(v);
	if (rc != 0)
		return rc;
	if (o->json)
		printf("{\"imported\":%zu}\n", done);
	else
		printf("imported %zu records into %s\n", done, o->args[0]);
	return CLI_OK;
}

const struct cli_cmd cli_import = {
	"import", run, "JSON lines (blq-dlq export's) into a dump",
	"usage: blq-dlq import TARGET [FILE|-] [--json]\n"
	"\n"
	"Reads JSON lines (blq-dlq export's format) from FILE or stdin and writes\n"
	"them into the dump TARGET (a directory, or redis://HOST:PORT/KEY), with\n"
	"their restore counts and why, durably, where a restorer consuming TARGET\n"
	"takes them. To import into a dead store, name its directory or stream as\n"
	"TARGET. Every line is checked first: a bad one is reported with its line\n"
	"and column and nothing is written. \"loc\" is information only.\n"
	"\n"
	"  --dump-version N   the version to write (default: TARGET's, as its\n"
	"                     files or entries or dead store say; with none, the\n"
	"                     lines' \"version\" when they all agree)\n"
	"  --match GLOB       TARGET's files (default *.bin)\n"
	"  --file-mask MASK   names of the files written (default: from --match)\n"
	"  --json             {\"imported\":N}\n"
	"\n"
	"Exit: 0 imported, 2 usage (a bad line, no such file), 3 cannot open /\n"
	"write failed.\n",
	CLI_BIT(O_DUMP_VERSION) | CLI_BIT(O_MATCH) | CLI_BIT(O_FILE_MASK) | CLI_BIT(O_JSON), 1, 2,
};
