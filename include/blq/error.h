/*
 * Error codes. Every blq function that can fail returns 0 or one of the
 * negative BLQ_E* codes below; constructors also fill a blq_error with a
 * message naming the offending field.
 */
#ifndef BLQ_ERROR_H
#define BLQ_ERROR_H

#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one list: it generates the enum, blq_strerror and blq_errname. */
#define BLQ_ERRNO_MAP(XX)                                                   \
	XX(EINVAL, -1, "invalid argument")                                  \
	XX(ENOMEM, -2, "out of memory")                                     \
	XX(EFULL, -3, "queue is full")                                      \
	XX(ECLOSED, -4, "queue is closed")                                  \
	XX(ETIMEDOUT, -5, "timed out")                                      \
	XX(ETHREAD, -6, "cannot start a thread")                            \
	XX(ENOTSUP, -7, "not supported yet")                                \
	XX(EDEADLK, -8, "would wait for the calling thread itself")         \
	XX(EREFUSED, -9, "refused by the receiver")                         \
	XX(EIO, -10, "input/output error")                                  \
	XX(EFINISHED, -11, "the item already reached its outcome")

enum blq_errno {
	BLQ_OK = 0,
#define BLQ__ERR_ENUM(name, code, msg) BLQ_##name = (code),
	BLQ_ERRNO_MAP(BLQ__ERR_ENUM)
#undef BLQ__ERR_ENUM
};

/* Room for one message; longer messages are cut, never overflowed. */
#define BLQ_ERROR_MSG_MAX 256

/* Filled by constructors: the code and a message that names the field,
 * e.g. "workers_max: must be >= workers_min". */
typedef struct blq_error {
	int code;
	char msg[BLQ_ERROR_MSG_MAX];
} blq_error;

/**
 * blq_strerror() - a human description of an error code.
 * @code: 0 or a BLQ_E* code; any other value is accepted.
 * Return: a static string, never NULL ("unknown error" for unknown codes).
 * Thread-safety: safe from any thread.
 */
BLQ_API const char *blq_strerror(int code);

/**
 * blq_errname() - the symbolic name of an error code ("BLQ_EFULL").
 * Return: a static string, never NULL ("BLQ_EUNKNOWN" for unknown codes).
 * Thread-safety: safe from any thread.
 */
BLQ_API const char *blq_errname(int code);

#ifdef __cplusplus
}
#endif

#endif
