/**
 * \file
 * Logger interface: the queue reports its own events (start, close, force,
 * lost items) through it. Default: off. The library never prints by itself.
 *
 * Thread-safety: blq_stderr_logger may be called from any thread; the
 * loggers and writers made here may then be used by many threads at once.
 * blq_log_writer_init is the exception (see there).
 */
#ifndef BLQ_LOG_H
#define BLQ_LOG_H


#include <stdarg.h>

#include <blq/export.h>
#include <blq/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A message's severity: the higher, the more verbose. */
enum blq_log_level {
	BLQ_LOG_ERROR = 1, /**< a thread that cannot start, writes still failing at close */
	BLQ_LOG_WARN = 2,  /**< trouble worked around or counted: a write to retry,
			    *   a refused or lost item, a worker past its limit */
	BLQ_LOG_INFO = 3,  /**< lifecycle: start, pause, resume, close */
	BLQ_LOG_DEBUG = 4, /**< per-event detail (the log writer's lines) */
};

/** Where log lines go: a callback, its context and a level filter
 * (blq_config.logger and the dump, restorer and reader configs). All zero
 * is "off". */
typedef struct blq_logger {
	/** Called with one printf-style message (no trailing newline) and its
	 * level. Must be thread-safe: workers, producers and the closer may
	 * log at once. NULL: logging off. */
	void (*log)(void *ctx, int level, const char *fmt, va_list ap);
	/** Passed to log; borrowed (must outlive the logger's users). A ctx
	 * without log is refused. */
	void *ctx;
	/** Messages above this level are not formatted; 0 means BLQ_LOG_INFO. */
	int level;
} blq_logger;

/**
 * A ready logger: one line per message on stderr, `blq LEVEL: message`,
 * written with a single call so lines from several threads do not
 * interleave (a line longer than 4 KiB is cut and ends in " [cut]").
 * \param level the most verbose level printed (BLQ_LOG_ERROR ..
 *        BLQ_LOG_DEBUG); messages above it are dropped. 0 means
 *        BLQ_LOG_INFO, as in blq_logger.level; below 0 prints nothing.
 * \return the logger, a value to copy into a config; it holds no
 *         resource: nothing to free.
 */
BLQ_API blq_logger blq_stderr_logger(int level);

/** A metrics writer that turns every event into a log line, for
 * debugging (a formatted line per event: not for production rates). The
 * caller allocates it; blq_log_writer_init fills it. */
typedef struct blq_log_writer {
	blq_metrics_writer writer; /**< what blq_config.metrics points at */
	blq_logger logger;         /**< where the lines go (a copy) */
} blq_log_writer;

/**
 * Make \p lw log every event through \p logger at BLQ_LOG_DEBUG, as
 * `queue=NAME event=EVENT [key=value ...]`, such as
 * `queue=jobs event=pull worker=0 wait_ns=1200` or
 * `queue=jobs event=leak dir=rear`.
 * \param[out] lw the caller's storage; nothing is allocated. It must
 *        outlive the queues using it; nothing to free (the caller frees its
 *        storage, if allocated, after those queues were freed).
 * \param logger copied into \p lw.
 * \return &lw->writer, for blq_config.metrics; NULL when \p lw is NULL.
 * \threadsafety Not thread-safe for the same \p lw: fill it before any
 * queue uses it. The writer may then be shared by many queues and threads.
 */
BLQ_API const blq_metrics_writer *blq_log_writer_init(blq_log_writer *lw, blq_logger logger);

#ifdef __cplusplus
}
#endif

#endif
