/*
 * blq-dlq's command line: options, sources, record selection.
 *
 * Design
 * - One option table for the whole tool, and a bit set per subcommand of
 *   the options it takes: an option spelled the same means the same in
 *   every subcommand, and one a subcommand does not take is refused
 *   (exit 2) rather than ignored, so a typo'd purge does not delete more
 *   than meant.
 * - A source is a directory or redis://HOST:PORT/KEY[?group=G]; the
 *   inspector (blq/dlqinspect.h) does the rest: it tells a directory that
 *   is not a dump, a key of another type, an unreachable server, each
 *   with a message naming it.
 * - Selection is the inspector's filter, plus record locations (--loc
 *   AREA/FILE#I@OFF, AREA:ID): their part is scanned and only the named
 *   records pass, compared in their printed (canonical) form. --limit is
 *   counted here, not by the inspector, so it counts only what passes.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_fail(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("blq-dlq: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static const struct option long_opts[] = {
	{"dead", required_argument, NULL, O_DEAD},
	{"match", required_argument, NULL, O_MATCH},
	{"quarantine", required_argument, NULL, O_QUARANTINE},
	{"dead-match", required_argument, NULL, O_DEAD_MATCH},
	{"dump-version", required_argument, NULL, O_DUMP_VERSION},
	{"json", no_argument, NULL, O_JSON},
	{"part", required_argument, NULL, O_PART},
	{"loc", required_argument, NULL, O_LOC},
	{"reason", required_argument, NULL, O_REASON},
	{"since", required_argument, NULL, O_SINCE},
	{"until", required_argument, NULL, O_UNTIL},
	{"limit", required_argument, NULL, O_LIMIT},
	{"newest", no_argument, NULL, O_NEWEST},
	{"full", no_argument, NULL, O_FULL},
	{"decoder", required_argument, NULL, O_DECODER},
	{"rate", required_argument, NULL, O_RATE},
	{"to", required_argument, NULL, O_TO},
	{"from", required_argument, NULL, O_FROM},
	{"output", required_argument, NULL, O_OUTPUT},
	{"into", required_argument, NULL, O_INTO},
	{"yes", no_argument, NULL, O_YES},
	{"dry-run", no_argument, NULL, O_DRY_RUN},
	{"batch", required_argument, NULL, O_BATCH},
	{"file-mask", required_argument, NULL, O_FILE_MASK},
	{"to-version", required_argument, NULL, O_TO_VERSION},
	{"to-match", required_argument, NULL, O_TO_MATCH},
	{"keep-restores", no_argument, NULL, O_KEEP_RESTORES},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* A decimal number that fits 64 bits (strtoull saturates silently). */
static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return *end == '\0' && errno == 0;
}

/* a * b, or false when it does not fit 64 bits. */
static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b != 0 && a > UINT64_MAX / b)
		return false;
	*out = a * b;
	return true;
}

/* A time: @SECONDS (since the epoch), Ns/Nm/Nh/Nd (that long ago), or
 * local YYYY-MM-DD[THH:MM[:SS]]. */
static bool parse_time(const char *s, uint64_t *ns)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	char *end;
	if (s[0] == '@') {
		uint64_t v;
		/* Past 2554 does not fit in ns: refused, not wrapped. */
		return parse_u64(s + 1, &v) && mul_u64(v, 1000000000ull, ns);
	}
	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		bool big = errno == ERANGE;
		static const struct {
			char unit;
			uint64_t ns;
		} units[] = {{'s', 1000000000ull}, {'m', 60000000000ull},
			     {'h', 3600000000000ull}, {'d', 86400000000000ull}};
		for (size_t i = 0; i < 4; i++)
			if (end[0] == units[i].unit && end[1] == '\0') {
				/* Longer ago than the epoch (the product may
				 * not even fit 64 bits): since the epoch. */
				uint64_t ago;
				if (big || !mul_u64(v, units[i].ns, &ago))
					ago = UINT64_MAX;
				*ns = ago < now_ns ? now_ns - ago : 1;
				return true;
			}
	}
	struct tm tm = {0};
	tm.tm_isdst = -1;
	const char *rest = strptime(s, "%Y-%m-%d", &tm);
	if (rest == NULL)
		return false;
	if (*rest == 'T' || *rest == ' ') {
		const char *r = strptime(rest + 1, "%H:%M:%S", &tm);
		if (r == NULL)
			r = strptime(rest + 1, "%H:%M", &tm);
		rest = r;
	}
	if (rest == NULL || *rest != '\0')
		return false;
	time_t t = mktime(&tm);
	return t >= 0 && mul_u64((uint64_t)t, 1000000000ull, ns);
}

