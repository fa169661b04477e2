/*
 * Fuzz target for schedules (include/blq/schedule.h, schedule/schedule.c):
 * durations and ranges come from configuration files and from blq-demo's
 * HTTP API (workers_schedule), so any bytes may reach blq_parse_duration,
 * blq_schedule_add and blq_schedule_add_relative.
 *
 * The input is a script, one command a line ('\n'; at most 64 lines):
 *   d TEXT   blq_parse_duration(TEXT)
 *   a TEXT   blq_schedule_add(S, TEXT, P)            (time of day)
 *   r TEXT   blq_schedule_add_relative(S, TEXT, P)
 *   p BYTES  P from four bytes: workers_min, workers_max, wakeup_factor,
 *            sleep_factor, each picked from a table of edge values
 *   t DIGITS one more time (decimal, saturated) to look up at the end
 *   other    the whole line as a duration, then as a range (time of day
 *            when it holds ':' or '*', else relative)
 * All adds go to one schedule S, so mixing the two kinds is tried.
 *
 * Everything is checked against an oracle written from the header alone,
 * not from the code: a grammar for durations (numbers of 1..12 digits,
 * units h m s ms once each in that order, at most UINT64_MAX ns, computed
 * in 128 bits) and for time-of-day sides (HH:MM[:SS[.mmm]] or *), the
 * parameter bounds, the overlap rule (as sets of milliseconds of the day)
 * and "no mixing". What must hold:
 *   - parse_duration: 0 with the oracle's value exactly, err untouched;
 *     or BLQ_EINVAL with err set to it and a message, "overflow" in it for
 *     a value above UINT64_MAX ns, *ns untouched. Same result with err
 *     NULL. The value's canonical spelling ("1h2m3s4ms") parses back to it.
 *   - add / add_relative: 0 exactly when the oracle accepts (err cleared),
 *     else BLQ_EINVAL with a message naming the problem when there is only
 *     one (overlap, mix, hour/minute/second out of range, overflow, a
 *     parameter), and nothing added. Same result with err NULL (on a twin
 *     schedule). One case is left open: a sleep_factor in (0, 1] with
 *     wakeup_factor 0 (the header's "[0, wakeup]" with the config's
 *     wakeup unknown) may be taken or refused.
 *   - size, is_relative, workers_max: as the ranges accepted say.
 *   - lookup at 0, 1, 24h-1ms, 24h, huge values, each range's ends and
 *     the 't' times: the index of the range that holds t (at most one:
 *     ranges do not overlap), its params in *out; with out NULL the same.
 *     A time-of-day schedule at t >= 24h is outside the header's domain:
 *     only a valid index is required there.
 * Anything else aborts, so libFuzzer reports it; ASan sees bad reads and
 * leaks (everything is freed).
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary (seeds
 * in corpus/schedule, dictionary schedule.dict), and as a normal test with
 * fuzz_main.c replaying the seeds.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/schedule.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DAY_MS 86400000ull
#define MAX_LINES 64
#define MAX_TIMES 32

/* ---- the oracle ---------------------------------------------------- */

