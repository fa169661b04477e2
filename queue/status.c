/*
 * blq_status_json: the queue's state as one JSON object, the original's
 * String() with blq's own fields (docs: status fields).
 *
 * One snapshot of blq_stats, the state word read under q->mu (so "closed"
 * is never reported while the closer is still sweeping), then one
 * snprintf; the engine appends its part (QoS: ",\"qos\":{...}"). Every
 * part is written like snprintf: into what room is left, returning the
 * length the whole text needs, so a caller can size its buffer with a
 * first call (buf NULL, len 0). The queue's name is JSON-escaped
 * (util/json_escape.c), so any name gives valid JSON.
 */
#include <stdio.h>

#include "internal.h"
#include "json_escape.h"

/* Where the next part of the text goes, and how much room it has. */
static char *tail(char *buf, size_t len, int n)
{
	return buf == NULL ? NULL : buf + ((size_t)n < len ? (size_t)n : len);
}

static size_t room(size_t len, int n)
{
	return (size_t)n < len ? len - (size_t)n : 0;
}

static const char *state_name(const blq *q)
{
	int mode = atomic_load_explicit(&q->forced, memory_order_relaxed);

	if (mode == BLQ__CLOSE_HARD)
		return "force-closing";
	if (mode == BLQ__CLOSE_SOFT)
		return "soft-closing";
	if (atomic_load_explicit(&q->closed, memory_order_relaxed))
		return "closing";
	return "active";
}

int blq_status_json(const blq *q, char *buf, size_t len)
{
	char name[BLQ__NAME_MAX * 6 + 1];
	struct blq_stats st;

	if (q == NULL || (buf == NULL && len > 0))
		return BLQ_EINVAL;
	blq_stats(q, &st);
	blq__json_escape(name, sizeof(name), q->name);
	pthread_mutex_lock((pthread_mutex_t *)&q->mu);
	const char *state = q->state == BLQ__CLOSED ? "closed" : state_name(q);
	pthread_mutex_unlock((pthread_mutex_t *)&q->mu);
	int n = snprintf(buf, len,
			"{\"name\":\"%s\",\"status\":\"%s\",\"capacity\":%zu,\"size\":%zu,"
			"\"rate\":%.4f,\"leaky\":%s,\"balanced\":%s,\"throttled\":%s,\"paused\":%s,"
			"\"workers\":{\"active\":%u,\"asleep\":%u,\"idle\":%u,\"stuck\":%u,"
			"\"busy\":%u,\"overrunning\":%u},\"producers_blocked\":%u,\"producers_turned_away\":%llu,\"dlq_waiting\":%u,"
			"\"in\":%llu,\"processed\":%llu,\"failed\":%llu,\"leaked\":%llu,"
			"\"leaked_rear\":%llu,\"leaked_front\":%llu,\"leaked_failed\":%llu,"
			"\"leaked_deadline\":%llu,\"leaked_closed\":%llu,"
			"\"expired\":%llu,\"lost\":%llu,\"cancelled\":%llu,\"retried\":%llu,\"timed_out\":%llu,"
			"\"delayed\":%llu,\"bounds\":{\"workers_min\":%u,\"workers_max\":%u,"
			"\"wakeup_factor\":%.10g,\"sleep_factor\":%.10g,\"schedule_range\":%d},"
			"\"rate_limit\":{\"per_s\":%.10g,\"burst\":%u,\"delayed\":%llu,"
			"\"waited_ns\":%llu}",
			name, state, st.capacity, st.size,
			blq_rate(q),
			q->leaky ? "true" : "false", q->balanced ? "true" : "false",
			st.throttled ? "true" : "false", st.paused ? "true" : "false", st.workers_active, st.workers_asleep,
			st.workers_idle, st.workers_stuck, st.workers_busy, st.workers_overrunning,
			st.producers_blocked, (unsigned long long)st.producers_turned_away,
			st.dlq_waiting,
			(unsigned long long)st.in, (unsigned long long)st.processed,
			(unsigned long long)st.failed, (unsigned long long)st.leaked,
			(unsigned long long)st.leaked_rear, (unsigned long long)st.leaked_front,
			(unsigned long long)st.leaked_failed, (unsigned long long)st.leaked_deadline,
			(unsigned long long)st.leaked_closed, (unsigned long long)st.expired,
			(unsigned long long)st.lost, (unsigned long long)st.cancelled,
			(unsigned long long)st.retried,
			(unsigned long long)st.timed_out, (unsigned long long)st.delayed,
			st.workers_min, st.workers_max, st.wakeup_factor, st.sleep_factor,
			st.schedule_range, q->cfg.rate_limit,
			q->cfg.rate_burst, /* 1 by default with a rate, 0 without */
			(unsigned long long)st.rate_delayed, (unsigned long long)st.rate_limited_ns);
	if (q->engine->status_json != NULL) /* QoS: ,"qos":{...} */
		n += q->engine->status_json(q->engine_state, tail(buf, len, n), room(len, n));
	return n + snprintf(tail(buf, len, n), room(len, n), "}");
}
