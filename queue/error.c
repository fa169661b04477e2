/*
 * Error names and messages: blq_strerror's table is generated from
 * BLQ_ERRNO_MAP (blq/error.h), the one list of codes, so a new code cannot
 * be added without its message. The messages are static strings: safe
 * from any thread, nothing to free.
 */
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
