/*
 * Redrive (blq_inspect_redrive): records moved back into a dump that a
 * restorer consumes, at a rate. blq-dlq's redrive and blq-demo's are this
 * one function; they once had a copy each, and the copies diverged (one
 * kept the restore count, one appended records it could not delete).
 *
 * Design
 * - Through the dump, never around it: a batch is appended to the
 *   target's dump area with the target's writer (durable on return) and
 *   only then deleted from the source. A crash between the two leaves a
 *   duplicate, never a loss, which is the restorer's at-least-once rule.
 * - A dry run of the delete comes first. A record it would not remove (a
 *   file a restorer holds, a stale location, a damaged file's records)
 *   would be written on every run and never leave the source; so such a
 *   batch is not written at all and the redrive stops, saying why.
 * - A damaged file is salvaged whole instead: its intact records (every
 *   one the reader resynchronises on) in one batch, then the file
 *   deleted whole, so a second run finds nothing of it. Under a filter a
 *   part of it would be moved and the rest lost with the file: refused.
 * - The written records are the target's: its version (blq_inspect_version,
 *   else the source's: a dead store's records carry the dump's) and its
 *   file names (the inspector's mask). From the dead store their restore
 *   count is reset, or the restorer's max_restores would send them
 *   straight back to it.
 * - Each batch is a fresh scan of the source's first records: those
 *   before it were deleted, so no cursor goes stale. Locations are moved
 *   in one batch: deleting records of a file shifts the others' offsets.
 * - Pacing: batch k starts no earlier than start + moved / rate, so the
 *   average rate holds whatever a batch costs; the wait is cut in 50 ms
 *   slices so the progress callback can stop it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errorf.h"
#include "inspect.h"
#include "monotonic.h"

#define SLICE_NS 50000000ull
#define BATCH_MAX 10000u

/* A record copied out of a scan (its pointers live only in the callback). */
typedef struct rrec {
	char loc[BLQ_INSPECT_LOC_MAX];
	void *data;
	size_t len;
	uint32_t restores;
	blq_dlq_why why;
} rrec;

typedef struct rbatch {
	rrec *v;
	size_t n, cap;
	size_t max;       /* stop the scan at this many; 0: no bound */
	const char *want; /* a canonical record location, or NULL: any */
	bool nomem;
} rbatch;

static void rbatch_clear(rbatch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].data);
	b->n = 0;
}

static int rbatch_add(void *ctx, const blq_inspect_record *r)
{
	rbatch *b = ctx;
	if (r->done || (b->want != NULL && strcmp(r->loc, b->want) != 0))
		return 0; /* restored already / not the one named */
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		rrec *v = realloc(b->v, cap * sizeof(*v));
		if (v == NULL) {
			b->nomem = true;
			return 1;
		}
		b->v = v;
		b->cap = cap;
	}
	rrec *c = &b->v[b->n];
	c->data = malloc(r->len ? r->len : 1);
	if (c->data == NULL) {
		b->nomem = true;
		return 1;
	}
	memcpy(c->data, r->data, r->len);
	c->len = r->len;
	c->restores = r->restores;
	c->why = r->why;
	snprintf(c->loc, sizeof(c->loc), "%s", r->loc);
	b->n++;
	/* Counted here, not by the scan's limit: done records pass the
	 * scan's filter but are not taken. */
	return b->want != NULL || (b->max != 0 && b->n >= b->max);
}

typedef struct redrive {
	blq_inspect *from, *to;
	const blq_inspect_redrive_config *cfg;
	blq_inspect_filter f; /* the selection, part set to from */
	bool reset;
	uint64_t start_ns;
	blq_inspect_redrive_stats *st;
	bool version_known; /* st->version said by a dump or given */
	blq_error *err;
} redrive;

static bool report(redrive *r)
{
	r->st->elapsed_s = (double)(blq__monotonic_ns() - r->start_ns) / 1e9;
	return r->cfg->progress != NULL && r->cfg->progress(r->cfg->ctx, r->st) != 0;
}

/* Waits until @n records are due at the rate; false when stopped. */
static bool wait_due(redrive *r, uint64_t n)
{
	if (r->cfg->rate <= 0)
		return true;
	double after = (double)n / r->cfg->rate * 1e9;
	uint64_t due = r->start_ns + (after < 1.8e19 - (double)r->start_ns ? (uint64_t)after
									  : UINT64_MAX / 2);
	for (uint64_t now = blq__monotonic_ns(); now < due; now = blq__monotonic_ns()) {
		uint64_t d = due - now < SLICE_NS ? due - now : SLICE_NS;
		struct timespec ts = {(time_t)(d / 1000000000ull), (long)(d % 1000000000ull)};
		nanosleep(&ts, NULL);
		if (report(r))
			return false;
	}
	return true;
}

