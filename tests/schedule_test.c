/* Schedule parsing, validation and lookup. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <blq/blq.h>
#include <blq/schedule.h>

#define H(h, m, s, ms) ((((uint64_t)(h) * 60 + (m)) * 60 + (s)) * 1000 + (ms))

static const blq_schedule_params P = {.workers_min = 1, .workers_max = 4};

Test(schedule, good_ranges_and_lookup)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params a = {.workers_min = 2, .workers_max = 8, .wakeup_factor = 0.9};
	blq_schedule_params b = {.workers_min = 0, .workers_max = 1};
	blq_schedule_params out;
	blq_error err;

	cr_assert_eq(blq_schedule_add(s, "08:00-20:00", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(blq_schedule_add(s, "22:00-06:00", &b, &err), 0, "%s", err.msg);
	cr_assert_eq(blq_schedule_add(s, "20:30:15.250-21:00", &P, &err), 0, "%s", err.msg);
	cr_expect_eq(blq_schedule_size(s), 3);
	cr_expect_eq(blq_schedule_workers_max(s), 8);
	cr_expect_not(blq_schedule_is_relative(s));

	cr_expect_eq(blq_schedule_lookup(s, H(8, 0, 0, 0), &out), 0);
	cr_expect_eq(out.workers_max, 8);
	cr_expect_float_eq(out.wakeup_factor, 0.9, 1e-9);
	cr_expect_eq(blq_schedule_lookup(s, H(19, 59, 59, 999), NULL), 0);
	cr_expect_eq(blq_schedule_lookup(s, H(20, 0, 0, 0), NULL), -1, "end is exclusive");
	cr_expect_eq(blq_schedule_lookup(s, H(23, 0, 0, 0), &out), 1, "before midnight");
	cr_expect_eq(out.workers_max, 1);
	cr_expect_eq(blq_schedule_lookup(s, H(3, 0, 0, 0), NULL), 1, "after midnight");
	cr_expect_eq(blq_schedule_lookup(s, H(6, 0, 0, 0), NULL), -1);
	cr_expect_eq(blq_schedule_lookup(s, H(20, 30, 15, 249), NULL), -1);
	cr_expect_eq(blq_schedule_lookup(s, H(20, 30, 15, 250), NULL), 2, "milliseconds count");
	blq_schedule_free(s);
}

Test(schedule, star_means_start_or_end_of_day)
{
	blq_schedule *s = blq_schedule_new();
	blq_error err;

	cr_assert_eq(blq_schedule_add(s, "*-06:00", &P, &err), 0, "%s", err.msg);
	cr_assert_eq(blq_schedule_add(s, "18:00-*", &P, &err), 0, "%s", err.msg);
	cr_expect_eq(blq_schedule_lookup(s, 0, NULL), 0);
	cr_expect_eq(blq_schedule_lookup(s, H(23, 59, 59, 999), NULL), 1);
	cr_expect_eq(blq_schedule_lookup(s, H(12, 0, 0, 0), NULL), -1);
	blq_schedule_free(s);

	s = blq_schedule_new();
	cr_assert_eq(blq_schedule_add(s, "*-*", &P, &err), 0, "%s", err.msg);
	cr_expect_eq(blq_schedule_lookup(s, H(12, 0, 0, 0), NULL), 0);
	blq_schedule_free(s);
}

typedef struct bad {
	const char *first; /* added before, or NULL */
	const char *range;
	blq_schedule_params p;
	const char *msg;
} bad;

