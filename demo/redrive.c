/* A redrive's thread: scan, append, delete, at a rate (redrive.h). */
#include "redrive.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A record copied out of a scan. */
typedef struct held {
	char loc[BLQ_INSPECT_LOC_MAX];
	void *data;
	size_t len;
	blq_dlq_why why;
} held;

typedef struct batch {
	held *v;
	size_t n, cap;
	/* Selection: sorted canonical locations wanted (the scan keeps only those). */
	const char *const *want;
	size_t nwant;
} batch;

struct demo_redrive {
	blq_inspect *in; /* used by the thread only, once started */
	blq_restorer *kick;
	enum blq_inspect_area area;
	bool all;
	double rate;
	batch sel; /* selection: the records, in order */
	pthread_t thread;
	bool joined;

	pthread_mutex_t mu; /* guards what follows */
	pthread_cond_t cond;
	bool cancel;
	const char *state;
	uint64_t total, moved, skipped;
	uint64_t t0_ns, t1_ns; /* CLOCK_MONOTONIC: start, end (0: running) */
	char error[256];
};

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void batch_clear(batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].data);
	b->n = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Scan callback: copies each record (of the selection, when there is one). */
static int on_record(void *ctx, const blq_inspect_record *rec)
{
	batch *b = ctx;
	if (b->want != NULL && bsearch(&rec->loc, b->want, b->nwant, sizeof *b->want, cmp_str) == NULL)
		return 0;
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 64;
		held *nv = realloc(b->v, ncap * sizeof *nv);
		if (nv == NULL)
			return -1;
		b->v = nv;
		b->cap = ncap;
	}
	held *h = &b->v[b->n];
	h->data = malloc(rec->len ? rec->len : 1);
	if (h->data == NULL)
		return -1;
	memcpy(h->data, rec->data, rec->len);
	h->len = rec->len;
	h->why = rec->why;
	snprintf(h->loc, sizeof h->loc, "%s", rec->loc);
	b->n++;
	return 0;
}

static void finish(demo_redrive *r, const char *state, const char *error)
{
	pthread_mutex_lock(&r->mu);
	r->state = state;
	r->t1_ns = mono_ns();
	if (error != NULL)
		snprintf(r->error, sizeof r->error, "%s", error);
	pthread_mutex_unlock(&r->mu);
}

/* Waits until @n records are due; false when cancelled meanwhile. */
static bool wait_due(demo_redrive *r, uint64_t n)
{
	/* A tiny rate puts the due time past 2^64 ns (a double out of range
	 * converts to anything, 0 on x86-64: no wait at all): saturate. */
	double after = (double)n / r->rate * 1e9;
	uint64_t wait = after < 1.8e19 ? (uint64_t)after : UINT64_MAX; /* 2^64 is 1.84e19 */
	uint64_t due_ns = wait < UINT64_MAX - r->t0_ns ? r->t0_ns + wait : UINT64_MAX;
	struct timespec ts = {.tv_sec = (time_t)(due_ns / 1000000000u),
			      .tv_nsec = (long)(due_ns % 1000000000u)};
	pthread_mutex_lock(&r->mu);
	while (!r->cancel && mono_ns() < due_ns)
		pthread_cond_timedwait(&r->cond, &r->mu, &ts);
	bool go = !r->cancel;
	pthread_mutex_unlock(&r->mu);
	return go;
}

