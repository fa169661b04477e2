/*
 * The DLQ endpoints (dlq_api.h): parse and check the request, borrow the
 * key's stage, open an inspector of its dump, answer in JSON.
 *
 * Design
 * - Every check comes before anything is opened or changed, and each
 *   refusal names the argument and what it takes (400), the key (404), or
 *   why the key cannot (409: no dump, no dead store, a redrive running).
 * - Reads (summary, records, download) may come from any origin, like the
 *   other reads; redrive and purge are POST only and http.c refuses them
 *   from another site (origin.h), as the other changes.
 * - Long work runs on the redrive's thread (redrive.h); a request only
 *   counts, lists a page (scan with skip and limit: page N costs the
 *   records before it) or deletes a bounded set of locations.
 * - The summary's ages are from CLOCK_REALTIME (records carry wall times).
 */
#include "dlq_api.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREVIEW_MAX 48u /* payload bytes shown per record */
#define DOWNLOAD_MAX (64u << 20) /* bytes of JSON lines in one download */

static bool fail(demo_dlq_reply *out, unsigned status, const char *fmt, const char *a)
{
	out->status = status;
	snprintf(out->error, sizeof out->error, fmt, a);
	return false;
}

static bool send_json(demo_dlq_reply *out, json_t *o)
{
	out->body = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (out->body == NULL)
		return fail(out, 500, "%s", "out of memory");
	out->status = 200;
	out->type = "application/json";
	return true;
}

static uint64_t wall_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static double age_s(uint64_t now, uint64_t t)
{
	return t != 0 && now > t ? (double)(now - t) / 1e9 : 0.0;
}

/* ?name=N: an integer in [lo, hi], @def when absent or empty. */
static bool arg_uint(demo_arg_fn arg, void *ctx, const char *name, uint64_t lo, uint64_t hi,
		     uint64_t def, uint64_t *v, demo_dlq_reply *out)
{
	bool cut = false;
	const char *s = arg(ctx, name, &cut);
	*v = def;
	if (s != NULL && s[0] != '\0') {
		uint64_t x = 0;
		for (const char *p = s; *p != '\0' && !cut; p++) {
			if (*p < '0' || *p > '9' || x > hi) {
				cut = true;
				break;
			}
			x = x * 10 + (uint64_t)(*p - '0');
		}
		if (cut || x < lo || x > hi) {
			out->status = 400;
			snprintf(out->error, sizeof out->error, "%s: expected an integer %llu..%llu",
				 name, (unsigned long long)lo, (unsigned long long)hi);
			return false;
		}
		*v = x;
	}
	return true;
}

/* An area by name ("dump", "quarantine", "dead"); -1 when unknown. */
static int area_of(const char *s)
{
	for (int a = BLQ_INSPECT_DUMP; a <= BLQ_INSPECT_DEAD; a++)
		if (s != NULL && strcmp(s, blq_inspect_area_name((enum blq_inspect_area)a)) == 0)
			return a;
	return -1;
}

/* ---- the key's dump ------------------------------------------------- */

/* A request's hold on the key: its stage, borrowed, and an inspector. */
typedef struct hold {
	demo_registry *reg;
	const char *key;
	demo_stage *s;
	bool has_dead;
	blq_inspect *in;
} hold;

static void release(hold *h)
{
	blq_inspect_close(h->in);
	if (h->s != NULL)
		demo_registry_put(h->reg, h->key);
}

static bool take(hold *h, demo_dlq_reply *out)
{
	bool stopping = false;
	h->s = demo_registry_get(h->reg, h->key, &stopping);
	if (h->s == NULL)
		return fail(out, 404, "queue \"%s\" not found", h->key);
	blq_inspect_config c;
	if (!demo_stage_inspect_config(h->s, &c, &h->has_dead))
		return fail(out, 409, "queue \"%s\" has no dump (init it with \"dump\": {...}); its "
				      "DLQ discards", h->key);
	blq_error e = {0};
	h->in = blq_inspect_open(&c, &e);
	if (h->in == NULL)
		return fail(out, e.code == BLQ_ENOMEM ? 500 : 502, "dlq: %s", e.msg);
	return true;
}

