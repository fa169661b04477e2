/**
 * \file
 * dlqdump: persist leaked items to disk or Redis, and restore them later.
 *
 * \verbatim
   source queue --leak--> blq_dump --batch--> writer (fs files | Redis stream)
                                                 |
   target queue <--blq_try_enqueue_job-- blq_restorer <-- reader
   (or any blq_enqueuer: sink)
   \endverbatim
 *
 * - A dump (blq_dump) is a blq_enqueuer, so it can be any queue's DLQ. It
 *   encodes each payload (blq_dump_encoder) into an in-memory batch, frees
 *   the payload, and hands the batch to its writer when the batch reaches
 *   `capacity` bytes, when `flush_interval_ns` has passed since the batch's
 *   first item, on blq_dump_flush and on close.
 * - A writer persists a batch (blq_dump_fs_writer_new: one file per batch,
 *   written to a temporary name, fsync'd, renamed; blq_dump_redis_writer_new:
 *   one stream entry per item, pipelined). A failed batch is retried with
 *   backoff and offered to the fallback writer; items are lost only when
 *   neither takes them and the memory bound is reached, and then they are
 *   counted (stats, dlqdump_lost_total) and logged.
 * - A restorer (blq_restorer) polls a reader, decodes each record
 *   (blq_dump_decoder) and enqueues it into the target queue while the
 *   target's fill rate allows, with a completion hook (blq_done). A record
 *   is committed (marked done in the file's checkpoint, or acked and
 *   deleted from the stream) only once its item reached an outcome in the
 *   target; an item that leaked into a dump counts once that dump made it
 *   durable. A restorer may feed any blq_enqueuer instead (a sink: another
 *   dump, say), which only accepts: its records are committed once it
 *   accepted them and, if it has a sync, synced them
 *   (blq_restorer_config.sink). A file goes when all its records are
 *   done. A restorer that dies leaves its uncommitted records to be
 *   restored again: at least
 *   once, with at most max_in_flight duplicates per dead restorer, each
 *   marked as a redelivery (blq_dump_record.deliveries).
 *
 * The on-disk format (docs/reference-dump-format.md): a 16-byte header
 * ("BLQD", format 1 or 2, flags 0, the user's version), then records of
 * {u32 len, u32 restores, u32 crc32c, len bytes}, little-endian; in format
 * 2 a record's bytes start with why its item was dead-lettered
 * (blq_dump_record.why).
 *
 * Thread-safety: unless a function says otherwise, the functions on a dump
 * (blq_dump_*) and on a restorer (blq_restorer_*) may be called from any
 * thread, concurrently, until its _free, which must be the last call on
 * it. The constructors and the codec functions may be called from any
 * thread. A writer or a reader is not thread-safe: each serves one dump or
 * one restorer, which calls it from its own thread only.
 */
#ifndef BLQ_DLQDUMP_H
#define BLQ_DLQDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/enqueuer.h>
#include <blq/error.h>
#include <blq/export.h>
#include <blq/log.h>
#include <blq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The largest record (encoded item) a dump writes or a reader accepts, in
 * bytes. A length field above it marks the dump as damaged; nothing is
 * allocated from a length field that the file cannot back. */
#define BLQ_DUMP_RECORD_MAX (64u << 20)

/**
 * The newest dump format, which this library reads along with format 1.
 * Format 2 adds to each record, inside its framed and checksummed bytes,
 * why the item was dead-lettered (blq_dump_record.why): 18 bytes plus the
 * queue's name. A dump writes format 1, as older versions did, until it
 * is given an item with a why (blq_dump_enqueue_why, which a queue uses),
 * and format 2 from then on (blq_dump_batch.format says which).
 */
#define BLQ_DUMP_FORMAT 2

/* ---- metrics ------------------------------------------------------ */

/** Why a batch was written (blq_dump_metrics.flush). */
enum blq_dump_flush_reason {
	BLQ_DUMP_FLUSH_SIZE = 0,     /**< the batch reached capacity */
	BLQ_DUMP_FLUSH_INTERVAL = 1, /**< flush_interval_ns passed since its first item */
	BLQ_DUMP_FLUSH_CLOSE = 2,    /**< close or blq_dump_flush */
};

/**
 * Why a dump or a restorer failed at something (blq_dump_metrics.failure,
 * blq_dump_stats.failures, blq_restorer_stats.failures and the Prometheus
 * family `dlqdump_failures_total{reason}`). Each is a place in the code
 * that can fail; what one count is depends on the reason (an item, a
 * call, a file). The values index the stats' arrays: new reasons are
 * appended, never renumbered. blq_dump_failure_name() names them.
 */
enum blq_dump_failure {
	/** Dump: a write attempt of a batch failed (its writer's or its
	 * fallback's; the batch is retried): one per attempt, as
	 * blq_dump_stats.write_errors. */
	BLQ_DUMP_FAIL_WRITE = 0,
	/** Dump: an item refused because its batch was full while writes
	 * failed (BLQ_EFULL): one per item, lost. */
	BLQ_DUMP_FAIL_NO_ROOM = 1,
	/** Dump: an item its encoder refused (its negative code, or a length
	 * over BLQ_DUMP_RECORD_MAX or that changed between two calls): one
	 * per item, lost. */
	BLQ_DUMP_FAIL_ENCODE = 2,
	/** Dump: an item refused because its batch could not grow; restorer:
	 * a record returned (or a dump given back) for want of memory. One
	 * per item or dump. */
	BLQ_DUMP_FAIL_MEMORY = 3,
	/** Dump: items dropped at close, writes still failing after
	 * close_timeout_ns: one per item, lost. */
	BLQ_DUMP_FAIL_DROPPED = 4,
	/** Restorer: claiming or reading a dump failed (the reader's next,
	 * record or refresh: a file that cannot be read, Redis unreachable):
	 * one per failed call. */
	BLQ_DUMP_FAIL_READ = 5,
	/** Restorer: a record its decoder refused: one per record (sent to
	 * the dead store, or lost without one). */
	BLQ_DUMP_FAIL_DECODE = 6,
	/** Restorer: a damaged dump (file) or a bad entry (Redis) its reader
	 * set aside: one per file or entry, as blq_restorer_stats.quarantined. */
	BLQ_DUMP_FAIL_QUARANTINE = 7,
	/** Restorer: recording progress failed (the reader's done, sync or
	 * commit: a checkpoint that cannot be written, a finished file that
	 * cannot be deleted or archived, an ack that does not reach Redis);
	 * the records are kept and it is tried again: one per failed call, a
	 * dump stuck at its commit counted once. */
	BLQ_DUMP_FAIL_COMMIT = 8,
	/** Restorer: an item its target or sink refused (anything but
	 * BLQ_EFULL, which postpones it): its record is kept and comes
	 * again. One per item. */
	BLQ_DUMP_FAIL_REFUSED = 9,
	/** Restorer: making items handed on durable failed (the target's
	 * DLQ's sync for leaked items, the sink's sync): their records wait
	 * and it is tried again. One per failed call. */
	BLQ_DUMP_FAIL_SYNC = 10,
	/** Restorer: a write to the dead store failed (its records stay in
	 * flight and it is tried again): one per failed write. */
	BLQ_DUMP_FAIL_DEAD_STORE = 11,
};

