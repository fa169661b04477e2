/*
 * Schedules: time ranges that override a balanced queue's worker bounds and
 * factors, e.g. more workers by day than by night.
 *
 * Two kinds, not mixed in one schedule:
 *   - time of day: "HH:MM", "HH:MM:SS" or "HH:MM:SS.mmm" on each side, "*"
 *     for the start (left) or end (right) of the day; a range may cross
 *     midnight ("22:00-06:00"). Read in local time through the queue's
 *     clock (blq_clock.wall_ns), so tests can drive it.
 *   - relative: offsets from the moment the queue starts, like "30s-1m" or
 *     "1m30s-2m" (units h, m, s, ms), as the demo daemon's workers_schedule.
 * Ranges may not overlap. Outside every range the queue's config applies.
 */
#ifndef BLQ_SCHEDULE_H
#define BLQ_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include <blq/error.h>
#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct blq_schedule blq_schedule;

/* What a range sets. Zero factors fall back to the queue's config. */
typedef struct blq_schedule_params {
	unsigned workers_min;
	unsigned workers_max; /* 1..1024, >= workers_min */
	double wakeup_factor; /* 0 = config's; else (0, 1] */
	double sleep_factor;  /* 0 = config's; else [0, wakeup] */
} blq_schedule_params;

/**
 * blq_schedule_new() - an empty schedule.
 * Return: the schedule, or NULL when out of memory. Free with
 * blq_schedule_free. A queue copies the schedule at creation, so the
 * caller may free it right after blq_new.
 */
BLQ_API blq_schedule *blq_schedule_new(void);

/** blq_schedule_free() - frees the schedule; NULL is a no-op. */
BLQ_API void blq_schedule_free(blq_schedule *s);

/**
 * blq_schedule_add() - add a time-of-day range.
 * @range: "HH:MM[:SS[.mmm]]-HH:MM[:SS[.mmm]]", either side may be "*".
 * @p:     the bounds and factors in force during the range.
 * @err:   optional; receives a message naming the problem: bad format,
 *         hour/minute/second/millisecond out of range, an empty range,
 *         workers_max 0, min > max, a bad factor, an overlap with an
 *         earlier range, or mixing with relative ranges.
 * Return: 0, BLQ_EINVAL (nothing added) or BLQ_ENOMEM.
 * Thread-safety: not thread-safe; build the schedule before blq_new.
 */
BLQ_API int blq_schedule_add(blq_schedule *s, const char *range, const blq_schedule_params *p,
			     blq_error *err);

/**
 * blq_schedule_add_relative() - add a range of offsets from the queue's
 * start, such as "30s-1m" or "1m30s-2m" (h, m, s, ms units, combined in
 * decreasing order). The end must come after the start.
 * Return and errors: as blq_schedule_add.
 */
BLQ_API int blq_schedule_add_relative(blq_schedule *s, const char *range,
				      const blq_schedule_params *p, blq_error *err);

/**
 * blq_schedule_lookup() - the range in force at time t.
 * @t_ms: for a time-of-day schedule, milliseconds since local midnight
 *        (0..86399999); for a relative one, milliseconds since the start.
 * @out:  receives the range's params when one matches.
 * Return: the index of the matching range (in order of addition), or -1.
 * Thread-safety: safe from any thread once the schedule is built.
 */
BLQ_API int blq_schedule_lookup(const blq_schedule *s, uint64_t t_ms, blq_schedule_params *out);

/** blq_schedule_is_relative() - true for a schedule of relative ranges. */
BLQ_API bool blq_schedule_is_relative(const blq_schedule *s);

/** blq_schedule_workers_max() - the largest workers_max over all ranges. */
BLQ_API unsigned blq_schedule_workers_max(const blq_schedule *s);

/** blq_schedule_size() - the number of ranges. */
BLQ_API unsigned blq_schedule_size(const blq_schedule *s);

/**
 * blq_parse_duration() - parses "1h2m3s4ms" style durations ("30s", "1m30s",
 * "500ms"; at least one unit; units in decreasing order, each at most once).
 * Return: 0 with *ns set, or BLQ_EINVAL with a message in @err.
 */
BLQ_API int blq_parse_duration(const char *text, uint64_t *ns, blq_error *err);

#ifdef __cplusplus
}
#endif

#endif
