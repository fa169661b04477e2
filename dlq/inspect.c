/*
 * The inspector (blq/dlqinspect.h): an operator's view of a dump, and the
 * few actions an operator takes on it, beside a restorer that may be
 * consuming it.
 *
 * Design
 * - A dump is three areas (dump, quarantine, dead), each a directory of
 *   dump files or a stream, or absent (no dead store). This file owns the
 *   API: the config, locations, the scan's filter and paging, and the
 *   dispatch to inspect_fs.c or inspect_redis.c by the area's kind. The
 *   back ends reuse the dump's own parts: the format's parser
 *   (dump_format.c), the fs writer and the Redis writer for every write,
 *   the checkpoint code, the Redis entry check and connection.
 * - Locations are strings so that a tool can print them and a later call
 *   (maybe in another process) take them back; a file record carries its
 *   offset besides its index, which catches a location made stale by a
 *   rewrite of its file (blq_inspect_delete) instead of deleting the
 *   wrong record.
 * - Reads take no lock and write nothing (see inspect_fs.c for how a
 *   file's "held" flag is read without taking its lock); deletes work
 *   under the restorer's own lock (the file's flock) or through the
 *   stream's own commands (XACK, XDEL), so a restorer and an operator
 *   never change the same file at once.
 */
#include "inspect.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_fs.h"
#include "errorf.h"

static const char *const area_names[] = {"dump", "quarantine", "dead"};

const char *blq_inspect_area_name(enum blq_inspect_area a)
{
	return (unsigned)a < 3 ? area_names[a] : "?";
}

/* ---- locations ---- */

static bool all_digits(const char *s, size_t n)
{
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

int blq_inspect_loc_parse(const char *s, blq_inspect_loc *out, blq_error *err)
{
	if (s == NULL || out == NULL)
		return blq__error_set(err, BLQ_EINVAL, "location: NULL");
	memset(out, 0, sizeof(*out));
	size_t alen = strcspn(s, "/:");
	int a = -1;
	for (int i = 0; i < 3; i++)
		if (strlen(area_names[i]) == alen && strncmp(s, area_names[i], alen) == 0)
			a = i;
	if (a < 0)
		return blq__error_set(err, BLQ_EINVAL,
				      "location \"%s\": must start with dump, quarantine or dead", s);
	out->area = (enum blq_inspect_area)a;
	const char *rest = s + alen;
	if (*rest == '\0')
		return 0;
	if (*rest == ':') {
		rest++;
		const char *dash = strchr(rest, '-');
		if (dash == NULL || !all_digits(rest, (size_t)(dash - rest)) ||
		    !all_digits(dash + 1, strlen(dash + 1)))
			return blq__error_set(err, BLQ_EINVAL,
					      "location \"%s\": a stream entry id is MS-SEQ", s);
		snprintf(out->id, sizeof(out->id), "%s", rest);
		return 0;
	}
	rest++; /* '/' */
	size_t n = strlen(rest);
	const char *at = strrchr(rest, '@');
	const char *hash = at != NULL ? memrchr(rest, '#', (size_t)(at - rest)) : NULL;
	if (hash != NULL && all_digits(hash + 1, (size_t)(at - hash - 1)) &&
	    all_digits(at + 1, strlen(at + 1))) {
		out->record = true;
		out->index = strtoull(hash + 1, NULL, 10);
		out->offset = strtoull(at + 1, NULL, 10);
		n = (size_t)(hash - rest);
	}
	/* "." and ".." name directories, never a dump file; ".a" is a name
	 * (this once refused every 2-byte name that starts with a dot). */
	bool dots = (n == 1 || n == 2) && rest[0] == '.' && (n == 1 || rest[1] == '.');
	if (n == 0 || n >= sizeof(out->file) || memchr(rest, '/', n) != NULL || dots)
		return blq__error_set(err, BLQ_EINVAL,
				      "location \"%s\": a file name is 1..255 bytes without '/', "
				      "not . or ..",
				      s);
	memcpy(out->file, rest, n);
	out->file[n] = '\0';
	return 0;
}

int blq_inspect_loc_format(const blq_inspect_loc *l, char *out, size_t cap)
{
	if (l == NULL || out == NULL || cap == 0)
		return BLQ_EINVAL;
	const char *a = blq_inspect_area_name(l->area);
	int n;
	if (l->id[0] != '\0')
		n = snprintf(out, cap, "%s:%s", a, l->id);
	else if (l->file[0] == '\0')
		n = snprintf(out, cap, "%s", a);
	else if (l->record)
		n = snprintf(out, cap, "%s/%s#%llu@%llu", a, l->file, (unsigned long long)l->index,
			     (unsigned long long)l->offset);
	else
		n = snprintf(out, cap, "%s/%s", a, l->file);
	if (n < 0 || (size_t)n >= cap) {
		out[0] = '\0';
		return BLQ_EINVAL;
	}
	return n;
}

/* ---- open, close ---- */

static int set_dir(blq__iarea *a, const char *path, const char *match, const char *field,
		   blq_error *err)
{
	a->kind = BLQ__IAREA_DIR;
	if (match == NULL)
		match = BLQ__FS_DEFAULT_MATCH;
	if (match[0] == '\0' || strlen(match) >= sizeof(a->match) || strchr(match, '/') != NULL)
		return blq__error_set(err, BLQ_EINVAL, "%s: match \"%s\": 1..255 bytes without '/'",
				      field, match);
	if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(a->path) - 300)
		return blq__error_set(err, BLQ_EINVAL, "%s: required, under %zu bytes", field,
				      sizeof(a->path) - 300);
	snprintf(a->path, sizeof(a->path), "%s", path);
	snprintf(a->match, sizeof(a->match), "%s", match);
	return blq__ifs_check(a, field, err);
}

