/* The init body: JSON (jansson) to demo_spec, one checked field at a time. */
#include "spec.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Where the parse is, for messages: "qos.queues[2].capacity". */
typedef struct parse_ctx {
	char *err;
	size_t errlen;
	bool failed;
} parse_ctx;

static void fail(parse_ctx *p, const char *path, const char *fmt, ...)
{
	if (p->failed)
		return; /* the first problem is the one reported */
	p->failed = true;
	int n = snprintf(p->err, p->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static void join(char *dst, size_t len, const char *prefix, const char *name)
{
	if (prefix[0] != '\0')
		snprintf(dst, len, "%s.%s", prefix, name);
	else
		snprintf(dst, len, "%s", name);
}

/* Refuses members not in @allowed (a NULL-terminated list). */
static void check_keys(parse_ctx *p, json_t *obj, const char *path, const char *const *allowed)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		bool known = false;
		for (const char *const *a = allowed; *a != NULL && !known; a++)
			known = strcmp(*a, k) == 0;
		if (!known) {
			char at[128];
			join(at, sizeof at, path, k);
			fail(p, at, "unknown field");
			return;
		}
	}
}

/* The member, or NULL when absent or null. */
static json_t *member(json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);
	return v != NULL && !json_is_null(v) ? v : NULL;
}

/* An unsigned integer in [0, max]; integral reals such as 1e5 count. */
static uint64_t get_uint(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
			 uint64_t max)
{
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return 0;
	char at[128];
	join(at, sizeof at, prefix, name);
	double d;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0) {
			fail(p, at, "must not be negative (got %lld)", (long long)i);
			return 0;
		}
		if ((uint64_t)i > max) {
			fail(p, at, "at most %llu (got %lld)", (unsigned long long)max, (long long)i);
			return 0;
		}
		return (uint64_t)i;
	}
	if (!json_is_real(v)) {
		fail(p, at, "expected a non-negative integer, got %s", type_name(v));
		return 0;
	}
	d = json_real_value(v);
	if (d < 0 || d != floor(d)) {
		fail(p, at, "expected a non-negative integer, got %g", d);
		return 0;
	}
	if (d > (double)max) {
		fail(p, at, "at most %llu (got %g)", (unsigned long long)max, d);
		return 0;
	}
	return (uint64_t)d;
}

static double get_real(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
		       double lo, double hi)
{
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return 0;
	char at[128];
	join(at, sizeof at, prefix, name);
	if (!json_is_number(v)) {
		fail(p, at, "expected a number, got %s", type_name(v));
		return 0;
	}
	double d = json_number_value(v);
	if (!(d >= lo && d <= hi)) {
		fail(p, at, "must be in [%g, %g] (got %g)", lo, hi, d);
		return 0;
	}
	return d;
}

static bool get_bool(parse_ctx *p, json_t *obj, const char *name)
{
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return false;
	if (!json_is_boolean(v)) {
		fail(p, name, "expected true or false, got %s", type_name(v));
		return false;
	}
	return json_is_true(v);
}

/* A string into dst (at most cap-1 bytes); "" when absent. */
static void get_string(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
		       char *dst, size_t cap)
{
	dst[0] = '\0';
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return;
	char at[128];
	join(at, sizeof at, prefix, name);
	if (!json_is_string(v)) {
		fail(p, at, "expected a string, got %s", type_name(v));
		return;
	}
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (n >= cap) {
		fail(p, at, "longer than %zu bytes", cap - 1);
		return;
	}
	if (strlen(s) != n) {
		fail(p, at, "contains a NUL byte");
		return;
	}
	memcpy(dst, s, n + 1);
}

/* An object member, or NULL (absent, null, or not an object: failed). */
static json_t *get_object(parse_ctx *p, json_t *obj, const char *prefix, const char *name)
{
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return NULL;
	if (!json_is_object(v)) {
		char at[128];
		join(at, sizeof at, prefix, name);
		fail(p, at, "expected an object, got %s", type_name(v));
		return NULL;
	}
	return v;
}

