/*
 * The inspector's stream back end: a dump's stream, its quarantine stream
 * and a dead-store stream, as parts, their entries as records.
 *
 * Design
 * - Reading uses only XRANGE / XREVRANGE (pages of PAGE entries, the next
 *   page after the last id, exclusive: Redis 6.2 or newer, as XAUTOCLAIM
 *   already needs), XPENDING and XINFO GROUPS: no XREADGROUP, no XCLAIM,
 *   so the inspector is no consumer of the group, claims nothing and
 *   counts no delivery. Each page's pending entries come from one
 *   XPENDING over the page's id range (consumer, delivery count).
 * - Entries are checked by the restorer's own check (redis_entry.c): the
 *   fields, the version, the record's framing, CRC and metadata. The
 *   quarantine stream's entries keep the reader's reason (field
 *   "reason"), reported with each.
 * - Deleting an entry is XDEL, after XACK when it is pending: the group
 *   forgets it, so no restorer takes it over or is handed it again. A
 *   restorer that read it before (it is in one of its open dumps) may
 *   still restore that copy: its later XACK, XDEL or XCLAIM of the id
 *   then does nothing (Redis ignores ids it does not have), so this is
 *   one more delivery at most, within at-least-once. With
 *   BLQ_INSPECT_KEEP_PENDING such entries are left alone instead.
 * - Appending goes through a Redis writer (dump_redis_writer.c) made for
 *   the call: the entries are those a dump writes, acknowledged by the
 *   server when it returns.
 * - Errors: the connection is redis_conn.c's (timeouts, keepalive); an
 *   I/O error or an error reply is BLQ_EIO with the server, command and
 *   key in the message. A key of another type is refused at open.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "inspect.h"
#include "redis_conn.h"
#include "redis_entry.h"

#define PAGE 256
#define PAGE_S "256"

struct blq__iredis {
	blq__redis conn;
	blq_dump_redis_config cfg; /* host, port, timeouts: for appends */
};

/* One command of string arguments. The reply, or NULL with err set (an
 * error reply too, unless keep_error). */
static redisReply *cmd(blq_inspect *in, bool keep_error, blq_error *err, int argc, ...)
{
	const char *argv[16];
	size_t lens[16];
	va_list ap;

	va_start(ap, argc);
	for (int i = 0; i < argc; i++) {
		argv[i] = va_arg(ap, const char *);
		lens[i] = strlen(argv[i]);
	}
	va_end(ap);
	redisReply *rep = blq__redis_call(&in->redis->conn, argc, argv, lens, err);
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR && !keep_error) {
		blq__error_set(err, BLQ_EIO, "redis %s: %s %s: %.*s", in->redis->conn.addr, argv[0],
			       argc > 1 ? argv[1] : "", (int)rep->len, rep->str);
		freeReplyObject(rep);
		return NULL;
	}
	return rep;
}

static int check_type(blq_inspect *in, const char *key, const char *field, blq_error *err)
{
	redisReply *rep = cmd(in, false, err, 2, "TYPE", key);

	if (rep == NULL)
		return BLQ_EINVAL;
	bool ok = blq__redis_is_str(rep) &&
		  (strcmp(rep->str, "stream") == 0 || strcmp(rep->str, "none") == 0);
	if (!ok)
		blq__error_set(err, BLQ_EINVAL, "%s: \"%s\" on redis %s is a %s, not a stream", field,
			       key, in->redis->conn.addr, blq__redis_is_str(rep) ? rep->str : "?");
	freeReplyObject(rep);
	return ok ? 0 : BLQ_EINVAL;
}

int blq__ir_open(blq_inspect *in, const blq_inspect_config *cfg, blq_error *err)
{
	const blq__iarea *d = &in->areas[BLQ_INSPECT_DUMP], *x = &in->areas[BLQ_INSPECT_DEAD];

	in->redis = calloc(1, sizeof(*in->redis));
	if (in->redis == NULL)
		return blq__error_set(err, BLQ_ENOMEM, "inspect: out of memory");
	blq_dump_redis_config *rc = &in->redis->cfg;
	rc->host = cfg->host;
	rc->port = cfg->port;
	rc->connect_timeout_ns = cfg->connect_timeout_ns;
	rc->command_timeout_ns = cfg->command_timeout_ns;
	rc->key = d->kind == BLQ__IAREA_STREAM ? d->key : x->key;
	int e = blq__redis_open(&in->redis->conn, rc, err);
	if (e != 0) {
		free(in->redis);
		in->redis = NULL;
		return e;
	}
	rc->host = in->redis->conn.host; /* the copies, not the caller's */
	rc->port = in->redis->conn.port;
	static const char *const fields[] = {"key", "key (quarantine)", "dead_key"};
	for (int i = 0; i < 3; i++)
		if (in->areas[i].kind == BLQ__IAREA_STREAM &&
		    (e = check_type(in, in->areas[i].key, fields[i], err)) != 0)
			return e;
	return 0;
}

