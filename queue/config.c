/*
 * Configuration checks: every refusal names the field and the rule, so a
 * user reading the message knows what to change. Defaults are applied by
 * blq_new after these checks pass.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "schedule_internal.h"

static int bad(blq_error *err, const char *fmt, const char *field)
{
	return blq__error_set(err, BLQ_EINVAL, fmt, field);
}

/* A factor is a fill rate: a number in [0, 1]; 0 means the default. */
static int check_factor(double f, const char *field, blq_error *err)
{
	if (isnan(f))
		return bad(err, "%s: must be a number, got NaN", field);
	if (f < 0.0 || f > 1.0)
		return blq__error_set(err, BLQ_EINVAL, "%s: must be in [0, 1], got %g", field, f);
	return 0;
}

static int check_workers(const blq_config *c, blq_error *err)
{
	if (c->workers > 0 && (c->workers_min > 0 || c->workers_max > 0))
		return bad(err, "%s: set either workers or workers_min/workers_max, not both",
			   "workers");
	if (c->workers > BLQ__WORKERS_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "workers: must be <= %u, got %u",
				      BLQ__WORKERS_LIMIT, c->workers);
	if (c->workers == 0) {
		if (c->workers_max == 0)
			return bad(err, "%s: must be > 0 (or set workers for a fixed pool)",
				   "workers_max");
		if (c->workers_max > BLQ__WORKERS_LIMIT)
			return blq__error_set(err, BLQ_EINVAL, "workers_max: must be <= %u, got %u",
					      BLQ__WORKERS_LIMIT, c->workers_max);
		if (c->workers_min > c->workers_max)
			return blq__error_set(err, BLQ_EINVAL,
					      "workers_max: must be >= workers_min (%u), got %u",
					      c->workers_min, c->workers_max);
	}
	return 0;
}

static int check_factors(const blq_config *c, blq_error *err)
{
	int rc;

	if ((rc = check_factor(c->wakeup_factor, "wakeup_factor", err)) != 0)
		return rc;
	if ((rc = check_factor(c->sleep_factor, "sleep_factor", err)) != 0)
		return rc;
	double wakeup = c->wakeup_factor > 0 ? c->wakeup_factor : 0.75;
	double sleep = c->sleep_factor > 0 ? c->sleep_factor : 0.5;
	if (sleep > wakeup)
		return blq__error_set(err, BLQ_EINVAL,
				      "sleep_factor: must be <= wakeup_factor (%g), got %g", wakeup,
				      sleep);
	return 0;
}

static int check_leak(const blq_config *c, blq_error *err)
{
	if (c->leak_direction != BLQ_LEAK_REAR && c->leak_direction != BLQ_LEAK_FRONT)
		return blq__error_set(err, BLQ_EINVAL,
				      "leak_direction: must be BLQ_LEAK_REAR or BLQ_LEAK_FRONT, got %d",
				      (int)c->leak_direction);
	if (c->dlq.enqueue == NULL && c->dlq.self != NULL)
		return bad(err, "%s: self is set but enqueue is NULL", "dlq");
	if (c->dlq.enqueue == NULL && c->dlq.enqueue_why != NULL)
		return bad(err, "%s: enqueue_why is set but enqueue is NULL (both are needed)",
			   "dlq");
	if (c->producers_blocked_max != 0 && c->dlq.enqueue != NULL)
		return bad(err, "%s: a leaky queue (dlq set) never makes a producer wait",
			   "producers_blocked_max");
	if (c->fail_to_dlq && c->dlq.enqueue == NULL)
		return bad(err, "%s: needs a dlq", "fail_to_dlq");
	if (c->deadline_to_dlq && c->dlq.enqueue == NULL)
		return bad(err, "%s: needs a dlq", "deadline_to_dlq");
	return 0;
}

/* Each range's factors, with the config's filling the unset ones, must
 * still satisfy sleep <= wakeup. */
static int check_schedule(const blq_config *c, blq_error *err)
{
	double wakeup = c->wakeup_factor > 0 ? c->wakeup_factor : 0.75;
	double sleep = c->sleep_factor > 0 ? c->sleep_factor : 0.5;
	const blq_schedule *s = c->schedule;

	if (s == NULL)
		return 0;
	if (blq_schedule_size(s) == 0)
		return bad(err, "%s: has no range", "schedule");
	for (unsigned i = 0; i < blq_schedule_size(s); i++) {
		const blq__range *r = &s->ranges[i];
		double w = r->params.wakeup_factor > 0 ? r->params.wakeup_factor : wakeup;
		double sl = r->params.sleep_factor > 0 ? r->params.sleep_factor : sleep;

		if (sl > w)
			return blq__error_set(err, BLQ_EINVAL,
					      "schedule: range \"%s\": sleep_factor %g above wakeup_factor %g "
					      "(unset factors come from the config)",
					      r->text, sl, w);
	}
	return 0;
}

