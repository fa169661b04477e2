/*
 * A stage: one demo queue under its key, with everything the init body
 * asked for around it — producer threads that enqueue at producer_delay
 * pace, a worker that emulates work for worker_delay and fails at
 * fail_rate, a producers schedule, and optionally a dump (disk or Redis)
 * with its restorer feeding leaked items back.
 *
 * Lifecycle: demo_stage_start, then any number of the calls below from any
 * thread, then demo_stage_stop (once; demo_stage_force may escalate it
 * from another thread meanwhile), then demo_stage_free once no other call
 * runs. The registry (registry.h) enforces that order per key.
 */
#ifndef BLQ_DEMO_STAGE_H
#define BLQ_DEMO_STAGE_H

#include <stdbool.h>
#include <stddef.h>

#include <blq/blq.h>

#include "redrive.h"
#include "spec.h"

/* What every stage of the daemon shares. */
typedef struct demo_env {
	blq_prom *prom;            /* watches each queue's gauges */
	const char *dump_dir;      /* fs dumps: <dump_dir>/<key>.<time>--<n>.bin */
	const char *redis_host;    /* --redis, NULL when not given */
	int redis_port;
	blq_logger logger;         /* for queues, dumps and restorers */
} demo_env;

typedef struct demo_stage demo_stage;

/**
 * demo_stage_start() - build the queue (and dump, restorer, schedules)
 * from @spec and start producers_min producers.
 * @qw, @dw: the key's metrics writers (owned by the registry, reused when
 *   the key is started again).
 * Return: the stage, or NULL with a message in @err; *status receives the
 * HTTP status that fits (400 for a config the library refuses, 503 when the
 * Redis server does not answer, 500 for resources).
 */
demo_stage *demo_stage_start(const char *key, const demo_spec *spec, const demo_env *env,
			     const blq_metrics_writer *qw, const blq_dump_metrics *dw,
			     char *err, size_t errlen, int *status);

/**
 * demo_stage_producers_up() / _down() - start or stop @delta producers
 * (0 counts as 1, as in the original). All or nothing: refused with a
 * message when the result would leave [producers_min, producers_max].
 * Return: 0, or -1 with @err set.
 */
int demo_stage_producers_up(demo_stage *s, unsigned delta, char *err, size_t errlen);
int demo_stage_producers_down(demo_stage *s, unsigned delta, char *err, size_t errlen);

/** demo_stage_producers() - producers running now, and producers_max. */
void demo_stage_producers(demo_stage *s, unsigned *active, unsigned *max);

/**
 * demo_stage_status_json() - the original's status object: key, the
 * queue's status, producers_min/max/idle/active, plus the dump's and the
 * restorer's counters when present. Return: a malloc'd string, or NULL.
 */
char *demo_stage_status_json(demo_stage *s);

/**
 * demo_stage_stats_json() - the dashboard's numbers, flat and typed:
 * "instance" (differs for each start of a key, even across daemon
 * restarts), "t" (CLOCK_MONOTONIC seconds, to turn counters into rates), capacity, size,
 * rate, the factors and worker bounds in force, workers, producers, the
 * outcome counters, "qos" (null without QoS) and, when present, "dump" and
 * "restore". @stopping is reported as is.
 * Return: a malloc'd string, or NULL.
 */
char *demo_stage_stats_json(demo_stage *s, bool stopping);

/**
 * demo_stage_sample() - record the numbers the dashboard charts, as of
 * now, in the stage's history (history.h). Any thread; the registry's
 * sampler calls it once a period.
 */
void demo_stage_sample(demo_stage *s);

/**
 * demo_stage_history_json() - the dashboard's recent past: "key",
 * "instance" (as stats), "period_s", "capacity" (samples kept) and
 * "samples", oldest first, those numbered after @after (0: all the ring
 * holds). Each sample has its "seq" and the members of stats that the
 * dashboard charts, under the same names.
 * Return: a malloc'd string, or NULL.
 */
char *demo_stage_history_json(demo_stage *s, uint64_t after);

/**
 * demo_stage_stop() - stop the producers and the schedule, close the
 * restorer, close the queue (drain, or force: the rest goes to the DLQ),
 * close the dump (flush). Blocks until done.
 * @deadline_ns: 0, or a CLOCK_MONOTONIC time (demo_now_ns) at which the
 * queue's drain turns into a Hard close (blq_close_timeout with the time
 * left; already past: at once). It bounds the queue's close only: the
 * restorer's and the dump's closes keep their own close_timeout.
 * Return: true when the deadline forced the close (blq_close_timeout said
 * BLQ_ETIMEDOUT), false when it drained (or @force).
 */
bool demo_stage_stop(demo_stage *s, bool force, uint64_t deadline_ns);

/** demo_now_ns() - CLOCK_MONOTONIC in ns, the clock of stop deadlines. */
uint64_t demo_now_ns(void);

/** demo_stage_force() - turn a running demo_stage_stop into a force close. */
void demo_stage_force(demo_stage *s);

/**
 * demo_stage_final_json() - after demo_stage_stop: the exact accounting
 * ({"in":..,"processed":..,...,"balanced":true}).
 * @balanced: receives the "balanced" it reports (false when it fails).
 * Return: malloc'd, or NULL.
 */
char *demo_stage_final_json(demo_stage *s, bool *balanced);

/**
 * demo_stage_inspect_config() - where the stage's dump, quarantine and dead
 * store are, for blq_inspect_open; the strings point into @s (valid while
 * it is borrowed). Return: false when the stage has no dump.
 * @has_dead: receives whether it has a dead store (restore.max_restores).
 */
bool demo_stage_inspect_config(demo_stage *s, blq_inspect_config *c, bool *has_dead);

/**
 * demo_stage_redrive() - start a redrive (redrive.h) of the stage's DLQ,
 * kicking its restorer; @in is taken over (closed also on failure).
 * Return: 200, 409 (one runs already, or the stage is stopping) or the
 * redrive's own error status, with @err set.
 */
int demo_stage_redrive(demo_stage *s, blq_inspect *in, const demo_redrive_spec *sp, char *err,
		       size_t errlen);

/** demo_stage_purge_begin() - claims the dead store for a purge: false when
 * a redrive runs or another purge does (a redrive and a purge at once could
 * both take one record). demo_stage_purge_end() gives it back. */
bool demo_stage_purge_begin(demo_stage *s);
void demo_stage_purge_end(demo_stage *s);

/** demo_stage_redrive_json() - the running or last redrive's progress
 * (demo_redrive_json), or JSON null. Return: a new reference. */
json_t *demo_stage_redrive_json(demo_stage *s);

/** demo_stage_free() - free everything; after demo_stage_stop. */
void demo_stage_free(demo_stage *s);

#endif