/* Why the oracle refuses: one bit each, so "only one problem" shows. */
enum {
	W_FORMAT = 1,    /* grammar of a side or of the range */
	W_HOUR = 2,      /* hour > 23 */
	W_MINUTE = 4,    /* minute > 59 */
	W_SECOND = 8,    /* second > 59 */
	W_EMPTY = 16,    /* start equals end (time of day) */
	W_ORDER = 32,    /* end not after start (relative) */
	W_OVERFLOW = 64, /* a side above UINT64_MAX ns */
	W_PARAMS = 128,  /* a bad parameter */
	W_OVERLAP = 256, /* overlaps an accepted range */
	W_MIX = 512,     /* other kind than the schedule's ranges */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A duration as the header describes it: 0 with *ns, or W_FORMAT or
 * W_OVERFLOW. n bytes at s (no NUL inside). */
static int oracle_duration(const char *s, size_t n, uint64_t *ns)
{
	/* rank: h 0, m 1, s 2, ms 3 */
	static const unsigned __int128 unit_ns[] = {3600000000000ull, 60000000000ull,
						     1000000000ull, 1000000ull};
	unsigned __int128 total = 0;
	int last = -1;
	size_t i = 0;

	if (n == 0)
		return W_FORMAT;
	while (i < n) {
		size_t d = 0;
		unsigned __int128 v = 0;
		while (i < n && is_digit(s[i])) {
			v = v * 10 + (unsigned)(s[i] - '0');
			i++;
			d++;
		}
		if (d == 0 || d > 12 || i == n)
			return W_FORMAT; /* no number, too long, or no unit */
		int u;
		if (s[i] == 'm' && i + 1 < n && s[i + 1] == 's')
			u = 3, i += 2;
		else if (s[i] == 'h')
			u = 0, i++;
		else if (s[i] == 'm')
			u = 1, i++;
		else if (s[i] == 's')
			u = 2, i++;
		else
			return W_FORMAT;
		if (u <= last)
			return W_FORMAT;
		last = u;
		total += v * unit_ns[u];
	}
	if (total > UINT64_MAX)
		return W_OVERFLOW;
	*ns = (uint64_t)total;
	return 0;
}

/* Exactly k digits at s[*i..n): their value, or -1. */
static long take_digits(const char *s, size_t n, size_t *i, int k)
{
	long v = 0;

	for (int j = 0; j < k; j++, (*i)++) {
		if (*i >= n || !is_digit(s[*i]))
			return -1;
		v = v * 10 + (s[*i] - '0');
	}
	return v;
}

/* One side of a time-of-day range: 0 with *ms, or W_* bits. */
static int oracle_tod_side(const char *s, size_t n, bool is_end, uint64_t *ms)
{
	size_t i = 0;
	long h, m, sec = 0, milli = 0;

	if (n == 1 && s[0] == '*') {
		*ms = is_end ? DAY_MS : 0;
		return 0;
	}
	h = take_digits(s, n, &i, 2);
	if (h < 0 || i >= n || s[i++] != ':')
		return W_FORMAT;
	m = take_digits(s, n, &i, 2);
	if (m < 0)
		return W_FORMAT;
	if (i < n && s[i] == ':') {
		i++;
		if ((sec = take_digits(s, n, &i, 2)) < 0)
			return W_FORMAT;
		if (i < n && s[i] == '.') {
			i++;
			if ((milli = take_digits(s, n, &i, 3)) < 0)
				return W_FORMAT;
		}
	}
	if (i != n)
		return W_FORMAT;
	int why = (h > 23 ? W_HOUR : 0) | (m > 59 ? W_MINUTE : 0) | (sec > 59 ? W_SECOND : 0);
	if (why != 0)
		return why;
	*ms = (uint64_t)((h * 60 + m) * 60 + sec) * 1000 + (uint64_t)milli;
	return 0;
}

typedef struct orange {
	uint64_t start, end; /* ms; time of day: end <= start crosses midnight */
	blq_schedule_params p;
} orange;

/* Whether the range holds t (the header's semantics, [start, end)). */
static bool holds(const orange *r, bool relative, uint64_t t)
{
	if (relative || r->start < r->end)
		return t >= r->start && t < r->end;
	return t >= r->start || t < r->end; /* crosses midnight */
}

/* Overlap of two ranges, as sets: two unions of half-open intervals meet
 * iff one holds the first point of a (non-empty) piece of the other. */
static bool meet(const orange *a, const orange *b, bool relative)
{
	if (holds(b, relative, a->start) || holds(a, relative, b->start))
		return true;
	if (relative)
		return false;
	/* a piece [0, end) of a range that crosses midnight */
	if (a->start > a->end && a->end > 0 && holds(b, false, 0))
		return true;
	if (b->start > b->end && b->end > 0 && holds(a, false, 0))
		return true;
	return false;
}

typedef enum { SURE_NO, SURE_YES, EITHER } verdict;

/* The header's bounds on params: SURE_YES, SURE_NO, or EITHER (the open
 * case: sleep_factor in (0, 1] while wakeup_factor is 0). */
static verdict oracle_params(const blq_schedule_params *p)
{
	double w = p->wakeup_factor, s = p->sleep_factor;

	if (p->workers_max < 1 || p->workers_max > 1024 || p->workers_min > p->workers_max)
		return SURE_NO;
	if (!(w == 0 || (w > 0 && w <= 1)))
		return SURE_NO; /* NaN fails both */
	if (!(s == 0 || (s > 0 && s <= 1)))
		return SURE_NO;
	if (w > 0)
		return s <= w ? SURE_YES : SURE_NO;
	return s == 0 ? SURE_YES : EITHER;
}

/* ---- the state of one run ------------------------------------------ */

typedef struct state {
	blq_schedule *s, *twin; /* twin: the same adds with err NULL */
	orange r[MAX_LINES];
	unsigned n;
	bool relative;
	blq_schedule_params p;
	uint64_t times[MAX_TIMES];
	unsigned ntimes;
} state;

static bool has(const char *msg, const char *word)
{
	return strstr(msg, word) != NULL;
}

static void check_refusal(int rc, const blq_error *err)
{
	CHECK(rc == BLQ_EINVAL);
	CHECK(err->code == BLQ_EINVAL);
	CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL);
	CHECK(err->msg[0] != '\0');
}

