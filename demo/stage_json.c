/* A stage's numbers as JSON: the original's status, the final accounting
 * after a stop, the dashboard's stats, and its samples (history.h). */
#include "stage_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
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
	/* records = done + dead + lost + returned + quarantined + in_flight;
	 * redelivered are the possible duplicates (records an earlier
	 * restorer handed out and died before committing); quarantined are
	 * bad entries and damaged files set aside, skipped_bytes what those
	 * files held beyond their intact records. */
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			 "dumps",
			 (json_int_t)st.dumps, "records", (json_int_t)st.records, "restored",
			 (json_int_t)st.restored, "lost", (json_int_t)st.lost, "postponed",
			 (json_int_t)st.postponed, "read_errors", (json_int_t)st.read_errors, "done",
			 (json_int_t)st.done, "dead", (json_int_t)st.dead, "returned",
			 (json_int_t)st.returned, "in_flight", (json_int_t)st.in_flight,
			 "redelivered", (json_int_t)st.redelivered, "processed",
			 (json_int_t)st.processed, "failed", (json_int_t)st.failed, "expired",
			 (json_int_t)st.expired, "leaked", (json_int_t)st.leaked, "quarantined",
			 (json_int_t)st.quarantined, "skipped_bytes", (json_int_t)st.skipped_bytes);
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
		"s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:{s:i,s:i,s:i},s:i,s:i,"
		"s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
		"key", s->key, "instance", (json_int_t)s->instance, "stopping", stopping, "t", (double)now.tv_sec + now.tv_nsec / 1e9,
		"capacity", (json_int_t)st.capacity, "size", (json_int_t)st.size, "rate",
		blq_rate(s->q), "wakeup_factor", st.wakeup_factor, "sleep_factor", st.sleep_factor,
		"schedule_range", st.schedule_range, "throttled", st.throttled,
		"workers", "active", (int)st.workers_active, "asleep", (int)st.workers_asleep, "idle",
		(int)st.workers_idle, "min", (int)st.workers_min, "max", (int)st.workers_max, "busy",
		(int)st.workers_busy, "overrunning", (int)st.workers_overrunning, "stuck",
		(int)st.workers_stuck,
		"producers", "active", (int)active, "min", (int)s->spec.producers_min, "max", (int)max,
		"producers_blocked", (int)st.producers_blocked, "dlq_waiting", (int)st.dlq_waiting,
		"counters", "in", (json_int_t)st.in, "processed", (json_int_t)st.processed, "failed",
		(json_int_t)st.failed, "leaked", (json_int_t)st.leaked, "lost", (json_int_t)st.lost,
		"cancelled", (json_int_t)st.cancelled,
		"expired", (json_int_t)st.expired, "leaked_rear", (json_int_t)st.leaked_rear,
		"leaked_front", (json_int_t)st.leaked_front, "leaked_failed",
		(json_int_t)st.leaked_failed, "leaked_deadline", (json_int_t)st.leaked_deadline,
		"leaked_closed", (json_int_t)st.leaked_closed, "retried", (json_int_t)st.retried,
		"timed_out", (json_int_t)st.timed_out, "delayed", (json_int_t)st.delayed);
	if (o != NULL)
		json_object_set_new(o, "qos", qos_json(s->q));
	return with_dump_text(s, o);
}