static json_t *get_array(parse_ctx *p, json_t *obj, const char *name, size_t max)
{
	json_t *v = member(obj, name);
	if (v == NULL || p->failed)
		return NULL;
	if (!json_is_array(v)) {
		fail(p, name, "expected an array, got %s", type_name(v));
		return NULL;
	}
	if (json_array_size(v) > max) {
		fail(p, name, "at most %zu entries (got %zu)", max, json_array_size(v));
		return NULL;
	}
	return v;
}

/* workers_schedule or producers_schedule. */
static unsigned parse_schedule(parse_ctx *p, json_t *root, const char *name, bool workers,
			       demo_range *out)
{
	json_t *arr = get_array(p, root, name, DEMO_SCHEDULE_MAX);
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
			fail(p, at, "expected an object, got %s", type_name(r));
			return 0;
		}
		check_keys(p, r, at, workers ? wkeys : pkeys);
		demo_range *d = &out[i];
		char abs[sizeof d->range], rel[sizeof d->range];
		get_string(p, r, at, "range", abs, sizeof abs);
		get_string(p, r, at, "rel_range", rel, sizeof rel);
		if (p->failed)
			return 0;
		if ((abs[0] != '\0') == (rel[0] != '\0')) {
			fail(p, at, "needs exactly one of range (time of day) and rel_range");
			return 0;
		}
		d->relative = rel[0] != '\0';
		memcpy(d->range, d->relative ? rel : abs, sizeof d->range);
		if (workers) {
			d->workers_min = (unsigned)get_uint(p, r, at, "workers_min", 1024);
			d->workers_max = (unsigned)get_uint(p, r, at, "workers_max", 1024);
			d->wakeup_factor = get_real(p, r, at, "wakeup_factor", 0, 1);
			d->sleep_factor = get_real(p, r, at, "sleep_factor", 0, 1);
		} else {
			d->producers = (unsigned)get_uint(p, r, at, "producers", DEMO_PRODUCERS_MAX);
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
	check_keys(p, q, "qos", keys);
	char algo[16];
	get_string(p, q, "qos", "algo", algo, sizeof algo);
	if (p->failed)
		return;
	if (strcmp(algo, "PQ") == 0)
		s->qos.algo = BLQ_QOS_PQ;
	else if (strcmp(algo, "RR") == 0)
		s->qos.algo = BLQ_QOS_RR;
	else if (strcmp(algo, "WRR") == 0)
		s->qos.algo = BLQ_QOS_WRR;
	else {
		fail(p, "qos.algo", "unknown algorithm \"%s\" (PQ, RR or WRR)", algo);
		return;
	}
	json_t *e = get_object(p, q, "qos", "egress");
	if (e != NULL) {
		check_keys(p, e, "qos.egress", ekeys);
		s->qos.egress.capacity = get_uint(p, e, "qos.egress", "capacity", DEMO_CAPACITY_MAX);
		s->qos.egress.streams = (unsigned)get_uint(p, e, "qos.egress", "streams", 1024);
		s->qos.egress.workers = (unsigned)get_uint(p, e, "qos.egress", "workers", 64);
		s->qos.egress.idle_threshold =
			(unsigned)get_uint(p, e, "qos.egress", "idle_threshold", UINT32_MAX);
		s->qos.egress.idle_timeout_ns =
			get_uint(p, e, "qos.egress", "idle_timeout", DEMO_DURATION_MAX);
	}
	json_t *arr = member(q, "queues");
	if (arr == NULL || !json_is_array(arr)) {
		fail(p, "qos.queues", arr == NULL ? "required (2 or more sub-queues)"
						  : "expected an array");
		return;
	}
	if (json_array_size(arr) > BLQ_QOS_SUBQS_MAX) {
		fail(p, "qos.queues", "at most %u sub-queues", BLQ_QOS_SUBQS_MAX);
		return;
	}
	size_t i;
	json_t *sq;
	uint64_t total = s->qos.egress.capacity;
	json_array_foreach(arr, i, sq) {
		char at[64];
		snprintf(at, sizeof at, "qos.queues[%zu]", i);
		if (!json_is_object(sq)) {
			fail(p, at, "expected an object, got %s", type_name(sq));
			return;
		}
		check_keys(p, sq, at, qkeys);
		demo_subq *d = &s->qos.queues[i];
		get_string(p, sq, at, "name", d->name, sizeof d->name);
		d->capacity = get_uint(p, sq, at, "capacity", DEMO_CAPACITY_MAX);
		d->weight = get_uint(p, sq, at, "weight", UINT32_MAX);
		d->ingress_weight = get_uint(p, sq, at, "ingress_weight", UINT32_MAX);
		d->egress_weight = get_uint(p, sq, at, "egress_weight", UINT32_MAX);
		total += d->capacity;
	}
	if (!p->failed && total > DEMO_CAPACITY_MAX)
		fail(p, "qos.queues", "capacities add up to %llu, above %u",
		     (unsigned long long)total, DEMO_CAPACITY_MAX);
	s->qos.nqueues = (unsigned)json_array_size(arr);
}