void blq__ir_close(blq_inspect *in)
{
	if (in->redis == NULL)
		return;
	blq__redis_close(&in->redis->conn);
	free(in->redis);
	in->redis = NULL;
}

/* ---- pages of entries, with their pending state ---- */

typedef struct pend {
	const redisReply *id;
	const char *consumer;
	uint32_t count;
} pend;

typedef struct page {
	redisReply *rep;     /* XRANGE's */
	redisReply *prep;    /* XPENDING's, or NULL */
	pend p[PAGE];
	size_t np;
} page;

static void page_free(page *pg)
{
	if (pg->rep != NULL)
		freeReplyObject(pg->rep);
	if (pg->prep != NULL)
		freeReplyObject(pg->prep);
	pg->rep = pg->prep = NULL;
	pg->np = 0;
}

static const redisReply *entry_id(const redisReply *e)
{
	return e->type == REDIS_REPLY_ARRAY && e->elements >= 1 && blq__redis_is_str(e->element[0])
		       ? e->element[0]
		       : NULL;
}

/* The pending entries of the group between lo and hi (ids). Best effort:
 * a missing group means none. */
static void page_pending(blq_inspect *in, const blq__iarea *a, page *pg, const char *lo,
			 const char *hi)
{
	blq_error ignored;

	pg->prep = cmd(in, true, &ignored, 6, "XPENDING", a->key, in->group, lo, hi, PAGE_S);
	if (pg->prep == NULL || pg->prep->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < pg->prep->elements && pg->np < PAGE; i++) {
		const redisReply *x = pg->prep->element[i];
		if (x->type != REDIS_REPLY_ARRAY || x->elements < 4 || !blq__redis_is_str(x->element[0]) ||
		    !blq__redis_is_str(x->element[1]) || x->element[3]->type != REDIS_REPLY_INTEGER)
			continue;
		pg->p[pg->np++] = (pend){x->element[0], x->element[1]->str,
					 (uint32_t)x->element[3]->integer};
	}
}

static const pend *find_pending(const page *pg, const redisReply *id)
{
	for (size_t i = 0; id != NULL && i < pg->np; i++)
		if (pg->p[i].id->len == id->len && memcmp(pg->p[i].id->str, id->str, id->len) == 0)
			return &pg->p[i];
	return NULL;
}

/* Reads the page after (or, reverse, before) *cursor ("" at the start).
 * Returns the entries (NULL: none left) or sets rc. */
static const redisReply *page_read(blq_inspect *in, const blq__iarea *a, bool reverse,
				   char *cursor, size_t cap, page *pg, int *rc, blq_error *err)
{
	char from[80];

	page_free(pg);
	*rc = 0;
	if (cursor[0] == '\0')
		snprintf(from, sizeof(from), "%s", reverse ? "+" : "-");
	else
		snprintf(from, sizeof(from), "(%s", cursor);
	pg->rep = reverse ? cmd(in, false, err, 6, "XREVRANGE", a->key, from, "-", "COUNT", PAGE_S)
			  : cmd(in, false, err, 6, "XRANGE", a->key, from, "+", "COUNT", PAGE_S);
	if (pg->rep == NULL) {
		*rc = err != NULL && err->code ? err->code : BLQ_EIO;
		return NULL;
	}
	const redisReply *es = pg->rep;
	if (es->type != REDIS_REPLY_ARRAY || es->elements == 0)
		return NULL;
	const redisReply *first = entry_id(es->element[0]), *last = entry_id(es->element[es->elements - 1]);
	if (last == NULL)
		return NULL;
	snprintf(cursor, cap, "%.*s", (int)last->len, last->str);
	if (a->grouped && first != NULL)
		page_pending(in, a, pg, reverse ? last->str : first->str,
			     reverse ? first->str : last->str);
	return es;
}