/* The names a dump whose reader takes `match` writes: a glob with one '*'
 * and no other wildcard is the writer's default mask's stem in place of
 * the '*' ("orders.*.bin" gives "orders.%Y-%m-%d--%H-%M-%S--%i.bin", as
 * blq-demo names a key's files; "*.bin" the default mask itself), so what
 * blq_inspect_append writes sorts after what is there and is taken by
 * the reader. Any other glob leaves out the mask ("": the writer's
 * default, which the fs writer then refuses unless match takes it). */
static void mask_for_match(const char *match, char *out, size_t cap)
{
	const char *star = strchr(match, '*');
	out[0] = '\0';
	if (star == NULL || strchr(star + 1, '*') != NULL || strpbrk(match, "?[\\") != NULL)
		return;
	size_t n = 0;
	for (const char *m = match; *m != '\0' && n + 32 < cap; m++) {
		if (m == star) {
			n += (size_t)snprintf(out + n, cap - n, "%%Y-%%m-%%d--%%H-%%M-%%S--%%i");
			continue;
		}
		if (*m == '%') /* a literal '%' of the name */
			out[n++] = '%';
		out[n++] = *m;
	}
	out[n < cap ? n : 0] = '\0';
}

static int configure(blq_inspect *in, const blq_inspect_config *cfg, blq_error *err)
{
	blq__iarea *d = &in->areas[BLQ_INSPECT_DUMP], *q = &in->areas[BLQ_INSPECT_QUARANTINE],
		   *x = &in->areas[BLQ_INSPECT_DEAD];
	int rc;

	for (int i = 0; i < 3; i++)
		in->areas[i].area = (enum blq_inspect_area)i;
	if ((cfg->directory != NULL) == (cfg->key != NULL))
		return blq__error_set(err, BLQ_EINVAL, "directory, key: give exactly one");
	if (cfg->dead_directory != NULL && cfg->dead_key != NULL)
		return blq__error_set(err, BLQ_EINVAL, "dead_directory, dead_key: at most one");
	const char *mask = cfg->file_mask ? cfg->file_mask : "";
	const char *group = cfg->group ? cfg->group : "blq";
	if (strlen(mask) >= sizeof(in->mask))
		return blq__error_set(err, BLQ_EINVAL, "file_mask: under %zu bytes",
				      sizeof(in->mask));
	if (group[0] == '\0' || strlen(group) >= sizeof(in->group))
		return blq__error_set(err, BLQ_EINVAL, "group: must be 1..127 bytes");
	snprintf(in->mask, sizeof(in->mask), "%s", mask);
	in->mask_set = cfg->file_mask != NULL;
	snprintf(in->group, sizeof(in->group), "%s", group);
	in->version = cfg->version;
	in->version_set = cfg->version_set;
	if (cfg->directory != NULL) {
		char qdir[PATH_MAX + 16];
		if ((rc = set_dir(d, cfg->directory, cfg->match, "directory", err)) != 0)
			return rc;
		if (cfg->file_mask == NULL)
			mask_for_match(d->match, in->mask, sizeof(in->mask));
		snprintf(qdir, sizeof(qdir), "%s/quarantine", d->path);
		/* Quarantined files keep their names, plus ".N" on a clash. */
		if ((rc = set_dir(q, cfg->quarantine ? cfg->quarantine : qdir, "*", "quarantine",
				  err)) != 0)
			return rc;
	} else {
		if (strlen(cfg->key) == 0 || strlen(cfg->key) > 200)
			return blq__error_set(err, BLQ_EINVAL, "key: 1..200 bytes");
		d->kind = q->kind = BLQ__IAREA_STREAM;
		d->grouped = true;
		snprintf(d->key, sizeof(d->key), "%s", cfg->key);
		snprintf(q->key, sizeof(q->key), "%s:quarantine", cfg->key);
	}
	if (cfg->dead_directory != NULL &&
	    (rc = set_dir(x, cfg->dead_directory, cfg->dead_match, "dead_directory", err)) != 0)
		return rc;
	if (cfg->dead_key != NULL) {
		if (strlen(cfg->dead_key) == 0 || strlen(cfg->dead_key) > 200)
			return blq__error_set(err, BLQ_EINVAL, "dead_key: 1..200 bytes");
		x->kind = BLQ__IAREA_STREAM;
		snprintf(x->key, sizeof(x->key), "%s", cfg->dead_key);
	}
	if (d->kind == BLQ__IAREA_STREAM || x->kind == BLQ__IAREA_STREAM)
		return blq__ir_open(in, cfg, err);
	return 0;
}

