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