static uint64_t id_time_ns(const redisReply *id)
{
	return id != NULL ? strtoull(id->str, NULL, 10) * 1000000u : 0;
}

/* The value of field name in an entry's field list, or NULL. */
static const redisReply *field(const redisReply *fields, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2) {
		const redisReply *f = fields->element[i];
		if (blq__redis_is_str(f) && f->len == n && memcmp(f->str, name, n) == 0 &&
		    blq__redis_is_str(fields->element[i + 1]))
			return fields->element[i + 1];
	}
	return NULL;
}

/* Fills r from entry e of area a; damage (room cap) holds its words. */
static void entry_record(blq_inspect *in, const blq__iarea *a, const page *pg,
			 const redisReply *e, blq_inspect_record *r, char *loc, char *damage,
			 size_t cap)
{
	const redisReply *id = entry_id(e), *v, *rr;
	const char *rf;
	blq_dump_record rec = {0};
	const char *bad = "entry without fields";

	damage[0] = '\0';
	snprintf(loc, BLQ_INSPECT_LOC_MAX, "%s:%.*s", blq_inspect_area_name(a->area),
		 id ? (int)id->len : 1, id ? id->str : "?");
	if (e->type == REDIS_REPLY_ARRAY && e->elements >= 2)
		bad = blq__redis_entry_check(e->element[1], NULL, &v, &rf, &rr, &rec);
	const redisReply *reason = e->type == REDIS_REPLY_ARRAY && e->elements >= 2
					   ? field(e->element[1], "reason")
					   : NULL;
	if (reason != NULL)
		snprintf(damage, cap, "%.*s%s%s", (int)reason->len, reason->str, bad ? "; " : "",
			 bad ? bad : "");
	else if (bad != NULL)
		snprintf(damage, cap, "%s", bad);
	const pend *p = find_pending(pg, id);
	r->loc = loc;
	r->state = bad == NULL ? BLQ_INSPECT_OK : BLQ_INSPECT_DAMAGED;
	r->damage = damage;
	r->offset = 0;
	r->data = bad == NULL ? rec.data : NULL;
	r->len = bad == NULL ? rec.len : 0;
	r->size = bad == NULL ? rr->len : 0;
	r->restores = bad == NULL ? rec.restores : 0;
	r->version = bad == NULL ? rec.version : 0;
	r->why = rec.why;
	if (bad != NULL)
		blq__dump_why_clear(&r->why);
	r->time_ns = blq__itime(&r->why, id_time_ns(id));
	r->pending = p != NULL;
	r->deliveries = p != NULL ? p->count : 0;
	r->consumer = p != NULL ? p->consumer : "";
	r->done = false;
}

int blq__ir_scan(blq_inspect *in, const blq__iarea *a, bool reverse, blq__iemit *e,
		 blq_error *err)
{
	char cursor[64] = "", loc[BLQ_INSPECT_LOC_MAX], damage[256];
	const char *part = blq_inspect_area_name(a->area);
	page pg = {0};
	const redisReply *es;
	uint64_t index = 0;
	int rc = 0;

	while (!e->stop && (es = page_read(in, a, reverse, cursor, sizeof(cursor), &pg, &rc, err)))
		for (size_t i = 0; i < es->elements && !e->stop; i++) {
			blq_inspect_record r = {.part = part, .index = index++};
			entry_record(in, a, &pg, es->element[i], &r, loc, damage, sizeof(damage));
			blq__iemit_one(e, &r);
		}
	page_free(&pg);
	return rc;
}

/* ---- list ---- */

/* The group's pending summary into p: every consumer holding entries, in
 * *cons (the caller frees it, and *rep, whose strings the names are).
 * 0, or BLQ_ENOMEM. */
