/*
 * Schedule ranges: parsing, validation, lookup.
 *
 * A range is kept as [start, end) in milliseconds: of the day for
 * time-of-day ranges (end may be <= start: the range crosses midnight), or
 * since the queue's start for relative ones. A schedule holds a few ranges,
 * so lookup is a linear scan.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/schedule.h>

#include "schedule_internal.h"

#define DAY_MS 86400000ull

static int fail(blq_error *err, const char *range, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(blq_error *err, const char *range, const char *fmt, ...)
{
	if (err != NULL) {
		char why[160];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		err->code = BLQ_EINVAL;
		snprintf(err->msg, sizeof(err->msg), "schedule: range \"%.64s\": %s", range, why);
	}
	return BLQ_EINVAL;
}

blq_schedule *blq_schedule_new(void)
{
	return calloc(1, sizeof(blq_schedule));
}

void blq_schedule_free(blq_schedule *s)
{
	if (s == NULL)
		return;
	free(s->ranges);
	free(s);
}

blq_schedule *blq__schedule_copy(const blq_schedule *s)
{
	blq_schedule *c = blq_schedule_new();

	if (c == NULL)
		return NULL;
	*c = *s;
	c->ranges = NULL;
	if (s->n > 0) {
		c->ranges = malloc(s->n * sizeof(*s->ranges));
		if (c->ranges == NULL) {
			free(c);
			return NULL;
		}
		memcpy(c->ranges, s->ranges, s->n * sizeof(*s->ranges));
		c->cap = s->n;
	}
	return c;
}

/* Reads 1..max_digits digits; returns the number of digits read. */
static int digits(const char **p, int max_digits, unsigned *out)
{
	int n = 0;

	*out = 0;
	while (n < max_digits && isdigit((unsigned char)**p)) {
		*out = *out * 10 + (unsigned)(**p - '0');
		(*p)++;
		n++;
	}
	return n;
}

/* Parses one side "HH:MM[:SS[.mmm]]" or "*" into ms of the day. */
static int parse_tod(const char *side, size_t len, bool is_end, const char *range, uint64_t *ms,
		     blq_error *err)
{
	char buf[32];
	const char *p = buf;
	unsigned h, m, s = 0, milli = 0;

	if (len == 0 || len >= sizeof(buf))
		return fail(err, range, "bad format: want HH:MM[:SS[.mmm]] or * on each side");
	memcpy(buf, side, len);
	buf[len] = '\0';
	if (strcmp(buf, "*") == 0) {
		*ms = is_end ? DAY_MS : 0;
		return 0;
	}
	if (digits(&p, 2, &h) != 2 || *p++ != ':' || digits(&p, 2, &m) != 2)
		return fail(err, range, "bad format \"%s\": want HH:MM[:SS[.mmm]] or *", buf);
	if (*p == ':') {
		p++;
		if (digits(&p, 2, &s) != 2)
			return fail(err, range, "bad format \"%s\": seconds need two digits", buf);
		if (*p == '.') {
			p++;
			if (digits(&p, 3, &milli) != 3)
				return fail(err, range,
					    "bad format \"%s\": milliseconds need three digits", buf);
		}
	}
	if (*p != '\0')
		return fail(err, range, "bad format \"%s\": unexpected \"%s\"", buf, p);
	if (h > 23)
		return fail(err, range, "hour %u out of range 0..23", h);
	if (m > 59)
		return fail(err, range, "minute %u out of range 0..59", m);
	if (s > 59)
		return fail(err, range, "second %u out of range 0..59", s);
	/* milli has exactly three digits, so it cannot exceed 999 */
	*ms = ((uint64_t)h * 3600 + m * 60 + s) * 1000 + milli;
	return 0;
}

