/*
 * The names of the reasons an item is dead-lettered (enqueuer.h), as logs,
 * the dump tools and the dashboard print them.
 */
#include <blq/dlq.h>

const char *blq_dlq_reason_name(enum blq_dlq_reason reason)
{
	switch (reason) {
	case BLQ_DLQ_OVERFLOW_REAR:
		return "overflow rear";
	case BLQ_DLQ_OVERFLOW_FRONT:
		return "overflow front";
	case BLQ_DLQ_FAILED:
		return "failed";
	case BLQ_DLQ_DEADLINE:
		return "deadline";
	case BLQ_DLQ_CLOSED:
		return "closed";
	case BLQ_DLQ_UNKNOWN:
		break;
	}
	return "unknown";
}