static int group_info(blq_inspect *in, const blq__iarea *a, blq_inspect_part *p,
		      blq_inspect_consumer **cons, redisReply **rep, blq_error *err)
{
	blq_error ignored;
	redisReply *g = cmd(in, true, &ignored, 3, "XINFO", "GROUPS", a->key);

	for (size_t i = 0; g != NULL && g->type == REDIS_REPLY_ARRAY && i < g->elements; i++) {
		const redisReply *name = field(g->element[i], "name");
		if (name != NULL && strcmp(name->str, in->group) == 0)
			p->group_exists = true;
	}
	if (g != NULL)
		freeReplyObject(g);
	if (!p->group_exists)
		return 0;
	*rep = cmd(in, true, &ignored, 3, "XPENDING", a->key, in->group);
	const redisReply *s = *rep;
	if (s == NULL || s->type != REDIS_REPLY_ARRAY || s->elements < 4 ||
	    s->element[0]->type != REDIS_REPLY_INTEGER)
		return 0;
	p->pending = (uint64_t)s->element[0]->integer;
	const redisReply *cs = s->element[3];
	if (cs->type != REDIS_REPLY_ARRAY || cs->elements == 0)
		return 0;
	/* As many as the group has: a fixed array here once dropped all but
	 * the first 64 without a word. */
	*cons = calloc(cs->elements, sizeof(**cons));
	if (*cons == NULL)
		return blq__error_set(err, BLQ_ENOMEM,
				      "list: out of memory for the %zu consumers of group %s", cs->elements,
				      in->group);
	for (size_t i = 0; i < cs->elements; i++) {
		const redisReply *c = cs->element[i];
		if (c->type != REDIS_REPLY_ARRAY || c->elements < 2 || !blq__redis_is_str(c->element[0]) ||
		    !blq__redis_is_str(c->element[1]))
			continue;
		(*cons)[p->nconsumers].name = c->element[0]->str;
		(*cons)[p->nconsumers++].pending = strtoull(c->element[1]->str, NULL, 10);
	}
	p->consumers = *cons;
	return 0;
}

typedef struct list_acc {
	blq_inspect_part *p;
} list_acc;

static int list_one(void *ctx, const blq_inspect_record *r)
{
	blq_inspect_part *p = ((list_acc *)ctx)->p;

	if (r->state != BLQ_INSPECT_OK) {
		p->damaged++;
		return 0;
	}
	p->records++;
	p->bytes += r->size;
	if (p->oldest_ns == 0 || r->time_ns < p->oldest_ns)
		p->oldest_ns = r->time_ns;
	if (r->time_ns > p->newest_ns)
		p->newest_ns = r->time_ns;
	return 0;
}

int blq__ir_list(blq_inspect *in, const blq__iarea *a, blq_inspect_part_fn fn, void *ctx,
		 bool *stop, blq_error *err)
{
	static const blq_inspect_filter all = {0};
	blq_inspect_part p = {.loc = blq_inspect_area_name(a->area), .area = a->area,
			      .stream = true, .name = a->key};
	list_acc acc = {&p};
	blq__iemit e = {.f = &all, .fn = list_one, .ctx = &acc};
	blq_inspect_consumer *cons = NULL;
	redisReply *prep = NULL;

	int rc = blq__ir_scan(in, a, false, &e, err);
	if (rc == 0 && a->grouped)
		rc = group_info(in, a, &p, &cons, &prep, err);
	if (rc == 0)
		*stop = fn(ctx, &p) != 0;
	free(cons);
	if (prep != NULL)
		freeReplyObject(prep);
	return rc;
}

/* ---- delete ---- */

/* Deletes one entry (acked first when pending), or says what it would do. */
static int delete_entry(blq_inspect *in, const blq__iarea *a, const char *id, const pend *p,
			blq__idel *d, blq_error *err)
{
	char loc[BLQ_INSPECT_LOC_MAX];
	bool dry = d->flags & BLQ_INSPECT_DRY_RUN;
	const char *consumer = p != NULL ? p->consumer : NULL;

	snprintf(loc, sizeof(loc), "%s:%s", blq_inspect_area_name(a->area), id);
	if (p != NULL && (d->flags & BLQ_INSPECT_KEEP_PENDING)) {
		blq__idel_report(d, loc, BLQ_INSPECT_HELD, false, 0, 0, consumer,
				 "%s: pending with consumer %s (%u deliveries); left alone", loc,
				 consumer, p->count);
		return 0;
	}
	if (!dry) {
		redisReply *rep;
		if (p != NULL) {
			if ((rep = cmd(in, false, err, 4, "XACK", a->key, in->group, id)) == NULL)
				return BLQ_EIO;
			freeReplyObject(rep);
		}
		if ((rep = cmd(in, false, err, 3, "XDEL", a->key, id)) == NULL)
			return BLQ_EIO;
		bool gone = rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;
		freeReplyObject(rep);
		if (gone) {
			blq__idel_report(d, loc, BLQ_INSPECT_NOT_FOUND, false, 0, 0, NULL,
					 "%s: deleted meanwhile (restored?)", loc);
			return 0;
		}
	}
	if (p != NULL)
		blq__idel_report(d, loc, BLQ_INSPECT_DELETED, false, 1, 0, consumer,
				 "%s: %s (it was pending with consumer %s, which may still restore "
				 "the copy it read)",
				 loc, dry ? "would be acked and deleted" : "acked and deleted", consumer);
	else
		blq__idel_report(d, loc, BLQ_INSPECT_DELETED, false, 1, 0, NULL, "%s: %s", loc,
				 dry ? "would be deleted" : "deleted");
	return 0;
}

