/**
 * \file
 * dlqinspect: see and act on what was dumped (blq/dlqdump.h), on disk or
 * in Redis, beside a restorer that may be consuming the same dump. The
 * layer under a command-line tool and a dashboard.
 *
 * A dump (blq_inspect_open) has three areas: the dump itself (a directory
 * of dump files, or a Redis stream read through a consumer group), its
 * quarantine (the reader's quarantine directory, or the stream
 * `KEY:quarantine`) and, when configured, the restorer's dead store (a
 * directory or a stream). An area holds parts (a file; a stream is one
 * part), a part holds records. Each is named by a **location**, a string
 * that prints and parses back (blq_inspect_loc_parse):
 *
 * \verbatim
   dump | quarantine | dead          an area (every part in it)
   AREA/FILE                         a file of a directory area
   AREA/FILE#INDEX@OFFSET            record INDEX (0-based) of FILE, at byte OFFSET
   AREA:ID                           stream entry ID ("1700000000000-0")
   \endverbatim
 *
 * The offset in a file record's location guards it: an operation on it
 * checks that record INDEX still starts at OFFSET (a file rewritten by
 * blq_inspect_delete shifts its later records), and refuses a stale one.
 * In a damaged file, records after the damage have locations too: the
 * inspector, like the restorer's reader, skips a damaged span to the next
 * offset where a whole record parses with a valid checksum, and INDEX
 * counts the intact records in file order, so the same file gives the
 * same locations every time (and the restorer's checkpoint the same
 * indices).
 *
 * Reading (list, scan, verify, salvage) never claims, locks, moves, acks
 * or deletes anything, and never writes a restorer's checkpoint: it reads
 * files (and their checkpoints, to say which records are done) and runs
 * XRANGE, XPENDING, XINFO. A file renamed or removed by a restorer while
 * it is read is reported as gone, and the scan goes on.
 *
 * Thread-safety: a blq_inspect is used by one thread at a time (it owns a
 * Redis connection); open one per thread for more. Several inspectors and
 * restorers may work on one dump at once, in one process or several.
 */
#ifndef BLQ_DLQINSPECT_H
#define BLQ_DLQINSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/dlqdump.h>
#include <blq/enqueuer.h>
#include <blq/error.h>
#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Room for a location string with its NUL: more than any this library
 * prints. */
#define BLQ_INSPECT_LOC_MAX 384

/** The areas of a dump. */
enum blq_inspect_area {
	BLQ_INSPECT_DUMP = 0,       /**< "dump": what a restorer restores */
	BLQ_INSPECT_QUARANTINE = 1, /**< "quarantine": damaged files or entries set aside */
	BLQ_INSPECT_DEAD = 2,       /**< "dead": the restorer's dead store */
};

/** A location, parsed (blq_inspect_loc_parse) or to print
 * (blq_inspect_loc_format). */
typedef struct blq_inspect_loc {
	enum blq_inspect_area area; /**< the area */
	/** A file's name in the area's directory; "" for a whole area or a
	 * stream entry. */
	char file[256];
	/** A stream entry's id; "" otherwise. */
	char id[48];
	/** true: a file record, at index and offset. */
	bool record;
	uint64_t index;  /**< the record's index in its file (record) */
	uint64_t offset; /**< the byte offset of its header in the file (record) */
} blq_inspect_loc;

/**
 * Parse a location string (syntax: the \\file block above).
 * \param s the string; NUL-terminated.
 * \param[out] out the location.
 * \param[out] err optional; on failure the code and a message quoting
 *        \p s and saying what is wrong.
 * \retval 0 parsed.
 * \retval BLQ_EINVAL \p s or \p out NULL, an unknown area, an empty or
 *         over-long name or id, a file name with '/' or one that is . or ..
 * \threadsafety Any thread.
 */
BLQ_API int blq_inspect_loc_parse(const char *s, blq_inspect_loc *out, blq_error *err);

/**
 * Print a location.
 * \param l the location.
 * \param[out] out receives the string, NUL-terminated.
 * \param cap bytes at \p out (BLQ_INSPECT_LOC_MAX is always enough).
 * \return its length, or BLQ_EINVAL when \p l or \p out is NULL or it
 *         does not fit (\p out then holds "").
 * \threadsafety Any thread.
 */
BLQ_API int blq_inspect_loc_format(const blq_inspect_loc *l, char *out, size_t cap);

