/*
 * The names of the reasons an item is dead-lettered (enqueuer.h), as logs,
 * the dump tools and the dashboard print them.
 */
#include <blq/dlq.h>

#include <ctype.h>
#include <string.h>

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

/* The highest reason this build names: blq_dlq_reason_parse tries each. */
#define REASON_LAST BLQ_DLQ_CLOSED

int blq_dlq_reason_parse(const char *name, enum blq_dlq_reason *out)
{
	if (name == NULL || out == NULL)
		return BLQ_EINVAL;
	for (int r = 0; r <= REASON_LAST; r++) {
		const char *want = blq_dlq_reason_name((enum blq_dlq_reason)r);
		size_t i = 0;
		for (; want[i] != '\0' && name[i] != '\0'; i++) {
			char c = (char)tolower((unsigned char)name[i]);
			if (c == '-' || c == '_')
				c = ' ';
			if (c != want[i])
				break;
		}
		if (want[i] == '\0' && name[i] == '\0') {
			*out = (enum blq_dlq_reason)r;
			return 0;
		}
	}
	return BLQ_EINVAL;
}