/* ---- durations ------------------------------------------------------ */

/* The canonical spelling of ns (a whole number of ms): units from h down,
 * the zero ones left out; "0ms" for 0. */
static void canonical(uint64_t ns, char *out, size_t cap)
{
	uint64_t ms = ns / 1000000u, h = ms / 3600000u, m = ms / 60000u % 60u,
		 s = ms / 1000u % 60u, r = ms % 1000u;
	size_t k = 0;

	out[0] = '\0';
	if (h)
		k += (size_t)snprintf(out + k, cap - k, "%lluh", (unsigned long long)h);
	if (m)
		k += (size_t)snprintf(out + k, cap - k, "%llum", (unsigned long long)m);
	if (s)
		k += (size_t)snprintf(out + k, cap - k, "%llus", (unsigned long long)s);
	if (r || k == 0)
		snprintf(out + k, cap - k, "%llums", (unsigned long long)r);
}

static void check_duration(const char *text)
{
	uint64_t want = 0, got = 0x5a5a5a5a5a5a5a5aull, again = 0x5a5a5a5a5a5a5a5aull;
	blq_error err;
	int why = oracle_duration(text, strlen(text), &want);

	memset(&err, 0x5a, sizeof(err));
	int rc = blq_parse_duration(text, &got, &err);
	CHECK(blq_parse_duration(text, &again, NULL) == rc); /* err is optional */
	CHECK(got == again);
	if (why != 0) {
		check_refusal(rc, &err);
		CHECK(got == 0x5a5a5a5a5a5a5a5aull); /* *ns left alone */
		if (why == W_OVERFLOW)
			CHECK(has(err.msg, "overflow"));
		return;
	}
	CHECK(rc == 0);
	CHECK(got == want);
	for (size_t i = 0; i < sizeof(err); i++) /* err left untouched */
		CHECK(((const unsigned char *)&err)[i] == 0x5a);
	/* Units are ms at the finest; the canonical form parses back. */
	CHECK(got % 1000000u == 0);
	char canon[64];
	canonical(got, canon, sizeof(canon));
	CHECK(blq_parse_duration(canon, &again, NULL) == 0 && again == got);
}

/* ---- ranges ----------------------------------------------------------- */

/* The oracle's verdict on adding text to st (relative or not): W_* bits,
 * 0 to accept; the range in *o. *open when the params are the open case. */
static int oracle_add(const state *st, const char *text, bool relative, orange *o, bool *open)
{
	const char *dash = strchr(text, '-');
	int why = 0;

	*open = false;
	if (st->n > 0 && st->relative != relative)
		why |= W_MIX;
	verdict v = oracle_params(&st->p);
	if (v == SURE_NO)
		why |= W_PARAMS;
	*open = v == EITHER;
	if (dash == NULL)
		return why | W_FORMAT;
	size_t ll = (size_t)(dash - text), rl = strlen(dash + 1);
	int side;
	if (relative) {
		uint64_t a = 0, b = 0;
		side = oracle_duration(text, ll, &a) | oracle_duration(dash + 1, rl, &b);
		if (side == 0 && b <= a)
			side = W_ORDER;
		o->start = a / 1000000u;
		o->end = b / 1000000u;
	} else {
		side = oracle_tod_side(text, ll, false, &o->start) |
		       oracle_tod_side(dash + 1, rl, true, &o->end);
		if (side == 0 && o->start == o->end)
			side = W_EMPTY;
	}
	why |= side;
	o->p = st->p;
	if (side == 0 && !(why & W_MIX))
		for (unsigned i = 0; i < st->n; i++)
			if (meet(o, &st->r[i], relative))
				why |= W_OVERLAP;
	return why;
}

/* The word a message must hold when why is its only problem; NULL when
 * there is none to require. */
