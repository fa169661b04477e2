/* A redrive's thread: blq_inspect_redrive, paced and cancellable (redrive.h). */
#include "redrive.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct demo_redrive {
	blq_inspect *in; /* used by the thread only, once started */
	blq_restorer *kick;
	enum blq_inspect_area area;
	bool all;
	double rate;
	char **locs; /* the selection (copies), or NULL */
	size_t nlocs;
	pthread_t thread;
	bool joined;

	pthread_mutex_t mu; /* guards what follows */
	bool cancel;
	const char *state;
	uint64_t total, moved, skipped, batches;
	uint64_t t0_ns, t1_ns; /* CLOCK_MONOTONIC: start, end (0: running) */
	char error[256];
};

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* blq_inspect_redrive's progress: publish it, kick the restorer after a
 * new batch, and say whether a stop was asked for. */
static int progress(void *ctx, const blq_inspect_redrive_stats *st)
{
	demo_redrive *r = ctx;
	pthread_mutex_lock(&r->mu);
	bool batch = st->batches != r->batches;
	r->moved = st->moved;
	r->batches = st->batches;
	bool cancel = r->cancel;
	pthread_mutex_unlock(&r->mu);
	if (batch && r->kick != NULL)
		blq_restorer_kick(r->kick);
	return cancel;
}

static void *run(void *arg)
{
	demo_redrive *r = arg;
	blq_inspect_redrive_config c = {.from = blq_inspect_area_name(r->area),
					.locs = (const char *const *)r->locs, .nlocs = r->nlocs,
					.rate = r->rate, .progress = progress, .ctx = r};
	blq_inspect_redrive_stats st = {0};
	blq_error e = {0};
	int rc = blq_inspect_redrive(r->in, &c, &st, &e);
	if (r->kick != NULL)
		blq_restorer_kick(r->kick);
	pthread_mutex_lock(&r->mu);
	r->moved = st.moved;
	r->batches = st.batches;
	if (!r->all)
		r->skipped = r->nlocs - (st.moved < r->nlocs ? st.moved : r->nlocs);
	r->state = rc == 0 ? "done" : rc == 1 ? "cancelled" : "failed";
	if (rc < 0)
		snprintf(r->error, sizeof r->error, "%s", e.msg);
	r->t1_ns = mono_ns();
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static int count_one(void *ctx, const blq_inspect_record *r)
{
	*(uint64_t *)ctx += !r->done; /* done: restored, left out by the redrive */
	return 0;
}

/* Counts the records a redrive of everything would move. */
static int count_all(blq_inspect *in, enum blq_inspect_area area, uint64_t *n, blq_error *e)
{
	blq_inspect_filter f = {.part = blq_inspect_area_name(area), .records_only = true};
	*n = 0;
	return blq_inspect_scan(in, &f, count_one, n, e);
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

	blq_error e = {0};
	int rc = 0;
	if (sp->all) {
		rc = count_all(in, sp->area, &r->total, &e);
	} else {
		r->locs = calloc(sp->nlocs ? sp->nlocs : 1, sizeof *r->locs);
		for (size_t i = 0; r->locs != NULL && i < sp->nlocs; i++)
			if ((r->locs[r->nlocs++] = strdup(sp->locs[i])) == NULL)
				rc = BLQ_ENOMEM;
		if (r->locs == NULL)
			rc = BLQ_ENOMEM;
		r->total = sp->nlocs;
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
	for (size_t i = 0; i < r->nlocs; i++)
		free(r->locs[i]);
	free(r->locs);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
