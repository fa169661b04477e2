/* demo_log: see log.h. */
#include "log.h"

#include <stddef.h>

void demo_vlog(const blq_logger *l, int level, const char *fmt, va_list ap)
{
	if (l->log != NULL && level <= (l->level ? l->level : BLQ_LOG_INFO))
		l->log(l->ctx, level, fmt, ap);
}

void demo_log(const blq_logger *l, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	demo_vlog(l, level, fmt, ap);
	va_end(ap);
}
