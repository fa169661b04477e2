/*
 * The init body: JSON (jansson) to demo_spec, one checked field at a
 * time, with the checked reads of spec_json.c. Every field is read in a
 * row and the first problem is reported with its path; unknown fields are
 * refused (a typo must not silently fall back to a default). Ranges and
 * sizes are bounded here, before the queue's own config checks, so a
 * hostile body cannot ask for a billion producers.
 */
#include "spec.h"
#include "spec_json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* workers_schedule or producers_schedule. */
static unsigned parse_schedule(parse_ctx *p, json_t *root, const char *name, bool workers,
			       demo_range *out)
{
	json_t *arr = sj_get_array(p, root, name, DEMO_SCHEDULE_MAX);
	if (arr == NULL)
		return 0;
	static const char *const wkeys[] = {"range", "rel_range", "workers_min", "workers_max",
					    "wakeup_factor", "sleep_factor", NULL};
	static const char *const pkeys[] = {"range", "rel_range", "producers", NULL};
	size_t i;
	json_t *r;
	json_array_foreach(arr, i, r) {
		char at[64];
		snprintf(at, sizeof at, "%s[%zu]", name, i);
		if (!json_is_object(r)) {
			sj_fail(p, at, "expected an object, got %s", sj_type_name(r));
			return 0;
		}
		sj_check_keys(p, r, at, workers ? wkeys : pkeys);
		demo_range *d = &out[i];
		char abs[sizeof d->range], rel[sizeof d->range];
		sj_get_string(p, r, at, "range", abs, sizeof abs);
		sj_get_string(p, r, at, "rel_range", rel, sizeof rel);
		if (p->failed)
			return 0;
		if ((abs[0] != '\0') == (rel[0] != '\0')) {
			sj_fail(p, at, "needs exactly one of range (time of day) and rel_range");
			return 0;
		}
		d->relative = rel[0] != '\0';
		memcpy(d->range, d->relative ? rel : abs, sizeof d->range);
		if (workers) {
			d->workers_min = (unsigned)sj_get_uint(p, r, at, "workers_min", 1024);
			d->workers_max = (unsigned)sj_get_uint(p, r, at, "workers_max", 1024);
			d->wakeup_factor = sj_get_real(p, r, at, "wakeup_factor", 0, 1);
			d->sleep_factor = sj_get_real(p, r, at, "sleep_factor", 0, 1);
		} else {
			d->producers = (unsigned)sj_get_uint(p, r, at, "producers", DEMO_PRODUCERS_MAX);
		}
	}
	return (unsigned)json_array_size(arr);
}