/* Intervals are unsigned: a negative number cast to unsigned lands far
 * above the limit, so the message says so. */
static int check_interval(uint64_t v, const char *field, blq_error *err)
{
	if (v > BLQ__INTERVAL_LIMIT)
		return blq__error_set(err, BLQ_EINVAL,
				      "%s: must be at most 1 year (%llu ns), got %llu "
				      "(a negative value cast to unsigned?)",
				      field, (unsigned long long)BLQ__INTERVAL_LIMIT,
				      (unsigned long long)v);
	return 0;
}

static int check_intervals(const blq_config *c, blq_error *err)
{
	const struct {
		uint64_t v;
		const char *field;
	} all[] = {
		{c->retry_interval_ns, "retry_interval_ns"},
		{c->retry_max_interval_ns, "retry_max_interval_ns"},
		{c->jitter_min_ns, "jitter_min_ns"},
		{c->jitter_max_ns, "jitter_max_ns"},
		{c->delay_interval_ns, "delay_interval_ns"},
		{c->deadline_interval_ns, "deadline_interval_ns"},
		{c->timeout_ns, "timeout_ns"},
		{c->sleep_interval_ns, "sleep_interval_ns"},
		{c->heartbeat_interval_ns, "heartbeat_interval_ns"},
	};
	int rc;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((rc = check_interval(all[i].v, all[i].field, err)) != 0)
			return rc;
	if (c->deadline_interval_ns != 0 && c->deadline_interval_ns <= c->delay_interval_ns)
		return blq__error_set(err, BLQ_EINVAL,
				      "deadline_interval_ns: must be above delay_interval_ns (%llu), got "
				      "%llu (every item would expire)",
				      (unsigned long long)c->delay_interval_ns,
				      (unsigned long long)c->deadline_interval_ns);
	if (c->timer_capacity > BLQ__CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "timer_capacity: must be <= %llu, got %zu",
				      (unsigned long long)BLQ__CAPACITY_LIMIT, c->timer_capacity);
	return 0;
}

static int check_backoff(const blq_config *c, blq_error *err)
{
	if ((unsigned)c->backoff > BLQ_BACKOFF_CUSTOM)
		return blq__error_set(err, BLQ_EINVAL, "backoff: unknown kind %d", (int)c->backoff);
	if (c->backoff == BLQ_BACKOFF_CUSTOM && c->backoff_fn == NULL)
		return bad(err, "%s: BLQ_BACKOFF_CUSTOM needs backoff_fn", "backoff_fn");
	if (c->backoff != BLQ_BACKOFF_CUSTOM && c->backoff_fn != NULL)
		return bad(err, "%s: is set but backoff is not BLQ_BACKOFF_CUSTOM", "backoff_fn");
	if (c->backoff != BLQ_BACKOFF_NONE && c->backoff != BLQ_BACKOFF_CUSTOM &&
	    c->retry_interval_ns == 0)
		return bad(err, "%s: needs retry_interval_ns (the backoff's base)", "backoff");
	if (c->retry_max_interval_ns != 0 && c->retry_max_interval_ns < c->retry_interval_ns)
		return blq__error_set(err, BLQ_EINVAL,
				      "retry_max_interval_ns: must be >= retry_interval_ns (%llu), "
				      "got %llu",
				      (unsigned long long)c->retry_interval_ns,
				      (unsigned long long)c->retry_max_interval_ns);
	return 0;
}

static int check_jitter(const blq_config *c, blq_error *err)
{
	if ((unsigned)c->jitter > BLQ_JITTER_CUSTOM)
		return blq__error_set(err, BLQ_EINVAL, "jitter: unknown kind %d", (int)c->jitter);
	if (c->jitter == BLQ_JITTER_CUSTOM && c->jitter_fn == NULL)
		return bad(err, "%s: BLQ_JITTER_CUSTOM needs jitter_fn", "jitter_fn");
	if (c->jitter != BLQ_JITTER_CUSTOM && c->jitter_fn != NULL)
		return bad(err, "%s: is set but jitter is not BLQ_JITTER_CUSTOM", "jitter_fn");
	if (c->jitter != BLQ_JITTER_DECORRELATED) {
		if (c->jitter_min_ns != 0)
			return bad(err, "%s: only BLQ_JITTER_DECORRELATED uses it", "jitter_min_ns");
		if (c->jitter_max_ns != 0)
			return bad(err, "%s: only BLQ_JITTER_DECORRELATED uses it", "jitter_max_ns");
		return 0;
	}
	if (c->jitter_max_ns == 0)
		return bad(err, "%s: BLQ_JITTER_DECORRELATED needs a maximum", "jitter_max_ns");
	uint64_t min = c->jitter_min_ns != 0 ? c->jitter_min_ns : c->retry_interval_ns;
	if (min > c->jitter_max_ns)
		return blq__error_set(err, BLQ_EINVAL,
				      "jitter_min_ns: must be <= jitter_max_ns (%llu), got %llu%s",
				      (unsigned long long)c->jitter_max_ns, (unsigned long long)min,
				      c->jitter_min_ns == 0 ? " (from retry_interval_ns)" : "");
	return 0;
}

