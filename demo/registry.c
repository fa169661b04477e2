/* Stages by key: the state machine of registry.h under one mutex, and
 * the sampler that records each live stage's history (history.h). */
#include "registry.h"

#include "history.h"
#include "log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum entry_state { ENTRY_IDLE = 0, ENTRY_STARTING, ENTRY_RUNNING, ENTRY_STOPPING };

typedef struct entry {
	char key[65];
	enum entry_state state;
	unsigned refs;           /* borrowers of stage */
	demo_stage *stage;
	const blq_metrics_writer *qw;
	const blq_dump_metrics *dw;
	uint64_t stops;          /* stops completed, so an escalation can wait for one */
	char *final;             /* the last stop's accounting, for the escalations */
	bool forced;             /* the stop in progress was escalated */
	uint64_t sample_due_ns;  /* CLOCK_MONOTONIC: the stage's next sample */
} entry;

struct demo_registry {
	const demo_env *env;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* state or refs changed */
	entry *entries;      /* DEMO_KEYS_MAX, the first nkeys used */
	unsigned nkeys;
	unsigned live;       /* entries not IDLE */
	bool shutting_down;
	bool forcing;        /* a second signal: every stop is forced */

	/* The sampler: one thread, asleep on tick until the earliest
	 * sample_due_ns of the live stages, or for good while none is live. */
	pthread_t sampler;
	pthread_cond_t tick; /* CLOCK_MONOTONIC; a stage started, or stop */
	bool sampler_stop;
};

static bool live(const entry *e)
{
	return (e->state == ENTRY_RUNNING || e->state == ENTRY_STOPPING) && e->stage != NULL;
}

/* Samples each live stage when it is due, every DEMO_HISTORY_PERIOD_MS
 * from its start. The stages due are borrowed (refs), so a stop waits for
 * their sample, and sampled without the lock: status, list and stop need
 * it meanwhile. */
static void *sampler_main(void *arg)
{
	demo_registry *r = arg;
	const uint64_t period = (uint64_t)DEMO_HISTORY_PERIOD_MS * 1000000u;
	entry *due[DEMO_STAGES_MAX];
	demo_stage *stages[DEMO_STAGES_MAX];
	pthread_mutex_lock(&r->mu);
	while (!r->sampler_stop) {
		uint64_t now = demo_now_ns(), next = UINT64_MAX;
		unsigned n = 0;
		for (unsigned i = 0; i < r->nkeys; i++) {
			entry *e = &r->entries[i];
			if (!live(e))
				continue;
			if (e->sample_due_ns <= now && n < DEMO_STAGES_MAX) {
				e->refs++;
				stages[n] = e->stage;
				due[n++] = e;
				e->sample_due_ns += period;
				if (e->sample_due_ns <= now) /* fell behind: no burst to catch up */
					e->sample_due_ns = now + period;
			}
			if (e->sample_due_ns < next)
				next = e->sample_due_ns;
		}
		if (n > 0) {
			pthread_mutex_unlock(&r->mu);
			for (unsigned i = 0; i < n; i++)
				demo_stage_sample(stages[i]);
			pthread_mutex_lock(&r->mu);
			for (unsigned i = 0; i < n; i++)
				if (--due[i]->refs == 0)
					pthread_cond_broadcast(&r->cond);
			continue; /* time went by: look again */
		}
		if (next == UINT64_MAX) {
			pthread_cond_wait(&r->tick, &r->mu);
		} else {
			struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
					      .tv_nsec = (long)(next % 1000000000u)};
			pthread_cond_timedwait(&r->tick, &r->mu, &ts);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

demo_registry *demo_registry_new(const demo_env *env)
{
	demo_registry *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->entries = calloc(DEMO_KEYS_MAX, sizeof *r->entries);
	if (r->entries == NULL) {
		free(r);
		return NULL;
	}
	r->env = env;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cond, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->tick, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&r->sampler, NULL, sampler_main, r) != 0) {
		pthread_cond_destroy(&r->tick);
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->mu);
		free(r->entries);
		free(r);
		return NULL;
	}
	pthread_setname_np(r->sampler, "blq-demo-hist");
	return r;
}