/** The number of blq_dump_failure reasons: the length of the failures
 * arrays of blq_dump_stats and blq_restorer_stats. */
#define BLQ_DUMP_FAILURES 12

/**
 * The name of a failure reason, as the log writer and the Prometheus
 * label `reason` spell it: "write", "no_room", "encode", "memory",
 * "dropped", "read", "decode", "quarantine", "commit", "refused", "sync",
 * "dead_store".
 * \param reason a blq_dump_failure.
 * \return a static string; "unknown" for a value this build does not name.
 * \threadsafety Any thread.
 */
BLQ_API const char *blq_dump_failure_name(enum blq_dump_failure reason);

/** Dump and restorer events (the original's dlqdump MetricsWriter plus lost
 * and quarantined). Every callback is optional and receives the configured
 * name; callbacks run on producer threads, the dump's flush thread and the
 * restorer's thread, so they must be thread-safe. The configs hold a
 * pointer to it: borrowed, it must outlive the dump, restorer or reader. */
typedef struct blq_dump_metrics {
	void *ctx; /**< passed as the first argument of every callback */
	/** An item was encoded into the dump: size_in += 1, bytes_in += bytes. */
	void (*dump_in)(void *ctx, const char *name, size_t bytes);
	/** A batch was persisted: bytes_flush += bytes (records with headers). */
	void (*flush)(void *ctx, const char *name, enum blq_dump_flush_reason reason,
		      size_t bytes);
	/** The restorer's target accepted an item: size_out += 1, bytes_out += bytes. */
	void (*restore_out)(void *ctx, const char *name, size_t bytes);
	/** The restorer handed out a record that an earlier delivery may have
	 * processed already (blq_dump_record.deliveries > 0). Optional. */
	void (*redelivered)(void *ctx, const char *name, uint64_t items);
	/** Items lost: refused (no room while writes fail, encoder error) or
	 * dropped at close when no writer took them; restorer: undecodable
	 * records without a dead store. */
	void (*lost)(void *ctx, const char *name, uint64_t items);
	/** A damaged dump (file) or entry (Redis) was moved aside. */
	void (*quarantined)(void *ctx, const char *name, uint64_t count);
	/** Something failed (the original's Fail(queue, reason)): \p n
	 * more of \p reason, counted as the stats' failures arrays count
	 * them (see blq_dump_failure). Optional: NULL. Called outside the
	 * dump's lock, on the thread that met the failure. */
	void (*failure)(void *ctx, const char *name, enum blq_dump_failure reason, uint64_t n);
} blq_dump_metrics;

/** A blq_dump_metrics that turns every dump, restorer and reader event
 * into a log line, for debugging (the queue's blq_log_writer for dumps: a
 * formatted line per item). The caller allocates it;
 * blq_dump_log_writer_init fills it. */
typedef struct blq_dump_log_writer {
	blq_dump_metrics metrics; /**< what the configs' metrics point at */
	blq_logger logger;        /**< where the lines go (a copy) */
} blq_dump_log_writer;

/**
 * Make \p lw log every event through \p logger at BLQ_LOG_DEBUG, as
 * `dump=NAME event=EVENT key=value ...`, NAME being the configured name
 * of the dump, restorer or reader that reports it:
 * - `event=in bytes=N` (dump_in: an item encoded),
 * - `event=flush reason=size|interval|close bytes=N` (a batch persisted),
 * - `event=restore_out bytes=N` (an item the target or sink accepted),
 * - `event=redelivered items=N`, `event=lost items=N`,
 * - `event=quarantined count=N`,
 * - `event=failure reason=REASON n=N` (blq_dump_failure_name's names).
 * \param[out] lw the caller's storage; nothing is allocated. It must
 *        outlive the dumps, restorers and readers using it; nothing to
 *        free.
 * \param logger copied into \p lw; every line goes to its log callback
 *        (as blq_log_writer's: the writer is the choice to see them).
 * \return &lw->metrics, for blq_dump_config.metrics,
 *         blq_restorer_config.metrics and the readers' metrics; NULL when
 *         \p lw is NULL.
 * \threadsafety Not thread-safe for the same \p lw: fill it before any
 * dump uses it. The writer may then be shared by many dumps and threads.
 */
BLQ_API const blq_dump_metrics *blq_dump_log_writer_init(blq_dump_log_writer *lw,
							 blq_logger logger);

/* ---- codecs ------------------------------------------------------- */

/** Turns a payload into bytes (blq_dump_config.encoder; copied). */
typedef struct blq_dump_encoder {
	/** Writes payload's encoding into dst (cap bytes of room) and returns
	 * its length. A length > cap means "call me again with that much
	 * room" (dst was not used); a negative BLQ_E* code means the payload
	 * cannot be encoded (the dump refuses it). Must not keep payload.
	 * Called under the dump's lock, one call at a time per dump. */
	long (*encode)(void *ctx, const void *payload, void *dst, size_t cap);
	/** How many times payload came back from a dump already (see the
	 * restorer's max_restores). Optional: NULL means 0. */
	uint32_t (*restores)(void *ctx, const void *payload);
	void *ctx; /**< passed to both callbacks; borrowed */
} blq_dump_encoder;

/* A record as a reader hands it out (defined below). */
typedef struct blq_dump_record blq_dump_record;

/** Turns bytes back into a payload (blq_restorer_config.decoder; copied). */
typedef struct blq_dump_decoder {
	/** Makes a payload from rec->len bytes at rec->data (valid only
	 * during the call). rec->restores is the number of times this item
	 * has been restored, this time included; rec->deliveries > 0 says an
	 * earlier delivery of this very record may have been processed (its
	 * restorer died before it could commit): carry it into the payload
	 * so the worker can make its work idempotent. Return 0 with *payload
	 * set (the restorer then owns it), or a negative BLQ_E* code. Called
	 * from the restorer's thread. */
	int (*decode)(void *ctx, const blq_dump_record *rec, void **payload);
	void *ctx; /**< passed to decode; borrowed */
} blq_dump_decoder;

/* blq_bytes ends in a flexible array member: standard C, and a GNU
 * extension in C++ that g++ and clang++ lay out the same way, so C++ code
 * keeps b->data, but that -Wpedantic reports in every C++ translation unit
 * that includes this header. The pragmas silence that one report for this
 * one declaration, in C++ only; C sees no change at all. */
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
/** A raw byte buffer with its length and restore count: the payload of the
 * bytes codec. One allocation; free it with free(). */