int blq__ir_delete(blq_inspect *in, const blq__iarea *a, const blq_inspect_loc *const *locs,
		   size_t n, blq__idel *d, blq_error *err)
{
	char cursor[64] = "", id[64];
	page pg = {0};
	const redisReply *es;
	int rc = 0;

	if (n == 0) { /* every entry, page by page */
		while (rc == 0 && (es = page_read(in, a, false, cursor, sizeof(cursor), &pg, &rc, err)))
			for (size_t i = 0; i < es->elements && rc == 0; i++) {
				const redisReply *x = entry_id(es->element[i]);
				if (x == NULL)
					continue;
				snprintf(id, sizeof(id), "%.*s", (int)x->len, x->str);
				rc = delete_entry(in, a, id, find_pending(&pg, x), d, err);
			}
		page_free(&pg);
		return rc;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *x = locs[i]->id;
		page_free(&pg);
		pg.rep = cmd(in, false, err, 4, "XRANGE", a->key, x, x);
		if (pg.rep == NULL)
			return BLQ_EIO;
		if (pg.rep->type != REDIS_REPLY_ARRAY || pg.rep->elements == 0) {
			char loc[BLQ_INSPECT_LOC_MAX];
			snprintf(loc, sizeof(loc), "%s:%s", blq_inspect_area_name(a->area), x);
			blq__idel_report(d, loc, BLQ_INSPECT_NOT_FOUND, false, 0, 0, NULL,
					 "%s: no such entry", loc);
			continue;
		}
		if (a->grouped)
			page_pending(in, a, &pg, x, x);
		rc = delete_entry(in, a, x, pg.np > 0 ? &pg.p[0] : NULL, d, err);
	}
	page_free(&pg);
	return rc;
}

/* ---- append ---- */

int blq__ir_append(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		   uint64_t version, blq_error *err)
{
	blq_dump_redis_config c = in->redis->cfg;
	size_t done;

	c.key = in->areas[BLQ_INSPECT_DUMP].key;
	blq_dump_writer *w = blq_dump_redis_writer_new(&c, err);
	if (w == NULL)
		return BLQ_EIO;
	blq_dump_batch batch = {.version = version, .data = b->p, .len = b->len,
				.count = count, .format = format};
	int rc = w->write(w, &batch, &done, err);
	blq_dump_writer_free(w);
	return rc;
}

/* ---- the version ---- */

int blq__ir_version(blq_inspect *in, const blq__iarea *a, blq__iversion *out, blq_error *err)
{
	memset(out, 0, sizeof(*out));
	/* The newest entries that parse: a bad one (a foreign writer's) says
	 * nothing of the version the dump's own writer uses. */
	redisReply *rep = cmd(in, false, err, 6, "XREVRANGE", a->key, "+", "-", "COUNT", "16");
	if (rep == NULL)
		return err != NULL && err->code ? err->code : BLQ_EIO;
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements && !out->found;
	     i++) {
		const redisReply *e = rep->element[i], *v, *rr;
		const char *rf;
		blq_dump_record rec;
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
		    blq__redis_entry_check(e->element[1], NULL, &v, &rf, &rr, &rec) != NULL)
			continue;
		out->found = true;
		out->v = rec.version;
		const redisReply *id = entry_id(e);
		snprintf(out->where, sizeof(out->where), "stream %.200s, entry %.48s", a->key,
			 id ? id->str : "?");
	}
	freeReplyObject(rep);
	return 0;
}