/**
 * The name of an area, as locations spell it.
 * \param a the area.
 * \return a static string: "dump", "quarantine", "dead"; "?" for other
 *         values.
 * \threadsafety Any thread.
 */
BLQ_API const char *blq_inspect_area_name(enum blq_inspect_area a);

/** An inspector of one dump. Opaque: made by blq_inspect_open, freed with
 * blq_inspect_close. */
typedef struct blq_inspect blq_inspect;

/** Where the dump is: either `directory` or `key`, as its writer and
 * reader are configured (blq_dump_fs_config, blq_dump_redis_config).
 * Zero is the default everywhere; only read by blq_inspect_open. */
typedef struct blq_inspect_config {
	/** A directory dump: the directory. */
	const char *directory;
	/** Its files: glob, as the reader's match. Default "*.bin". */
	const char *match;
	/** Its quarantine. Default `DIRECTORY/quarantine`; may be missing. */
	const char *quarantine;
	/** Names of files blq_inspect_append, salvage and redrive write, as
	 * the writer's file_mask (must match `match`). Default: made from
	 * `match` when it has one '*' and no other wildcard (the writer's
	 * default stem "%Y-%m-%d--%H-%M-%S--%i" in place of the '*', so
	 * "orders.*.bin" gives the names blq-demo writes for key orders,
	 * and "*.bin" the writer's default), else the writer's default. */
	const char *file_mask;
	/** A stream dump: the stream's key (1..200 bytes). */
	const char *key;
	/** Its consumer group, as the restorer's reader has it. Default
	 * "blq". Only read: the inspector never creates it nor joins it. */
	const char *group;
	/** Redis server of the stream dump or dead store. Default
	 * "127.0.0.1". */
	const char *host;
	int port;                    /**< default (0) 6379 */
	uint64_t connect_timeout_ns; /**< default 1 s */
	uint64_t command_timeout_ns; /**< default 5 s */
	/** The dead store, if the restorer has one (blq_restorer_config.dead):
	 * a directory of dump files ... */
	const char *dead_directory;
	/** ... whose files match this. Default "*.bin". */
	const char *dead_match;
	/** ... or a stream on `host`:`port`. At most one of the two. */
	const char *dead_key;
	/** The dump's version (blq_dump_config.version), when the caller
	 * knows it: read only when version_set. Records are read whatever
	 * their version (each record says its own); a part of another
	 * version is noted (blq_inspect_part.other_version), never damage.
	 * Writes (blq_inspect_append, salvage, redrive) use it, and are
	 * refused when the dump's own files or entries say another. */
	uint64_t version;
	/** version is given. false (the default): what the dump says is used
	 * (blq_inspect_version), and version only when nothing says. */
	bool version_set;
} blq_inspect_config;

/**
 * Check the config and open the dump (connecting to Redis when a stream is
 * configured). Nothing is created or modified.
 * \param cfg the configuration; only read during the call.
 * \param[out] err optional; on failure the code and a message naming what
 *        is wrong.
 * \return the inspector, or NULL with in \p err: BLQ_EINVAL (\p cfg NULL;
 *         neither or both of directory and key; both dead stores; a
 *         missing path, a path that is not a directory; "not a dump
 *         directory": files match `match` but none starts with the dump
 *         magic (a file removed while it is looked at, as a restorer
 *         consumes it, does not count against the directory); a key of
 *         another type than a stream; Redis unreachable, the message
 *         naming host:port), BLQ_ENOTSUP (a stream without
 *         BLQ_WITH_REDIS) or BLQ_ENOMEM. The caller owns it: close it with
 *         blq_inspect_close.
 * \threadsafety Any thread.
 */
BLQ_API blq_inspect *blq_inspect_open(const blq_inspect_config *cfg, blq_error *err);

/**
 * Close the inspector and free it.
 * \param in the inspector; NULL is a no-op.
 */
BLQ_API void blq_inspect_close(blq_inspect *in);

/**
 * The version writes into this dump use: the config's when set
 * (blq_inspect_config.version_set, blq_inspect_set_version), else the one
 * the dump's newest file header or stream entry says, else the dead
 * store's (the restorer writes each dead record with the version it read
 * it with, which is the dump's). The quarantine is never asked: a file
 * may be there for its version.
 * \param in the inspector.
 * \param[out] version the version.
 * \param[out] err optional.
 * \retval 0 \p version set.
 * \retval 1 nothing says it (the dump and its dead store hold no record,
 *         and none was given): \p version is the config's version, 0 by
 *         default as blq_dump_config's, and writes use it.
 * \retval BLQ_EINVAL a NULL argument; the given version differs from the
 *         dump's files or entries; the dump's files disagree (the
 *         message names a file of each version).
 * \retval BLQ_EIO a directory that cannot be listed, a Redis error.
 * \threadsafety As the inspector.
 */
