/*
 * blq-dlq's shared parts: the options every subcommand parses, the exit
 * codes, opening a dump named on the command line, selecting records,
 * and printing (times, sizes, payloads, JSON). Each subcommand is one
 * file (cmd_*.c) with one entry point of type cli_cmd_fn.
 */
#ifndef BLQ_DLQ_CLI_H
#define BLQ_DLQ_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <blq/blq.h>
#include <blq/dlqinspect.h>

/* Exit codes (docs/operating-a-dlq.md, "Exit codes"). */
enum {
	CLI_OK = 0,      /* done */
	CLI_FOUND = 1,   /* verify: damage found; show, export, redrive, purge:
			  * nothing matched */
	CLI_USAGE = 2,   /* bad command line: an option, a location, a reason,
			  * a time; purge refused without --yes */
	CLI_RUNTIME = 3, /* the dump cannot be opened (not a dump, wrong key
			  * type, Redis down), a failing decoder, an I/O error */
};

/* Options; one bit each in a subcommand's `accepts`. */
enum cli_opt {
	O_DEAD, O_MATCH, O_QUARANTINE, O_DEAD_MATCH, O_DUMP_VERSION, O_JSON, O_PART, O_LOC,
	O_REASON, O_SINCE, O_UNTIL, O_LIMIT, O_NEWEST, O_FULL, O_DECODER, O_RATE, O_TO,
	O_FROM, O_OUTPUT, O_INTO, O_YES, O_DRY_RUN, O_BATCH, O_FILE_MASK, O_TO_VERSION,
	O_TO_MATCH, O_KEEP_RESTORES, O_COUNT
};
#define CLI_BIT(o) (1ull << (o))
/* What every subcommand that opens a dump takes. */
#define CLI_SOURCE_OPTS                                                                     \
	(CLI_BIT(O_DEAD) | CLI_BIT(O_MATCH) | CLI_BIT(O_QUARANTINE) | CLI_BIT(O_DEAD_MATCH) | \
	 CLI_BIT(O_DUMP_VERSION) | CLI_BIT(O_FILE_MASK))
/* Selecting records (cli_select). */
#define CLI_SELECT_OPTS                                                                   \
	(CLI_BIT(O_PART) | CLI_BIT(O_LOC) | CLI_BIT(O_REASON) | CLI_BIT(O_SINCE) |        \
	 CLI_BIT(O_UNTIL) | CLI_BIT(O_LIMIT) | CLI_BIT(O_NEWEST))

#define CLI_MAX_LOCS 256

struct cli_opts {
	const char *dead, *match, *quarantine, *dead_match, *file_mask;
	uint64_t version; /* --dump-version, when version_set */
	bool version_set;
	uint64_t to_version; /* --to-version (the --to target's), when to_version_set */
	bool to_version_set;
	const char *to_match; /* --to-match: the --to directory's files */
	bool keep_restores;
	bool json, full, newest, yes, dry_run;
	const char *part;
	const char *locs[CLI_MAX_LOCS];
	size_t nlocs;
	unsigned reasons;
	uint64_t since_ns, until_ns, limit;
	const char *decoder;
	double rate;
	const char *to, *from, *output, *into;
	size_t batch;
	/* Not an option: cli_select leaves out records a restorer marked
	 * done (redrive, export: they were restored already). */
	bool skip_done;
	char **args; /* positional arguments after the options */
	int nargs;
};

typedef int (*cli_cmd_fn)(struct cli_opts *o);

/* A subcommand: name, entry, one-line summary, its --help text, the
 * options it accepts, and its positional arguments (min..max). */
struct cli_cmd {
	const char *name;
	cli_cmd_fn run;
	const char *summary;
	const char *help;
	uint64_t accepts;
	int min_args, max_args;
};

/* The subcommands (main.c lists them). */
extern const struct cli_cmd cli_list, cli_show, cli_verify, cli_salvage, cli_redrive,
	cli_export, cli_import, cli_purge;