/* --reason takes names separated by commas, and may be repeated. */
static bool parse_reasons(const char *s, unsigned *bits)
{
	char buf[256];
	bool any = false;
	/* "" or "," names no reason: taken as "any", a purge would delete
	 * the whole area instead of the records of the reasons meant. */
	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return false;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		enum blq_dlq_reason r;
		if (blq_dlq_reason_parse(tok, &r) != 0)
			return false;
		*bits |= 1u << r;
		any = true;
	}
	return any;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, struct cli_opts *o)
{
	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	int ch;
	/* "+": stop at the first positional? No: options may follow them
	 * (blq-dlq show DIR --limit 3), so getopt permutes. */
	while ((ch = getopt_long(argc, argv, ":hyno:", long_opts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(c->help, stdout);
			return CLI_OK;
		}
		if (ch == 'y')
			ch = O_YES;
		else if (ch == 'n')
			ch = O_DRY_RUN;
		else if (ch == 'o')
			ch = O_OUTPUT;
		if (ch == '?' || ch == ':') {
			const char *bad = argv[optind - 1];
			return cli_fail(CLI_USAGE, "%s: %s %s (blq-dlq %s --help)", c->name,
					ch == ':' ? "option needs a value:" : "unknown option", bad,
					c->name);
		}
		if (!(c->accepts & CLI_BIT(ch)))
			return cli_fail(CLI_USAGE, "%s: does not take --%s (blq-dlq %s --help)",
					c->name, long_opts[ch].name, c->name);
		const char *a = optarg;
		bool ok = true;
		switch ((enum cli_opt)ch) {
		case O_DEAD: o->dead = a; break;
		case O_MATCH: o->match = a; break;
		case O_QUARANTINE: o->quarantine = a; break;
		case O_DEAD_MATCH: o->dead_match = a; break;
		case O_DUMP_VERSION: ok = o->version_set = parse_u64(a, &o->version); break;
		case O_TO_VERSION: ok = o->to_version_set = parse_u64(a, &o->to_version); break;
		case O_FILE_MASK: o->file_mask = a; break;
		case O_TO_MATCH: o->to_match = a; break;
		case O_KEEP_RESTORES: o->keep_restores = true; break;
		case O_JSON: o->json = true; break;
		case O_PART: o->part = a; break;
		case O_LOC:
			if (o->nlocs == CLI_MAX_LOCS)
				return cli_fail(CLI_USAGE, "%s: more than %d --loc", c->name,
						CLI_MAX_LOCS);
			o->locs[o->nlocs++] = a;
			break;
		case O_REASON: ok = parse_reasons(a, &o->reasons); break;
		case O_SINCE: ok = parse_time(a, &o->since_ns); break;
		case O_UNTIL: ok = parse_time(a, &o->until_ns); break;
		case O_LIMIT: ok = parse_u64(a, &o->limit) && o->limit > 0; break;
		case O_NEWEST: o->newest = true; break;
		case O_FULL: o->full = true; break;
		case O_DECODER: o->decoder = a; break;
		case O_RATE: {
			char *end;
			o->rate = strtod(a, &end);
			/* Below 0.001/s the schedule (moved / rate in ns)
			 * leaves 64 bits: a hang, not a rate. */
			ok = end != a && (*end == '\0' || strcmp(end, "/s") == 0) &&
			     o->rate >= 1e-3 && o->rate <= 1e6;
			break;
		}
		case O_TO: o->to = a; break;
		case O_FROM: o->from = a; break;
		case O_OUTPUT: o->output = a; break;
		case O_INTO: o->into = a; break;
		case O_YES: o->yes = true; break;
		case O_DRY_RUN: o->dry_run = true; break;
		case O_BATCH: {
			uint64_t v = 0;
			ok = parse_u64(a, &v) && v > 0 && v <= 100000;
			o->batch = (size_t)v;
			break;
		}
		case O_COUNT: break;
		}
		if (!ok)
			return cli_fail(CLI_USAGE, "%s: --%s: bad value \"%s\"%s", c->name,
					long_opts[ch].name, a,
					ch == O_REASON ? " (reasons: unknown, overflow-rear, "
							 "overflow-front, failed, deadline, closed)"
					: ch == O_SINCE || ch == O_UNTIL
						? " (YYYY-MM-DD[THH:MM[:SS]], @EPOCH_SECONDS, or "
						  "N{s,m,h,d} ago; up to 2554)"
					: ch == O_RATE ? " (0.001 to 1000000 per second)"
						: "");
	}
	o->args = argv + optind;
	o->nargs = argc - optind;
	if (o->nargs < c->min_args || o->nargs > c->max_args)
		return cli_fail(CLI_USAGE, "%s: %s arguments (blq-dlq %s --help)", c->name,
				o->nargs < c->min_args ? "missing" : "too many", c->name);
	return -1;
}

/* ---- sources ---- */

/* Splits redis://HOST:PORT/KEY[?group=G] into cfg; the strings live in
 * buf. */
static bool parse_redis(const char *s, char *buf, size_t cap, const char **host, int *port,
			const char **key, const char **group)
{
	snprintf(buf, cap, "%s", s + strlen("redis://"));
	char *slash = strchr(buf, '/'), *colon = strchr(buf, ':');
	if (slash == NULL || slash[1] == '\0')
		return false;
	*slash = '\0';
	*key = slash + 1;
	char *q = strchr(slash + 1, '?');
	*group = NULL;
	if (q != NULL) {
		*q = '\0';
		if (strncmp(q + 1, "group=", 6) != 0 || q[7] == '\0')
			return false;
		*group = q + 7;
	}
	*port = 0;
	if (colon != NULL && colon < slash) {
		*colon = '\0';
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end != '\0' || p < 1 || p > 65535)
			return false;
		*port = (int)p;
	}
	*host = buf[0] != '\0' ? buf : NULL;
	return true;
}