/* Appends b to the target, then deletes it from the source, after a dry
 * run of the delete. whole: a damaged file's location, deleted whole. */
static int move(redrive *r, const rbatch *b, const char *whole)
{
	const char **locs = malloc((b->n + 1) * sizeof(*locs));
	blq__buf buf = {0};
	unsigned format = 1;
	int rc = 0;

	if (locs == NULL)
		return blq__error_set(r->err, BLQ_ENOMEM, "redrive: out of memory");
	if (!r->version_known && b->n > 0) {
		free(locs);
		const blq__iarea *d = &r->to->areas[BLQ_INSPECT_DUMP];
		return blq__error_set(r->err, BLQ_EINVAL,
				      "redrive: cannot know the version of dump %s: neither it nor "
				      "a dead store holds a record, and none was given (blq-dlq "
				      "--dump-version, or --to-version for --to); nothing was moved",
				      d->kind == BLQ__IAREA_DIR ? d->path : d->key);
	}
	size_t nlocs = whole != NULL ? 1 : b->n;
	for (size_t i = 0; i < b->n; i++) {
		locs[i] = b->v[i].loc;
		format = blq__iformat_for(&b->v[i].why, format);
	}
	if (whole != NULL)
		locs[0] = whole;
	blq_inspect_delete_stats ds = {0};
	rc = blq_inspect_delete(r->from, locs, nlocs, BLQ_INSPECT_DRY_RUN, NULL, NULL, &ds, r->err);
	if (rc != 0)
		goto out;
	bool all = whole != NULL ? ds.files + ds.rewritten == 1 && ds.records >= b->n
				 : ds.records == b->n;
	if (!all) {
		rc = blq__error_set(r->err, BLQ_EREFUSED,
				    "redrive: %zu records selected could not all be deleted from "
				    "the source (%llu held by a restorer, %llu not found, %llu refused: "
				    "a damaged file's records are salvaged whole, not picked), so "
				    "nothing of it was written; %llu moved before it",
				    b->n, (unsigned long long)ds.held,
				    (unsigned long long)ds.not_found, (unsigned long long)ds.refused,
				    (unsigned long long)r->st->moved);
		goto out;
	}
	for (size_t i = 0; i < b->n && rc == 0; i++) {
		const blq_dlq_why *w = blq__dump_why_empty(&b->v[i].why) ? NULL : &b->v[i].why;
		if (blq__dump_rec_append(&buf, format, b->v[i].data, b->v[i].len,
					 r->reset ? 0 : b->v[i].restores, w) != 0)
			rc = blq__error_set(r->err, BLQ_ENOMEM, "redrive: out of memory");
	}
	char why[sizeof(r->err->msg)];
	/* A damaged file whose intact records were all restored (done) has
	 * nothing to write: it is only deleted. */
	if (rc == 0 && b->n > 0 &&
	    (rc = blq__iappend_buf(r->to, &buf, b->n, format, r->st->version, r->err)) != 0) {
		snprintf(why, sizeof(why), "%s", r->err != NULL ? r->err->msg : "");
		blq__error_set(r->err, rc, "redrive: writing: %s (the batch stays in the source; "
					   "%llu moved before it)",
			       why, (unsigned long long)r->st->moved);
		goto out;
	}
	memset(&ds, 0, sizeof(ds));
	if (rc == 0 && (rc = blq_inspect_delete(r->from, locs, nlocs, 0, NULL, NULL, &ds,
						r->err)) != 0) {
		snprintf(why, sizeof(why), "%s", r->err != NULL ? r->err->msg : "");
		blq__error_set(r->err, rc, "redrive: deleting from the source: %s (the batch was "
					   "written: expect duplicates of it)",
			       why);
		goto out;
	}
	all = whole != NULL ? ds.files + ds.rewritten == 1 : ds.records == b->n;
	if (rc == 0 && !all) {
		/* A restorer took a file between the dry run and the delete. */
		rc = blq__error_set(r->err, BLQ_EREFUSED,
				    "redrive: %llu of %zu records written could not be deleted "
				    "from the source (%llu held, %llu not found, %llu refused): "
				    "they are in both places (duplicates, not a loss); stopping",
				    (unsigned long long)(b->n - (ds.records < b->n ? ds.records : b->n)),
				    b->n, (unsigned long long)ds.held,
				    (unsigned long long)ds.not_found, (unsigned long long)ds.refused);
	}
	if (rc == 0 || rc == BLQ_EREFUSED) {
		r->st->moved += b->n;
		r->st->batches++;
		if (whole != NULL) {
			r->st->salvaged += b->n;
			r->st->files_salvaged++;
		}
	}
out:
	blq__buf_free(&buf);
	free(locs);
	return rc;
}