typedef struct blq_bytes {
	uint32_t restores; /**< times restored from a dump; carried through dumps */
	/** Set by the decoder: earlier deliveries of the same record that may
	 * have been processed (0: a first delivery). Not written to dumps. */
	uint32_t deliveries;
	size_t len;            /**< bytes in data */
	unsigned char data[];  /**< the bytes (a flexible array member) */
} blq_bytes;
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/**
 * A blq_bytes holding a copy of \p len bytes at \p data.
 * \param data the bytes to copy; may be NULL when \p len is 0.
 * \param len their number.
 * \return the buffer (restores and deliveries 0), or NULL when out of
 *         memory or when \p data is NULL and \p len is not 0. The caller
 *         owns it: free it with free() (or hand it to a queue whose
 *         item_free is free).
 */
BLQ_API blq_bytes *blq_bytes_new(const void *data, size_t len);

/**
 * The codec of blq_bytes payloads, encoding side: the data and the restore
 * count.
 * \return the encoder, a value with no context: nothing to free.
 */
BLQ_API blq_dump_encoder blq_dump_bytes_encoder(void);

/**
 * The codec of blq_bytes payloads, decoding side: each record becomes a
 * new blq_bytes (restores and deliveries from the record).
 * \return the decoder, a value with no context: nothing to free. The
 *         payloads it makes are malloc'd: free them with free().
 */
BLQ_API blq_dump_decoder blq_dump_bytes_decoder(void);

/**
 * The codec of NUL-terminated strings, encoding side (without the NUL).
 * Strings carry no restore count: use blq_bytes with max_restores.
 * \return the encoder, a value with no context: nothing to free.
 */
BLQ_API blq_dump_encoder blq_dump_string_encoder(void);

/**
 * The codec of NUL-terminated strings, decoding side: each record becomes
 * a new NUL-terminated string; bytes after an embedded NUL are kept but
 * unseen.
 * \return the decoder, a value with no context: nothing to free. The
 *         strings it makes are malloc'd: free them with free().
 */
BLQ_API blq_dump_decoder blq_dump_string_decoder(void);

/* ---- writers and readers ------------------------------------------ */

/** A record as a reader hands it out; filled by the reader, owned by it. */
struct blq_dump_record {
	const void *data; /**< valid until the next call on the reader */
	size_t len;       /**< bytes at data */
	uint32_t restores; /**< as stored: times restored before */
	/** Times this record was handed to a restorer before without being
	 * committed (its restorer died or released it): an upper bound, 0 for
	 * a first delivery. */
	uint32_t deliveries;
	uint64_t version; /**< the version its dump was written with */
	/** The record's place in its dump, 0-based and increasing: what
	 * done() takes. */
	uint64_t index;
	/** Why the item was dead-lettered, as stored with the record (format
	 * 2): reason, attempts, rc, time and queue name. All zero (reason
	 * BLQ_DLQ_UNKNOWN) for a format-1 record and for an item that came
	 * without a why. A plain value: it stays valid after the next call on
	 * the reader, unlike data. A custom reader may leave it alone: the
	 * restorer clears it before each call. */
	blq_dlq_why why;
};

/** A batch handed to a writer: count records in the record layout
 * ({u32 len, u32 restores, u32 crc32c, bytes}...), len bytes in total.
 * Owned by the caller; valid during the write call. */
typedef struct blq_dump_batch {
	uint64_t version;          /**< the dump's blq_dump_config.version */
	const unsigned char *data; /**< the records, back to back */
	size_t len;                /**< bytes at data */
	size_t count;              /**< records at data */
	/** The records' layout: 1 or 2 (BLQ_DUMP_FORMAT; 0 in a batch made
	 * by hand means 1). Either way 12 + len spans a record, so a writer
	 * that stores records as they are (as the built-in ones do) needs no
	 * change; it stores this number with them (a file header, a Redis
	 * field name) for its reader. In format 2 each record's len bytes
	 * start with the metadata (18 bytes plus the queue's name:
	 * docs/reference-dump-format.md), then the encoded item. */
	unsigned format;
} blq_dump_batch;

/**
 * A writer. Built-in writers are made by the constructors below; a custom
 * writer embeds this struct as its first member. One writer serves one
 * dump (or one restorer's dead store): it is called from a single thread.
 * Free it with blq_dump_writer_free.
 */
typedef struct blq_dump_writer blq_dump_writer;
struct blq_dump_writer {
	/** Persist the batch. Return 0 when every record is durable; otherwise
	 * a negative BLQ_E* code with a message in err, and *done set to the
	 * number of records from the start known to be durable (the dump
	 * retries the rest; records after *done may have been written too,
	 * which makes duplicates, never losses). */
	int (*write)(blq_dump_writer *w, const blq_dump_batch *b, size_t *done, blq_error *err);
	/** Frees the writer; NULL when the caller owns its storage. */
	void (*destroy)(blq_dump_writer *w);
};

/**
 * What a restorer lends the reader it uses (blq_dump_reader.host), so that
 * what the reader sets aside is counted and logged with the restorer's
 * own: blq_restorer_new points the reader's host at its own, and
 * blq_restorer_free sets it back to NULL. A reader calls it from within
 * its own calls, so on the restorer's thread.
 */
typedef struct blq_dump_reader_host {
	/** The restorer's name: a reader made without a name of its own
	 * names the restorer in its log lines. */
	const char *name;
	/** The restorer's logger: a reader whose own logger is off (log
	 * NULL) logs through it. */
	blq_logger logger;
	/** The reader set a damaged dump or a bad entry aside (quarantined):
	 * \p count dumps (files) or entries, 1 each; \p skipped_bytes, the
	 * bytes of it that no intact record covered (a file's damaged spans;
	 * the whole file when its header or version is wrong; 0 for an
	 * entry). A file's intact records were handed out before, as any
	 * other records. The restorer counts it in blq_restorer_stats
	 * (quarantined, skipped_bytes, records). */
	void (*quarantined)(void *ctx, uint64_t count, uint64_t skipped_bytes);
	void *ctx; /**< passed to quarantined */
} blq_dump_reader_host;

/**
 * A reader: hands out dumps (a file, a batch of stream entries), several
 * open at once, and takes back which of their records are done. Called
 * from one restorer's thread only. A custom reader embeds this struct as
 * its first member. Free it with blq_dump_reader_free.
 */