BLQ_API int blq_inspect_version(blq_inspect *in, uint64_t *version, blq_error *err);

/**
 * Give the dump's version after blq_inspect_open, as
 * blq_inspect_config.version with version_set (a tool that learns it
 * from what it imports).
 * \param in the inspector.
 * \param version the version.
 * \retval 0 set.
 * \retval BLQ_EINVAL \p in NULL.
 * \threadsafety As the inspector.
 */
BLQ_API int blq_inspect_set_version(blq_inspect *in, uint64_t version);

/* ---- list --------------------------------------------------------- */

/** A consumer of the dump's group with entries pending (XPENDING). */
typedef struct blq_inspect_consumer {
	const char *name; /**< its name */
	uint64_t pending; /**< entries it holds, not acked */
} blq_inspect_consumer;

/** A part as blq_inspect_list hands it out. Every pointer in it is valid
 * during the callback only. */
typedef struct blq_inspect_part {
	const char *loc;            /**< its location ("dump/NAME", "quarantine") */
	enum blq_inspect_area area; /**< its area */
	bool stream;                /**< a stream (else a file) */
	const char *name;           /**< the file's name, or the stream's key */
	uint64_t records;           /**< good records (entries that parse) */
	uint64_t bytes;             /**< file: its size; stream: the records' bytes */
	/** Files: records a restorer marked done in the file's checkpoint
	 * (restored; the file goes once all are). */
	uint64_t done;
	/** File: 1 when damaged (blq_inspect_scan says where); stream:
	 * entries that do not parse or have another version. */
	uint64_t damaged;
	/** Oldest and newest record time, ns since the epoch: each record's
	 * why.time_ns when set, else the file's mtime or the entry id's
	 * time. 0 when the part has no records. */
	uint64_t oldest_ns;
	uint64_t newest_ns; /**< see oldest_ns */
	/** File: a restorer holds it now (its lock is taken). */
	bool held;
	/** File: its header's format (1 or 2) and version; 0 when damaged. */
	unsigned format;
	uint64_t version; /**< see format */
	/** File: a version other than the one given
	 * (blq_inspect_config.version_set): a reader of that version
	 * quarantines it. Never damage: its records read as any. */
	bool other_version;
	/** File: why it cannot be read at all ("not a regular file (a
	 * directory)", "a symbolic link ...", "cannot open: ..."), else
	 * NULL. A restorer never reads it either; it has no records. */
	const char *unreadable;
	/** Stream dump: the group exists. */
	bool group_exists;
	/** Stream dump: entries delivered to a consumer and not acked. */
	uint64_t pending;
	size_t nconsumers; /**< consumers holding pending entries */
	const blq_inspect_consumer *consumers; /**< nconsumers of them */
} blq_inspect_part;

/** Receives a part; return 0 to go on, anything else to stop. */
typedef int (*blq_inspect_part_fn)(void *ctx, const blq_inspect_part *part);

/**
 * Hand out each part of the dump: the dump's files (sorted by name: with
 * the default mask, oldest first) or its stream, then the quarantine's,
 * then the dead store's. Read-only.
 * \param in the inspector.
 * \param fn receives each part.
 * \param ctx passed to \p fn.
 * \param[out] err optional; the error's code and message.
 * \retval 0 every part handed out, or \p fn stopped.
 * \retval BLQ_EINVAL \p in or \p fn NULL.
 * \retval BLQ_EIO a directory that cannot be listed, a Redis error (the
 *         message names the server and the key).
 * \retval BLQ_ENOMEM out of memory.
 */
BLQ_API int blq_inspect_list(blq_inspect *in, blq_inspect_part_fn fn, void *ctx, blq_error *err);

/* ---- scan and verify ---------------------------------------------- */

/** What a scanned item is. */
enum blq_inspect_state {
	BLQ_INSPECT_OK = 0,      /**< a good record */
	BLQ_INSPECT_DAMAGED = 1, /**< damage: a file's (its first damage at offset;
				  * one report per file, after its intact
				  * records, skipped and spans say how much was
				  * skipped), or a bad entry */
	BLQ_INSPECT_GONE = 2,    /**< the file went (a restorer removed or moved it)
				  * before it could be read */
	BLQ_INSPECT_UNREADABLE = 3, /**< the name matches but cannot be read as a
				     * dump file (damage says why: a directory, a
				     * symbolic link, no permission) */
};

