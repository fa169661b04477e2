/**
 * \file
 * Error codes. Every blq function that can fail returns 0 or one of the
 * negative BLQ_E* codes of enum blq_errno (a function that returns a count
 * or a length returns them as negative values); a constructor returns NULL
 * and fills a blq_error with the code and a message naming the offending
 * field. Each function's documentation lists the codes it returns and what
 * happened to the caller's payload on each.
 *
 * Thread-safety: every function here may be called from any thread at any
 * time; they read only constant tables.
 */
#ifndef BLQ_ERROR_H
#define BLQ_ERROR_H

#include <blq/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The one list of error codes: XX(name, code, message) for each. It
 * generates enum blq_errno, blq_strerror and blq_errname, so a code cannot
 * be added without its message and name.
 */
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
	XX(EFINISHED, -11, "the item already reached its outcome")          \
	XX(ECANCELED, -12, "cancelled")                                     \
	XX(EBUSY, -13, "still in use")

/**
 * The error codes, 0 and negative, generated from BLQ_ERRNO_MAP; each
 * code's description is its blq_strerror message. What a code means for a
 * given call (and whether the caller still owns its payload) is in that
 * function's documentation.
 */
enum blq_errno {
	BLQ_OK = 0, /**< success */
#define BLQ__ERR_ENUM(name, code, msg) BLQ_##name = (code),
	BLQ_ERRNO_MAP(BLQ__ERR_ENUM)
#undef BLQ__ERR_ENUM
};

/** Room for one message, its NUL included; longer messages are cut,
 * never overflowed. */
#define BLQ_ERROR_MSG_MAX 256

/**
 * What went wrong, filled by constructors and config checks: the code and
 * a message that names the field, such as "workers_max: must be >=
 * workers_min". The caller owns the struct (usually on its stack); a
 * function taking one accepts NULL when the caller wants only the code.
 */
typedef struct blq_error {
	int code;                    /**< 0 or a BLQ_E* code */
	char msg[BLQ_ERROR_MSG_MAX]; /**< NUL-terminated message, cut to fit */
} blq_error;

/**
 * A human description of an error code ("queue is full").
 * \param code 0 or a BLQ_E* code; any other value is accepted.
 * \return a static string ("success" for 0, "unknown error" for an unknown
 *         code), never NULL; not to be freed.
 */
BLQ_API const char *blq_strerror(int code);

/**
 * The symbolic name of an error code ("BLQ_EFULL").
 * \param code 0 or a BLQ_E* code; any other value is accepted.
 * \return a static string ("BLQ_OK" for 0, "BLQ_EUNKNOWN" for an unknown
 *         code), never NULL; not to be freed.
 */
BLQ_API const char *blq_errname(int code);

#ifdef __cplusplus
}
#endif

#endif