typedef struct blq_dump_reader blq_dump_reader;
struct blq_dump_reader {
	/** Claim the next dump nobody else holds (nor this reader: a dump it
	 * has open is not handed out twice). Return 1 with *dump set, 0 when
	 * there is none now, or a negative BLQ_E* code (err says why). */
	int (*next)(blq_dump_reader *r, void **dump, blq_error *err);
	/** The claimed dump's next good record. Return 1 with *rec set, 0 at
	 * the end (a damaged file's intact records come before and after its
	 * damage: the built-in reader skips each damaged span to the next
	 * intact record; the reader reports the damage and sets the dump
	 * aside at commit), or a negative code (I/O error: the restorer
	 * releases the dump). */
	int (*record)(blq_dump_reader *r, void *dump, blq_dump_record *rec, blq_error *err);
	/** Record `index` of dump is done (its item reached its outcome). The
	 * reader may keep the mark in memory until sync. Return 0 or a
	 * negative code. */
	int (*done)(blq_dump_reader *r, void *dump, uint64_t index, blq_error *err);
	/** Make every done mark of dump durable (a file's checkpoint; acks of
	 * stream entries), so a crash after it does not restore those records
	 * again. Return 0 or a negative code (the marks stay; call again). */
	int (*sync)(blq_dump_reader *r, void *dump, blq_error *err);
	/** Every record was handed out (record returned 0) and done: remove
	 * the dump (delete the file or quarantine it when damaged; ack and
	 * delete the entries) and free it. Return 0, or a negative code: then
	 * the dump stays open, and the caller calls commit again later, or
	 * release. */
	int (*commit)(blq_dump_reader *r, void *dump, blq_error *err);
	/** Give the dump back: its done marks are made durable (as sync, best
	 * effort), the other records come again later. Frees dump. */
	void (*release)(blq_dump_reader *r, void *dump);
	/** Keep this reader's claim on the dump's records that are not done
	 * alive, so other restorers do not take them over while they run
	 * (Redis: XCLAIM ... JUSTID). Optional (NULL); return 0 or a negative
	 * code. */
	int (*refresh)(blq_dump_reader *r, void *dump, blq_error *err);
	/** Frees the reader; NULL when the caller owns its storage. */
	void (*destroy)(blq_dump_reader *r);
	/** The restorer using this reader (blq_dump_reader_host), set by
	 * blq_restorer_new and cleared by blq_restorer_free; NULL otherwise.
	 * A custom reader leaves it NULL when it makes itself, and may report
	 * what it sets aside through it when it is not NULL. */
	const blq_dump_reader_host *host;
};

/**
 * Destroy a writer through its destroy callback (a writer without one is
 * left alone: its caller owns the storage).
 * \param w the writer; NULL is a no-op.
 * \threadsafety Once, after every dump and restorer using it was freed.
 */
BLQ_API void blq_dump_writer_free(blq_dump_writer *w);

/**
 * Destroy a reader through its destroy callback (a reader without one is
 * left alone: its caller owns the storage).
 * \param r the reader; NULL is a no-op.
 * \threadsafety Once, after the restorer using it was freed.
 */
BLQ_API void blq_dump_reader_free(blq_dump_reader *r);

/** File system writer and reader. `blq_dump_fs_config c = {.directory = d}`
 * configures both. Only read by the constructors: strings are copied,
 * metrics is borrowed. */
typedef struct blq_dump_fs_config {
	/** Where dump files live. Required; must exist and be writable
	 * (writer) or readable (reader). */
	const char *directory;
	/** Writer: file names, a strftime(3) mask (local time) plus "%i", a
	 * counter that keeps names unique; required in the mask. No '/', under
	 * 200 bytes. Default "%Y-%m-%d--%H-%M-%S--%i.bin". */
	const char *file_mask;
	/** Reader: glob(7) of the files to restore, inside directory; the
	 * writer checks that its names match it. Default "*.bin". */
	const char *match;
	/** Reader: where damaged files go. Default `DIRECTORY/quarantine`;
	 * created when missing. Must be on the same file system. */
	const char *quarantine;
	/** Reader: the version it accepts; a file of another version is
	 * quarantined. */
	uint64_t version;
	/** Reader: name for quarantine reports; copied. Default: its
	 * restorer's name, "restorer" without one; 1..63 bytes. */
	const char *name;
	/** Reader: metrics for quarantine reports; optional, borrowed (must
	 * outlive the reader). */
	const blq_dump_metrics *metrics;
	/** Reader: logger for quarantine reports; optional: when off, the
	 * reader logs through its restorer's logger (blq_dump_reader_host). */
	blq_logger logger;
	/** Writer: its write size (the original's fs.Writer Buffer): a file
	 * goes to disk in write(2) calls of at most this many bytes, the
	 * header with the first records, then the batch a slice at a time.
	 * The batch is already one block of memory, so the writer allocates
	 * and copies nothing for it: this bounds the size of one system call
	 * (and of one slice of I/O the file system sees), not memory. The
	 * file, its fsync and its rename are the same whatever the size.
	 * 0 (the default): the header and the whole batch in one writev, as
	 * before this field existed. Otherwise BLQ_DUMP_FS_WRITE_BUFFER_MIN..
	 * BLQ_DUMP_FS_WRITE_BUFFER_MAX bytes; blq_dump_fs_writer_new refuses
	 * other values with BLQ_EINVAL ("write_buffer: ..."). Ignored by the
	 * reader. */
	size_t write_buffer;
	/** Reader: where a finished file goes instead of being deleted (a
	 * file whose records all reached their outcomes; the original's
	 * OnEOF use case). The file is renamed into it under its own name
	 * (NAME.1, NAME.2, ... when taken: never over another file), the
	 * archive and the directory fsync'd, its checkpoint removed; its
	 * bytes are the file's as written, so blq-dlq and
	 * blq_inspect_open_fs read it as any dump. Created when missing
	 * (one level). Must be a directory other than `directory`, on the
	 * same file system (the move is a rename): blq_dump_fs_reader_new
	 * checks both and refuses with BLQ_EINVAL ("archive: ..."). If the
	 * rename fails later all the same (EXDEV after a mount changed, a
	 * full or read-only archive), the commit fails: the restorer logs it
	 * and counts it once (blq_restorer_stats.read_errors and
	 * failures[BLQ_DUMP_FAIL_COMMIT]), the file stays in the directory
	 * with its checkpoint (every record marked done and synced at once,
	 * so none is restored again, after a crash either) and the move is
	 * tried again at each sync, or at the next claim of the file. No
	 * copy across file systems: the archive promises an atomic move.
	 * The reader never empties
	 * the archive: that is the application's. Optional: NULL deletes
	 * finished files, as before. Damaged files still go to `quarantine`. */
	const char *archive;
	/** Reader: called with a finished file's path, after its move into
	 * `archive` when there is one (the path is then the archived one),
	 * else in place of its deletion (the path is in `directory`). The
	 * path is valid during the call only (copy it). The hook decides
	 * what becomes of the file:
	 * - return 0: the hook has it. Without an archive, it must have
	 *   taken the file out of the directory (renamed it elsewhere, or
	 *   deleted it); if the same file still sits at the path, the commit
	 *   fails (BLQ_EINVAL, logged and counted as below) and is tried
	 *   again later.
	 * - return BLQ_DUMP_FS_DELETE: the reader deletes the file at the
	 *   path (with an archive: the archived copy).
	 * - return a negative BLQ_E* code, with a message in err (optional):
	 *   without an archive the commit fails: the restorer logs the
	 *   message and counts it (blq_restorer_stats.read_errors), the file
	 *   stays with its records marked done (none is restored again) and
	 *   the hook is called again at the next sync or claim; with an
	 *   archive it is logged (warn) and the file stays archived.
	 * Called on the restorer's thread, one call at a time per reader,
	 * while the restorer holds the file; it must not call the restorer
	 * (blq_restorer_close or _free would deadlock) and should be quick:
	 * no record is settled meanwhile. Optional: NULL. */
	int (*finished)(void *ctx, const char *path, blq_error *err);
	/** Passed to finished; borrowed. Refused (BLQ_EINVAL) without
	 * finished. */
	void *finished_ctx;
} blq_dump_fs_config;

