/* The name of a dump's flush reason, as the Prometheus label `reason` and
 * the dump log writer's `reason=` spell it: one list for both. Not
 * installed. */
#ifndef BLQ_METRICS_FLUSH_REASON_H
#define BLQ_METRICS_FLUSH_REASON_H

#include <blq/dlqdump.h>

/* The reasons blq_dump_flush_reason names, 0..BLQ__FLUSH_REASONS-1. */
#define BLQ__FLUSH_REASONS 3

/* "size", "interval", "close"; "unknown" for any other value. */
static inline const char *blq__flush_reason_name(enum blq_dump_flush_reason r)
{
	static const char *const names[BLQ__FLUSH_REASONS] = {"size", "interval", "close"};

	return (unsigned)r < BLQ__FLUSH_REASONS ? names[r] : "unknown";
}

#endif