static bool is_redis(const char *s)
{
	return strncmp(s, "redis://", 8) == 0;
}

blq_inspect *cli_open(const struct cli_opts *o, const char *source, bool with_opts, int *code)
{
	blq_inspect_config cfg = {0};
	char sbuf[512], dbuf[512];
	*code = CLI_USAGE;
	if (is_redis(source)) {
		if (!parse_redis(source, sbuf, sizeof(sbuf), &cfg.host, &cfg.port, &cfg.key,
				 &cfg.group)) {
			cli_fail(CLI_USAGE, "%s: expected redis://HOST:PORT/KEY[?group=G]", source);
			return NULL;
		}
	} else {
		cfg.directory = source;
	}
	cfg.file_mask = o->file_mask;
	if (!with_opts) { /* a --to target */
		cfg.match = o->to_match;
		cfg.version = o->to_version;
		cfg.version_set = o->to_version_set;
	}
	if (with_opts) {
		cfg.match = o->match;
		cfg.quarantine = o->quarantine;
		cfg.version = o->version;
		cfg.version_set = o->version_set;
		cfg.dead_match = o->dead_match;
		if (o->dead != NULL && is_redis(o->dead)) {
			const char *h, *k, *g;
			int p;
			if (!parse_redis(o->dead, dbuf, sizeof(dbuf), &h, &p, &k, &g)) {
				cli_fail(CLI_USAGE, "--dead %s: expected redis://HOST:PORT/KEY", o->dead);
				return NULL;
			}
			/* The inspector keeps one connection: the dead stream
			 * must be on the dump's server. */
			if (cfg.key == NULL ||
			    strcmp(h != NULL ? h : "127.0.0.1",
				   cfg.host != NULL ? cfg.host : "127.0.0.1") != 0 ||
			    (p != 0 ? p : 6379) != (cfg.port != 0 ? cfg.port : 6379)) {
				cli_fail(CLI_USAGE, "--dead %s: a dead stream must be on the "
						    "dump's own Redis server", o->dead);
				return NULL;
			}
			cfg.dead_key = k;
		} else {
			cfg.dead_directory = o->dead;
		}
	}
	blq_error err = {0};
	blq_inspect *in = blq_inspect_open(&cfg, &err);
	if (in == NULL) {
		*code = CLI_RUNTIME;
		cli_fail(CLI_RUNTIME, "%s: %s", source, err.msg);
	}
	return in;
}