/** What blq_dump_fs_config.finished returns to have the reader delete the
 * file at the path it was given. */
#define BLQ_DUMP_FS_DELETE 1

/** The smallest blq_dump_fs_config.write_buffer other than 0 (bytes). */
#define BLQ_DUMP_FS_WRITE_BUFFER_MIN 512u
/** The largest blq_dump_fs_config.write_buffer (bytes): 1 GiB, a batch's
 * largest capacity. */
#define BLQ_DUMP_FS_WRITE_BUFFER_MAX (1u << 30)

/**
 * A writer of one file per batch: a 16-byte header then the batch's
 * records, written to a hidden temporary name in the directory, fsync'd,
 * renamed (never over an existing file) and the directory fsync'd, so a
 * reader never sees a partial file.
 * \param cfg the directory, file_mask, match and write_buffer; only read
 *        during the call.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the writer, or NULL with BLQ_EINVAL (\p cfg NULL, a missing,
 *         non-directory or unwritable directory, an empty or bad file_mask,
 *         names that would not match match, a write_buffer out of its
 *         range; the message names the field and the path or value) or BLQ_ENOMEM in \p err. The caller owns it: free
 *         it with blq_dump_writer_free after the dumps using it were freed.
 * \threadsafety The constructor: any thread. The writer: one thread at a
 * time (its dump's flush thread).
 */
BLQ_API blq_dump_writer *blq_dump_fs_writer_new(const blq_dump_fs_config *cfg, blq_error *err);

/**
 * A reader of the files matching `match`, oldest name first. A file is locked (flock) while restored, so restorers on one
 * host skip each other's files, and a dead restorer's lock goes with it.
 * Progress lives in a checkpoint beside each file (`.NAME.ckpt`: the
 * done records, and how many restorers claimed the file), written at
 * claim and at each sync (fsync'd, renamed over the last one, the
 * directory fsync'd, so it survives a power cut too): a restart skips the
 * records done and marks the others as redeliveries. A file and its
 * checkpoint are removed once all its records are done (the directory
 * fsync'd after the file's removal); with an archive the file is renamed
 * into it instead, and a finished hook decides what becomes of it
 * (blq_dump_fs_config.archive and .finished).
 * A file with a bad magic, another version, a bad checksum, a truncated
 * tail, an absurd length or bad metadata is moved to the quarantine
 * directory (never deleted) after its intact records were restored: a
 * damaged record does not end the file, the reader skips to the next
 * offset where a whole record parses with a valid checksum and goes on,
 * so records after the damage are restored too (their indices, and so the
 * checkpoint, are the same at every claim). The move is logged (warn: the
 * file, its first damage and offset, the damaged spans and the bytes
 * skipped, the records restored), counted in the quarantined metric and
 * in its restorer's stats (blq_restorer_stats.quarantined).
 * \param cfg the directory, match, quarantine, archive, finished (and its
 *        ctx), version, name, metrics and logger; only read during the
 *        call (metrics and finished_ctx are kept: borrowed).
 * \param[out] err optional; on failure receives the code and a message.
 * \return the reader, or NULL with BLQ_EINVAL (\p cfg NULL, missing
 *         directory, bad match or name, quarantine not creatable, an
 *         archive not creatable, the directory itself or on another file
 *         system, a logger ctx without log, a finished_ctx without
 *         finished) or BLQ_ENOMEM in \p err. The caller owns it:
 *         free it with blq_dump_reader_free after the restorer using it was
 *         freed.
 * \threadsafety The constructor: any thread. The reader: one thread at a
 * time (its restorer's).
 */
BLQ_API blq_dump_reader *blq_dump_fs_reader_new(const blq_dump_fs_config *cfg, blq_error *err);

/** Redis writer and reader (hiredis; BLQ_WITH_REDIS). Items are entries of
 * a stream: `XADD KEY * v VERSION r RECORD`. Only read by the
 * constructors: strings are copied, metrics is borrowed. */
typedef struct blq_dump_redis_config {
	const char *host;             /**< default "127.0.0.1" */
	int port;                     /**< default (0) 6379; 1..65535 */
	const char *key;              /**< the stream; required, 1..200 bytes */
	uint64_t connect_timeout_ns;  /**< default 1 s */
	uint64_t command_timeout_ns;  /**< default 5 s */
	uint64_t reconnect_min_ns;    /**< first wait after a failure; default 50 ms */
	uint64_t reconnect_max_ns;    /**< the backoff doubles up to this; default 5 s */
	/** Writer: commands per round trip. Default 1024. */
	size_t pipeline;
	/** Reader: consumer group. Default "blq"; 1..127 bytes. */
	const char *group;
	/** Reader: this reader's consumer name, 1..127 bytes. Default
	 * `HOSTNAME-PID-N` (N counts the readers of the process); give a
	 * restorer a stable name to take back its own pending entries at once
	 * after a restart. */
	const char *consumer;
	/** Reader: entries per dump. Default 512; at most 100000. */
	size_t read_count;
	/** Reader: entries another consumer has held this long unacked are
	 * taken over (XAUTOCLAIM, looked for every claim_idle_ns / 4): the
	 * owner died or was cut off. Default 60 s, at least 1 ms. A live
	 * restorer refreshes its claim on the entries in its target every
	 * claim_idle_ns / 4, so this bounds how long a dead one's entries
	 * wait, not how long an item may take. */
	uint64_t claim_idle_ns;
	/** Reader: the version it accepts; other entries are moved to
	 * `KEY:quarantine`. */
	uint64_t version;
	/** Reader: name for quarantine reports; copied. Default: its
	 * restorer's name, "restorer" without one; 1..63 bytes. */
	const char *name;
	/** Reader: metrics for quarantine reports; optional, borrowed (must
	 * outlive the reader). */
	const blq_dump_metrics *metrics;
	/** Reader: logger for quarantine reports; optional: when off, the
	 * reader logs through its restorer's logger (blq_dump_reader_host). */
	blq_logger logger;
} blq_dump_redis_config;

