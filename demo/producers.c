/*
 * The stage's producers: one thread each, enqueueing a sequence number
 * every producer_delay, raised and lowered live (API or schedule).
 *
 * Lowering never waits: a producer told to stop may be blocked in
 * blq_enqueue on a full queue without a DLQ, so its slot is RETIRING
 * until the thread ends; raising joins finished slots without waiting.
 */
#include "stage_internal.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCHEDULE_TICK_NS 50000000ull /* the original calibrates every 50 ms */

static bool still_active(const void *p)
{
	return atomic_load_explicit(&((const producer *)p)->state, memory_order_relaxed) ==
	       PRODUCER_ACTIVE;
}

static void *producer_main(void *arg)
{
	producer *p = arg;
	demo_stage *s = p->stage;
	uint64_t delay = s->spec.producer_delay_ns;
	while (still_active(p)) {
		demo_sleep_while(delay, still_active, p);
		if (!still_active(p))
			break;
		blq_job job = {.payload = (void *)(uintptr_t)(atomic_fetch_add(&s->seq, 1) + 1)};
		if (s->spec.allow_deadline)
			job.deadline_ns = s->spec.worker_delay_ns;
		if (blq_enqueue_job(s->q, &job) == BLQ_ECLOSED)
			break;
	}
	return NULL;
}