int blq_parse_duration(const char *text, uint64_t *ns, blq_error *err)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"h", 3600000000000ull}, {"ms", 1000000ull}, {"m", 60000000000ull},
		     {"s", 1000000000ull}};
	/* Order in which units may appear: h, m, s, ms. */
	static const int rank[] = {0, 3, 1, 2};
	const char *p = text;
	uint64_t total = 0;
	int last_rank = -1;

	if (text == NULL || ns == NULL)
		return blq__error_set(err, BLQ_EINVAL, "duration: is NULL");
	if (*p == '\0')
		return blq__error_set(err, BLQ_EINVAL, "duration \"\": empty");
	while (*p != '\0') {
		unsigned long long v = 0;
		int nd = 0;

		while (isdigit((unsigned char)*p) && nd < 12) {
			v = v * 10 + (unsigned)(*p++ - '0');
			nd++;
		}
		if (nd == 0 || isdigit((unsigned char)*p))
			return blq__error_set(err, BLQ_EINVAL, "duration \"%.64s\": want a number then h, m, s or ms", text);
		int u = -1;
		for (int i = 0; i < 4; i++)
			if (strncmp(p, units[i].unit, strlen(units[i].unit)) == 0) {
				u = i;
				break;
			}
		if (u < 0)
			return blq__error_set(err, BLQ_EINVAL, "duration \"%.64s\": unknown unit at \"%.8s\" (want h, m, s or ms)",
					   text, p);
		if (rank[u] <= last_rank)
			return blq__error_set(err, BLQ_EINVAL, "duration \"%.64s\": units must appear once, in the order h, m, s, ms",
					   text);
		last_rank = rank[u];
		p += strlen(units[u].unit);
		uint64_t part;
		if (__builtin_mul_overflow((uint64_t)v, units[u].ns, &part) ||
		    __builtin_add_overflow(total, part, &total))
			return blq__error_set(err, BLQ_EINVAL, "duration \"%.64s\": overflow (at most 5124095h34m33s709ms)",
					      text);
	}
	*ns = total;
	return 0;
}

static int check_params(const blq_schedule_params *p, const char *range, blq_error *err)
{
	if (p == NULL)
		return fail(err, range, "params: is NULL");
	if (p->workers_max == 0)
		return fail(err, range, "workers_max: must be > 0");
	if (p->workers_max > 1024)
		return fail(err, range, "workers_max: must be <= 1024, got %u", p->workers_max);
	if (p->workers_min > p->workers_max)
		return fail(err, range, "workers_max: must be >= workers_min (%u), got %u",
			    p->workers_min, p->workers_max);
	if (isnan(p->wakeup_factor) || p->wakeup_factor < 0 || p->wakeup_factor > 1)
		return fail(err, range, "wakeup_factor: must be in [0, 1], got %g", p->wakeup_factor);
	if (isnan(p->sleep_factor) || p->sleep_factor < 0 || p->sleep_factor > 1)
		return fail(err, range, "sleep_factor: must be in [0, 1], got %g", p->sleep_factor);
	if (p->wakeup_factor > 0 && p->sleep_factor > p->wakeup_factor)
		return fail(err, range, "sleep_factor: must be <= wakeup_factor (%g), got %g",
			    p->wakeup_factor, p->sleep_factor);
	return 0;
}

/* The pieces of [start, end) on a line of length `period`: two when the
 * range wraps (crosses midnight). */
static int pieces(const blq__range *r, uint64_t lo[2], uint64_t hi[2])
{
	if (r->start < r->end) {
		lo[0] = r->start, hi[0] = r->end;
		return 1;
	}
	lo[0] = r->start, hi[0] = DAY_MS;
	lo[1] = 0, hi[1] = r->end;
	return 2;
}

static int overlap(const blq__range *a, const blq__range *b)
{
	uint64_t alo[2], ahi[2], blo[2], bhi[2];
	int na = pieces(a, alo, ahi), nb = pieces(b, blo, bhi);

	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			if (alo[i] < bhi[j] && blo[j] < ahi[i])
				return 1;
	return 0;
}