void demo_registry_free(demo_registry *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->sampler_stop = true;
	pthread_cond_signal(&r->tick);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->sampler, NULL);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cond);
	pthread_cond_destroy(&r->tick);
	for (unsigned i = 0; i < r->nkeys; i++)
		free(r->entries[i].final);
	free(r->entries);
	free(r);
}

static entry *find(demo_registry *r, const char *key)
{
	for (unsigned i = 0; i < r->nkeys; i++)
		if (strcmp(r->entries[i].key, key) == 0)
			return &r->entries[i];
	return NULL;
}

/* The key's entry, made (with its metrics writers) on first use. */
static entry *find_or_add(demo_registry *r, const char *key, int *status, char *err,
			  size_t errlen)
{
	entry *e = find(r, key);
	if (e != NULL)
		return e;
	if (r->nkeys == DEMO_KEYS_MAX) {
		snprintf(err, errlen, "key: this daemon has seen %u distinct keys, its limit; "
				      "reuse one or restart it", DEMO_KEYS_MAX);
		*status = 503;
		return NULL;
	}
	blq_error be;
	const blq_metrics_writer *qw = blq_prom_queue_writer(r->env->prom, key, &be);
	const blq_dump_metrics *dw = qw ? blq_prom_dump_writer(r->env->prom, key, &be) : NULL;
	if (dw == NULL) {
		snprintf(err, errlen, "metrics: %s", be.msg);
		*status = 500;
		return NULL;
	}
	e = &r->entries[r->nkeys++];
	snprintf(e->key, sizeof e->key, "%s", key);
	e->qw = qw;
	e->dw = dw;
	return e;
}