static bool needs_dead(const hold *h, int area, demo_dlq_reply *out)
{
	if (area == BLQ_INSPECT_DEAD && !h->has_dead)
		return fail(out, 409, "queue \"%s\" has no dead store (init it with "
				      "\"restore\": {\"max_restores\": N})", h->key);
	return true;
}

/* ---- GET dlq -------------------------------------------------------- */

typedef struct totals {
	json_t *areas[3];
	json_t *stream; /* the dump stream's group, pending, consumers */
} totals;

static int on_part(void *ctx, const blq_inspect_part *p)
{
	totals *t = ctx;
	json_t *a = t->areas[p->area];
	json_int_t parts = json_integer_value(json_object_get(a, "parts")) + 1;
	json_int_t oldest = json_integer_value(json_object_get(a, "oldest_ns"));
	json_int_t newest = json_integer_value(json_object_get(a, "newest_ns"));
	if (p->records > 0 && (oldest == 0 || (json_int_t)p->oldest_ns < oldest))
		oldest = (json_int_t)p->oldest_ns;
	if (p->records > 0 && (json_int_t)p->newest_ns > newest)
		newest = (json_int_t)p->newest_ns;
	static const char *const sums[] = {"records", "bytes", "damaged", "done"};
	const uint64_t add[] = {p->records, p->bytes, p->damaged, p->done};
	for (size_t i = 0; i < 4; i++)
		json_object_set_new(a, sums[i],
				    json_integer(json_integer_value(json_object_get(a, sums[i])) +
						 (json_int_t)add[i]));
	json_object_set_new(a, "parts", json_integer(parts));
	json_object_set_new(a, "held", json_integer(json_integer_value(json_object_get(a, "held")) +
						    (p->held ? 1 : 0)));
	json_object_set_new(a, "oldest_ns", json_integer(oldest));
	json_object_set_new(a, "newest_ns", json_integer(newest));
	if (p->stream && p->area == BLQ_INSPECT_DUMP) {
		json_t *cs = json_array();
		for (size_t i = 0; i < p->nconsumers; i++)
			json_array_append_new(cs, json_pack("{s:s,s:I}", "name", p->consumers[i].name,
							    "pending",
							    (json_int_t)p->consumers[i].pending));
		json_decref(t->stream);
		t->stream = json_pack("{s:s,s:b,s:I,s:o}", "key", p->name, "group_exists",
				      p->group_exists, "pending", (json_int_t)p->pending, "consumers",
				      cs);
	}
	return 0;
}

static bool summary(hold *h, demo_dlq_reply *out)
{
	totals t = {0};
	for (int a = 0; a < 3; a++)
		t.areas[a] = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "parts", 0, "records", 0,
				       "bytes", 0, "damaged", 0, "done", 0, "held", 0, "oldest_ns", 0,
				       "newest_ns", 0);
	blq_error e = {0};
	int rc = blq_inspect_list(h->in, on_part, &t, &e);
	if (rc != 0) {
		for (int a = 0; a < 3; a++)
			json_decref(t.areas[a]);
		json_decref(t.stream);
		return fail(out, rc == BLQ_ENOMEM ? 500 : 502, "dlq: %s", e.msg);
	}
	uint64_t now = wall_ns();
	json_t *areas = json_object();
	for (int a = 0; a < 3; a++) {
		json_t *o = t.areas[a];
		uint64_t oldest = (uint64_t)json_integer_value(json_object_get(o, "oldest_ns"));
		uint64_t newest = (uint64_t)json_integer_value(json_object_get(o, "newest_ns"));
		json_object_set_new(o, "oldest_age_s", json_real(age_s(now, oldest)));
		json_object_set_new(o, "newest_age_s", json_real(age_s(now, newest)));
		if (a == BLQ_INSPECT_DEAD && !h->has_dead) {
			json_decref(o);
			o = json_null();
		}
		json_object_set_new(areas, blq_inspect_area_name((enum blq_inspect_area)a), o);
	}
	blq_inspect_config c;
	bool dead;
	demo_stage_inspect_config(h->s, &c, &dead);
	json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:o}", "key", h->key, "kind",
			      c.key != NULL ? "redis" : "fs", "areas", areas, "stream",
			      t.stream ? t.stream : json_null(), "redrive",
			      demo_stage_redrive_json(h->s));
	return send_json(out, o);
}

