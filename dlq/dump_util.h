/* Helpers shared by the dlqdump files: time, waits, logging. Not installed. */
#ifndef BLQ_DLQ_DUMP_UTIL_H
#define BLQ_DLQ_DUMP_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <blq/dlqdump.h>

#define BLQ__DUMP_NAME_MAX 63

/* blq__monotonic_ns, blq__sat_add, blq__cond_init_monotonic,
 * blq__cond_wait_until. */
#include "monotonic.h"

/* Durations are at most a year (a larger one is a mistake, often a
 * negative number cast to unsigned); BLQ_EINVAL naming field otherwise.
 * forever_ok: UINT64_MAX is also accepted, meaning "no limit". */
int blq__dump_check_interval(uint64_t v, const char *field, bool forever_ok, blq_error *err);

/* Logs through l when it is set and level is within its level (0 = info). */
void blq__dlog(const blq_logger *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copies name (or dflt when NULL) into out; BLQ_EINVAL naming field when it
 * is empty or longer than BLQ__DUMP_NAME_MAX. */
int blq__dump_name(char out[BLQ__DUMP_NAME_MAX + 1], const char *name, const char *dflt,
		   blq_error *err);

/* Starts the object's thread (signals blocked, named tname); on failure
 * fills err with "<what> <name>: cannot start its thread". Returns 0 or
 * BLQ_ETHREAD. */
int blq__dump_thread(pthread_t *t, void *(*fn)(void *), void *arg, const char *tname,
		     const char *what, const char *name, blq_error *err);

/* Where a reader's reports go: its own logger (name) when it has one,
 * else its restorer's (blq_dump_reader.host), so a restorer's log and
 * counters see what its reader sets aside. */
const blq_logger *blq__reader_logger(const blq_dump_reader *r, const blq_logger *own);
const char *blq__reader_name(const blq_dump_reader *r, bool named, const char *own);

/* Checks a logger: ctx without log is refused, naming field. */
int blq__dump_check_logger(const blq_logger *l, const char *field, blq_error *err);

#endif