int demo_registry_init(demo_registry *r, const char *key, const demo_spec *spec, char *err,
		       size_t errlen)
{
	int status = 200;
	pthread_mutex_lock(&r->mu);
	entry *e = NULL;
	if (r->shutting_down) {
		snprintf(err, errlen, "the daemon is shutting down");
		status = 503;
	} else if ((e = find(r, key)) != NULL && e->state != ENTRY_IDLE) {
		snprintf(err, errlen, "queue \"%s\" %s", key,
			 e->state == ENTRY_STOPPING ? "is still stopping; init it again once stopped"
			 : e->state == ENTRY_STARTING ? "is being created by another request"
						       : "already exists");
		status = 406;
	} else if (r->live >= DEMO_STAGES_MAX) {
		snprintf(err, errlen, "already %u queues running, the limit; stop one first",
			 DEMO_STAGES_MAX);
		status = 503;
	} else if ((e = find_or_add(r, key, &status, err, errlen)) != NULL) {
		e->state = ENTRY_STARTING;
		r->live++;
	}
	pthread_mutex_unlock(&r->mu);
	if (status != 200)
		return status;

	demo_stage *s = demo_stage_start(key, spec, r->env, e->qw, e->dw, err, errlen, &status);
	pthread_mutex_lock(&r->mu);
	if (s != NULL) {
		e->stage = s;
		e->state = ENTRY_RUNNING;
		e->sample_due_ns = demo_now_ns(); /* the history's first sample: now */
		pthread_cond_signal(&r->tick);
		status = 200;
	} else {
		e->state = ENTRY_IDLE;
		r->live--;
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	return status;
}

demo_stage *demo_registry_get(demo_registry *r, const char *key, bool *stopping)
{
	demo_stage *s = NULL;
	pthread_mutex_lock(&r->mu);
	entry *e = find(r, key);
	if (e != NULL && live(e)) {
		e->refs++;
		s = e->stage;
		*stopping = e->state == ENTRY_STOPPING;
	}
	pthread_mutex_unlock(&r->mu);
	return s;
}

void demo_registry_put(demo_registry *r, const char *key)
{
	pthread_mutex_lock(&r->mu);
	entry *e = find(r, key);
	if (e != NULL && e->refs > 0 && --e->refs == 0)
		pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
}

/* Stops e's stage (the caller set STOPPING and holds no lock), frees it
 * once unborrowed, and returns its final accounting (@balanced: whether
 * it balanced). */
/* Stops e's stage (deadline_ns as demo_stage_stop's); *timed_out says the
 * deadline forced it. */
static char *stop_entry(demo_registry *r, entry *e, bool force, uint64_t deadline_ns,
			bool *balanced, bool *timed_out)
{
	demo_stage *s = e->stage;
	*timed_out = demo_stage_stop(s, force, deadline_ns);
	char *final = demo_stage_final_json(s, balanced);
	pthread_mutex_lock(&r->mu);
	while (e->refs > 0)
		pthread_cond_wait(&r->cond, &r->mu);
	e->stage = NULL; /* unborrowable from now on; the key stays STOPPING */
	pthread_mutex_unlock(&r->mu);
	/* Free before the key goes IDLE: a new stage of the key shares its
	 * metrics writers, and blq_prom_unwatch goes by name (it would hide the
	 * new queue's gauges). */
	demo_stage_free(s);
	pthread_mutex_lock(&r->mu);
	force = force || e->forced;
	e->forced = false;
	free(e->final);
	e->final = final != NULL ? strdup(final) : NULL;
	e->stops++;
	e->state = ENTRY_IDLE;
	r->live--;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	demo_log(&r->env->logger, BLQ_LOG_INFO, "queue %s: stopped%s: %s", e->key,
		 *timed_out ? " (drain deadline passed, forced)" : force ? " (force)" : "",
		 final ? final : "(no accounting: out of memory)");
	return final;
}

int demo_registry_stop(demo_registry *r, const char *key, bool force, char **final, char *err,
		       size_t errlen)
{
	*final = NULL;
	pthread_mutex_lock(&r->mu);
	entry *e = find(r, key);
	if (e == NULL || e->state == ENTRY_IDLE) {
		pthread_mutex_unlock(&r->mu);
		snprintf(err, errlen, "queue \"%s\" not found", key);
		return 404;
	}
	if (e->state == ENTRY_STARTING) {
		pthread_mutex_unlock(&r->mu);
		snprintf(err, errlen, "queue \"%s\" is still starting; stop it once started", key);
		return 409;
	}
	if (e->state == ENTRY_STOPPING) {
		if (!force) {
			pthread_mutex_unlock(&r->mu);
			snprintf(err, errlen, "queue \"%s\" is already stopping", key);
			return 409;
		}
		/* Escalate the stop in progress (its own caller frees the
		 * stage), then answer with its accounting once it is done. */
		uint64_t gen = e->stops;
		demo_stage *s = e->stage;
		if (s != NULL) { /* NULL: stopped already, being freed */
			e->refs++;
			e->forced = true;
			pthread_mutex_unlock(&r->mu);
			demo_stage_force(s);
			pthread_mutex_lock(&r->mu);
			if (--e->refs == 0)
				pthread_cond_broadcast(&r->cond);
		}
		while (e->stops == gen)
			pthread_cond_wait(&r->cond, &r->mu);
		*final = e->final != NULL ? strdup(e->final) : NULL;
		pthread_mutex_unlock(&r->mu);
		return 200;
	}
	e->state = ENTRY_STOPPING;
	force = force || r->forcing; /* after a second signal every stop is forced */
	pthread_mutex_unlock(&r->mu);
	bool balanced;
	bool timed_out;
	*final = stop_entry(r, e, force, 0, &balanced, &timed_out);
	return 200;
}

char *demo_registry_list_json(demo_registry *r)
{
	json_t *arr = json_array();
	if (arr == NULL)
		return NULL;
	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->nkeys; i++) {
		entry *e = &r->entries[i];
		if (!live(e))
			continue;
		/* Status reads only thread-safe getters; the stage cannot be
		 * freed while the registry lock is held. */
		char *st = demo_stage_status_json(e->stage);
		json_t *v = st ? json_loads(st, 0, NULL) : NULL;
		free(st);
		if (v != NULL)
			json_array_append_new(arr, v);
	}
	pthread_mutex_unlock(&r->mu);
	char *text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

/* Appends printf output to a growing buffer. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		size_t ncap = (*cap + (size_t)n + 1) * 2;
		char *nb = realloc(*buf, ncap);
		if (nb == NULL)
			return -1;
		*buf = nb;
		*cap = ncap;
	}
}

int demo_registry_render_producers(demo_registry *r, char **buf, size_t *len, size_t *cap)
{
	static const char *const fam[2][2] = {
		{"queue_producers_active", "Producers enqueueing now."},
		{"queue_producers_idle", "Producers configured (producers_max) but not running."}};
	int rc = 0;
	pthread_mutex_lock(&r->mu);
	for (int f = 0; f < 2 && rc == 0; f++) {
		rc = append(buf, len, cap, "# HELP %s %s\n# TYPE %s gauge\n", fam[f][0], fam[f][1],
			    fam[f][0]);
		for (unsigned i = 0; i < r->nkeys && rc == 0; i++) {
			entry *e = &r->entries[i];
			if (!live(e))
				continue;
			unsigned active, max;
			demo_stage_producers(e->stage, &active, &max);
			/* Keys are [A-Za-z0-9_-]: nothing to escape in the label. */
			rc = append(buf, len, cap, "%s{queue=\"%s\"} %u\n", fam[f][0], e->key,
				    f == 0 ? active : max - active);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

bool demo_registry_stop_all(demo_registry *r, bool force, uint64_t deadline_ns,
			    unsigned *timed_out)
{
	bool balanced = true;
	*timed_out = 0;
	pthread_mutex_lock(&r->mu);
	r->shutting_down = true;
	for (;;) {
		entry *e = NULL;
		bool busy = false;
		for (unsigned i = 0; i < r->nkeys && e == NULL; i++) {
			if (r->entries[i].state == ENTRY_RUNNING)
				e = &r->entries[i];
			else if (r->entries[i].state != ENTRY_IDLE)
				busy = true; /* starting, or stopped by a request */
		}
		if (e == NULL) {
			if (!busy)
				break;
			pthread_cond_wait(&r->cond, &r->mu);
			continue;
		}
		e->state = ENTRY_STOPPING;
		bool f = force || r->forcing;
		pthread_mutex_unlock(&r->mu);
		bool ok, late;
		char *final = stop_entry(r, e, f, deadline_ns, &ok, &late);
		balanced = balanced && ok;
		*timed_out += late;
		free(final);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return balanced;
}

void demo_registry_force_all(demo_registry *r)
{
	/* Borrow every stage being stopped, then force them without the lock:
	 * a force close hands the whole queue to its DLQ, which may take a
	 * while, and /metrics, status and list need the lock meanwhile. */
	entry *borrowed[DEMO_STAGES_MAX];
	demo_stage *stages[DEMO_STAGES_MAX];
	unsigned n = 0;
	pthread_mutex_lock(&r->mu);
	r->shutting_down = true;
	r->forcing = true;
	for (unsigned i = 0; i < r->nkeys && n < DEMO_STAGES_MAX; i++) {
		entry *e = &r->entries[i];
		if (e->state == ENTRY_STOPPING && e->stage != NULL) {
			e->refs++;
			stages[n] = e->stage;
			borrowed[n++] = e;
		}
	}
	pthread_mutex_unlock(&r->mu);
	for (unsigned i = 0; i < n; i++) {
		demo_stage_force(stages[i]);
		demo_registry_put(r, borrowed[i]->key);
	}
}