/* ---- GET dlq/records ------------------------------------------------ */

/* The payload as text when it is printable ASCII, else hex; bounded. */
/* A string of a dump (a file's name, a Redis consumer, a queue's name)
 * as JSON text: they are bytes, not always UTF-8, and one that is not
 * would make json_pack fail the whole page; its bytes above 0x7f become
 * '?' then. */
static json_t *text_of(const char *s)
{
	json_t *j = json_string(s);
	if (j != NULL)
		return j;
	char *t = strdup(s);
	if (t == NULL)
		return NULL;
	for (char *c = t; *c != '\0'; c++)
		if ((unsigned char)*c > 0x7f)
			*c = '?';
	j = json_string(t);
	free(t);
	return j;
}

static json_t *preview(const unsigned char *d, size_t len)
{
	size_t n = len < PREVIEW_MAX ? len : PREVIEW_MAX;
	bool text = len > 0;
	for (size_t i = 0; i < n && text; i++)
		text = d[i] >= 0x20 && d[i] < 0x7f;
	char buf[2 * PREVIEW_MAX + 1];
	if (text) {
		memcpy(buf, d, n);
		buf[n] = '\0';
	} else {
		for (size_t i = 0; i < n; i++)
			snprintf(buf + 2 * i, 3, "%02x", d[i]);
		buf[2 * n] = '\0';
	}
	return json_pack("{s:s,s:s,s:b}", "kind", text ? "text" : "hex", "value", buf, "truncated",
			 len > n);
}

typedef struct page {
	json_t *records;
	uint64_t now;
} page;

static int on_page_record(void *ctx, const blq_inspect_record *r)
{
	page *pg = ctx;
	static const char *const states[] = {"ok", "damaged", "gone"};
	json_t *o = json_pack(
		"{s:o,s:s,s:s,s:I,s:I,s:i,s:i,s:I,s:f,s:b,s:o,s:s,s:i,s:i,s:o,s:o}", "loc", text_of(r->loc),
		"state", states[r->state], "damage", r->damage, "size", (json_int_t)r->size, "len",
		(json_int_t)r->len, "restores", (int)r->restores, "deliveries", (int)r->deliveries,
		"time_ns", (json_int_t)r->time_ns, "age_s", age_s(pg->now, r->time_ns), "pending",
		r->pending, "consumer", text_of(r->consumer ? r->consumer : ""), "reason",
		blq_dlq_reason_name(r->why.reason), "attempts", (int)r->why.attempts, "rc",
		(int)r->why.rc, "queue", text_of(r->why.queue), "preview",
		r->state == BLQ_INSPECT_OK ? preview(r->data, r->len) : json_null());
	return o != NULL ? json_array_append_new(pg->records, o) : -1;
}