/** A record (or a damage or gone report) as blq_inspect_scan hands it
 * out. Every pointer in it is valid during the callback only. */
typedef struct blq_inspect_record {
	const char *loc;  /**< its location: a file record or a stream entry;
			   * for a damage or gone report on a file, the file */
	const char *part; /**< its part's location */
	enum blq_inspect_state state; /**< a record, damage, or gone */
	/** DAMAGED: what ("bad checksum", "truncated record", "version 3,
	 * this dump is 1", ...); "" otherwise. For a stream's quarantine,
	 * the reason stored with the entry (the record may still be good). */
	const char *damage;
	uint64_t index;  /**< file: the record's index; entry: its position in the scan */
	/** File: the record's offset, or the damage's. Stream: 0. */
	uint64_t offset;
	const void *data; /**< the encoded item (the payload bytes) */
	size_t len;       /**< bytes at data */
	size_t size;      /**< bytes the record takes (header, metadata, data) */
	uint32_t restores; /**< as stored: times restored before */
	/** File: earlier claims of the file by restorers (its checkpoint);
	 * entry: XPENDING's delivery count when pending, else 0. */
	uint32_t deliveries;
	uint64_t version; /**< the version it was written with */
	/** why.time_ns when set, else the file's mtime or the entry id's
	 * time (ns since the epoch). */
	uint64_t time_ns;
	/** File: marked done in its checkpoint (restored, not yet removed). */
	bool done;
	/** Entry: delivered to a consumer, not acked; consumer names it. */
	bool pending;
	const char *consumer; /**< the pending entry's consumer; "" otherwise */
	blq_dlq_why why; /**< why it was dead-lettered (format 2), else zero */
	/** DAMAGED file: the bytes no intact record covers (every damaged
	 * span, each from its damage to the next intact record or the end;
	 * the whole file when its header or version is wrong). 0 otherwise. */
	uint64_t skipped;
	/** DAMAGED file: the damaged spans skipped (0 when its header or
	 * version is wrong: no record was read). 0 otherwise. */
	uint64_t spans;
} blq_inspect_record;

/** Receives a record; return 0 to go on, anything else to stop. */
typedef int (*blq_inspect_record_fn)(void *ctx, const blq_inspect_record *rec);

/** What to scan. All zero: every record of every part, oldest first. */
typedef struct blq_inspect_filter {
	/** An area or part location ("dump", "dead/NAME"); NULL: all. */
	const char *part;
	/** Parts and records in reverse (newest first). */
	bool newest_first;
	/** Damage and gone reports are left out. */
	bool records_only;
	/** Bit (1u << reason) for each blq_dlq_reason wanted; 0: any.
	 * Damage reports pass this filter and the time filter. */
	unsigned reasons;
	uint64_t since_ns; /**< records with time_ns >= this; 0: no bound */
	uint64_t until_ns; /**< records with time_ns < this; 0: no bound */
	uint64_t skip;     /**< items passing the filters to skip first (paging) */
	uint64_t limit;    /**< items to hand out at most; 0: no limit */
} blq_inspect_filter;

/**
 * Hand out, in order, every record of the selected parts that passes the
 * filter, with its location and state. A damaged file gives all its
 * intact records, those after a damaged span too (newest first: the
 * report comes first), then one damage report (the first damage's
 * offset and kind, the bytes skipped and the spans), and the scan goes
 * on with the next file. Read-only, safe beside a running restorer.
 * \param in the inspector.
 * \param f the filter; NULL: everything.
 * \param fn receives each item.
 * \param ctx passed to \p fn.
 * \param[out] err optional; the error's code and message.
 * \retval 0 done, or \p fn or the limit stopped it.
 * \retval BLQ_EINVAL \p in or \p fn NULL, a bad f->part (the message says
 *         why; a file part that does not exist is not an error: it is
 *         reported as gone).
 * \retval BLQ_EIO a directory that cannot be listed, a Redis error.
 * \retval BLQ_ENOMEM out of memory.
 */
BLQ_API int blq_inspect_scan(blq_inspect *in, const blq_inspect_filter *f,
			     blq_inspect_record_fn fn, void *ctx, blq_error *err);