int demo_producers_init(demo_stage *s, char *err, size_t errlen)
{
	unsigned n = s->spec.producers_max;
	s->producers = calloc(n ? n : 1, sizeof *s->producers);
	if (s->producers == NULL) {
		snprintf(err, errlen, "producers_max: no memory for %u producers", n);
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		s->producers[i].stage = s;
	pthread_mutex_init(&s->pmu, NULL);
	return demo_producers_set(s, s->spec.producers_min, err, errlen);
}

/* Joins a RETIRING slot whose thread has ended; true when the slot is free. */
static bool reap(producer *p)
{
	if (atomic_load(&p->state) == PRODUCER_IDLE)
		return true;
	if (atomic_load(&p->state) != PRODUCER_RETIRING || pthread_tryjoin_np(p->thread, NULL) != 0)
		return false;
	atomic_store(&p->state, PRODUCER_IDLE);
	return true;
}

/* Retires active producers, the newest first (as the original), until
 * target are left; the caller holds pmu. */
static void retire_down_to(demo_stage *s, unsigned target)
{
	for (unsigned i = s->spec.producers_max; i-- > 0 && s->active > target;)
		if (atomic_load(&s->producers[i].state) == PRODUCER_ACTIVE) {
			atomic_store(&s->producers[i].state, PRODUCER_RETIRING);
			s->active--;
		}
}

/* Moves the count of active producers to target; the caller holds pmu. */
static int set_locked(demo_stage *s, unsigned target, char *err, size_t errlen)
{
	int rc = 0;
	unsigned n = s->spec.producers_max;
	if (s->producers_closed) {
		snprintf(err, errlen, "producers: the queue is stopping");
		return -1;
	}
	retire_down_to(s, target);
	if (s->active >= target)
		return 0;
	/* Raise: all or nothing. Count the free slots first (a retired
	 * producer may still be blocked in an enqueue). */
	unsigned free_slots = 0;
	for (unsigned i = 0; i < n; i++)
		free_slots += reap(&s->producers[i]);
	if (free_slots < target - s->active) {
		snprintf(err, errlen, "producers: %u still finishing a blocked enqueue; try again "
			 "once the queue has room", target - s->active - free_slots);
		return -1;
	}
	unsigned from = s->active;
	for (unsigned i = 0; i < n && s->active < target; i++) {
		producer *p = &s->producers[i];
		if (atomic_load(&p->state) != PRODUCER_IDLE)
			continue;
		atomic_store(&p->state, PRODUCER_ACTIVE);
		int e = pthread_create(&p->thread, NULL, producer_main, p);
		if (e != 0) {
			atomic_store(&p->state, PRODUCER_IDLE);
			snprintf(err, errlen, "producers: cannot start a thread: %s", strerror(e));
			rc = -1;
			break;
		}
		s->active++;
	}
	if (rc != 0) /* a thread would not start: retire the ones just started */
		retire_down_to(s, from);
	return rc;
}

int demo_producers_set(demo_stage *s, unsigned target, char *err, size_t errlen)
{
	pthread_mutex_lock(&s->pmu);
	int rc = set_locked(s, target, err, errlen);
	pthread_mutex_unlock(&s->pmu);
	return rc;
}

int demo_producers_add(demo_stage *s, long delta, char *err, size_t errlen)
{
	int rc = -1;
	pthread_mutex_lock(&s->pmu);
	long target = (long)s->active + delta;
	if (target > (long)s->spec.producers_max)
		snprintf(err, errlen, "maximum producers count reached: %u active + %ld > "
				      "producers_max %u", s->active, delta, s->spec.producers_max);
	else if (target < (long)s->spec.producers_min)
		snprintf(err, errlen, "minimum producers count reached: %u active - %ld < "
				      "producers_min %u", s->active, -delta, s->spec.producers_min);
	else
		rc = set_locked(s, (unsigned)target, err, errlen);
	pthread_mutex_unlock(&s->pmu);
	return rc;
}

/* Tells every producer to stop and refuses new ones from now on. */
void demo_producers_stop_all(demo_stage *s)
{
	if (s->producers == NULL)
		return;
	pthread_mutex_lock(&s->pmu);
	s->producers_closed = true;
	retire_down_to(s, 0);
	pthread_mutex_unlock(&s->pmu);
}

/* After the queue closed (which wakes producers blocked in an enqueue):
 * joins them all. No thread can be started meanwhile (producers_closed). */
void demo_producers_join(demo_stage *s)
{
	demo_producers_stop_all(s);
	for (unsigned i = 0; s->producers != NULL && i < s->spec.producers_max; i++)
		if (atomic_load(&s->producers[i].state) != PRODUCER_IDLE) {
			pthread_join(s->producers[i].thread, NULL);
			atomic_store(&s->producers[i].state, PRODUCER_IDLE);
		}
}

void demo_producers_free(demo_stage *s)
{
	if (s->producers == NULL)
		return;
	demo_producers_join(s);
	pthread_mutex_destroy(&s->pmu);
	free(s->producers);
	s->producers = NULL;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Where the schedule is now: ms since the start, or since local midnight. */
static uint64_t schedule_now_ms(const demo_stage *s)
{
	if (blq_schedule_is_relative(s->pschedule))
		return mono_ms() - s->started_ms;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	return ((uint64_t)tm.tm_hour * 3600u + (uint64_t)tm.tm_min * 60u + (uint64_t)tm.tm_sec) *
		       1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The original's calibrate(): when the range in force changes, move the
 * producers to its count (outside every range: producers_min). */
static void *schedule_main(void *arg)
{
	demo_stage *s = arg;
	int current = -2; /* no range looked up yet */
	pthread_mutex_lock(&s->smu);
	while (!s->sched_stop) {
		blq_schedule_params p;
		int id = blq_schedule_lookup(s->pschedule, schedule_now_ms(s), &p);
		if (id != current) {
			current = id;
			unsigned target = id >= 0 ? p.workers_min : s->spec.producers_min;
			if (target < s->spec.producers_min)
				target = s->spec.producers_min;
			char err[160];
			pthread_mutex_unlock(&s->smu);
			if (demo_producers_set(s, target, err, sizeof err) != 0) {
				current = -2; /* try again at the next tick */
				demo_log(&s->logger, BLQ_LOG_WARN, "queue %s: producers_schedule: %s",
					 s->key, err);
			}
			pthread_mutex_lock(&s->smu);
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + SCHEDULE_TICK_NS;
		ts.tv_sec = (time_t)(at / 1000000000u);
		ts.tv_nsec = (long)(at % 1000000000u);
		while (!s->sched_stop && pthread_cond_timedwait(&s->scond, &s->smu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->smu);
	return NULL;
}

int demo_schedule_start(demo_stage *s, char *err, size_t errlen)
{
	s->started_ms = mono_ms();
	if (s->spec.n_producers_schedule == 0)
		return 0; /* no thread, no tick: an idle stage costs nothing */
	s->pschedule = demo_spec_schedule(s->spec.producers_schedule, s->spec.n_producers_schedule,
					  true, "producers_schedule", err, errlen);
	if (s->pschedule == NULL)
		return -1;
	pthread_mutex_init(&s->smu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->scond, &ca);
	pthread_condattr_destroy(&ca);
	int e = pthread_create(&s->sched_thread, NULL, schedule_main, s);
	if (e != 0) {
		snprintf(err, errlen, "producers_schedule: cannot start a thread: %s", strerror(e));
		return -1;
	}
	s->sched_running = true;
	return 0;
}

void demo_schedule_stop(demo_stage *s)
{
	if (s->sched_running) {
		pthread_mutex_lock(&s->smu);
		s->sched_stop = true;
		pthread_cond_broadcast(&s->scond);
		pthread_mutex_unlock(&s->smu);
		pthread_join(s->sched_thread, NULL);
		s->sched_running = false;
		pthread_mutex_destroy(&s->smu);
		pthread_cond_destroy(&s->scond);
	}
	blq_schedule_free(s->pschedule);
	s->pschedule = NULL;
}