static void parse_qos(parse_ctx *p, json_t *q, demo_spec *s)
{
	static const char *const keys[] = {"algo", "egress", "queues", NULL};
	static const char *const ekeys[] = {"capacity", "streams", "workers", "idle_threshold",
					    "idle_timeout", NULL};
	static const char *const qkeys[] = {"name", "capacity", "weight", "ingress_weight",
					    "egress_weight", NULL};
	sj_check_keys(p, q, "qos", keys);
	char algo[16];
	sj_get_string(p, q, "qos", "algo", algo, sizeof algo);
	if (p->failed)
		return;
	if (strcmp(algo, "PQ") == 0)
		s->qos.algo = BLQ_QOS_PQ;
	else if (strcmp(algo, "RR") == 0)
		s->qos.algo = BLQ_QOS_RR;
	else if (strcmp(algo, "WRR") == 0)
		s->qos.algo = BLQ_QOS_WRR;
	else {
		sj_fail(p, "qos.algo", "unknown algorithm \"%s\" (PQ, RR or WRR)", algo);
		return;
	}
	json_t *e = sj_get_object(p, q, "qos", "egress");
	if (e != NULL) {
		sj_check_keys(p, e, "qos.egress", ekeys);
		s->qos.egress.capacity = sj_get_uint(p, e, "qos.egress", "capacity", DEMO_CAPACITY_MAX);
		s->qos.egress.streams = (unsigned)sj_get_uint(p, e, "qos.egress", "streams", 1024);
		s->qos.egress.workers = (unsigned)sj_get_uint(p, e, "qos.egress", "workers", 64);
		s->qos.egress.idle_threshold =
			(unsigned)sj_get_uint(p, e, "qos.egress", "idle_threshold", UINT32_MAX);
		s->qos.egress.idle_timeout_ns =
			sj_get_uint(p, e, "qos.egress", "idle_timeout", DEMO_DURATION_MAX);
	}
	json_t *arr = sj_member(q, "queues");
	if (arr == NULL || !json_is_array(arr)) {
		sj_fail(p, "qos.queues", arr == NULL ? "required (2 or more sub-queues)"
						  : "expected an array");
		return;
	}
	if (json_array_size(arr) > BLQ_QOS_SUBQS_MAX) {
		sj_fail(p, "qos.queues", "at most %u sub-queues", BLQ_QOS_SUBQS_MAX);
		return;
	}
	size_t i;
	json_t *sq;
	uint64_t total = s->qos.egress.capacity;
	json_array_foreach(arr, i, sq) {
		char at[64];
		snprintf(at, sizeof at, "qos.queues[%zu]", i);
		if (!json_is_object(sq)) {
			sj_fail(p, at, "expected an object, got %s", sj_type_name(sq));
			return;
		}
		sj_check_keys(p, sq, at, qkeys);
		demo_subq *d = &s->qos.queues[i];
		sj_get_string(p, sq, at, "name", d->name, sizeof d->name);
		d->capacity = sj_get_uint(p, sq, at, "capacity", DEMO_CAPACITY_MAX);
		d->weight = sj_get_uint(p, sq, at, "weight", UINT32_MAX);
		d->ingress_weight = sj_get_uint(p, sq, at, "ingress_weight", UINT32_MAX);
		d->egress_weight = sj_get_uint(p, sq, at, "egress_weight", UINT32_MAX);
		total += d->capacity;
	}
	if (!p->failed && total > DEMO_CAPACITY_MAX)
		sj_fail(p, "qos.queues", "capacities add up to %llu, above %u",
		     (unsigned long long)total, DEMO_CAPACITY_MAX);
	s->qos.nqueues = (unsigned)json_array_size(arr);
}

static void parse_dump(parse_ctx *p, json_t *root, demo_spec *s)
{
	static const char *const dkeys[] = {"capacity", "flush", "buffer", "writer",
					    "redis_addr", "redis_key", NULL};
	static const char *const rkeys[] = {"check", "postpone", "allow_rate", "max_restores",
					    NULL};
	json_t *d = sj_get_object(p, root, "", "dump");
	if (d != NULL) {
		s->has_dump = true;
		sj_check_keys(p, d, "dump", dkeys);
		s->dump.capacity = sj_get_uint(p, d, "dump", "capacity", DEMO_DUMP_CAPACITY_MAX);
		s->dump.flush_ns = sj_get_uint(p, d, "dump", "flush", DEMO_DURATION_MAX);
		s->dump.buffer = sj_get_uint(p, d, "dump", "buffer", DEMO_DUMP_CAPACITY_MAX);
		if (s->dump.buffer != 0 && s->dump.buffer < BLQ_DUMP_FS_WRITE_BUFFER_MIN)
			sj_fail(p, "dump.buffer", "must be 0 or %u..%u bytes (the fs writer's write "
				"size), got %llu", (unsigned)BLQ_DUMP_FS_WRITE_BUFFER_MIN,
				(unsigned)DEMO_DUMP_CAPACITY_MAX, (unsigned long long)s->dump.buffer);
		char writer[16];
		sj_get_string(p, d, "dump", "writer", writer, sizeof writer);
		sj_get_string(p, d, "dump", "redis_addr", s->dump.redis_addr, sizeof s->dump.redis_addr);
		sj_get_string(p, d, "dump", "redis_key", s->dump.redis_key, sizeof s->dump.redis_key);
		if (p->failed)
			return;
		if (strcmp(writer, "redis") == 0)
			s->dump.redis = true;
		else if (writer[0] != '\0' && strcmp(writer, "fs") != 0)
			sj_fail(p, "dump.writer", "unknown writer \"%s\" (fs or redis)", writer);
		else if (s->dump.redis_addr[0] != '\0' || s->dump.redis_key[0] != '\0')
			sj_fail(p, "dump.redis_addr", "set only with \"writer\": \"redis\"");
		if (!p->failed && s->dump.capacity == 0)
			sj_fail(p, "dump.capacity", "required: the batch size in bytes (1..%u)",
			     DEMO_DUMP_CAPACITY_MAX);
		if (!p->failed && !s->allow_leak)
			sj_fail(p, "dump", "needs \"allow_leak\": true (the dump is the queue's DLQ)");
	}
	json_t *r = sj_get_object(p, root, "", "restore");
	if (r != NULL) {
		s->has_restore = true;
		sj_check_keys(p, r, "restore", rkeys);
		s->restore.check_ns = sj_get_uint(p, r, "restore", "check", DEMO_DURATION_MAX);
		s->restore.postpone_ns = sj_get_uint(p, r, "restore", "postpone", DEMO_DURATION_MAX);
		s->restore.allow_rate = sj_get_real(p, r, "restore", "allow_rate", 0, 1);
		s->restore.max_restores = (uint32_t)sj_get_uint(p, r, "restore", "max_restores",
								 DEMO_MAX_RESTORES_MAX);
		if (!p->failed && !s->has_dump)
			sj_fail(p, "restore", "needs \"dump\" (it restores what the dump wrote)");
		if (!p->failed && sj_member(r, "allow_rate") != NULL && s->restore.allow_rate == 0)
			sj_fail(p, "restore.allow_rate", "must be in (0, 1]");
	}
}