/* Appends @n records of @v to the dump, then deletes them from the source. */
static int move(demo_redrive *r, const held *v, size_t n, blq_error *e)
{
	blq_inspect_item items[256];
	const char *locs[256];
	for (size_t i = 0; i < n; i++) {
		/* Restores 0: a fresh start, or the restorer sends it straight back. */
		items[i] = (blq_inspect_item){.data = v[i].data, .len = v[i].len,
					      .why = v[i].why.reason ? &v[i].why : NULL};
		locs[i] = v[i].loc;
	}
	int rc = blq_inspect_append(r->in, items, n, e);
	if (rc != 0)
		return rc;
	if (r->kick != NULL)
		blq_restorer_kick(r->kick);
	blq_inspect_delete_stats st = {0};
	rc = blq_inspect_delete(r->in, locs, n, 0, NULL, NULL, &st, e);
	pthread_mutex_lock(&r->mu);
	r->moved += st.records;
	r->skipped += n - (st.records < n ? st.records : n);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static void *run(void *arg)
{
	demo_redrive *r = arg;
	size_t cap = r->rate >= 2560 ? 256 : r->rate >= 20 ? (size_t)(r->rate / 10) : 1;
	uint64_t handled = 0, stuck = 0, next = 0;
	batch b = {0};
	blq_error e = {0};
	char part[16];
	snprintf(part, sizeof part, "%s", blq_inspect_area_name(r->area));
	for (;;) {
		if (!wait_due(r, handled)) {
			finish(r, "cancelled", NULL);
			break;
		}
		uint64_t due = (uint64_t)((double)(mono_ns() - r->t0_ns) / 1e9 * r->rate) + 1;
		size_t n = due > handled ? (size_t)(due - handled) : 1;
		n = n < cap ? n : cap;
		const held *v;
		if (r->all) {
			if (handled >= r->total) {
				finish(r, "done", NULL);
				break;
			}
			n = n < r->total - handled ? n : (size_t)(r->total - handled);
			batch_clear(&b);
			/* Records that would not go (held, stale) are skipped over. */
			blq_inspect_filter f = {.part = part, .records_only = true,
						.skip = stuck, .limit = n};
			if (blq_inspect_scan(r->in, &f, on_record, &b, &e) != 0) {
				finish(r, "failed", e.msg[0] ? e.msg : "out of memory");
				break;
			}
			if (b.n == 0) {
				finish(r, "done", NULL);
				break;
			}
			v = b.v;
			n = b.n;
		} else {
			if (next >= r->sel.n) {
				finish(r, "done", NULL);
				break;
			}
			n = n < r->sel.n - next ? n : r->sel.n - next;
			v = r->sel.v + next;
			next += n;
		}
		uint64_t before = r->moved;
		if (move(r, v, n, &e) != 0) {
			finish(r, "failed", e.msg);
			break;
		}
		stuck += n - (r->moved - before);
		handled += n;
	}
	batch_clear(&b);
	free(b.v);
	return NULL;
}

demo_redrive *demo_redrive_start(blq_inspect *in, blq_restorer *kick,
				 const demo_redrive_spec *sp, char *err, size_t errlen,
				 int *status)
{
	demo_redrive *r = calloc(1, sizeof *r);
	*status = 500;
	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		blq_inspect_close(in);
		return NULL;
	}
	r->in = in;
	r->kick = kick;
	r->area = sp->area;
	r->all = sp->all;
	r->rate = sp->rate;
	r->state = "running";
	r->joined = true;
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);

	blq_error e = {0};
	blq_inspect_filter f = {.part = blq_inspect_area_name(sp->area), .records_only = true,
				.newest_first = !sp->all};
	int rc;
	if (sp->all) {
		blq_inspect_summary sum = {0};
		rc = blq_inspect_verify(in, &f, &sum, NULL, NULL, &e);
		r->total = sum.records;
		rc = rc == 1 ? 0 : rc; /* damage is not counted, nor moved */
	} else {
		const char **want = malloc((sp->nlocs ? sp->nlocs : 1) * sizeof *want);
		rc = want != NULL ? 0 : BLQ_ENOMEM;
		if (want != NULL) {
			memcpy(want, sp->locs, sp->nlocs * sizeof *want);
			qsort(want, sp->nlocs, sizeof *want, cmp_str);
			r->sel.want = want;
			r->sel.nwant = sp->nlocs;
			rc = blq_inspect_scan(in, &f, on_record, &r->sel, &e);
			free(want);
			r->sel.want = NULL;
		}
		r->total = r->sel.n;
		r->skipped = sp->nlocs - r->sel.n; /* not found */
	}
	if (rc != 0) {
		snprintf(err, errlen, "dlq: %s", e.msg[0] ? e.msg : "out of memory");
		*status = rc == BLQ_ENOMEM ? 500 : 502;
		demo_redrive_free(r);
		return NULL;
	}
	r->t0_ns = mono_ns();
	if (pthread_create(&r->thread, NULL, run, r) != 0) {
		snprintf(err, errlen, "cannot start the redrive's thread");
		demo_redrive_free(r);
		return NULL;
	}
	r->joined = false;
	return r;
}

bool demo_redrive_running(demo_redrive *r)
{
	pthread_mutex_lock(&r->mu);
	bool running = r->t1_ns == 0;
	pthread_mutex_unlock(&r->mu);
	return running;
}

json_t *demo_redrive_json(demo_redrive *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t end = r->t1_ns ? r->t1_ns : mono_ns();
	json_t *o = json_pack("{s:s,s:s,s:b,s:f,s:I,s:I,s:I,s:f,s:s}", "state", r->state, "area",
			      blq_inspect_area_name(r->area), "all", r->all, "rate", r->rate,
			      "total", (json_int_t)r->total, "moved", (json_int_t)r->moved,
			      "skipped", (json_int_t)r->skipped, "elapsed_s",
			      (double)(end - r->t0_ns) / 1e9, "error", r->error);
	pthread_mutex_unlock(&r->mu);
	return o;
}

void demo_redrive_stop(demo_redrive *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->cancel = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	if (!r->joined) {
		pthread_join(r->thread, NULL);
		r->joined = true;
	}
}

void demo_redrive_free(demo_redrive *r)
{
	if (r == NULL)
		return;
	demo_redrive_stop(r);
	blq_inspect_close(r->in);
	batch_clear(&r->sel);
	free(r->sel.v);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