static bool records(hold *h, demo_arg_fn arg, void *ctx, demo_dlq_reply *out)
{
	bool cut = false;
	const char *as = arg(ctx, "area", &cut);
	int area = as == NULL || as[0] == '\0' ? BLQ_INSPECT_DEAD : area_of(as);
	if (cut || area < 0)
		return fail(out, 400, "%s", "area: expected dump, quarantine or dead");
	uint64_t pgno, per;
	if (!arg_uint(arg, ctx, "page", 1, 1000000, 1, &pgno, out) ||
	    !arg_uint(arg, ctx, "per_page", 1, DEMO_DLQ_PER_PAGE_MAX, 50, &per, out))
		return false;
	const char *order = arg(ctx, "order", &cut);
	if (cut || (order != NULL && order[0] != '\0' && strcmp(order, "newest") != 0 &&
		    strcmp(order, "oldest") != 0))
		return fail(out, 400, "%s", "order: expected newest or oldest");
	unsigned reasons = 0;
	const char *rs = arg(ctx, "reason", &cut);
	for (const char *p = rs; p != NULL && *p != '\0' && !cut;) {
		size_t n = strcspn(p, ",");
		char name[32];
		enum blq_dlq_reason r = BLQ_DLQ_UNKNOWN;
		snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), p);
		if (n > 31 || blq_dlq_reason_parse(name, &r) != 0)
			return fail(out, 400, "%s", "reason: expected a comma-separated list of "
						    "unknown, overflow_rear, overflow_front, failed, "
						    "deadline, closed");
		reasons |= 1u << r;
		p += n + (p[n] == ',');
	}
	if (cut)
		return fail(out, 400, "%s", "reason: holds a NUL byte");
	if (!needs_dead(h, area, out))
		return false;
	bool newest = order == NULL || order[0] == '\0' || strcmp(order, "newest") == 0;
	const char *aname = blq_inspect_area_name((enum blq_inspect_area)area);
	blq_inspect_filter f = {.part = aname, .newest_first = newest, .reasons = reasons,
				.skip = (pgno - 1) * per, .limit = per};
	page pg = {.records = json_array(), .now = wall_ns()};
	blq_error e = {0};
	int rc = blq_inspect_scan(h->in, &f, on_page_record, &pg, &e);
	if (rc != 0) {
		json_decref(pg.records);
		return fail(out, rc == BLQ_ENOMEM ? 500 : 502, "dlq: %s", e.msg[0] ? e.msg : "scan");
	}
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:s,s:o}", "key", h->key, "area", aname, "page",
			      (json_int_t)pgno, "per_page", (json_int_t)per, "order",
			      newest ? "newest" : "oldest", "records", pg.records);
	return send_json(out, o);
}

/* ---- GET dlq/download --------------------------------------------- */

typedef struct lines {
	char *buf;
	size_t len, cap;
	uint64_t n;
	bool too_large;
} lines;

/* One record as a line of JSON, '\n' included (the library's codec, shared
 * with blq-dlq). */
static int on_line(void *ctx, const blq_inspect_record *r)
{
	lines *l = ctx;
	for (;;) {
		size_t room = l->cap - l->len;
		size_t n = blq_inspect_jsonl_put(r, l->buf ? l->buf + l->len : NULL, room);
		if (n < room) {
			l->len += n;
			l->n++;
			return 0;
		}
		size_t ncap = (l->cap ? l->cap * 2 : 64 << 10) + n + 1;
		if (ncap > DOWNLOAD_MAX) {
			l->too_large = true;
			return 1;
		}
		char *nb = realloc(l->buf, ncap);
		if (nb == NULL)
			return -1;
		l->buf = nb;
		l->cap = ncap;
	}
}

static bool download(hold *h, demo_arg_fn arg, void *ctx, demo_dlq_reply *out)
{
	bool cut = false;
	const char *as = arg(ctx, "area", &cut);
	int area = as == NULL || as[0] == '\0' ? BLQ_INSPECT_DEAD : area_of(as);
	if (cut || area < 0)
		return fail(out, 400, "%s", "area: expected dump, quarantine or dead");
	if (!needs_dead(h, area, out))
		return false;
	const char *aname = blq_inspect_area_name((enum blq_inspect_area)area);
	blq_inspect_filter f = {.part = aname, .records_only = true};
	lines l = {0};
	blq_error e = {0};
	int rc = blq_inspect_scan(h->in, &f, on_line, &l, &e);
	if (rc != 0 || l.too_large) {
		free(l.buf);
		if (l.too_large)
			return fail(out, 413, "download: the %s area is over 64 MiB as JSON lines; "
					      "export it with the blq-dlq tool", aname);
		return fail(out, rc == BLQ_ENOMEM ? 500 : 502, "dlq: %s", e.msg[0] ? e.msg : "scan");
	}
	if (l.buf == NULL && (l.buf = malloc(1)) == NULL)
		return fail(out, 500, "%s", "out of memory");
	l.buf[l.len] = '\0';
	out->status = 200;
	out->body = l.buf;
	out->type = "application/x-ndjson";
	snprintf(out->filename, sizeof out->filename, "%s.%s.jsonl", h->key, aname);
	return true;
}

/* ---- POST bodies ---------------------------------------------------- */

/* The body's "area" (default dead), and "all" or "locs": each location
 * parsed, in that area, printed back canonical into @locs (malloc'd); no
 * field but those and @extra. */
typedef struct target {
	int area;
	bool all;
	char **locs;
	size_t n;
} target;