/* Parses argv (after the subcommand's name) into o. Returns -1 to go on,
 * else the exit code (CLI_OK for --help, CLI_USAGE with a message). */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, struct cli_opts *o);

/* Prints "blq-dlq: " and the message on stderr; returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens the dump a source names (DIR or redis://HOST:PORT/KEY[?group=G]),
 * with the dead store, match, quarantine and version of o when with_opts,
 * else as a --to target (--to-match, --to-version); --file-mask either way.
 * NULL after a message (*code: CLI_USAGE for a bad spelling, CLI_RUNTIME
 * when the dump cannot be opened). */
blq_inspect *cli_open(const struct cli_opts *o, const char *source, bool with_opts, int *code);

/* Hands fn the records o selects (--part/--loc, --reason, --since,
 * --until, --limit, --newest), within default_part when o names none
 * (NULL: everything). records_only leaves out damage and gone reports.
 * *matched counts what fn was given. Returns 0, CLI_USAGE (a bad
 * location, message printed) or CLI_RUNTIME (message printed); fn's
 * non-zero return stops the scan and is returned. */
int cli_select(blq_inspect *in, const struct cli_opts *o, const char *default_part,
	       bool records_only, blq_inspect_record_fn fn, void *ctx, uint64_t *matched);

/* Selected records' locations copied out of a scan (purge): the scan's
 * pointers live only during its callback. */
struct cli_rec {
	char loc[BLQ_INSPECT_LOC_MAX];
};
struct cli_batch {
	struct cli_rec *v;
	size_t n, cap;
	bool nomem;
};
/* A blq_inspect_record_fn: copies the record's location into the batch
 * (ctx). */
int cli_batch_add(void *ctx, const blq_inspect_record *r);
/* Empties the batch; it is reusable. */
void cli_batch_clear(struct cli_batch *b);
/* The batch's locations, for blq_inspect_delete (malloc'd; NULL when out
 * of memory). */
const char **cli_batch_locs(const struct cli_batch *b);

/* ---- output ---- */

/* Local ISO 8601 with milliseconds ("2025-11-24T16:00:00.123+01:00");
 * "-" for 0. */
const char *cli_time(uint64_t ns, char *buf, size_t cap);
/* Human-readable bytes ("512 B", "1.5 KiB"). */
const char *cli_size(uint64_t bytes, char *buf, size_t cap);
/* What a file's damage report skipped, as " (1 damaged span, 56 bytes
 * skipped)" or " (4096 bytes skipped, no record read)"; "" for a report
 * that skipped nothing (a stream entry's). */
const char *cli_skipped(const blq_inspect_record *r, char *buf, size_t cap);
/* A JSON string (quoted, escaped) to f. */
void cli_json_str(FILE *f, const char *s);
/* The payload: text when it is printable (quoted), else hex; at most 64
 * bytes unless full (a "... N more bytes" note says what was left). */
void cli_preview(FILE *f, const void *data, size_t len, bool full);
/* A why in words ("failed (attempts 3, rc -42, queue orders)"); "" when it
 * says nothing. */
const char *cli_why(const blq_dlq_why *w, char *buf, size_t cap);
/* The why is all zero: says nothing. */
bool cli_why_empty(const blq_dlq_why *w);
/* The why as a JSON value (null or an object). */
void cli_json_why(FILE *f, const blq_dlq_why *w);

/* ---- the decoder hook (decode.c) ---- */

/* Runs `sh -c CMD` with the payload on stdin; its stdout (up to cap - 1
 * bytes, NUL-terminated; the rest read and dropped) in out, *outlen its
 * full length. 0, or -1 after a message naming the decoder (could not
 * run, exit status not 0, killed by a signal). */
int cli_decode(const char *cmd, const void *data, size_t len, char *out, size_t cap,
	       size_t *outlen);

#endif