static bool filtered(const blq_inspect_filter *f, const blq_inspect_redrive_config *c)
{
	return c->nlocs > 0 || f->reasons != 0 || f->since_ns != 0 || f->until_ns != 0 ||
	       f->limit != 0;
}

typedef struct damaged_acc {
	char (*names)[BLQ_INSPECT_LOC_MAX];
	size_t n, cap;
	const char *only; /* a file part: only it */
	bool nomem;
} damaged_acc;

static int note_damaged(void *ctx, const blq_inspect_part *p)
{
	damaged_acc *d = ctx;
	if (p->stream || p->damaged == 0 || (d->only != NULL && strcmp(p->loc, d->only) != 0))
		return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		void *v = realloc(d->names, cap * sizeof(*d->names));
		if (v == NULL) {
			d->nomem = true;
			return 1;
		}
		d->names = v;
		d->cap = cap;
	}
	snprintf(d->names[d->n++], BLQ_INSPECT_LOC_MAX, "%s", p->loc);
	return 0;
}

/* The source's damaged files: salvaged whole (no filter) or refused. */
static int salvage_damaged(redrive *r, enum blq_inspect_area area, const char *only)
{
	damaged_acc d = {.only = only};
	rbatch b = {0};
	int rc = 0;

	/* The source area's files only: listing the whole dump would read
	 * every file of the other areas too. */
	bool stop = false;
	rc = blq__ifs_list(r->from, &r->from->areas[area], note_damaged, &d, &stop, r->err);
	if (rc == 0 && d.nomem)
		rc = blq__error_set(r->err, BLQ_ENOMEM, "redrive: out of memory");
	for (size_t i = 0; i < d.n && rc == 0; i++) {
		if (filtered(&r->f, r->cfg)) {
			rc = blq__error_set(r->err, BLQ_EREFUSED,
					    "redrive: %s is damaged and a filter picks records of it: "
					    "1 refused, so nothing of it was written (redrive it with "
					    "no filter: its intact records are salvaged whole; or "
					    "salvage it first)", d.names[i]);
			break;
		}
		if (!wait_due(r, r->st->moved)) {
			rc = 1;
			break;
		}
		blq_inspect_filter f = {.part = d.names[i], .records_only = true};
		rbatch_clear(&b);
		rc = blq_inspect_scan(r->from, &f, rbatch_add, &b, r->err);
		if (rc == 0 && b.nomem)
			rc = blq__error_set(r->err, BLQ_ENOMEM, "redrive: out of memory");
		if (rc == 0)
			rc = move(r, &b, d.names[i]);
		if (rc == 0 && report(r))
			rc = 1;
	}
	rbatch_clear(&b);
	free(b.v);
	free(d.names);
	return rc;
}

/* The named records, in one batch. */
static int select_locs(redrive *r, rbatch *b)
{
	for (size_t i = 0; i < r->cfg->nlocs; i++) {
		blq_inspect_loc l;
		char want[BLQ_INSPECT_LOC_MAX], part[BLQ_INSPECT_LOC_MAX];
		int rc = blq_inspect_loc_parse(r->cfg->locs[i], &l, r->err);
		if (rc != 0)
			return rc;
		if (!l.record && l.id[0] == '\0')
			return blq__error_set(r->err, BLQ_EINVAL,
					      "redrive: \"%s\" names a part, not a record (give it "
					      "as from)", r->cfg->locs[i]);
		blq_inspect_loc_format(&l, want, sizeof(want));
		l.record = false;
		l.id[0] = '\0';
		blq_inspect_loc_format(&l, part, sizeof(part));
		blq_inspect_filter f = r->f;
		f.part = part;
		f.records_only = true;
		f.limit = 0;
		b->want = want;
		rc = blq_inspect_scan(r->from, &f, rbatch_add, b, r->err);
		b->want = NULL;
		if (rc == 0 && b->nomem)
			rc = blq__error_set(r->err, BLQ_ENOMEM, "redrive: out of memory");
		if (rc != 0)
			return rc;
	}
	return 0;
}