static void parse_dump(parse_ctx *p, json_t *root, demo_spec *s)
{
	static const char *const dkeys[] = {"capacity", "flush", "buffer", "writer",
					    "redis_addr", "redis_key", NULL};
	static const char *const rkeys[] = {"check", "postpone", "allow_rate", NULL};
	json_t *d = get_object(p, root, "", "dump");
	if (d != NULL) {
		s->has_dump = true;
		check_keys(p, d, "dump", dkeys);
		s->dump.capacity = get_uint(p, d, "dump", "capacity", DEMO_DUMP_CAPACITY_MAX);
		s->dump.flush_ns = get_uint(p, d, "dump", "flush", DEMO_DURATION_MAX);
		s->dump.buffer = get_uint(p, d, "dump", "buffer", DEMO_DUMP_CAPACITY_MAX);
		char writer[16];
		get_string(p, d, "dump", "writer", writer, sizeof writer);
		get_string(p, d, "dump", "redis_addr", s->dump.redis_addr, sizeof s->dump.redis_addr);
		get_string(p, d, "dump", "redis_key", s->dump.redis_key, sizeof s->dump.redis_key);
		if (p->failed)
			return;
		if (strcmp(writer, "redis") == 0)
			s->dump.redis = true;
		else if (writer[0] != '\0' && strcmp(writer, "fs") != 0)
			fail(p, "dump.writer", "unknown writer \"%s\" (fs or redis)", writer);
		else if (s->dump.redis_addr[0] != '\0' || s->dump.redis_key[0] != '\0')
			fail(p, "dump.redis_addr", "set only with \"writer\": \"redis\"");
		if (!p->failed && s->dump.capacity == 0)
			fail(p, "dump.capacity", "required: the batch size in bytes (1..%u)",
			     DEMO_DUMP_CAPACITY_MAX);
		if (!p->failed && !s->allow_leak)
			fail(p, "dump", "needs \"allow_leak\": true (the dump is the queue's DLQ)");
	}
	json_t *r = get_object(p, root, "", "restore");
	if (r != NULL) {
		s->has_restore = true;
		check_keys(p, r, "restore", rkeys);
		s->restore.check_ns = get_uint(p, r, "restore", "check", DEMO_DURATION_MAX);
		s->restore.postpone_ns = get_uint(p, r, "restore", "postpone", DEMO_DURATION_MAX);
		s->restore.allow_rate = get_real(p, r, "restore", "allow_rate", 0, 1);
		if (!p->failed && !s->has_dump)
			fail(p, "restore", "needs \"dump\" (it restores what the dump wrote)");
		if (!p->failed && member(r, "allow_rate") != NULL && s->restore.allow_rate == 0)
			fail(p, "restore.allow_rate", "must be in (0, 1]");
	}
}

static const char *const root_keys[] = {
	"capacity", "streams", "workers", "heartbeat", "workers_min", "workers_max",
	"worker_delay", "wakeup_factor", "sleep_factor", "sleep_threshold", "workers_schedule",
	"producers_min", "producers_max", "producer_delay", "producers_schedule", "fail_rate",
	"max_retries", "retry_interval_ns", "backoff", "allow_leak", "leak_direction",
	"allow_deadline", "front_leak_attempts", "dump", "restore", "delay_ns", "qos", NULL};

