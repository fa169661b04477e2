/*
 * Helpers the dump's files share (dump.c, the fs and Redis writers and
 * readers, the restorer): timed condition waits on CLOCK_MONOTONIC, the
 * dump's log lines through the caller's logger, and the config checks
 * every constructor repeats (a name of 1..BLQ__DUMP_NAME_MAX bytes, a
 * logger whose ctx needs a function, an interval of at most a year, so a
 * negative number cast to unsigned is refused with a message that says
 * so). Thread starts go through util's blq__thread_create (signals
 * blocked) and get a name, so `top -H` shows whose thread it is.
 */
#include "dump_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "errorf.h"
#include "thread.h"

void blq__dlog(const blq_logger *l, int level, const char *fmt, ...)
{
	va_list ap;
	int max = l->level ? l->level : BLQ_LOG_INFO;

	if (l->log == NULL || level > max)
		return;
	va_start(ap, fmt);
	l->log(l->ctx, level, fmt, ap);
	va_end(ap);
}

int blq__dump_name(char out[BLQ__DUMP_NAME_MAX + 1], const char *name, const char *dflt,
		   blq_error *err)
{
	if (name == NULL)
		name = dflt;
	if (name[0] == '\0' || strlen(name) > BLQ__DUMP_NAME_MAX)
		return blq__error_set(err, BLQ_EINVAL, "name: must be 1..%d bytes",
				      BLQ__DUMP_NAME_MAX);
	snprintf(out, BLQ__DUMP_NAME_MAX + 1, "%s", name);
	return 0;
}

int blq__dump_check_logger(const blq_logger *l, const char *field, blq_error *err)
{
	if (l->log == NULL && l->ctx != NULL)
		return blq__error_set(err, BLQ_EINVAL, "%s: ctx is set but log is NULL", field);
	return 0;
}

int blq__dump_thread(pthread_t *t, void *(*fn)(void *), void *arg, const char *tname,
		     const char *what, const char *name, blq_error *err)
{
	int e = blq__thread_create(t, fn, arg);

	if (e != 0)
		return blq__error_set(err, BLQ_ETHREAD, "%s %s: cannot start its thread (error %d)",
				      what, name, e);
	pthread_setname_np(*t, tname);
	return 0;
}

int blq__dump_check_interval(uint64_t v, const char *field, bool forever_ok, blq_error *err)
{
	const uint64_t year = 365ull * 24 * 3600 * 1000000000ull;

	if (v <= year || (forever_ok && v == UINT64_MAX))
		return 0;
	return blq__error_set(err, BLQ_EINVAL,
			      "%s: must be at most 1 year (%llu ns)%s, got %llu (a negative value "
			      "cast to unsigned?)",
			      field, (unsigned long long)year, forever_ok ? " or UINT64_MAX (no limit)" : "",
			      (unsigned long long)v);
}

const blq_logger *blq__reader_logger(const blq_dump_reader *r, const blq_logger *own)
{
	const blq_dump_reader_host *h = r->host;

	return own->log == NULL && h != NULL ? &h->logger : own;
}

const char *blq__reader_name(const blq_dump_reader *r, bool named, const char *own)
{
	const blq_dump_reader_host *h = r->host;

	return !named && h != NULL && h->name != NULL ? h->name : own;
}
