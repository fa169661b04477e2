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