static const char *const root_keys[] = {
	"capacity", "streams", "workers", "heartbeat", "workers_min", "workers_max",
	"worker_delay", "wakeup_factor", "sleep_factor", "sleep_threshold", "workers_schedule",
	"producers_min", "producers_max", "producer_delay", "producers_schedule", "fail_rate",
	"max_retries", "retry_interval_ns", "backoff", "allow_leak", "leak_direction",
	"allow_deadline", "front_leak_attempts", "dump", "restore", "delay_ns", "qos",
	"fail_to_dlq", NULL};

static void parse_root(parse_ctx *p, json_t *root, demo_spec *s)
{
	sj_check_keys(p, root, "", root_keys);
	s->capacity = sj_get_uint(p, root, "", "capacity", DEMO_CAPACITY_MAX);
	s->streams = (unsigned)sj_get_uint(p, root, "", "streams", 1024);
	s->workers = (unsigned)sj_get_uint(p, root, "", "workers", 1024);
	s->heartbeat_ns = sj_get_uint(p, root, "", "heartbeat", DEMO_DURATION_MAX);
	s->workers_min = (unsigned)sj_get_uint(p, root, "", "workers_min", 1024);
	s->workers_max = (unsigned)sj_get_uint(p, root, "", "workers_max", 1024);
	s->worker_delay_ns = sj_get_uint(p, root, "", "worker_delay", DEMO_DURATION_MAX);
	if (s->worker_delay_ns == 0)
		s->worker_delay_ns = 75; /* the original's defaults, set here once */
	s->wakeup_factor = sj_get_real(p, root, "", "wakeup_factor", 0, 1);
	s->sleep_factor = sj_get_real(p, root, "", "sleep_factor", 0, 1);
	s->sleep_threshold = (unsigned)sj_get_uint(p, root, "", "sleep_threshold", 1024);
	s->n_workers_schedule = parse_schedule(p, root, "workers_schedule", true, s->workers_schedule);
	s->producers_min = (unsigned)sj_get_uint(p, root, "", "producers_min", DEMO_PRODUCERS_MAX);
	s->producers_max = (unsigned)sj_get_uint(p, root, "", "producers_max", DEMO_PRODUCERS_MAX);
	s->producer_delay_ns = sj_get_uint(p, root, "", "producer_delay", DEMO_DURATION_MAX);
	if (s->producer_delay_ns == 0)
		s->producer_delay_ns = 50;
	s->n_producers_schedule =
		parse_schedule(p, root, "producers_schedule", false, s->producers_schedule);
	s->fail_rate = sj_get_real(p, root, "", "fail_rate", 0, 1);
	s->max_retries = (unsigned)sj_get_uint(p, root, "", "max_retries", 1000000);
	s->retry_interval_ns = sj_get_uint(p, root, "", "retry_interval_ns", DEMO_DURATION_MAX);
	s->allow_leak = sj_get_bool(p, root, "allow_leak");
	s->allow_deadline = sj_get_bool(p, root, "allow_deadline");
	s->fail_to_dlq = sj_get_bool(p, root, "fail_to_dlq");
	s->front_leak_attempts = (unsigned)sj_get_uint(p, root, "", "front_leak_attempts", 1000);
	s->delay_ns = sj_get_uint(p, root, "", "delay_ns", DEMO_DURATION_MAX);

	char word[16];
	sj_get_string(p, root, "", "backoff", word, sizeof word);
	static const char *const backoffs[] = {"", "linear", "exponential", "quadratic",
					       "polynomial", "logarithmic", "fibonacci", "random"};
	bool known = false;
	for (unsigned i = 0; i < sizeof backoffs / sizeof *backoffs && !p->failed; i++)
		if (strcmp(word, backoffs[i]) == 0) {
			/* The names follow enum blq_backoff's order. */
			s->backoff = (enum blq_backoff)i;
			known = true;
		}
	if (!known)
		sj_fail(p, "backoff", "unknown backoff \"%s\" (linear, exponential, quadratic, "
				   "polynomial, logarithmic, fibonacci or random)", word);
	sj_get_string(p, root, "", "leak_direction", word, sizeof word);
	if (strcmp(word, "front") == 0)
		s->leak_direction = BLQ_LEAK_FRONT;
	else if (word[0] != '\0' && strcmp(word, "rear") != 0)
		sj_fail(p, "leak_direction", "unknown direction \"%s\" (rear or front)", word);

	json_t *q = sj_get_object(p, root, "", "qos");
	if (q != NULL) {
		s->has_qos = true;
		parse_qos(p, q, s);
	}
	parse_dump(p, root, s);

	if (p->failed)
		return;
	if (s->fail_to_dlq && !s->allow_leak) {
		sj_fail(p, "fail_to_dlq", "needs \"allow_leak\": true (failed items go to the DLQ)");
		return;
	}
	/* Checks the library does not make, because producers are the demo's. */
	if (s->producers_min > s->producers_max)
		sj_fail(p, "producers_min", "must be <= producers_max (%u > %u)", s->producers_min,
		     s->producers_max);
	for (unsigned i = 0; i < s->n_producers_schedule && !p->failed; i++)
		if (s->producers_schedule[i].producers > s->producers_max)
			sj_fail(p, "producers_schedule", "range %u asks for %u producers, above "
			     "producers_max %u", i, s->producers_schedule[i].producers, s->producers_max);
	/* Build both schedules once, so a bad range is the request's error
	 * (400) rather than a failure halfway through starting the queue. */
	const struct {
		const demo_range *r;
		unsigned n;
		bool producers;
		const char *name;
	} scheds[] = {{s->workers_schedule, s->n_workers_schedule, false, "workers_schedule"},
		      {s->producers_schedule, s->n_producers_schedule, true, "producers_schedule"}};
	for (unsigned i = 0; i < 2 && !p->failed; i++) {
		if (scheds[i].n == 0)
			continue;
		blq_schedule *sch = demo_spec_schedule(scheds[i].r, scheds[i].n, scheds[i].producers,
						       scheds[i].name, p->err, p->errlen);
		if (sch == NULL)
			p->failed = true;
		blq_schedule_free(sch);
	}
}

int demo_spec_parse(const char *body, size_t len, demo_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	parse_ctx p = {.err = err, .errlen = errlen};
	if (errlen > 0)
		err[0] = '\0';
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		snprintf(err, errlen, "body: malformed JSON at line %d column %d: %s", je.line,
			 je.column, je.text);
		return -1;
	}
	if (!json_is_object(root))
		sj_fail(&p, "body", "expected a JSON object, got %s", sj_type_name(root));
	else
		parse_root(&p, root, out);
	json_decref(root);
	return p.failed ? -1 : 0;
}

bool demo_key_valid(const char *key)
{
	size_t n = 0;
	for (; key[n] != '\0'; n++) {
		char c = key[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';
		if (!ok || n >= 63)
			return false;
	}
	return n > 0;
}
