/* The inspector's parts, shared by inspect.c (the API, locations, filters)
 * and its two back ends, inspect_fs.c (directories) and inspect_redis.c
 * (streams). Not installed. */
#ifndef BLQ_DLQ_INSPECT_H
#define BLQ_DLQ_INSPECT_H

#include <limits.h>
#include <stdbool.h>

#include <blq/dlqinspect.h>

#include "dump_format.h"

enum blq__iarea_kind { BLQ__IAREA_NONE = 0, BLQ__IAREA_DIR, BLQ__IAREA_STREAM };

/* One area of the dump: a directory of files or a stream. */
typedef struct blq__iarea {
	enum blq_inspect_area area;
	enum blq__iarea_kind kind;
	char path[PATH_MAX]; /* DIR */
	char match[256];     /* DIR: the glob of its files */
	char key[300];       /* STREAM */
	bool grouped;        /* STREAM: read by the dump's consumer group */
} blq__iarea;

typedef struct blq__iredis blq__iredis;

struct blq_inspect {
	blq__iarea areas[3]; /* by enum blq_inspect_area */
	char mask[256];      /* file_mask for appends; "" the writer's default */
	bool mask_set;       /* given (blq_inspect_config.file_mask): never learned */
	char group[128];
	uint64_t version;   /* the dump's, when version_set (the caller knows it) */
	bool version_set;
	blq__iredis *redis; /* set when an area is a stream */
};

/* A scan's filter, paging and callback over what a back end hands out. */
typedef struct blq__iemit {
	const blq_inspect_filter *f;
	blq_inspect_record_fn fn;
	void *ctx;
	uint64_t passed; /* items that passed the filter */
	bool stop;
} blq__iemit;

/* Hands rec to the caller when it passes the filter; true when the scan
 * must stop (the callback or the limit says so). */
bool blq__iemit_one(blq__iemit *e, const blq_inspect_record *rec);

/* A delete in progress: its flags, the caller's callback and the totals. */
typedef struct blq__idel {
	unsigned flags;
	blq_inspect_deletion_fn fn;
	void *ctx;
	blq_inspect_delete_stats st;
} blq__idel;

/* Reports one action (and counts it: records for DELETED and REWRITTEN,
 * one file for DELETED of a file / REWRITTEN, one held or not found). */
void blq__idel_report(blq__idel *d, const char *loc, enum blq_inspect_action action,
		      bool file, uint64_t records, uint64_t kept, const char *consumer,
		      const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* The record's time: why.time_ns when set, else dflt. */
static inline uint64_t blq__itime(const blq_dlq_why *why, uint64_t dflt)
{
	return why->time_ns != 0 ? why->time_ns : dflt;
}

/* The batch's format for records with these whys: 2 when one says
 * something, else 1. */
unsigned blq__iformat_for(const blq_dlq_why *why, unsigned prev);

/* What an area says of the dump's version: its parts' headers (files) or
 * its newest entry's "v" (a stream). */
typedef struct blq__iversion {
	bool found;         /* some part or entry says a version */
	bool mixed;         /* two of them disagree (then v and other differ) */
	uint64_t v;         /* the newest one's */
	uint64_t other;     /* mixed: another one */
	char where[300];    /* the part (or key) v was read from */
} blq__iversion;

/* Writes items (b: count records of format) into the dump area as
 * version. */
int blq__iappend_buf(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		     uint64_t version, blq_error *err);

/* ---- directories (inspect_fs.c) ---- */

/* Refuses a path that is no dump directory (see blq_inspect_open). */
int blq__ifs_check(const blq__iarea *a, const char *field, blq_error *err);
int blq__ifs_list(blq_inspect *in, const blq__iarea *a, blq_inspect_part_fn fn, void *ctx,
		  bool *stop, blq_error *err);
/* file NULL: every file of the area. */
int blq__ifs_scan(blq_inspect *in, const blq__iarea *a, const char *file, bool reverse,
		  blq__iemit *e, blq_error *err);
/* version NULL: the file's own. */
int blq__ifs_salvage(blq_inspect *in, const blq__iarea *a, const char *file, const char *out_dir,
		     const char *mask, const uint64_t *version, uint64_t *written, blq_error *err);
/* Deletes the records locs[0..n) of file (n == 0: the whole file; file
 * NULL: every file of the area). */
int blq__ifs_delete(blq_inspect *in, const blq__iarea *a, const char *file,
		    const blq_inspect_loc *const *locs, size_t n, blq__idel *d, blq_error *err);
int blq__ifs_append(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		    uint64_t version, blq_error *err);
/* The names writes into the dump use (room 256): the given mask, else
 * the one the dump's own file names show (then the dead store's), else
 * the one made from the match. BLQ_EINVAL when the names disagree. */
int blq__ifs_mask(blq_inspect *in, char *mask, blq_error *err);
/* The version the area's files say (their headers). */
int blq__ifs_version(const blq__iarea *a, blq__iversion *out, blq_error *err);

/* ---- streams (inspect_redis.c, or inspect_redis_none.c) ---- */

int blq__ir_open(blq_inspect *in, const blq_inspect_config *cfg, blq_error *err);
void blq__ir_close(blq_inspect *in);
int blq__ir_list(blq_inspect *in, const blq__iarea *a, blq_inspect_part_fn fn, void *ctx,
		 bool *stop, blq_error *err);
int blq__ir_scan(blq_inspect *in, const blq__iarea *a, bool reverse, blq__iemit *e,
		 blq_error *err);
/* Deletes the entries locs[0..n) (n == 0: every entry of the area). */
int blq__ir_delete(blq_inspect *in, const blq__iarea *a, const blq_inspect_loc *const *locs,
		   size_t n, blq__idel *d, blq_error *err);
int blq__ir_append(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		   uint64_t version, blq_error *err);
/* The version the stream's newest entry says. */
int blq__ir_version(blq_inspect *in, const blq__iarea *a, blq__iversion *out, blq_error *err);

#endif
