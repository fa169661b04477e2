/*
 * Configuration checks: every refusal names the field and the rule, so a
 * user reading the message knows what to change. Defaults are applied by
 * blq_new after these checks pass.
 */
#include <math.h>
#include <string.h>

#include "../schedule/schedule_internal.h"
#include "internal.h"

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

/* Fields of features that later issues build; refused rather than ignored,
 * so nobody believes they are in force. */
static int check_not_yet(const blq_config *c, blq_error *err)
{
	const char *fmt = "%s: not implemented yet in this version of blq";

	if (c->max_retries != 0)
		return blq__error_set(err, BLQ_ENOTSUP, fmt, "max_retries");
	if (c->retry_interval_ns != 0)
		return blq__error_set(err, BLQ_ENOTSUP, fmt, "retry_interval_ns");
	if (c->backoff != BLQ_BACKOFF_NONE)
		return blq__error_set(err, BLQ_ENOTSUP, fmt, "backoff");
	if (c->jitter != BLQ_JITTER_NONE)
		return blq__error_set(err, BLQ_ENOTSUP, fmt, "jitter");
	if (c->delay_interval_ns != 0)
		return blq__error_set(err, BLQ_ENOTSUP, fmt, "delay_interval_ns");
	return 0;
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
	if (c->qos != NULL) {
		if ((rc = blq__qos_check(c, err)) != 0) /* capacity and streams too */
			return rc;
	} else if (c->capacity == 0) {
		return bad(err, "%s: must be > 0", "capacity");
	}
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
	if ((unsigned)c->backoff > BLQ_BACKOFF_CUSTOM)
		return blq__error_set(err, BLQ_EINVAL, "backoff: unknown kind %d", (int)c->backoff);
	if ((unsigned)c->jitter > BLQ_JITTER_CUSTOM)
		return blq__error_set(err, BLQ_EINVAL, "jitter: unknown kind %d", (int)c->jitter);
	if ((rc = check_leak(c, err)) != 0)
		return rc;
	if (c->clock.now_ns == NULL && c->clock.wall_ns == NULL && c->clock.ctx != NULL)
		return bad(err, "%s: ctx is set but now_ns and wall_ns are NULL", "clock");
	if ((rc = check_schedule(c, err)) != 0)
		return rc;
	if (c->logger.log == NULL && c->logger.ctx != NULL)
		return bad(err, "%s: ctx is set but log is NULL", "logger");
	return check_not_yet(c, err);
}