/** What blq_inspect_verify found. */
typedef struct blq_inspect_summary {
	uint64_t records; /**< good records */
	uint64_t bytes;   /**< their bytes (blq_inspect_record.size) */
	uint64_t damaged; /**< damage reports (files and entries) */
	uint64_t gone;    /**< files gone while read */
	uint64_t unreadable; /**< names that match but cannot be read (BLQ_INSPECT_UNREADABLE) */
	/** Bytes of damaged files that no intact record covers (the sum of
	 * their reports' skipped). */
	uint64_t skipped;
} blq_inspect_summary;

/**
 * Scan and count. Damage reports go to \p fn (optional) as they come.
 * \param in the inspector.
 * \param f the filter (as blq_inspect_scan); NULL: everything.
 * \param[out] out the counts.
 * \param fn optional: receives each damage report.
 * \param ctx passed to \p fn.
 * \param[out] err optional.
 * \retval 0 no damage.
 * \retval 1 damage found (out->damaged or out->unreadable > 0): an exit
 *         code for a tool.
 * \retval others as blq_inspect_scan.
 */
BLQ_API int blq_inspect_verify(blq_inspect *in, const blq_inspect_filter *f,
			       blq_inspect_summary *out, blq_inspect_record_fn fn, void *ctx,
			       blq_error *err);

/* ---- salvage, delete, append -------------------------------------- */

/**
 * Copy the intact records of a file (of any area: a quarantined file
 * usually), before and after its damaged spans, into a new dump file in
 * \p out_dir (made when missing, durably: each directory made is
 * fsync'd in its parent), through the fs writer (temporary name,
 * fsync, rename, directory fsync): as the dump's version when anything
 * says it (blq_inspect_version returns 0), else as the file's own (so a
 * file quarantined for its version comes back as one its reader takes);
 * format 2 when a record says why it was dead-lettered, else 1. Records
 * a restorer marked done are left out: they were restored (a restorer
 * quarantines a damaged file after restoring its intact records, and its
 * done marks go with it). The source is left in place. A file with no
 * record left to copy writes nothing.
 * \param in the inspector.
 * \param part the file's location ("quarantine/NAME").
 * \param out_dir the directory to write into (the dump's own directory
 *        to restore them); made when missing, with its missing parents
 *        (as mkdir -p, mode 0700), when there is something to write.
 * \param file_mask the new file's name mask (blq_dump_fs_config); NULL:
 *        the names blq_inspect_append would use (see
 *        blq_inspect_config.file_mask).
 * \param[out] written optional; the records written.
 * \param[out] err optional.
 * \retval 0 written (or nothing to write).
 * \retval BLQ_EINVAL a NULL argument, \p part not a file location, the
 *         file missing or not a regular file, "not a dump file" (bad
 *         magic, truncated header, unknown format), a bad \p out_dir (not
 *         a directory, or one that cannot be made) or mask, a version
 *         given that the dump contradicts, names of two kinds in the dump
 *         (no mask to learn).
 * \retval BLQ_EIO the write failed (nothing was published).
 * \retval BLQ_ENOMEM out of memory.
 */
BLQ_API int blq_inspect_salvage(blq_inspect *in, const char *part, const char *out_dir,
				const char *file_mask, uint64_t *written, blq_error *err);

/** blq_inspect_delete: report what would be done, change nothing. */
#define BLQ_INSPECT_DRY_RUN 1u
/** blq_inspect_delete: leave stream entries pending with a consumer
 * (reported as held) instead of acking and deleting them. */
#define BLQ_INSPECT_KEEP_PENDING 2u

/** What blq_inspect_delete did (or, dry, would do) to one part or entry. */
enum blq_inspect_action {
	BLQ_INSPECT_DELETED = 0,   /**< the file removed / the entry deleted */
	BLQ_INSPECT_REWRITTEN = 1, /**< the file rewritten without the records */
	BLQ_INSPECT_HELD = 2,      /**< skipped: a restorer holds it (file locked;
				    * entry pending, with KEEP_PENDING) */
	BLQ_INSPECT_NOT_FOUND = 3, /**< skipped: no such file, entry or record, or a
				    * stale location (the record moved) */
	BLQ_INSPECT_REFUSED = 4,   /**< skipped: some records of a damaged file,
				    * before or after its damage (delete it
				    * whole, or salvage it first) */
};

