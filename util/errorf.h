/* Filling a blq_error: shared by every module. Not installed. */
#ifndef BLQ_UTIL_ERRORF_H
#define BLQ_UTIL_ERRORF_H

#include <blq/error.h>

/* Sets err (when not NULL) to code and a printf-style message, clamped to
 * the buffer. Returns code, so callers can `return blq__error_set(...)`. */
int blq__error_set(blq_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