static int add(blq_schedule *s, const char *range, const blq_schedule_params *p, bool relative,
	       blq_error *err)
{
	blq__range r = {0};
	const char *dash;
	int rc;

	if (s == NULL || range == NULL)
		return blq__error_set(err, BLQ_EINVAL, "schedule: schedule or range is NULL");
	if (s->n > 0 && s->relative != relative)
		return fail(err, range, "cannot mix time-of-day and relative ranges in one schedule");
	dash = strchr(range, '-');
	if (dash == NULL || strchr(dash + 1, '-') != NULL)
		return fail(err, range, "bad format: want START-END");
	if (relative) {
		uint64_t a, b;
		/* The longest duration blq_parse_duration reads is 53 bytes
		 * (12 digits per unit: "999999999999h...ms"); this was 32,
		 * which refused a valid longer START as "bad format". */
		char left[64];
		size_t ll = (size_t)(dash - range);

		if (ll == 0)
			return fail(err, range, "bad format: want START-END, like 30s-1m");
		if (ll >= sizeof(left))
			return fail(err, range, "START is longer than any duration (at most %zu bytes)",
				    sizeof(left) - 1);
		memcpy(left, range, ll);
		left[ll] = '\0';
		blq_error derr;
		if (blq_parse_duration(left, &a, &derr) != 0 ||
		    blq_parse_duration(dash + 1, &b, &derr) != 0)
			return fail(err, range, "%s", derr.msg);
		if (b <= a)
			return fail(err, range, "end before start");
		r.start = a / 1000000u;
		r.end = b / 1000000u;
	} else {
		if ((rc = parse_tod(range, (size_t)(dash - range), false, range, &r.start, err)) != 0 ||
		    (rc = parse_tod(dash + 1, strlen(dash + 1), true, range, &r.end, err)) != 0)
			return rc;
		if (r.start == r.end)
			return fail(err, range, "empty range: start equals end");
	}
	if ((rc = check_params(p, range, err)) != 0)
		return rc;
	r.params = *p;
	snprintf(r.text, sizeof(r.text), "%s", range);
	for (unsigned i = 0; i < s->n; i++) {
		bool hit = relative ? (r.start < s->ranges[i].end && s->ranges[i].start < r.end)
				    : overlap(&r, &s->ranges[i]);
		if (hit)
			return fail(err, range, "overlaps range \"%s\"", s->ranges[i].text);
	}
	if (s->n == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 4;
		/* Past 2^31 ranges (~200 GB) cap * 2 would wrap: out of
		 * memory as well. */
		blq__range *nr = s->cap > UINT_MAX / 2 ? NULL : realloc(s->ranges, cap * sizeof(*nr));

		if (nr == NULL)
			return blq__error_set(err, BLQ_ENOMEM, "schedule: range \"%.64s\": out of memory",
					      range);
		s->ranges = nr;
		s->cap = cap;
	}
	s->ranges[s->n++] = r;
	s->relative = relative;
	if (p->workers_max > s->workers_max)
		s->workers_max = p->workers_max;
	if (err != NULL) {
		err->code = 0;
		err->msg[0] = '\0';
	}
	return 0;
}

int blq_schedule_add(blq_schedule *s, const char *range, const blq_schedule_params *p,
		     blq_error *err)
{
	return add(s, range, p, false, err);
}

int blq_schedule_add_relative(blq_schedule *s, const char *range, const blq_schedule_params *p,
			      blq_error *err)
{
	return add(s, range, p, true, err);
}

int blq_schedule_lookup(const blq_schedule *s, uint64_t t_ms, blq_schedule_params *out)
{
	if (s == NULL)
		return -1;
	for (unsigned i = 0; i < s->n; i++) {
		const blq__range *r = &s->ranges[i];
		bool in = r->start < r->end ? (t_ms >= r->start && t_ms < r->end)
					    : (t_ms >= r->start || t_ms < r->end);
		if (in) {
			if (out != NULL)
				*out = r->params;
			return (int)i;
		}
	}
	return -1;
}

bool blq_schedule_is_relative(const blq_schedule *s)
{
	return s != NULL && s->relative;
}

unsigned blq_schedule_workers_max(const blq_schedule *s)
{
	return s != NULL ? s->workers_max : 0;
}

unsigned blq_schedule_size(const blq_schedule *s)
{
	return s != NULL ? s->n : 0;
}

const char *blq__schedule_range_text(const blq_schedule *s, int i)
{
	return (s != NULL && i >= 0 && (unsigned)i < s->n) ? s->ranges[i].text : "";
}