static const char *word_for(int why)
{
	switch (why) {
	case W_OVERLAP:
		return "overlap";
	case W_MIX:
		return "mix";
	case W_HOUR:
		return "hour";
	case W_MINUTE:
		return "minute";
	case W_SECOND:
		return "second";
	case W_EMPTY:
		return "empty";
	case W_OVERFLOW:
		return "overflow";
	default:
		return NULL;
	}
}

static void check_add(state *st, const char *text, bool relative)
{
	orange o = {0};
	bool open;
	int why = oracle_add(st, text, relative, &o, &open);
	blq_error err;
	int (*add)(blq_schedule *, const char *, const blq_schedule_params *, blq_error *) =
		relative ? blq_schedule_add_relative : blq_schedule_add;

	memset(&err, 0x5a, sizeof(err));
	int rc = add(st->s, text, &st->p, &err);
	CHECK(add(st->twin, text, &st->p, NULL) == rc); /* err is optional */
	if (rc != 0) {
		check_refusal(rc, &err);
		/* Refused: only when the oracle refuses, or in the open case
		 * when nothing else is wrong. */
		if (why == 0 && !open)
			fprintf(stderr, "schedule_fuzz: %s \"%s\" refused (%s); oracle takes it\n",
				relative ? "relative range" : "range", text, err.msg);
		if (why == 0) {
			CHECK(open);
			CHECK(has(err.msg, "factor"));
		}
		const char *w = word_for(why);
		if (w != NULL && !open)
			CHECK(has(err.msg, w));
		if (why == W_PARAMS)
			CHECK(has(err.msg, "workers") || has(err.msg, "factor"));
		return;
	}
	if (why != 0) {
		fprintf(stderr, "schedule_fuzz: %s \"%s\" taken; oracle refuses it (0x%x)\n",
			relative ? "relative range" : "range", text, (unsigned)why);
		CHECK(why == 0);
	}
	CHECK(err.code == 0 && err.msg[0] == '\0'); /* cleared on success */
	CHECK(st->n < MAX_LINES);
	st->r[st->n++] = o;
	st->relative = relative;
}

/* ---- params and times ------------------------------------------------- */

static void set_params(state *st, const char *b, size_t n)
{
	static const unsigned counts[] = {0, 1, 2, 3, 8, 1023, 1024, 1025, 65535, UINT_MAX};
	static const double factors[] = {0.0, -0.0, 0.25, 0.5, 0.75, 1.0, 1.0 + DBL_EPSILON,
					 -DBL_MIN, NAN, INFINITY, -INFINITY, DBL_MIN};
	unsigned char c[4] = {0};

	memcpy(c, b, n < 4 ? n : 4);
	st->p.workers_min = counts[c[0] % 10];
	st->p.workers_max = counts[c[1] % 10];
	st->p.wakeup_factor = factors[c[2] % 12];
	st->p.sleep_factor = factors[c[3] % 12];
}

static void add_time(state *st, const char *digits)
{
	uint64_t t = 0;

	for (; is_digit(*digits); digits++)
		t = t > (UINT64_MAX - 9) / 10 ? UINT64_MAX : t * 10 + (uint64_t)(*digits - '0');
	if (st->ntimes < MAX_TIMES)
		st->times[st->ntimes++] = t;
}

static bool same_params(const blq_schedule_params *a, const blq_schedule_params *b)
{
	return memcmp(a, b, sizeof(*a)) == 0; /* copied as given, NaN and -0 too */
}

static void check_lookup(const state *st, uint64_t t)
{
	blq_schedule_params out;
	int want = -1;

	for (unsigned i = 0; i < st->n; i++)
		if (holds(&st->r[i], st->relative, t)) {
			CHECK(want < 0); /* at most one: no overlaps */
			want = (int)i;
		}
	memset(&out, 0xa5, sizeof(out));
	int got = blq_schedule_lookup(st->s, t, &out);
	CHECK(blq_schedule_lookup(st->s, t, NULL) == got);
	CHECK(blq_schedule_lookup(st->twin, t, NULL) == got);
	CHECK(got >= -1 && got < (int)st->n);
	if (!st->relative && t >= DAY_MS) {
		/* outside the header's domain: only a sane answer */
		if (got >= 0)
			CHECK(same_params(&out, &st->r[got].p));
		return;
	}
	if (got != want)
		fprintf(stderr, "schedule_fuzz: lookup(%llu) = %d, want %d\n",
			(unsigned long long)t, got, want);
	CHECK(got == want);
	if (got >= 0)
		CHECK(same_params(&out, &st->r[got].p));
}

