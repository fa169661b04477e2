/* Helpers for the Criterion suites (include after criterion.h). */
#ifndef BLQ_SUITE_UTIL_H
#define BLQ_SUITE_UTIL_H

#include "test_util.h"

/* blq_new that fails the test, with the library's message, on error. */
static inline blq *must_new(const blq_config *c)
{
	blq_error err;
	blq *q = blq_new(c, &err);

	cr_assert_not_null(q, "blq_new: %s", err.msg);
	return q;
}

static inline struct blq_stats stats(blq *q)
{
	struct blq_stats s;

	blq_stats(q, &s);
	return s;
}

#endif