blq_inspect *blq_inspect_open(const blq_inspect_config *cfg, blq_error *err)
{
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	blq_inspect *in = calloc(1, sizeof(*in));
	if (in == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "inspect: out of memory");
		return NULL;
	}
	if (configure(in, cfg, err) != 0) {
		blq_inspect_close(in);
		return NULL;
	}
	blq__error_set(err, BLQ_OK, "%s", "");
	return in;
}

void blq_inspect_close(blq_inspect *in)
{
	if (in == NULL)
		return;
	blq__ir_close(in);
	free(in);
}

/* ---- list, scan, verify ---- */

int blq_inspect_list(blq_inspect *in, blq_inspect_part_fn fn, void *ctx, blq_error *err)
{
	bool stop = false;
	int rc = 0;

	if (in == NULL || fn == NULL)
		return blq__error_set(err, BLQ_EINVAL, "list: inspector or callback NULL");
	for (int i = 0; i < 3 && rc == 0 && !stop; i++) {
		const blq__iarea *a = &in->areas[i];
		if (a->kind == BLQ__IAREA_DIR)
			rc = blq__ifs_list(in, a, fn, ctx, &stop, err);
		else if (a->kind == BLQ__IAREA_STREAM)
			rc = blq__ir_list(in, a, fn, ctx, &stop, err);
	}
	return rc;
}

bool blq__iemit_one(blq__iemit *e, const blq_inspect_record *rec)
{
	const blq_inspect_filter *f = e->f;

	if (rec->state != BLQ_INSPECT_OK && f->records_only)
		return false;
	if (rec->state == BLQ_INSPECT_OK) {
		if (f->reasons != 0 &&
		    ((unsigned)rec->why.reason >= 32 || !(f->reasons >> rec->why.reason & 1u)))
			return false;
		if ((f->since_ns != 0 && rec->time_ns < f->since_ns) ||
		    (f->until_ns != 0 && rec->time_ns >= f->until_ns))
			return false;
	}
	if (e->passed++ < f->skip)
		return false;
	if (e->fn(e->ctx, rec) != 0 || (f->limit != 0 && e->passed - f->skip >= f->limit))
		e->stop = true;
	return e->stop;
}

/* The area (and file, or NULL) a filter's part names. */
static int resolve(blq_inspect *in, const char *part, const blq__iarea **a, const char **file,
		   blq_inspect_loc *l, blq_error *err)
{
	int rc = blq_inspect_loc_parse(part, l, err);

	if (rc != 0)
		return rc;
	*a = &in->areas[l->area];
	*file = NULL;
	if ((*a)->kind == BLQ__IAREA_NONE)
		return blq__error_set(err, BLQ_EINVAL, "\"%s\": this dump has no %s area", part,
				      blq_inspect_area_name(l->area));
	if (l->record || l->id[0] != '\0')
		return blq__error_set(err, BLQ_EINVAL, "\"%s\": names a record, not a part", part);
	if (l->file[0] != '\0') {
		if ((*a)->kind != BLQ__IAREA_DIR)
			return blq__error_set(err, BLQ_EINVAL,
					      "\"%s\": the %s area is a stream, not a directory",
					      part, blq_inspect_area_name(l->area));
		*file = l->file;
	}
	return 0;
}

