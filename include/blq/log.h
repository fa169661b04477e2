/*
 * Logger interface: the queue reports its own events (start, close, force,
 * lost items) through it. Default: off. The library never prints by itself.
 */
#ifndef BLQ_LOG_H
#define BLQ_LOG_H


#include <stdarg.h>

#include <blq/export.h>
#include <blq/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

enum blq_log_level {
	BLQ_LOG_ERROR = 1,
	BLQ_LOG_WARN = 2,
	BLQ_LOG_INFO = 3,
	BLQ_LOG_DEBUG = 4,
};

typedef struct blq_logger {
	/* Called with one printf-style message (no trailing newline). Must be
	 * thread-safe: workers, producers and the closer may log at once. */
	void (*log)(void *ctx, int level, const char *fmt, va_list ap);
	void *ctx;
	/* Messages above this level are not formatted; 0 means BLQ_LOG_INFO. */
	int level;
} blq_logger;

/**
 * blq_stderr_logger() - a ready logger: one line per message on stderr,
 * "blq <LEVEL>: <message>", written with a single call so lines from
 * several threads do not interleave. Messages above @level are dropped.
 */
BLQ_API blq_logger blq_stderr_logger(int level);

/* A metrics writer that turns every event into a log line, for debugging. */
typedef struct blq_log_writer {
	blq_metrics_writer writer; /* what blq_config.metrics points at */
	blq_logger logger;
} blq_log_writer;

/**
 * blq_log_writer_init() - make @lw log every event through @logger at
 * BLQ_LOG_DEBUG, as "queue=<name> event=<event> [key=value ...]", e.g.
 * "queue=jobs event=pull wait_ns=1200" or "queue=jobs event=leak dir=rear".
 * @lw: caller's storage; must outlive the queues using it.
 * Return: &lw->writer, for blq_config.metrics.
 */
BLQ_API const blq_metrics_writer *blq_log_writer_init(blq_log_writer *lw, blq_logger logger);

#ifdef __cplusplus
}
#endif

#endif