/** One action of blq_inspect_delete; pointers valid during the callback. */
typedef struct blq_inspect_deletion {
	const char *loc;             /**< the file, or the entry */
	enum blq_inspect_action action; /**< what */
	uint64_t records;            /**< records removed by it */
	uint64_t kept;               /**< REWRITTEN: records left in the file */
	/** Entry: it was pending with consumer (acked, then deleted). */
	bool pending;
	const char *consumer; /**< see pending; "" otherwise */
	const char *message;  /**< a sentence for the operator */
} blq_inspect_deletion;

/** Receives each action of blq_inspect_delete, as it happens (dry run:
 * as it would happen). */
typedef void (*blq_inspect_deletion_fn)(void *ctx, const blq_inspect_deletion *d);

/** Totals of blq_inspect_delete. */
typedef struct blq_inspect_delete_stats {
	uint64_t records;   /**< records (entries) removed */
	uint64_t files;     /**< files removed whole */
	uint64_t rewritten; /**< files rewritten */
	uint64_t held;      /**< files or entries skipped: held */
	uint64_t not_found; /**< locations skipped: not found or stale */
	uint64_t refused;   /**< files skipped: damaged, records selected */
} blq_inspect_delete_stats;

/**
 * Delete records: each location names a record, a file, a stream entry
 * or a whole area. A file loses the records selected: it is removed (and
 * its checkpoint) when none is left, else rewritten without them
 * (written to a temporary name, fsync'd, renamed over it, directory
 * fsync'd; records its checkpoint marks done are left out too, and the
 * checkpoint is carried over, so a restorer resumes it). A file is only
 * touched under its lock, taken without waiting: one a restorer holds is
 * skipped (HELD) and reported, never changed under it. A stream entry is
 * deleted (XDEL); a pending one is acked first (XACK): a restorer that
 * holds it may still restore the copy it read (at-least-once, as for any
 * entry it took), and its later ack, delete or claim of it does nothing.
 * \param in the inspector.
 * \param locs the locations.
 * \param n their number.
 * \param flags BLQ_INSPECT_DRY_RUN, BLQ_INSPECT_KEEP_PENDING.
 * \param fn optional: receives each action.
 * \param ctx passed to \p fn.
 * \param[out] out optional; the totals.
 * \param[out] err optional.
 * \retval 0 done (skipped locations are reported, not errors).
 * \retval BLQ_EINVAL a NULL argument, a location that does not parse or
 *         names an area this dump has not (nothing was changed).
 * \retval BLQ_EIO a file could not be removed or rewritten, a Redis
 *         error: what was done before it is reported and stays done.
 * \retval BLQ_ENOMEM out of memory.
 */
BLQ_API int blq_inspect_delete(blq_inspect *in, const char *const *locs, size_t n,
			       unsigned flags, blq_inspect_deletion_fn fn, void *ctx,
			       blq_inspect_delete_stats *out, blq_error *err);

/** An item for blq_inspect_append. */
typedef struct blq_inspect_item {
	const void *data;       /**< the encoded item */
	size_t len;             /**< its bytes, at most BLQ_DUMP_RECORD_MAX */
	uint32_t restores;      /**< its restore count */
	const blq_dlq_why *why; /**< why it was dead-lettered; NULL: unknown */
} blq_inspect_item;

/**
 * Write items into the dump (area "dump") through its writer, so that a
 * restorer consuming it picks them up: one new file (format 2 when an
 * item has a why), or one stream entry each. Durable when it returns.
 * Written as the dump's version (blq_inspect_version: given, else what
 * the dump or its dead store says, else the config's, 0 by default) and,
 * for files, named as the dump's files are (blq_inspect_config.file_mask).
 * \param in the inspector.
 * \param items the items; only read during the call.
 * \param n their number (0: nothing to do).
 * \param[out] err optional.
 * \retval 0 all written.
 * \retval BLQ_EINVAL a NULL argument, an item longer than
 *         BLQ_DUMP_RECORD_MAX, a why with a bad reason, a directory
 *         dump whose file_mask makes names its match does not take (the
 *         fs writer's message), a version given that the dump's files
 *         or entries contradict, files named two ways (give a match or
 *         a mask).
 * \retval BLQ_EIO the write failed (files: nothing published; stream:
 *         the entries before the failure are written).
 * \retval BLQ_ENOMEM out of memory.
 */
BLQ_API int blq_inspect_append(blq_inspect *in, const blq_inspect_item *items, size_t n,
			       blq_error *err);