/* ---- selection ---- */

struct sel {
	const struct cli_opts *o;
	const char *want; /* a record's canonical location, or NULL */
	blq_inspect_record_fn fn;
	void *ctx;
	uint64_t *matched;
	int stop;     /* fn's non-zero return */
	bool limited; /* --limit reached */
};

static int sel_one(void *ctx, const blq_inspect_record *r)
{
	struct sel *s = ctx;
	if (s->want != NULL && strcmp(r->loc, s->want) != 0)
		return 0;
	if (s->o->skip_done && r->done)
		return 0; /* before --limit: it counts only what is taken */
	if (s->o->limit != 0 && *s->matched >= s->o->limit) {
		s->limited = true;
		return 1;
	}
	(*s->matched)++;
	int rc = s->fn(s->ctx, r);
	if (rc != 0)
		s->stop = rc;
	return rc;
}

static int sel_part(blq_inspect *in, struct sel *s, const char *part, const char *want,
		    bool records_only)
{
	blq_inspect_filter f = {.part = part, .newest_first = s->o->newest,
				.records_only = records_only || want != NULL,
				.reasons = s->o->reasons, .since_ns = s->o->since_ns,
				.until_ns = s->o->until_ns};
	blq_error err = {0};
	s->want = want;
	int rc = blq_inspect_scan(in, &f, sel_one, s, &err);
	if (rc < 0)
		return cli_fail(rc == BLQ_EINVAL ? CLI_USAGE : CLI_RUNTIME, "%s", err.msg);
	return 0;
}

int cli_select(blq_inspect *in, const struct cli_opts *o, const char *default_part,
	       bool records_only, blq_inspect_record_fn fn, void *ctx, uint64_t *matched)
{
	struct sel s = {o, NULL, fn, ctx, matched, 0, false};
	*matched = 0;
	if (o->nlocs == 0) {
		int rc = sel_part(in, &s, o->part != NULL ? o->part : default_part, NULL,
				  records_only);
		return rc != 0 ? rc : s.stop;
	}
	for (size_t i = 0; i < o->nlocs && s.stop == 0 && !s.limited; i++) {
		blq_inspect_loc l;
		blq_error err = {0};
		if (blq_inspect_loc_parse(o->locs[i], &l, &err) != 0)
			return cli_fail(CLI_USAGE, "--loc: %s", err.msg);
		char want[BLQ_INSPECT_LOC_MAX], part[BLQ_INSPECT_LOC_MAX];
		blq_inspect_loc_format(&l, want, sizeof(want));
		bool record = l.record || l.id[0] != '\0';
		if (record) {
			/* Scan the record's part: its file, or its stream's area. */
			l.record = false;
			l.id[0] = '\0';
			blq_inspect_loc_format(&l, part, sizeof(part));
		}
		int rc = sel_part(in, &s, record ? part : want, record ? want : NULL,
				  records_only);
		if (rc != 0)
			return rc;
	}
	return s.stop;
}
