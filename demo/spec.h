/*
 * The init body of blq-demo (POST /api/v1/init): the JSON the original
 * koykov/demo daemon accepts, parsed into a plain struct and checked field
 * by field, so a bad body gets one message naming the field (and never
 * reaches the library half-read).
 *
 * Durations are nanoseconds, as in the original. Unknown fields are
 * refused (a typo such as "worker_max" would otherwise be silently
 * ignored); null stands for an absent field, as in Go's encoding/json.
 */
#ifndef BLQ_DEMO_SPEC_H
#define BLQ_DEMO_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/blq.h>

/* Bounds that keep one request from exhausting the daemon. */
#define DEMO_CAPACITY_MAX 10000000u     /* items (64 B each in the ring) */
#define DEMO_PRODUCERS_MAX 1024u        /* threads */
#define DEMO_SCHEDULE_MAX 64u           /* ranges per schedule */
#define DEMO_DURATION_MAX 3600000000000ull /* 1 h, for delays and intervals */
#define DEMO_DUMP_CAPACITY_MAX (256u << 20) /* bytes per dump batch */
#define DEMO_REDIS_KEY_MAX 200u
/* restore.max_restores: a restored item carries its restore count in its
 * payload's top byte (emulate.c), which counts to 255 */
#define DEMO_MAX_RESTORES_MAX 255u

/* One range of workers_schedule or producers_schedule. */
typedef struct demo_range {
	char range[48];     /* "HH:MM:SS-HH:MM:SS" or "30s-1m" */
	bool relative;      /* from rel_range */
	unsigned workers_min, workers_max; /* workers_schedule */
	double wakeup_factor, sleep_factor;
	unsigned producers;                /* producers_schedule */
} demo_range;

typedef struct demo_subq {
	char name[64];
	uint64_t capacity, weight, ingress_weight, egress_weight;
} demo_subq;

typedef struct demo_spec {
	uint64_t capacity;
	unsigned streams, workers;
	uint64_t heartbeat_ns;
	unsigned workers_min, workers_max;
	uint64_t worker_delay_ns; /* load emulation; absent or 0: the original's 75 ns */
	double wakeup_factor, sleep_factor;
	unsigned sleep_threshold;
	demo_range workers_schedule[DEMO_SCHEDULE_MAX];
	unsigned n_workers_schedule;

	unsigned producers_min, producers_max;
	uint64_t producer_delay_ns; /* absent or 0: the original's 50 ns */
	demo_range producers_schedule[DEMO_SCHEDULE_MAX];
	unsigned n_producers_schedule;

	double fail_rate; /* [0, 1] */
	unsigned max_retries;
	uint64_t retry_interval_ns;
	enum blq_backoff backoff;

	bool allow_leak, allow_deadline;
	bool fail_to_dlq; /* not in the original: failed items go to the DLQ */
	enum blq_leak_dir leak_direction;
	unsigned front_leak_attempts;
	uint64_t delay_ns;

	bool has_dump;
	struct {
		uint64_t capacity; /* bytes per batch */
		uint64_t flush_ns;
		uint64_t buffer;   /* the fs writer's write_buffer (bytes per write call); 0: one per file */
		bool redis;        /* writer "redis" (else "fs") */
		char redis_addr[128]; /* "" = the daemon's --redis */
		char redis_key[DEMO_REDIS_KEY_MAX + 1]; /* "" = "blq-demo:<key>" */
	} dump;
	bool has_restore;
	struct {
		uint64_t check_ns, postpone_ns;
		double allow_rate;
		/* Restores before a record goes to the dead store (<dump dir>/<key>.dead
		 * or the stream <redis key>:dead); 0: no limit, no dead store. */
		uint32_t max_restores;
	} restore;

	bool has_qos;
	struct {
		enum blq_qos_algo algo;
		struct {
			uint64_t capacity;
			unsigned streams, workers, idle_threshold;
			uint64_t idle_timeout_ns;
		} egress;
		demo_subq queues[BLQ_QOS_SUBQS_MAX];
		unsigned nqueues;
	} qos;
} demo_spec;

/**
 * demo_spec_parse() - parse and check an init body.
 * @body, @len: the request body (need not be NUL-terminated).
 * @out: filled on success (zeroed first in any case).
 * @err, @errlen: on failure, one line naming the field and the problem,
 *   e.g. "capacity: expected a non-negative integer, got string".
 * Return: 0, or -1 with @err set. Never allocates beyond the parse.
 * Thread-safety: any thread.
 */
int demo_spec_parse(const char *body, size_t len, demo_spec *out, char *err, size_t errlen);

/**
 * demo_spec_schedule() - a schedule (blq/schedule.h) from parsed ranges.
 * workers_schedule ranges set workers_min/max and the factors; with
 * @producers, each range's producer count is carried as workers_min (so
 * blq_schedule_lookup tells the count in force).
 * Return: the schedule (free with blq_schedule_free), or NULL with
 * "<name>[i]: <the library's message>" in @err.
 */
blq_schedule *demo_spec_schedule(const demo_range *ranges, unsigned n, bool producers,
				 const char *name, char *err, size_t errlen);

/**
 * demo_key_valid() - whether a queue key is 1..63 characters of
 * [A-Za-z0-9_-]: keys go into file names, Redis keys and metric labels
 * (63 is the library's limit on queue and metrics writer names).
 */
bool demo_key_valid(const char *key);

#endif
