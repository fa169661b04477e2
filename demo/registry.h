/*
 * The daemon's stages by key, and the per-key metrics writers.
 *
 * Each key moves IDLE -> STARTING -> RUNNING -> STOPPING -> IDLE under
 * one mutex, so concurrent init and stop of one key are safe: a second
 * init while the key is anything but IDLE gets 406, a stop of a key being
 * stopped gets 409 (a force-stop escalates it instead). Handlers borrow a
 * stage with a reference; the stopper frees it only once every borrower
 * has given it back.
 *
 * Metrics writers are made once per key and reused when the key starts
 * again (Prometheus counters of a series stay monotonic). Keys ever seen
 * are bounded (DEMO_KEYS_MAX), live stages too (DEMO_STAGES_MAX).
 *
 * The registry's sampler thread records each live stage's history for
 * the dashboard (history.h), borrowing the stage like a handler.
 */
#ifndef BLQ_DEMO_REGISTRY_H
#define BLQ_DEMO_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "stage.h"

#define DEMO_KEYS_MAX 1024u
#define DEMO_STAGES_MAX 64u

typedef struct demo_registry demo_registry;

/** demo_registry_new() - an empty registry with its sampler running; @env
 * is borrowed. NULL when out of memory or threads. */
demo_registry *demo_registry_new(const demo_env *env);

/** demo_registry_free() - stop the sampler, free; after demo_registry_stop_all. */
void demo_registry_free(demo_registry *r);

/**
 * demo_registry_init() - start a stage under @key.
 * Return: the HTTP status: 200, 406 (the key exists, is starting or is
 * stopping), 503 (shutting down, or too many queues or keys), or the
 * stage's own error status; @err says why.
 */
int demo_registry_init(demo_registry *r, const char *key, const demo_spec *spec, char *err,
		       size_t errlen);

/**
 * demo_registry_get() - borrow the running (or stopping) stage of @key.
 * @stopping: set when the key is being stopped.
 * Return: the stage, or NULL (no such key). Give it back with
 * demo_registry_put.
 */
demo_stage *demo_registry_get(demo_registry *r, const char *key, bool *stopping);
void demo_registry_put(demo_registry *r, const char *key);

/**
 * demo_registry_stop() - stop the stage of @key (drain, or force) and
 * free it. Blocks until done.
 * @final: receives the stage's final accounting (malloc'd JSON) or NULL.
 * Return: 200, 404 (no such key), 409 (already stopping; with @force the
 * running stop was turned into a force close, and 200 is returned).
 */
int demo_registry_stop(demo_registry *r, const char *key, bool force, char **final, char *err,
		       size_t errlen);

/**
 * demo_registry_list_json() - the original's list: a JSON array of each
 * live stage's status. Return: malloc'd text, or NULL.
 */
char *demo_registry_list_json(demo_registry *r);

/**
 * demo_registry_render_producers() - append the queue_producers_active and
 * queue_producers_idle gauges of every live stage, in the Prometheus text
 * format, to @buf (grown with realloc). Return: 0 or -1 (ENOMEM).
 */
int demo_registry_render_producers(demo_registry *r, char **buf, size_t *len, size_t *cap);

/**
 * demo_registry_stop_all() - refuse new inits, then stop every stage
 * (gracefully, or all forced), one after another. Logs each stage's final
 * accounting. @deadline_ns: 0 (none), or a demo_now_ns() time at which
 * every drain still running turns into a Hard close (demo_stage_stop's
 * deadline: stages stopped after it are closed Hard at once); *@timed_out
 * receives the number of stages it forced.
 * Return: true when every stage's accounting balanced.
 */
bool demo_registry_stop_all(demo_registry *r, bool force, uint64_t deadline_ns,
			    unsigned *timed_out);

/** demo_registry_force_all() - escalate every stop in progress to force. */
void demo_registry_force_all(demo_registry *r);

#endif
