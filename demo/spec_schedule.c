/* workers_schedule and producers_schedule as library schedules. */
#include "spec.h"

#include <stdio.h>

blq_schedule *demo_spec_schedule(const demo_range *ranges, unsigned n, bool producers,
				 const char *name, char *err, size_t errlen)
{
	blq_schedule *sch = blq_schedule_new();
	if (sch == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		const demo_range *r = &ranges[i];
		blq_schedule_params p = {.workers_min = r->workers_min, .workers_max = r->workers_max,
					 .wakeup_factor = r->wakeup_factor,
					 .sleep_factor = r->sleep_factor};
		if (producers) /* 0 producers is a valid count; max must be >= 1 */
			p = (blq_schedule_params){.workers_min = r->producers,
						  .workers_max = r->producers ? r->producers : 1};
		blq_error e;
		int rc = r->relative ? blq_schedule_add_relative(sch, r->range, &p, &e)
				     : blq_schedule_add(sch, r->range, &p, &e);
		if (rc != 0) {
			snprintf(err, errlen, "%s[%u]: %s", name, i, e.msg);
			blq_schedule_free(sch);
			return NULL;
		}
	}
	return sch;
}