static int check_retry(const blq_config *c, blq_error *err)
{
	int rc;

	if (c->max_retries > BLQ__RETRIES_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "max_retries: must be <= %u, got %u",
				      BLQ__RETRIES_LIMIT, c->max_retries);
	if ((rc = check_backoff(c, err)) != 0)
		return rc;
	return check_jitter(c, err);
}

#define BLQ__RATE_MIN 1e-3
#define BLQ__RATE_MAX 1e9
#define BLQ__BURST_LIMIT 1000000u

static int check_rate(const blq_config *c, blq_error *err)
{
	double r = c->rate_limit;

	if (isnan(r))
		return bad(err, "%s: must be a number, got NaN", "rate_limit");
	if (r != 0 && !(r >= BLQ__RATE_MIN && r <= BLQ__RATE_MAX))
		return blq__error_set(err, BLQ_EINVAL,
				      "rate_limit: must be 0 (no limit) or in [%g, %g] starts per "
				      "second, got %g",
				      BLQ__RATE_MIN, BLQ__RATE_MAX, r);
	if (c->rate_burst != 0 && r == 0)
		return bad(err, "%s: needs rate_limit", "rate_burst");
	if (c->rate_burst > BLQ__BURST_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "rate_burst: must be <= %u, got %u",
				      BLQ__BURST_LIMIT, c->rate_burst);
	return 0;
}

int blq__bounds_check(const blq_config *c, blq_error *err)
{
	int rc;

	if ((rc = check_workers(c, err)) != 0)
		return rc;
	if ((rc = check_factors(c, err)) != 0)
		return rc;
	return check_schedule(c, err);
}

int blq__config_check(const blq_config *c, blq_error *err)
{
	int rc;

	if (c == NULL)
		return bad(err, "%s: is NULL", "config");
	if (c->name != NULL && strlen(c->name) > BLQ__NAME_MAX)
		return blq__error_set(err, BLQ_EINVAL, "name: must be at most %d bytes",
				      BLQ__NAME_MAX);
	if (c->name != NULL && c->name[0] == '\0')
		return bad(err, "%s: must not be empty (NULL means \"queue\")", "name");
	/* The engine's part: capacity (and with QoS, streams) first. */
	if ((rc = blq__engine_for(c)->check(c, err)) != 0)
		return rc;
	if (c->capacity > BLQ__CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "capacity: must be <= %llu, got %zu",
				      (unsigned long long)BLQ__CAPACITY_LIMIT, c->capacity);
	if (c->streams > c->capacity)
		return blq__error_set(err, BLQ_EINVAL, "streams: must be <= capacity (%zu), got %u",
				      c->capacity, c->streams);
	if (c->worker == NULL)
		return bad(err, "%s: is NULL (a queue needs a worker callback)", "worker");
	if ((rc = check_workers(c, err)) != 0)
		return rc;
	if ((rc = check_factors(c, err)) != 0)
		return rc;
	if ((rc = check_intervals(c, err)) != 0)
		return rc;
	if ((rc = check_retry(c, err)) != 0)
		return rc;
	if ((rc = check_leak(c, err)) != 0)
		return rc;
	if ((rc = check_rate(c, err)) != 0)
		return rc;
	if (c->clock.now_ns == NULL && c->clock.wall_ns == NULL && c->clock.ctx != NULL)
		return bad(err, "%s: ctx is set but now_ns and wall_ns are NULL", "clock");
	if ((rc = check_schedule(c, err)) != 0)
		return rc;
	if (c->logger.log == NULL && c->logger.ctx != NULL)
		return bad(err, "%s: ctx is set but log is NULL", "logger");
	if (c->on_done.fn == NULL && c->on_done.ctx != NULL)
		return bad(err, "%s: ctx is set but fn is NULL", "on_done");
	/* A copy the queue made must be freed by the queue, and so must the
	 * original it stands in for (late.c). */
	if (c->item_dup != NULL && c->item_free == NULL)
		return bad(err, "%s: set without item_free (the queue frees the original "
			   "of a copied payload, and copies it drops)", "item_dup");
	return 0;
}