static void parse_root(parse_ctx *p, json_t *root, demo_spec *s)
{
	check_keys(p, root, "", root_keys);
	s->capacity = get_uint(p, root, "", "capacity", DEMO_CAPACITY_MAX);
	s->streams = (unsigned)get_uint(p, root, "", "streams", 1024);
	s->workers = (unsigned)get_uint(p, root, "", "workers", 1024);
	s->heartbeat_ns = get_uint(p, root, "", "heartbeat", DEMO_DURATION_MAX);
	s->workers_min = (unsigned)get_uint(p, root, "", "workers_min", 1024);
	s->workers_max = (unsigned)get_uint(p, root, "", "workers_max", 1024);
	s->worker_delay_ns = get_uint(p, root, "", "worker_delay", DEMO_DURATION_MAX);
	if (s->worker_delay_ns == 0)
		s->worker_delay_ns = 75; /* the original's defaults, set here once */
	s->wakeup_factor = get_real(p, root, "", "wakeup_factor", 0, 1);
	s->sleep_factor = get_real(p, root, "", "sleep_factor", 0, 1);
	s->sleep_threshold = (unsigned)get_uint(p, root, "", "sleep_threshold", 1024);
	s->n_workers_schedule = parse_schedule(p, root, "workers_schedule", true, s->workers_schedule);
	s->producers_min = (unsigned)get_uint(p, root, "", "producers_min", DEMO_PRODUCERS_MAX);
	s->producers_max = (unsigned)get_uint(p, root, "", "producers_max", DEMO_PRODUCERS_MAX);
	s->producer_delay_ns = get_uint(p, root, "", "producer_delay", DEMO_DURATION_MAX);
	if (s->producer_delay_ns == 0)
		s->producer_delay_ns = 50;
	s->n_producers_schedule =
		parse_schedule(p, root, "producers_schedule", false, s->producers_schedule);
	s->fail_rate = get_real(p, root, "", "fail_rate", 0, 1);
	s->max_retries = (unsigned)get_uint(p, root, "", "max_retries", 1000000);
	s->retry_interval_ns = get_uint(p, root, "", "retry_interval_ns", DEMO_DURATION_MAX);
	s->allow_leak = get_bool(p, root, "allow_leak");
	s->allow_deadline = get_bool(p, root, "allow_deadline");
	s->front_leak_attempts = (unsigned)get_uint(p, root, "", "front_leak_attempts", 1000);
	s->delay_ns = get_uint(p, root, "", "delay_ns", DEMO_DURATION_MAX);

	char word[16];
	get_string(p, root, "", "backoff", word, sizeof word);
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
		fail(p, "backoff", "unknown backoff \"%s\" (linear, exponential, quadratic, "
				   "polynomial, logarithmic, fibonacci or random)", word);
	get_string(p, root, "", "leak_direction", word, sizeof word);
	if (strcmp(word, "front") == 0)
		s->leak_direction = BLQ_LEAK_FRONT;
	else if (word[0] != '\0' && strcmp(word, "rear") != 0)
		fail(p, "leak_direction", "unknown direction \"%s\" (rear or front)", word);

	json_t *q = get_object(p, root, "", "qos");
	if (q != NULL) {
		s->has_qos = true;
		parse_qos(p, q, s);
	}
	parse_dump(p, root, s);

	if (p->failed)
		return;
	/* Checks the library does not make, because producers are the demo's. */
	if (s->producers_min > s->producers_max)
		fail(p, "producers_min", "must be <= producers_max (%u > %u)", s->producers_min,
		     s->producers_max);
	for (unsigned i = 0; i < s->n_producers_schedule && !p->failed; i++)
		if (s->producers_schedule[i].producers > s->producers_max)
			fail(p, "producers_schedule", "range %u asks for %u producers, above "
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
		fail(&p, "body", "expected a JSON object, got %s", type_name(root));
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