/**
 * A writer that appends each record as a stream entry, pipelined
 * (binary-safe argv), with connect and command timeouts and keepalive,
 * reconnecting with backoff after a failure. It checks the config and
 * does not connect: its first write does. So a dump whose Redis is down
 * when it starts runs as during an outage that starts later: each write
 * that cannot reach the server fails (its batch goes to the dump's
 * fallback writer, or stays buffered and is retried), and once the server
 * answers (tried again after reconnect_min_ns, doubling up to
 * reconnect_max_ns) the writes go to Redis. A host name that does not
 * resolve counts as an outage too (it may resolve later: a container
 * still starting, DNS not yet updated); the write errors name the
 * resolver's message (blq_dump_stats.write_errors, the dump's log).
 * \param cfg the connection and writer fields; only read during the call.
 * \param[out] err optional; on failure receives the code and a message.
 * \return the writer, or NULL with BLQ_EINVAL (\p cfg NULL, or a bad field:
 *         an empty or too long host, a port outside 0..65535, no key,
 *         reconnect_max_ns below reconnect_min_ns; the message names it),
 *         BLQ_ENOTSUP (built without BLQ_WITH_REDIS) or BLQ_ENOMEM in
 *         \p err. The caller owns it: free it with blq_dump_writer_free
 *         after the dumps using it were freed.
 * \threadsafety The constructor: any thread. The writer: one thread at a
 * time (a hiredis context is not thread-safe).
 */
BLQ_API blq_dump_writer *blq_dump_redis_writer_new(const blq_dump_redis_config *cfg,
						   blq_error *err);

/**
 * A reader of the stream through a consumer group (created at the
 * stream's start if missing), so several restorers,
 * on several machines, share one dump without taking the same entry twice.
 * A dump is up to read_count entries; each entry is acked and deleted
 * (XACK, XDEL, pipelined in batches) once its item is done. Entries left
 * unacked by a crashed restorer are taken back (its own at once, by name;
 * another consumer's after claim_idle_ns), with their delivery count
 * (XPENDING) as blq_dump_record.deliveries. A reader that could not
 * refresh its claim for claim_idle_ns (cut off from the server) hands out
 * no more of that batch: another consumer may have taken it over.
 * \param cfg the connection and reader fields; only read during the call
 *        (metrics is kept: borrowed).
 * \param[out] err optional; on failure receives the code and a message.
 * \return the reader, or NULL with BLQ_EINVAL (\p cfg NULL, a bad field,
 *         server unreachable or the group not creatable: the message
 *         names host:port), BLQ_ENOTSUP (built without BLQ_WITH_REDIS) or
 *         BLQ_ENOMEM in \p err. The caller owns it: free it with
 *         blq_dump_reader_free after the restorer using it was freed.
 * \threadsafety The constructor: any thread. The reader: one thread at a
 * time (its restorer's).
 */
BLQ_API blq_dump_reader *blq_dump_redis_reader_new(const blq_dump_redis_config *cfg,
						   blq_error *err);

/* ---- the dump queue ----------------------------------------------- */

/** The dump. Opaque: it owns its flush thread. Made by blq_dump_new,
 * freed with blq_dump_free. */
typedef struct blq_dump blq_dump;

/** A dump's configuration; copied by blq_dump_new (the name too). */
typedef struct blq_dump_config {
	/** Name for metrics and logs; copied. Default "dump", 1..63 bytes. */
	const char *name;
	/** Written with every batch; readers accept only their own. Change it
	 * whenever the encoding changes. */
	uint64_t version;
	/** Batch size in bytes: a batch is written when it reaches this.
	 * Required, 1..1 GiB. While writes fail, new items are accepted until
	 * the next batch is full too (at most about 2 x capacity in memory),
	 * then refused and counted lost. */
	size_t capacity;
	/** A batch is written at the latest this long after its first item.
	 * Default 30 s. */
	uint64_t flush_interval_ns;
	/** Payload -> bytes. Required. */
	blq_dump_encoder encoder;
	/** Frees each payload once encoded (accepted items only). Optional:
	 * NULL leaves payloads alone. */
	void (*item_free)(void *payload);
	/** Where batches go. Required; borrowed (must outlive the dump). */
	blq_dump_writer *writer;
	/** Takes a batch the writer failed on (e.g. an fs writer behind a
	 * Redis writer). Optional; borrowed. */
	blq_dump_writer *fallback;
	/** Wait before retrying a failed batch; doubles up to 32x. Default
	 * 100 ms. */
	uint64_t retry_interval_ns;
	/** How long close keeps retrying failed batches before counting them
	 * lost. Default 5 s; UINT64_MAX: no limit. Like every duration here,
	 * at most a year otherwise. */
	uint64_t close_timeout_ns;
	/** Metrics; optional, borrowed (the struct must outlive the dump). */
	const blq_dump_metrics *metrics;
	/** Logger; optional. */
	blq_logger logger;
} blq_dump_config;

/** Dump counters. in == written + written_fallback + dropped + buffered;
 * items lost = refused + dropped. */
struct blq_dump_stats {
	uint64_t in;               /**< items accepted and encoded */
	uint64_t bytes_in;         /**< their encoded bytes */
	uint64_t written;          /**< items persisted by the writer */
	uint64_t written_fallback; /**< items persisted by the fallback */
	uint64_t bytes_flushed;    /**< batch bytes persisted (with record headers) */
	uint64_t flushes;          /**< batches persisted */
	uint64_t write_errors;     /**< failed write attempts (writer or fallback) */
	uint64_t refused;          /**< enqueues refused (no room while failing, encode error) */
	uint64_t dropped;          /**< accepted, then lost at close */
	uint64_t buffered;         /**< accepted, not persisted yet */
	uint64_t buffered_bytes;   /**< their encoded bytes, with record headers */
	/** Failures by reason, indexed by blq_dump_failure: a dump counts
	 * BLQ_DUMP_FAIL_WRITE (= write_errors), _NO_ROOM, _ENCODE and
	 * _MEMORY (together = refused) and _DROPPED (= dropped); the
	 * restorer's reasons stay 0 here. */
	uint64_t failures[BLQ_DUMP_FAILURES];
};

/**
 * Validate the config, copy it, start the flush thread.
 * \param cfg the configuration; only read during the call.
 * \param[out] err optional; receives the code and a message naming the
 *        field on failure (set to BLQ_OK and "" on success).
 * \return the dump, or NULL with BLQ_EINVAL (\p cfg NULL or a bad field;
 *         the message names it), BLQ_ENOMEM or BLQ_ETHREAD in \p err. The
 *         caller owns it: free it with blq_dump_free (after the queues
 *         leaking into it were freed).
 */
BLQ_API blq_dump *blq_dump_new(const blq_dump_config *cfg, blq_error *err);

/**
 * Encode a payload into the current batch. Never does I/O: the flush
 * thread writes. Waits only while both batches are full and the writer is
 * healthy (it writes more slowly than items arrive).
 * \param d the dump.
 * \param payload the payload; borrowed by the encoder during the call.
 * \retval 0 accepted: \p payload was encoded and freed with item_free
 *         (the dump owned it; with no item_free it is left alone).
 * \retval BLQ_EFULL no room while writes fail (counted refused, lost).
 * \retval BLQ_ECLOSED the dump is closing or closed.
 * \retval BLQ_ENOMEM the batch cannot grow.
 * \retval BLQ_EINVAL \p d NULL, or an encoding longer than
 *         BLQ_DUMP_RECORD_MAX (or inconsistent between two encoder calls).
 * \retval others the encoder's negative code.
 *
 * On any error the caller still owns \p payload.
 * \threadsafety Any number of threads at once.
 */
