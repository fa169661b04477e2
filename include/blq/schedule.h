/**
 * \file
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
 *
 * Thread-safety: a schedule is built by one thread: blq_schedule_add and
 * blq_schedule_add_relative must not run at the same time as any other
 * call on the same schedule. Once built, the read-only functions
 * (blq_schedule_lookup, _is_relative, _workers_max, _size) may be called
 * from any thread at once. blq_new copies the schedule, so a queue never
 * reads the caller's after blq_new returns. blq_parse_duration: any thread.
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

/** A schedule: an ordered list of ranges (opaque). Made by
 * blq_schedule_new, freed with blq_schedule_free. */
typedef struct blq_schedule blq_schedule;

/** What a range sets. Zero factors fall back to the queue's config. */
typedef struct blq_schedule_params {
	unsigned workers_min; /**< 0..workers_max */
	unsigned workers_max; /**< 1..1024, >= workers_min */
	double wakeup_factor; /**< 0 = config's; else (0, 1] */
	double sleep_factor;  /**< 0 = config's; else [0, wakeup] */
} blq_schedule_params;

/**
 * An empty schedule.
 * \return the schedule, or NULL when out of memory. The caller owns it:
 *         free it with blq_schedule_free. A queue copies the schedule at
 *         creation, so the caller may free it right after blq_new.
 */
BLQ_API blq_schedule *blq_schedule_new(void);

/**
 * Free a schedule and its ranges.
 * \param s the schedule; NULL is a no-op. Queues made from it keep their
 *        own copy.
 * \threadsafety Not concurrently with any other call on \p s.
 */
BLQ_API void blq_schedule_free(blq_schedule *s);

/**
 * Add a time-of-day range.
 * \param s the schedule.
 * \param range `HH:MM[:SS[.mmm]]-HH:MM[:SS[.mmm]]`, either side may be
 *        "*"; copied.
 * \param p the bounds and factors in force during the range; copied.
 * \param[out] err optional; on failure receives a message naming the
 *        problem: bad format, hour/minute/second/millisecond out of range,
 *        an empty range, workers_max 0, min > max, a bad factor, an overlap
 *        with an earlier range, or mixing with relative ranges. Cleared (0
 *        and "") on success.
 * \retval 0 added.
 * \retval BLQ_EINVAL \p s, \p range or \p p NULL, or one of the problems
 *         above. Nothing was added.
 * \retval BLQ_ENOMEM the range list cannot grow. Nothing was added.
 * \threadsafety Not thread-safe: build the schedule before blq_new, on one
 * thread.
 */
BLQ_API int blq_schedule_add(blq_schedule *s, const char *range, const blq_schedule_params *p,
			     blq_error *err);

/**
 * Add a range of offsets from the queue's start, such as "30s-1m" or
 * "1m30s-2m" (h, m, s, ms units, combined in decreasing order); the end
 * must come after the start.
 * \param s the schedule.
 * \param range `START-END`, each side as blq_parse_duration reads it;
 *        copied.
 * \param p the bounds and factors in force during the range; copied.
 * \param[out] err optional; as for blq_schedule_add.
 * \return as blq_schedule_add.
 * \threadsafety Not thread-safe, as blq_schedule_add.
 */
BLQ_API int blq_schedule_add_relative(blq_schedule *s, const char *range,
				      const blq_schedule_params *p, blq_error *err);

/**
 * The range in force at time \p t_ms.
 * \param s the schedule; NULL matches nothing.
 * \param t_ms for a time-of-day schedule, milliseconds since local
 *        midnight (0..86399999); for a relative one, milliseconds since the
 *        start.
 * \param[out] out receives the range's params when one matches; may be
 *        NULL.
 * \return the index of the matching range (in order of addition), or -1.
 */
BLQ_API int blq_schedule_lookup(const blq_schedule *s, uint64_t t_ms, blq_schedule_params *out);

/**
 * Whether the schedule holds relative ranges.
 * \param s the schedule.
 * \return true for a schedule of relative ranges; false for a time-of-day
 *         one, an empty one or NULL.
 */
BLQ_API bool blq_schedule_is_relative(const blq_schedule *s);

/**
 * The largest workers_max over all ranges (what a queue sizes its worker
 * slots for).
 * \param s the schedule.
 * \return the maximum; 0 for an empty schedule or NULL.
 */
BLQ_API unsigned blq_schedule_workers_max(const blq_schedule *s);

/**
 * The number of ranges.
 * \param s the schedule.
 * \return the count; 0 for NULL.
 */
BLQ_API unsigned blq_schedule_size(const blq_schedule *s);

/**
 * Parse a `1h2m3s4ms` style duration ("30s", "1m30s", "500ms": at least one
 * unit; units in decreasing order, each at most once; at most 12 digits
 * per number), at most UINT64_MAX ns (5124095h34m33s709ms).
 * \param text the duration; read only.
 * \param[out] ns receives the duration in nanoseconds on success.
 * \param[out] err optional; on failure receives a message naming the
 *        problem (left untouched on success).
 * \retval 0 parsed; *ns set.
 * \retval BLQ_EINVAL \p text or \p ns NULL, an empty text, a number
 *         without a unit, an unknown unit, units out of order, or a
 *         duration above UINT64_MAX ns (the message says "overflow").
 *         *ns is left alone.
 */
BLQ_API int blq_parse_duration(const char *text, uint64_t *ns, blq_error *err);

#ifdef __cplusplus
}
#endif

#endif