static int scan_area(blq_inspect *in, const blq__iarea *a, const char *file, blq__iemit *e,
		     blq_error *err)
{
	if (a->kind == BLQ__IAREA_DIR)
		return blq__ifs_scan(in, a, file, e->f->newest_first, e, err);
	if (a->kind == BLQ__IAREA_STREAM)
		return blq__ir_scan(in, a, e->f->newest_first, e, err);
	return 0;
}

int blq_inspect_scan(blq_inspect *in, const blq_inspect_filter *f, blq_inspect_record_fn fn,
		     void *ctx, blq_error *err)
{
	static const blq_inspect_filter all = {0};
	blq__iemit e = {.f = f ? f : &all, .fn = fn, .ctx = ctx};
	int rc = 0;

	if (in == NULL || fn == NULL)
		return blq__error_set(err, BLQ_EINVAL, "scan: inspector or callback NULL");
	if (e.f->part != NULL) {
		const blq__iarea *a;
		const char *file;
		blq_inspect_loc l;
		if ((rc = resolve(in, e.f->part, &a, &file, &l, err)) != 0)
			return rc;
		return scan_area(in, a, file, &e, err);
	}
	for (int k = 0; k < 3 && rc == 0 && !e.stop; k++)
		rc = scan_area(in, &in->areas[e.f->newest_first ? 2 - k : k], NULL, &e, err);
	return rc;
}

typedef struct verify_ctx {
	blq_inspect_summary *s;
	blq_inspect_record_fn fn;
	void *ctx;
} verify_ctx;

static int verify_one(void *ctx, const blq_inspect_record *rec)
{
	verify_ctx *v = ctx;

	if (rec->state == BLQ_INSPECT_OK) {
		v->s->records++;
		v->s->bytes += rec->size;
		return 0;
	}
	if (rec->state == BLQ_INSPECT_GONE)
		v->s->gone++;
	else if (rec->state == BLQ_INSPECT_UNREADABLE)
		v->s->unreadable++;
	else
		v->s->damaged++;
	v->s->skipped += rec->skipped;
	return v->fn != NULL ? v->fn(v->ctx, rec) : 0;
}

int blq_inspect_verify(blq_inspect *in, const blq_inspect_filter *f, blq_inspect_summary *out,
		       blq_inspect_record_fn fn, void *ctx, blq_error *err)
{
	if (out == NULL)
		return blq__error_set(err, BLQ_EINVAL, "verify: out NULL");
	memset(out, 0, sizeof(*out));
	verify_ctx v = {out, fn, ctx};
	int rc = blq_inspect_scan(in, f, verify_one, &v, err);
	return rc != 0 ? rc : out->damaged + out->unreadable > 0 ? 1 : 0;
}

/* ---- salvage, delete, append ---- */

int blq_inspect_salvage(blq_inspect *in, const char *part, const char *out_dir,
			const char *file_mask, uint64_t *written, blq_error *err)
{
	const blq__iarea *a;
	const char *file;
	blq_inspect_loc l;
	int rc;

	if (written != NULL)
		*written = 0;
	if (in == NULL || part == NULL || out_dir == NULL)
		return blq__error_set(err, BLQ_EINVAL, "salvage: inspector, part or out_dir NULL");
	if ((rc = resolve(in, part, &a, &file, &l, err)) != 0)
		return rc;
	if (file == NULL)
		return blq__error_set(err, BLQ_EINVAL, "salvage: \"%s\" is not a file", part);
	/* The dump's version, so that its reader takes the copy (a file
	 * quarantined for its version is salvaged into the right one); the
	 * file's own when nothing says what the dump's is. */
	uint64_t v;
	if ((rc = blq_inspect_version(in, &v, err)) < 0)
		return rc;
	bool known = rc == 0; /* else the file's own, not the config's default */
	char mask[256];
	if (file_mask == NULL && (rc = blq__ifs_mask(in, mask, err)) != 0)
		return rc;
	return blq__ifs_salvage(in, a, file, out_dir, file_mask ? file_mask : mask,
				known ? &v : NULL, written, err);
}

