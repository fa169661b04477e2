/*
 * Filling a caller's blq_error: the code and a printf-style message naming
 * what is wrong ("capacity: must be > 0"). The message is cut to the
 * struct's fixed buffer, never allocated, so reporting an error cannot
 * fail (out of memory included). The code is returned, so a check ends
 * with `return blq__error_set(err, BLQ_EINVAL, ...)`. A NULL err is
 * allowed: the caller only wanted the code.
 */
#include "errorf.h"

#include <stdarg.h>
#include <stdio.h>

int blq__error_set(blq_error *err, int code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		/* vsnprintf clamps: a long message is cut, never overflowed. */
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}
