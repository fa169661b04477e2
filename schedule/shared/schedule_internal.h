/* The schedule's representation, shared with the queue's balancer. */
#ifndef BLQ_SCHEDULE_INTERNAL_H
#define BLQ_SCHEDULE_INTERNAL_H

#include <blq/schedule.h>

#include "errorf.h"

typedef struct blq__range {
	uint64_t start, end; /* ms; end <= start: crosses midnight */
	blq_schedule_params params;
	char text[40];       /* as given, for messages and logs */
} blq__range;

struct blq_schedule {
	blq__range *ranges;
	unsigned n, cap;
	bool relative;
	unsigned workers_max;
};

/* A deep copy, or NULL when out of memory. */
blq_schedule *blq__schedule_copy(const blq_schedule *s);

/* The text of range i ("" when out of bounds). */
const char *blq__schedule_range_text(const blq_schedule *s, int i);

#endif
