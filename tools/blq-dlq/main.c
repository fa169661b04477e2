/*
 * blq-dlq: an operator's tool for blq's dead-letter dumps (a directory of
 * dump files or a Redis stream, its quarantine and the restorer's dead
 * store), built on blq/dlqinspect.h. One subcommand per file (cmd_*.c);
 * this file picks it. docs/operating-a-dlq.md is the guide.
 */
#include <stdio.h>
#include <string.h>

#include <blq/version.h>

/* The library version this tool was built with, as "0.3.0". */
#define STR_(x) #x
#define STR(x) STR_(x)
#define VERSION STR(BLQ_VERSION_MAJOR) "." STR(BLQ_VERSION_MINOR) "." STR(BLQ_VERSION_PATCH)

#include "cli.h"

static const struct cli_cmd *const cmds[] = {&cli_list,	  &cli_show,   &cli_verify,
					     &cli_salvage, &cli_redrive, &cli_export,
					     &cli_import,  &cli_purge};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: blq-dlq SUBCOMMAND SOURCE [options]   (blq %s)\n\n"
		   "SOURCE: a dump directory, or redis://HOST:PORT/KEY[?group=G]\n\n"
		   "Subcommands:\n",
		VERSION);
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-9s %s\n", cmds[i]->name, cmds[i]->summary);
	fprintf(f, "\nblq-dlq SUBCOMMAND --help for its options.\n"
		   "Exit codes: 0 ok, 1 damage found (verify) or nothing matched, 2 usage,\n"
		   "3 runtime error (cannot open the dump, Redis down, decoder failed, I/O).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("blq-dlq %s\n", VERSION);
		return CLI_OK;
	}
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(argv[1], cmds[i]->name) == 0) {
			struct cli_opts o;
			int rc = cli_parse(cmds[i], argc - 1, argv + 1, &o);
			return rc >= 0 ? rc : cmds[i]->run(&o);
		}
	fprintf(stderr, "blq-dlq: unknown subcommand \"%s\"\n\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
