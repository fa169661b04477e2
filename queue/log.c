/*
 * The queue's log lines: blq__log formats nothing itself, it hands the
 * format and arguments to the caller's logger (blq_config.logger), and
 * only when one is set and the level passes its threshold. So a queue
 * without a logger pays one compare per would-be line, and the library
 * never writes to stderr on its own. Lines are rare (start, close,
 * balancer transitions, leftovers at a force close): never per item.
 */
#include <stdarg.h>

#include "internal.h"

void blq__log(const blq *q, int level, const char *fmt, ...)
{
	const blq_logger *l = &q->cfg.logger;
	va_list ap;

	if (l->log == NULL || level > l->level)
		return;
	va_start(ap, fmt);
	l->log(l->ctx, level, fmt, ap);
	va_end(ap);
}