static void target_free(target *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->locs[i]);
	free(t->locs);
}

static bool parse_target(json_t *b, const char *const *allowed, const char *extra, target *t,
			 demo_dlq_reply *out)
{
	const char *k;
	json_t *v;
	json_object_foreach(b, k, v) {
		if (strcmp(k, "area") != 0 && strcmp(k, "all") != 0 && strcmp(k, "locs") != 0 &&
		    strcmp(k, extra) != 0) {
			out->status = 400;
			snprintf(out->error, sizeof out->error,
				 "body: unknown field \"%.64s\" (area, all, locs, %s)", k, extra);
			return false;
		}
	}
	json_t *a = json_object_get(b, "area");
	t->area = a == NULL ? BLQ_INSPECT_DEAD : area_of(json_string_value(a));
	bool ok = false;
	for (const char *const *p = allowed; *p != NULL; p++)
		ok = ok || (t->area >= 0 && strcmp(*p, blq_inspect_area_name(t->area)) == 0);
	if (!ok)
		return fail(out, 400, "area: expected %s", allowed[1] ? "dead or quarantine" : "dead "
			    "(only the dead store is purged)");
	json_t *all = json_object_get(b, "all"), *locs = json_object_get(b, "locs");
	if (all != NULL && !json_is_boolean(all))
		return fail(out, 400, "%s", "all: expected true or false");
	t->all = json_is_true(all);
	if (t->all == (locs != NULL))
		return fail(out, 400, "%s", "body: give either \"all\": true or \"locs\": [...]");
	if (t->all)
		return true;
	size_t n = json_array_size(locs);
	if (!json_is_array(locs) || n == 0 || n > DEMO_REDRIVE_LOCS_MAX)
		return fail(out, 400, "locs: expected an array of 1..%s record locations", "1000");
	t->locs = calloc(n, sizeof *t->locs);
	if (t->locs == NULL)
		return fail(out, 500, "%s", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(locs, i));
		blq_inspect_loc l;
		blq_error e = {0};
		if (s == NULL)
			return fail(out, 400, "%s", "locs: expected strings");
		if (blq_inspect_loc_parse(s, &l, &e) != 0)
			return fail(out, 400, "locs: %s", e.msg);
		if ((int)l.area != t->area || (!l.record && l.id[0] == '\0'))
			return fail(out, 400, "locs: \"%.200s\" is not a record of that area", s);
		t->locs[i] = malloc(BLQ_INSPECT_LOC_MAX);
		if (t->locs[i] == NULL)
			return fail(out, 500, "%s", "out of memory");
		t->n = i + 1;
		blq_inspect_loc_format(&l, t->locs[i], BLQ_INSPECT_LOC_MAX);
	}
	return true;
}

static json_t *parse_body(const char *body, size_t len, demo_dlq_reply *out)
{
	json_error_t je;
	json_t *b = len > 0 ? json_loadb(body, len, 0, &je) : NULL;
	if (b == NULL || !json_is_object(b)) {
		json_decref(b);
		b = NULL;
		fail(out, 400, "body: %s", len == 0 ? "empty; send a JSON object" :
					   "expected a JSON object");
	}
	return b;
}

/* ---- POST dlq/redrive ----------------------------------------------- */

static bool redrive(hold *h, const char *body, size_t len, demo_dlq_reply *out)
{
	static const char *const allowed[] = {"dead", "quarantine", NULL};
	json_t *b = parse_body(body, len, out);
	if (b == NULL)
		return false;
	target t = {0};
	bool ok = parse_target(b, allowed, "rate", &t, out);
	json_t *r = json_object_get(b, "rate");
	double rate = r == NULL ? 100.0 : json_number_value(r);
	if (ok && (r != NULL && (!json_is_number(r) || !(rate > 0) || rate > DEMO_REDRIVE_RATE_MAX)))
		ok = fail(out, 400, "rate: expected records per second, more than 0 and at most %s",
			  "100000");
	if (ok)
		ok = needs_dead(h, t.area, out);
	if (ok) {
		demo_redrive_spec sp = {.area = (enum blq_inspect_area)t.area, .all = t.all,
					.locs = (const char *const *)t.locs, .nlocs = t.n,
					.rate = rate};
		int status = demo_stage_redrive(h->s, h->in, &sp, out->error, sizeof out->error);
		h->in = NULL; /* taken over */
		ok = status == 200 ? send_json(out, json_pack("{s:i,s:s,s:o}", "status", 200,
							       "message", "started", "redrive",
							       demo_stage_redrive_json(h->s)))
				   : (out->status = (unsigned)status, false);
	}
	target_free(&t);
	json_decref(b);
	return ok;
}

