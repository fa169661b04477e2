/*
 * The names of the reasons an item is dead-lettered (enqueuer.h), as logs,
 * the dump tools and the dashboard print them; and of the reasons a dump
 * or a restorer fails (dlqdump.h), as the log writer and the Prometheus
 * label print them. One table per list, so a name is spelt once.
 */
#include <blq/dlq.h>
#include <blq/dlqdump.h>

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

static const char *const failure_names[BLQ_DUMP_FAILURES] = {
	[BLQ_DUMP_FAIL_WRITE] = "write",	   [BLQ_DUMP_FAIL_NO_ROOM] = "no_room",
	[BLQ_DUMP_FAIL_ENCODE] = "encode",	   [BLQ_DUMP_FAIL_MEMORY] = "memory",
	[BLQ_DUMP_FAIL_DROPPED] = "dropped",	   [BLQ_DUMP_FAIL_READ] = "read",
	[BLQ_DUMP_FAIL_DECODE] = "decode",	   [BLQ_DUMP_FAIL_QUARANTINE] = "quarantine",
	[BLQ_DUMP_FAIL_COMMIT] = "commit",	   [BLQ_DUMP_FAIL_REFUSED] = "refused",
	[BLQ_DUMP_FAIL_SYNC] = "sync",		   [BLQ_DUMP_FAIL_DEAD_STORE] = "dead_store",
};

_Static_assert(BLQ_DUMP_FAIL_DEAD_STORE + 1 == BLQ_DUMP_FAILURES,
	       "BLQ_DUMP_FAILURES: one past the last blq_dump_failure");

const char *blq_dump_failure_name(enum blq_dump_failure reason)
{
	if ((unsigned)reason >= BLQ_DUMP_FAILURES || failure_names[reason] == NULL)
		return "unknown";
	return failure_names[reason];
}