/* ---- redrive ------------------------------------------------------ */

/** What blq_inspect_redrive did (so far, when handed to its progress
 * callback). */
typedef struct blq_inspect_redrive_stats {
	uint64_t moved;    /**< records written to the target, then deleted from the source */
	uint64_t salvaged; /**< of moved: intact records of damaged files */
	uint64_t files_salvaged; /**< damaged files salvaged whole, then deleted */
	uint64_t batches;  /**< batches written */
	uint64_t version;  /**< the version the records were written with */
	bool reset_restores; /**< restore counts were written as 0 */
	double elapsed_s;  /**< since the start */
} blq_inspect_redrive_stats;

/** Receives the progress; return 0 to go on, anything else to stop the
 * redrive (between batches: none is left half done). */
typedef int (*blq_inspect_redrive_fn)(void *ctx, const blq_inspect_redrive_stats *st);

/** What blq_inspect_redrive moves, where, how fast. Zero is the default
 * everywhere; only read during the call. */
typedef struct blq_inspect_redrive_config {
	/** The target: another inspector's dump area; NULL: the source's
	 * own dump area. */
	blq_inspect *to;
	/** The source: an area or a file ("dead", "quarantine/F"); NULL:
	 * "dead". The dump area (or a file of it) needs another target. */
	const char *from;
	/** Records to move (file records "AREA/F#I@OFF", stream entries
	 * "AREA:ID"), all in one batch (deleting some records of a file
	 * moves the others); NULL: every record of `from` the filter
	 * passes. */
	const char *const *locs;
	size_t nlocs; /**< their number */
	/** reasons, since_ns, until_ns, newest_first and limit (records in
	 * all) select; part, skip and records_only are not read. NULL: all. */
	const blq_inspect_filter *filter;
	/** Records per second, paced against a schedule started with the
	 * first batch (batch k no earlier than start + k * batch / rate);
	 * 0: as fast as it goes. At most 1e6. */
	double rate;
	/** Records per batch. 0: rate / 10 (at least 1) with a rate, else
	 * 500. At most 10000. */
	size_t batch;
	/** From the dead store, records are written with restore count 0 so
	 * that the target's restorer does not send them straight back to
	 * the dead store (max_restores); true keeps each count. From any
	 * other area counts are always kept. */
	bool keep_restores;
	/** Optional: after each batch and every 50 ms while waiting for the
	 * rate; its non-zero return stops the redrive. */
	blq_inspect_redrive_fn progress;
	void *ctx; /**< passed to progress */
} blq_inspect_redrive_config;

/**
 * Move records back into a dump that a restorer consumes (from its dead
 * store or quarantine, or from another dump), at a rate. The one redrive
 * of blq-dlq and blq-demo.
 *
 * Each batch is checked by a dry run of its delete first: a batch whose
 * records could not all be deleted from the source (a file a restorer
 * holds, a stale location, records selected out of a damaged file) is
 * not written at all and the redrive stops (BLQ_EREFUSED), so no run
 * leaves another copy of them. Then the batch is appended to the target
 * (durable when it returns) and deleted from the source: a crash between
 * the two leaves a duplicate, never a loss (at-least-once). Records a
 * restorer marked done are left out (they were restored).
 *
 * A damaged file of the source is salvaged whole when the selection has
 * no filter and no locations: its intact records are appended as one
 * batch, then the file is deleted, so a second run finds nothing of it
 * and delivers nothing twice. With a filter or locations it is refused
 * (BLQ_EREFUSED, before anything is moved): salvage it first.
 *
 * The target's version is blq_inspect_version's of the target, else of
 * the source (a dead store's records have the dump's version); when
 * neither says it nor was one given (version_set), nothing is written
 * (BLQ_EINVAL: a quarantine's records may be there for their version).
 * out->version says which was used.
 *
 * \param from the source's inspector.
 * \param cfg what to move; NULL: every record of the dead store, into the
 *        source's own dump, as fast as it goes.
 * \param[out] out optional; what was done (also when it fails: what was
 *        moved before the failure stays moved).
 * \param[out] err optional; the message says what was moved and what was
 *        not.
 * \retval 0 done (out->moved 0: nothing matched).
 * \retval 1 the progress callback stopped it.
 * \retval BLQ_EINVAL a NULL inspector, a bad from or location, a rate
 *         out of range, the dump area into itself, a version given that
 *         the dump's files contradict, no version known, or files named
 *         two ways.
 * \retval BLQ_EREFUSED records that cannot be deleted from the source,
 *         a damaged file under a filter: nothing of that batch written.
 * \retval BLQ_EIO a write or a delete failed (the message says whether
 *         the batch was written: duplicates, never a loss).
 * \retval BLQ_ENOMEM out of memory.
 * \threadsafety Uses both inspectors; one thread at a time for each.
 */