static const bad bads[] = {
	{NULL, "25:00-26:00", {1, 4, 0, 0}, "schedule: range \"25:00-26:00\": hour 25 out of range 0..23"},
	{NULL, "08:61-09:00", {1, 4, 0, 0}, "schedule: range \"08:61-09:00\": minute 61 out of range 0..59"},
	{NULL, "08:00:61-09:00", {1, 4, 0, 0}, "schedule: range \"08:00:61-09:00\": second 61 out of range 0..59"},
	{NULL, "08:00:00.12-09:00", {1, 4, 0, 0},
	 "schedule: range \"08:00:00.12-09:00\": bad format \"08:00:00.12\": milliseconds need three digits"},
	{NULL, "8:00-9:00", {1, 4, 0, 0},
	 "schedule: range \"8:00-9:00\": bad format \"8:00\": want HH:MM[:SS[.mmm]] or *"},
	{NULL, "08:00", {1, 4, 0, 0}, "schedule: range \"08:00\": bad format: want START-END"},
	{NULL, "08:00-09:00-10:00", {1, 4, 0, 0},
	 "schedule: range \"08:00-09:00-10:00\": bad format: want START-END"},
	{NULL, "08:00-08:00", {1, 4, 0, 0}, "schedule: range \"08:00-08:00\": empty range: start equals end"},
	{NULL, "08:00-09:00x", {1, 4, 0, 0},
	 "schedule: range \"08:00-09:00x\": bad format \"09:00x\": unexpected \"x\""},
	{NULL, "08:00-09:00", {1, 0, 0, 0}, "schedule: range \"08:00-09:00\": workers_max: must be > 0"},
	{NULL, "08:00-09:00", {5, 4, 0, 0},
	 "schedule: range \"08:00-09:00\": workers_max: must be >= workers_min (5), got 4"},
	{NULL, "08:00-09:00", {1, 4, 1.5, 0},
	 "schedule: range \"08:00-09:00\": wakeup_factor: must be in [0, 1], got 1.5"},
	{NULL, "08:00-09:00", {1, 4, 0.5, 0.7},
	 "schedule: range \"08:00-09:00\": sleep_factor: must be <= wakeup_factor (0.5), got 0.7"},
	{"08:00-20:00", "07:00-09:00", {1, 4, 0, 0},
	 "schedule: range \"07:00-09:00\": overlaps range \"08:00-20:00\""},
	{"23:00-01:00", "00:30-02:00", {1, 4, 0, 0},
	 "schedule: range \"00:30-02:00\": overlaps range \"23:00-01:00\""},
	{"30s-1m", "08:00-09:00", {1, 4, 0, 0},
	 "schedule: range \"08:00-09:00\": cannot mix time-of-day and relative ranges in one schedule"},
};

Test(schedule, bad_ranges_are_named)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		blq_schedule *s = blq_schedule_new();
		blq_error err = {0};

		if (bads[i].first != NULL) {
			int rc = strchr(bads[i].first, ':') != NULL
					 ? blq_schedule_add(s, bads[i].first, &P, &err)
					 : blq_schedule_add_relative(s, bads[i].first, &P, &err);
			cr_assert_eq(rc, 0, "%s", err.msg);
		}
		cr_expect_eq(blq_schedule_add(s, bads[i].range, &bads[i].p, &err), BLQ_EINVAL,
			     "%s accepted", bads[i].range);
		cr_expect_str_eq(err.msg, bads[i].msg);
		cr_expect_eq(blq_schedule_size(s), bads[i].first != NULL ? 1 : 0, "nothing added");
		blq_schedule_free(s);
	}
}

Test(schedule, relative_ranges)
{
	blq_schedule *s = blq_schedule_new();
	blq_error err;

	cr_assert_eq(blq_schedule_add_relative(s, "30s-1m", &P, &err), 0, "%s", err.msg);
	cr_assert_eq(blq_schedule_add_relative(s, "1m30s-2m", &P, &err), 0, "%s", err.msg);
	cr_expect(blq_schedule_is_relative(s));
	cr_expect_eq(blq_schedule_lookup(s, 29999, NULL), -1);
	cr_expect_eq(blq_schedule_lookup(s, 30000, NULL), 0);
	cr_expect_eq(blq_schedule_lookup(s, 60000, NULL), -1);
	cr_expect_eq(blq_schedule_lookup(s, 90000, NULL), 1);
	cr_expect_eq(blq_schedule_add_relative(s, "1m-30s", &P, &err), BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "schedule: range \"1m-30s\": end before start");
	cr_expect_eq(blq_schedule_add_relative(s, "50s-1m40s", &P, &err), BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "schedule: range \"50s-1m40s\": overlaps range \"30s-1m\"");
	cr_expect_eq(blq_schedule_add_relative(s, "3x-4m", &P, &err), BLQ_EINVAL);
	cr_expect_str_eq(err.msg, "schedule: range \"3x-4m\": duration \"3x\": unknown unit at \"x\" "
				  "(want h, m, s or ms)");
	blq_schedule_free(s);

	/* A START as long as blq_parse_duration reads (53 bytes at most):
	 * it was refused as "bad format" past 31 bytes (found by
	 * tests/fuzz/schedule_fuzz.c's oracle). */
	s = blq_schedule_new();
	const char *longest = "000000000001h000000000001m000000000001s000000000001ms-2h";
	cr_expect_eq(blq_schedule_add_relative(s, longest, &P, &err), 0, "%s", err.msg);
	cr_expect_eq(blq_schedule_lookup(s, 3661001, NULL), 0);
	cr_expect_eq(blq_schedule_lookup(s, 3661000, NULL), -1);
	char toolong[80];
	snprintf(toolong, sizeof(toolong), "%064d-1h", 1);
	cr_expect_eq(blq_schedule_add_relative(s, toolong, &P, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "START is longer than any duration") != NULL, "%s", err.msg);
	blq_schedule_free(s);
}