BLQ_API int blq_dump_enqueue(blq_dump *d, void *payload);

/**
 * Encode a payload into the current batch with why it was dead-lettered:
 * blq_dump_enqueue, and the record keeps the reason, attempts, code, time
 * and queue name a queue gives its DLQ. It is blq_dump_enqueuer's
 * enqueue_why, so a queue's leaks carry their reason into the dump. The
 * dump writes format 1 until the first why that says something, then
 * format 2 (rewriting, once, the records of the batch it is filling).
 * \param d the dump.
 * \param payload as blq_dump_enqueue.
 * \param why copied into the record; NULL, or all zero, says nothing (as
 *        blq_dump_enqueue).
 * \return as blq_dump_enqueue, and also
 * \retval BLQ_EINVAL \p why->reason is not a blq_dlq_reason, or
 *         \p why->queue has no NUL (counted nowhere).
 *
 * On any error the caller still owns \p payload.
 * \threadsafety Any number of threads at once.
 */
BLQ_API int blq_dump_enqueue_why(blq_dump *d, void *payload, const blq_dlq_why *why);

/**
 * The dump as a blq_enqueuer (a queue's dlq). Its enqueue is
 * blq_dump_enqueue, its sync blq_dump_flush, its enqueue_why
 * blq_dump_enqueue_why.
 * \param d the dump, borrowed: it must outlive the queues using the
 *        enqueuer (free them first).
 * \return the enqueuer, a value holding \p d: nothing to free.
 */
BLQ_API blq_enqueuer blq_dump_enqueuer(blq_dump *d);

/**
 * Write every item accepted so far and wait for it.
 * \param d the dump.
 * \retval 0 persisted (by the writer or the fallback).
 * \retval BLQ_EIO a write failed meanwhile (the items stay buffered and
 *         are retried).
 * \retval BLQ_ECLOSED the dump is closing or closed.
 * \retval BLQ_EINVAL \p d is NULL.
 */
BLQ_API int blq_dump_flush(blq_dump *d);

/**
 * Refuse new items, write everything buffered (retrying failed batches for
 * up to close_timeout_ns), stop the flush thread. Idempotent; concurrent
 * callers all return once closed. It does not free the dump: blq_dump_free
 * does.
 * \param d the dump.
 * \retval 0 everything accepted was written.
 * \retval BLQ_EIO items had to be dropped (counted in `dropped`, logged).
 * \retval BLQ_EINVAL \p d is NULL.
 */
BLQ_API int blq_dump_close(blq_dump *d);

/**
 * Close if needed (as blq_dump_close), then free the dump.
 * \param d the dump; NULL is a no-op.
 * \threadsafety Not concurrently with anything on \p d: call it once no
 * other call on \p d runs and no queue may leak into it any more (after
 * blq_free of those queues), only once.
 */
BLQ_API void blq_dump_free(blq_dump *d);

/**
 * Read the counters (exact once closed).
 * \param d the dump.
 * \param[out] out receives the counters.
 * \retval 0 \p out filled.
 * \retval BLQ_EINVAL \p d or \p out NULL.
 */
BLQ_API int blq_dump_stats(blq_dump *d, struct blq_dump_stats *out);

/* ---- the restorer ------------------------------------------------- */

/** The restorer. Opaque: it owns its thread. Made by blq_restorer_new,
 * freed with blq_restorer_free. */
typedef struct blq_restorer blq_restorer;

/** A restorer's configuration; copied by blq_restorer_new (the name too).
 * The pointers in it are borrowed. */
typedef struct blq_restorer_config {
	/** Name for metrics and logs; copied. Default "restorer". */
	const char *name;
	/** Where dumps come from. Required; borrowed. */
	blq_dump_reader *reader;
	/** Bytes -> payload. Required. */
	blq_dump_decoder decoder;
	/** Where items go, with blq_try_enqueue_job and a completion hook:
	 * a blq queue, which reports each item's outcome. Required unless
	 * `sink` is given instead (exactly one of the two); must outlive the
	 * restorer. A leaky target's overflow may
	 * go back to a dump: the restore count then grows (see max_restores),
	 * and the record is done once that dump made the item durable
	 * (blq_dlq_sync; a DLQ without sync, such as a queue, counts at the
	 * hand-over). An item the target loses (force close without DLQ) is
	 * not done: its record is restored again. */
	blq *target;
	/** Frees a decoded payload the target or the sink refused (closed),
	 * or held at close. Optional. */
	void (*item_free)(void *payload);
	/** Records handed to the target (or waiting for the dead store or a
	 * leak's sync) and not yet durably done, at most: bounds the
	 * restorer's memory, and the duplicates a crash of this restorer (or,
	 * with the fs reader, a power cut) can cause. Default 1024; 1..1,000,000. At the bound the restorer waits
	 * for outcomes; it never drops. */
	size_t max_in_flight;
	/** How long blq_restorer_close waits for the items in the target to
	 * reach their outcomes before it releases their records (to come
	 * again). Default 5 s; at most a year. */
	uint64_t close_timeout_ns;
	/** Poll period when no dump is waiting. Default 1 s. */
	uint64_t check_interval_ns;
	/** Wait while the target is too full. Default check_interval_ns. */
	uint64_t postpone_interval_ns;
	/** Restore only while blq_rate(target) <= allow_rate. Default 0.95;
	 * (0, 1]. */
	double allow_rate;
	/** A record already restored or delivered this many times
	 * (restores + deliveries) goes to `dead` instead of the target: a
	 * poison item that kills its restorer ends there too. 0 = no limit. */
	uint32_t max_restores;
	/** The final dead store for those records and for records the decoder
	 * refuses. Required with max_restores; borrowed. */
	blq_dump_writer *dead;
	/** Metrics; optional, borrowed (the struct must outlive the
	 * restorer). */
	const blq_dump_metrics *metrics;
	/** Logger; optional. */
	blq_logger logger;
	/**
	 * Where items go when `target` is NULL: any blq_enqueuer (another
	 * dump's blq_dump_enqueuer, a blq_as_enqueuer, your own). Exactly one
	 * of target and sink.enqueue is required (BLQ_EINVAL naming both
	 * otherwise). Copied; sink.self is borrowed and must outlive the
	 * restorer.
	 *
	 * At least once, up to the point a sink can report. A queue target
	 * reports outcomes, so its records are committed after their items'
	 * outcomes; a sink only accepts. So a record is committed once its
	 * item was accepted (enqueue returned 0) and, when the sink has a
	 * sync, once a sync returned 0 after that (the same rule as a
	 * target's DLQ for leaked items): a dump's sink commits a record only
	 * when the other dump has written it. What the sink does with the
	 * item after that is its own business: the restorer cannot know.
	 * Without a sync, an item the sink accepted counts as done at once,
	 * and a crash of the sink's process loses what it had not persisted.
	 * - enqueue returns BLQ_EFULL: the item is held and offered again
	 *   after postpone_interval_ns (counted postponed); nothing is read
	 *   meanwhile.
	 * - enqueue returns another code: the sink refused it; the record is
	 *   not done (counted returned, and failures[BLQ_DUMP_FAIL_REFUSED];
	 *   item_free frees the payload) and comes again, with its dump, at a
	 *   later check (check_interval_ns); the other records go on.
	 * - sync fails: the accepted records wait (in flight) and sync is
	 *   tried again (counted failures[BLQ_DUMP_FAIL_SYNC]); BLQ_ENOTSUP
	 *   from sync means "in memory only": done at acceptance from then on.
	 * - sink.enqueue_why, when set, is called instead of enqueue for a
	 *   record that carries why its item was dead-lettered (format 2), so
	 *   a dump keeps the reason when items move from one dump to another.
	 * The sink is called from the restorer's thread only, and may block
	 * it (a dump waits for room while its writer is slow): close waits
	 * for the call to return. allow_rate is not used (a sink has no
	 * rate); blq_restorer_stats.processed, failed, expired and leaked stay
	 * 0 (a sink reports no outcome).
	 */
	blq_enqueuer sink;
} blq_restorer_config;

