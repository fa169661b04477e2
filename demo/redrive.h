/*
 * A redrive: records of a key's dead store (or quarantine) moved back into
 * its dump at a given rate, on a thread of its own, so that the key's
 * restorer feeds them to the queue again. Built on blq/dlqinspect.h, per
 * batch: scan the source, append the batch to the dump (durable), kick
 * the restorer, delete the batch from the source. A crash between append
 * and delete duplicates a batch, never loses one. A redriven record starts
 * afresh (restore count 0, or the restorer would send it straight back to
 * the dead store); it keeps why it was dead-lettered.
 *
 * Two kinds: the records of a selection (collected when it starts, newest
 * first, so that deleting one never moves another's location within a
 * file), or every record the area held when it started (each batch scanned
 * afresh, oldest first).
 *
 * Pacing: after t seconds, rate * t records (plus one) are due; the thread
 * sleeps on a condition variable until the next one is, in batches of at
 * most a tenth of a second's worth, so it costs nothing between batches
 * and a stop (demo_redrive_stop) ends it at once. Progress is read with
 * demo_redrive_json from any thread.
 */
#ifndef BLQ_DEMO_REDRIVE_H
#define BLQ_DEMO_REDRIVE_H

#include <stdbool.h>
#include <stddef.h>

#include <blq/blq.h>
#include <jansson.h>

#define DEMO_REDRIVE_RATE_MAX 100000.0 /* records per second */
#define DEMO_REDRIVE_LOCS_MAX 1000u    /* records in one selection */

typedef struct demo_redrive demo_redrive;

/* What to redrive. */
typedef struct demo_redrive_spec {
	enum blq_inspect_area area; /* the source: BLQ_INSPECT_DEAD or _QUARANTINE */
	bool all;                   /* every record, or: */
	const char *const *locs;    /* these record locations (canonical, in area) */
	size_t nlocs;
	double rate;                /* records per second, (0, DEMO_REDRIVE_RATE_MAX] */
} demo_redrive_spec;

/**
 * demo_redrive_start() - count (or collect) the records and start the
 * thread.
 * @in: an inspector of the key's dump, taken over (closed by the redrive,
 *   also on failure).
 * @kick: the key's restorer, kicked after each batch; NULL: none.
 * Return: the redrive, or NULL with @err set and *status the HTTP status
 * (500 resources, 502 the dump cannot be read).
 */
demo_redrive *demo_redrive_start(blq_inspect *in, blq_restorer *kick,
				 const demo_redrive_spec *sp, char *err, size_t errlen,
				 int *status);

/** demo_redrive_running() - whether its thread still works. */
bool demo_redrive_running(demo_redrive *r);

/**
 * demo_redrive_json() - its progress: "state" (running, done, cancelled,
 * failed), "area", "all", "rate", "total", "moved" (appended to the dump
 * and deleted from the source), "skipped" (appended but not deleted: a
 * duplicate; or selected and not found), "elapsed_s", "error".
 * Return: a new reference, or NULL.
 */
json_t *demo_redrive_json(demo_redrive *r);

/** demo_redrive_stop() - cancel it and join its thread; NULL is a no-op. */
void demo_redrive_stop(demo_redrive *r);

/** demo_redrive_free() - stop and free; NULL is a no-op. */
void demo_redrive_free(demo_redrive *r);

#endif