BLQ_API int blq_inspect_redrive(blq_inspect *from, const blq_inspect_redrive_config *cfg,
				blq_inspect_redrive_stats *out, blq_error *err);

/* ---- JSON lines --------------------------------------------------- */

/**
 * Print a scanned record as one line of JSON (the format blq-dlq export
 * and import and the dashboard's download share; docs/operating-a-dlq.md,
 * "JSON lines"): one object, fields in this order, no spaces, ending in
 * '\n':
 *
 * \verbatim
   {"v":1,"loc":"dead/F#3@118","version":0,"restores":1,"deliveries":0,
    "time_ns":1764000000000000000,"why":{"reason":"failed","attempts":3,
    "rc":-42,"queue":"orders","time_ns":1764000000000000000},
    "payload":"<base64, RFC 4648, padded>"}
   \endverbatim
 *
 * (on one line). "why" is null when the record's why is all zero; a
 * reason is spelled as blq_dlq_reason_name gives it. Strings are escaped
 * as JSON wants (quotes, backslashes, control bytes), well-formed UTF-8
 * passes through, and each byte that is not part of it becomes '?', so
 * the line is UTF-8 whatever the queue name (read back, such a name has
 * '?' in those places).
 * \param rec the record (a damage or gone report prints as a record with
 *        its data, usually none).
 * \param[out] buf receives the line, NUL-terminated, cut to fit; may be
 *        NULL when \p cap is 0.
 * \param cap bytes at \p buf.
 * \return the length of the whole line without the NUL, as snprintf: a
 *         result >= \p cap means it was cut (call again with a buffer of
 *         the result + 1); 0 when \p rec is NULL.
 * \threadsafety Any thread.
 */
BLQ_API size_t blq_inspect_jsonl_put(const blq_inspect_record *rec, char *buf, size_t cap);

/** A line of JSON read back (blq_inspect_jsonl_get). Free with
 * blq_inspect_jsonl_free; a plain copy of it shares its buffers. */
typedef struct blq_inspect_jsonl {
	/** The item, ready for blq_inspect_append: data (malloc'd; an empty
	 * payload gives a 1-byte buffer and len 0), len, restores, and why
	 * (malloc'd, or NULL for "why":null or no "why"). */
	blq_inspect_item item;
	/** "loc" as it was (where the record was read): information only;
	 * "" when absent. */
	char loc[BLQ_INSPECT_LOC_MAX];
	uint64_t version;    /**< "version"; 0 when absent */
	uint32_t deliveries; /**< "deliveries"; 0 when absent */
	uint64_t time_ns;    /**< "time_ns"; 0 when absent */
} blq_inspect_jsonl;

/**
 * Read one line of JSON lines (blq_inspect_jsonl_put's format). "v" (1)
 * and "payload" are required, the other fields optional; fields may come
 * in any order, with JSON whitespace; an unknown or repeated field, a
 * value of the wrong type or range, bad base64 (RFC 4648, padded; a '/'
 * may be escaped as "\/", as some JSON encoders write it, and no other
 * escape may appear in it) or anything after the object but whitespace is
 * an error.
 * \param line the line; a trailing "\n" (or "\r\n") is allowed.
 * \param len its bytes.
 * \param[out] out the record; on error it holds nothing to free.
 * \param[out] err optional; on error the field and the column (1-based
 *        byte) where the line went wrong: `column 42: "why.rc": expected
 *        an integer`.
 * \retval 0 read; the caller owns out's buffers.
 * \retval BLQ_EINVAL a NULL argument, a bad line.
 * \retval BLQ_ENOMEM out of memory.
 * \threadsafety Any thread.
 */
BLQ_API int blq_inspect_jsonl_get(const char *line, size_t len, blq_inspect_jsonl *out,
				  blq_error *err);

/**
 * Free what blq_inspect_jsonl_get allocated, and zero \p j.
 * \param j the record; NULL is a no-op.
 */
BLQ_API void blq_inspect_jsonl_free(blq_inspect_jsonl *j);

#ifdef __cplusplus
}
#endif

#endif
