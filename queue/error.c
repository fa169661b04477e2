/* Error names and messages, generated from BLQ_ERRNO_MAP. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

const char *blq_strerror(int code)
{
	switch (code) {
	case BLQ_OK:
		return "success";
#define BLQ__STRERROR(name, num, msg)                                                              \
	case BLQ_##name:                                                                           \
		return msg;
		BLQ_ERRNO_MAP(BLQ__STRERROR)
#undef BLQ__STRERROR
	}
	return "unknown error";
}

const char *blq_errname(int code)
{
	switch (code) {
	case BLQ_OK:
		return "BLQ_OK";
#define BLQ__ERRNAME(name, num, msg)                                                               \
	case BLQ_##name:                                                                           \
		return "BLQ_" #name;
		BLQ_ERRNO_MAP(BLQ__ERRNAME)
#undef BLQ__ERRNAME
	}
	return "BLQ_EUNKNOWN";
}

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
