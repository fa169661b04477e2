/* A stage's numbers as JSON: the original's status, the final accounting
 * after a stop, and the dashboard's stats. */
#include "stage_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <time.h>

static json_t *dump_stats_json(blq_dump *d)
{
	struct blq_dump_stats st;
	blq_dump_stats(d, &st);
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "in", (json_int_t)st.in,
			 "bytes_in", (json_int_t)st.bytes_in, "written", (json_int_t)st.written,
			 "flushes", (json_int_t)st.flushes, "bytes_flushed",
			 (json_int_t)st.bytes_flushed, "write_errors", (json_int_t)st.write_errors,
			 "refused", (json_int_t)st.refused, "dropped", (json_int_t)st.dropped,
			 "buffered", (json_int_t)st.buffered);
}

static json_t *restorer_stats_json(blq_restorer *r)
{
	struct blq_restorer_stats st;
	blq_restorer_stats(r, &st);
	/* records = done + dead + lost + returned + in_flight; redelivered
	 * are the possible duplicates (records an earlier restorer handed out
	 * and died before committing). */
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "dumps",
			 (json_int_t)st.dumps, "records", (json_int_t)st.records, "restored",
			 (json_int_t)st.restored, "lost", (json_int_t)st.lost, "postponed",
			 (json_int_t)st.postponed, "read_errors", (json_int_t)st.read_errors, "done",
			 (json_int_t)st.done, "dead", (json_int_t)st.dead, "returned",
			 (json_int_t)st.returned, "in_flight", (json_int_t)st.in_flight,
			 "redelivered", (json_int_t)st.redelivered, "processed",
			 (json_int_t)st.processed, "failed", (json_int_t)st.failed, "expired",
			 (json_int_t)st.expired, "leaked", (json_int_t)st.leaked);
}

/* The queue's own status (blq_status_json) as a JSON value. */
static json_t *queue_json(const blq *q)
{
	char small[2048];
	int n = blq_status_json(q, small, sizeof small);
	if (n < 0)
		return json_null();
	char *buf = small;
	if ((size_t)n >= sizeof small) {
		buf = malloc((size_t)n + 1);
		if (buf == NULL)
			return json_null();
		blq_status_json(q, buf, (size_t)n + 1);
	}
	json_t *v = json_loads(buf, 0, NULL);
	if (buf != small)
		free(buf);
	return v != NULL ? v : json_null();
}

/* Adds the dump's and the restorer's counters to @o (consumed) and
 * returns it as text (malloc'd), or NULL. */
static char *with_dump_text(demo_stage *s, json_t *o)
{
	if (o == NULL)
		return NULL;
	if (s->dump != NULL)
		json_object_set_new(o, "dump", dump_stats_json(s->dump));
	if (s->restorer != NULL)
		json_object_set_new(o, "restore", restorer_stats_json(s->restorer));
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

char *demo_stage_status_json(demo_stage *s)
{
	unsigned active, max;
	demo_stage_producers(s, &active, &max);
	json_t *o = json_pack("{s:s,s:o,s:i,s:i,s:i,s:i}", "key", s->key, "queue", queue_json(s->q),
			      "producers_min", (int)s->spec.producers_min, "producers_max", (int)max,
			      "producers_idle", (int)(max - active), "producers_active", (int)active);
	return with_dump_text(s, o);
}

char *demo_stage_final_json(demo_stage *s, bool *balanced)
{
	struct blq_stats st;
	*balanced = false;
	if (s->q == NULL || blq_stats(s->q, &st) != 0)
		return NULL;
	uint64_t out = st.processed + st.failed + st.leaked + st.expired + st.lost + st.cancelled;
	*balanced = st.in == out && st.size == 0;
	if (s->dump != NULL) {
		/* Leaked counts what the dump accepted; what it then dropped at
		 * close (a writer down) is lost, not accounted for. */
		struct blq_dump_stats ds;
		*balanced = *balanced && blq_dump_stats(s->dump, &ds) == 0 && ds.dropped == 0 &&
			    ds.buffered == 0;
	}
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "in",
			      (json_int_t)st.in, "processed", (json_int_t)st.processed, "failed",
			      (json_int_t)st.failed, "leaked", (json_int_t)st.leaked, "expired",
			      (json_int_t)st.expired, "lost", (json_int_t)st.lost, "cancelled",
			      (json_int_t)st.cancelled, "retried",
			      (json_int_t)st.retried, "timed_out", (json_int_t)st.timed_out,
			      "size", (json_int_t)st.size, "balanced", *balanced);
	return with_dump_text(s, o);
}

/* With QoS: the egress's and each sub-queue's size and capacity. */
static json_t *qos_json(const blq *q)
{
	unsigned n = blq_qos_subqs(q);
	blq_qos_subq_stats egress, st;
	if (n == 0 || blq_qos_subq_info(q, BLQ_QOS_EGRESS, &egress) != 0)
		return json_null();
	json_t *subqs = json_array();
	for (unsigned i = 0; i < n; i++)
		if (blq_qos_subq_info(q, i, &st) == 0)
			json_array_append_new(subqs, json_pack("{s:s,s:I,s:I}", "name", st.name, "size",
							       (json_int_t)st.size, "capacity",
							       (json_int_t)st.capacity));
	return json_pack("{s:{s:I,s:I},s:o}", "egress", "size", (json_int_t)egress.size,
			 "capacity", (json_int_t)egress.capacity, "subqs", subqs);
}

char *demo_stage_stats_json(demo_stage *s, bool stopping)
{
	struct blq_stats st;
	struct timespec now;
	unsigned active, max;
	if (blq_stats(s->q, &st) != 0)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	demo_stage_producers(s, &active, &max);
	json_t *o = json_pack(
		"{s:s,s:I,s:b,s:f,s:I,s:I,s:f,s:f,s:f,s:i,s:b,"
		"s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:{s:i,s:i,s:i},s:i,"
		"s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
		"key", s->key, "instance", (json_int_t)s->instance, "stopping", stopping, "t", (double)now.tv_sec + now.tv_nsec / 1e9,
		"capacity", (json_int_t)st.capacity, "size", (json_int_t)st.size, "rate",
		blq_rate(s->q), "wakeup_factor", st.wakeup_factor, "sleep_factor", st.sleep_factor,
		"schedule_range", st.schedule_range, "throttled", st.throttled,
		"workers", "active", (int)st.workers_active, "asleep", (int)st.workers_asleep, "idle",
		(int)st.workers_idle, "min", (int)st.workers_min, "max", (int)st.workers_max, "busy",
		(int)st.workers_busy, "overrunning", (int)st.workers_overrunning, "stuck",
		(int)st.workers_stuck,
		"producers", "active", (int)active, "min", (int)s->spec.producers_min, "max", (int)max,
		"producers_blocked", (int)st.producers_blocked,
		"counters", "in", (json_int_t)st.in, "processed", (json_int_t)st.processed, "failed",
		(json_int_t)st.failed, "leaked", (json_int_t)st.leaked, "lost", (json_int_t)st.lost,
		"cancelled", (json_int_t)st.cancelled,
		"expired", (json_int_t)st.expired, "leaked_deadline",
		(json_int_t)st.leaked_deadline, "retried", (json_int_t)st.retried, "timed_out",
		(json_int_t)st.timed_out, "delayed", (json_int_t)st.delayed);
	if (o != NULL)
		json_object_set_new(o, "qos", qos_json(s->q));
	return with_dump_text(s, o);
}