/** Restorer counters. Every record read ends as one of done, dead, lost,
 * returned (given back unfinished; it comes again) or quarantined (set
 * aside by the reader), or is still in flight:
 * records = done + dead + lost + returned + quarantined + in_flight.
 * What is quarantined counts as the quarantined metric does: one per bad
 * Redis entry, one per damaged file moved aside (whatever its damaged
 * spans held; its intact records count as records of their own, restored
 * like any other). */
struct blq_restorer_stats {
	uint64_t dumps;        /**< dumps restored and removed (damaged files
				* moved aside included) */
	/** Records read, plus each entry or damaged file the reader set
	 * aside (quarantined). */
	uint64_t records;
	uint64_t restored;     /**< items the target accepted */
	uint64_t bytes_out;    /**< their bytes */
	uint64_t dead;         /**< records sent to the dead store */
	uint64_t lost;         /**< undecodable records without a dead store */
	uint64_t postponed;    /**< waits because the target was too full */
	uint64_t read_errors;  /**< failed next/record/done/sync/commit calls */
	uint64_t released;     /**< dumps given back unremoved (close, errors) */
	/** Outcomes the target reported: processed, failed (timed out
	 * included), expired, leaked (lost ones count in `returned`). */
	uint64_t processed;
	uint64_t failed;       /**< see processed */
	uint64_t expired;      /**< see processed */
	uint64_t leaked;       /**< see processed */
	uint64_t done;         /**< restored items whose record was marked done
				* (a leaked one after its DLQ's sync) */
	uint64_t returned;     /**< records given back not done: refused or
				* lost by the target, in flight at close */
	uint64_t redelivered;  /**< records with deliveries > 0: possible
				* duplicates of an earlier, dead restorer's
				* (an upper bound on the duplicates) */
	uint64_t in_flight;    /**< gauge: records handed out, not yet settled */
	/** Set aside by the reader (blq_dump_reader_host): bad Redis entries
	 * (copied to KEY:quarantine, one each) and damaged files (moved to
	 * the quarantine directory, one each, after their intact records
	 * were restored). The same count as the quarantined metric
	 * (dlqdump_quarantined_total). */
	uint64_t quarantined;
	/** Bytes of the quarantined files that no intact record covered:
	 * their damaged spans (the whole file when its header or version is
	 * wrong). What restoring could not recover. */
	uint64_t skipped_bytes;
	/** Failures by reason, indexed by blq_dump_failure: a restorer counts
	 * BLQ_DUMP_FAIL_MEMORY, _READ, _DECODE, _QUARANTINE (=
	 * quarantined), _COMMIT, _REFUSED, _SYNC and _DEAD_STORE (READ,
	 * COMMIT, SYNC and DEAD_STORE together = read_errors); the dump's
	 * reasons stay 0 here. */
	uint64_t failures[BLQ_DUMP_FAILURES];
};

/**
 * Validate, copy, start the restorer thread. It polls the reader every
 * check_interval_ns (or at once after blq_restorer_kick), restores every
 * waiting dump, commits each record once its item reached an outcome in
 * the target, and removes a dump once all its records are.
 * \param cfg the configuration; only read during the call.
 * \param[out] err optional; receives the code and a message naming the
 *        field on failure (set to BLQ_OK and "" on success).
 * \return the restorer, or NULL with BLQ_EINVAL (\p cfg NULL or a bad
 *         field, named), BLQ_ENOMEM or BLQ_ETHREAD in \p err. The caller
 *         owns it: free it with blq_restorer_free (before the reader and
 *         the dead store; the target queue may be freed after it).
 */
BLQ_API blq_restorer *blq_restorer_new(const blq_restorer_config *cfg, blq_error *err);

/**
 * Poll the reader now instead of at the next check.
 * \param r the restorer.
 * \retval 0 the restorer thread was woken.
 * \retval BLQ_EINVAL \p r is NULL.
 */
BLQ_API int blq_restorer_kick(blq_restorer *r);

/**
 * Stop handing out records; wait up to close_timeout_ns for the items
 * already in the target to reach their outcomes and commit those; release
 * the rest unremoved (they come again later: at least once); join the
 * restorer thread. Idempotent: every call, concurrent ones included,
 * returns once the restorer thread has stopped, so its stats are final. An
 * item whose outcome comes after this returns is not committed; its hook
 * stays safe to run (the state it touches lives until the last such
 * outcome).
 * \param r the restorer.
 * \retval 0 closed: the restorer thread has stopped.
 * \retval BLQ_EINVAL \p r is NULL.
 */
BLQ_API int blq_restorer_close(blq_restorer *r);

/**
 * Close if needed (as blq_restorer_close), then free the restorer. Items
 * it restored may still be in the target: their hooks keep the state they
 * touch alive until their outcomes.
 * \param r the restorer; NULL is a no-op.
 * \threadsafety Not concurrently with anything on \p r: call it once no
 * other call on \p r runs, only once.
 */
BLQ_API void blq_restorer_free(blq_restorer *r);

/**
 * Read the counters (each a relaxed atomic: a snapshot while it runs).
 * \param r the restorer.
 * \param[out] out receives the counters.
 * \retval 0 \p out filled.
 * \retval BLQ_EINVAL \p r or \p out NULL.
 */
BLQ_API int blq_restorer_stats(blq_restorer *r, struct blq_restorer_stats *out);

#ifdef __cplusplus
}
#endif

#endif