Test(schedule, durations)
{
	static const struct {
		const char *text;
		uint64_t ns;
	} good[] = {{"30s", 30000000000ull}, {"1m30s", 90000000000ull}, {"500ms", 500000000ull},
		    {"1h2m3s4ms", 3723004000000ull}, {"0s", 0}};
	static const struct {
		const char *text, *msg;
	} badd[] = {
		{"", "duration \"\": empty"},
		{"s", "duration \"s\": want a number then h, m, s or ms"},
		{"1s1m", "duration \"1s1m\": units must appear once, in the order h, m, s, ms"},
		{"1d", "duration \"1d\": unknown unit at \"d\" (want h, m, s or ms)"},
		{"5", "duration \"5\": unknown unit at \"\" (want h, m, s or ms)"},
	};
	uint64_t ns;
	blq_error err;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(blq_parse_duration(good[i].text, &ns, &err), 0, "%s: %s", good[i].text,
			     err.msg);
		cr_expect_eq(ns, good[i].ns, "%s", good[i].text);
	}
	for (size_t i = 0; i < sizeof(badd) / sizeof(badd[0]); i++) {
		cr_expect_eq(blq_parse_duration(badd[i].text, &ns, &err), BLQ_EINVAL, "%s",
			     badd[i].text);
		cr_expect_str_eq(err.msg, badd[i].msg);
	}
}

/* UINT64_MAX ns is 5124095h34m33s709.551615ms: the largest duration in
 * whole ms is 5124095h34m33s709ms. Each unit just below and just above
 * it, and sums that overflow only at their last term. */
Test(schedule, durations_past_uint64_max_ns_are_refused)
{
	static const struct {
		const char *text;
		uint64_t ns;
	} good[] = {
		{"5124095h", 5124095ull * 3600000000000ull},
		{"307445734m", 307445734ull * 60000000000ull},
		{"18446744073s", 18446744073000000000ull},
		{"999999999999ms", 999999999999000000ull}, /* 12 digits: ms cannot overflow alone */
		{"5124095h34m33s709ms", 18446744073709000000ull},
	};
	static const char *const over[] = {
		"5124096h",	   "307445735m",	  "18446744074s",
		"5124095h35m",	   "5124095h34m34s",	  "5124095h34m33s710ms",
		"999999999999h",   "999999999999m",	  "999999999999s",
		"1h999999999999m", "5124095h999999999999ms",
	};
	uint64_t ns;
	blq_error err;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 0;
		cr_expect_eq(blq_parse_duration(good[i].text, &ns, &err), 0, "%s: %s", good[i].text,
			     err.msg);
		cr_expect_eq(ns, good[i].ns, "%s: %llu", good[i].text, (unsigned long long)ns);
	}
	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		char want[128];

		ns = 7;
		snprintf(want, sizeof(want),
			 "duration \"%s\": overflow (at most 5124095h34m33s709ms)", over[i]);
		cr_expect_eq(blq_parse_duration(over[i], &ns, &err), BLQ_EINVAL, "%s: %llu", over[i],
			     (unsigned long long)ns);
		cr_expect_str_eq(err.msg, want);
		cr_expect_eq(ns, 7, "%s: *ns is left alone on error", over[i]);
	}
}

static int noop(void *c, void *p, blq_task *t)
{
	(void)c, (void)p, (void)t;
	return 0;
}

Test(schedule, queue_refuses_conflicting_factors_and_empty_schedules)
{
	blq_schedule *s = blq_schedule_new();
	blq_schedule_params p = {.workers_min = 1, .workers_max = 2, .sleep_factor = 0.8};
	blq_config c = {.capacity = 8, .workers_min = 1, .workers_max = 2, .worker = noop};
	blq_error err;

	c.schedule = s;
	cr_expect_null(blq_new(&c, &err));
	cr_expect_str_eq(err.msg, "schedule: has no range");
	cr_assert_eq(blq_schedule_add(s, "08:00-09:00", &p, &err), 0, "%s", err.msg);
	cr_expect_null(blq_new(&c, &err));
	cr_expect_str_eq(err.msg, "schedule: range \"08:00-09:00\": sleep_factor 0.8 above "
				  "wakeup_factor 0.75 (unset factors come from the config)");
	blq_schedule_free(s);
}