int blq_inspect_redrive(blq_inspect *from, const blq_inspect_redrive_config *cfg,
			blq_inspect_redrive_stats *out, blq_error *err)
{
	static const blq_inspect_redrive_config dflt = {0};
	blq_inspect_redrive_stats st = {0};
	redrive r = {.from = from, .cfg = cfg != NULL ? cfg : &dflt, .st = &st, .err = err};
	const blq_inspect_redrive_config *c = r.cfg;
	rbatch b = {0};
	int rc = 0;

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (from == NULL)
		return blq__error_set(err, BLQ_EINVAL, "redrive: inspector NULL");
	if (!(c->rate >= 0 && c->rate <= 1e6) || (c->locs == NULL && c->nlocs > 0))
		return blq__error_set(err, BLQ_EINVAL,
				      "redrive: rate %g out of 0..1000000, or locations NULL",
				      c->rate);
	r.to = c->to != NULL ? c->to : from;
	const char *part = c->from != NULL ? c->from : "dead";
	blq_inspect_loc pl;
	if ((rc = blq_inspect_loc_parse(part, &pl, err)) != 0)
		return rc;
	if (pl.record || pl.id[0] != '\0')
		return blq__error_set(err, BLQ_EINVAL,
				      "redrive: from \"%s\": an area or a file, not a record", part);
	if (from->areas[pl.area].kind == BLQ__IAREA_NONE)
		return blq__error_set(err, BLQ_EINVAL, "redrive: from \"%s\": this dump has no %s",
				      part, blq_inspect_area_name(pl.area));
	if (r.to == from && pl.area == BLQ_INSPECT_DUMP)
		return blq__error_set(err, BLQ_EINVAL,
				      "redrive: from \"%s\" into the same dump: give another target",
				      part);
	if (c->filter != NULL)
		r.f = *c->filter;
	r.f.part = part;
	r.f.records_only = true;
	r.f.skip = 0;
	r.reset = pl.area == BLQ_INSPECT_DEAD && !c->keep_restores;
	st.reset_restores = r.reset;

	/* The target's version, else the source's (see the design note).
	 * Nothing saying it is refused at the first write (a quarantine's
	 * records may be there for their version: not evidence), so that a
	 * redrive with nothing to move still says so. */
	rc = blq_inspect_version(r.to, &st.version, err);
	if (rc == 1 && r.to != from)
		rc = blq_inspect_version(from, &st.version, err);
	if (rc < 0)
		return rc;
	r.version_known = rc == 0;
	rc = 0;

	size_t batch = c->batch;
	if (batch == 0)
		batch = c->rate > 0 ? (c->rate / 10 >= 1 ? (size_t)(c->rate / 10) : 1) : 500;
	if (batch > BATCH_MAX)
		batch = BATCH_MAX;
	r.start_ns = blq__monotonic_ns();

	if (from->areas[pl.area].kind == BLQ__IAREA_DIR)
		rc = salvage_damaged(&r, pl.area, pl.file[0] != '\0' ? part : NULL);
	if (rc == 0 && c->nlocs > 0) {
		rc = select_locs(&r, &b);
		if (rc == 0 && b.n > 0 && !wait_due(&r, st.moved))
			rc = 1;
		if (rc == 0 && b.n > 0 && (rc = move(&r, &b, NULL)) == 0 && report(&r))
			rc = 1;
	}
	uint64_t limit = c->filter != NULL ? c->filter->limit : 0;
	while (rc == 0 && c->nlocs == 0) {
		uint64_t left = limit != 0 ? limit - (st.moved < limit ? st.moved : limit) : UINT64_MAX;
		if (left == 0)
			break;
		blq_inspect_filter f = r.f;
		f.limit = 0;
		rbatch_clear(&b);
		b.max = left < batch ? (size_t)left : batch;
		rc = blq_inspect_scan(from, &f, rbatch_add, &b, err);
		if (rc == 0 && b.nomem)
			rc = blq__error_set(err, BLQ_ENOMEM, "redrive: out of memory");
		if (rc != 0 || b.n == 0)
			break;
		if (!wait_due(&r, st.moved)) {
			rc = 1;
			break;
		}
		if ((rc = move(&r, &b, NULL)) == 0 && report(&r))
			rc = 1;
	}
	/* The last batch's slot ends moved / rate after the start: waiting it
	 * out makes the rate reported the one kept. */
	if (rc == 0 && st.moved > 0 && !wait_due(&r, st.moved))
		rc = 1;
	st.elapsed_s = (double)(blq__monotonic_ns() - r.start_ns) / 1e9;
	rbatch_clear(&b);
	free(b.v);
	if (out != NULL)
		*out = st;
	if (rc == 0)
		blq__error_set(err, BLQ_OK, "%s", "");
	return rc;
}
