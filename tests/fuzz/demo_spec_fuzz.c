/*
 * Fuzz target for blq-demo's init body mapping (demo/spec.c): any bytes
 * as the body of POST /api/v1/init. The parser must not crash or leak
 * (ASan), must either accept the body with every field inside the bounds
 * the daemon relies on, or refuse it with a message that names a field
 * ("<field>: <problem>").
 *
 * Built as a libFuzzer binary (scripts/test.sh runs it briefly) and as a
 * normal test with fuzz_main.c replaying the seeds (the original's init
 * bodies from demo/requests, and the corpus here).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static demo_spec spec; /* ~20 KiB */
	char err[512];
	int rc = demo_spec_parse((const char *)data, size, &spec, err, sizeof err);
	if (rc != 0) {
		CHECK(rc == -1);
		CHECK(strlen(err) > 0 && strstr(err, ": ") != NULL);
		return 0;
	}
	CHECK(err[0] == '\0');
	CHECK(spec.capacity <= DEMO_CAPACITY_MAX);
	CHECK(spec.producers_min <= spec.producers_max);
	CHECK(spec.producers_max <= DEMO_PRODUCERS_MAX);
	CHECK(spec.n_workers_schedule <= DEMO_SCHEDULE_MAX);
	CHECK(spec.n_producers_schedule <= DEMO_SCHEDULE_MAX);
	for (unsigned i = 0; i < spec.n_producers_schedule; i++)
		CHECK(spec.producers_schedule[i].producers <= spec.producers_max);
	CHECK(spec.fail_rate >= 0 && spec.fail_rate <= 1);
	CHECK(spec.worker_delay_ns >= 1 && spec.worker_delay_ns <= DEMO_DURATION_MAX);
	CHECK(spec.producer_delay_ns >= 1 && spec.producer_delay_ns <= DEMO_DURATION_MAX);
	CHECK(!spec.has_restore || spec.has_dump);
	CHECK(!spec.has_dump || (spec.allow_leak && spec.dump.capacity > 0 &&
				 spec.dump.capacity <= DEMO_DUMP_CAPACITY_MAX));
	CHECK(!spec.has_qos || spec.qos.nqueues <= BLQ_QOS_SUBQS_MAX);
	CHECK(spec.backoff <= BLQ_BACKOFF_RANDOM);
	uint64_t total = spec.qos.egress.capacity;
	for (unsigned i = 0; i < spec.qos.nqueues; i++) {
		CHECK(strlen(spec.qos.queues[i].name) < sizeof spec.qos.queues[i].name);
		total += spec.qos.queues[i].capacity;
	}
	CHECK(total <= DEMO_CAPACITY_MAX);
	return 0;
}