static void check_schedule(const state *st)
{
	static const uint64_t fixed[] = {0, 1, DAY_MS - 1, DAY_MS, DAY_MS + 1,
					 UINT64_MAX / 1000000u, UINT64_MAX - 1, UINT64_MAX,
					 (uint64_t)1 << 63};
	unsigned wmax = 0;

	CHECK(blq_schedule_size(st->s) == st->n);
	CHECK(blq_schedule_is_relative(st->s) == (st->n > 0 && st->relative));
	for (unsigned i = 0; i < st->n; i++)
		if (st->r[i].p.workers_max > wmax)
			wmax = st->r[i].p.workers_max;
	CHECK(blq_schedule_workers_max(st->s) == wmax);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		check_lookup(st, fixed[i]);
	for (unsigned i = 0; i < st->ntimes; i++)
		check_lookup(st, st->times[i]);
	for (unsigned i = 0; i < st->n; i++) {
		const orange *r = &st->r[i];
		check_lookup(st, r->start);
		check_lookup(st, r->end);
		if (r->start > 0)
			check_lookup(st, r->start - 1);
		if (r->end > 0)
			check_lookup(st, r->end - 1);
	}
}

/* NULL arguments: refused as documented, never a crash. Once a process. */
static void check_nulls(void)
{
	static const blq_schedule_params ok = {.workers_min = 1, .workers_max = 2};
	blq_schedule *s = blq_schedule_new();
	blq_error err;
	uint64_t ns = 7;

	CHECK(s != NULL);
	CHECK(blq_parse_duration(NULL, &ns, &err) == BLQ_EINVAL && err.code == BLQ_EINVAL);
	CHECK(blq_parse_duration("1s", NULL, &err) == BLQ_EINVAL && ns == 7);
	CHECK(blq_parse_duration("", &ns, &err) == BLQ_EINVAL && err.msg[0] != '\0');
	CHECK(blq_schedule_add(NULL, "08:00-09:00", &ok, &err) == BLQ_EINVAL);
	CHECK(blq_schedule_add(s, NULL, &ok, &err) == BLQ_EINVAL);
	CHECK(blq_schedule_add(s, "08:00-09:00", NULL, &err) == BLQ_EINVAL);
	CHECK(blq_schedule_add_relative(s, "1s-2s", NULL, NULL) == BLQ_EINVAL);
	CHECK(blq_schedule_size(s) == 0 && blq_schedule_size(NULL) == 0);
	CHECK(blq_schedule_lookup(NULL, 0, NULL) == -1 && blq_schedule_lookup(s, 0, NULL) == -1);
	CHECK(!blq_schedule_is_relative(NULL) && !blq_schedule_is_relative(s));
	CHECK(blq_schedule_workers_max(NULL) == 0 && blq_schedule_workers_max(s) == 0);
	blq_schedule_free(s);
	blq_schedule_free(NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool nulls_checked;
	state *st = calloc(1, sizeof(*st));
	char *text = malloc(size + 1);

	CHECK(st != NULL && text != NULL);
	if (!nulls_checked) {
		check_nulls();
		nulls_checked = true;
	}
	st->s = blq_schedule_new();
	st->twin = blq_schedule_new();
	CHECK(st->s != NULL && st->twin != NULL);
	st->p = (blq_schedule_params){.workers_min = 1, .workers_max = 4};
	memcpy(text, data, size);
	text[size] = '\0';
	char *line = text, *end = text + size;
	for (unsigned k = 0; k < MAX_LINES && line != NULL; k++) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl != NULL ? (size_t)(nl - line) : (size_t)(end - line);
		if (nl != NULL)
			*nl = '\0';
		/* A NUL inside the line ends its text (a C string); 'p' takes
		 * its bytes as they are. */
		switch (line[0]) {
		case 'd':
			check_duration(line + 1);
			break;
		case 'a':
			check_add(st, line + 1, false);
			break;
		case 'r':
			check_add(st, line + 1, true);
			break;
		case 'p':
			set_params(st, line + 1, len > 0 ? len - 1 : 0);
			break;
		case 't':
			add_time(st, line + 1);
			break;
		default:
			check_duration(line);
			check_add(st, line, strchr(line, ':') == NULL && strchr(line, '*') == NULL);
			break;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	check_schedule(st);
	blq_schedule_free(st->s);
	blq_schedule_free(st->twin);
	free(st);
	free(text);
	return 0;
}
