/* The stage's insides, shared by stage.c, producers.c and emulate.c. */
#ifndef BLQ_DEMO_STAGE_INTERNAL_H
#define BLQ_DEMO_STAGE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "history.h"
#include "stage.h"

/* Where a stage's dump, quarantine and dead store are (blq_inspect_config). */
typedef struct demo_dump_where {
	bool redis;
	const char *dir;    /* fs: the daemon's dump directory */
	char match[96];     /* fs: "<key>.*.bin" */
	char mask[128];     /* fs: the writer's file_mask */
	char host[128];     /* redis */
	int port;
	char key[DEMO_REDIS_KEY_MAX + 1]; /* redis: the stream */
	bool has_dead;
	char dead_dir[4096];              /* fs: <dir>/<key>.dead */
	char dead_key[DEMO_REDIS_KEY_MAX + 8]; /* redis: <key>:dead */
} demo_dump_where;

enum producer_state {
	PRODUCER_IDLE = 0, /* no thread */
	PRODUCER_ACTIVE,   /* enqueueing */
	PRODUCER_RETIRING, /* told to stop; its thread not joined yet */
};

typedef struct producer {
	struct demo_stage *stage;
	pthread_t thread;
	_Atomic int state;
} producer;

struct demo_stage {
	char key[65];
	/* CLOCK_REALTIME ns at the start: tells this run of the key from an
	 * earlier one (also across daemon restarts) in the dashboard's stats. */
	uint64_t instance;
	demo_spec spec;
	blq *q;
	blq_prom *prom;

	/* The DLQ: a discard, or a dump with its writer (and a restorer). */
	blq_discard discard;
	blq_dump *dump;
	blq_dump_writer *writer;
	blq_dump_reader *reader;
	blq_restorer *restorer;
	blq_dump_writer *dead; /* the restorer's dead store (restore.max_restores) */
	demo_dump_where where; /* where the dump is, for inspection (dlq_api.c) */

	/* The DLQ's redrive (redrive.h): at most one at a time, under rmu. */
	pthread_mutex_t rmu;
	struct demo_redrive *redrive; /* the running or last one; NULL: none yet */
	bool redrive_closed;          /* stopping: no redrive starts any more */
	bool purging;                 /* a purge of the dead store runs: no redrive starts */

	/* Producers: slots 0..producers_max-1, guarded by pmu. */
	pthread_mutex_t pmu;
	producer *producers;
	unsigned active;
	bool producers_closed; /* stopping: no producer starts any more */
	_Atomic uint64_t seq; /* payloads are sequence numbers: no allocation */

	/* The producers schedule thread (only with producers_schedule). */
	blq_schedule *pschedule;
	pthread_t sched_thread;
	bool sched_running;
	pthread_mutex_t smu;
	pthread_cond_t scond;
	bool sched_stop;
	uint64_t started_ms; /* CLOCK_MONOTONIC, for relative ranges */
	blq_logger logger;

	demo_history *history; /* the dashboard's samples (history.h) */
};


/* The worker: sleeps worker_delay (varied by +-50% with allow_deadline, as
 * the original), polling the cancel flag, and fails at fail_rate. */
int demo_emulate_work(void *ctx, void *payload, blq_task *task);

/* The demo's item in a dump: the original's 12-byte Item (u32 header 4,
 * u64 payload), little-endian; restored, an item carries its restore count
 * in the payload's top byte, for the restorer's max_restores. */
blq_dump_encoder demo_item_encoder(void);
blq_dump_decoder demo_item_decoder(void);

/* producers.c */
int demo_producers_init(demo_stage *s, char *err, size_t errlen);
int demo_producers_set(demo_stage *s, unsigned target, char *err, size_t errlen);
/* Adds delta (may be negative) within [producers_min, producers_max];
 * all or nothing. */
int demo_producers_add(demo_stage *s, long delta, char *err, size_t errlen);
void demo_producers_stop_all(demo_stage *s);
void demo_producers_join(demo_stage *s);
void demo_producers_free(demo_stage *s);
int demo_schedule_start(demo_stage *s, char *err, size_t errlen);
void demo_schedule_stop(demo_stage *s);

/* Sleeps ns in slices of at most 10 ms, returning early once go_on(ctx)
 * is false (asked before each slice). */
void demo_sleep_while(uint64_t ns, bool (*go_on)(const void *ctx), const void *ctx);

#endif