void blq__idel_report(blq__idel *d, const char *loc, enum blq_inspect_action action, bool file,
		      uint64_t records, uint64_t kept, const char *consumer, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	switch (action) {
	case BLQ_INSPECT_DELETED:
		d->st.records += records;
		d->st.files += file;
		break;
	case BLQ_INSPECT_REWRITTEN:
		d->st.records += records;
		d->st.rewritten++;
		break;
	case BLQ_INSPECT_HELD:
		d->st.held++;
		break;
	case BLQ_INSPECT_NOT_FOUND:
		d->st.not_found++;
		break;
	case BLQ_INSPECT_REFUSED:
		d->st.refused++;
		break;
	}
	if (d->fn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	blq_inspect_deletion x = {.loc = loc, .action = action, .records = records, .kept = kept,
				  .pending = consumer != NULL && consumer[0] != '\0',
				  .consumer = consumer ? consumer : "", .message = msg};
	d->fn(d->ctx, &x);
}

/* True when locs[i] and locs[j] belong to the same file (or stream). */
static bool same_part(const blq_inspect_loc *x, const blq_inspect_loc *y)
{
	return x->area == y->area && strcmp(x->file, y->file) == 0;
}

static int delete_group(blq_inspect *in, blq_inspect_loc *locs, const blq_inspect_loc **sel,
			bool *taken, size_t n, size_t i, blq__idel *d, blq_error *err)
{
	const blq_inspect_loc *l = &locs[i];
	const blq__iarea *a = &in->areas[l->area];
	bool whole = !l->record && l->id[0] == '\0';
	size_t k = 0;

	/* Everything else naming the same part: a whole part wins over its
	 * records; an area over its files. */
	for (size_t j = i; j < n; j++) {
		if (taken[j] || locs[j].area != l->area)
			continue;
		bool part_of = l->file[0] == '\0' || same_part(l, &locs[j]);
		if (!part_of)
			continue;
		taken[j] = true;
		if (!locs[j].record && locs[j].id[0] == '\0')
			whole = true;
		else
			sel[k++] = &locs[j];
	}
	if (whole)
		k = 0;
	if (a->kind == BLQ__IAREA_DIR)
		return blq__ifs_delete(in, a, l->file[0] ? l->file : NULL, sel, k, d, err);
	return blq__ir_delete(in, a, sel, k, d, err);
}

int blq_inspect_delete(blq_inspect *in, const char *const *locs, size_t n, unsigned flags,
		       blq_inspect_deletion_fn fn, void *ctx, blq_inspect_delete_stats *out,
		       blq_error *err)
{
	blq__idel d = {.flags = flags, .fn = fn, .ctx = ctx};
	int rc = 0;

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (in == NULL || (locs == NULL && n > 0))
		return blq__error_set(err, BLQ_EINVAL, "delete: inspector or locations NULL");
	blq_inspect_loc *parsed = calloc(n ? n : 1, sizeof(*parsed));
	const blq_inspect_loc **sel = calloc(n ? n : 1, sizeof(*sel));
	bool *taken = calloc(n ? n : 1, sizeof(*taken));
	if (parsed == NULL || sel == NULL || taken == NULL) {
		rc = blq__error_set(err, BLQ_ENOMEM, "delete: out of memory");
		goto out;
	}
	/* Every location is checked before anything changes. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		blq_inspect_loc *l = &parsed[i];
		if ((rc = blq_inspect_loc_parse(locs[i], l, err)) != 0)
			break;
		enum blq__iarea_kind k = in->areas[l->area].kind;
		if (k == BLQ__IAREA_NONE)
			rc = blq__error_set(err, BLQ_EINVAL, "\"%s\": this dump has no %s area",
					    locs[i], blq_inspect_area_name(l->area));
		else if (k == BLQ__IAREA_DIR && l->id[0] != '\0')
			rc = blq__error_set(err, BLQ_EINVAL,
					    "\"%s\": a stream entry, but the %s area is a directory",
					    locs[i], blq_inspect_area_name(l->area));
		else if (k == BLQ__IAREA_STREAM && l->file[0] != '\0')
			rc = blq__error_set(err, BLQ_EINVAL,
					    "\"%s\": a file, but the %s area is a stream", locs[i],
					    blq_inspect_area_name(l->area));
	}
	/* Areas first (they take their files' locations), then by part. */
	for (int pass = 0; pass < 2 && rc == 0; pass++)
		for (size_t i = 0; i < n && rc == 0; i++) {
			bool area = parsed[i].file[0] == '\0' && parsed[i].id[0] == '\0';
			if (!taken[i] && area == (pass == 0))
				rc = delete_group(in, parsed, sel, taken, n, i, &d, err);
		}
out:
	free(parsed);
	free(sel);
	free(taken);
	if (out != NULL)
		*out = d.st;
	return rc;
}

unsigned blq__iformat_for(const blq_dlq_why *why, unsigned prev)
{
	return prev == 2 || (why != NULL && !blq__dump_why_empty(why)) ? 2 : 1;
}

int blq_inspect_append(blq_inspect *in, const blq_inspect_item *items, size_t n, blq_error *err)
{
	blq__buf b = {0};
	unsigned format = 1;
	int rc = 0;

	if (in == NULL || (items == NULL && n > 0))
		return blq__error_set(err, BLQ_EINVAL, "append: inspector or items NULL");
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const blq_dlq_why *w = items[i].why;
		if (items[i].len > BLQ_DUMP_RECORD_MAX || (items[i].data == NULL && items[i].len))
			return blq__error_set(err, BLQ_EINVAL,
					      "append: item %zu: %zu bytes (at most %u, data set)", i,
					      items[i].len, BLQ_DUMP_RECORD_MAX);
		if (w != NULL && ((unsigned)w->reason > 255 ||
				  memchr(w->queue, '\0', sizeof(w->queue)) == NULL))
			return blq__error_set(err, BLQ_EINVAL,
					      "append: item %zu: why: bad reason or queue name", i);
		format = blq__iformat_for(w, format);
	}
	uint64_t version;
	if ((rc = blq_inspect_version(in, &version, err)) < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (blq__dump_rec_append(&b, format, items[i].data, items[i].len, items[i].restores,
					 items[i].why) != 0)
			rc = blq__error_set(err, BLQ_ENOMEM, "append: out of memory");
	if (rc == 0)
		rc = blq__iappend_buf(in, &b, n, format, version, err);
	blq__buf_free(&b);
	return rc;
}

int blq__iappend_buf(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		     uint64_t version, blq_error *err)
{
	return in->areas[BLQ_INSPECT_DUMP].kind == BLQ__IAREA_DIR
		       ? blq__ifs_append(in, b, count, format, version, err)
		       : blq__ir_append(in, b, count, format, version, err);
}

/* ---- the dump's version ---- */

static int area_version(blq_inspect *in, const blq__iarea *a, blq__iversion *v, blq_error *err)
{
	memset(v, 0, sizeof(*v));
	if (a->kind == BLQ__IAREA_DIR)
		return blq__ifs_version(a, v, err);
	if (a->kind == BLQ__IAREA_STREAM)
		return blq__ir_version(in, a, v, err);
	return 0;
}

int blq_inspect_version(blq_inspect *in, uint64_t *version, blq_error *err)
{
	if (in == NULL || version == NULL)
		return blq__error_set(err, BLQ_EINVAL, "version: inspector or out NULL");
	/* The dump's own parts first, then the dead store: the restorer
	 * writes each dead record with the version it read it with, which
	 * is the dump's (it quarantines every other). Never the quarantine:
	 * a file may be there for its version. */
	static const enum blq_inspect_area order[] = {BLQ_INSPECT_DUMP, BLQ_INSPECT_DEAD};
	for (size_t i = 0; i < 2; i++) {
		blq__iversion v;
		int rc = area_version(in, &in->areas[order[i]], &v, err);
		if (rc != 0)
			return rc;
		if (!v.found)
			continue;
		if (in->version_set && v.v != in->version)
			return blq__error_set(err, BLQ_EINVAL,
					      "version %llu was given, but %s is version %llu: its "
					      "reader would quarantine what is written as %llu",
					      (unsigned long long)in->version, v.where,
					      (unsigned long long)v.v,
					      (unsigned long long)in->version);
		if (v.mixed && !in->version_set)
			return blq__error_set(err, BLQ_EINVAL,
					      "cannot know the version of the dump: its %s area "
					      "holds versions %llu (%s) and %llu; say which "
					      "(blq-dlq --dump-version / --to-version)",
					      blq_inspect_area_name(order[i]), (unsigned long long)v.v,
					      v.where, (unsigned long long)v.other);
		*version = in->version_set ? in->version : v.v;
		return 0;
	}
	*version = in->version; /* the config's: given, or 0 by default */
	return in->version_set ? 0 : 1;
}

int blq_inspect_set_version(blq_inspect *in, uint64_t version)
{
	if (in == NULL)
		return BLQ_EINVAL;
	in->version = version;
	in->version_set = true;
	return 0;
}
