/*
 * A redrive: records of a key's dead store (or quarantine) moved back into
 * its dump at a given rate, on a thread of its own, so that the key's
 * restorer feeds them to the queue again. The work is the library's
 * blq_inspect_redrive (the one blq-dlq redrive uses): a dry run of the
 * delete first, append (durable), delete; a damaged quarantined file
 * salvaged whole and then deleted, so a second run delivers nothing
 * twice; from the dead store the restore count reset to 0 (or the
 * restorer would send the records straight back to it), the reason kept.
 * This file adds the thread, the restorer's kick after each batch, and
 * the progress the API reports.
 *
 * Two kinds: the records of a selection (moved in one batch: deleting
 * some records of a file moves the others' locations), or every record
 * of the area (batches scanned afresh, oldest first).
 *
 * Pacing is blq_inspect_redrive's (batches of a tenth of a second's
 * worth against a schedule from the start); a stop (demo_redrive_stop)
 * is seen within its 50 ms wait slices or after the batch under way.
 * Progress is read with demo_redrive_json from any thread.
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
 * and deleted from the source), "skipped" (selected and not moved: not
 * found, or left when it failed or was cancelled), "elapsed_s", "error".
 * Return: a new reference, or NULL.
 */
json_t *demo_redrive_json(demo_redrive *r);

/** demo_redrive_stop() - cancel it and join its thread; NULL is a no-op. */
void demo_redrive_stop(demo_redrive *r);

/** demo_redrive_free() - stop and free; NULL is a no-op. */
void demo_redrive_free(demo_redrive *r);

#endif
