/*
 * Logger interface: the queue reports its own events (start, close, force,
 * lost items) through it. Default: off. The library never prints by itself.
 */
#ifndef BLQ_LOG_H
#define BLQ_LOG_H

#include <stdarg.h>

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

#ifdef __cplusplus
}
#endif

#endif