void demo_stage_sample(demo_stage *s)
{
	_Alignas(demo_sample) unsigned char buf[sizeof(demo_sample) +
						BLQ_QOS_SUBQS_MAX * sizeof(uint64_t)];
	demo_sample *x = (demo_sample *)buf;
	unsigned nsubqs = demo_history_nsubqs(s->history);
	struct blq_stats st;
	struct timespec now;
	unsigned active, max;
	memset(buf, 0, demo_sample_size(nsubqs));
	if (blq_stats(s->q, &st) != 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	demo_stage_producers(s, &active, &max);
	x->t = (double)now.tv_sec + now.tv_nsec / 1e9;
	x->size = st.size;
	x->capacity = st.capacity;
	x->rate = blq_rate(s->q);
	x->wakeup_factor = st.wakeup_factor;
	x->sleep_factor = st.sleep_factor;
	x->workers_active = st.workers_active;
	x->workers_asleep = st.workers_asleep;
	x->workers_idle = st.workers_idle;
	x->workers_min = st.workers_min;
	x->workers_max = st.workers_max;
	x->workers_busy = st.workers_busy;
	x->workers_overrunning = st.workers_overrunning;
	x->workers_stuck = st.workers_stuck;
	x->producers_active = active;
	x->producers_blocked = st.producers_blocked;
	x->dlq_waiting = st.dlq_waiting;
	x->in = st.in;
	x->processed = st.processed;
	x->failed = st.failed;
	x->leaked = st.leaked;
	x->lost = st.lost;
	x->retried = st.retried;
	x->expired = st.expired;
	x->leaked_rear = st.leaked_rear;
	x->leaked_front = st.leaked_front;
	x->leaked_failed = st.leaked_failed;
	x->leaked_deadline = st.leaked_deadline;
	x->leaked_closed = st.leaked_closed;
	x->timed_out = st.timed_out;
	if (s->dump != NULL) {
		struct blq_dump_stats ds;
		if (blq_dump_stats(s->dump, &ds) == 0) {
			x->dump_written = ds.written;
			x->dump_dropped = ds.dropped;
		}
	}
	if (s->restorer != NULL) {
		struct blq_restorer_stats rs;
		if (blq_restorer_stats(s->restorer, &rs) == 0)
			x->restored = rs.restored;
	}
	blq_qos_subq_stats q;
	if (nsubqs > 0 && blq_qos_subq_info(s->q, BLQ_QOS_EGRESS, &q) == 0)
		x->egress_size = q.size;
	for (unsigned i = 0; i < nsubqs; i++)
		if (blq_qos_subq_info(s->q, i, &q) == 0)
			x->subq_size[i] = q.size;
	demo_history_record(s->history, x);
}

/* One sample in the shape of stats (the members the dashboard charts);
 * @names: the QoS sub-queues' names. */
static json_t *sample_json(const demo_stage *s, const demo_sample *x, uint64_t seq,
			   unsigned nsubqs, const char *const *names)
{
	json_t *o = json_pack(
		"{s:I,s:f,s:I,s:I,s:f,s:f,s:f,"
		"s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:{s:i,s:i},s:i,s:i,"
		"s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
		"seq", (json_int_t)seq, "t", x->t, "size", (json_int_t)x->size, "capacity",
		(json_int_t)x->capacity, "rate", x->rate, "wakeup_factor", x->wakeup_factor,
		"sleep_factor", x->sleep_factor,
		"workers", "active", (int)x->workers_active, "asleep", (int)x->workers_asleep, "idle",
		(int)x->workers_idle, "min", (int)x->workers_min, "max", (int)x->workers_max, "busy",
		(int)x->workers_busy, "overrunning", (int)x->workers_overrunning, "stuck",
		(int)x->workers_stuck,
		"producers", "active", (int)x->producers_active, "max", (int)s->spec.producers_max,
		"producers_blocked", (int)x->producers_blocked, "dlq_waiting", (int)x->dlq_waiting,
		"counters", "in", (json_int_t)x->in, "processed", (json_int_t)x->processed, "failed",
		(json_int_t)x->failed, "leaked", (json_int_t)x->leaked, "lost", (json_int_t)x->lost,
		"expired", (json_int_t)x->expired, "leaked_rear", (json_int_t)x->leaked_rear,
		"leaked_front", (json_int_t)x->leaked_front, "leaked_failed",
		(json_int_t)x->leaked_failed, "leaked_deadline", (json_int_t)x->leaked_deadline,
		"leaked_closed", (json_int_t)x->leaked_closed, "retried", (json_int_t)x->retried,
		"timed_out", (json_int_t)x->timed_out);
	if (o == NULL)
		return NULL;
	json_t *qos = json_null();
	if (nsubqs > 0) {
		json_t *subqs = json_array();
		for (unsigned i = 0; i < nsubqs; i++)
			json_array_append_new(subqs, json_pack("{s:s,s:I}", "name", names[i], "size",
							       (json_int_t)x->subq_size[i]));
		qos = json_pack("{s:{s:I},s:o}", "egress", "size", (json_int_t)x->egress_size,
				"subqs", subqs);
	}
	json_object_set_new(o, "qos", qos);
	if (s->dump != NULL)
		json_object_set_new(o, "dump", json_pack("{s:I,s:I}", "written",
							 (json_int_t)x->dump_written, "dropped",
							 (json_int_t)x->dump_dropped));
	if (s->restorer != NULL)
		json_object_set_new(o, "restore",
				    json_pack("{s:I}", "restored", (json_int_t)x->restored));
	return o;
}

char *demo_stage_history_json(demo_stage *s, uint64_t after)
{
	unsigned nsubqs = demo_history_nsubqs(s->history);
	const char *names[BLQ_QOS_SUBQS_MAX];
	blq_qos_subq_stats q;
	for (unsigned i = 0; i < nsubqs; i++)
		names[i] = blq_qos_subq_info(s->q, i, &q) == 0 && q.name != NULL ? q.name : "";
	size_t n;
	uint64_t first;
	void *samples = demo_history_since(s->history, after, &n, &first);
	if (samples == NULL && n > 0)
		return NULL;
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		json_t *v = sample_json(s, demo_history_at(samples, nsubqs, i), first + i, nsubqs,
					names);
		if (v == NULL || json_array_append_new(arr, v) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	free(samples);
	json_t *o = arr != NULL ? json_pack("{s:s,s:I,s:f,s:i,s:o}", "key", s->key, "instance",
					    (json_int_t)s->instance, "period_s",
					    DEMO_HISTORY_PERIOD_MS / 1000.0, "capacity",
					    (int)demo_history_capacity(s->history), "samples", arr)
				: NULL;
	char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}
