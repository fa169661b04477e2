/* The daemon's own log lines, through the same blq_logger its queues use. */
#ifndef BLQ_DEMO_LOG_H
#define BLQ_DEMO_LOG_H

#include <stdarg.h>

#include <blq/log.h>

/**
 * demo_log() / demo_vlog() - one printf-style line through @l, unless @l
 * has no callback or @level is above its threshold (0 meaning
 * BLQ_LOG_INFO, as for the library's loggers).
 * Thread-safety: as @l's callback (the stderr logger: any thread).
 */
void demo_vlog(const blq_logger *l, int level, const char *fmt, va_list ap);
void demo_log(const blq_logger *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