/* ---- POST dlq/purge ------------------------------------------------- */

static bool purge(hold *h, const char *body, size_t len, demo_dlq_reply *out)
{
	static const char *const allowed[] = {"dead", NULL};
	json_t *b = parse_body(body, len, out);
	if (b == NULL)
		return false;
	target t = {0};
	bool ok = parse_target(b, allowed, "dry_run", &t, out);
	json_t *dry = json_object_get(b, "dry_run");
	if (ok && dry != NULL && !json_is_boolean(dry))
		ok = fail(out, 400, "%s", "dry_run: expected true or false");
	if (ok)
		ok = needs_dead(h, t.area, out);
	if (ok && !demo_stage_purge_begin(h->s))
		ok = fail(out, 409, "queue \"%s\": a redrive runs, or another purge; purge once "
				    "it is done", h->key);
	if (ok) {
		const char *all[] = {"dead"};
		blq_inspect_delete_stats st = {0};
		blq_error e = {0};
		int rc = blq_inspect_delete(h->in, t.all ? all : (const char *const *)t.locs,
					    t.all ? 1 : t.n, json_is_true(dry) ? BLQ_INSPECT_DRY_RUN : 0,
					    NULL, NULL, &st, &e);
		ok = rc == 0 ? send_json(out, json_pack("{s:i,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I}",
							"status", 200, "message",
							json_is_true(dry) ? "dry run" : "purged",
							"dry_run", json_is_true(dry), "records",
							(json_int_t)st.records, "files",
							(json_int_t)st.files, "rewritten",
							(json_int_t)st.rewritten, "held",
							(json_int_t)st.held, "not_found",
							(json_int_t)st.not_found, "refused",
							(json_int_t)st.refused))
			     : fail(out, rc == BLQ_ENOMEM ? 500 : 502, "dlq: %s", e.msg);
		demo_stage_purge_end(h->s);
	}
	target_free(&t);
	json_decref(b);
	return ok;
}

/* ---- routing -------------------------------------------------------- */

static const struct {
	const char *path;
	const char *method;
	bool changes;
} endpoints[] = {
	{"dlq", "GET", false},
	{"dlq/records", "GET", false},
	{"dlq/redrive", "POST", true},
	{"dlq/purge", "POST", true},
	{"dlq/download", "GET", false},
};

bool demo_dlq_path(const char *what, bool *changes)
{
	for (size_t i = 0; i < sizeof endpoints / sizeof *endpoints; i++)
		if (strcmp(what, endpoints[i].path) == 0) {
			*changes = endpoints[i].changes;
			return true;
		}
	return false;
}

void demo_dlq_handle(demo_registry *reg, const char *what, const char *method, const char *key,
		     demo_arg_fn arg, void *arg_ctx, const char *body, size_t len,
		     demo_dlq_reply *out)
{
	memset(out, 0, sizeof *out);
	size_t i = 0;
	while (strcmp(what, endpoints[i].path) != 0)
		i++;
	bool get = strcmp(endpoints[i].method, "GET") == 0;
	if (strcmp(method, endpoints[i].method) != 0 && !(get && strcmp(method, "HEAD") == 0)) {
		out->status = 405;
		snprintf(out->error, sizeof out->error, "%s: method %.16s not allowed; use %s", what,
			 method, endpoints[i].method);
		return;
	}
	hold h = {.reg = reg, .key = key};
	if (take(&h, out)) {
		if (i == 0)
			summary(&h, out);
		else if (i == 1)
			records(&h, arg, arg_ctx, out);
		else if (i == 2)
			redrive(&h, body, len, out);
		else if (i == 3)
			purge(&h, body, len, out);
		else
			download(&h, arg, arg_ctx, out);
	}
	release(&h);
}
